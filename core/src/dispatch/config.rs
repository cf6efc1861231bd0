//! Selecting and configuring a dispatch strategy by name, the same way in gridsim and in the live
//! meta-scheduler (spec `two-level-grid-scheduler.md` D4.2, D12 #9, #11; `gang-urgent-scaling.md`
//! B.4).

use super::Priority;
use super::{DispatchKind, Dispatcher, LoadMeasure, MultiSiteConfig, OrderingCount};
use serde::{Deserialize, Serialize};

/// A strategy and its options.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DispatchConfig {
    /// Which strategy.
    pub strategy: DispatchKind,
    /// Highest priority of the classification (array size).
    pub max_priority: Priority,
    /// Load-then-Ordering tolerance: clusters within `min · (1 + epsilon)` are near-minimum.
    pub epsilon: f64,
    /// Workload of a job in the Load array.
    pub load_measure: LoadMeasure,
    /// What the Ordering function counts: jobs of priority ≥ P (`at-least`) or = P (`equal`).
    pub ordering_count: OrderingCount,
    /// Seed of the random tie-break.
    pub seed: u64,
    /// The multi-site strategy's settings (overhead, lower bound, fragments, adaptive).
    pub multi_site: MultiSiteConfig,
    /// Under a single-site strategy, a job wider than every site is split over sites with
    /// `multi_site`'s overhead ([`super::WideSplit`], ours); the multi-site strategy splits by
    /// its own rules either way.
    pub split_wide: bool,
    /// The preferred (dedicated) site of the urgent brokers, by cluster index (Kurowski et al.
    /// §4; G-B5: the first).
    pub preferred: u32,
}

impl Default for DispatchConfig {
    fn default() -> Self {
        DispatchConfig {
            strategy: DispatchKind::LoadOrdering,
            max_priority: 10,
            epsilon: 0.0,
            load_measure: LoadMeasure::Area,
            ordering_count: OrderingCount::AtLeast,
            seed: 1,
            multi_site: MultiSiteConfig::default(),
            split_wide: false,
            preferred: 0,
        }
    }
}

impl DispatchConfig {
    /// A configuration of `strategy` with the defaults.
    pub fn new(strategy: DispatchKind) -> DispatchConfig {
        DispatchConfig {
            strategy,
            ..Default::default()
        }
    }

    /// Builds the dispatcher (from the strategy's row of [`super::DISPATCHERS`]).
    pub fn build(&self) -> Box<dyn Dispatcher> {
        let d = (self.strategy.entry().build)(self);
        match self.split_wide && self.strategy != DispatchKind::MultiSite {
            true => Box::new(super::WideSplit::new(d)),
            false => d,
        }
    }

    /// Whether a job wider than every site may be split over sites (the widest job the grid
    /// takes is then all its sites together).
    pub fn splits(&self) -> bool {
        self.split_wide || self.strategy == DispatchKind::MultiSite
    }
}
