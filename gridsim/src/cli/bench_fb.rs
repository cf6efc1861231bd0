//! `gridsim bench --fb`: the cost of one Flexible Backfilling scheduling pass (spec
//! `two-level-grid-scheduler.md` D6.1–D6.3) on a heterogeneous cluster with licences, as a function
//! of the queue length and the number of machines. The cluster is first filled with running jobs
//! (long estimates), so the measured pass must compute every priority, try the jobs on the machines
//! fastest first, reserve for the first blocked job and test the others against that reservation.
//! The platform and workload are generated from a fixed seed; the pass is timed on a fresh copy of
//! the same state each repetition. No test asserts a timing.

use anyhow::{Result, bail};
use gridsched_core::cluster::ClusterState;
use gridsched_core::heuristics::HeuristicParams;
use gridsched_core::model::{Job, LicenceId, LicencePool, Machine, MachineId, Time};
use gridsched_core::policy::{Decisions, FbVariant, FlexibleBackfilling, Policy};
use serde::Serialize;
use std::time::Instant;

/// Licence types of the benchmark cluster.
const LICENCES: u16 = 20;

/// One measured configuration.
#[derive(Debug, Serialize)]
pub struct FbPassTiming {
    /// Waiting jobs when the pass starts.
    pub queued: usize,
    /// Machines of the cluster.
    pub machines: usize,
    /// Jobs running when the pass starts.
    pub running: usize,
    /// Jobs the pass started.
    pub started: usize,
    /// Best pass time in microseconds.
    pub best_us: f64,
    /// Median pass time in microseconds.
    pub median_us: f64,
}

/// A small deterministic generator (SplitMix64), enough for benchmark inputs.
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

/// Parses `QUEUEDxMACHINES` (e.g. `1000x200`).
pub fn parse_size(s: &str) -> Result<(usize, usize)> {
    let parsed = s
        .split_once('x')
        .and_then(|(q, m)| Some((q.trim().parse().ok()?, m.trim().parse().ok()?)));
    match parsed {
        Some((q, m)) if q > 0 && m > 0 => Ok((q, m)),
        _ => bail!("--fb-sizes: `{s}` is not QUEUEDxMACHINES with both positive, e.g. 1000x200"),
    }
}

/// The cluster: SMP machines of 4–16 processors with four benchmark classes, space sharing, 20
/// licence types with pools of 2–8 copies each suitable on about half the machines, and one
/// machine in ten holding one node-locked licence.
fn cluster(machines: usize, rng: &mut Mix) -> ClusterState {
    let ms: Vec<Machine> = (0..machines)
        .map(|i| {
            let procs = [4, 8, 8, 16][rng.range(0, 3) as usize];
            let bm = [100, 150, 200, 300][rng.range(0, 3) as usize];
            let mut m = Machine::new(MachineId(i as u32), &format!("m{i}"), procs, bm);
            if rng.range(0, 9) == 0 {
                m.node_locked = vec![LicenceId(rng.range(0, u64::from(LICENCES) - 1) as u16)];
            }
            m
        })
        .collect();
    let pools: Vec<LicencePool> = (0..LICENCES)
        .map(|l| LicencePool {
            licence: LicenceId(l),
            copies: rng.range(2, 8) as u32,
            machines: (0..machines)
                .filter(|_| rng.range(0, 1) == 0)
                .map(|i| MachineId(i as u32))
                .collect(),
        })
        .collect();
    ClusterState::from_parts(ms, &pools, true).expect("a valid generated cluster")
}

/// A job of 1–8 processors, 0–2 licences, half of them with a deadline.
fn job(id: u64, submit: Time, est: (u64, u64), rng: &mut Mix) -> Job {
    let estimate = rng.range(est.0, est.1) as i64;
    let mut j = Job::new(id, submit, rng.range(1, 8) as u32, estimate, estimate);
    let nlic = rng.range(0, 2);
    for _ in 0..nlic {
        let l = LicenceId(rng.range(0, u64::from(LICENCES) - 1) as u16);
        if !j.licences.contains(&l) {
            j.licences.push(l);
        }
    }
    if rng.range(0, 1) == 0 {
        j.deadline = Some(submit + estimate * rng.range(2, 6) as i64);
    }
    j.benchmark = Some([100, 200][rng.range(0, 1) as usize]);
    j
}

/// The scheduler right before the measured pass: the cluster filled with long jobs, `queued` jobs
/// submitted at `t = 1`.
fn prepared(queued: usize, machines: usize) -> FlexibleBackfilling {
    let mut rng = Mix(0x5eed ^ (queued as u64) << 20 ^ machines as u64);
    let mut p = FlexibleBackfilling::fb(
        cluster(machines, &mut rng),
        FbVariant::Unmod,
        HeuristicParams::FB_4_1,
    );
    let mut id = 0u64;
    let accept = |p: &mut FlexibleBackfilling, j: Job| {
        // Ineligible jobs (a licence no machine offers) are simply left out.
        let _ = p.submit(j.submit, &j);
    };
    for _ in 0..machines * 4 {
        let j = job(id, 0, (5_000, 50_000), &mut rng);
        accept(&mut p, j);
        id += 1;
    }
    p.schedule(0, &mut Decisions::default());
    for w in p.queue() {
        p.cancel(0, w);
    }
    for _ in 0..queued {
        let j = job(id, 1, (60, 20_000), &mut rng);
        accept(&mut p, j);
        id += 1;
    }
    p
}

/// Times one pass for each `(queued, machines)` size, best and median of `repeat` runs.
pub fn fb_pass(sizes: &[(usize, usize)], repeat: u32) -> Vec<FbPassTiming> {
    let mut out = Vec::new();
    for &(queued, machines) in sizes {
        let base = prepared(queued, machines);
        let mut times = Vec::with_capacity(repeat as usize);
        let mut started = 0;
        for _ in 0..repeat {
            let mut p = base.clone();
            let mut decided = Decisions::default();
            decided.starts.reserve(queued);
            let t = Instant::now();
            p.schedule(1, &mut decided);
            times.push(t.elapsed().as_secs_f64() * 1e6);
            started = decided.starts.len();
        }
        times.sort_by(f64::total_cmp);
        out.push(FbPassTiming {
            queued: base.waiting_len(),
            machines,
            running: base.running_len(),
            started,
            best_us: times[0],
            median_us: times[times.len() / 2],
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_clear_errors() {
        assert_eq!(parse_size("1000x200").unwrap(), (1000, 200));
        let e = parse_size("1000").unwrap_err().to_string();
        assert!(e.contains("--fb-sizes") && e.contains("`1000`"), "{e}");
        assert!(parse_size("0x5").is_err());
    }

    #[test]
    fn the_pass_runs_on_a_full_cluster() {
        let r = fb_pass(&[(50, 10)], 1);
        assert_eq!(r.len(), 1);
        let r = &r[0];
        assert!(r.running > 0, "the cluster is filled first");
        assert!(r.queued > 40, "{} queued", r.queued);
        assert!(r.started < r.queued, "a full cluster cannot take every job");
    }
}
