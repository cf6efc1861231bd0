//! Dispatch strategies that may look at the sites' state (spec `gang-urgent-scaling.md` Part B.4;
//! `two-level-grid-scheduler.md` D4.2.5 / `self-tuning-and-multisite.md` §6.2 for BestFit): they
//! read [`GridState::load`] and fall back to the lowest cluster id when it is absent.
//!
//! * **least-loaded** (B.4 "load balancing"): the cluster with the fewest waiting jobs; ties to the
//!   lowest id.
//! * **best-fit** (job sharing at cluster level): among clusters with enough free processors now,
//!   the one left with the fewest; if none has, the least loaded.
//! * **min-completion** (B.4 MCT): the earliest estimated completion, `now + (waiting area + running
//!   area) / processors + estimate` — the backlog spread over the cluster, then the job; ties to the
//!   lowest id.

use super::{ClusterLoad, Dispatcher, GridState, Placement, Priority, refuse};
use crate::model::{ClusterId, Job, JobId, Time};

/// Which broker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BrokerKind {
    /// Fewest waiting jobs.
    LeastLoaded,
    /// Fewest free processors left.
    BestFit,
    /// Earliest estimated completion.
    MinCompletion,
}

/// A state-reading broker.
#[derive(Clone, Debug)]
pub struct Broker {
    kind: BrokerKind,
}

impl Broker {
    /// A broker of the given kind.
    pub fn new(kind: BrokerKind) -> Broker {
        Broker { kind }
    }
}

fn load_of(grid: &GridState, c: ClusterId) -> ClusterLoad {
    grid.load
        .as_ref()
        .and_then(|l| l.get(c.index()).cloned())
        .unwrap_or_default()
}

impl Dispatcher for Broker {
    fn describe(&self) -> String {
        match self.kind {
            BrokerKind::LeastLoaded => "least-loaded",
            BrokerKind::BestFit => "best-fit",
            BrokerKind::MinCompletion => "min-completion",
        }
        .into()
    }

    fn dispatch(&mut self, now: Time, job: &Job, _p: Priority, grid: &GridState) -> Placement {
        let eligible: Vec<ClusterId> = grid.eligible(job).collect();
        if eligible.is_empty() {
            return refuse(job);
        }
        let least_loaded = || {
            eligible
                .iter()
                .copied()
                .min_by_key(|&c| (load_of(grid, c).waiting_jobs, c))
                .expect("non-empty")
        };
        let chosen = match self.kind {
            BrokerKind::LeastLoaded => least_loaded(),
            BrokerKind::BestFit => eligible
                .iter()
                .copied()
                .filter(|&c| load_of(grid, c).free_procs >= u64::from(job.procs))
                .min_by_key(|&c| (load_of(grid, c).free_procs - u64::from(job.procs), c))
                .unwrap_or_else(least_loaded),
            BrokerKind::MinCompletion => eligible
                .iter()
                .copied()
                .min_by_key(|&c| {
                    let l = load_of(grid, c);
                    let procs = i128::from(grid.caps[c.index()].total_procs.max(1));
                    let backlog = (l.waiting_area + l.running_area) / procs;
                    (i128::from(now) + backlog + i128::from(job.estimate), c)
                })
                .expect("non-empty"),
        };
        Placement::Cluster(chosen)
    }

    fn job_ended(&mut self, _now: Time, _job: JobId, _cluster: ClusterId) {}

    fn reads_site_state(&self) -> bool {
        true
    }
}
