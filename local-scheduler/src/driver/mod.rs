//! The driver of a local scheduler (issue 5, part 2): one task owns the policy, the jobs, the
//! agents and the event log; gRPC handlers talk to it through messages (no lock is ever held
//! across an await). Real time maps to the core's integer seconds as Unix seconds. The policy is
//! called on every submission, termination, cancellation, agent change and on a 100 ms tick (its
//! wake-ups and overruns).
//!
//! Orders reach agents through their `AgentOrders` stream when open, else through the next
//! heartbeat response. The RUNNING event is emitted when the agent reports the process started.
//! A lost agent (no heartbeat for `lost_after_ms`) takes its machine offline
//! (`set_machine_available(false)`); its jobs end LOST or are requeued, per configuration.
//!
//! A job enqueued with `claim_before_start` is *held* when the policy starts it: it keeps its
//! machine and licences in the policy, but its agent gets the start order only once the
//! meta-scheduler grants the claim on the StartClaims link ([`claims`]); a withdrawn job is
//! dropped. The agents' side lives in [`agents`], `Status` and the gauges in [`status`].

mod agents;
mod claims;
mod recover;
mod status;
#[cfg(test)]
mod tests;

use crate::config::Config;
use crate::store::{Store, StoredJob};
use gridsched_core::Time;
use gridsched_core::model::{ClusterId, Job, JobId, MachineId, Platform};
use gridsched_core::policy::{Policy, Rejection, Start};
use gridsched_proto::v1::{self, JobState, agent_command::Kind};
use gridsched_proto::{NameTable, job_from_spec};
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration as StdDuration, Instant};
use tokio::sync::{broadcast, mpsc, oneshot};
use tonic::Status;

type Reply<T> = oneshot::Sender<Result<T, Status>>;

/// A backlog of events plus the live feed that follows it without a gap.
pub type EventFeed = (Vec<v1::JobEvent>, broadcast::Receiver<v1::JobEvent>);

/// A request to the driver.
#[derive(Debug)]
pub enum Msg {
    /// Enqueue.
    Enqueue(v1::EnqueueRequest, Reply<v1::EnqueueResponse>),
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
}

#[derive(Debug)]
struct JobRec {
    req: v1::EnqueueRequest,
    job: Job,
    state: JobState,
    machine: Option<MachineId>,
    start: Option<Time>,
    predicted_end: Time,
    reported_running: bool,
    cancel_requested: bool,
    /// The meta-scheduler granted its start (never withdrawn from now on).
    claimed: bool,
    /// Started by the policy, waiting for its claim to be granted.
    held: Option<Hold>,
}

/// A start the policy decided that waits for the meta-scheduler's grant.
#[derive(Debug)]
struct Hold {
    machine: MachineId,
    order: v1::StartJob,
    /// When the policy started it.
    since: Time,
}

impl JobRec {
    /// A job that has just entered (or re-entered) the queue.
    fn queued(req: v1::EnqueueRequest, job: Job) -> JobRec {
        JobRec {
            req,
            job,
            state: JobState::Queued,
            machine: None,
            start: None,
            predicted_end: 0,
            reported_running: false,
            cancel_requested: false,
            claimed: false,
            held: None,
        }
    }
}

#[derive(Debug)]
struct Agent {
    id: String,
    last_seen: Instant,
    orders: Option<mpsc::UnboundedSender<v1::AgentCommand>>,
    /// A placeholder after a restart: the machine's jobs wait for their agent to come back.
    placeholder: bool,
}

/// The state owned by the driver task.
#[derive(Debug)]
pub struct Driver {
    cfg: Config,
    platform: Platform,
    names: NameTable,
    policy: Box<dyn Policy>,
    jobs: HashMap<u64, JobRec>,
    agents: Vec<Option<Agent>>,
    pending: Vec<Vec<v1::AgentCommand>>,
    events: Vec<v1::JobEvent>,
    live: broadcast::Sender<v1::JobEvent>,
    store: Option<Store>,
    unsaved: Vec<v1::JobEvent>,
    ended: HashMap<u64, JobState>,
    dirty: BTreeMap<u64, Option<StoredJob>>,
    metrics: Option<crate::metrics::LocalMetrics>,
    /// The open StartClaims link, if any.
    claim_link: Option<mpsc::UnboundedSender<v1::ClaimRequest>>,
    /// Held jobs whose claim has not been sent on the open link yet.
    to_claim: Vec<u64>,
    /// Start orders waiting for the commit of their job's start.
    starts: Vec<(MachineId, v1::StartJob)>,
}

fn now_s() -> Time {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as Time)
}

fn internal(e: impl std::fmt::Display) -> Status {
    Status::internal(format!("state store: {e}"))
}

impl Driver {
    /// Builds the driver, recovering the stored state when `cfg.state_dir` is set.
    pub fn new(cfg: Config) -> anyhow::Result<Driver> {
        let platform = cfg.platform()?;
        let mut policy = cfg
            .policy
            .build(&platform, ClusterId(0))
            .map_err(|e| anyhow::anyhow!("policy: {e}"))?;
        let now = now_s();
        for m in &platform.machines {
            policy.set_machine_available(now, m.id, false);
        }
        let store = match &cfg.state_dir {
            Some(d) => Some(Store::open(d).map_err(|e| anyhow::anyhow!("state store: {e}"))?),
            None => None,
        };
        let n = platform.machines.len();
        let mut d = Driver {
            names: NameTable::from_platform(&platform),
            platform,
            policy,
            jobs: HashMap::new(),
            agents: (0..n).map(|_| None).collect(),
            pending: vec![Vec::new(); n],
            events: Vec::new(),
            live: broadcast::channel(1 << 16).0,
            store,
            unsaved: Vec::new(),
            ended: HashMap::new(),
            dirty: BTreeMap::new(),
            metrics: None,
            claim_link: None,
            to_claim: Vec::new(),
            starts: Vec::new(),
            cfg,
        };
        d.recover(now)?;
        Ok(d)
    }

    /// Runs the driver until every sender is dropped.
    pub async fn run(mut self, mut rx: mpsc::Receiver<Msg>) {
        let mut tick = tokio::time::interval(StdDuration::from_millis(100));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                m = rx.recv() => match m {
                    Some(Msg::Enqueue(r, tx)) => {
                        // Group commit: every Enqueue already waiting joins this one.
                        let mut group = vec![(r, tx)];
                        let mut other = None;
                        while group.len() < 1024 {
                            match rx.try_recv() {
                                Ok(Msg::Enqueue(r, tx)) => group.push((r, tx)),
                                Ok(m) => {
                                    other = Some(m);
                                    break;
                                }
                                Err(_) => break,
                            }
                        }
                        self.enqueue_group(group);
                        if let Some(m) = other {
                            self.handle(m);
                        }
                    }
                    Some(m) => self.handle(m),
                    None => return,
                },
                _ = tick.tick() => self.tick(),
            }
        }
    }

    fn handle(&mut self, m: Msg) {
        match m {
            Msg::Enqueue(r, tx) => self.enqueue_group(vec![(r, tx)]),
            Msg::Cancel(r, tx) => {
                let res = self.cancel(r);
                let _ = tx.send(res);
            }
            Msg::Status(tx) => {
                let _ = tx.send(Ok(self.status()));
            }
            Msg::Events(from, tx) => {
                let rx = self.live.subscribe();
                let backlog = match from {
                    None => Vec::new(),
                    Some(s) => {
                        let i = self.events.partition_point(|e| e.sequence < s);
                        self.events[i..].to_vec()
                    }
                };
                let _ = tx.send(Ok((backlog, rx)));
            }
            Msg::Register(r, tx) => {
                let res = self.register(r);
                let _ = tx.send(res);
            }
            Msg::Heartbeat(r, tx) => {
                let res = self.heartbeat(r);
                let _ = tx.send(res);
            }
            Msg::Orders(id, tx) => {
                let res = self.open_orders(&id);
                let _ = tx.send(res);
            }
            Msg::Claims(tx) => {
                let _ = tx.send(Ok(self.open_claims()));
            }
            Msg::ClaimAnswer(a) => self.claim_answer(a),
        }
    }

    fn duration(&self, job: &Job, d: gridsched_core::Duration, m: MachineId) -> Time {
        self.platform
            .machine(m)
            .map_or(d, |mm| job.duration_on(d, mm))
    }

    fn stored(rec: &JobRec) -> StoredJob {
        StoredJob {
            request: Some(rec.req.clone()),
            state: rec.state as i32,
            machine: rec.machine.map(|m| m.0),
            start_time: rec.start,
            claimed: rec.claimed,
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
        let seq = self.events.last().map_or(1, |e| e.sequence + 1);
        let machine = self.jobs.get(&id).and_then(|r| r.machine);
        let ev = v1::JobEvent {
            sequence: seq,
            job_id: id,
            state: state as i32,
            time: now,
            detail: detail.to_string(),
            machine: machine
                .and_then(|m| self.names.machine_name(m))
                .map(str::to_string),
            exit_code: rep.and_then(|r| r.exit_code),
            signal: rep.and_then(|r| r.signal),
            cluster: Some(self.cfg.cluster.clone()),
            withdrawn,
        };
        self.events.push(ev.clone());
        self.unsaved.push(ev.clone());
        let _ = self.live.send(ev);
        let saved = if state.is_terminal() {
            self.jobs.remove(&id);
            if !withdrawn {
                self.ended.insert(id, state);
            }
            None
        } else {
            self.jobs.get_mut(&id).map(|r| {
                r.state = state;
                Self::stored(r)
            })
        };
        self.dirty.insert(id, saved);
    }

    /// Commits the events and job changes recorded since the last call, then sends the start
    /// orders decided meanwhile: a job runs only once its start is durable here (a restart finds
    /// it running, not waiting to be started a second time). When the commit fails the orders
    /// wait, their jobs marked to be saved again by the next flush (the next pass or tick).
    fn flush(&mut self) -> Result<(), Status> {
        let events = std::mem::take(&mut self.unsaved);
        let jobs: Vec<_> = std::mem::take(&mut self.dirty).into_iter().collect();
        if let Some(s) = &self.store
            && (!events.is_empty() || !jobs.is_empty())
            && let Err(e) = s.commit(&events, &jobs)
        {
            for (_, order) in &self.starts {
                if let Some(rec) = self.jobs.get(&order.job_id) {
                    self.dirty.insert(order.job_id, Some(Self::stored(rec)));
                }
            }
            return Err(internal(e));
        }
        for (m, order) in std::mem::take(&mut self.starts) {
            // Not if it was cancelled or lost while its order waited.
            if self
                .jobs
                .get(&order.job_id)
                .is_some_and(|r| r.state == JobState::Running && r.machine == Some(m))
            {
                self.order(m, Kind::Start(order));
            }
        }
        Ok(())
    }

    /// Admits one job into the queue (not yet durable, not yet scheduled).
    fn admit(&mut self, r: v1::EnqueueRequest, now: Time) -> Result<(u64, u64), Status> {
        if r.job_id == 0 {
            return Err(Status::invalid_argument("job_id: must be positive"));
        }
        let Some(spec) = &r.spec else {
            return Err(Status::invalid_argument("spec: required"));
        };
        if self.jobs.contains_key(&r.job_id) || self.ended.contains_key(&r.job_id) {
            return Err(Status::already_exists(format!(
                "job {} already enqueued",
                r.job_id
            )));
        }
        let job = job_from_spec(spec, JobId(r.job_id), now, &mut self.names)
            .map_err(|e| Status::invalid_argument(format!("spec.{}: {}", e.field(), e.reason())))?;
        self.policy.submit(now, &job).map_err(|e| match e {
            Rejection::BadEstimate { .. } => {
                Status::invalid_argument(format!("spec.estimate_s: {e}"))
            }
            Rejection::Duplicate(_) => Status::already_exists(e.to_string()),
            _ => Status::failed_precondition(e.to_string()),
        })?;
        let id = r.job_id;
        self.jobs.insert(id, JobRec::queued(r, job));
        self.emit(id, JobState::Queued, now, "queued", None);
        Ok((id, self.events.last().map_or(0, |e| e.sequence)))
    }

    /// Enqueues a group of jobs with one durable commit (group commit), then one scheduling
    /// pass; answers each request.
    fn enqueue_group(&mut self, group: Vec<(v1::EnqueueRequest, Reply<v1::EnqueueResponse>)>) {
        let now = now_s();
        let mut admitted = Vec::with_capacity(group.len());
        for (r, tx) in group {
            match self.admit(r, now) {
                Ok((id, seq)) => admitted.push((id, seq, tx)),
                Err(e) => {
                    let _ = tx.send(Err(e));
                }
            }
        }
        if admitted.is_empty() {
            return;
        }
        if let Err(e) = self.flush() {
            // Not durable: undo, so that nothing acknowledged can be lost and nothing
            // unacknowledged runs.
            for (id, _, tx) in admitted {
                self.policy.cancel(now, JobId(id));
                self.jobs.remove(&id);
                let _ = tx.send(Err(e.clone()));
            }
            return;
        }
        self.pass(now);
        for (id, seq, tx) in admitted {
            let state = self.jobs.get(&id).map_or(JobState::Queued, |r| r.state);
            let _ = tx.send(Ok(v1::EnqueueResponse {
                state: state as i32,
                sequence: seq,
            }));
        }
    }

    fn cancel(&mut self, r: v1::CancelRequest) -> Result<v1::CancelResponse, Status> {
        let now = now_s();
        let Some(rec) = self.jobs.get_mut(&r.job_id) else {
            return match self.ended.get(&r.job_id) {
                Some(st) => Ok(v1::CancelResponse { state: *st as i32 }),
                None => Err(Status::not_found(format!("job {} not found", r.job_id))),
            };
        };
        let reason = if r.reason.is_empty() {
            "cancelled".to_string()
        } else {
            r.reason.clone()
        };
        match rec.state {
            JobState::Running => {
                rec.cancel_requested = true;
                let m = rec.machine.expect("running jobs have a machine");
                self.order(
                    m,
                    Kind::Kill(v1::KillJob {
                        job_id: r.job_id,
                        reason,
                    }),
                );
                Ok(v1::CancelResponse {
                    state: JobState::Running as i32,
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
    pub fn set_metrics(&mut self, m: crate::metrics::LocalMetrics) {
        self.metrics = Some(m);
    }

    fn pass(&mut self, now: Time) {
        let mut starts: Vec<Start> = Vec::new();
        let t0 = Instant::now();
        self.policy.schedule(now, &mut starts);
        if let Some(m) = &self.metrics {
            m.pass_seconds.observe(t0.elapsed().as_secs_f64());
        }
        let mut suspended = Vec::new();
        self.policy.take_suspensions(&mut suspended);
        for j in suspended {
            if let Some(rec) = self.jobs.get_mut(&j.0)
                && rec.held.take().is_some()
            {
                // Never ordered: back in the queue without a word to its agent.
                continue;
            }
            if let Some(rec) = self.jobs.get_mut(&j.0)
                && let Some(m) = rec.machine.take()
            {
                rec.start = None;
                rec.reported_running = false;
                self.order(
                    m,
                    Kind::Kill(v1::KillJob {
                        job_id: j.0,
                        reason: "suspended by the policy".into(),
                    }),
                );
                self.emit(
                    j.0,
                    JobState::Queued,
                    now,
                    "suspended (restarts from scratch)",
                    None,
                );
            }
        }
        for s in starts {
            self.start(now, s);
        }
        self.send_claims();
        if let Err(e) = self.flush() {
            tracing::error!("{e}");
        }
    }

    fn start(&mut self, now: Time, s: Start) {
        let Some(rec) = self.jobs.get(&s.job.0) else {
            tracing::warn!("policy started unknown job {}", s.job);
            return;
        };
        let job = rec.job.clone();
        let limit = self.duration(&job, job.estimate, s.machine);
        let execution = match (
            &rec.req.spec.as_ref().and_then(|sp| sp.command.clone()),
            job.runtime,
        ) {
            (_, Some(rt)) => {
                v1::start_job::Execution::EmulateRuntimeS(self.duration(&job, rt, s.machine))
            }
            (Some(c), None) => v1::start_job::Execution::Command(c.clone()),
            (None, None) => v1::start_job::Execution::EmulateRuntimeS(0),
        };
        let user = rec
            .req
            .spec
            .as_ref()
            .map(|sp| sp.user.clone())
            .unwrap_or_default();
        let order = v1::StartJob {
            job_id: s.job.0,
            execution: Some(execution),
            wall_time_limit_s: Some(limit),
            processors: s.procs,
            user,
        };
        let rec = self.jobs.get_mut(&s.job.0).expect("checked");
        if rec.req.claim_before_start && !rec.claimed {
            rec.held = Some(Hold {
                machine: s.machine,
                order,
                since: now,
            });
            self.to_claim.push(s.job.0);
            return;
        }
        self.launch(now, s.machine, order);
    }

    /// Records job `order.job_id` running on `m` from `now`; its agent's order leaves with the
    /// next [`Driver::flush`].
    fn launch(&mut self, now: Time, m: MachineId, order: v1::StartJob) {
        let Some(rec) = self.jobs.get_mut(&order.job_id) else {
            return;
        };
        rec.machine = Some(m);
        rec.start = Some(now);
        rec.predicted_end = now + order.wall_time_limit_s.unwrap_or(0);
        rec.state = JobState::Running;
        self.dirty.insert(order.job_id, Some(Self::stored(rec)));
        self.starts.push((m, order));
    }

    /// Takes a waiting job out of the policy: from its queue, or from the machine the policy
    /// started it on while its claim is pending.
    fn release(&mut self, now: Time, id: u64) {
        match self.jobs.get_mut(&id).and_then(|r| r.held.take()) {
            Some(_) => self.policy.terminate(now, JobId(id)),
            None => {
                self.policy.cancel(now, JobId(id));
            }
        }
    }
}
