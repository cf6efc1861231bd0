//! Advance reservations under the queue-based policies, FCFS and EASY (Streit, thesis §3.2 and
//! §3.3: a queuing system can honour fixed-time requests only by checking every start against
//! them; spec `self-tuning-and-multisite.md` §1.4).
//!
//! While a reservation is held these policies decide on an availability profile instead of the
//! free-processor count: the running jobs until their predicted ends and the reservations (with
//! the part of a job inside that overran past its reservation's end). A job starts only if its
//! processors stay free for its whole estimate; EASY's head gets its reservation at its earliest
//! start in that profile, and a later job is backfilled only if it fits in the profile with the
//! head's slot taken out (the reference's check on a copy of the profile, which with
//! reservations no longer reduces to the shadow-time rule). A reservation is admitted iff the
//! plan of such a policy (running jobs and, for EASY, the head's slot) leaves its processors
//! free for its whole interval. With no reservation held, the policies run their reference
//! passes unchanged.

use super::{AdvanceReservation, Book, Rejection, ReservationRefused, Start};
use crate::model::{Duration, Job, JobId, MachineId, ReservationId, Time};
use crate::structures::{Profile, RunningSet};

/// The reservations of one queue-based single-machine policy and the jobs inside them.
#[derive(Clone, Debug, Default)]
pub struct Around {
    book: Book,
    /// The time of the last pass: wake-ups are asked for after it only.
    last_pass: Time,
}

impl Around {
    /// Whether a reservation is held (or a job still runs inside an ended one).
    pub fn active(&self) -> bool {
        !self.book.is_empty()
    }

    /// Whether `job` was submitted into a reservation.
    pub fn holds(&self, job: JobId) -> bool {
        self.book.holds(job)
    }

    /// The machine's availability from `now`: running jobs until their predicted ends, then the
    /// reservations.
    pub fn profile(&self, now: Time, capacity: u32, running: &RunningSet) -> Profile {
        self.book.availability(now, capacity, running)
    }

    /// Admits `r` iff its processors are free for its whole interval beside the running jobs,
    /// the reservations held and, when given, the queue head's slot at its earliest start
    /// (`head`: processors and estimate).
    pub fn admit(
        &mut self,
        now: Time,
        r: &AdvanceReservation,
        machine: MachineId,
        capacity: u32,
        running: &RunningSet,
        head: Option<(u32, Duration)>,
    ) -> Result<(), ReservationRefused> {
        let mut p = self.profile(now, capacity, running);
        if let Some((procs, estimate)) = head {
            let s = p.earliest(now, procs, estimate);
            p.reserve(s, s + estimate, procs);
        }
        self.book.admit(now, r, machine, capacity, &p)
    }

    /// Gives up reservation `id`: its running jobs now hold the machine's own processors in
    /// `running`; its waiting jobs are returned, to be queued again. `None` if it is not held.
    pub fn cancel(
        &mut self,
        now: Time,
        id: ReservationId,
        running: &mut RunningSet,
    ) -> Option<Vec<Job>> {
        let released = self.book.cancel(id);
        released.reservation?;
        for (job, procs, end) in released.running {
            running.insert(job, procs, now, (end - now).max(1));
        }
        Some(released.waiting)
    }

    /// Takes `job` into its reservation.
    pub fn submit(&mut self, now: Time, job: &Job) -> Result<(), Rejection> {
        self.book.submit(now, job)
    }

    /// A job inside ended or left; false if it is not inside a reservation.
    pub fn remove(&mut self, now: Time, job: JobId) -> bool {
        self.book.remove(now, job).is_some()
    }

    /// A job inside overran; false if it is not inside a reservation.
    pub fn overrun(&mut self, now: Time, job: JobId, predicted_end: Time) -> bool {
        if !self.book.holds(job) {
            return false;
        }
        self.book.overrun(now, job, predicted_end);
        true
    }

    /// After a restart: `job`, inside its reservation, runs since `started`.
    pub fn restore_running(
        &mut self,
        now: Time,
        job: &Job,
        started: Time,
        procs: u32,
    ) -> Result<(), Rejection> {
        self.book
            .restore_running(now, job, started, procs)
            .map(|_| ())
    }

    /// At a pass: forgets the reservations that are over, starts the jobs inside that are due.
    pub fn pass(&mut self, now: Time, machine: MachineId, starts: &mut Vec<Start>) {
        self.last_pass = now;
        self.book.expire(now);
        self.book.start_due(now, machine, starts);
    }

    /// When a pass is next needed: a job inside is due, or a reservation begins or ends.
    pub fn next_wakeup(&self) -> Option<Time> {
        let after = self.last_pass;
        self.book
            .list()
            .iter()
            .flat_map(|r| [r.start, r.end])
            .filter(|&t| t > after)
            .chain(self.book.next_due())
            .min()
    }

    /// The reservations held.
    pub fn list(&self) -> Vec<AdvanceReservation> {
        self.book.list()
    }

    /// The waiting jobs inside, as (job, planned start, estimate, processors).
    pub fn planned(&self) -> Vec<(JobId, Time, Duration, u32)> {
        self.book.planned()
    }

    /// Running jobs inside reservations.
    pub fn running_inside(&self) -> usize {
        self.book.counts().1
    }

    /// Waiting jobs inside reservations.
    pub fn waiting_inside(&self) -> usize {
        self.book.counts().0
    }
}

#[cfg(test)]
mod tests {
    use crate::model::{Job, JobId, MachineId, ReservationId};
    use crate::policy::test_util::{planned, starts};
    use crate::policy::{AdvanceReservation, PolicyConfig, PolicyKind, ReservationRefused};

    fn res(id: u64, start: i64, end: i64, procs: u32) -> AdvanceReservation {
        AdvanceReservation::new(id, start, end, procs)
    }

    /// Ten processors; job 1 holds 6 until 100. A reservation of 4 on [50, 80) fits beside it;
    /// one of 5 does not ("[50, 80): 4 free"). Job 2 (4 for 60 s) would overlap the reservation
    /// if it started at 10: EASY gives it its head slot at 80 and backfills job 3 (4 for 30 s),
    /// which ends before the reservation; job 4 (4 for 40 s) would not, and waits. FCFS starts
    /// nothing behind its head. Without the reservation, EASY would start job 2 at 10.
    #[test]
    fn easy_and_fcfs_plan_around_a_reservation() {
        for kind in [PolicyKind::Easy, PolicyKind::Fcfs] {
            let mut p = PolicyConfig::new(kind).build_single(MachineId(0), 10);
            let p = p.as_mut();
            p.submit(0, &Job::new(1, 0, 6, 100, 100)).unwrap();
            assert_eq!(starts(p, 0), [1]);
            let e = p.admit_reservation(5, &res(1, 50, 80, 5)).unwrap_err();
            assert!(
                matches!(
                    e,
                    ReservationRefused::Conflict {
                        from: 50,
                        to: 80,
                        free: 4,
                        ..
                    }
                ),
                "{kind:?}: {e}"
            );
            p.admit_reservation(5, &res(2, 50, 80, 4)).unwrap();
            for (id, est) in [(2, 60), (3, 30), (4, 40)] {
                p.submit(10, &Job::new(id, 10, 4, est, est)).unwrap();
            }
            let (now, wake) = (starts(p, 10), p.next_wakeup());
            match kind {
                PolicyKind::Easy => {
                    assert_eq!(now, [3]);
                    assert_eq!(
                        planned(p),
                        [(2, 80)],
                        "the head's slot after the reservation"
                    );
                }
                _ => assert!(now.is_empty(), "{kind:?}: {now:?}"),
            }
            assert_eq!(wake, Some(50), "{kind:?}: the reservation begins");
            assert!(starts(p, 50).is_empty() || kind == PolicyKind::Fcfs);
            // At its end the head starts (job 3 ended at 40 under EASY).
            if kind == PolicyKind::Easy {
                p.terminate(40, JobId(3));
            }
            assert_eq!(starts(p, 80), [2], "{kind:?}");
            assert!(p.advance_reservations().is_empty(), "{kind:?}: over at 80");
        }
    }

    /// Cancelled, a reservation gives its processors back at once: the head starts.
    #[test]
    fn a_cancelled_reservation_lets_the_head_start() {
        for kind in [PolicyKind::Easy, PolicyKind::Fcfs, PolicyKind::SjfBf] {
            let mut p = PolicyConfig::new(kind).build_single(MachineId(0), 10);
            let p = p.as_mut();
            p.admit_reservation(0, &res(1, 20, 200, 8)).unwrap();
            p.submit(1, &Job::new(1, 1, 4, 50, 50)).unwrap();
            assert!(starts(p, 1).is_empty(), "{kind:?}");
            assert!(p.cancel_reservation(2, ReservationId(1)));
            assert!(!p.cancel_reservation(2, ReservationId(1)));
            assert_eq!(starts(p, 2), [1], "{kind:?}");
        }
    }
}
