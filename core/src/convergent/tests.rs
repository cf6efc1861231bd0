//! Convergent Scheduling policy examples: an urgent job preempts a relaxed one in the `_p`
//! variants (the suspended job keeps its progress) and never in the `_np` ones; licence copies
//! are respected by the plan.

use super::*;
use crate::cluster::ClusterState;
use crate::model::{Job, JobId, LicenceId, LicencePool, Machine, MachineId};
use crate::policy::{Policy, Start};

fn one_machine() -> ClusterState {
    ClusterState::from_parts(vec![Machine::new(MachineId(0), "m", 4, 100)], &[], false).unwrap()
}

fn pass(p: &mut ConvergentScheduling, now: i64) -> (Vec<u64>, Vec<u64>) {
    let mut s: Vec<Start> = Vec::new();
    p.schedule(now, &mut s);
    let mut susp = Vec::new();
    p.take_suspensions(&mut susp);
    (
        s.iter().map(|x| x.job.0).collect(),
        susp.iter().map(|j| j.0).collect(),
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
fn non_preemptive_variants_never_suspend() {
    let (cs, started, suspended) = urgent_scenario(false);
    assert!(started.is_empty() && suspended.is_empty());
    assert_eq!(cs.running_len(), 1);
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
