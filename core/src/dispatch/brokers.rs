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

use super::{ClusterLoad, Dispatcher, GridState, Measure, Placement, Priority, Reason, refuse};
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
    last: Option<Reason>,
}

impl Broker {
    /// A broker of the given kind.
    pub fn new(kind: BrokerKind) -> Broker {
        Broker { kind, last: None }
    }
}

/// The polled load of cluster `c`, or an empty one when the driver gave none.
pub(super) fn load_of(grid: &GridState, c: ClusterId) -> ClusterLoad {
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
        self.last = None;
        let eligible: Vec<ClusterId> = grid.eligible(job).collect();
        if eligible.is_empty() {
            return refuse(job);
        }
        let procs = u64::from(job.procs);
        let waiting = |c: ClusterId| i128::from(load_of(grid, c).waiting_jobs);
        let free_left = |c: ClusterId| {
            let free = load_of(grid, c).free_procs;
            (free >= procs).then(|| i128::from(free - procs))
        };
        let completion = |c: ClusterId| {
            let l = load_of(grid, c);
            let total = i128::from(grid.caps[c.index()].total_procs.max(1));
            let backlog = (l.waiting_area + l.running_area) / total;
            let data = i128::from(grid.transfers.counted(job, c, now));
            i128::from(now) + backlog + data + i128::from(job.estimate)
        };
        let least = |f: &dyn Fn(ClusterId) -> Option<i128>| {
            eligible
                .iter()
                .filter_map(|&c| Some((f(c)?, c)))
                .min()
                .map(|(_, c)| c)
        };
        let by_waiting = || {
            (
                least(&|c| Some(waiting(c))).expect("non-empty"),
                Measure::Waiting,
            )
        };
        let (chosen, measure) = match self.kind {
            BrokerKind::LeastLoaded => by_waiting(),
            BrokerKind::BestFit => {
                least(&free_left).map_or_else(by_waiting, |c| (c, Measure::FreeLeft))
            }
            BrokerKind::MinCompletion => (
                least(&|c| Some(completion(c))).expect("non-empty"),
                Measure::Completion,
            ),
        };
        let value = |c: ClusterId| match measure {
            Measure::FreeLeft => free_left(c),
            Measure::Completion => Some(completion(c)),
            _ => Some(waiting(c)),
        };
        let compared = eligible.iter().filter_map(|&c| Some((c, value(c)?)));
        self.last = Some(Reason::least(measure, None, chosen, compared));
        Placement::Cluster(chosen)
    }

    fn last_reason(&self) -> Option<Reason> {
        self.last
    }

    fn job_ended(&mut self, _now: Time, _job: JobId, _cluster: ClusterId) {}

    fn reads_site_state(&self) -> bool {
        true
    }
}
