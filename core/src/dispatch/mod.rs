//! The meta-scheduler's dispatch interface: given a classified job and what the strategy may see
//! of the grid, choose the cluster (or clusters) that will run it (spec
//! `two-level-grid-scheduler.md` D4.2, `self-tuning-and-multisite.md` §6,
//! `gang-urgent-scaling.md` Part B).
//!
//! A [`Dispatcher`] is a deterministic state machine like a local [`crate::policy::Policy`]: the
//! simulator and the live meta-scheduler feed it the same calls and get the same placements.
//! Strategies that the seed restricts to their own bookkeeping (Load, Ordering) ignore the dynamic
//! part of [`GridState`]; brokers that may query sites read it.

mod arrays;
mod batch_mapping;
mod brokers;
mod coallocation;
mod config;
mod grid_scheduler;
mod heft;
mod load_ordering;
mod network_config;
mod reason;
mod registry;
mod round_robin;
#[cfg(test)]
mod tests;
mod transfers;
mod urgent_brokers;
mod wide_split;

pub use arrays::{ClusterArrays, LoadMeasure, OrderingCount, PriorityArrays};
pub use batch_mapping::{BatchMapper, Heuristic, etc};
pub use brokers::{Broker, BrokerKind};
pub use coallocation::{CoAllocation, SEND_GRACE_S, Step as CoAllocationStep};
pub use config::DispatchConfig;
pub use grid_scheduler::{Fragments, GridScheduler, MultiSiteConfig, PairOverhead, stretch_by};
pub use heft::{Heft, mean_comm, mean_cost, upward_ranks};
pub use load_ordering::{Function, LoadOrdering};
pub use network_config::{LinkConfig, NamedLink, NetworkConfig, Rate, parse_rate};
pub use reason::{Measure, Reason};
pub use registry::{DISPATCHERS, DispatchEntry, DispatchKind};
pub use round_robin::RoundRobin;
pub use transfers::{Estimate, Link, MAX_KNOWN, Move, Network, Pass, Transfers};
pub use urgent_brokers::{UrgentBroker, UrgentBrokerKind, urgent_start};
pub use wide_split::WideSplit;

use crate::model::{ClusterId, Duration, Job, JobId, LicenceId, Time, Workflow};
use std::fmt;

/// A meta-scheduler priority, `1..=max` (higher = more important; D4.1).
pub type Priority = u8;

/// What every strategy may know of a cluster: its static capabilities, registered once (D12 #12),
/// and whether it is reachable.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClusterCaps {
    /// The cluster.
    pub cluster: ClusterId,
    /// Whether the cluster is up (a down cluster receives no job).
    pub up: bool,
    /// Processors of all its machines.
    pub total_procs: u64,
    /// The widest job it can run: the processors of its largest machine, or of all its nodes on a
    /// partition whose policy runs multi-node jobs (a job wider than this can never run there
    /// unless split over sites).
    pub max_machine_procs: u32,
    /// Licence types that can be activated on at least one of its machines.
    pub licences: Vec<LicenceId>,
    /// The benchmark score of its fastest machine, when known (the batch-mapping heuristics'
    /// expected times to compute scale by it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub benchmark: Option<u32>,
    /// The memory of its largest machine (KiB), when every machine declares its memory; `None`
    /// when some machine does not (a job's memory is then not limited here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_memory_kb: Option<u64>,
}

impl ClusterCaps {
    /// Whether the cluster can ever run `job` on one machine (processors, memory and licences).
    pub fn can_run(&self, job: &Job) -> bool {
        self.up
            && job.procs <= self.max_machine_procs
            && self.has_memory_for(job)
            && job.licences.iter().all(|l| self.licences.contains(l))
    }

    /// Whether some machine has the memory `job` asks for (or the memory is not known).
    pub fn has_memory_for(&self, job: &Job) -> bool {
        match (job.memory_kb, self.max_memory_kb) {
            (Some(need), Some(have)) => need <= have,
            _ => true,
        }
    }

    /// The [`max_memory_kb`](Self::max_memory_kb) of machines of these memories: the largest, or
    /// `None` when one is unknown.
    pub fn memory_of(machines: impl IntoIterator<Item = Option<u64>>) -> Option<u64> {
        machines
            .into_iter()
            .try_fold(0, |max, m| m.map(|kb| kb.max(max)))
    }
}

/// Dynamic state of a cluster, for the strategies allowed to query sites (BestFit, least-loaded,
/// minimum completion time, multi-site). `None` in [`GridState::load`] when not available.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClusterLoad {
    /// Processors free now.
    pub free_procs: u64,
    /// Jobs waiting in the local queue.
    pub waiting_jobs: u64,
    /// Requested area (procs × estimate) of the waiting jobs.
    pub waiting_area: i128,
    /// Requested area still to run of the running jobs.
    pub running_area: i128,
    /// Its urgent jobs, running or waiting, for the urgent brokers (Kurowski et al. §4);
    /// empty where the site does not report them.
    pub urgent: Vec<UrgentLoad>,
}

/// An urgent job at a cluster, as the urgent brokers see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct UrgentLoad {
    /// Its processors.
    pub procs: u32,
    /// Its predicted end when it runs; `None` while it waits.
    pub end: Option<Time>,
    /// Its estimate (what a waiting one will hold once it starts).
    pub estimate: Duration,
}

/// The grid as a strategy sees it at a decision.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GridState {
    /// Static capabilities of every cluster, indexed by [`ClusterId`].
    pub caps: Vec<ClusterCaps>,
    /// Dynamic load of every cluster, indexed by [`ClusterId`], when the driver provides it.
    pub load: Option<Vec<ClusterLoad>>,
    /// The links and where the jobs' inputs lie (empty when the grid describes no links).
    pub transfers: Transfers,
}

impl GridState {
    /// A grid of one-machine sites of `sizes` processors, all up, without licences or load (the
    /// grid of the multi-site study).
    pub fn single_machines(sizes: &[u32]) -> GridState {
        GridState {
            caps: sizes
                .iter()
                .enumerate()
                .map(|(i, &n)| ClusterCaps {
                    cluster: ClusterId(i as u32),
                    up: true,
                    total_procs: u64::from(n),
                    max_machine_procs: n,
                    licences: Vec::new(),
                    benchmark: None,
                    max_memory_kb: None,
                })
                .collect(),
            load: None,
            transfers: Transfers::default(),
        }
    }

    /// The clusters that can ever run `job` on one machine, in id order.
    pub fn eligible<'a>(&'a self, job: &'a Job) -> impl Iterator<Item = ClusterId> + 'a {
        self.caps
            .iter()
            .filter(|c| c.can_run(job))
            .map(|c| c.cluster)
    }
}

/// One part of a job split over several clusters (multi-site execution).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Part {
    /// The cluster running this part.
    pub cluster: ClusterId,
    /// Processors of the part.
    pub procs: u32,
}

/// A dispatch decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Send the whole job to one cluster.
    Cluster(ClusterId),
    /// Run the job split over several clusters at once (its run time grows by the WAN overhead).
    Split(Vec<Part>),
    /// The strategy keeps the job in its own queue at the meta level and places it later, in a
    /// [`Dispatcher::release`] pass (the grid scheduler of the multi-site study).
    Hold,
    /// No cluster can ever run the job; the text says why.
    Refuse(String),
}

/// A job a [`Dispatcher::release`] pass placed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Release {
    /// The job (held since its [`Dispatcher::dispatch`] returned [`Placement::Hold`]).
    pub job: JobId,
    /// Where it goes: [`Placement::Cluster`] or [`Placement::Split`].
    pub placement: Placement,
    /// Why there.
    pub reason: Reason,
}

/// A meta-level dispatch strategy.
pub trait Dispatcher: Send + fmt::Debug {
    /// A short description including non-default options.
    fn describe(&self) -> String;

    /// Chooses where `job`, classified as `priority`, goes at `now`.
    fn dispatch(&mut self, now: Time, job: &Job, priority: Priority, grid: &GridState)
    -> Placement;

    /// Why the last [`Dispatcher::dispatch`] placed its job where it did (for `explain`); `None`
    /// when the strategy does not say, or the job was refused.
    fn last_reason(&self) -> Option<Reason> {
        None
    }

    /// A pass over the jobs the strategy holds ([`Placement::Hold`]) at `now`: appends those it
    /// places now, in the order decided. Drivers call it after each instant's terminations and
    /// submissions while [`Dispatcher::held`] is not zero. The default holds nothing.
    fn release(&mut self, _now: Time, _grid: &GridState, _out: &mut Vec<Release>) {}

    /// How many jobs the strategy holds at the meta level.
    fn held(&self) -> usize {
        0
    }

    /// A job the strategy holds left the grid (cancelled); it is forgotten. The default does
    /// nothing.
    fn withdraw(&mut self, _job: JobId) {}

    /// The cluster that ran `job` reported its termination (the only upward notice of the seed's
    /// protocol, D3).
    fn job_ended(&mut self, now: Time, job: JobId, cluster: ClusterId);

    /// A job dispatched to `cluster` came back to the meta level (its cluster failed before
    /// starting it); the strategy forgets its bookkeeping for it. The default does nothing.
    fn job_returned(&mut self, _now: Time, _job: JobId, _cluster: ClusterId) {}

    /// A driver restarting from its durable state re-enters a placement decided at `since`
    /// before the restart (`job`, classified `priority`, placed where `placement` says and not
    /// yet reported terminated, or [`Placement::Hold`] for a job still held), so the strategy's
    /// bookkeeping is what it was. Held jobs may come in any order. The default does nothing (no
    /// bookkeeping).
    fn restore(&mut self, _job: &Job, _priority: Priority, _placement: &Placement, _since: Time) {}

    /// Gives back the room a burst of jobs left in the strategy's bookkeeping once they have
    /// ended ([`crate::structures::Shrink`]); decides nothing. The default does nothing.
    fn compact(&mut self) {}

    /// Whether the strategy splits a job wider than every site over several sites (the widest
    /// job the grid takes is then all its sites together). The default: never.
    fn splits(&self) -> bool {
        false
    }

    /// Whether the strategy reads [`GridState::load`] (the sites' dynamic state); drivers fill
    /// it only for those that do. The default: a strategy that sees only its own bookkeeping.
    fn reads_site_state(&self) -> bool {
        false
    }

    /// The Load / Ordering bookkeeping arrays of `clusters` clusters, for inspection (`sites`,
    /// `explain`); empty for strategies without them.
    fn arrays(&self, _clusters: usize) -> Vec<ClusterArrays> {
        Vec::new()
    }

    /// Workflow `id` entered the grid at `now` (or was restored into it): its DAG, whose nodes
    /// come as jobs of the ids [`Workflow::node_id`] gives, for the strategies that order nodes by
    /// their place in it (HEFT's ranks). The default does nothing.
    fn workflow_admitted(&mut self, _now: Time, _id: JobId, _wf: &Workflow, _grid: &GridState) {}

    /// Workflow `id` left the grid (no node out, none more to release); the strategy forgets it.
    /// The default does nothing.
    fn workflow_over(&mut self, _id: JobId) {}
}

/// The refusal of a job no eligible cluster can run.
/// The release of a held job no site can run any more: refused.
pub(crate) fn refused_release(job: &Job) -> Release {
    Release {
        job: job.id,
        placement: refuse(job),
        reason: Reason::least(Measure::Completion, None, ClusterId(0), std::iter::empty()),
    }
}

pub(crate) fn refuse(job: &Job) -> Placement {
    Placement::Refuse(format!(
        "no cluster that is up offers {} processors on one machine and licences {:?}",
        job.procs, job.licences
    ))
}
