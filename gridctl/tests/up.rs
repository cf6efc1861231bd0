//! `gridctl up` end to end: the README's first command starts the embedded
//! four-site grid as real processes; `gridctl submit --wait` runs a real command on it, its
//! output lands in the agent's work directory, `status`, `sites` and `explain` answer, and
//! SIGTERM stops the grid.

use gridsched_tests::up::Up;
use std::io::BufRead;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const GRIDCTL: &str = env!("CARGO_BIN_EXE_gridctl");

fn gridctl(endpoint: &str, args: &[&str]) -> std::process::Output {
    Command::new(GRIDCTL)
        .args(["--endpoint", endpoint])
        .args(args)
        .env("USER", "tester")
        .output()
        .expect("run gridctl")
}

#[test]
fn up_runs_a_submitted_command_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let http = gridsched_tests::live::free_addr();
    let mut up = Up::start(
        Path::new(GRIDCTL),
        &["--listen", "127.0.0.1:0", "--http", &http],
        dir.path(),
    );
    let endpoint = up.endpoint.clone();
    let mut banner = String::new();
    for _ in 0..4 {
        up.out.read_line(&mut banner).unwrap();
    }
    assert!(
        banner.contains(&format!("dashboard at http://{http}/")),
        "{banner}"
    );
    assert!(
        banner.contains("site alpha") && banner.contains("site gamma"),
        "{banner}"
    );

    // The agents register within a moment; submit waits for the job's end either way.
    let t = Instant::now();
    let run = loop {
        let r = gridctl(
            &endpoint,
            &[
                "submit",
                "-n",
                "2",
                "--estimate",
                "60",
                "--wait",
                "--",
                "sh",
                "-c",
                "echo hello from $GRIDSCHED_USER job $GRIDSCHED_JOB_ID",
            ],
        );
        if r.status.success() || t.elapsed() > Duration::from_secs(20) {
            break r;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let status = gridctl(&endpoint, &["--json", "status", "1"]);
    let page = gridsched_tests::live::http_get(&http, "/job/1", "");
    assert!(
        page.contains("<h1>Job 1</h1>") && page.contains("COMPLETED"),
        "{page}"
    );
    let v: serde_json::Value = serde_json::from_slice(&status.stdout).expect("json status");
    let text = v.to_string();
    assert!(text.contains("completed"), "{text}");
    let machine = v[0]["machine"]
        .as_str()
        .unwrap_or_else(|| panic!("no machine in {text}"));
    let stdout = dir
        .path()
        .join("work")
        .join(machine)
        .join("1")
        .join("stdout");
    assert_eq!(
        std::fs::read_to_string(&stdout).unwrap(),
        "hello from tester job 1\n"
    );

    // A job that no site can run is refused, naming the field.
    let bad = gridctl(
        &endpoint,
        &["submit", "-n", "64", "--estimate", "60", "--", "true"],
    );
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("InvalidArgument") && err.contains("processors"),
        "{err}"
    );

    let sites = gridctl(&endpoint, &["sites"]);
    let sites = String::from_utf8_lossy(&sites.stdout);
    assert!(sites.contains("fb-mod") && sites.contains("2/2"), "{sites}");
    let explain = gridctl(&endpoint, &["explain", "1"]);
    assert!(String::from_utf8_lossy(&explain.stdout).contains("dispatched to"));

    up.terminate();
    let t = Instant::now();
    while up.child.try_wait().unwrap().is_none() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "gridctl up did not stop"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Its children are gone: the meta-scheduler no longer answers.
    let after = gridctl(&endpoint, &["sites"]);
    assert!(!after.status.success());
}
