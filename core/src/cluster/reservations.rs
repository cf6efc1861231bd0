//! Advance reservations on a heterogeneous cluster: one machine's processors and licence copies
//! held for a fixed interval (Streit, thesis §3.2: fixed-time requests admitted iff the resources
//! are free for the whole interval; spec `self-tuning-and-multisite.md` §1.4), for the list
//! schedulers and Convergent Scheduling, which plan no queue ahead and only know when the running
//! jobs are predicted to end (`two-level-grid-scheduler.md` D2.2–D2.4, D6.3).
//!
//! A request names a machine or leaves the choice to the cluster (fastest first, D12 #15's
//! order). It is admitted iff, on that machine, the processors left by the running jobs (until
//! their predicted ends) and by the reservations held are enough for its whole interval, and so
//! is one pool copy of each licence it lists that is not node-locked there. Once admitted, a job
//! outside may start on that machine only if, for its whole estimate, it leaves the reservation
//! its processors and copies; the queue head's reserved start (backfilling) goes around it too.
//! A job submitted into a reservation runs only inside it: on its machine, from its start, with
//! its processors and copies (its licences must be listed or node-locked there), ending by its
//! end. The jobs inside start in the policy's queue order (Convergent Scheduling: arrival order)
//! as soon as they fit, before every other job of the pass. Without space sharing a reservation
//! holds the whole machine. When a reservation ends or is cancelled its waiting jobs join the
//! general queue.

use super::ClusterState;
use crate::model::{Job, JobId, LicenceId, ReservationId, Time};
use crate::policy::{AdvanceReservation, Rejection, ReservationRefused, check_request};
use std::collections::BTreeMap;
#[cfg(test)]
use std::collections::HashMap;

/// The [`Policy`](crate::policy::Policy) methods of advance reservations, for a policy with a
/// `book: ClusterBook` that also implements [`AdvanceBooking`](crate::policy::AdvanceBooking) by
/// [`cluster_booking`].
macro_rules! reservation_methods {
    () => {
        crate::policy::capabilities!(booking);

        fn next_wakeup(&self) -> Option<Time> {
            self.book.next_wakeup()
        }
    };
}

/// The advance reservations of a policy `$t` with a `book: ClusterBook` over its
/// `state: ClusterState` and a `release(&mut self, &[ReservationId])` that sends the waiting jobs
/// of given-up reservations to the general queue.
macro_rules! cluster_booking {
    ($t:ty) => {
        impl crate::policy::AdvanceBooking for $t {
            fn admit_reservation(
                &mut self,
                now: Time,
                r: &AdvanceReservation,
            ) -> Result<(), crate::policy::ReservationRefused> {
                self.book.admit(&self.state, now, r)
            }

            fn cancel_reservation(&mut self, _now: Time, id: crate::model::ReservationId) -> bool {
                let held = self.book.cancel(id);
                if held {
                    self.release(&[id]);
                }
                held
            }

            fn advance_reservations(&self) -> Vec<AdvanceReservation> {
                self.book.list()
            }
        }
    };
}
pub(crate) use cluster_booking;
pub(crate) use reservation_methods;

/// A job running inside a reservation.
#[derive(Clone, Debug)]
struct Inside {
    job: JobId,
    procs: u32,
    /// The pool copies it holds.
    pooled: Vec<LicenceId>,
    end: Time,
}

#[derive(Clone, Debug)]
struct Entry {
    r: AdvanceReservation,
    slot: usize,
    /// Processors blocked: the request's, or the whole machine without space sharing.
    size: u32,
    /// The listed licences that take a pool copy on the machine (one entry per copy).
    pooled: Vec<LicenceId>,
    running: Vec<Inside>,
}

impl Entry {
    fn active_at(&self, t: Time) -> bool {
        self.r.start <= t && t < self.r.end
    }

    /// Processors the reservation keeps from others at `t` (its jobs running then count as
    /// running jobs of the machine).
    fn blocked_at(&self, t: Time) -> u32 {
        if !self.active_at(t) {
            return 0;
        }
        let used: u32 = self
            .running
            .iter()
            .filter(|j| j.end > t)
            .map(|j| j.procs)
            .sum();
        self.size.saturating_sub(used)
    }

    /// Copies of `l` it keeps from others at `t`.
    fn copies_at(&self, l: LicenceId, t: Time) -> u32 {
        if !self.active_at(t) {
            return 0;
        }
        let held = self.pooled.iter().filter(|&&x| x == l).count() as u32;
        let used = self
            .running
            .iter()
            .filter(|j| j.end > t)
            .map(|j| j.pooled.iter().filter(|&&x| x == l).count() as u32)
            .sum::<u32>();
        held.saturating_sub(used)
    }
}

/// The advance reservations held on one heterogeneous cluster and the jobs running inside.
#[derive(Clone, Debug, Default)]
pub struct ClusterBook {
    held: BTreeMap<ReservationId, Entry>,
    last_pass: Time,
}

impl ClusterBook {
    /// Whether no reservation is held.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// The reservations held, by identifier, each naming its machine.
    pub fn list(&self) -> Vec<AdvanceReservation> {
        self.held.values().map(|e| e.r.clone()).collect()
    }

    /// Admits `r` on the machine it names, or on the fastest machine where it fits.
    pub fn admit(
        &mut self,
        state: &ClusterState,
        now: Time,
        r: &AdvanceReservation,
    ) -> Result<(), ReservationRefused> {
        check_request(now, r)?;
        if self.held.contains_key(&r.id) {
            return Err(ReservationRefused::Duplicate(r.id));
        }
        let candidates: Vec<usize> = match r.machine {
            Some(m) => vec![state.slot_of(m).ok_or_else(|| ReservationRefused::Unfit {
                id: r.id,
                why: format!("machine {m} is not part of this cluster"),
            })?],
            None => state.by_speed().to_vec(),
        };
        let mut why = Vec::new();
        for &slot in &candidates {
            match self.fits_on(state, slot, r) {
                Ok(entry) => {
                    self.held.insert(r.id, entry);
                    return Ok(());
                }
                Err(e) if candidates.len() == 1 => return Err(e),
                Err(e) => why.push(format!(
                    "{}: {}",
                    state.slots()[slot].machine.id,
                    e.to_string()
                        .trim_start_matches(&format!("reservation {}", r.id))
                        .trim_start_matches(": ")
                        .trim_start_matches(' ')
                )),
            }
        }
        Err(ReservationRefused::Unfit {
            id: r.id,
            why: format!("fits on no machine of the cluster ({})", why.join("; ")),
        })
    }

    /// The entry `r` would make on `slot`, or why it does not fit there.
    fn fits_on(
        &self,
        state: &ClusterState,
        slot: usize,
        r: &AdvanceReservation,
    ) -> Result<Entry, ReservationRefused> {
        let machine = &state.slots()[slot].machine;
        if r.procs > machine.procs {
            return Err(ReservationRefused::TooWide {
                id: r.id,
                procs: r.procs,
                capacity: machine.procs,
            });
        }
        let mut pooled = Vec::new();
        for &l in &r.licences {
            match state.takes_copy(l, slot) {
                None => {
                    return Err(ReservationRefused::Unfit {
                        id: r.id,
                        why: format!("licence {l} cannot be activated on machine {}", machine.id),
                    });
                }
                Some(true) => pooled.push(l),
                Some(false) => {}
            }
        }
        let size = if state.space_sharing() {
            r.procs
        } else {
            machine.procs
        };
        // Free processors only rise between the reservations' starts (running jobs end), so the
        // interval's low points are its start and the starts of the reservations inside it.
        let points = self.points(r.start, r.end);
        for &t in &points {
            let free = i64::from(state.free_procs_at(slot, t)) - i64::from(self.blocked(slot, t));
            if free < i64::from(size) {
                return Err(ReservationRefused::Conflict {
                    id: r.id,
                    from: t,
                    to: self.stretch_end(state, slot, &[], t, r.end),
                    free: free.max(0),
                    procs: size,
                });
            }
            for &l in &pooled {
                let want = pooled.iter().filter(|&&x| x == l).count() as i64;
                let free = i64::from(state.free_copies_at(l, t)) - i64::from(self.copies(l, t));
                if free < want {
                    return Err(ReservationRefused::Unfit {
                        id: r.id,
                        why: format!(
                            "licence {l}: {} of its copies free from {t}, {want} asked",
                            free.max(0)
                        ),
                    });
                }
            }
        }
        let mut held = r.clone();
        held.machine = Some(machine.id);
        Ok(Entry {
            r: held,
            slot,
            size,
            pooled,
            running: Vec::new(),
        })
    }

    /// `from` and the reservations' starts inside `(from, to)`.
    fn points(&self, from: Time, to: Time) -> Vec<Time> {
        let mut v: Vec<Time> = self.low_points(from, to).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The same instants in no order, some perhaps twice, without building a list (a pass asks
    /// this for every job and machine while reservations are held).
    fn low_points(&self, from: Time, to: Time) -> impl Iterator<Item = Time> + '_ {
        let inside = self.held.values().map(|e| e.r.start);
        std::iter::once(from).chain(inside.filter(move |&s| s > from && s < to))
    }

    /// Where a shortage found at `t` ends at the latest: the next change of what is free.
    fn stretch_end(
        &self,
        state: &ClusterState,
        slot: usize,
        pooled: &[LicenceId],
        t: Time,
        end: Time,
    ) -> Time {
        state
            .ends_touching(slot, pooled)
            .into_iter()
            .chain(
                self.held
                    .values()
                    .filter(|e| e.slot == slot || e.pooled.iter().any(|l| pooled.contains(l)))
                    .flat_map(|e| [e.r.start, e.r.end]),
            )
            .filter(|&x| x > t)
            .fold(end, Time::min)
    }

    /// Processors of `slot` the reservations keep from other jobs at `t`.
    pub fn blocked(&self, slot: usize, t: Time) -> u32 {
        self.held
            .values()
            .filter(|e| e.slot == slot)
            .map(|e| e.blocked_at(t))
            .sum()
    }

    /// Copies of pooled licence `l` the reservations keep from other jobs at `t`.
    pub fn copies(&self, l: LicenceId, t: Time) -> u32 {
        self.held.values().map(|e| e.copies_at(l, t)).sum()
    }

    /// Whether a job outside every reservation may hold `slot` from `from` for `duration`
    /// beside the running jobs (predicted ends) and the reservations.
    pub fn free_for(
        &self,
        state: &ClusterState,
        job: &Job,
        slot: usize,
        from: Time,
        duration: i64,
    ) -> bool {
        let to = from + duration.max(1);
        // Empty (no allocation) unless the job uses pooled licences.
        let pooled = state.pooled_licences(job, slot);
        let ss = state.space_sharing();
        self.low_points(from, to).all(|t| {
            let procs_ok = if ss {
                i64::from(state.free_procs_at(slot, t)) - i64::from(self.blocked(slot, t))
                    >= i64::from(job.procs)
            } else {
                state.idle_at(slot, t) && self.blocked(slot, t) == 0
            };
            procs_ok
                && pooled.iter().all(|&l| {
                    i64::from(state.free_copies_at(l, t)) - i64::from(self.copies(l, t)) >= 1
                })
        })
    }

    /// The earliest start ≥ `now` of a job outside every reservation on `slot`, going around
    /// them; `None` when it never can (the machine is down or cannot run it).
    pub fn earliest_start(
        &self,
        state: &ClusterState,
        job: &Job,
        slot: usize,
        now: Time,
    ) -> Option<Time> {
        let mut t = state.earliest_start(job, slot, now)?;
        if self.held.is_empty() {
            return Some(t);
        }
        let duration = state.duration_on(job, job.estimate, slot);
        let pooled = state.pooled_licences(job, slot);
        let mut candidates: Vec<Time> = state
            .ends_touching(slot, &pooled)
            .into_iter()
            .chain(self.held.values().map(|e| e.r.end))
            .collect();
        candidates.sort_unstable();
        candidates.dedup();
        let mut next = candidates.into_iter();
        loop {
            if self.free_for(state, job, slot, t, duration) {
                return Some(t);
            }
            t = next.by_ref().find(|&c| c > t)?;
        }
    }

    /// Refuses a job submitted into a reservation it can never run in: not held, too wide, a
    /// licence the reservation does not hold, or too long to end by its end.
    pub fn check_job(&self, state: &ClusterState, now: Time, job: &Job) -> Result<(), Rejection> {
        let Some(id) = job.reservation else {
            return Ok(());
        };
        let refuse = |why: String| Rejection::Reservation {
            job: job.id,
            reservation: id,
            why,
        };
        let e = self.held.get(&id).ok_or(Rejection::ReservationNotHeld {
            job: job.id,
            reservation: id,
        })?;
        if job.procs > e.r.procs {
            return Err(refuse(format!(
                "it needs {} processors, the reservation holds {}",
                job.procs, e.r.procs
            )));
        }
        for &l in &job.licences {
            match state.takes_copy(l, e.slot) {
                Some(false) => {}
                Some(true) if e.pooled.contains(&l) => {}
                _ => {
                    return Err(refuse(format!(
                        "licence {l} is not held by the reservation (it holds {:?})",
                        e.r.licences
                    )));
                }
            }
        }
        let duration = state.duration_on(job, job.estimate, e.slot);
        let start = now.max(e.r.start);
        if start + duration > e.r.end {
            return Err(refuse(format!(
                "its estimate of {duration} s on machine {} does not end by the reservation's end at {} (earliest start inside: {start})",
                state.slots()[e.slot].machine.id,
                e.r.end
            )));
        }
        Ok(())
    }

    /// The machine a job inside its reservation starts on now, if it can: the reservation has
    /// begun, the job ends by its end and fits in what its running jobs leave.
    pub fn start_inside(&self, state: &ClusterState, now: Time, job: &Job) -> Option<usize> {
        let e = self.held.get(&job.reservation?)?;
        if !e.active_at(now) || !state.fits_now(job, e.slot) {
            return None;
        }
        if now + state.duration_on(job, job.estimate, e.slot) > e.r.end {
            return None;
        }
        let used: u32 = e.running.iter().map(|j| j.procs).sum();
        let procs_ok = if state.space_sharing() {
            used + job.procs <= e.r.procs
        } else {
            e.running.is_empty()
        };
        let copies_ok = state.pooled_licences(job, e.slot).iter().all(|&l| {
            let held = e.pooled.iter().filter(|&&x| x == l).count();
            let taken = e
                .running
                .iter()
                .map(|j| j.pooled.iter().filter(|&&x| x == l).count())
                .sum::<usize>();
            taken < held
        });
        (procs_ok && copies_ok).then_some(e.slot)
    }

    /// A job of a reservation started (or was restored after a restart) on `slot`.
    pub fn note_start(&mut self, state: &ClusterState, job: &Job, slot: usize, end: Time) {
        if let Some(e) = job.reservation.and_then(|id| self.held.get_mut(&id)) {
            e.running.push(Inside {
                job: job.id,
                procs: job.procs,
                pooled: state.pooled_licences(job, slot),
                end,
            });
        }
    }

    /// A job ended (unknown ids and jobs outside are ignored).
    pub fn note_end(&mut self, job: JobId) {
        for e in self.held.values_mut() {
            e.running.retain(|j| j.job != job);
        }
    }

    /// A job inside overran: it is now predicted to end at `end`.
    pub fn note_overrun(&mut self, job: JobId, end: Time) {
        for e in self.held.values_mut() {
            for j in e.running.iter_mut().filter(|j| j.job == job) {
                j.end = end;
            }
        }
    }

    /// At a pass: takes out the reservations that are over and returns them (their waiting
    /// jobs join the general queue).
    pub fn pass(&mut self, now: Time) -> Vec<ReservationId> {
        self.last_pass = now;
        let over: Vec<ReservationId> = self
            .held
            .values()
            .filter(|e| e.r.end <= now)
            .map(|e| e.r.id)
            .collect();
        for id in &over {
            self.held.remove(id);
        }
        over
    }

    /// Cancels a reservation; false if it is not held.
    pub fn cancel(&mut self, id: ReservationId) -> bool {
        self.held.remove(&id).is_some()
    }

    /// When a pass is next needed: a reservation begins or ends after the last pass.
    pub fn next_wakeup(&self) -> Option<Time> {
        let after = self.last_pass;
        self.held
            .values()
            .flat_map(|e| [e.r.start, e.r.end])
            .filter(|&t| t > after)
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convergent::{ConvergentScheduling, CsParams};
    use crate::heuristics::HeuristicParams;
    use crate::model::{LicencePool, Machine, MachineId};
    use crate::policy::test_util::ScheduleInto;
    use crate::policy::{FbVariant, FlexibleBackfilling, Policy, Start};
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng as StdRng;

    /// m0: 8 processors, the faster; m1: 4 processors; one pooled copy of licence 0 usable on
    /// both.
    fn cluster() -> ClusterState {
        let machines = vec![
            Machine::new(MachineId(0), "m0", 8, 200),
            Machine::new(MachineId(1), "m1", 4, 100),
        ];
        let pools = [LicencePool {
            licence: LicenceId(0),
            copies: 1,
            machines: vec![MachineId(0), MachineId(1)],
        }];
        ClusterState::from_parts(machines, &pools, true).unwrap()
    }

    fn policies() -> Vec<Box<dyn Policy>> {
        let p = HeuristicParams::default();
        vec![
            Box::new(FlexibleBackfilling::fcfs(cluster())),
            Box::new(FlexibleBackfilling::bf_fcfs(cluster())),
            Box::new(FlexibleBackfilling::fb(cluster(), FbVariant::Unmod, p)),
            Box::new(FlexibleBackfilling::fb(cluster(), FbVariant::Mod, p)),
            Box::new(FlexibleBackfilling::edf(cluster())),
            Box::new(ConvergentScheduling::new(
                cluster(),
                true,
                false,
                None,
                CsParams::default(),
            )),
            Box::new(ConvergentScheduling::new(
                cluster(),
                false,
                true,
                None,
                CsParams::default(),
            )),
        ]
    }

    fn res(id: u64, start: Time, end: Time, procs: u32) -> AdvanceReservation {
        AdvanceReservation::new(id, start, end, procs)
    }

    /// A job whose estimate is the same on both machines (no benchmark of its own).
    fn job(id: u64, procs: u32, est: i64) -> Job {
        Job::new(id, 0, procs, est, est)
    }

    fn lic(mut j: Job) -> Job {
        j.licences.push(LicenceId(0));
        j
    }

    fn pass(p: &mut dyn Policy, now: Time) -> Vec<(u64, u32)> {
        let mut v: Vec<Start> = Vec::new();
        p.schedule_into(now, &mut v);
        v.iter().map(|s| (s.job.0, s.machine.0)).collect()
    }

    #[test]
    fn admitted_on_a_machine_with_room_refused_with_the_conflict_named() {
        for mut p in policies() {
            let name = p.describe();
            p.submit(0, &job(1, 6, 100)).unwrap();
            assert_eq!(pass(p.as_mut(), 0), [(1, 0)], "{name}");
            // m0 keeps 2 processors until 100: four go to m1.
            p.admit_reservation(0, &res(1, 50, 150, 4)).unwrap();
            let held = p.advance_reservations();
            assert_eq!(held[0].machine, Some(MachineId(1)), "{name}");
            let on_m0 = AdvanceReservation {
                machine: Some(MachineId(0)),
                ..res(2, 50, 150, 4)
            };
            assert_eq!(
                p.admit_reservation(0, &on_m0).unwrap_err().to_string(),
                "reservation r2 conflicts with the plan on [50, 100): 2 processors free there, 4 asked",
                "{name}"
            );
            let with_licence = AdvanceReservation {
                licences: vec![LicenceId(0)],
                ..res(3, 60, 120, 2)
            };
            p.admit_reservation(0, &with_licence).unwrap();
            assert_eq!(p.advance_reservations()[1].machine, Some(MachineId(0)));
            // The one copy is held from 60 to 120, on either machine.
            let e = p
                .admit_reservation(
                    0,
                    &AdvanceReservation {
                        licences: vec![LicenceId(0)],
                        ..res(4, 100, 130, 1)
                    },
                )
                .unwrap_err()
                .to_string();
            assert!(
                e == "reservation r4: fits on no machine of the cluster (m0: licence lic0: 0 of its \
                          copies free from 100, 1 asked; m1: conflicts with the plan on [100, 130): \
                          0 processors free there, 1 asked)",
                "{name}: {e}"
            );
            let e = p
                .admit_reservation(
                    0,
                    &AdvanceReservation {
                        licences: vec![LicenceId(7)],
                        machine: Some(MachineId(1)),
                        ..res(5, 200, 230, 1)
                    },
                )
                .unwrap_err();
            assert_eq!(
                e.to_string(),
                "reservation r5: licence lic7 cannot be activated on machine m1"
            );
            assert_eq!(
                p.advance_reservations().len(),
                2,
                "{name}: nothing half-made"
            );
        }
    }

    #[test]
    fn outside_jobs_leave_the_reservations_whole_and_jobs_inside_run_in_them() {
        for mut p in policies() {
            let name = p.describe();
            p.submit(0, &job(1, 6, 100)).unwrap();
            pass(p.as_mut(), 0);
            p.admit_reservation(0, &res(1, 50, 150, 4)).unwrap();
            let r3 = AdvanceReservation {
                licences: vec![LicenceId(0)],
                ..res(3, 60, 120, 2)
            };
            p.admit_reservation(0, &r3).unwrap();
            // Into r3: too long, a licence it does not hold, too wide.
            let mut long = lic(job(10, 2, 61));
            long.reservation = Some(ReservationId(3));
            assert!(p.submit(10, &long).is_err(), "{name}");
            let mut wide = job(11, 3, 10);
            wide.reservation = Some(ReservationId(3));
            assert!(p.submit(10, &wide).is_err(), "{name}");
            let mut unknown = job(12, 1, 10);
            unknown.reservation = Some(ReservationId(9));
            assert!(p.submit(10, &unknown).is_err(), "{name}");
            // Job 2 (4 processors, 100 s) fits nowhere without touching r1 or r3; job 3
            // (4 processors, 30 s) ends on m1 before r1 begins; job 4 needs the licence that
            // r3 holds from 60; job 5 runs inside r3.
            p.submit(10, &job(2, 4, 100)).unwrap();
            p.submit(10, &job(3, 4, 30)).unwrap();
            p.submit(10, &lic(job(4, 1, 100))).unwrap();
            let mut inside = lic(job(5, 2, 50));
            inside.reservation = Some(ReservationId(3));
            p.submit(10, &inside).unwrap();
            let first = pass(p.as_mut(), 10);
            if name == "fcfs" {
                assert!(first.is_empty(), "{name}: the head blocks");
                continue;
            }
            assert_eq!(first, [(3, 1)], "{name}");
            assert_eq!(p.next_wakeup(), Some(50), "{name}: r1 begins");
            p.terminate(40, JobId(3));
            assert!(pass(p.as_mut(), 40).is_empty(), "{name}");
            assert!(pass(p.as_mut(), 50).is_empty(), "{name}");
            assert_eq!(
                pass(p.as_mut(), 60),
                [(5, 0)],
                "{name}: inside r3 at its start"
            );
            p.terminate(100, JobId(1));
            // m0 has 6 free at 100 but r3 keeps nothing more (its job runs), so job 2 (4) fits
            // m0 if it leaves r3's 2 processors: 8 - 2 (job 5) = 6 ≥ 4.
            let at_100 = pass(p.as_mut(), 100);
            assert!(at_100.contains(&(2, 0)), "{name}: {at_100:?}");
            assert!(!at_100.iter().any(|s| s.0 == 4), "{name}: the copy is r3's");
            p.terminate(110, JobId(5));
            assert!(
                !pass(p.as_mut(), 110).iter().any(|s| s.0 == 4),
                "{name}: r3 holds its copy until 120"
            );
            assert_eq!(pass(p.as_mut(), 120), [(4, 0)], "{name}: r3 is over");
            assert!(p.cancel_reservation(120, ReservationId(1)), "{name}");
            assert_eq!(
                p.advance_reservations().len(),
                0,
                "{name}: r3 over, r1 cancelled"
            );
        }
    }

    /// Random jobs (some inside reservations) and reservations on the two machines, estimates
    /// exact: at every instant a policy decides, the processors of each machine used by jobs
    /// outside its reservations plus what each active reservation holds (the larger of its size
    /// and its jobs' use) never exceed the machine; the same for the licence copies.
    #[test]
    fn reservations_are_never_overbooked() {
        let mut admitted = 0;
        for seed in 0..12 {
            for mut p in policies() {
                let name = p.describe();
                let mut rng = StdRng::seed_from_u64(seed);
                let mut jobs: HashMap<JobId, Job> = HashMap::new();
                let mut running: Vec<(Job, u32, Time)> = Vec::new(); // job, machine, end
                let mut next_id = 1;
                for now in (0..3000).step_by(5) {
                    running.retain(|(j, _, end)| {
                        let over = *end <= now;
                        if over {
                            p.terminate(now, j.id);
                        }
                        !over
                    });
                    let held = p.advance_reservations();
                    if rng.random_bool(0.2) {
                        let procs = rng.random_range(1..=6);
                        let mut j = job(next_id, procs, rng.random_range(5..200));
                        if rng.random_bool(0.3) {
                            j.licences.push(LicenceId(0));
                        }
                        if rng.random_bool(0.4) && !held.is_empty() {
                            j.reservation = Some(held[rng.random_range(0..held.len())].id);
                        }
                        if p.submit(now, &j).is_ok() {
                            jobs.insert(j.id, j);
                        }
                        next_id += 1;
                    }
                    if rng.random_bool(0.04) {
                        let start = now + rng.random_range(0..300);
                        let mut r = res(next_id, start, start + rng.random_range(20..300), 1);
                        r.procs = rng.random_range(1..=6);
                        if rng.random_bool(0.3) {
                            r.licences.push(LicenceId(0));
                        }
                        next_id += 1;
                        admitted += usize::from(p.admit_reservation(now, &r).is_ok());
                    }
                    let mut starts = Vec::new();
                    p.schedule_into(now, &mut starts);
                    for s in starts {
                        let j = jobs[&s.job].clone();
                        let end = now + j.estimate;
                        running.push((j, s.machine.0, end));
                    }
                    let held = p.advance_reservations();
                    let active: Vec<&AdvanceReservation> = held
                        .iter()
                        .filter(|r| r.start <= now && now < r.end)
                        .collect();
                    let inside = |j: &Job| active.iter().find(|r| Some(r.id) == j.reservation);
                    for m in 0..2u32 {
                        let cap = if m == 0 { 8 } else { 4 };
                        let outside: u32 = running
                            .iter()
                            .filter(|(j, on, _)| *on == m && inside(j).is_none())
                            .map(|(j, _, _)| j.procs)
                            .sum();
                        let kept: u32 = active
                            .iter()
                            .filter(|r| r.machine == Some(MachineId(m)))
                            .map(|r| {
                                let used: u32 = running
                                    .iter()
                                    .filter(|(j, _, _)| j.reservation == Some(r.id))
                                    .map(|(j, _, _)| j.procs)
                                    .sum();
                                used.max(r.procs)
                            })
                            .sum();
                        assert!(
                            outside + kept <= cap,
                            "{name} seed {seed} at {now}: m{m} {outside} outside + {kept} reserved"
                        );
                    }
                    let copies_out = running
                        .iter()
                        .filter(|(j, _, _)| !j.licences.is_empty() && inside(j).is_none())
                        .count();
                    let copies_kept: usize = active
                        .iter()
                        .map(|r| {
                            let used = running
                                .iter()
                                .filter(|(j, _, _)| {
                                    j.reservation == Some(r.id) && !j.licences.is_empty()
                                })
                                .count();
                            used.max(r.licences.len())
                        })
                        .sum();
                    assert!(
                        copies_out + copies_kept <= 1,
                        "{name} seed {seed} at {now}: licence copies overbooked"
                    );
                }
            }
        }
        assert!(admitted > 100, "the test admits reservations ({admitted})");
    }
}
