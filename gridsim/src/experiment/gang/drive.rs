//! One run of the gang experiment: a workload through one [`ClusterRunner`] on a single machine of
//! N processors, in the platform engine's order at every instant (terminations, then arrivals,
//! then one scheduling pass; wake-ups at the policy's slice ends), measuring what eq. (3) of Zhang
//! et al. needs: the processors left empty between events, the processor-seconds of context
//! switches and migration delays, and whether a job waited in the queue.

use anyhow::{Result, anyhow, bail};
use gridsched_core::metrics::GangCapacityTracker;
use gridsched_core::metrics::breakdown::Outcome;
use gridsched_core::model::{ClusterId, Duration, Job, JobId, Platform, Time};
use gridsched_core::policy::PolicyConfig;
use gridsched_core::runner::{ClusterRunner, Effect, Input, RunnerConfig};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

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

/// Runs `jobs` (sorted by submission) under `cfg` on one machine of `procs` processors.
pub fn drive(cfg: &PolicyConfig, procs: u32, jobs: &[Job]) -> Result<Measured> {
    let p = Platform::single_machine(procs);
    let policy = cfg.build(&p, ClusterId(0))?;
    let mut r = ClusterRunner::new(&p, ClusterId(0), policy, RunnerConfig::default())?;
    let by_id: HashMap<JobId, &Job> = jobs.iter().map(|j| (j.id, j)).collect();
    let mut ends: BinaryHeap<Reverse<(Time, JobId, u64)>> = BinaryHeap::new();
    let mut generation: HashMap<JobId, u64> = HashMap::new();
    // Running jobs: (start, setup, processors).
    let mut running: HashMap<JobId, (Time, Duration, u32)> = HashMap::new();
    let mut kappa = GangCapacityTracker::new();
    let mut wake: Option<Time> = None;
    let mut next = 0;
    let mut seq = 0;
    let mut prev: Option<(Time, bool)> = None;
    let mut outcomes = Vec::with_capacity(jobs.len());
    let mut suspensions = 0;
    let mut effects = Vec::new();
    loop {
        let t = [
            jobs.get(next).map(|j| j.submit),
            ends.peek().map(|Reverse((t, _, _))| *t),
            wake,
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(t) = t else { break };
        if let Some((t0, waiting)) = prev {
            for &(s, setup, n) in running.values() {
                let lost = (s + setup).min(t) - s.max(t0);
                if lost > 0 {
                    kappa.setup(n, lost, waiting);
                }
            }
        }
        effects.clear();
        while let Some(&Reverse((te, id, g))) = ends.peek() {
            if te != t {
                break;
            }
            ends.pop();
            if generation.get(&id) == Some(&g) {
                r.on(t, Input::Ended { job: id }, &mut effects)?;
            }
        }
        while jobs.get(next).is_some_and(|j| j.submit == t) {
            let job = jobs[next].clone();
            r.on(
                t,
                Input::Submit {
                    job,
                    priority: None,
                },
                &mut effects,
            )?;
            next += 1;
        }
        r.on(t, Input::Pass, &mut effects)?;
        for e in &effects {
            match *e {
                Effect::Start(s) => {
                    seq += 1;
                    generation.insert(s.job, seq);
                    ends.push(Reverse((t + s.run, s.job, seq)));
                    running.insert(s.job, (t, s.setup, s.procs));
                }
                Effect::Suspend { job, .. } => {
                    generation.remove(&job);
                    running.remove(&job);
                    suspensions += 1;
                }
                Effect::Finished(f) => {
                    running.remove(&f.job);
                    let j = by_id[&f.job];
                    outcomes.push(Outcome {
                        submit: f.submit,
                        start: f.start,
                        end: f.end,
                        run: j.runtime.unwrap_or(j.estimate),
                        estimate: j.estimate,
                        procs: j.procs,
                    });
                }
                Effect::Overrun { job, .. } => bail!("job {job} overran its estimate"),
                Effect::Kill { job, .. } => {
                    bail!("job {job} was killed: gang scheduling kills nothing")
                }
            }
        }
        let waiting = r.policy().waiting_len() > 0;
        let empty = u64::from(procs) - r.ledger().busy_procs();
        kappa.observe(t, empty, waiting);
        prev = Some((t, waiting));
        wake = r.next_wakeup().filter(|&w| w > t);
    }
    if !r.is_empty() {
        return Err(anyhow!("{} jobs never finished", r.len()));
    }
    outcomes.sort_by_key(|o| o.end);
    let t_f = outcomes.last().map_or(0, |o| o.end);
    Ok(Measured {
        kappa: kappa.kappa(procs, t_f),
        kappa_literal: kappa.literal(procs, t_f),
        outcomes,
        suspensions,
        counters: r.policy().counters(),
    })
}
