//! The event loop of the grid's deterministic simulation: one virtual clock (ms), one queue of
//! events ordered by time then by the order they were scheduled, one seeded stream for the
//! network's choices; the client, the meta-scheduler and the sites as its actors; the faults of
//! the [`Plan`] injected at their times; the invariants checked after every step.

use super::check::{Check, Invariant};
use super::meta::Meta;
use super::net::{Msg, To, link_of};
use super::site::Site;
use super::{Failure, Fault, Mutation, Outcome, Plan};
use gridsched_core::model::{Job, JobId, Platform, Time};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, BTreeSet};

/// Virtual ms the run may take after the faults end before the grid must have settled.
const SETTLE_MS: u64 = 900_000;

/// `JobId(12)` as `j12` and `ReservationId(3)` as `r3`, as the notes name them.
fn short_ids(line: &str) -> String {
    let mut out = line.to_owned();
    for (long, short) in [("JobId(", "j"), ("ReservationId(", "r")] {
        while let Some(at) = out.find(long) {
            let digits = out[at + long.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .count();
            let end = at + long.len() + digits;
            let tail = if out[end..].starts_with(')') {
                end + 1
            } else {
                end
            };
            out = format!(
                "{}{short}{}{}",
                &out[..at],
                &out[at + long.len()..end],
                &out[tail..]
            );
        }
    }
    out
}

/// Something due at a time.
#[derive(Clone, Debug)]
pub(super) enum Ev {
    Deliver { from: To, to: To, msg: Box<Msg> },
    MetaTick,
    SiteTick(usize),
    ClientTick,
    ProcessEnd { site: usize, job: JobId, token: u64 },
    Fault(Fault),
    MetaRestart,
    SiteRestart(usize),
    Heal(usize),
}

/// What an actor's step produced: messages, timers, what the checker observes, notes.
#[derive(Debug, Default)]
pub(super) struct Out {
    pub sends: Vec<(To, To, Msg)>,
    pub timers: Vec<(u64, Ev)>,
    /// Process starts: job, site, second, a fragment.
    pub starts: Vec<(JobId, usize, Time, bool)>,
    pub errors: Vec<String>,
    pub notes: Option<Vec<String>>,
    next_token: u64,
}

impl Out {
    pub(super) fn send(&mut self, from: To, to: To, msg: Msg) {
        self.sends.push((from, to, msg));
    }
    pub(super) fn timer(&mut self, at_ms: u64, ev: Ev) {
        self.timers.push((at_ms, ev));
    }
    pub(super) fn started(&mut self, job: JobId, site: usize, at: Time, fragment: bool) {
        self.starts.push((job, site, at, fragment));
    }
    pub(super) fn error(&mut self, e: String) {
        self.errors.push(e);
    }
    /// A line of the trace, formatted only when the trace is recorded.
    pub(super) fn note(&mut self, line: impl FnOnce() -> String) {
        if let Some(n) = self.notes.as_mut() {
            n.push(line());
        }
    }
    /// A number never given before in this run (call ids, process tokens).
    pub(super) fn token(&mut self) -> u64 {
        self.next_token += 1;
        self.next_token
    }
}

/// The client: its jobs, and which were acknowledged.
#[derive(Debug, Default)]
struct Client {
    jobs: Vec<(u64, Job)>,
    next: usize,
    pending: BTreeMap<JobId, Job>,
    /// Cancellations: when each is due (ms), then sent until answered done.
    cancels: Vec<(u64, JobId)>,
    cancelling: BTreeSet<JobId>,
}

pub(super) struct World {
    seed: u64,
    plan: Plan,
    now: u64,
    queue: BTreeMap<(u64, u64), Ev>,
    seq: u64,
    rng: ChaCha8Rng,
    pub(super) meta: Meta,
    pub(super) sites: Vec<Site>,
    client: Client,
    pub(super) check: Check,
    out: Out,
    cut: Vec<u32>,
    steps: u64,
    lost: u64,
    duplicated: u64,
    trace: Vec<String>,
}

impl World {
    pub(super) fn new(seed: u64, plan: Plan, mutation: Option<Mutation>, trace: bool) -> World {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let names: Vec<String> = (0..plan.sites).map(|i| format!("s{i}")).collect();
        let platform =
            Platform::single_machine_sites(names.iter().map(|n| (n.as_str(), plan.procs)));
        let sites = (0..plan.sites)
            .map(|i| Site::new(i, &platform, mutation))
            .collect();
        let mut client = Client::default();
        for k in 0..plan.jobs {
            let at = rng.random_range(0..60_000u64);
            let wide = rng.random_range(0..5) == 0;
            let procs = if wide {
                rng.random_range(plan.procs + 1..=plan.procs * 2)
            } else {
                rng.random_range(1..=plan.procs)
            };
            let estimate = rng.random_range(5..=40);
            let runtime = (estimate - rng.random_range(0..5)).max(1);
            let job = Job::new(
                u64::from(k) + 1,
                (at / 1000) as Time,
                procs,
                estimate,
                runtime,
            );
            // One job in seven is cancelled by its user, from a second after its submission on
            // (not a split job: see docs/reliability.md, "what it does not model").
            if rng.random_range(0..7) == 0 && !wide {
                let when = at + rng.random_range(1_000..45_000);
                client.cancels.push((when, job.id));
            }
            client.jobs.push((at, job));
        }
        client.jobs.sort_by_key(|(at, j)| (*at, j.id));
        let mut w = World {
            seed,
            meta: Meta::new(&platform, 0, mutation),
            sites,
            client,
            check: Check::default(),
            out: Out {
                notes: trace.then(Vec::new),
                ..Out::default()
            },
            cut: vec![0; plan.sites],
            now: 0,
            queue: BTreeMap::new(),
            seq: 0,
            rng,
            steps: 0,
            lost: 0,
            duplicated: 0,
            trace: Vec::new(),
            plan,
        };
        w.at(0, Ev::MetaTick);
        w.at(0, Ev::ClientTick);
        for s in 0..w.plan.sites {
            w.at(250 + 100 * s as u64, Ev::SiteTick(s));
        }
        for (at, f) in w.plan.faults.clone() {
            w.at(at, Ev::Fault(f));
        }
        w
    }

    fn at(&mut self, at_ms: u64, ev: Ev) {
        self.seq += 1;
        self.queue.insert((at_ms, self.seq), ev);
    }

    pub(super) fn take_trace(&mut self) -> Vec<String> {
        std::mem::take(&mut self.trace)
    }

    fn faulty(&self) -> bool {
        self.now < self.plan.faults_end_ms
    }

    /// A trace line for a message (job and reservation ids as "j12", "r3").
    fn traced(&mut self, from: To, to: To, msg: &Msg, what: &str) {
        if self.out.notes.is_some() {
            let line = short_ids(&format!("{from:?} → {to:?}: {msg:?}{what}"));
            let now = self.now;
            self.trace.push(format!("{now:>7} ms  {line}"));
        }
    }

    /// Sends a message through the network.
    fn send(&mut self, from: To, to: To, msg: Msg) {
        if let Some(s) = link_of(from, to)
            && self.cut[s] > 0
        {
            self.lost += 1;
            self.traced(from, to, &msg, " — lost (link cut)");
            return;
        }
        let (loss, dup, delay) = if self.faulty() {
            (
                self.plan.loss_permille,
                self.plan.dup_permille,
                self.plan.max_delay_ms,
            )
        } else {
            (0, 0, 50)
        };
        if self.rng.random_range(0..1000) < loss {
            self.lost += 1;
            self.traced(from, to, &msg, " — lost");
            return;
        }
        let copies = if self.rng.random_range(0..1000) < dup {
            self.duplicated += 1;
            2
        } else {
            1
        };
        for _ in 0..copies {
            let d = self.rng.random_range(1..=delay);
            let ev = Ev::Deliver {
                from,
                to,
                msg: Box::new(msg.clone()),
            };
            self.at(self.now + d, ev);
        }
    }

    /// Runs until the grid settles after the faults, or an invariant breaks.
    pub(super) fn run(&mut self) -> Result<Outcome, Box<Failure>> {
        while let Some(((at, _), ev)) = self.queue.pop_first() {
            self.now = at;
            self.steps += 1;
            self.step(ev);
            self.flush();
            if let Some(e) = std::mem::take(&mut self.out.errors).into_iter().next() {
                return Err(self.failure(Invariant::RunnerRefused, e));
            }
            let settled = !self.faulty() && self.settled();
            let mut check = std::mem::take(&mut self.check);
            let checked = check.after_step(self, settled);
            self.check = check;
            if let Err((invariant, detail)) = checked {
                return Err(self.failure(invariant, detail));
            }
            if settled {
                return Ok(self.outcome());
            }
            if self.now > self.plan.faults_end_ms + SETTLE_MS {
                let detail = super::check::unsettled(self);
                return Err(self.failure(Invariant::Disagree, detail));
            }
        }
        unreachable!("the ticks never stop")
    }

    fn failure(&mut self, invariant: Invariant, detail: String) -> Box<Failure> {
        Box::new(Failure {
            seed: self.seed,
            plan: self.plan.clone(),
            invariant,
            at_ms: self.now,
            detail,
            trace: Vec::new(),
        })
    }

    /// Every acknowledged job is over at the meta-scheduler and at its sites, and the client has
    /// nothing left to send.
    fn settled(&self) -> bool {
        self.client.next == self.client.jobs.len()
            && self.client.pending.is_empty()
            && self.client.cancelling.is_empty()
            && self.client.cancels.is_empty()
            && self.meta.live.is_some()
            && self.sites.iter().all(|s| s.live.is_some())
            && self.meta.store.jobs.values().all(|j| j.state.terminal())
            && self.sites.iter().all(|s| {
                s.procs.is_empty()
                    && s.store.jobs.values().all(|j| {
                        !matches!(
                            j.state,
                            super::site::SState::Queued | super::site::SState::Running { .. }
                        )
                    })
                    && s.live
                        .as_ref()
                        .is_some_and(|l| l.tentative.is_empty() && l.held.is_empty())
            })
            && (0..self.sites.len())
                .all(|i| self.meta.store.applied[i] == self.sites[i].store.events.len() as u64)
    }

    fn outcome(&self) -> Outcome {
        let mut o = Outcome {
            steps: self.steps,
            jobs: self.check.acked_count(),
            faults: self.plan.faults.len() as u32,
            lost: self.lost,
            duplicated: self.duplicated,
            settled_ms: self.now,
            ..Outcome::default()
        };
        for j in self.meta.store.jobs.values() {
            match j.state {
                super::meta::MState::Ended(gridsched_core::model::Outcome::Completed) => {
                    o.completed += 1;
                    if j.job.procs > self.plan.procs {
                        o.split += 1;
                    }
                }
                super::meta::MState::Ended(gridsched_core::model::Outcome::Cancelled {
                    ..
                }) => {
                    o.cancelled += 1;
                }
                super::meta::MState::Ended(_) => o.failed += 1,
                super::meta::MState::Refused => o.refused += 1,
                _ => {}
            }
        }
        o
    }

    /// Takes one event.
    fn step(&mut self, ev: Ev) {
        let now = self.now;
        let out = &mut self.out;
        if out.notes.is_some() {
            let line = match &ev {
                Ev::Deliver { from, to, msg } => format!("{from:?} → {to:?}: {msg:?}"),
                Ev::Fault(f) => format!("FAULT {f}"),
                Ev::MetaRestart => "FAULT meta-scheduler restarts".to_owned(),
                Ev::SiteRestart(s) => format!("FAULT site {s} restarts"),
                Ev::Heal(s) => format!("FAULT site {s}'s link heals"),
                Ev::ProcessEnd { site, job, .. } => {
                    format!("site {site}: process of j{} ends", job.0)
                }
                _ => String::new(),
            };
            if !line.is_empty() {
                // Job ids print as "j<id> " so that a trace can be filtered by job.
                let line = short_ids(&line);
                self.trace.push(format!("{now:>7} ms  {line}"));
            }
        }
        match ev {
            Ev::Deliver { from, to, msg } => {
                if let Some(s) = link_of(from, to)
                    && self.cut[s] > 0
                {
                    self.lost += 1;
                    self.traced(from, to, &msg, " — lost (link cut)");
                    return;
                }
                match to {
                    To::Client => match *msg {
                        Msg::Ack(id) => {
                            self.client.pending.remove(&id);
                            self.check.acked(id);
                        }
                        Msg::Cancelled { job, done: true } => {
                            self.client.cancelling.remove(&job);
                        }
                        _ => {}
                    },
                    To::Meta => self.meta.on(now, *msg, out),
                    To::Site(s) => self.sites[s].on(now, *msg, out),
                }
            }
            Ev::MetaTick => {
                self.meta.tick(now, out);
                self.at(now + 1000, Ev::MetaTick);
            }
            Ev::SiteTick(s) => {
                self.sites[s].tick(now, out);
                self.at(now + 1000, Ev::SiteTick(s));
            }
            Ev::ClientTick => {
                while self.client.next < self.client.jobs.len()
                    && self.client.jobs[self.client.next].0 <= now
                {
                    let job = self.client.jobs[self.client.next].1.clone();
                    self.client.pending.insert(job.id, job);
                    self.client.next += 1;
                }
                let pending: Vec<Job> = self.client.pending.values().cloned().collect();
                for job in pending {
                    self.out.send(To::Client, To::Meta, Msg::Submit(job));
                }
                // A cancellation is asked once its job was acknowledged.
                let acked = |id: &JobId| self.check.is_acked(*id);
                let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.client.cancels)
                    .into_iter()
                    .partition(|(at, id)| *at <= now && acked(id));
                self.client.cancels = later;
                self.client
                    .cancelling
                    .extend(due.into_iter().map(|(_, id)| id));
                for &id in &self.client.cancelling {
                    self.out.send(To::Client, To::Meta, Msg::Cancel(id));
                }
                self.at(now + 1000, Ev::ClientTick);
            }
            Ev::ProcessEnd { site, job, token } => {
                let s = &mut self.sites[site];
                if s.procs.get(&job).is_some_and(|p| p.token == token) {
                    s.procs.remove(&job);
                    s.process_ended(now, job, out);
                }
            }
            Ev::Fault(f) => match f {
                Fault::MetaCrash { down_ms } => {
                    if self.meta.live.is_some() {
                        self.meta.crash();
                        self.at(now + down_ms, Ev::MetaRestart);
                    }
                }
                Fault::SiteCrash { site, down_ms } => {
                    if self.sites[site].live.is_some() {
                        self.sites[site].crash();
                        self.at(now + down_ms, Ev::SiteRestart(site));
                    }
                }
                Fault::Partition { site, ms } => {
                    self.cut[site] += 1;
                    self.at(now + ms, Ev::Heal(site));
                }
                Fault::AgentLost { site } => self.sites[site].agent_lost(now, out),
            },
            Ev::MetaRestart => {
                self.meta.restart(now, out);
            }
            Ev::SiteRestart(s) => {
                self.sites[s].restart(now, out);
            }
            Ev::Heal(s) => {
                self.cut[s] -= 1;
            }
        }
    }

    /// Sends what the step produced, from `actor`, and schedules its timers.
    fn flush(&mut self) {
        if let Some(n) = self.out.notes.as_mut() {
            let now = self.now;
            self.trace
                .extend(n.drain(..).map(|l| format!("{now:>7} ms    {l} ")));
        }
        for (at, ev) in std::mem::take(&mut self.out.timers) {
            self.at(at, ev);
        }
        for (from, to, msg) in std::mem::take(&mut self.out.sends) {
            self.send(from, to, msg);
        }
        for (job, site, at, fragment) in std::mem::take(&mut self.out.starts) {
            self.check.start(job, site, at, fragment);
        }
    }

    pub(super) fn now(&self) -> u64 {
        self.now
    }
}
