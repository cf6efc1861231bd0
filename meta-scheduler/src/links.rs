//! The meta-scheduler's links to the local schedulers (the MS–LS protocol of spec
//! `two-level-grid-scheduler.md` D3, extended with events, polled status and start claims): per
//! site, a *follower* that streams the site's job events (`JobEvents` from the last applied
//! sequence, which is stored with the jobs it changed) and a *forwarder* that sends the site its
//! jobs (`Enqueue`); one *monitor* for the whole grid that marks a site down once it has been
//! unreachable for `links.site_down_after_ms` (its jobs that have not started there are dispatched
//! again elsewhere) and retries the jobs waiting for a site; per site a *claim link*
//! (`StartClaims`) that answers the site's start claims (see
//! [`State::claims`](crate::state::State::claims)); and, for strategies that read the sites' state,
//! a *poller* of their `Status`.
//!
//! The only upward notices the dispatch strategies see are the terminations of the event stream,
//! as in the seed's protocol (D3); a site is *reachable* while its event stream is open.

use crate::decide::load_of;
use crate::service::MetaService;
use futures_util::FutureExt;
use futures_util::stream::{self, StreamExt};
use gridsched_proto::v1::{self, JobState};
use std::time::Duration;
use tonic::Code;

/// Starts every link task of `svc` on the current Tokio runtime.
pub fn start(svc: &MetaService) {
    let n = svc.inner.cfg.sites.len();
    for i in 0..n {
        if svc.inner.clients[i].is_none() {
            continue;
        }
        tokio::spawn(follow(svc.clone(), i));
        tokio::spawn(forward(svc.clone(), i));
        tokio::spawn(claim_link(svc.clone(), i));
    }
    tokio::spawn(monitor(svc.clone()));
    let (resend, retries) = svc
        .lock()
        .map(|mut st| {
            (
                std::mem::take(&mut st.resend),
                std::mem::take(&mut st.retries_at_start),
            )
        })
        .unwrap_or_default();
    svc.start_split_work(Vec::new(), resend, Vec::new(), retries);
    tokio::spawn(poll(svc.clone()));
}

fn retry(svc: &MetaService) -> Duration {
    Duration::from_millis(svc.inner.cfg.links.retry_ms)
}

/// Tells the grid runner that site `i`'s link is open or closed (a site coming back is up
/// again, and the jobs waiting for a site are dispatched again).
fn set_reachable(svc: &MetaService, i: usize, reachable: bool) {
    let at_ms = svc.at_ms();
    let r = svc.mutate(|st, b, t| {
        st.link(b, i, reachable, at_ms, t);
        Ok(())
    });
    if let Err(e) = r {
        tracing::error!(site = i, error = %e, "cannot record the site's state");
    }
}

/// Follows site `i`'s event stream forever.
async fn follow(svc: MetaService, i: usize) {
    loop {
        let Ok(mut client) = svc.client(i) else {
            return;
        };
        let from = match svc.lock() {
            Ok(st) => st.site_seq[i] + 1,
            Err(_) => return,
        };
        let req = v1::JobEventsRequest {
            from_sequence: Some(from),
        };
        match svc.call(client.job_events(req)).await {
            Ok(mut events) => {
                set_reachable(&svc, i, true);
                loop {
                    let batch = match next_batch(&mut events).await {
                        Ok(Some(b)) => b,
                        Ok(None) => break,
                        Err(e) => {
                            tracing::warn!(site = i, error = %e, "event stream broken");
                            break;
                        }
                    };
                    let r = svc.mutate(|st, b, _| {
                        for ev in &batch {
                            st.apply_local(b, i, ev);
                        }
                        Ok(())
                    });
                    if let Err(e) = r {
                        tracing::error!(site = i, error = %e, "cannot record the site's events");
                        break;
                    }
                }
            }
            Err(e) => {
                tracing::debug!(site = i, error = %e, "local scheduler unreachable");
            }
        }
        set_reachable(&svc, i, false);
        tokio::time::sleep(retry(&svc)).await;
    }
}

/// The next message of `stream` and those already arrived behind it (at most 4,096), to be
/// applied in one commit; `None` when the stream ended.
async fn next_batch<T>(stream: &mut tonic::Streaming<T>) -> Result<Option<Vec<T>>, tonic::Status> {
    let Some(first) = stream.message().await? else {
        return Ok(None);
    };
    let mut batch = vec![first];
    while batch.len() < 4096 {
        match stream.message().now_or_never() {
            Some(Ok(Some(m))) => batch.push(m),
            _ => break,
        }
    }
    Ok(Some(batch))
}

/// The outcome of one Enqueue.
enum Sent {
    Ok(u64),
    Refused(u64, String),
    Failed(u64, String),
}

/// Sends site `i` its jobs, whenever woken or every second.
async fn forward(svc: MetaService, i: usize) {
    let links = svc.inner.cfg.links.clone();
    loop {
        let _ = tokio::time::timeout(Duration::from_secs(1), svc.inner.wake[i].notified()).await;
        loop {
            let reachable = svc.lock().is_ok_and(|st| st.reachable[i]);
            if !reachable {
                break;
            }
            let chunk = links.forward_concurrency * 8;
            let reqs = svc.mutate(|st, b, t| {
                let ids = st.take_for_sending(b, i, chunk, t);
                Ok(ids
                    .into_iter()
                    .filter_map(|id| {
                        let j = st.jobs.get(&id)?;
                        Some(v1::EnqueueRequest {
                            job_id: id,
                            spec: j.spec.clone(),
                            priority: j.priority,
                            submit_time: j.submit_time.unwrap_or(t),
                            claim_before_start: j.start_claims,
                            run: 0,
                        })
                    })
                    .collect::<Vec<_>>())
            });
            let reqs = match reqs {
                Ok(r) if r.is_empty() => break,
                Ok(r) => r,
                Err(e) => {
                    tracing::error!(site = i, error = %e, "cannot record dispatches");
                    tokio::time::sleep(retry(&svc)).await;
                    break;
                }
            };
            let Ok(client) = svc.client(i) else { return };
            let outcomes: Vec<Sent> = stream::iter(reqs)
                .map(|req| {
                    let mut c = client.clone();
                    let svc = svc.clone();
                    async move {
                        let id = req.job_id;
                        // Its uploads first: the site starts it only with its inputs in place.
                        if let Some(spec) = &req.spec {
                            match svc.inner.uploads.push(&svc, i, &c, id, spec).await {
                                Ok(()) => {}
                                Err(Ok(why)) => return Sent::Refused(id, why),
                                Err(Err(e)) => {
                                    return Sent::Failed(id, format!("pushing inputs: {e}"));
                                }
                            }
                        }
                        match svc.call(c.enqueue(req)).await {
                            Ok(_) => Sent::Ok(id),
                            Err(e) if e.code() == Code::AlreadyExists => Sent::Ok(id),
                            Err(e)
                                if matches!(
                                    e.code(),
                                    Code::FailedPrecondition | Code::InvalidArgument
                                ) =>
                            {
                                Sent::Refused(id, e.message().to_owned())
                            }
                            Err(e) => Sent::Failed(id, e.message().to_owned()),
                        }
                    }
                })
                .buffer_unordered(links.forward_concurrency)
                .collect()
                .await;
            let mut failed = false;
            let mut cancel_there = Vec::new();
            let r = svc.mutate(|st, b, t| {
                for o in &outcomes {
                    match o {
                        Sent::Ok(id) => {
                            st.sent(b, i, *id, t);
                            // Cancelled while its Enqueue was in flight: cancel it there too.
                            if st
                                .jobs
                                .get(id)
                                .is_some_and(|j| j.state() == JobState::Cancelled)
                            {
                                cancel_there.push(*id);
                            }
                        }
                        Sent::Refused(id, why) => st.refused(b, i, *id, why, t),
                        Sent::Failed(id, why) => {
                            tracing::warn!(site = i, job = id, error = %why, "enqueue failed");
                            failed = true;
                            st.send_failed(i, *id);
                        }
                    }
                }
                Ok(())
            });
            if let Err(e) = r {
                tracing::error!(site = i, error = %e, "cannot record enqueue results");
            }
            for id in cancel_there {
                let mut c = client.clone();
                let req = v1::CancelRequest {
                    job_id: id,
                    reason: "cancelled while being dispatched".into(),
                    run: None,
                };
                let _ = svc.call(c.cancel(req)).await;
            }
            if failed {
                tokio::time::sleep(retry(&svc)).await;
                break;
            }
        }
    }
}

/// Keeps site `i`'s StartClaims link open and answers its claims: every request already
/// waiting is answered in one durable commit, then each answer is sent in order.
async fn claim_link(svc: MetaService, i: usize) {
    loop {
        let Ok(mut client) = svc.client(i) else {
            return;
        };
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<v1::ClaimAnswer>();
        let answers = tokio_stream::wrappers::UnboundedReceiverStream::new(rx);
        match svc.call(client.start_claims(answers)).await {
            Ok(mut requests) => loop {
                let batch = match next_batch(&mut requests).await {
                    Ok(Some(b)) => b,
                    Ok(None) => break,
                    Err(e) => {
                        tracing::debug!(site = i, error = %e, "claim link broken");
                        break;
                    }
                };
                let r = svc.mutate(|st, b, t| {
                    Ok(batch
                        .iter()
                        .map(|req| st.claims(b, i, req, t))
                        .collect::<Vec<_>>())
                });
                match r {
                    Ok(answers) => {
                        if answers.into_iter().any(|a| tx.send(a).is_err()) {
                            break;
                        }
                    }
                    Err(e) => {
                        tracing::error!(site = i, error = %e, "cannot record start claims");
                        break;
                    }
                }
            },
            Err(e) => {
                tracing::debug!(site = i, error = %e, "claim link: local scheduler unreachable");
            }
        }
        tokio::time::sleep(retry(&svc)).await;
    }
}

/// The grid runner's clock edge for its links: a few times a second it hands the runner the
/// monotonic time, and the runner marks down the sites whose link has been closed for
/// `links.site_down_after_ms` (their jobs that have not started there are dispatched again
/// elsewhere) and dispatches again the jobs waiting for a site.
async fn monitor(svc: MetaService) {
    for round in 0u64.. {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let at_ms = svc.at_ms();
        let r = svc.mutate(|st, b, t| {
            st.tick(b, at_ms, t);
            if round % 5 == 0 {
                st.refresh_metrics();
            }
            Ok(())
        });
        if let Err(e) = r {
            tracing::error!(error = %e, "monitor cannot record its changes");
        }
    }
}

/// Polls the sites' status: their load for the strategies that read it, and the planned starts
/// of their waiting jobs for `get`, `list` and the dashboard.
async fn poll(svc: MetaService) {
    let n = svc.inner.cfg.sites.len();
    let reads_load = svc.lock().is_ok_and(|st| st.decider.reads_site_state());
    // Planned starts alone are for people: every 2 s at most, as a site's status lists its
    // whole queue.
    let every = Duration::from_millis(if reads_load {
        svc.inner.cfg.links.poll_ms
    } else {
        svc.inner.cfg.links.poll_ms.max(2000)
    });
    loop {
        for i in 0..n {
            let Ok(mut c) = svc.client(i) else { continue };
            if let Ok(status) = svc.call(c.status(v1::StatusRequest {})).await {
                let load = reads_load.then(|| load_of(&status));
                let planned = status
                    .reservations
                    .iter()
                    .map(|r| (r.job_id, r.clone()))
                    .collect();
                if let Ok(mut st) = svc.lock() {
                    if let Some(load) = load {
                        st.load(i, load, crate::service::now());
                    }
                    st.planned[i] = planned;
                    st.advance[i] = status.advance_reservations;
                }
            }
        }
        tokio::time::sleep(every).await;
    }
}
