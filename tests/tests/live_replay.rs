//! One engine, two clocks, proved on real processes: a local scheduler logs every input of its
//! cluster runner and every decision; the log, run again through a fresh runner (what
//! `gridsim rerun` does), gives the same decisions — which job starts, when, on which machine —
//! for EASY, conservative, Flexible Backfilling, EDF, a Convergent Scheduling variant and the
//! schedule-based EG-EDF with Tabu search; and the agents really ran every job where the log
//! says. Also: the meta-scheduler's priority orders a live `fb-meta` queue.

use gridsched_core::runner::Effect;
use gridsched_core::runner::replay::{self, Line};
use gridsched_proto::v1::{self, local_scheduler_client::LocalSchedulerClient};
use gridsched_tests::live::{Proc, local_events_until_ended, spawn_listening};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use tonic::transport::Channel;

struct Site {
    _sched: Proc,
    _agents: Vec<Proc>,
    url: String,
    log: PathBuf,
}

/// A local scheduler with `policy` over `machines` (name, processors), logging its inputs, and
/// one agent per machine (emulated time × 0.05).
fn site(dir: &Path, policy: &str, machines: &[(&str, u32)]) -> Site {
    let log = dir.join("inputs.jsonl");
    let mut toml = format!(
        "listen = \"127.0.0.1:0\"\ncluster = \"c1\"\nheartbeat_interval_ms = 100\n\
         lost_after_ms = 5000\ninput_log = {:?}\n[policy]\npolicy = \"{policy}\"\n",
        log.display().to_string()
    );
    for (m, p) in machines {
        toml.push_str(&format!("[[machines]]\nname = \"{m}\"\nprocessors = {p}\n"));
    }
    let config = dir.join("ls.toml");
    std::fs::write(&config, toml).expect("write config");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gridsched-test-local-scheduler"));
    cmd.arg("--config").arg(&config);
    let (sched, addr) = spawn_listening(cmd);
    let url = format!("http://{addr}");
    let agents = machines
        .iter()
        .map(|(m, p)| {
            Proc(
                Command::new(env!("CARGO_BIN_EXE_gridsched-test-site-agent"))
                    .args(["--scheduler", &url, "--machine", m])
                    .args(["--processors", &p.to_string(), "--time-scale", "0.05"])
                    .arg("--work-dir")
                    .arg(dir.join(m))
                    .spawn()
                    .expect("spawn agent"),
            )
        })
        .collect();
    Site {
        _sched: sched,
        _agents: agents,
        url,
        log,
    }
}

async fn client(url: &str, online: usize) -> LocalSchedulerClient<Channel> {
    let mut c = None;
    for _ in 0..200 {
        if let Ok(x) = LocalSchedulerClient::connect(url.to_string()).await {
            c = Some(x);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut c = c.unwrap_or_else(|| panic!("cannot connect to {url}"));
    for _ in 0..300 {
        let s = c.status(v1::StatusRequest {}).await.unwrap().into_inner();
        if s.machines.iter().filter(|m| m.online).count() >= online {
            return c;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("agents never came online at {url}")
}

fn job(procs: u32, estimate: i64, run: i64, deadline: Option<i64>) -> v1::JobSpec {
    v1::JobSpec {
        user: "alice".into(),
        processors: procs,
        estimate_s: estimate,
        emulate_runtime_s: Some(run),
        deadline,
        ..Default::default()
    }
}

async fn enqueue(c: &mut LocalSchedulerClient<Channel>, id: u64, priority: u32, s: v1::JobSpec) {
    c.enqueue(v1::EnqueueRequest {
        job_id: id,
        spec: Some(s),
        priority,
        ..Default::default()
    })
    .await
    .unwrap_or_else(|e| panic!("enqueue {id}: {e}"));
}

/// Runs `n` jobs through a live site with `policy`, then checks its log re-runs identically and
/// that every job ran where the log's start decision put it.
async fn live_equals_rerun(policy: &'static str, n: u64) -> replay::Checked {
    let dir = tempfile::tempdir().expect("tempdir");
    // Conservative backfilling plans one space-shared machine.
    let machines: &[(&str, u32)] = match policy {
        "conservative" => &[("m1", 8)],
        _ => &[("m1", 4), ("m2", 4), ("m3", 2)],
    };
    let s = site(dir.path(), policy, machines);
    let mut c = client(&s.url, machines.len()).await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    // Bursts of jobs of every width, some overrunning their emulated share of the estimate,
    // some with deadlines (EDF and CS order by them).
    for id in 1..=n {
        let procs = 1 + (id * 7 % 4) as u32;
        let estimate = 2 + (id * 13 % 30) as i64;
        let run = 1 + (id * 5 % estimate as u64) as i64;
        let deadline = (id % 3 == 0).then_some(now + 30 + (id * 11 % 120) as i64);
        enqueue(
            &mut c,
            id,
            (id % 3) as u32,
            job(procs, estimate, run, deadline),
        )
        .await;
        if id % 25 == 0 {
            tokio::time::sleep(Duration::from_millis(700)).await;
        }
    }
    let ids: Vec<u64> = (1..=n).collect();
    let (events, _) = local_events_until_ended(&mut c, &ids, 240).await;
    let completed = events
        .iter()
        .filter(|e| e.state() == v1::JobState::Completed)
        .count();
    assert_eq!(completed as u64, n, "{policy}: every job completed");
    // The log, as the local scheduler wrote it (it flushes at every commit).
    let text = std::fs::read_to_string(&s.log).expect("read the input log");
    let lines: Vec<Line> = text
        .lines()
        .enumerate()
        .map(|(i, l)| serde_json::from_str(l).unwrap_or_else(|e| panic!("line {}: {e}", i + 1)))
        .collect();
    // Where the live runner started each job, and where its agent really ran it.
    let mut decided: HashMap<u64, String> = HashMap::new();
    for l in &lines {
        if let Line::Out(d) = l
            && let Effect::Start(st) = d.effect
        {
            decided.insert(st.job.0, format!("m{}", st.machine.0 + 1));
        }
    }
    for e in &events {
        if e.state() == v1::JobState::Running {
            assert_eq!(
                e.machine.as_deref(),
                decided.get(&e.job_id).map(String::as_str),
                "{policy}: job {} ran where the runner started it",
                e.job_id
            );
        }
    }
    let checked = replay::check(lines).unwrap_or_else(|e| panic!("{policy}: {e}"));
    assert!(checked.starts as u64 >= n, "{policy}: {checked:?}");
    checked
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_decisions_equal_their_rerun_for_every_policy() {
    let policies = [
        "easy",
        "conservative",
        "fb-mod",
        "edf",
        "cs-i-np",
        "eg-edf-tabu",
    ];
    let runs = policies.map(|p| tokio::spawn(live_equals_rerun(p, 200)));
    for (p, r) in policies.iter().zip(runs) {
        let checked = r.await.unwrap_or_else(|e| panic!("{p}: {e}"));
        eprintln!("{p}: identical: {checked:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_meta_priority_orders_a_live_fb_meta_queue() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = site(dir.path(), "fb-meta", &[("m1", 1)]);
    let mut c = client(&s.url, 1).await;
    // A blocker holds the only processor for about 2 s (40 s × 0.05). Job 2 arrives first and
    // keeps the reservation it gets (BF_UNMOD); then 4 (priority 1) goes before 3 (priority 0),
    // where arrival order would run 3 first.
    enqueue(&mut c, 1, 0, job(1, 60, 40, None)).await;
    for (id, priority) in [(2, 2), (3, 0), (4, 1)] {
        enqueue(&mut c, id, priority, job(1, 10, 1, None)).await;
    }
    let (events, _) = local_events_until_ended(&mut c, &[1, 2, 3, 4], 240).await;
    let order: Vec<u64> = events
        .iter()
        .filter(|e| e.state() == v1::JobState::Running)
        .map(|e| e.job_id)
        .collect();
    assert_eq!(order, [1, 2, 4, 3], "higher meta priority first");
}
