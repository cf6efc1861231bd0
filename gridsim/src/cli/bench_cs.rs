//! `gridsim bench --cs`: the cost of one Convergent Scheduling plan (spec
//! `two-level-grid-scheduler.md` D7, D9.2 Fig. 23–24) with each matching algorithm (IMFS as the
//! thesis describes it, our IMFS-warm, MFS, MIS), on the Table 4 generator scaled to the asked numbers of queued jobs, machines and licence
//! types (all jobs submitted at time 0, no space sharing, preemptive variant).
//!
//! Two timings per point: the *first plan* (empty cluster, every job queued) and the *replan*
//! after one running job ends (the steady state, where IMFS inherits the previous pairs); the
//! replan is the mean over `REPLANS` consecutive terminations. Wall clock, best of `--repeat`;
//! no test asserts a timing.
//!
//! A second table times each matching algorithm alone ([`imfs_tree`] for IMFS, [`imfs`] for
//! IMFS-warm) on the matrices of the first plan and of the first
//! replan (as the policy builds them: the matrix, then the licence pre-matching; the replan's
//! previous pairs are the running jobs, started by MFS), and compares each plan with MFS's:
//! pairs more or fewer, and the weight gap in percent of MFS's weight.

use super::say;
use anyhow::{Result, anyhow};
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use gridsched_core::cluster::ClusterState;
use gridsched_core::convergent::imfs_tree::imfs_tree;
use gridsched_core::convergent::knapsack::{Item, greedy};
use gridsched_core::convergent::matching::{Assignment, Matrix, imfs, mfs, mis, score};
use gridsched_core::convergent::matrix::{RowJob, build, rho};
use gridsched_core::convergent::{ConvergentScheduling, CsParams, MatchingKind};
use gridsched_core::model::{ClusterId, Job, JobId, LicenceId, Time};
use gridsched_core::policy::{Decisions, Policy, PolicyConfig, PolicyKind};
use gridsched_workload::seed_setups::SetupParams;
use serde::Serialize;
use std::collections::HashMap;
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
        let mut decided = Decisions::default();
        let t = Instant::now();
        policy.schedule(0, &mut decided);
        let first = t.elapsed().as_secs_f64() * 1e3;
        let started = decided.starts.len();
        let mut running: Vec<JobId> = decided.starts.iter().map(|s| s.job).collect();
        let mut total = 0.0;
        let mut n = 0usize;
        for k in 0..REPLANS {
            let Some(done) = running.pop() else { break };
            let now = 1 + k as i64;
            policy.terminate(now, done);
            decided.clear();
            let t = Instant::now();
            policy.schedule(now, &mut decided);
            total += t.elapsed().as_secs_f64() * 1e3;
            n += 1;
            running.retain(|j| !decided.suspensions.contains(j));
            running.extend(decided.starts.iter().map(|s| s.job));
        }
        let replan = if n == 0 { 0.0 } else { total / n as f64 };
        if best.is_none_or(|(f, _, _)| first < f) {
            best = Some((first, replan, started));
        }
    }
    let (first_ms, replan_ms, started) = best.expect("repeat >= 1");
    Ok(CsPoint {
        matching: label(matching).into(),
        jobs,
        machines,
        licences,
        started,
        first_ms,
        replan_ms,
    })
}

/// One matching algorithm timed alone on a point's first-plan and replan matrices.
#[derive(Debug, Clone, Serialize)]
pub struct MatchPoint {
    /// Matching algorithm.
    pub matching: String,
    /// Queued jobs.
    pub jobs: u64,
    /// Machines.
    pub machines: u32,
    /// Wall time on the first plan's matrix, ms.
    pub first_ms: f64,
    /// Its pairs minus MFS's.
    pub first_pairs: i64,
    /// Its weight below MFS's, percent of MFS's.
    pub first_gap_pct: f64,
    /// Wall time on the replan's matrix, ms.
    pub replan_ms: f64,
    /// Its pairs minus MFS's.
    pub replan_pairs: i64,
    /// Its weight below MFS's, percent of MFS's.
    pub replan_gap_pct: f64,
}

/// A matching algorithm of (matrix, previous pairs).
type Matcher = fn(&Matrix, &Assignment) -> Assignment;

/// The algorithms timed alone: the thesis' IMFS, ours, MFS, MIS.
const MATCHERS: [(&str, Matcher); 4] = [
    ("IMFS", imfs_tree),
    ("IMFS-warm", imfs),
    ("MFS", |p, _| mfs(p)),
    ("MIS", |p, _| mis(p)),
];

/// The matching algorithms of the policy, as the tables name them.
const KINDS: [MatchingKind; 4] = [
    MatchingKind::Imfs,
    MatchingKind::ImfsWarm,
    MatchingKind::Mfs,
    MatchingKind::Mis,
];

/// A matching algorithm's name in the tables (IMFS is the thesis', IMFS-warm ours).
fn label(m: MatchingKind) -> &'static str {
    match m {
        MatchingKind::Imfs => "IMFS",
        MatchingKind::ImfsWarm => "IMFS-warm",
        MatchingKind::Mfs => "MFS",
        MatchingKind::Mis => "MIS",
    }
}

/// The matrix of a plan at `now` as the cs-i-p policy builds it here (nothing pinned, no space
/// sharing, no reservation): `jobs` in submission order, those running on a slot of `state`
/// there since time 0; the rows the licence pre-matching discards zeroed (when a licence is
/// over-asked). With the running pairs as the previous plan.
fn plan_matrix(
    state: &ClusterState,
    jobs: &[Job],
    now: Time,
    params: &CsParams,
) -> (Matrix, Assignment) {
    let slot_of: HashMap<JobId, usize> = (state.slots().iter().enumerate())
        .flat_map(|(m, s)| s.jobs.iter().map(move |&j| (j, m)))
        .collect();
    let rows: Vec<RowJob<'_>> = jobs
        .iter()
        .map(|j| {
            let running_on = slot_of.get(&j.id).copied();
            // The policy's progress of a job running since 0.
            let progress = running_on.map_or(0.0, |m| {
                let bm = f64::from(state.slots()[m].machine.benchmark.max(1));
                let done = j
                    .benchmark
                    .map_or(now as f64, |b| now as f64 * bm / f64::from(b.max(1)));
                (done / j.estimate.max(1) as f64).min(0.999_999)
            });
            RowJob {
                job: j,
                arrived: 0,
                progress,
                running_on,
                results_on: None,
                eligible: None,
            }
        })
        .collect();
    let nlic = state.licence_slots();
    let mut p = build(state, &rows, now, params, &rho(state, &rows, nlic));
    let caps: Vec<u32> = (0..nlic)
        .map(|l| {
            state
                .pool(LicenceId(l as u16))
                .map_or(u32::MAX, |pl| pl.copies)
        })
        .collect();
    let licences: Vec<Vec<usize>> = (rows.iter())
        .map(|r| {
            (r.job.licences.iter().map(|l| l.index()))
                .filter(|&l| l < caps.len() && caps[l] != u32::MAX)
                .collect()
        })
        .collect();
    let mut demand = vec![0u32; caps.len()];
    licences.iter().flatten().for_each(|&l| demand[l] += 1);
    let over: Vec<bool> = demand.iter().zip(&caps).map(|(d, c)| d > c).collect();
    if over.iter().any(|o| *o) {
        let items: Vec<Item> = (rows.iter().zip(licences).enumerate())
            .map(|(i, (r, licences))| {
                let row = &p.p[i * p.cols..(i + 1) * p.cols];
                let n = row.iter().filter(|&&v| v > 0.0).count();
                let sum: f64 = row.iter().filter(|&&v| v > 0.0).sum();
                let asks = licences.iter().any(|&l| over[l]);
                Item {
                    value: if asks && n > 0 { sum / n as f64 } else { 0.0 },
                    licences,
                    pinned: false,
                    order: r.job.id.0 % 1_000_000,
                }
            })
            .collect();
        for (i, keep) in greedy(&items, &caps, true).into_iter().enumerate() {
            if !keep {
                p.p[i * p.cols..(i + 1) * p.cols].fill(0.0);
            }
        }
    }
    let mut previous = vec![None; p.cols];
    for (i, r) in rows.iter().enumerate() {
        if let Some(m) = r.running_on {
            previous[m] = Some(i);
        }
    }
    (p, previous)
}

/// Times every algorithm of [`MATCHERS`] alone on one point's first-plan matrix (nothing
/// running) and first-replan matrix (the MFS plan running, its last started job ended).
pub fn measure_matchings(
    jobs: u64,
    machines: u32,
    licences: u16,
    repeat: u32,
    seed: u64,
) -> Result<Vec<MatchPoint>> {
    let setup = SetupParams {
        clusters: vec![machines],
        licences,
        jobs,
        inter_arrivals: vec![0.0],
        ..SetupParams::table4()
    };
    let platform = setup.platform(seed);
    let mut stream = setup.jobs(&platform, 0.0, seed);
    let mut params = PolicyConfig::new(PolicyKind::CsIP).cs;
    params.overhead.get_or_insert(8.0);
    let state = ClusterState::new(&platform, ClusterId(0)).map_err(|e| anyhow!("{e}"))?;
    let first = plan_matrix(&state, &stream, 0, &params);
    let mut policy = ConvergentScheduling::new(state, true, true, Some(MatchingKind::Mfs), params);
    for j in &stream {
        policy
            .submit(0, j)
            .map_err(|e| anyhow!("job {}: {e:?}", j.id.0))?;
    }
    let mut decided = Decisions::default();
    policy.schedule(0, &mut decided);
    if let Some(done) = decided.starts.last() {
        policy.terminate(1, done.job);
        stream.retain(|j| j.id != done.job);
    }
    let replan = plan_matrix(policy.state(), &stream, 1, &params);
    let mut out = Vec::new();
    let [exact_first, exact_replan] =
        [&first, &replan].map(|(p, prev)| score(p, &MATCHERS[2].1(p, prev)));
    for (name, f) in MATCHERS {
        let mut row = MatchPoint {
            matching: name.into(),
            jobs,
            machines,
            first_ms: f64::INFINITY,
            first_pairs: 0,
            first_gap_pct: 0.0,
            replan_ms: f64::INFINITY,
            replan_pairs: 0,
            replan_gap_pct: 0.0,
        };
        for ((p, prev), exact, ms, pairs, gap) in [
            (
                &first,
                exact_first,
                &mut row.first_ms,
                &mut row.first_pairs,
                &mut row.first_gap_pct,
            ),
            (
                &replan,
                exact_replan,
                &mut row.replan_ms,
                &mut row.replan_pairs,
                &mut row.replan_gap_pct,
            ),
        ] {
            for _ in 0..repeat.max(1) {
                let t = Instant::now();
                let a = f(p, prev);
                *ms = ms.min(t.elapsed().as_secs_f64() * 1e3);
                let (n, w) = score(p, &a);
                *pairs = n as i64 - exact.0 as i64;
                *gap = if exact.1 > 0.0 {
                    (exact.1 - w) / exact.1 * 100.0
                } else {
                    0.0
                };
            }
        }
        out.push(row);
    }
    Ok(out)
}

/// Every point's plans and matchings alone.
#[derive(Debug, Serialize)]
struct CsReport {
    plans: Vec<CsPoint>,
    matchings: Vec<MatchPoint>,
}

/// Runs every point with each matching algorithm and prints a table (or JSON); then every
/// matching algorithm alone.
pub fn bench_cs(points: &[(u64, u32)], licences: u16, repeat: u32, json: bool) -> Result<()> {
    let mut out = Vec::new();
    let mut alone = Vec::new();
    for &(jobs, machines) in points {
        for m in KINDS {
            let p = measure(m, jobs, machines, licences, repeat, 1)?;
            eprintln!(
                "gridsim bench --cs: {} jobs, {} machines, {}: first {:.2} ms, replan {:.2} ms",
                jobs, machines, p.matching, p.first_ms, p.replan_ms
            );
            out.push(p);
        }
        for p in measure_matchings(jobs, machines, licences, repeat, 1)? {
            eprintln!(
                "gridsim bench --cs: {} jobs, {} machines, {} alone: first {:.2} ms, replan {:.2} ms",
                jobs, machines, p.matching, p.first_ms, p.replan_ms
            );
            alone.push(p);
        }
    }
    if json {
        let report = CsReport {
            plans: out,
            matchings: alone,
        };
        say!("{}", serde_json::to_string_pretty(&report)?);
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
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_header(vec![
        "jobs",
        "machines",
        "matching",
        "first (ms)",
        "first: pairs vs MFS",
        "first: weight gap vs MFS %",
        "replan (ms)",
        "replan: pairs vs MFS",
        "replan: weight gap vs MFS %",
    ]);
    for p in &alone {
        t.add_row(vec![
            p.jobs.to_string(),
            p.machines.to_string(),
            p.matching.clone(),
            format!("{:.2}", p.first_ms),
            format!("{:+}", p.first_pairs),
            format!("{:.4}", p.first_gap_pct),
            format!("{:.2}", p.replan_ms),
            format!("{:+}", p.replan_pairs),
            format!("{:.4}", p.replan_gap_pct),
        ]);
    }
    say!(
        "The matching alone on the first plan's matrix and on the first replan's (MFS's plan \
         running, its last started job ended); best of {repeat}; IMFS is the thesis', IMFS-warm ours"
    );
    say!("{t}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_point_plans_and_replans_with_every_matching() {
        for m in KINDS {
            let p = measure(m, 40, 10, 5, 1, 3).unwrap();
            // 40 queued jobs, 10 idle machines: the first plan fills machines (at most one job
            // each, no space sharing) and starts at least one job.
            assert!(p.started >= 1 && p.started <= 10, "{p:?}");
            assert!(p.first_ms >= 0.0 && p.replan_ms >= 0.0);
        }
    }

    #[test]
    fn the_matchings_alone_are_compared_with_mfs() {
        let ps = measure_matchings(40, 10, 5, 1, 3).unwrap();
        assert_eq!(ps.len(), MATCHERS.len());
        for p in &ps {
            // The exact algorithms match as many pairs as MFS; nothing beats MFS's weight at
            // MFS's cardinality.
            if p.matching != "MIS" {
                assert_eq!((p.first_pairs, p.replan_pairs), (0, 0), "{p:?}");
            }
            assert!(p.first_pairs <= 0 && p.replan_pairs <= 0, "{p:?}");
            if p.matching == "MFS" || p.matching == "IMFS" {
                assert!(p.first_gap_pct.abs() < 1e-6, "{p:?}");
            }
        }
    }
}
