//! The Slurm-backed site on a virtual clock, Slurm played by the test: what it submits, asks,
//! releases and cancels, and the events it derives from what Slurm reports.

use super::*;
use crate::config::Config;
use tokio::sync::oneshot;

const CONF: &str = r#"
cluster = "c1"
backend = "slurm"
[[machines]]
name = "localhost"
processors = 16
[[licences]]
name = "matlab"
copies = 2
[slurm]
rest_url = "http://127.0.0.1:6820"
token = "t"
work_dir = "/w"
release_ahead_cpus = 0
"#;

fn site_in(dir: Option<&std::path::Path>) -> SlurmSite {
    let mut cfg = Config::from_toml(CONF).unwrap();
    cfg.state_dir = dir.map(|d| d.to_path_buf());
    SlurmSite::new(cfg, 0).unwrap()
}

fn at(secs: Time, mono_ms: u64) -> Now {
    Now { secs, mono_ms }
}

fn node(alloc: u32) -> SlurmNode {
    SlurmNode {
        name: "localhost".into(),
        cpus: 16,
        alloc_cpus: alloc,
        state: "idle".into(),
        state_flags: Vec::new(),
    }
}

fn sjob(s: &SlurmSite, id: u32, job: u64, state: &str) -> SlurmJob {
    SlurmJob {
        job_id: id,
        name: mapping::job_name(s.tag(), job, 0),
        job_state: state.into(),
        state_reason: "None".into(),
        start_time: if state == "PENDING" { 0 } else { 1005 },
        end_time: if state == "PENDING" || state == "RUNNING" {
            0
        } else {
            1009
        },
        batch_host: "localhost".into(),
        priority: 1,
        ..Default::default()
    }
}

/// Answers the poll the site has asked for with `jobs` (None: nothing changed).
fn answer_poll(s: &mut SlurmSite, now: Now, jobs: Option<Vec<SlurmJob>>) {
    s.tick(now);
    let calls = s.take_calls();
    assert!(
        calls.iter().any(|c| matches!(c, Call::Poll { .. })),
        "no poll asked: {calls:?}"
    );
    s.done(
        Done::Polled(Ok(Snapshot {
            jobs,
            nodes: vec![node(0)],
            licences: Vec::new(),
        })),
        now,
    );
}

/// Slurm accepted the submission of job `job` (run 0) as Slurm job `slurm`.
fn accepted(s: &mut SlurmSite, job: u64, slurm: u32, now: Now) {
    s.done(
        Done::Submitted {
            job,
            run: 0,
            result: Ok(slurm),
        },
        now,
    );
}

fn enqueue(s: &mut SlurmSite, id: u64, procs: u32, claim: bool, now: Now) -> Result<(), Status> {
    let (tx, mut rx) = oneshot::channel();
    let r = v1::EnqueueRequest {
        job_id: id,
        spec: Some(v1::JobSpec {
            user: "alice".into(),
            processors: procs,
            estimate_s: 10,
            emulate_runtime_s: Some(3),
            ..Default::default()
        }),
        priority: 5,
        submit_time: now.secs,
        claim_before_start: claim,
        run: 0,
    };
    s.enqueue_group(vec![(r, tx)], now);
    rx.try_recv().expect("answered").map(|_| ())
}

fn events(s: &mut SlurmSite) -> Vec<(u64, JobState, Time, String)> {
    s.feed(Some(0))
        .unwrap()
        .0
        .into_iter()
        .map(|e| (e.job_id, e.state(), e.time, e.detail))
        .collect()
}

fn submits(calls: &[Call]) -> Vec<(u64, bool)> {
    calls
        .iter()
        .filter_map(|c| match c {
            Call::Submit {
                job, submission, ..
            } => Some((*job, submission.body["job"]["hold"] == true)),
            _ => None,
        })
        .collect()
}

fn claims_link(s: &mut SlurmSite) -> mpsc::UnboundedReceiver<v1::ClaimRequest> {
    let (tx, mut rx) = oneshot::channel();
    s.handle(Msg::Claims(tx), at(1000, 0));
    rx.try_recv().unwrap().unwrap()
}

/// The whole life of a claimed job: refused before Slurm has been read, submitted held, its
/// claim asked, released once granted, RUNNING and COMPLETED at Slurm's times.
#[test]
fn a_job_is_submitted_held_claimed_released_and_followed() {
    let mut s = site_in(None);
    let e = enqueue(&mut s, 7, 4, true, at(1000, 0)).unwrap_err();
    assert_eq!(e.code(), tonic::Code::Unavailable, "{e:?}");
    answer_poll(&mut s, at(1000, 0), Some(Vec::new()));
    let mut link = claims_link(&mut s);
    enqueue(&mut s, 7, 4, true, at(1001, 100)).unwrap();
    assert_eq!(submits(&s.take_calls()), [(7, true)]);
    assert!(link.try_recv().is_err(), "claimed before Slurm has the job");
    accepted(&mut s, 7, 101, at(1001, 150));
    assert_eq!(link.try_recv().unwrap().start, [7]);
    assert!(s.take_calls().is_empty());
    s.handle(
        Msg::ClaimAnswer(v1::ClaimAnswer {
            granted: vec![7],
            ..Default::default()
        }),
        at(1002, 200),
    );
    assert_eq!(s.take_calls(), [Call::Release { job: 7, slurm: 101 }]);
    let seen = vec![sjob(&s, 101, 7, "RUNNING")];
    answer_poll(&mut s, at(1006, 600), Some(seen));
    let seen = vec![sjob(&s, 101, 7, "COMPLETED")];
    answer_poll(&mut s, at(1010, 1200), Some(seen));
    let ev = events(&mut s);
    assert_eq!(
        ev.iter().map(|e| (e.1, e.2)).collect::<Vec<_>>(),
        [
            (JobState::Queued, 1001),
            (JobState::Running, 1005),
            (JobState::Completed, 1009)
        ]
    );
    assert_eq!(ev[1].3, "started by Slurm on localhost (job 101)");
    assert!(s.jobs.is_empty());
}

/// Claims are asked while the cluster has room (16 CPUs, nothing ahead): 8 + 8 yes, the third
/// 8 waits; a higher grid priority is asked first.
#[test]
fn claims_are_asked_while_the_cluster_has_room() {
    let mut s = site_in(None);
    answer_poll(&mut s, at(1000, 0), Some(Vec::new()));
    for id in 1..=3 {
        enqueue(&mut s, id, 8, true, at(1000, 0)).unwrap();
    }
    s.jobs.get_mut(&3).unwrap().req.priority = 9;
    let _ = s.take_calls();
    for id in 1..=3u64 {
        accepted(&mut s, id, 100 + id as u32, at(1000, 10));
    }
    let mut link = claims_link(&mut s);
    assert_eq!(link.try_recv().unwrap().waiting, [1, 2, 3]);
    let mut asked = Vec::new();
    while let Ok(r) = link.try_recv() {
        asked.extend(r.start);
    }
    assert_eq!(
        asked,
        [3, 1],
        "job 3 (priority 9) and job 1 fit, job 2 waits"
    );
    let st = s.status(1000);
    let reasons: Vec<_> = st
        .queue
        .iter()
        .map(|q| (q.job_id, q.pending_reason.clone().unwrap()))
        .collect();
    assert_eq!(reasons[0].0, 3, "the queue is in priority order");
    assert!(
        reasons[2].1.contains("until the cluster has room"),
        "{reasons:?}"
    );
}

/// A site restarted after Slurm took a submission it had not recorded finds the job by its name
/// instead of submitting it again, and releases it once granted.
#[test]
fn a_restarted_site_adopts_its_unrecorded_submission() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut s = site_in(Some(dir.path()));
        answer_poll(&mut s, at(1000, 0), Some(Vec::new()));
        enqueue(&mut s, 7, 4, false, at(1000, 0)).unwrap();
        assert_eq!(submits(&s.take_calls()), [(7, false)]);
        // Killed before Slurm's answer was recorded.
    }
    let mut s = site_in(Some(dir.path()));
    s.tick(at(1003, 0));
    assert_eq!(s.take_calls(), [Call::Poll { since: None }]);
    let mut held = sjob(&s, 55, 7, "PENDING");
    held.priority = 0;
    s.done(
        Done::Polled(Ok(Snapshot {
            jobs: Some(vec![held]),
            nodes: vec![node(0)],
            licences: Vec::new(),
        })),
        at(1003, 10),
    );
    assert_eq!(
        s.take_calls(),
        [Call::Release { job: 7, slurm: 55 }],
        "adopted (and released, as it needs no claim), not submitted again"
    );
    assert_eq!(s.jobs[&7].slurm, Some(55));
}

/// A submission whose outcome is unknown is not repeated until a full read of Slurm's jobs says
/// it did not arrive.
#[test]
fn an_unknown_submission_outcome_waits_for_a_full_read() {
    let mut s = site_in(None);
    answer_poll(&mut s, at(1000, 0), Some(Vec::new()));
    enqueue(&mut s, 7, 4, false, at(1000, 0)).unwrap();
    let _ = s.take_calls();
    s.done(
        Done::Submitted {
            job: 7,
            run: 0,
            result: Err(CallError::Unreachable("timed out".into())),
        },
        at(1000, 10),
    );
    assert!(submits(&s.take_calls()).is_empty());
    s.tick(at(1001, 600));
    assert_eq!(s.take_calls(), [Call::Poll { since: None }], "a full read");
    s.done(
        Done::Polled(Ok(Snapshot {
            jobs: Some(Vec::new()),
            nodes: vec![node(0)],
            licences: Vec::new(),
        })),
        at(1001, 620),
    );
    assert_eq!(submits(&s.take_calls()), [(7, false)]);
}

/// A job withdrawn by the meta-scheduler is cancelled in Slurm, leaves marked `withdrawn`, and
/// may come back later.
#[test]
fn a_withdrawn_job_is_cancelled_in_slurm_and_may_come_back() {
    let mut s = site_in(None);
    answer_poll(&mut s, at(1000, 0), Some(Vec::new()));
    enqueue(&mut s, 7, 20, true, at(1000, 0)).unwrap_err();
    enqueue(&mut s, 7, 4, true, at(1000, 0)).unwrap();
    let _ = s.take_calls();
    accepted(&mut s, 7, 101, at(1000, 10));
    let mut link = claims_link(&mut s);
    assert_eq!(link.try_recv().unwrap().waiting, [7]);
    s.handle(
        Msg::ClaimAnswer(v1::ClaimAnswer {
            withdrawn: vec![7],
            ..Default::default()
        }),
        at(1001, 20),
    );
    assert_eq!(s.take_calls(), [Call::Cancel { slurm: 101 }]);
    let ev = s.feed(Some(0)).unwrap().0;
    assert!(ev.last().unwrap().withdrawn);
    enqueue(&mut s, 7, 4, true, at(1002, 30)).unwrap();
}

/// Slurm failing for `down_after_ms` takes the site down: its event streams end and the
/// meta-scheduler's calls are refused; the next answer brings it back.
#[test]
fn slurm_down_takes_the_site_down() {
    let mut s = site_in(None);
    answer_poll(&mut s, at(1000, 0), Some(Vec::new()));
    let (_, mut live) = s.feed(None).unwrap();
    let fail = |s: &mut SlurmSite, ms| {
        s.tick(at(1000, ms));
        assert!(!s.take_calls().is_empty());
        s.done(
            Done::Polled(Err(CallError::Unreachable("connection refused".into()))),
            at(1000, ms),
        );
    };
    fail(&mut s, 1000);
    assert!(s.ready().is_ok(), "one failure is not down yet");
    fail(&mut s, 3000);
    fail(&mut s, 6100);
    let e = s.ready().unwrap_err();
    assert_eq!(e.code(), tonic::Code::Unavailable);
    assert!(e.message().contains("connection refused"), "{e:?}");
    assert!(matches!(
        live.try_recv(),
        Err(tokio::sync::broadcast::error::TryRecvError::Closed)
    ));
    answer_poll(&mut s, at(1007, 6700), None);
    assert!(s.ready().is_ok());
}

/// A job running past its estimate is cancelled in Slurm and ends KILLED; a failed job carries
/// its exit code; a cancelled running job ends with the reason given.
#[test]
fn wall_time_exit_codes_and_cancellation() {
    let mut s = site_in(None);
    answer_poll(&mut s, at(1000, 0), Some(Vec::new()));
    for id in 1..=3 {
        enqueue(&mut s, id, 1, false, at(1000, 0)).unwrap();
    }
    let _ = s.take_calls();
    for id in 1..=3u64 {
        accepted(&mut s, id, 100 + id as u32, at(1000, 0));
    }
    let running: Vec<_> = (1..=3)
        .map(|i| sjob(&s, 100 + i as u32, i, "RUNNING"))
        .collect();
    answer_poll(&mut s, at(1006, 600), Some(running));
    let (tx, mut rx) = oneshot::channel();
    s.handle(
        Msg::Cancel(
            v1::CancelRequest {
                job_id: 3,
                reason: "by alice".into(),
                run: None,
            },
            tx,
        ),
        at(1007, 700),
    );
    assert_eq!(
        rx.try_recv().unwrap().unwrap().state,
        JobState::Running as i32
    );
    assert_eq!(s.take_calls(), [Call::Cancel { slurm: 103 }]);
    s.tick(at(1014, 900));
    assert!(s.take_calls().is_empty(), "1005 + 10 not reached");
    s.tick(at(1015, 1000));
    assert!(s.take_calls().contains(&Call::Cancel { slurm: 101 }));
    let mut failed = sjob(&s, 102, 2, "FAILED");
    failed.exit_code = 768;
    let ended = vec![
        sjob(&s, 101, 1, "CANCELLED"),
        failed,
        sjob(&s, 103, 3, "CANCELLED"),
    ];
    answer_poll(&mut s, at(1016, 1700), Some(ended));
    let last: BTreeMap<u64, (JobState, String, Option<i32>)> = s
        .feed(Some(0))
        .unwrap()
        .0
        .into_iter()
        .map(|e| (e.job_id, (e.state(), e.detail, e.exit_code)))
        .collect();
    assert_eq!(last[&1].0, JobState::Killed);
    assert_eq!(last[&1].1, "killed at its wall-time limit of 10 s");
    assert_eq!((last[&2].0, last[&2].2), (JobState::Failed, Some(3)));
    assert_eq!(
        (last[&3].0, last[&3].1.as_str()),
        (JobState::Cancelled, "by alice")
    );
}

/// A waiting Slurm job named as this site's that it does not want is cancelled, once; a job
/// Slurm no longer knows ends LOST, unless it was held and never released (so never ran): that
/// one is submitted again.
#[test]
fn orphans_are_cancelled_and_vanished_jobs_are_lost() {
    let mut s = site_in(None);
    answer_poll(&mut s, at(1000, 0), Some(Vec::new()));
    enqueue(&mut s, 7, 1, false, at(1000, 0)).unwrap();
    let _ = s.take_calls();
    accepted(&mut s, 7, 101, at(1000, 0));
    let orphan = sjob(&s, 90, 99, "PENDING");
    let seen = vec![orphan.clone(), sjob(&s, 101, 7, "RUNNING")];
    answer_poll(&mut s, at(1001, 600), Some(seen));
    assert!(s.take_calls().contains(&Call::Cancel { slurm: 90 }));
    answer_poll(&mut s, at(1002, 1200), Some(vec![orphan]));
    assert!(
        !s.take_calls().contains(&Call::Cancel { slurm: 90 }),
        "cancelled once"
    );
    let last = s.feed(Some(0)).unwrap().0.pop().unwrap();
    assert_eq!((last.job_id, last.state()), (7, JobState::Lost));

    enqueue(&mut s, 8, 1, true, at(1003, 1300)).unwrap();
    let _ = s.take_calls();
    accepted(&mut s, 8, 102, at(1003, 1300));
    answer_poll(&mut s, at(1004, 1900), Some(Vec::new()));
    assert_eq!(
        submits(&s.take_calls()),
        [(8, true)],
        "the held job lost by Slurm"
    );
    assert_eq!(s.jobs[&8].state, JobState::Queued);
}

/// A read sent before a submission's answer and answered after it does not list the job: the job
/// is not taken for lost, and the next read judges it.
#[test]
fn a_read_that_crossed_a_submission_does_not_lose_the_job() {
    let mut s = site_in(None);
    answer_poll(&mut s, at(1000, 0), Some(Vec::new()));
    enqueue(&mut s, 7, 1, false, at(1000, 0)).unwrap();
    let _ = s.take_calls();
    s.tick(at(1001, 600));
    assert!(matches!(s.take_calls()[..], [Call::Poll { .. }]));
    accepted(&mut s, 7, 101, at(1001, 610));
    s.done(
        Done::Polled(Ok(Snapshot {
            jobs: Some(Vec::new()),
            nodes: vec![node(0)],
            licences: Vec::new(),
        })),
        at(1001, 650),
    );
    assert_eq!(s.jobs[&7].state, JobState::Queued, "not lost");
    assert!(s.take_calls().is_empty());
    answer_poll(&mut s, at(1002, 1200), Some(Vec::new()));
    assert_eq!(
        s.feed(Some(0)).unwrap().0.pop().map(|e| e.state()),
        Some(JobState::Lost),
        "a read sent after its id was recorded must list it"
    );
}

/// Slurm is read `poll_ms` after the last read came back, not back to back.
#[test]
fn reads_are_spaced_from_the_last_answer() {
    let mut s = site_in(None);
    s.tick(at(1000, 0));
    assert_eq!(s.take_calls(), [Call::Poll { since: None }]);
    let read = Snapshot {
        jobs: Some(Vec::new()),
        ..Snapshot::default()
    };
    s.done(Done::Polled(Ok(read)), at(1000, 900));
    s.tick(at(1001, 1300));
    assert!(s.take_calls().is_empty(), "400 ms after the answer");
    s.tick(at(1001, 1400));
    assert_eq!(s.take_calls(), [Call::Poll { since: Some(999) }]);
}

/// A read that lists a job whose submission's answer has not come back yet does not take it for
/// an orphan: it is not cancelled.
#[test]
fn a_job_listed_before_its_submission_answer_is_not_an_orphan() {
    let mut s = site_in(None);
    answer_poll(&mut s, at(1000, 0), Some(Vec::new()));
    enqueue(&mut s, 7, 1, false, at(1000, 0)).unwrap();
    assert_eq!(submits(&s.take_calls()), [(7, false)]);
    let listed = vec![sjob(&s, 101, 7, "PENDING")];
    answer_poll(&mut s, at(1001, 600), Some(listed));
    assert!(s.take_calls().is_empty(), "cancelled as an orphan");
    accepted(&mut s, 7, 101, at(1001, 610));
    let running = vec![sjob(&s, 101, 7, "RUNNING")];
    answer_poll(&mut s, at(1002, 1200), Some(running));
    assert_eq!(s.jobs[&7].state, JobState::Running);
}
