//! `gridsim cluster`: the synthetic set-ups through every cluster policy, a platform file and a
//! JSON Lines workload of one's own, and clear errors.

use std::process::{Command, Output};

fn gridsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gridsim"))
        .args(args)
        .output()
        .expect("gridsim runs")
}

fn json(args: &[&str]) -> serde_json::Value {
    let o = gridsim(args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn every_cluster_policy_runs_the_table1_setup() {
    let mut missed = Vec::new();
    for p in ["fcfs", "easy", "fb-unmod", "fb-mod", "edf"] {
        let v = json(&[
            "cluster", "--policy", p, "--jobs", "300", "--ta", "6", "--json",
        ]);
        assert_eq!(v["jobs"]["finished"], 300, "{p}");
        missed.push(v["jobs"]["missed_pct"].as_f64().unwrap());
    }
    // Under this contention FCFS misses the most deadlines and FB fewer than EASY.
    assert!(missed[0] > missed[1] && missed[1] > missed[2], "{missed:?}");
    let v = json(&[
        "cluster", "--setup", "table6", "--jobs", "400", "--ta", "5", "--json",
    ]);
    let shares: Vec<f64> = v["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["optimal_pct"].as_f64().unwrap())
        .collect();
    assert_eq!(shares.len(), 4);
    assert!((shares[0] - 53.333).abs() < 0.01 && (shares[3] - 6.667).abs() < 0.01);
}

#[test]
fn own_platform_and_workload() {
    let dir = tempfile::tempdir().unwrap();
    let platform = dir.path().join("p.json");
    std::fs::write(
        &platform,
        r#"{"licences":[{"name":"matlab"}],
            "machines":[{"id":0,"name":"a","procs":4,"benchmark":200},
                        {"id":1,"name":"b","procs":8,"benchmark":100}],
            "clusters":[{"id":0,"name":"c","site":0,"machines":[0,1],
                         "pools":[{"licence":0,"copies":1,"machines":[0,1]}],"space_sharing":true}],
            "sites":[{"id":0,"name":"s","clusters":[0]}]}"#,
    )
    .unwrap();
    let jobs = dir.path().join("j.jsonl");
    std::fs::write(
        &jobs,
        "{\"id\":1,\"submit\":0,\"procs\":4,\"estimate\":100,\"licences\":[\"matlab\"]}\n\
         {\"id\":2,\"submit\":0,\"procs\":2,\"estimate\":100,\"licences\":[\"matlab\"]}\n\
         {\"id\":3,\"submit\":5,\"procs\":8,\"estimate\":10}\n",
    )
    .unwrap();
    let p = platform.to_str().unwrap();
    let j = jobs.to_str().unwrap();
    let v = json(&[
        "cluster",
        "--platform",
        p,
        "--workload",
        j,
        "--policy",
        "fcfs",
        "--json",
    ]);
    assert_eq!(v["jobs"]["finished"], 3);
    // One matlab copy: job 2 waits for job 1 (100 s on the fast machine), then runs 100 s.
    assert_eq!(v["jobs"]["makespan"], 200);

    std::fs::write(
        &jobs,
        "{\"id\":1,\"submit\":0,\"procs\":1,\"estimate\":5,\"licences\":[\"ansys\"]}\n",
    )
    .unwrap();
    let o = gridsim(&["cluster", "--platform", p, "--workload", j]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("licence `ansys`"));
    std::fs::write(
        &platform,
        r#"{"machines":[{"id":0,"name":"a","procs":"four"}]}"#,
    )
    .unwrap();
    let o = gridsim(&["cluster", "--platform", p]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && e.contains("machines[0].procs"),
        "{e}"
    );
}

/// An SWF workload, its preceding jobs and think times (fields 17–18) ignored unless
/// `--swf-dependencies`: job 2 then waits for job 1 to end (at 100) and 50 s more.
#[test]
fn an_swf_workload_with_its_dependencies_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let platform = dir.path().join("p.json");
    std::fs::write(
        &platform,
        r#"{"machines":[{"id":0,"name":"a","procs":4,"benchmark":100},{"id":1,"name":"b","procs":4,"benchmark":100}],
            "clusters":[{"id":0,"name":"c","site":0,"machines":[0,1],"space_sharing":true}],
            "sites":[{"id":0,"name":"s","clusters":[0]}]}"#,
    )
    .unwrap();
    let swf = dir.path().join("w.swf");
    std::fs::write(
        &swf,
        "; MaxProcs: 8\n\
         1 0 -1 100 4 -1 -1 4 200 -1 1 1 -1 -1 -1 -1 -1 -1\n\
         2 0 -1 10 1 -1 -1 1 200 -1 1 1 -1 -1 -1 -1 1 50\n\
         3 0 -1 10 1 -1 -1 1 200 -1 1 1 -1 -1 -1 -1 -1 -1\n",
    )
    .unwrap();
    let (p, w) = (platform.to_str().unwrap(), swf.to_str().unwrap());
    let run = |extra: &[&str]| {
        let mut args = vec!["cluster", "--platform", p, "--workload", w, "--json"];
        args.extend_from_slice(extra);
        json(&args)
    };
    let plain = run(&[]);
    assert_eq!(plain["jobs"]["finished"], 3);
    assert_eq!(plain["jobs"]["makespan"], 100);
    let dependent = run(&["--swf-dependencies"]);
    assert_eq!(dependent["jobs"]["finished"], 3);
    assert_eq!(dependent["jobs"]["makespan"], 160);
}

#[test]
fn dispatch_strategies_by_name_and_clear_errors() {
    let v = json(&[
        "cluster",
        "--setup",
        "table6",
        "--jobs",
        "200",
        "--ta",
        "5",
        "--dispatch",
        "round-robin",
        "--json",
    ]);
    let per: Vec<u64> = v["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["dispatched"].as_u64().unwrap())
        .collect();
    assert_eq!(per, vec![50, 50, 50, 50], "round robin over four clusters");
    let o = gridsim(&["cluster", "--dispatch", "fastest"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && e.contains("--dispatch") && e.contains("load-ordering"),
        "{e}"
    );
}

#[test]
fn a_closed_stdout_ends_the_program_quietly() {
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_gridsim"))
        .args(["cluster", "--jobs", "200"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{e}");
    assert!(!e.contains("panicked"), "{e}");
}
