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

mod candidates;

use super::dynp::{DynpOptions, PlannedJob, Ratings, SelfTuning, Tuning, TuningMetric, rate};
use super::fcfs::{check_job, restore_checks, restore_single};
pub use super::plan_order::PlanOrder;
use super::rules::PlanningRules;
use super::user_caps::{UserUse, admits};
use super::{
    AdvanceBooking, AdvanceReservation, Book, Decisions, Machines, Policy, Rejection, Reservation,
    ReservationRefused, Start,
};
use crate::model::{Duration, Job, JobId, MachineId, ReservationId, Time, UserId};
use crate::structures::{Profile, RunningSet};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// Where a waiting job stands in `order`: the sort key of the plan.
fn order_key(order: PlanOrder, w: &Waiting) -> (i64, u64) {
    match order {
        PlanOrder::Fcfs => (0, w.seq),
        PlanOrder::Sjf => (w.estimate, w.seq),
        PlanOrder::Ljf => (-w.estimate, w.seq),
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

/// One order's plan: the waiting jobs in that order with their planned starts, and the profile
/// of the running jobs, the reservations and the placed slots.
#[derive(Clone, Debug)]
struct Plan {
    order: PlanOrder,
    slots: Vec<Slot>,
    profile: Profile,
    /// The first position that must be placed again.
    dirty_from: Option<usize>,
    /// The profile no longer holds the running jobs and reservations as they are (an overrun,
    /// a change of reservations, a restart): it is built again from them. Otherwise it is kept
    /// as they and the placed slots are, and a re-plan gives back the slots it places again.
    rebuild: bool,
    /// The earliest planned start, while the plan is up to date.
    next_planned: Option<Time>,
}

impl Plan {
    fn new(order: PlanOrder, capacity: u32) -> Plan {
        Plan {
            order,
            slots: Vec::new(),
            profile: Profile::new(capacity),
            dirty_from: None,
            rebuild: true,
            next_planned: None,
        }
    }

    fn mark(&mut self, from: usize) {
        self.dirty_from = Some(self.dirty_from.map_or(from, |d| d.min(from)));
    }

    /// The profile must be built again from the running jobs and reservations.
    fn mark_rebuild(&mut self) {
        self.mark(0);
        self.rebuild = true;
    }

    /// Takes `w` in at its place in the order.
    fn insert(&mut self, w: Waiting) {
        let key = order_key(self.order, &w);
        let at = self
            .slots
            .partition_point(|s| order_key(self.order, &s.job) < key);
        self.slots.insert(
            at,
            Slot {
                job: w,
                start: None,
            },
        );
        self.mark(at);
    }

    /// Takes `job` out (cancelled), giving back its slot.
    fn remove(&mut self, job: JobId) -> bool {
        let Some(at) = self.slots.iter().position(|s| s.job.id == job) else {
            return false;
        };
        let s = self.slots.remove(at);
        if let Some(t) = s.start {
            self.profile.release(t, t + s.job.estimate, s.job.procs);
        }
        self.mark(at);
        true
    }

    /// Notes the earliest planned start of the up-to-date plan.
    fn note_next_planned(&mut self) {
        self.next_planned = self.slots.iter().filter_map(|s| s.start).min();
    }
}

/// A planning policy (or dynP) on one space-shared machine.
#[derive(Debug)]
pub struct Planning {
    machine: MachineId,
    capacity: u32,
    options: PlanningOptions,
    running: RunningSet,
    /// The active order's plan.
    active: Plan,
    /// dynP: the plans of the other two orders, kept between decisions and brought up to date
    /// from their first changed position like the active one (empty for a fixed order).
    others: Vec<Plan>,
    /// A decision of dynP is due.
    decide: bool,
    next_seq: u64,
    down: bool,
    tuner: Option<SelfTuning>,
    /// Advance reservations: fixed blocks under every plan.
    book: Book,
    /// The owners of the running jobs, for the `user-cap` rules.
    owners: FxHashMap<JobId, UserId>,
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
            options,
            running: RunningSet::new(),
            active: Plan::new(order, capacity),
            others: Vec::new(),
            decide: false,
            next_seq: 0,
            down: false,
            tuner: None,
            book: Book::default(),
            owners: FxHashMap::default(),
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
        p.others = PlanOrder::ALL
            .into_iter()
            .filter(|&o| o != p.active.order)
            .map(|o| Plan::new(o, capacity))
            .collect();
        p
    }

    /// The active order.
    pub fn order(&self) -> PlanOrder {
        self.active.order
    }

    /// Every plan must be built again from the running jobs and reservations.
    fn mark_all(&mut self) {
        self.active.mark_rebuild();
        for o in &mut self.others {
            o.mark_rebuild();
        }
    }

    /// Running jobs and advance reservations, from `now`.
    fn base_profile(&self, now: Time) -> Profile {
        self.book.availability(now, self.capacity, &self.running)
    }

    /// What each user holds from `now` for the `user-cap` rules: the running jobs until their
    /// predicted ends and the `placed` slots (nothing without such rules).
    fn user_use(&self, now: Time, placed: &[Slot]) -> UserUse {
        let mut u = UserUse::default();
        if !self.options.rules.has_user_caps() {
            return u;
        }
        for (id, e) in self.running.iter_sorted() {
            if let Some(&user) = self.owners.get(&id) {
                u.hold(user, now, e.end, e.procs);
            }
        }
        for s in placed {
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
        let from = |prev: Time| {
            if options.backfilling {
                now
            } else {
                prev.max(now)
            }
        };
        if options.rules.is_empty() {
            // Runs of alike jobs (same width and estimate, common in bursts of submissions) are
            // placed window by window.
            let mut rest = slots;
            while let Some(first) = rest.first().map(|s| s.job) {
                let alike = rest
                    .iter()
                    .take_while(|s| (s.job.procs, s.job.estimate) == (first.procs, first.estimate))
                    .count();
                let (run, tail) = rest.split_at_mut(alike);
                let mut placed = 0;
                while placed < alike {
                    let left = u32::try_from(alike - placed).unwrap_or(u32::MAX);
                    let (t, n) = profile.place_alike(from(prev), first.procs, first.estimate, left);
                    for s in &mut run[placed..placed + n as usize] {
                        s.start = Some(t);
                    }
                    placed += n as usize;
                    prev = t;
                }
                rest = tail;
            }
            return;
        }
        let caps = options.rules.has_user_caps();
        for s in slots {
            let t = earliest_allowed(profile, &options.rules, users, capacity, from(prev), &s.job);
            profile.reserve(t, t + s.job.estimate, s.job.procs);
            if caps {
                users.hold(s.job.user, t, t + s.job.estimate, s.job.procs);
            }
            s.start = Some(t);
            prev = t;
        }
    }

    /// Whether building `plan`'s profile again from the running jobs costs less than giving
    /// back its placed slots one by one (each a search and perhaps two shifts, against a
    /// simple step per running job): with many running jobs and few waiting ones, as on a
    /// large machine that keeps up with its arrivals, the slots are given back.
    fn base_is_cheaper(&self, plan: &Plan) -> bool {
        plan.slots.len() * 16 >= self.running.len()
    }

    /// Whether `plan` is placed again on the running jobs' profile built afresh: it must be, or
    /// it is placed again whole and that is cheaper than giving back its slots.
    fn placed_on_base(&self, plan: &Plan) -> bool {
        plan.rebuild || (plan.dirty_from == Some(0) && self.base_is_cheaper(plan))
    }

    /// Brings the active plan and its profile up to date at `now`.
    fn profile_now(&mut self, now: Time) {
        self.replan(now);
        if self.active.rebuild {
            self.active.profile = self.base_profile(now);
            (self.active.rebuild, self.active.dirty_from) = (false, None);
        }
        self.active.profile.forget_before(now);
    }

    /// Brings the active plan up to date at `now`.
    fn replan(&mut self, now: Time) {
        let mut plan = std::mem::replace(&mut self.active, Plan::new(PlanOrder::Fcfs, 0));
        self.bring_up_to_date(&mut plan, now);
        self.active = plan;
    }

    /// Brings `plan` up to date at `now`, from its first changed position. An empty plan whose
    /// profile must be built again stays marked: with no job to place the running jobs' profile
    /// would be built for nothing ([`Planning::profile_now`] builds it where it is read).
    fn bring_up_to_date(&self, plan: &mut Plan, now: Time) {
        if plan.rebuild && plan.slots.is_empty() {
            plan.next_planned = None;
            return;
        }
        let Some(from) = plan.dirty_from else {
            return;
        };
        if self.placed_on_base(plan) {
            // From the first position (`mark_rebuild` marks it): every slot is placed again.
            plan.profile = self.base_profile(now);
            plan.rebuild = false;
        } else {
            plan.profile.forget_before(now);
            for s in &mut plan.slots[from..] {
                if let Some(t) = s.start.take() {
                    plan.profile.release(t, t + s.job.estimate, s.job.procs);
                }
            }
        }
        plan.dirty_from = None;
        let prev = from
            .checked_sub(1)
            .and_then(|i| plan.slots[i].start)
            .unwrap_or(now);
        let mut users = self.user_use(now, &plan.slots[..from]);
        Planning::place(
            &mut plan.profile,
            &mut users,
            &mut plan.slots[from..],
            now,
            &self.options,
            self.capacity,
            prev,
        );
        plan.note_next_planned();
    }

    /// dynP's decision: the three plans, rated; the chosen one becomes the active one. Each plan
    /// is kept between decisions and brought up to date from its first changed position, which
    /// gives the plan that building it from scratch would give
    /// (`incremental_replanning_equals_rebuilding_the_whole_plan`, `dynp_equals_rebuilding_every_plan`):
    /// a submission changes nothing before its place in an order, a start nothing where the
    /// plan had the job start then; a plan that had a job start elsewhere or a slot earlier
    /// than now, and an early end, place it again from its first position; an overrun and a
    /// change of reservations build its profile again from the running jobs. Plans built on
    /// that profile share the prefixes their orders share ([`candidates::rebuild`]).
    fn self_tune(&mut self, now: Time) {
        let Some(metric) = self.tuner.as_ref().map(|t| t.options.metric) else {
            return;
        };
        let old = self.active.order;
        let mut plans: Vec<Plan> =
            std::iter::once(std::mem::replace(&mut self.active, Plan::new(old, 0)))
                .chain(self.others.drain(..))
                .collect();
        for p in &mut plans {
            let kept = p.dirty_from.unwrap_or(p.slots.len());
            if p.slots[..kept]
                .iter()
                .any(|s| s.start.is_some_and(|t| t < now))
            {
                p.mark(0);
            }
        }
        for p in &mut plans {
            p.rebuild = self.placed_on_base(p);
        }
        if plans.iter().any(|p| p.rebuild && !p.slots.is_empty()) {
            let base = self.base_profile(now);
            let users = self.user_use(now, &[]);
            let setting = candidates::Setting {
                base: &base,
                users: &users,
                now,
                options: &self.options,
                capacity: self.capacity,
            };
            candidates::rebuild(&mut plans, &setting);
        }
        let running_end = self.running.ends_after(now).last().map_or(now, |(e, _)| e);
        let mut ratings = Ratings::default();
        for p in &mut plans {
            self.bring_up_to_date(p, now);
            ratings.set(p.order, rating(metric, &p.slots, running_end));
        }
        let chosen = match self.tuner.as_mut() {
            Some(tuner) => tuner.decide(ratings, old),
            None => old,
        };
        let at = plans
            .iter()
            .position(|p| p.order == chosen)
            .expect("a plan per order");
        self.active = plans.swap_remove(at);
        self.others = plans;
    }

    /// Takes the jobs the active plan started at `now` out of the other plans: a plan that had
    /// such a job start now is still the plan it was; in one that had it start at another time
    /// the job is moved in the profile to where it runs, and the plan is placed again from its
    /// first position.
    fn started_elsewhere(&mut self, now: Time, started: &[Start]) {
        if started.is_empty() {
            return;
        }
        let mut ids: Vec<JobId> = started.iter().map(|s| s.job).collect();
        ids.sort_unstable();
        for o in &mut self.others {
            let (mut at, mut before_dirty, mut moved) = (0, 0, false);
            let dirty = o.dirty_from.unwrap_or(usize::MAX);
            let profile = &mut o.profile;
            o.slots.retain(|s| {
                let keep = ids.binary_search(&s.job.id).is_err();
                if !keep {
                    if s.start != Some(now) {
                        // The job runs from now: the profile holds it there, not in its slot.
                        moved = true;
                        if let Some(t) = s.start {
                            profile.release(t, t + s.job.estimate, s.job.procs);
                        }
                        profile.reserve(now, now + s.job.estimate, s.job.procs);
                    }
                    before_dirty += usize::from(at < dirty);
                }
                at += 1;
                keep
            });
            if let Some(d) = o.dirty_from.as_mut() {
                *d -= before_dirty;
            }
            if moved {
                o.mark(0);
            }
        }
    }
}

/// The value of a plan under `metric` ([`rate`]): rated in arrival order whatever the plan's
/// order, so that equal plans tie exactly (the exact integer sums need no order).
fn rating(metric: TuningMetric, slots: &[Slot], running_end: Time) -> f64 {
    let job = |s: &Slot| PlannedJob {
        submit: s.job.submit,
        procs: s.job.procs,
        estimate: s.job.estimate,
        start: s.start.expect("placed"),
    };
    if metric.exact() {
        return rate(metric, slots.iter().map(job), running_end);
    }
    let mut by_arrival: Vec<&Slot> = slots.iter().collect();
    by_arrival.sort_unstable_by_key(|s| s.job.seq);
    rate(metric, by_arrival.into_iter().map(job), running_end)
}

impl Policy for Planning {
    fn single_machine(&self) -> Option<(MachineId, u32)> {
        Some((self.machine, self.capacity))
    }

    fn describe(&self) -> String {
        let mut words = match &self.tuner {
            Some(t) => {
                let mut w = vec!["dynp".to_string()];
                w.extend(t.options.non_default());
                w
            }
            None => vec![format!("planning-{}", self.active.order.as_str())],
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
            || self.active.slots.iter().any(|s| s.job.id == job.id)
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
        self.active.insert(w);
        for o in &mut self.others {
            o.insert(w);
        }
        self.decide = true;
        Ok(())
    }

    fn terminate(&mut self, now: Time, job: JobId) {
        if let Some(past) = self.book.remove(now, job) {
            if past.is_some() {
                self.mark_all();
            }
            return;
        }
        let Some(e) = self.running.remove(job) else {
            return;
        };
        self.owners.remove(&job);
        if e.end > now {
            // What it gave back is given back in every plan's profile, which then holds the
            // running jobs as they are: each plan is placed again from its first position.
            for p in std::iter::once(&mut self.active).chain(&mut self.others) {
                p.profile.release(now, e.end, e.procs);
                p.mark(0);
            }
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
                self.mark_all();
            }
            return;
        }
        if self.running.set_end(job, predicted_end).is_some() {
            self.mark_all();
        }
    }

    fn cancel(&mut self, now: Time, job: JobId) -> bool {
        if self.book.holds(job) {
            return self.book.remove(now, job).is_some();
        }
        if !self.active.remove(job) {
            return false;
        }
        for o in &mut self.others {
            o.remove(job);
        }
        true
    }

    fn schedule(&mut self, now: Time, out: &mut Decisions) {
        let starts = &mut out.starts;
        if self.down {
            return;
        }
        self.book.expire(now);
        if std::mem::take(&mut self.decide) && self.tuner.is_some() {
            self.self_tune(now);
        } else {
            self.replan(now);
        }
        let first = starts.len();
        let Planning {
            active:
                Plan {
                    slots,
                    profile,
                    order,
                    next_planned,
                    ..
                },
            running,
            owners,
            tuner,
            machine,
            ..
        } = self;
        *next_planned = None;
        slots.retain(|s| {
            let t = s.start.expect("the plan is up to date");
            if t > now {
                *next_planned = Some(next_planned.map_or(t, |n| n.min(t)));
                return true;
            }
            if t < now {
                // Woken late: the slot moves to the actual start.
                profile.release(t, t + s.job.estimate, s.job.procs);
                profile.reserve(now, now + s.job.estimate, s.job.procs);
            }
            running.insert(s.job.id, s.job.procs, now, s.job.estimate);
            owners.insert(s.job.id, s.job.user);
            if let Some(tuner) = tuner.as_mut() {
                tuner.started_under(*order);
            }
            starts.push(Start::on(s.job.id, *machine, s.job.procs));
            false
        });
        self.started_elsewhere(now, &starts[first..]);
        self.book.start_due(now, self.machine, starts);
    }

    fn next_wakeup(&self) -> Option<Time> {
        if self.down {
            return None;
        }
        let inside = self.book.next_due();
        let planned = if self.active.dirty_from.is_none() && !self.decide {
            self.active.next_planned
        } else {
            self.active.slots.iter().filter_map(|s| s.start).min()
        };
        planned.into_iter().chain(inside).min()
    }

    fn counters(&self) -> Vec<(String, u64)> {
        self.tuner.as_ref().map_or_else(Vec::new, |t| t.counters())
    }

    fn waiting_len(&self) -> usize {
        self.active.slots.len() + self.book.counts().0
    }

    fn running_len(&self) -> usize {
        self.running.len() + self.book.counts().1
    }

    fn queue(&self) -> Vec<JobId> {
        let inside = self.book.planned().into_iter().map(|p| p.0);
        self.active
            .slots
            .iter()
            .map(|s| s.job.id)
            .chain(inside)
            .collect()
    }

    fn reservations(&self) -> Vec<Reservation> {
        let slots = self
            .active
            .slots
            .iter()
            .filter_map(|s| {
                let w = s.job;
                s.start.map(|t| (w.id, t, w.estimate, w.procs))
            })
            .chain(self.book.planned());
        Reservation::planned_on(self.machine, slots)
    }

    crate::policy::capabilities!(machines, booking);
}

impl Machines for Planning {
    fn set_machine_available(&mut self, _now: Time, machine: MachineId, available: bool) {
        if machine != self.machine || self.down != available {
            return;
        }
        self.down = !available;
        if available {
            self.mark_all();
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
        let waiting = self.active.slots.iter().any(|s| s.job.id == job.id);
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
        self.mark_all();
        Ok(())
    }
}

impl AdvanceBooking for Planning {
    fn admit_reservation(
        &mut self,
        now: Time,
        r: &AdvanceReservation,
    ) -> Result<(), ReservationRefused> {
        self.profile_now(now);
        self.book
            .admit(now, r, self.machine, self.capacity, &self.active.profile)?;
        // It fits in the current plan: the placed slots stay where they are. It may not fit
        // in the others, which are built again.
        self.active.profile.reserve(r.start, r.end, r.procs);
        for o in &mut self.others {
            o.mark_rebuild();
        }
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
        self.mark_all();
        true
    }

    fn advance_reservations(&self) -> Vec<AdvanceReservation> {
        self.book.list()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Conservative;
    use crate::policy::dynp::DeciderKind;
    use crate::policy::test_util::ScheduleInto;
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

    /// With nobody waiting the plan is not re-placed after an overrun, but a reservation is
    /// still admitted against the running jobs as they are: the overrunning job now holds the
    /// whole machine until 200, so a reservation at 150 is refused and one at 200 admitted.
    #[test]
    fn a_reservation_sees_an_overrun_with_no_job_waiting() {
        for mut p in [
            fixed(PlanOrder::Fcfs),
            Planning::dynp(
                MachineId(0),
                10,
                PlanningOptions::default(),
                DynpOptions::default(),
            ),
        ] {
            p.submit(0, &Job::new(1, 0, 10, 100, 300)).unwrap();
            assert_eq!(starts(&mut p, 0), vec![1]);
            p.overrun(100, JobId(1), 200);
            assert_eq!(p.waiting_len(), 0);
            let r = |id, start| AdvanceReservation::new(id, start, start + 10, 5);
            assert!(
                p.admit_reservation(100, &r(1, 150)).is_err(),
                "{}",
                p.describe()
            );
            assert_eq!(p.admit_reservation(100, &r(2, 200)), Ok(()));
        }
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
        capacity: u32,
        order: PlanOrder,
        backfilling: bool,
        waiting: Vec<Waiting>,
        running: RunningSet,
    }

    impl Naive {
        /// The plan of `order` built from scratch at `now`, one job at a time.
        fn plan(&self, now: Time, order: PlanOrder) -> Vec<Slot> {
            let mut profile = Profile::new(self.capacity);
            for (end, procs) in self.running.ends_after(now) {
                profile.reserve(now, end, procs as u32);
            }
            let mut slots: Vec<Slot> = self
                .waiting
                .iter()
                .map(|&job| Slot { job, start: None })
                .collect();
            slots.sort_by_key(|s| order_key(order, &s.job));
            let mut prev = now;
            for s in &mut slots {
                let from = if self.backfilling { now } else { prev };
                let t = profile.earliest(from, s.job.procs, s.job.estimate);
                profile.reserve(t, t + s.job.estimate, s.job.procs);
                (s.start, prev) = (Some(t), t);
            }
            slots
        }

        fn pass(&mut self, now: Time) -> Vec<u64> {
            let slots = self.plan(now, self.order);
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

    /// One submission, or a burst of alike jobs (same width and estimate) a third of the time.
    fn burst(
        rng: &mut rand_chacha::ChaCha8Rng,
        next_id: &mut u64,
        now: Time,
        widest: u32,
    ) -> Vec<Job> {
        use rand::RngExt;
        let copies = if rng.random_bool(0.3) {
            rng.random_range(2..7)
        } else {
            1
        };
        let (procs, estimate) = (rng.random_range(1..=widest), rng.random_range(1..120));
        (0..copies)
            .map(|_| {
                let run = rng.random_range(1..=estimate);
                *next_id += 1;
                Job::new(*next_id - 1, now, procs, estimate, run)
            })
            .collect()
    }

    /// A pass of both at `now`: the jobs each starts, sorted.
    fn both_pass(fast: &mut Planning, naive: &mut Naive, now: Time) -> (Vec<u64>, Vec<u64>) {
        let mut out = Vec::new();
        fast.schedule_into(now, &mut out);
        let mut a: Vec<u64> = out.iter().map(|s| s.job.0).collect();
        let mut b = naive.pass(now);
        a.sort();
        b.sort();
        (a, b)
    }

    /// A random stream's machine: ten processors and jobs up to all ten wide, or (every fourth
    /// seed) 120 processors, jobs of one to three and one or more a second, so that many jobs run
    /// beside a short queue. Returns (capacity, widest job, submissions per second, seconds of
    /// submissions).
    fn machine_of(seed: u64) -> (u32, u32, f64, Time) {
        if seed % 4 == 3 {
            (120, 3, 1.0, 1_000)
        } else {
            (10, 10, 0.06, 3_000)
        }
    }

    fn waiting(job: &Job) -> Waiting {
        Waiting {
            id: job.id,
            seq: job.id.0,
            submit: job.submit,
            procs: job.procs,
            estimate: job.estimate,
            user: job.user,
        }
    }

    /// Differential check: the incremental plan starts the same jobs at the same instants as a
    /// plan rebuilt from scratch at every pass, one job at a time, for every order, with and
    /// without backfilling, over random streams with bursts of alike jobs, early ends and
    /// cancellations.
    #[test]
    fn incremental_replanning_equals_rebuilding_the_whole_plan() {
        use rand::{RngExt, SeedableRng};
        for seed in 0..24u64 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let order = PlanOrder::ALL[seed as usize % 3];
            let backfilling = seed % 2 == 0;
            let (capacity, widest, rate, until) = machine_of(seed);
            let mut fast = Planning::new(
                MachineId(0),
                capacity,
                order,
                PlanningOptions {
                    backfilling,
                    ..PlanningOptions::default()
                },
            );
            let mut naive = Naive {
                capacity,
                order,
                backfilling,
                waiting: Vec::new(),
                running: RunningSet::new(),
            };
            let mut ends: Vec<(Time, u64)> = Vec::new();
            let mut runtimes = std::collections::HashMap::new();
            let mut next_id = 1u64;
            let mut started = 0;
            for now in 0..50_000i64 {
                if now > until && naive.waiting.is_empty() && ends.is_empty() {
                    break;
                }
                ends.sort();
                while ends.first().is_some_and(|&(t, _)| t == now) {
                    let (_, id) = ends.remove(0);
                    fast.terminate(now, JobId(id));
                    naive.running.remove(JobId(id));
                }
                if now < until && rng.random_bool(rate) {
                    for job in burst(&mut rng, &mut next_id, now, widest) {
                        fast.submit(now, &job).unwrap();
                        naive.waiting.push(waiting(&job));
                        runtimes.insert(job.id.0, job.runtime.expect("emulated"));
                    }
                }
                if rng.random_bool(0.02) && !naive.waiting.is_empty() {
                    let i = rng.random_range(0..naive.waiting.len());
                    let id = naive.waiting.remove(i).id;
                    assert!(fast.cancel(now, id), "seed {seed}: {id} waits");
                }
                let (a, b) = both_pass(&mut fast, &mut naive, now);
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

    /// Differential check of dynP: keeping the three plans between decisions and bringing each up
    /// to date from its first changed position (placing runs of alike jobs together and shared
    /// prefixes once) makes the decisions of building all three from scratch, one job at a time,
    /// and rating them in arrival order, at every submission and early end: the same starts, the
    /// same active policy after every pass and the same counts of Tab. 4.3's cases.
    #[test]
    fn dynp_equals_rebuilding_every_plan() {
        use rand::{RngExt, SeedableRng};
        let metrics = [
            TuningMetric::Artww,
            TuningMetric::Sld,
            TuningMetric::Art,
            TuningMetric::Sldww,
        ];
        let deciders = [
            DeciderKind::Advanced,
            DeciderKind::Simple,
            DeciderKind::Preferred,
        ];
        let mut switches = 0;
        for seed in 0..24u64 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let backfilling = seed % 5 != 4;
            let options = DynpOptions {
                metric: metrics[seed as usize % 4],
                decider: deciders[seed as usize % 3],
                tuning: if seed % 7 == 6 {
                    Tuning::Half
                } else {
                    Tuning::Full
                },
                ..DynpOptions::default()
            };
            let planning = PlanningOptions {
                backfilling,
                ..PlanningOptions::default()
            };
            let (capacity, widest, arrivals, until) = machine_of(seed);
            let mut fast = Planning::dynp(MachineId(0), capacity, planning, options);
            let mut naive = Naive {
                capacity,
                order: options.initial(),
                backfilling,
                waiting: Vec::new(),
                running: RunningSet::new(),
            };
            let mut tuner = SelfTuning::new(options);
            let mut ends: Vec<(Time, u64, bool)> = Vec::new();
            let mut runs = std::collections::HashMap::new();
            let mut next_id = 1u64;
            for now in 0..50_000i64 {
                if now > until && naive.waiting.is_empty() && ends.is_empty() {
                    break;
                }
                let mut decide = false;
                ends.sort();
                while ends.first().is_some_and(|&(t, _, _)| t == now) {
                    let (_, id, early) = ends.remove(0);
                    fast.terminate(now, JobId(id));
                    naive.running.remove(JobId(id));
                    decide |= early && options.tuning == Tuning::Full;
                }
                if now < until && rng.random_bool(arrivals) {
                    for job in burst(&mut rng, &mut next_id, now, widest) {
                        fast.submit(now, &job).unwrap();
                        naive.waiting.push(waiting(&job));
                        runs.insert(job.id.0, (job.runtime.expect("emulated"), job.estimate));
                    }
                    decide = true;
                }
                if rng.random_bool(0.01) && !naive.waiting.is_empty() {
                    let i = rng.random_range(0..naive.waiting.len());
                    let id = naive.waiting.remove(i).id;
                    assert!(fast.cancel(now, id), "seed {seed}: {id} waits");
                }
                if decide {
                    let mut ratings = Ratings::default();
                    for order in PlanOrder::ALL {
                        let mut jobs: Vec<(u64, PlannedJob)> = naive
                            .plan(now, order)
                            .iter()
                            .map(|s| {
                                let start = s.start.expect("placed");
                                let j = s.job;
                                (
                                    j.seq,
                                    PlannedJob {
                                        submit: j.submit,
                                        procs: j.procs,
                                        estimate: j.estimate,
                                        start,
                                    },
                                )
                            })
                            .collect();
                        jobs.sort_by_key(|(seq, _)| *seq);
                        let jobs: Vec<PlannedJob> = jobs.into_iter().map(|(_, j)| j).collect();
                        let end = naive.running.ends_after(now).last().map_or(now, |(e, _)| e);
                        ratings.set(order, rate(options.metric, jobs, end));
                    }
                    let chosen = tuner.decide(ratings, naive.order);
                    switches += usize::from(chosen != naive.order);
                    naive.order = chosen;
                }
                let (a, b) = both_pass(&mut fast, &mut naive, now);
                assert_eq!(a, b, "seed {seed} ({options:?}) at {now}");
                assert_eq!(fast.order(), naive.order, "seed {seed} at {now}");
                for id in a {
                    let (run, estimate) = runs[&id];
                    ends.push((now + run, id, run < estimate));
                }
            }
            assert_eq!(fast.waiting_len(), 0);
            let counts = |t: &SelfTuning| {
                t.counters()
                    .into_iter()
                    .filter(|(k, _)| k.starts_with("case-"))
                    .collect::<Vec<_>>()
            };
            let cases = counts(fast.tuner.as_ref().expect("dynP"));
            assert!(cases.len() > 2, "seed {seed}: decisions of several cases");
            assert_eq!(cases, counts(&tuner), "seed {seed}");
        }
        assert!(switches > 20, "the streams make dynP switch ({switches})");
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
