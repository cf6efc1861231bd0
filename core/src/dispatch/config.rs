//! Selecting and configuring a dispatch strategy by name, the same way in gridsim and in the live
//! meta-scheduler (spec `two-level-grid-scheduler.md` D4.2, D12 #9, #11; `gang-urgent-scaling.md`
//! B.4).

use super::Priority;
use super::{Broker, BrokerKind, Dispatcher, Function, LoadMeasure, LoadOrdering, RoundRobin};
use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// The strategies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum DispatchKind {
    /// Next eligible cluster in turn.
    RoundRobin,
    /// The seed's Load function.
    Load,
    /// The seed's Ordering function.
    Ordering,
    /// Load, then Ordering among the near-minimum clusters (D12 #11 default).
    #[default]
    LoadOrdering,
    /// Fewest free processors left (job sharing).
    BestFit,
    /// Fewest waiting jobs.
    LeastLoaded,
    /// Earliest estimated completion.
    MinCompletion,
}

impl DispatchKind {
    /// Every kind.
    pub const ALL: [DispatchKind; 7] = [
        DispatchKind::RoundRobin,
        DispatchKind::Load,
        DispatchKind::Ordering,
        DispatchKind::LoadOrdering,
        DispatchKind::BestFit,
        DispatchKind::LeastLoaded,
        DispatchKind::MinCompletion,
    ];

    /// The name on command lines and in configuration files.
    pub fn as_str(self) -> &'static str {
        match self {
            DispatchKind::RoundRobin => "round-robin",
            DispatchKind::Load => "load",
            DispatchKind::Ordering => "ordering",
            DispatchKind::LoadOrdering => "load-ordering",
            DispatchKind::BestFit => "best-fit",
            DispatchKind::LeastLoaded => "least-loaded",
            DispatchKind::MinCompletion => "min-completion",
        }
    }

    /// Whether the strategy reads the sites' dynamic state.
    pub fn reads_site_state(self) -> bool {
        matches!(
            self,
            DispatchKind::BestFit | DispatchKind::LeastLoaded | DispatchKind::MinCompletion
        )
    }
}

impl FromStr for DispatchKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DispatchKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown dispatch strategy `{s}` (expected one of: {})",
                    DispatchKind::ALL.map(|k| k.as_str()).join(", ")
                )
            })
    }
}

/// A strategy and its options.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
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
    /// Seed of the random tie-break.
    pub seed: u64,
}

impl Default for DispatchConfig {
    fn default() -> Self {
        DispatchConfig {
            strategy: DispatchKind::LoadOrdering,
            max_priority: 10,
            epsilon: 0.0,
            load_measure: LoadMeasure::Area,
            seed: 1,
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

    /// Builds the dispatcher.
    pub fn build(&self) -> Box<dyn Dispatcher> {
        let lo = |f| {
            Box::new(LoadOrdering::new(
                f,
                self.max_priority,
                self.epsilon,
                self.load_measure,
                self.seed,
            )) as Box<dyn Dispatcher>
        };
        match self.strategy {
            DispatchKind::RoundRobin => Box::new(RoundRobin::new()),
            DispatchKind::Load => lo(Function::Load),
            DispatchKind::Ordering => lo(Function::Ordering),
            DispatchKind::LoadOrdering => lo(Function::LoadThenOrdering),
            DispatchKind::BestFit => Box::new(Broker::new(BrokerKind::BestFit)),
            DispatchKind::LeastLoaded => Box::new(Broker::new(BrokerKind::LeastLoaded)),
            DispatchKind::MinCompletion => Box::new(Broker::new(BrokerKind::MinCompletion)),
        }
    }
}
