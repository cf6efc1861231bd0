//! Suspension and resumption of jobs by the runner, with real processes (and one emulated job),
//! and a job's environment: each test drives [`runner::run_job`] directly through its control
//! channel and reads its reports. Timings are loose (the machine may be loaded): the tests assert orderings and bounds.

use gridsched_proto::v1::{self, AgentJobState, start_job::Execution};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use site_agent::runner::{self, Control, RunClock, RunnerConfig};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Bound of any wait for something that should happen within a few seconds.
const PATIENCE: Duration = Duration::from_secs(30);

/// One job run by the runner, with the test's ends of its channels.
struct Harness {
    control: mpsc::UnboundedSender<Control>,
    reports: mpsc::UnboundedReceiver<v1::JobReport>,
    clock: RunClock,
    /// The job's directory (its working directory for a command).
    job_dir: PathBuf,
    /// The agent's work directory, removed on drop.
    work_dir: PathBuf,
    /// Just before the job started.
    t0: Instant,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.work_dir);
    }
}

fn state(r: &v1::JobReport) -> AgentJobState {
    AgentJobState::try_from(r.state).expect("known state")
}

/// Starts job 1 running `execution` (limit in seconds, time scale 1).
fn start(test: &str, execution: Execution, limit_s: Option<i64>, grace: Duration) -> Harness {
    let start = v1::StartJob {
        job_id: 1,
        execution: Some(execution),
        wall_time_limit_s: limit_s,
        processors: 1,
        user: "tester".into(),
        ..Default::default()
    };
    start_order(test, start, grace)
}

/// Starts job 1 by the order `start` on machine `m0` (time scale 1).
fn start_order(test: &str, start: v1::StartJob, grace: Duration) -> Harness {
    let work_dir = std::env::temp_dir().join(format!(
        "gridsched-site-agent-{test}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&work_dir);
    std::fs::create_dir_all(&work_dir).expect("work dir");
    let cfg = RunnerConfig {
        machine: "m0".into(),
        work_dir: work_dir.clone(),
        time_scale: 1.0,
        grace,
        shipper: None,
        fetcher: None,
    };
    let (control, crx) = mpsc::unbounded_channel();
    let (otx, reports) = mpsc::unbounded_channel();
    let clock = RunClock::default();
    let t0 = Instant::now();
    let task = tokio::spawn(runner::run_job(cfg, start, crx, clock.clone(), otx));
    Harness {
        control,
        reports,
        clock,
        job_dir: work_dir.join("1"),
        work_dir,
        t0,
        task,
    }
}

fn shell(script: &str) -> Execution {
    Execution::Command(v1::Command {
        program: "sh".into(),
        args: vec!["-c".into(), script.into()],
        ..Default::default()
    })
}

impl Harness {
    /// The next report, which must come within [`PATIENCE`].
    async fn next(&mut self) -> v1::JobReport {
        tokio::time::timeout(PATIENCE, self.reports.recv())
            .await
            .expect("a report in time")
            .expect("the runner is there")
    }

    /// The next report, which must be in `want`.
    async fn expect(&mut self, want: AgentJobState) -> v1::JobReport {
        let r = self.next().await;
        assert_eq!(state(&r), want, "{r:?}");
        r
    }

    fn order(&self, c: Control) {
        self.control.send(c).expect("the runner listens");
    }

    /// Asserts the runner has sent nothing more.
    fn quiet(&mut self) {
        match self.reports.try_recv() {
            Err(mpsc::error::TryRecvError::Empty) => {}
            other => panic!("unexpected report: {other:?}"),
        }
    }

    /// Waits for the runner to end, then asserts it sent no other report.
    async fn finish(mut self) {
        tokio::time::timeout(PATIENCE, &mut self.task)
            .await
            .expect("the runner ends")
            .expect("the runner does not panic");
        match self.reports.try_recv() {
            Err(mpsc::error::TryRecvError::Disconnected) => {}
            other => panic!("unexpected report: {other:?}"),
        }
    }
}

/// Number of lines of `path` (0 when absent).
fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |s| s.lines().count())
}

/// The scheduling state of process `pid` (`R`, `S`, `T`, `Z`...) from `/proc`; `None` when it
/// does not exist.
fn proc_state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// Whether `pid` is gone: no such process, or a zombie nobody reaps (its parent was the job's
/// shell, and the container's init may not reap orphans).
fn dead(pid: i32) -> bool {
    kill(Pid::from_raw(pid), None).is_err() || matches!(proc_state(pid), Some('Z' | 'X') | None)
}

/// Polls `cond` every 20 ms until it holds; false if it still does not after `within`.
async fn eventually(within: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + within;
    while !cond() {
        if Instant::now() > end {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    true
}

/// The pid written by the job to `child` in its directory.
async fn child_pid(h: &Harness) -> i32 {
    let path = h.job_dir.join("child");
    let mut pid = None;
    assert!(
        eventually(PATIENCE, || {
            pid = std::fs::read_to_string(&path)
                .ok()
                .and_then(|s| s.trim().parse().ok());
            pid.is_some()
        })
        .await,
        "the job wrote its child's pid"
    );
    pid.expect("parsed")
}

/// A shell loop counting its iterations in a file is stopped for 2 s: the count does not move
/// while it is stopped, the job then completes all its iterations, and its running time excludes
/// the stop. Repeated suspend and resume orders change nothing.
#[tokio::test]
async fn suspended_process_keeps_its_progress() {
    let mut h = start(
        "progress",
        shell("i=0; while [ $i -lt 6 ]; do sleep 0.5; i=$((i+1)); echo $i >> count; done"),
        None,
        Duration::from_secs(2),
    );
    let count = h.job_dir.join("count");
    let r = h.expect(AgentJobState::Running).await;
    let leader = r.pid.expect("pid") as i32;
    assert!(r.start_time.is_some());
    tokio::time::sleep(Duration::from_millis(1500)).await;

    h.order(Control::Suspend);
    h.order(Control::Suspend);
    let r = h.expect(AgentJobState::Suspended).await;
    assert_eq!(r.pid, Some(leader as u32));
    let ran_at_stop = r.ran_ms.expect("ran_ms");
    assert!(ran_at_stop >= 1000, "{ran_at_stop} ms run before the stop");
    let stopped_at = Instant::now();
    assert!(
        eventually(PATIENCE, || proc_state(leader) == Some('T')).await,
        "the job's shell is stopped"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = lines(&count);
    let clock_before = h.clock.ran();
    assert!(before < 6, "the job was stopped before its end ({before})");
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert_eq!(lines(&count), before, "no progress while stopped");
    assert_eq!(h.clock.ran(), clock_before, "the clock stands still");
    h.quiet();
    let suspended = stopped_at.elapsed();

    h.order(Control::Resume);
    h.order(Control::Resume);
    let r = h.expect(AgentJobState::Running).await;
    assert!(r.ran_ms.expect("ran_ms") >= ran_at_stop);
    let fin = h.expect(AgentJobState::Exited).await;
    let wall = h.t0.elapsed();
    assert_eq!(fin.exit_code, Some(0), "{fin:?}");
    assert_eq!(lines(&count), 6, "all iterations done");
    let ran = fin.ran_ms.expect("ran_ms");
    let wall_ms = wall.as_millis() as u64;
    // Six half-second sleeps, one of which may have run out while stopped.
    assert!(ran >= 2000, "ran {ran} ms");
    assert!(
        wall_ms >= ran + suspended.as_millis() as u64,
        "wall {wall_ms} ms, ran {ran} ms, suspended {suspended:?}"
    );
    assert!(ran + 1000 < wall_ms, "ran {ran} ms, wall {wall_ms} ms");
    h.finish().await;
}

/// A job with a 2 s limit stopped after 0.5 s for 2.5 s is not killed while stopped: it is killed
/// on its limit once it has run 2 s, well after 2 s of wall time.
#[tokio::test]
async fn time_limit_counts_running_time_only() {
    let mut h = start(
        "limit",
        Execution::Command(v1::Command {
            program: "sleep".into(),
            args: vec!["30".into()],
            ..Default::default()
        }),
        Some(2),
        Duration::from_secs(5),
    );
    h.expect(AgentJobState::Running).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    h.order(Control::Suspend);
    let r = h.expect(AgentJobState::Suspended).await;
    let ran_at_stop = r.ran_ms.expect("ran_ms");
    let stopped_at = Instant::now();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    // Past the limit in wall time, yet nothing happened.
    assert!(h.t0.elapsed() > Duration::from_secs(3));
    h.quiet();
    let suspended = stopped_at.elapsed();

    h.order(Control::Resume);
    let resumed = Instant::now();
    h.expect(AgentJobState::Running).await;
    let fin = h.expect(AgentJobState::KilledTimeLimit).await;
    let wall_ms = h.t0.elapsed().as_millis() as u64;
    assert_eq!(fin.signal, Some(Signal::SIGTERM as i32), "{fin:?}");
    let ran = fin.ran_ms.expect("ran_ms");
    assert!(ran >= 2000, "killed after {ran} ms of running");
    assert!(
        resumed.elapsed().as_millis() as u64 + ran_at_stop + 100 >= 2000,
        "the rest of the limit ran after the resumption"
    );
    assert!(
        wall_ms >= ran + suspended.as_millis() as u64,
        "wall {wall_ms} ms, ran {ran} ms, suspended {suspended:?}"
    );
    h.finish().await;
}

/// An emulated 2 s job stopped for 1.5 s ends after about 3.5 s with exit code 0.
#[tokio::test]
async fn emulated_job_pauses_while_suspended() {
    let mut h = start(
        "emulated",
        Execution::EmulateRuntimeS(2),
        None,
        Duration::from_secs(2),
    );
    let r = h.expect(AgentJobState::Running).await;
    assert_eq!(r.pid, None);
    tokio::time::sleep(Duration::from_millis(500)).await;
    h.order(Control::Suspend);
    h.expect(AgentJobState::Suspended).await;
    let stopped_at = Instant::now();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    h.quiet();
    let suspended = stopped_at.elapsed();
    h.order(Control::Resume);
    h.expect(AgentJobState::Running).await;
    let fin = h.expect(AgentJobState::Exited).await;
    let wall = h.t0.elapsed();
    assert_eq!(fin.exit_code, Some(0));
    let ran = fin.ran_ms.expect("ran_ms");
    assert!(ran >= 1990, "ran {ran} ms");
    assert!(
        wall >= Duration::from_millis(1990) + suspended,
        "wall {wall:?}, suspended {suspended:?}"
    );
    assert!(wall >= Duration::from_millis(3400), "wall {wall:?}");
    assert!(
        ran + 1400 < wall.as_millis() as u64,
        "ran {ran} ms, {wall:?}"
    );
    h.finish().await;
}

/// Killing a stopped job ends it at once (SIGTERM, then SIGCONT so that it can act on it), long
/// before the grace period: the shell and its child are gone.
#[tokio::test]
async fn killing_a_suspended_job_ends_its_process_group() {
    let mut h = start(
        "kill",
        shell("sleep 30 & echo $! > child; wait"),
        None,
        Duration::from_secs(20),
    );
    let r = h.expect(AgentJobState::Running).await;
    let leader = r.pid.expect("pid") as i32;
    let child = child_pid(&h).await;
    h.order(Control::Suspend);
    h.expect(AgentJobState::Suspended).await;
    assert!(
        eventually(PATIENCE, || {
            proc_state(leader) == Some('T') && proc_state(child) == Some('T')
        })
        .await,
        "the shell and its child are stopped"
    );

    let killed_at = Instant::now();
    h.order(Control::Kill("cancelled by tester".into()));
    let fin = h.expect(AgentJobState::KilledByOrder).await;
    assert!(
        killed_at.elapsed() < Duration::from_secs(10),
        "ended by SIGTERM, not after the 20 s grace: {:?}",
        killed_at.elapsed()
    );
    assert_eq!(fin.detail, "cancelled by tester");
    assert_eq!(fin.signal, Some(Signal::SIGTERM as i32), "{fin:?}");
    assert!(fin.ran_ms.is_some());
    assert!(
        kill(Pid::from_raw(leader), None).is_err(),
        "the shell is gone"
    );
    assert!(
        eventually(Duration::from_secs(5), || dead(child)).await,
        "the shell's child is gone"
    );
    h.finish().await;
}

/// A stopped job ignoring SIGTERM gets SIGKILL, its whole process group, after the grace period.
#[tokio::test]
async fn suspended_job_ignoring_sigterm_is_killed_after_the_grace_period() {
    let grace = Duration::from_millis(1000);
    let mut h = start(
        "sigkill",
        shell("trap '' TERM; sleep 30 & echo $! > child; wait"),
        None,
        grace,
    );
    let r = h.expect(AgentJobState::Running).await;
    let leader = r.pid.expect("pid") as i32;
    let child = child_pid(&h).await;
    h.order(Control::Suspend);
    h.expect(AgentJobState::Suspended).await;
    let killed_at = Instant::now();
    h.order(Control::Kill("go".into()));
    let fin = h.expect(AgentJobState::KilledByOrder).await;
    assert!(killed_at.elapsed() >= grace, "{:?}", killed_at.elapsed());
    assert_eq!(fin.signal, Some(Signal::SIGKILL as i32), "{fin:?}");
    assert!(
        kill(Pid::from_raw(leader), None).is_err(),
        "the shell is gone"
    );
    assert!(
        eventually(Duration::from_secs(5), || dead(child)).await,
        "the shell's child is gone"
    );
    h.finish().await;
}

/// When the job's shell dies of SIGTERM but a process of its group ignores it, the report comes
/// at once and that process gets SIGKILL at the end of the grace period.
#[tokio::test]
async fn group_leftovers_get_sigkill_after_the_grace_period() {
    let grace = Duration::from_millis(2500);
    let mut h = start(
        "leftover",
        shell("sh -c 'trap \"\" TERM; echo $$ > child; exec sleep 30' & wait"),
        None,
        grace,
    );
    h.expect(AgentJobState::Running).await;
    let child = child_pid(&h).await;
    let killed_at = Instant::now();
    h.order(Control::Kill("go".into()));
    let fin = h.expect(AgentJobState::KilledByOrder).await;
    let reported = killed_at.elapsed();
    assert_eq!(fin.signal, Some(Signal::SIGTERM as i32), "{fin:?}");
    if reported < grace - Duration::from_millis(500) {
        assert!(!dead(child), "the leftover keeps its grace period");
    }
    assert!(
        eventually(grace + Duration::from_secs(5), || dead(child)).await,
        "the leftover is killed"
    );
    assert!(killed_at.elapsed() >= grace);
    h.finish().await;
}

#[tokio::test]
async fn a_job_knows_its_nodes_and_rank() {
    let script = "echo $GRIDSCHED_NODES $GRIDSCHED_NODE_RANK $GRIDSCHED_NODE_COUNT \
                  $GRIDSCHED_HEAD_NODE $GRIDSCHED_PROCESSORS";
    // One part of a job over three nodes, and a job on this machine alone.
    let part = v1::StartJob {
        job_id: 1,
        execution: Some(shell(script)),
        processors: 4,
        nodes: vec!["n3".into(), "m0".into(), "n7".into()],
        node_rank: 1,
        ..Default::default()
    };
    let alone = v1::StartJob {
        nodes: Vec::new(),
        node_rank: 0,
        processors: 2,
        ..part.clone()
    };
    for (test, order, want) in [
        ("env-part", part, "n3,m0,n7 1 3 n3 4"),
        ("env-alone", alone, "m0 0 1 m0 2"),
    ] {
        let mut h = start_order(test, order, Duration::from_secs(1));
        h.expect(AgentJobState::Running).await;
        h.expect(AgentJobState::Exited).await;
        let out = std::fs::read_to_string(h.job_dir.join("stdout")).expect("stdout");
        assert_eq!(out.trim(), want);
        h.finish().await;
    }
}
