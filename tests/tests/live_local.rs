//! Live tests of the local scheduler and site agents: real processes on
//! loopback ports. The binaries are the tests crate's copies (`gridsched-test-local-scheduler`,
//! `gridsched-test-site-agent`, see `Cargo.toml`), located with `env!("CARGO_BIN_EXE_...")`; the
//! scheduler listens on port 0 and prints its address on stdout.

use gridsched_proto::v1::{self, local_scheduler_client::LocalSchedulerClient};
use std::collections::HashMap;
use std::process::Command;
use std::time::{Duration, Instant};
use tonic::transport::Channel;

use gridsched_tests::live::{Proc, local_events_until_ended};

struct Grid {
    dir: tempfile::TempDir,
    url: String,
    sched: Option<Proc>,
    agents: Vec<Proc>,
    config: std::path::PathBuf,
}

fn start_scheduler(config: &std::path::Path, listen: Option<&str>) -> (Proc, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gridsched-test-local-scheduler"));
    if let Some(l) = listen {
        cmd.args(["--listen", l]);
    }
    cmd.arg("--config").arg(config);
    let (p, addr) = gridsched_tests::live::spawn_listening(cmd);
    (p, format!("http://{addr}"))
}

impl Grid {
    /// A scheduler with `machines` (name, procs), extra TOML, and one agent per machine.
    fn new(machines: &[(&str, u32)], extra: &str) -> Grid {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut toml = format!(
            "listen = \"127.0.0.1:0\"\ncluster = \"c1\"\nheartbeat_interval_ms = 100\nlost_after_ms = 800\nstate_dir = \"{}\"\n{extra}\n",
            dir.path().join("state").display()
        );
        for (m, p) in machines {
            toml.push_str(&format!("[[machines]]\nname = \"{m}\"\nprocessors = {p}\n"));
        }
        let config = dir.path().join("ls.toml");
        std::fs::write(&config, toml).expect("write config");
        let (sched, url) = start_scheduler(&config, None);
        let mut g = Grid {
            dir,
            url,
            sched: Some(sched),
            agents: Vec::new(),
            config,
        };
        for (m, p) in machines {
            g.agents.push(g.agent(m, *p));
        }
        g
    }

    fn agent(&self, machine: &str, procs: u32) -> Proc {
        Proc(
            Command::new(env!("CARGO_BIN_EXE_gridsched-test-site-agent"))
                .args(["--scheduler", &self.url, "--machine", machine])
                .args(["--processors", &procs.to_string(), "--time-scale", "0.05"])
                .args(["--grace-ms", "300"])
                .arg("--work-dir")
                .arg(self.dir.path().join(machine))
                .spawn()
                .expect("spawn agent"),
        )
    }

    async fn client(&self) -> LocalSchedulerClient<Channel> {
        for _ in 0..100 {
            if let Ok(c) = LocalSchedulerClient::connect(self.url.clone()).await {
                return c;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("cannot connect to {}", self.url)
    }

    /// Waits until `n` machines are online.
    async fn online(&self, n: usize) {
        let mut c = self.client().await;
        let t = Instant::now();
        loop {
            let s = c.status(v1::StatusRequest {}).await.unwrap().into_inner();
            if s.machines.iter().filter(|m| m.online).count() >= n {
                return;
            }
            assert!(
                t.elapsed() < Duration::from_secs(15),
                "agents never came online"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn spec(procs: u32, estimate: i64) -> v1::JobSpec {
    v1::JobSpec {
        user: "alice".into(),
        processors: procs,
        estimate_s: estimate,
        ..Default::default()
    }
}

fn shell(procs: u32, estimate: i64, script: &str) -> v1::JobSpec {
    v1::JobSpec {
        command: Some(v1::Command {
            program: "sh".into(),
            args: vec!["-c".into(), script.into()],
            ..Default::default()
        }),
        ..spec(procs, estimate)
    }
}

fn emulated(procs: u32, estimate: i64, run: i64) -> v1::JobSpec {
    v1::JobSpec {
        emulate_runtime_s: Some(run),
        ..spec(procs, estimate)
    }
}

async fn enqueue(c: &mut LocalSchedulerClient<Channel>, id: u64, s: v1::JobSpec) {
    c.enqueue(v1::EnqueueRequest {
        job_id: id,
        spec: Some(s),
        priority: 1,
        submit_time: 0,
        ..Default::default()
    })
    .await
    .unwrap_or_else(|e| panic!("enqueue {id}: {e}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundred_jobs_run_with_their_exit_codes_and_outputs() {
    let g = Grid::new(
        &[("m1", 4), ("m2", 4), ("m3", 8)],
        "[policy]\npolicy = \"easy\"",
    );
    g.online(3).await;
    let mut c = g.client().await;
    let ids: Vec<u64> = (1..=100).collect();
    for &i in &ids {
        let s = if i % 2 == 0 {
            shell(
                1 + (i % 3) as u32,
                60,
                &format!("echo out{i}; echo err{i} >&2; exit {}", i % 4),
            )
        } else {
            emulated(1 + (i % 4) as u32, 20, 1 + (i % 3) as i64)
        };
        enqueue(&mut c, i, s).await;
    }
    let (all, last) = local_events_until_ended(&mut c, &ids, 25).await;
    for &i in &ids {
        let e = &last[&i];
        if i % 2 == 0 {
            let code = (i % 4) as i32;
            assert_eq!(e.exit_code, Some(code), "job {i}: {e:?}");
            let want = if code == 0 {
                v1::JobState::Completed
            } else {
                v1::JobState::Failed
            };
            assert_eq!(e.state(), want, "job {i}");
            let dir = g
                .dir
                .path()
                .join(e.machine.as_deref().unwrap())
                .join(i.to_string());
            assert_eq!(
                std::fs::read_to_string(dir.join("stdout")).unwrap(),
                format!("out{i}\n")
            );
            assert_eq!(
                std::fs::read_to_string(dir.join("stderr")).unwrap(),
                format!("err{i}\n")
            );
        } else {
            assert_eq!(e.state(), v1::JobState::Completed, "job {i}");
        }
    }
    // Sequences strictly increase from the log's base + 1 (its creation time × 10⁶); every job
    // was queued, ran, ended.
    assert!(all.windows(2).all(|w| w[1].sequence == w[0].sequence + 1));
    assert_eq!(all[0].sequence % 1_000_000, 1, "{}", all[0].sequence);
    assert!(all[0].sequence > 1_700_000_000_000_000);
    for &i in &ids {
        let states: Vec<_> = all
            .iter()
            .filter(|e| e.job_id == i)
            .map(|e| e.state())
            .collect();
        assert_eq!(
            &states[..2],
            &[v1::JobState::Queued, v1::JobState::Running],
            "job {i}"
        );
        assert_eq!(states.len(), 3, "job {i}: {states:?}");
    }
    // No machine oversubscribed: replay RUNNING/terminal events per machine.
    let procs: HashMap<u64, u32> = ids
        .iter()
        .map(|&i| {
            (
                i,
                if i % 2 == 0 {
                    1 + (i % 3) as u32
                } else {
                    1 + (i % 4) as u32
                },
            )
        })
        .collect();
    let mut used: HashMap<String, u32> = HashMap::new();
    for e in &all {
        let m = e.machine.clone().unwrap_or_default();
        if e.state() == v1::JobState::Running {
            *used.entry(m.clone()).or_default() += procs[&e.job_id];
            let cap = if m == "m3" { 8 } else { 4 };
            assert!(
                used[&m] <= cap,
                "{m} oversubscribed at event {}",
                e.sequence
            );
        } else if e.state().is_terminal() {
            *used.entry(m).or_default() -= procs[&e.job_id];
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_queued_and_running_and_bad_requests() {
    let g = Grid::new(&[("m1", 2)], "");
    g.online(1).await;
    let mut c = g.client().await;
    enqueue(&mut c, 1, shell(2, 100, "sleep 30")).await;
    enqueue(&mut c, 2, shell(2, 100, "sleep 30")).await;
    // Wait for job 1 to run.
    let t = Instant::now();
    loop {
        let s = c.status(v1::StatusRequest {}).await.unwrap().into_inner();
        if s.running.iter().any(|r| r.job_id == 1) && s.queue.iter().any(|q| q.job_id == 2) {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(10));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let r = c
        .cancel(v1::CancelRequest {
            job_id: 2,
            reason: "no".into(),
            run: None,
        })
        .await
        .unwrap();
    assert_eq!(r.into_inner().state(), v1::JobState::Cancelled);
    let r = c
        .cancel(v1::CancelRequest {
            job_id: 1,
            reason: "stop".into(),
            run: None,
        })
        .await
        .unwrap();
    assert_eq!(r.into_inner().state(), v1::JobState::Running);
    let (_, last) = local_events_until_ended(&mut c, &[1, 2], 10).await;
    assert_eq!(last[&1].state(), v1::JobState::Cancelled);
    assert_eq!(last[&1].signal, Some(15), "killed by SIGTERM");
    assert_eq!(last[&2].state(), v1::JobState::Cancelled);

    // Malformed requests.
    let e = c
        .cancel(v1::CancelRequest {
            job_id: 99,
            reason: String::new(),
            run: None,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::NotFound);
    let bad = |s: v1::JobSpec| v1::EnqueueRequest {
        job_id: 50,
        spec: Some(s),
        priority: 0,
        submit_time: 0,
        ..Default::default()
    };
    let e = c.enqueue(bad(shell(0, 10, "true"))).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert!(e.message().contains("processors"), "{}", e.message());
    let e = c
        .enqueue(bad(v1::JobSpec {
            user: String::new(),
            ..shell(1, 10, "true")
        }))
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert!(e.message().contains("user"), "{}", e.message());
    let e = c.enqueue(bad(spec(1, 10))).await.unwrap_err();
    assert!(
        e.code() == tonic::Code::InvalidArgument && e.message().contains("command"),
        "{e}"
    );
    let e = c
        .enqueue(v1::EnqueueRequest {
            job_id: 51,
            spec: None,
            priority: 0,
            submit_time: 0,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(
        e.code() == tonic::Code::InvalidArgument && e.message().contains("spec"),
        "{e}"
    );
    let e = c.enqueue(bad(shell(3, 10, "true"))).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::FailedPrecondition, "{e}");
    let e = c
        .enqueue(v1::EnqueueRequest {
            job_id: 1,
            ..bad(shell(1, 10, "true"))
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::AlreadyExists);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wall_time_limit_kills_the_job() {
    let g = Grid::new(&[("m1", 2)], "");
    g.online(1).await;
    let mut c = g.client().await;
    // Estimate 20 s × time scale 0.05 = 1 s limit.
    enqueue(&mut c, 1, shell(1, 20, "sleep 30")).await;
    let (_, last) = local_events_until_ended(&mut c, &[1], 10).await;
    assert_eq!(last[&1].state(), v1::JobState::Killed);
}

/// A job whose processes hold more resident memory than its `memory_kb` is killed by its agent
/// with a reason that says so; one within its memory completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_over_its_memory_is_killed_saying_so() {
    let g = Grid::new(&[("m1", 2)], "");
    g.online(1).await;
    let mut c = g.client().await;
    let limited = |script: &str| v1::JobSpec {
        memory_kb: Some(100 * 1024),
        ..shell(1, 600, script)
    };
    // `tail` keeps the last line whole: 300 MB of zeros without a newline, held until the pipe
    // closes 30 s later.
    enqueue(
        &mut c,
        1,
        limited("{ head -c 300000000 /dev/zero; sleep 30; } | tail"),
    )
    .await;
    enqueue(
        &mut c,
        2,
        limited("head -c 1000000 /dev/zero | tail >/dev/null"),
    )
    .await;
    let (_, last) = local_events_until_ended(&mut c, &[1, 2], 20).await;
    assert_eq!(last[&1].state(), v1::JobState::Killed, "{:?}", last[&1]);
    let why = &last[&1].detail;
    assert!(
        why.starts_with("exceeded its memory: ") && why.ends_with("over its limit of 102400 KiB"),
        "{why}"
    );
    assert_eq!(last[&2].state(), v1::JobState::Completed, "{:?}", last[&2]);
}

async fn lost_agent(mode: &str) -> HashMap<u64, v1::JobEvent> {
    let mut g = Grid::new(&[("m1", 2), ("m2", 2)], &format!("lost_agent = \"{mode}\""));
    g.online(2).await;
    let mut c = g.client().await;
    enqueue(&mut c, 1, emulated(2, 400, 200)).await; // 10 s at scale 0.05
    let t = Instant::now();
    let machine = loop {
        let s = c.status(v1::StatusRequest {}).await.unwrap().into_inner();
        if let Some(r) = s.running.iter().find(|r| r.job_id == 1) {
            break r.machine.clone();
        }
        assert!(t.elapsed() < Duration::from_secs(10));
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let idx = if machine == "m1" { 0 } else { 1 };
    g.agents[idx].0.kill().expect("kill -9 the agent");
    let _ = g.agents[idx].0.wait();
    let (all, last) = local_events_until_ended(&mut c, &[1], 25).await;
    if mode == "requeue" {
        let requeued = all.iter().any(|e| {
            e.job_id == 1 && e.state() == v1::JobState::Queued && e.detail.contains("requeued")
        });
        assert!(requeued, "{all:?}");
        assert_ne!(last[&1].machine.as_deref(), Some(machine.as_str()));
    }
    drop(g.sched.take());
    last
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_agent_jobs_are_lost() {
    let last = lost_agent("fail").await;
    assert_eq!(last[&1].state(), v1::JobState::Lost);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_agent_jobs_are_requeued() {
    let last = lost_agent("requeue").await;
    assert_eq!(last[&1].state(), v1::JobState::Completed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn licence_limit_holds_across_concurrent_jobs() {
    let g = Grid::new(
        &[("m1", 4), ("m2", 4)],
        "[[licences]]\nname = \"matlab\"\ncopies = 2",
    );
    g.online(2).await;
    let mut c = g.client().await;
    let ids: Vec<u64> = (1..=8).collect();
    for &i in &ids {
        let s = v1::JobSpec {
            licences: vec!["matlab".into()],
            ..emulated(1, 20, 10)
        };
        enqueue(&mut c, i, s).await;
    }
    let (all, _) = local_events_until_ended(&mut c, &ids, 25).await;
    let mut active = 0i32;
    let mut max = 0;
    for e in &all {
        match e.state() {
            v1::JobState::Running => active += 1,
            s if s.is_terminal() => active -= 1,
            _ => {}
        }
        max = max.max(active);
    }
    assert_eq!(max, 2, "at most (and here exactly) 2 matlab copies at once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_keeps_queued_jobs() {
    let mut g = Grid::new(&[("m1", 1)], "");
    g.online(1).await;
    let mut c = g.client().await;
    enqueue(&mut c, 1, emulated(1, 100, 40)).await; // 2 s
    enqueue(&mut c, 2, emulated(1, 100, 10)).await;
    enqueue(&mut c, 3, emulated(1, 100, 10)).await;
    drop(g.sched.take());
    // Same port: the agent reconnects, re-registers and re-reports job 1.
    let addr = g.url.trim_start_matches("http://").to_string();
    let (sched, url) = start_scheduler(&g.config, Some(&addr));
    assert_eq!(url, g.url);
    g.sched = Some(sched);
    let mut c = g.client().await;
    let (_, last) = local_events_until_ended(&mut c, &[1, 2, 3], 25).await;
    for i in [2, 3] {
        assert_eq!(
            last[&i].state(),
            v1::JobState::Completed,
            "queued job {i} survived the restart"
        );
    }
}

/// Events of `c` from sequence `from` until `done` holds for one; returns them all.
async fn events_until(
    c: &mut LocalSchedulerClient<Channel>,
    from: u64,
    done: impl Fn(&v1::JobEvent) -> bool,
) -> Vec<v1::JobEvent> {
    let req = v1::JobEventsRequest {
        from_sequence: Some(from),
    };
    let mut s = c.job_events(req).await.unwrap().into_inner();
    let mut all = Vec::new();
    loop {
        let e = tokio::time::timeout(Duration::from_secs(10), s.message())
            .await
            .unwrap_or_else(|_| panic!("timeout after {all:?}"))
            .unwrap()
            .expect("stream open");
        all.push(e.clone());
        if done(&e) {
            return all;
        }
    }
}

/// Opens the StartClaims link as the meta-scheduler would: the sender of the answers and the
/// stream of the site's requests.
async fn claim_link(
    c: &mut LocalSchedulerClient<Channel>,
) -> (
    tokio::sync::mpsc::UnboundedSender<v1::ClaimAnswer>,
    tonic::Streaming<v1::ClaimRequest>,
) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let answers = tokio_stream::wrappers::UnboundedReceiverStream::new(rx);
    (tx, c.start_claims(answers).await.unwrap().into_inner())
}

/// The site's next claim request.
async fn next_claim(link: &mut tonic::Streaming<v1::ClaimRequest>) -> v1::ClaimRequest {
    tokio::time::timeout(Duration::from_secs(5), link.message())
        .await
        .expect("a claim request")
        .unwrap()
        .expect("link open")
}

/// Job `id`, one processor for 1 s, enqueued as the meta-scheduler does: to start on its grant.
/// Waits (up to 5 s: the gauges are refreshed by the 100 ms tick) until the local scheduler's
/// `gridsched_local_jobs_awaiting_claim` gauge at `metrics` reads `want`.
async fn awaiting_claim_gauge(metrics: &str, want: &str) {
    let t = std::time::Instant::now();
    loop {
        let text = gridsched_tests::live::scrape(metrics);
        let v = text
            .lines()
            .find_map(|l| l.strip_prefix("gridsched_local_jobs_awaiting_claim "))
            .map(str::trim)
            .unwrap_or_else(|| panic!("no awaiting-claim gauge in {text}"));
        if v == want {
            return;
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "awaiting-claim gauge {v}, expected {want}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn claim(id: u64) -> v1::EnqueueRequest {
    v1::EnqueueRequest {
        job_id: id,
        spec: Some(emulated(1, 100, 20)),
        priority: 1,
        submit_time: 0,
        claim_before_start: true,
        run: 0,
    }
}

/// The start-claim protocol seen from a site (the test plays the meta-scheduler): jobs enqueued
/// with `claim_before_start` hold their machine but get no start order until granted; when the
/// link opens the site asks for its held jobs and lists its unclaimed waiting ones; withdrawn jobs
/// are dropped unstarted (CANCELLED, `withdrawn`) and may be enqueued again, also after a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claimed_jobs_start_only_when_granted_and_withdrawn_ones_are_dropped() {
    let metrics = gridsched_tests::live::free_addr();
    let mut g = Grid::new(&[("m1", 2)], &format!("metrics_listen = \"{metrics}\""));

    g.online(1).await;
    let mut c = g.client().await;
    for id in 1..=3 {
        c.enqueue(claim(id)).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    let s = c.status(v1::StatusRequest {}).await.unwrap().into_inner();
    let held: Vec<(u64, bool)> = s
        .running
        .iter()
        .map(|r| (r.job_id, r.awaiting_claim))
        .collect();
    assert_eq!(held, [(1, true), (2, true)], "placed but held");
    assert_eq!(s.queue.iter().map(|q| q.job_id).collect::<Vec<_>>(), [3]);
    assert_eq!(
        s.machines[0].busy_processors, 2,
        "held jobs keep their processors"
    );
    awaiting_claim_gauge(&metrics, "2").await; // both held jobs counted

    let (tx, mut link) = claim_link(&mut c).await;
    let mut next = async || next_claim(&mut link).await;
    let first = next().await;
    assert_eq!((first.start, first.waiting), (vec![1, 2], vec![3]));
    tx.send(v1::ClaimAnswer {
        granted: vec![1],
        withdrawn: vec![2, 3],
    })
    .unwrap();
    let (all, last) = local_events_until_ended(&mut c, &[1, 2, 3], 10).await;
    assert_eq!(last[&1].state(), v1::JobState::Completed);
    for id in [2, 3] {
        assert_eq!(last[&id].state(), v1::JobState::Cancelled);
        assert!(last[&id].withdrawn, "{:?}", last[&id]);
        assert!(
            !all.iter()
                .any(|e| e.job_id == id && e.state() == v1::JobState::Running),
            "withdrawn job {id} never ran"
        );
    }
    let running1 = all
        .iter()
        .position(|e| e.job_id == 1 && e.state() == v1::JobState::Running);
    assert!(running1.is_some(), "the granted job ran");
    awaiting_claim_gauge(&metrics, "0").await; // nothing held any more

    // A withdrawn job may come back; it claims again and runs once granted.
    c.enqueue(claim(2)).await.unwrap();
    assert_eq!(next().await.start, [2]);
    tx.send(v1::ClaimAnswer {
        granted: vec![2],
        withdrawn: vec![],
    })
    .unwrap();
    let from = all.last().unwrap().sequence + 1;
    events_until(&mut c, from, |e| {
        e.job_id == 2 && e.state() == v1::JobState::Completed
    })
    .await;
    let again = c.enqueue(claim(1)).await.unwrap_err();
    assert_eq!(
        again.code(),
        tonic::Code::AlreadyExists,
        "an ended job stays ended"
    );

    // After a restart the withdrawal is remembered as such: job 3 is accepted again and its
    // claim is asked for on the new link.
    drop(link);
    drop(g.sched.take());
    let addr = g.url.trim_start_matches("http://").to_string();
    let (sched, _) = start_scheduler(&g.config, Some(&addr));
    g.sched = Some(sched);
    let mut c = g.client().await;
    c.enqueue(claim(3)).await.unwrap();
    let (tx, mut link) = claim_link(&mut c).await;
    // Until its agent is back job 3 only waits (listed as waiting); then it asks to start.
    loop {
        let req = next_claim(&mut link).await;
        if req.start == [3] {
            break;
        }
        assert_eq!((req.start, req.waiting), (vec![], vec![3]));
    }
    tx.send(v1::ClaimAnswer {
        granted: vec![3],
        withdrawn: vec![],
    })
    .unwrap();
    events_until(&mut c, 1, |e| {
        e.job_id == 3 && e.state() == v1::JobState::Completed
    })
    .await;
}

/// A held job (placed by the policy, its claim not granted) shows since when it is placed; it is
/// cancelled like a waiting job, freeing its processor, and when its machine's agent is lost it
/// waits in the queue again (it never ran: not LOST).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_job_is_cancelled_like_a_waiting_one_and_waits_again_without_its_agent() {
    let mut g = Grid::new(&[("m1", 2)], "");
    g.online(1).await;
    let mut c = g.client().await;
    let t0 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    for id in [1, 2] {
        c.enqueue(claim(id)).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let s = c.status(v1::StatusRequest {}).await.unwrap().into_inner();
    assert_eq!(s.running.len(), 2, "{s:?}");
    for r in &s.running {
        assert!(r.awaiting_claim && r.start_time >= t0, "{r:?}");
    }
    let r = c
        .cancel(v1::CancelRequest {
            job_id: 1,
            reason: "no longer needed".into(),
            run: None,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.state(), v1::JobState::Cancelled, "no agent to wait for");
    let s = c.status(v1::StatusRequest {}).await.unwrap().into_inner();
    assert_eq!(s.running.iter().map(|r| r.job_id).collect::<Vec<_>>(), [2]);
    assert_eq!(s.machines[0].busy_processors, 1);

    drop(g.agents.pop());
    let t = Instant::now();
    loop {
        let s = c.status(v1::StatusRequest {}).await.unwrap().into_inner();
        if s.running.is_empty() {
            // Waiting again (a LOST job would have left the queue).
            assert_eq!(s.queue.iter().map(|q| q.job_id).collect::<Vec<_>>(), [2]);
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(5), "{s:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Creates local account `name` on this machine unless it exists (a system account without a
/// home directory; the test runs as root, as the agents that separate users do).
fn local_account(name: &str) -> u32 {
    let known = |name: &str| {
        Command::new("id")
            .args(["-u", name])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
    };
    if let Some(uid) = known(name) {
        return uid;
    }
    let st = Command::new("useradd")
        .args(["--system", "--no-create-home", "--shell", "/bin/sh", name])
        .status()
        .expect("useradd (the test needs root and Debian's passwd package)");
    assert!(st.success(), "useradd {name}: {st}");
    known(name).expect("the account just made")
}

/// Two grid users mapped to two local accounts on one agent running as root: each job runs as
/// its owner's account in a directory closed to the other, so the second user's job can neither
/// read the first's output file, nor list the work directory, nor signal the first's process;
/// a third user, not mapped, is refused at Enqueue with the reason; the status says the users are
/// kept apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_users_on_one_agent_are_kept_apart() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test starts an agent as root, as a site separating users runs it"
    );
    let (alice, bob) = (
        local_account("gridsched-alice"),
        local_account("gridsched-bob"),
    );
    let g = Grid::new(
        &[("m1", 4)],
        "[users]\nalice = \"gridsched-alice\"\nbob = \"gridsched-bob\"\n",
    );
    // The accounts reach their own directories through the test's (0700) temporary one.
    std::fs::set_permissions(g.dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    g.online(1).await;
    let mut c = g.client().await;
    let of = |user: &str, script: &str| v1::JobSpec {
        user: user.into(),
        ..shell(1, 600, script)
    };
    enqueue(
        &mut c,
        1,
        of(
            "alice",
            "id -un; echo $HOME; echo secret > secret.txt; echo $$ > pid; sleep 60",
        ),
    )
    .await;
    let first = g.dir.path().join("m1/1");
    let t = Instant::now();
    let pid = loop {
        if let Some(p) = std::fs::read_to_string(first.join("pid"))
            .ok()
            .and_then(|p| p.trim().parse::<i32>().ok())
        {
            break p;
        }
        assert!(
            t.elapsed() < Duration::from_secs(15),
            "alice's job never wrote its pid"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let meta = std::fs::metadata(&first).unwrap();
    assert_eq!((meta.uid(), meta.mode() & 0o777), (alice, 0o700));
    assert_eq!(
        std::fs::metadata(first.join("secret.txt")).unwrap().uid(),
        alice
    );
    let probe = format!(
        "id -un; cat {secret} && echo READ; ls {work} && echo LISTED; kill -0 {pid} && echo \
         SIGNALLED; true",
        secret = first.join("secret.txt").display(),
        work = g.dir.path().join("m1").display(),
    );
    enqueue(&mut c, 2, of("bob", &probe)).await;
    let (_, last) = local_events_until_ended(&mut c, &[2], 15).await;
    assert_eq!(last[&2].state(), v1::JobState::Completed, "{:?}", last[&2]);
    let second = g.dir.path().join("m1/2");
    let out = std::fs::read_to_string(second.join("stdout")).unwrap();
    let err = std::fs::read_to_string(second.join("stderr")).unwrap();
    assert_eq!(out, "gridsched-bob\n", "stdout {out:?}, stderr: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(lines[0].contains("secret.txt: Permission denied"), "{err}");
    assert!(lines[1].contains("Permission denied"), "{err}");
    assert!(lines[2].contains("Operation not permitted"), "{err}");
    assert_eq!(std::fs::metadata(&second).unwrap().uid(), bob);
    // Alice's job still runs, as her account; the superuser (the test) may signal it.
    let alice_out = std::fs::read_to_string(first.join("stdout")).unwrap();
    let home = nix::unistd::User::from_name("gridsched-alice")
        .unwrap()
        .unwrap()
        .dir;
    assert_eq!(
        alice_out,
        format!("gridsched-alice\n{}\n", home.display()),
        "the job runs as the account, with its HOME"
    );
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).expect("alice's job runs");
    // A user the site does not map is refused at the door, with the reason.
    let e = c
        .enqueue(v1::EnqueueRequest {
            job_id: 3,
            spec: Some(of("carol", "true")),
            priority: 1,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::FailedPrecondition);
    assert_eq!(
        e.message(),
        "spec.user: site `c1` maps no local account to user `carol` (its [users] table)"
    );
    let st = c.status(v1::StatusRequest {}).await.unwrap().into_inner();
    assert_eq!(st.users, "separated: 2 users mapped");
    assert_eq!(
        (
            st.machines[0].agent_account.as_str(),
            st.machines[0].separates_users
        ),
        ("root", true)
    );
    c.cancel(v1::CancelRequest {
        job_id: 1,
        ..Default::default()
    })
    .await
    .unwrap();
    let (_, last) = local_events_until_ended(&mut c, &[1], 15).await;
    assert_eq!(last[&1].state(), v1::JobState::Cancelled);
}
