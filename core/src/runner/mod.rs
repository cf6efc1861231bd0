//! The cluster runner: the whole call sequence around one cluster's local policy, shared by both
//! clocks. The simulator (virtual time) and the live local scheduler (real time) feed it the same
//! [`Input`]s with the time they happen at, and it answers with the same [`Effect`]s; nothing in it
//! reads a clock or does I/O, so a decision made live equals the one the simulator makes from the
//! same inputs (Pasquali, thesis §3.1: the local scheduler plans at every submission and
//! termination; spec `two-level-grid-scheduler.md` D3, D8).
//!
//! What it owns, beside the policy:
//!
//! * submissions with the meta-scheduler's priority (D3: the MS → LS descriptor carries it; D9.3),
//!   handed to the policy right after it accepts the job;
//! * scheduling passes: the policy's suspensions first, then its starts, each start checked against
//!   the cluster's own [`Ledger`] (machine up and in the cluster, processors, licence copies); a
//!   decision that breaks a rule is an error and is not handed out;
//! * the progress of every job: a suspended job keeps the reference work it has done (rounded down,
//!   so it never gains progress) and its remaining estimate. Where it resumes follows
//!   [`Migration`]: on the machine it was suspended on it continues; elsewhere it keeps its progress
//!   (a simulated migration) or, where processes cannot move, starts again from scratch, counted as
//!   a restart;
//! * overruns: a job still running at its predicted end gets a new predicted end by one
//!   [`OverrunRule`], the reference simulator's;
//! * cancellations, requeues, machines going down and up, and the restoration of running jobs after
//!   a restart of the live service.
//!
//! An [`Input`] and the runner's [`RunnerConfig`] are plain serializable data, so a live service
//! can log its inputs with their times and the simulator can run the log again ([`replay`]).

mod earliest;
mod ledger;
pub mod nodes;
pub mod replay;
pub mod testing;
#[cfg(test)]
mod tests;

pub use earliest::MAX_TRIES as EARLIEST_TRIES;
pub use ledger::{Held, Ledger};
pub use nodes::{NodePart, NodePool};

use crate::dispatch::Priority;
use crate::model::{
    ClusterId, Duration, Job, JobId, MachineId, Platform, ReservationId, Time, scale_duration,
};
use crate::policy::{AdvanceReservation, Decisions, Policy, Rejection, ReservationRefused, Start};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// How an overrunning job's predicted end moves each time it is reached (the reference simulator's
/// rule, `reference-semantics.md`): by `extension` seconds, or by one more estimate when `None`;
/// never by less than one second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverrunRule {
    /// Seconds added at every overrun; `None` = the job's estimate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extension: Option<Duration>,
}

impl OverrunRule {
    /// The new predicted end of a job with `estimate` that overruns at `now`.
    pub fn next_end(&self, now: Time, estimate: Duration) -> Time {
        now + self.extension.unwrap_or(estimate).max(1)
    }
}

/// What a suspended job's progress becomes when it resumes on another machine than the one it was
/// suspended on (on the same machine it always continues).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Migration {
    /// It keeps its progress (the simulator's model of preemption, Pasquali §4.3).
    #[default]
    KeepProgress,
    /// It starts again from scratch (a live process cannot move): counted as a restart.
    Restart,
}

/// The runner's settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunnerConfig {
    /// Overruns.
    #[serde(default)]
    pub overrun: OverrunRule,
    /// Resumption on another machine.
    #[serde(default)]
    pub migration: Migration,
}

/// Something that happens on the cluster, at a time given with it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "input", rename_all = "kebab-case")]
pub enum Input {
    /// A job enters the queue, with the meta-scheduler's priority when it has one.
    Submit {
        /// The job.
        job: Job,
        /// The meta-scheduler's priority.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        priority: Option<Priority>,
    },
    /// A running job ended (whatever its outcome): [`Effect::Finished`].
    Ended {
        /// The job.
        job: JobId,
    },
    /// A job leaves: waiting, or running (its process is the driver's to stop).
    Cancel {
        /// The job.
        job: JobId,
    },
    /// A running job goes back to the waiting queue (its process was lost or never started), or a
    /// suspended job's stopped process is gone: it keeps no progress.
    Requeue {
        /// The job.
        job: JobId,
    },
    /// A machine went down (it gets no new start) or came back.
    Machine {
        /// The machine.
        machine: MachineId,
        /// Up or down.
        up: bool,
    },
    /// After a restart of the driver: `job` is already running on `machine` since `started` (on
    /// `nodes` when it is a multi-node job of a partition).
    Restore {
        /// The job.
        job: Job,
        /// The meta-scheduler's priority.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        priority: Option<Priority>,
        /// Its machine.
        machine: MachineId,
        /// When it started.
        started: Time,
        /// Its parts, for a multi-node job of a partition (empty: all of it on `machine`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        nodes: Vec<NodePart>,
    },
    /// An advance reservation asked for: admitted by the policy, or refused
    /// ([`RunnerError::Reservation`]).
    Reserve {
        /// The request.
        reservation: AdvanceReservation,
    },
    /// An advance reservation asked for at the earliest instant from its start on where it fits,
    /// keeping its length ([`earliest`]): admitted there, or refused with the last conflict.
    ReserveEarliest {
        /// The request (its start: the earliest acceptable).
        reservation: AdvanceReservation,
    },
    /// An advance reservation is given up.
    CancelReservation {
        /// Its identifier.
        id: ReservationId,
    },
    /// The meta-scheduler weighed waiting jobs again (its fair-share recalculation): their new
    /// priorities, in force from the next pass. A job not here or running keeps what it had.
    Reprioritize {
        /// Each job and its new priority.
        jobs: Vec<(JobId, Priority)>,
    },
    /// A scheduling pass.
    Pass,
    /// Overrun check: every running job at or past its predicted end gets a new one.
    Tick,
}

/// How a start relates to the job's earlier runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Launch {
    /// Its first start.
    First,
    /// It continues on the machine it was suspended on.
    Resume,
    /// It continues on another machine, with its progress.
    Migrate,
    /// It starts again from scratch on another machine (progress lost).
    Restart,
}

/// A start handed out by a pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Started {
    /// The job.
    pub job: JobId,
    /// Its machine (a multi-node job's head node: [`ClusterRunner::nodes_of`] lists its nodes).
    pub machine: MachineId,
    /// Processors it takes (on all its nodes).
    pub procs: u32,
    /// Pool copies it takes.
    pub copies: u32,
    /// How long it runs from now if its actual run time is known (the rest of its work, scaled to
    /// the machine): the simulator ends it then, an emulated live job sleeps that long.
    pub run: Duration,
    /// The most it may run from now (the rest of its estimate, scaled to the machine): its
    /// wall-time limit.
    pub limit: Duration,
    /// First start, resumption, migration or restart.
    pub launch: Launch,
    /// Seconds at its beginning without progress, included in `run` and `limit` (a gang
    /// scheduler's context switch or migration delay, [`Start::setup`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub setup: Duration,
}

fn is_zero(d: &Duration) -> bool {
    *d == 0
}

/// What a finished job did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finished {
    /// The job.
    pub job: JobId,
    /// The meta-scheduler's priority, if it gave one.
    pub priority: Option<Priority>,
    /// Submission.
    pub submit: Time,
    /// First start.
    pub start: Time,
    /// End.
    pub end: Time,
    /// Seconds spent running (over all its runs).
    pub exec: Duration,
    /// Its deadline.
    pub deadline: Option<Time>,
    /// Times it was suspended.
    pub suspensions: u32,
    /// Times it started again from scratch after a suspension or a requeue.
    pub restarts: u32,
}

/// Why an [`Effect::Dropped`] job left, in words.
pub const DROPPED: &str = "it could not start inside its advance reservation in time: a job \
                           before it ran past its predicted end";

/// What the driver must do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "effect", rename_all = "kebab-case")]
pub enum Effect {
    /// Start (or resume) a job.
    Start(Started),
    /// Suspend a running job (its processors are free from now; it keeps its progress).
    Suspend {
        /// The job.
        job: JobId,
        /// Where it ran.
        machine: MachineId,
    },
    /// Kill a running job and keep it queued (its processors are free from now; its progress is
    /// lost and it runs again from scratch, counted as a restart).
    Kill {
        /// The job.
        job: JobId,
        /// Where it ran.
        machine: MachineId,
    },
    /// A job ended ([`Input::Ended`]).
    Finished(Finished),
    /// A waiting job can no longer run here and leaves the cluster (a job of an advance
    /// reservation that a job running past its predicted end kept from starting until the rest
    /// of the reservation is too short for it).
    Dropped {
        /// The job.
        job: JobId,
    },
    /// A running job reached its predicted end and runs on; the policy now plans with this end.
    Overrun {
        /// The job.
        job: JobId,
        /// Its new predicted end.
        predicted_end: Time,
    },
}

/// Why an input was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RunnerError {
    /// The policy refused a submission.
    #[error(transparent)]
    Rejected(#[from] Rejection),
    /// A job id is already in the cluster.
    #[error("job {0} is already in the cluster")]
    Duplicate(JobId),
    /// The job is not in the cluster, or not in the state the input needs.
    #[error("job {job}: {why}")]
    NotApplicable {
        /// The job.
        job: JobId,
        /// What is wrong.
        why: &'static str,
    },
    /// A machine of another cluster.
    #[error("machine {0} is not part of this cluster")]
    UnknownMachine(MachineId),
    /// The policy refused an advance reservation.
    #[error(transparent)]
    Reservation(#[from] ReservationRefused),
    /// No such advance reservation is held.
    #[error("reservation {0} is not held")]
    UnknownReservation(ReservationId),
    /// A decision of the policy breaks a rule: not handed out.
    #[error("at {time}: job {job}: {why}")]
    BadDecision {
        /// When.
        time: Time,
        /// The job.
        job: JobId,
        /// What is wrong.
        why: String,
    },
}

#[derive(Clone, Debug)]
struct Running {
    since: Time,
    /// What it holds on its machine (its head node, for a multi-node job).
    held: Held,
    /// What a multi-node job holds on its other nodes.
    others: Vec<Held>,
    predicted_end: Time,
    /// Seconds at the start of this run without progress ([`Start::setup`]).
    setup: Duration,
}

/// A partition of alike nodes whose policy sees one machine (`head`, the first node) of their
/// summed processors: starts are mapped onto nodes.
#[derive(Clone, Debug)]
struct Partition {
    head: MachineId,
    nodes: NodePool,
    down: BTreeSet<MachineId>,
}

/// One job in the cluster.
#[derive(Clone, Debug)]
struct Tracked {
    job: Job,
    priority: Option<Priority>,
    /// Reference work left (actual run time capped by the estimate, or the estimate), seconds.
    remaining: Duration,
    /// Reference estimate left, seconds.
    estimate_left: Duration,
    running: Option<Running>,
    /// The machine of its last run, while it waits after a suspension.
    suspended_on: Option<MachineId>,
    first_start: Option<Time>,
    exec: Duration,
    suspensions: u32,
    restarts: u32,
}

impl Tracked {
    fn new(job: Job, priority: Option<Priority>) -> Tracked {
        Tracked {
            estimate_left: job.estimate,
            remaining: Tracked::full_work(&job),
            job,
            priority,
            running: None,
            suspended_on: None,
            first_start: None,
            exec: 0,
            suspensions: 0,
            restarts: 0,
        }
    }

    /// A job's whole reference work: its actual run time capped by its estimate (the estimate
    /// when the run time is unknown).
    fn full_work(job: &Job) -> Duration {
        job.runtime.unwrap_or(job.estimate).clamp(0, job.estimate)
    }

    fn reset_progress(&mut self) {
        self.remaining = Tracked::full_work(&self.job);
        self.estimate_left = self.job.estimate;
    }
}

/// The driver of one cluster's policy.
#[derive(Debug)]
pub struct ClusterRunner {
    config: RunnerConfig,
    policy: Box<dyn Policy>,
    ledger: Ledger,
    jobs: FxHashMap<JobId, Tracked>,
    running: usize,
    /// The running jobs by predicted end, so that the overrun check at every pass costs only the
    /// jobs that are due.
    ends: BTreeSet<(Time, JobId)>,
    decided: Decisions,
    /// Set when the cluster is a partition of alike nodes run as one pool.
    partition: Option<Partition>,
    /// The one machine (or a partition's node) a single-machine policy sees, to hand it each
    /// job as it sees it ([`ClusterRunner::as_seen`]).
    view: View,
}

/// The one machine a single-machine policy (FCFS, the backfilling and planning family) sees, or
/// a node of the partition it sees as one machine.
#[derive(Clone, Copy, Debug, Default)]
struct View {
    /// Its benchmark score: such a policy plans with a job's estimate as given, so it is handed
    /// the job scaled to that machine.
    benchmark: Option<u32>,
    /// Its processors and memory (KiB), when its memory is known: such a policy counts
    /// processors only, so a job asking for more memory than its processors' share of the
    /// machine is handed to it as taking the processors its memory amounts to, its *processor
    /// equivalent* `⌈memory_kb × procs / memory⌉` (Jackson, Snell and Clement, "Core algorithms
    /// of the Maui scheduler", JSSPP 2001, where a job's dedicated resources are counted in
    /// processor equivalents; spec reading: the publications model no memory). On a partition
    /// every processor of the job then carries at most a node's memory per processor, so no node
    /// is ever short of memory whatever nodes its processors land on.
    node: Option<(u32, u64)>,
}

impl View {
    /// `job` as the policy sees it.
    fn of(self, job: &Job) -> std::borrow::Cow<'_, Job> {
        let scaled = match (self.benchmark, job.benchmark) {
            (Some(to), Some(from)) if to != from => Some((from, to)),
            _ => None,
        };
        let procs = match (self.node, job.memory_kb) {
            (Some((procs, memory)), Some(asked)) if memory > 0 => {
                let equivalent =
                    (u128::from(asked) * u128::from(procs)).div_ceil(u128::from(memory));
                let equivalent = u32::try_from(equivalent).unwrap_or(u32::MAX);
                (equivalent > job.procs).then_some(equivalent)
            }
            _ => None,
        };
        if scaled.is_none() && procs.is_none() {
            return std::borrow::Cow::Borrowed(job);
        }
        let mut j = job.clone();
        if let Some((from, to)) = scaled {
            j.estimate = scale_duration(job.estimate, from, to);
            j.runtime = job.runtime.map(|r| scale_duration(r, from, to));
            j.benchmark = Some(to);
        }
        if let Some(p) = procs {
            j.procs = p;
        }
        std::borrow::Cow::Owned(j)
    }
}

impl ClusterRunner {
    /// Gives back the room a burst of jobs left in the runner's job map once they have ended
    /// ([`crate::structures::Shrink`]); decides nothing. The services call it at their ticks.
    pub fn compact(&mut self) {
        use crate::structures::Shrink;
        self.jobs.shrink_if_sparse();
    }

    /// A runner of `policy` over cluster `cluster` of `platform`, every machine up and idle.
    pub fn new(
        platform: &Platform,
        cluster: ClusterId,
        policy: Box<dyn Policy>,
        config: RunnerConfig,
    ) -> Result<ClusterRunner, RunnerError> {
        let ledger = Ledger::new(platform, cluster).ok_or(RunnerError::Rejected(
            Rejection::Unsupported(format!("unknown cluster {cluster}")),
        ))?;
        let partition = match (policy.single_machine(), platform.alike_nodes(cluster)) {
            (Some((m, procs)), Some(nodes))
                if nodes[0].0 == m && nodes.iter().map(|n| n.1).sum::<u32>() == procs =>
            {
                Some(Partition {
                    head: m,
                    nodes: NodePool::new(&nodes),
                    down: BTreeSet::new(),
                })
            }
            _ => None,
        };
        let seen = policy
            .single_machine()
            .and_then(|(m, _)| platform.machine(m));
        let view = View {
            benchmark: seen.map(|m| m.benchmark),
            node: seen.and_then(|m| Some((m.procs, m.memory_kb?))),
        };
        Ok(ClusterRunner {
            partition,
            view,
            config,
            policy,
            ledger,
            jobs: FxHashMap::default(),
            running: 0,
            ends: BTreeSet::new(),
            decided: Decisions::default(),
        })
    }

    /// The settings.
    pub fn config(&self) -> RunnerConfig {
        self.config
    }

    /// The policy, to inspect (queue, reservations, description).
    pub fn policy(&self) -> &dyn Policy {
        self.policy.as_ref()
    }

    /// The cluster's resource accounting.
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// Whether `job` could be submitted later without being refused for what it asks: a new id,
    /// an estimate of at least a second, no more processors than the largest machine (a
    /// partition's nodes together) has, no more memory than the largest machine, and a held
    /// reservation if it names one. A site checks a job with this when it holds it back before
    /// submitting it (its inputs being staged in); the policy checks the rest at the submission.
    pub fn admissible(&self, job: &Job) -> Result<(), RunnerError> {
        if self.jobs.contains_key(&job.id) {
            return Err(RunnerError::Duplicate(job.id));
        }
        crate::policy::check_reservation(self.policy.as_ref(), job)?;
        if job.estimate < 1 {
            return Err(Rejection::BadEstimate {
                job: job.id,
                estimate: job.estimate,
            }
            .into());
        }
        let machines = || self.ledger.machines();
        let max = match &self.partition {
            Some(_) => machines().map(|m| m.procs).sum(),
            None => machines().map(|m| m.procs).max().unwrap_or(0),
        };
        if job.procs > max {
            return Err(Rejection::TooWide {
                job: job.id,
                procs: job.procs,
                max,
            }
            .into());
        }
        self.memory_admissible(job, max)
    }

    /// Whether `job`'s memory can ever be had here, on a cluster whose largest machine (or
    /// partition) has `max` processors: for a single-machine policy, its processor equivalent
    /// ([`View`]) is at most `max`; else some machine has the memory (one whose memory is not
    /// known is not checked).
    fn memory_admissible(&self, job: &Job, max: u32) -> Result<(), RunnerError> {
        let Some(need) = job.memory_kb else {
            return Ok(());
        };
        let reason = match self.view.node {
            Some((procs, memory)) => {
                let seen = self.as_seen(job);
                (seen.procs > max).then(|| {
                    format!(
                        "memory_kb: {need} KiB on {} processors amounts to {} processors' worth \
                         of memory on machines of {procs} processors and {memory} KiB, and it \
                         has {max} processors",
                        job.procs, seen.procs
                    )
                })
            }
            None => {
                let mut machines = self.ledger.machines();
                machines
                    .all(|m| m.memory_kb.is_some_and(|have| have < need))
                    .then(|| {
                        let most = self.ledger.machines().filter_map(|m| m.memory_kb).max();
                        format!(
                            "memory_kb: {need} KiB asked, the largest machine has {} KiB",
                            most.unwrap_or(0)
                        )
                    })
            }
        };
        match reason {
            Some(reason) => Err(Rejection::NoEligibleMachine {
                job: job.id,
                reason,
            }
            .into()),
            None => Ok(()),
        }
    }

    /// The next time the policy wants a pass even if nothing happens.
    pub fn next_wakeup(&self) -> Option<Time> {
        self.policy.next_wakeup()
    }

    /// Jobs in the cluster (waiting or running).
    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    /// Whether the cluster holds no job.
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Running jobs.
    pub fn running_len(&self) -> usize {
        self.running
    }

    /// Whether a job is in the cluster.
    pub fn contains(&self, job: JobId) -> bool {
        self.jobs.contains_key(&job)
    }

    /// The job, if it is in the cluster.
    pub fn job(&self, job: JobId) -> Option<&Job> {
        self.jobs.get(&job).map(|t| &t.job)
    }

    /// The meta-scheduler's priority of a job here, if it gave one.
    pub fn job_priority(&self, job: JobId) -> Option<Priority> {
        self.jobs.get(&job).and_then(|t| t.priority)
    }

    /// Where and since when a job runs.
    pub fn running_on(&self, job: JobId) -> Option<(MachineId, Time)> {
        let r = self.jobs.get(&job)?.running.as_ref()?;
        Some((r.held.machine, r.since))
    }

    /// The predicted end of a running job.
    pub fn predicted_end(&self, job: JobId) -> Option<Time> {
        Some(self.jobs.get(&job)?.running.as_ref()?.predicted_end)
    }

    /// The earliest predicted end of a running job: from then on an [`Input::Tick`] has work.
    pub fn next_overrun(&self) -> Option<Time> {
        self.ends.first().map(|&(t, _)| t)
    }

    /// Whether the cluster is a partition of alike nodes whose jobs may span nodes.
    pub fn is_partition(&self) -> bool {
        self.partition.is_some()
    }

    /// The nodes a running job of a partition holds, in node order (the first is its head node,
    /// rank 0); `None` on other clusters and for jobs not running.
    pub fn nodes_of(&self, job: JobId) -> Option<Vec<NodePart>> {
        self.partition.as_ref()?.nodes.parts(job)
    }

    /// The machine a waiting job was suspended on, if it was.
    pub fn suspended_on(&self, job: JobId) -> Option<MachineId> {
        self.jobs.get(&job)?.suspended_on
    }

    /// The advance reservations held, by identifier.
    pub fn advance_reservations(&self) -> Vec<AdvanceReservation> {
        self.policy.advance_reservations()
    }

    /// Every job in the cluster with whether it runs, in no particular order.
    pub fn jobs(&self) -> impl Iterator<Item = (&Job, bool)> {
        self.jobs.values().map(|t| (&t.job, t.running.is_some()))
    }

    /// Handles `input` at `now`, appending what the driver must do to `out`. On an error nothing
    /// is appended for the decision at fault.
    pub fn on(
        &mut self,
        now: Time,
        input: Input,
        out: &mut Vec<Effect>,
    ) -> Result<(), RunnerError> {
        match input {
            Input::Submit { job, priority } => self.submit(now, job, priority),
            Input::Ended { job } => {
                out.push(Effect::Finished(self.end(now, job)?));
                Ok(())
            }
            Input::Cancel { job } => self.cancel(now, job),
            Input::Requeue { job } => self.requeue(now, job),
            Input::Machine { machine, up } => {
                if !self.ledger.set_up(machine, up) {
                    return Err(RunnerError::UnknownMachine(machine));
                }
                match &mut self.partition {
                    // The pool's policy sees one machine: while a node is down, nothing starts.
                    Some(p) => {
                        if up {
                            p.down.remove(&machine);
                        } else {
                            p.down.insert(machine);
                        }
                        let all_up = p.down.is_empty();
                        self.policy.set_machine_available(now, p.head, all_up);
                    }
                    None => self.policy.set_machine_available(now, machine, up),
                }
                Ok(())
            }
            Input::Restore {
                job,
                priority,
                machine,
                started,
                nodes,
            } => self.restore(now, job, priority, machine, started, nodes),
            Input::Reserve { reservation } => {
                Ok(self.policy.admit_reservation(now, &reservation)?)
            }
            Input::ReserveEarliest { reservation } => self.reserve_earliest(now, reservation),
            Input::CancelReservation { id } => {
                if self.policy.cancel_reservation(now, id) {
                    Ok(())
                } else {
                    Err(RunnerError::UnknownReservation(id))
                }
            }
            Input::Reprioritize { jobs } => {
                let waiting: Vec<(JobId, Priority)> = (jobs.into_iter())
                    .filter(|(id, p)| match self.jobs.get_mut(id) {
                        Some(t) if t.running.is_none() => {
                            t.priority = Some(*p);
                            true
                        }
                        _ => false,
                    })
                    .collect();
                self.policy.meta_priorities(&waiting);
                Ok(())
            }
            Input::Pass => self.pass(now, out),
            Input::Tick => {
                self.tick(now, out);
                Ok(())
            }
        }
    }

    fn submit(
        &mut self,
        now: Time,
        job: Job,
        priority: Option<Priority>,
    ) -> Result<(), RunnerError> {
        if self.jobs.contains_key(&job.id) {
            return Err(RunnerError::Duplicate(job.id));
        }
        if let Some((_, procs)) = self.policy.single_machine() {
            self.memory_admissible(&job, procs)?;
        }
        let seen = self.as_seen(&job);
        crate::policy::check_reservation(self.policy.as_ref(), &seen)?;
        self.policy.submit(now, &seen)?;
        if let Some(p) = priority {
            self.policy.meta_priority(job.id, p);
        }
        self.jobs.insert(job.id, Tracked::new(job, priority));
        Ok(())
    }

    /// `job` as the policy sees it: for a single-machine policy, its estimate and run time scaled
    /// to that machine's benchmark (D2.1, as the runner scales its run), since such a policy
    /// (FCFS, the backfilling and planning family) plans in the machine's own seconds (unscaled,
    /// a job on a machine slower than its benchmark would end, to the policy, before it does, and
    /// the policy would start others on its processors); and its processors raised to its
    /// memory's processor equivalent ([`View`]). The ledger holds what the policy saw.
    fn as_seen<'a>(&self, job: &'a Job) -> std::borrow::Cow<'a, Job> {
        self.view.of(job)
    }

    /// Stops a running job at `now`, releasing its resources and keeping its progress.
    fn stop(&mut self, now: Time, id: JobId) -> Option<MachineId> {
        let t = self.jobs.get_mut(&id)?;
        let r = t.running.take()?;
        self.ends.remove(&(r.predicted_end, id));
        self.running -= 1;
        let ran = now - r.since;
        t.exec += ran;
        // The setup seconds of the run (a context switch, a migration) hold the processors but
        // make no progress.
        let ran = (ran - r.setup).max(0);
        let machine = self
            .ledger
            .machine(r.held.machine)
            .expect("held machines are the cluster's");
        let done = match t.job.benchmark {
            None => ran,
            Some(bm_ref) => {
                (i128::from(ran) * i128::from(machine.benchmark) / i128::from(bm_ref.max(1))) as i64
            }
        };
        t.remaining = (t.remaining - done).max(0);
        t.estimate_left = (t.estimate_left - done).max(0);
        self.ledger.release(&r.held);
        for h in &r.others {
            self.ledger.release(h);
        }
        if let Some(p) = &mut self.partition {
            p.nodes.release(id);
        }
        Some(r.held.machine)
    }

    fn end(&mut self, now: Time, id: JobId) -> Result<Finished, RunnerError> {
        if self.stop(now, id).is_none() {
            return Err(RunnerError::NotApplicable {
                job: id,
                why: "ended but not running",
            });
        }
        self.policy.terminate(now, id);
        let t = self.jobs.remove(&id).expect("stopped jobs are tracked");
        Ok(Finished {
            job: id,
            priority: t.priority,
            submit: t.job.submit,
            start: t.first_start.unwrap_or(now),
            end: now,
            exec: t.exec,
            deadline: t.job.deadline,
            suspensions: t.suspensions,
            restarts: t.restarts,
        })
    }

    fn cancel(&mut self, now: Time, id: JobId) -> Result<(), RunnerError> {
        if !self.jobs.contains_key(&id) {
            return Err(RunnerError::NotApplicable {
                job: id,
                why: "not in the cluster",
            });
        }
        if self.stop(now, id).is_some() {
            self.policy.terminate(now, id);
        } else {
            self.policy.cancel(now, id);
        }
        self.jobs.remove(&id);
        Ok(())
    }

    fn requeue(&mut self, now: Time, id: JobId) -> Result<(), RunnerError> {
        if self.stop(now, id).is_none() {
            // A suspended job whose stopped process is gone waits on, from scratch.
            let Some(t) = self.jobs.get_mut(&id).filter(|t| t.suspended_on.is_some()) else {
                return Err(RunnerError::NotApplicable {
                    job: id,
                    why: "requeued but neither running nor suspended",
                });
            };
            t.suspended_on = None;
            t.reset_progress();
            t.restarts += 1;
            return Ok(());
        }
        self.policy.terminate(now, id);
        let t = self.jobs.get_mut(&id).expect("stopped jobs are tracked");
        t.reset_progress();
        t.suspended_on = None;
        if t.first_start.is_some() {
            t.restarts += 1;
        }
        let (job, priority) = (t.job.clone(), t.priority);
        if let Err(e) = self.policy.submit(now, &self.as_seen(&job)) {
            self.jobs.remove(&id);
            return Err(e.into());
        }
        if let Some(p) = priority {
            self.policy.meta_priority(id, p);
        }
        Ok(())
    }

    fn restore(
        &mut self,
        now: Time,
        job: Job,
        priority: Option<Priority>,
        machine: MachineId,
        started: Time,
        nodes: Vec<NodePart>,
    ) -> Result<(), RunnerError> {
        if self.jobs.contains_key(&job.id) {
            return Err(RunnerError::Duplicate(job.id));
        }
        let m = self
            .ledger
            .machine(machine)
            .ok_or(RunnerError::UnknownMachine(machine))?;
        let predicted_end = started + job.duration_on(job.estimate, m);
        let seen = self.view.of(&job).into_owned();
        let parts = match nodes.is_empty() {
            true => vec![NodePart {
                node: machine,
                procs: seen.procs,
            }],
            false => nodes,
        };
        let policy_machine = self.partition.as_ref().map_or(machine, |p| p.head);
        self.policy
            .restore_running(now, &seen, started, policy_machine, seen.procs)?;
        if let Some(p) = priority {
            self.policy.meta_priority(job.id, p);
        }
        let bad = |why: String| RunnerError::BadDecision {
            time: now,
            job: job.id,
            why,
        };
        let mut holds = match self.ledger.acquire_parts(&seen, &parts) {
            Ok(h) => h,
            Err(why) => {
                self.policy.terminate(now, job.id);
                return Err(bad(why));
            }
        };
        if let Some(p) = &mut self.partition
            && !p.nodes.hold(job.id, &parts)
        {
            for h in &holds {
                self.ledger.release(h);
            }
            self.policy.terminate(now, job.id);
            return Err(bad(format!(
                "its nodes {parts:?} are not free in the partition"
            )));
        }
        let held = holds.remove(0);
        let mut t = Tracked::new(job, priority);
        t.first_start = Some(started);
        t.running = Some(Running {
            since: started,
            held,
            others: holds,
            predicted_end,
            setup: 0,
        });
        self.running += 1;
        self.ends.insert((predicted_end, t.job.id));
        self.jobs.insert(t.job.id, t);
        Ok(())
    }

    /// One scheduling pass: the overrun rule first, then the policy's suspensions and starts, all
    /// validated. A live job's end is reported after its predicted end has come (a whole-second
    /// clock, a message in flight), and a policy planning at that instant would count its
    /// processors as free; the simulator's ends arrive on time, so there this changes nothing.
    fn pass(&mut self, now: Time, out: &mut Vec<Effect>) -> Result<(), RunnerError> {
        self.tick(now, out);
        let mut decided = std::mem::take(&mut self.decided);
        decided.clear();
        self.policy.schedule(now, &mut decided);
        let res = self
            .kill(now, &decided.kills, out)
            .and_then(|()| self.apply(now, &decided.starts, &decided.suspensions, out));
        self.decided = decided;
        res
    }

    /// The policy's kills of a pass: each job stops, loses its progress and waits again (the
    /// policy has it queued), counted as a restart.
    fn kill(
        &mut self,
        now: Time,
        killed: &[JobId],
        out: &mut Vec<Effect>,
    ) -> Result<(), RunnerError> {
        for &job in killed {
            out.push(self.preempt(now, job, true)?);
        }
        Ok(())
    }

    /// Stops running `job` for the policy: killed (its progress lost, a restart counted) or
    /// suspended (its progress kept, where it ran remembered); the effect for the driver.
    fn preempt(&mut self, now: Time, job: JobId, kill: bool) -> Result<Effect, RunnerError> {
        let Some(machine) = self.stop(now, job) else {
            return Err(RunnerError::BadDecision {
                time: now,
                job,
                why: format!(
                    "{} but not running here",
                    if kill { "killed" } else { "suspended" }
                ),
            });
        };
        let t = self.jobs.get_mut(&job).expect("stopped jobs are tracked");
        Ok(if kill {
            t.reset_progress();
            t.suspended_on = None;
            t.restarts += 1;
            Effect::Kill { job, machine }
        } else {
            t.suspensions += 1;
            t.suspended_on = Some(machine);
            Effect::Suspend { job, machine }
        })
    }

    fn apply(
        &mut self,
        now: Time,
        starts: &[Start],
        suspended: &[JobId],
        out: &mut Vec<Effect>,
    ) -> Result<(), RunnerError> {
        let bad = |job, why: String| RunnerError::BadDecision {
            time: now,
            job,
            why,
        };
        for &job in suspended {
            out.push(self.preempt(now, job, false)?);
        }
        for s in starts {
            let t = self
                .jobs
                .get(&s.job)
                .ok_or_else(|| bad(s.job, "started but not in the cluster".into()))?;
            if t.running.is_some() {
                return Err(bad(s.job, "started but already running".into()));
            }
            if s.setup < 0 {
                return Err(bad(s.job, format!("negative setup of {} s", s.setup)));
            }
            if self.past_its_reservation(now, t, s.machine) {
                self.policy.terminate(now, s.job);
                self.jobs.remove(&s.job);
                out.push(Effect::Dropped { job: s.job });
                continue;
            }
            let seen = self.view.of(&t.job);
            let (held, others) = match &mut self.partition {
                None => match self.ledger.acquire(&seen, s.machine, s.procs) {
                    Ok(held) => (held, Vec::new()),
                    Err(_) if t.job.reservation.is_some() => {
                        self.put_back(now, s.job, out);
                        continue;
                    }
                    Err(why) => return Err(bad(s.job, why)),
                },
                Some(p) => {
                    if s.machine != p.head {
                        return Err(bad(
                            s.job,
                            format!("started on {} outside its pool", s.machine),
                        ));
                    }
                    let parts = p.nodes.place(s.job, s.procs).ok_or_else(|| {
                        bad(
                            s.job,
                            format!("{} processors are not free on the nodes", s.procs),
                        )
                    })?;
                    let mut holds = match self.ledger.acquire_parts(&seen, &parts) {
                        Ok(h) => h,
                        Err(why) => {
                            p.nodes.release(s.job);
                            return Err(bad(s.job, why));
                        }
                    };
                    let head = holds.remove(0);
                    (head, holds)
                }
            };
            let machine = self.ledger.machine(held.machine).expect("acquired").clone();
            let t = self.jobs.get_mut(&s.job).expect("checked");
            let launch = match t.suspended_on.take() {
                None if t.first_start.is_none() => Launch::First,
                None => Launch::Restart,
                Some(m) if m == s.machine => Launch::Resume,
                Some(_) => match self.config.migration {
                    Migration::KeepProgress => Launch::Migrate,
                    Migration::Restart => {
                        t.reset_progress();
                        t.restarts += 1;
                        Launch::Restart
                    }
                },
            };
            let run = s.setup + t.job.duration_on(t.remaining, &machine);
            let limit = s.setup + t.job.duration_on(t.estimate_left, &machine);
            let copies = held.pooled.len() as u32;
            let on = held.machine;
            t.running = Some(Running {
                since: now,
                held,
                others,
                predicted_end: now + limit,
                setup: s.setup,
            });
            self.ends.insert((now + limit, s.job));
            t.first_start.get_or_insert(now);
            self.running += 1;
            out.push(Effect::Start(Started {
                job: s.job,
                machine: on,
                procs: s.procs,
                copies,
                run,
                limit,
                launch,
                setup: s.setup,
            }));
        }
        Ok(())
    }

    /// Whether job `t` of an advance reservation, started now on `machine`, would run past the
    /// reservation's end: started late (its processors were still busy), it no longer starts
    /// with the jobs of the reservations made with it (a co-allocation's other fragments), and
    /// is dropped instead (Streit, thesis §6.3: the fragments start together or not at all).
    fn past_its_reservation(&self, now: Time, t: &Tracked, machine: MachineId) -> bool {
        let (Some(id), Some(m)) = (t.job.reservation, self.ledger.machine(machine)) else {
            return false;
        };
        let end = now + t.job.duration_on(t.estimate_left, m);
        (self.policy.advance_reservations().iter()).any(|a| a.id == id && end > a.end)
    }

    /// A start of a job of an advance reservation that the cluster cannot take yet goes back to
    /// the policy's queue (a reservation is a promise made against predicted ends, and a live
    /// job ends after its whole-second predicted end, runs its whole time from its start claim's
    /// grant, and is restored after the reservations when the local scheduler restarts): it
    /// starts at a later pass, once the processors are free. One the policy no longer takes (a job whose advance
    /// reservation would end before it) leaves the cluster ([`Effect::Dropped`]).
    fn put_back(&mut self, now: Time, id: JobId, out: &mut Vec<Effect>) {
        self.policy.terminate(now, id);
        let t = self.jobs.get(&id).expect("checked");
        let (job, priority) = (self.as_seen(&t.job), t.priority);
        match self.policy.submit(now, &job) {
            Ok(()) => {
                if let Some(p) = priority {
                    self.policy.meta_priority(id, p);
                }
            }
            Err(_) => {
                self.jobs.remove(&id);
                out.push(Effect::Dropped { job: id });
            }
        }
    }

    fn tick(&mut self, now: Time, out: &mut Vec<Effect>) {
        let mut over: Vec<JobId> = Vec::new();
        while let Some(&(t, id)) = self.ends.first().filter(|&&(t, _)| t <= now) {
            self.ends.remove(&(t, id));
            over.push(id);
        }
        over.sort_unstable();
        for id in over {
            let t = self.jobs.get_mut(&id).expect("running jobs are tracked");
            let end = self.config.overrun.next_end(now, t.job.estimate);
            t.running.as_mut().expect("listed").predicted_end = end;
            self.ends.insert((end, id));
            self.policy.overrun(now, id, end);
            out.push(Effect::Overrun {
                job: id,
                predicted_end: end,
            });
        }
    }
}
