//! First come, first served without backfilling (`reference-semantics.md`: step 1 of the EASY
//! pass alone): start the queue head while it fits in the processors free now; the head blocks
//! everything behind it. While its machine is down (`set_machine_available`) nothing starts.
//! With advance reservations held, the head starts only if its processors stay free for its
//! whole estimate ([`super::around`]).
//!
//! [`Fcfs::first_fit`] is the greedy variant Kurowski et al. call "FCFS with backfilling" (§4;
//! spec `gang-urgent-scaling.md` B.3, G-B1): the queue in arrival order, every job that fits in
//! the processors free now starts, a job that does not is skipped, and no job holds a
//! reservation.

use super::around::Around;
use super::{
    AdvanceBooking, AdvanceReservation, Decisions, Machines, Policy, Rejection, Reservation,
    ReservationRefused, Start,
};
use crate::model::{Job, JobId, MachineId, ReservationId, Time};
use crate::structures::RunningSet;
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug)]
struct Waiting {
    id: JobId,
    procs: u32,
    estimate: i64,
}

/// FCFS on one space-shared machine.
#[derive(Debug)]
pub struct Fcfs {
    machine: MachineId,
    capacity: u32,
    queue: VecDeque<Waiting>,
    running: RunningSet,
    /// The machine is down: nothing starts.
    down: bool,
    /// Advance reservations and the jobs inside them.
    around: Around,
    /// A job that does not fit is skipped instead of blocking the queue (first fit).
    skip: bool,
}

impl Fcfs {
    /// FCFS for `machine` of `capacity` processors.
    pub fn new(machine: MachineId, capacity: u32) -> Fcfs {
        Fcfs {
            machine,
            capacity,
            queue: VecDeque::new(),
            running: RunningSet::new(),
            down: false,
            around: Around::default(),
            skip: false,
        }
    }

    /// First fit for `machine` of `capacity` processors: every waiting job that fits starts, in
    /// arrival order.
    pub fn first_fit(machine: MachineId, capacity: u32) -> Fcfs {
        Fcfs {
            skip: true,
            ..Fcfs::new(machine, capacity)
        }
    }

    /// Starts the waiting jobs for which `fits` holds, in queue order: the head only while it
    /// fits, or every one that fits when skipping.
    fn start_fitting(
        &mut self,
        now: Time,
        starts: &mut Vec<Start>,
        mut fits: impl FnMut(&Waiting) -> bool,
    ) {
        let mut i = 0;
        while let Some(h) = self.queue.get(i).copied() {
            if !fits(&h) {
                if !self.skip {
                    break;
                }
                i += 1;
                continue;
            }
            self.queue.remove(i);
            self.running.insert(h.id, h.procs, now, h.estimate);
            starts.push(Start::on(h.id, self.machine, h.procs));
        }
    }
}

impl Policy for Fcfs {
    fn single_machine(&self) -> Option<(MachineId, u32)> {
        Some((self.machine, self.capacity))
    }

    fn describe(&self) -> String {
        if self.skip { "first-fit" } else { "fcfs" }.into()
    }

    fn submit(&mut self, now: Time, job: &Job) -> Result<(), Rejection> {
        if job.reservation.is_some() {
            if self.around.holds(job.id) {
                return Err(Rejection::Duplicate(job.id));
            }
            return self.around.submit(now, job);
        }
        check_job(job, self.capacity)?;
        self.queue.push_back(Waiting {
            id: job.id,
            procs: job.procs,
            estimate: job.estimate,
        });
        Ok(())
    }

    fn terminate(&mut self, now: Time, job: JobId) {
        if !self.around.remove(now, job) {
            self.running.remove(job);
        }
    }

    fn overrun(&mut self, now: Time, job: JobId, predicted_end: Time) {
        if !self.around.overrun(now, job, predicted_end) {
            self.running.set_end(job, predicted_end);
        }
    }

    fn cancel(&mut self, now: Time, job: JobId) -> bool {
        if self.around.holds(job) {
            return self.around.remove(now, job);
        }
        match self.queue.iter().position(|w| w.id == job) {
            Some(i) => {
                self.queue.remove(i);
                true
            }
            None => false,
        }
    }

    fn schedule(&mut self, now: Time, out: &mut Decisions) {
        let starts = &mut out.starts;
        if self.down {
            return;
        }
        if self.around.active() {
            self.around.pass(now, self.machine, starts);
            let mut p = self.around.profile(now, self.capacity, &self.running);
            self.start_fitting(now, starts, |h| {
                let fits = p.earliest(now, h.procs, h.estimate) == now;
                if fits {
                    p.reserve(now, now + h.estimate, h.procs);
                }
                fits
            });
            return;
        }
        let mut free = self.running.free_at(now, self.capacity);
        self.start_fitting(now, starts, |h| {
            let fits = h.procs <= free;
            if fits {
                free -= h.procs;
            }
            fits
        });
    }

    fn waiting_len(&self) -> usize {
        self.queue.len() + self.around.waiting_inside()
    }

    fn running_len(&self) -> usize {
        self.running.len() + self.around.running_inside()
    }

    fn queue(&self) -> Vec<JobId> {
        self.queue.iter().map(|w| w.id).collect()
    }

    fn reservations(&self) -> Vec<Reservation> {
        Reservation::planned_on(self.machine, self.around.planned().into_iter())
    }

    fn next_wakeup(&self) -> Option<Time> {
        if self.down {
            return None;
        }
        self.around.next_wakeup()
    }

    crate::policy::capabilities!(machines, booking);
}

impl Machines for Fcfs {
    fn set_machine_available(&mut self, _now: Time, machine: MachineId, available: bool) {
        if machine == self.machine {
            self.down = !available;
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
        if job.reservation.is_some() {
            restore_checks(job, machine, self.machine, false)?;
            return self.around.restore_running(now, job, started, procs);
        }
        let me = (self.machine, self.capacity);
        restore_single(&mut self.running, me, job, started, machine, procs)
    }
}

impl AdvanceBooking for Fcfs {
    fn admit_reservation(
        &mut self,
        now: Time,
        r: &AdvanceReservation,
    ) -> Result<(), ReservationRefused> {
        let head = self.queue.front().map(|h| (h.procs, h.estimate));
        self.around
            .admit(now, r, self.machine, self.capacity, &self.running, head)
    }

    fn cancel_reservation(&mut self, now: Time, id: ReservationId) -> bool {
        let Some(waiting) = self.around.cancel(now, id, &mut self.running) else {
            return false;
        };
        for job in waiting {
            self.submit(now, &job)
                .expect("a job that fitted in the reservation fits the machine");
        }
        true
    }

    fn advance_reservations(&self) -> Vec<AdvanceReservation> {
        self.around.list()
    }
}

/// Recovery of a running job on a classic single-machine policy (see
/// [`Machines::restore_running`]): it holds `procs` processors of `machine` from `started` until
/// `started + estimate`, as if the policy had started it.
pub(super) fn restore_single(
    running: &mut RunningSet,
    (machine, capacity): (MachineId, u32),
    job: &Job,
    started: Time,
    on: MachineId,
    procs: u32,
) -> Result<(), Rejection> {
    let refuse = |reason: String| Rejection::NoEligibleMachine {
        job: job.id,
        reason,
    };
    if on != machine {
        return Err(refuse(format!("{on} is not this policy's machine")));
    }
    if running.get(job.id).is_some() {
        return Err(Rejection::Duplicate(job.id));
    }
    let free = u64::from(capacity).saturating_sub(running.busy());
    if u64::from(procs) > free {
        return Err(refuse(format!("{procs} processors asked, {free} free")));
    }
    running.insert(job.id, procs, started, job.estimate.max(1));
    Ok(())
}

/// The checks of a restore on a one-machine policy: `machine` is the policy's, and `job` is not
/// waiting there already.
pub(super) fn restore_checks(
    job: &Job,
    machine: MachineId,
    mine: MachineId,
    waiting: bool,
) -> Result<(), Rejection> {
    if machine != mine {
        return Err(Rejection::NoEligibleMachine {
            job: job.id,
            reason: format!("{machine} is not this policy's machine"),
        });
    }
    if waiting {
        return Err(Rejection::Duplicate(job.id));
    }
    Ok(())
}

/// The submission checks every single-machine policy makes.
pub(super) fn check_job(job: &Job, capacity: u32) -> Result<(), Rejection> {
    if job.procs > capacity {
        return Err(Rejection::TooWide {
            job: job.id,
            procs: job.procs,
            max: capacity,
        });
    }
    if job.estimate < 1 {
        return Err(Rejection::BadEstimate {
            job: job.id,
            estimate: job.estimate,
        });
    }
    Ok(())
}

#[cfg(test)]
mod restore_tests {
    use super::*;
    use crate::policy::easy::Easy;
    use crate::policy::test_util::ScheduleInto;
    use crate::policy::{BackfillOptions, QueueOrder};

    #[test]
    fn a_restored_job_holds_its_processors_until_it_ends() {
        let m = MachineId(0);
        let mut easy = Easy::new(m, 8, QueueOrder::Fcfs, BackfillOptions::default());
        let mut fcfs = Fcfs::new(m, 8);
        for p in [&mut easy as &mut dyn Policy, &mut fcfs] {
            let old = Job::new(1, 0, 6, 100, 100);
            p.restore_running(50, &old, 10, m, 6).unwrap();
            assert!(matches!(
                p.restore_running(50, &old, 10, m, 6),
                Err(Rejection::Duplicate(_))
            ));
            let wide = Job::new(2, 50, 4, 10, 10);
            assert!(p.restore_running(50, &wide, 10, m, 4).is_err(), "6 + 4 > 8");
            p.submit(50, &wide).unwrap();
            let mut starts = Vec::new();
            p.schedule_into(50, &mut starts);
            assert!(starts.is_empty(), "only 2 processors are free");
            p.terminate(60, JobId(1));
            p.schedule_into(60, &mut starts);
            assert_eq!(starts.len(), 1);
            assert_eq!(starts[0].job, JobId(2));
        }
    }

    #[test]
    fn nothing_starts_on_a_machine_that_is_down() {
        let m = MachineId(0);
        let mut easy = Easy::new(m, 8, QueueOrder::Fcfs, BackfillOptions::default());
        let mut fcfs = Fcfs::new(m, 8);
        let mut cons = crate::policy::conservative::Conservative::new(m, 8);
        for p in [&mut easy as &mut dyn Policy, &mut fcfs, &mut cons] {
            p.set_machine_available(0, m, false);
            p.submit(0, &Job::new(1, 0, 2, 10, 10)).unwrap();
            let mut starts = Vec::new();
            p.schedule_into(0, &mut starts);
            assert!(
                starts.is_empty(),
                "{}: started on a down machine",
                p.describe()
            );
            p.set_machine_available(5, MachineId(9), true);
            p.schedule_into(5, &mut starts);
            assert!(starts.is_empty(), "another machine's news changes nothing");
            p.set_machine_available(10, m, true);
            p.schedule_into(10, &mut starts);
            assert_eq!(starts.len(), 1, "{}", p.describe());
        }
    }
}

#[cfg(test)]
mod first_fit_tests {
    use super::*;
    use crate::policy::test_util::ScheduleInto;

    fn ids(starts: &[Start]) -> Vec<u64> {
        starts.iter().map(|s| s.job.0).collect()
    }

    #[test]
    fn first_fit_skips_a_job_that_does_not_fit_where_fcfs_stops() {
        let m = MachineId(0);
        for (mut p, expected) in [
            (Fcfs::new(m, 8), vec![1]),
            (Fcfs::first_fit(m, 8), vec![1, 3, 4]),
        ] {
            // 1 takes 5 of 8; 2 (4) does not fit; 3 (2) and 4 (1) do, in arrival order.
            for (id, procs) in [(1, 5), (2, 4), (3, 2), (4, 1)] {
                p.submit(0, &Job::new(id, 0, procs, 100, 100)).unwrap();
            }
            let mut starts = Vec::new();
            p.schedule_into(0, &mut starts);
            assert_eq!(ids(&starts), expected, "{}", p.describe());
        }
        let mut ff = Fcfs::first_fit(m, 8);
        assert_eq!(ff.describe(), "first-fit");
        // No reservation: the blocked job 2 waits while smaller later jobs keep passing it.
        for (id, procs) in [(1, 5), (2, 4), (3, 3)] {
            ff.submit(0, &Job::new(id, 0, procs, 100, 100)).unwrap();
        }
        let mut starts = Vec::new();
        ff.schedule_into(0, &mut starts);
        assert_eq!(ids(&starts), [1, 3]);
        ff.terminate(50, JobId(1));
        ff.submit(50, &Job::new(4, 50, 5, 100, 100)).unwrap();
        starts.clear();
        ff.schedule_into(50, &mut starts);
        assert_eq!(
            ids(&starts),
            [2],
            "2 comes first in arrival order once it fits"
        );
        assert_eq!(ff.queue(), [JobId(4)]);
    }
}
