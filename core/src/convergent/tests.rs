//! Convergent Scheduling policy examples: an urgent job preempts a relaxed one in the `_p`
//! variants (the suspended job keeps its progress), not in the `_np` ones (Δ = 800 keeps it); a
//! cardinality-first matching still moves a running job of an `_np` variant as the thesis
//! simulates it, never when pinned (ours); licence copies are respected by the plan.

use super::*;
use crate::cluster::ClusterState;
use crate::model::{Job, JobId, LicenceId, LicencePool, Machine, MachineId};
use crate::policy::Decisions;
use crate::policy::Policy;

fn one_machine() -> ClusterState {
    ClusterState::from_parts(vec![Machine::new(MachineId(0), "m", 4, 100)], &[], false).unwrap()
}

fn pass(p: &mut ConvergentScheduling, now: i64) -> (Vec<u64>, Vec<u64>) {
    let mut d = Decisions::default();
    p.schedule(now, &mut d);
    (
        d.starts.iter().map(|x| x.job.0).collect(),
        d.suspensions.iter().map(|j| j.0).collect(),
    )
}

fn urgent_scenario(preemptive: bool) -> (ConvergentScheduling, Vec<u64>, Vec<u64>) {
    let mut cs =
        ConvergentScheduling::new(one_machine(), true, preemptive, None, CsParams::default());
    cs.submit(390, &Job::new(1, 390, 2, 1_000, 1_000)).unwrap();
    assert_eq!(pass(&mut cs, 390), (vec![1], vec![]));
    // At 400 the running job is worth Δ 8 + IN 3 + age 0.2 = 11.2 on the machine; the urgent job
    // ends exactly at its deadline there: f1 = MAX = 10, plus IN 3 = 13.
    let mut urgent = Job::new(2, 400, 2, 100, 100);
    urgent.deadline = Some(500);
    cs.submit(400, &urgent).unwrap();
    let (s, p) = pass(&mut cs, 400);
    (cs, s, p)
}

#[test]
fn preemptive_variants_suspend_for_an_urgent_job_keeping_progress() {
    let (cs, started, suspended) = urgent_scenario(true);
    assert_eq!((started, suspended), (vec![2], vec![1]));
    let (progress, slot) = cs.progress(JobId(1)).unwrap();
    assert!(
        (progress - 0.01).abs() < 1e-9,
        "10 of 1,000 s done: {progress}"
    );
    assert_eq!(slot, Some(0));
    assert_eq!(cs.waiting_len(), 1);
    let mut cs = cs;
    cs.terminate(500, JobId(2));
    assert_eq!(pass(&mut cs, 500), (vec![1], vec![]));
    // Resumed with 990 s left.
    assert_eq!(cs.state().running()[&JobId(1)].end, 1_490);
}

#[test]
fn the_non_preemptive_bonus_keeps_the_running_job_from_an_urgent_one() {
    // Δ = 800: the running job is worth 803.2 on its machine against the urgent job's 13.
    let (cs, started, suspended) = urgent_scenario(false);
    assert!(started.is_empty() && suspended.is_empty());
    assert_eq!(cs.running_len(), 1);
}

#[test]
fn as_simulated_a_non_preemptive_variant_moves_a_running_job_for_one_more_pair_pinned_never() {
    // Job 1 (one processor) starts on the faster 4-processor machine; job 2 needs all four.
    // Maximum cardinality wants job 1 on the 2-processor machine and job 2 on the big one: the
    // Δ = 800 bonus does not prevent it (D7.2 #6), so job 1 is suspended and restarted on the
    // small machine in the same pass. Pinned (ours), job 1 stays and job 2 waits.
    let ms = vec![
        Machine::new(MachineId(0), "big", 4, 200),
        Machine::new(MachineId(1), "small", 2, 100),
    ];
    let state = ClusterState::from_parts(ms, &[], false).unwrap();
    for pin in [false, true] {
        let params = CsParams {
            pin,
            ..CsParams::default()
        };
        let mut cs = ConvergentScheduling::new(state.clone(), false, false, None, params);
        let mut small = Job::new(1, 0, 1, 1_000, 1_000);
        small.benchmark = Some(100);
        cs.submit(0, &small).unwrap();
        assert_eq!(pass(&mut cs, 0), (vec![1], vec![]));
        assert_eq!(cs.state().running()[&JobId(1)].slot, 0);
        cs.submit(10, &Job::new(2, 10, 4, 100, 100)).unwrap();
        if pin {
            assert_eq!(pass(&mut cs, 10), (vec![], vec![]), "pinned: job 2 waits");
            assert_eq!(cs.describe(), "cs-ni-np (pinned)");
        } else {
            assert_eq!(pass(&mut cs, 10), (vec![2, 1], vec![1]));
            assert_eq!(cs.state().running()[&JobId(1)].slot, 1);
            assert_eq!(cs.describe(), "cs-ni-np");
        }
    }
}

#[test]
fn the_plan_respects_licence_copies() {
    let ms = (0..4)
        .map(|i| Machine::new(MachineId(i), &format!("m{i}"), 4, 100))
        .collect();
    let pools = [LicencePool {
        licence: LicenceId(0),
        copies: 2,
        machines: (0..4).map(MachineId).collect(),
    }];
    let state = ClusterState::from_parts(ms, &pools, false).unwrap();
    for (inc, pre) in [(true, true), (true, false), (false, true), (false, false)] {
        let mut cs = ConvergentScheduling::new(state.clone(), inc, pre, None, CsParams::default());
        for id in 1..=4 {
            let mut j = Job::new(id, 0, 1, 100, 100);
            j.licences = vec![LicenceId(0)];
            cs.submit(0, &j).unwrap();
        }
        cs.submit(0, &Job::new(5, 0, 1, 100, 100)).unwrap();
        let (started, _) = pass(&mut cs, 0);
        assert_eq!(
            started.len(),
            3,
            "two licensed jobs and the free one: {started:?}"
        );
        assert!(started.contains(&5));
        assert_eq!(cs.state().pool(LicenceId(0)).unwrap().in_use, 2);
    }
}

#[test]
fn a_running_job_is_scored_on_its_remaining_work() {
    // Job 1 runs from 0 (estimate 1,000, deadline 1,050). At 900 it has 100 s left: Extime
    // 1,000 lies in its urgent zone (T = 1,050 - 1.3 × 100 = 920), f1 = 0.1 + 9.9 × 80 / 130 =
    // 6.19, plus Δ 8 and IN 3 = 17.19 on its machine. Scored as if it had not started (1,000 s
    // left, late) it would be worth 0.1 + 8 + 3 = 11.1 and lose the machine to job 2, worth
    // f1 = MAX 10 + IN 3 = 13 (it ends exactly at its deadline). Anti-aging is off to isolate
    // the Deadline term.
    let params = CsParams {
        age_factor: 0.0,
        ..CsParams::default()
    };
    let mut cs = ConvergentScheduling::new(one_machine(), true, true, None, params);
    let mut long = Job::new(1, 0, 2, 1_000, 1_000);
    long.deadline = Some(1_050);
    cs.submit(0, &long).unwrap();
    assert_eq!(pass(&mut cs, 0), (vec![1], vec![]));
    let mut urgent = Job::new(2, 900, 2, 100, 100);
    urgent.deadline = Some(1_000);
    cs.submit(900, &urgent).unwrap();
    assert_eq!(
        pass(&mut cs, 900),
        (vec![], vec![]),
        "job 1 keeps its machine"
    );
    assert_eq!(cs.state().running()[&JobId(1)].end, 1_000);
    cs.terminate(1_000, JobId(1));
    assert_eq!(pass(&mut cs, 1_000), (vec![2], vec![]));
}
