//! Conservative backfilling as a planning policy (`reference-semantics.md` "Conservative
//! backfilling"; `self-tuning-and-multisite.md` §1.4, §2.4 and ambiguity 7).
//!
//! At submission a job is placed at its earliest start in the availability profile (running jobs
//! until their predicted ends, plus every reservation made before) and it starts when that time
//! comes. At every termination the unused tail of the ended job is freed and every job that has
//! not started is, in arrival order, taken out of the profile and placed again at its earliest
//! start (which can only move earlier); a changed start gets a new plan sequence number, which
//! orders starts that fall on the same instant (the reference's start-event order).
//!
//! Two exact shortcuts spare most walks of the profile: free processors at any future instant are
//! at least the capacity minus the processors of every running and planned job; and before the
//! first planned start after `now` the free count can only rise (only running jobs end there), so
//! a job that fits now and ends by then is placed now.
//!
//! A re-placement round after a termination that freed nothing, following a round that moved
//! nothing, cannot move anything either (only additions happened since), so it is skipped; results
//! are identical to running it. An overrun (a job still running at its predicted end) can
//! over-commit the profile: then every waiting job is re-planned from scratch, in arrival order.
//!
//! While the machine is down (`set_machine_available`) nothing starts, and no planned start is
//! due; when it returns, its jobs are re-planned from scratch in arrival order, as after an
//! overrun (the plan made before the outage promised starts that have passed).

use super::fcfs::{check_job, restore_checks, restore_single};
use super::{
    AdvanceBooking, AdvanceReservation, Book, Decisions, Machines, Policy, Rejection, Reservation,
    ReservationRefused, Start,
};
use crate::model::{Duration, Job, JobId, MachineId, ReservationId, Time};
use crate::structures::{Profile, RunningSet};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug)]
struct Planned {
    id: JobId,
    procs: u32,
    estimate: Duration,
    start: Time,
    plan_seq: u64,
    /// The [`Gains`] sequence number when the job's start was last found to be its earliest.
    checked: u64,
}

/// How many of the latest stuck jobs a round compares a job with.
const STUCK_SCAN: usize = 8;

/// A job a round found unable to start before `limit` (and its planned start), in the profile
/// as it still is.
#[derive(Clone, Copy, Debug)]
struct Stuck {
    procs: u32,
    estimate: Duration,
    start: Time,
    limit: Time,
}

impl Stuck {
    /// The earliest start left to a later job `p` at least as wide and as long, planned no
    /// earlier: for any earlier start, its window (cut at its planned start) holds this job's
    /// window, which found too few processors.
    fn bound_for(&self, p: &Planned) -> Option<Time> {
        (self.procs <= p.procs && self.estimate <= p.estimate && self.start <= p.start)
            .then_some(self.limit)
    }
}

/// The processors given back to the profile over time (ended jobs' unused tails, cancelled and
/// moved reservations): for a sequence number, the latest end of every gain recorded after it.
/// A waiting job can only move to a window holding an instant that gained processors since it
/// was last placed, so it can only move to a start before that latest end.
#[derive(Debug, Default)]
struct Gains {
    next: u64,
    /// (sequence, end), ends decreasing: the latest end after a sequence number is the end of
    /// the first entry past it.
    stack: Vec<(u64, Time)>,
}

impl Gains {
    fn record(&mut self, end: Time) {
        self.next += 1;
        while self.stack.last().is_some_and(|&(_, e)| e <= end) {
            self.stack.pop();
        }
        self.stack.push((self.next, end));
    }

    fn seq(&self) -> u64 {
        self.next
    }

    fn latest_end_after(&self, seq: u64) -> Time {
        let i = self.stack.partition_point(|&(s, _)| s <= seq);
        self.stack.get(i).map_or(Time::MIN, |&(_, e)| e)
    }

    /// Drops the gains that ended by `now` (the later ones end earlier still).
    fn forget_before(&mut self, now: Time) {
        while self.stack.last().is_some_and(|&(_, e)| e <= now) {
            self.stack.pop();
        }
    }
}

/// Conservative backfilling on one space-shared machine.
#[derive(Debug)]
pub struct Conservative {
    machine: MachineId,
    capacity: u32,
    profile: Profile,
    /// Waiting jobs by arrival sequence.
    waiting: BTreeMap<u64, Planned>,
    seq_of: FxHashMap<JobId, u64>,
    /// The earliest planned start of a waiting job (kept exact: moves in place only go earlier,
    /// other changes recompute it). The jobs due at a pass are found by a scan of the waiting
    /// jobs, which costs no more than a round, instead of an ordered set updated at every move.
    first_due: Option<Time>,
    running: RunningSet,
    /// Processors of all running and waiting jobs.
    committed: u64,
    next_seq: u64,
    next_plan: u64,
    /// A re-placement round could move a job.
    dirty: bool,
    /// A termination (or cancellation) happened since the last pass.
    round_pending: bool,
    /// An overrun over-committed the profile, or the machine came back: re-plan everything.
    replan_all: bool,
    /// The machine is down: nothing starts.
    down: bool,
    /// A job started late (after its planned start) may over-commit the profile until its
    /// predicted end or a re-planning from scratch: before then, rounds take every job out
    /// before placing it again.
    overcommitted_until: Time,
    gains: Gains,
    /// Advance reservations: fixed blocks of the profile.
    book: Book,
    /// Rounds take every job out and place it again, as the reference does (for the
    /// differential test of the in-place rounds).
    reference_rounds: bool,
}

impl Conservative {
    /// Conservative backfilling for `machine` of `capacity` processors.
    pub fn new(machine: MachineId, capacity: u32) -> Conservative {
        Conservative {
            machine,
            capacity,
            profile: Profile::new(capacity),
            waiting: BTreeMap::new(),
            seq_of: FxHashMap::default(),
            first_due: None,
            running: RunningSet::new(),
            committed: 0,
            next_seq: 0,
            next_plan: 0,
            dirty: false,
            round_pending: false,
            replan_all: false,
            down: false,
            overcommitted_until: Time::MIN,
            gains: Gains::default(),
            book: Book::default(),
            reference_rounds: false,
        }
    }

    /// The earliest planned start of a waiting job.
    fn earliest_planned(&self) -> Option<Time> {
        self.waiting.values().map(|p| p.start).min()
    }

    /// Starts the waiting jobs planned at or before `now`, by planned start then plan sequence
    /// number (the reference's start-event order).
    fn start_due(&mut self, now: Time, starts: &mut Vec<Start>) {
        let mut due: Vec<(Time, u64, u64)> = self
            .waiting
            .iter()
            .filter(|(_, p)| p.start <= now)
            .map(|(&seq, p)| (p.start, p.plan_seq, seq))
            .collect();
        due.sort_unstable();
        for (t, _, seq) in due {
            let p = self.waiting.remove(&seq).expect("a waiting job");
            self.seq_of.remove(&p.id);
            if t < now {
                // Woken late: move the reservation to the actual start.
                self.profile.release(t, t + p.estimate, p.procs);
                self.profile.reserve(now, now + p.estimate, p.procs);
                self.gains.record(t + p.estimate);
                self.overcommitted_until = self.overcommitted_until.max(now + p.estimate);
            }
            self.running.insert(p.id, p.procs, now, p.estimate);
            starts.push(Start::on(p.id, self.machine, p.procs));
        }
        self.first_due = self.earliest_planned();
    }

    /// Takes each waiting job out and places it again at its earliest start, in arrival order.
    /// With `from_scratch`, all reservations are removed first (after an overrun).
    ///
    /// Without it, and while the profile is nowhere over-committed, a job can only move to an
    /// instant before its planned start from which enough processors stay free up to that start
    /// or for its estimate (from its planned start on, its own processors make room for it), and
    /// only to a start before the latest end of the processors given back since it was last
    /// placed ([`Gains`]): [`Profile::earliest_within`] answers that without taking the job out,
    /// so only the jobs that move touch the profile. The result is the reference's re-placement,
    /// exactly (`rounds_in_place_equal_the_reference_rounds` checks it).
    fn replan(&mut self, now: Time, from_scratch: bool) -> bool {
        if from_scratch {
            for p in self.waiting.values() {
                self.profile.release(p.start, p.start + p.estimate, p.procs);
            }
        }
        let mut moved = false;
        let (capacity, committed) = (self.capacity, self.committed);
        let in_place = !from_scratch && now >= self.overcommitted_until && !self.reference_rounds;
        self.profile.forget_before(now);
        self.gains.forget_before(now);
        // Jobs found unable to move since the profile last changed in this round.
        let mut stuck: Vec<Stuck> = Vec::new();
        // The last horizon asked for, by `checked` sequence number.
        let mut memo: Option<(u64, Time)> = None;
        for p in self.waiting.values_mut() {
            if p.start <= now && !from_scratch {
                continue; // due now: it starts in this pass
            }
            let s = if in_place {
                // Jobs last checked at the same sequence number share the answer (kept up to
                // date as this round records gains).
                let horizon = match memo {
                    Some((c, h)) if c == p.checked => h,
                    _ => {
                        let h = self.gains.latest_end_after(p.checked);
                        memo = Some((p.checked, h));
                        h
                    }
                };
                p.checked = self.gains.seq();
                let limit = p.start.min(horizon);
                let from = stuck
                    .iter()
                    .rev()
                    .take(STUCK_SCAN)
                    .filter_map(|k| k.bound_for(p))
                    .fold(now, Time::max);
                if from >= limit {
                    continue;
                }
                let Some(s) = self
                    .profile
                    .earliest_within(from, p.procs, p.estimate, limit, p.start)
                else {
                    stuck.push(Stuck {
                        procs: p.procs,
                        estimate: p.estimate,
                        start: p.start,
                        limit,
                    });
                    continue;
                };
                stuck.clear();
                self.profile.release(p.start, p.start + p.estimate, p.procs);
                s
            } else {
                p.checked = self.gains.seq();
                if !from_scratch {
                    self.profile.release(p.start, p.start + p.estimate, p.procs);
                }
                let others = committed - u64::from(p.procs);
                // Never later than the first start among the jobs re-placed so far and the
                // slots of the others before this round: a lower bound, which gives the same
                // placement (the shortcut is exact).
                place(
                    &self.profile,
                    self.first_due,
                    &self.book,
                    now,
                    p.procs,
                    p.estimate,
                    capacity,
                    others,
                )
            };
            self.profile.reserve(s, s + p.estimate, p.procs);
            if s != p.start {
                self.gains.record(p.start + p.estimate);
                // The latest end of the gains after any earlier sequence number now includes
                // this one's.
                memo = memo.map(|(c, h)| (c, h.max(p.start + p.estimate)));
                p.start = s;
                p.plan_seq = self.next_plan;
                self.next_plan += 1;
                self.first_due = Some(self.first_due.map_or(s, |f| f.min(s)));
                moved = true;
            }
        }
        if from_scratch {
            self.overcommitted_until = Time::MIN;
        }
        if !in_place {
            // Jobs may have moved later.
            self.first_due = self.earliest_planned();
        }
        moved
    }
}

/// The earliest start of a job of `procs` processors for `estimate` from `now`, when `others`
/// processors are committed to other jobs and reservations, no planned start is before
/// `first_due` and `book` holds the reservations (the free count can only rise before the first
/// start after `now` of either; a start due at `now` leaves no such stretch).
#[allow(clippy::too_many_arguments)]
fn place(
    profile: &Profile,
    first_due: Option<Time>,
    book: &Book,
    now: Time,
    procs: u32,
    estimate: Duration,
    capacity: u32,
    others: u64,
) -> Time {
    if u64::from(procs) + others <= u64::from(capacity) {
        return now;
    }
    let rising_until = first_due
        .map_or(Time::MAX, |t| t.max(now))
        .min(book.next_start_after(now).unwrap_or(Time::MAX));
    profile.earliest_rising(now, procs, estimate, rising_until)
}

impl Policy for Conservative {
    fn single_machine(&self) -> Option<(MachineId, u32)> {
        Some((self.machine, self.capacity))
    }

    fn describe(&self) -> String {
        "conservative".into()
    }

    fn submit(&mut self, now: Time, job: &Job) -> Result<(), Rejection> {
        if self.seq_of.contains_key(&job.id)
            || self.running.get(job.id).is_some()
            || self.book.holds(job.id)
        {
            return Err(Rejection::Duplicate(job.id));
        }
        if job.reservation.is_some() {
            return self.book.submit(now, job);
        }
        check_job(job, self.capacity)?;
        self.profile.forget_before(now);
        let start = place(
            &self.profile,
            self.first_due,
            &self.book,
            now,
            job.procs,
            job.estimate,
            self.capacity,
            self.committed,
        );
        self.profile.reserve(start, start + job.estimate, job.procs);
        self.committed += u64::from(job.procs);
        let p = Planned {
            id: job.id,
            procs: job.procs,
            estimate: job.estimate,
            start,
            plan_seq: self.next_plan,
            checked: self.gains.seq(),
        };
        self.next_plan += 1;
        self.first_due = Some(self.first_due.map_or(start, |f| f.min(start)));
        self.waiting.insert(self.next_seq, p);
        self.seq_of.insert(job.id, self.next_seq);
        self.next_seq += 1;
        Ok(())
    }

    fn terminate(&mut self, now: Time, job: JobId) {
        if let Some(past) = self.book.remove(now, job) {
            if let Some((from, to, procs)) = past {
                self.profile.release(from, to, procs);
                self.gains.record(to);
                self.dirty = true;
                self.round_pending = true;
            }
            return;
        }
        let Some(e) = self.running.remove(job) else {
            return;
        };
        self.committed -= u64::from(e.procs);
        if e.end > now {
            self.profile.release(now, e.end, e.procs);
            self.gains.record(e.end);
            self.dirty = true;
        }
        self.round_pending = true;
        self.profile.forget_before(now);
    }

    fn overrun(&mut self, now: Time, job: JobId, predicted_end: Time) {
        if self.book.holds(job) {
            if let Some((from, to, procs)) = self.book.overrun(now, job, predicted_end) {
                self.profile.reserve(from, to, procs);
                self.replan_all = true;
            }
            return;
        }
        let Some(old) = self.running.set_end(job, predicted_end) else {
            return;
        };
        self.profile
            .reserve(old.end.max(now), predicted_end, old.procs);
        self.replan_all = true;
    }

    fn cancel(&mut self, now: Time, job: JobId) -> bool {
        if self.book.holds(job) {
            return self.book.remove(now, job).is_some();
        }
        let Some(seq) = self.seq_of.remove(&job) else {
            return false;
        };
        let p = self.waiting.remove(&seq).expect("indexed waiting job");
        self.profile.release(p.start, p.start + p.estimate, p.procs);
        self.gains.record(p.start + p.estimate);
        if self.first_due == Some(p.start) {
            self.first_due = self.earliest_planned();
        }
        self.committed -= u64::from(p.procs);
        self.dirty = true;
        self.round_pending = true;
        true
    }

    fn schedule(&mut self, now: Time, out: &mut Decisions) {
        let starts = &mut out.starts;
        if self.down {
            return;
        }
        if self.replan_all {
            self.replan_all = false;
            self.replan(now, true);
            self.dirty = true;
        } else if self.round_pending && self.dirty {
            self.dirty = self.replan(now, false);
        }
        self.round_pending = false;
        for r in self.book.expire(now) {
            self.committed -= u64::from(r.procs);
        }
        if self.first_due.is_some_and(|t| t <= now) {
            self.start_due(now, starts);
        }
        self.book.start_due(now, self.machine, starts);
    }
    fn next_wakeup(&self) -> Option<Time> {
        if self.down {
            return None;
        }
        let inside = self.book.next_due();
        self.first_due.into_iter().chain(inside).min()
    }

    fn waiting_len(&self) -> usize {
        self.waiting.len() + self.book.counts().0
    }

    fn running_len(&self) -> usize {
        self.running.len() + self.book.counts().1
    }

    fn queue(&self) -> Vec<JobId> {
        let inside = self.book.planned().into_iter().map(|p| p.0);
        self.waiting.values().map(|p| p.id).chain(inside).collect()
    }

    fn reservations(&self) -> Vec<Reservation> {
        let slots = self
            .waiting
            .values()
            .map(|p| (p.id, p.start, p.estimate, p.procs))
            .chain(self.book.planned());
        Reservation::planned_on(self.machine, slots)
    }

    crate::policy::capabilities!(machines, booking);
}

impl Machines for Conservative {
    fn set_machine_available(&mut self, _now: Time, machine: MachineId, available: bool) {
        // `down != available`: already in that state.
        if machine != self.machine || self.down != available {
            return;
        }
        self.down = !available;
        if available {
            self.replan_all = true;
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
        let waiting = self.seq_of.contains_key(&job.id);
        restore_checks(job, machine, self.machine, waiting)?;
        self.profile.forget_before(now);
        if job.reservation.is_some() {
            if let Some((from, to, p)) = self.book.restore_running(now, job, started, procs)? {
                self.profile.reserve(from, to, p);
            }
        } else {
            let me = (self.machine, self.capacity);
            restore_single(&mut self.running, me, job, started, machine, procs)?;
            let end = self.running.get(job.id).map_or(now, |e| e.end);
            if end > now {
                self.profile.reserve(now, end, procs);
            }
            self.committed += u64::from(procs);
        }
        self.replan_all = true;
        Ok(())
    }
}

impl AdvanceBooking for Conservative {
    fn admit_reservation(
        &mut self,
        now: Time,
        r: &AdvanceReservation,
    ) -> Result<(), ReservationRefused> {
        self.profile.forget_before(now);
        self.book
            .admit(now, r, self.machine, self.capacity, &self.profile)?;
        self.profile.reserve(r.start, r.end, r.procs);
        self.committed += u64::from(r.procs);
        Ok(())
    }

    fn cancel_reservation(&mut self, now: Time, id: ReservationId) -> bool {
        let released = self.book.cancel(id);
        let Some(r) = released.reservation else {
            return false;
        };
        self.committed -= u64::from(r.procs);
        self.profile.forget_before(now);
        if r.end > now {
            self.profile.release(r.start.max(now), r.end, r.procs);
            self.gains.record(r.end);
            self.dirty = true;
            self.round_pending = true;
        }
        // Its running jobs now hold the machine's own processors; its waiting ones queue.
        for (job, procs, end) in released.running {
            self.profile.reserve(now, end.min(r.end).max(now), procs);
            self.running.insert(job, procs, now, (end - now).max(1));
            self.committed += u64::from(procs);
        }
        for job in released.waiting {
            self.submit(now, &job)
                .expect("a job that fitted in the reservation fits the machine");
        }
        true
    }

    fn advance_reservations(&self) -> Vec<AdvanceReservation> {
        self.book.list()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::test_util::{planned, starts};

    /// The in-place rounds (only jobs that can move touch the profile, and only up to the
    /// latest end of what was given back since they were placed) plan exactly what the
    /// reference's rounds plan, taking every job out and placing it again: the same starts and
    /// the same planned starts at every second, through early ends, cancellations, overruns
    /// and passes run late.
    #[test]
    fn rounds_in_place_equal_the_reference_rounds() {
        use rand::{RngExt, SeedableRng};
        let mut moved_total = 0;
        for seed in 0..16u64 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let mut fast = Conservative::new(MachineId(0), 16);
            let mut reference = Conservative::new(MachineId(0), 16);
            reference.reference_rounds = true;
            let mut ends: Vec<(Time, u64, Time)> = Vec::new(); // (end, job, predicted end)
            let mut runs = std::collections::HashMap::new();
            let mut waiting: Vec<u64> = Vec::new();
            let mut next_id = 1u64;
            for now in 0..6_000i64 {
                ends.sort();
                let mut i = 0;
                while i < ends.len() {
                    let (end, id, predicted) = ends[i];
                    if end == now {
                        fast.terminate(now, JobId(id));
                        reference.terminate(now, JobId(id));
                        ends.remove(i);
                        continue;
                    }
                    if predicted == now {
                        let later = now + 40;
                        fast.overrun(now, JobId(id), later);
                        reference.overrun(now, JobId(id), later);
                        ends[i].2 = later;
                    }
                    i += 1;
                }
                if now < 3_000 && rng.random_bool(0.08) {
                    let estimate = rng.random_range(1..150);
                    let run = if rng.random_bool(0.03) {
                        estimate + 30
                    } else {
                        rng.random_range(1..=estimate)
                    };
                    let job = Job::new(next_id, now, rng.random_range(1..=16), estimate, run);
                    fast.submit(now, &job).unwrap();
                    reference.submit(now, &job).unwrap();
                    runs.insert(next_id, (run, estimate));
                    waiting.push(next_id);
                    next_id += 1;
                }
                if rng.random_bool(0.01) && !waiting.is_empty() {
                    let id = waiting.swap_remove(rng.random_range(0..waiting.len()));
                    assert!(fast.cancel(now, JobId(id)));
                    assert!(reference.cancel(now, JobId(id)));
                }
                if rng.random_bool(0.05) {
                    continue; // this second's pass is late
                }
                let a = starts(&mut fast, now);
                assert_eq!(a, starts(&mut reference, now), "seed {seed} at {now}");
                assert_eq!(planned(&fast), planned(&reference), "seed {seed} at {now}");
                for id in a {
                    waiting.retain(|&w| w != id);
                    let (run, estimate) = runs[&id];
                    ends.push((now + run, id, now + estimate));
                }
            }
            assert!(
                waiting.is_empty() && ends.is_empty(),
                "seed {seed}: all ran"
            );
            moved_total += fast.next_plan;
        }
        assert!(moved_total > 5_000, "the rounds moved jobs: {moved_total}");
    }

    /// A plan made before an outage promised starts that passed while the machine was down: on
    /// its return the jobs are placed again from that instant, in arrival order, and no two of
    /// them start together on more processors than the machine has.
    #[test]
    fn an_outage_replans_the_waiting_jobs_from_the_return() {
        let m = MachineId(0);
        let mut p = Conservative::new(m, 8);
        p.submit(0, &Job::new(1, 0, 8, 100, 100)).unwrap();
        assert_eq!(starts(&mut p, 0), [1]);
        p.submit(1, &Job::new(2, 1, 8, 50, 50)).unwrap();
        p.submit(2, &Job::new(3, 2, 4, 10, 10)).unwrap();
        assert_eq!(planned(&p), [(2, 100), (3, 150)]);

        // The machine goes down; its job is lost (the driver ends it).
        p.set_machine_available(20, m, false);
        p.terminate(20, JobId(1));
        assert!(starts(&mut p, 20).is_empty(), "started on a down machine");
        assert_eq!(p.next_wakeup(), None, "no start is due while down");
        assert!(starts(&mut p, 120).is_empty());
        p.set_machine_available(150, MachineId(7), true);
        assert!(starts(&mut p, 160).is_empty(), "another machine's news");

        p.set_machine_available(200, m, true);
        assert_eq!(starts(&mut p, 200), [2], "job 3 would oversubscribe");
        assert_eq!(planned(&p), [(3, 250)]);
        assert_eq!(p.next_wakeup(), Some(250));
        p.terminate(250, JobId(2));
        assert_eq!(starts(&mut p, 250), [3]);
    }
}
