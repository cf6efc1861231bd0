//! The record of one finished job and its per-job metrics: wait, response, slowdown and bounded
//! slowdown (`reference-semantics.md` "Metrics"; `self-tuning-and-multisite.md` §3.1–3.2).

use crate::model::{Duration, JobId, Time, UserId};
use serde::{Deserialize, Serialize};

/// Threshold of the bounded slowdown, in seconds (`gang-urgent-scaling.md` A.4: Γ = 10 s).
pub const BSLD_THRESHOLD_S: Duration = 10;

/// What happened to one job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRecord {
    /// The job.
    pub id: JobId,
    /// Its owner.
    pub user: UserId,
    /// Submission time.
    pub submit: Time,
    /// Start time.
    pub start: Time,
    /// End time.
    pub end: Time,
    /// Processors it used (its width).
    pub procs: u32,
    /// The estimate the scheduler planned with.
    pub estimate: Duration,
}

impl JobRecord {
    /// Waiting time: start − submit.
    pub fn wait(&self) -> Duration {
        self.start - self.submit
    }

    /// Run time actually used: end − start.
    pub fn run(&self) -> Duration {
        self.end - self.start
    }

    /// Response time: wait + run = end − submit.
    pub fn response(&self) -> Duration {
        self.end - self.submit
    }

    /// Slowdown: response / run (a zero-length run counts as 1 s).
    pub fn slowdown(&self) -> f64 {
        self.response() as f64 / self.run().max(1) as f64
    }

    /// Bounded slowdown with threshold `tau`: max(1, response / max(run, tau)).
    pub fn bounded_slowdown(&self, tau: Duration) -> f64 {
        (self.response() as f64 / self.run().max(tau).max(1) as f64).max(1.0)
    }

    /// Bounded slowdown with the 10 s threshold.
    pub fn bsld10(&self) -> f64 {
        self.bounded_slowdown(BSLD_THRESHOLD_S)
    }

    /// Area (resource consumption): width × run.
    pub fn area(&self) -> i128 {
        i128::from(self.procs) * i128::from(self.run())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(submit: Time, start: Time, end: Time, procs: u32) -> JobRecord {
        JobRecord {
            id: JobId(1),
            user: UserId(0),
            submit,
            start,
            end,
            procs,
            estimate: end - start,
        }
    }

    #[test]
    fn per_job_metrics() {
        let r = rec(100, 160, 220, 4);
        assert_eq!((r.wait(), r.run(), r.response()), (60, 60, 120));
        assert_eq!(r.slowdown(), 2.0);
        assert_eq!(r.bsld10(), 2.0);
        assert_eq!(r.area(), 240);
        // A 2 s job waiting 8 s: slowdown 5, bounded slowdown max(1, 10/10) = 1.
        let short = rec(0, 8, 10, 1);
        assert_eq!(short.slowdown(), 5.0);
        assert_eq!(short.bsld10(), 1.0);
        // The seed's example: a 0.5 s job delayed 10 min has slowdown ~1201; with 1 s resolution a
        // 1 s job delayed 600 s has slowdown 601 and bounded slowdown 60.1.
        let tiny = rec(0, 600, 601, 1);
        assert_eq!(tiny.slowdown(), 601.0);
        assert!((tiny.bsld10() - 60.1).abs() < 1e-12);
    }
}
