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

/// `--network`: two jobs read one 100 MB input from the submitters' side, which reach `c0` at
/// 1 MB/s and `c1` at 100 MB/s. Counting the transfer, MCT sends both to `c1`: the input is
/// there at 1 s, the jobs run 1–11 and 11–21. Blind, it sends both to `c0` (the lower id on a
/// tie): the input is there at 100 s, the jobs run 100–110 and 110–120. One move either way.
#[test]
fn a_network_file_moves_the_inputs_and_the_strategy_counts_them_unless_blind() {
    let dir = tempfile::tempdir().unwrap();
    let platform = dir.path().join("p.json");
    std::fs::write(
        &platform,
        r#"{"machines":[{"id":0,"name":"a","procs":4,"benchmark":100},
                        {"id":1,"name":"b","procs":4,"benchmark":100,"cluster":1}],
            "clusters":[{"id":0,"name":"c0","site":0,"machines":[0],"space_sharing":true},
                        {"id":1,"name":"c1","site":1,"machines":[1],"space_sharing":true}],
            "sites":[{"id":0,"name":"s0","clusters":[0]},{"id":1,"name":"s1","clusters":[1]}]}"#,
    )
    .unwrap();
    let jobs = dir.path().join("j.jsonl");
    let input = r#""stage_in":[{"key":"big","bytes":100000000}]"#;
    std::fs::write(
        &jobs,
        format!(
            "{{\"id\":1,\"submit\":0,\"procs\":4,\"estimate\":10,\"runtime\":10,{input}}}\n\
             {{\"id\":2,\"submit\":0,\"procs\":4,\"estimate\":10,\"runtime\":10,{input}}}\n"
        ),
    )
    .unwrap();
    let net = dir.path().join("net.toml");
    std::fs::write(
        &net,
        "submitters = { bandwidth = \"100 MB/s\" }\nbetween = { bandwidth = \"1 GB/s\" }\n\
         [[links]]\nfrom = \"submitters\"\nto = \"c0\"\nbandwidth = \"1 MB/s\"\n",
    )
    .unwrap();
    let (p, j, n) = (
        platform.to_str().unwrap(),
        jobs.to_str().unwrap(),
        net.to_str().unwrap(),
    );
    let run = |extra: &[&str]| {
        let mut args = vec![
            "cluster",
            "--platform",
            p,
            "--workload",
            j,
            "--policy",
            "fcfs",
            "--dispatch",
            "min-completion",
            "--network",
            n,
            "--json",
        ];
        args.extend_from_slice(extra);
        json(&args)
    };
    let aware = run(&[]);
    assert_eq!(aware["jobs"]["makespan"], 21, "{aware}");
    assert_eq!(aware["clusters"][1]["dispatched"], 2);
    assert_eq!(aware["stats"]["input_moves"], 1);
    assert_eq!(aware["stats"]["input_bytes"], 100_000_000u64);
    assert_eq!(aware["stats"]["input_wait_s"], 2, "1 s each");
    let blind = run(&["--data-blind"]);
    assert_eq!(blind["jobs"]["makespan"], 120, "{blind}");
    assert_eq!(blind["clusters"][0]["dispatched"], 2);
    assert_eq!(blind["stats"]["input_moves"], 1);

    std::fs::write(
        &net,
        "submitters = { bandwidth = \"100 MB/s\" }\nbetween = { bandwidth = 1 }\n\
         [[links]]\nfrom = \"c0\"\nto = \"c9\"\nbandwidth = 5\n",
    )
    .unwrap();
    let o = gridsim(&["cluster", "--platform", p, "--workload", j, "--network", n]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && e.contains("links[0].to") && e.contains("c9"),
        "{e}"
    );
}
