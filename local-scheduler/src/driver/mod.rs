//! The driver of a local scheduler: the thin real-time shell around the core's
//! [`ClusterRunner`]. One task owns the runner, the jobs' records, the agents and the event log;
//! gRPC handlers talk to it through messages (no lock is ever held across an await). The clock is
//! read once per message, at the edge ([`Driver::run`]), and handed to the handlers as a [`Now`]:
//! real time maps to the core's integer seconds as Unix seconds. Every decision (which job starts
//! where, which is suspended, how an overrun moves a predicted end, whether a start is valid) is
//! the runner's, the same code the simulator drives in virtual time; with `input_log` set, every
//! input and decision is logged so that `gridsim rerun` can prove it.
//!
//! Orders reach agents through their `AgentOrders` stream when open, else through the next
//! heartbeat response. The RUNNING event is emitted when the agent reports the process started.
//! A suspended job's process group is stopped (SIGSTOP) where it ran and keeps its progress: it
//! continues (SIGCONT) when the runner starts it on that machine again, and starts again from
//! scratch elsewhere (a restart, counted and reported as such). A lost agent (no heartbeat for
//! `lost_after_ms`) takes its machine offline; its jobs end LOST or are requeued, per configuration.
//!
//! A job enqueued with `claim_before_start` is *held* when the runner starts it: it keeps its
//! machine and licences in the runner, but its agent gets the start order only once the
//! meta-scheduler grants the claim on the StartClaims link ([`claims`]); a withdrawn job is
//! dropped. The agents' side lives in [`agents`], `Status` and the gauges in [`status`].

mod agents;
mod claims;
mod log;
mod parts;
mod recover;
mod reservations;
mod status;
#[cfg(test)]
mod tests;

pub use claims::WITHDRAWN;

use crate::config::Config;
use crate::journal::{self, Journal};
use crate::store::StoredJob;
use gridsched_core::Time;
use gridsched_core::model::{ClusterId, Job, JobId, MachineId, Platform};
use gridsched_core::policy::Rejection;
use gridsched_core::runner::replay::Header;
use gridsched_core::runner::{
    ClusterRunner, Effect, Input, Launch, Migration, OverrunRule, RunnerConfig, RunnerError,
    Started,
};
use gridsched_proto::v1::{self, JobState, agent_command::Kind};
use gridsched_proto::{NameTable, job_from_spec};
use std::collections::{BTreeMap, HashMap};
use std::time::Instant;
use tokio::sync::{mpsc, oneshot};
use tonic::Status;

type Reply<T> = oneshot::Sender<Result<T, Status>>;

/// The clock reading a handler works with, taken once per message by [`Driver::run`]: the time
/// of the runner (Unix seconds) and monotonic milliseconds for agent liveness. Only the edge
/// ([`edge`]) reads the clocks; tests give virtual values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Now {
    /// Unix seconds.
    pub secs: Time,
    /// Monotonic milliseconds (from any fixed origin).
    pub mono_ms: u64,
}

pub use crate::journal::EventFeed;

/// A request to the driver.
#[derive(Debug)]
pub enum Msg {
    /// Enqueue.
    Enqueue(Box<v1::EnqueueRequest>, Reply<v1::EnqueueResponse>),
    /// Cancel.
    Cancel(v1::CancelRequest, Reply<v1::CancelResponse>),
    /// Status.
    Status(Reply<v1::StatusResponse>),
    /// JobEvents from a sequence.
    Events(Option<u64>, Reply<EventFeed>),
    /// RegisterAgent.
    Register(v1::RegisterAgentRequest, Reply<v1::RegisterAgentResponse>),
    /// Heartbeat.
    Heartbeat(v1::HeartbeatRequest, Reply<v1::HeartbeatResponse>),
    /// AgentOrders.
    Orders(String, Reply<mpsc::UnboundedReceiver<v1::AgentCommand>>),
    /// StartClaims opened by the meta-scheduler: the requests to send it.
    Claims(Reply<mpsc::UnboundedReceiver<v1::ClaimRequest>>),
    /// The meta-scheduler's answer on the StartClaims link.
    ClaimAnswer(v1::ClaimAnswer),
    /// Reserve.
    Reserve(v1::ReserveRequest, Reply<v1::ReserveResponse>),
    /// CancelReservation.
    CancelReservation(
        v1::CancelReservationRequest,
        Reply<v1::CancelReservationResponse>,
    ),
    /// CommitReservation.
    CommitReservation(
        v1::CommitReservationRequest,
        Reply<v1::CommitReservationResponse>,
    ),
    /// Reprioritize.
    Reprioritize(v1::ReprioritizeRequest, Reply<v1::ReprioritizeResponse>),
    /// What Slurm answered to a call of a Slurm-backed site (never sent to a native driver).
    Slurm(crate::slurm::call::Done),
    /// A job held here that has not ended (its output may still grow): its owner.
    Active(u64, Reply<Option<String>>),
    /// The stager's outcome for a job whose inputs were being staged in.
    Staged(u64, crate::staging::Staged),
    /// A meta-scheduler of a newer lease epoch calls: made durable before its call is served.
    Epoch(u64, Reply<()>),
}

/// The user who owns an enqueued job.
pub(crate) fn owner(req: &v1::EnqueueRequest) -> String {
    req.spec
        .as_ref()
        .map(|s| s.user.clone())
        .unwrap_or_default()
}

#[derive(Debug)]
struct JobRec {
    req: v1::EnqueueRequest,
    job: Job,
    state: JobState,
    /// Its machine (a multi-node job's head node).
    machine: Option<MachineId>,
    /// A running multi-node job's parts in rank order; empty for a job on one machine.
    parts: Vec<parts::Part>,
    start: Option<Time>,
    reported_running: bool,
    /// Where its stopped process waits, while it is suspended.
    suspended_on: Option<MachineId>,
    /// Where a process of it was killed to requeue it (preempted by an urgent job), until its
    /// agent reports that process's end.
    killed_on: Option<MachineId>,
    /// A start order to `killed_on` that waits for the killed process's end: an agent holds one
    /// run of a job at a time, and would take the order for the old run's duplicate.
    after_kill: Option<Box<v1::StartJob>>,
    /// How its current run began.
    launch: Launch,
    cancel_requested: bool,
    /// The meta-scheduler granted its start (never withdrawn from now on).
    claimed: bool,
    /// Started by the runner, waiting for its claim to be granted.
    held: Option<Hold>,
    /// Its inputs are being staged in: it is not in the runner yet.
    staging: bool,
}

/// A start the runner decided that waits for the meta-scheduler's grant.
#[derive(Debug)]
struct Hold {
    /// Its start orders, one per node (the head node first).
    orders: Vec<(MachineId, v1::StartJob)>,
    /// When the runner started it.
    since: Time,
    /// First start, resumption or restart.
    launch: Launch,
}

impl JobRec {
    /// A job that has just entered (or re-entered) the queue.
    fn queued(req: v1::EnqueueRequest, job: Job) -> JobRec {
        JobRec {
            req,
            job,
            state: JobState::Queued,
            machine: None,
            parts: Vec::new(),
            start: None,
            reported_running: false,
            suspended_on: None,
            killed_on: None,
            after_kill: None,
            launch: Launch::First,
            cancel_requested: false,
            claimed: false,
            held: None,
            staging: false,
        }
    }
}

/// An order that waits for the commit of its job's start.
#[derive(Debug)]
enum Order {
    Start(Box<v1::StartJob>),
    Resume(u64),
}

impl Order {
    fn job(&self) -> u64 {
        match self {
            Order::Start(o) => o.job_id,
            Order::Resume(id) => *id,
        }
    }
}

#[derive(Debug)]
struct Agent {
    id: String,
    /// Monotonic milliseconds of its last registration or heartbeat.
    last_seen: u64,
    orders: Option<mpsc::UnboundedSender<v1::AgentCommand>>,
    /// A placeholder after a restart: the machine's jobs wait for their agent to come back.
    placeholder: bool,
    /// The account it runs as, and whether it can start jobs as others (it runs as root).
    account: String,
    separates_users: bool,
}

/// The state owned by the driver task.
#[derive(Debug)]
pub struct Driver {
    cfg: Config,
    platform: Platform,
    names: NameTable,
    runner: ClusterRunner,
    log: Option<log::InputLog>,
    jobs: HashMap<u64, JobRec>,
    agents: Vec<Option<Agent>>,
    pending: Vec<Vec<v1::AgentCommand>>,
    /// The event log, the ended jobs and the changes to commit.
    journal: Journal,
    /// The gauges, and the stopwatch the edge gave to time passes with.
    metrics: Option<(crate::metrics::LocalMetrics, fn() -> Instant)>,
    /// The open StartClaims link, if any.
    claim_link: crate::claim_link::ClaimLink,
    /// Held jobs whose claim has not been sent on the open link yet.
    to_claim: Vec<u64>,
    /// Start (and resume) orders waiting for the commit of their job's start.
    starts: Vec<(MachineId, Order)>,
    /// Fetches the jobs' inputs into the site's cache; `None`: the site stages no inputs.
    stager: Option<crate::staging::Stager>,
    /// Jobs recovered while staging, to hand the stager once it is there.
    to_stage: Vec<u64>,
    /// The advance reservations admitted, by id, as stored.
    reservations: BTreeMap<u64, v1::AdvanceReservation>,
    /// The tentative ones among them (not stored), with the monotonic millisecond at which their
    /// lease lapses.
    leases: BTreeMap<u64, u64>,
}

fn internal(e: impl std::fmt::Display) -> Status {
    Status::internal(format!("state store: {e}"))
}

/// The answer to an Enqueue the runner refuses, with the field or the code to blame.
fn refusal(e: RunnerError) -> Status {
    match e {
        RunnerError::Rejected(Rejection::BadEstimate { .. }) => {
            Status::invalid_argument(format!("spec.estimate_s: {e}"))
        }
        RunnerError::Rejected(Rejection::Duplicate(_)) | RunnerError::Duplicate(_) => {
            Status::already_exists(e.to_string())
        }
        RunnerError::Rejected(Rejection::ReservationNotHeld { .. }) => {
            Status::not_found(format!("reservation: {e}"))
        }
        RunnerError::Rejected(Rejection::Reservation { .. }) => {
            Status::failed_precondition(format!("reservation: {e}"))
        }
        _ => Status::failed_precondition(e.to_string()),
    }
}

impl Driver {
    /// Builds the driver at `now`, recovering the stored state when `cfg.state_dir` is set.
    pub fn new(cfg: Config, now: Now) -> anyhow::Result<Driver> {
        let platform = cfg.platform()?;
        let policy = cfg
            .policy
            .build(&platform, ClusterId(0))
            .map_err(|e| anyhow::anyhow!("policy: {e}"))?;
        Driver::with_policy(cfg, platform, policy, now)
    }

    /// [`Driver::new`] with a policy built by the caller (tests drive the shell with policies of
    /// their own).
    fn with_policy(
        cfg: Config,
        platform: Platform,
        policy: Box<dyn gridsched_core::policy::Policy>,
        now: Now,
    ) -> anyhow::Result<Driver> {
        let config = RunnerConfig {
            overrun: OverrunRule {
                extension: cfg.overrun_extension_s,
            },
            // A live process cannot move to another machine.
            migration: Migration::Restart,
        };
        let runner = ClusterRunner::new(&platform, ClusterId(0), policy, config)
            .map_err(|e| anyhow::anyhow!("policy: {e}"))?;
        let log = match &cfg.input_log {
            Some(path) => {
                let header = Header {
                    platform: platform.clone(),
                    cluster: ClusterId(0),
                    policy: cfg.policy,
                    config,
                };
                Some(
                    log::InputLog::open(path, header)
                        .map_err(|e| anyhow::anyhow!("input_log: {}: {e}", path.display()))?,
                )
            }
            None => None,
        };
        let (journal, stored) = Journal::open(
            &cfg.cluster,
            cfg.state_dir.as_deref(),
            cfg.events_in_memory,
            crate::journal::log_base(now.secs),
        )?;
        let n = platform.machines.len();
        let machines: Vec<MachineId> = platform.machines.iter().map(|m| m.id).collect();
        let mut d = Driver {
            names: NameTable::from_platform(&platform),
            platform,
            runner,
            log,
            jobs: HashMap::new(),
            agents: (0..n).map(|_| None).collect(),
            pending: vec![Vec::new(); n],
            journal,
            metrics: None,
            claim_link: Default::default(),
            to_claim: Vec::new(),
            starts: Vec::new(),
            reservations: BTreeMap::new(),
            leases: BTreeMap::new(),
            stager: None,
            to_stage: Vec::new(),
            cfg,
        };
        // No machine runs anything before its agent registers.
        for machine in machines {
            d.note(now.secs, Input::Machine { machine, up: false });
        }
        d.recover(now, stored)?;
        Ok(d)
    }

    /// The newest lease epoch of the meta-scheduler that had called before a restart (0: none).
    pub fn stored_epoch(&self) -> u64 {
        self.journal.epoch()
    }

    /// Hands `input` to the runner at `now` (logged with its decisions when a log is open) and
    /// returns the decisions. A refused input is logged too, with its error, for the re-run to
    /// refuse it the same way.
    fn feed(&mut self, now: Time, input: Input) -> (Vec<Effect>, Result<(), RunnerError>) {
        if let Some(log) = &mut self.log {
            log.input(now, &input);
        }
        let mut out = Vec::new();
        let res = self.runner.on(now, input, &mut out);
        if let Some(log) = &mut self.log {
            log.effects(now, &out);
        }
        (out, res)
    }

    /// [`Driver::feed`] for an input whose refusal only needs a warning (it is logged, and the
    /// re-run refuses it the same way).
    fn note(&mut self, now: Time, input: Input) {
        if let (_, Err(e)) = self.feed(now, input) {
            tracing::warn!("cluster runner: {e}");
        }
    }

    pub(super) fn handle(&mut self, m: Msg, now: Now) {
        match m {
            Msg::Enqueue(r, tx) => self.enqueue_group(vec![(*r, tx)], now),
            Msg::Cancel(r, tx) => {
                let res = self.cancel(r, now.secs);
                let _ = tx.send(res);
            }
            Msg::Status(tx) => {
                let _ = tx.send(Ok(self.status(now.secs)));
            }
            Msg::Active(id, tx) => {
                let _ = tx.send(Ok(self.jobs.get(&id).map(|r| crate::driver::owner(&r.req))));
            }
            Msg::Events(from, tx) => {
                let _ = tx.send(self.journal.feed(from));
            }
            Msg::Epoch(e, tx) => {
                let _ = tx.send(self.journal.save_epoch(e).map_err(internal));
            }
            Msg::Register(r, tx) => {
                let res = self.register(r, now);
                let _ = tx.send(res);
            }
            Msg::Heartbeat(r, tx) => {
                let res = self.heartbeat(r, now);
                let _ = tx.send(res);
            }
            Msg::Orders(id, tx) => {
                let res = self.open_orders(&id);
                let _ = tx.send(res);
            }
            Msg::Claims(tx) => {
                let _ = tx.send(Ok(self.open_claims()));
            }
            Msg::ClaimAnswer(a) => self.claim_answer(a, now.secs),
            Msg::Reserve(r, tx) => {
                let res = self.reserve(r, now);
                let _ = tx.send(res);
            }
            Msg::CancelReservation(r, tx) => {
                let res = self.cancel_reservation(r, now);
                let _ = tx.send(res);
            }
            Msg::CommitReservation(r, tx) => {
                let res = self.commit_reservation(r, now);
                let _ = tx.send(res);
            }
            Msg::Reprioritize(r, tx) => {
                let res = self.reprioritize(r, now.secs);
                let _ = tx.send(res);
            }
            Msg::Staged(id, res) => self.staged(id, res, now.secs),
            Msg::Slurm(d) => tracing::warn!("a native site got a Slurm answer: {d:?}"),
        }
    }

    fn stored(rec: &JobRec) -> StoredJob {
        StoredJob {
            request: Some(rec.req.clone()),
            state: rec.state as i32,
            machine: rec.machine.map(|m| m.0),
            start_time: rec.start,
            claimed: rec.claimed,
            parts: rec.parts.iter().map(parts::Part::stored).collect(),
            slurm_id: None,
            staging: rec.staging,
        }
    }

    /// Records a state change: event log, live feed, job record to save.
    fn emit(
        &mut self,
        id: u64,
        state: JobState,
        now: Time,
        detail: &str,
        rep: Option<&v1::JobReport>,
    ) {
        self.record(id, state, now, detail, rep, false);
    }

    /// [`Driver::emit`], for a job the meta-scheduler withdrew (`withdrawn`) too: that one leaves
    /// without counting as ended here, so the meta-scheduler may send it again.
    fn record(
        &mut self,
        id: u64,
        state: JobState,
        now: Time,
        detail: &str,
        rep: Option<&v1::JobReport>,
        withdrawn: bool,
    ) {
        let machine = self.jobs.get(&id).and_then(|r| r.machine);
        let run = self.jobs.get(&id).map_or(0, |r| r.req.run);
        let ev = v1::JobEvent {
            job_id: id,
            state: state as i32,
            time: now,
            detail: detail.to_string(),
            machine: machine
                .and_then(|m| self.names.machine_name(m))
                .map(str::to_string),
            exit_code: rep.and_then(|r| r.exit_code),
            signal: rep.and_then(|r| r.signal),
            withdrawn,
            run,
            outputs: rep
                .filter(|_| state.is_terminal())
                .map(|r| r.outputs.clone())
                .unwrap_or_default(),
            ..Default::default()
        };
        let saved = if state.is_terminal() {
            self.jobs.remove(&id);
            None
        } else {
            self.jobs.get_mut(&id).map(|r| {
                r.state = state;
                Self::stored(r)
            })
        };
        self.journal.append(ev, saved);
    }

    /// Commits the events and job changes recorded since the last call, then sends the start
    /// orders decided meanwhile: a job runs only once its start is durable here (a restart finds
    /// it running, not waiting to be started a second time). When the commit fails the orders
    /// wait, their jobs marked to be saved again by the next flush (the next pass or tick).
    fn flush(&mut self) -> Result<(), Status> {
        if let Some(log) = &mut self.log {
            log.flush();
        }
        if let Err(e) = self.journal.commit() {
            for (_, order) in &self.starts {
                if let Some(rec) = self.jobs.get(&order.job()) {
                    self.journal.save(order.job(), Some(Self::stored(rec)));
                }
            }
            return Err(internal(e));
        }
        for (m, order) in std::mem::take(&mut self.starts) {
            // Not if it was cancelled or lost while its order waited.
            let Some(rec) = self
                .jobs
                .get_mut(&order.job())
                .filter(|r| r.state == JobState::Running && r.runs_on(m))
            else {
                continue;
            };
            let kind = match order {
                // Not while the process killed there is still ending (see `killed_ended`).
                Order::Start(o) if rec.killed_on == Some(m) => {
                    rec.after_kill = Some(o);
                    continue;
                }
                Order::Start(o) => Kind::Start(*o),
                Order::Resume(job_id) => Kind::Resume(v1::ResumeJob { job_id }),
            };
            self.order(m, kind);
        }
        Ok(())
    }

    /// Admits one job into the queue (not yet durable, not yet scheduled).
    fn admit(&mut self, r: v1::EnqueueRequest, now: Time) -> Result<(u64, u64), Status> {
        let open = self.jobs.contains_key(&r.job_id);
        self.journal
            .check_enqueue(&r, open, self.cfg.max_estimate_s)?;
        let spec = r.spec.as_ref().expect("checked");
        let site = match self.cfg.site.is_empty() {
            true => &self.cfg.cluster,
            false => &self.cfg.site,
        };
        self.cfg.users.admit(&spec.user, site)?;
        let job = job_from_spec(spec, JobId(r.job_id), now, &mut self.names)
            .map_err(|e| Status::invalid_argument(format!("spec.{}: {}", e.field(), e.reason())))?;
        let priority = Some(r.priority.min(u32::from(u8::MAX)) as u8);
        if self.must_stage(spec)? {
            // Held back until its inputs are in place; what it asks is checked now.
            self.runner.admissible(&job).map_err(refusal)?;
            let id = r.job_id;
            let inputs = spec.stage_in.clone();
            self.journal.forget_end(id);
            let mut rec = JobRec::queued(r, job);
            rec.staging = true;
            self.jobs.insert(id, rec);
            self.emit(
                id,
                JobState::Queued,
                now,
                "queued; staging its inputs",
                None,
            );
            if let Some(s) = &self.stager {
                s.stage(id, inputs, now);
            }
            return Ok((id, self.journal.last_sequence()));
        }
        let (_, res) = self.feed(
            now,
            Input::Submit {
                job: job.clone(),
                priority,
            },
        );
        res.map_err(refusal)?;
        let id = r.job_id;
        // A later run of a job that ended here starts afresh.
        self.journal.forget_end(id);
        self.jobs.insert(id, JobRec::queued(r, job));
        self.emit(id, JobState::Queued, now, "queued", None);
        Ok((id, self.journal.last_sequence()))
    }

    /// Whether a job with `spec` waits for inputs to be fetched here before it can be queued:
    /// refused when the site stages none, or when an upload has not been pushed here yet (the
    /// meta-scheduler pushes it again, then enqueues again).
    fn must_stage(&self, spec: &v1::JobSpec) -> Result<bool, Status> {
        if spec.stage_in.is_empty() {
            return Ok(false);
        }
        let Some(stager) = &self.stager else {
            return Err(Status::failed_precondition(
                "stage_in: this site stages no inputs",
            ));
        };
        for i in spec.stage_in.iter().filter(|i| i.url.is_empty()) {
            if stager.cache().size(&i.sha256).is_none() {
                return Err(Status::unavailable(format!(
                    "stage_in: upload {} (`{}`) is not at this site yet",
                    i.sha256, i.name
                )));
            }
        }
        Ok(!stager.in_place(&spec.stage_in))
    }

    /// The stager's outcome for job `id`: with its inputs in place it joins the runner's queue
    /// (their digests and sizes recorded, for its agents); a failed fetch ends it FAILED.
    fn staged(&mut self, id: u64, res: crate::staging::Staged, now: Time) {
        let Some(rec) = self.jobs.get_mut(&id).filter(|r| r.staging) else {
            return;
        };
        let inputs = match res {
            Ok(i) => i,
            Err(why) => {
                rec.staging = false;
                self.emit(id, JobState::Failed, now, &format!("staging: {why}"), None);
                let _ = self.flush();
                return;
            }
        };
        rec.staging = false;
        if let Some(spec) = rec.req.spec.as_mut() {
            spec.stage_in = inputs;
        }
        let priority = Some(rec.req.priority.min(u32::from(u8::MAX)) as u8);
        let job = rec.job.clone();
        if let (_, Err(e)) = self.feed(now, Input::Submit { job, priority }) {
            let detail = format!("its inputs are in place, but it cannot be queued: {e}");
            self.emit(id, JobState::Failed, now, &detail, None);
            let _ = self.flush();
            return;
        }
        self.emit(
            id,
            JobState::Queued,
            now,
            "queued; its inputs are in place",
            None,
        );
        let _ = self.flush();
        self.pass(now);
    }

    /// A job's staging progress as `Status` shows it.
    fn staging_progress(&self, rec: &JobRec) -> v1::StagingProgress {
        let inputs = rec.req.spec.as_ref().map_or(&[][..], |s| &s.stage_in[..]);
        let known = v1::StagingProgress {
            inputs_total: inputs.len() as u32,
            bytes_total: inputs.iter().map(|i| i.size).sum(),
            ..Default::default()
        };
        self.stager
            .as_ref()
            .and_then(|s| s.progress(rec.req.job_id))
            .unwrap_or(known)
    }

    /// Hands the driver the stager at `now` (the edge's clock); the jobs recovered while staging
    /// are staged again.
    pub fn set_stager(&mut self, stager: crate::staging::Stager, now: Time) {
        for id in std::mem::take(&mut self.to_stage) {
            if let Some(spec) = self.jobs.get(&id).and_then(|r| r.req.spec.as_ref()) {
                stager.stage(id, spec.stage_in.clone(), now);
            }
        }
        self.stager = Some(stager);
    }

    /// Enqueues a group of jobs with one durable commit (group commit), then one scheduling
    /// pass; answers each request.
    pub(super) fn enqueue_group(&mut self, group: Vec<journal::Enqueue>, now: Now) {
        let now = now.secs;
        let admitted =
            journal::group_commit(self, group, now, Self::admit, Self::flush, Self::undo_admit);
        if admitted.is_empty() {
            return;
        }
        self.pass(now);
        journal::answer(admitted, |id| {
            self.jobs.get(&id).map_or(JobState::Queued, |r| r.state)
        });
    }

    /// Takes back an admitted job whose admission could not be committed.
    fn undo_admit(&mut self, id: u64, now: Time) {
        self.note(now, Input::Cancel { job: JobId(id) });
        self.jobs.remove(&id);
    }

    /// The meta-scheduler's new priorities of waiting jobs: written with their records, then
    /// given to the runner (in force from the next pass, which follows at once).
    fn reprioritize(
        &mut self,
        r: v1::ReprioritizeRequest,
        now: Time,
    ) -> Result<v1::ReprioritizeResponse, Status> {
        let mut jobs = Vec::new();
        for p in r.jobs {
            let Some(rec) = self.jobs.get_mut(&p.job_id) else {
                continue;
            };
            if rec.state != JobState::Queued || rec.req.priority == p.priority {
                continue;
            }
            rec.req.priority = p.priority;
            let stored = Self::stored(rec);
            self.journal.save(p.job_id, Some(stored));
            if !rec.staging {
                let priority = p.priority.min(u32::from(u8::MAX)) as u8;
                jobs.push((JobId(p.job_id), priority));
            }
        }
        if jobs.is_empty() {
            return Ok(v1::ReprioritizeResponse { applied: 0 });
        }
        self.flush()?;
        let applied = jobs.len() as u32;
        self.note(now, Input::Reprioritize { jobs });
        self.pass(now);
        Ok(v1::ReprioritizeResponse { applied })
    }

    fn cancel(&mut self, r: v1::CancelRequest, now: Time) -> Result<v1::CancelResponse, Status> {
        let Some(rec) = self.jobs.get_mut(&r.job_id) else {
            return self.journal.cancel_ended(&r);
        };
        if r.run.is_some_and(|asked| asked != rec.req.run) {
            return Err(Journal::other_run(&r, rec.req.run));
        }
        let reason = if r.reason.is_empty() {
            "cancelled".to_string()
        } else {
            r.reason.clone()
        };
        match rec.state {
            JobState::Running => {
                rec.cancel_requested = true;
                if rec.parts.is_empty() {
                    let m = rec.machine.expect("running jobs have a machine");
                    self.order(
                        m,
                        Kind::Kill(v1::KillJob {
                            job_id: r.job_id,
                            reason,
                        }),
                    );
                } else {
                    self.kill_parts(r.job_id, &reason);
                }
                Ok(v1::CancelResponse {
                    state: JobState::Running as i32,
                })
            }
            _ if rec.staging => {
                // Not in the runner yet: its fetch, if still going, fills the cache for nothing.
                rec.staging = false;
                self.emit(r.job_id, JobState::Cancelled, now, &reason, None);
                self.flush()?;
                Ok(v1::CancelResponse {
                    state: JobState::Cancelled as i32,
                })
            }
            _ => {
                self.release(now, r.job_id);
                self.emit(r.job_id, JobState::Cancelled, now, &reason, None);
                self.flush()?;
                self.pass(now);
                Ok(v1::CancelResponse {
                    state: JobState::Cancelled as i32,
                })
            }
        }
    }

    /// Sends an order to a machine's agent: its stream if open, else its next heartbeat.
    fn order(&mut self, m: MachineId, kind: Kind) {
        let cmd = v1::AgentCommand { kind: Some(kind) };
        if let Some(Some(a)) = self.agents.get(m.index())
            && let Some(tx) = &a.orders
            && tx.send(cmd.clone()).is_ok()
        {
            return;
        }
        self.pending[m.index()].push(cmd);
    }

    /// Reports to `m` from now on.
    pub fn set_metrics(&mut self, m: crate::metrics::LocalMetrics, stopwatch: fn() -> Instant) {
        self.metrics = Some((m, stopwatch));
    }

    /// A scheduling pass of the runner, its decisions applied, then the commit.
    fn pass(&mut self, now: Time) {
        let t0 = self.metrics.as_ref().map(|(_, clock)| clock());
        let (effects, res) = self.feed(now, Input::Pass);
        if let (Some((m, clock)), Some(t0)) = (&self.metrics, t0) {
            m.pass_seconds
                .observe(clock().saturating_duration_since(t0).as_secs_f64());
        }
        if let Err(e) = res {
            tracing::error!("scheduling pass refused: {e}");
        }
        for e in effects {
            match e {
                Effect::Suspend { job, machine } => self.suspend(now, job.0, machine),
                Effect::Kill { job, machine } => self.kill_requeued(now, job.0, machine),
                Effect::Start(s) => self.start(now, s),
                Effect::Dropped { job } => {
                    let why = gridsched_core::runner::DROPPED;
                    tracing::warn!(job = job.0, "{why}");
                    self.emit(job.0, JobState::Failed, now, why, None);
                }
                Effect::Finished(_) | Effect::Overrun { .. } => {}
            }
        }
        self.send_claims();
        if let Err(e) = self.flush() {
            tracing::error!("{e}");
        }
    }

    /// The runner suspended a running job: its process is stopped where it runs (SIGSTOP) and
    /// keeps its progress; a held job simply goes back to the queue.
    fn suspend(&mut self, now: Time, id: u64, m: MachineId) {
        let order = Kind::Suspend(v1::SuspendJob {
            job_id: id,
            reason: "suspended by the policy".into(),
        });
        let detail = format!(
            "suspended on {} (stopped, keeps its progress)",
            self.names.machine_name(m).unwrap_or("?")
        );
        let state = JobState::Suspended;
        if let Some(rec) = self.stop_running(now, id, m, order, state, &detail) {
            rec.suspended_on = Some(m);
            if let Some((mm, _)) = &self.metrics {
                mm.preempted("suspend");
            }
        }
    }

    /// The runner killed a running job to free its processors (an urgent job preempts it): its
    /// process is killed where it runs and the job waits again, from scratch; a held job simply
    /// goes back to the queue.
    fn kill_requeued(&mut self, now: Time, id: u64, m: MachineId) {
        let order = Kind::Kill(v1::KillJob {
            job_id: id,
            reason: "preempted: killed and requeued".into(),
        });
        let detail = "preempted: killed and requeued, its progress lost";
        let lost = self.jobs.get(&id).map_or(0, |r| {
            let ran = r.start.map_or(0, |t| (now - t).max(0));
            u64::from(r.job.procs) * ran as u64
        });
        if let Some(rec) = self.stop_running(now, id, m, order, JobState::Queued, detail) {
            rec.killed_on = Some(m);
            if let Some((mm, _)) = &self.metrics {
                mm.preempted("kill");
                mm.lost_work.inc_by(lost);
            }
        }
    }

    /// A running job the runner stopped on `m` goes back to the queue: `order` goes to its
    /// agent and an event of `state` (SUSPENDED or QUEUED) with `detail` is emitted; its record,
    /// for the caller to mark where its process is. A job held for its claim was never ordered:
    /// it just waits again (`None`).
    fn stop_running(
        &mut self,
        now: Time,
        id: u64,
        m: MachineId,
        order: Kind,
        state: JobState,
        detail: &str,
    ) -> Option<&mut JobRec> {
        let rec = self.jobs.get_mut(&id)?;
        if rec.held.take().is_some() {
            // Never ordered: back in the queue without a word to its agent.
            return None;
        }
        let (reported, launch) = (rec.reported_running, rec.launch);
        rec.machine = None;
        rec.start = None;
        rec.reported_running = false;
        self.order(m, order);
        if !reported {
            // Its start was ordered, its agent's report of it not in yet: said now, so that the
            // grid counts the run this stop ends (its next start is another one).
            let started = Self::started_detail(launch, self.names.machine_name(m));
            self.emit(id, JobState::Running, now, &started, None);
        }
        self.emit(id, state, now, detail, None);
        self.jobs.get_mut(&id)
    }

    fn start(&mut self, now: Time, s: Started) {
        let Some(rec) = self.jobs.get(&s.job.0) else {
            tracing::warn!("runner started unknown job {}", s.job);
            return;
        };
        let spec = rec.req.spec.as_ref();
        let execution = match (spec.and_then(|sp| sp.command.clone()), rec.job.runtime) {
            (_, Some(_)) => v1::start_job::Execution::EmulateRuntimeS(s.run),
            (Some(c), None) => v1::start_job::Execution::Command(c),
            (None, None) => v1::start_job::Execution::EmulateRuntimeS(0),
        };
        let empty = v1::JobSpec::default();
        let sp = spec.unwrap_or(&empty);
        let (user, outputs, inputs) = (sp.user.clone(), sp.outputs.clone(), sp.stage_in.clone());
        let (local_account, local_group) = self.cfg.users.order(&user);
        let order = v1::StartJob {
            local_account,
            local_group,
            memory_kb: sp.memory_kb,
            inputs,
            job_id: s.job.0,
            execution: Some(execution),
            wall_time_limit_s: Some(s.limit),
            processors: s.procs,
            user,
            nodes: Vec::new(),
            node_rank: 0,
            outputs,
        };
        let orders = self.part_orders(&s, order);
        let rec = self.jobs.get_mut(&s.job.0).expect("checked");
        // A stopped process left elsewhere cannot follow the job: it goes, and the job restarts.
        if let Some(old) = rec.suspended_on.take()
            && s.launch != Launch::Resume
        {
            self.kill_stray(old, s.job.0, "restarted on another machine");
            // Back in the queue for a moment: the meta-scheduler counts a run from scratch.
            let detail = format!(
                "requeued: its stopped process on {} is killed; it starts again from scratch",
                self.names.machine_name(old).unwrap_or("?")
            );
            self.emit(s.job.0, JobState::Queued, now, &detail, None);
        }
        let rec = self.jobs.get_mut(&s.job.0).expect("checked");
        if rec.req.claim_before_start && !rec.claimed {
            rec.held = Some(Hold {
                orders,
                since: now,
                launch: s.launch,
            });
            self.to_claim.push(s.job.0);
            return;
        }
        self.launch(now, orders, s.launch);
    }

    /// Records job `orders[0].1.job_id` running from `now` on the machine of each order (a
    /// multi-node job on several nodes, the first its head); its agents' orders (starts, or a
    /// resumption of its stopped process) leave with the next [`Driver::flush`].
    fn launch(&mut self, now: Time, orders: Vec<(MachineId, v1::StartJob)>, launch: Launch) {
        let Some((head, first)) = orders.first() else {
            return;
        };
        let (head, id) = (*head, first.job_id);
        let Some(rec) = self.jobs.get_mut(&id) else {
            return;
        };
        rec.machine = Some(head);
        rec.parts = match orders.len() {
            1 => Vec::new(),
            _ => orders
                .iter()
                .map(|(m, o)| parts::Part {
                    node: *m,
                    procs: o.processors,
                    running: false,
                    end: None,
                })
                .collect(),
        };
        rec.start = Some(now);
        rec.state = JobState::Running;
        self.journal.save(id, Some(Self::stored(rec)));
        rec.reported_running = false;
        rec.launch = launch;
        for (m, order) in orders {
            if launch == Launch::Resume {
                // Its process is still there, stopped: the agent lets it run on, and it reports
                // itself RUNNING again.
                self.starts.push((m, Order::Resume(id)));
            } else {
                self.starts.push((m, Order::Start(Box::new(order))));
            }
        }
    }

    /// Takes a waiting job out of the runner: from its queue, or from the machine the runner
    /// started it on while its claim is pending. A stopped process of a suspended job is killed.
    fn release(&mut self, now: Time, id: u64) {
        let Some(rec) = self.jobs.get_mut(&id) else {
            return;
        };
        rec.held = None;
        if std::mem::take(&mut rec.staging) {
            return;
        }
        if let Some(m) = rec.suspended_on.take() {
            self.order(
                m,
                Kind::Kill(v1::KillJob {
                    job_id: id,
                    reason: "cancelled while suspended".into(),
                }),
            );
        }
        self.note(now, Input::Cancel { job: JobId(id) });
    }
}
