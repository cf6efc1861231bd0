//! Worked examples of EG-EDF and its Tabu search (the earliest gap over an idle machine, weight
//! ties, EDF insertion, a Tabu move that ends a delay, running jobs never moved, re-anchoring,
//! licences, a machine going down), of our reading of a gap (a job arriving while a machine is
//! idle starts now; Tabu moves a delayed job to an idle machine) and an invariant over random
//! streams under both readings: the plan never over-subscribes a machine at any time, every start
//! fits, every job ends.

use super::*;
use crate::model::{Duration, LicenceId, LicencePool, Machine};
use crate::policy::test_util::ScheduleInto;
use crate::policy::test_util::starts;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::collections::HashMap;

fn machine(id: u32, procs: u32, bm: u32) -> Machine {
    Machine::new(MachineId(id), &format!("m{id}"), procs, bm)
}

fn job(id: u64, procs: u32, est: i64) -> Job {
    Job::new(id, 0, procs, est, est)
}

fn due(mut j: Job, deadline: Time) -> Job {
    j.deadline = Some(deadline);
    j
}

fn with_lic(mut j: Job, l: u16) -> Job {
    j.licences.push(LicenceId(l));
    j
}

fn cluster(machines: Vec<Machine>) -> ClusterState {
    ClusterState::from_parts(machines, &[], true).unwrap()
}

/// Two 4-processor machines of equal speed; licence 0 is node-locked on m1 only.
fn pair() -> ClusterState {
    let mut m1 = machine(1, 4, 100);
    m1.node_locked = vec![LicenceId(0)];
    cluster(vec![machine(0, 4, 100), m1])
}

/// The plan as (job, machine, planned start), by start then job.
fn plan(p: &ScheduleBased) -> Vec<(u64, u32, Time)> {
    p.reservations()
        .iter()
        .map(|r| (r.job.0, r.machine.unwrap().0, r.start))
        .collect()
}

fn submit(p: &mut ScheduleBased, now: Time, jobs: &[Job]) {
    for j in jobs {
        p.submit(now, j).unwrap();
    }
}

fn counter(p: &ScheduleBased, name: &str) -> u64 {
    p.counters()
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v)
        .unwrap()
}

fn running_on(p: &ScheduleBased, id: u64) -> (u32, Time) {
    let a = &p.state().running()[&JobId(id)];
    (p.state().slots()[a.slot].machine.id.0, a.end)
}

#[test]
fn the_weight_is_exact_with_denominators_of_at_least_one() {
    let w = Weight::of((1000, 4), (1100, 5));
    assert!((w.value() - 0.15).abs() < 1e-12, "−0.1 + 0.25");
    assert!(w.is_positive());
    // D12 #33: an empty schedule has makespan 0 and no non-delayed job; both denominators are 1.
    let e = Weight::of((0, 0), (100, 1));
    assert_eq!(e.value(), -99.0);
    assert_eq!(Weight::of((10, 2), (10, 3)), Weight::of((20, 4), (20, 6)));
    assert!(Weight::of((10, 2), (10, 2)) < Weight::of((10, 2), (9, 2)));
    assert!(!Weight::of((10, 2), (10, 2)).is_positive());
}

/// m1's long job ends early, so m1 is idle; m0 still has a gap (2 processors from 100, inside
/// its schedule up to 500). S = 1: the new job goes into that gap although m1 could run it now.
#[test]
fn the_earliest_gap_is_taken_even_when_an_idle_machine_could_start_the_job_now() {
    let mut p = ScheduleBased::eg_edf(pair());
    submit(
        &mut p,
        0,
        &[job(1, 4, 100), job(2, 4, 1000), job(3, 2, 400)],
    );
    assert_eq!(starts(&mut p, 0), vec![1, 2]);
    assert_eq!(running_on(&p, 1).0, 0, "S = 0, tie: lower machine id");
    assert_eq!(
        running_on(&p, 2).0,
        1,
        "S = 0: m1 keeps the makespan at 1000"
    );
    assert_eq!(plan(&p), vec![(3, 0, 100)], "S = 0: m0 keeps the makespan");
    assert_eq!(counter(&p, "eg_edf"), 3);

    p.terminate(10, JobId(2));
    submit(&mut p, 10, &[job(4, 2, 100)]);
    assert!(starts(&mut p, 10).is_empty());
    assert_eq!(
        plan(&p),
        vec![(3, 0, 100), (4, 0, 100)],
        "m0's gap, not idle m1"
    );
    assert_eq!(counter(&p, "eg_gap"), 1);
    assert_eq!(p.next_wakeup(), Some(100));
    assert_eq!(starts(&mut p, 100), Vec::<u64>::new(), "job 1 still runs");
    p.terminate(100, JobId(1));
    assert_eq!(starts(&mut p, 100), vec![3, 4]);
}

/// The same history under our reading: at 10 idle m1's present is a gap of the same weight as m0's
/// (the makespan stays at 500, no deadline), where the job ends first — it starts now on m1.
/// Before that both readings place every job alike (ours finds jobs 1 and 2 a gap from now on an
/// empty machine, where the as-printed EDF insertions put them too).
#[test]
fn in_our_reading_a_job_arriving_while_a_machine_is_idle_starts_now() {
    let run = |gaps: GapReading| {
        let mut p = ScheduleBased::eg_edf(pair()).with_gaps(gaps);
        submit(
            &mut p,
            0,
            &[job(1, 4, 100), job(2, 4, 1000), job(3, 2, 400)],
        );
        assert_eq!(starts(&mut p, 0), vec![1, 2]);
        assert_eq!((running_on(&p, 1).0, running_on(&p, 2).0), (0, 1));
        assert_eq!(plan(&p), vec![(3, 0, 100)]);
        p.terminate(10, JobId(2));
        submit(&mut p, 10, &[job(4, 2, 100)]);
        let s = starts(&mut p, 10);
        (p, s)
    };
    let (p, s) = run(GapReading::AsPrinted);
    assert!(s.is_empty(), "as printed: m0's future gap, m1 has none");
    assert_eq!(plan(&p), vec![(3, 0, 100), (4, 0, 100)]);

    let (p, s) = run(GapReading::Present);
    assert_eq!(s, vec![4], "ours: m1's gap from now");
    assert_eq!(running_on(&p, 4), (1, 110));
    assert_eq!(plan(&p), vec![(3, 0, 100)]);
    assert_eq!(p.totals(), (500, 0));
    assert_eq!(
        (counter(&p, "eg_gap"), counter(&p, "eg_edf")),
        (3, 1),
        "jobs 1, 2, 4 in a gap from now; job 3 none (both machines had a job planned from 0)"
    );
    assert_eq!(p.describe(), "eg-edf-now");
}

/// Under our reading the Tabu search moves a delayed job to a machine that went idle: job 4 is
/// planned late behind m0's running job; when m1's only job ends early, m1 is idle — no gap as
/// printed (Tabu leaves the job late), a gap from now in ours (Tabu moves it and it starts).
#[test]
fn in_our_reading_tabu_moves_a_delayed_job_to_an_idle_machine() {
    let run = |gaps: GapReading| {
        let mut p = ScheduleBased::eg_edf_tabu(pair()).with_gaps(gaps);
        submit(&mut p, 0, &[job(1, 4, 500), with_lic(job(2, 4, 1000), 0)]);
        assert_eq!(starts(&mut p, 0), vec![1, 2]);
        submit(&mut p, 1, &[due(job(3, 4, 100), 550)]);
        assert!(starts(&mut p, 1).is_empty());
        assert_eq!(plan(&p), vec![(3, 0, 500)], "late: ends at 600");
        p.terminate(10, JobId(2));
        let s = starts(&mut p, 10);
        (p, s)
    };
    let (p, s) = run(GapReading::AsPrinted);
    assert!(s.is_empty());
    assert_eq!(plan(&p), vec![(3, 0, 500)], "still late");
    assert_eq!(counter(&p, "tabu_moves"), 0);

    let (p, s) = run(GapReading::Present);
    assert_eq!(s, vec![3]);
    assert_eq!(running_on(&p, 3), (1, 110), "meets 550");
    assert_eq!(counter(&p, "tabu_moves"), 1);
    assert_eq!(p.totals(), (500, 1));
    assert_eq!(p.describe(), "eg-edf-tabu-now");
}

/// Gaps of equal weight (the makespan stays, no deadline): the job ends first on the faster m1;
/// with equal ends the lower machine id wins.
#[test]
fn weight_ties_go_to_the_earliest_end_then_the_lower_machine() {
    let mut ms = vec![machine(0, 4, 100), machine(1, 4, 200), machine(2, 4, 100)];
    for (i, m) in ms.iter_mut().enumerate() {
        m.node_locked = vec![LicenceId(i as u16)];
    }
    let mut p = ScheduleBased::eg_edf(cluster(ms));
    // One 2-processor job pinned to each machine until 1000: every machine has a 2-wide gap.
    submit(
        &mut p,
        0,
        &[
            with_lic(job(1, 2, 1000), 0),
            with_lic(job(2, 2, 1000), 1),
            with_lic(job(3, 2, 1000), 2),
        ],
    );
    assert_eq!(starts(&mut p, 0), vec![1, 2, 3]);
    let mut c = job(4, 2, 100);
    c.benchmark = Some(100); // 100 s on m0 and m2, 50 s on m1
    submit(&mut p, 1, &[c, job(5, 2, 100)]);
    // Job 4: gaps on m0 (ends 101), m1 (ends 51), m2 (ends 101), weights equal → m1.
    // Job 5 (no benchmark: 100 s everywhere): m0 ends 101, m1 only from 51 (ends 151), m2 101
    // → tie between m0 and m2 → m0.
    assert_eq!(starts(&mut p, 1), vec![5, 4], "in machine order");
    assert_eq!(running_on(&p, 4), (1, 51));
    assert_eq!(running_on(&p, 5), (0, 101));
    assert_eq!(counter(&p, "eg_gap"), 2);
}

/// S = 0 on one full machine: the job with the earlier deadline goes before the planned job with a
/// later one (which still meets its deadline); a job without deadline goes last.
#[test]
fn without_a_gap_the_job_is_inserted_in_edf_order() {
    let mut p = ScheduleBased::eg_edf(cluster(vec![machine(0, 4, 100)]));
    submit(&mut p, 0, &[job(1, 4, 100)]);
    assert_eq!(starts(&mut p, 0), vec![1]);
    submit(&mut p, 1, &[due(job(2, 4, 100), 1000)]);
    assert!(starts(&mut p, 1).is_empty());
    assert_eq!(plan(&p), vec![(2, 0, 100)]);
    submit(&mut p, 2, &[due(job(3, 4, 100), 250), job(4, 4, 100)]);
    assert!(starts(&mut p, 2).is_empty());
    assert_eq!(
        plan(&p),
        vec![(3, 0, 100), (2, 0, 200), (4, 0, 300)],
        "appending would end job 3 at 300, past 250"
    );
    assert_eq!(counter(&p, "eg_edf"), 4);
    assert_eq!(p.totals(), (400, 2), "both deadline jobs planned in time");
    assert_eq!(
        p.queue(),
        vec![JobId(3), JobId(2), JobId(4)],
        "the queue in planned-start order"
    );
}

/// Job 3 is planned late behind a running job on m0; when m1's second pinned job ends early,
/// m1 has a gap where job 3 meets its deadline. Tabu moves it there (and it starts at once);
/// EG-EDF alone leaves it late. The running jobs stay where they are.
#[test]
fn tabu_moves_a_delayed_job_into_a_gap_where_it_meets_its_deadline() {
    let run = |tabu: bool| {
        let mut p = ScheduleBased::new(pair(), tabu.then(TabuLimits::default));
        submit(
            &mut p,
            0,
            &[
                with_lic(job(1, 2, 1000), 0),
                with_lic(job(2, 2, 1000), 0),
                job(3, 4, 500),
            ],
        );
        assert_eq!(starts(&mut p, 0), vec![3, 1, 2]);
        submit(&mut p, 1, &[due(job(4, 2, 100), 550)]);
        assert!(starts(&mut p, 1).is_empty());
        assert_eq!(plan(&p), vec![(4, 0, 500)], "S = 0, late: ends at 600");
        p.terminate(10, JobId(2));
        let s = starts(&mut p, 10);
        (p, s)
    };
    let (p, s) = run(false);
    assert!(s.is_empty());
    assert_eq!(plan(&p), vec![(4, 0, 500)]);
    assert_eq!(counter(&p, "tabu_iterations"), 0);

    let (p, s) = run(true);
    assert_eq!(s, vec![4], "moved to m1's gap at 10, ends at 110 ≤ 550");
    assert_eq!(running_on(&p, 4), (1, 110));
    assert_eq!(counter(&p, "tabu_moves"), 1);
    assert_eq!(running_on(&p, 3), (0, 500), "the running job stays");
    assert_eq!(running_on(&p, 1), (1, 1000));
    assert_eq!(p.totals(), (1000, 1));
}

/// A running job that overruns past its deadline is delayed, and a gap elsewhere would suit it,
/// but it is running: the Tabu search has no candidate and changes nothing.
#[test]
fn tabu_never_moves_a_running_job() {
    let mut p = ScheduleBased::eg_edf_tabu(pair());
    submit(
        &mut p,
        0,
        &[due(job(1, 2, 100), 150), with_lic(job(2, 2, 1000), 0)],
    );
    assert_eq!(starts(&mut p, 0), vec![1, 2]);
    assert_eq!(running_on(&p, 1).0, 0);
    p.overrun(100, JobId(1), 200);
    assert!(starts(&mut p, 100).is_empty());
    assert_eq!(running_on(&p, 1), (0, 200), "still on m0, late");
    assert_eq!(counter(&p, "tabu_iterations"), 0);
    assert_eq!(p.running_len(), 2);
    assert_eq!(p.waiting_len(), 0);
}

/// An early end moves the planned job earlier; an overrun pushes it back.
#[test]
fn the_plan_is_re_anchored_on_early_ends_and_overruns() {
    let mut p = ScheduleBased::eg_edf(cluster(vec![machine(0, 4, 100)]));
    submit(&mut p, 0, &[job(1, 4, 100), job(2, 4, 100), job(3, 4, 100)]);
    assert_eq!(starts(&mut p, 0), vec![1]);
    assert_eq!(plan(&p), vec![(2, 0, 100), (3, 0, 200)]);
    p.terminate(40, JobId(1));
    assert_eq!(starts(&mut p, 40), vec![2]);
    assert_eq!(plan(&p), vec![(3, 0, 140)]);
    p.overrun(140, JobId(2), 190);
    assert!(starts(&mut p, 140).is_empty());
    assert_eq!(plan(&p), vec![(3, 0, 190)]);
    assert_eq!(p.next_wakeup(), Some(190));
}

/// The only copy of licence 0 is busy: the job planned now on m0 waits and starts when it frees.
#[test]
fn a_job_starts_only_when_its_licence_copy_is_free() {
    let pools = [LicencePool {
        licence: LicenceId(0),
        copies: 1,
        machines: vec![MachineId(0), MachineId(1)],
    }];
    let state =
        ClusterState::from_parts(vec![machine(0, 4, 100), machine(1, 4, 100)], &pools, true)
            .unwrap();
    let mut p = ScheduleBased::eg_edf(state);
    submit(
        &mut p,
        0,
        &[with_lic(job(1, 1, 100), 0), with_lic(job(2, 1, 50), 0)],
    );
    assert_eq!(starts(&mut p, 0), vec![1]);
    assert_eq!(plan(&p), vec![(2, 0, 0)], "a gap beside job 1; no copy now");
    assert_eq!(p.next_wakeup(), None, "job 1's end calls again");
    assert!(starts(&mut p, 60).is_empty());
    assert_eq!(plan(&p), vec![(2, 0, 60)], "re-anchored at the pass");
    p.terminate(100, JobId(1));
    assert_eq!(starts(&mut p, 100), vec![2]);
}

/// A machine going down sends its planned jobs to be placed again on the others.
#[test]
fn a_machine_going_down_gives_its_plan_back() {
    let mut p = ScheduleBased::eg_edf(cluster(vec![machine(0, 4, 100), machine(1, 4, 100)]));
    submit(&mut p, 0, &[job(1, 4, 100), job(2, 4, 100), job(3, 4, 100)]);
    assert_eq!(starts(&mut p, 0), vec![1, 2]);
    assert_eq!(plan(&p), vec![(3, 0, 100)]);
    p.set_machine_available(50, MachineId(0), false);
    p.terminate(50, JobId(1));
    assert!(starts(&mut p, 50).is_empty());
    assert_eq!(plan(&p), vec![(3, 1, 100)]);
    p.set_machine_available(60, MachineId(0), true);
    assert!(starts(&mut p, 60).is_empty(), "no rebuild from scratch");
    assert_eq!(plan(&p), vec![(3, 1, 100)]);
}

#[test]
fn submissions_are_checked() {
    let mut p = ScheduleBased::eg_edf(pair());
    assert!(matches!(
        p.submit(0, &job(1, 0, 0)),
        Err(Rejection::BadEstimate { .. })
    ));
    assert!(matches!(
        p.submit(0, &job(1, 5, 10)),
        Err(Rejection::NoEligibleMachine { .. })
    ));
    p.submit(0, &job(1, 1, 10)).unwrap();
    assert_eq!(
        p.submit(0, &job(1, 1, 10)),
        Err(Rejection::Duplicate(JobId(1)))
    );
    let mut r = job(2, 1, 10);
    r.reservation = Some(crate::model::ReservationId(1));
    assert!(matches!(
        p.submit(0, &r),
        Err(Rejection::Reservation { .. })
    ));
    assert!(p.cancel(0, JobId(1)));
    assert!(!p.cancel(0, JobId(1)));
    assert_eq!(p.waiting_len(), 0);
    assert_eq!(p.describe(), "eg-edf");
    assert_eq!(ScheduleBased::eg_edf_tabu(pair()).describe(), "eg-edf-tabu");
}

// ---- invariant over random streams ----

/// A generated job: (submit, procs, estimate, runtime, deadline slack, benchmark).
type GenJob = (Time, u32, Duration, Duration, Option<Time>, Option<u32>);

#[derive(Clone, Debug)]
struct Case {
    machines: Vec<(u32, u32)>,
    space_sharing: bool,
    jobs: Vec<GenJob>,
}

fn case() -> impl Strategy<Value = Case> {
    let m = (1u32..=8, prop::sample::select(vec![50u32, 100, 200]));
    let j = (
        0i64..200,
        1u32..=8,
        1i64..80,
        0i64..120,
        prop::option::of(0i64..300),
        prop::option::of(prop::sample::select(vec![50u32, 100, 200])),
    );
    (
        prop::collection::vec(m, 1..=4),
        any::<bool>(),
        prop::collection::vec(j, 1..40),
    )
        .prop_map(|(machines, space_sharing, mut jobs)| {
            jobs.sort_by_key(|j| j.0);
            Case {
                machines,
                space_sharing,
                jobs,
            }
        })
}

/// Checks that the running jobs (to their predicted ends) and the planned ones never need more
/// processors of a machine than it has (without space sharing: never two jobs at once).
fn check_plan(
    p: &ScheduleBased,
    c: &Case,
    now: Time,
    running: &HashMap<JobId, (usize, u32, Time)>,
) -> Result<(), TestCaseError> {
    let cap = |m: usize| if c.space_sharing { c.machines[m].0 } else { 1 };
    let w = |procs: u32| if c.space_sharing { procs } else { 1 };
    let mut delta: Vec<BTreeMap<Time, i64>> = vec![BTreeMap::new(); c.machines.len()];
    for &(m, procs, end) in running.values() {
        prop_assert!(end > now, "running job with a past predicted end");
        *delta[m].entry(now).or_default() += i64::from(w(procs));
        *delta[m].entry(end).or_default() -= i64::from(w(procs));
    }
    for r in p.reservations() {
        let m = r.machine.expect("planned on a machine").0 as usize;
        prop_assert!(r.start >= now, "job {} planned in the past", r.job);
        prop_assert!(
            r.procs <= c.machines[m].0,
            "job {} too wide for m{m}",
            r.job
        );
        *delta[m].entry(r.start).or_default() += i64::from(w(r.procs));
        *delta[m].entry(r.end).or_default() -= i64::from(w(r.procs));
    }
    for (m, d) in delta.iter().enumerate() {
        let mut used = 0;
        for (t, x) in d {
            used += x;
            prop_assert!(
                used <= i64::from(cap(m)),
                "m{m} over-subscribed at {t} in the plan of {now}: {used} > {}",
                cap(m)
            );
        }
    }
    Ok(())
}

/// Runs the case through the policy with an event loop of its own; returns the starts.
fn drive(c: &Case, tabu: bool, gaps: GapReading) -> Result<Vec<(u64, Time, u32)>, TestCaseError> {
    let machines: Vec<Machine> = c
        .machines
        .iter()
        .enumerate()
        .map(|(i, &(procs, bm))| machine(i as u32, procs, bm))
        .collect();
    let state = ClusterState::from_parts(machines.clone(), &[], c.space_sharing).unwrap();
    let mut p = ScheduleBased::new(
        state,
        tabu.then_some(TabuLimits {
            size: 5,
            iterations: 20,
        }),
    )
    .with_gaps(gaps);
    let jobs: Vec<Job> = c
        .jobs
        .iter()
        .enumerate()
        .map(|(i, &(submit, procs, est, run, slack, bm))| {
            let mut j = Job::new(i as u64 + 1, submit, procs, est, run);
            j.deadline = slack.map(|s| submit + s);
            j.benchmark = bm;
            j
        })
        .collect();
    let widest = c.machines.iter().map(|m| m.0).max().unwrap();
    // Running: machine, procs, predicted end; and actual ends.
    let mut running: HashMap<JobId, (usize, u32, Time)> = HashMap::new();
    let mut ends: BTreeMap<Time, Vec<JobId>> = BTreeMap::new();
    let mut used = vec![0u32; machines.len()];
    let mut started: Vec<(u64, Time, u32)> = Vec::new();
    let (mut next, mut accepted, mut finished) = (0, 0, 0);
    let mut buf = Vec::new();
    let mut last = -1;
    loop {
        let t_sub = jobs.get(next).map(|j| j.submit);
        let t_end = ends.keys().next().copied();
        let t_pred = running.values().map(|r| r.2).min();
        let t_wake = p.next_wakeup().filter(|&w| w > last);
        let Some(now) = [t_sub, t_end, t_pred, t_wake].into_iter().flatten().min() else {
            break;
        };
        prop_assert!(now > last);
        last = now;
        for id in ends.remove(&now).unwrap_or_default() {
            let (m, procs, _) = running.remove(&id).expect("runs");
            used[m] -= procs;
            p.terminate(now, id);
            finished += 1;
        }
        // The overrun rule: a job still running at its predicted end gets 10 more seconds.
        let mut over: Vec<JobId> = running
            .iter()
            .filter(|(_, r)| r.2 <= now)
            .map(|(id, _)| *id)
            .collect();
        over.sort_unstable();
        for id in over {
            running.get_mut(&id).expect("runs").2 = now + 10;
            p.overrun(now, id, now + 10);
        }
        while next < jobs.len() && jobs[next].submit == now {
            let r = p.submit(now, &jobs[next]);
            prop_assert_eq!(r.is_ok(), jobs[next].procs <= widest);
            accepted += usize::from(r.is_ok());
            next += 1;
        }
        buf.clear();
        p.schedule_into(now, &mut buf);
        for s in &buf {
            let j = &jobs[s.job.0 as usize - 1];
            let m = s.machine.0 as usize;
            prop_assert!(!running.contains_key(&s.job), "{} started twice", s.job);
            prop_assert!(j.submit <= now);
            let free = c.machines[m].0 - used[m];
            prop_assert!(j.procs <= free, "{} does not fit on m{m} at {now}", s.job);
            prop_assert!(
                c.space_sharing || used[m] == 0,
                "two jobs on m{m} without space sharing"
            );
            used[m] += j.procs;
            let est = j.duration_on(j.estimate, &machines[m]);
            let run = j.duration_on(j.runtime.unwrap(), &machines[m]).max(1);
            running.insert(s.job, (m, j.procs, now + est));
            ends.entry(now + run).or_default().push(s.job);
            started.push((s.job.0, now, s.machine.0));
        }
        check_plan(&p, c, now, &running)?;
        prop_assert_eq!(p.running_len(), running.len());
    }
    prop_assert_eq!(p.waiting_len(), 0, "stalled with waiting jobs");
    prop_assert_eq!(finished, accepted, "every accepted job ends");
    Ok(started)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn the_plan_never_over_subscribes_a_machine_and_every_job_ends(c in case()) {
        for gaps in [GapReading::AsPrinted, GapReading::Present] {
            for tabu in [false, true] {
                let a = drive(&c, tabu, gaps)?;
                let b = drive(&c, tabu, gaps)?;
                prop_assert_eq!(a, b, "deterministic");
            }
        }
    }
}
