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

    let ok = |out: std::process::Output| {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let sites = gridctl(&endpoint, &["sites"]);
    let sites = String::from_utf8_lossy(&sites.stdout);
    assert!(sites.contains("fb-mod") && sites.contains("2/2"), "{sites}");
    let explain = gridctl(&endpoint, &["explain", "1"]);
    assert!(String::from_utf8_lossy(&explain.stdout).contains("dispatched to"));

    // Advance reservations, as the README's tour makes them: delta plans (one machine), beta is
    // a cluster of two machines with licence pools (a machine and a matlab copy held).
    let r1 = ok(gridctl(
        &endpoint,
        &[
            "reserve",
            "--site",
            "delta",
            "-n",
            "4",
            "--start",
            "+60",
            "--duration",
            "300",
        ],
    ));
    assert!(r1.contains("r1") && r1.contains("delta-1"), "{r1}");
    let r2 = ok(gridctl(
        &endpoint,
        &[
            "reserve",
            "--site",
            "beta",
            "-n",
            "2",
            "--licence",
            "matlab",
            "--start",
            "+60",
            "--duration",
            "300",
        ],
    ));
    assert!(
        r2.contains("r2") && r2.contains("beta-1") && r2.contains("matlab"),
        "{r2}"
    );
    let refused = gridctl(
        &endpoint,
        &[
            "reserve",
            "--site",
            "beta",
            "-n",
            "1",
            "--licence",
            "matlab",
            "--start",
            "+100",
            "--duration",
            "10",
        ],
    );
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("licence matlab"), "{err}");
    let inside = ok(gridctl(
        &endpoint,
        &[
            "submit",
            "--reservation",
            "r1",
            "-n",
            "2",
            "--estimate",
            "100",
            "--",
            "true",
        ],
    ));
    let listed = ok(gridctl(&endpoint, &["--json", "reservations"]));
    let v: serde_json::Value = serde_json::from_str(&listed).expect("json reservations");
    let ids: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["r1", "r2"], "{listed}");
    assert_eq!(v[0]["state"], "held", "{listed}");
    assert_eq!(v[1]["machine"], "beta-1", "{listed}");
    assert_eq!(v[1]["licences"], serde_json::json!(["matlab"]), "{listed}");
    let job: u64 = inside
        .split_whitespace()
        .find_map(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("a job id in {inside:?}"));
    assert_eq!(v[0]["jobs"], serde_json::json!([job]), "{listed}");
    ok(gridctl(&endpoint, &["cancel-reservation", "r1"]));
    let listed = ok(gridctl(&endpoint, &["reservations", "--site", "delta"]));
    assert!(!listed.contains("r1"), "{listed}");

    // A job wider than every site (40 > 16) runs out of the box as fragments over three sites,
    // co-allocated before the reservations above begin, each with the 10 % WAN
    // overhead, the split in its environment.
    let wide = ok(gridctl(
        &endpoint,
        &[
            "--json",
            "submit",
            "-n",
            "40",
            "--estimate",
            "30",
            "--wait",
            "--",
            "sh",
            "-c",
            "echo $GRIDSCHED_FRAGMENT_RANK $GRIDSCHED_FRAGMENT_SITES; date +%s%N",
        ],
    ));
    let v: serde_json::Value = serde_json::from_str(&wide).expect("json job");
    let id = v[0]["id"].as_u64().expect("job id");
    assert_eq!(v[0]["state"], "completed", "{v}");
    let fragments = v[0]["fragments"].as_array().expect("fragments");
    let placed: Vec<(String, u64, u64)> = fragments
        .iter()
        .map(|f| {
            let site = f["site"].as_str().unwrap_or_default().to_string();
            (
                site,
                f["processors"].as_u64().unwrap(),
                f["estimate_s"].as_u64().unwrap(),
            )
        })
        .collect();
    let stretched = |s: &str, n| (s.to_string(), n, 33);
    assert_eq!(
        placed,
        [
            stretched("beta", 16),
            stretched("delta", 16),
            stretched("alpha", 8)
        ]
    );
    let mut starts = Vec::new();
    for (rank, f) in fragments.iter().enumerate() {
        let machine = f["machine"].as_str().expect("fragment machine");
        let out = dir
            .path()
            .join("work")
            .join(machine)
            .join(id.to_string())
            .join("stdout");
        let out = std::fs::read_to_string(&out).unwrap();
        let mut lines = out.lines();
        assert_eq!(
            lines.next(),
            Some(format!("{rank} beta,delta,alpha").as_str())
        );
        starts.push(
            lines
                .next()
                .and_then(|l| l.parse::<i128>().ok())
                .expect("start"),
        );
    }
    let skew_ms = (starts.iter().max().unwrap() - starts.iter().min().unwrap()) / 1_000_000;
    assert!(skew_ms < 1_000, "fragments started {skew_ms} ms apart");

    // Accounting as the README's tour reads it: job 1 and the split job in the history (its
    // fragments' sites in rank order, its 40 processors), the usage by site naming them, and
    // `status` giving its times in local time.
    let hist = ok(gridctl(
        &endpoint,
        &["history", "--csv", "-o", "job,state,sites,procs"],
    ));
    assert_eq!(hist.lines().next(), Some("job,state,sites,procs"), "{hist}");
    assert!(
        hist.lines().any(|l| l.starts_with("1,completed,")),
        "{hist}"
    );
    assert!(
        hist.lines()
            .any(|l| l == format!("{id},completed,beta delta alpha,40")),
        "{hist}"
    );
    let none = ok(gridctl(
        &endpoint,
        &["history", "--since", "2001-01-01", "--until", "2001-01-02"],
    ));
    assert!(
        none.starts_with("no job ended between 2001-01-01"),
        "{none}"
    );
    let none = ok(gridctl(
        &endpoint,
        &["usage", "--since", "2001-01-01", "--until", "2001-01-02"],
    ));
    assert!(none.contains("no use recorded in the period"), "{none}");
    let usage = ok(gridctl(&endpoint, &["usage", "--by", "site"]));
    assert!(
        usage.starts_with("Usage by site, ")
            && usage.contains("| delta ")
            && usage.contains("| total "),
        "{usage}"
    );
    let listed = ok(gridctl(&endpoint, &["list", "-o", "id,procs,site,wait"]));
    assert!(
        listed.contains("| id ") && listed.contains("| wait ") && !listed.contains("| state "),
        "{listed}"
    );
    assert!(listed.contains("beta:16+delta:16+alpha:8"), "{listed}");
    let status = ok(gridctl(&endpoint, &["status", &id.to_string()]));
    assert!(
        status.contains("submitted 20") && status.contains(", ended 20"),
        "{status}"
    );

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

/// A 10,000-task array submitted with one command runs through `gridctl up`: never more than
/// `%40` tasks out (the array's progress polled all along), each index exactly once (every task
/// appends its index to one file), and `gridctl list` shows the array as one line.
#[test]
fn a_ten_thousand_task_array_runs_through_gridctl_up_within_its_limit() {
    let dir = tempfile::tempdir().unwrap();
    let up = Up::start(Path::new(GRIDCTL), &["--listen", "127.0.0.1:0"], dir.path());
    let endpoint = up.endpoint.clone();
    let out = dir.path().join("indices");
    let script = format!("echo $GRIDSCHED_ARRAY_INDEX >> {}", out.display());
    let t = Instant::now();
    let submitted = loop {
        let r = gridctl(
            &endpoint,
            &[
                "--json",
                "submit",
                "--estimate",
                "60",
                "--array",
                "0-9999%40",
                "--",
                "sh",
                "-c",
                &script,
            ],
        );
        if r.status.success() || t.elapsed() > Duration::from_secs(20) {
            break r;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        submitted.status.success(),
        "{}",
        String::from_utf8_lossy(&submitted.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&submitted.stdout).unwrap();
    let id = v["job_id"].as_u64().unwrap().to_string();
    let (mut polls, mut most) = (0, 0);
    let t = Instant::now();
    loop {
        let s = gridctl(&endpoint, &["--json", "status", &id]);
        let v: serde_json::Value = serde_json::from_slice(&s.stdout).expect("json status");
        let p = &v[0]["array"];
        let out = p["queued"].as_u64().unwrap() + p["running"].as_u64().unwrap();
        assert!(out <= 40, "{p}");
        most = most.max(out);
        polls += 1;
        if v[0]["state"] == "completed" {
            assert_eq!(p["completed"], 10_000, "{p}");
            break;
        }
        assert!(
            v[0]["state"] != "failed" && v[0]["state"] != "cancelled",
            "{v}"
        );
        assert!(t.elapsed() < Duration::from_secs(600), "{p}");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(polls > 5 && most > 1, "{polls} polls, at most {most} out");
    let text = std::fs::read_to_string(&out).unwrap();
    let mut seen: Vec<u32> = text.lines().map(|l| l.trim().parse().unwrap()).collect();
    seen.sort_unstable();
    assert_eq!(seen.len(), 10_000);
    assert!(
        seen.iter().enumerate().all(|(k, &i)| i as usize == k),
        "each index once"
    );
    let list = gridctl(&endpoint, &["list"]);
    let list = String::from_utf8_lossy(&list.stdout);
    let rows: Vec<&str> = list.lines().filter(|l| l.starts_with("| ")).collect();
    assert_eq!(rows.len(), 2, "{list}");
    assert!(
        rows[1].contains(&format!("{id}_[0-9999%40]")) && rows[1].contains("10000 completed"),
        "{list}"
    );
}

/// A short chaos soak of real processes (docs/reliability.md): for 45 s a fault every 3 s (kill
/// -9 and restart, or SIGSTOP for seconds, of a meta-scheduler replica, a local scheduler or an
/// agent, or the links into a replica or a local scheduler cut) while the mixed stream comes in
/// (single and split jobs, urgent ones that kill or suspend others, deadlines, dependencies,
/// advance reservations); then every acknowledged job has ended, is the grid's once, and no run
/// or part of one started twice. Two replicas share a scratch PostgreSQL database, and a fourth site hands
/// its jobs to Slurm, where `.ci/run` provides them; links are cut where nftables can be used
/// (root). Under `CI=true` all three must be there.
#[test]
fn a_short_chaos_soak_accounts_every_job_once() {
    use meta_scheduler::store::postgres::{ScratchDatabase, test_server};
    let dir = tempfile::tempdir().unwrap();
    let mut soak = Command::new(GRIDCTL);
    soak.args([
        "soak",
        "--minutes",
        "0.75",
        "--fault-every",
        "3",
        "--rate",
        "3",
    ])
    .args(["--seed", "7", "--dir"])
    .arg(dir.path().join("soak"));
    let db = test_server().map(|admin| ScratchDatabase::create(&admin).unwrap());
    if let Some(db) = &db {
        soak.args(["--postgres", &db.url, "--replicas", "2"]);
    }
    let slurm = gridsched_tests::slurm::cluster();
    if let Some(s) = &slurm {
        let token = s.token_file(&dir.path().join("slurm.jwt"));
        soak.args(["--slurm", &s.rest_url, "--slurm-token-file"])
            .arg(token);
    }
    let cuts = Command::new("nft")
        .args(["list", "tables"])
        .output()
        .is_ok_and(|o| o.status.success())
        || std::env::var_os("CI").is_some();
    if !cuts {
        soak.arg("--no-cuts");
    }
    let out = soak.output().expect("run gridctl soak");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("\n  rules broken       0\n"), "{text}");
    let figure = |label: &str| -> usize {
        let line = text.lines().find(|l| l.trim_start().starts_with(label));
        let words = line.unwrap_or_else(|| panic!("no `{label}` in {text}"));
        let n = words.trim_start()[label.len()..].split_whitespace().next();
        n.and_then(|n| n.parse().ok()).expect("a figure")
    };
    assert!(figure("faults injected") >= 14, "{text}");
    assert!(figure("jobs acknowledged") >= 100, "{text}");
    // The stream was the mixed one: "N (W wider than any machine, U urgent, ...".
    let urgent = (text.lines())
        .find(|l| l.trim_start().starts_with("jobs acknowledged"))
        .and_then(|l| l.split(", ").find(|p| p.ends_with(" urgent")))
        .and_then(|p| p.trim_end_matches(" urgent").parse::<usize>().ok());
    assert!(urgent.is_some_and(|u| u > 0), "{text}");
    if cuts {
        assert!(text.contains("Cut the links of local-scheduler"), "{text}");
    }
}
