//! Grid simulation tests: multi-site starts and the overhead, BestFit, constraints, the adaptive
//! rule, local processing, capacity invariants, and the equivalence of pooled multi-site at p = 0 with
//! one machine of the summed size (the reference EASY engine).

use super::*;
use crate::engine::{Batching, EngineOptions, Hooks, simulate};
use gridsched_core::metrics::JobRecord;
use gridsched_core::model::MachineId;
use gridsched_core::policy::{PolicyConfig, PolicyKind};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn job(id: u64, submit: i64, procs: u32, est: i64, run: i64) -> Job {
    Job::new(id, submit, procs, est, run)
}

fn cfg(scenario: Scenario, p: u32) -> GridConfig {
    GridConfig {
        scenario,
        overhead_pct: p,
        ..Default::default()
    }
}

fn check_capacity(sizes: &[u32], recs: &[GridRecord]) {
    let mut events: Vec<(i64, i64, usize)> = Vec::new();
    for r in recs {
        for &(m, n) in &r.parts {
            events.push((r.start, i64::from(n), m));
            events.push((r.end, -i64::from(n), m));
        }
        let used: u32 = r.parts.iter().map(|p| p.1).sum();
        assert_eq!(used, r.width, "fragments cover the width exactly");
        assert_eq!(r.fragments, r.parts.len());
    }
    // Ends before starts at the same instant.
    events.sort_by_key(|e| (e.0, e.1));
    let mut used = vec![0i64; sizes.len()];
    for (t, d, m) in events {
        used[m] += d;
        assert!(
            used[m] <= i64::from(sizes[m]),
            "machine {m} oversubscribed at {t}"
        );
    }
}

#[test]
fn a_split_job_starts_all_fragments_at_once_and_is_stretched_once() {
    let jobs = vec![job(1, 0, 6, 100, 80), job(2, 0, 3, 50, 50)];
    let (rep, recs) = simulate_grid(&[4, 4], &cfg(Scenario::MultiSite, 50), &jobs, false).unwrap();
    // Job 1 takes 4 + 2 nodes (descending free, ties to the lowest index), 80 s × 1.5 = 120 s.
    let r1 = recs.iter().find(|r| r.idx == 0).unwrap();
    assert_eq!(r1.parts, vec![(0, 4), (1, 2)]);
    assert_eq!((r1.start, r1.end), (0, 120));
    // Job 2 (3 nodes) does not fit the 2 free nodes: it waits for job 1 (estimate 150 s).
    let r2 = recs.iter().find(|r| r.idx == 1).unwrap();
    assert_eq!((r2.start, r2.end, r2.fragments), (120, 170, 1));
    assert_eq!(rep.multi_site_jobs, 1);
    // Area share: 6·80 of 6·80 + 3·50.
    assert!((rep.multi_site_area_pct - 100.0 * 480.0 / 630.0).abs() < 1e-9);
    // Job sharing cannot split: the 6-wide job is cut to the largest machine (two jobs of 4 and 2).
    let (rep, recs) = simulate_grid(&[4, 4], &cfg(Scenario::JobSharing, 50), &jobs, false).unwrap();
    assert_eq!(rep.jobs, 3);
    assert!(
        recs.iter()
            .all(|r| r.fragments == 1 && r.end - r.start <= 80)
    );
}

#[test]
fn bestfit_takes_the_machine_left_with_fewest_free_nodes() {
    let jobs = vec![job(1, 0, 5, 100, 100), job(2, 1, 3, 100, 100)];
    let (_, recs) = simulate_grid(&[8, 6, 4], &cfg(Scenario::JobSharing, 0), &jobs, false).unwrap();
    assert_eq!(
        recs[0].parts,
        vec![(1, 5)],
        "5 on the 6-node machine leaves 1"
    );
    assert_eq!(
        recs[1].parts,
        vec![(2, 3)],
        "3 on the 4-node machine leaves 1"
    );
}

#[test]
fn lower_bound_and_fragment_limits() {
    // 2 × 64 nodes, one 64-node job running: an 8-wide job may not split with LB 8.
    let sizes = [64, 64];
    let jobs = vec![
        job(1, 0, 60, 1_000, 1_000),
        job(2, 0, 60, 1_000, 1_000),
        job(3, 1, 8, 10, 10),
    ];
    let c = GridConfig {
        lower_bound: 8,
        ..cfg(Scenario::MultiSite, 10)
    };
    let (_, recs) = simulate_grid(&sizes, &c, &jobs, false).unwrap();
    let r3 = recs.iter().find(|r| r.idx == 2).unwrap();
    assert_eq!(
        (r3.start, r3.fragments),
        (1_000, 1),
        "waits for one machine"
    );
    let (_, recs) = simulate_grid(&sizes, &cfg(Scenario::MultiSite, 10), &jobs, false).unwrap();
    let r3 = recs.iter().find(|r| r.idx == 2).unwrap();
    assert_eq!(
        (r3.start, r3.fragments),
        (1, 2),
        "without the bound it splits 4 + 4"
    );
    // Limited fragments: 100 nodes may use 2 fragments, 8 nodes only 1.
    let lim = GridConfig {
        fragments: Fragments::Limited,
        ..cfg(Scenario::MultiSite, 10)
    };
    let (_, recs) = simulate_grid(&sizes, &lim, &jobs, false).unwrap();
    assert_eq!(recs.iter().find(|r| r.idx == 2).unwrap().fragments, 1);
    // A job no allocation can ever hold is refused, not left waiting forever.
    let (rep, _) = simulate_grid(&[64; 10], &lim, &[job(1, 0, 600, 10, 10)], false).unwrap();
    assert_eq!((rep.refused, rep.jobs), (1, 0));
}

#[test]
fn the_adaptive_rule_waits_when_waiting_ends_earlier() {
    // Two 8-node machines; job 1 (6 nodes) runs until 100 on machine 0, job 2 (6 nodes) until 1000
    // on machine 1. Job 3 (4 nodes, 500 s) at t = 1: split now (2 + 2) ends at 1 + 500·(1 + p);
    // waiting for machine 0 ends at 100 + 500 = 600.
    let jobs = vec![
        job(1, 0, 6, 100, 100),
        job(2, 0, 6, 1_000, 1_000),
        job(3, 1, 4, 500, 500),
    ];
    let adaptive = |p| GridConfig {
        adaptive: true,
        ..cfg(Scenario::MultiSite, p)
    };
    // p = 10 %: 1 + 550 = 551 < 600: split.
    let (_, recs) = simulate_grid(&[8, 8], &adaptive(10), &jobs, false).unwrap();
    let r = recs.iter().find(|r| r.idx == 2).unwrap();
    assert_eq!((r.start, r.end, r.fragments), (1, 551, 2));
    // p = 100 %: 1 + 1000 > 600: wait, then run on one machine.
    let (_, recs) = simulate_grid(&[8, 8], &adaptive(100), &jobs, false).unwrap();
    let r = recs.iter().find(|r| r.idx == 2).unwrap();
    assert_eq!((r.start, r.end, r.fragments), (100, 600, 1));
    // The non-adaptive scheduler splits regardless.
    let (_, recs) = simulate_grid(&[8, 8], &cfg(Scenario::MultiSite, 100), &jobs, false).unwrap();
    assert_eq!(recs.iter().find(|r| r.idx == 2).unwrap().fragments, 2);
}

#[test]
fn local_processing_keeps_jobs_home_and_splits_to_the_site() {
    // Round robin: jobs 0, 2 at site 0 (4 nodes), 1, 3 at site 1 (8 nodes).
    let jobs = vec![
        job(1, 0, 6, 10, 10),
        job(2, 0, 8, 10, 10),
        job(3, 0, 2, 10, 10),
        job(4, 0, 2, 10, 10),
    ];
    let (rep, recs) = simulate_grid(&[4, 8], &cfg(Scenario::Local, 0), &jobs, false).unwrap();
    assert_eq!(
        rep.jobs, 5,
        "the 6-wide job at the 4-node site became 4 + 2"
    );
    for r in &recs {
        assert!(
            r.parts.iter().all(|p| p.0 == r.site),
            "each site runs its own jobs"
        );
    }
    let site0: u32 = recs.iter().filter(|r| r.site == 0).map(|r| r.width).sum();
    assert_eq!(site0, 6 + 2);
}

fn random_jobs(rng: &mut ChaCha8Rng, n: u64, max_width: u32) -> Vec<Job> {
    let mut t = 0;
    (1..=n)
        .map(|id| {
            t += rng.random_range(0..30);
            let est = rng.random_range(1..=300);
            let run = rng.random_range(1..=est);
            job(id, t, rng.random_range(1..=max_width), est, run)
        })
        .collect()
}

#[test]
fn capacity_holds_and_every_job_ends_in_every_scenario() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for c in MachineConfig::presets() {
        let jobs = random_jobs(&mut rng, 300, 512);
        for scenario in [Scenario::Local, Scenario::JobSharing, Scenario::MultiSite] {
            for (adaptive, lb, frag) in [
                (false, 0, Fragments::Unlimited),
                (false, 64, Fragments::Limited),
                (true, 0, Fragments::Unlimited),
            ] {
                let g = GridConfig {
                    scenario,
                    overhead_pct: 40,
                    lower_bound: lb,
                    fragments: frag,
                    adaptive,
                    ..Default::default()
                };
                let (rep, recs) = simulate_grid(&c.sizes, &g, &jobs, false).unwrap();
                check_capacity(&c.sizes, &recs);
                let work: u64 = recs.iter().map(|r| u64::from(r.width)).sum::<u64>()
                    + if rep.refused > 0 { 1 } else { 0 };
                assert!(work > 0);
                assert_eq!(rep.jobs as usize, recs.len());
                for r in &recs {
                    let stretched = (r.run * 140 + 99) / 100;
                    let len = r.end - r.start;
                    if r.fragments > 1 {
                        assert_eq!(
                            len, stretched,
                            "{} {:?}: stretched exactly once",
                            c.name, scenario
                        );
                    } else {
                        assert_eq!(len, r.run);
                    }
                }
            }
        }
    }
}

/// Start times `(job id, start)`, sorted by id.
type Starts = Vec<(u64, i64)>;

/// Start times `(id, start)` of `jobs` (ids 1..=n in order) under multi-site at p = 0 on `sizes`
/// (as printed, or in the pooled variant) and under the reference EASY engine on one machine of
/// their summed size.
fn grid_and_one_machine_starts(sizes: &[u32], jobs: &[Job], pooled: bool) -> (Starts, Starts) {
    let c = GridConfig {
        pooled_at_zero: pooled,
        ..cfg(Scenario::MultiSite, 0)
    };
    let (_, recs) = simulate_grid(sizes, &c, jobs, false).unwrap();
    let mut grid_starts: Starts = recs.iter().map(|r| (r.idx as u64 + 1, r.start)).collect();
    grid_starts.sort_unstable();
    let total: u32 = sizes.iter().sum();
    let mut policy = PolicyConfig::new(PolicyKind::Easy).build_single(MachineId(0), total);
    let mut one: Vec<(u64, i64)> = Vec::new();
    let mut rec = |r: &JobRecord| one.push((r.id.0, r.start));
    let opts = EngineOptions {
        batching: Batching::PerTimestamp,
        ..Default::default()
    };
    simulate(
        policy.as_mut(),
        &[total],
        jobs.iter().cloned().map(Ok::<_, std::convert::Infallible>),
        &opts,
        Hooks {
            record: Some(&mut rec),
            ..Default::default()
        },
    )
    .unwrap();
    one.sort_unstable();
    (grid_starts, one)
}

#[test]
fn pooled_multi_site_at_zero_overhead_equals_one_machine_of_the_summed_size() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut differ = 0;
    for c in ["m128", "m64-8", "m256-5", "m64"] {
        let sizes = MachineConfig::preset(c).unwrap().sizes;
        let jobs = random_jobs(&mut rng, 400, 300);
        let (grid, one) = grid_and_one_machine_starts(&sizes, &jobs, true);
        assert_eq!(grid, one, "{c}");
        // As printed (no pooling rule), the grid is not one machine: a backfill candidate may
        // not split, and a tie keeps the single site.
        let (printed, _) = grid_and_one_machine_starts(&sizes, &jobs, false);
        differ += usize::from(printed != one);
    }
    assert!(differ > 0, "the pooled variant must change something");
    // Widths resized from a 100-node machine by the workload crate (×5.12, up to the whole grid,
    // many wider than m384's largest machine), as the `multisite` experiment does with KTH.
    let mut jobs = random_jobs(&mut rng, 400, 100);
    gridsched_workload::scale::resize_widths(&mut jobs, 100, 512).unwrap();
    assert!(jobs.iter().any(|j| j.procs > 384) && jobs.iter().any(|j| j.procs == 512));
    for c in ["m384", "m128"] {
        let sizes = MachineConfig::preset(c).unwrap().sizes;
        let (grid, one) = grid_and_one_machine_starts(&sizes, &jobs, true);
        assert_eq!(grid, one, "{c}, resized widths");
    }
}

/// The `multisite` experiment's own KTH workload (an extract, widths resized to 512 nodes by the
/// workload crate): pooled multi-site at p = 0 on m128 starts every job when EASY on 512 nodes
/// does.
#[test]
fn the_kth_grid_workload_pooled_at_zero_overhead_equals_m512() {
    let Some(path) = gridsched_workload::traces::for_test("KTH-SP2-1996-2.1-cln.swf.gz") else {
        return;
    };
    let w =
        crate::experiment::multisite::trace_workload(&path.to_string_lossy(), 10_000, 1_500, 512)
            .unwrap();
    assert_eq!(w.jobs.len(), 1_500);
    assert!(
        w.jobs.iter().any(|j| j.procs > 128),
        "some jobs need several machines"
    );
    let sizes = MachineConfig::preset("m128").unwrap().sizes;
    let (grid, one) = grid_and_one_machine_starts(&sizes, &w.jobs, true);
    assert_eq!(grid, one);
}
