//! The metrics of the seed's experiments (spec `two-level-grid-scheduler.md` D8.1): deadline misses,
//! slowdown, system usage (§4.1), machine usage (§4.2), processor and licence usage (§4.3 and the
//! §5.2.3 CPU form), per-cluster workload share against the optimal share.
//!
//! Usage ratios are integrated over time: at every instant with at least one job in the system the
//! ratio `active / min(available, requested)` is weighted by the time until the next event and
//! divided by the total such time (the seed says "averaged over every simulation instant"; time
//! weighting makes the figure independent of how many events an instant holds). Instants without a
//! job in the system are left out, as the ratio is undefined there.

use gridsched_core::model::{Duration, Time};
use serde::Serialize;

/// Counters of one cluster (or of the whole platform) at an instant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Level {
    /// Jobs waiting at the local scheduler or running.
    pub jobs: u64,
    /// Processors those jobs ask for.
    pub req_procs: u64,
    /// Licences those jobs ask for (one per job and licence type).
    pub req_licences: u64,
    /// Processors in use.
    pub busy_procs: u64,
    /// Machines running at least one job.
    pub active_machines: u64,
    /// Pool copies in use.
    pub used_copies: u64,
    /// Processors of the machines that are up.
    pub total_procs: u64,
    /// Machines that are up.
    pub total_machines: u64,
    /// Pool copies.
    pub total_copies: u64,
}

/// Time integrals of the usage ratios.
#[derive(Clone, Debug, Default)]
pub struct UsageIntegral {
    time: f64,
    system: f64,
    machine: f64,
    procs_time: f64,
    procs: f64,
    lic_time: f64,
    lic: f64,
}

fn ratio(active: u64, avail: u64, requested: u64) -> Option<f64> {
    let d = avail.min(requested);
    (d > 0).then(|| active as f64 / d as f64)
}

impl UsageIntegral {
    /// Adds the interval `[from, to)` spent at `l`.
    pub fn add(&mut self, l: &Level, from: Time, to: Time) {
        let dt = (to - from) as f64;
        if dt <= 0.0 || l.jobs == 0 {
            return;
        }
        self.time += dt;
        if let Some(r) = ratio(l.busy_procs, l.total_procs, l.jobs) {
            self.system += dt * r;
        }
        if let Some(r) = ratio(l.active_machines, l.total_machines, l.jobs) {
            self.machine += dt * r;
        }
        if let Some(r) = ratio(l.busy_procs, l.total_procs, l.req_procs) {
            self.procs_time += dt;
            self.procs += dt * r;
        }
        if let Some(r) = ratio(l.used_copies, l.total_copies, l.req_licences) {
            self.lic_time += dt;
            self.lic += dt * r;
        }
    }

    /// The averages, in percent.
    pub fn usage(&self) -> Usage {
        let pct = |v: f64, t: f64| if t > 0.0 { 100.0 * v / t } else { 0.0 };
        Usage {
            system_pct: pct(self.system, self.time),
            machine_pct: pct(self.machine, self.time),
            processor_pct: pct(self.procs, self.procs_time),
            licence_pct: pct(self.lic, self.lic_time),
        }
    }
}

/// Average usage figures in percent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Usage {
    /// §4.1 system usage: busy CPUs / min(total CPUs, jobs in the system).
    pub system_pct: f64,
    /// §4.2 machine usage: active machines / min(machines, jobs in the system).
    pub machine_pct: f64,
    /// §4.3 / §5.2.3 processor usage: busy CPUs / min(total CPUs, CPUs requested).
    pub processor_pct: f64,
    /// §4.3 licence usage: copies in use / min(copies, licences requested).
    pub licence_pct: f64,
}

/// Per-job outcome accumulators.
#[derive(Clone, Debug, Default)]
pub struct JobStats {
    finished: u64,
    with_deadline: u64,
    missed: u64,
    slowdown: f64,
    no_deadline: u64,
    slowdown_no_deadline: f64,
    wait: f64,
    response: f64,
    first_submit: Option<Time>,
    last_end: Time,
}

impl JobStats {
    /// A finished job: submitted at `submit`, ended at `end` after `exec` seconds of execution.
    pub fn add(&mut self, submit: Time, end: Time, exec: Duration, deadline: Option<Time>) {
        self.finished += 1;
        let response = (end - submit) as f64;
        // The 1-second floor guards the slowdown's division only: a zero-length job waited its
        // whole response time, not one second less.
        self.wait += response - exec as f64;
        let exec = exec.max(1) as f64;
        let sd = response / exec;
        self.slowdown += sd;
        self.response += response;
        match deadline {
            Some(d) => {
                self.with_deadline += 1;
                if end > d {
                    self.missed += 1;
                }
            }
            None => {
                self.no_deadline += 1;
                self.slowdown_no_deadline += sd;
            }
        }
        self.first_submit = Some(self.first_submit.map_or(submit, |f| f.min(submit)));
        self.last_end = self.last_end.max(end);
    }

    /// The figures.
    pub fn summary(&self) -> JobSummary {
        let avg = |v: f64, n: u64| if n > 0 { v / n as f64 } else { 0.0 };
        JobSummary {
            finished: self.finished,
            with_deadline: self.with_deadline,
            missed_deadline: self.missed,
            missed_pct: 100.0 * avg(self.missed as f64, self.with_deadline),
            slowdown: avg(self.slowdown, self.finished),
            slowdown_no_deadline: avg(self.slowdown_no_deadline, self.no_deadline),
            mean_wait: avg(self.wait, self.finished),
            mean_response: avg(self.response, self.finished),
            makespan: self.first_submit.map_or(0, |f| self.last_end - f),
        }
    }
}

/// Per-job figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct JobSummary {
    /// Jobs that ended.
    pub finished: u64,
    /// Of those, jobs with a deadline.
    pub with_deadline: u64,
    /// Jobs that ended after their deadline.
    pub missed_deadline: u64,
    /// Percent of jobs with a deadline that missed it.
    pub missed_pct: f64,
    /// Mean (wait + execution) / execution over all jobs.
    pub slowdown: f64,
    /// The same over jobs without a deadline (§4.2, §4.3).
    pub slowdown_no_deadline: f64,
    /// Mean wait (response minus execution), seconds.
    pub mean_wait: f64,
    /// Mean response time, seconds.
    pub mean_response: f64,
    /// First submission to last end, seconds.
    pub makespan: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_ratios_by_hand() {
        let mut u = UsageIntegral::default();
        let l = Level {
            jobs: 2,
            req_procs: 8,
            req_licences: 1,
            busy_procs: 4,
            active_machines: 1,
            used_copies: 1,
            total_procs: 16,
            total_machines: 4,
            total_copies: 3,
        };
        u.add(&l, 0, 10);
        // system: 4 / min(16, 2) = 2 (the seed's mixed units can exceed 100 %).
        u.add(&Level { jobs: 0, ..l }, 10, 50);
        let r = u.usage();
        assert_eq!(r.system_pct, 200.0);
        assert_eq!(r.machine_pct, 50.0);
        assert_eq!(r.processor_pct, 50.0);
        assert_eq!(r.licence_pct, 100.0);
    }

    #[test]
    fn deadline_misses_and_slowdown() {
        let mut s = JobStats::default();
        s.add(0, 100, 50, Some(90));
        s.add(0, 100, 100, Some(100));
        s.add(10, 40, 10, None);
        let r = s.summary();
        assert_eq!((r.with_deadline, r.missed_deadline), (2, 1));
        assert_eq!(r.missed_pct, 50.0);
        assert_eq!(r.slowdown, (2.0 + 1.0 + 3.0) / 3.0);
        assert_eq!(r.slowdown_no_deadline, 3.0);
        assert_eq!(r.makespan, 100);
    }
}
