//! Worked examples of the gang schedulers (Zhang et al., §5–§6): each phase on a small matrix,
//! the clock rule, BGS's per-row reservations, the migration options and the Q budget, and whole
//! runs through the cluster runner (alternating slices, the context switch, MPL = 1 as space
//! sharing against the FCFS and conservative policies job by job).

use super::backfill::{RowProfile, RowReservation, schedule_backfill};
use super::matrix::{Cols, Matrix};
use super::migration::{self, cost_option1, cost_option2};
use super::phases::{self, Clock, JobOrder};
use super::*;
use crate::model::{ClusterId, Platform};
use crate::policy::test_util::ScheduleInto;
use crate::policy::{PolicyConfig, PolicyKind};
use crate::runner::{ClusterRunner, Effect, Input, Launch, RunnerConfig};
use rand::{RngExt, SeedableRng};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::collections::HashMap;

fn cols(n: u32, c: &[u32]) -> Cols {
    Cols::of(n, c)
}

fn range(n: u32, from: u32, to: u32) -> Cols {
    Cols::of(n, &(from..to).collect::<Vec<_>>())
}

#[test]
fn clean_removes_every_replica_and_fill_puts_them_back() {
    let mut m = Matrix::new(3, 8);
    m.place(JobId(1), 0, range(8, 0, 4), 0);
    m.place(JobId(2), 1, range(8, 4, 8), 1);
    m.place(JobId(3), 2, range(8, 0, 2), 2);
    // FillMatrix: job 1 fits row 1 (cols 0-3 free); job 2 row 0 and then row 2; job 3 nowhere.
    let made = phases::fill(&mut m);
    assert_eq!(
        made,
        vec![(JobId(1), 1), (JobId(2), 0), (JobId(2), 2)],
        "one new replica per job per pass, in order of entering the matrix"
    );
    assert_eq!(m.render(), vec!["11112222", "11112222", "33..2222"]);
    assert_eq!(m.check(), Ok(()));
    phases::clean(&mut m);
    assert_eq!(m.render(), vec!["1111....", "....2222", "33......"]);
}

#[test]
fn compact_moves_jobs_into_more_populated_rows_on_their_columns() {
    let mut m = Matrix::new(3, 8);
    m.place(JobId(1), 0, range(8, 0, 4), 0);
    m.place(JobId(2), 1, range(8, 4, 6), 1);
    m.place(JobId(3), 2, range(8, 0, 2), 2);
    let moved = phases::compact(&mut m, JobOrder::Start, &|_, _, _| true, &mut |_, _, _| {
        true
    });
    // Row 1 (2 columns, first of the least populated) gives job 2 to row 0; job 3's columns are
    // taken in row 0, and row 1 is now empty (less populated than row 2: skipped).
    assert_eq!(moved, vec![JobId(2)]);
    assert_eq!(m.render(), vec!["111122..", "........", "33......"]);
    assert!(!m.live(1));
    // The clock rule can forbid the move.
    let mut m = Matrix::new(3, 8);
    m.place(JobId(1), 0, range(8, 0, 4), 0);
    m.place(JobId(2), 1, range(8, 4, 6), 1);
    let moved = phases::compact(
        &mut m,
        JobOrder::Start,
        &|_, to, _| to != 0,
        &mut |_, _, _| true,
    );
    assert!(moved.is_empty());
}

#[test]
fn the_clock_rule_allows_only_rows_that_come_before_the_last_run_comes_again() {
    let c = Clock { cur: 1, mpl: 5 };
    // Last ran at row 3 (two steps ahead): rows 1, 2, 3 are legal.
    let legal: Vec<usize> = (0..5).filter(|&r| c.legal(r, 3, false)).collect();
    assert_eq!(legal, vec![1, 2, 3]);
    // Last ran at row 0 (four steps ahead): every row.
    assert_eq!((0..5).filter(|&r| c.legal(r, 0, false)).count(), 5);
    // Running now: every row; never run with home 1 (the current row): only row 1.
    assert_eq!((0..5).filter(|&r| c.legal(r, 1, true)).count(), 5);
    let legal: Vec<usize> = (0..5).filter(|&r| c.legal(r, 1, false)).collect();
    assert_eq!(legal, vec![1]);
}

#[test]
fn gs_schedule_takes_the_best_fit_row_and_stops_at_the_first_job_that_does_not_fit() {
    let mut m = Matrix::new(2, 8);
    m.place(JobId(1), 0, range(8, 0, 5), 0);
    let q = [(JobId(2), 3), (JobId(3), 6), (JobId(4), 4), (JobId(5), 1)];
    let placed = phases::schedule_fcfs(&mut m, q, 10);
    // Job 2 fits row 0 exactly (3 free, the best fit); job 3 takes row 1; job 4 fits nowhere
    // and job 5 waits behind it (no backfilling).
    assert_eq!(placed, vec![JobId(2), JobId(3)]);
    assert_eq!(m.render(), vec!["11111222", "333333.."]);
}

#[test]
fn a_row_profile_finds_the_earliest_window_and_takes_it() {
    let mut p = RowProfile::new(100, 8, &[(300, 4), (500, 2)]);
    assert_eq!(p.min_free(100, 300), 2);
    assert_eq!(p.earliest(4, 100), 300);
    assert_eq!(p.earliest(2, 10_000), 100);
    p.take(300, 300, 4);
    // [300, 500): 6 − 4 = 2 free; [500, 600): 4; from 600: 8.
    assert_eq!(p.min_free(300, 500), 2);
    assert_eq!(p.min_free(500, 600), 4);
    assert_eq!(p.earliest(5, 50), 600);
}

#[test]
fn bgs_backfills_every_row_and_reserves_where_a_job_starts_earliest() {
    // Two rows of 8 columns; row 0: job 1 (6 columns) ends at 400; row 1: job 2 (4) ends at 900.
    let mut m = Matrix::new(2, 8);
    m.place(JobId(1), 0, range(8, 0, 6), 0);
    m.place(JobId(2), 1, range(8, 0, 4), 0);
    let ends = |id: JobId| if id == JobId(1) { 400 } else { 900 };
    // Job 3 (8 columns, 500 s) fits no row now: row 0 frees at 400, row 1 at 900 → row 0 at 400.
    // Job 4 (2 columns, 300 s) fits row 0 now (ends at 300, before the reservation): best fit.
    // Job 5 (4 columns, 1000 s) fits row 1 now (4 free, nothing reserved there).
    // Job 6 (2 columns, 200 s): row 0 is full, row 1 full: reserved in row 0 at 300? No — row 0
    // has 2 free from 300 to 400 only if job 4 ended (300): [300, 400) has 2 free, 200 s do not
    // fit before job 3's reservation at 400; so the earliest is row 0 at 900 (after job 3) or
    // row 1 at 900: both 900, the lower index wins.
    let q = [
        (JobId(3), 8, 500),
        (JobId(4), 2, 300),
        (JobId(5), 4, 1000),
        (JobId(6), 2, 200),
    ];
    let (placed, res) = schedule_backfill(&mut m, &q, 2, 0, &ends);
    assert_eq!(placed, vec![JobId(4), JobId(5)]);
    assert_eq!(
        res,
        vec![
            RowReservation {
                job: JobId(3),
                row: 0,
                start: 400,
                end: 900,
                procs: 8
            },
            RowReservation {
                job: JobId(6),
                row: 0,
                start: 900,
                end: 1100,
                procs: 2
            },
        ]
    );
    assert_eq!(m.render(), vec!["11111144", "22225555"]);
}

#[test]
fn migration_costs_follow_equations_4_and_5() {
    // C = 10 s, |A| = 4, blockers 2 tasks: option 1 = 5·4 + 10·2 = 40, option 2 = 10·4 + 5·2 = 50.
    assert_eq!(cost_option1(10, 4, 2), 40);
    assert_eq!(cost_option2(10, 4, 2), 50);
    // With |A| = 1 and 4 blocker tasks option 2 is cheaper: 10 + 20 = 30 against 5 + 40 = 45.
    assert_eq!(cost_option1(10, 1, 4), 45);
    assert_eq!(cost_option2(10, 1, 4), 30);
}

/// Row 0: job 1 on columns 0-3 and job 2 on 4-5 (6 used); row 1: job 3 on columns 4-5 (2 used).
/// Job 3 cannot move to row 0 on its columns; migration can.
fn collapse_case() -> Matrix {
    let mut m = Matrix::new(2, 8);
    m.place(JobId(1), 0, range(8, 0, 4), 0);
    m.place(JobId(2), 0, range(8, 4, 6), 1);
    m.place(JobId(3), 1, range(8, 4, 6), 2);
    m
}

#[test]
fn collapse_with_migration_takes_the_cheaper_option() {
    // |A| = 2, S(A) = job 2 (2 tasks): option 1 costs C + 2C = 3C... (C/2)·2 + C·2 = 3C; option 2
    // costs 2C + C = 3C: a tie keeps A's columns (option 1): job 2 moves to columns 6-7.
    let mut m = collapse_case();
    let mv = migration::collapse(&mut m, u32::MAX, 10, &|_, _, _| true, &|_, _, _| true);
    assert_eq!(m.render(), vec!["11113322", "........"]);
    assert_eq!(
        mv,
        vec![migration::Migrated {
            tasks: 2,
            delays: vec![(JobId(3), 5, false), (JobId(2), 10, true)]
        }]
    );
    // Job 2 also in row 2 (a replica): option 1 is not feasible (G-A14); option 2 moves job 3
    // to the free columns 6-7 of row 0.
    let mut m = Matrix::new(3, 8);
    m.place(JobId(1), 0, range(8, 0, 4), 0);
    m.place(JobId(2), 0, range(8, 4, 6), 1);
    m.place(JobId(3), 1, range(8, 4, 6), 2);
    m.place(JobId(4), 2, range(8, 0, 1), 3);
    m.replicate(JobId(2), 2);
    let mv = migration::collapse(&mut m, u32::MAX, 10, &|_, _, _| true, &|_, _, _| true);
    assert_eq!(m.render(), vec!["11112233", "........", "4...22.."]);
    assert_eq!(
        mv[0].delays,
        vec![(JobId(3), 10, true), (JobId(2), 5, false)]
    );
    // A budget below the tasks to move forbids both options.
    let mut m = collapse_case();
    let mv = migration::collapse(&mut m, 1, 10, &|_, _, _| true, &|_, _, _| true);
    assert!(mv.is_empty());
    assert_eq!(m.render(), vec!["111122..", "....33.."]);
}

#[test]
fn option_two_is_taken_when_it_is_cheaper() {
    // A = job 3 (1 column, col 0) in row 1; row 0: job 1 on columns 0-3 (4 tasks) and 4 free.
    // Option 1 moves 4 tasks: 5 + 40 = 45; option 2 moves A: 10 + 20 = 30.
    let mut m = Matrix::new(2, 8);
    m.place(JobId(1), 0, range(8, 0, 4), 0);
    m.place(JobId(3), 1, cols(8, &[0]), 1);
    let mv = migration::collapse(&mut m, u32::MAX, 10, &|_, _, _| true, &|_, _, _| true);
    assert_eq!(m.render(), vec!["11113...", "........"]);
    assert_eq!(mv[0].tasks, 1);
    assert_eq!(
        mv[0].delays,
        vec![(JobId(3), 10, true), (JobId(1), 5, false)]
    );
}

#[test]
fn fill_with_migration_moves_blockers_aside_within_the_budget() {
    // Row 0: job 1 on 0-3; row 1: job 2 on 0-1. Job 1 cannot be replicated into row 1 (job 2
    // blocks columns 0-1) unless job 2 moves to columns 4-5.
    let setup = || {
        let mut m = Matrix::new(2, 8);
        m.place(JobId(1), 0, range(8, 0, 4), 0);
        m.place(JobId(2), 1, range(8, 0, 2), 1);
        m
    };
    let mut m = setup();
    assert!(phases::fill(&mut m).is_empty(), "each blocks the other");
    assert_eq!(m.render(), vec!["1111....", "22......"]);
    let mv = migration::fill(&mut m, 1, 10);
    assert!(mv.is_empty(), "Q = 1 < 2 tasks");
    let mut m = setup();
    let mv = migration::fill(&mut m, 2, 10);
    assert_eq!(mv.len(), 1);
    assert_eq!(mv[0].delays, vec![(JobId(2), 10, true)]);
    // Job 2 then fits row 0 on its new columns (an ordinary replica).
    assert_eq!(m.render(), vec!["111122..", "111122.."]);
}

/// A minimal event loop over one machine: ends, then submissions, then a pass, at every instant
/// (the platform engine's order). Returns (job, first start, end) by job id.
fn simulate(
    kind: PolicyKind,
    opts: GangOptions,
    procs: u32,
    jobs: &[Job],
) -> Vec<(u64, Time, Time)> {
    let p = Platform::single_machine(procs);
    let cfg = PolicyConfig {
        gang: opts,
        ..PolicyConfig::new(kind)
    };
    let policy = cfg.build(&p, ClusterId(0)).unwrap();
    let mut r = ClusterRunner::new(&p, ClusterId(0), policy, RunnerConfig::default()).unwrap();
    let mut ends: BinaryHeap<Reverse<(Time, u64, u64)>> = BinaryHeap::new();
    let mut generation: HashMap<u64, u64> = HashMap::new();
    let mut wake: Option<Time> = None;
    let mut next = 0;
    let mut out = Vec::new();
    let mut seq = 0;
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
        let mut effects = Vec::new();
        while let Some(&Reverse((te, id, g))) = ends.peek() {
            if te != t {
                break;
            }
            ends.pop();
            if generation.get(&id) == Some(&g) {
                r.on(t, Input::Ended { job: JobId(id) }, &mut effects)
                    .unwrap();
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
            )
            .unwrap();
            next += 1;
        }
        r.on(t, Input::Pass, &mut effects).unwrap();
        for e in effects {
            match e {
                Effect::Start(s) => {
                    seq += 1;
                    generation.insert(s.job.0, seq);
                    ends.push(Reverse((t + s.run, s.job.0, seq)));
                }
                Effect::Suspend { job, .. } => {
                    generation.remove(&job.0);
                }
                Effect::Finished(f) => out.push((f.job.0, f.start, f.end)),
                Effect::Overrun { .. } => panic!("no job overruns"),
                Effect::Kill { .. } => panic!("gang scheduling kills nothing"),
                Effect::Dropped { .. } => panic!("no job is in a reservation"),
            }
        }
        wake = r.next_wakeup().filter(|&w| w > t);
    }
    assert!(r.is_empty(), "every job ends");
    out.sort_unstable();
    out
}

#[test]
fn two_machine_wide_jobs_alternate_slices_with_mpl_2() {
    let opts = GangOptions {
        mpl: 2,
        ..GangOptions::default()
    };
    let jobs = [Job::new(1, 0, 4, 600, 500), Job::new(2, 0, 4, 400, 300)];
    // A runs [0,200), B [200,400), A [400,600), B [600,700) and ends; A resumes at once for its
    // last 100 s.
    assert_eq!(
        simulate(PolicyKind::Gs, opts, 4, &jobs),
        vec![(1, 0, 800), (2, 200, 700)]
    );
    // A 5 % context switch (10 s) at every resumption: A does 190 s in [400,600), B needs
    // 10 + 100 s from 600, A 10 + 110 s from 710.
    let opts = GangOptions {
        context_switch_pct: 5,
        ..opts
    };
    assert_eq!(
        simulate(PolicyKind::Gs, opts, 4, &jobs),
        vec![(1, 0, 830), (2, 200, 710)]
    );
    // Discrete invocation: B's end at 700 leaves its slice idle until 800.
    let opts = GangOptions {
        invocation: Invocation::Discrete,
        context_switch_pct: 0,
        ..opts
    };
    assert_eq!(
        simulate(PolicyKind::Gs, opts, 4, &jobs),
        vec![(1, 0, 900), (2, 200, 700)]
    );
}

fn random_jobs(seed: u64, n: usize, procs: u32) -> Vec<Job> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut t = 0;
    (0..n)
        .map(|i| {
            t += rng.random_range(0..120);
            let w = if rng.random_bool(0.3) {
                rng.random_range(1..=procs)
            } else {
                rng.random_range(1..=4)
            };
            let est = rng.random_range(10..=2_000);
            let run = rng.random_range(1..=est);
            Job::new(i as u64 + 1, t, w, est, run)
        })
        .collect()
}

/// MPL = 1 is space sharing: GS-1 starts every job exactly when the strict FCFS policy does, and
/// BGS-1 exactly when the planning policy in arrival order does (a full plan rebuilt in FCFS order
/// at every event, G-A6). The `conservative` policy differs: it re-places each waiting job around
/// the reservations of the later ones, which it keeps (its plans only move earlier), so a hole one
/// job could take in a rebuild may stay reserved for a later one; the test shows the difference
/// exists and that both never break a job.
#[test]
fn mpl_1_is_space_sharing_job_by_job() {
    let one = GangOptions {
        mpl: 1,
        ..GangOptions::default()
    };
    for seed in 0..4 {
        let jobs = random_jobs(seed, 300, 16);
        let gs = simulate(PolicyKind::Gs, one, 16, &jobs);
        let fcfs = simulate_classic(PolicyKind::Fcfs, 16, &jobs);
        assert_eq!(gs, fcfs, "seed {seed}: GS-1 = FCFS");
        let bgs = simulate(PolicyKind::Bgs, one, 16, &jobs);
        let plan = simulate_classic(PolicyKind::PlanningFcfs, 16, &jobs);
        assert_eq!(bgs, plan, "seed {seed}: BGS-1 = planning in FCFS order");
        let cons = simulate_classic(PolicyKind::Conservative, 16, &jobs);
        assert_ne!(bgs, cons, "seed {seed}: compression is not a rebuild");
        for (id, s, e) in bgs.iter().chain(&cons) {
            let j = &jobs[*id as usize - 1];
            assert_eq!(e - s, j.runtime.unwrap(), "job {id} runs without a break");
        }
    }
}

fn simulate_classic(kind: PolicyKind, procs: u32, jobs: &[Job]) -> Vec<(u64, Time, Time)> {
    // A classic policy never suspends or wakes up for slices: the same loop drives it.
    simulate(kind, GangOptions::default(), procs, jobs)
}

#[test]
fn every_variant_finishes_a_random_workload_without_oversubscribing() {
    for kind in [
        PolicyKind::Gs,
        PolicyKind::Bgs,
        PolicyKind::Mgs,
        PolicyKind::Mbgs,
    ] {
        for (mpl, cs, q, cost) in [(3, 0, None, 0), (5, 2, Some(8), 10)] {
            let opts = GangOptions {
                mpl,
                context_switch_pct: cs,
                migration_tasks: q,
                migration_cost: cost,
                ..GangOptions::default()
            };
            let jobs = random_jobs(9, 200, 16);
            let out = simulate(kind, opts, 16, &jobs);
            assert_eq!(out.len(), jobs.len(), "{kind}");
            for (id, s, e) in &out {
                let j = &jobs[*id as usize - 1];
                assert!(
                    *s >= j.submit && e - s >= j.runtime.unwrap(),
                    "{kind} job {id}"
                );
            }
        }
    }
}

#[test]
fn bad_options_are_refused_naming_the_key() {
    type Spoil = fn(&mut GangOptions);
    let cases: [(Spoil, &str); 6] = [
        (|g| g.mpl = 0, "gang.mpl"),
        (|g| g.slice = 0, "gang.slice"),
        (|g| g.context_switch_pct = 100, "gang.context_switch_pct"),
        (|g| g.migration_cost = -1, "gang.migration_cost"),
        (|g| g.rho_critical = 0.0, "gang.rho_critical"),
        (|g| g.rho_critical = 1.5, "gang.rho_critical"),
    ];
    for (spoil, key) in cases {
        let mut opts = GangOptions::default();
        spoil(&mut opts);
        let cfg = PolicyConfig {
            gang: opts,
            ..PolicyConfig::new(PolicyKind::Bgs)
        };
        let e = cfg
            .build(&Platform::single_machine(8), ClusterId(0))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with(key), "{e}");
    }
    let c: PolicyConfig =
        serde_json::from_str(r#"{"policy":"mbgs","gang":{"mpl":3,"migration_tasks":64}}"#).unwrap();
    assert_eq!((c.gang.mpl, c.gang.migration_tasks), (3, Some(64)));
    let e = serde_json::from_str::<PolicyConfig>(r#"{"policy":"gs","gang":{"mlp":3}}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("mlp"), "{e}");
    let _ = Launch::First;
}

/// The adaptive variant's load measure, worked out: a window of 5 slices of 100 s (500 s) over
/// 10 processors.
#[test]
fn the_load_window_is_the_utilization_of_the_last_slices() {
    let mut w = LoadWindow::new(LOAD_WINDOW_SLICES * 100, 10);
    w.record(0, 100, 10); // 1,000 processor-seconds
    w.record(100, 300, 5); // 1,000
    assert_eq!(w.utilization(300), 0.4); // 2,000 / 5,000 (the time before 0 counts as idle)
    w.record(300, 400, 10); // 1,000
    assert_eq!(w.utilization(400), 0.6);
    // At 700 the window is [200, 700): 5 × 100 of the second interval and the third.
    assert_eq!(w.utilization(700), 0.3);
    assert_eq!(w.held.len(), 2, "the first interval left the window");
}

/// `bgs-adaptive` with ρ_critical = 0.5, MPL 2, T = 100 s on 10 processors: one job holds the
/// whole machine from 0, so the utilization of the last 500 s is 0.2 at 100, 0.4 at 200, 0.5 at
/// 250 (at the threshold: still BGS) and 0.6 at 300 (above: BF). A job of 5 processors arriving at
/// 300 then waits for row 0 (a reservation at the first job's predicted end, 300 + 1 × 700 s
/// left of its estimate) instead of taking the empty row 1 as BGS does.
#[test]
fn the_adaptive_variant_switches_to_bf_above_the_critical_utilization() {
    let run = |rho_critical: f64| {
        let opts = GangOptions {
            mpl: 2,
            slice: 100,
            rho_critical,
            ..GangOptions::default()
        };
        let mut g = Gang::new(GangKind::ADAPTIVE, MachineId(0), 10, opts);
        let mut starts = Vec::new();
        g.submit(0, &Job::new(1, 0, 10, 1_000, 1_000)).unwrap();
        let mut modes = Vec::new();
        for t in [0, 100, 200, 250] {
            g.schedule_into(t, &mut starts);
            modes.push(g.bf_mode);
        }
        g.submit(300, &Job::new(2, 300, 5, 100, 100)).unwrap();
        g.schedule_into(300, &mut starts);
        modes.push(g.bf_mode);
        (
            modes,
            g.waiting_len(),
            g.reservations(),
            g.gang_counters().bf_passes,
        )
    };
    let (modes, waiting, res, bf) = run(0.5);
    assert_eq!(modes, vec![false, false, false, false, true]);
    assert_eq!((waiting, bf), (1, 1));
    assert_eq!(
        (res[0].job, res[0].start, res[0].end),
        (JobId(2), 1_000, 1_100)
    );
    // Never above ρ_critical = 1: BGS places job 2 in row 1 at once.
    let (modes, waiting, res, bf) = run(1.0);
    assert_eq!(modes, vec![false; 5]);
    assert_eq!((waiting, res.len(), bf), (0, 0, 0));
}

/// With ρ_critical = 1 the adaptive variant never switches: it is BGS, job by job; with a low
/// threshold it still finishes every job.
#[test]
fn the_adaptive_variant_at_rho_critical_1_is_bgs() {
    let jobs = random_jobs(5, 300, 16);
    let bgs = simulate(PolicyKind::Bgs, GangOptions::default(), 16, &jobs);
    let adaptive = simulate(PolicyKind::BgsAdaptive, GangOptions::default(), 16, &jobs);
    assert_eq!(adaptive, bgs);
    let low = GangOptions {
        rho_critical: 0.3,
        ..GangOptions::default()
    };
    let out = simulate(PolicyKind::BgsAdaptive, low, 16, &jobs);
    assert_eq!(out.len(), jobs.len());
    assert_ne!(out, bgs, "a low threshold changes the schedule");
}
