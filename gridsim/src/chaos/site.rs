//! A site in the grid's deterministic simulation: the local scheduler's shell around its cluster
//! runner, with the store it writes (jobs, events, committed reservations: durable; tentative
//! holds and the starts waiting for their claim: memory only, lost with a crash), and its agent,
//! whose processes outlive the local scheduler and die with the agent.

use super::Mutation;
use super::net::{Msg, SiteCancel, SiteEvent, To};
use super::world::{Ev, Out};
use gridsched_core::dispatch::Priority;
use gridsched_core::model::{Job, JobId, MachineId, Outcome, Platform, ReservationId, Time};
use gridsched_core::policy::{AdvanceReservation, PolicyConfig, PolicyKind};
use gridsched_core::runner::{ClusterRunner, Effect, Input, RunnerConfig, Started};
use std::collections::BTreeMap;

/// How long a tentative hold lives without its commit, ms.
pub(super) const LEASE_MS: u64 = 10_000;

/// Where a job stands in the site's store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum SState {
    Queued,
    Running { machine: MachineId, since: Time },
    Ended(Outcome),
    Withdrawn,
    Refused,
}

/// A job in the site's store.
#[derive(Clone, Debug)]
pub(super) struct SJob {
    pub job: Job,
    pub priority: Priority,
    /// It starts only once the meta-scheduler grants its claim.
    pub claim: bool,
    pub claimed: bool,
    pub state: SState,
}

/// What the site has made durable.
#[derive(Clone, Debug, Default)]
pub(super) struct SiteStore {
    pub jobs: BTreeMap<JobId, SJob>,
    pub events: Vec<SiteEvent>,
    /// Events written (all of them, unless [`Mutation::EventsNotDurable`]).
    pub durable_events: usize,
    pub committed: BTreeMap<ReservationId, AdvanceReservation>,
}

impl SiteStore {
    /// Appends an event, written at once (unless [`Mutation::EventsNotDurable`]).
    fn event(&mut self, e: SiteEvent, mutation: Option<Mutation>) {
        self.events.push(e);
        if mutation != Some(Mutation::EventsNotDurable) {
            self.durable_events = self.events.len();
        }
    }
}

/// What a running local scheduler has in memory only.
#[derive(Debug)]
pub(super) struct SiteLive {
    pub runner: ClusterRunner,
    /// Tentative holds: asked at, lapses at (ms).
    pub tentative: BTreeMap<ReservationId, (u64, u64)>,
    /// Starts the policy made that wait for their claim.
    pub held: BTreeMap<JobId, Started>,
}

/// One process of the agent.
#[derive(Clone, Copy, Debug)]
pub(super) struct Process {
    pub token: u64,
}

/// A site: its store, its local scheduler when up, its agent.
#[derive(Debug)]
pub(super) struct Site {
    pub index: usize,
    pub store: SiteStore,
    pub live: Option<SiteLive>,
    /// The agent's processes.
    pub procs: BTreeMap<JobId, Process>,
    /// Processes that ended while the local scheduler was down.
    pub ended_while_down: Vec<JobId>,
    platform: Platform,
    mutation: Option<Mutation>,
}

impl Site {
    pub(super) fn new(index: usize, platform: &Platform, mutation: Option<Mutation>) -> Site {
        let mut s = Site {
            index,
            store: SiteStore::default(),
            live: None,
            procs: BTreeMap::new(),
            ended_while_down: Vec::new(),
            platform: platform.clone(),
            mutation,
        };
        s.live = Some(s.fresh_live());
        s
    }

    fn fresh_live(&self) -> SiteLive {
        let cluster = gridsched_core::model::ClusterId(self.index as u32);
        let policy = PolicyConfig::new(PolicyKind::Easy)
            .build(&self.platform, cluster)
            .expect("EASY runs a one-machine site");
        SiteLive {
            runner: ClusterRunner::new(&self.platform, cluster, policy, RunnerConfig::default())
                .expect("the site's cluster"),
            tentative: BTreeMap::new(),
            held: BTreeMap::new(),
        }
    }

    fn event(&mut self, e: SiteEvent) {
        self.store.event(e, self.mutation);
    }

    /// The local scheduler crashes: what it had in memory is gone.
    pub(super) fn crash(&mut self) {
        self.live = None;
        self.store.events.truncate(self.store.durable_events);
    }

    /// It restarts from its store: committed reservations first, then the jobs its agent still
    /// runs, then the queued ones; jobs its agent no longer runs failed.
    pub(super) fn restart(&mut self, now_ms: u64, out: &mut Out) {
        let now = (now_ms / 1000) as Time;
        let mut live = self.fresh_live();
        let mut fx = Vec::new();
        self.store.committed.retain(|_, r| r.end > now);
        // The part still ahead (or in force) of each committed reservation.
        let committed: Vec<AdvanceReservation> = (self.store.committed.values())
            .map(|r| AdvanceReservation {
                start: r.start.max(now),
                ..r.clone()
            })
            .collect();
        for r in committed {
            if let Err(e) = live.runner.on(
                now,
                Input::Reserve {
                    reservation: r.clone(),
                },
                &mut fx,
            ) {
                out.note(|| {
                    format!(
                        "site {} restart: reservation r{} lost: {e}",
                        self.index, r.id.0
                    )
                });
                self.store.committed.remove(&r.id);
            }
        }
        let ids: Vec<JobId> = self.store.jobs.keys().copied().collect();
        let mut queued = Vec::new();
        for id in ids {
            let j = self.store.jobs[&id].clone();
            match j.state {
                SState::Running { machine, since } => {
                    let input = Input::Restore {
                        job: j.job.clone(),
                        priority: Some(j.priority),
                        machine,
                        started: since,
                        nodes: Vec::new(),
                    };
                    let alive = self.procs.contains_key(&id) || self.ended_while_down.contains(&id);
                    match live.runner.on(now, input, &mut fx) {
                        Ok(()) if alive => {}
                        Ok(()) => {
                            let _ = live.runner.on(now, Input::Cancel { job: id }, &mut fx);
                            self.end(id, Outcome::Failed);
                        }
                        Err(e) => {
                            // E.g. its reservation is over: it ends here, as its process did
                            // (or killed, with the reason).
                            out.note(|| {
                                format!("site {}: j{} not restored: {e}", self.index, id.0)
                            });
                            let before = self.ended_while_down.len();
                            self.ended_while_down.retain(|j| *j != id);
                            if self.ended_while_down.len() < before {
                                self.end(id, Outcome::Completed);
                            } else {
                                self.procs.remove(&id);
                                self.end(id, Outcome::Failed);
                            }
                        }
                    }
                }
                SState::Queued => queued.push(j),
                _ => {}
            }
        }
        for j in queued {
            let input = Input::Submit {
                job: j.job.clone(),
                priority: Some(j.priority),
            };
            if let Err(e) = live.runner.on(now, input, &mut fx) {
                self.store.jobs.get_mut(&j.job.id).expect("queued").state = SState::Refused;
                self.event(SiteEvent::Refused(j.job.id, e.to_string()));
            }
        }
        self.live = Some(live);
        for id in std::mem::take(&mut self.ended_while_down) {
            self.process_ended(now_ms, id, out);
        }
        self.pass(now_ms, out);
    }

    fn end(&mut self, id: JobId, outcome: Outcome) {
        if let Some(j) = self.store.jobs.get_mut(&id) {
            j.state = SState::Ended(outcome);
        }
        self.event(SiteEvent::Ended(id, outcome));
    }

    /// A scheduling pass; its starts run, or wait for their claim.
    pub(super) fn pass(&mut self, now_ms: u64, out: &mut Out) {
        let now = (now_ms / 1000) as Time;
        let Some(live) = self.live.as_mut() else {
            return;
        };
        let mut fx = Vec::new();
        if let Err(e) = live.runner.on(now, Input::Pass, &mut fx) {
            out.error(format!("site {}: pass: {e}", self.index));
        }
        let mut ask = Vec::new();
        for e in fx {
            if let Effect::Dropped { job } = e {
                out.note(|| {
                    format!(
                        "site {}: j{} dropped: {}",
                        self.index,
                        job.0,
                        gridsched_core::runner::DROPPED
                    )
                });
                if let Some(j) = self.store.jobs.get_mut(&job) {
                    j.state = SState::Refused;
                }
                self.store.event(
                    SiteEvent::Refused(job, gridsched_core::runner::DROPPED.into()),
                    self.mutation,
                );
                continue;
            }
            if let Effect::Start(s) = e {
                let Some(j) = self.store.jobs.get(&s.job) else {
                    continue;
                };
                let needs =
                    j.claim && !j.claimed && self.mutation != Some(Mutation::StartWithoutClaim);
                if needs {
                    ask.push(s.job);
                    self.live.as_mut().expect("up").held.insert(s.job, s);
                } else {
                    self.start(now_ms, s, out);
                }
            }
        }
        if !ask.is_empty() {
            out.send(
                To::Site(self.index),
                To::Meta,
                Msg::Claims {
                    site: self.index,
                    start: ask,
                    waiting: Vec::new(),
                },
            );
        }
    }

    fn start(&mut self, now_ms: u64, s: Started, out: &mut Out) {
        let now = (now_ms / 1000) as Time;
        let token = out.token();
        self.procs.insert(s.job, Process { token });
        let j = self
            .store
            .jobs
            .get_mut(&s.job)
            .expect("a started job is stored");
        j.state = SState::Running {
            machine: s.machine,
            since: now,
        };
        // Fragments are the jobs queued without a claim.
        let fragment = !j.claim;
        out.started(s.job, self.index, now, fragment);
        out.note(|| format!("site {}: j{} started", self.index, s.job.0));
        self.event(SiteEvent::Started(s.job));
        let end = now_ms + 1000 * s.run.max(1) as u64;
        out.timer(
            end,
            Ev::ProcessEnd {
                site: self.index,
                job: s.job,
                token,
            },
        );
    }

    /// The agent reports a process's end (kept until the local scheduler is up).
    pub(super) fn process_ended(&mut self, now_ms: u64, id: JobId, out: &mut Out) {
        let now = (now_ms / 1000) as Time;
        let Some(live) = self.live.as_mut() else {
            self.ended_while_down.push(id);
            return;
        };
        let mut fx = Vec::new();
        match live.runner.on(now, Input::Ended { job: id }, &mut fx) {
            Ok(()) => self.end(id, Outcome::Completed),
            Err(e) => out.error(format!("site {}: end of j{}: {e}", self.index, id.0)),
        }
        out.note(|| format!("site {}: j{} ended", self.index, id.0));
        self.pass(now_ms, out);
    }

    /// The agent is lost: its processes die, their jobs fail.
    pub(super) fn agent_lost(&mut self, now_ms: u64, out: &mut Out) {
        let now = (now_ms / 1000) as Time;
        let lost: Vec<JobId> = std::mem::take(&mut self.procs).into_keys().collect();
        if self.live.is_none() {
            // The restarted local scheduler finds them gone.
            return;
        }
        for id in lost {
            let mut fx = Vec::new();
            let live = self.live.as_mut().expect("up");
            if let Err(e) = live.runner.on(now, Input::Cancel { job: id }, &mut fx) {
                out.error(format!("site {}: lost j{}: {e}", self.index, id.0));
            }
            out.note(|| format!("site {}: j{} lost with the agent", self.index, id.0));
            self.end(id, Outcome::Failed);
        }
        self.pass(now_ms, out);
    }

    /// Every second: holds past their lease lapse, reservations over are forgotten, the held and
    /// unclaimed jobs are listed to the meta-scheduler, a pass.
    pub(super) fn tick(&mut self, now_ms: u64, out: &mut Out) {
        let now = (now_ms / 1000) as Time;
        if self.mutation == Some(Mutation::EventsNotDurable) && now % 5 == 0 {
            self.store.durable_events = self.store.events.len();
        }
        let Some(live) = self.live.as_mut() else {
            return;
        };
        let lapsed: Vec<ReservationId> = (live.tentative.iter())
            .filter(|(_, (_, until))| *until <= now_ms)
            .map(|(id, _)| *id)
            .collect();
        let mut fx = Vec::new();
        for id in lapsed {
            live.tentative.remove(&id);
            let _ = live
                .runner
                .on(now, Input::CancelReservation { id }, &mut fx);
            out.note(|| format!("site {}: hold r{} lapsed", self.index, id.0));
        }
        self.store.committed.retain(|_, r| r.end >= now);
        let start: Vec<JobId> = live.held.keys().copied().collect();
        let waiting: Vec<JobId> = (self.store.jobs.iter())
            .filter(|(id, j)| {
                j.claim && !j.claimed && j.state == SState::Queued && !live.held.contains_key(id)
            })
            .map(|(id, _)| *id)
            .collect();
        if !start.is_empty() || !waiting.is_empty() {
            let site = self.index;
            out.send(
                To::Site(self.index),
                To::Meta,
                Msg::Claims {
                    site,
                    start,
                    waiting,
                },
            );
        }
        self.pass(now_ms, out);
    }

    /// A message from the meta-scheduler.
    pub(super) fn on(&mut self, now_ms: u64, msg: Msg, out: &mut Out) {
        let now = (now_ms / 1000) as Time;
        let site = self.index;
        let Some(live) = self.live.as_mut() else {
            return;
        };
        let mut fx = Vec::new();
        match msg {
            Msg::Enqueue {
                mut job,
                priority,
                claim,
            } => {
                let id = job.id;
                let fresh = self
                    .store
                    .jobs
                    .get(&id)
                    .is_none_or(|j| j.state == SState::Withdrawn);
                if fresh {
                    if self.mutation == Some(Mutation::FragmentsAnyTime) {
                        job.reservation = None;
                    }
                    let input = Input::Submit {
                        job: job.clone(),
                        priority: Some(priority),
                    };
                    let state = match live.runner.on(now, input, &mut fx) {
                        Ok(()) => SState::Queued,
                        Err(e) => {
                            out.note(|| format!("site {site}: j{} refused: {e}", id.0));
                            let refused = SiteEvent::Refused(id, e.to_string());
                            self.store.event(refused, self.mutation);
                            SState::Refused
                        }
                    };
                    out.note(|| format!("site {site}: j{} queued", id.0));
                    self.store.jobs.insert(
                        id,
                        SJob {
                            job,
                            priority,
                            claim,
                            claimed: false,
                            state,
                        },
                    );
                }
                let events = self.store.events.len() as u64;
                out.send(
                    To::Site(site),
                    To::Meta,
                    Msg::Enqueued {
                        site,
                        job: id,
                        events,
                    },
                );
                self.pass(now_ms, out);
            }
            Msg::ClaimAnswer { granted, withdrawn } => {
                let mut go = Vec::new();
                for id in granted {
                    let Some(j) = self.store.jobs.get_mut(&id) else {
                        continue;
                    };
                    j.claimed = true;
                    if let Some(s) = live.held.remove(&id) {
                        go.push(s);
                    }
                }
                for id in withdrawn {
                    let Some(j) = self.store.jobs.get_mut(&id) else {
                        continue;
                    };
                    let held = live.held.remove(&id).is_some();
                    if held || (j.state == SState::Queued && !j.claimed) {
                        let _ = live.runner.on(now, Input::Cancel { job: id }, &mut fx);
                        j.state = SState::Withdrawn;
                        out.note(|| format!("site {site}: j{} withdrawn", id.0));
                        self.store.event(SiteEvent::Withdrawn(id), self.mutation);
                    }
                }
                for s in go {
                    self.start(now_ms, s, out);
                }
                self.pass(now_ms, out);
            }
            Msg::Hold {
                call,
                reservation,
                from,
                length,
                procs,
            } => {
                let known = (live.runner.advance_reservations().into_iter())
                    .find(|a| a.id == reservation)
                    .map(|a| a.start);
                let answer = match known {
                    Some(start) => Ok(start),
                    None => {
                        let ask = Input::ReserveEarliest {
                            reservation: AdvanceReservation::new(
                                reservation.0,
                                from,
                                from + length,
                                procs,
                            ),
                        };
                        match live.runner.on(now, ask, &mut fx) {
                            Ok(()) => {
                                let lease = if self.mutation == Some(Mutation::HoldsWithoutLease) {
                                    u64::MAX
                                } else {
                                    now_ms + LEASE_MS
                                };
                                live.tentative.insert(reservation, (now_ms, lease));
                                let held = live.runner.advance_reservations();
                                Ok(held
                                    .iter()
                                    .find(|a| a.id == reservation)
                                    .expect("held")
                                    .start)
                            }
                            Err(e) => Err(e.to_string()),
                        }
                    }
                };
                out.note(|| format!("site {site}: hold r{} → {answer:?}", reservation.0));
                out.send(To::Site(site), To::Meta, Msg::HeldAnswer { call, answer });
            }
            Msg::Commit { call, reservation } => {
                let answer = if live.tentative.remove(&reservation).is_some() {
                    let r = (live.runner.advance_reservations().into_iter())
                        .find(|a| a.id == reservation)
                        .expect("a tentative hold is held");
                    let start = r.start;
                    self.store.committed.insert(reservation, r);
                    Ok(start)
                } else if let Some(r) = self.store.committed.get(&reservation) {
                    Ok(r.start)
                } else {
                    Err(format!("reservation r{} is not held here", reservation.0))
                };
                out.note(|| format!("site {site}: commit r{} → {answer:?}", reservation.0));
                out.send(To::Site(site), To::Meta, Msg::CommitAnswer { call, answer });
            }
            Msg::LetGo(id) => {
                live.tentative.remove(&id);
                self.store.committed.remove(&id);
                let _ = live
                    .runner
                    .on(now, Input::CancelReservation { id }, &mut fx);
                out.note(|| format!("site {site}: r{} let go", id.0));
                self.pass(now_ms, out);
            }
            Msg::Kill(id) => {
                let running = matches!(
                    self.store.jobs.get(&id).map(|j| &j.state),
                    Some(SState::Running { .. })
                );
                let queued = matches!(
                    self.store.jobs.get(&id).map(|j| &j.state),
                    Some(SState::Queued)
                );
                if running || queued {
                    self.procs.remove(&id);
                    live.held.remove(&id);
                    let _ = live.runner.on(now, Input::Cancel { job: id }, &mut fx);
                    out.note(|| format!("site {site}: j{} killed", id.0));
                    self.end(id, Outcome::Failed);
                }
                self.pass(now_ms, out);
            }
            Msg::CancelJob { call, job } => {
                let state = self.store.jobs.get(&job).map(|j| j.state.clone());
                let answer = match state {
                    Some(SState::Running { .. }) | Some(SState::Queued) => {
                        let running = matches!(state, Some(SState::Running { .. }));
                        self.procs.remove(&job);
                        live.held.remove(&job);
                        let _ = live.runner.on(now, Input::Cancel { job }, &mut fx);
                        self.end(job, Outcome::Cancelled { started: running });
                        if running {
                            SiteCancel::Killed
                        } else {
                            SiteCancel::Dequeued
                        }
                    }
                    Some(SState::Ended(_) | SState::Refused) => SiteCancel::Ended,
                    Some(SState::Withdrawn) | None => SiteCancel::NotHere,
                };
                out.note(|| format!("site {site}: cancel j{} → {answer:?}", job.0));
                out.send(To::Site(site), To::Meta, Msg::CancelAnswer { call, answer });
                self.pass(now_ms, out);
            }
            Msg::Pull { from } => {
                let first = from.max(1);
                let events: Vec<SiteEvent> = (self.store.events.iter())
                    .skip(first as usize - 1)
                    .take(64)
                    .cloned()
                    .collect();
                out.send(
                    To::Site(site),
                    To::Meta,
                    Msg::Events {
                        site,
                        first,
                        events,
                    },
                );
            }
            _ => {}
        }
    }
}
