//! Worked examples of the list scheduler: FCFS blocks, EDF skips, EASY/FB backfill without delaying
//! the reservation (processors and licence copies), FB priorities by hand, BF_UNMOD vs BF_MOD.

use super::*;
use crate::model::{LicencePool, Machine};
use crate::policy::test_util::ScheduleInto;

fn machine(id: u32, procs: u32, bm: u32) -> Machine {
    Machine::new(MachineId(id), &format!("m{id}"), procs, bm)
}

fn job(id: u64, submit: Time, procs: u32, est: i64) -> Job {
    Job::new(id, submit, procs, est, est)
}

fn with_lic(mut j: Job, l: u16) -> Job {
    j.licences.push(LicenceId(l));
    j
}

fn one_smp(procs: u32) -> ClusterState {
    ClusterState::from_parts(vec![machine(0, procs, 100)], &[], true).unwrap()
}

fn pass(p: &mut FlexibleBackfilling, now: Time) -> Vec<u64> {
    let mut v = Vec::new();
    p.schedule_into(now, &mut v);
    v.iter().map(|s| s.job.0).collect()
}

fn submit_all(p: &mut FlexibleBackfilling, now: Time, jobs: &[Job]) {
    for j in jobs {
        p.submit(now, j).unwrap();
    }
}

/// J1 (6 of 8 procs) runs until 100; J2 (4 procs) cannot start; J3 (2 procs, 150 s) fits now and,
/// ending after J2's reservation, uses only processors J2 will not need; J4 finds nothing free.
fn backfill_scenario(mut p: FlexibleBackfilling) -> (FlexibleBackfilling, Vec<u64>) {
    p.submit(0, &job(1, 0, 6, 100)).unwrap();
    assert_eq!(pass(&mut p, 0), vec![1]);
    submit_all(
        &mut p,
        1,
        &[job(2, 1, 4, 100), job(3, 1, 2, 150), job(4, 1, 2, 500)],
    );
    let s = pass(&mut p, 1);
    (p, s)
}

#[test]
fn fcfs_blocks_edf_skips_easy_backfills() {
    let (p, s) = backfill_scenario(FlexibleBackfilling::fcfs(one_smp(8)));
    assert!(s.is_empty(), "FCFS: the head blocks");
    assert_eq!(p.queue(), vec![JobId(2), JobId(3), JobId(4)]);

    let (_, s) = backfill_scenario(FlexibleBackfilling::edf(one_smp(8)));
    assert_eq!(s, vec![3], "EDF: J2 waits, J3 goes on");

    let (p, s) = backfill_scenario(FlexibleBackfilling::bf_fcfs(one_smp(8)));
    assert_eq!(
        s,
        vec![3],
        "extra processors: J3 may outlive the shadow time"
    );
    let r = p.reservations();
    assert_eq!(r.len(), 1);
    assert_eq!((r[0].job, r[0].start, r[0].end), (JobId(2), 100, 200));
    assert_eq!(r[0].machine, Some(MachineId(0)));
}

#[test]
fn a_backfilled_job_never_takes_the_reserved_processors() {
    let mut p = FlexibleBackfilling::bf_fcfs(one_smp(8));
    p.submit(0, &job(1, 0, 6, 100)).unwrap();
    pass(&mut p, 0);
    // J2 needs 8: at 100 every processor is its own, so a 2-processor job must end by 100.
    submit_all(
        &mut p,
        1,
        &[job(2, 1, 8, 100), job(3, 1, 2, 150), job(4, 1, 2, 99)],
    );
    assert_eq!(pass(&mut p, 1), vec![4]);
}

#[test]
fn a_backfilled_job_never_takes_the_reserved_licence_copy() {
    // m0 (8 procs) is the only machine wide enough for J2; one copy of lic0, suitable everywhere.
    let ms = vec![machine(0, 8, 300), machine(1, 4, 200), machine(2, 4, 100)];
    let pools = [LicencePool {
        licence: LicenceId(0),
        copies: 1,
        machines: vec![MachineId(0), MachineId(1), MachineId(2)],
    }];
    let state = ClusterState::from_parts(ms, &pools, false).unwrap();
    let mut p = FlexibleBackfilling::bf_fcfs(state);
    p.submit(0, &job(1, 0, 8, 100)).unwrap();
    assert_eq!(pass(&mut p, 0), vec![1]);
    submit_all(
        &mut p,
        1,
        &[
            with_lic(job(2, 1, 8, 100), 0),
            with_lic(job(3, 1, 2, 500), 0),
            with_lic(job(4, 1, 2, 50), 0),
            job(5, 1, 2, 500),
        ],
    );
    // J3 would hold the only copy past 100: refused. J4 ends at 51: backfilled on the fastest free
    // machine (m1). J5 needs no licence and avoids m0: starts on m2.
    let mut v = Vec::new();
    p.schedule_into(1, &mut v);
    let placed: Vec<(u64, u32)> = v.iter().map(|s| (s.job.0, s.machine.0)).collect();
    assert_eq!(placed, vec![(4, 1), (5, 2)]);
    assert_eq!(p.reservations()[0].start, 100);
    assert_eq!(p.state().pool(LicenceId(0)).unwrap().in_use, 1);
}

#[test]
fn fb_priorities_by_hand() {
    let pools = [LicencePool {
        licence: LicenceId(0),
        copies: 1,
        machines: vec![MachineId(0)],
    }];
    let state = ClusterState::from_parts(vec![machine(0, 8, 100)], &pools, true).unwrap();
    let mut p = FlexibleBackfilling::fb(state, FbVariant::Unmod, HeuristicParams::FB_4_1);
    p.submit(0, &job(1, 0, 8, 5_000)).unwrap();
    assert_eq!(pass(&mut p, 0), vec![1]);
    let mut j2 = job(2, 0, 4, 1_000);
    j2.deadline = Some(5_000);
    p.submit(0, &j2).unwrap();
    p.submit(400, &with_lic(job(3, 400, 4, 500), 0)).unwrap();
    assert!(pass(&mut p, 1_000).is_empty());
    let pr = p.priorities();
    // J2: AA 1000 * 0.01 = 10; Extime 2000 <= T 3600 -> MIN 0.1; no licence; WM 2 * 500 / 1000 = 1.
    // J3: AA 600 * 0.01 = 6; no deadline; rho(lic0) = 1/1 (not critical) -> W * 1; WM 2.
    assert_eq!(pr[0].0, JobId(2));
    assert!((pr[0].1 - 11.1).abs() < 1e-9, "{pr:?}");
    assert_eq!(pr[1].0, JobId(3));
    assert!((pr[1].1 - 9.0).abs() < 1e-9, "{pr:?}");
}

fn variants_scenario(v: FbVariant) -> FlexibleBackfilling {
    let mut p = FlexibleBackfilling::fb(one_smp(8), v, HeuristicParams::FB_4_1);
    p.submit(0, &job(1, 0, 8, 1_000)).unwrap();
    pass(&mut p, 0);
    p.submit(10, &job(2, 10, 4, 1_000)).unwrap();
    assert!(pass(&mut p, 10).is_empty());
    assert_eq!(p.reservations()[0].job, JobId(2));
    // J3 arrives with a tight deadline: Extime 1020 > T = 2100 - 1400, so its deadline term
    // (0.1 + 19.9 * 320 / 1400 = 4.65) beats J2's 0.1 of waiting.
    let mut j3 = job(3, 20, 4, 1_000);
    j3.deadline = Some(2_100);
    p.submit(20, &j3).unwrap();
    assert!(pass(&mut p, 20).is_empty());
    p
}

#[test]
fn unmod_keeps_the_reservation_mod_moves_it() {
    let p = variants_scenario(FbVariant::Unmod);
    assert_eq!(p.reservations()[0].job, JobId(2));
    assert_eq!(
        p.queue()[0],
        JobId(2),
        "BF_UNMOD keeps the reserved job at the head"
    );
    let p = variants_scenario(FbVariant::Mod);
    assert_eq!(p.reservations()[0].job, JobId(3));
    assert_eq!(p.queue()[0], JobId(3));
}

#[test]
fn machines_are_tried_fastest_first_and_runs_scale() {
    let ms = vec![machine(0, 4, 100), machine(1, 4, 400), machine(2, 4, 200)];
    let state = ClusterState::from_parts(ms, &[], false).unwrap();
    let mut p = FlexibleBackfilling::fcfs(state);
    let mut j = job(1, 0, 2, 1_000);
    j.benchmark = Some(200);
    p.submit(0, &j).unwrap();
    p.submit(0, &job(2, 0, 2, 10)).unwrap();
    let mut v = Vec::new();
    p.schedule_into(0, &mut v);
    assert_eq!(v[0].machine, MachineId(1));
    assert_eq!(v[1].machine, MachineId(2));
    // 1000 s on a benchmark-200 reference machine take 500 s on the 400 machine.
    assert_eq!(p.state().running()[&JobId(1)].end, 500);
}

#[test]
fn ineligible_jobs_are_refused_naming_the_requirement() {
    let mut p = FlexibleBackfilling::fcfs(one_smp(8));
    let e = p.submit(0, &job(1, 0, 9, 10)).unwrap_err();
    assert!(e.to_string().contains("procs"), "{e}");
    let e = p.submit(0, &with_lic(job(2, 0, 1, 10), 3)).unwrap_err();
    assert!(e.to_string().contains("licence lic3"), "{e}");
    p.submit(0, &job(3, 0, 1, 10)).unwrap();
    assert!(matches!(
        p.submit(0, &job(3, 0, 1, 10)),
        Err(Rejection::Duplicate(_))
    ));
    assert!(p.cancel(0, JobId(3)));
    assert!(!p.cancel(0, JobId(3)));
}

#[test]
fn restore_and_machine_availability() {
    let ms = vec![machine(0, 4, 100), machine(1, 4, 400)];
    let state = ClusterState::from_parts(ms, &[], false).unwrap();
    let mut p = FlexibleBackfilling::fcfs(state);
    p.restore_running(50, &job(9, 0, 4, 100), 0, MachineId(0), 4)
        .unwrap();
    assert_eq!(p.running_len(), 1);
    p.set_machine_available(50, MachineId(1), false);
    p.submit(50, &job(1, 50, 1, 10)).unwrap();
    assert!(pass(&mut p, 50).is_empty(), "m0 busy, m1 down");
    p.set_machine_available(60, MachineId(1), true);
    assert_eq!(pass(&mut p, 60), vec![1]);
    p.terminate(100, JobId(9));
    assert_eq!(p.running_len(), 1);
}

/// D9.3 "MS Heuristics": the queue follows the meta-scheduler's priority (higher first, ties by
/// arrival), the reservation goes to the first blocked job in that order and later jobs backfill
/// around it; a job whose MS priority never arrived counts as 0.
#[test]
fn fb_meta_orders_by_the_ms_priority() {
    let mut p = FlexibleBackfilling::fb_meta(one_smp(8));
    p.submit(0, &job(1, 0, 8, 100)).unwrap();
    p.meta_priority(JobId(1), 5);
    assert_eq!(pass(&mut p, 0), vec![1]);
    for (id, at, procs, est, ms) in [
        (2, 1, 4, 100, Some(3)),
        (3, 2, 6, 100, Some(7)),
        (4, 3, 4, 100, Some(7)),
        (5, 4, 2, 50, None),
    ] {
        p.submit(at, &job(id, at, procs, est)).unwrap();
        if let Some(ms) = ms {
            p.meta_priority(JobId(id), ms);
        }
    }
    p.meta_priority(JobId(99), 9); // unknown: ignored
    assert!(pass(&mut p, 10).is_empty());
    assert_eq!(p.queue(), vec![JobId(3), JobId(4), JobId(2), JobId(5)]);
    let pr: Vec<f64> = p.priorities().iter().map(|(_, v)| *v).collect();
    assert_eq!(pr, vec![7.0, 7.0, 3.0, 0.0]);
    assert_eq!(p.reservations()[0].job, JobId(3));
    assert_eq!(p.reservations()[0].start, 100);
    p.terminate(100, JobId(1));
    // J3 (6 procs) starts; J4 (4) blocks and is reserved at 200; J2 (4) does not fit either;
    // J5 (2 procs, ends 150 <= 200) backfills.
    assert_eq!(pass(&mut p, 100), vec![3, 5]);
    let r = p.reservations();
    assert_eq!((r[0].job, r[0].start), (JobId(4), 200));
    assert_eq!(p.queue(), vec![JobId(4), JobId(2)]);
    assert_eq!(p.describe(), "fb-meta");
}
