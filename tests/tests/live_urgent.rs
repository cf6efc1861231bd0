//! Urgent jobs on a live grid of real processes (Kurowski, Oleksiak, Piątek & Węglarz §4): an
//! urgent job submitted to a full site starts within a second by suspending the running typical
//! job (SIGSTOP of its process group; SUSPENDED, and `explain` says since when and until which
//! job's end), which resumes (SIGCONT) once the urgent job has ended and finishes with its
//! progress — its own clock shows it: it counts its steps once each, none
//! while the urgent job runs, and goes on from where it stopped. A user without allowance, or
//! above it, is refused with PERMISSION_DENIED.

use gridsched_proto::v1::{self, JobState};
use gridsched_tests::live::{
    LiveGrid, SiteSpec, get_job, scrape, stdout_of, submit_all, wait_ended,
};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tonic::Code;

/// A job of `user` running `sh -c script` on 2 processors.
fn sh(user: &str, estimate_s: i64, script: &str) -> v1::JobSpec {
    v1::JobSpec {
        user: user.into(),
        processors: 2,
        estimate_s,
        command: Some(v1::Command {
            program: "sh".into(),
            args: vec!["-c".into(), script.into()],
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Unix time in seconds, as a float.
fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// `(step, unix seconds)` of each line `step nanoseconds` the job printed.
fn steps(out: &str) -> Vec<(u32, f64)> {
    out.lines()
        .filter_map(|l| {
            let (a, b) = l.split_once(' ')?;
            Some((a.parse().ok()?, b.parse::<f64>().ok()? / 1e9))
        })
        .collect()
}

/// A one-machine site of two processors whose urgent layer preempts `by` (`suspend` or
/// `kill`), and a typical job of six one-second steps filling it, two steps in.
async fn full_site(by: &str) -> (LiveGrid, gridsched_tests::live::Client, u64) {
    let site = SiteSpec {
        time_scale: 1.0,
        policy_extra: format!("urgent = {{ preempt_by = \"{by}\" }}"),
        ..SiteSpec::new("solo", "easy", 1, 2)
    };
    let meta = "[urgent.allowance]\nalice = \"critical\"\nbob = \"important\"\n";
    let g = LiveGrid::start(gridsched_tests::test_bins!(), vec![site], meta);
    g.ready().await;
    let mut c = g.client().await;
    let typical = sh(
        "carol",
        120,
        "i=0; while [ $i -lt 6 ]; do i=$((i+1)); echo \"$i $(date +%s%N)\"; sleep 1; done",
    );
    let a = submit_all(&mut c, vec![typical]).await[0];
    let limit = Instant::now() + Duration::from_secs(60);
    while steps(&stdout_of(&g, "solo-m1", a)).len() < 2 {
        assert!(
            Instant::now() < limit,
            "the typical job never ran two steps"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (g, c, a)
}

/// The urgent job: it prints when it starts, sleeps three seconds, and prints when it ends.
fn urgent_job() -> v1::JobSpec {
    v1::JobSpec {
        urgency: v1::Urgency::Critical.into(),
        ..sh(
            "alice",
            30,
            "echo \"1 $(date +%s%N)\"; sleep 3; echo \"2 $(date +%s%N)\"",
        )
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_urgent_job_suspends_a_running_one_which_resumes_with_its_progress() {
    let (g, mut c, a) = full_site("suspend").await;

    // Users without the allowance are refused at the door.
    let above = v1::JobSpec {
        urgency: v1::Urgency::Critical.into(),
        ..sh("bob", 10, "true")
    };
    let none = v1::JobSpec {
        urgency: v1::Urgency::Important.into(),
        ..sh("carol", 10, "true")
    };
    for (spec, user) in [(above, "bob"), (none, "carol")] {
        let e = c
            .submit(v1::SubmitRequest { spec: Some(spec) })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
        assert!(
            e.message().contains(user) && e.message().contains("urgency"),
            "{e:?}"
        );
    }

    let urgent = urgent_job();
    let submitted = unix_now();
    let u = submit_all(&mut c, vec![urgent]).await[0];
    // Meanwhile the typical job is SUSPENDED, and says since when and until when.
    let limit = Instant::now() + Duration::from_secs(20);
    while get_job(&mut c, a).await.state() != JobState::Suspended {
        assert!(
            Instant::now() < limit,
            "the typical job was never suspended"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let why = c
        .explain(v1::ExplainRequest { job_id: a })
        .await
        .unwrap()
        .into_inner()
        .text;
    assert!(
        why.contains("suspended on solo-m1 since") && why.contains(&format!("job {u}")),
        "{why}"
    );
    wait_ended(&mut c, &[u], Duration::from_secs(60)).await;
    let ended = get_job(&mut c, u).await;
    assert_eq!(ended.state(), JobState::Completed, "{ended:?}");
    let u_steps = steps(&stdout_of(&g, "solo-m1", u));
    let (u_start, u_end) = (u_steps[0].1, u_steps[1].1);
    let latency = u_start - submitted;
    eprintln!("the urgent job started {latency:.3} s after its submission");
    assert!(
        latency < 1.0,
        "the urgent job started {latency:.3} s after its submission"
    );

    // The typical job was suspended, not killed: it waits with its progress, then completes.
    wait_ended(&mut c, &[a], Duration::from_secs(60)).await;
    let done = get_job(&mut c, a).await;
    assert_eq!(done.state(), JobState::Completed, "{done:?}");
    let a_steps = steps(&stdout_of(&g, "solo-m1", a));
    let numbers: Vec<u32> = a_steps.iter().map(|s| s.0).collect();
    assert_eq!(
        numbers,
        [1, 2, 3, 4, 5, 6],
        "each step once: it never restarted"
    );
    assert!(
        a_steps.iter().all(|&(_, t)| t < u_start || t > u_end),
        "a step while the urgent job ran: {a_steps:?}, urgent {u_start}..{u_end}"
    );
    let before = a_steps.iter().filter(|&&(_, t)| t < u_start).count();
    assert!(
        (2..6).contains(&before),
        "it stopped in the middle: {before} steps before, the rest after"
    );
    let took = (done.end_time() - done.start_time()) as f64;
    assert!(
        took >= 6.0 + 2.0,
        "six seconds of work plus the urgent job's: {took}"
    );
    let metrics = scrape(&g.metrics[1]);
    assert!(
        metrics.contains("gridsched_local_preemptions_total{kind=\"suspend\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("gridsched_local_suspended_jobs 0"),
        "{metrics}"
    );
}

/// As printed by the paper: the typical job is killed and requeued; it runs again from scratch
/// once the urgent job has ended (its steps start over), and the kill is counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_urgent_job_kills_a_running_one_which_runs_again_from_scratch() {
    let (g, mut c, a) = full_site("kill").await;
    let before = steps(&stdout_of(&g, "solo-m1", a)).len();
    let u = submit_all(&mut c, vec![urgent_job()]).await[0];
    let limit = Instant::now() + Duration::from_secs(20);
    loop {
        let j = get_job(&mut c, a).await;
        if j.state() == JobState::Queued && j.machine.is_none() {
            break;
        }
        assert!(
            Instant::now() < limit,
            "the typical job was never requeued: {j:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    wait_ended(&mut c, &[u, a], Duration::from_secs(60)).await;
    let (done, ended) = (get_job(&mut c, a).await, get_job(&mut c, u).await);
    assert_eq!(done.state(), JobState::Completed, "{done:?}");
    assert_eq!(ended.state(), JobState::Completed, "{ended:?}");
    // The rerun's output: all six steps, all after the urgent job's end.
    let u_end = steps(&stdout_of(&g, "solo-m1", u))[1].1;
    let rerun = steps(&stdout_of(&g, "solo-m1", a));
    let numbers: Vec<u32> = rerun.iter().map(|s| s.0).collect();
    assert_eq!(numbers, [1, 2, 3, 4, 5, 6], "a fresh run: {rerun:?}");
    assert!(
        rerun.iter().all(|&(_, t)| t > u_end),
        "{rerun:?} after {u_end}"
    );
    assert!(before >= 2, "{before} steps were lost with the kill");
    let metrics = scrape(&g.metrics[1]);
    assert!(
        metrics.contains("gridsched_local_preemptions_total{kind=\"kill\"} 1"),
        "{metrics}"
    );
    // The work thrown away: two processors for the time it had run, in whole seconds (two steps
    // printed, a second apart: at least one).
    let lost = metrics
        .lines()
        .find(|l| l.starts_with("gridsched_local_lost_processor_seconds_total "))
        .and_then(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .expect("the lost-work counter");
    assert!(
        (2..=2 * 30).contains(&lost),
        "{lost} processor-seconds lost"
    );
}
