//! One run of the gang experiment: a workload through the platform engine on a single machine of
//! N processors, with an observer on its passes measuring what eq. (3) of Zhang et al. needs: the
//! processors left empty between events, the processor-seconds of context switches and migration
//! delays, and whether a job waited in the queue. The engine passes where a live local scheduler
//! does: at an arrival, a departure, or the policy's slice end (Zhang et al. §2.3).

use crate::platform::{Classify, Meta, PlatformHooks, PlatformRecord, simulate_platform};
use anyhow::{Result, anyhow, bail};
use gridsched_core::dispatch::RoundRobin;
use gridsched_core::metrics::GangCapacityTracker;
use gridsched_core::metrics::breakdown::Outcome;
use gridsched_core::model::{ClusterId, Duration, Job, JobId, Platform, Time};
use gridsched_core::policy::PolicyConfig;
use gridsched_core::runner::{ClusterRunner, Effect};
use std::collections::HashMap;

/// What one run measured.
#[derive(Clone, Debug)]
pub struct Measured {
    /// Every job, by id.
    pub outcomes: Vec<Outcome>,
    /// Loss of capacity with δ (G-A4).
    pub kappa: f64,
    /// Loss of capacity as eq. (3) is printed.
    pub kappa_literal: f64,
    /// Suspensions.
    pub suspensions: u64,
    /// The policy's counters.
    pub counters: Vec<(String, u64)>,
}

/// The κ observer: what it integrates between two passes.
struct Kappa {
    procs: u32,
    tracker: GangCapacityTracker,
    /// Running jobs: (start, setup, processors).
    running: HashMap<JobId, (Time, Duration, u32)>,
    /// The previous pass and whether a job waited after it.
    prev: Option<(Time, bool)>,
    counters: Vec<(String, u64)>,
    /// What gang scheduling must never do, if it happened (an overrun, a kill).
    error: Option<String>,
}

impl Kappa {
    /// After the pass at `t`: the setups in progress since the previous pass count up to `t`,
    /// then the pass's suspensions and starts change the running set, and the state from `t` on
    /// is observed.
    fn pass(&mut self, t: Time, effects: &[Effect], r: &ClusterRunner) {
        if let Some((t0, waiting)) = self.prev {
            for &(s, setup, n) in self.running.values() {
                let lost = (s + setup).min(t) - s.max(t0);
                if lost > 0 {
                    self.tracker.setup(n, lost, waiting);
                }
            }
        }
        self.running.retain(|&id, _| r.running_on(id).is_some());
        for e in effects {
            match *e {
                Effect::Start(s) => {
                    self.running.insert(s.job, (t, s.setup, s.procs));
                }
                Effect::Overrun { job, .. } => {
                    self.error = Some(format!("job {job} overran its estimate"));
                }
                Effect::Kill { job, .. } => {
                    self.error = Some(format!(
                        "job {job} was killed: gang scheduling kills nothing"
                    ));
                }
                Effect::Dropped { job } => {
                    self.error = Some(format!("job {job} was dropped: nothing overruns here"));
                }
                Effect::Suspend { .. } | Effect::Finished(_) => {}
            }
        }
        let waiting = r.policy().waiting_len() > 0;
        let empty = u64::from(self.procs) - r.ledger().busy_procs();
        self.tracker.observe(t, empty, waiting);
        self.prev = Some((t, waiting));
        self.counters = r.policy().counters();
    }
}

/// Runs `jobs` (sorted by submission) under `cfg` on one machine of `procs` processors.
pub fn drive(cfg: &PolicyConfig, procs: u32, jobs: &[Job]) -> Result<Measured> {
    let p = Platform::single_machine(procs);
    let policy = cfg.build(&p, ClusterId(0))?;
    let by_id: HashMap<JobId, &Job> = jobs.iter().map(|j| (j.id, j)).collect();
    let mut k = Kappa {
        procs,
        tracker: GangCapacityTracker::new(),
        running: HashMap::new(),
        prev: None,
        counters: Vec::new(),
        error: None,
    };
    let mut outcomes = Vec::with_capacity(jobs.len());
    let mut record = |r: &PlatformRecord| {
        let j = by_id[&r.id];
        outcomes.push(Outcome {
            submit: r.submit,
            start: r.start,
            end: r.end,
            run: j.runtime.unwrap_or(j.estimate),
            estimate: j.estimate,
            procs: j.procs,
        });
    };
    let mut refused = Vec::new();
    let mut on_refusal = |job: JobId, why: &str| refused.push(format!("job {job}: {why}"));
    let mut pass = |t: Time, _: ClusterId, e: &[Effect], r: &ClusterRunner| k.pass(t, e, r);
    let rep = simulate_platform(
        &p,
        vec![policy],
        Meta {
            classify: Classify::Fixed(1),
            dispatcher: Box::new(RoundRobin::default()),
            splits: None,
            links: None,
        },
        jobs.iter()
            .cloned()
            .map(Ok::<Job, std::convert::Infallible>),
        PlatformHooks {
            record: Some(&mut record),
            pass: Some(&mut pass),
            refused: Some(&mut on_refusal),
        },
    )
    .map_err(|e| anyhow!("{e}"))?;
    if let Some(why) = k.error.take().or_else(|| refused.first().cloned()) {
        bail!("{why}");
    }
    outcomes.sort_by_key(|o| o.end);
    let t_f = outcomes.last().map_or(0, |o| o.end);
    Ok(Measured {
        kappa: k.tracker.kappa(procs, t_f),
        kappa_literal: k.tracker.literal(procs, t_f),
        outcomes,
        suspensions: rep.stats.suspensions,
        counters: k.counters,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use gridsched_core::policy::PolicyKind;

    /// κ of a worked example on N = 4 under GS at MPL 1 (one row: space sharing): job 1 takes 3
    /// processors over [0, 100) while job 2 (2 processors) waits, leaving 1 processor empty
    /// (100 processor-seconds lost with δ); job 2 runs over [100, 200) with 2 empty and nobody
    /// waiting (200 more as printed). t_f = 200: κ = 100 / 800, as printed 300 / 800.
    #[test]
    fn kappa_of_a_worked_example() {
        let mut cfg = PolicyConfig::new(PolicyKind::Gs);
        cfg.gang.mpl = 1;
        let jobs = [Job::new(1, 0, 3, 100, 100), Job::new(2, 0, 2, 100, 100)];
        let m = drive(&cfg, 4, &jobs).unwrap();
        assert_eq!((m.kappa, m.kappa_literal), (0.125, 0.375));
        assert_eq!(m.suspensions, 0);
        let ends: Vec<_> = m.outcomes.iter().map(|o| (o.start, o.end)).collect();
        assert_eq!(ends, [(0, 100), (100, 200)]);
    }
}
