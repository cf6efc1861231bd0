//! Every knob of `reference-semantics.md` exists and takes effect on a real trace (KTH): each
//! non-reference setting changes the schedule, while all jobs still run and no machine is
//! oversubscribed (the engine refuses any such start).

use gridsched_core::policy::{
    BackfillOptions, PolicyConfig, PolicyKind, ShadowCmp, ShadowMode, SubmitPass,
};
use gridsched_tests::{replay, trace};
use gridsched_workload::{Estimates, NormalizeOptions, ProcsField, RuntimeLimit};
use gridsim::{Batching, EngineOptions};

const KTH: &str = "KTH-SP2-1996-2.1-cln.swf.gz";
const EASY_MEAN_WAIT: f64 = 6_412.24;

fn easy_with(b: BackfillOptions) -> PolicyConfig {
    PolicyConfig {
        backfill: b,
        ..PolicyConfig::new(PolicyKind::Easy)
    }
}

#[test]
fn each_knob_changes_the_easy_schedule() {
    let Some(path) = trace(KTH) else { return };
    let norm = NormalizeOptions::default();
    let eng = EngineOptions::default();
    let cases: Vec<(&str, PolicyConfig, NormalizeOptions, EngineOptions)> = vec![
        (
            "stale shadow",
            easy_with(BackfillOptions {
                shadow: ShadowMode::Stale,
                ..Default::default()
            }),
            norm,
            eng,
        ),
        (
            "strict <",
            easy_with(BackfillOptions {
                shadow_cmp: ShadowCmp::Before,
                ..Default::default()
            }),
            norm,
            eng,
        ),
        (
            "no extra procs",
            easy_with(BackfillOptions {
                extra_procs: false,
                ..Default::default()
            }),
            norm,
            eng,
        ),
        (
            "requested procs",
            PolicyConfig::new(PolicyKind::Easy),
            NormalizeOptions {
                procs_field: ProcsField::Requested,
                ..norm
            },
            eng,
        ),
        (
            "perfect estimates",
            PolicyConfig::new(PolicyKind::Easy),
            NormalizeOptions {
                estimates: Estimates::Perfect,
                ..norm
            },
            eng,
        ),
        (
            "estimates x2",
            PolicyConfig::new(PolicyKind::Easy),
            NormalizeOptions {
                estimates: Estimates::Multiple(2.0),
                ..norm
            },
            eng,
        ),
        (
            "node size 4",
            PolicyConfig::new(PolicyKind::Easy),
            NormalizeOptions {
                node_size: 4,
                ..norm
            },
            eng,
        ),
        (
            "batched passes",
            PolicyConfig::new(PolicyKind::Easy),
            norm,
            EngineOptions {
                batching: Batching::PerTimestamp,
                ..eng
            },
        ),
    ];
    for (name, policy, norm, eng) in cases {
        let r = replay(&path, policy, norm, eng);
        assert_eq!(r.summary.jobs, 27_992, "{name}: every job runs");
        assert!(
            (r.summary.mean_wait_s - EASY_MEAN_WAIT).abs() > 1.0,
            "{name}: mean wait {} equals the reference",
            r.summary.mean_wait_s
        );
    }
}

#[test]
fn perfect_estimates_help_and_the_seeds_conservative_backfills_less() {
    let Some(path) = trace(KTH) else { return };
    let norm = NormalizeOptions::default();
    let perfect = replay(
        &path,
        PolicyConfig::new(PolicyKind::Easy),
        NormalizeOptions {
            estimates: Estimates::Perfect,
            ..norm
        },
        EngineOptions::default(),
    );
    assert!(
        perfect.summary.mean_wait_s < EASY_MEAN_WAIT,
        "perfect estimates: {}",
        perfect.summary.mean_wait_s
    );
    let no_extra = replay(
        &path,
        easy_with(BackfillOptions {
            extra_procs: false,
            ..Default::default()
        }),
        norm,
        EngineOptions::default(),
    );
    assert!(
        no_extra.summary.mean_wait_s > EASY_MEAN_WAIT,
        "no extra procs: {}",
        no_extra.summary.mean_wait_s
    );
}

#[test]
fn submit_pass_if_fits_gives_the_reference_numbers_on_kth() {
    // Some versions of the reference skip the pass when the submitted job does not fit; with
    // kill-at-estimate that changes nothing on KTH.
    let Some(path) = trace(KTH) else { return };
    let r = replay(
        &path,
        easy_with(BackfillOptions {
            submit_pass: SubmitPass::IfFits,
            ..Default::default()
        }),
        NormalizeOptions::default(),
        EngineOptions::default(),
    );
    assert!((r.summary.mean_wait_s - EASY_MEAN_WAIT).abs() < 0.005);
    assert!((r.summary.mean_bsld10 - 86.28).abs() < 0.005);
}

#[test]
fn sjf_and_ljf_orders_rank_as_the_literature_says() {
    // §4.8: SJF gives the lowest slowdown, LJF the worst.
    let Some(path) = trace(KTH) else { return };
    let run = |k| {
        replay(
            &path,
            PolicyConfig::new(k),
            NormalizeOptions::default(),
            EngineOptions::default(),
        )
    };
    let (sjf, easy, ljf) = (
        run(PolicyKind::SjfBf),
        run(PolicyKind::Easy),
        run(PolicyKind::LjfBf),
    );
    assert!(
        sjf.summary.mean_bsld10 < easy.summary.mean_bsld10,
        "sjf {} easy {}",
        sjf.summary.mean_bsld10,
        easy.summary.mean_bsld10
    );
    assert!(
        ljf.summary.mean_bsld10 > easy.summary.mean_bsld10,
        "ljf {} easy {}",
        ljf.summary.mean_bsld10,
        easy.summary.mean_bsld10
    );
}

#[test]
fn run_to_completion_lets_jobs_overrun_on_hpc2n() {
    // KTH never runs past its request, HPC2N does (14,817 jobs): there the knob matters.
    let Some(path) = trace("HPC2N-2002-2.1-cln.swf.gz") else {
        return;
    };
    let kill = replay(
        &path,
        PolicyConfig::new(PolicyKind::Easy),
        NormalizeOptions::default(),
        EngineOptions::default(),
    );
    let run = replay(
        &path,
        PolicyConfig::new(PolicyKind::Easy),
        NormalizeOptions {
            runtime_limit: RuntimeLimit::RunToCompletion,
            ..Default::default()
        },
        EngineOptions {
            kill_at_estimate: false,
            ..Default::default()
        },
    );
    assert_eq!(kill.stats.overruns, 0);
    assert!(
        run.stats.overruns >= 14_000,
        "overrun notices: {}",
        run.stats.overruns
    );
    assert_eq!(run.summary.jobs, kill.summary.jobs);
    assert!(
        run.summary.squashed_area > kill.summary.squashed_area,
        "overrunning jobs use more processor time"
    );
    assert!((run.summary.mean_wait_s - kill.summary.mean_wait_s).abs() > 1.0);
}
