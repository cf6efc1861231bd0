//! The `MetaScheduler` gRPC service (issue 5 part 1): submit (single and batch), get, list,
//! cancel, watch, sites and explain, over the in-memory [`State`] and the durable [`Store`].
//!
//! Every accepted job and state change is committed to the store before the answer is sent (a
//! batch in one transaction); events are published only after the commit. Errors follow the
//! spec's reading: INVALID_ARGUMENT naming the field, NOT_FOUND for an unknown job,
//! FAILED_PRECONDITION to cancel an ended job, OUT_OF_RANGE for a watch from a sequence no longer
//! retained (events are retained in memory, so after a restart only new ones are).

use crate::config::MetaConfig;
use crate::state::{State, classify};
use crate::store::{Store, Write};
use crate::validate;
use gridsched_proto::v1::{self, JobState, meta_scheduler_server::MetaScheduler};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast;
use tokio_stream::{Stream, StreamExt};
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
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    state: Mutex<State>,
    store: Store,
    events: broadcast::Sender<v1::JobEvent>,
}

fn internal(e: impl std::fmt::Display) -> Status {
    Status::internal(e.to_string())
}

type EventStream = Pin<Box<dyn Stream<Item = Result<v1::JobEvent, Status>> + Send>>;

impl MetaService {
    /// Opens the store in the configured state directory and restores every job from it.
    pub fn open(cfg: &MetaConfig) -> Result<MetaService, crate::store::StoreError> {
        let store = Store::open(&cfg.state_dir)?;
        let mut state = State::new(cfg.sites.clone(), cfg.max_priority);
        state.restore(store.load()?);
        tracing::info!(
            jobs = state.jobs.len(),
            last_id = state.last_id,
            "store restored"
        );
        let (events, _) = broadcast::channel(65_536);
        Ok(MetaService {
            inner: Arc::new(Inner {
                state: Mutex::new(state),
                store,
                events,
            }),
        })
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, State>, Status> {
        self.inner
            .state
            .lock()
            .map_err(|_| internal("state lock poisoned"))
    }

    /// Accepts a batch of specs in one durable transaction; one result per spec.
    pub fn accept(&self, specs: Vec<Option<v1::JobSpec>>) -> Result<Vec<v1::SubmitResult>, Status> {
        let t = now();
        let mut st = self.lock()?;
        let mut results = Vec::with_capacity(specs.len());
        let mut new_ids = Vec::new();
        let mut tokens = Vec::new();
        let mut events = Vec::new();
        for (index, spec) in specs.into_iter().enumerate() {
            let index = index as u32;
            if let Err(r) = validate::check(spec.as_ref(), &st.sites, t) {
                results.push(v1::SubmitResult {
                    index,
                    outcome: Some(v1::submit_result::Outcome::Rejected(v1::SubmitError {
                        code: tonic::Code::InvalidArgument as i32,
                        field: Some(r.field.clone()),
                        message: format!("field `{}`: {}", r.field, r.message),
                    })),
                });
                continue;
            }
            let spec = spec.unwrap_or_default();
            let key = spec
                .client_token
                .as_ref()
                .map(|t| format!("{}\0{t}", spec.user));
            if let Some(&id) = key.as_ref().and_then(|k| st.tokens.get(k)) {
                let job = &st.jobs[&id];
                results.push(accepted(index, job, true));
                continue;
            }
            let (priority, _) = classify(&spec, st.max_priority);
            let site = st.place(&spec).map(|i| st.sites[i].name.clone());
            st.last_id += 1;
            let id = st.last_id;
            let job = v1::Job {
                id,
                priority,
                state: JobState::Accepted.into(),
                site: site.clone(),
                cluster: site.clone(),
                submit_time: Some(t),
                spec: Some(spec),
                ..Default::default()
            };
            st.account(&job, true);
            let detail = format!(
                "accepted with priority {priority} for {}",
                site.unwrap_or_default()
            );
            events.push(st.event(&job, t, detail));
            if let Some(k) = key {
                st.tokens.insert(k.clone(), id);
                tokens.push((k, id));
            }
            results.push(accepted(index, &job, false));
            st.jobs.insert(id, job);
            new_ids.push(id);
        }
        if !new_ids.is_empty() {
            let w = Write {
                jobs: new_ids.iter().map(|id| &st.jobs[id]).collect(),
                tokens,
                last_id: st.last_id,
                last_sequence: st.last_sequence,
            };
            if let Err(e) = self.inner.store.commit(&w) {
                // Not durable: forget the jobs so nothing unacknowledged stays visible.
                for id in &new_ids {
                    if let Some(job) = st.jobs.remove(id) {
                        st.account(&job, false);
                    }
                }
                return Err(internal(e));
            }
        }
        drop(st);
        for ev in events {
            let _ = self.inner.events.send(ev);
        }
        Ok(results)
    }

    /// Applies a state change to a job, durably, and publishes its event.
    pub fn change(
        &self,
        id: u64,
        f: impl FnOnce(&mut v1::Job) -> Result<String, Status>,
    ) -> Result<v1::Job, Status> {
        let t = now();
        let mut st = self.lock()?;
        let mut job = st
            .jobs
            .get(&id)
            .cloned()
            .ok_or_else(|| Status::not_found(format!("job {id} not found")))?;
        let was_live = !job.state().is_terminal();
        let detail = f(&mut job)?;
        let seq_before = st.last_sequence;
        let ev = st.event(&job, t, detail);
        let w = Write {
            jobs: vec![&job],
            tokens: vec![],
            last_id: st.last_id,
            last_sequence: st.last_sequence,
        };
        if let Err(e) = self.inner.store.commit(&w) {
            st.last_sequence = seq_before;
            st.events.pop_back();
            return Err(internal(e));
        }
        if was_live && job.state().is_terminal() {
            st.account(&job, false);
        }
        st.jobs.insert(id, job.clone());
        drop(st);
        let _ = self.inner.events.send(ev);
        Ok(job)
    }
}

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

fn watch_matches(req: &v1::WatchRequest, st: &State, ev: &v1::JobEvent) -> bool {
    (req.job_ids.is_empty() || req.job_ids.contains(&ev.job_id))
        && req.user.as_ref().is_none_or(|u| {
            st.jobs
                .get(&ev.job_id)
                .and_then(|j| j.spec.as_ref())
                .is_some_and(|s| &s.user == u)
        })
}

#[tonic::async_trait]
impl MetaScheduler for MetaService {
    async fn submit(
        &self,
        request: Request<v1::SubmitRequest>,
    ) -> Result<Response<v1::SubmitResponse>, Status> {
        let spec = request.into_inner().spec;
        let mut results = self.accept(vec![spec])?;
        match results.pop().and_then(|r| r.outcome) {
            Some(v1::submit_result::Outcome::Accepted(a)) => Ok(Response::new(a)),
            Some(v1::submit_result::Outcome::Rejected(e)) => {
                Err(Status::invalid_argument(e.message))
            }
            None => Err(internal("no result")),
        }
    }

    async fn submit_batch(
        &self,
        request: Request<Streaming<v1::SubmitRequest>>,
    ) -> Result<Response<v1::SubmitBatchResponse>, Status> {
        let mut stream = request.into_inner();
        let mut specs = Vec::new();
        while let Some(req) = stream.next().await {
            specs.push(req?.spec);
        }
        let results = self.accept(specs)?;
        Ok(Response::new(v1::SubmitBatchResponse { results }))
    }

    async fn get_job(
        &self,
        request: Request<v1::GetJobRequest>,
    ) -> Result<Response<v1::GetJobResponse>, Status> {
        let id = request.into_inner().job_id;
        let st = self.lock()?;
        let job = st.jobs.get(&id).cloned();
        job.map(|job| Response::new(v1::GetJobResponse { job: Some(job) }))
            .ok_or_else(|| Status::not_found(format!("job {id} not found")))
    }

    async fn list_jobs(
        &self,
        request: Request<v1::ListJobsRequest>,
    ) -> Result<Response<v1::ListJobsResponse>, Status> {
        let req = request.into_inner();
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
        let st = self.lock()?;
        let mut jobs = Vec::new();
        let mut next_page_token = String::new();
        for (id, job) in st.jobs.range(after + 1..) {
            let ok = (req.states.is_empty() || req.states.contains(&job.state))
                && req
                    .user
                    .as_ref()
                    .is_none_or(|u| job.spec.as_ref().is_some_and(|s| &s.user == u))
                && req
                    .site
                    .as_ref()
                    .is_none_or(|s| job.site.as_ref() == Some(s))
                && req
                    .cluster
                    .as_ref()
                    .is_none_or(|c| job.cluster.as_ref() == Some(c));
            if !ok {
                continue;
            }
            if jobs.len() == limit {
                next_page_token = (id - 1).to_string();
                break;
            }
            jobs.push(job.clone());
        }
        Ok(Response::new(v1::ListJobsResponse {
            jobs,
            next_page_token,
        }))
    }

    async fn cancel_job(
        &self,
        request: Request<v1::CancelJobRequest>,
    ) -> Result<Response<v1::CancelJobResponse>, Status> {
        let req = request.into_inner();
        let t = now();
        let job = self.change(req.job_id, |job| {
            if job.state().is_terminal() {
                return Err(Status::failed_precondition(format!(
                    "job {} already ended ({})",
                    job.id,
                    job.state().as_str_name()
                )));
            }
            job.state = JobState::Cancelled.into();
            job.end_time = Some(t);
            job.reason = if req.reason.is_empty() {
                "cancelled by request".into()
            } else {
                req.reason.clone()
            };
            Ok(job.reason.clone())
        })?;
        tracing::info!(job = job.id, "cancelled");
        Ok(Response::new(v1::CancelJobResponse { job: Some(job) }))
    }

    type WatchStream = EventStream;

    async fn watch(
        &self,
        request: Request<v1::WatchRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let req = request.into_inner();
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
                    .filter(|e| e.sequence >= from && watch_matches(&req, &st, e))
                    .cloned()
                    .collect();
            }
            (backlog, rx, st.last_sequence)
        };
        let me = self.clone();
        let live = tokio_stream::wrappers::BroadcastStream::new(rx).filter_map(move |r| match r {
            Ok(ev) if ev.sequence > last => {
                let st = me.inner.state.lock().ok()?;
                watch_matches(&req, &st, &ev).then_some(Ok(ev))
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
        let req = request.into_inner();
        let st = self.lock()?;
        if let Some(s) = &req.site
            && st.site_index(s).is_none()
        {
            return Err(Status::not_found(format!("site `{s}` not found")));
        }
        let sites = (0..st.sites.len())
            .filter(|&i| req.site.as_ref().is_none_or(|s| &st.sites[i].name == s))
            .map(|i| {
                let s = &st.sites[i];
                let (load, count) = st.arrays(i);
                v1::SiteState {
                    name: s.name.clone(),
                    clusters: vec![v1::ClusterState {
                        name: s.name.clone(),
                        site: s.name.clone(),
                        endpoint: s.endpoint.clone(),
                        reachable: false,
                        load,
                        count,
                        ..Default::default()
                    }],
                }
            })
            .collect();
        Ok(Response::new(v1::ListSitesResponse {
            sites,
            max_priority: st.max_priority,
            dispatch_policy: "round-robin".into(),
        }))
    }

    async fn explain(
        &self,
        request: Request<v1::ExplainRequest>,
    ) -> Result<Response<v1::ExplainResponse>, Status> {
        let id = request.into_inner().job_id;
        let st = self.lock()?;
        let job = st
            .jobs
            .get(&id)
            .ok_or_else(|| Status::not_found(format!("job {id} not found")))?;
        let spec = job.spec.clone().unwrap_or_default();
        let (priority, parts) = classify(&spec, st.max_priority);
        let contributions = parts
            .iter()
            .map(|(h, v)| v1::PriorityContribution {
                heuristic: (*h).into(),
                value: *v,
                weight: 1.0,
            })
            .collect();
        let p = priority as usize;
        let candidates = (0..st.sites.len())
            .map(|i| {
                let (load, count) = st.arrays(i);
                let feasible = validate::site_can_run(&st.sites[i], &spec);
                v1::DispatchCandidate {
                    cluster: st.sites[i].name.clone(),
                    load: load[p - 1],
                    count: count[p - 1],
                    feasible,
                    note: if feasible {
                        String::new()
                    } else {
                        "cannot run the job".into()
                    },
                }
            })
            .collect();
        let mut blockers = Vec::new();
        if matches!(job.state(), JobState::Accepted | JobState::Dispatched) {
            blockers.push(v1::Blocker {
                kind: v1::BlockerKind::Dispatch.into(),
                detail: "not at its local scheduler yet".into(),
                ..Default::default()
            });
        }
        let text = format!(
            "job {id} is {} with priority {priority} ({}); dispatched to {} by round robin over \
             the sites able to run it",
            job.state().as_str_name(),
            parts
                .iter()
                .map(|(h, v)| format!("{h} {v}"))
                .collect::<Vec<_>>()
                .join(", "),
            job.site.as_deref().unwrap_or("no site yet"),
        );
        Ok(Response::new(v1::ExplainResponse {
            job_id: id,
            state: job.state,
            priority: Some(v1::PriorityExplanation {
                priority,
                contributions,
            }),
            dispatch: Some(v1::DispatchExplanation {
                time: job.submit_time.unwrap_or_default(),
                cluster: job.cluster.clone().unwrap_or_default(),
                decided_by: "round-robin".into(),
                candidates,
            }),
            queue_position: None,
            reservation: None,
            blockers,
            text,
        }))
    }
}
