//! The one table of dispatch strategies: each strategy's name (command lines, configuration files,
//! result tables), one line of help, whether it reads the sites' dynamic state, and how it is
//! built. Names, parsing, the error listing the valid names, help texts and the list of strategies
//! all derive from [`DISPATCHERS`]; adding a strategy is its own module plus a variant and a line
//! here (spec `two-level-grid-scheduler.md` D4.2, `gang-urgent-scaling.md` B.4).

use super::{
    BatchMapper, Broker, BrokerKind, DispatchConfig, Dispatcher, Function, GridScheduler, Heft,
    Heuristic, LoadOrdering, RoundRobin, UrgentBroker, UrgentBrokerKind,
};
use crate::model::ClusterId;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A dispatch strategy, by name (the variants' kebab-case names are those of [`DISPATCHERS`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum DispatchKind {
    /// See [`DISPATCHERS`].
    RoundRobin,
    /// See [`DISPATCHERS`].
    Load,
    /// See [`DISPATCHERS`].
    Ordering,
    /// See [`DISPATCHERS`] (D12 #11: the default).
    #[default]
    LoadOrdering,
    /// See [`DISPATCHERS`].
    BestFit,
    /// See [`DISPATCHERS`].
    LeastLoaded,
    /// See [`DISPATCHERS`].
    MinCompletion,
    /// See [`DISPATCHERS`].
    LbConsolidation,
    /// See [`DISPATCHERS`].
    ResourcePriority,
    /// See [`DISPATCHERS`].
    MctPreferred,
    /// See [`DISPATCHERS`].
    JobSharing,
    /// See [`DISPATCHERS`].
    MultiSite,
    /// See [`DISPATCHERS`].
    MinMin,
    /// See [`DISPATCHERS`].
    MaxMin,
    /// See [`DISPATCHERS`].
    Sufferage,
    /// See [`DISPATCHERS`].
    Heft,
}

/// One row of the table.
#[derive(Debug)]
pub struct DispatchEntry {
    /// The strategy.
    pub kind: DispatchKind,
    /// Its name.
    pub name: &'static str,
    /// One line of help.
    pub help: &'static str,
    /// Whether it reads the sites' dynamic state (drivers fill [`super::GridState::load`]).
    pub reads_site_state: bool,
    /// Builds it.
    pub build: fn(&DispatchConfig) -> Box<dyn Dispatcher>,
}

fn load_ordering(c: &DispatchConfig, f: Function) -> Box<dyn Dispatcher> {
    Box::new(
        LoadOrdering::new(f, c.max_priority, c.epsilon, c.load_measure, c.seed)
            .counting(c.ordering_count),
    )
}

fn urgent(c: &DispatchConfig, kind: UrgentBrokerKind) -> Box<dyn Dispatcher> {
    Box::new(UrgentBroker::new(kind, ClusterId(c.preferred)))
}

/// Every strategy, in documentation order.
pub static DISPATCHERS: [DispatchEntry; 16] = [
    DispatchEntry {
        kind: DispatchKind::RoundRobin,
        name: "round-robin",
        help: "the next cluster in turn that can run the job",
        reads_site_state: false,
        build: |_| Box::new(RoundRobin::new()),
    },
    DispatchEntry {
        kind: DispatchKind::Load,
        name: "load",
        help: "an idle cluster, else the least Load (dispatched workload) at the job's priority",
        reads_site_state: false,
        build: |c| load_ordering(c, Function::Load),
    },
    DispatchEntry {
        kind: DispatchKind::Ordering,
        name: "ordering",
        help: "the least Count (dispatched jobs) at the job's priority",
        reads_site_state: false,
        build: |c| load_ordering(c, Function::Ordering),
    },
    DispatchEntry {
        kind: DispatchKind::LoadOrdering,
        name: "load-ordering",
        help: "Load, then Ordering among the clusters of near-least Load",
        reads_site_state: false,
        build: |c| load_ordering(c, Function::LoadThenOrdering),
    },
    DispatchEntry {
        kind: DispatchKind::BestFit,
        name: "best-fit",
        help: "the cluster left with the fewest free processors (job sharing)",
        reads_site_state: true,
        build: |_| Box::new(Broker::new(BrokerKind::BestFit)),
    },
    DispatchEntry {
        kind: DispatchKind::LeastLoaded,
        name: "least-loaded",
        help: "the cluster with the fewest waiting jobs",
        reads_site_state: true,
        build: |_| Box::new(Broker::new(BrokerKind::LeastLoaded)),
    },
    DispatchEntry {
        kind: DispatchKind::MinCompletion,
        name: "min-completion",
        help: "the earliest estimated completion",
        reads_site_state: true,
        build: |_| Box::new(Broker::new(BrokerKind::MinCompletion)),
    },
    DispatchEntry {
        kind: DispatchKind::LbConsolidation,
        name: "lb-consolidation",
        help: "typical jobs to the fewest waiting jobs, urgent ones to the dedicated site",
        reads_site_state: true,
        build: |c| urgent(c, UrgentBrokerKind::Consolidation),
    },
    DispatchEntry {
        kind: DispatchKind::ResourcePriority,
        name: "resource-priority",
        help: "as least-loaded, but an urgent job to the preferred site if it can run it now",
        reads_site_state: true,
        build: |c| urgent(c, UrgentBrokerKind::ResourcePriority),
    },
    DispatchEntry {
        kind: DispatchKind::MctPreferred,
        name: "mct-preferred",
        help: "as resource-priority, else an urgent job to its earliest completion",
        reads_site_state: true,
        build: |c| urgent(c, UrgentBrokerKind::MinCompletion),
    },
    DispatchEntry {
        kind: DispatchKind::JobSharing,
        name: "job-sharing",
        help: "one FCFS queue at the meta level, EASY backfilling, the best-fit site",
        reads_site_state: false,
        build: |c| Box::new(GridScheduler::new(false, c.multi_site.clone())),
    },
    DispatchEntry {
        kind: DispatchKind::MultiSite,
        name: "multi-site",
        help: "job sharing, and a job may be split over sites at a WAN overhead",
        reads_site_state: false,
        build: |c| Box::new(GridScheduler::new(true, c.multi_site.clone())),
    },
    DispatchEntry {
        kind: DispatchKind::MinMin,
        name: "min-min",
        help: "each instant's jobs mapped together, the smallest best completion first",
        reads_site_state: true,
        build: |_| Box::new(BatchMapper::new(Heuristic::MinMin)),
    },
    DispatchEntry {
        kind: DispatchKind::MaxMin,
        name: "max-min",
        help: "each instant's jobs mapped together, the largest best completion first",
        reads_site_state: true,
        build: |_| Box::new(BatchMapper::new(Heuristic::MaxMin)),
    },
    DispatchEntry {
        kind: DispatchKind::Sufferage,
        name: "sufferage",
        help: "each instant's jobs mapped together, the one losing most without its best site first",
        reads_site_state: true,
        build: |_| Box::new(BatchMapper::new(Heuristic::Sufferage)),
    },
    DispatchEntry {
        kind: DispatchKind::Heft,
        name: "heft",
        help: "ready jobs mapped by the upward rank of their workflow node, each to its earliest finish",
        reads_site_state: true,
        build: |_| Box::new(Heft::new()),
    },
];

impl DispatchKind {
    /// The strategy's row of [`DISPATCHERS`].
    pub fn entry(self) -> &'static DispatchEntry {
        DISPATCHERS
            .iter()
            .find(|e| e.kind == self)
            .expect("every strategy has its row")
    }

    /// Every strategy, in table order.
    pub fn every() -> Vec<DispatchKind> {
        DISPATCHERS.iter().map(|e| e.kind).collect()
    }

    /// Every name, comma-separated.
    pub fn names() -> String {
        DISPATCHERS
            .iter()
            .map(|e| e.name)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// One line per strategy: its name and help.
    pub fn help_lines() -> String {
        DISPATCHERS
            .iter()
            .map(|e| format!("{:<15} {}", e.name, e.help))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The name on command lines and in configuration files.
    pub fn as_str(self) -> &'static str {
        self.entry().name
    }

    /// Whether the strategy reads the sites' dynamic state.
    pub fn reads_site_state(self) -> bool {
        self.entry().reads_site_state
    }
}

impl fmt::Display for DispatchKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for DispatchKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DISPATCHERS
            .iter()
            .find(|e| e.name == s)
            .map(|e| e.kind)
            .ok_or_else(|| {
                format!(
                    "unknown dispatch strategy `{s}` (expected one of: {})",
                    DispatchKind::names()
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_each_strategy_once_with_its_serde_name() {
        for e in &DISPATCHERS {
            assert_eq!(
                serde_json::to_string(&e.kind).unwrap(),
                format!("\"{}\"", e.name)
            );
            assert_eq!(e.name.parse::<DispatchKind>(), Ok(e.kind));
            let d = (e.build)(&DispatchConfig::new(e.kind));
            assert_eq!(d.reads_site_state(), e.reads_site_state, "{}", e.name);
            assert!(d.describe().starts_with(e.name), "{}", e.name);
        }
        assert_eq!(DispatchKind::every().len(), DISPATCHERS.len());
        let e = "fastest".parse::<DispatchKind>().unwrap_err();
        assert!(e.ends_with("(expected one of: round-robin, load, ordering, load-ordering, best-fit, least-loaded, min-completion, lb-consolidation, resource-priority, mct-preferred, job-sharing, multi-site, min-min, max-min, sufferage, heft)"), "{e}");
    }
}
