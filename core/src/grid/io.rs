//! The grid runner's inputs and effects (Pasquali, thesis D3: the Meta-Scheduler's protocol with
//! the clusters — jobs sent down, terminations reported up; Streit, thesis §6.3: the holds and
//! commits of a co-allocation): plain serializable data, what a driver feeds the runner and what
//! it carries out.

use super::Explanation;
use super::NodeState;
use super::admit::Refusal;
use super::reservations::{Reservation, ReservationAnswer, ReservationRequest};
use crate::classify::Classification;
use crate::dispatch::{ClusterLoad, Part, Priority};
use crate::model::{DataOut, Duration, Job, JobId, Outcome, ReservationId, Time, Workflow};
use serde::{Deserialize, Serialize};

/// Why a job goes to the site it goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cause {
    /// Dispatched at its submission.
    Submitted,
    /// Placed by a release pass of the meta-level queue.
    Released,
    /// Dispatched again after waiting for a site.
    Waited,
    /// Dispatched again after its co-allocation was given up.
    Retried,
    /// Taken from a site that went down before it started there.
    Withdrawn {
        /// The site it left.
        from: usize,
    },
    /// Back after a run that failed ([`Input::Requeue`]).
    Requeued,
    /// Its dependency is met.
    Dependency,
    /// Re-entered after the driver restarted ([`Input::Restore`]).
    Restored,
}

/// Where a job stood when its driver stopped, for [`Input::Restore`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Restored {
    /// Waiting at the meta level (for a site, in the strategy's queue, or between two
    /// co-allocations): a strategy that holds jobs takes it back into its queue, else it waits
    /// to be dispatched again.
    Waiting,
    /// Sent to `site` (at `since`); `claimed` once it may no longer be withdrawn from there.
    Site {
        /// The site.
        site: usize,
        /// Started there, or granted its start.
        claimed: bool,
        /// When it started or was sent.
        since: Time,
    },
    /// An array whose tasks up to `next` (by position, from 0) were released: those that ended
    /// with how (its open tasks are restored apart, after it). It releases more once the driver
    /// answers the [`Effect::Defer`] it asks for, when everything is restored.
    Array {
        /// The position of the next task to release.
        next: u32,
        /// Its ended tasks: position and outcome.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        done: Vec<(u32, Outcome)>,
        /// When its first task began running.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        started: Option<Time>,
    },
    /// Split, its fragments sent into their reservations (from `since`).
    Split {
        /// Per fragment: its part, its reservation and whether it has ended.
        fragments: Vec<(Part, ReservationId, bool)>,
        /// When it started or was sent.
        since: Time,
    },
}

/// What happens to the grid, with the time it happens at.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Input {
    /// A job enters the grid: admitted ([`GridRunner::admit`]), classified (unless `priority` is
    /// given) and dispatched; a job in an advance reservation goes to its site only.
    ///
    /// [`GridRunner::admit`]: super::GridRunner::admit
    Submit {
        /// The job.
        job: Job,
        /// Its priority, when already known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        priority: Option<Priority>,
    },
    /// A job the grid had before its driver restarted, re-entered where it stood: classified
    /// already, and counted again by the strategy.
    Restore {
        /// The job.
        job: Job,
        /// Its priority.
        priority: Priority,
        /// Where it stood.
        at: Restored,
    },
    /// A job whose run failed (a split job's fragment, say) runs again: dispatched anew, with
    /// its priority, as a new run (the driver's requeue rule decides when).
    Requeue {
        /// The job.
        job: Job,
        /// Its priority.
        priority: Priority,
    },
    /// An array that left the grid before its driver restarted, followed (`aftercorr`) by an
    /// array restored after this: how its tasks ended, by position (those not listed never ran).
    RestoreFollowed {
        /// The array.
        array: JobId,
        /// Its indices.
        spec: crate::model::ArraySpec,
        /// Its ended tasks: position and outcome.
        done: Vec<(u32, Outcome)>,
    },
    /// A workflow enters the grid as `id` (its nodes take the ids after it, in order): admitted
    /// whole, then each node released as a job once its parents completed.
    SubmitWorkflow {
        /// Its id.
        id: JobId,
        /// It (nodes marked done, when resumed from a rescue, are not run again).
        workflow: Box<Workflow>,
    },
    /// A workflow the grid had before its driver restarted, its nodes where they stood (the
    /// jobs of those out are restored apart, after it).
    RestoreWorkflow {
        /// Its id.
        id: JobId,
        /// It.
        workflow: Box<Workflow>,
        /// Per node, where it stood.
        nodes: Vec<NodeState>,
        /// Why it was releasing no more (aborted, or `cancelled`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stopping: Option<String>,
    },
    /// The user cancelled the job (or the workflow).
    Cancel {
        /// The job.
        job: JobId,
    },
    /// The job started at `site` (or was granted its start there): it stays there.
    Claimed {
        /// The job.
        job: JobId,
        /// The site.
        site: usize,
    },
    /// The job, run whole at `site`, ended there.
    Ended {
        /// The job.
        job: JobId,
        /// The site.
        site: usize,
        /// How (for the jobs that depend on it).
        #[serde(default)]
        outcome: Outcome,
        /// Its exit code, when the site reports one (a workflow's retry and abort rules read
        /// it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit: Option<i32>,
    },
    /// Job `job` wrote `files` at its site, as the site reports with its end (given before its
    /// [`Input::Ended`]): a workflow node's children read them from there, so the dispatch of
    /// a child counts moving them (they replace the sizes the node declares).
    Outputs {
        /// The job.
        job: JobId,
        /// Its output files, by name, with their sizes.
        files: Vec<DataOut>,
    },
    /// The fragment of split job `job` at `site` ended; `ok` when it completed.
    FragmentEnded {
        /// The job.
        job: JobId,
        /// The site.
        site: usize,
        /// Whether it completed.
        ok: bool,
        /// The driver will requeue the job after this, its last fragment ([`Input::Requeue`]):
        /// the jobs that depend on it wait for its next run.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        again: bool,
    },
    /// `site` refused the job (or its fragment) it was sent: it cannot run it there.
    Refused {
        /// The job.
        job: JobId,
        /// The site.
        site: usize,
        /// The site's reason.
        why: String,
    },
    /// The dynamic state of every site, for the strategies that read it.
    Loads {
        /// Per site.
        loads: Vec<ClusterLoad>,
    },
    /// The dynamic state of one site.
    Load {
        /// The site.
        site: usize,
        /// Its state.
        load: ClusterLoad,
    },
    /// The link to `site` is up or down, at monotonic milliseconds `at_ms`.
    Link {
        /// The site.
        site: usize,
        /// Whether it is reachable.
        reachable: bool,
        /// Monotonic milliseconds.
        at_ms: u64,
    },
    /// The answer to an [`Effect::Hold`]: the start the site holds, or why not.
    Held {
        /// The job.
        job: JobId,
        /// The fragment.
        fragment: usize,
        /// Its site.
        site: usize,
        /// The hold's reservation.
        reservation: ReservationId,
        /// The start held, or the refusal.
        answer: Result<Time, String>,
    },
    /// The answer to an [`Effect::Commit`].
    Committed {
        /// The job.
        job: JobId,
        /// The fragment.
        fragment: usize,
        /// Committed, or why not.
        answer: Result<(), String>,
    },
    /// The retry an [`Effect::GivenUp`] asked for, or the time an [`Effect::Defer`] gave, is due;
    /// or the call back an [`Effect::Continue`] asked for.
    Retry {
        /// The job.
        job: JobId,
    },
    /// Reservation ids up to `last` were given to the grid's advance reservations: holds take
    /// theirs after it (one counter for both).
    Reservations {
        /// The last id given.
        last: u64,
    },
    /// A user asks for an advance reservation (at monotonic milliseconds `at_ms`).
    Reserve {
        /// What is asked.
        request: ReservationRequest,
        /// Monotonic milliseconds.
        at_ms: u64,
    },
    /// The answer to an [`Effect::AskReservation`].
    ReservationAnswer {
        /// The reservation.
        reservation: ReservationId,
        /// Held, refused, or lost.
        answer: ReservationAnswer,
    },
    /// The user cancels an advance reservation (at monotonic milliseconds `at_ms`).
    CancelReservation {
        /// The reservation.
        reservation: ReservationId,
        /// Monotonic milliseconds.
        at_ms: u64,
    },
    /// The answer to an [`Effect::TakeBack`]: the site let the reservation go (or never had
    /// it), or could not be reached.
    TakenBack {
        /// The reservation.
        reservation: ReservationId,
        /// Let go.
        gone: bool,
    },
    /// An advance reservation the grid had before its driver restarted.
    RestoreReservation {
        /// It.
        reservation: Reservation,
    },
    /// A release pass of the meta-level queue (drivers send it after each instant's ends and
    /// submissions while [`GridRunner::held`] is not zero).
    Release,
    /// The time passes (monotonic milliseconds): sites whose link stayed down long enough go
    /// down, the jobs waiting for a site are dispatched again, and the fair share is
    /// recalculated when its period has passed ([`Effect::Recalculated`]).
    Tick {
        /// Monotonic milliseconds.
        at_ms: u64,
    },
}

/// One fragment of a co-allocated job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fragment {
    /// Its site.
    pub site: usize,
    /// Its processors.
    pub procs: u32,
    /// Its committed reservation there.
    pub reservation: ReservationId,
    /// Its estimate, stretched by the WAN overhead.
    pub length: Duration,
    /// The WAN overhead p applied, percent.
    pub overhead_pct: u32,
}

/// What the driver carries out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Effect {
    /// The job was classified (with the details when explaining).
    Classified {
        /// The job.
        job: JobId,
        /// Its priority.
        priority: Priority,
        /// How it was reached.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        explained: Option<Classification>,
    },
    /// Send the job to `site`.
    Place {
        /// The job.
        job: JobId,
        /// The site.
        site: usize,
        /// Why now.
        cause: Cause,
        /// Why there (when explaining).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        explanation: Option<Explanation>,
    },
    /// The job waits at the meta level: in the strategy's queue (`held`), or for a site that is
    /// up to take it.
    Wait {
        /// The job.
        job: JobId,
        /// In the strategy's queue.
        held: bool,
        /// Why it waits now.
        cause: Cause,
        /// The dispatch decision (when explaining).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        explanation: Option<Explanation>,
    },
    /// The job waits at the meta level, held by a running limit of its owner's association
    /// (`why` names it and the current use); it is dispatched once the limit lets it go.
    Limited {
        /// The job.
        job: JobId,
        /// The limit.
        why: String,
    },
    /// The job can never run: it leaves the grid.
    Refuse {
        /// The job.
        job: JobId,
        /// Why.
        why: String,
        /// The field to blame, when refused at admission.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        refusal: Option<Refusal>,
    },
    /// The job waits for its dependency: for `waits`, in words (again, with what is left,
    /// each time part of it is met).
    Blocked {
        /// The job.
        job: JobId,
        /// What it waits for ("job 12 (afterok), job 13 (after)").
        waits: String,
        /// Why now: submitted, restored, or part of its dependency met.
        cause: Cause,
    },
    /// The job's dependency is met from `until` on: send [`Input::Retry`] then.
    Defer {
        /// The job.
        job: JobId,
        /// When it may go.
        until: Time,
    },
    /// Send [`Input::Retry`] for `job` at once, after what this input decided is carried out:
    /// an array with more tasks to release than one input releases, or an array or workflow
    /// restored, to go on once the driver has restored everything.
    Continue {
        /// The array or workflow.
        job: JobId,
    },
    /// The job's dependency can never be met: it leaves the grid, never started.
    Unmet {
        /// The job.
        job: JobId,
        /// Why, naming the job waited for and what it did.
        why: String,
    },
    /// Task `index` of array `array` is released as job `job` (the runner has it from now on:
    /// [`GridRunner::job`]); its dispatch follows.
    ///
    /// [`GridRunner::job`]: super::GridRunner::job
    Task {
        /// The array.
        array: JobId,
        /// The task's id.
        job: JobId,
        /// Its index.
        index: u32,
    },
    /// Every task of the array has ended (or was cancelled before release): the array leaves
    /// the grid with `outcome` (completed when every task completed; failed when one failed;
    /// else cancelled).
    ArrayOver {
        /// The array.
        job: JobId,
        /// How, for the jobs that depend on it.
        outcome: Outcome,
        /// When its first task began running, if one did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        started: Option<Time>,
    },
    /// Node `node` of workflow `workflow` is released, for its `attempt`-th run, as job `job`
    /// (submitted to the grid: its classification and dispatch follow).
    Node {
        /// The workflow.
        workflow: JobId,
        /// The node's job id.
        job: JobId,
        /// The node's position.
        node: u32,
        /// Its run, from 1.
        attempt: u32,
    },
    /// Cancel job `job` as its user would ([`Input::Cancel`]): its workflow was aborted or
    /// cancelled.
    Stop {
        /// The job.
        job: JobId,
        /// Why.
        why: String,
    },
    /// No node of the workflow is out and none can be released: it leaves the grid with
    /// `outcome` (completed when every node completed; cancelled; else failed).
    WorkflowOver {
        /// The workflow.
        workflow: JobId,
        /// How.
        outcome: Outcome,
        /// The nodes completed, by position: its rescue.
        done: Vec<u32>,
        /// Why it did not complete.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        why: Option<String>,
    },
    /// The strategy split the job: its co-allocation over `parts` begins (holds follow).
    Coallocating {
        /// The job.
        job: JobId,
        /// Its fragments.
        parts: Vec<Part>,
        /// The estimate of every fragment, stretched by the WAN overhead.
        length: Duration,
        /// The WAN overhead p applied, percent.
        overhead_pct: u32,
        /// Why split (when explaining).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        explanation: Option<Explanation>,
    },
    /// Ask `site` for a tentative hold of `procs` processors for `length` seconds at its
    /// earliest start from `from` on, as reservation `reservation`.
    Hold {
        /// The job.
        job: JobId,
        /// The fragment.
        fragment: usize,
        /// Its site.
        site: usize,
        /// The reservation id.
        reservation: ReservationId,
        /// The earliest acceptable start.
        from: Time,
        /// Seconds held.
        length: Duration,
        /// Processors.
        procs: u32,
    },
    /// Let a hold or a reservation go at `site`.
    LetGo {
        /// The job.
        job: JobId,
        /// The site.
        site: usize,
        /// The reservation.
        reservation: ReservationId,
    },
    /// Commit a hold: the fragment starts at `start`.
    Commit {
        /// The job.
        job: JobId,
        /// The fragment.
        fragment: usize,
        /// Its site.
        site: usize,
        /// The reservation.
        reservation: ReservationId,
        /// The common start.
        start: Time,
        /// Seconds held (as in its [`Effect::Hold`]).
        length: Duration,
        /// Processors.
        procs: u32,
    },
    /// Every site committed: send the fragments into their reservations.
    Send {
        /// The job.
        job: JobId,
        /// The common start.
        start: Time,
        /// Rounds of holds it took.
        rounds: u32,
        /// The fragments.
        fragments: Vec<Fragment>,
    },
    /// The co-allocation was given up; the job is dispatched again at `retry_at` (the driver
    /// sends [`Input::Retry`] then), or, `None`, refused ([`Effect::Refuse`] follows).
    GivenUp {
        /// The job.
        job: JobId,
        /// Why.
        why: String,
        /// When to retry.
        retry_at: Option<Time>,
    },
    /// Start split job `job` at once on `parts` ([`GridSettings::splits_at_once`]); it ends with
    /// one [`Input::Ended`] from any of its sites.
    StartSplit {
        /// The job.
        job: JobId,
        /// Its parts.
        parts: Vec<Part>,
        /// The WAN overhead p of the sites it spans, percent: its run time and estimate grow by
        /// (100 + p) / 100, rounded up (the co-allocation rules' `multi_site`; 0 without them).
        overhead_pct: u32,
    },
    /// Kill the fragment of split job `job` at `site` (another fragment ended badly).
    Kill {
        /// The job.
        job: JobId,
        /// The site.
        site: usize,
        /// Why.
        why: String,
    },
    /// The last fragment of split job `job` ended: the job is over (reported from `site`, its
    /// first fragment's).
    Over {
        /// The job.
        job: JobId,
        /// Its first fragment's site.
        site: usize,
    },
    /// A reservation request is refused.
    ReservationRefused {
        /// Why, with the field to blame.
        refusal: Refusal,
    },
    /// Ask the reservation's site to hold it (answer with [`Input::ReservationAnswer`]).
    AskReservation {
        /// The reservation, with its id.
        reservation: Reservation,
    },
    /// The site confirmed the reservation.
    ReservationHeld {
        /// The reservation.
        reservation: ReservationId,
    },
    /// The reservation is gone from the grid (refused by its site, taken back, cancelled, or
    /// ended a day ago).
    ReservationDropped {
        /// The reservation.
        reservation: ReservationId,
        /// Why.
        why: String,
    },
    /// Take the reservation back at `site` (answer with [`Input::TakenBack`]).
    TakeBack {
        /// The reservation.
        reservation: ReservationId,
        /// Its site.
        site: usize,
    },
    /// `site` is marked down: it receives no new job.
    SiteDown {
        /// The site.
        site: usize,
    },
    /// `site` is up again.
    SiteUp {
        /// The site.
        site: usize,
    },
    /// The fair share was recalculated (its period passed): the running jobs were charged what
    /// they used so far (the usage is to be written), and every job that has not started was
    /// weighed again: its priority now, changed or not (a site that missed an earlier change
    /// catches up). A job queued at a site (`Some(site)`) is to be reordered there; one at the
    /// meta level carries its priority when it goes out.
    Recalculated {
        /// Job, its site when queued at one, its new priority (in id order).
        jobs: Vec<(JobId, Option<usize>, Priority)>,
    },
}

/// A driver's mistake the runner refuses (nothing is changed).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GridError {
    /// A job id reused while the first job is in the grid.
    #[error("job id {0} is submitted twice")]
    DuplicateJob(JobId),
    /// A site index out of range.
    #[error("site {0} is not a site of the grid")]
    UnknownSite(usize),
}
