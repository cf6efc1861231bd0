//! `gridsim bench --cs`: the cost of one Convergent Scheduling plan (spec
//! `two-level-grid-scheduler.md` D7, D9.2 Fig. 23–24) with each matching algorithm (IMFS, MFS,
//! MIS), on the Table 4 generator scaled to the asked numbers of queued jobs, machines and licence
//! types (all jobs submitted at time 0, no space sharing, preemptive variant).
//!
//! Two timings per point: the *first plan* (empty cluster, every job queued) and the *replan*
//! after one running job ends (the steady state, where IMFS inherits the previous pairs); the
//! replan is the mean over `REPLANS` consecutive terminations. Wall clock, best of `--repeat`;
//! no test asserts a timing.

use super::say;
use anyhow::{Result, anyhow};
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use gridsched_core::cluster::ClusterState;
use gridsched_core::convergent::MatchingKind;
use gridsched_core::model::{ClusterId, JobId};
use gridsched_core::policy::{PolicyConfig, PolicyKind, Start};
use gridsched_workload::seed_setups::SetupParams;
use serde::Serialize;
use std::time::Instant;

/// Terminations (and replans) timed per point.
const REPLANS: usize = 5;

/// One measured point.
#[derive(Debug, Clone, Serialize)]
pub struct CsPoint {
    /// Matching algorithm.
    pub matching: String,
    /// Queued jobs.
    pub jobs: u64,
    /// Machines.
    pub machines: u32,
    /// Licence types.
    pub licences: u16,
    /// Jobs started by the first plan.
    pub started: usize,
    /// Wall time of the first plan, ms.
    pub first_ms: f64,
    /// Mean wall time of a replan after one termination, ms.
    pub replan_ms: f64,
}

/// The grid of points: the reference point (1,000 jobs, 200 machines), then the growth with jobs
/// (at 200 machines) and with machines (at 1,000 jobs).
pub fn default_points() -> Vec<(u64, u32)> {
    vec![
        (1_000, 200),
        (100, 200),
        (5_000, 200),
        (1_000, 50),
        (1_000, 800),
    ]
}

/// Measures one point with one matching algorithm.
pub fn measure(
    matching: MatchingKind,
    jobs: u64,
    machines: u32,
    licences: u16,
    repeat: u32,
    seed: u64,
) -> Result<CsPoint> {
    let setup = SetupParams {
        clusters: vec![machines],
        licences,
        jobs,
        inter_arrivals: vec![0.0],
        ..SetupParams::table4()
    };
    let platform = setup.platform(seed);
    let stream = setup.jobs(&platform, 0.0, seed);
    let cfg = PolicyConfig {
        matching: Some(matching),
        ..PolicyConfig::new(PolicyKind::CsIP)
    };
    let mut best: Option<(f64, f64, usize)> = None;
    for _ in 0..repeat.max(1) {
        let state = ClusterState::new(&platform, ClusterId(0)).map_err(|e| anyhow!("{e}"))?;
        let mut policy = cfg.build_cluster(state)?;
        for j in &stream {
            policy
                .submit(0, j)
                .map_err(|e| anyhow!("job {}: {e:?}", j.id.0))?;
        }
        let mut starts: Vec<Start> = Vec::new();
        let t = Instant::now();
        policy.schedule(0, &mut starts);
        let first = t.elapsed().as_secs_f64() * 1e3;
        let started = starts.len();
        let mut running: Vec<JobId> = starts.iter().map(|s| s.job).collect();
        let mut suspended = Vec::new();
        policy.take_suspensions(&mut suspended);
        let mut total = 0.0;
        let mut n = 0usize;
        for k in 0..REPLANS {
            let Some(done) = running.pop() else { break };
            let now = 1 + k as i64;
            policy.terminate(now, done);
            starts.clear();
            let t = Instant::now();
            policy.schedule(now, &mut starts);
            total += t.elapsed().as_secs_f64() * 1e3;
            n += 1;
            suspended.clear();
            policy.take_suspensions(&mut suspended);
            running.retain(|j| !suspended.contains(j));
            running.extend(starts.iter().map(|s| s.job));
        }
        let replan = if n == 0 { 0.0 } else { total / n as f64 };
        if best.is_none_or(|(f, _, _)| first < f) {
            best = Some((first, replan, started));
        }
    }
    let (first_ms, replan_ms, started) = best.expect("repeat >= 1");
    Ok(CsPoint {
        matching: format!("{matching:?}").to_uppercase(),
        jobs,
        machines,
        licences,
        started,
        first_ms,
        replan_ms,
    })
}

/// Runs every point with IMFS, MFS and MIS and prints a table (or JSON).
pub fn bench_cs(points: &[(u64, u32)], licences: u16, repeat: u32, json: bool) -> Result<()> {
    let mut out = Vec::new();
    for &(jobs, machines) in points {
        for m in [MatchingKind::Imfs, MatchingKind::Mfs, MatchingKind::Mis] {
            let p = measure(m, jobs, machines, licences, repeat, 1)?;
            eprintln!(
                "gridsim bench --cs: {} jobs, {} machines, {}: first {:.2} ms, replan {:.2} ms",
                jobs, machines, p.matching, p.first_ms, p.replan_ms
            );
            out.push(p);
        }
    }
    if json {
        say!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_header(vec![
        "jobs",
        "machines",
        "licences",
        "matching",
        "started",
        "first plan (ms)",
        "replan (ms)",
    ]);
    for p in &out {
        t.add_row(vec![
            p.jobs.to_string(),
            p.machines.to_string(),
            p.licences.to_string(),
            p.matching.clone(),
            p.started.to_string(),
            format!("{:.2}", p.first_ms),
            format!("{:.2}", p.replan_ms),
        ]);
    }
    say!(
        "Convergent Scheduling (cs-i-p), one plan, Table 4 generator, all jobs queued at t = 0; \
         best of {repeat}, replan = mean of {REPLANS} after one termination each"
    );
    say!("{t}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_point_plans_and_replans_with_every_matching() {
        for m in [MatchingKind::Imfs, MatchingKind::Mfs, MatchingKind::Mis] {
            let p = measure(m, 40, 10, 5, 1, 3).unwrap();
            // 40 queued jobs, 10 idle machines: the first plan fills machines (at most one job
            // each, no space sharing) and starts at least one job.
            assert!(p.started >= 1 && p.started <= 10, "{p:?}");
            assert!(p.first_ms >= 0.0 && p.replan_ms >= 0.0);
        }
    }
}
