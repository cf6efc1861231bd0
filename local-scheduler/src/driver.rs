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

use crate::config::{Config, LostAgent};
use crate::store::{Store, StoredJob};
use gridsched_core::Time;
use gridsched_core::model::{ClusterId, Job, JobId, MachineId, Platform};
use gridsched_core::policy::{Policy, Rejection, Start};
use gridsched_proto::v1::{self, AgentJobState, JobState, agent_command::Kind};
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
            cfg,
        };
        d.recover(now)?;
        Ok(d)
    }

    fn recover(&mut self, now: Time) -> anyhow::Result<()> {
        let Some(store) = &self.store else {
            return Ok(());
        };
        let (jobs, events) = store.load().map_err(|e| anyhow::anyhow!("{e}"))?;
        for e in &events {
            let st = JobState::try_from(e.state).unwrap_or(JobState::Unspecified);
            if st.is_terminal() {
                self.ended.insert(e.job_id, st);
            }
        }
        self.events = events;
        let mut jobs = jobs;
        jobs.sort_by_key(|j| j.request.as_ref().map_or(0, |r| r.job_id));
        for sj in jobs {
            let Some(req) = sj.request.clone() else {
                continue;
            };
            let Some(spec) = &req.spec else { continue };
            let job = job_from_spec(spec, JobId(req.job_id), now, &mut self.names)
                .map_err(|e| anyhow::anyhow!("stored job {}: {e}", req.job_id))?;
            let id = req.job_id;
            let mut rec = JobRec::queued(req, job);
            let running = sj.state == JobState::Running as i32;
            let mut why = String::from("its machine or start time was not recorded");
            let restored = match (running, sj.machine, sj.start_time) {
                (true, Some(m), Some(t)) => {
                    let m = MachineId(m);
                    // The machine runs the job: it is expected back (its agent re-registers and
                    // re-reports), so it counts as available; a lost-agent timeout takes it
                    // offline again if the agent does not return.
                    self.policy.set_machine_available(now, m, true);
                    match self
                        .policy
                        .restore_running(now, &rec.job, t, m, rec.job.procs)
                    {
                        Ok(()) => Some((m, t)),
                        Err(e) => {
                            why = e.to_string();
                            None
                        }
                    }
                }
                _ => None,
            };
            match restored {
                Some((m, t)) => {
                    rec.state = JobState::Running;
                    rec.machine = Some(m);
                    rec.start = Some(t);
                    rec.reported_running = true;
                    rec.predicted_end = t + self.duration(&rec.job, rec.job.estimate, m);
                    self.agents[m.index()] = Some(Agent {
                        id: String::new(),
                        last_seen: Instant::now(),
                        orders: None,
                        placeholder: true,
                    });
                    self.jobs.insert(id, rec);
                }
                None => {
                    self.policy
                        .submit(now, &rec.job)
                        .map_err(|e| anyhow::anyhow!("stored job {id}: {e}"))?;
                    if running {
                        self.jobs.insert(id, rec);
                        tracing::warn!(job = id, "requeued after a restart: {why}");
                        let detail = format!("requeued after a restart: {why}");
                        self.emit(id, JobState::Queued, now, &detail, None);
                    } else {
                        self.jobs.insert(id, rec);
                    }
                }
            }
        }
        self.flush().map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(())
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
        };
        self.events.push(ev.clone());
        self.unsaved.push(ev.clone());
        let _ = self.live.send(ev);
        let saved = if state.is_terminal() {
            self.jobs.remove(&id);
            self.ended.insert(id, state);
            None
        } else {
            self.jobs.get_mut(&id).map(|r| {
                r.state = state;
                Self::stored(r)
            })
        };
        self.dirty.insert(id, saved);
    }

    fn flush(&mut self) -> Result<(), Status> {
        let events = std::mem::take(&mut self.unsaved);
        let jobs: Vec<_> = std::mem::take(&mut self.dirty).into_iter().collect();
        match &self.store {
            Some(s) if !events.is_empty() || !jobs.is_empty() => {
                s.commit(&events, &jobs).map_err(internal)
            }
            _ => Ok(()),
        }
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
                self.policy.cancel(now, JobId(r.job_id));
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

    /// Calls the policy and applies its decisions.
    /// Reports to `m` from now on.
    pub fn set_metrics(&mut self, m: crate::metrics::LocalMetrics) {
        self.metrics = Some(m);
    }

    /// Refreshes the gauges from the current state.
    fn refresh_metrics(&self) {
        let Some(m) = &self.metrics else { return };
        let mut queued: BTreeMap<u32, i64> = BTreeMap::new();
        let mut running = 0;
        let mut licences: BTreeMap<&str, i64> = BTreeMap::new();
        for r in self.jobs.values() {
            match r.state {
                JobState::Queued => *queued.entry(r.req.priority).or_default() += 1,
                JobState::Running => {
                    running += 1;
                    for l in r.req.spec.iter().flat_map(|s| &s.licences) {
                        *licences.entry(l.as_str()).or_default() += 1;
                    }
                }
                _ => {}
            }
        }
        m.queued.clear();
        for (priority, n) in queued {
            m.queued
                .get_or_create(&crate::metrics::PriorityLabel { priority })
                .set(n);
        }
        m.running.set(running);
        m.licences_in_use.clear();
        for pool in &self.cfg.licences {
            let n = licences.get(pool.name.as_str()).copied().unwrap_or(0);
            m.licences_in_use
                .get_or_create(&crate::metrics::LicenceLabel {
                    licence: pool.name.clone(),
                })
                .set(n);
        }
        let online = self.agents.iter().filter(|a| a.is_some()).count();
        m.machines_online.set(online as i64);
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
        let rec = self.jobs.get_mut(&s.job.0).expect("checked");
        rec.machine = Some(s.machine);
        rec.start = Some(now);
        rec.predicted_end = now + limit;
        rec.state = JobState::Running;
        self.dirty.insert(s.job.0, Some(Self::stored(rec)));
        self.order(
            s.machine,
            Kind::Start(v1::StartJob {
                job_id: s.job.0,
                execution: Some(execution),
                wall_time_limit_s: Some(limit),
                processors: s.procs,
                user,
            }),
        );
    }

    fn agent_of(&mut self, id: &str) -> Result<MachineId, Status> {
        self.agents
            .iter()
            .position(|a| a.as_ref().is_some_and(|a| !a.placeholder && a.id == id))
            .map(|i| MachineId(i as u32))
            .ok_or_else(|| Status::not_found(format!("agent_id: unknown agent session `{id}`")))
    }

    fn register(
        &mut self,
        r: v1::RegisterAgentRequest,
    ) -> Result<v1::RegisterAgentResponse, Status> {
        if r.machine.is_empty() {
            return Err(Status::invalid_argument("machine: must not be empty"));
        }
        if r.processors == 0 {
            return Err(Status::invalid_argument("processors: must be at least 1"));
        }
        let m = self.names.machine_id(&r.machine).ok_or_else(|| {
            Status::not_found(format!("machine: unknown machine `{}`", r.machine))
        })?;
        let conf = self.platform.machine(m).expect("named machines exist");
        if r.processors > conf.procs {
            return Err(Status::failed_precondition(format!(
                "processors: {} exceed the configured {}",
                r.processors, conf.procs
            )));
        }
        if r.benchmark != 0 && r.benchmark != conf.benchmark {
            tracing::warn!(
                "{}: agent benchmark {} differs from the configured {}",
                r.machine,
                r.benchmark,
                conf.benchmark
            );
        }
        let now = now_s();
        let id = uuid::Uuid::new_v4().to_string();
        self.agents[m.index()] = Some(Agent {
            id: id.clone(),
            last_seen: Instant::now(),
            orders: None,
            placeholder: false,
        });
        // Jobs this machine should run that the (new) agent does not report are gone, unless their
        // start order was never delivered.
        let pending: Vec<u64> = self.pending[m.index()]
            .iter()
            .filter_map(|c| match &c.kind {
                Some(Kind::Start(s)) => Some(s.job_id),
                _ => None,
            })
            .collect();
        let gone: Vec<u64> = self
            .jobs
            .iter()
            .filter(|(id, rec)| {
                rec.state == JobState::Running
                    && rec.machine == Some(m)
                    && !pending.contains(id)
                    && !r.jobs.iter().any(|j| j.job_id == **id)
            })
            .map(|(id, _)| *id)
            .collect();
        self.lose(now, m, &gone, "its agent restarted without it");
        self.policy.set_machine_available(now, m, true);
        self.reports(now, m, &r.jobs);
        self.pass(now);
        Ok(v1::RegisterAgentResponse {
            agent_id: id,
            heartbeat_interval_ms: self.cfg.heartbeat_interval_ms,
            lost_after_ms: self.cfg.lost_after_ms,
            cluster: self.cfg.cluster.clone(),
        })
    }

    fn open_orders(
        &mut self,
        id: &str,
    ) -> Result<mpsc::UnboundedReceiver<v1::AgentCommand>, Status> {
        let m = self.agent_of(id)?;
        let (tx, rx) = mpsc::unbounded_channel();
        for c in std::mem::take(&mut self.pending[m.index()]) {
            let _ = tx.send(c);
        }
        if let Some(a) = &mut self.agents[m.index()] {
            a.orders = Some(tx);
        }
        Ok(rx)
    }

    fn heartbeat(&mut self, r: v1::HeartbeatRequest) -> Result<v1::HeartbeatResponse, Status> {
        let m = self.agent_of(&r.agent_id)?;
        let now = now_s();
        if let Some(a) = &mut self.agents[m.index()] {
            a.last_seen = Instant::now();
        }
        if let Some(mm) = &self.metrics {
            let machine = self.names.machine_name(m).unwrap_or("?").to_owned();
            mm.heartbeats
                .get_or_create(&crate::metrics::MachineLabel { machine })
                .inc();
        }
        let acked = self.reports(now, m, &r.jobs);
        self.pass(now);
        Ok(v1::HeartbeatResponse {
            commands: std::mem::take(&mut self.pending[m.index()]),
            acknowledged_jobs: acked,
            heartbeat_interval_ms: 0,
        })
    }

    /// Applies an agent's job reports; returns the ended jobs now recorded.
    fn reports(&mut self, now: Time, m: MachineId, reports: &[v1::JobReport]) -> Vec<u64> {
        let mut acked = Vec::new();
        for rep in reports {
            let id = rep.job_id;
            let st = AgentJobState::try_from(rep.state).unwrap_or(AgentJobState::Unspecified);
            let ours = self
                .jobs
                .get(&id)
                .is_some_and(|r| r.state == JobState::Running && r.machine == Some(m));
            if st == AgentJobState::Running {
                if !ours {
                    self.order(
                        m,
                        Kind::Kill(v1::KillJob {
                            job_id: id,
                            reason: "not scheduled here".into(),
                        }),
                    );
                } else if let Some(rec) = self.jobs.get_mut(&id)
                    && !rec.reported_running
                {
                    rec.reported_running = true;
                    let detail =
                        format!("started on {}", self.names.machine_name(m).unwrap_or("?"));
                    self.emit(id, JobState::Running, now, &detail, Some(rep));
                }
                continue;
            }
            acked.push(id);
            if !ours {
                continue;
            }
            let cancel = self.jobs.get(&id).is_some_and(|r| r.cancel_requested);
            let (state, detail) = match st {
                AgentJobState::Exited if rep.exit_code == Some(0) => {
                    (JobState::Completed, "exited with code 0".to_string())
                }
                AgentJobState::Exited => (
                    JobState::Failed,
                    match (rep.exit_code, rep.signal) {
                        (Some(c), _) => format!("exited with code {c}"),
                        (None, Some(s)) => format!("ended by signal {s}"),
                        _ => "ended".into(),
                    },
                ),
                AgentJobState::StartFailed => {
                    (JobState::Failed, format!("could not start: {}", rep.detail))
                }
                AgentJobState::KilledTimeLimit => {
                    (JobState::Killed, "exceeded its wall-time limit".into())
                }
                AgentJobState::KilledByOrder if cancel => (JobState::Cancelled, "cancelled".into()),
                AgentJobState::KilledByOrder => (JobState::Failed, "killed".into()),
                _ => (
                    JobState::Lost,
                    format!("unknown to its agent: {}", rep.detail),
                ),
            };
            if !rep.detail.is_empty() {
                tracing::debug!("job {id}: {}", rep.detail);
            }
            self.policy.terminate(now, JobId(id));
            // A process so short that its RUNNING report was coalesced away still shows RUNNING.
            if let Some(rec) = self.jobs.get_mut(&id)
                && !rec.reported_running
            {
                rec.reported_running = true;
                let detail = format!("started on {}", self.names.machine_name(m).unwrap_or("?"));
                self.emit(id, JobState::Running, now, &detail, None);
            }
            self.emit(id, state, now, &detail, Some(rep));
        }
        acked
    }

    /// Handles running jobs of machine `m` whose process is gone: LOST or requeued.
    fn lose(&mut self, now: Time, m: MachineId, ids: &[u64], why: &str) {
        for &id in ids {
            self.policy.terminate(now, JobId(id));
            match self.cfg.lost_agent {
                LostAgent::Fail => self.emit(id, JobState::Lost, now, why, None),
                LostAgent::Requeue => {
                    let Some(rec) = self.jobs.get_mut(&id) else {
                        continue;
                    };
                    rec.machine = None;
                    rec.start = None;
                    rec.reported_running = false;
                    let job = rec.job.clone();
                    match self.policy.submit(now, &job) {
                        Ok(()) => {
                            self.emit(id, JobState::Queued, now, &format!("requeued: {why}"), None)
                        }
                        Err(e) => self.emit(
                            id,
                            JobState::Lost,
                            now,
                            &format!("{why}; cannot requeue: {e}"),
                            None,
                        ),
                    }
                }
            }
        }
        let _ = m;
    }

    fn tick(&mut self) {
        self.refresh_metrics();
        let now = now_s();
        let lost_after = StdDuration::from_millis(u64::from(self.cfg.lost_after_ms));
        for i in 0..self.agents.len() {
            let expired = self.agents[i]
                .as_ref()
                .is_some_and(|a| a.last_seen.elapsed() > lost_after);
            if !expired {
                continue;
            }
            let m = MachineId(i as u32);
            tracing::warn!(
                "agent of {} lost",
                self.names.machine_name(m).unwrap_or("?")
            );
            self.agents[i] = None;
            self.pending[i].clear();
            self.policy.set_machine_available(now, m, false);
            let ids: Vec<u64> = self
                .jobs
                .iter()
                .filter(|(_, r)| r.state == JobState::Running && r.machine == Some(m))
                .map(|(id, _)| *id)
                .collect();
            self.lose(now, m, &ids, "its agent stopped sending heartbeats");
        }
        let over: Vec<u64> = self
            .jobs
            .iter()
            .filter(|(_, r)| r.state == JobState::Running && r.predicted_end <= now)
            .map(|(id, _)| *id)
            .collect();
        for id in over {
            self.policy.overrun(now, JobId(id), now + 1);
            if let Some(r) = self.jobs.get_mut(&id) {
                r.predicted_end = now + 1;
            }
        }
        self.pass(now);
    }

    fn status(&self) -> v1::StatusResponse {
        let now = now_s();
        let name = |m: MachineId| self.names.machine_name(m).unwrap_or("?").to_string();
        let lic_names = |j: &Job| -> Vec<String> {
            j.licences
                .iter()
                .filter_map(|l| self.names.licence_name(*l).map(str::to_string))
                .collect()
        };
        let queue = self
            .policy
            .queue()
            .into_iter()
            .filter_map(|id| self.jobs.get(&id.0))
            .map(|r| v1::QueuedJob {
                job_id: r.req.job_id,
                user: r
                    .req
                    .spec
                    .as_ref()
                    .map(|s| s.user.clone())
                    .unwrap_or_default(),
                processors: r.job.procs,
                estimate_s: r.job.estimate,
                priority: r.req.priority,
                enqueue_time: r.job.submit,
                licences: lic_names(&r.job),
                deadline: r.job.deadline,
            })
            .collect();
        let mut running: Vec<v1::RunningJob> = self
            .jobs
            .values()
            .filter(|r| r.state == JobState::Running)
            .map(|r| v1::RunningJob {
                job_id: r.req.job_id,
                machine: r.machine.map(name).unwrap_or_default(),
                processors: r.job.procs,
                start_time: r.start.unwrap_or(0),
                predicted_end: r.predicted_end,
                kill_time: None,
                licences: lic_names(&r.job),
            })
            .collect();
        running.sort_by_key(|r| r.job_id);
        let machines = self
            .platform
            .machines
            .iter()
            .map(|m| {
                let jobs: Vec<&v1::RunningJob> =
                    running.iter().filter(|r| r.machine == m.name).collect();
                v1::MachineInfo {
                    name: m.name.clone(),
                    processors: m.procs,
                    benchmark: m.benchmark,
                    memory_kb: m.memory_kb,
                    node_locked_licences: m
                        .node_locked
                        .iter()
                        .filter_map(|l| self.names.licence_name(*l).map(str::to_string))
                        .collect(),
                    online: self.agents[m.id.index()]
                        .as_ref()
                        .is_some_and(|a| !a.placeholder),
                    busy_processors: jobs.iter().map(|r| r.processors).sum(),
                    running_jobs: jobs.iter().map(|r| r.job_id).collect(),
                }
            })
            .collect();
        let licence_pools = self.platform.clusters[0]
            .pools
            .iter()
            .map(|p| {
                let lname = self
                    .names
                    .licence_name(p.licence)
                    .unwrap_or("?")
                    .to_string();
                let holds = |st: JobState| {
                    self.jobs
                        .values()
                        .filter(|r| r.state == st && r.job.licences.contains(&p.licence))
                        .count() as u32
                };
                v1::LicencePoolState {
                    licence: lname,
                    copies: p.copies,
                    in_use: holds(JobState::Running),
                    machines: p.machines.iter().map(|m| name(*m)).collect(),
                    requested_by_waiting: holds(JobState::Queued),
                }
            })
            .collect();
        let reservations = self
            .policy
            .reservations()
            .iter()
            .filter_map(|r| gridsched_proto::reservation_to_proto(r, &self.names).ok())
            .collect();
        v1::StatusResponse {
            cluster: self.cfg.cluster.clone(),
            site: self.cfg.site.clone(),
            policy: self.policy.describe(),
            time: now,
            queue,
            running,
            reservations,
            licence_pools,
            machines,
            next_wakeup: self.policy.next_wakeup(),
        }
    }
}
