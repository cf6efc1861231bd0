//! The meta-scheduler's shell around the grid runner's co-allocations (Streit, thesis §6.3: the
//! fragments of a multi-site job start together): it carries out the calls the runner decides
//! over the sites' links — tentative holds at each site's earliest start (`Reserve` with
//! `earliest` and a lease of `links.hold_lease_ms`), holds and reservations let go
//! (`CancelReservation`), commits (`CommitReservation`) — and feeds the answers back to the
//! runner. The calls of one batch go out in the order decided, each run of calls of one kind
//! together (the holds that must move are let go before the new ones are asked). Reservation
//! ids come from the grid-wide counter of advance reservations, stored before any site hears of
//! them; a co-allocation's holds are recorded as the job user's advance reservations before they
//! are committed (PENDING, HELD once every site committed), so that `gridctl reservations` shows
//! them and a restart keeps them. A hold a lost answer left behind lapses with its lease.

use crate::service::{MetaService, internal, now};
use crate::state::SiteCall;
use futures_util::future::join_all;
use gridsched_core::dispatch::stretch_by;
use gridsched_core::grid::Input;
use gridsched_core::model::{JobId, ReservationId};
use gridsched_proto::v1::{self, AdvanceReservationState as St, JobState};
use std::time::Duration;
use tonic::{Code, Status};

impl MetaService {
    /// Carries out the site calls of a committed batch, in order, each run of calls of one kind
    /// at once, their answers fed back to the grid runner.
    pub(crate) async fn carry_out_calls(self, calls: Vec<SiteCall>) {
        let svc = &self;
        let mut rest = calls.as_slice();
        while let Some(first) = rest.first() {
            let kind = std::mem::discriminant(first);
            let n = rest
                .iter()
                .take_while(|c| std::mem::discriminant(*c) == kind)
                .count();
            let (run, after) = rest.split_at(n);
            rest = after;
            match first {
                SiteCall::Hold { .. } => self.holds(run).await,
                SiteCall::Commit { .. } => self.commits(run).await,
                SiteCall::LetGo { .. } => {
                    if let Ok(st) = self.lock() {
                        st.metrics.holds_released.inc_by(run.len() as u64);
                    }
                    let drops = run.iter().map(|c| async move {
                        if let SiteCall::LetGo { site, reservation } = c {
                            svc.drop_reservation(*site, *reservation, "let go by the grid")
                                .await;
                        }
                    });
                    join_all(drops).await;
                }
            }
        }
    }

    /// Asks for holds (the reservation counter stored first), then feeds the answers back.
    async fn holds(&self, run: &[SiteCall]) {
        let last = match self.lock() {
            Ok(st) => st.last_reservation(),
            Err(_) => return,
        };
        let first = match run.first() {
            Some(SiteCall::Hold { reservation, .. }) => *reservation,
            _ => 0,
        };
        if let Err(e) = self.inner.store().save_reservation(first, None, last) {
            tracing::error!("state store: {e}; holds not asked");
            let answers = run.iter().map(|c| (c, Err(format!("state store: {e}"))));
            self.feed_holds(answers.collect());
            return;
        }
        let lease = self.inner.cfg.links.hold_lease_ms;
        let asks = run.iter().map(|c| async move {
            let SiteCall::Hold {
                site,
                reservation,
                from,
                length,
                procs,
                user,
                ..
            } = c
            else {
                return (c, Err("not a hold".to_string()));
            };
            let r = v1::ReserveRequest {
                reservation: Some(v1::AdvanceReservation {
                    id: *reservation,
                    start_time: *from,
                    end_time: from + length,
                    processors: *procs,
                    user: user.clone(),
                    ..Default::default()
                }),
                earliest: true,
                lease_ms: lease,
            };
            (c, self.ask_hold(*site, r).await)
        });
        let answers = join_all(asks).await;
        self.feed_holds(answers);
    }

    fn feed_holds(&self, answers: Vec<(&SiteCall, Result<i64, String>)>) {
        let r = self.mutate(|st, b, t| {
            for (c, answer) in answers {
                if let SiteCall::Hold {
                    job,
                    fragment,
                    site,
                    reservation,
                    ..
                } = c
                {
                    let input = Input::Held {
                        job: JobId(*job),
                        fragment: *fragment,
                        site: *site,
                        reservation: ReservationId(*reservation),
                        answer,
                    };
                    st.drive(b, t, input);
                }
            }
            Ok(())
        });
        if let Err(e) = r {
            tracing::error!("cannot record the answers to holds: {e}");
        }
    }

    /// Records the holds as their users' PENDING reservations (should this process die before
    /// the job is recorded, the grid takes them back at restart), commits them, and
    /// feeds the answers back.
    async fn commits(&self, run: &[SiteCall]) {
        let recorded = self.record_holds(run);
        let pause = self.inner.cfg.faults.pause_before_commit_ms;
        if pause > 0 {
            tracing::warn!(pause, "fault injected: commit delayed");
            tokio::time::sleep(Duration::from_millis(pause)).await;
        }
        let commits = run.iter().map(|c| {
            let recorded = &recorded;
            async move {
                let SiteCall::Commit {
                    site,
                    reservation,
                    start,
                    ..
                } = c
                else {
                    return (c, Err("not a commit".to_string()));
                };
                if let Err(e) = recorded {
                    return (c, Err(e.clone()));
                }
                (c, self.commit_hold(*site, *reservation, *start).await)
            }
        });
        let answers = join_all(commits).await;
        let r = self.mutate(|st, b, t| {
            for (c, answer) in answers {
                if let SiteCall::Commit { job, fragment, .. } = c {
                    let input = Input::Committed {
                        job: JobId(*job),
                        fragment: *fragment,
                        answer,
                    };
                    st.drive(b, t, input);
                }
            }
            Ok(())
        });
        if let Err(e) = r {
            tracing::error!("cannot record the answers to commits: {e}");
        }
    }

    /// Asks site `i` for a tentative hold: the start it gives.
    async fn ask_hold(&self, i: usize, r: v1::ReserveRequest) -> Result<i64, String> {
        let mut client = self.client(i).map_err(|e| e.message().to_string())?;
        let answer = self.call(client.reserve(r)).await;
        match answer.map(|a| a.reservation) {
            Ok(Some(r)) => Ok(r.start_time),
            Ok(None) => Err("no reservation in the answer".into()),
            Err(e) => Err(e.message().to_string()),
        }
    }

    /// Commits hold `id` at site `i`.
    /// Commits hold `id` at site `i`, which must hold it from the agreed `start`: a hold the
    /// site made again meanwhile (lost with a restart, asked again) may start elsewhere, and a
    /// commit of it fails (the co-allocation is given up and its holds let go).
    async fn commit_hold(&self, i: usize, id: u64, start: i64) -> Result<(), String> {
        let mut client = self.client(i).map_err(|e| e.message().to_string())?;
        let r = v1::CommitReservationRequest { id };
        let held = self
            .call(client.commit_reservation(r))
            .await
            .map_err(|e| e.message().to_string())?;
        agreed(id, start, held.reservation.map(|r| r.start_time))
    }

    /// Marks the recorded holds HELD: every site committed them.
    pub(crate) fn hold_for_good(&self, recorded: &[u64]) -> Result<(), String> {
        let mut st = self.lock().map_err(|e| e.to_string())?;
        let last = st.last_reservation();
        for &id in recorded {
            let Some(r) = st.reservations.get_mut(&id) else {
                return Err(format!("reservation r{id} is no longer recorded"));
            };
            r.state = St::Held as i32;
            self.inner
                .store()
                .save_reservation(id, Some(r), last)
                .map_err(|e| internal(e).to_string())?;
        }
        Ok(())
    }

    /// Records the holds of `run` (commits) as their users' advance reservations, PENDING
    /// while the sites commit them.
    fn record_holds(&self, run: &[SiteCall]) -> Result<(), String> {
        let mut st = self.lock().map_err(|e| e.to_string())?;
        let last = st.last_reservation();
        let created = now();
        for c in run {
            let SiteCall::Commit {
                job,
                site,
                reservation,
                start,
                length,
                procs,
                user,
                ..
            } = c
            else {
                continue;
            };
            let r = v1::AdvanceReservation {
                id: *reservation,
                start_time: *start,
                end_time: start + length,
                processors: *procs,
                site: st.sites[*site].name.clone(),
                user: user.clone(),
                state: St::Pending as i32,
                created,
                jobs: vec![*job],
                ..Default::default()
            };
            self.inner
                .store()
                .save_reservation(*reservation, Some(&r), last)
                .map_err(|e| internal(e).to_string())?;
            st.reservations.insert(*reservation, r);
        }
        Ok(())
    }
}

impl MetaService {
    /// Starts the work a committed batch left for split jobs: site calls to make, fragments to
    /// send, fragments to kill, co-allocations to retry (outside a Tokio runtime, as in the
    /// state's unit tests, none).
    pub(crate) fn start_split_work(
        &self,
        calls: Vec<SiteCall>,
        send: Vec<u64>,
        kill: Vec<crate::state::FragmentKill>,
        retries: Vec<(u64, i64)>,
    ) {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            if !(calls.is_empty() && send.is_empty() && kill.is_empty() && retries.is_empty()) {
                tracing::error!("split jobs' work started outside the runtime: not done");
            }
            return;
        };
        if !calls.is_empty() {
            rt.spawn(self.clone().carry_out_calls(calls));
        }
        for id in send {
            rt.spawn(self.clone().send_fragments(id));
        }
        for k in kill {
            rt.spawn(self.clone().kill_fragment(k));
        }
        for (id, at) in retries {
            let svc = self.clone();
            rt.spawn(async move {
                let wait = u64::try_from(at.saturating_sub(now())).unwrap_or(0);
                tokio::time::sleep(Duration::from_secs(wait)).await;
                let r = svc.mutate(|st, b, t| {
                    st.drive(b, t, Input::Retry { job: JobId(id) });
                    Ok(())
                });
                if let Err(e) = r {
                    tracing::error!(job = id, "cannot retry the co-allocation: {e}");
                }
            });
        }
    }

    /// Lets reservation `r` go at site `i` and forgets it here.
    pub(crate) async fn drop_reservation(&self, i: usize, r: u64, reason: &str) {
        if let Ok(mut c) = self.client(i) {
            let req = v1::CancelReservationRequest {
                id: r,
                reason: reason.into(),
            };
            if let Err(e) = self.call(c.cancel_reservation(req)).await {
                tracing::warn!(reservation = r, "not let go: {}", e.message());
            }
        }
        let last = match self.lock() {
            Ok(mut st) => {
                st.reservations.remove(&r);
                st.last_reservation()
            }
            Err(_) => return,
        };
        if let Err(e) = self.inner.store().save_reservation(r, None, last) {
            tracing::error!(reservation = r, "state store: {e}");
        }
    }

    /// Sends every fragment of job `id` its site does not have yet, into its reservation; one
    /// whose site cannot be reached is sent again after `links.retry_ms`, one its site refuses
    /// fails (and so ends the others).
    async fn send_fragments(self, id: u64) {
        loop {
            let pending: Vec<(usize, v1::EnqueueRequest)> = {
                let Ok(st) = self.lock() else { return };
                let Some(job) = st.jobs.get(&id).filter(|j| !j.state().is_terminal()) else {
                    return;
                };
                job.fragments
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| f.state() == JobState::Dispatched)
                    .filter_map(|(k, f)| {
                        st.site_index(&f.site)
                            .map(|i| (i, fragment_request(job, k)))
                    })
                    .collect()
            };
            if pending.is_empty() {
                return;
            }
            let svc = &self;
            let sends = pending.into_iter().map(|(i, req)| async move {
                let run = req.run;
                let answer = match svc.client(i) {
                    Ok(mut c) => {
                        // Its uploads first: the site starts it only with its inputs in place.
                        let pushed = match &req.spec {
                            Some(spec) => svc.inner.uploads.push(svc, i, &c, id, spec).await,
                            None => Ok(()),
                        };
                        match pushed {
                            Ok(()) => svc.call(c.enqueue(req)).await.map(|_| ()),
                            Err(Ok(why)) => Err(Status::failed_precondition(why)),
                            Err(Err(e)) => Err(e),
                        }
                    }
                    Err(e) => Err(e),
                };
                (i, run, answer)
            });
            let mut again = false;
            for (i, run, answer) in join_all(sends).await {
                let _ = self.mutate(|st, b, t| {
                    match answer {
                        Ok(()) => st.fragment_sent(b, i, id, run, t),
                        Err(e) if e.code() == Code::AlreadyExists => {
                            st.fragment_sent(b, i, id, run, t)
                        }
                        Err(e) if refused(&e) => {
                            let ev = v1::JobEvent {
                                job_id: id,
                                state: JobState::Failed.into(),
                                time: t,
                                detail: format!("refused: {}", e.message()),
                                run,
                                ..Default::default()
                            };
                            st.apply_local(b, i, &ev);
                        }
                        Err(_) => again = true,
                    }
                    Ok(())
                });
            }
            if !again {
                return;
            }
            let retry = self.inner.cfg.links.retry_ms;
            tokio::time::sleep(Duration::from_millis(retry)).await;
        }
    }

    /// Kills a fragment at its site (another fragment ended badly, or it is no longer wanted), a
    /// few tries. One the site does not have (yet) is killed when its Enqueue is answered
    /// ([`crate::state::State::fragment_sent`]).
    async fn kill_fragment(self, k: crate::state::FragmentKill) {
        let (i, id) = (k.site, k.job);
        for _ in 0..5 {
            let Ok(mut c) = self.client(i) else { return };
            let req = v1::CancelRequest {
                job_id: id,
                reason: k.why.clone(),
                run: Some(k.run),
            };
            match self.call(c.cancel(req)).await {
                Ok(_) => return,
                Err(e) if e.code() == Code::NotFound => return,
                Err(e) => tracing::warn!(job = id, site = i, "fragment not killed yet: {e}"),
            }
            let retry = self.inner.cfg.links.retry_ms;
            tokio::time::sleep(Duration::from_millis(retry)).await;
        }
    }

    /// Cancels a split job: every fragment's site is asked to cancel it; its fragments' events
    /// end it.
    pub(crate) async fn cancel_split(
        &self,
        id: u64,
        sites: Vec<usize>,
        reason: String,
    ) -> Result<v1::Job, Status> {
        let cancels = sites.into_iter().map(|i| {
            let reason = reason.clone();
            async move {
                let req = v1::CancelRequest {
                    job_id: id,
                    reason,
                    run: None,
                };
                match self.client(i) {
                    Ok(mut c) => self.call(c.cancel(req)).await.map(|_| ()),
                    Err(e) => Err(e),
                }
            }
        });
        let failed = join_all(cancels)
            .await
            .into_iter()
            .filter(|r| r.as_ref().is_err_and(|e| e.code() != Code::NotFound))
            .count();
        if failed > 0 {
            return Err(Status::unavailable(format!(
                "{failed} of job {id}'s fragment sites cannot be reached to cancel it"
            )));
        }
        self.mutate(|st, b, t| {
            st.update(b, id, t, |j| {
                (!j.state().is_terminal())
                    .then(|| "cancellation requested at every fragment's site".to_string())
            });
            st.jobs
                .get(&id)
                .cloned()
                .ok_or_else(|| internal("job vanished"))
        })
    }
}

/// Whether a site's answer to an Enqueue refuses the job for good.
fn refused(e: &Status) -> bool {
    matches!(
        e.code(),
        Code::InvalidArgument | Code::FailedPrecondition | Code::NotFound
    )
}

/// The Enqueue of fragment `k` of split job `job`: its processors, the stretched estimate and
/// emulated run time, its reservation, and the whole split in its environment
/// (`GRIDSCHED_FRAGMENT_RANK`, `_COUNT`, `_SITES`, `_PROCESSORS`).
fn fragment_request(job: &v1::Job, k: usize) -> v1::EnqueueRequest {
    let f = &job.fragments[k];
    let mut spec = job.spec.clone().unwrap_or_default();
    spec.processors = f.processors;
    spec.estimate_s = f.estimate_s;
    spec.emulate_runtime_s = spec
        .emulate_runtime_s
        .map(|r| stretch_by(r, f.overhead_pct));
    spec.reservation = Some(f.reservation);
    // The inputs' machines are one site's; a fragment runs at its own.
    spec.inputs.clear();
    if let Some(c) = spec.command.as_mut() {
        let join = |v: Vec<String>| v.join(",");
        let vars = [
            ("GRIDSCHED_FRAGMENT_RANK", k.to_string()),
            ("GRIDSCHED_FRAGMENT_COUNT", job.fragments.len().to_string()),
            (
                "GRIDSCHED_FRAGMENT_SITES",
                join(job.fragments.iter().map(|f| f.site.clone()).collect()),
            ),
            (
                "GRIDSCHED_FRAGMENT_PROCESSORS",
                join(
                    job.fragments
                        .iter()
                        .map(|f| f.processors.to_string())
                        .collect(),
                ),
            ),
        ];
        for (key, v) in vars {
            c.env.entry(key.to_string()).or_insert(v);
        }
    }
    v1::EnqueueRequest {
        job_id: job.id,
        spec: Some(spec),
        priority: job.priority,
        submit_time: job.submit_time.unwrap_or_default(),
        claim_before_start: false,
        run: job.requeues,
    }
}

/// Whether a committed reservation holds from the agreed start (an answer without the
/// reservation, from an older site, is taken as agreed).
fn agreed(id: u64, start: i64, held_from: Option<i64>) -> Result<(), String> {
    match held_from {
        Some(from) if from != start => Err(format!(
            "reservation r{id} is held from {from}, not from the agreed start {start}"
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::agreed;

    /// Found by the deterministic simulation of the grid: a hold lost with a site's restart and
    /// made again by a duplicate request started at another time than the one agreed.
    #[test]
    fn a_commit_holds_only_from_the_agreed_start() {
        assert_eq!(agreed(13, 132, Some(132)), Ok(()));
        assert_eq!(agreed(13, 132, None), Ok(()));
        assert_eq!(
            agreed(13, 132, Some(121)),
            Err("reservation r13 is held from 121, not from the agreed start 132".into())
        );
    }
}
