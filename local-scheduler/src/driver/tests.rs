//! The driver on a virtual clock, without processes: the durability rule for start orders (an
//! agent is told to start a job only once the job's start is committed), and suspension (the
//! agent is told to stop the job's process, then to let it run on where it was, and the input log
//! re-runs to the same decisions).

use super::*;

/// A virtual clock reading `s` seconds after an arbitrary origin (no clock is read in these tests).
pub(super) fn at(s: i64) -> Now {
    Now {
        secs: 1_000 + s,
        mono_ms: 1_000 * s as u64,
    }
}

fn driver(dir: &std::path::Path) -> Driver {
    let cfg = Config::from_toml(&format!(
        "cluster = \"c1\"\nstate_dir = {:?}\n[policy]\npolicy = \"fcfs\"\n\
         [[machines]]\nname = \"m1\"\nprocessors = 2\n",
        dir.join("state")
    ))
    .unwrap();
    Driver::new(cfg, at(0)).unwrap()
}

/// Registers the agent of machine `m1` (2 processors) at time 0; returns its session id.
fn register_m1(d: &mut Driver) -> String {
    register_m1_with(d, Vec::new(), at(0)).agent_id
}

/// Registers an agent of machine `m1` (2 processors) at `now`, reporting `jobs`: the answer.
fn register_m1_with(
    d: &mut Driver,
    jobs: Vec<v1::JobReport>,
    now: Now,
) -> v1::RegisterAgentResponse {
    let r = v1::RegisterAgentRequest {
        machine: "m1".into(),
        processors: 2,
        jobs,
        ..Default::default()
    };
    d.register(r, now).unwrap()
}

/// Job 1, started again on m1 and not ended by its earlier process's end, runs from `t` and
/// completes 10 s later.
fn runs_to_completion(d: &mut Driver, agent: &str, t: i64) {
    use v1::AgentJobState as A;
    assert_eq!(
        d.jobs[&1].state,
        JobState::Running,
        "not ended by the old end"
    );
    assert!(beat(d, agent, vec![report(1, A::Running, None)], at(t)).is_empty());
    assert!(beat(d, agent, vec![report(1, A::Exited, Some(0))], at(t + 10)).is_empty());
    assert_eq!(states_of(d, 1).last(), Some(&JobState::Completed));
}

fn fail_commits(d: &Driver, fail: bool) {
    d.journal
        .store()
        .unwrap()
        .fail_commits
        .store(fail, std::sync::atomic::Ordering::Relaxed);
}

fn start_orders(d: &Driver) -> Vec<u64> {
    d.pending[0]
        .iter()
        .filter_map(|c| match &c.kind {
            Some(Kind::Start(s)) => Some(s.job_id),
            _ => None,
        })
        .collect()
}

/// Run `run` of job `id`: one processor for 10 s, estimated 100 s.
fn request(id: u64, run: u32) -> v1::EnqueueRequest {
    v1::EnqueueRequest {
        job_id: id,
        spec: Some(v1::JobSpec {
            user: "u".into(),
            processors: 1,
            estimate_s: 100,
            emulate_runtime_s: Some(10),
            ..Default::default()
        }),
        priority: 1,
        run,
        ..Default::default()
    }
}

#[test]
fn a_start_order_waits_for_the_commit_of_its_start() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = driver(dir.path());
    d.admit(request(1, 0), at(0).secs).unwrap();
    d.flush().unwrap();
    assert_eq!(d.jobs[&1].state, JobState::Queued, "no agent yet: waits");

    // The agent registers, the policy starts the job, but its start cannot be committed.
    fail_commits(&d, true);
    register_m1(&mut d);
    assert_eq!(d.jobs[&1].state, JobState::Running, "decided");
    assert!(start_orders(&d).is_empty(), "ordered before it was durable");

    // The store recovers: the next tick commits the start, then the order leaves.
    fail_commits(&d, false);
    d.tick(at(1));
    assert_eq!(start_orders(&d), [1]);
    let jobs = d.journal.store().unwrap().load(usize::MAX).unwrap().jobs;
    let stored = jobs
        .iter()
        .find(|j| j.request.as_ref().unwrap().job_id == 1);
    assert_eq!(
        stored.map(|j| j.state),
        Some(JobState::Running as i32),
        "stored as running"
    );
}

/// The status reports every job's urgency (running and waiting) and a running job's estimate,
/// from which the meta-scheduler's urgent brokers read the site's urgent load.
#[test]
fn the_status_reports_the_jobs_urgency() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = driver(dir.path());
    let with = |id: u64, u: v1::Urgency| {
        let mut r = request(id, 0);
        r.spec.as_mut().unwrap().urgency = u as i32;
        r
    };
    // m1 has 2 processors: jobs 1 (critical) and 2 (typical) run, job 3 (high) waits.
    d.admit(with(1, v1::Urgency::Critical), at(0).secs).unwrap();
    d.admit(request(2, 0), at(0).secs).unwrap();
    d.admit(with(3, v1::Urgency::High), at(0).secs).unwrap();
    d.flush().unwrap();
    register_m1(&mut d);
    let s = d.status(at(1).secs);
    let running: Vec<(u64, v1::Urgency, Option<i64>)> = s
        .running
        .iter()
        .map(|r| (r.job_id, r.urgency(), r.estimate_s))
        .collect();
    assert_eq!(
        running,
        [
            (1, v1::Urgency::Critical, Some(100)),
            (2, v1::Urgency::Unspecified, Some(100))
        ]
    );
    let queued: Vec<(u64, v1::Urgency)> = s.queue.iter().map(|q| (q.job_id, q.urgency())).collect();
    assert_eq!(queued, [(3, v1::Urgency::High)]);
}

/// The ids of the reservations the site holds at `now`.
fn held_ids(d: &Driver, now: Now) -> Vec<u64> {
    d.status(now.secs)
        .advance_reservations
        .iter()
        .map(|r| r.id)
        .collect()
}

/// A job that ended here is refused when the same run comes again, even after a restart, and
/// taken when a later run comes (the meta-scheduler requeued it).
#[test]
fn an_ended_job_runs_again_only_as_a_later_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = driver(dir.path());
    let req = |run| request(1, run);
    d.admit(req(0), at(0).secs).unwrap();
    let cancel = v1::CancelRequest {
        job_id: 1,
        reason: "test".into(),
        run: None,
    };
    d.cancel(cancel.clone(), at(1).secs).unwrap();
    d.flush().unwrap();
    drop(d);
    let mut d = driver(dir.path());
    let again = d.admit(req(0), at(2).secs).unwrap_err();
    assert_eq!(again.code(), tonic::Code::AlreadyExists, "{again:?}");
    d.admit(req(1), at(2).secs).unwrap();
    assert_eq!(d.jobs[&1].state, JobState::Queued);
    assert_eq!(
        d.journal.events().last().map(|e| (e.job_id, e.run)),
        Some((1, 1))
    );
    // While run 1 lives, no run of the job is taken.
    assert!(d.admit(req(2), at(3).secs).is_err());
    // A kill of run 0 (a late fragment kill) leaves run 1 alone; one of run 1 cancels it.
    let kill = |run| v1::CancelRequest {
        run: Some(run),
        ..cancel.clone()
    };
    let late = d.cancel(kill(0), at(4).secs).unwrap_err();
    assert_eq!(late.code(), tonic::Code::NotFound, "{late:?}");
    assert_eq!(d.jobs[&1].state, JobState::Queued);
    d.cancel(kill(1), at(4).secs).unwrap();
    assert!(!d.jobs.contains_key(&1), "run 1 cancelled");
    let gone = d.cancel(kill(0), at(5).secs).unwrap_err();
    assert_eq!(gone.code(), tonic::Code::NotFound, "{gone:?}");
}

fn orders(d: &mut Driver) -> Vec<String> {
    named(std::mem::take(&mut d.pending[0]))
}

fn named(commands: Vec<v1::AgentCommand>) -> Vec<String> {
    commands
        .into_iter()
        .map(|c| match c.kind {
            Some(Kind::Start(s)) => format!("start {}", s.job_id),
            Some(Kind::Kill(k)) => format!("kill {}", k.job_id),
            Some(Kind::Suspend(s)) => format!("suspend {}", s.job_id),
            Some(Kind::Resume(r)) => format!("resume {}", r.job_id),
            None => "none".into(),
        })
        .collect()
}

pub(super) fn report(id: u64, state: v1::AgentJobState, exit: Option<i32>) -> v1::JobReport {
    v1::JobReport {
        job_id: id,
        state: state as i32,
        exit_code: exit,
        ..Default::default()
    }
}

/// A driver of one 2-processor machine `m1` under the test Preemptor (`extra`: more keys of its
/// configuration), with m1's agent registered: the driver and the agent's id.
fn preempting(extra: &str) -> (Driver, String) {
    let cfg = Config::from_toml(&format!(
        "cluster = \"c1\"\n{extra}[[machines]]\nname = \"m1\"\nprocessors = 2\n"
    ))
    .unwrap();
    let platform = cfg.platform().unwrap();
    let policy = Box::new(gridsched_core::runner::testing::Preemptor::default());
    let mut d = Driver::with_policy(cfg, platform, policy, at(0)).unwrap();
    let agent = register_m1(&mut d);
    (d, agent)
}

/// Enqueues job `id` (one processor, runs 60 s; a deadline makes the Preemptor preempt for it).
fn enqueue(d: &mut Driver, id: u64, deadline: Option<i64>, now: Now) {
    let req = v1::EnqueueRequest {
        job_id: id,
        spec: Some(v1::JobSpec {
            user: "u".into(),
            processors: 1,
            estimate_s: 100,
            emulate_runtime_s: Some(60),
            deadline,
            ..Default::default()
        }),
        priority: 1,
        ..Default::default()
    };
    let (tx, _rx) = oneshot::channel();
    d.enqueue_group(vec![(req, tx)], now);
}

/// Job 1 starts on m1 and runs; urgent job 2 (a deadline) arrives at time 10: job 1 is
/// suspended, job 2 starts.
fn suspend_for_an_urgent_job(d: &mut Driver, agent: &str) {
    use v1::AgentJobState as A;
    enqueue(d, 1, None, at(0));
    assert_eq!(orders(d), ["start 1"]);
    assert!(beat(d, agent, vec![report(1, A::Running, None)], at(1)).is_empty());
    enqueue(d, 2, Some(1_500), at(10));
    assert_eq!(orders(d), ["suspend 1", "start 2"]);
}

/// The states of job `id`'s events, in order.
fn states_of(d: &Driver, id: u64) -> Vec<JobState> {
    (d.journal.events())
        .filter(|e| e.job_id == id)
        .map(|e| e.state())
        .collect()
}

/// A heartbeat of `agent` reporting `jobs`: the orders its answer carries.
fn beat(d: &mut Driver, agent: &str, jobs: Vec<v1::JobReport>, now: Now) -> Vec<String> {
    let res = d
        .heartbeat(
            v1::HeartbeatRequest {
                agent_id: agent.to_owned(),
                jobs,
                time: now.secs,
            },
            now,
        )
        .unwrap();
    named(res.commands)
}

#[test]
fn a_suspended_job_is_stopped_and_resumed_where_it_ran_and_the_log_reruns() {
    use gridsched_core::runner::replay;
    use v1::AgentJobState as A;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("inputs.jsonl");
    let (mut d, agent) = preempting(&format!("input_log = {log:?}\n"));
    // An urgent job: job 1 is stopped where it runs, job 2 takes the machine.
    suspend_for_an_urgent_job(&mut d, &agent);
    assert_eq!(d.jobs[&1].state, JobState::Suspended);
    // The agent may still report job 1 running before it handles the order: it is not killed.
    let running_both = vec![report(1, A::Running, None), report(2, A::Running, None)];
    assert!(
        beat(&mut d, &agent, running_both, at(11)).is_empty(),
        "nothing killed"
    );
    // Job 2 is done: job 1 continues on m1, where its stopped process waits.
    let done = vec![report(1, A::Suspended, None), report(2, A::Exited, Some(0))];
    assert_eq!(beat(&mut d, &agent, done, at(70)), ["resume 1"]);
    assert!(beat(&mut d, &agent, vec![report(1, A::Running, None)], at(71)).is_empty());
    let details: Vec<String> = d
        .journal
        .events()
        .filter(|e| e.job_id == 1)
        .map(|e| e.detail.clone())
        .collect();
    assert_eq!(
        details,
        [
            "queued",
            "started on m1",
            "suspended on m1 (stopped, keeps its progress)",
            "resumed on m1 with its progress"
        ]
    );
    let states = states_of(&d, 1);
    assert_eq!(
        states,
        [
            JobState::Queued,
            JobState::Running,
            JobState::Suspended,
            JobState::Running
        ]
    );
    assert!(beat(&mut d, &agent, vec![report(1, A::Exited, Some(0))], at(121)).is_empty());
    assert!(d.jobs.is_empty());
    d.flush().unwrap();
    // The logged inputs give the same decisions again.
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<replay::Line> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let checked = replay::check_with(lines, |h| {
        let policy = Box::new(gridsched_core::runner::testing::Preemptor::default());
        ClusterRunner::new(&h.platform, h.cluster, policy, h.config)
    })
    .unwrap();
    assert_eq!((checked.starts, checked.suspensions), (3, 1));
}

/// A suspended job whose stopped process ends (killed, or its agent lost it) waits again from
/// scratch, and says so: a QUEUED event before its next RUNNING one, from which the
/// meta-scheduler counts a run from scratch (`Job.restarts`). Found by the chaos soak, where such a
/// job ran twice while the grid counted one run.
#[test]
fn a_suspended_job_whose_process_is_gone_is_queued_again_and_says_so() {
    use v1::AgentJobState as A;
    let (mut d, agent) = preempting("");
    suspend_for_an_urgent_job(&mut d, &agent);
    // Its stopped process ended: job 1 waits, from scratch, and starts again after job 2.
    let gone = vec![
        report(1, A::KilledByOrder, None),
        report(2, A::Running, None),
    ];
    beat(&mut d, &agent, gone, at(20));
    assert_eq!(d.jobs[&1].state, JobState::Queued);
    let done = vec![report(2, A::Exited, Some(0))];
    assert_eq!(beat(&mut d, &agent, done, at(70)), ["start 1"]);
    assert!(beat(&mut d, &agent, vec![report(1, A::Running, None)], at(71)).is_empty());
    let events: Vec<(JobState, String)> = d
        .journal
        .events()
        .filter(|e| e.job_id == 1)
        .map(|e| (e.state(), e.detail.clone()))
        .collect();
    let states: Vec<JobState> = events.iter().map(|e| e.0).collect();
    assert_eq!(
        states,
        [
            JobState::Queued,
            JobState::Running,
            JobState::Suspended,
            JobState::Queued,
            JobState::Running
        ],
        "{events:?}"
    );
    assert!(
        events[3].1.contains("starts again from scratch"),
        "{events:?}"
    );
}

#[test]
fn an_overrun_moves_the_predicted_end_by_the_simulators_rule() {
    use gridsched_core::runner::replay;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("inputs.jsonl");
    let cfg = Config::from_toml(&format!(
        "cluster = \"c1\"\nlost_after_ms = 600000\ninput_log = {log:?}\n[policy]\npolicy = \"easy\"\n\
         [[machines]]\nname = \"m1\"\nprocessors = 2\n"
    ))
    .unwrap();
    let mut d = Driver::new(cfg, at(0)).unwrap();
    register_m1(&mut d);
    enqueue_true(&mut d, 1, 2, 30, at(0));
    assert_eq!(d.runner.predicted_end(JobId(1)), Some(1_030));
    d.tick(at(29));
    assert_eq!(d.runner.predicted_end(JobId(1)), Some(1_030));
    // Still running at its predicted end: one more estimate, as in the reference simulator.
    d.tick(at(31));
    assert_eq!(d.runner.predicted_end(JobId(1)), Some(1_061));
    d.flush().unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<replay::Line> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.iter().any(|l| matches!(
        l,
        replay::Line::Out(replay::Decision {
            effect: gridsched_core::runner::Effect::Overrun {
                predicted_end: 1_061,
                ..
            },
            ..
        })
    )));
    replay::check(lines).unwrap();
}

#[test]
fn a_job_longer_than_the_clusters_limit_is_refused_at_the_door() {
    let cfg = Config::from_toml(
        "cluster = \"c1\"\nmax_estimate_s = 600\n[[machines]]\nname = \"m1\"\nprocessors = 2\n",
    )
    .unwrap();
    let mut d = Driver::new(cfg, at(0)).unwrap();
    let req = |id: u64, estimate_s| v1::EnqueueRequest {
        job_id: id,
        spec: Some(v1::JobSpec {
            user: "u".into(),
            processors: 1,
            estimate_s,
            emulate_runtime_s: Some(1),
            ..Default::default()
        }),
        ..Default::default()
    };
    let e = d.admit(req(1, 601), 0).unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert!(e.message().starts_with("spec.estimate_s") && e.message().contains("600"));
    assert!(!d.runner.contains(JobId(1)), "nothing half-admitted");
    d.admit(req(2, 600), 0).unwrap();
}

/// A cluster of two machines and one floating `matlab` copy under fb-mod.
fn cluster_driver(dir: &std::path::Path) -> Driver {
    let cfg = Config::from_toml(&format!(
        "cluster = \"c1\"\nstate_dir = {:?}\n[policy]\npolicy = \"fb-mod\"\n\
         [[machines]]\nname = \"m1\"\nprocessors = 4\n\
         [[machines]]\nname = \"m2\"\nprocessors = 4\n\
         [[licences]]\nname = \"matlab\"\ncopies = 1\n",
        dir.join("state")
    ))
    .unwrap();
    Driver::new(cfg, at(0)).unwrap()
}

fn enqueue_into(d: &mut Driver, id: u64, procs: u32, reservation: u64) -> Result<(), Status> {
    let req = v1::EnqueueRequest {
        job_id: id,
        spec: Some(v1::JobSpec {
            user: "u".into(),
            processors: procs,
            estimate_s: 50,
            licences: vec!["matlab".into()],
            reservation: Some(reservation),
            emulate_runtime_s: Some(10),
            ..Default::default()
        }),
        priority: 1,
        submit_time: 0,
        claim_before_start: false,
        run: 0,
    };
    d.admit(req, at(0).secs).map(|_| ())
}

/// A reservation of a machine and a licence copy at a heterogeneous-cluster site: the machine
/// the policy chose is shown and stored, unknown names are INVALID_ARGUMENT naming the field, a
/// job for a reservation not held is NOT_FOUND and one it cannot hold FAILED_PRECONDITION (the
/// core's reasons), and a restart re-admits it on the same machine with the same licence.
#[test]
fn a_cluster_reservation_names_its_machine_and_licence_and_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = cluster_driver(dir.path());
    let ask = |machine: &str, licence: &str| v1::ReserveRequest {
        reservation: Some(v1::AdvanceReservation {
            id: 7,
            start_time: at(100).secs,
            end_time: at(200).secs,
            processors: 2,
            machine: machine.into(),
            licences: vec![licence.into()],
            ..Default::default()
        }),
        ..Default::default()
    };
    let e = d.reserve(ask("m9", "matlab"), at(0)).unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert!(e.message().starts_with("reservation.machine:"), "{e:?}");
    let e = d.reserve(ask("", "maple"), at(0)).unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert!(e.message().starts_with("reservation.licences[0]:"), "{e:?}");
    let r = d
        .reserve(ask("m2", "matlab"), at(0))
        .unwrap()
        .reservation
        .unwrap();
    assert_eq!(
        (r.machine.as_str(), r.licences.clone()),
        ("m2", vec!["matlab".to_string()])
    );
    // The one copy is held: another reservation for it at the same time is refused by name.
    let mut again = ask("", "matlab");
    again.reservation.as_mut().unwrap().id = 8;
    let e = d.reserve(again, at(0)).unwrap_err();
    assert_eq!(e.code(), tonic::Code::FailedPrecondition);
    assert!(
        e.message().contains("licence matlab: 0 of its copies free"),
        "{e:?}"
    );

    let e = enqueue_into(&mut d, 1, 1, 9).unwrap_err();
    assert_eq!(e.code(), tonic::Code::NotFound, "{e:?}");
    let e = enqueue_into(&mut d, 2, 3, 7).unwrap_err();
    assert_eq!(e.code(), tonic::Code::FailedPrecondition, "{e:?}");
    assert!(e.message().contains("the reservation holds 2"), "{e:?}");
    enqueue_into(&mut d, 3, 2, 7).unwrap();
    d.flush().unwrap();
    drop(d);

    let d = cluster_driver(dir.path());
    let listed = d.advance_reservations(at(1).secs);
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (
            listed[0].id,
            listed[0].machine.as_str(),
            listed[0].jobs.clone()
        ),
        (7, "m2", vec![3])
    );
    let held = d.runner.advance_reservations();
    assert_eq!(
        held[0].machine.map(|m| d.names.machine_name(m)),
        Some(Some("m2"))
    );
    assert_eq!(held[0].licences.len(), 1);
}

/// Enqueues job `id` running `true` on `procs` processors with estimate `estimate_s`; it must be
/// accepted.
/// An Enqueue of job `id` running `true` on `procs` processors.
pub(super) fn true_request(id: u64, procs: u32, estimate_s: i64) -> v1::EnqueueRequest {
    v1::EnqueueRequest {
        job_id: id,
        spec: Some(v1::JobSpec {
            user: "u".into(),
            processors: procs,
            estimate_s,
            command: Some(v1::Command {
                program: "true".into(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        priority: 1,
        ..Default::default()
    }
}

pub(super) fn enqueue_true(d: &mut Driver, id: u64, procs: u32, estimate_s: i64, now: Now) {
    let req = true_request(id, procs, estimate_s);
    let (tx, mut rx) = oneshot::channel();
    d.enqueue_group(vec![(req, tx)], now);
    rx.try_recv().unwrap().unwrap();
}

/// Co-allocation's two phases at a site: a Reserve with `earliest` is admitted at the first
/// instant it fits (here the running job's predicted end, then the first reservation's end), one
/// with a lease is held tentatively and lapses unless committed; a committed one is stored and
/// survives a restart, a lapsed or restarted-away one answers NOT_FOUND to its commit.
#[test]
fn an_earliest_tentative_reservation_is_held_until_committed_or_its_lease_lapses() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = driver(dir.path());
    register_m1(&mut d);
    enqueue_true(&mut d, 1, 2, 100, at(0));
    assert_eq!(d.runner.predicted_end(JobId(1)), Some(at(100).secs));
    let hold = |id: u64, from: Now| v1::ReserveRequest {
        reservation: Some(v1::AdvanceReservation {
            id,
            start_time: from.secs,
            end_time: from.secs + 50,
            processors: 2,
            ..Default::default()
        }),
        earliest: true,
        lease_ms: 500,
    };
    let r1 = d
        .reserve(hold(1, at(1)), at(1))
        .unwrap()
        .reservation
        .unwrap();
    assert_eq!(
        (r1.start_time, r1.end_time, r1.tentative),
        (at(100).secs, at(150).secs, true)
    );
    let r2 = d
        .reserve(hold(2, at(1)), at(1))
        .unwrap()
        .reservation
        .unwrap();
    assert_eq!((r2.start_time, r2.end_time), (at(150).secs, at(200).secs));
    // A retry of the same request finds the hold it made.
    let again = d
        .reserve(hold(1, at(1)), at(1))
        .unwrap()
        .reservation
        .unwrap();
    assert_eq!(again.start_time, at(100).secs);
    // Without `earliest` the same interval is refused: the job runs then.
    let mut fixed = hold(3, at(1));
    fixed.earliest = false;
    let e = d.reserve(fixed, at(1)).unwrap_err();
    assert_eq!(e.code(), tonic::Code::FailedPrecondition, "{e:?}");
    // r1 is committed in time; r2's lease lapses at the tick after 1.5 s.
    let commit = |d: &mut Driver, id: u64, now: Now| {
        d.commit_reservation(v1::CommitReservationRequest { id }, now)
    };
    let c = commit(&mut d, 1, at(1)).unwrap().reservation.unwrap();
    assert!(!c.tentative);
    d.tick(at(2));
    let e = commit(&mut d, 2, at(2)).unwrap_err();
    assert_eq!(e.code(), tonic::Code::NotFound, "{e:?}");
    assert_eq!(held_ids(&d, at(2)), [1]);
    // A new hold takes r2's place; the restart keeps r1 and drops the uncommitted r4.
    let r4 = d
        .reserve(hold(4, at(2)), at(2))
        .unwrap()
        .reservation
        .unwrap();
    assert_eq!(r4.start_time, at(150).secs);
    drop(d);
    let mut d = driver(dir.path());
    assert_eq!(held_ids(&d, at(3)), [1]);
    assert_eq!(
        commit(&mut d, 4, at(3)).unwrap_err().code(),
        tonic::Code::NotFound
    );
}

/// The meta-scheduler's new priorities (its fair share weighed again) reorder the waiting jobs of
/// a site that takes them (`fb-meta`), are written with the jobs' records, and leave running and
/// unknown jobs alone. The job holding the reservation keeps it (Flexible Backfilling's unmodified
/// variant: a reservation once made is kept).
#[test]
fn new_priorities_reorder_the_waiting_jobs_and_survive_a_restart() {
    use v1::AgentJobState as A;
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let new = || {
        let cfg = Config::from_toml(&format!(
            "cluster = \"c1\"\nstate_dir = {state:?}\n[policy]\npolicy = \"fb-meta\"\n\
             [[machines]]\nname = \"m1\"\nprocessors = 2\n"
        ))
        .unwrap();
        Driver::new(cfg, at(0)).unwrap()
    };
    let mut d = new();
    let whole = |id: u64| {
        let mut r = request(id, 0);
        r.spec.as_mut().unwrap().processors = 2;
        r
    };
    for id in 1..=4 {
        d.admit(whole(id), at(0).secs).unwrap();
    }
    d.flush().unwrap();
    let agent = register_m1(&mut d);
    d.tick(at(0));
    assert_eq!(
        orders(&mut d),
        ["start 1"],
        "the machine is whole for one job"
    );
    let to = |job_id, priority| v1::JobPriority { job_id, priority };
    let res = d
        .reprioritize(
            v1::ReprioritizeRequest {
                jobs: vec![to(1, 9), to(2, 1), to(4, 9), to(99, 9)],
            },
            at(1).secs,
        )
        .unwrap();
    assert_eq!(
        res.applied, 1,
        "job 4 only: 1 runs, 2 is unchanged, 99 unknown"
    );
    assert_eq!(
        d.jobs[&1].req.priority, 1,
        "a running job keeps its priority"
    );
    let mut ended = |id, s| {
        let beat = v1::HeartbeatRequest {
            agent_id: agent.clone(),
            jobs: vec![report(id, A::Exited, Some(0))],
            time: at(s).secs,
        };
        named(d.heartbeat(beat, at(s)).unwrap().commands)
    };
    assert_eq!(ended(1, 10), ["start 2"], "job 2 holds the reservation");
    assert_eq!(ended(2, 20), ["start 4"], "job 4 overtakes job 3");
    d.flush().unwrap();
    drop(d);
    let d = new();
    assert_eq!(d.jobs[&4].req.priority, 9, "written with the record");
    assert_eq!(d.jobs[&3].req.priority, 1);
}

/// A newer lease epoch is written before its call is served and read back at a restart, so the
/// service refuses a deposed leader from its first call on; an older epoch changes nothing.
#[test]
fn the_newest_lease_epoch_is_stored_before_its_call_is_served() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = driver(dir.path());
    assert_eq!(d.stored_epoch(), 0);
    for e in [7, 3] {
        let (tx, mut rx) = tokio::sync::oneshot::channel();
        d.handle(Msg::Epoch(e, tx), at(1));
        rx.try_recv().unwrap().unwrap();
    }
    drop(d);
    let d = driver(dir.path());
    assert_eq!(d.stored_epoch(), 7);
    let fence = gridsched_security::Fence::starting_at(d.stored_epoch());
    let mut md = tonic::metadata::MetadataMap::new();
    md.insert(gridsched_security::fence::EPOCH_KEY, 6.into());
    let deposed = fence.admit(&md).unwrap_err();
    assert_eq!(deposed.code(), tonic::Code::Unavailable, "{deposed:?}");

    // A store that cannot write refuses the call instead of serving it unfenced.
    let mut d = d;
    fail_commits(&d, true);
    let (tx, mut rx) = tokio::sync::oneshot::channel();
    d.handle(Msg::Epoch(9, tx), at(2));
    let e = rx.try_recv().unwrap().unwrap_err();
    assert_eq!(e.code(), tonic::Code::Internal, "{e:?}");
    assert_eq!(d.stored_epoch(), 7);
}

/// Enqueues job `id` on `procs` processors (runs 10 s), critical when `urgent`.
fn enqueue_urgent(d: &mut Driver, id: u64, procs: u32, urgent: bool, now: Now) {
    let mut req = request(id, 0);
    let spec = req.spec.as_mut().unwrap();
    spec.processors = procs;
    if urgent {
        spec.urgency = v1::Urgency::Critical as i32;
    }
    let (tx, _rx) = oneshot::channel();
    d.enqueue_group(vec![(req, tx)], now);
}

/// One 2-processor machine `m1` under FCFS whose urgent layer kills typical jobs for urgent ones:
/// job 1 (2 processors) runs, urgent job 2 arrives (job 1 is killed) and ends at time 15 while the
/// agent still reports job 1's killed process running. The driver and the agent's id.
fn killed_for_an_urgent_job() -> (Driver, String) {
    use v1::AgentJobState as A;
    let cfg = Config::from_toml(
        "cluster = \"c1\"\n[policy]\npolicy = \"fcfs\"\nurgent = { preempt_by = \"kill\" }\n\
         [[machines]]\nname = \"m1\"\nprocessors = 2\n",
    )
    .unwrap();
    let mut d = Driver::new(cfg, at(0)).unwrap();
    let agent = register_m1(&mut d);
    enqueue_urgent(&mut d, 1, 2, false, at(0));
    assert_eq!(orders(&mut d), ["start 1"]);
    assert!(beat(&mut d, &agent, vec![report(1, A::Running, None)], at(1)).is_empty());
    enqueue_urgent(&mut d, 2, 1, true, at(5));
    assert_eq!(orders(&mut d), ["kill 1", "start 2"]);
    assert_eq!(d.jobs[&1].state, JobState::Queued);
    // Job 1 starts again on m1 in the runner, but its order waits; its old process, still
    // there, is killed again (the first order may have been lost).
    let dying = vec![report(1, A::Running, None), report(2, A::Exited, Some(0))];
    assert_eq!(beat(&mut d, &agent, dying, at(15)), ["kill 1"]);
    assert_eq!(d.jobs[&1].state, JobState::Running);
    (d, agent)
}

/// A job killed for an urgent one and started again on the same machine gets its new start order
/// only once the killed process has ended: the agent holds one run of a job at a time and took
/// the earlier order for a duplicate, so the job stayed RUNNING at the grid with no process (the
/// chaos soak's mixed stream). The killed process's last RUNNING reports are not the new run's.
#[test]
fn a_job_killed_for_an_urgent_one_starts_again_only_once_its_process_has_ended() {
    use v1::AgentJobState as A;
    let (mut d, agent) = killed_for_an_urgent_job();
    // The killed process's RUNNING report was not taken for the new run's.
    assert!(!d.jobs[&1].reported_running);
    // Its end comes: acknowledged, and the start order leaves with the same answer.
    let ended = vec![report(1, A::KilledByOrder, None)];
    let res = d
        .heartbeat(
            v1::HeartbeatRequest {
                agent_id: agent.clone(),
                jobs: ended,
                time: 0,
            },
            at(16),
        )
        .unwrap();
    assert_eq!(res.acknowledged_jobs, [1]);
    assert_eq!(named(res.commands), ["start 1"]);
    runs_to_completion(&mut d, &agent, 17);
    let states = states_of(&d, 1);
    use JobState::{Completed, Queued, Running};
    assert_eq!(states, [Queued, Running, Queued, Running, Completed]);
}

/// The same, when the agent dies with the killed process's end unreported: the new agent does not
/// report the job, so that process is gone, and the held start order leaves then; the later run's
/// end is its own, not taken for the killed process's.
#[test]
fn a_killed_process_that_a_new_agent_does_not_report_has_ended() {
    let (mut d, _) = killed_for_an_urgent_job();
    // The agent is killed and comes back with nothing.
    let again = register_m1_with(&mut d, Vec::new(), at(20)).agent_id;
    assert_eq!(orders(&mut d), ["start 1"]);
    runs_to_completion(&mut d, &again, 21);
    assert!(d.jobs.is_empty(), "job 1 ended: {:?}", d.jobs.keys());
}

/// A job whose cancellation is asked while its start waits for its killed process's end ends
/// CANCELLED when that end comes, and is never started.
#[test]
fn a_job_cancelled_while_its_start_waits_for_a_kill_is_never_started() {
    use v1::AgentJobState as A;
    let (mut d, agent) = killed_for_an_urgent_job();
    let cancel = v1::CancelRequest {
        job_id: 1,
        ..Default::default()
    };
    d.cancel(cancel, at(16).secs).unwrap();
    assert_eq!(orders(&mut d), ["kill 1"]);
    let ended = vec![report(1, A::KilledByOrder, None)];
    assert!(beat(&mut d, &agent, ended, at(17)).is_empty(), "no start");
    let last = d.journal.events().filter(|e| e.job_id == 1).last().unwrap();
    assert_eq!(last.state(), JobState::Cancelled, "{last:?}");
    assert!(d.jobs.is_empty());
}

/// A suspended job the policy starts again on another machine: its stopped process is killed
/// where it waits, and it says QUEUED ("starts again from scratch") before its new start, from
/// which the meta-scheduler counts a run from scratch.
#[test]
fn a_suspended_job_restarted_elsewhere_is_queued_again_and_says_so() {
    use v1::AgentJobState as A;
    let cfg = Config::from_toml(
        "cluster = \"c1\"\n[[machines]]\nname = \"m1\"\nprocessors = 2\n\
         [[machines]]\nname = \"m2\"\nprocessors = 2\n",
    )
    .unwrap();
    let platform = cfg.platform().unwrap();
    let policy = gridsched_core::runner::testing::Preemptor::resuming_on(MachineId(1));
    let mut d = Driver::with_policy(cfg, platform, Box::new(policy), at(0)).unwrap();
    let agent = register_m1(&mut d);
    let m2 = v1::RegisterAgentRequest {
        machine: "m2".into(),
        processors: 2,
        ..Default::default()
    };
    d.register(m2, at(0)).unwrap();
    suspend_for_an_urgent_job(&mut d, &agent);
    let done = vec![report(1, A::Suspended, None), report(2, A::Exited, Some(0))];
    assert_eq!(beat(&mut d, &agent, done, at(70)), ["kill 1"]);
    assert_eq!(named(std::mem::take(&mut d.pending[1])), ["start 1"]);
    let last = d.journal.events().filter(|e| e.job_id == 1).last().unwrap();
    assert_eq!(last.state(), JobState::Queued, "{last:?}");
    assert_eq!(
        last.detail,
        "requeued: its stopped process on m1 is killed; it starts again from scratch"
    );
}

/// The driver of `preempting(state)` started again at `now` from its state directory.
fn restarted(state: &str, now: Now) -> Driver {
    let cfg = Config::from_toml(&format!(
        "cluster = \"c1\"\n{state}[[machines]]\nname = \"m1\"\nprocessors = 2\n"
    ))
    .unwrap();
    let platform = cfg.platform().unwrap();
    let policy = Box::new(gridsched_core::runner::testing::Preemptor::default());
    Driver::with_policy(cfg, platform, policy, now).unwrap()
}

/// A job suspended when its local scheduler restarts is queued again from scratch (its stopped
/// process is not followed over the restart), and says so.
#[test]
fn a_suspended_job_is_queued_again_after_a_restart_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let state = format!("state_dir = {:?}\n", dir.path().join("state"));
    let (mut d, agent) = preempting(&state);
    suspend_for_an_urgent_job(&mut d, &agent);
    d.flush().unwrap();
    drop(d);
    let d = restarted(&state, at(20));
    assert_eq!(d.jobs[&1].state, JobState::Queued);
    let last = d.journal.events().filter(|e| e.job_id == 1).last().unwrap();
    assert_eq!(last.state(), JobState::Queued, "{last:?}");
    assert_eq!(
        last.detail,
        "requeued after a restart: it was suspended; it starts again from scratch"
    );
}

/// After a restart of its site, the stopped process of a job suspended before is killed when its
/// agent reports it, and the job's new run is ordered only once that process has ended: the agent
/// would take the order for the old process's, and its end for the new run's (the mixed soak:
/// jobs suspended at gamma ended FAILED "killed" after gamma's local scheduler was killed).
#[test]
fn a_stopped_process_left_by_a_restart_ends_before_the_job_starts_again() {
    use v1::AgentJobState as A;
    let dir = tempfile::tempdir().unwrap();
    let state = format!("state_dir = {:?}\n", dir.path().join("state"));
    let (mut d, agent) = preempting(&state);
    suspend_for_an_urgent_job(&mut d, &agent);
    let done = vec![report(1, A::Suspended, None), report(2, A::Exited, Some(0))];
    // Job 2 has ended; the site is killed before it resumes job 1.
    d.reports(at(30).secs, MachineId(0), &done);
    d.flush().unwrap();
    drop(d);
    let mut d = restarted(&state, at(40));
    let back = vec![report(1, A::Suspended, None)];
    let agent = register_m1_with(&mut d, back, at(41)).agent_id;
    assert_eq!(
        d.jobs[&1].state,
        JobState::Running,
        "started again in the runner"
    );
    assert_eq!(
        orders(&mut d),
        ["kill 1"],
        "no start while the old process is there"
    );
    let gone = vec![report(1, A::KilledByOrder, None)];
    assert_eq!(beat(&mut d, &agent, gone, at(42)), ["start 1"]);
    runs_to_completion(&mut d, &agent, 43);
}

/// A job suspended before its agent reported it running is said RUNNING first: its start was
/// ordered, and the meta-scheduler, which takes SUSPENDED only of a running job, counts the run
/// the suspension ends (the mixed soak: a job suspended 19 ms after its start, queued afresh by
/// its site's restart, started twice with one run counted).
#[test]
fn a_job_suspended_before_its_running_report_is_said_running_first() {
    let (mut d, _agent) = preempting("");
    enqueue(&mut d, 1, None, at(0));
    assert_eq!(orders(&mut d), ["start 1"]);
    enqueue(&mut d, 2, Some(1_500), at(1));
    assert_eq!(orders(&mut d), ["suspend 1", "start 2"]);
    let states = states_of(&d, 1);
    assert_eq!(
        states,
        [JobState::Queued, JobState::Running, JobState::Suspended]
    );
}

/// An agent that registers again (its session lost, the process the same) with the end of a
/// process killed for an urgent job gets that end acknowledged in the registration's answer, and
/// the held start leaves with it: an agent still holding the report would take the start for
/// that process's, and its next report of the end would end the new run (FAILED "killed").
#[test]
fn a_registration_acknowledges_the_ends_it_records() {
    use v1::AgentJobState as A;
    let (mut d, _) = killed_for_an_urgent_job();
    let res = register_m1_with(&mut d, vec![report(1, A::KilledByOrder, None)], at(20));
    assert_eq!(res.acknowledged_jobs, [1]);
    assert_eq!(orders(&mut d), ["start 1"]);
    assert_eq!(
        d.jobs[&1].state,
        JobState::Running,
        "not ended by the old end"
    );
}
