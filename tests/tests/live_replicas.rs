//! Replicas of the meta-scheduler over one PostgreSQL store, as real processes with a live grid
//! (two local schedulers and their agents): a follower refuses the API naming the leader; the
//! leader killed with SIGKILL under a stream of tokened submissions is replaced within 5 s, and
//! every acknowledged job is kept and runs exactly once while the refused ones are retried; a
//! leader frozen (SIGSTOP) past its lease is replaced, and once thawed writes nothing and ends
//! itself (exit status 75); the sites, once the new leader has called them, refuse the calls
//! of a deposed one (the epoch each call carries); a leader stopped with SIGTERM lets its lease
//! go.
//!
//! Needs the PostgreSQL server of `GRIDSCHED_TEST_POSTGRES` (`.ci/run` starts one; under
//! `CI=true` its absence is a failure).

use gridsched_proto::v1::{self, JobState};
use gridsched_tests::live::{
    Bins, LiveGrid, Proc, SiteSpec, free_addr, http_get, scrape, spawn_listening, starts_at,
    wait_ended,
};
use gridsched_tests::replicas::{leads, serving, stream, submit};
use meta_scheduler::store::postgres::{ScratchDatabase, test_server};
use meta_scheduler::store::{BackendKind, Store, StoreConfig};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::collections::{HashMap, HashSet};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tonic::Code;

fn bins() -> Bins {
    Bins {
        meta: env!("CARGO_BIN_EXE_gridsched-test-meta-scheduler").into(),
        local: env!("CARGO_BIN_EXE_gridsched-test-local-scheduler").into(),
        agent: env!("CARGO_BIN_EXE_gridsched-test-site-agent").into(),
    }
}

/// Waits (at most 5 s) until every local scheduler refuses a call made with `epoch`: a newer
/// leader has called it.
async fn sites_refuse(g: &LiveGrid, epoch: u64) {
    for addr in &g.local_addrs {
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
            .unwrap();
        let fenced = gridsched_security::Fenced::new(None, epoch).unwrap();
        let mut c =
            v1::local_scheduler_client::LocalSchedulerClient::with_interceptor(channel, fenced);
        let t = Instant::now();
        let e = loop {
            match c.status(v1::StatusRequest {}).await {
                Err(e) => break e,
                Ok(_) => assert!(
                    t.elapsed() < Duration::from_secs(5),
                    "{addr} still takes calls of epoch {epoch}"
                ),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!(e.code(), Code::Unavailable, "{e:?}");
        assert!(
            e.message().contains(&format!("epoch {epoch} is deposed")),
            "{e:?}"
        );
    }
}

fn job() -> v1::JobSpec {
    v1::JobSpec {
        user: "dave".into(),
        processors: 1,
        estimate_s: 60,
        emulate_runtime_s: Some(1),
        ..Default::default()
    }
}

/// One more replica with the grid's configuration, its HTTP endpoint on `http` (`host:port`).
fn replica(g: &LiveGrid, http: &str) -> (Proc, String) {
    let cfg = std::fs::read_to_string(g.path("meta.toml")).unwrap();
    let own = cfg.replacen(
        &format!("metrics_listen = \"{}\"", g.metrics[0]),
        &format!("metrics_listen = \"{http}\""),
        1,
    );
    assert_ne!(cfg, own);
    let path = g.path(&format!("meta-{}.toml", http.replace([':', '.'], "-")));
    std::fs::write(&path, own).unwrap();
    let mut cmd = Command::new(&g.bins.meta);
    cmd.arg("--config").arg(path).stderr(Stdio::null());
    spawn_listening(cmd)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_or_frozen_leader_is_replaced_and_nothing_is_lost_or_run_twice() {
    let Some(admin) = test_server() else {
        return;
    };
    let db = ScratchDatabase::create(&admin).unwrap();
    let extra = format!("[store]\nbackend = \"postgres\"\nurl = \"{}\"\n", db.url);
    let sites = vec![
        SiteSpec::new("alpha", "easy", 2, 4),
        SiteSpec::new("beta", "fb-mod", 2, 4),
    ];
    let mut g = LiveGrid::start(bins(), sites, &extra);
    let a = g.meta_addr.clone();
    leads(&a, Duration::from_secs(15)).await;
    g.ready().await;

    // B follows: not serving, and its answers, its pages and its metrics say so.
    let b_http = free_addr();
    let (b_proc, b) = replica(&g, &b_http);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!serving(&b).await, "a second replica must follow");
    let e = submit(&b, "probe", &job()).await.unwrap_err();
    assert_eq!(e.code(), Code::Unavailable);
    assert!(
        e.message().contains("follower") && e.message().contains(&format!("http://{a}")),
        "{e:?}"
    );
    let page = http_get(&b_http, "/", "");
    assert!(
        page.starts_with("HTTP/1.0 503") && page.contains(&format!("http://{a}")),
        "{page}"
    );
    let m = scrape(&b_http);
    assert!(m.contains("gridsched_meta_leader 0\n"), "{m}");
    assert!(scrape(&g.metrics[0]).contains("gridsched_meta_leader 1\n"));

    // Kill the leader under a stream of tokened submissions.
    let stop = Arc::new(AtomicBool::new(false));
    let sender = tokio::spawn(stream(
        vec![a.clone(), b.clone()],
        "k".into(),
        job(),
        stop.clone(),
    ));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let killed = Instant::now();
    g.kill_meta();
    let took = leads(&b, Duration::from_secs(10)).await;
    // B leads: its dashboard and metrics say so.
    let page = http_get(&b_http, "/", "");
    assert!(
        page.starts_with("HTTP/1.0 200") && page.contains("gridsched grid"),
        "{page}"
    );
    let m = scrape(&b_http);
    assert!(m.contains("gridsched_meta_leader 1\n"), "{m}");
    assert!(m.contains("gridsched_meta_lease_epoch 2\n"), "{m}");
    // The sites follow B: they refuse what A (epoch 1) would still send them.
    sites_refuse(&g, 1).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    stop.store(true, Ordering::Relaxed);
    let s = sender.await.unwrap();
    let first_at_b = s
        .first_at(&b, killed)
        .expect("submissions accepted by B after the kill");
    eprintln!(
        "takeover: B serves {took:?} after the kill, first submission accepted at B after \
         {first_at_b:?}; {} acknowledged, {} refused then retried",
        s.acked.len(),
        s.retried.len()
    );
    assert!(
        first_at_b < Duration::from_secs(5),
        "takeover {first_at_b:?}"
    );
    assert!(
        s.acked.iter().any(|(_, _, at, _)| *at == a) && !s.retried.is_empty(),
        "the stream ran at A, then was refused and retried: {s:?}"
    );

    // Every token has one job; retried at the new leader, it finds the same one.
    let ids = s.ids();
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), ids.len());
    for (token, id, _, _) in &s.acked {
        assert_eq!(
            submit(&b, token, &job()).await.unwrap(),
            (*id, true),
            "{token}"
        );
    }

    // A thawed leader cannot act: freeze B past its lease, A' takes over, thaw B.
    let (a2_proc, a2) = replica(&g, &free_addr());
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert!(!serving(&a2).await);
    let e = submit(&a2, "probe", &job()).await.unwrap_err();
    assert!(e.message().contains(&format!("http://{b}")), "{e:?}");
    let b_pid = Pid::from_raw(b_proc.0.id() as i32);
    kill(b_pid, Signal::SIGSTOP).unwrap();
    let frozen = {
        let b = b.clone();
        tokio::spawn(async move { submit(&b, "frozen", &job()).await })
    };
    let took = leads(&a2, Duration::from_secs(10)).await;
    eprintln!("a frozen leader replaced after {took:?}");
    kill(b_pid, Signal::SIGCONT).unwrap();
    let mut b_proc = b_proc;
    let t = Instant::now();
    let status = loop {
        if let Some(st) = b_proc.0.try_wait().unwrap() {
            break st;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the deposed leader did not stop"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(status.code(), Some(75), "{status:?}");
    sites_refuse(&g, 2).await;
    let answer = frozen.await.unwrap();
    assert!(answer.is_err(), "a deposed leader acknowledged {answer:?}");
    let (frozen_id, dup) = submit(&a2, "frozen", &job()).await.unwrap();
    assert!(!dup && !ids.contains(&frozen_id));

    // Everything acknowledged runs to its end, exactly once.
    let mut all = ids.clone();
    all.push(frozen_id);
    g.meta_addr = a2.clone();
    let mut c = g.client().await;
    let jobs = wait_ended(&mut c, &all, Duration::from_secs(180)).await;
    for j in &jobs {
        assert_eq!(j.state(), JobState::Completed, "{j:?}");
    }
    let mut starts: HashMap<u64, usize> = HashMap::new();
    for addr in &g.local_addrs {
        for (id, n) in starts_at(addr).await {
            *starts.entry(id).or_default() += n;
        }
    }
    for id in &all {
        assert_eq!(
            starts.get(id),
            Some(&1),
            "job {id} started {:?} times",
            starts.get(id)
        );
    }

    // A leader stopped with SIGTERM lets its lease go before it ends.
    let (_c_proc, _c) = replica(&g, &free_addr());
    let mut a2_proc = a2_proc;
    kill(Pid::from_raw(a2_proc.0.id() as i32), Signal::SIGTERM).unwrap();
    let status = a2_proc.0.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(
        dir.path(),
        &StoreConfig {
            backend: BackendKind::Postgres,
            url: Some(db.url.clone()),
            ..StoreConfig::default()
        },
    )
    .unwrap();
    let leader = store
        .leadership()
        .unwrap()
        .unwrap()
        .leader()
        .unwrap()
        .unwrap();
    assert!(
        leader.expired || leader.address != format!("http://{a2}"),
        "the lease of a stopped leader is still held: {leader:?}"
    );
}
