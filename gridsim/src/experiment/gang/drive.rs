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
    refused: Option<String>,
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
                    self.refused = Some(format!("job {job} overran its estimate"));
                }
                Effect::Kill { job, .. } => {
                    self.refused = Some(format!(
                        "job {job} was killed: gang scheduling kills nothing"
                    ));
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
        refused: None,
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
    if let Some(why) = k.refused.take().or_else(|| refused.first().cloned()) {
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
