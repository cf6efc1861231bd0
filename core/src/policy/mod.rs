//! The policy interface shared by the simulator and the live local scheduler, and the classic local
//! policies (spec `reference-semantics.md`, `self-tuning-and-multisite.md` §2).
//!
//! A policy is a state machine fed with what happens on its cluster — submissions, terminations,
//! jobs overrunning their estimate, cancellations — and asked, at a given time, which waiting jobs
//! start now and where ([`Policy::schedule`]). It never reads a clock: `now` is always passed in,
//! so the simulator (virtual time) and the services (real time) get the same decisions from the
//! same history. When a policy plans a start in the future it says when to call it again
//! ([`Policy::next_wakeup`]). Its queue and reservations can be inspected at any time.
//!
//! When a driver calls `schedule` is its own choice: the reference mode calls it after every
//! event, a batched mode once per time stamp.

mod advance;
mod around;
mod config;
mod conservative;
mod dynp;
mod easy;
mod fcfs;
mod flexible_backfilling;
pub mod gang;
mod order;
mod plan_order;
mod planning;
mod registry;
mod rules;
mod schedule_based;
mod urgent;
mod user_caps;

pub use advance::{AdvanceReservation, Book, Released, ReservationRefused, check_request};
pub use config::{
    BackfillOptions, PolicyConfig, PolicyConfigError, ShadowCmp, ShadowMode, SubmitPass,
};
pub use conservative::Conservative;
pub use dynp::{DeciderKind, DynpOptions, Ratings, SelfTuning, Tuning, TuningMetric};
pub use easy::Easy;
pub use fcfs::Fcfs;
pub use flexible_backfilling::{Blocked, ClusterOrder, FbVariant, FlexibleBackfilling};
pub use gang::{Gang, GangKind, GangOptions};
pub use order::QueueOrder;
pub use planning::{PlanOrder, Planning, PlanningOptions};
pub use registry::{BuildCluster, BuildSingle, OptionTable, POLICIES, PolicyEntry, PolicyKind};
pub use rules::{PlanningRules, Rule, RuleKind};
pub use schedule_based::{GapReading, ScheduleBased, TabuLimits, Weight};
pub use urgent::{PreemptBy, UrgentLayer, UrgentMode, UrgentOptions, VictimOrder};

use crate::model::{Duration, Job, JobId, MachineId, Time};
use std::fmt;

/// A decision: start `job` now on `machine`, using `procs` of its processors.
///
/// A job split over several machines (multi-site execution, `self-tuning-and-multisite.md` §6.3)
/// is started by one `Start` per part, all in the same pass and with the same `overhead_pct`:
/// its run time on every part is stretched to `⌈run × (100 + overhead_pct) / 100⌉`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Start {
    /// The job to start.
    pub job: JobId,
    /// The machine it runs on.
    pub machine: MachineId,
    /// Processors it occupies there.
    pub procs: u32,
    /// Run-time overhead in percent of a job spread over several machines (0 for a whole job).
    pub overhead_pct: u32,
    /// Seconds at the beginning of this run during which the job holds its processors without
    /// making progress: a gang scheduler's context switch into the job or the restart half of a
    /// migration (Zhang et al., §5.2 and §6.4). The runner adds them to the run and its limit and
    /// counts no progress for them if the job is suspended early. 0 for every other policy.
    pub setup: Duration,
}

impl Start {
    /// A whole job on one machine.
    pub fn on(job: JobId, machine: MachineId, procs: u32) -> Start {
        Start {
            job,
            machine,
            procs,
            overhead_pct: 0,
            setup: 0,
        }
    }
}

/// What a reservation protects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReservationKind {
    /// The queue head's reservation of an EASY-style policy: backfilled jobs may not delay it.
    Head,
    /// A planned start of a planning (conservative) policy: every waiting job holds one.
    Planned,
}

/// A waiting job's reserved slot, as the policy currently sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reservation {
    /// The waiting job.
    pub job: JobId,
    /// Planned start.
    pub start: Time,
    /// Planned end (start + estimate).
    pub end: Time,
    /// Processors reserved.
    pub procs: u32,
    /// Machine, when the policy has chosen one.
    pub machine: Option<MachineId>,
    /// Head reservation or planned start.
    pub kind: ReservationKind,
}

impl Reservation {
    /// The planned starts of waiting jobs on one machine, given as (job, start, estimate,
    /// processors), ordered by start then job id (a planning policy's reservations).
    pub fn planned_on(
        machine: MachineId,
        slots: impl Iterator<Item = (JobId, Time, Duration, u32)>,
    ) -> Vec<Reservation> {
        let mut v: Vec<Reservation> = slots
            .map(|(job, start, estimate, procs)| Reservation {
                job,
                start,
                end: start + estimate,
                procs,
                machine: Some(machine),
                kind: ReservationKind::Planned,
            })
            .collect();
        v.sort_by_key(|r| (r.start, r.job));
        v
    }
}

/// Why a policy refuses a job at submission.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// The job needs more processors than any machine the policy manages.
    #[error("job {job} needs {procs} processors but the largest machine has {max}")]
    TooWide {
        /// The job.
        job: JobId,
        /// Processors it asks for.
        procs: u32,
        /// The most any machine offers.
        max: u32,
    },
    /// The job's estimate is not positive.
    #[error("job {job} has a non-positive estimate ({estimate} s)")]
    BadEstimate {
        /// The job.
        job: JobId,
        /// The estimate given.
        estimate: Duration,
    },
    /// The id is already known to the policy.
    #[error("job {0} was already submitted")]
    Duplicate(JobId),
    /// No machine of the cluster can ever run the job (processors, memory or a licence that
    /// cannot be activated anywhere); `reason` names the requirement.
    #[error("job {job} can run on no machine of the cluster: {reason}")]
    NoEligibleMachine {
        /// The job.
        job: JobId,
        /// The requirement no machine meets, e.g. `licence 3`.
        reason: String,
    },
    /// The machine is not one the policy manages.
    #[error("machine {0} is not part of this cluster")]
    UnknownMachine(MachineId),
    /// The policy cannot take over a running job (restore after a restart).
    #[error("policy `{0}` cannot restore running jobs")]
    Unsupported(String),
    /// The job names an advance reservation the policy does not hold.
    #[error(
        "job {job} cannot run in reservation {reservation}: no such reservation is held (unknown, cancelled or ended)"
    )]
    ReservationNotHeld {
        /// The job.
        job: JobId,
        /// The reservation it names.
        reservation: crate::model::ReservationId,
    },
    /// The job names an advance reservation it cannot run in: too small, a licence it does not
    /// hold, or full until its end.
    #[error("job {job} cannot run in reservation {reservation}: {why}")]
    Reservation {
        /// The job.
        job: JobId,
        /// The reservation it names.
        reservation: crate::model::ReservationId,
        /// What is wrong.
        why: String,
    },
}

/// Refuses a job that names an advance reservation `policy` does not hold (every policy that
/// takes reservations checks the rest: room and time inside it).
pub fn check_reservation(policy: &dyn Policy, job: &Job) -> Result<(), Rejection> {
    let Some(id) = job.reservation else {
        return Ok(());
    };
    let Some(booking) = policy.booking() else {
        return Err(Rejection::Reservation {
            job: job.id,
            reservation: id,
            why: format!("the {} policy takes no reservations", policy.describe()),
        });
    };
    if booking.advance_reservations().iter().any(|r| r.id == id) {
        return Ok(());
    }
    Err(Rejection::ReservationNotHeld {
        job: job.id,
        reservation: id,
    })
}

impl From<crate::cluster::ClusterError> for Rejection {
    fn from(e: crate::cluster::ClusterError) -> Rejection {
        match e {
            crate::cluster::ClusterError::UnknownMachine(m) => Rejection::UnknownMachine(m),
            crate::cluster::ClusterError::DoesNotFit { job, .. } => Rejection::NoEligibleMachine {
                job,
                reason: e.to_string(),
            },
            other => Rejection::Unsupported(other.to_string()),
        }
    }
}

/// What one scheduling pass decides (a policy's answer to [`Policy::schedule`]): the running jobs
/// it suspends and those it kills, which the driver takes off their machines first, then the
/// starts, which may reuse their processors. A driver clears it before every pass.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decisions {
    /// The jobs that start now, in start order.
    pub starts: Vec<Start>,
    /// Running jobs suspended (preemptive policies only, e.g. Convergent Scheduling's `_p`
    /// variants and the gang schedulers): each keeps its progress and is back in the waiting
    /// queue; a later [`Start`] resumes it.
    pub suspensions: Vec<JobId>,
    /// Running jobs killed to free their processors (an urgent job preempting typical ones,
    /// Kurowski et al. §4): each loses its progress and is back in the waiting queue (the policy
    /// has resubmitted it); a later [`Start`] runs it from scratch.
    pub kills: Vec<JobId>,
}

impl Decisions {
    /// Empties it for the next pass (keeping its allocations).
    pub fn clear(&mut self) {
        self.starts.clear();
        self.suspensions.clear();
        self.kills.clear();
    }
}

/// A local scheduling policy: the events a scheduling paper speaks of (a job submitted, ended,
/// overrunning its estimate, cancelled; a pass at a given time and what it decides), what the
/// policy shows of its state, and the capabilities some policies add ([`AdvanceBooking`],
/// [`Machines`]), which a driver asks for and does without when a policy lacks them.
pub trait Policy: Send + fmt::Debug {
    /// A short description including the options that differ from the defaults.
    fn describe(&self) -> String;

    /// A job enters the waiting queue at `now`.
    fn submit(&mut self, now: Time, job: &Job) -> Result<(), Rejection>;

    /// A running job ended at `now`, possibly before its estimate. Unknown ids are ignored.
    fn terminate(&mut self, now: Time, job: JobId);

    /// A running job reached its predicted end at `now` and is still running; from now on the
    /// policy plans with `predicted_end` (> `now`) as its end.
    fn overrun(&mut self, now: Time, job: JobId, predicted_end: Time);

    /// Removes a waiting job. Returns false when the job is not waiting (unknown or running).
    fn cancel(&mut self, now: Time, job: JobId) -> bool;

    /// One scheduling pass at `now`: appends to `out` what it decides (the driver has cleared
    /// it): suspensions and kills, which the driver carries out first, then the starts, in start
    /// order.
    fn schedule(&mut self, now: Time, out: &mut Decisions);

    /// The next time at which the policy wants [`Policy::schedule`] called even if nothing
    /// happens (a planned start), if any.
    fn next_wakeup(&self) -> Option<Time> {
        None
    }

    /// The meta-scheduler's priority of a job this policy has just accepted (spec
    /// `two-level-grid-scheduler.md` D3: the MS → LS descriptor may carry it; D9.3 "MS
    /// Heuristics"). A driver calls it right after a successful [`Policy::submit`]. Unknown ids
    /// are ignored. The default: a policy that orders its queue by its own rules.
    fn meta_priority(&mut self, _job: JobId, _priority: u8) {}

    /// New meta-scheduler priorities of waiting jobs (its fair-share recalculation weighed them
    /// again). Unknown ids and running jobs are ignored. The default gives each to
    /// [`Policy::meta_priority`]; a policy whose lookup is not constant overrides it with one
    /// walk of its queue.
    fn meta_priorities(&mut self, jobs: &[(JobId, u8)]) {
        for &(job, p) in jobs {
            self.meta_priority(job, p);
        }
    }

    /// The one machine and its processors of a classic policy (it schedules processors on one
    /// space-shared machine); `None` for the policies that place jobs on the machines of a
    /// cluster. A runner over a partition of alike nodes whose policy sees one machine of their
    /// summed processors maps its starts onto the nodes ([`crate::runner::nodes`]).
    fn single_machine(&self) -> Option<(MachineId, u32)> {
        None
    }

    /// Named counters of the policy's own decisions, for reports (dynP: its decisions by case of
    /// the thesis' Tab. 4.3, its switches, and the jobs started under each policy). The default:
    /// none.
    fn counters(&self) -> Vec<(String, u64)> {
        Vec::new()
    }

    /// Number of waiting jobs.
    fn waiting_len(&self) -> usize;

    /// Number of running jobs.
    fn running_len(&self) -> usize;

    /// The waiting jobs in the policy's current order (head first).
    fn queue(&self) -> Vec<JobId>;

    /// The reservations the policy currently holds, ordered by start then job id.
    fn reservations(&self) -> Vec<Reservation>;

    /// Its advance reservations, when it takes them. The default: it takes none.
    fn booking(&self) -> Option<&dyn AdvanceBooking> {
        None
    }

    /// [`Policy::booking`], to admit and cancel.
    fn booking_mut(&mut self) -> Option<&mut dyn AdvanceBooking> {
        None
    }

    /// Its machines coming and going and its running jobs restored after a restart of the
    /// driver, when it supports them. The default: a policy whose machines never change and that
    /// cannot take over running jobs.
    fn machines(&mut self) -> Option<&mut dyn Machines> {
        None
    }
}

/// The capability of taking advance reservations (Streit, thesis §3.2): fixed-time requests
/// admitted against the policy's plan, held, and given up.
pub trait AdvanceBooking {
    /// Admits an advance reservation iff its processors are free for its whole interval in the
    /// current plan; every later decision then respects it.
    fn admit_reservation(
        &mut self,
        now: Time,
        r: &AdvanceReservation,
    ) -> Result<(), ReservationRefused>;

    /// Cancels an advance reservation; false if it is not held.
    fn cancel_reservation(&mut self, now: Time, id: crate::model::ReservationId) -> bool;

    /// The advance reservations held, by identifier (ended ones may linger until the next
    /// pass).
    fn advance_reservations(&self) -> Vec<AdvanceReservation>;
}

/// The capability of a cluster whose machines come and go, and of a driver restarted with jobs
/// running.
pub trait Machines {
    /// A machine of the cluster went down (`available == false`: it receives no new start; the
    /// jobs running there are the driver's business, which reports them through
    /// [`Policy::terminate`] or resubmits them) or came back / joined (`true`). Unknown machines
    /// are ignored.
    fn set_machine_available(&mut self, now: Time, machine: MachineId, available: bool);

    /// Recovery after a restart of the driver: `job` is already running on `machine` since
    /// `started` with `procs` processors. The policy accounts for it as if it had started it.
    fn restore_running(
        &mut self,
        now: Time,
        job: &Job,
        started: Time,
        machine: MachineId,
        procs: u32,
    ) -> Result<(), Rejection>;
}

/// The accessors of the capabilities a policy implements itself, written inside its
/// `impl Policy`: `capabilities!(machines)`, `capabilities!(booking)` or both.
macro_rules! capabilities {
    (machines) => {
        fn machines(&mut self) -> Option<&mut dyn $crate::policy::Machines> {
            Some(self)
        }
    };
    (booking) => {
        fn booking(&self) -> Option<&dyn $crate::policy::AdvanceBooking> {
            Some(self)
        }

        fn booking_mut(&mut self) -> Option<&mut dyn $crate::policy::AdvanceBooking> {
            Some(self)
        }
    };
    ($($c:ident),+) => {
        $($crate::policy::capabilities!($c);)+
    };
}
pub(crate) use capabilities;

/// A driver's shorthands over a policy's capabilities, for every policy: one that takes no
/// reservations refuses each and holds none; one without [`Machines`] ignores machines coming
/// and going and refuses to restore running jobs.
impl dyn Policy + '_ {
    /// Admits an advance reservation, or refuses it ([`AdvanceBooking::admit_reservation`]).
    pub fn admit_reservation(
        &mut self,
        now: Time,
        r: &AdvanceReservation,
    ) -> Result<(), ReservationRefused> {
        let policy = self.describe();
        match self.booking_mut() {
            Some(b) => b.admit_reservation(now, r),
            None => Err(ReservationRefused::Unsupported { policy }),
        }
    }

    /// Cancels an advance reservation; false if it is not held.
    pub fn cancel_reservation(&mut self, now: Time, id: crate::model::ReservationId) -> bool {
        self.booking_mut()
            .is_some_and(|b| b.cancel_reservation(now, id))
    }

    /// The advance reservations held (none when it takes none).
    pub fn advance_reservations(&self) -> Vec<AdvanceReservation> {
        self.booking()
            .map(|b| b.advance_reservations())
            .unwrap_or_default()
    }

    /// Whether it takes advance reservations at all.
    pub fn takes_reservations(&self) -> bool {
        self.booking().is_some()
    }

    /// A machine went down or came back ([`Machines::set_machine_available`]); nothing for a
    /// policy whose machines never change.
    pub fn set_machine_available(&mut self, now: Time, machine: MachineId, available: bool) {
        if let Some(m) = self.machines() {
            m.set_machine_available(now, machine, available);
        }
    }

    /// A job found running after a restart of the driver ([`Machines::restore_running`]);
    /// refused by a policy that cannot take over running jobs.
    pub fn restore_running(
        &mut self,
        now: Time,
        job: &Job,
        started: Time,
        machine: MachineId,
        procs: u32,
    ) -> Result<(), Rejection> {
        let name = self.describe();
        match self.machines() {
            Some(m) => m.restore_running(now, job, started, machine, procs),
            None => Err(Rejection::Unsupported(name)),
        }
    }
}

/// Helpers of the policies' unit tests.
#[cfg(test)]
pub(crate) mod test_util {
    use super::Policy;
    use crate::model::Time;

    /// A pass whose starts are appended to a list (the suspensions and kills are the caller's to
    /// read from [`super::Decisions`] when it tests them).
    pub trait ScheduleInto {
        /// One pass at `now`, its starts appended to `starts`.
        fn schedule_into(&mut self, now: Time, starts: &mut Vec<super::Start>);
    }

    impl<P: Policy + ?Sized> ScheduleInto for P {
        fn schedule_into(&mut self, now: Time, starts: &mut Vec<super::Start>) {
            let mut d = super::Decisions::default();
            self.schedule(now, &mut d);
            starts.append(&mut d.starts);
        }
    }

    /// One pass at `now`: the jobs started, in order.
    pub fn starts(p: &mut dyn Policy, now: Time) -> Vec<u64> {
        let mut d = super::Decisions::default();
        p.schedule(now, &mut d);
        d.starts.iter().map(|s| s.job.0).collect()
    }

    /// The planned starts of the waiting jobs, (job, start), by start.
    pub fn planned(p: &dyn Policy) -> Vec<(u64, Time)> {
        p.reservations()
            .iter()
            .map(|r| (r.job.0, r.start))
            .collect()
    }
}
