//! A minimal preemptive policy for the tests of the runner's drivers (the simulator and the live
//! local scheduler): it runs one job at a time on machine 0, and a job with a deadline suspends a
//! running job without one (a stand-in for a preemptive Convergent Scheduling variant, Pasquali,
//! thesis §4.3, whose suspensions depend on the whole job-machine matrix).

use crate::model::{Job, JobId, MachineId, Time};
use crate::policy::{Decisions, Policy, Rejection, Reservation, Start};

/// Runs every job on one machine at a time; a job with a deadline suspends the running one; a
/// suspended job resumes on `resume_on` (machine 0 by default).
#[derive(Debug, Default)]
pub struct Preemptor {
    queue: Vec<Job>,
    running: Option<Job>,
    resume_on: MachineId,
    preempted: Vec<JobId>,
    setup: crate::model::Duration,
}

impl Preemptor {
    /// A preemptor whose suspended jobs start again on `machine`.
    pub fn resuming_on(machine: MachineId) -> Preemptor {
        Preemptor {
            resume_on: machine,
            ..Preemptor::default()
        }
    }

    /// A preemptor whose resumed jobs hold their processors `setup` seconds without progress
    /// first (a context switch, [`Start::setup`]).
    pub fn with_setup(setup: crate::model::Duration) -> Preemptor {
        Preemptor {
            setup,
            ..Preemptor::default()
        }
    }
}

impl Policy for Preemptor {
    fn describe(&self) -> String {
        "preemptor".into()
    }
    fn submit(&mut self, _: Time, job: &Job) -> Result<(), Rejection> {
        self.queue.push(job.clone());
        Ok(())
    }
    fn terminate(&mut self, _: Time, job: JobId) {
        if self.running.as_ref().is_some_and(|j| j.id == job) {
            self.running = None;
        }
    }
    fn overrun(&mut self, _: Time, _: JobId, _: Time) {}
    fn cancel(&mut self, _: Time, _: JobId) -> bool {
        false
    }
    fn schedule(&mut self, _: Time, out: &mut Decisions) {
        self.queue.sort_by_key(|j| (j.deadline.is_none(), j.id));
        let urgent = self.queue.first().is_some_and(|j| j.deadline.is_some());
        if let Some(r) = &self.running
            && urgent
            && r.deadline.is_none()
        {
            out.suspensions.push(r.id);
            self.preempted.push(r.id);
            let r = self.running.take().expect("checked");
            self.queue.push(r);
        }
        if self.running.is_none() && !self.queue.is_empty() {
            let j = self.queue.remove(0);
            let m = if self.preempted.contains(&j.id) {
                self.resume_on
            } else {
                MachineId(0)
            };
            let mut s = Start::on(j.id, m, j.procs);
            if self.preempted.contains(&j.id) {
                s.setup = self.setup;
            }
            out.starts.push(s);
            self.running = Some(j);
        }
    }
    fn waiting_len(&self) -> usize {
        self.queue.len()
    }
    fn running_len(&self) -> usize {
        usize::from(self.running.is_some())
    }
    fn queue(&self) -> Vec<JobId> {
        self.queue.iter().map(|j| j.id).collect()
    }
    fn reservations(&self) -> Vec<Reservation> {
        Vec::new()
    }
}
