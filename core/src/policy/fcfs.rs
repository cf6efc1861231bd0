//! First come, first served without backfilling (`reference-semantics.md`: step 1 of the EASY
//! pass alone): start the queue head while it fits in the processors free now; the head blocks
//! everything behind it.

use super::{Policy, Rejection, Reservation, Start};
use crate::model::{Job, JobId, MachineId, Time};
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
}

impl Fcfs {
    /// FCFS for `machine` of `capacity` processors.
    pub fn new(machine: MachineId, capacity: u32) -> Fcfs {
        Fcfs {
            machine,
            capacity,
            queue: VecDeque::new(),
            running: RunningSet::new(),
        }
    }
}

impl Policy for Fcfs {
    fn describe(&self) -> String {
        "fcfs".into()
    }

    fn submit(&mut self, _now: Time, job: &Job) -> Result<(), Rejection> {
        check_job(job, self.capacity)?;
        self.queue.push_back(Waiting {
            id: job.id,
            procs: job.procs,
            estimate: job.estimate,
        });
        Ok(())
    }

    fn terminate(&mut self, _now: Time, job: JobId) {
        self.running.remove(job);
    }

    fn overrun(&mut self, _now: Time, job: JobId, predicted_end: Time) {
        self.running.set_end(job, predicted_end);
    }

    fn cancel(&mut self, _now: Time, job: JobId) -> bool {
        match self.queue.iter().position(|w| w.id == job) {
            Some(i) => {
                self.queue.remove(i);
                true
            }
            None => false,
        }
    }

    fn schedule(&mut self, now: Time, starts: &mut Vec<Start>) {
        let mut free = self.running.free_at(now, self.capacity);
        while let Some(h) = self.queue.front().copied() {
            if h.procs > free {
                break;
            }
            self.queue.pop_front();
            free -= h.procs;
            self.running.insert(h.id, h.procs, now, h.estimate);
            starts.push(Start::on(h.id, self.machine, h.procs));
        }
    }

    fn waiting_len(&self) -> usize {
        self.queue.len()
    }

    fn running_len(&self) -> usize {
        self.running.len()
    }

    fn queue(&self) -> Vec<JobId> {
        self.queue.iter().map(|w| w.id).collect()
    }

    fn reservations(&self) -> Vec<Reservation> {
        Vec::new()
    }
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
