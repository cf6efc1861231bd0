//! The runner on a virtual clock: the meta priority orders an `fb-meta` queue, suspension keeps
//! progress (continue, migrate, restart), the overrun rule, validation of bad decisions, cancel,
//! requeue, restore, machines down, and a logged run giving the same decisions again.

use super::replay::{Entry, rerun};
use super::testing::Preemptor;
use super::*;
use crate::model::{Cluster, Machine, Site, SiteId};
use crate::policy::Decisions;
use crate::policy::{PolicyConfig, PolicyKind, Reservation};
use std::collections::BTreeSet;

/// One cluster of machines as (processors, benchmark), space sharing.
fn platform(machines: &[(u32, u32)]) -> Platform {
    let mut p = Platform::default();
    for (k, (procs, bm)) in machines.iter().enumerate() {
        p.machines.push(Machine::new(
            MachineId(k as u32),
            &format!("m{k}"),
            *procs,
            *bm,
        ));
    }
    p.clusters.push(Cluster {
        id: ClusterId(0),
        name: "c".into(),
        site: SiteId(0),
        machines: (0..machines.len() as u32).map(MachineId).collect(),
        pools: Vec::new(),
        space_sharing: true,
    });
    p.sites.push(Site {
        id: SiteId(0),
        name: "s".into(),
        clusters: vec![ClusterId(0)],
    });
    p.validate().unwrap();
    p
}

fn runner(p: &Platform, kind: PolicyKind, config: RunnerConfig) -> ClusterRunner {
    let policy = PolicyConfig::new(kind).build(p, ClusterId(0)).unwrap();
    ClusterRunner::new(p, ClusterId(0), policy, config).unwrap()
}

fn on(r: &mut ClusterRunner, now: Time, input: Input) -> Vec<Effect> {
    let mut out = Vec::new();
    r.on(now, input, &mut out).unwrap();
    out
}

fn submit(r: &mut ClusterRunner, now: Time, job: Job, priority: Option<Priority>) {
    assert!(on(r, now, Input::Submit { job, priority }).is_empty());
}

fn started(effects: &[Effect]) -> Vec<(u64, u32, Duration, Launch)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Start(s) => Some((s.job.0, s.machine.0, s.run, s.launch)),
            _ => None,
        })
        .collect()
}

#[test]
fn the_meta_priority_orders_an_fb_meta_queue() {
    let p = platform(&[(4, 100)]);
    let mut r = runner(&p, PolicyKind::FbMeta, RunnerConfig::default());
    submit(&mut r, 0, Job::new(1, 0, 4, 100, 100), Some(0));
    assert_eq!(started(&on(&mut r, 0, Input::Pass)).len(), 1);
    // The machine is full: three jobs wait, arriving in the order 2, 3, 4 with priorities 0, 2, 1.
    for (id, prio) in [(2, 0), (3, 2), (4, 1)] {
        submit(&mut r, 1, Job::new(id, 1, 4, 10, 10), Some(prio));
    }
    on(&mut r, 1, Input::Pass);
    let queue: Vec<u64> = r.policy().queue().iter().map(|j| j.0).collect();
    assert_eq!(queue, vec![3, 4, 2], "higher meta priority first");
    on(&mut r, 100, Input::Ended { job: JobId(1) });
    assert_eq!(started(&on(&mut r, 100, Input::Pass))[0].0, 3);
}

/// The meta-scheduler weighs waiting jobs again (its fair-share recalculation): the queue
/// follows the new priorities from the next pass; the running job keeps its own.
#[test]
fn new_meta_priorities_reorder_the_waiting_jobs() {
    let p = platform(&[(4, 100)]);
    let mut r = runner(&p, PolicyKind::FbMeta, RunnerConfig::default());
    submit(&mut r, 0, Job::new(1, 0, 4, 100, 100), Some(5));
    assert_eq!(started(&on(&mut r, 0, Input::Pass)).len(), 1);
    for (id, prio) in [(2, 9), (3, 5), (4, 1)] {
        submit(&mut r, 1, Job::new(id, 1, 4, 10, 10), Some(prio));
    }
    let jobs = vec![(JobId(1), 0), (JobId(2), 1), (JobId(4), 9), (JobId(99), 3)];
    assert!(on(&mut r, 2, Input::Reprioritize { jobs }).is_empty());
    on(&mut r, 2, Input::Pass);
    let queue: Vec<u64> = r.policy().queue().iter().map(|j| j.0).collect();
    assert_eq!(queue, vec![4, 3, 2]);
    assert_eq!(
        r.job_priority(JobId(1)),
        Some(5),
        "a running job keeps its own"
    );
    assert_eq!(r.job_priority(JobId(4)), Some(9));
    on(&mut r, 100, Input::Ended { job: JobId(1) });
    assert_eq!(started(&on(&mut r, 100, Input::Pass))[0].0, 4);
}

/// Runs job 1 on machine 0 from 0, suspends it at 100 and starts job 2 there (the `Preemptor`
/// below), then lets job 1 start again at 130 on `resume_on`.
fn suspend_and_resume(migration: Migration, resume_on: u32) -> (Vec<Effect>, ClusterRunner) {
    let p = platform(&[(4, 300), (4, 300)]);
    let policy = Box::new(Preemptor::resuming_on(MachineId(resume_on)));
    let cfg = RunnerConfig {
        migration,
        ..RunnerConfig::default()
    };
    let mut r = ClusterRunner::new(&p, ClusterId(0), policy, cfg).unwrap();
    let mut long = Job::new(1, 0, 4, 1_000, 900);
    long.benchmark = Some(100);
    let mut all = Vec::new();
    submit(&mut r, 0, long, None);
    all.extend(on(&mut r, 0, Input::Pass));
    let mut urgent = Job::new(2, 100, 4, 30, 30);
    urgent.deadline = Some(1_000);
    submit(&mut r, 100, urgent, None);
    all.extend(on(&mut r, 100, Input::Pass));
    all.extend(on(&mut r, 130, Input::Ended { job: JobId(2) }));
    all.extend(on(&mut r, 130, Input::Pass));
    (all, r)
}

#[test]
fn a_job_resumed_where_it_was_suspended_continues_with_its_progress() {
    let (effects, mut r) = suspend_and_resume(Migration::Restart, 0);
    // 900 reference seconds take 300 s at bm 300; 100 s done = 300 reference seconds.
    assert_eq!(
        started(&effects),
        vec![
            (1, 0, 300, Launch::First),
            (2, 0, 30, Launch::First),
            (1, 0, 200, Launch::Resume)
        ]
    );
    assert!(effects.contains(&Effect::Suspend {
        job: JobId(1),
        machine: MachineId(0)
    }));
    // The limit left: 1,000 − 300 reference seconds, scaled: ⌈700 / 3⌉.
    let Some(Effect::Start(s)) = effects.iter().rev().find(|e| matches!(e, Effect::Start(_)))
    else {
        unreachable!()
    };
    assert_eq!(s.limit, 234);
    let done = on(&mut r, 330, Input::Ended { job: JobId(1) });
    let Effect::Finished(f) = done[0] else {
        unreachable!()
    };
    assert_eq!(
        (f.start, f.end, f.exec, f.suspensions, f.restarts),
        (0, 330, 300, 1, 0)
    );
}

/// A resumed job's setup seconds (a context switch) hold its processors without progress: they
/// lengthen its run and limit, and a suspension inside them keeps its progress unchanged.
#[test]
fn setup_seconds_hold_the_processors_without_progress() {
    let p = platform(&[(4, 100)]);
    let mut r = ClusterRunner::new(
        &p,
        ClusterId(0),
        Box::new(Preemptor::with_setup(20)),
        RunnerConfig::default(),
    )
    .unwrap();
    submit(&mut r, 0, Job::new(1, 0, 4, 1_000, 900), None);
    let mut all = on(&mut r, 0, Input::Pass);
    let mut urgent = Job::new(2, 100, 4, 30, 30);
    urgent.deadline = Some(1_000);
    submit(&mut r, 100, urgent, None);
    all.extend(on(&mut r, 100, Input::Pass));
    all.extend(on(&mut r, 130, Input::Ended { job: JobId(2) }));
    all.extend(on(&mut r, 130, Input::Pass));
    // 100 s done: 800 s of work and 900 s of limit left, plus the 20 s setup.
    assert_eq!(started(&all)[2], (1, 0, 820, Launch::Resume));
    let Some(Effect::Start(s)) = all.iter().rev().find(|e| matches!(e, Effect::Start(_))) else {
        unreachable!()
    };
    assert_eq!(s.limit, 920);
    // Suspended 15 s into its setup, then 30 s after its next start: no progress the first time,
    // 10 s the second (its setup again takes 20 s).
    let mut urgent = Job::new(3, 145, 4, 10, 10);
    urgent.deadline = Some(1_000);
    submit(&mut r, 145, urgent, None);
    let e = on(&mut r, 145, Input::Pass);
    assert!(e.contains(&Effect::Suspend {
        job: JobId(1),
        machine: MachineId(0)
    }));
    on(&mut r, 155, Input::Ended { job: JobId(3) });
    let e = on(&mut r, 155, Input::Pass);
    assert_eq!(started(&e), vec![(1, 0, 820, Launch::Resume)]);
    let mut urgent = Job::new(4, 185, 4, 10, 10);
    urgent.deadline = Some(1_000);
    submit(&mut r, 185, urgent, None);
    on(&mut r, 185, Input::Pass);
    on(&mut r, 195, Input::Ended { job: JobId(4) });
    let e = on(&mut r, 195, Input::Pass);
    assert_eq!(started(&e), vec![(1, 0, 810, Launch::Resume)]);
    let done = on(&mut r, 1_005, Input::Ended { job: JobId(1) });
    let Effect::Finished(f) = done[0] else {
        unreachable!()
    };
    // Held 100 + 15 + 30 + 810 s; 60 s of it were setup.
    assert_eq!((f.exec, f.suspensions), (955, 3));
}

#[test]
fn resumed_elsewhere_a_job_migrates_in_simulation_and_restarts_live() {
    let (effects, _) = suspend_and_resume(Migration::KeepProgress, 1);
    assert_eq!(started(&effects)[2], (1, 1, 200, Launch::Migrate));
    let (effects, mut r) = suspend_and_resume(Migration::Restart, 1);
    assert_eq!(started(&effects)[2], (1, 1, 300, Launch::Restart));
    let done = on(&mut r, 430, Input::Ended { job: JobId(1) });
    let Effect::Finished(f) = done[0] else {
        unreachable!()
    };
    assert_eq!((f.exec, f.suspensions, f.restarts), (400, 1, 1));
}

#[test]
fn overruns_follow_the_reference_rule() {
    let p = platform(&[(4, 100)]);
    for (extension, expected) in [(None, 120), (Some(5), 65)] {
        let cfg = RunnerConfig {
            overrun: OverrunRule { extension },
            ..RunnerConfig::default()
        };
        let mut r = runner(&p, PolicyKind::Easy, cfg);
        let mut j = Job::new(1, 0, 4, 60, 60);
        j.runtime = None;
        submit(&mut r, 0, j, None);
        on(&mut r, 0, Input::Pass);
        assert!(on(&mut r, 59, Input::Tick).is_empty());
        assert_eq!(
            on(&mut r, 60, Input::Tick),
            vec![Effect::Overrun {
                job: JobId(1),
                predicted_end: expected
            }]
        );
        assert_eq!(r.predicted_end(JobId(1)), Some(expected));
        assert_eq!(r.next_overrun(), Some(expected));
        assert!(on(&mut r, 61, Input::Tick).is_empty());
    }
}

/// The earliest predicted end over every running job, the slow way.
fn naive_next_overrun(r: &ClusterRunner) -> Option<Time> {
    r.jobs()
        .filter(|(_, running)| *running)
        .filter_map(|(j, _)| r.predicted_end(j.id))
        .min()
}

/// Found by replaying a KTH slice live: a job whose end is reported a second after its predicted
/// end still holds its processors when a pass runs at that instant (here a submission's); the pass
/// applies the overrun rule first, so no policy plans with them.
#[test]
fn a_pass_at_a_running_jobs_predicted_end_overruns_it_first() {
    let p = platform(&[(64, 100)]);
    for kind in [
        PolicyKind::Conservative,
        PolicyKind::Easy,
        PolicyKind::FbMod,
    ] {
        let mut r = runner(&p, kind, RunnerConfig::default());
        submit(&mut r, 0, Job::new(1, 0, 56, 9, 9), None);
        assert_eq!(started(&on(&mut r, 0, Input::Pass)).len(), 1, "{kind}");
        submit(&mut r, 9, Job::new(2, 9, 9, 5, 5), None);
        // Job 1 has not been reported ended at 9: 8 processors are free, job 2 needs 9.
        let effects = on(&mut r, 9, Input::Pass);
        assert_eq!(
            effects,
            vec![Effect::Overrun {
                job: JobId(1),
                predicted_end: 18
            }],
            "{kind}"
        );
        assert_eq!(r.policy().queue(), vec![JobId(2)], "{kind}");
        assert_eq!(r.next_overrun(), Some(18), "{kind}");
        assert_eq!(r.next_overrun(), naive_next_overrun(&r), "{kind}");
        on(&mut r, 10, Input::Ended { job: JobId(1) });
        assert_eq!(started(&on(&mut r, 10, Input::Pass))[0].0, 2, "{kind}");
    }
}

/// A policy that starts every job on one fixed machine with the processors it is told to give.
#[derive(Debug)]
struct Blind {
    machine: MachineId,
    procs: Option<u32>,
    queue: Vec<Job>,
}

impl Policy for Blind {
    fn describe(&self) -> String {
        "blind".into()
    }
    fn submit(&mut self, _: Time, job: &Job) -> Result<(), Rejection> {
        self.queue.push(job.clone());
        Ok(())
    }
    fn terminate(&mut self, _: Time, _: JobId) {}
    fn overrun(&mut self, _: Time, _: JobId, _: Time) {}
    fn cancel(&mut self, _: Time, _: JobId) -> bool {
        false
    }
    fn schedule(&mut self, _: Time, out: &mut Decisions) {
        for j in self.queue.drain(..) {
            out.starts
                .push(Start::on(j.id, self.machine, self.procs.unwrap_or(j.procs)));
        }
    }
    fn waiting_len(&self) -> usize {
        self.queue.len()
    }
    fn running_len(&self) -> usize {
        0
    }
    fn queue(&self) -> Vec<JobId> {
        self.queue.iter().map(|j| j.id).collect()
    }
    fn reservations(&self) -> Vec<Reservation> {
        Vec::new()
    }
}

#[test]
fn a_start_that_breaks_a_rule_is_refused() {
    let p = platform(&[(4, 100), (4, 100)]);
    let cases: [(MachineId, Option<u32>, bool, &str); 4] = [
        (MachineId(0), None, false, ""),
        (MachineId(7), None, false, "not in cluster"),
        (MachineId(0), Some(2), false, "2 processors given, 3 asked"),
        (MachineId(1), None, true, "machine m1 is down"),
    ];
    for (machine, procs, down, why) in cases {
        let policy = Box::new(Blind {
            machine,
            procs,
            queue: Vec::new(),
        });
        let mut r = ClusterRunner::new(&p, ClusterId(0), policy, RunnerConfig::default()).unwrap();
        if down {
            on(
                &mut r,
                0,
                Input::Machine {
                    machine: MachineId(1),
                    up: false,
                },
            );
        }
        submit(&mut r, 0, Job::new(1, 0, 3, 10, 10), None);
        submit(&mut r, 0, Job::new(2, 0, 3, 10, 10), None);
        let mut out = Vec::new();
        let res = r.on(0, Input::Pass, &mut out);
        if why.is_empty() {
            // Two 3-processor jobs on one 4-processor machine: the second is the bad one.
            let Err(RunnerError::BadDecision { job, why, .. }) = res else {
                panic!("oversubscription accepted")
            };
            assert_eq!(job, JobId(2));
            assert_eq!(why, "3 processors needed, 1 free");
            assert_eq!(started(&out).len(), 1);
        } else {
            let Err(RunnerError::BadDecision { why: got, .. }) = res else {
                panic!("{why}: accepted")
            };
            assert!(got.contains(why), "{got} should say {why}");
            assert!(out.is_empty());
        }
        r.ledger().check().unwrap();
    }
}

#[test]
fn cancel_requeue_and_restore() {
    let p = platform(&[(4, 100)]);
    let mut r = runner(&p, PolicyKind::Fcfs, RunnerConfig::default());
    // A job found running after a restart holds its processors.
    let mut out = Vec::new();
    r.on(
        50,
        Input::Restore {
            job: Job::new(1, 0, 4, 100, 100),
            priority: Some(2),
            machine: MachineId(0),
            started: 10,
            nodes: Vec::new(),
        },
        &mut out,
    )
    .unwrap();
    assert_eq!(r.running_on(JobId(1)), Some((MachineId(0), 10)));
    assert_eq!(r.predicted_end(JobId(1)), Some(110));
    submit(&mut r, 50, Job::new(2, 50, 4, 10, 10), None);
    assert!(started(&on(&mut r, 50, Input::Pass)).is_empty());
    // Its process is lost: requeued, it starts again from scratch, after job 2 (FCFS order).
    assert!(on(&mut r, 60, Input::Requeue { job: JobId(1) }).is_empty());
    assert_eq!(
        started(&on(&mut r, 60, Input::Pass)),
        vec![(2, 0, 10, Launch::First)]
    );
    // Cancelling the running job 2 frees the machine for job 1.
    on(&mut r, 65, Input::Cancel { job: JobId(2) });
    assert_eq!(
        started(&on(&mut r, 65, Input::Pass)),
        vec![(1, 0, 100, Launch::Restart)]
    );
    assert!(matches!(
        r.on(65, Input::Cancel { job: JobId(2) }, &mut out),
        Err(RunnerError::NotApplicable { .. })
    ));
    let Effect::Finished(f) = on(&mut r, 165, Input::Ended { job: JobId(1) })[0] else {
        unreachable!()
    };
    assert_eq!(
        (f.start, f.exec, f.restarts, f.priority),
        (10, 150, 1, Some(2))
    );
    assert!(r.is_empty());
    assert_eq!(r.ledger().busy_procs(), 0);
}

#[test]
fn nothing_starts_on_a_machine_that_is_down() {
    let p = platform(&[(4, 100)]);
    let mut r = runner(&p, PolicyKind::Easy, RunnerConfig::default());
    let down = Input::Machine {
        machine: MachineId(0),
        up: false,
    };
    on(&mut r, 0, down);
    submit(&mut r, 0, Job::new(1, 0, 4, 10, 10), None);
    assert!(on(&mut r, 0, Input::Pass).is_empty());
    on(
        &mut r,
        5,
        Input::Machine {
            machine: MachineId(0),
            up: true,
        },
    );
    assert_eq!(started(&on(&mut r, 5, Input::Pass)).len(), 1);
    let mut out = Vec::new();
    let other = Input::Machine {
        machine: MachineId(3),
        up: true,
    };
    assert_eq!(
        r.on(5, other, &mut out),
        Err(RunnerError::UnknownMachine(MachineId(3)))
    );
}

#[test]
fn a_logged_run_gives_the_same_decisions_again() {
    let p = platform(&[(8, 100), (4, 200)]);
    let mut log = Vec::new();
    let mut t = 0;
    for i in 1..=40u64 {
        t += (i * 7 % 13) as Time;
        let job = Job::new(
            i,
            t,
            1 + (i * 5 % 8) as u32,
            20 + (i * 11 % 50) as i64,
            10 + (i * 3 % 40) as i64,
        );
        log.push(Entry {
            time: t,
            input: Input::Submit {
                job,
                priority: Some((i % 3) as u8),
            },
        });
        log.push(Entry {
            time: t,
            input: Input::Pass,
        });
    }
    // The live side: the same inputs, with the ends the decisions cause fed back in time order.
    let mut live = runner(&p, PolicyKind::FbMeta, RunnerConfig::default());
    let mut ends: BTreeSet<(Time, u64)> = BTreeSet::new();
    let mut handled = Vec::new();
    let mut decisions = Vec::new();
    let mut feed = |r: &mut ClusterRunner, e: Entry, ends: &mut BTreeSet<(Time, u64)>| {
        let mut out = Vec::new();
        r.on(e.time, e.input.clone(), &mut out).unwrap();
        for d in &out {
            if let Effect::Start(s) = d {
                ends.insert((e.time + s.run, s.job.0));
            }
            decisions.push(replay::Decision {
                time: e.time,
                effect: *d,
            });
        }
        handled.push(e);
    };
    // Every end due by `until` (all of them when `None`), each followed by a pass, then `next`.
    type Ends = BTreeSet<(Time, u64)>;
    fn drain(
        feed: &mut impl FnMut(&mut ClusterRunner, Entry, &mut Ends),
        live: &mut ClusterRunner,
        ends: &mut Ends,
        next: Option<Entry>,
    ) {
        let until = next.as_ref().map(|e| e.time);
        while let Some(&(te, j)) = ends
            .first()
            .filter(|(te, _)| until.is_none_or(|u| *te <= u))
        {
            ends.pop_first();
            for input in [Input::Ended { job: JobId(j) }, Input::Pass] {
                feed(live, Entry { time: te, input }, ends);
            }
        }
        if let Some(e) = next {
            feed(live, e, ends);
        }
    }
    for e in log {
        drain(&mut feed, &mut live, &mut ends, Some(e));
    }
    drain(&mut feed, &mut live, &mut ends, None);
    assert!(live.is_empty());
    // The log goes through JSON and a fresh runner.
    let text: Vec<String> = handled
        .iter()
        .map(|e| serde_json::to_string(e).unwrap())
        .collect();
    let back: Vec<Entry> = text
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(back, handled);
    let mut again = runner(&p, PolicyKind::FbMeta, RunnerConfig::default());
    let res = rerun(&mut again, back);
    assert!(res.refused.is_empty());
    assert_eq!(res.decisions, decisions);
    assert_eq!(
        decisions
            .iter()
            .filter(|d| matches!(d.effect, Effect::Finished(_)))
            .count(),
        40
    );
}

/// An advance reservation through the runner: admitted, a conflicting one refused with the
/// stretch named, a waiting job kept out of it, and given up again, which lets the job start;
/// the inputs survive a JSON round trip (the form of the runner's input log).
#[test]
fn a_reservation_is_admitted_honoured_and_cancelled_through_the_runner() {
    let p = platform(&[(10, 100)]);
    let mut r = runner(&p, PolicyKind::Conservative, RunnerConfig::default());
    submit(&mut r, 0, Job::new(1, 0, 10, 100, 100), None);
    assert_eq!(started(&on(&mut r, 0, Input::Pass)).len(), 1);
    let reservation = AdvanceReservation {
        id: ReservationId(1),
        start: 150,
        end: 200,
        procs: 5,
        ..Default::default()
    };
    let input = Input::Reserve {
        reservation: reservation.clone(),
    };
    let json = serde_json::to_string(&input).unwrap();
    assert_eq!(
        json,
        r#"{"input":"reserve","reservation":{"id":1,"start":150,"end":200,"procs":5}}"#
    );
    assert_eq!(serde_json::from_str::<Input>(&json).unwrap(), input);
    on(&mut r, 10, input);
    let conflict = Input::Reserve {
        reservation: AdvanceReservation {
            id: ReservationId(2),
            start: 90,
            end: 160,
            procs: 1,
            ..Default::default()
        },
    };
    let e = r.on(10, conflict, &mut Vec::new()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "reservation r2 conflicts with the plan on [90, 100): 0 processors free there, 1 asked"
    );
    // The held reservation names the machine the policy put it on.
    let held = AdvanceReservation {
        machine: Some(MachineId(0)),
        ..reservation
    };
    assert_eq!(r.advance_reservations(), [held]);
    // Eight processors for 60 s: not before the reservation ends.
    submit(&mut r, 20, Job::new(2, 20, 8, 60, 60), None);
    on(&mut r, 20, Input::Pass);
    on(&mut r, 100, Input::Ended { job: JobId(1) });
    assert!(
        started(&on(&mut r, 100, Input::Pass)).is_empty(),
        "held for r1"
    );
    let e = r
        .on(
            120,
            Input::CancelReservation {
                id: ReservationId(9),
            },
            &mut Vec::new(),
        )
        .unwrap_err();
    assert_eq!(e.to_string(), "reservation r9 is not held");
    on(
        &mut r,
        120,
        Input::CancelReservation {
            id: ReservationId(1),
        },
    );
    assert_eq!(started(&on(&mut r, 120, Input::Pass))[0].0, 2);
    assert!(r.advance_reservations().is_empty());
}

/// A reservation asked for at its earliest instant: a running job and a waiting one planned
/// after it leave too few processors until the waiting one's planned end, so it is admitted
/// there (one instant earlier is a conflict); a request wider than the machine is refused at
/// once; the input survives a JSON round trip.
#[test]
fn a_reservation_asked_for_at_its_earliest_is_admitted_where_the_plan_first_has_room() {
    let p = platform(&[(10, 100)]);
    let mut r = runner(&p, PolicyKind::Conservative, RunnerConfig::default());
    submit(&mut r, 0, Job::new(1, 0, 10, 100, 100), None);
    submit(&mut r, 0, Job::new(2, 0, 6, 50, 50), None);
    assert_eq!(started(&on(&mut r, 0, Input::Pass)).len(), 1);
    let ask = |id: u64, procs: u32| AdvanceReservation {
        id: ReservationId(id),
        start: 0,
        end: 30,
        procs,
        ..Default::default()
    };
    let early = Input::Reserve {
        reservation: AdvanceReservation {
            start: 149,
            end: 179,
            ..ask(1, 5)
        },
    };
    assert!(
        r.on(5, early, &mut Vec::new()).is_err(),
        "job 2 holds 6 of 10 until 150"
    );
    let input = Input::ReserveEarliest {
        reservation: ask(1, 5),
    };
    let json = serde_json::to_string(&input).unwrap();
    assert_eq!(serde_json::from_str::<Input>(&json).unwrap(), input);
    on(&mut r, 5, input);
    let held = r.advance_reservations();
    assert_eq!((held[0].start, held[0].end), (150, 180));
    let e = r
        .on(
            5,
            Input::ReserveEarliest {
                reservation: ask(2, 11),
            },
            &mut Vec::new(),
        )
        .unwrap_err();
    assert!(e.to_string().contains("11"), "{e}");
    assert_eq!(r.advance_reservations().len(), 1);
}

/// A job naming a reservation the policy does not hold is refused at the door, with the reason:
/// a policy without reservations says so.
#[test]
fn a_job_for_a_reservation_not_held_is_refused() {
    let p = platform(&[(10, 100)]);
    let mut job = Job::new(1, 0, 2, 10, 10);
    job.reservation = Some(ReservationId(4));
    let mut easy = runner(&p, PolicyKind::Edf, RunnerConfig::default());
    let input = || Input::Submit {
        job: job.clone(),
        priority: None,
    };
    let e = easy.on(0, input(), &mut Vec::new()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "job 1 cannot run in reservation r4: no such reservation is held (unknown, cancelled or ended)"
    );
    let mut conservative = runner(&p, PolicyKind::Conservative, RunnerConfig::default());
    let e = conservative.on(0, input(), &mut Vec::new()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "job 1 cannot run in reservation r4: no such reservation is held (unknown, cancelled or ended)"
    );
    assert!(
        easy.is_empty() && conservative.is_empty(),
        "nothing half-made"
    );
}

/// What a restarted local scheduler feeds its runner: the machine down until its agent returns,
/// the reservation admitted again (from now on), the running job restored, the waiting ones
/// queued again. The plan it rebuilds is the one it had: job 2, which would overlap the
/// reservation, still waits for its end, and job 3 runs inside it at its start; a job running
/// inside the reservation is restored inside it and holds none of the machine's other processors.
#[test]
fn a_restart_rebuilds_the_plan_around_the_reservations() {
    let p = platform(&[(4, 100)]);
    for kind in [
        PolicyKind::Conservative,
        PolicyKind::PlanningFcfs,
        PolicyKind::PlanningSjf,
        PolicyKind::Dynp,
    ] {
        let m = MachineId(0);
        let mut r = runner(&p, kind, RunnerConfig::default());
        on(
            &mut r,
            50,
            Input::Machine {
                machine: m,
                up: false,
            },
        );
        let reservation = AdvanceReservation {
            id: ReservationId(1),
            start: 60,
            end: 105,
            procs: 2,
            ..Default::default()
        };
        on(
            &mut r,
            50,
            Input::Reserve {
                reservation: reservation.clone(),
            },
        );
        on(
            &mut r,
            50,
            Input::Machine {
                machine: m,
                up: true,
            },
        );
        on(
            &mut r,
            50,
            Input::Restore {
                job: Job::new(1, 0, 2, 100, 100),
                priority: None,
                machine: m,
                started: 1,
                nodes: Vec::new(),
            },
        );
        submit(&mut r, 50, Job::new(2, 40, 2, 30, 30), None);
        let mut inside = Job::new(3, 45, 2, 20, 20);
        inside.reservation = Some(ReservationId(1));
        submit(&mut r, 50, inside, None);
        let mut starts = Vec::new();
        for t in 50..=105 {
            for e in on(&mut r, t, Input::Pass) {
                if let Effect::Start(s) = e {
                    starts.push((s.job.0, t));
                }
            }
            if t == 80 {
                on(&mut r, t, Input::Ended { job: JobId(3) });
            }
        }
        assert_eq!(starts, vec![(3, 60), (2, 105)], "{kind:?}");

        // Restored inside its reservation: the two other processors stay free for others.
        let mut r = runner(&p, kind, RunnerConfig::default());
        on(
            &mut r,
            70,
            Input::Reserve {
                reservation: AdvanceReservation {
                    start: 70,
                    ..reservation
                },
            },
        );
        let mut running = Job::new(3, 45, 2, 20, 20);
        running.reservation = Some(ReservationId(1));
        on(
            &mut r,
            70,
            Input::Restore {
                job: running,
                priority: None,
                machine: m,
                started: 60,
                nodes: Vec::new(),
            },
        );
        submit(&mut r, 70, Job::new(4, 70, 2, 30, 30), None);
        let s = started(&on(&mut r, 70, Input::Pass));
        assert_eq!(
            s.iter().map(|s| s.0).collect::<Vec<_>>(),
            vec![4],
            "{kind:?}"
        );
    }
}

fn nodes(r: &ClusterRunner, job: u64) -> Vec<(u32, u32)> {
    r.nodes_of(JobId(job))
        .unwrap_or_default()
        .iter()
        .map(|p| (p.node.0, p.procs))
        .collect()
}

#[test]
fn a_partition_of_alike_nodes_runs_easy_over_them_as_one_pool() {
    let p = platform(&[(4, 100); 4]);
    let mut r = runner(&p, PolicyKind::Easy, RunnerConfig::default());
    assert!(r.is_partition());
    assert_eq!(r.policy().single_machine(), Some((MachineId(0), 16)));
    // 6 wide: wider than any node, on the fewest nodes (4 + 2); then 2 fills node 1; 8 wide
    // takes the two whole nodes left.
    for (id, procs) in [(1, 6), (2, 2), (3, 8)] {
        submit(&mut r, 0, Job::new(id, 0, procs, 100, 50), None);
    }
    let s = started(&on(&mut r, 0, Input::Pass));
    assert_eq!(
        s.iter().map(|x| (x.0, x.1)).collect::<Vec<_>>(),
        [(1, 0), (2, 1), (3, 2)],
        "each start names its head node"
    );
    assert_eq!(nodes(&r, 1), [(0, 4), (1, 2)]);
    assert_eq!(nodes(&r, 2), [(1, 2)]);
    assert_eq!(nodes(&r, 3), [(2, 4), (3, 4)]);
    assert_eq!(r.ledger().busy_procs(), 16);
    r.ledger().check().unwrap();
    // Job 1 ends: its 6 processors on nodes 0 and 1 are free again (4 + 2), and a 5-wide job
    // fills node 1's two and takes three of node 0.
    on(&mut r, 50, Input::Ended { job: JobId(1) });
    assert_eq!(r.nodes_of(JobId(1)), None);
    submit(&mut r, 50, Job::new(4, 50, 5, 100, 50), None);
    assert_eq!(started(&on(&mut r, 50, Input::Pass))[0].0, 4);
    assert_eq!(nodes(&r, 4), [(0, 3), (1, 2)]);
    // A node down: nothing starts on the pool until it is back.
    on(
        &mut r,
        60,
        Input::Machine {
            machine: MachineId(3),
            up: false,
        },
    );
    on(&mut r, 60, Input::Ended { job: JobId(2) });
    submit(&mut r, 60, Job::new(5, 60, 1, 100, 50), None);
    assert!(started(&on(&mut r, 60, Input::Pass)).is_empty());
    on(
        &mut r,
        61,
        Input::Machine {
            machine: MachineId(3),
            up: true,
        },
    );
    assert_eq!(started(&on(&mut r, 61, Input::Pass))[0].0, 5);
    r.ledger().check().unwrap();
}

#[test]
fn a_multi_node_job_is_restored_on_its_nodes() {
    let p = platform(&[(4, 100); 3]);
    let mut r = runner(&p, PolicyKind::Conservative, RunnerConfig::default());
    let parts = vec![
        NodePart {
            node: MachineId(2),
            procs: 4,
        },
        NodePart {
            node: MachineId(0),
            procs: 3,
        },
    ];
    let restore = |nodes: Vec<NodePart>, id: u64| Input::Restore {
        job: Job::new(id, 0, 7, 100, 100),
        priority: None,
        machine: MachineId(0),
        started: 10,
        nodes,
    };
    on(&mut r, 20, restore(parts.clone(), 1));
    assert_eq!(nodes(&r, 1), [(0, 3), (2, 4)]);
    assert_eq!(r.ledger().busy_procs(), 7);
    // Parts that do not fit what is left are refused, and nothing is held for them.
    let mut out = Vec::new();
    assert!(r.on(20, restore(parts, 2), &mut out).is_err());
    assert_eq!(r.ledger().busy_procs(), 7);
    assert_eq!(r.nodes_of(JobId(2)), None);
    // 5 free: a 6-wide job waits for job 1 (estimate to 110), then runs on the fewest nodes.
    submit(&mut r, 20, Job::new(3, 20, 6, 10, 10), None);
    assert!(started(&on(&mut r, 20, Input::Pass)).is_empty());
    on(&mut r, 30, Input::Ended { job: JobId(1) });
    assert_eq!(started(&on(&mut r, 30, Input::Pass))[0].0, 3);
    assert_eq!(nodes(&r, 3), [(0, 4), (1, 2)]);
}

#[test]
fn a_partition_may_keep_one_machine_per_job() {
    let p = platform(&[(4, 100); 2]);
    let policy = PolicyConfig {
        partition: false,
        ..PolicyConfig::new(PolicyKind::Easy)
    }
    .build(&p, ClusterId(0))
    .unwrap();
    let r = ClusterRunner::new(&p, ClusterId(0), policy, RunnerConfig::default()).unwrap();
    assert!(!r.is_partition());
    // Unlike machines are no partition.
    let q = platform(&[(4, 100), (4, 200)]);
    assert!(!runner(&q, PolicyKind::Easy, RunnerConfig::default()).is_partition());
    assert_eq!(q.alike_nodes(ClusterId(0)), None);
    assert!(p.alike_nodes(ClusterId(0)).is_some());
}

/// A single-machine policy (FCFS, EASY, conservative) on a machine slower than a job's benchmark
/// plans with the job's run scaled to that machine: the processors of a job that runs twice its
/// estimate are not free to the policy at the unscaled estimate. Before the runner scaled the
/// job it hands such a policy, the policy started the next job on them at 100 and the runner
/// refused the start ("processors are not free").
#[test]
fn a_single_machine_policy_plans_with_the_run_scaled_to_its_machine() {
    for machines in [&[(16, 50)][..], &[(8, 50), (8, 50)][..]] {
        let p = platform(machines);
        for kind in [PolicyKind::Fcfs, PolicyKind::Easy, PolicyKind::Conservative] {
            let mut r = runner(&p, kind, RunnerConfig::default());
            let job = |id, procs, estimate| {
                let mut j = Job::new(id, 0, procs, estimate, estimate);
                j.benchmark = Some(100);
                j
            };
            submit(&mut r, 0, job(1, 16, 100), None);
            submit(&mut r, 0, job(2, 16, 100), None);
            // 1 processor for 150 s of the reference machine, 300 s here: it would delay job 2.
            submit(&mut r, 0, job(3, 1, 150), None);
            let s = started(&on(&mut r, 0, Input::Pass));
            assert_eq!(s.iter().map(|x| (x.0, x.2)).collect::<Vec<_>>(), [(1, 200)]);
            assert!(
                started(&on(&mut r, 100, Input::Pass)).is_empty(),
                "{kind:?} on {machines:?}: job 1 still holds the machine at 100"
            );
            on(&mut r, 200, Input::Ended { job: JobId(1) });
            let s = started(&on(&mut r, 200, Input::Pass));
            assert_eq!(
                s.iter().map(|x| x.0).collect::<Vec<_>>(),
                [2],
                "{kind:?} on {machines:?}"
            );
        }
    }
}

#[test]
fn a_job_held_back_is_checked_for_what_it_asks_as_its_submission_would_be() {
    let p = platform(&[(4, 1), (8, 1)]);
    let mut r = runner(&p, PolicyKind::Easy, RunnerConfig::default());
    let job = |id: u64, procs: u32, est: Duration| Job::new(id, 0, procs, est, est);
    assert!(r.admissible(&job(1, 8, 10)).is_ok());
    assert!(matches!(
        r.admissible(&job(2, 9, 10)),
        Err(RunnerError::Rejected(Rejection::TooWide { max: 8, .. }))
    ));
    assert!(matches!(
        r.admissible(&job(3, 1, 0)),
        Err(RunnerError::Rejected(Rejection::BadEstimate { .. }))
    ));
    let mut big = job(4, 1, 10);
    big.memory_kb = Some(1 << 30);
    let mut p2 = p.clone();
    for m in &mut p2.machines {
        m.memory_kb = Some(1 << 20);
    }
    let r2 = runner(&p2, PolicyKind::Easy, RunnerConfig::default());
    assert!(matches!(
        r2.admissible(&big),
        Err(RunnerError::Rejected(Rejection::NoEligibleMachine { .. }))
    ));
    submit(&mut r, 0, job(5, 1, 10), None);
    assert!(matches!(
        r.admissible(&job(5, 1, 10)),
        Err(RunnerError::Duplicate(_))
    ));
    // What it accepts, the submission accepts too.
    let ok = job(6, 8, 10);
    assert!(r.admissible(&ok).is_ok());
    submit(&mut r, 0, ok, None);
}

/// A live job's end can come after the end its reservation was planned on (a start claim's round
/// trip, a whole-second clock): the reservation's job waits for the processors instead of being
/// refused mid-pass, and is dropped once it would run past its reservation.
#[test]
fn a_reservation_job_waits_for_a_late_end_and_is_dropped_once_it_no_longer_fits() {
    use crate::policy::AdvanceReservation;
    let p = platform(&[(8, 1)]);
    for (late_end, starts_at) in [(11, Some(11)), (13, None)] {
        let mut r = runner(&p, PolicyKind::Easy, RunnerConfig::default());
        submit(&mut r, 0, Job::new(1, 0, 8, 10, 10), None);
        assert_eq!(started(&on(&mut r, 0, Input::Pass)).len(), 1);
        // 8 processors over [10, 17): the 5-second job of reservation 1 fits from 10 to 12.
        let reservation = AdvanceReservation::new(1, 10, 17, 8);
        on(&mut r, 1, Input::Reserve { reservation });
        let mut inside = Job::new(2, 1, 8, 5, 5);
        inside.reservation = Some(ReservationId(1));
        submit(&mut r, 1, inside, None);
        // Job 1 runs on past its predicted end: nothing starts, and nothing is refused.
        for t in 10..late_end {
            let fx = on(&mut r, t, Input::Pass);
            assert!(started(&fx).is_empty(), "{t}: {fx:?}");
            assert!(!fx.iter().any(|e| matches!(e, Effect::Dropped { .. })));
        }
        on(&mut r, late_end, Input::Ended { job: JobId(1) });
        let fx = on(&mut r, late_end, Input::Pass);
        match starts_at {
            Some(t) => {
                assert_eq!(started(&fx), [(2, 0, 5, Launch::First)]);
                assert_eq!(r.running_on(JobId(2)), Some((MachineId(0), t)));
            }
            None => {
                assert_eq!(fx, [Effect::Dropped { job: JobId(2) }]);
                assert!(!r.contains(JobId(2)));
            }
        }
        r.ledger().check().unwrap();
    }
}

/// `platform` with every machine's memory known.
fn with_memory(mut p: Platform, kb: u64) -> Platform {
    for m in &mut p.machines {
        m.memory_kb = Some(kb);
    }
    p
}

fn job_with_memory(id: u64, at: Time, procs: u32, kb: u64) -> Job {
    let mut j = Job::new(id, at, procs, 100, 100);
    j.memory_kb = Some(kb);
    j
}

/// Memory is held like processors: two jobs whose memory together exceeds a machine do not run
/// on it at once. A single-machine policy sees a job by its processor equivalent (one processor
/// asking 600 of a 4-processor node's 1,000 KiB counts as 3), so on a partition no node is ever
/// short of memory wherever the pool places a job.
#[test]
fn memory_is_held_like_processors() {
    // One 8-processor machine of 1,000 KiB under EASY: 500 + 600 KiB do not fit together.
    let p = with_memory(platform(&[(8, 100)]), 1000);
    let mut r = runner(&p, PolicyKind::Easy, RunnerConfig::default());
    submit(&mut r, 0, job_with_memory(1, 0, 1, 500), None);
    submit(&mut r, 0, job_with_memory(2, 0, 1, 600), None);
    submit(&mut r, 0, Job::new(3, 0, 3, 100, 100), None);
    let s = started(&on(&mut r, 0, Input::Pass));
    assert_eq!(s.iter().map(|x| x.0).collect::<Vec<_>>(), [1, 3]);
    r.ledger().check().unwrap();
    on(&mut r, 100, Input::Ended { job: JobId(1) });
    assert_eq!(started(&on(&mut r, 100, Input::Pass))[0].0, 2);

    // Two nodes of 4 processors and 1,000 KiB as one pool: 600 KiB on one processor counts as
    // 3, so a third such job waits for the first to end instead of landing on a node that
    // already holds 600 KiB.
    let p = with_memory(platform(&[(4, 100); 2]), 1000);
    let mut r = runner(&p, PolicyKind::Easy, RunnerConfig::default());
    assert!(r.is_partition());
    for id in 1..=3 {
        submit(&mut r, 0, job_with_memory(id, 0, 1, 600), None);
    }
    let s = started(&on(&mut r, 0, Input::Pass));
    assert_eq!(s.iter().map(|x| x.0).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(nodes(&r, 1), [(0, 3)]);
    assert_eq!(nodes(&r, 2), [(1, 3)]);
    r.ledger().check().unwrap();
    on(&mut r, 100, Input::Ended { job: JobId(1) });
    assert_eq!(started(&on(&mut r, 100, Input::Pass))[0].0, 3);
    assert_eq!(nodes(&r, 3), [(0, 3)]);
    // A job asking no more memory than its processors' share is seen as it is.
    submit(&mut r, 100, job_with_memory(4, 100, 2, 400), None);
    on(&mut r, 100, Input::Pass);
    assert_eq!(
        r.ledger().busy_procs(),
        8,
        "3 + 3 + 2: job 4 took its 2 processors"
    );
}

/// The ledger refuses a start that would oversubscribe a machine's memory, whatever the policy
/// decided.
#[test]
fn a_start_beyond_a_machines_memory_is_refused() {
    let p = with_memory(platform(&[(8, 100)]), 1000);
    let policy = Box::new(Blind {
        machine: MachineId(0),
        procs: None,
        queue: Vec::new(),
    });
    let mut r = ClusterRunner::new(&p, ClusterId(0), policy, RunnerConfig::default()).unwrap();
    submit(&mut r, 0, job_with_memory(1, 0, 1, 500), None);
    submit(&mut r, 0, job_with_memory(2, 0, 1, 600), None);
    let mut out = Vec::new();
    let Err(RunnerError::BadDecision { job, why, .. }) = r.on(0, Input::Pass, &mut out) else {
        panic!("memory oversubscribed")
    };
    assert_eq!(
        (job, why.as_str()),
        (JobId(2), "600 KiB of memory needed, 500 KiB free")
    );
    r.ledger().check().unwrap();
}
