//! The `MetaScheduler` gRPC service: submit (single and batch), get, list,
//! cancel, watch, sites and explain, over the in-memory [`State`] and the durable [`Store`].
//!
//! Every accepted job and state change is committed to the store before the answer is sent (a
//! batch in one transaction); events are published only after the commit. Errors follow the
//! spec's reading: INVALID_ARGUMENT naming the field, NOT_FOUND for an unknown job,
//! FAILED_PRECONDITION to cancel an ended job, UNAVAILABLE when the job's site cannot be reached,
//! OUT_OF_RANGE for a watch from a sequence no longer retained (events are retained in memory, so
//! after a restart only new ones are). The links to the local schedulers live in
//! [`crate::links`].

use crate::access;
use crate::config::MetaConfig;
use crate::decide::Decider;
use crate::history::Filter;
use crate::state::{Batch, State};
use crate::store::{Store, Write};
use crate::validate;
use gridsched_core::model::JobId;
use gridsched_proto::v1::{
    self, JobState, local_scheduler_client::LocalSchedulerClient,
    meta_scheduler_server::MetaScheduler,
};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, broadcast};
use tokio_stream::{Stream, StreamExt};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

/// A client of a local scheduler, sending the site's secret and the epoch this replica leads
/// with on every call.
pub(crate) type LocalClient =
    LocalSchedulerClient<InterceptedService<Channel, gridsched_security::Fenced>>;
use tonic::{Request, Response, Status, Streaming};

/// Wall-clock seconds (the service is the I/O shell around the deterministic core).
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// The service.
#[derive(Debug, Clone)]
pub struct MetaService {
    pub(crate) inner: Arc<Inner>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) state: Mutex<State>,
    store: Store,
    events: broadcast::Sender<v1::JobEvent>,
    /// Per site: wakes its forwarder.
    pub(crate) wake: Vec<Notify>,
    /// Per site: a client of its local scheduler (lazy channel), if it has an endpoint.
    pub(crate) clients: Vec<Option<LocalClient>>,
    pub(crate) cfg: MetaConfig,
    /// The users of the client API (empty = authentication off).
    pub(crate) tokens: gridsched_security::Tokens,
    /// Unary submissions waiting for the group committer.
    submissions: std::sync::mpsc::Sender<Pending>,
    /// The origin of the monotonic milliseconds the grid runner's links are timed by.
    origin: std::time::Instant,
    /// The uploaded job inputs, and their pushes to the sites.
    pub(crate) uploads: crate::inputs::Uploads,
    /// The users' accounts, for the accounting records.
    accounts: crate::accounting::Accounts,
    /// Each user's submission rate at the door.
    rate: crate::rate::Buckets,
}

/// A unary submission and where its result goes.
type Pending = (
    Option<v1::JobSpec>,
    tokio::sync::oneshot::Sender<Result<v1::SubmitResult, Status>>,
);

/// The group committer: unary submissions that arrive while a commit is running are accepted
/// together in the next transaction (one fsync for all), on a thread of its own so that no
/// runtime worker waits for the disk.
fn group_committer(svc: std::sync::Weak<Inner>, rx: std::sync::mpsc::Receiver<Pending>) {
    while let Ok(first) = rx.recv() {
        let mut group = vec![first];
        while group.len() < 4096 {
            match rx.try_recv() {
                Ok(p) => group.push(p),
                Err(_) => break,
            }
        }
        let Some(inner) = svc.upgrade() else { return };
        let me = MetaService { inner };
        let (specs, replies): (Vec<_>, Vec<_>) = group.into_iter().unzip();
        match me.accept(specs) {
            Ok(results) => {
                for (r, tx) in results.into_iter().zip(replies) {
                    let _ = tx.send(Ok(r));
                }
            }
            Err(e) => {
                for tx in replies {
                    let _ = tx.send(Err(e.clone()));
                }
            }
        }
    }
}

impl Inner {
    /// The durable store.
    pub(crate) fn store(&self) -> &Store {
        &self.store
    }
}

pub(crate) fn internal(e: impl std::fmt::Display) -> Status {
    Status::internal(e.to_string())
}

type EventStream = Pin<Box<dyn Stream<Item = Result<v1::JobEvent, Status>> + Send>>;

impl MetaService {
    /// Opens the configured store and restores the live work from it.
    pub fn open(cfg: &MetaConfig) -> anyhow::Result<MetaService> {
        let store = Store::open(&cfg.state_dir, &cfg.store)?;
        MetaService::with_store(cfg, store)
    }

    /// Restores the live work from `store`, already open (and fenced, for a replica that has
    /// just taken the lead).
    pub fn with_store(cfg: &MetaConfig, store: Store) -> anyhow::Result<MetaService> {
        let mut cfg = cfg.clone();
        cfg.complete();
        let mut loaded = store.load()?;
        let decider = Decider::new(&cfg, loaded.last_id)?;
        let mut state = State::new(cfg.sites.clone(), cfg.max_priority(), decider);
        state.start_claims = cfg.links.start_claims;
        state.fragment_requeues = cfg.links.fragment_requeues;
        state.retention = cfg.retention.clone();
        if let Some(usage) = loaded.usage.take() {
            state.decider.restore_usage(&usage)?;
        }
        match loaded.classifier.take() {
            Some(snapshot) => state.decider.restore_classifier(&snapshot),
            None => rebuild_classifier(&store, &mut state.decider)?,
        }
        if let Some(path) = &cfg.input_log {
            let log = crate::gridlog::GridLog::open(path)
                .map_err(|e| anyhow::anyhow!("input_log: {}: {e}", path.display()))?;
            state.decider.record(log);
        }
        let history = store.reader()?;
        let restored = state.restore(loaded, now(), |id| history.job(id).ok().flatten());
        tracing::info!(
            jobs = state.jobs.len(),
            last_id = state.last_id,
            dispatch = state.decider.describe(),
            "store restored"
        );
        let mut clients = Vec::new();
        for s in &cfg.sites {
            clients.push(if s.endpoint.is_empty() {
                None
            } else {
                // HTTP/2 pings detect a silent peer (a partitioned site: no reset, packets just
                // vanish) while the event stream is idle.
                let ka = Duration::from_millis(cfg.links.keepalive_ms);
                let ep = cfg
                    .tls
                    .endpoint(&s.endpoint)?
                    .connect_timeout(Duration::from_millis(cfg.links.call_timeout_ms))
                    .tcp_nodelay(true)
                    // Windows wide enough to read a blob from a site (a workflow node's
                    // output moved to another site) without waiting for window updates.
                    .initial_stream_window_size(gridsched_proto::blobs::WINDOW)
                    .initial_connection_window_size(2 * gridsched_proto::blobs::WINDOW)
                    .http2_keep_alive_interval(ka)
                    .keep_alive_timeout(ka * 2)
                    .keep_alive_while_idle(true);
                let fenced = gridsched_security::Fenced::new(s.token()?.as_deref(), store.epoch())?;
                Some(LocalSchedulerClient::with_interceptor(
                    ep.connect_lazy(),
                    fenced,
                ))
            });
        }
        let (events, _) = broadcast::channel(65_536);
        let (submissions, rx) = std::sync::mpsc::channel();
        let inner = Arc::new(Inner {
            state: Mutex::new(state),
            store,
            events,
            wake: cfg.sites.iter().map(|_| Notify::new()).collect(),
            clients,
            tokens: gridsched_security::Tokens::new(&cfg.auth.users)?,
            uploads: crate::inputs::Uploads::open(&cfg.inputs, &cfg.state_dir)?,
            accounts: crate::accounting::Accounts::new(cfg.fairshare.as_ref()),
            rate: crate::rate::Buckets::new(cfg.submit_rate.clone()),
            cfg,
            submissions,
            origin: std::time::Instant::now(),
        });
        let weak = Arc::downgrade(&inner);
        // The committer publishes what it accepted, which may start work on the runtime (a
        // co-allocation, fragments to send): it runs inside the runtime the service started in.
        let rt = tokio::runtime::Handle::try_current().ok();
        std::thread::Builder::new()
            .name("group-commit".into())
            .spawn(move || {
                let _entered = rt.as_ref().map(|rt| rt.enter());
                group_committer(weak, rx)
            })?;
        let svc = MetaService { inner };
        // What the restore decided (a job whose dependency can no longer be met ends) is durable
        // before the service serves.
        {
            let mut st = svc.lock()?;
            svc.commit(&st, &restored)?;
            st.retire(&restored.finished, now());
        }
        Ok(svc)
    }

    /// Monotonic milliseconds since the service started: the time of the grid runner's links.
    pub(crate) fn at_ms(&self) -> u64 {
        u64::try_from(self.inner.origin.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// The epoch of the lease it leads with: the one its store is fenced with (0: a store
    /// without a lease).
    pub fn epoch(&self) -> u64 {
        self.inner.store.epoch()
    }

    /// How many jobs and job events the meta-scheduler holds in memory now.
    pub fn in_memory(&self) -> Result<(usize, usize), Status> {
        let st = self.lock()?;
        Ok((st.jobs.len(), st.events.len()))
    }

    /// The caller of a request (`None` when authentication is off).
    pub(crate) fn caller<T>(
        &self,
        request: &Request<T>,
    ) -> Result<Option<gridsched_security::Caller>, Status> {
        self.inner.tokens.caller(request.metadata())
    }

    pub(crate) fn lock(&self) -> Result<std::sync::MutexGuard<'_, State>, Status> {
        self.inner
            .state
            .lock()
            .map_err(|_| internal("state lock poisoned"))
    }

    /// Takes one submission of `spec`'s owner from the door's rate, or the refusal.
    fn within_rate(&self, spec: Option<&v1::JobSpec>) -> Result<(), v1::SubmitError> {
        if !self.inner.rate.on() {
            return Ok(());
        }
        let user = spec.map_or("", |s| s.user.as_str());
        let ms = self.inner.origin.elapsed().as_millis() as u64;
        self.inner.rate.take(user, ms).map_err(|t| v1::SubmitError {
            code: tonic::Code::ResourceExhausted as i32,
            field: Some("user".into()),
            message: format!("field `user`: {}", self.inner.rate.refusal(user, t)),
        })
    }

    /// Commits what `b` changed in `st`.
    fn commit(&self, st: &State, b: &Batch) -> Result<(), Status> {
        if b.jobs.is_empty() && b.tokens.is_empty() && b.site_seqs.is_empty() {
            return Ok(());
        }
        let jobs: Vec<&v1::Job> = b.jobs.iter().filter_map(|id| st.jobs.get(id)).collect();
        let w = Write {
            // A finished job's record: the store keeps the first it is given.
            records: jobs
                .iter()
                .filter_map(|j| crate::accounting::record(j, &self.inner.accounts))
                .collect(),
            jobs,
            tokens: b.tokens.clone(),
            last_id: st.last_id,
            last_sequence: st.last_sequence,
            decisions: b
                .decisions
                .iter()
                .filter_map(|id| st.decisions.get(id).map(|d| (*id, d)))
                .collect(),
            site_seqs: b
                .site_seqs
                .iter()
                .map(|&i| (st.sites[i].name.as_str(), st.site_seq[i]))
                .collect(),
            classifier: b.classified.then(|| st.decider.classifier_snapshot()),
            usage: b.charged.then(|| st.decider.usage_snapshot()).flatten(),
        };
        self.inner.store.commit(&w).map_err(Status::from)
    }

    /// Publishes the events of a committed batch and wakes the sites that have work; starts the
    /// site calls and sends it decided (the reservations of a committed co-allocation marked
    /// HELD before its fragments go out).
    fn publish(&self, b: Batch) {
        for ev in b.events {
            let _ = self.inner.events.send(ev);
        }
        for i in b.wake {
            self.inner.wake[i].notify_one();
        }
        if !b.held.is_empty()
            && let Err(e) = self.hold_for_good(&b.held)
        {
            // Not HELD: they stay PENDING (taken back after a restart).
            tracing::error!("co-allocated reservations not marked held: {e}");
        }
        self.start_split_work(b.calls, b.send_fragments, b.kill_fragments, b.retries);
        self.start_stops(b.stops);
        self.forget_reservations(&b.dropped_reservations);
        for (id, site) in b.take_back {
            tokio::spawn(self.clone().take_back(id, site));
        }
        for (site, jobs) in b.reprioritize {
            tokio::spawn(self.clone().reprioritize(site, jobs));
        }
    }

    /// Gives site `i` the priorities of its queued jobs after a fair-share recalculation. Not
    /// retried: the next recalculation sends every one again.
    async fn reprioritize(self, i: usize, jobs: Vec<v1::JobPriority>) {
        let Ok(mut c) = self.client(i) else { return };
        let req = v1::ReprioritizeRequest { jobs };
        if let Err(e) = self.call(c.reprioritize(req)).await {
            tracing::warn!(site = i, "new priorities not given: {e}");
        }
    }

    /// Runs `f` on the state and commits what it changed in one transaction, then publishes.
    /// When the commit fails the change stays in memory (it is written with the next commit) and
    /// the caller gets INTERNAL.
    pub(crate) fn mutate<R>(
        &self,
        f: impl FnOnce(&mut State, &mut Batch, i64) -> Result<R, Status>,
    ) -> Result<R, Status> {
        let t = now();
        let mut b = Batch::default();
        let mut st = self.lock()?;
        let r = f(&mut st, &mut b, t)?;
        st.settle(&mut b, t);
        self.commit(&st, &b)?;
        st.retire(&b.finished, t);
        drop(st);
        self.publish(b);
        Ok(r)
    }

    /// Accepts a batch of specs in one durable transaction; one result per spec.
    pub fn accept(&self, specs: Vec<Option<v1::JobSpec>>) -> Result<Vec<v1::SubmitResult>, Status> {
        let t = now();
        let mut b = Batch::default();
        let mut st = self.lock()?;
        let mut results = Vec::with_capacity(specs.len());
        let mut new_ids = Vec::new();
        let mut reader = None;
        for (index, spec) in specs.into_iter().enumerate() {
            let index = index as u32;
            let reject = |field: &str, message: &str| v1::SubmitResult {
                index,
                outcome: Some(v1::submit_result::Outcome::Rejected(v1::SubmitError {
                    code: tonic::Code::InvalidArgument as i32,
                    field: Some(field.to_owned()),
                    message: format!("field `{field}`: {message}"),
                })),
            };
            let checked = match spec.as_ref() {
                Some(s) if s.workflow.is_some() => {
                    validate::check_workflow(s, &self.inner.cfg.limits)
                }
                s => validate::check(s, &self.inner.cfg.limits),
            };
            if let Err(r) = checked {
                results.push(reject(&r.field, &r.message));
                continue;
            }
            let mut spec = spec.unwrap_or_default();
            if let Err(r) = self.inner.uploads.resolve(&mut spec) {
                results.push(reject(&r.field, &r.message));
                continue;
            }
            if let Some(message) = self.inner.cfg.urgent.refusal(&spec) {
                results.push(v1::SubmitResult {
                    index,
                    outcome: Some(v1::submit_result::Outcome::Rejected(v1::SubmitError {
                        code: tonic::Code::PermissionDenied as i32,
                        field: Some("urgency".into()),
                        message,
                    })),
                });
                continue;
            }
            let key = spec
                .client_token
                .as_ref()
                .map(|t| format!("{}\0{t}", spec.user));
            if let Some(k) = &key
                && let Some(job) = self.token_job(&st, &mut reader, k)?
            {
                results.push(accepted(index, &job, true));
                continue;
            }
            if spec.workflow.is_some() {
                match self.accept_workflow(&mut st, &mut b, &mut reader, spec, t)? {
                    Ok(id) => {
                        if let Some(k) = key {
                            st.tokens.insert(k.clone(), id);
                            b.tokens.push((k, id));
                        }
                        results.push(accepted(index, &st.jobs[&id], false));
                        new_ids.push(id);
                    }
                    Err(e) => results.push(v1::SubmitResult {
                        index,
                        outcome: Some(v1::submit_result::Outcome::Rejected(e)),
                    }),
                }
                continue;
            }
            let id = st.last_id + 1;
            let mut model = match st.decider.job(&spec, id, t) {
                Ok(m) => m,
                Err(e) => {
                    results.push(reject(e.field(), e.reason()));
                    continue;
                }
            };
            if let Some(refused) = self.predecessors(&st, &mut reader, &mut model, t)? {
                results.push(v1::SubmitResult {
                    index,
                    outcome: Some(v1::submit_result::Outcome::Rejected(refused)),
                });
                continue;
            }
            let job = v1::Job {
                id,
                state: JobState::Accepted.into(),
                submit_time: Some(t),
                spec: Some(spec),
                array: model
                    .array
                    .as_deref()
                    .map(crate::state::arrays::fresh_progress),
                ..Default::default()
            };
            // An array's tasks take the ids after it.
            let last = model.array.as_ref().map_or(id, |a| a.last_id(JobId(id)).0);
            if let Err(refused) = st.add(&mut b, job, &model, t) {
                results.push(v1::SubmitResult {
                    index,
                    outcome: Some(v1::submit_result::Outcome::Rejected(refused)),
                });
                continue;
            }
            st.last_id = last;
            if let Some(k) = key {
                st.tokens.insert(k.clone(), id);
                b.tokens.push((k, id));
            }
            results.push(accepted(index, &st.jobs[&id], false));
            new_ids.push(id);
        }
        st.settle(&mut b, t);
        if let Err(e) = self.commit(&st, &b) {
            // Not durable: forget the jobs so nothing unacknowledged stays visible.
            for id in &new_ids {
                let _ = st.update(&mut Batch::default(), *id, t, |j| {
                    j.state = JobState::Failed.into();
                    Some(String::new())
                });
                st.jobs.remove(id);
                st.decisions.remove(id);
            }
            for (k, _) in &b.tokens {
                st.tokens.remove(k);
            }
            return Err(e);
        }
        st.retire(&b.finished, t);
        drop(st);
        self.publish(b);
        Ok(results)
    }

    /// The store's reader of an `accept`, opened on first use.
    pub(crate) fn reader<'r>(
        &self,
        reader: &'r mut Option<crate::store::Reader>,
    ) -> Result<&'r crate::store::Reader, Status> {
        if reader.is_none() {
            *reader = Some(self.inner.store.reader().map_err(Status::from)?);
        }
        Ok(reader.as_ref().expect("opened"))
    }

    /// Looks up the jobs `job` waits for (in memory, else in the store's history, through
    /// `reader`): one that has ended gets how and when written into its term (the grid runner
    /// keeps only the jobs it has; `now` stands for an end time not recorded); one that does not
    /// exist refuses the submission (NOT_FOUND, field `after`).
    fn predecessors(
        &self,
        st: &State,
        reader: &mut Option<crate::store::Reader>,
        job: &mut gridsched_core::model::Job,
        now: i64,
    ) -> Result<Option<v1::SubmitError>, Status> {
        let Some(dep) = job.after.as_deref_mut() else {
            return Ok(None);
        };
        for term in &mut dep.terms {
            let id = term.job.0;
            let found = match st.jobs.get(&id) {
                Some(j) => Some(j.clone()),
                None => self.reader(reader)?.job(id).map_err(Status::from)?,
            };
            match found {
                None => {
                    return Ok(Some(v1::SubmitError {
                        code: tonic::Code::NotFound as i32,
                        field: Some("after".into()),
                        message: format!("field `after`: job {id} does not exist"),
                    }));
                }
                Some(j) if j.state().is_terminal() => {
                    term.ended = Some(crate::state::ended_of(&j, now));
                }
                Some(_) => {}
            }
        }
        Ok(None)
    }

    /// The job an idempotency key was given to: in memory, else in the store (a finished job
    /// past its retention), read through `reader` (opened on first use).
    fn token_job(
        &self,
        st: &State,
        reader: &mut Option<crate::store::Reader>,
        key: &str,
    ) -> Result<Option<v1::Job>, Status> {
        if let Some(id) = st.tokens.get(key) {
            return Ok(st.jobs.get(id).cloned());
        }
        let r = self.reader(reader)?;
        match r.token(key).map_err(Status::from)? {
            Some(id) => r.job(id).map_err(Status::from),
            None => Ok(None),
        }
    }

    /// With users configured, whether the caller may see every job `spec` waits for (a job it
    /// may not see is PERMISSION_DENIED, naming `field`). Unreadable dependencies and unknown
    /// jobs are left to the submission's own checks.
    fn may_wait_for(
        &self,
        spec: Option<&v1::JobSpec>,
        caller: Option<&gridsched_security::Caller>,
        field: &str,
    ) -> Result<(), Status> {
        let (Some(caller), Some(text)) = (caller, spec.and_then(|s| s.after.as_deref())) else {
            return Ok(());
        };
        let name = spec.and_then(|s| s.name.as_deref());
        let Ok(dep) = gridsched_core::model::Dependency::parse(text, name) else {
            return Ok(());
        };
        for t in &dep.terms {
            match self.visible_job(t.job.0, Some(caller)) {
                Err(e) if e.code() == tonic::Code::PermissionDenied => {
                    return Err(Status::permission_denied(format!(
                        "field `{field}`: job {} belongs to another user",
                        t.job
                    )));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// What keeps job `id` waiting in the grid: a task not yet released, its array; else what it
    /// waits for of its dependency, each job with where it stands ("afterok; 12 is RUNNING at
    /// beta").
    fn waiting_blockers(&self, id: u64) -> Result<Vec<v1::Blocker>, Status> {
        let st = self.lock()?;
        let runner = st.decider.runner();
        if let Some(task) = runner.unreleased(gridsched_core::model::JobId(id)) {
            return Ok(vec![v1::Blocker {
                kind: v1::BlockerKind::Array.into(),
                resource: None,
                job_id: Some(task.array.0),
                detail: format!(
                    "array {} to release it: {}",
                    task.array,
                    st.release_wait(task)
                ),
            }]);
        }
        let mut out: Vec<v1::Blocker> = (runner.waiting_on(gridsched_core::model::JobId(id)))
            .into_iter()
            .map(|(j, on)| {
                let stands = match st.jobs.get(&j.0) {
                    Some(p) => {
                        let at = p
                            .site
                            .as_ref()
                            .map_or(String::new(), |s| format!(" at {s}"));
                        format!("{j} is {}{at}", crate::explain::state_name(p.state()))
                    }
                    None => format!("{j} is gone"),
                };
                v1::Blocker {
                    kind: v1::BlockerKind::Dependency.into(),
                    resource: None,
                    job_id: Some(j.0),
                    detail: format!("job {j} ({}; {stands})", on.as_str()),
                }
            })
            .collect();
        if let Some(name) = runner.singleton_behind(gridsched_core::model::JobId(id)) {
            out.push(v1::Blocker {
                kind: v1::BlockerKind::Dependency.into(),
                resource: None,
                job_id: None,
                detail: format!("the earlier `{name}` jobs of its user (singleton)"),
            });
        }
        Ok(out)
    }

    /// One page of array `array`'s tasks after id `after`, by id: their records (in memory, else
    /// the store's), a task not yet released as it waits; the token of the next page.
    fn array_tasks(
        &self,
        array: u64,
        caller: Option<&gridsched_security::Caller>,
        filter: &Filter,
        after: u64,
        limit: usize,
    ) -> Result<(Vec<v1::Job>, String), Status> {
        let st = self.lock()?;
        let mut reader = None;
        let record = match st.jobs.get(&array) {
            Some(j) => Some(j.clone()),
            None => self.reader(&mut reader)?.job(array).map_err(Status::from)?,
        };
        let spec = record.as_ref().and_then(crate::state::arrays::spec_of);
        let (Some(record), Some(spec)) = (record, spec) else {
            return Err(Status::not_found(format!("job {array} is not an array")));
        };
        access::check_job(caller, &record)?;
        let last = spec.last_id(JobId(array)).0;
        let mut jobs = Vec::new();
        let mut id = after.max(array);
        while id < last && jobs.len() < limit {
            id += 1;
            let job = match st.jobs.get(&id) {
                Some(j) => Some(st.shown(j)),
                None => match st.unreleased_view(id) {
                    Some(j) => Some(j),
                    None => self.reader(&mut reader)?.job(id).map_err(Status::from)?,
                },
            };
            if let Some(j) = job.filter(|j| filter.matches(j)) {
                jobs.push(j);
            }
        }
        let next = if id < last {
            id.to_string()
        } else {
            String::new()
        };
        Ok((jobs, next))
    }

    /// Job `id` as the caller may see it, from memory or else from the store's history, with
    /// how it was decided.
    pub(crate) fn visible_job(
        &self,
        id: u64,
        caller: Option<&gridsched_security::Caller>,
    ) -> Result<(v1::Job, crate::state::Decision, Option<usize>), Status> {
        {
            let st = self.lock()?;
            if st.jobs.contains_key(&id) {
                let job = access::visible_job(&st, id, caller)?;
                let site = st.site_of(&job);
                return Ok((
                    job,
                    st.decisions.get(&id).cloned().unwrap_or_default(),
                    site,
                ));
            }
            if let Some(job) = st.unreleased_view(id) {
                access::check_job(caller, &job)?;
                return Ok((job, Default::default(), None));
            }
        }
        // Not in memory: finished and past its retention (it never comes back), or unknown.
        let r = self.inner.store.reader().map_err(Status::from)?;
        let job = r
            .job(id)
            .map_err(Status::from)?
            .ok_or_else(|| Status::not_found(format!("job {id} not found")))?;
        access::check_job(caller, &job)?;
        let decision = r.decision(id).map_err(Status::from)?.unwrap_or_default();
        Ok((job, decision, None))
    }

    /// The index of the site named `name`.
    pub(crate) fn site_index(&self, name: &str) -> Option<usize> {
        self.inner.cfg.sites.iter().position(|s| s.name == name)
    }

    /// The name of site `i`.
    pub(crate) fn site_name(&self, i: usize) -> String {
        self.inner.cfg.sites[i].name.clone()
    }

    /// A client of site `i`'s local scheduler, or UNAVAILABLE.
    pub(crate) fn client(&self, i: usize) -> Result<LocalClient, Status> {
        self.inner.clients[i]
            .clone()
            .ok_or_else(|| Status::unavailable("the site has no local-scheduler endpoint"))
    }

    /// One call to a local scheduler, bounded by the configured timeout.
    pub(crate) async fn call<T>(
        &self,
        fut: impl std::future::Future<Output = Result<Response<T>, Status>>,
    ) -> Result<T, Status> {
        let d = Duration::from_millis(self.inner.cfg.links.call_timeout_ms);
        match tokio::time::timeout(d, fut).await {
            Ok(r) => r.map(Response::into_inner),
            Err(_) => Err(Status::unavailable(
                "the local scheduler did not answer in time",
            )),
        }
    }

    /// Cancels array `id`, whose tasks not ended are `tasks`: it releases no more, then each is
    /// cancelled (one that ended meanwhile is left as it is). The array ends with its last task.
    async fn cancel_array(
        &self,
        id: u64,
        tasks: Vec<u64>,
        reason: String,
    ) -> Result<v1::Job, Status> {
        let said = if reason.is_empty() {
            "cancelled by request".to_string()
        } else {
            reason.clone()
        };
        self.mutate(|st, b, t| {
            st.update(b, id, t, |j| {
                (!j.state().is_terminal())
                    .then(|| format!("cancellation requested ({said}): no more tasks released"))
            });
            st.drive(b, t, gridsched_core::grid::Input::Cancel { job: JobId(id) });
            Ok(())
        })?;
        for task in tasks {
            match self.cancel(task, reason.clone()).await {
                Ok(_) => {}
                Err(e) if e.code() == tonic::Code::FailedPrecondition => {}
                Err(e) => return Err(e),
            }
        }
        let st = self.lock()?;
        st.jobs
            .get(&id)
            .map(|j| st.shown(j))
            .ok_or_else(|| internal("array vanished"))
    }

    /// Cancels job `id` as `CancelJob` does: an array with its tasks out, a task not yet
    /// released, a workflow with its running nodes, or one job.
    pub(crate) async fn cancel_by_request(
        &self,
        id: u64,
        reason: String,
    ) -> Result<v1::Job, Status> {
        let (tasks, unreleased, workflow) = {
            let st = self.lock()?;
            let runner = st.decider.runner();
            let unreleased = runner.unreleased(JobId(id)).is_some();
            let workflow = runner.workflow(JobId(id)).is_some();
            (st.open_tasks(id), unreleased, workflow)
        };
        let said = match reason.as_str() {
            "" => "cancelled by request",
            r => r,
        };
        match tasks {
            Some(tasks) => self.cancel_array(id, tasks, reason).await,
            None if workflow => self.cancel_workflow(id, said),
            // A task not yet released: it gets its record, CANCELLED, and is never released.
            None if unreleased => self
                .mutate(|st, b, t| Ok(st.cancel_unreleased(b, id, t, said)))?
                .ok_or_else(|| Status::failed_precondition(format!("job {id} was released"))),
            None => self.cancel(id, reason).await,
        }
    }

    /// Cancels job `id` (see `CancelJob`).
    async fn cancel(&self, id: u64, reason: String) -> Result<v1::Job, Status> {
        let reason = if reason.is_empty() {
            "cancelled by request".to_string()
        } else {
            reason
        };
        let (state, site, split) = {
            let st = self.lock()?;
            let Some(job) = st.jobs.get(&id) else {
                drop(st);
                // Past its retention, a job is finished: the store says how.
                let (job, _, _) = self.visible_job(id, None)?;
                return Err(Status::failed_precondition(format!(
                    "job {id} already ended ({})",
                    job.state().as_str_name()
                )));
            };
            if job.state().is_terminal() {
                return Err(Status::failed_precondition(format!(
                    "job {id} already ended ({})",
                    job.state().as_str_name()
                )));
            }
            let split = (!job.fragments.is_empty()).then(|| {
                job.fragments
                    .iter()
                    .filter(|f| !f.state().is_terminal())
                    .filter_map(|f| st.site_index(&f.site))
                    .collect::<Vec<usize>>()
            });
            (job.state(), st.site_of(job), split)
        };
        if let Some(sites) = split {
            return self.cancel_split(id, sites, reason).await;
        }
        let set = |to: JobState, detail: String| {
            let reason = reason.clone();
            self.mutate(move |st, b, t| {
                st.update(b, id, t, |j| {
                    if j.state().is_terminal() {
                        return None;
                    }
                    if to.is_terminal() {
                        j.state = to.into();
                        j.end_time = Some(t);
                        j.reason = reason;
                    }
                    Some(detail)
                });
                st.jobs
                    .get(&id)
                    .cloned()
                    .ok_or_else(|| internal("job vanished"))
            })
        };
        match (state, site) {
            // Not at a site yet (or its Enqueue in flight: the forwarder cancels it there once
            // the Enqueue is answered).
            (JobState::Accepted | JobState::Dispatched, _) | (_, None) => {
                set(JobState::Cancelled, reason.clone())
            }
            (_, Some(i)) => {
                let name = self.inner.cfg.sites[i].name.clone();
                let mut c = self.client(i)?;
                // The request is kept before the site is asked: were the site's answer lost and
                // the job withdrawn from it, the job is sent nowhere again.
                let asked = reason.clone();
                self.mutate(move |st, b, t| {
                    st.update(b, id, t, |j| {
                        (!j.state().is_terminal() && j.cancel_requested.is_none()).then(|| {
                            j.cancel_requested = Some(asked);
                            format!("cancellation asked of {name}")
                        })
                    });
                    Ok(())
                })?;
                let name = self.inner.cfg.sites[i].name.clone();
                let req = v1::CancelRequest {
                    job_id: id,
                    reason: reason.clone(),
                    run: None,
                };
                match self.call(c.cancel(req)).await {
                    Ok(r) if r.state() == JobState::Running => set(
                        JobState::Running,
                        format!("cancellation requested: {name} kills the job"),
                    ),
                    Ok(r) if r.state().is_terminal() => set(r.state(), reason.clone()),
                    Ok(r) => Err(internal(format!(
                        "{name} answered the cancellation with state {}",
                        r.state().as_str_name()
                    ))),
                    Err(e) if e.code() == tonic::Code::NotFound => {
                        set(JobState::Cancelled, reason.clone())
                    }
                    Err(e) => Err(Status::unavailable(format!(
                        "site {name} cannot be reached to cancel job {id}: {}",
                        e.message()
                    ))),
                }
            }
        }
    }
}

/// Rebuilds the classifier of a store written before it kept the classifier's snapshot: the
/// newest jobs with a deadline, as many as its window holds, classified again oldest first (the
/// window is all the classifier remembers; jobs without a deadline leave it as it is).
fn rebuild_classifier(store: &Store, decider: &mut Decider) -> anyhow::Result<()> {
    let window = decider.classifier_window();
    let mut models = Vec::new();
    store.reader()?.newest_first(&mut |job: v1::Job| {
        let spec = job.spec.clone().unwrap_or_default();
        if let Ok(m) = decider.job(&spec, job.id, job.submit_time.unwrap_or_default())
            && m.deadline.is_some()
        {
            models.push(m);
        }
        models.len() < window
    })?;
    for m in models.iter().rev() {
        decider.classify_again(m);
    }
    Ok(())
}

/// How many finished jobs of the store one list page looks at, at most: a page of a rare match
/// ends early (with a token to go on) rather than walk the whole history.
const LIST_BUDGET: usize = 20_000;

fn accepted(index: u32, job: &v1::Job, duplicate: bool) -> v1::SubmitResult {
    v1::SubmitResult {
        index,
        outcome: Some(v1::submit_result::Outcome::Accepted(v1::SubmitResponse {
            job_id: job.id,
            state: job.state,
            priority: job.priority,
            duplicate,
        })),
    }
}

fn watch_matches(req: &v1::WatchRequest, st: &State, store: &Store, ev: &v1::JobEvent) -> bool {
    (req.job_ids.is_empty()
        || req.job_ids.contains(&ev.job_id)
        || ev.array_id.is_some_and(|a| req.job_ids.contains(&a))
        || ev.workflow_id.is_some_and(|w| req.job_ids.contains(&w)))
        && req.user.as_ref().is_none_or(|u| {
            let user = |j: &v1::Job| j.spec.as_ref().is_some_and(|s| &s.user == u);
            match st.jobs.get(&ev.job_id) {
                Some(j) => user(j),
                // Finished and gone from memory: the store has it.
                None => store
                    .reader()
                    .and_then(|r| r.job(ev.job_id))
                    .ok()
                    .flatten()
                    .is_some_and(|j| user(&j)),
            }
        })
}

#[tonic::async_trait]
impl MetaScheduler for MetaService {
    async fn submit(
        &self,
        request: Request<v1::SubmitRequest>,
    ) -> Result<Response<v1::SubmitResponse>, Status> {
        let caller = self.caller(&request)?;
        let mut spec = request.into_inner().spec;
        access::own_spec(caller.as_ref(), &mut spec, "spec.user")?;
        self.may_wait_for(spec.as_ref(), caller.as_ref(), "spec.after")?;
        if let Err(e) = self.within_rate(spec.as_ref()) {
            return Err(Status::new(tonic::Code::from(e.code), e.message));
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.inner
            .submissions
            .send((spec, tx))
            .map_err(|_| Status::unavailable("the meta-scheduler is shutting down"))?;
        let result = rx
            .await
            .map_err(|_| Status::unavailable("the meta-scheduler is shutting down"))??;
        match result.outcome {
            Some(v1::submit_result::Outcome::Accepted(a)) => Ok(Response::new(a)),
            Some(v1::submit_result::Outcome::Rejected(e)) => {
                Err(Status::new(tonic::Code::from(e.code), e.message))
            }
            None => Err(internal("no result")),
        }
    }

    async fn submit_batch(
        &self,
        request: Request<Streaming<v1::SubmitRequest>>,
    ) -> Result<Response<v1::SubmitBatchResponse>, Status> {
        let caller = self.caller(&request)?;
        let mut stream = request.into_inner();
        let mut specs = Vec::new();
        while let Some(req) = stream.next().await {
            let mut spec = req?.spec;
            let field = format!("requests[{}].spec.user", specs.len());
            access::own_spec(caller.as_ref(), &mut spec, &field)?;
            let field = format!("requests[{}].spec.after", specs.len());
            self.may_wait_for(spec.as_ref(), caller.as_ref(), &field)?;
            specs.push(spec);
        }
        // The jobs over their owner's rate are refused here, the others accepted together.
        let mut refused = Vec::new();
        let mut taken = Vec::with_capacity(specs.len());
        let mut index = Vec::with_capacity(specs.len());
        for (i, spec) in specs.into_iter().enumerate() {
            match self.within_rate(spec.as_ref()) {
                Ok(()) => {
                    index.push(i as u32);
                    taken.push(spec);
                }
                Err(e) => refused.push(v1::SubmitResult {
                    index: i as u32,
                    outcome: Some(v1::submit_result::Outcome::Rejected(e)),
                }),
            }
        }
        let mut results = if taken.is_empty() {
            Vec::new()
        } else {
            self.accept(taken)?
        };
        if !refused.is_empty() {
            for r in &mut results {
                r.index = index[r.index as usize];
            }
            results.extend(refused);
            results.sort_by_key(|r| r.index);
        }
        Ok(Response::new(v1::SubmitBatchResponse { results }))
    }

    async fn get_job(
        &self,
        request: Request<v1::GetJobRequest>,
    ) -> Result<Response<v1::GetJobResponse>, Status> {
        let caller = self.caller(&request)?;
        let id = request.into_inner().job_id;
        let (job, _, _) = self.visible_job(id, caller.as_ref())?;
        Ok(Response::new(v1::GetJobResponse { job: Some(job) }))
    }

    async fn list_jobs(
        &self,
        request: Request<v1::ListJobsRequest>,
    ) -> Result<Response<v1::ListJobsResponse>, Status> {
        let caller = self.caller(&request)?;
        let mut req = request.into_inner();
        req.user = access::user_filter(caller.as_ref(), req.user.take())?;
        let after: u64 = if req.page_token.is_empty() {
            0
        } else {
            req.page_token
                .parse()
                .map_err(|_| Status::invalid_argument("field `page_token`: not a token of ours"))?
        };
        let limit = match req.limit {
            0 => 100,
            n => n.min(1000),
        } as usize;
        let filter = Filter {
            states: &req.states,
            user: req.user.as_deref(),
            site: req.site.as_deref(),
            cluster: req.cluster.as_deref(),
            tasks: req.tasks || req.array.is_some(),
        };
        if let Some(array) = req.array {
            let (jobs, next_page_token) =
                self.array_tasks(array, caller.as_ref(), &filter, after, limit)?;
            return Ok(Response::new(v1::ListJobsResponse {
                jobs,
                next_page_token,
            }));
        }
        // Memory and the store's view are taken together: a finished job leaves memory only
        // after its end is committed, so it is in one or the other.
        let (memory, reader) = {
            let st = self.lock()?;
            let memory: Vec<v1::Job> = st
                .jobs
                .range(after.saturating_add(1)..)
                .map(|(_, j)| j)
                .filter(|j| filter.matches(j))
                .take(limit + 1)
                .map(|j| st.shown(j))
                .collect();
            (memory, self.inner.store.reader().map_err(Status::from)?)
        };
        let stored = reader
            .finished(&filter, after, limit + 1, LIST_BUDGET)
            .map_err(Status::from)?;
        let (jobs, next_page_token) =
            crate::history::merge_page(memory, stored.jobs, stored.looked_to, limit);
        Ok(Response::new(v1::ListJobsResponse {
            jobs,
            next_page_token,
        }))
    }

    async fn cancel_job(
        &self,
        request: Request<v1::CancelJobRequest>,
    ) -> Result<Response<v1::CancelJobResponse>, Status> {
        let caller = self.caller(&request)?;
        let req = request.into_inner();
        self.visible_job(req.job_id, caller.as_ref())?;
        let job = self.cancel_by_request(req.job_id, req.reason).await?;
        tracing::info!(job = job.id, state = job.state().as_str_name(), "cancel");
        Ok(Response::new(v1::CancelJobResponse { job: Some(job) }))
    }

    type WatchStream = EventStream;

    async fn watch(
        &self,
        request: Request<v1::WatchRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let caller = self.caller(&request)?;
        let mut req = request.into_inner();
        req.user = access::user_filter(caller.as_ref(), req.user.take())?;
        let (backlog, rx, last) = {
            let st = self.lock()?;
            let rx = self.inner.events.subscribe();
            let mut backlog = Vec::new();
            if let Some(from) = req.from_sequence {
                let first = st
                    .events
                    .front()
                    .map_or(st.last_sequence + 1, |e| e.sequence);
                if from < first && from <= st.last_sequence {
                    return Err(Status::out_of_range(format!(
                        "event {from} is no longer retained (first retained: {first})"
                    )));
                }
                backlog = st
                    .events
                    .iter()
                    .filter(|e| {
                        e.sequence >= from && watch_matches(&req, &st, &self.inner.store, e)
                    })
                    .cloned()
                    .collect();
            }
            (backlog, rx, st.last_sequence)
        };
        let me = self.clone();
        let live = tokio_stream::wrappers::BroadcastStream::new(rx).filter_map(move |r| match r {
            Ok(ev) if ev.sequence > last => {
                let st = me.inner.state.lock().ok()?;
                watch_matches(&req, &st, &me.inner.store, &ev).then_some(Ok(ev))
            }
            Ok(_) => None,
            Err(_) => Some(Err(Status::data_loss("watcher fell behind; resynchronise"))),
        });
        let stream = tokio_stream::iter(backlog.into_iter().map(Ok)).chain(live);
        Ok(Response::new(Box::pin(stream)))
    }

    async fn list_sites(
        &self,
        request: Request<v1::ListSitesRequest>,
    ) -> Result<Response<v1::ListSitesResponse>, Status> {
        self.caller(&request)?;
        let req = request.into_inner();
        let (mut sites, max_priority, policy) = {
            let st = self.lock()?;
            if let Some(s) = &req.site
                && st.site_index(s).is_none()
            {
                return Err(Status::not_found(format!("site `{s}` not found")));
            }
            let arrays = st.decider.arrays();
            let n = st.max_priority as usize;
            let sites: Vec<(usize, v1::SiteState)> = (0..st.sites.len())
                .filter(|&i| req.site.as_ref().is_none_or(|s| &st.sites[i].name == s))
                .map(|i| {
                    let s = &st.sites[i];
                    // Strategies without Load / Ordering arrays (the brokers, job sharing) show
                    // zeros.
                    let a = arrays.get(i);
                    let load = (1..=n)
                        .map(|p| a.and_then(|a| a.load.get(p)).copied().unwrap_or(0))
                        .map(|v| u64::try_from(v).unwrap_or(0))
                        .collect();
                    let count = (1..=n)
                        .map(|p| a.and_then(|a| a.count.get(p)).copied().unwrap_or(0))
                        .map(|v| u32::try_from(v).unwrap_or(0))
                        .collect();
                    let state = v1::SiteState {
                        name: s.name.clone(),
                        clusters: vec![v1::ClusterState {
                            name: s.name.clone(),
                            site: s.name.clone(),
                            endpoint: s.endpoint.clone(),
                            reachable: st.reachable[i],
                            load,
                            count,
                            ..Default::default()
                        }],
                    };
                    (i, state)
                })
                .collect();
            (sites, st.max_priority, st.decider.describe().to_owned())
        };
        if req.include_resources {
            for (i, s) in &mut sites {
                let Ok(mut c) = self.client(*i) else { continue };
                if let Ok(status) = self.call(c.status(v1::StatusRequest {})).await {
                    let cl = &mut s.clusters[0];
                    cl.machines = status.machines;
                    cl.licence_pools = status.licence_pools;
                    cl.local_policy = status.policy;
                    cl.users = status.users;
                }
            }
        }
        Ok(Response::new(v1::ListSitesResponse {
            sites: sites.into_iter().map(|(_, s)| s).collect(),
            max_priority,
            dispatch_policy: policy,
        }))
    }

    async fn reserve(
        &self,
        request: Request<v1::ReserveRequest>,
    ) -> Result<Response<v1::ReserveResponse>, Status> {
        let caller = self.caller(&request)?;
        let req = request.into_inner();
        MetaService::reserve(self, caller.as_ref(), req)
            .await
            .map(Response::new)
    }

    async fn list_reservations(
        &self,
        request: Request<v1::ListReservationsRequest>,
    ) -> Result<Response<v1::ListReservationsResponse>, Status> {
        let caller = self.caller(&request)?;
        let req = request.into_inner();
        MetaService::list_reservations(self, caller.as_ref(), req).map(Response::new)
    }

    async fn cancel_reservation(
        &self,
        request: Request<v1::CancelReservationRequest>,
    ) -> Result<Response<v1::CancelReservationResponse>, Status> {
        let caller = self.caller(&request)?;
        let req = request.into_inner();
        MetaService::cancel_reservation(self, caller.as_ref(), req)
            .await
            .map(Response::new)
    }

    type OutputStream = crate::output::OutputStream;

    async fn output(
        &self,
        request: Request<v1::OutputRequest>,
    ) -> Result<Response<Self::OutputStream>, Status> {
        let caller = self.caller(&request)?;
        crate::output::output(self, caller, request.into_inner())
            .await
            .map(Response::new)
    }

    async fn upload(
        &self,
        request: Request<Streaming<v1::BlobChunk>>,
    ) -> Result<Response<v1::UploadResponse>, Status> {
        let caller = self.caller(&request)?;
        let user = caller.map_or_else(|| "anyone".to_owned(), |c| c.user);
        self.inner
            .uploads
            .upload(&user, request.into_inner())
            .await
            .map(Response::new)
    }

    async fn usage(
        &self,
        request: Request<v1::UsageRequest>,
    ) -> Result<Response<v1::UsageResponse>, Status> {
        let caller = self.caller(&request)?;
        crate::reports::usage(
            self.inner.store(),
            caller.as_ref(),
            request.into_inner(),
            now(),
        )
        .map(Response::new)
    }

    async fn history(
        &self,
        request: Request<v1::HistoryRequest>,
    ) -> Result<Response<v1::HistoryResponse>, Status> {
        let caller = self.caller(&request)?;
        crate::reports::history(
            self.inner.store(),
            caller.as_ref(),
            request.into_inner(),
            now(),
        )
        .map(Response::new)
    }

    async fn list_output_files(
        &self,
        request: Request<v1::ListOutputFilesRequest>,
    ) -> Result<Response<v1::ListOutputFilesResponse>, Status> {
        let caller = self.caller(&request)?;
        crate::output::list_files(self, caller, request.into_inner())
            .await
            .map(Response::new)
    }

    async fn explain(
        &self,
        request: Request<v1::ExplainRequest>,
    ) -> Result<Response<v1::ExplainResponse>, Status> {
        let caller = self.caller(&request)?;
        let id = request.into_inner().job_id;
        let (job, decision, site) = self.visible_job(id, caller.as_ref())?;
        let local = match (site, job.state()) {
            (Some(i), JobState::Queued | JobState::Running | JobState::Suspended) => {
                match self.client(i) {
                    Ok(mut c) => Some(self.call(c.status(v1::StatusRequest {})).await),
                    Err(e) => Some(Err(e)),
                }
            }
            _ => None,
        };
        let waits = self.waiting_blockers(id)?;
        let mut out = crate::explain::explain(&job, decision, local, waits);
        // Its uploads on their way to its site, before its Enqueue.
        if job.state() == JobState::Dispatched
            && let Some((sent, total)) = self.inner.uploads.progress(id)
        {
            let sizes: Vec<u64> = (job.spec.iter().flat_map(|s| &s.stage_in))
                .filter(|i| i.url.is_empty())
                .map(|i| i.size)
                .collect();
            let p = crate::inputs::push_progress(&sizes, sent, total);
            let at = job.site.clone().unwrap_or_default();
            out.blockers = vec![crate::explain::staging(&p, &at)];
        }
        Ok(Response::new(out))
    }
}
