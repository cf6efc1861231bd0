//! The meta-scheduler's in-memory view of the grid (the Meta-Scheduler of spec
//! `two-level-grid-scheduler.md` D3): every job by id, the idempotency tokens, the grid runner
//! that decides ([`Decider`]) with the explanations of its decisions, what each site still has to
//! receive, the last event applied from each local scheduler, and the retained job events, kept
//! in step with the durable [`Store`](crate::store::Store). Every decision — classification,
//! dispatch, the meta-level queue, withdrawal from a site gone down, co-allocation — is the
//! runner's: the state feeds it what happens ([`State::drive`]) and records what it decides
//! (`effects.rs`).
//!
//! Every change goes through [`State`] methods that record what a [`Batch`] must commit; the
//! service commits the batch in one transaction and publishes its events only then.
//!
//! Job life cycle at the meta level: ACCEPTED (classified; assigned a site, or waiting for one
//! that is up) → DISPATCHED (written durably *before* the Enqueue call, so a job that may have
//! reached a site is never dispatched elsewhere) → QUEUED / RUNNING / terminal, as the site's
//! local scheduler reports them through its event stream.
//!
//! Start claims (the protocol of `docs/live-grid.md`): a job dispatched with `start_claims` starts
//! at its site only once [`State::claims`] has granted it, durably (`claimed_by`); from then on it
//! stays with that site. When a site goes down, its ACCEPTED jobs and its unclaimed DISPATCHED /
//! QUEUED ones are withdrawn and dispatched again ([`State::redispatch`]); the site is told on its
//! next claim or when its StartClaims link opens again, and drops them unstarted. So a job waiting
//! at a down site runs elsewhere, and no job runs at two sites.

use crate::config::SiteConfig;
use crate::decide::Decider;
use gridsched_core::dispatch::Priority;
use gridsched_core::grid::{Input, Restored};
use gridsched_core::model::{Ended, JobId, Outcome, ReservationId};
use gridsched_proto::v1::{self, JobState};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

pub use crate::explain::Decision;

/// What one state change must write and publish.
#[derive(Debug, Default)]
pub struct Batch {
    /// Jobs changed.
    pub jobs: BTreeSet<u64>,
    /// Events to publish after the commit.
    pub events: Vec<v1::JobEvent>,
    /// Tokens recorded.
    pub tokens: Vec<(String, u64)>,
    /// Jobs whose decision changed.
    pub decisions: BTreeSet<u64>,
    /// Sites whose applied event sequence changed.
    pub site_seqs: BTreeSet<usize>,
    /// Sites that have new jobs to receive.
    pub wake: BTreeSet<usize>,
    /// Calls to the sites for co-allocations and reservations, in the order decided.
    pub calls: Vec<SiteCall>,
    /// Split jobs whose fragments are to be sent to their sites.
    pub send_fragments: Vec<u64>,
    /// The reservations of co-allocations every site committed (recorded PENDING, to be HELD).
    pub held: Vec<u64>,
    /// Fragments to kill.
    pub kill_fragments: Vec<FragmentKill>,
    /// Given-up co-allocations to try again: (job, when).
    pub retries: Vec<(u64, i64)>,
    /// Reservations to take back at their sites: (reservation, site).
    pub take_back: Vec<(u64, usize)>,
    /// Workflow nodes to cancel as their users would (their workflow stopped): job, why.
    pub stops: Vec<(u64, String)>,
    /// Reservations the grid forgot (to forget in the store).
    pub dropped_reservations: Vec<u64>,
    /// Jobs that finished in this batch (they leave memory after their retention).
    pub finished: Vec<u64>,
    /// The classifier classified jobs: its snapshot is written with them.
    pub classified: bool,
    /// A run may have been charged to its owner's fair share: the usage is written with it.
    pub charged: bool,
    /// New priorities of jobs queued at each site (the fair share's recalculation).
    pub reprioritize: BTreeMap<usize, Vec<v1::JobPriority>>,
}

/// A split job's fragment to kill at its site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FragmentKill {
    /// The site.
    pub site: usize,
    /// The job.
    pub job: u64,
    /// The run the fragment belongs to (a later run at the site is left alone).
    pub run: u32,
    /// Why, for the site's event.
    pub why: String,
}

/// A call to a site that a co-allocation (or a served reservation) needs, as the grid runner
/// decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SiteCall {
    /// Ask for a tentative hold at the site's earliest start from `from`.
    Hold {
        /// The job.
        job: u64,
        /// The fragment.
        fragment: usize,
        /// The site.
        site: usize,
        /// The reservation id.
        reservation: u64,
        /// The earliest start.
        from: i64,
        /// Seconds held.
        length: i64,
        /// Processors.
        procs: u32,
        /// The job's user.
        user: String,
    },
    /// Commit a hold (recorded first as the user's PENDING reservation).
    Commit {
        /// The job.
        job: u64,
        /// The fragment.
        fragment: usize,
        /// The site.
        site: usize,
        /// The reservation.
        reservation: u64,
        /// The common start.
        start: i64,
        /// Seconds held.
        length: i64,
        /// Processors.
        procs: u32,
        /// The job's user.
        user: String,
    },
    /// Let a hold or a reservation go.
    LetGo {
        /// The site.
        site: usize,
        /// The reservation.
        reservation: u64,
    },
}

/// The in-memory state.
#[derive(Debug)]
pub struct State {
    /// Every job by id.
    pub jobs: BTreeMap<u64, v1::Job>,
    /// `user \0 token` → job id.
    pub tokens: HashMap<String, u64>,
    /// Last job id given.
    pub last_id: u64,
    /// Last event sequence given.
    pub last_sequence: u64,
    /// Retained events, oldest first.
    pub events: VecDeque<v1::JobEvent>,
    /// Classification and dispatch.
    pub decider: Decider,
    /// Decisions by job.
    pub decisions: HashMap<u64, Decision>,
    /// Per site: ACCEPTED jobs assigned to it, not yet sent.
    pub outbox: Vec<BTreeSet<u64>>,
    /// Per site: DISPATCHED jobs whose Enqueue has not been confirmed.
    pub in_flight: Vec<BTreeSet<u64>>,
    /// Per site: the last local-scheduler event applied.
    pub site_seq: Vec<u64>,
    /// Per site: whether its event stream is connected now.
    pub reachable: Vec<bool>,
    /// The sites.
    pub sites: Vec<SiteConfig>,
    /// Highest priority.
    pub max_priority: u32,
    /// Dispatch new jobs under the start-claim protocol (`links.start_claims`).
    pub start_claims: bool,
    /// How many times a split job whose fragment failed is requeued (`links.fragment_requeues`).
    pub fragment_requeues: u32,
    /// Prometheus metrics.
    pub metrics: crate::metrics::MetaMetrics,
    /// Advance reservations by id as the API shows them (PENDING until their site admits
    /// them, then HELD); the grid runner keeps the book that decides.
    pub reservations: BTreeMap<u64, v1::AdvanceReservation>,
    /// Per site: the planned slots (start, end, machine) of its waiting jobs, as last polled.
    pub planned: Vec<HashMap<u64, v1::Reservation>>,
    /// Per site: its advance reservations with their jobs, as last polled.
    pub advance: Vec<Vec<v1::AdvanceReservation>>,
    /// Split jobs restored with fragments their sites may not have yet (sent again at start).
    pub resend: Vec<u64>,
    /// Retries the restore asked for (a job whose dependency's delay runs, an array that goes
    /// on releasing its tasks), scheduled at start.
    pub retries_at_start: Vec<(u64, i64)>,
    /// How long finished jobs and events stay in memory.
    pub retention: crate::history::RetentionConfig,
    /// The finished jobs in memory, oldest first, with when their end was committed.
    pub finished: VecDeque<(i64, u64)>,
}

fn rank(s: JobState) -> u8 {
    match s {
        JobState::Unspecified | JobState::Accepted => 0,
        JobState::Dispatched => 1,
        JobState::Queued => 2,
        JobState::Running | JobState::Suspended => 3,
        _ => 4,
    }
}

impl State {
    /// An empty state for these sites.
    pub fn new(sites: Vec<SiteConfig>, max_priority: u32, decider: Decider) -> State {
        let n = sites.len();
        State {
            jobs: BTreeMap::new(),
            tokens: HashMap::new(),
            last_id: 0,
            last_sequence: 0,
            events: VecDeque::new(),
            decider,
            decisions: HashMap::new(),
            outbox: vec![BTreeSet::new(); n],
            in_flight: vec![BTreeSet::new(); n],
            site_seq: vec![0; n],
            reachable: vec![false; n],
            sites,
            max_priority,
            start_claims: true,
            fragment_requeues: 0,
            metrics: crate::metrics::MetaMetrics::new(&mut Default::default()),
            reservations: BTreeMap::new(),
            planned: vec![HashMap::new(); n],
            advance: vec![Vec::new(); n],
            resend: Vec::new(),
            retries_at_start: Vec::new(),
            retention: Default::default(),
            finished: VecDeque::new(),
        }
    }

    /// After a committed batch: the jobs it finished start their retention, and the finished
    /// jobs and events past theirs leave memory (they stay in the store).
    pub fn retire(&mut self, finished: &[u64], now: i64) {
        self.finished.extend(finished.iter().map(|&id| (now, id)));
        let keep = i64::try_from(self.retention.finished_s).unwrap_or(i64::MAX);
        while let Some(&(at, id)) = self.finished.front() {
            if self.finished.len() <= self.retention.finished_max && at.saturating_add(keep) > now {
                break;
            }
            self.finished.pop_front();
            self.forget(id);
        }
        while self
            .events
            .front()
            .is_some_and(|e| e.time.saturating_add(keep) <= now)
        {
            self.events.pop_front();
        }
        self.compact();
    }

    /// Gives back the room a burst of jobs left in the maps once they have gone (Rust's
    /// collections keep their capacity): memory follows the live work.
    fn compact(&mut self) {
        use gridsched_core::structures::Shrink;
        self.tokens.shrink_if_sparse();
        self.events.shrink_if_sparse();
        self.decisions.shrink_if_sparse();
        self.finished.shrink_if_sparse();
        for p in &mut self.planned {
            p.shrink_if_sparse();
        }
        self.decider.compact();
    }

    /// Lets finished job `id` go from memory.
    fn forget(&mut self, id: u64) {
        if !self.jobs.get(&id).is_some_and(|j| j.state().is_terminal()) {
            return;
        }
        // A node of a workflow still running stays for its status (its workflow's end lets it
        // go).
        if let Some(w) = self.jobs[&id].workflow_id
            && self.decider.runner().workflow(JobId(w)).is_some()
        {
            return;
        }
        let job = self.jobs.remove(&id).expect("present");
        self.decisions.remove(&id);
        if let Some(key) = token_key(&job) {
            self.tokens.remove(&key);
        }
    }

    /// Counts a dispatch decision to site `i`.
    fn count_dispatch(&self, i: usize) {
        self.metrics
            .dispatches
            .get_or_create(&crate::metrics::DispatchLabel {
                site: self.sites[i].name.clone(),
                strategy: self.decider.describe().to_owned(),
            })
            .inc();
    }

    /// Refreshes the gauges from the state.
    pub fn refresh_metrics(&self) {
        let mut jobs: BTreeMap<(u32, JobState), i64> = BTreeMap::new();
        for j in self.jobs.values().filter(|j| !j.state().is_terminal()) {
            *jobs.entry((j.priority, j.state())).or_default() += 1;
        }
        let m = &self.metrics;
        m.in_memory
            .set(i64::try_from(self.jobs.len()).unwrap_or(i64::MAX));
        m.events_retained
            .set(i64::try_from(self.events.len()).unwrap_or(i64::MAX));
        m.jobs.clear();
        for ((priority, state), n) in jobs {
            let state = state
                .as_str_name()
                .trim_start_matches("JOB_STATE_")
                .to_owned();
            m.jobs
                .get_or_create(&crate::metrics::JobLabel { priority, state })
                .set(n);
        }
        for (i, s) in self.sites.iter().enumerate() {
            let site = crate::metrics::SiteLabel {
                site: s.name.clone(),
            };
            m.reachable
                .get_or_create(&site)
                .set(i64::from(self.reachable[i]));
            m.up.get_or_create(&site)
                .set(i64::from(self.decider.is_up(i)));
        }
    }

    /// Index of a site by name.
    pub fn site_index(&self, name: &str) -> Option<usize> {
        self.sites.iter().position(|s| s.name == name)
    }

    /// The site index of a job, if it has one.
    pub fn site_of(&self, job: &v1::Job) -> Option<usize> {
        job.site.as_deref().and_then(|s| self.site_index(s))
    }

    /// Records an event of `job` (already updated).
    fn event(&mut self, b: &mut Batch, job: &v1::Job, time: i64, detail: String) {
        self.last_sequence += 1;
        let ev = v1::JobEvent {
            sequence: self.last_sequence,
            job_id: job.id,
            state: job.state,
            time,
            detail,
            machine: job.machine.clone(),
            exit_code: job.exit_code,
            signal: job.signal,
            cluster: job.cluster.clone(),
            withdrawn: false,
            run: job.requeues,
            array_id: job.array_id,
            array_index: job.array_index,
            workflow_id: job.workflow_id,
            workflow_node: job.workflow_node.clone(),
            outputs: match job.state().is_terminal() {
                true => job.outputs.clone(),
                false => Vec::new(),
            },
        };
        while self.events.len() >= self.retention.events {
            self.events.pop_front();
        }
        self.events.push_back(ev.clone());
        b.events.push(ev);
    }

    /// A job as shown to clients: with its planned start at its site while it waits there; an
    /// array with where its tasks stand.
    pub fn shown(&self, job: &v1::Job) -> v1::Job {
        let mut j = job.clone();
        if let Some(p) = j.array.as_mut() {
            self.progress(job.id, p);
        }
        if j.spec.as_ref().is_some_and(|s| s.workflow.is_some()) && !j.state().is_terminal() {
            j.workflow = self.workflow_progress(job.id);
        }
        if j.state() == JobState::Queued
            && let Some(i) = self.site_of(job)
        {
            j.planned_start = self.planned[i].get(&job.id).map(|r| r.start_time);
        }
        j
    }

    /// The id of user `name` in the runner's jobs and reservations.
    pub fn user_id(&mut self, name: &str) -> gridsched_core::model::UserId {
        self.decider.user_id(name)
    }

    /// The last reservation id given (to advance reservations and co-allocation holds alike).
    pub fn last_reservation(&self) -> u64 {
        self.decider.runner().last_reservation()
    }

    /// Adds a newly accepted job: the grid runner admits it, classifies it and places it (or
    /// leaves it waiting at the meta level), and it is recorded. A job the runner refuses (no
    /// site can ever run it, its reservation does not take it) is not added: the refusal, as the
    /// API gives it.
    pub fn add(
        &mut self,
        b: &mut Batch,
        mut job: v1::Job,
        model: &gridsched_core::model::Job,
        time: i64,
    ) -> Result<(), v1::SubmitError> {
        let id = job.id;
        job.start_claims = self.start_claims;
        self.jobs.insert(id, job);
        let submit = Input::Submit {
            job: model.clone(),
            priority: None,
        };
        let effects = self.decide(time, submit);
        b.classified = true;
        if let Some(why) = refusal_in(&effects, id) {
            self.jobs.remove(&id);
            self.decisions.remove(&id);
            return Err(why);
        }
        self.metrics.accepted.inc();
        if model.array.is_some() {
            self.metrics.arrays.inc();
        }
        // Its record is in the commit that acknowledges it, whatever the decisions (an array's
        // own record is otherwise written only when its tasks start or end).
        b.jobs.insert(id);
        self.carry_out(b, time, effects);
        Ok(())
    }

    /// Applies `f` to job `id`, records the event and keeps the bookkeeping in step: a job that
    /// reaches a terminal state leaves the outbox and is reported ended to the dispatcher.
    pub fn update(
        &mut self,
        b: &mut Batch,
        id: u64,
        time: i64,
        f: impl FnOnce(&mut v1::Job) -> Option<String>,
    ) -> bool {
        let Some(mut job) = self.jobs.get(&id).cloned() else {
            return false;
        };
        let was_live = !job.state().is_terminal();
        let Some(detail) = f(&mut job) else {
            return false;
        };
        // The runner hears of the end of a job it still has: one run whole at its site ended
        // there; one waiting at the meta level or co-allocating was cancelled. A split job's
        // fragments tell it their own ends.
        let mut tell = None;
        let mut wrote = None;
        if was_live && job.state().is_terminal() {
            b.finished.push(id);
            let site = self.site_of(&job);
            if let Some(i) = site {
                self.outbox[i].remove(&id);
                self.in_flight[i].remove(&id);
            }
            if job.fragments.is_empty() && self.decider.runner().contains(JobId(id)) {
                // A workflow node's outputs, told before its end: its children read them.
                if job.workflow_id.is_some() && !job.outputs.is_empty() && site.is_some() {
                    let files = (job.outputs.iter())
                        .map(|o| gridsched_core::model::DataOut {
                            name: o.name.clone(),
                            bytes: o.size,
                        })
                        .collect();
                    wrote = Some(Input::Outputs {
                        job: JobId(id),
                        files,
                    });
                }
                tell = Some(match site {
                    Some(i) => Input::Ended {
                        job: JobId(id),
                        site: i,
                        outcome: outcome_of(&job),
                        exit: job.exit_code,
                    },
                    None => Input::Cancel { job: JobId(id) },
                });
            }
        }
        b.jobs.insert(id);
        self.event(b, &job, time, detail);
        let task = job.array_id.map(|a| (a, job.state(), job.start_time));
        self.jobs.insert(id, job);
        if let Some((array, state, started)) = task {
            self.task_changed(b, array, was_live, state, started, time);
        }
        if let Some(input) = wrote {
            self.drive(b, time, input);
        }
        if let Some(input) = tell {
            self.drive(b, time, input);
        }
        true
    }

    /// Takes up to `n` jobs of site `i`'s outbox and marks them DISPATCHED (those accepted while
    /// the site was reachable already are).
    pub fn take_for_sending(&mut self, b: &mut Batch, i: usize, n: usize, time: i64) -> Vec<u64> {
        let ids: Vec<u64> = self.outbox[i].iter().take(n).copied().collect();
        for &id in &ids {
            self.outbox[i].remove(&id);
            self.in_flight[i].insert(id);
            let name = self.sites[i].name.clone();
            self.update(b, id, time, |j| {
                (j.state() == JobState::Accepted).then(|| {
                    j.state = JobState::Dispatched.into();
                    j.dispatch_time = Some(time);
                    format!("sent to {name}")
                })
            });
            // Without start claims, a job sent may start there at once: it stays there.
            if !self.jobs.get(&id).is_some_and(|j| j.start_claims) {
                self.claimed(b, id, i, time);
            }
        }
        ids
    }

    /// The Enqueue of job `id` at site `i` succeeded (or the site already had it): the job is
    /// QUEUED unless its events got there first. Even when the site answers that it started the
    /// job at once, RUNNING (with its machine and start time) comes only from the site's event
    /// stream: taking it from the answer made the stream's earlier QUEUED event look like a
    /// requeue, and the job went RUNNING → QUEUED → RUNNING.
    /// A job withdrawn from the site meanwhile is left as it is: the site drops it when it claims
    /// it or when its StartClaims link opens.
    pub fn sent(&mut self, b: &mut Batch, i: usize, id: u64, time: i64) {
        self.in_flight[i].remove(&id);
        let name = self.sites[i].name.clone();
        self.update(b, id, time, |j| {
            (j.state() == JobState::Dispatched && j.site.as_deref() == Some(name.as_str())).then(
                || {
                    j.state = JobState::Queued.into();
                    format!("queued at {name}")
                },
            )
        });
    }

    /// The Enqueue of job `id` at site `i` failed without an answer: it is sent again later.
    pub fn send_failed(&mut self, i: usize, id: u64) {
        // A job withdrawn meanwhile has already left `in_flight[i]`.
        if self.in_flight[i].remove(&id)
            && self
                .jobs
                .get(&id)
                .is_some_and(|j| j.state() == JobState::Dispatched)
        {
            self.outbox[i].insert(id);
        }
    }

    /// Site `i` refused job `id` (it cannot run it there): the runner refuses it, and the job
    /// fails with the site's reason.
    pub fn refused(&mut self, b: &mut Batch, i: usize, id: u64, why: &str, time: i64) {
        self.in_flight[i].remove(&id);
        let name = &self.sites[i].name;
        let input = Input::Refused {
            job: JobId(id),
            site: i,
            why: format!("refused by {name}: {why}"),
        };
        self.drive(b, time, input);
    }

    /// Job `id` started at site `i`, or was granted its start there: it stays there.
    fn claimed(&mut self, b: &mut Batch, id: u64, i: usize, time: i64) {
        let input = Input::Claimed {
            job: JobId(id),
            site: i,
        };
        self.drive(b, time, input);
    }

    /// Applies one event of site `i`'s local scheduler.
    /// The site's drop of a job withdrawn from it (`withdrawn`) changes nothing when the job is
    /// elsewhere; when the job was placed at that same site again meanwhile (a claim answer
    /// overtaken by its new Enqueue dropped it there), it is sent again.
    pub fn apply_local(&mut self, b: &mut Batch, i: usize, ev: &v1::JobEvent) {
        if ev.sequence > self.site_seq[i] {
            self.site_seq[i] = ev.sequence;
            b.site_seqs.insert(i);
        }
        let name = self.sites[i].name.clone();
        if ev.withdrawn {
            let here_again = self.jobs.get(&ev.job_id).is_some_and(|j| {
                j.site.as_deref() == Some(name.as_str())
                    && j.claimed_by.is_none()
                    && j.fragments.is_empty()
                    && matches!(j.state(), JobState::Dispatched | JobState::Queued)
            });
            if here_again {
                self.in_flight[i].remove(&ev.job_id);
                self.outbox[i].insert(ev.job_id);
            }
            return;
        }
        let Some(job) = self.jobs.get(&ev.job_id) else {
            return;
        };
        if !job.fragments.is_empty() {
            self.apply_fragment(b, i, ev);
            return;
        }
        if job.site.as_deref() != Some(name.as_str()) {
            return;
        }
        let new = ev.state();
        let cur = job.state();
        let applies = match new {
            _ if cur.is_terminal() => false,
            // A requeue (lost agent) takes a running job back to the queue.
            JobState::Queued => rank(cur) <= rank(JobState::Running) && cur != JobState::Queued,
            JobState::Running => cur != JobState::Running,
            JobState::Suspended => cur == JobState::Running,
            s if s.is_terminal() => true,
            _ => false,
        };
        if !applies {
            return;
        }
        self.in_flight[i].remove(&ev.job_id);
        if new == JobState::Running {
            self.claimed(b, ev.job_id, i, ev.time);
        }
        self.update(b, ev.job_id, ev.time, |j| {
            j.state = ev.state;
            match new {
                JobState::Queued => {
                    // Started there, back in its queue: its next run is from scratch.
                    if matches!(cur, JobState::Running | JobState::Suspended) {
                        j.restarts += 1;
                    }
                    j.machine = None;
                    j.start_time = None;
                    j.suspended_since = None;
                }
                JobState::Suspended => {
                    j.suspended_since = Some(ev.time);
                    j.reason.clone_from(&ev.detail);
                }
                JobState::Running => {
                    j.machine.clone_from(&ev.machine);
                    // A resumed job keeps its first start.
                    if cur != JobState::Suspended || j.start_time.is_none() {
                        j.start_time = Some(ev.time);
                    }
                    if cur == JobState::Suspended {
                        j.reason.clear();
                    }
                    j.suspended_since = None;
                    // Started there: it stays there.
                    if j.claimed_by.is_none() {
                        j.claimed_by = Some(name.clone());
                    }
                }
                _ => {
                    if ev.machine.is_some() {
                        j.machine.clone_from(&ev.machine);
                    }
                    j.end_time = Some(ev.time);
                    j.exit_code = ev.exit_code;
                    j.signal = ev.signal;
                    j.outputs.clone_from(&ev.outputs);
                    j.reason.clone_from(&ev.detail);
                }
            }
            Some(format!("{name}: {}", ev.detail))
        });
    }

    /// Answers site `i`'s start claims: a job still dispatched to it is granted (recorded in
    /// `claimed_by`, committed before the answer leaves, and never withdrawn from then on); a job
    /// that has been withdrawn from it, or has ended (e.g. cancelled while the site was down), is
    /// answered withdrawn, as is any such job among the unclaimed ones it lists as `waiting`.
    pub fn claims(
        &mut self,
        b: &mut Batch,
        i: usize,
        req: &v1::ClaimRequest,
        time: i64,
    ) -> v1::ClaimAnswer {
        let name = self.sites[i].name.clone();
        let ours =
            |j: &v1::Job| j.site.as_deref() == Some(name.as_str()) && !j.state().is_terminal();
        let mut answer = v1::ClaimAnswer::default();
        let mut newly = Vec::new();
        for &id in &req.start {
            match self.jobs.get_mut(&id) {
                Some(j) if ours(j) => {
                    if j.claimed_by.is_none() {
                        j.claimed_by = Some(name.clone());
                        b.jobs.insert(id);
                        newly.push(id);
                    }
                    answer.granted.push(id);
                }
                _ => answer.withdrawn.push(id),
            }
        }
        for &id in &req.waiting {
            if !self.jobs.get(&id).is_some_and(ours) {
                answer.withdrawn.push(id);
            }
        }
        for (outcome, n) in [
            ("granted", answer.granted.len()),
            ("withdrawn", answer.withdrawn.len()),
        ] {
            if n > 0 {
                self.metrics
                    .claims
                    .get_or_create(&crate::metrics::ClaimLabel {
                        site: name.clone(),
                        outcome: outcome.into(),
                    })
                    .inc_by(n as u64);
            }
        }
        for id in newly {
            self.claimed(b, id, i, time);
        }
        answer
    }

    /// Rebuilds the state from what the store loaded (the open jobs): each is restored in the
    /// grid runner where it stood, goes back to the outbox, the in-flight set or the waiting set
    /// its state says, and its idempotency token is known again. The classifier is restored apart
    /// (from its snapshot). What the restore changed (a waiting job whose dependency can no
    /// longer be met ends) is returned, to commit; the retries it asks for are kept for the start
    /// ([`State::retries_at_start`]).
    pub fn restore(
        &mut self,
        loaded: crate::store::Loaded,
        time: i64,
        history: impl Fn(u64) -> Option<v1::Job>,
    ) -> Batch {
        self.last_id = loaded.last_id;
        self.last_sequence = loaded.last_sequence;
        for (name, seq) in loaded.site_seqs {
            if let Some(i) = self.site_index(&name) {
                self.site_seq[i] = seq;
            }
        }
        self.decisions = loaded.decisions.into_iter().collect();
        self.reservations = loaded.reservations.into_iter().map(|r| (r.id, r)).collect();
        let mut b = Batch::default();
        let last = loaded.last_reservation;
        self.drive(&mut b, time, Input::Reservations { last });
        let records: Vec<(v1::AdvanceReservation, usize)> = self
            .reservations
            .values()
            .filter_map(|r| Some((r.clone(), self.site_index(&r.site)?)))
            .collect();
        let book: Vec<_> = records
            .iter()
            .filter_map(|(r, i)| self.decider.reservation(r, *i))
            .collect();
        for reservation in book {
            self.drive(&mut b, time, Input::RestoreReservation { reservation });
        }
        let loaded_jobs: BTreeMap<u64, v1::Job> =
            loaded.jobs.into_iter().map(|j| (j.id, j)).collect();
        let find = |id: u64| loaded_jobs.get(&id).cloned().or_else(|| history(id));
        for job in loaded_jobs.values().cloned() {
            let spec = job.spec.clone().unwrap_or_default();
            let model = self
                .decider
                .job(&spec, job.id, job.submit_time.unwrap_or_default());
            if let Some(key) = token_key(&job) {
                self.tokens.insert(key, job.id);
            }
            let open = !job.state().is_terminal();
            let since = job.start_time.or(job.dispatch_time).unwrap_or_default();
            let at = match self.site_of(&job) {
                Some(i) => {
                    // Its Enqueue may or may not have arrived: sent again (ALREADY_EXISTS
                    // counts as success).
                    if matches!(job.state(), JobState::Accepted | JobState::Dispatched) {
                        self.outbox[i].insert(job.id);
                    }
                    let claimed = job.claimed_by.is_some()
                        || matches!(job.state(), JobState::Running | JobState::Suspended)
                        || (!job.start_claims && job.state() != JobState::Accepted);
                    Restored::Site {
                        site: i,
                        claimed,
                        since,
                    }
                }
                None if !job.fragments.is_empty() => {
                    if job
                        .fragments
                        .iter()
                        .any(|f| f.state() == JobState::Dispatched)
                    {
                        self.resend.push(job.id);
                    }
                    let fragments = job
                        .fragments
                        .iter()
                        .filter_map(|f| {
                            let part = gridsched_core::dispatch::Part {
                                cluster: gridsched_core::model::ClusterId(
                                    self.site_index(&f.site)? as u32,
                                ),
                                procs: f.processors,
                            };
                            Some((part, ReservationId(f.reservation), f.state().is_terminal()))
                        })
                        .collect();
                    Restored::Split { fragments, since }
                }
                None => match arrays::spec_of(&job) {
                    Some(a) if open => self.array_restored(&job, &a, &find),
                    _ => Restored::Waiting,
                },
            };
            if open && job.spec.as_ref().is_some_and(|s| s.workflow.is_some()) {
                self.jobs.insert(job.id, job.clone());
                if let Some(input) = self.workflow_restored(&job, &find) {
                    self.drive(&mut b, time, input);
                }
                continue;
            }
            // The record first: what the runner decides of the job (its dependency met while
            // the meta-scheduler was down, an array's tasks released) is carried out on it.
            self.jobs.insert(job.id, job.clone());
            if open && let Ok(mut model) = model {
                model.task = arrays::task_of(&job);
                // A waiting job's predecessors that have ended since: from the history.
                for term in model.after.iter_mut().flat_map(|d| d.terms.iter_mut()) {
                    if !self.jobs.contains_key(&term.job.0)
                        && let Some(j) = history(term.job.0).filter(|j| j.state().is_terminal())
                    {
                        term.ended = Some(ended_of(&j, time));
                    }
                }
                for followed in self.followed_restored(&model, &find) {
                    self.drive(&mut b, time, followed);
                }
                let input = Input::Restore {
                    job: model,
                    priority: core_priority(job.priority),
                    at,
                };
                self.drive(&mut b, time, input);
            }
        }
        self.retries_at_start = std::mem::take(&mut b.retries);
        b
    }
}

/// The runner's refusal of submission `id` among `effects`, as the API gives it.
fn refusal_in(effects: &[gridsched_core::grid::Effect], id: u64) -> Option<v1::SubmitError> {
    effects.iter().find_map(|e| match e {
        gridsched_core::grid::Effect::Refuse {
            job: j,
            why,
            refusal,
        } if j.0 == id => Some(crate::decide::rejection(why, refusal.as_ref())),
        _ => None,
    })
}

/// A job's priority as the core has it (the API's is wider; the classifier never gives more).
fn core_priority(p: u32) -> Priority {
    Priority::try_from(p).unwrap_or(Priority::MAX)
}

/// The idempotency key of a job submitted with a client token: `user \0 token`.
pub fn token_key(job: &v1::Job) -> Option<String> {
    let spec = job.spec.as_ref()?;
    let token = spec.client_token.as_ref()?;
    Some(format!("{}\0{token}", spec.user))
}

pub(crate) mod arrays;
mod effects;
mod split;
#[cfg(test)]
mod tests;
pub(crate) mod workflows;

/// How and when a job that reached a terminal state ended, for the jobs that depend on it
/// (`now` when it has no end time).
pub(crate) fn ended_of(job: &v1::Job, now: i64) -> Ended {
    Ended {
        outcome: outcome_of(job),
        at: job.end_time.unwrap_or(now),
        started: job.start_time,
    }
}

/// How a job that reached a terminal state ended, for the jobs that depend on it.
pub(crate) fn outcome_of(job: &v1::Job) -> Outcome {
    match job.state() {
        JobState::Completed => Outcome::Completed,
        JobState::Cancelled => Outcome::Cancelled {
            started: job.start_time.is_some(),
        },
        _ => Outcome::Failed,
    }
}
