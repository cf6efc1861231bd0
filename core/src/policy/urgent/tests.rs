//! The urgent layer through the cluster runner on a virtual clock: worked examples of the three
//! modes, victims killed (progress lost) or suspended (progress kept), the hold of a waiting
//! urgent job, and the invariant that no urgent job is ever preempted.

use super::*;
use crate::model::{ClusterId, Machine, Platform};
use crate::policy::{PolicyConfig, PolicyKind};
use crate::runner::{ClusterRunner, Effect, Input, Launch, RunnerConfig};

fn runner(procs: u32, kind: PolicyKind, opts: UrgentOptions) -> ClusterRunner {
    let p = Platform::single_machine(procs);
    let cfg = PolicyConfig {
        urgent: Some(opts),
        ..PolicyConfig::new(kind)
    };
    let policy = cfg.build(&p, ClusterId(0)).unwrap();
    ClusterRunner::new(&p, ClusterId(0), policy, RunnerConfig::default()).unwrap()
}

fn job(id: u64, submit: Time, procs: u32, run: i64) -> Job {
    Job::new(id, submit, procs, run, run)
}

fn urgent(id: u64, submit: Time, procs: u32, run: i64) -> Job {
    let mut j = job(id, submit, procs, run);
    j.urgency = Some(Urgency::Critical);
    j
}

/// Submits `jobs` at `now`, then one pass; the effects of the pass.
fn at(r: &mut ClusterRunner, now: Time, jobs: Vec<Job>) -> Vec<Effect> {
    let mut out = Vec::new();
    for job in jobs {
        r.on(
            now,
            Input::Submit {
                job,
                priority: None,
            },
            &mut out,
        )
        .unwrap();
    }
    r.on(now, Input::Pass, &mut out).unwrap();
    out
}

fn end(r: &mut ClusterRunner, now: Time, id: u64) -> Vec<Effect> {
    let mut out = Vec::new();
    r.on(now, Input::Ended { job: JobId(id) }, &mut out)
        .unwrap();
    r.on(now, Input::Pass, &mut out).unwrap();
    out
}

fn starts(e: &[Effect]) -> Vec<(u64, Launch)> {
    e.iter()
        .filter_map(|e| match e {
            Effect::Start(s) => Some((s.job.0, s.launch)),
            _ => None,
        })
        .collect()
}

fn kills(e: &[Effect]) -> Vec<u64> {
    e.iter()
        .filter_map(|e| match e {
            Effect::Kill { job, .. } => Some(job.0),
            _ => None,
        })
        .collect()
}

fn suspensions(e: &[Effect]) -> Vec<u64> {
    e.iter()
        .filter_map(|e| match e {
            Effect::Suspend { job, .. } => Some(job.0),
            _ => None,
        })
        .collect()
}

#[test]
fn an_urgent_job_kills_the_latest_started_typical_jobs_and_they_run_again_from_scratch() {
    let mut r = runner(8, PolicyKind::FirstFit, UrgentOptions::default());
    // Three typical jobs fill the machine: 1 at t=0 (4 procs), 2 at t=10 (2), 3 at t=20 (2).
    assert_eq!(
        starts(&at(&mut r, 0, vec![job(1, 0, 4, 1000)])),
        [(1, Launch::First)]
    );
    assert_eq!(
        starts(&at(&mut r, 10, vec![job(2, 10, 2, 1000)])),
        [(2, Launch::First)]
    );
    assert_eq!(
        starts(&at(&mut r, 20, vec![job(3, 20, 2, 1000)])),
        [(3, Launch::First)]
    );
    // An urgent job of 3 processors: the two latest starts (3, then 2) are killed, 1 runs on.
    let e = at(&mut r, 100, vec![urgent(9, 100, 3, 50)]);
    assert_eq!(kills(&e), [3, 2]);
    assert_eq!(starts(&e), [(9, Launch::First)]);
    // One processor is left: neither victim fits until the urgent job ends.
    let e = end(&mut r, 150, 9);
    assert_eq!(starts(&e), [(2, Launch::Restart), (3, Launch::Restart)]);
    // They run again from scratch: the whole 1000 s.
    let run_of = |e: &[Effect], id: u64| {
        e.iter().find_map(|e| match e {
            Effect::Start(s) if s.job.0 == id => Some(s.run),
            _ => None,
        })
    };
    assert_eq!(run_of(&e, 2), Some(1000));
    let mut out = Vec::new();
    r.on(1150, Input::Ended { job: JobId(2) }, &mut out)
        .unwrap();
    match out.as_slice() {
        [Effect::Finished(f)] => {
            assert_eq!(
                (f.start, f.end, f.restarts, f.exec),
                (10, 1150, 1, 90 + 1000)
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn suspended_victims_resume_with_their_progress() {
    let opts = UrgentOptions {
        preempt_by: PreemptBy::Suspend,
        ..UrgentOptions::default()
    };
    let mut r = runner(4, PolicyKind::Easy, opts);
    assert_eq!(
        starts(&at(&mut r, 0, vec![job(1, 0, 4, 1000)])),
        [(1, Launch::First)]
    );
    let e = at(&mut r, 300, vec![urgent(9, 300, 4, 100)]);
    assert_eq!((suspensions(&e), kills(&e)), (vec![1], vec![]));
    assert_eq!(starts(&e), [(9, Launch::First)]);
    let e = end(&mut r, 400, 9);
    // Job 1 resumes where it ran with 700 s of work left.
    match e.as_slice() {
        [Effect::Finished(_), Effect::Start(s)] => {
            assert_eq!((s.job.0, s.launch, s.run), (1, Launch::Resume, 700));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn next_to_run_preempts_nothing_and_holds_what_frees_up_for_the_urgent_job() {
    let opts = UrgentOptions {
        mode: UrgentMode::NextToRun,
        ..UrgentOptions::default()
    };
    let mut r = runner(8, PolicyKind::FirstFit, opts);
    at(&mut r, 0, vec![job(1, 0, 4, 100), job(2, 0, 4, 200)]);
    let e = at(&mut r, 10, vec![urgent(9, 10, 6, 50)]);
    assert!(kills(&e).is_empty() && starts(&e).is_empty());
    // Job 1 ends: its 4 processors are held for the urgent job, so the small typical job that
    // arrives cannot take them.
    let e = end(&mut r, 100, 1);
    assert!(starts(&e).is_empty());
    assert!(starts(&at(&mut r, 110, vec![job(3, 110, 1, 10)])).is_empty());
    // Job 2 ends: the urgent job starts, and job 3 fits in what is left.
    let e = end(&mut r, 200, 2);
    assert_eq!(starts(&e), [(9, Launch::First), (3, Launch::First)]);
}

#[test]
fn plain_preemption_lets_typical_jobs_use_what_a_waiting_urgent_job_cannot_take_yet() {
    let opts = UrgentOptions {
        mode: UrgentMode::Preempt,
        ..UrgentOptions::default()
    };
    let mut r = runner(8, PolicyKind::FirstFit, opts);
    // An urgent job holds 6 processors; a second urgent job of 4 must wait for it.
    assert_eq!(
        starts(&at(&mut r, 0, vec![urgent(1, 0, 6, 100)])),
        [(1, Launch::First)]
    );
    assert!(starts(&at(&mut r, 5, vec![urgent(2, 5, 4, 100)])).is_empty());
    // Without a reservation a typical job takes the two free processors meanwhile …
    assert_eq!(
        starts(&at(&mut r, 6, vec![job(3, 6, 2, 500)])),
        [(3, Launch::First)]
    );
    // … and is killed when the urgent job can start.
    let e = end(&mut r, 100, 1);
    assert_eq!(kills(&e), Vec::<u64>::new());
    assert_eq!(starts(&e), [(2, Launch::First)]);
    // 8 − 4 − 2 = 2 processors left: job 3 kept running (it did not need to go).
    let opts = UrgentOptions::default();
    let mut r = runner(8, PolicyKind::FirstFit, opts);
    at(&mut r, 0, vec![urgent(1, 0, 6, 100)]);
    at(&mut r, 5, vec![urgent(2, 5, 4, 100)]);
    // With the reservation the two free processors are held for the waiting urgent job.
    assert!(starts(&at(&mut r, 6, vec![job(3, 6, 2, 500)])).is_empty());
    let e = end(&mut r, 100, 1);
    assert_eq!(starts(&e), [(2, Launch::First), (3, Launch::First)]);
}

#[test]
fn under_easy_too_a_waiting_urgent_job_comes_before_the_typical_queue() {
    // A waiting urgent job is blocked by urgent jobs only, so every processor free meanwhile is
    // held for it; to EASY the hold is a running job ending at the urgent job's expected start
    // plus its estimate.
    let mut r = runner(8, PolicyKind::Easy, UrgentOptions::default());
    at(&mut r, 0, vec![urgent(1, 0, 8, 100)]);
    let e = at(&mut r, 10, vec![urgent(2, 10, 4, 100)]);
    assert!(starts(&e).is_empty());
    // Nothing is free (the running urgent job takes all 8): a typical job waits.
    assert!(starts(&at(&mut r, 20, vec![job(3, 20, 4, 30)])).is_empty());
    // The first urgent job ends: the second starts on 4, the typical job on the other 4.
    let e = end(&mut r, 100, 1);
    assert_eq!(starts(&e), [(2, Launch::First), (3, Launch::First)]);
}

#[test]
fn urgent_jobs_are_served_by_level_then_arrival_and_never_preempted() {
    let mut r = runner(4, PolicyKind::FirstFit, UrgentOptions::default());
    at(&mut r, 0, vec![urgent(1, 0, 4, 100)]);
    let mut high = urgent(2, 1, 4, 100);
    high.urgency = Some(Urgency::High);
    let mut e = at(&mut r, 1, vec![high, urgent(3, 2, 4, 100)]);
    assert!(kills(&e).is_empty() && suspensions(&e).is_empty());
    e = end(&mut r, 100, 1);
    assert_eq!(starts(&e), [(3, Launch::First)]);
    e = end(&mut r, 200, 3);
    assert_eq!(starts(&e), [(2, Launch::First)]);
}

#[test]
fn the_layer_needs_one_space_shared_machine_and_names_it() {
    let mut p = Platform::single_machine(4);
    p.machines.push(Machine::new(MachineId(1), "m1", 4, 1));
    p.clusters[0].machines.push(MachineId(1));
    p.validate().unwrap();
    let cfg = PolicyConfig {
        urgent: Some(UrgentOptions::default()),
        partition: false,
        ..PolicyConfig::new(PolicyKind::FbMod)
    };
    let e = cfg.build(&p, ClusterId(0)).unwrap_err().to_string();
    assert!(e.contains("urgent") && e.contains("`cluster`"), "{e}");
}

#[test]
fn options_parse_with_defaults_and_refuse_unknown_keys() {
    let o: UrgentOptions = serde_json::from_str(r#"{"preempt_by":"suspend"}"#).unwrap();
    assert_eq!(o.mode, UrgentMode::PreemptWithReservation);
    assert_eq!(o.preempt_by, PreemptBy::Suspend);
    let e = serde_json::from_str::<UrgentOptions>(r#"{"victim":"fewest"}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("victim"), "{e}");
}

/// Random streams of typical and urgent jobs through every mode and preemption kind: the runner
/// validates every start against the machine; no urgent job is ever killed or suspended; every
/// job ends exactly once.
#[test]
fn random_streams_keep_the_invariants() {
    use rand::{RngExt, SeedableRng};
    for seed in 0..40u64 {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mode = [
            UrgentMode::NextToRun,
            UrgentMode::Preempt,
            UrgentMode::PreemptWithReservation,
        ][seed as usize % 3];
        let preempt_by = [PreemptBy::Kill, PreemptBy::Suspend][(seed as usize / 3) % 2];
        let victims = [
            VictimOrder::LatestStart,
            VictimOrder::Fewest,
            VictimOrder::LeastLost,
        ][(seed as usize / 6) % 3];
        let kind = [
            PolicyKind::FirstFit,
            PolicyKind::Easy,
            PolicyKind::Conservative,
        ][seed as usize % 3];
        let opts = UrgentOptions {
            mode,
            preempt_by,
            victims,
        };
        let mut r = runner(16, kind, opts);
        let mut ends: std::collections::BTreeMap<(Time, u64), ()> = Default::default();
        let mut is_urgent = std::collections::HashSet::new();
        let mut finished = std::collections::HashSet::new();
        let mut t = 0;
        let n = 120u64;
        let mut next = 1u64;
        while finished.len() < n as usize {
            let arrive = (next <= n).then(|| t + rng.random_range(0..30));
            let due = ends.keys().next().copied();
            let mut out = Vec::new();
            match (arrive, due) {
                (Some(a), d) if d.is_none_or(|(e, _)| a < e) => {
                    t = a;
                    let mut j = job(next, t, rng.random_range(1..=16), rng.random_range(1..200));
                    if rng.random_range(0..10) == 0 {
                        j.urgency = Some(Urgency::Critical);
                        is_urgent.insert(next);
                    }
                    next += 1;
                    r.on(
                        t,
                        Input::Submit {
                            job: j,
                            priority: None,
                        },
                        &mut out,
                    )
                    .unwrap();
                }
                (_, Some((e, id))) => {
                    t = e;
                    ends.remove(&(e, id));
                    r.on(t, Input::Ended { job: JobId(id) }, &mut out).unwrap();
                }
                _ => unreachable!("jobs left but nothing to do"),
            }
            r.on(t, Input::Pass, &mut out).unwrap();
            for e in out {
                match e {
                    Effect::Start(s) => {
                        ends.insert((t + s.run, s.job.0), ());
                    }
                    Effect::Kill { job, .. } | Effect::Suspend { job, .. } => {
                        assert!(
                            !is_urgent.contains(&job.0),
                            "seed {seed}: urgent {job} preempted"
                        );
                        ends.retain(|&(_, id), ()| id != job.0);
                    }
                    Effect::Finished(f) => assert!(finished.insert(f.job.0)),
                    Effect::Overrun { .. } => {}
                    Effect::Dropped { job } => panic!("seed {seed}: {job} dropped"),
                }
            }
        }
        assert_eq!(r.len(), 0, "seed {seed}: jobs left");
    }
}

/// While its machine is down no urgent job starts there (nor preempts, nor holds processors),
/// and the layer's books stay whole: found by the chaos soak, where an agent killed while an
/// urgent job arrived made the layer start it on the down machine, the runner refuse the pass,
/// and a later pass underflow the layer's free processors. Up again, it starts.
#[test]
fn an_urgent_job_waits_while_its_machine_is_down() {
    for mode in [UrgentMode::PreemptWithReservation, UrgentMode::NextToRun] {
        let opts = UrgentOptions {
            mode,
            ..UrgentOptions::default()
        };
        let mut r = runner(8, PolicyKind::Easy, opts);
        assert_eq!(starts(&at(&mut r, 0, vec![job(1, 0, 4, 100)])).len(), 1);
        let mut out = Vec::new();
        r.on(
            5,
            Input::Machine {
                machine: MachineId(0),
                up: false,
            },
            &mut out,
        )
        .unwrap();
        // The driver reports the job on the lost machine as ended.
        end(&mut r, 5, 1);
        let e = at(&mut r, 10, vec![urgent(2, 10, 8, 50), job(3, 10, 2, 10)]);
        assert!(starts(&e).is_empty() && kills(&e).is_empty(), "{e:?}");
        r.on(
            20,
            Input::Machine {
                machine: MachineId(0),
                up: true,
            },
            &mut out,
        )
        .unwrap();
        let mut out = Vec::new();
        r.on(20, Input::Pass, &mut out).unwrap();
        let started: Vec<u64> = starts(&out).iter().map(|s| s.0).collect();
        assert_eq!(started.first(), Some(&2), "{mode:?}: {out:?}");
    }
}
