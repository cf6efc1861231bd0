//! Refused at the door, not failed later: random, mostly hostile `JobSpec`s (see
//! `gridsched_tests::arbitrary`) are either refused at submission with INVALID_ARGUMENT naming a
//! `JobSpec` field, or accepted as a job some site can run and that ends.
//!
//! The property test runs the meta-scheduler's admission (`validate::check`, then the conversion
//! to the core's job and the grid runner's admission) and dispatch on many specs; the live test
//! submits a few dozen to a real grid and waits for every accepted one to reach a terminal state.

use gridsched_proto::v1;
use gridsched_tests::arbitrary::job_spec;
use gridsched_tests::live::{LiveGrid, SiteSpec, wait_ended};
use meta_scheduler::decide::Decider;
use meta_scheduler::{MetaConfig, validate};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, TestCaseError, TestRng, TestRunner};
use std::cell::Cell;
use std::time::Duration;

/// The grid of both tests: alpha runs up to 20 s, beta up to the grid's cap of 30 s.
const GRID: &str = r#"
[limits]
max_estimate_s = 30
[[sites]]
name = "alpha"
licences = ["matlab"]
max_estimate_s = 20
machines = [
  { name = "alpha-m1", processors = 4, memory_kb = 1048576 },
  { name = "alpha-m2", processors = 4, memory_kb = 2097152 },
]
[[sites]]
name = "beta"
machines = [{ name = "beta-m1", processors = 2, memory_kb = 524288 }]
"#;

const NOW: i64 = 1_800_000_000;

/// The fields of a `JobSpec`: a refusal must name one of them (or a path into one).
const FIELDS: &[&str] = &[
    "spec",
    "user",
    "user_class",
    "owner_priority",
    "processors",
    "memory_kb",
    "estimate_s",
    "deadline",
    "licences",
    "inputs",
    "benchmark",
    "command",
    "emulate_runtime_s",
    "client_token",
    "partition",
];

fn strategy(now: i64) -> impl Strategy<Value = v1::JobSpec> {
    let machines = ["alpha-m1", "alpha-m2", "beta-m1"]
        .map(String::from)
        .to_vec();
    job_spec(vec!["matlab".into()], machines, now)
}

/// A runner whose cases are the same on every run.
fn runner(cases: u32) -> TestRunner {
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    TestRunner::new_with_rng(
        config.clone(),
        TestRng::deterministic_rng(config.rng_algorithm),
    )
}

/// Whether the field a refusal names is (a path into) a `JobSpec` field.
fn names_a_field(field: &str) -> bool {
    let root = field.split(['.', '[']).next().unwrap_or_default();
    FIELDS.contains(&root)
}

#[test]
fn every_accepted_spec_is_a_job_some_site_can_run() {
    let cfg = MetaConfig::from_toml(GRID).unwrap();
    let (accepted, refused) = (Cell::new(0), Cell::new(0));
    let check = |spec: v1::JobSpec| -> Result<(), TestCaseError> {
        let mut d = Decider::new(&cfg, 0).unwrap();
        let verdict = validate::check(Some(&spec), &cfg.limits)
            .map_err(|r| r.field)
            .and_then(|()| {
                d.admit(&spec, 1, NOW)
                    .map_err(|e| e.field.unwrap_or_default())
            });
        let job = match verdict {
            Err(field) => {
                refused.set(refused.get() + 1);
                proptest::prop_assert!(names_a_field(&field), "refusal names `{}`", field);
                return Ok(());
            }
            Ok(job) => job,
        };
        accepted.set(accepted.get() + 1);
        proptest::prop_assert!((1..=4).contains(&job.procs), "{:?}", job);
        proptest::prop_assert!((1..=30).contains(&job.estimate), "{:?}", job);
        let mut texts = vec![spec.user.as_str()];
        if let Some(c) = &spec.command {
            texts.push(&c.program);
            texts.extend(c.args.iter().map(String::as_str));
            texts.extend(c.env.iter().flat_map(|(k, v)| [k.as_str(), v.as_str()]));
            texts.extend(c.working_directory.as_deref());
            let bytes: usize = texts[1..].iter().map(|t| t.len()).sum();
            proptest::prop_assert!(bytes <= cfg.limits.max_command_bytes);
            proptest::prop_assert!(c.args.len() <= cfg.limits.max_args);
        }
        proptest::prop_assert!(texts.iter().all(|t| !t.contains('\0')), "{:?}", spec);
        proptest::prop_assert!(spec.user.len() <= cfg.limits.max_name_bytes);
        proptest::prop_assert!(
            gridsched_core::model::check_name(&spec.user).is_ok(),
            "{:?}",
            spec.user
        );
        proptest::prop_assert!(job.memory_kb.is_none_or(|kb| kb <= 2_097_152), "{job:?}");
        let submit = gridsched_core::grid::Input::Submit {
            job: job.clone(),
            priority: None,
        };
        let effects = d.on(NOW, submit);
        let Some(site) = effects.iter().find_map(|e| match e {
            gridsched_core::grid::Effect::Place { site, .. } => Some(*site),
            _ => None,
        }) else {
            return Err(TestCaseError::fail(format!("not dispatched: {effects:?}")));
        };
        proptest::prop_assert!(d.can_ever_run(site, &job));
        let limit = cfg.sites[site].max_estimate(cfg.limits.max_estimate_s);
        // Every machine has score 1: the job takes its estimate times its own score.
        let takes =
            gridsched_core::model::scale_duration(job.estimate, job.benchmark.unwrap_or(1), 1);
        proptest::prop_assert!(takes <= limit, "{} s sent to a {} s site", takes, limit);
        Ok(())
    };
    runner(400).run(&strategy(NOW), check).unwrap();
    let (accepted, refused) = (accepted.get(), refused.get());
    // Both outcomes are exercised.
    assert!(
        accepted >= 40 && refused >= 40,
        "{accepted} accepted, {refused} refused"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_specs_on_a_live_grid_are_refused_or_end() {
    let mut alpha = SiteSpec::new("alpha", "easy", 2, 4);
    alpha.licences = vec![("matlab".into(), 1)];
    alpha.max_estimate_s = Some(20);
    let beta = SiteSpec::new("beta", "fb-mod", 1, 2);
    let g = LiveGrid::start(
        gridsched_tests::test_bins!(),
        vec![alpha, beta],
        "[limits]\nmax_estimate_s = 30\n",
    );
    g.ready().await;
    let mut c = g.client().await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let strategy = strategy(now + 60);
    let mut runner = runner(50);
    let (mut ids, mut refused) = (Vec::new(), 0);
    for _ in 0..50 {
        let spec = strategy.new_tree(&mut runner).unwrap().current();
        match c.submit(v1::SubmitRequest { spec: Some(spec) }).await {
            Ok(r) => ids.push(r.into_inner().job_id),
            Err(e) => {
                refused += 1;
                assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
                assert!(e.message().starts_with("field `"), "{}", e.message());
            }
        }
    }
    assert!(
        ids.len() >= 5 && refused >= 5,
        "{} accepted, {refused} refused",
        ids.len()
    );
    let jobs = wait_ended(&mut c, &ids, Duration::from_secs(90)).await;
    // A job refused by its site after acceptance would show it: none is.
    for j in jobs.iter().filter(|j| ids.contains(&j.id)) {
        assert!(
            !j.reason.contains("nul byte") && !j.reason.contains("refused"),
            "job {} accepted, then: {}",
            j.id,
            j.reason
        );
    }
}
