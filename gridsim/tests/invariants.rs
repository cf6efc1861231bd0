//! Invariants of every policy under random workloads, checked through the engine (which itself
//! refuses any start that would oversubscribe the machine and any run that leaves jobs waiting):
//! every job ends exactly once, the machine is never oversubscribed (recomputed here from the
//! records), EASY's head reservation never moves later while the head waits (so no backfilled job
//! delays it), conservative backfilling never delays any planned start, and a run is
//! deterministic.

use gridsched_core::metrics::JobRecord;
use gridsched_core::model::{Job, JobId, Time};
use gridsched_core::policy::{
    BackfillOptions, PlanningOptions, Policy, PolicyConfig, PolicyKind, ReservationKind, ShadowCmp,
    ShadowMode, Start, SubmitPass,
};
use gridsim::{Batching, EngineOptions, Hooks, simulate};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;
use std::convert::Infallible;

const CAP: u32 = 32;

/// A bursty random workload: widths 1..=CAP (biased small), estimates 1..=500, actual run at
/// most the estimate (or sometimes more when `overruns`), submit times with many ties.
fn workload(seed: u64, n: usize, overruns: bool) -> Vec<Job> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut t: Time = 0;
    (0..n)
        .map(|i| {
            if rng.random_range(0..3) > 0 {
                t += rng.random_range(0..40);
            }
            let procs = if rng.random_bool(0.3) {
                rng.random_range(1..=CAP)
            } else {
                rng.random_range(1..=4)
            };
            let estimate = rng.random_range(1..=500);
            let mut run = rng.random_range(1..=estimate);
            if overruns && rng.random_bool(0.2) {
                run = estimate + rng.random_range(1..300);
            }
            Job::new(i as u64 + 1, t, procs, estimate, run)
        })
        .collect()
}

fn configs() -> Vec<PolicyConfig> {
    let mut v: Vec<PolicyConfig> = PolicyKind::single_machine()
        .iter()
        .map(|&k| PolicyConfig::new(k))
        .collect();
    let variants = [
        BackfillOptions {
            shadow: ShadowMode::Stale,
            ..Default::default()
        },
        BackfillOptions {
            shadow_cmp: ShadowCmp::Before,
            ..Default::default()
        },
        BackfillOptions {
            extra_procs: false,
            ..Default::default()
        },
        BackfillOptions {
            submit_pass: SubmitPass::IfFits,
            ..Default::default()
        },
    ];
    for b in variants {
        v.push(PolicyConfig {
            backfill: b,
            ..PolicyConfig::new(PolicyKind::Easy)
        });
    }
    for k in [PolicyKind::PlanningFcfs, PolicyKind::Dynp] {
        v.push(PolicyConfig {
            planning: PlanningOptions {
                backfilling: false,
                ..PlanningOptions::default()
            },
            ..PolicyConfig::new(k)
        });
    }
    v
}

struct Observed {
    records: Vec<JobRecord>,
    /// (time, job, reserved start) of every head / planned reservation after every pass.
    reservations: Vec<(Time, JobId, Time, ReservationKind)>,
}

fn run(cfg: PolicyConfig, jobs: &[Job], opts: EngineOptions) -> Observed {
    let mut policy = cfg.build_single(gridsched_core::model::MachineId(0), CAP);
    let mut records = Vec::new();
    let mut reservations = Vec::new();
    let mut on_record = |r: &JobRecord| records.push(*r);
    let mut on_pass = |now: Time, _starts: &[Start], p: &dyn Policy| {
        for r in p.reservations() {
            reservations.push((now, r.job, r.start, r.kind));
        }
    };
    let hooks = Hooks {
        record: Some(&mut on_record),
        pass: Some(&mut on_pass),
        progress: None,
        reservations: &[],
    };
    let report = simulate(
        policy.as_mut(),
        &[CAP],
        jobs.iter().cloned().map(Ok::<_, Infallible>),
        &opts,
        hooks,
    )
    .unwrap_or_else(|e| panic!("{}: {e}", cfg.policy));
    assert_eq!(report.stats.finished, jobs.len() as u64);
    Observed {
        records,
        reservations,
    }
}

fn check_common(cfg: &PolicyConfig, jobs: &[Job], obs: &Observed, kill: bool) {
    // Every job ends exactly once, after it started, with its own run time.
    let by_id: HashMap<JobId, &Job> = jobs.iter().map(|j| (j.id, j)).collect();
    assert_eq!(obs.records.len(), jobs.len());
    let mut seen = std::collections::HashSet::new();
    for r in &obs.records {
        assert!(
            seen.insert(r.id),
            "{}: job {} ended twice",
            cfg.policy,
            r.id
        );
        let j = by_id[&r.id];
        assert!(
            r.start >= j.submit,
            "{}: job {} started before its submission",
            cfg.policy,
            r.id
        );
        let actual = j.runtime.unwrap();
        let expected = if kill { actual.min(j.estimate) } else { actual };
        assert_eq!(
            r.run(),
            expected,
            "{}: job {} ran {} s",
            cfg.policy,
            r.id,
            r.run()
        );
    }
    // No oversubscription at any instant, recomputed from the records.
    let mut deltas: Vec<(Time, i64)> = Vec::new();
    for r in &obs.records {
        deltas.push((r.start, i64::from(r.procs)));
        deltas.push((r.end, -i64::from(r.procs)));
    }
    deltas.sort_by_key(|&(t, d)| (t, d)); // releases before acquisitions at one instant
    let mut used = 0i64;
    for (t, d) in deltas {
        used += d;
        assert!(
            used <= i64::from(CAP),
            "{}: {used} processors in use at {t}",
            cfg.policy
        );
    }
}

/// While a job holds the head reservation its reserved start never moves later, and it starts no
/// later than the last reservation it held.
fn check_head_never_delayed(cfg: &PolicyConfig, obs: &Observed) {
    assert!(
        obs.reservations.len() > 20,
        "{}: the workload must make heads wait",
        cfg.policy
    );
    let start_of: HashMap<JobId, Time> = obs.records.iter().map(|r| (r.id, r.start)).collect();
    let mut last: HashMap<JobId, Time> = HashMap::new();
    for &(now, job, start, kind) in &obs.reservations {
        assert_eq!(kind, ReservationKind::Head);
        assert!(start > now, "{}: head reservation in the past", cfg.policy);
        if let Some(&prev) = last.get(&job) {
            assert!(
                start <= prev,
                "{}: head {job} reservation moved from {prev} to {start} at {now}",
                cfg.policy
            );
        }
        last.insert(job, start);
    }
    for (job, s) in last {
        assert!(
            start_of[&job] <= s,
            "{}: head {job} started at {} after its reservation {s}",
            cfg.policy,
            start_of[&job]
        );
    }
}

/// Every planned start only moves earlier, and each job starts exactly at its last planned start.
fn check_plans_never_delayed(obs: &Observed) {
    assert!(
        obs.reservations.len() > 20,
        "conservative: the workload must make jobs wait"
    );
    let start_of: HashMap<JobId, Time> = obs.records.iter().map(|r| (r.id, r.start)).collect();
    let mut last: HashMap<JobId, Time> = HashMap::new();
    for &(now, job, start, kind) in &obs.reservations {
        assert_eq!(kind, ReservationKind::Planned);
        assert!(start > now, "planned start not in the future");
        if let Some(&prev) = last.get(&job) {
            assert!(
                start <= prev,
                "conservative: job {job} delayed from {prev} to {start} at {now}"
            );
        }
        last.insert(job, start);
    }
    for (job, s) in last {
        assert!(
            start_of[&job] <= s,
            "conservative: job {job} started after its plan"
        );
    }
}

/// A planning policy starts every job no later than the last start planned for it, and plans
/// only in the future.
fn check_starts_by_last_plan(cfg: &PolicyConfig, obs: &Observed) {
    assert!(
        obs.reservations.len() > 20,
        "{}: the workload must make jobs wait",
        cfg.policy
    );
    let start_of: HashMap<JobId, Time> = obs.records.iter().map(|r| (r.id, r.start)).collect();
    let mut last: HashMap<JobId, Time> = HashMap::new();
    for &(now, job, start, kind) in &obs.reservations {
        assert_eq!(kind, ReservationKind::Planned);
        assert!(
            start > now,
            "{}: planned start not in the future",
            cfg.policy
        );
        last.insert(job, start);
    }
    for (job, s) in last {
        assert!(
            start_of[&job] <= s,
            "{}: job {job} started at {} after its last plan {s}",
            cfg.policy,
            start_of[&job]
        );
    }
}

#[test]
fn every_policy_keeps_its_invariants_on_random_workloads() {
    for seed in 0..40 {
        let jobs = workload(seed, 300, false);
        for cfg in configs() {
            let obs = run(cfg, &jobs, EngineOptions::default());
            check_common(&cfg, &jobs, &obs, true);
            match cfg.policy {
                PolicyKind::Easy if cfg.backfill.shadow == ShadowMode::Fresh => {
                    check_head_never_delayed(&cfg, &obs)
                }
                PolicyKind::Conservative => check_plans_never_delayed(&obs),
                PolicyKind::PlanningFcfs
                | PolicyKind::PlanningSjf
                | PolicyKind::PlanningLjf
                | PolicyKind::Dynp => {
                    check_starts_by_last_plan(&cfg, &obs);
                    if cfg.policy == PolicyKind::PlanningFcfs && !cfg.planning.backfilling {
                        // Without backfilling, planning FCFS starts jobs in arrival order.
                        let mut recs = obs.records.clone();
                        recs.sort_by_key(|r| r.id);
                        assert!(
                            recs.windows(2).all(|w| w[0].start <= w[1].start),
                            "planning-fcfs without backfilling out of order"
                        );
                    }
                }
                PolicyKind::Fcfs => {
                    // FCFS starts jobs in arrival order.
                    let mut recs = obs.records.clone();
                    recs.sort_by_key(|r| r.id);
                    assert!(
                        recs.windows(2).all(|w| w[0].start <= w[1].start),
                        "fcfs out of order"
                    );
                }
                _ => {}
            }
        }
    }
}

#[test]
fn stale_shadow_still_starts_the_head_by_its_first_reservation() {
    for seed in 0..20 {
        let jobs = workload(seed, 300, false);
        let cfg = PolicyConfig {
            backfill: BackfillOptions {
                shadow: ShadowMode::Stale,
                ..Default::default()
            },
            ..PolicyConfig::new(PolicyKind::Easy)
        };
        let obs = run(cfg, &jobs, EngineOptions::default());
        let start_of: HashMap<JobId, Time> = obs.records.iter().map(|r| (r.id, r.start)).collect();
        let mut first: HashMap<JobId, Time> = HashMap::new();
        for &(_, job, s, _) in &obs.reservations {
            first.entry(job).or_insert(s);
        }
        for (job, s) in first {
            assert!(
                start_of[&job] <= s,
                "stale: head {job} started after its reservation"
            );
        }
    }
}

#[test]
fn run_to_completion_and_batched_passes_keep_the_invariants() {
    let opts = EngineOptions {
        kill_at_estimate: false,
        ..Default::default()
    };
    let batched = EngineOptions {
        batching: Batching::PerTimestamp,
        ..Default::default()
    };
    for seed in 100..120 {
        let jobs = workload(seed, 250, true);
        for cfg in configs() {
            let obs = run(cfg, &jobs, opts);
            check_common(&cfg, &jobs, &obs, false);
            let obs = run(cfg, &jobs, batched);
            check_common(&cfg, &jobs, &obs, true);
        }
    }
}

#[test]
fn runs_are_deterministic() {
    let jobs = workload(7, 500, false);
    for cfg in configs() {
        let a = run(cfg, &jobs, EngineOptions::default());
        let b = run(cfg, &jobs, EngineOptions::default());
        assert_eq!(a.records, b.records, "{}", cfg.policy);
    }
}

#[test]
fn backfilling_helps_on_average() {
    // Not an invariant of any single workload, but over 20 random workloads EASY and
    // conservative must wait far less than FCFS.
    let mut waits: HashMap<PolicyKind, i64> = HashMap::new();
    for seed in 0..20 {
        let jobs = workload(seed, 300, false);
        for k in [PolicyKind::Fcfs, PolicyKind::Easy, PolicyKind::Conservative] {
            let obs = run(PolicyConfig::new(k), &jobs, EngineOptions::default());
            *waits.entry(k).or_default() += obs.records.iter().map(|r| r.wait()).sum::<i64>();
        }
    }
    assert!(
        waits[&PolicyKind::Easy] < waits[&PolicyKind::Fcfs] * 9 / 10,
        "{waits:?}"
    );
    assert!(
        waits[&PolicyKind::Conservative] < waits[&PolicyKind::Fcfs] * 9 / 10,
        "{waits:?}"
    );
}

/// The engine replays space-shared machines whose jobs run to completion: a policy that preempts
/// is refused at the pass that suspends, with the job named, instead of having its suspensions
/// dropped (the job would run on while the policy thinks it stopped).
#[test]
fn a_preempting_policy_is_refused_at_its_first_suspension() {
    let mut policy = gridsched_core::runner::testing::Preemptor::default();
    let mut urgent = Job::new(2, 10, 1, 100, 100);
    urgent.deadline = Some(500);
    let jobs = [Job::new(1, 0, 1, 100, 100), urgent];
    let err = simulate(
        &mut policy,
        &[1],
        jobs.into_iter().map(Ok::<_, Infallible>),
        &EngineOptions::default(),
        Hooks::default(),
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            gridsim::SimError::BadStart {
                time: 10,
                job: JobId(1),
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("is preempted"), "{err}");
}

/// A job that waits for others cannot be replayed on one machine without a grid runner: the
/// reference engine refuses it, naming the job, instead of running it at once.
#[test]
fn a_job_with_a_dependency_or_an_array_is_refused_by_the_single_machine_replay() {
    let mut policy =
        PolicyConfig::new(PolicyKind::Easy).build_single(gridsched_core::model::MachineId(0), 4);
    let mut second = Job::new(2, 10, 1, 100, 100);
    second.after = Some(Box::new(
        gridsched_core::model::Dependency::parse("afterok:1", None).unwrap(),
    ));
    let jobs = [Job::new(1, 0, 1, 100, 100), second];
    let err = simulate(
        policy.as_mut(),
        &[4],
        jobs.into_iter().map(Ok::<_, Infallible>),
        &EngineOptions::default(),
        Hooks::default(),
    )
    .unwrap_err();
    assert!(
        matches!(err, gridsim::SimError::Dependency(JobId(2))),
        "{err}"
    );
    assert!(
        err.to_string().contains("gridsim cluster --workload"),
        "{err}"
    );
    let mut array = Job::new(1, 0, 1, 100, 100);
    array.array = Some(Box::new(
        gridsched_core::model::ArraySpec::parse("0-3", 10).unwrap(),
    ));
    let err = simulate(
        policy.as_mut(),
        &[4],
        [array].into_iter().map(Ok::<_, Infallible>),
        &EngineOptions::default(),
        Hooks::default(),
    )
    .unwrap_err();
    assert!(matches!(err, gridsim::SimError::Array(JobId(1))), "{err}");
}
