//! The meta-scheduler in the grid's deterministic simulation: the shell around the grid runner,
//! with the store it writes in the same step as each decision (jobs and where they stand, the
//! applied event sequence of each site, the reservation counter: durable) and what lives in its
//! memory only (the runner, the calls of co-allocations under way, which enqueues were
//! acknowledged, the links' state, retry timers). A crash loses the memory; the restart rebuilds
//! the runner by restoring every open job where the store has it.

use super::Mutation;
use super::net::{Msg, SiteCancel, SiteEvent, To};
use super::world::Out;
use gridsched_core::dispatch::{DispatchConfig, DispatchKind, MultiSiteConfig, Part, Priority};
use gridsched_core::grid::{
    CoallocationRules, Effect, GridConfig, GridRunner, GridSettings, Input, Restored, SiteSpec,
};
use gridsched_core::model::{ClusterId, Job, JobId, Outcome, Platform, ReservationId, Time};
use std::collections::{BTreeMap, BTreeSet};

/// Milliseconds without an answer from a site before its link counts as down.
const SILENT_MS: u64 = 2_500;
/// Milliseconds a co-allocation call waits for its answer.
const CALL_MS: u64 = 3_000;
/// Milliseconds a site's link stays down before the runner marks the site down.
pub(super) const SITE_DOWN_MS: u64 = 4_000;

/// One fragment of a split job, as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Frag {
    pub site: usize,
    /// The fragment as its site queues it.
    pub job: Job,
    pub reservation: ReservationId,
    /// `Some(ok)` once ended.
    pub ended: Option<bool>,
}

/// Where a job stands in the store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum MState {
    Waiting,
    Site {
        site: usize,
        claimed: bool,
        since: Time,
    },
    Split {
        frags: Vec<Frag>,
        start: Time,
        since: Time,
    },
    Ended(Outcome),
    Refused,
}

impl MState {
    pub(super) fn terminal(&self) -> bool {
        matches!(self, MState::Ended(_) | MState::Refused)
    }
}

/// A job in the store.
#[derive(Clone, Debug)]
pub(super) struct MJob {
    pub job: Job,
    pub priority: Priority,
    pub state: MState,
    /// Its user asked to cancel it: it is never sent to a site again.
    pub cancel: bool,
}

/// What the meta-scheduler has made durable.
#[derive(Clone, Debug, Default)]
pub(super) struct MetaStore {
    pub jobs: BTreeMap<JobId, MJob>,
    /// Per site: the last event applied.
    pub applied: Vec<u64>,
    pub last_reservation: u64,
}

#[derive(Clone, Copy, Debug)]
enum Call {
    Hold {
        job: JobId,
        fragment: usize,
        site: usize,
        reservation: ReservationId,
    },
    Commit {
        job: JobId,
        fragment: usize,
        start: Time,
    },
    Cancel {
        job: JobId,
        site: usize,
    },
}

/// What a running meta-scheduler has in memory only.
#[derive(Debug)]
pub(super) struct MetaLive {
    pub runner: GridRunner,
    calls: BTreeMap<u64, (Call, u64)>,
    /// Enqueues a site acknowledged.
    acked: BTreeSet<(usize, JobId)>,
    /// The event sequence at which a site withdrew a job that is placed there.
    withdrawn: BTreeMap<(usize, JobId), u64>,
    reachable: Vec<bool>,
    heard: Vec<u64>,
    retries: Vec<(u64, JobId)>,
    /// Submissions acknowledged but not yet stored ([`Mutation::AckBeforeStore`]).
    unstored: Vec<Job>,
    /// Cancellations asked of a site, not answered yet.
    cancelling: BTreeSet<JobId>,
}

/// The meta-scheduler.
#[derive(Debug)]
pub(super) struct Meta {
    pub store: MetaStore,
    pub live: Option<MetaLive>,
    config: GridConfig,
    mutation: Option<Mutation>,
}

/// The grid runner's configuration: the sites of `platform`, Load / Ordering with wide jobs
/// split over sites and co-allocated in two phases.
fn config(platform: &Platform) -> GridConfig {
    let sites = (crate::platform::caps_of(platform).into_iter())
        .zip(&platform.clusters)
        .map(|(caps, c)| SiteSpec::plain(c.name.clone(), caps))
        .collect();
    GridConfig {
        sites,
        dispatch: DispatchConfig {
            split_wide: true,
            ..DispatchConfig::new(DispatchKind::LoadOrdering)
        },
        classifier: None,
        settings: GridSettings {
            coallocation: Some(CoallocationRules::new(
                MultiSiteConfig {
                    overhead_pct: 25,
                    ..MultiSiteConfig::default()
                },
                5,
            )),
            site_down_after_ms: Some(SITE_DOWN_MS),
            ..GridSettings::default()
        },
        classifier_state: None,
        usage_state: None,
    }
}

impl Meta {
    pub(super) fn new(platform: &Platform, now_ms: u64, mutation: Option<Mutation>) -> Meta {
        let mut m = Meta {
            store: MetaStore {
                applied: vec![0; platform.clusters.len()],
                ..MetaStore::default()
            },
            live: None,
            config: config(platform),
            mutation,
        };
        m.live = Some(m.fresh(now_ms));
        m
    }

    fn fresh(&self, now_ms: u64) -> MetaLive {
        let n = self.config.sites.len();
        MetaLive {
            runner: GridRunner::from_config(&self.config).expect("a valid grid"),
            calls: BTreeMap::new(),
            acked: BTreeSet::new(),
            withdrawn: BTreeMap::new(),
            reachable: vec![false; n],
            heard: vec![now_ms; n],
            retries: Vec::new(),
            unstored: Vec::new(),
            cancelling: BTreeSet::new(),
        }
    }

    pub(super) fn crash(&mut self) {
        self.live = None;
    }

    /// Restarts from the store: every open job restored where it stood.
    pub(super) fn restart(&mut self, now_ms: u64, out: &mut Out) {
        self.live = Some(self.fresh(now_ms));
        let last = self.store.last_reservation;
        self.feed(now_ms, Input::Reservations { last }, out);
        let open: Vec<JobId> = (self.store.jobs.iter())
            .filter(|(_, j)| !j.state.terminal())
            .map(|(id, _)| *id)
            .collect();
        for id in open {
            let j = self.store.jobs.get_mut(&id).expect("open");
            if self.mutation == Some(Mutation::ForgetClaims)
                && matches!(j.state, MState::Site { claimed: true, .. })
            {
                j.state = MState::Waiting;
            }
            let at = match &j.state {
                MState::Waiting => Restored::Waiting,
                MState::Site {
                    site,
                    claimed,
                    since,
                } => Restored::Site {
                    site: *site,
                    claimed: *claimed,
                    since: *since,
                },
                MState::Split { frags, since, .. } => Restored::Split {
                    fragments: (frags.iter())
                        .map(|f| {
                            let part = Part {
                                cluster: ClusterId(f.site as u32),
                                procs: f.job.procs,
                            };
                            (part, f.reservation, f.ended.is_some())
                        })
                        .collect(),
                    since: *since,
                },
                MState::Ended(_) | MState::Refused => unreachable!("open jobs only"),
            };
            let input = Input::Restore {
                job: j.job.clone(),
                priority: j.priority,
                at,
            };
            self.feed(now_ms, input, out);
        }
        self.feed(now_ms, Input::Tick { at_ms: now_ms }, out);
    }

    /// Hands `input` to the runner and carries out its effects, writing the store.
    fn feed(&mut self, now_ms: u64, input: Input, out: &mut Out) {
        let now = (now_ms / 1000) as Time;
        let Some(live) = self.live.as_mut() else {
            return;
        };
        let mut fx = Vec::new();
        if let Err(e) = live.runner.on(now, input, &mut fx) {
            out.error(format!("meta: {e}"));
        }
        for e in fx {
            out.note(|| format!("meta effect: {e:?}"));
            self.effect(now_ms, e, out);
        }
    }

    fn effect(&mut self, now_ms: u64, e: Effect, out: &mut Out) {
        let now = (now_ms / 1000) as Time;
        let live = self.live.as_mut().expect("up");
        let store = &mut self.store;
        match e {
            Effect::Classified { job, priority, .. } => {
                if let Some(j) = store.jobs.get_mut(&job) {
                    j.priority = priority;
                }
            }
            Effect::Place { job, site, .. } => {
                out.note(|| format!("meta: j{} placed at site {site}", job.0));
                let Some(j) = store.jobs.get_mut(&job) else {
                    return;
                };
                // Withdrawn from the site its cancellation was asked of (unanswered): it goes
                // nowhere else.
                if j.cancel {
                    self.cancelled(now_ms, job, out);
                    return;
                }
                j.state = MState::Site {
                    site,
                    claimed: false,
                    since: now,
                };
                live.acked.remove(&(site, job));
                let msg = Msg::Enqueue {
                    job: j.job.clone(),
                    priority: j.priority,
                    claim: true,
                };
                out.send(To::Meta, To::Site(site), msg);
            }
            Effect::Wait { job, .. }
            | Effect::Limited { job, .. }
            | Effect::Blocked { job, .. } => {
                if let Some(j) = store.jobs.get_mut(&job) {
                    j.state = MState::Waiting;
                }
            }
            Effect::Refuse { job, why, .. } => {
                out.note(|| format!("meta: j{} refused: {why}", job.0));
                if let Some(j) = store.jobs.get_mut(&job) {
                    j.state = MState::Refused;
                }
            }
            Effect::Hold {
                job,
                fragment,
                site,
                reservation,
                from,
                length,
                procs,
            } => {
                store.last_reservation = store.last_reservation.max(reservation.0);
                let call = out.token();
                let c = Call::Hold {
                    job,
                    fragment,
                    site,
                    reservation,
                };
                live.calls.insert(call, (c, now_ms + CALL_MS));
                out.note(|| {
                    format!(
                        "meta: j{} hold r{} at site {site} from {from}",
                        job.0, reservation.0
                    )
                });
                let msg = Msg::Hold {
                    call,
                    reservation,
                    from,
                    length,
                    procs,
                };
                out.send(To::Meta, To::Site(site), msg);
            }
            Effect::Commit {
                job,
                fragment,
                site,
                reservation,
                start,
                ..
            } => {
                let call = out.token();
                let c = Call::Commit {
                    job,
                    fragment,
                    start,
                };
                live.calls.insert(call, (c, now_ms + CALL_MS));
                out.note(|| format!("meta: j{} commit r{} at site {site}", job.0, reservation.0));
                out.send(To::Meta, To::Site(site), Msg::Commit { call, reservation });
            }
            Effect::LetGo {
                job,
                site,
                reservation,
            } => {
                out.note(|| format!("meta: j{} let go r{} at site {site}", job.0, reservation.0));
                out.send(To::Meta, To::Site(site), Msg::LetGo(reservation));
            }
            Effect::Send {
                job,
                start,
                fragments,
                ..
            } => {
                let Some(j) = store.jobs.get_mut(&job) else {
                    return;
                };
                let frags: Vec<Frag> = (fragments.iter())
                    .map(|f| Frag {
                        site: f.site,
                        job: Job {
                            procs: f.procs,
                            estimate: f.length,
                            runtime: (j.job.runtime)
                                .map(|r| gridsched_core::dispatch::stretch_by(r, f.overhead_pct)),
                            reservation: Some(f.reservation),
                            ..j.job.clone()
                        },
                        reservation: f.reservation,
                        ended: None,
                    })
                    .collect();
                out.note(|| {
                    format!(
                        "meta: j{} sent at {start} to {:?}",
                        job.0,
                        frags.iter().map(|f| f.site).collect::<Vec<_>>()
                    )
                });
                for f in &frags {
                    live.acked.remove(&(f.site, job));
                    let msg = Msg::Enqueue {
                        job: f.job.clone(),
                        priority: j.priority,
                        claim: false,
                    };
                    out.send(To::Meta, To::Site(f.site), msg);
                }
                j.state = MState::Split {
                    frags,
                    start,
                    since: now,
                };
            }
            Effect::GivenUp { job, why, retry_at } => {
                out.note(|| format!("meta: j{} co-allocation given up: {why}", job.0));
                if let Some(at) = retry_at {
                    live.retries.push((at.max(0) as u64 * 1000, job));
                }
            }
            Effect::Kill { job, site, .. } => {
                out.note(|| format!("meta: j{} fragment at site {site} killed", job.0));
                out.send(To::Meta, To::Site(site), Msg::Kill(job));
            }
            Effect::Over { job, .. } => {
                if let Some(j) = store.jobs.get_mut(&job)
                    && let MState::Split { frags, .. } = &j.state
                {
                    let ok = frags.iter().all(|f| f.ended == Some(true));
                    let outcome = if ok {
                        Outcome::Completed
                    } else {
                        Outcome::Failed
                    };
                    out.note(|| format!("meta: j{} over: {outcome}", job.0));
                    j.state = MState::Ended(outcome);
                }
            }
            _ => {}
        }
    }

    /// A message from the client or a site; then a release pass of the meta-level queue while it
    /// holds jobs.
    pub(super) fn on(&mut self, now_ms: u64, msg: Msg, out: &mut Out) {
        self.handle(now_ms, msg, out);
        self.release(now_ms, out);
    }

    fn release(&mut self, now_ms: u64, out: &mut Out) {
        if self.live.as_ref().is_some_and(|l| l.runner.held() > 0) {
            self.feed(now_ms, Input::Release, out);
        }
    }

    fn handle(&mut self, now_ms: u64, msg: Msg, out: &mut Out) {
        let Some(live) = self.live.as_mut() else {
            return;
        };
        match msg {
            Msg::Submit(job) => {
                let id = job.id;
                let known =
                    self.store.jobs.contains_key(&id) || live.unstored.iter().any(|j| j.id == id);
                if !known {
                    if self.mutation == Some(Mutation::AckBeforeStore) {
                        live.unstored.push(job);
                    } else {
                        self.accept(now_ms, job, out);
                    }
                }
                out.send(To::Meta, To::Client, Msg::Ack(id));
            }
            Msg::Cancel(job) => self.cancel(now_ms, job, out),
            Msg::CancelAnswer { call, answer } => {
                if let Some((Call::Cancel { job, site }, _)) = live.calls.remove(&call) {
                    self.heard(now_ms, site, out);
                    self.cancel_answered(now_ms, job, site, answer, out);
                }
            }
            Msg::Enqueued { site, job, events } => {
                // An answer older than the job's withdrawal there does not count.
                let stale = (live.withdrawn.get(&(site, job))).is_some_and(|&seq| seq > events);
                if !stale {
                    live.acked.insert((site, job));
                }
            }
            Msg::Claims {
                site,
                start,
                waiting,
            } => {
                self.heard(now_ms, site, out);
                let mut granted = Vec::new();
                let mut withdrawn = Vec::new();
                let mut claimed = Vec::new();
                for id in start {
                    match self.store.jobs.get_mut(&id).map(|j| &mut j.state) {
                        Some(MState::Site {
                            site: s,
                            claimed: c,
                            ..
                        }) if *s == site => {
                            if !*c {
                                *c = true;
                                claimed.push(id);
                            }
                            granted.push(id);
                        }
                        _ => withdrawn.push(id),
                    }
                }
                for id in waiting {
                    let ours = matches!(
                        self.store.jobs.get(&id).map(|j| &j.state),
                        Some(MState::Site { site: s, .. }) if *s == site
                    );
                    if !ours {
                        withdrawn.push(id);
                    }
                }
                out.send(
                    To::Meta,
                    To::Site(site),
                    Msg::ClaimAnswer { granted, withdrawn },
                );
                for job in claimed {
                    out.note(|| format!("meta: j{} claimed at site {site}", job.0));
                    self.feed(now_ms, Input::Claimed { job, site }, out);
                }
            }
            Msg::HeldAnswer { call, answer } => {
                if let Some((
                    Call::Hold {
                        job,
                        fragment,
                        site,
                        reservation,
                    },
                    _,
                )) = live.calls.remove(&call)
                {
                    self.heard(now_ms, site, out);
                    let input = Input::Held {
                        job,
                        fragment,
                        site,
                        reservation,
                        answer,
                    };
                    self.feed(now_ms, input, out);
                }
            }
            Msg::CommitAnswer { call, answer } => {
                if let Some((
                    Call::Commit {
                        job,
                        fragment,
                        start,
                    },
                    _,
                )) = live.calls.remove(&call)
                {
                    // Held from another start than agreed (made again after a restart): no.
                    let answer = answer.and_then(|from| {
                        (from == start).then_some(()).ok_or_else(|| {
                            format!("held from {from}, not from the agreed start {start}")
                        })
                    });
                    let input = Input::Committed {
                        job,
                        fragment,
                        answer,
                    };
                    self.feed(now_ms, input, out);
                }
            }
            Msg::Events {
                site,
                first,
                events,
            } => {
                self.heard(now_ms, site, out);
                for (k, e) in events.into_iter().enumerate() {
                    let seq = first + k as u64;
                    if seq == self.store.applied[site] + 1 {
                        self.store.applied[site] = seq;
                        self.apply(now_ms, site, seq, e, out);
                    }
                }
            }
            _ => {}
        }
    }

    /// The user cancels `job`: at the meta level it leaves at once; at a site the site is asked
    /// to cancel it, and it ends as it answers (a running one with the site's event); when the
    /// site cannot be reached, the user asks again (the live meta-scheduler says UNAVAILABLE).
    fn cancel(&mut self, now_ms: u64, job: JobId, out: &mut Out) {
        let Some(j) = self.store.jobs.get(&job) else {
            out.send(To::Meta, To::Client, Msg::Cancelled { job, done: false });
            return;
        };
        let site = match &j.state {
            MState::Ended(_) | MState::Refused => {
                out.send(To::Meta, To::Client, Msg::Cancelled { job, done: true });
                return;
            }
            MState::Waiting => {
                out.note(|| format!("meta: j{} cancelled at the meta level", job.0));
                self.cancelled(now_ms, job, out);
                out.send(To::Meta, To::Client, Msg::Cancelled { job, done: true });
                return;
            }
            MState::Site { site, .. } => *site,
            // Not modelled yet (docs/reliability.md): the client cancels whole jobs only.
            MState::Split { .. } => {
                out.send(To::Meta, To::Client, Msg::Cancelled { job, done: false });
                return;
            }
        };
        if let Some(j) = self.store.jobs.get_mut(&job) {
            j.cancel = true;
        }
        let live = self.live.as_mut().expect("up");
        if live.cancelling.insert(job) {
            let call = out.token();
            live.calls
                .insert(call, (Call::Cancel { job, site }, now_ms + CALL_MS));
            out.note(|| format!("meta: j{} cancel asked of site {site}", job.0));
            out.send(To::Meta, To::Site(site), Msg::CancelJob { call, job });
        }
    }

    /// The runner forgets `job` (cancelled before it started), and so does the store.
    fn cancelled(&mut self, now_ms: u64, job: JobId, out: &mut Out) {
        self.feed(now_ms, Input::Cancel { job }, out);
        if let Some(j) = self.store.jobs.get_mut(&job) {
            j.state = MState::Ended(Outcome::Cancelled { started: false });
        }
    }

    /// A site answered the cancellation of `job`.
    fn cancel_answered(
        &mut self,
        now_ms: u64,
        job: JobId,
        site: usize,
        answer: SiteCancel,
        out: &mut Out,
    ) {
        out.note(|| format!("meta: j{} cancel at site {site}: {answer:?}", job.0));
        if !self.live.as_mut().expect("up").cancelling.remove(&job) {
            return;
        }
        let Some(j) = self.store.jobs.get(&job) else {
            return;
        };
        match (&j.state, answer) {
            // Dequeued, or not there (withdrawn, or its Enqueue not arrived: the site will ask
            // its claim and be told it is withdrawn), unclaimed: it never started.
            (
                MState::Site {
                    site: s,
                    claimed: false,
                    ..
                },
                SiteCancel::Dequeued | SiteCancel::NotHere,
            ) if *s == site => self.cancelled(now_ms, job, out),
            (MState::Site { site: s, .. }, SiteCancel::Dequeued) if *s == site => {
                self.cancelled(now_ms, job, out);
            }
            // Killed, or ended already: its end comes with the site's events.
            (MState::Site { site: s, .. }, SiteCancel::Killed | SiteCancel::Ended)
                if *s == site => {}
            // Moved meanwhile, or ended: the user asks again.
            _ => return,
        }
        out.send(To::Meta, To::Client, Msg::Cancelled { job, done: true });
    }

    /// A site answered: its link is up (the runner hears of it at once when it was down).
    fn heard(&mut self, now_ms: u64, site: usize, out: &mut Out) {
        let live = self.live.as_mut().expect("up");
        live.heard[site] = now_ms;
        if !live.reachable[site] {
            live.reachable[site] = true;
            out.note(|| format!("meta: site {site} reachable"));
            let input = Input::Link {
                site,
                reachable: true,
                at_ms: now_ms,
            };
            self.feed(now_ms, input, out);
        }
    }

    fn accept(&mut self, now_ms: u64, job: Job, out: &mut Out) {
        let id = job.id;
        out.note(|| format!("meta: j{} accepted", id.0));
        self.store.jobs.insert(
            id,
            MJob {
                job: job.clone(),
                priority: 0,
                state: MState::Waiting,
                cancel: false,
            },
        );
        let input = Input::Submit {
            job,
            priority: None,
        };
        self.feed(now_ms, input, out);
    }

    /// A site's event, in its sequence.
    fn apply(&mut self, now_ms: u64, site: usize, seq: u64, e: SiteEvent, out: &mut Out) {
        let id = e.job();
        let Some(j) = self.store.jobs.get_mut(&id) else {
            return;
        };
        let input = match (&e, &mut j.state) {
            (SiteEvent::Ended(_, outcome), MState::Site { site: s, .. }) if *s == site => {
                out.note(|| format!("meta: j{} ended at site {site}: {outcome}", id.0));
                j.state = MState::Ended(*outcome);
                Input::Ended {
                    job: id,
                    site,
                    outcome: *outcome,
                    exit: None,
                }
            }
            (SiteEvent::Refused(_, why), MState::Site { site: s, .. }) if *s == site => {
                Input::Refused {
                    job: id,
                    site,
                    why: why.clone(),
                }
            }
            (SiteEvent::Ended(_, outcome), MState::Split { frags, .. }) => {
                let Some(f) = frags
                    .iter_mut()
                    .find(|f| f.site == site && f.ended.is_none())
                else {
                    return;
                };
                let ok = *outcome == Outcome::Completed;
                f.ended = Some(ok);
                out.note(|| format!("meta: j{} fragment at site {site} ended: {outcome}", id.0));
                Input::FragmentEnded {
                    job: id,
                    site,
                    ok,
                    again: false,
                }
            }
            (SiteEvent::Refused(_, why), MState::Split { frags, .. }) => {
                let Some(f) = frags
                    .iter_mut()
                    .find(|f| f.site == site && f.ended.is_none())
                else {
                    return;
                };
                f.ended = Some(false);
                out.note(|| format!("meta: j{} fragment at site {site} refused: {why}", id.0));
                Input::Refused {
                    job: id,
                    site,
                    why: why.clone(),
                }
            }
            // Withdrawn here by a claim answer that the job's new Enqueue to this same site
            // overtook: it is sent again.
            (SiteEvent::Withdrawn(_), MState::Site { site: s, .. }) if *s == site => {
                out.note(|| {
                    format!(
                        "meta: j{} withdrawn from site {site}, where it is: sent again",
                        id.0
                    )
                });
                if let Some(live) = self.live.as_mut() {
                    live.acked.remove(&(site, id));
                    live.withdrawn.insert((site, id), seq);
                }
                return;
            }
            _ => return,
        };
        self.feed(now_ms, input, out);
    }

    /// Every second: the unstored submissions written ([`Mutation::AckBeforeStore`]), calls
    /// past their time answered as failed, links that went silent (or spoke again) told, the
    /// runner's tick, due retries, the unacknowledged enqueues sent again, every site asked for
    /// its events.
    pub(super) fn tick(&mut self, now_ms: u64, out: &mut Out) {
        let Some(live) = self.live.as_mut() else {
            return;
        };
        for job in std::mem::take(&mut live.unstored) {
            self.accept(now_ms, job, out);
        }
        let live = self.live.as_mut().expect("up");
        let late: Vec<u64> = (live.calls.iter())
            .filter(|(_, (_, until))| *until <= now_ms)
            .map(|(c, _)| *c)
            .collect();
        for c in late {
            let live = self.live.as_mut().expect("up");
            let Some((call, _)) = live.calls.remove(&c) else {
                continue;
            };
            let why = "no answer in time (the site cannot be reached)".to_owned();
            let input = match call {
                Call::Hold {
                    job,
                    fragment,
                    site,
                    reservation,
                } => Input::Held {
                    job,
                    fragment,
                    site,
                    reservation,
                    answer: Err(why),
                },
                Call::Commit { job, fragment, .. } => Input::Committed {
                    job,
                    fragment,
                    answer: Err(why),
                },
                // The user asks again.
                Call::Cancel { job, .. } => {
                    self.live.as_mut().expect("up").cancelling.remove(&job);
                    continue;
                }
            };
            self.feed(now_ms, input, out);
        }
        let n = self.store.applied.len();
        for site in 0..n {
            let live = self.live.as_mut().expect("up");
            let silent = now_ms.saturating_sub(live.heard[site]) > SILENT_MS;
            if silent && live.reachable[site] {
                live.reachable[site] = false;
                out.note(|| format!("meta: site {site} unreachable"));
                let input = Input::Link {
                    site,
                    reachable: false,
                    at_ms: now_ms,
                };
                self.feed(now_ms, input, out);
            }
        }
        self.feed(now_ms, Input::Tick { at_ms: now_ms }, out);
        let live = self.live.as_mut().expect("up");
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut live.retries)
            .into_iter()
            .partition(|(at, _)| *at <= now_ms);
        live.retries = later;
        for (_, job) in due {
            self.feed(now_ms, Input::Retry { job }, out);
        }
        let live = self.live.as_mut().expect("up");
        for (id, j) in &self.store.jobs {
            match &j.state {
                MState::Site { site, .. } if !live.acked.contains(&(*site, *id)) => {
                    let msg = Msg::Enqueue {
                        job: j.job.clone(),
                        priority: j.priority,
                        claim: true,
                    };
                    out.send(To::Meta, To::Site(*site), msg);
                }
                MState::Split { frags, .. } => {
                    for f in frags {
                        if f.ended.is_none() && !live.acked.contains(&(f.site, *id)) {
                            let msg = Msg::Enqueue {
                                job: f.job.clone(),
                                priority: j.priority,
                                claim: false,
                            };
                            out.send(To::Meta, To::Site(f.site), msg);
                        }
                    }
                }
                _ => {}
            }
        }
        for site in 0..n {
            let from = self.store.applied[site] + 1;
            out.send(To::Meta, To::Site(site), Msg::Pull { from });
        }
        self.release(now_ms, out);
    }
}
