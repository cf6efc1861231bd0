//! The meta-scheduler's shell around the core's co-allocation protocol
//! ([`CoAllocation`]; Streit, thesis §6.3: the fragments of a multi-site job start together): it
//! carries out each step over the sites' links — tentative holds at each site's earliest start
//! (`Reserve` with `earliest` and a lease of `links.hold_lease_ms`), the release of holds that
//! must move (`CancelReservation`), the commits (`CommitReservation`) — and feeds the answers back.
//! The holds of one round are asked of all their sites at once. Reservation ids come from the
//! grid-wide counter of advance reservations, stored before any site hears of them; a committed
//! co-allocation's reservations are recorded as the job user's advance reservations, so that
//! `gridctl reservations` shows them and a restart keeps them. An abort lets every hold go; a hold
//! a lost answer left behind lapses with its lease.

use crate::service::{MetaService, internal, now};
use futures_util::future::join_all;
use gridsched_core::dispatch::{CoAllocation, CoAllocationStep as Step, Part, stretch_by};
use gridsched_proto::v1::{self, AdvanceReservationState as St, JobState};
use std::time::Duration;
use tonic::{Code, Status};

/// A co-allocation that every site committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agreed {
    /// The common start.
    pub start: i64,
    /// Per fragment (in the order of the parts): its site and its committed reservation.
    pub reservations: Vec<(usize, u64)>,
    /// Rounds of holds it took.
    pub rounds: u32,
}

impl MetaService {
    /// Reserves `n` new grid-wide reservation ids, the counter stored first.
    fn reservation_ids(&self, n: usize) -> Result<Vec<u64>, String> {
        let (first, last) = {
            let mut st = self.lock().map_err(|e| e.to_string())?;
            let first = st.last_reservation + 1;
            st.last_reservation += n as u64;
            (first, st.last_reservation)
        };
        self.inner
            .store()
            .save_reservation(first, None, last)
            .map_err(|e| internal(e).to_string())?;
        Ok((first..=last).collect())
    }

    /// Co-allocates `parts` (cluster = site index) of job `job` of `user` for `length` seconds
    /// each (held [`SEND_GRACE_S`](gridsched_core::dispatch::SEND_GRACE_S) longer) from `now` on: the common start and the committed
    /// reservations, or why not (every hold let go). `single_end`: the best single-site planned end, for the adaptive rule.
    pub async fn co_allocate(
        &self,
        job: u64,
        user: &str,
        parts: Vec<Part>,
        length: i64,
        single_end: Option<i64>,
        now: i64,
    ) -> Result<Agreed, String> {
        let links = &self.inner.cfg.links;
        let mut c = CoAllocation::new(parts, length, links.coallocation_rounds, single_end);
        let mut ids: Vec<Option<u64>> = vec![None; c.parts().len()];
        // The holds recorded here (site, reservation), once the commit phase began.
        let mut recorded: Vec<(usize, u64)> = Vec::new();
        let mut step = c.start(now);
        loop {
            step = match step {
                Step::Hold { fragments, from } => {
                    let old: Vec<(usize, u64)> = fragments
                        .iter()
                        .filter_map(|&i| ids[i].take().map(|id| (i, id)))
                        .collect();
                    self.let_go(&c, &old, "its fragment's start moves").await;
                    let new = match self.reservation_ids(fragments.len()) {
                        Ok(new) => new,
                        Err(e) => {
                            let held: Vec<(usize, u64)> = holds(&ids);
                            self.let_go(&c, &held, "co-allocation failed").await;
                            return Err(e);
                        }
                    };
                    let asks = fragments.iter().zip(new).map(|(&i, id)| {
                        let p = c.parts()[i];
                        let r = v1::ReserveRequest {
                            reservation: Some(v1::AdvanceReservation {
                                id,
                                start_time: from,
                                end_time: from + c.held_for(),
                                processors: p.procs,
                                user: user.to_string(),
                                ..Default::default()
                            }),
                            earliest: true,
                            lease_ms: links.hold_lease_ms,
                        };
                        async move { (i, id, self.ask_hold(p.cluster.index(), r).await) }
                    });
                    let mut next = Step::Wait;
                    for (i, id, answer) in join_all(asks).await {
                        let s = match answer {
                            Ok(start) => {
                                ids[i] = Some(id);
                                c.held(i, start)
                            }
                            Err(why) => c.refused(i, &why),
                        };
                        if !matches!(next, Step::Abort { .. }) && s != Step::Wait {
                            next = s;
                        }
                    }
                    next
                }
                Step::Commit { start } => {
                    // Recorded before the sites commit, as PENDING: should this process die
                    // before the job is recorded, the reconcile loop takes them back at restart.
                    let at_sites = self.at_sites(&c, &ids);
                    if let Err(e) = self.record_holds(job, user, &c, start, &at_sites, now) {
                        self.let_go(&c, &holds(&ids), "co-allocation failed").await;
                        return Err(e);
                    }
                    recorded = at_sites;
                    let pause = self.inner.cfg.faults.pause_before_commit_ms;
                    if pause > 0 {
                        tracing::warn!(job, pause, "fault injected: commit delayed");
                        tokio::time::sleep(Duration::from_millis(pause)).await;
                    }
                    let commits = holds(&ids).into_iter().map(|(i, id)| {
                        let site = c.parts()[i].cluster.index();
                        async move { (i, self.commit_hold(site, id).await) }
                    });
                    let mut next = Step::Wait;
                    for (i, answer) in join_all(commits).await {
                        let s = match answer {
                            Ok(()) => c.committed(i),
                            Err(why) => c.refused(i, &format!("commit: {why}")),
                        };
                        if !matches!(next, Step::Abort { .. }) && s != Step::Wait {
                            next = s;
                        }
                    }
                    next
                }
                Step::Send { start } => {
                    // Not HELD: they stay PENDING, and the reconcile loop takes them back.
                    self.hold_for_good(&recorded)?;
                    return Ok(Agreed {
                        start,
                        reservations: recorded,
                        rounds: c.rounds(),
                    });
                }
                Step::Abort { why } => {
                    self.let_go(&c, &holds(&ids), "co-allocation given up")
                        .await;
                    self.forget_holds(&recorded);
                    return Err(why);
                }
                Step::Wait => return Err("co-allocation: no answer to wait for".into()),
            }
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
    async fn commit_hold(&self, i: usize, id: u64) -> Result<(), String> {
        let mut client = self.client(i).map_err(|e| e.message().to_string())?;
        let r = v1::CommitReservationRequest { id };
        self.call(client.commit_reservation(r))
            .await
            .map(|_| ())
            .map_err(|e| e.message().to_string())
    }

    /// Lets the holds `held` (fragment, reservation) go at their sites; one that cannot be
    /// reached keeps it until its lease lapses.
    async fn let_go(&self, c: &CoAllocation, held: &[(usize, u64)], reason: &str) {
        if let Ok(st) = self.lock() {
            st.metrics.holds_released.inc_by(held.len() as u64);
        }
        let cancels = held.iter().map(|&(i, id)| {
            let site = c.parts()[i].cluster.index();
            async move {
                let Ok(mut client) = self.client(site) else {
                    return;
                };
                let r = v1::CancelReservationRequest {
                    id,
                    reason: reason.to_string(),
                };
                if let Err(e) = self.call(client.cancel_reservation(r)).await {
                    tracing::debug!(reservation = id, "hold not let go: {}", e.message());
                }
            }
        });
        join_all(cancels).await;
    }

    /// The holds taken, as (site, reservation).
    fn at_sites(&self, c: &CoAllocation, ids: &[Option<u64>]) -> Vec<(usize, u64)> {
        holds(ids)
            .into_iter()
            .map(|(i, id)| (c.parts()[i].cluster.index(), id))
            .collect()
    }

    /// Forgets holds recorded by [`MetaService::record_holds`] (let go at their sites).
    fn forget_holds(&self, recorded: &[(usize, u64)]) {
        let Ok(mut st) = self.lock() else { return };
        let last = st.last_reservation;
        for &(_, id) in recorded {
            st.reservations.remove(&id);
            if let Err(e) = self.inner.store().save_reservation(id, None, last) {
                tracing::error!(reservation = id, "state store: {e}");
            }
        }
    }

    /// Marks the recorded holds HELD: every site committed them.
    fn hold_for_good(&self, recorded: &[(usize, u64)]) -> Result<(), String> {
        let mut st = self.lock().map_err(|e| e.to_string())?;
        let last = st.last_reservation;
        for &(_, id) in recorded {
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

    /// Records a co-allocation's holds as `user`'s advance reservations, PENDING (created at
    /// `now`) while the sites commit them.
    fn record_holds(
        &self,
        job: u64,
        user: &str,
        c: &CoAllocation,
        start: i64,
        reservations: &[(usize, u64)],
        now: i64,
    ) -> Result<(), String> {
        let mut st = self.lock().map_err(|e| e.to_string())?;
        let last = st.last_reservation;
        for (k, &(site, id)) in reservations.iter().enumerate() {
            let r = v1::AdvanceReservation {
                id,
                start_time: start,
                end_time: start + c.held_for(),
                processors: c.parts()[k].procs,
                site: st.sites[site].name.clone(),
                user: user.to_string(),
                state: St::Pending as i32,
                created: now,
                jobs: vec![job],
                ..Default::default()
            };
            self.inner
                .store()
                .save_reservation(id, Some(&r), last)
                .map_err(|e| internal(e).to_string())?;
            st.reservations.insert(id, r);
        }
        Ok(())
    }
}

impl MetaService {
    /// Starts the work a committed batch left for split jobs: co-allocations to run, fragments
    /// to send, fragments to kill (outside a Tokio runtime, as in the state's unit tests, none).
    pub(crate) fn start_split_work(
        &self,
        coallocate: Vec<u64>,
        send: Vec<u64>,
        kill: Vec<crate::state::FragmentKill>,
    ) {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            if !(coallocate.is_empty() && send.is_empty() && kill.is_empty()) {
                tracing::error!("split jobs' work started outside the runtime: not done");
            }
            return;
        };
        for id in coallocate {
            rt.spawn(self.clone().run_coallocation(id));
        }
        for id in send {
            rt.spawn(self.clone().send_fragments(id));
        }
        for k in kill {
            rt.spawn(self.clone().kill_fragment(k));
        }
    }

    /// Co-allocates split job `id`: its fragments are sent once every site committed; after a
    /// failure it waits a moment (the sites' plans differ from the grid scheduler's account, and
    /// would differ again at once), then goes back to the meta-level queue.
    async fn run_coallocation(self, id: u64) {
        let (user, split) = {
            let Ok(st) = self.lock() else { return };
            let (Some(job), Some(split)) = (st.jobs.get(&id), st.coallocating.get(&id)) else {
                return;
            };
            let user = job
                .spec
                .as_ref()
                .map(|s| s.user.clone())
                .unwrap_or_default();
            (user, split.clone())
        };
        let answer = self
            .co_allocate(
                id,
                &user,
                split.parts.clone(),
                split.length,
                split.single_end,
                now(),
            )
            .await;
        let outcome = if answer.is_ok() {
            "committed"
        } else {
            "given-up"
        };
        if let Ok(st) = self.lock() {
            let label = crate::metrics::OutcomeLabel {
                outcome: outcome.into(),
            };
            st.metrics.coallocations.get_or_create(&label).inc();
        }
        match answer {
            Ok(agreed) => {
                let kept = self.mutate(|st, b, t| Ok(st.split_agreed(b, id, &agreed, t)));
                if !matches!(kept, Ok(true)) {
                    // Cancelled meanwhile (or not recorded): its reservations are let go.
                    for &(site, r) in &agreed.reservations {
                        self.drop_reservation(site, r, "its job ended before it started")
                            .await;
                    }
                }
            }
            Err(why) => {
                tracing::info!(job = id, "co-allocation given up: {why}");
                let pause = self.inner.cfg.links.retry_ms.max(1_000);
                tokio::time::sleep(Duration::from_millis(pause)).await;
                let _ = self.mutate(|st, b, t| {
                    st.split_failed(b, id, &why, t);
                    Ok(())
                });
            }
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
                st.last_reservation
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
                    Ok(mut c) => svc.call(c.enqueue(req)).await.map(|_| ()),
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

/// The holds taken: (fragment, reservation).
fn holds(ids: &[Option<u64>]) -> Vec<(usize, u64)> {
    ids.iter()
        .enumerate()
        .filter_map(|(i, id)| id.map(|id| (i, id)))
        .collect()
}
