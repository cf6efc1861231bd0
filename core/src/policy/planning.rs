//! Planning-based scheduling, the CCS model (Streit, thesis §3.1.2 and §3.8; spec
//! `self-tuning-and-multisite.md` §1.4 and §2.4), and the self-tuning dynP scheduler built on it
//! (thesis §4; the decision step is [`super::dynp`]).
//!
//! Every waiting job has a planned start. The plan is built again whenever it can change — a
//! submission, a job ending before its estimate, an overrun, a cancellation, the machine coming
//! back: running jobs occupy their processors until their predicted ends, then the waiting jobs,
//! sorted by the active policy (FCFS: arrival; SJF and LJF: estimate, ties by arrival), are each
//! placed at their earliest start. Backfilling is implicit; with backfilling disabled a job's
//! search starts at the previous job's planned start, so planned starts follow the policy order.
//! A job starts when its planned start comes; a start does not change the plan.
//!
//! Rebuilding the plan only from the first position that can change gives the same plan as
//! rebuilding it whole: a submission changes nothing before its place in the order, a
//! cancellation nothing before the cancelled job, anything else rebuilds it from the start.
//!
//! dynP (`Planning::dynp`): at every submission, and with full self-tuning at every early end, the
//! plans of FCFS, SJF and LJF are built from scratch, rated, and the decider's choice becomes the
//! active policy and plan.

use super::dynp::{DynpOptions, PlannedJob, Ratings, SelfTuning, Tuning, rate};
use super::fcfs::{check_job, restore_checks, restore_single};
use super::rules::PlanningRules;
use super::user_caps::{UserUse, admits};
use super::{AdvanceReservation, Book, Policy, Rejection, Reservation, ReservationRefused, Start};
use crate::model::{Duration, Job, JobId, MachineId, ReservationId, Time, UserId};
use crate::structures::{Profile, RunningSet};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The order of a planning policy (thesis §3.2: FCFS, SJF, LJF with "front" selection).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "lowercase")]
pub enum PlanOrder {
    /// Arrival order.
    #[default]
    Fcfs,
    /// Shortest estimate first, ties by arrival.
    Sjf,
    /// Longest estimate first, ties by arrival.
    Ljf,
}

impl PlanOrder {
    /// The three orders dynP chooses from, in the deciders' tie order.
    pub const ALL: [PlanOrder; 3] = [PlanOrder::Fcfs, PlanOrder::Sjf, PlanOrder::Ljf];

    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            PlanOrder::Fcfs => "fcfs",
            PlanOrder::Sjf => "sjf",
            PlanOrder::Ljf => "ljf",
        }
    }

    /// Its position in [`PlanOrder::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    fn key(self, w: &Waiting) -> (i64, u64) {
        match self {
            PlanOrder::Fcfs => (0, w.seq),
            PlanOrder::Sjf => (w.estimate, w.seq),
            PlanOrder::Ljf => (-w.estimate, w.seq),
        }
    }
}

impl std::str::FromStr for PlanOrder {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        PlanOrder::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| format!("unknown order `{s}` (expected one of: fcfs, sjf, ljf)"))
    }
}

/// Options of the planning policies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlanningOptions {
    /// Implicit backfilling (default); off, each job is planned no earlier than the one before it
    /// in the policy's order (thesis §3.8 "backfilling disabled").
    pub backfilling: bool,
    /// Time-dependent constraints on when a job may start ([`super::rules`]).
    pub rules: PlanningRules,
}

impl Default for PlanningOptions {
    fn default() -> Self {
        PlanningOptions {
            backfilling: true,
            rules: PlanningRules::default(),
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Waiting {
    id: JobId,
    seq: u64,
    submit: Time,
    procs: u32,
    estimate: Duration,
    user: UserId,
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    job: Waiting,
    /// Planned start, `None` until placed.
    start: Option<Time>,
}

/// The earliest start from `from` at which `job` fits in `profile`, the rules allow it to start
/// and its user's holding in `users` stays within the `user-cap` rules for its whole estimate:
/// in turn the profile's earliest fit, the rules' next allowed start and the user's earliest
/// start, until all agree (each step only moves forward). A job no instant suits is refused at
/// submission.
fn earliest_allowed(
    profile: &Profile,
    rules: &PlanningRules,
    users: &UserUse,
    capacity: u32,
    from: Time,
    job: &Waiting,
) -> Time {
    let mut t = from;
    loop {
        t = profile.earliest(t, job.procs, job.estimate);
        if rules.is_empty() {
            return t;
        }
        match rules.next_start(t, job.procs, job.estimate, capacity) {
            Some(n) if n > t => {
                t = n;
                continue;
            }
            _ => {}
        }
        if !rules.has_user_caps() {
            return t;
        }
        let u = users
            .earliest(
                rules,
                capacity,
                t,
                job.user,
                job.procs,
                job.estimate,
                Time::MAX / 2,
            )
            .expect("admitted jobs fit under their user's cap some time");
        if u == t {
            return t;
        }
        t = u;
    }
}

/// A planning policy (or dynP) on one space-shared machine.
#[derive(Debug)]
pub struct Planning {
    machine: MachineId,
    capacity: u32,
    order: PlanOrder,
    options: PlanningOptions,
    running: RunningSet,
    /// The waiting jobs in the active order, with their planned starts.
    plan: Vec<Slot>,
    /// Running jobs and the placed slots of the plan.
    profile: Profile,
    /// The first position of the plan that must be placed again.
    dirty_from: Option<usize>,
    /// A decision of dynP is due.
    decide: bool,
    next_seq: u64,
    down: bool,
    tuner: Option<SelfTuning>,
    /// Advance reservations: fixed blocks under every plan.
    book: Book,
    /// The owners of the running jobs, for the `user-cap` rules.
    owners: HashMap<JobId, UserId>,
}

impl Planning {
    /// A planning policy with a fixed order for `machine` of `capacity` processors.
    pub fn new(
        machine: MachineId,
        capacity: u32,
        order: PlanOrder,
        options: PlanningOptions,
    ) -> Planning {
        Planning {
            machine,
            capacity,
            order,
            options,
            running: RunningSet::new(),
            plan: Vec::new(),
            profile: Profile::new(capacity),
            dirty_from: None,
            decide: false,
            next_seq: 0,
            down: false,
            tuner: None,
            book: Book::default(),
            owners: HashMap::new(),
        }
    }

    /// dynP: the order chosen by self-tuning.
    pub fn dynp(
        machine: MachineId,
        capacity: u32,
        options: PlanningOptions,
        dynp: DynpOptions,
    ) -> Planning {
        let mut p = Planning::new(machine, capacity, dynp.initial(), options);
        p.tuner = Some(SelfTuning::new(dynp));
        p
    }

    /// The active order.
    pub fn order(&self) -> PlanOrder {
        self.order
    }

    fn mark(&mut self, from: usize) {
        self.dirty_from = Some(self.dirty_from.map_or(from, |d| d.min(from)));
    }

    /// Running jobs and advance reservations, from `now`.
    fn base_profile(&self, now: Time) -> Profile {
        self.book.availability(now, self.capacity, &self.running)
    }

    /// What each user holds from `now` for the `user-cap` rules: the running jobs until their
    /// predicted ends and the first `placed` slots of the plan (nothing without such rules).
    fn user_use(&self, now: Time, placed: usize) -> UserUse {
        let mut u = UserUse::default();
        if !self.options.rules.has_user_caps() {
            return u;
        }
        for (id, e) in self.running.iter_sorted() {
            if let Some(&user) = self.owners.get(&id) {
                u.hold(user, now, e.end, e.procs);
            }
        }
        for s in &self.plan[..placed] {
            if let Some(t) = s.start {
                u.hold(s.job.user, t, t + s.job.estimate, s.job.procs);
            }
        }
        u
    }

    /// Places `slots` in order into `profile`, each at its earliest start from `now` (or from the
    /// previous job's start with backfilling disabled, `prev` being the start before the first)
    /// that the planning rules allow, given what each user holds (`users`, updated).
    fn place(
        profile: &mut Profile,
        users: &mut UserUse,
        slots: &mut [Slot],
        now: Time,
        options: &PlanningOptions,
        capacity: u32,
        mut prev: Time,
    ) {
        let caps = options.rules.has_user_caps();
        for s in slots {
            let from = if options.backfilling {
                now
            } else {
                prev.max(now)
            };
            let t = earliest_allowed(profile, &options.rules, users, capacity, from, &s.job);
            profile.reserve(t, t + s.job.estimate, s.job.procs);
            if caps {
                users.hold(s.job.user, t, t + s.job.estimate, s.job.procs);
            }
            s.start = Some(t);
            prev = t;
        }
    }

    /// Brings the plan up to date at `now`.
    fn replan(&mut self, now: Time) {
        let Some(from) = self.dirty_from.take() else {
            return;
        };
        if from == 0 {
            self.profile = self.base_profile(now);
        } else {
            self.profile.forget_before(now);
            for s in &mut self.plan[from..] {
                if let Some(t) = s.start.take() {
                    self.profile.release(t, t + s.job.estimate, s.job.procs);
                }
            }
        }
        let prev = from
            .checked_sub(1)
            .and_then(|i| self.plan[i].start)
            .unwrap_or(now);
        let mut users = self.user_use(now, from);
        Planning::place(
            &mut self.profile,
            &mut users,
            &mut self.plan[from..],
            now,
            &self.options,
            self.capacity,
            prev,
        );
    }

    /// dynP's decision: the three plans, rated; the chosen one is adopted. The current order's
    /// plan is brought up to date from its first changed position (equal to building it from
    /// scratch: `incremental_replanning_equals_rebuilding_the_whole_plan`), the other two are
    /// built from scratch.
    fn self_tune(&mut self, now: Time) {
        let Some(metric) = self.tuner.as_ref().map(|t| t.options.metric) else {
            return;
        };
        self.replan(now);
        let base = self.base_profile(now);
        let users = self.user_use(now, 0);
        let running_end = self.running.ends_after(now).last().map_or(now, |(e, _)| e);
        let mut waiting: Vec<Waiting> = self.plan.iter().map(|s| s.job).collect();
        waiting.sort_by_key(|w| w.seq);
        let mut candidates: Vec<(Vec<Slot>, Profile)> = Vec::with_capacity(3);
        let mut ratings = Ratings {
            fcfs: 0.0,
            sjf: 0.0,
            ljf: 0.0,
        };
        for order in PlanOrder::ALL {
            let (slots, profile) = if order == self.order {
                (self.plan.clone(), self.profile.clone())
            } else {
                let mut slots: Vec<Slot> = waiting
                    .iter()
                    .map(|&job| Slot { job, start: None })
                    .collect();
                slots.sort_by_key(|s| order.key(&s.job));
                let mut profile = base.clone();
                Planning::place(
                    &mut profile,
                    &mut users.clone(),
                    &mut slots,
                    now,
                    &self.options,
                    self.capacity,
                    now,
                );
                (slots, profile)
            };
            // Rated in arrival order whatever the plan's order, so equal plans tie exactly.
            let mut jobs: Vec<(u64, PlannedJob)> = slots
                .iter()
                .map(|s| {
                    (
                        s.job.seq,
                        PlannedJob {
                            submit: s.job.submit,
                            procs: s.job.procs,
                            estimate: s.job.estimate,
                            start: s.start.expect("placed"),
                        },
                    )
                })
                .collect();
            jobs.sort_by_key(|(seq, _)| *seq);
            let jobs: Vec<PlannedJob> = jobs.into_iter().map(|(_, j)| j).collect();
            let v = rate(metric, &jobs, running_end);
            match order {
                PlanOrder::Fcfs => ratings.fcfs = v,
                PlanOrder::Sjf => ratings.sjf = v,
                PlanOrder::Ljf => ratings.ljf = v,
            }
            candidates.push((slots, profile));
        }
        let Some(tuner) = self.tuner.as_mut() else {
            return;
        };
        let chosen = tuner.decide(ratings, self.order);
        let (slots, profile) = candidates.swap_remove(chosen.index());
        self.order = chosen;
        self.plan = slots;
        self.profile = profile;
        self.dirty_from = None;
    }
}

impl Policy for Planning {
    fn describe(&self) -> String {
        let mut words = match &self.tuner {
            Some(t) => {
                let mut w = vec!["dynp".to_string()];
                w.extend(t.options.non_default());
                w
            }
            None => vec![format!("planning-{}", self.order.as_str())],
        };
        if !self.options.backfilling {
            words.push("backfilling=off".into());
        }
        for r in self.options.rules.iter() {
            words.push(format!("rule=({r})"));
        }
        words.join(" ")
    }

    fn submit(&mut self, now: Time, job: &Job) -> Result<(), Rejection> {
        if self.running.get(job.id).is_some()
            || self.book.holds(job.id)
            || self.plan.iter().any(|s| s.job.id == job.id)
        {
            return Err(Rejection::Duplicate(job.id));
        }
        if job.reservation.is_some() {
            return self.book.submit(now, job);
        }
        check_job(job, self.capacity)?;
        if !admits(
            &self.options.rules,
            now,
            job.procs,
            job.estimate,
            self.capacity,
        ) {
            return Err(Rejection::NoEligibleMachine {
                job: job.id,
                reason: "the planning rules allow it to start at no time".into(),
            });
        }
        let w = Waiting {
            id: job.id,
            seq: self.next_seq,
            submit: job.submit,
            procs: job.procs,
            estimate: job.estimate,
            user: job.user,
        };
        self.next_seq += 1;
        let key = self.order.key(&w);
        let at = self.plan.partition_point(|s| self.order.key(&s.job) < key);
        self.plan.insert(
            at,
            Slot {
                job: w,
                start: None,
            },
        );
        self.mark(at);
        self.decide = true;
        Ok(())
    }

    fn terminate(&mut self, now: Time, job: JobId) {
        if let Some(past) = self.book.remove(now, job) {
            if past.is_some() {
                self.mark(0);
            }
            return;
        }
        let Some(e) = self.running.remove(job) else {
            return;
        };
        self.owners.remove(&job);
        if e.end > now {
            self.profile.release(now, e.end, e.procs);
            self.mark(0);
            if self
                .tuner
                .as_ref()
                .is_some_and(|t| t.options.tuning == Tuning::Full)
            {
                self.decide = true;
            }
        }
    }

    fn overrun(&mut self, now: Time, job: JobId, predicted_end: Time) {
        if self.book.holds(job) {
            if self.book.overrun(now, job, predicted_end).is_some() {
                self.mark(0);
            }
            return;
        }
        if self.running.set_end(job, predicted_end).is_some() {
            self.mark(0);
        }
    }

    fn cancel(&mut self, now: Time, job: JobId) -> bool {
        if self.book.holds(job) {
            return self.book.remove(now, job).is_some();
        }
        let Some(at) = self.plan.iter().position(|s| s.job.id == job) else {
            return false;
        };
        let s = self.plan.remove(at);
        if let Some(t) = s.start {
            self.profile.release(t, t + s.job.estimate, s.job.procs);
        }
        self.mark(at);
        true
    }

    fn schedule(&mut self, now: Time, starts: &mut Vec<Start>) {
        if self.down {
            return;
        }
        self.book.expire(now);
        if std::mem::take(&mut self.decide) && self.tuner.is_some() {
            self.self_tune(now);
        } else {
            self.replan(now);
        }
        let mut i = 0;
        while i < self.plan.len() {
            let s = self.plan[i];
            let t = s.start.expect("the plan is up to date");
            if t > now {
                i += 1;
                continue;
            }
            if t < now {
                // Woken late: the slot moves to the actual start.
                self.profile.release(t, t + s.job.estimate, s.job.procs);
                self.profile.reserve(now, now + s.job.estimate, s.job.procs);
            }
            self.plan.remove(i);
            self.running
                .insert(s.job.id, s.job.procs, now, s.job.estimate);
            self.owners.insert(s.job.id, s.job.user);
            if let Some(tuner) = self.tuner.as_mut() {
                tuner.started_under(self.order);
            }
            starts.push(Start::on(s.job.id, self.machine, s.job.procs));
        }
        self.book.start_due(now, self.machine, starts);
    }

    fn next_wakeup(&self) -> Option<Time> {
        if self.down {
            return None;
        }
        let inside = self.book.next_due();
        self.plan.iter().filter_map(|s| s.start).chain(inside).min()
    }

    fn set_machine_available(&mut self, _now: Time, machine: MachineId, available: bool) {
        if machine != self.machine || self.down != available {
            return;
        }
        self.down = !available;
        if available {
            self.mark(0);
        }
    }

    fn restore_running(
        &mut self,
        now: Time,
        job: &Job,
        started: Time,
        machine: MachineId,
        procs: u32,
    ) -> Result<(), Rejection> {
        let waiting = self.plan.iter().any(|s| s.job.id == job.id);
        restore_checks(job, machine, self.machine, waiting)?;
        if job.reservation.is_some() {
            // Its reservation was admitted again first; the part past its end, if any, is
            // blocked by the next full plan (`Book::block_in`).
            self.book.restore_running(now, job, started, procs)?;
        } else {
            let me = (self.machine, self.capacity);
            restore_single(&mut self.running, me, job, started, machine, procs)?;
            self.owners.insert(job.id, job.user);
        }
        self.mark(0);
        Ok(())
    }

    fn admit_reservation(
        &mut self,
        now: Time,
        r: &AdvanceReservation,
    ) -> Result<(), ReservationRefused> {
        self.replan(now);
        self.profile.forget_before(now);
        self.book
            .admit(now, r, self.machine, self.capacity, &self.profile)?;
        // It fits in the current plan: the placed slots stay where they are.
        self.profile.reserve(r.start, r.end, r.procs);
        Ok(())
    }

    fn cancel_reservation(&mut self, now: Time, id: ReservationId) -> bool {
        let released = self.book.cancel(id);
        if released.reservation.is_none() {
            return false;
        }
        // Its running jobs now hold the machine's own processors; its waiting ones queue.
        for (job, procs, end) in released.running {
            self.running.insert(job, procs, now, (end - now).max(1));
        }
        for job in released.waiting {
            self.submit(now, &job)
                .expect("a job that fitted in the reservation fits the machine");
        }
        self.mark(0);
        true
    }

    fn takes_reservations(&self) -> bool {
        true
    }

    fn advance_reservations(&self) -> Vec<AdvanceReservation> {
        self.book.list()
    }

    fn counters(&self) -> Vec<(String, u64)> {
        self.tuner.as_ref().map_or_else(Vec::new, |t| t.counters())
    }

    fn waiting_len(&self) -> usize {
        self.plan.len() + self.book.counts().0
    }

    fn running_len(&self) -> usize {
        self.running.len() + self.book.counts().1
    }

    fn queue(&self) -> Vec<JobId> {
        let inside = self.book.planned().into_iter().map(|p| p.0);
        self.plan.iter().map(|s| s.job.id).chain(inside).collect()
    }

    fn reservations(&self) -> Vec<Reservation> {
        let slots = self
            .plan
            .iter()
            .filter_map(|s| {
                let w = s.job;
                s.start.map(|t| (w.id, t, w.estimate, w.procs))
            })
            .chain(self.book.planned());
        Reservation::planned_on(self.machine, slots)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Conservative;
    use crate::policy::test_util::{planned, starts};

    fn fixed(order: PlanOrder) -> Planning {
        Planning::new(MachineId(0), 10, order, PlanningOptions::default())
    }

    /// A 10-processor machine busy until 100 with 6 processors; three jobs wait: the orders place
    /// them differently, and the hole before 100 is backfilled implicitly.
    #[test]
    fn the_three_orders_plan_the_same_jobs_differently() {
        let jobs = [
            Job::new(2, 1, 8, 50, 50),
            Job::new(3, 2, 6, 200, 200),
            Job::new(4, 3, 4, 100, 100),
            Job::new(5, 4, 2, 30, 30),
        ];
        let mut plans = Vec::new();
        for order in PlanOrder::ALL {
            let mut p = fixed(order);
            p.submit(0, &Job::new(1, 0, 6, 100, 100)).unwrap();
            assert_eq!(starts(&mut p, 0), [1]);
            let mut started = Vec::new();
            for j in &jobs {
                p.submit(j.submit, j).unwrap();
                started.extend(
                    starts(&mut p, j.submit)
                        .into_iter()
                        .map(|id| (id, j.submit)),
                );
            }
            plans.push((started, planned(&p)));
        }
        // FCFS: 2 at 100 (8 processors), 3 after it at 150; 4 needs 100 s beside job 1 but would
        // overlap 2, so it joins 3 at 150; 5 fits now beside job 1.
        assert_eq!(plans[0].0, [(5, 4)], "fcfs");
        assert_eq!(plans[0].1, [(2, 100), (3, 150), (4, 150)], "fcfs");
        // SJF (5, 2, 4, 3) gives the same plan here.
        assert_eq!(plans[1], plans[0], "sjf");
        // LJF (3, 4, 2, 5): 3 goes first at 100 and 4 fits beside both 1 and 3, so 4 starts at
        // once; 5 then waits for 4's end at 103, and 2 for 3's end at 300.
        assert_eq!(plans[2].0, [(4, 3)], "ljf");
        assert_eq!(plans[2].1, [(3, 100), (5, 103), (2, 300)], "ljf");
    }

    #[test]
    fn backfilling_disabled_keeps_planned_starts_in_policy_order() {
        let mut p = Planning::new(
            MachineId(0),
            10,
            PlanOrder::Fcfs,
            PlanningOptions {
                backfilling: false,
                ..PlanningOptions::default()
            },
        );
        p.submit(0, &Job::new(1, 0, 6, 100, 100)).unwrap();
        assert_eq!(starts(&mut p, 0), [1]);
        p.submit(1, &Job::new(2, 1, 8, 50, 50)).unwrap();
        p.submit(2, &Job::new(3, 2, 2, 30, 30)).unwrap();
        assert!(starts(&mut p, 2).is_empty(), "job 3 may not pass job 2");
        assert_eq!(planned(&p), [(2, 100), (3, 100)]);
        assert_eq!(p.describe(), "planning-fcfs backfilling=off");
    }

    /// An early end re-plans every waiting job from the freed instant.
    #[test]
    fn an_early_end_moves_the_plan_forward() {
        let mut p = fixed(PlanOrder::Fcfs);
        p.submit(0, &Job::new(1, 0, 10, 100, 100)).unwrap();
        assert_eq!(starts(&mut p, 0), [1]);
        p.submit(1, &Job::new(2, 1, 5, 50, 50)).unwrap();
        p.submit(2, &Job::new(3, 2, 10, 50, 50)).unwrap();
        assert!(starts(&mut p, 2).is_empty());
        assert_eq!(planned(&p), [(2, 100), (3, 150)]);
        p.terminate(40, JobId(1));
        assert_eq!(starts(&mut p, 40), [2]);
        assert_eq!(planned(&p), [(3, 90)]);
        assert_eq!(p.next_wakeup(), Some(90));
    }

    /// The naive reading of §1.4: the whole plan cleared and rebuilt at every pass.
    struct Naive {
        order: PlanOrder,
        backfilling: bool,
        waiting: Vec<Waiting>,
        running: RunningSet,
    }

    impl Naive {
        fn pass(&mut self, now: Time) -> Vec<u64> {
            let mut profile = Profile::new(10);
            for (end, procs) in self.running.ends_after(now) {
                profile.reserve(now, end, procs as u32);
            }
            let mut slots: Vec<Slot> = self
                .waiting
                .iter()
                .map(|&job| Slot { job, start: None })
                .collect();
            slots.sort_by_key(|s| self.order.key(&s.job));
            let options = PlanningOptions {
                backfilling: self.backfilling,
                ..PlanningOptions::default()
            };
            let mut users = UserUse::default();
            Planning::place(&mut profile, &mut users, &mut slots, now, &options, 10, now);
            let mut started = Vec::new();
            for s in slots {
                if s.start == Some(now) {
                    self.waiting.retain(|w| w.id != s.job.id);
                    self.running
                        .insert(s.job.id, s.job.procs, now, s.job.estimate);
                    started.push(s.job.id.0);
                }
            }
            started
        }
    }

    /// Differential check: the incremental plan starts the same jobs at the same instants as a
    /// plan rebuilt from scratch at every pass, for every order, with and without backfilling,
    /// over random streams with early ends and cancellations.
    #[test]
    fn incremental_replanning_equals_rebuilding_the_whole_plan() {
        use rand::{RngExt, SeedableRng};
        for seed in 0..24u64 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let order = PlanOrder::ALL[seed as usize % 3];
            let backfilling = seed % 2 == 0;
            let mut fast = Planning::new(
                MachineId(0),
                10,
                order,
                PlanningOptions {
                    backfilling,
                    ..PlanningOptions::default()
                },
            );
            let mut naive = Naive {
                order,
                backfilling,
                waiting: Vec::new(),
                running: RunningSet::new(),
            };
            let mut ends: Vec<(Time, u64)> = Vec::new();
            let mut runtimes = std::collections::HashMap::new();
            let mut next_id = 1u64;
            let mut started = 0;
            for now in 0..8_000i64 {
                ends.sort();
                while ends.first().is_some_and(|&(t, _)| t == now) {
                    let (_, id) = ends.remove(0);
                    fast.terminate(now, JobId(id));
                    naive.running.remove(JobId(id));
                }
                if now < 4_000 && rng.random_bool(0.06) {
                    let estimate = rng.random_range(1..120);
                    let run = rng.random_range(1..=estimate);
                    let job = Job::new(next_id, now, rng.random_range(1..=10), estimate, run);
                    fast.submit(now, &job).unwrap();
                    naive.waiting.push(Waiting {
                        id: job.id,
                        seq: next_id,
                        submit: now,
                        procs: job.procs,
                        estimate,
                        user: job.user,
                    });
                    runtimes.insert(next_id, run);
                    next_id += 1;
                }
                if rng.random_bool(0.02) && !naive.waiting.is_empty() {
                    let i = rng.random_range(0..naive.waiting.len());
                    let id = naive.waiting.remove(i).id;
                    assert!(fast.cancel(now, id), "seed {seed}: {id} waits");
                }
                let mut out = Vec::new();
                fast.schedule(now, &mut out);
                let mut a: Vec<u64> = out.iter().map(|s| s.job.0).collect();
                let mut b = naive.pass(now);
                a.sort();
                b.sort();
                assert_eq!(
                    a, b,
                    "seed {seed} ({order:?}, backfilling {backfilling}) at {now}"
                );
                for id in a {
                    ends.push((now + runtimes[&id], id));
                    started += 1;
                }
            }
            assert!(
                started > 150,
                "seed {seed}: a busy stream ({started} starts)"
            );
            assert_eq!(fast.waiting_len(), 0);
        }
    }

    /// Where planning FCFS and conservative backfilling part: after an early end the plan is
    /// rebuilt in order, so an earlier job may take space a later job had been planned in (the
    /// later job is placed after it); conservative backfilling re-places each job while the later
    /// jobs keep their slots. Without early ends the two make the same plans.
    #[test]
    fn after_an_early_end_planning_rebuilds_in_order_and_conservative_keeps_later_slots() {
        let jobs = [
            Job::new(1, 0, 5, 100, 10), // ends at 10 instead of 100
            Job::new(2, 0, 5, 60, 60),
            Job::new(3, 1, 10, 100, 100), // the whole machine: planned at 100
            Job::new(4, 2, 5, 40, 40),    // backfilled into [60, 100)
        ];
        let mut after = Vec::new();
        for p in [
            &mut fixed(PlanOrder::Fcfs) as &mut dyn Policy,
            &mut Conservative::new(MachineId(0), 10),
        ] {
            for j in &jobs {
                p.submit(j.submit, j).unwrap();
                starts(p, j.submit);
            }
            assert_eq!(planned(p), [(4, 60), (3, 100)]);
            p.terminate(10, JobId(1));
            after.push((starts(p, 10), planned(p)));
        }
        // Planning: 3 first, at 60 when job 2 ends; 4 then fits at once.
        assert_eq!(after[0], (vec![4], vec![(3, 60)]));
        // Conservative: 3 is re-placed while 4 still holds [60, 100), so it keeps 100.
        assert_eq!(after[1], (vec![4], vec![(3, 100)]));
    }

    #[test]
    fn dynp_switches_to_the_better_plan_and_counts_it() {
        // 10 processors busy until 100; a long wide job then a short narrow one arrive: FCFS
        // plans the short job after the long one unless it fits beside it, SJF puts it first.
        let mut p = Planning::dynp(
            MachineId(0),
            10,
            PlanningOptions::default(),
            DynpOptions::default(),
        );
        assert_eq!(p.order(), PlanOrder::Fcfs);
        p.submit(0, &Job::new(1, 0, 10, 100, 100)).unwrap();
        assert_eq!(starts(&mut p, 0), [1]);
        p.submit(1, &Job::new(2, 1, 10, 1_000, 1_000)).unwrap();
        assert!(starts(&mut p, 1).is_empty());
        assert_eq!(
            p.order(),
            PlanOrder::Fcfs,
            "one job: all plans tie, keep FCFS"
        );
        p.submit(2, &Job::new(3, 2, 10, 10, 10)).unwrap();
        assert!(starts(&mut p, 2).is_empty());
        assert_eq!(p.order(), PlanOrder::Sjf);
        assert_eq!(planned(&p), [(3, 100), (2, 110)]);
        let c: std::collections::BTreeMap<String, u64> = p.counters().into_iter().collect();
        assert_eq!(c["case-1"], 2, "{c:?}");
        assert_eq!(c["case-2"], 1, "SJF strictly best (F = L)");
        assert_eq!(c["switch-to-sjf"], 1);
        assert_eq!(p.describe(), "dynp");
    }

    /// Streit's usage control (§3.1.2): on 100 processors from Monday 10:00 UTC with
    /// `width-cap 75% mon-fri 06-20`, a job of 80 processors is planned at 20:00 although the
    /// machine is empty, and a narrow job submitted after it starts at once (implicit
    /// backfilling); dynP plans alike. A job that no instant suits is refused at submission.
    #[test]
    fn planning_rules_move_a_wide_job_out_of_prime_time() {
        use crate::policy::{PlanningRules, PolicyConfig, PolicyKind};
        let rules = |t: &[&str]| {
            PlanningRules::from_texts(&t.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
        };
        let ten = 1_795_392_000 + 36_000;
        for kind in [
            PolicyKind::PlanningFcfs,
            PolicyKind::PlanningSjf,
            PolicyKind::Dynp,
        ] {
            let mut cfg = PolicyConfig::new(kind);
            cfg.planning.rules = rules(&["width-cap 75% mon-fri 06-20"]);
            let mut p = cfg.build_single(MachineId(0), 100);
            let p = p.as_mut();
            assert!(
                p.describe()
                    .contains("rule=(width-cap 75% mon,tue,wed,thu,fri 06-20)")
            );
            p.submit(ten, &Job::new(1, ten, 80, 3600, 3600)).unwrap();
            p.submit(ten, &Job::new(2, ten, 10, 600, 600)).unwrap();
            assert_eq!(starts(p, ten), [2], "{kind:?}");
            assert_eq!(planned(p), [(1, ten + 36_000)], "{kind:?}");
            assert_eq!(p.next_wakeup(), Some(ten + 36_000), "{kind:?}");
            assert_eq!(starts(p, ten + 36_000), [1], "{kind:?}");
            // Without the rule the wide job starts at once.
            let mut free = PolicyConfig::new(kind).build_single(MachineId(0), 100);
            free.submit(ten, &Job::new(1, ten, 80, 3600, 3600)).unwrap();
            assert_eq!(starts(free.as_mut(), ten), [1], "{kind:?}");
        }
        let mut cfg = PolicyConfig::new(PolicyKind::PlanningFcfs);
        cfg.planning.rules = rules(&["width-cap 1 all 00-24", "wide-only 1 all 00-24"]);
        let mut p = cfg.build_single(MachineId(0), 10);
        let e = p.submit(ten, &Job::new(1, ten, 2, 60, 60)).unwrap_err();
        assert!(e.to_string().contains("planning rules"), "{e}");
    }

    /// Per-user limits (§3.1.2, "per-user limits that virtually shrink the machine"): on 100
    /// processors from Monday 10:00 UTC with `user-cap 50% mon-fri 06-20`, user 1's jobs of 30
    /// and 20 processors start at once; its third job (20) waits for 11:00, when the first two
    /// end, although 30 processors are free; user 2's job (20) starts at once. An early end of
    /// user 1's first job lets the third start then. At 21:00, outside the window, all start at
    /// once. A job wider than an all-week cap is refused. Every planning order and dynP alike.
    #[test]
    fn a_user_cap_holds_back_one_users_jobs_only() {
        use crate::policy::{PlanningRules, PolicyConfig, PolicyKind};
        let rules = |t: &[&str]| {
            PlanningRules::from_texts(&t.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
        };
        let job = |id, at, procs, user| {
            let mut j = Job::new(id, at, procs, 3600, 3600);
            j.user = UserId(user);
            j
        };
        let mon = 1_795_392_000;
        let ten = mon + 36_000;
        for kind in [
            PolicyKind::PlanningFcfs,
            PolicyKind::PlanningSjf,
            PolicyKind::PlanningLjf,
            PolicyKind::Dynp,
        ] {
            let mut cfg = PolicyConfig::new(kind);
            cfg.planning.rules = rules(&["user-cap 50% mon-fri 06-20"]);
            let build = || cfg.build_single(MachineId(0), 100);
            let mut p = build();
            let p = p.as_mut();
            assert!(
                p.describe()
                    .contains("rule=(user-cap 50% mon,tue,wed,thu,fri 06-20)")
            );
            for j in [
                job(1, ten, 30, 1),
                job(2, ten, 20, 1),
                job(3, ten, 20, 1),
                job(4, ten, 20, 2),
            ] {
                p.submit(ten, &j).unwrap();
            }
            assert_eq!(starts(p, ten), [1, 2, 4], "{kind:?}");
            assert_eq!(planned(p), [(3, ten + 3600)], "{kind:?}");
            // A re-plan a minute later counts user 1's running jobs: job 3 keeps 11:00.
            p.submit(ten + 60, &job(5, ten + 60, 10, 2)).unwrap();
            assert_eq!(starts(p, ten + 60), [5], "{kind:?}");
            assert_eq!(planned(p), [(3, ten + 3600)], "{kind:?}");
            // Job 1 ends after half an hour: user 1 then holds 20, and job 3 fits.
            p.terminate(ten + 1800, JobId(1));
            assert_eq!(starts(p, ten + 1800), [3], "{kind:?}");
            // Outside the window the cap does not apply.
            let nine = mon + 21 * 3600;
            let mut q = build();
            for j in [
                job(1, nine, 30, 1),
                job(2, nine, 20, 1),
                job(3, nine, 20, 1),
            ] {
                q.submit(nine, &j).unwrap();
            }
            assert_eq!(starts(q.as_mut(), nine), [1, 2, 3], "{kind:?}");
            // Wider than the cap, from 19:30: after 20:00 (the window's end).
            let half = mon + 19 * 3600 + 1800;
            let mut w = build();
            w.submit(half, &job(1, half, 60, 1)).unwrap();
            assert!(starts(w.as_mut(), half).is_empty(), "{kind:?}");
            assert_eq!(planned(w.as_ref()), [(1, mon + 20 * 3600)], "{kind:?}");
        }
        let mut cfg = PolicyConfig::new(PolicyKind::PlanningFcfs);
        cfg.planning.rules = rules(&["user-cap 32 all 00-24"]);
        let mut p = cfg.build_single(MachineId(0), 100);
        p.submit(ten, &job(1, ten, 32, 1)).unwrap();
        let e = p.submit(ten, &job(2, ten, 33, 1)).unwrap_err();
        assert!(e.to_string().contains("planning rules"), "{e}");
    }
}
