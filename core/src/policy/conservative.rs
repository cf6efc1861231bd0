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

use super::fcfs::check_job;
use super::{Policy, Rejection, Reservation, Start};
use crate::model::{Duration, Job, JobId, MachineId, Time};
use crate::structures::{Profile, RunningSet};
use std::collections::{BTreeMap, BTreeSet, HashMap};

#[derive(Clone, Copy, Debug)]
struct Planned {
    id: JobId,
    procs: u32,
    estimate: Duration,
    start: Time,
    plan_seq: u64,
}

/// Conservative backfilling on one space-shared machine.
#[derive(Debug)]
pub struct Conservative {
    machine: MachineId,
    capacity: u32,
    profile: Profile,
    /// Waiting jobs by arrival sequence.
    waiting: BTreeMap<u64, Planned>,
    seq_of: HashMap<JobId, u64>,
    /// Planned starts: (start, plan sequence, job).
    due: BTreeSet<(Time, u64, JobId)>,
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
}

impl Conservative {
    /// Conservative backfilling for `machine` of `capacity` processors.
    pub fn new(machine: MachineId, capacity: u32) -> Conservative {
        Conservative {
            machine,
            capacity,
            profile: Profile::new(capacity),
            waiting: BTreeMap::new(),
            seq_of: HashMap::new(),
            due: BTreeSet::new(),
            running: RunningSet::new(),
            committed: 0,
            next_seq: 0,
            next_plan: 0,
            dirty: false,
            round_pending: false,
            replan_all: false,
            down: false,
        }
    }

    /// Takes each waiting job out and places it again at its earliest start, in arrival order.
    /// With `from_scratch`, all reservations are removed first (after an overrun).
    fn replan(&mut self, now: Time, from_scratch: bool) -> bool {
        if from_scratch {
            for p in self.waiting.values() {
                self.profile.release(p.start, p.start + p.estimate, p.procs);
            }
        }
        let mut moved = false;
        let (capacity, committed) = (self.capacity, self.committed);
        self.profile.forget_before(now);
        for p in self.waiting.values_mut() {
            if p.start <= now && !from_scratch {
                continue; // due now: it starts in this pass
            }
            if !from_scratch {
                self.profile.release(p.start, p.start + p.estimate, p.procs);
            }
            let others = committed - u64::from(p.procs);
            let s = place(
                &self.profile,
                &self.due,
                now,
                p.procs,
                p.estimate,
                capacity,
                others,
            );
            self.profile.reserve(s, s + p.estimate, p.procs);
            if s != p.start {
                self.due.remove(&(p.start, p.plan_seq, p.id));
                p.start = s;
                p.plan_seq = self.next_plan;
                self.next_plan += 1;
                self.due.insert((p.start, p.plan_seq, p.id));
                moved = true;
            }
        }
        moved
    }
}

/// The earliest start of a job of `procs` processors for `estimate` from `now`, when `others`
/// processors are committed to other jobs and `due` holds the planned starts.
fn place(
    profile: &Profile,
    due: &BTreeSet<(Time, u64, JobId)>,
    now: Time,
    procs: u32,
    estimate: Duration,
    capacity: u32,
    others: u64,
) -> Time {
    if u64::from(procs) + others <= u64::from(capacity) {
        return now;
    }
    let rising_until = due
        .range((now + 1, 0, JobId(0))..)
        .next()
        .map_or(Time::MAX, |&(t, _, _)| t);
    profile.earliest_rising(now, procs, estimate, rising_until)
}

impl Policy for Conservative {
    fn describe(&self) -> String {
        "conservative".into()
    }

    fn submit(&mut self, now: Time, job: &Job) -> Result<(), Rejection> {
        check_job(job, self.capacity)?;
        if self.seq_of.contains_key(&job.id) || self.running.get(job.id).is_some() {
            return Err(Rejection::Duplicate(job.id));
        }
        self.profile.forget_before(now);
        let start = place(
            &self.profile,
            &self.due,
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
        };
        self.next_plan += 1;
        self.due.insert((start, p.plan_seq, p.id));
        self.waiting.insert(self.next_seq, p);
        self.seq_of.insert(job.id, self.next_seq);
        self.next_seq += 1;
        Ok(())
    }

    fn terminate(&mut self, now: Time, job: JobId) {
        let Some(e) = self.running.remove(job) else {
            return;
        };
        if e.end > now {
            self.profile.release(now, e.end, e.procs);
            self.dirty = true;
        }
        self.round_pending = true;
        self.profile.forget_before(now);
    }

    fn overrun(&mut self, now: Time, job: JobId, predicted_end: Time) {
        let Some(old) = self.running.set_end(job, predicted_end) else {
            return;
        };
        self.profile
            .reserve(old.end.max(now), predicted_end, old.procs);
        self.replan_all = true;
    }

    fn cancel(&mut self, _now: Time, job: JobId) -> bool {
        let Some(seq) = self.seq_of.remove(&job) else {
            return false;
        };
        let p = self.waiting.remove(&seq).expect("indexed waiting job");
        self.profile.release(p.start, p.start + p.estimate, p.procs);
        self.due.remove(&(p.start, p.plan_seq, p.id));
        self.committed -= u64::from(p.procs);
        self.dirty = true;
        self.round_pending = true;
        true
    }

    fn schedule(&mut self, now: Time, starts: &mut Vec<Start>) {
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
        while let Some(&(t, plan_seq, id)) = self.due.first() {
            if t > now {
                break;
            }
            self.due.remove(&(t, plan_seq, id));
            let seq = self.seq_of.remove(&id).expect("due job is waiting");
            let p = self.waiting.remove(&seq).expect("indexed waiting job");
            if t < now {
                // Woken late: move the reservation to the actual start.
                self.profile.release(t, t + p.estimate, p.procs);
                self.profile.reserve(now, now + p.estimate, p.procs);
            }
            self.running.insert(id, p.procs, now, p.estimate);
            starts.push(Start::on(id, self.machine, p.procs));
        }
    }

    fn next_wakeup(&self) -> Option<Time> {
        if self.down {
            return None;
        }
        self.due.first().map(|&(t, _, _)| t)
    }

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

    fn waiting_len(&self) -> usize {
        self.waiting.len()
    }

    fn running_len(&self) -> usize {
        self.running.len()
    }

    fn queue(&self) -> Vec<JobId> {
        self.waiting.values().map(|p| p.id).collect()
    }

    fn reservations(&self) -> Vec<Reservation> {
        let slots = self
            .waiting
            .values()
            .map(|p| (p.id, p.start, p.estimate, p.procs));
        Reservation::planned_on(self.machine, slots)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn starts(p: &mut Conservative, now: Time) -> Vec<u64> {
        let mut v = Vec::new();
        p.schedule(now, &mut v);
        v.iter().map(|s| s.job.0).collect()
    }

    fn planned(p: &Conservative) -> Vec<(u64, Time)> {
        p.reservations()
            .iter()
            .map(|r| (r.job.0, r.start))
            .collect()
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
