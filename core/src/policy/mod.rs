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

mod config;
mod conservative;
mod easy;
mod fcfs;
mod order;

pub use config::{
    BackfillOptions, PolicyConfig, PolicyConfigError, PolicyKind, ShadowCmp, ShadowMode, SubmitPass,
};
pub use conservative::Conservative;
pub use easy::Easy;
pub use fcfs::Fcfs;
pub use order::QueueOrder;

use crate::model::{Duration, Job, JobId, MachineId, Time};
use std::fmt;

/// A decision: start `job` now on `machine`, using `procs` of its processors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Start {
    /// The job to start.
    pub job: JobId,
    /// The machine it runs on.
    pub machine: MachineId,
    /// Processors it occupies there.
    pub procs: u32,
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
}

/// A local scheduling policy.
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

    /// Appends to `starts` the jobs that start at `now`, in start order.
    fn schedule(&mut self, now: Time, starts: &mut Vec<Start>);

    /// The next time at which the policy wants [`Policy::schedule`] called even if nothing
    /// happens (a planned start), if any.
    fn next_wakeup(&self) -> Option<Time> {
        None
    }

    /// Number of waiting jobs.
    fn waiting_len(&self) -> usize;

    /// Number of running jobs.
    fn running_len(&self) -> usize;

    /// The waiting jobs in the policy's current order (head first).
    fn queue(&self) -> Vec<JobId>;

    /// The reservations the policy currently holds, ordered by start then job id.
    fn reservations(&self) -> Vec<Reservation>;
}
