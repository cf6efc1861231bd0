//! `gridctl` against a real meta-scheduler holding more jobs than one ListJobs page (its sites
//! are unreachable, so the jobs stay ACCEPTED): `list --all` and `list --limit` page past the
//! server's 1,000-job cap, output into a pipe closed early (`| head`) ends gridctl quietly with
//! exit code 0, `health` asks the standard health service, and of several endpoints the first
//! that answers is used.

use gridsched_proto::v1::{self, meta_scheduler_client::MetaSchedulerClient};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const GRIDCTL: &str = env!("CARGO_BIN_EXE_gridctl");
const JOBS: usize = 2_345;

const CONFIG: &str = r#"
listen = "127.0.0.1:0"
[links]
site_down_after_ms = 600000
[[sites]]
name = "alpha"
endpoint = "http://127.0.0.1:1"
machines = [{ name = "a1", processors = 4 }]
"#;

/// A child process killed when dropped.
struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the meta-scheduler (through `gridctl __serve`); returns it and its endpoint.
fn meta(dir: &std::path::Path) -> (Kill, String) {
    std::fs::write(dir.join("meta.toml"), CONFIG).unwrap();
    let mut child = Kill(
        Command::new(GRIDCTL)
            .args(["__serve", "meta-scheduler", "--config"])
            .arg(dir.join("meta.toml"))
            .arg("--state-dir")
            .arg(dir.join("state"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let ep = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_owned();
    (child, ep)
}

fn gridctl(endpoint: &str, args: &[&str]) -> std::process::Output {
    Command::new(GRIDCTL)
        .args(["--endpoint", endpoint])
        .args(args)
        .output()
        .expect("run gridctl")
}

/// The ids of `gridctl list --json ARGS`.
fn listed(endpoint: &str, args: &[&str]) -> Vec<u64> {
    let out = gridctl(endpoint, &[&["list", "--json"], args].concat());
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_u64().unwrap())
        .collect()
}

/// Starts gridctl with its stdout into a pipe whose reader takes 100 bytes and closes it.
fn read_then_close(endpoint: &str, args: &[&str]) -> Kill {
    let mut child = Kill(
        Command::new(GRIDCTL)
            .args(["--endpoint", endpoint])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut head = [0; 100];
    std::io::Read::read_exact(child.0.stdout.as_mut().unwrap(), &mut head).unwrap();
    drop(child.0.stdout.take());
    child
}

/// Waits (at most 20 s) for the end of `child`; returns its exit status and stderr.
fn ended(mut child: Kill, what: &[&str]) -> (std::process::ExitStatus, String) {
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "{what:?} still runs after its reader left"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(child.0.stderr.as_mut().unwrap(), &mut err).unwrap();
    (status, err)
}

fn job(i: usize) -> v1::JobSpec {
    v1::JobSpec {
        user: format!("user{}", i % 2),
        processors: 1,
        estimate_s: 60,
        emulate_runtime_s: Some(1),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_past_the_cap_and_stops_quietly_on_a_closed_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let (_meta, ep) = meta(dir.path());
    let mut c = MetaSchedulerClient::connect(ep.clone()).await.unwrap();
    let reqs: Vec<v1::SubmitRequest> = (0..JOBS)
        .map(|i| v1::SubmitRequest { spec: Some(job(i)) })
        .collect();
    let r = c
        .submit_batch(tokio_stream::iter(reqs))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.results.len(), JOBS);

    let all = listed(&ep, &["--all"]);
    assert_eq!(all, (1..=JOBS as u64).collect::<Vec<_>>());
    let some = listed(&ep, &["--limit", "1500"]);
    assert_eq!(some, (1..=1500).collect::<Vec<_>>());
    assert_eq!(listed(&ep, &[]).len(), 100, "the default limit");
    let user1 = listed(&ep, &["--all", "--user", "user1"]);
    assert_eq!(user1.len(), JOBS / 2);
    assert!(user1.iter().all(|id| id % 2 == 0), "user1 has the even ids");

    // Into a reader that leaves after 100 bytes (`| head -c 100`). The lists are larger than a
    // pipe's buffer; a watch that has written its backlog writes again at the next event.
    for args in [
        &["list", "--all"][..],
        &["list", "--all", "--json"],
        &["watch", "--from", "1"],
        &["watch", "--from", "1", "--json"],
    ] {
        let child = read_then_close(&ep, args);
        if args[0] == "watch" {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let next = v1::SubmitRequest { spec: Some(job(0)) };
            c.submit(next).await.unwrap();
        }
        let (status, err) = ended(child, args);
        assert!(status.success(), "{args:?}: {status}, stderr {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?} is quiet: {err}");
    }

    let h = gridctl(&ep, &["health"]);
    let text = String::from_utf8_lossy(&h.stdout);
    assert!(h.status.success(), "{h:?}");
    assert!(
        text.contains("gridsched.v1.MetaScheduler") && text.contains("SERVING"),
        "{text}"
    );

    // Several endpoints: the first that answers is used; none answering names each.
    let dead = "http://127.0.0.1:1";
    let both = format!("{dead},{ep}");
    assert_eq!(listed(&both, &["--limit", "3"]), [1, 2, 3]);
    let h = gridctl(&both, &["health"]);
    assert!(
        String::from_utf8_lossy(&h.stdout).contains(&format!("at {ep}: SERVING")),
        "{h:?}"
    );
    let none = gridctl(&format!("{dead}, http://127.0.0.1:2"), &["list"]);
    let err = String::from_utf8_lossy(&none.stderr);
    assert!(!none.status.success());
    assert!(
        err.contains("no endpoint answers: cannot reach http://127.0.0.1:1")
            && err.contains("; cannot reach http://127.0.0.1:2"),
        "{err}"
    );
}
