//! The `gridsim` command as a user meets it: the built-in default, the JSON contract,
//! determinism of per-job output, and clear errors (file, line, field; exit code) on bad input.

use gridsched_workload::traces;
use std::path::Path;
use std::process::{Command, Output};

fn gridsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gridsim"))
        .args(args)
        .env(traces::TRACES_ENV, traces::dir())
        .output()
        .expect("gridsim runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "gridsim failed: {}", stderr(o));
    serde_json::from_slice(&o.stdout).expect("one JSON object on stdout")
}

const SWF_OK: &str = "; MaxProcs: 8\n\
1 0 -1 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n\
2 10 -1 50 8 -1 -1 8 60 -1 1 2 1 -1 1 -1 -1 -1\n\
3 20 -1 30 2 -1 -1 2 40 -1 1 1 1 -1 1 -1 -1 -1\n";

#[test]
fn the_default_run_replays_the_builtin_synthetic_workload() {
    let o = gridsim(&["run", "--synthetic-jobs", "2000"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for key in [
        "workload",
        "synthetic",
        "mean wait (s)",
        "mean bounded slowdown (10 s)",
        "utilization",
        "wall time",
    ] {
        assert!(out.contains(key), "missing `{key}` in\n{out}");
    }
}

#[test]
fn json_has_the_documented_keys() {
    let v = json(&gridsim(&[
        "run",
        "--synthetic-jobs",
        "3000",
        "--policy",
        "conservative",
        "--json",
    ]));
    for key in [
        "jobs",
        "mean_wait_s",
        "mean_bsld10",
        "max_wait_s",
        "mean_response_s",
        "utilization",
        "makespan_s",
        "awrt",
        "awwt",
        "sim_wall_s",
        "jobs_per_s",
        "loss_of_capacity",
        "artww",
        "sldwa",
    ] {
        assert!(v.get(key).is_some(), "missing key {key}");
    }
    assert_eq!(v["jobs"], 3000);
    assert_eq!(v["policy"], "conservative");
    let u = v["utilization"].as_f64().unwrap();
    assert!(u > 0.3 && u <= 1.0, "utilization {u}");
    assert!(v["mean_response_s"].as_f64().unwrap() >= v["mean_wait_s"].as_f64().unwrap());
}

/// dynP reports its decisions: every started job under one of the three policies, every
/// decision either a switch or not, and the cases of Tab. 4.3 adding up to the decisions.
#[test]
fn dynp_reports_its_switches_and_the_policy_each_job_started_under() {
    let v = json(&gridsim(&[
        "run",
        "--synthetic-jobs",
        "2000",
        "--load",
        "0.9",
        "--policy",
        "dynp",
        "--json",
    ]));
    let c = v["counters"].as_object().expect("counters");
    let sum = |prefix: &str| -> u64 {
        c.iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .map(|(_, n)| n.as_u64().unwrap())
            .sum()
    };
    assert_eq!(sum("started-"), 2000, "{c:?}");
    let decisions = sum("case-");
    assert_eq!(sum("switch-to-") + sum("no-switch"), decisions, "{c:?}");
    assert!(sum("switch-to-") > 0, "dynP never switched: {c:?}");
    let conservative = json(&gridsim(&[
        "run",
        "--synthetic-jobs",
        "200",
        "--policy",
        "conservative",
        "--json",
    ]));
    assert_eq!(conservative["counters"], serde_json::json!({}));
}

#[test]
fn per_job_output_is_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
    for p in [&a, &b] {
        let o = gridsim(&[
            "run",
            "--synthetic-jobs",
            "2000",
            "--seed",
            "7",
            "--jobs-out",
            p.to_str().unwrap(),
            "--json",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let (ta, tb) = (
        std::fs::read_to_string(&a).unwrap(),
        std::fs::read_to_string(&b).unwrap(),
    );
    assert_eq!(ta, tb, "two runs differ");
    let lines: Vec<&str> = ta.lines().collect();
    assert_eq!(lines.len(), 2001);
    assert_eq!(
        lines[0],
        "job,user,submit,start,end,wait,run,procs,estimate,bsld10"
    );
    // A different seed gives a different workload.
    let c = dir.path().join("c.csv");
    gridsim(&[
        "run",
        "--synthetic-jobs",
        "2000",
        "--seed",
        "8",
        "--jobs-out",
        c.to_str().unwrap(),
        "--json",
    ]);
    assert_ne!(std::fs::read_to_string(&c).unwrap(), ta);
}

/// (job, start) of every job of a `--jobs-out` file, by job.
fn starts_in(csv: &Path) -> Vec<(i64, i64)> {
    let text = std::fs::read_to_string(csv).unwrap();
    let mut v: Vec<(i64, i64)> = text
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<i64> = l.split(',').take(4).map(|x| x.parse().unwrap()).collect();
            (f[0], f[3])
        })
        .collect();
    v.sort();
    v
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn a_bad_line_is_an_error_naming_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let bad = SWF_OK.replace("2 10 -1 50 8 ", "2 10 -1 50 eight ");
    let p = write(dir.path(), "bad.swf", &bad);
    let o = gridsim(&["run", "--trace", &p]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("bad.swf:3: field 5 (allocated processors)"),
        "{e}"
    );
    assert!(!e.contains("panicked"), "{e}");

    let short = SWF_OK.replace(
        "3 20 -1 30 2 -1 -1 2 40 -1 1 1 1 -1 1 -1 -1 -1",
        "3 20 -1 30 2",
    );
    let p = write(dir.path(), "short.swf", &short);
    let o = gridsim(&["run", "--trace", &p]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("short.swf:4: expected 18 fields, found 5"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bad_lines_can_be_skipped_and_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let bad = SWF_OK.replace("2 10 -1 50 8 ", "2 10 -1 50 eight ");
    let p = write(dir.path(), "bad.swf", &bad);
    let o = gridsim(&["run", "--trace", &p, "--skip-bad-lines", "--json"]);
    let v = json(&o);
    assert_eq!(v["jobs"], 2);
    assert_eq!(v["workload"]["skipped_lines"], 1);
    assert!(
        stderr(&o).contains("skipped 1 unreadable lines"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("bad.swf:3"), "{}", stderr(&o));
}

#[test]
fn a_small_trace_gives_the_hand_computed_schedule() {
    // 8 processors, EASY. Job 1 (4 procs, runs 100) starts at 0; job 2 (8 procs) waits for it
    // (shadow 200 by the estimate, but job 1 ends at 100 and frees its tail); job 3 (2 procs,
    // estimate 40) backfills at 20 and ends at 50. Job 2 starts at 100.
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "ok.swf", SWF_OK);
    let csv = dir.path().join("jobs.csv");
    let o = gridsim(&[
        "run",
        "--trace",
        &p,
        "--jobs-out",
        csv.to_str().unwrap(),
        "--json",
    ]);
    let v = json(&o);
    assert_eq!(v["workload"]["procs"], 8);
    let text = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<Vec<i64>> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').take(5).map(|x| x.parse().unwrap()).collect())
        .collect();
    assert_eq!(
        rows,
        vec![
            vec![3, 1, 20, 20, 50],
            vec![1, 1, 0, 0, 100],
            vec![2, 2, 10, 100, 150]
        ]
    );
    assert_eq!(v["max_wait_s"], 90);
    assert_eq!(v["makespan_s"], 150);
    // FCFS keeps job 3 behind job 2.
    let v = json(&gridsim(&[
        "run", "--trace", &p, "--policy", "fcfs", "--json",
    ]));
    assert_eq!(v["makespan_s"], 180);
}

/// Advance reservations in a replay: 10 processors, conservative. Job 1 holds them all until
/// 100. Reservation r1 (4 processors on [100, 200)) is admitted; r2 (1 processor from 50) is
/// refused, the machine being full until 100. Job 2 runs inside r1 from 100, job 3 (6) beside
/// it, job 4 (8) only after both at 200, and job 5, naming a reservation not held, is refused.
/// EASY and FCFS, which check their starts against the reservations, decide the same here.
#[test]
fn reservations_are_admitted_refused_and_run_in_during_a_replay() {
    let dir = tempfile::tempdir().unwrap();
    let jobs = write(
        dir.path(),
        "jobs.jsonl",
        r#"{"id": 1, "submit": 0, "procs": 10, "estimate": 100, "runtime": 100}
{"id": 2, "submit": 5, "procs": 4, "estimate": 50, "runtime": 50, "reservation": 1}
{"id": 3, "submit": 5, "procs": 6, "estimate": 100, "runtime": 100}
{"id": 4, "submit": 6, "procs": 8, "estimate": 10, "runtime": 10}
{"id": 5, "submit": 7, "procs": 1, "estimate": 5, "runtime": 5, "reservation": 9}
"#,
    );
    let res = write(
        dir.path(),
        "res.jsonl",
        r#"# at, then the reservation
{"at": 0, "id": 1, "start": 100, "end": 200, "procs": 4}
{"at": 1, "id": 2, "start": 50, "end": 150, "procs": 1}
"#,
    );
    let csv = dir.path().join("out.csv");
    let run = |policy: &str| {
        gridsim(&[
            "run",
            "--trace",
            &jobs,
            "--procs",
            "10",
            "--policy",
            policy,
            "--reservations",
            &res,
            "--jobs-out",
            csv.to_str().unwrap(),
            "--json",
        ])
    };
    for policy in ["conservative", "easy", "fcfs"] {
        let o = run(policy);
        let v = json(&o);
        assert_eq!(
            (
                v["reservations_admitted"].as_u64(),
                v["reservations_refused"].as_u64()
            ),
            (Some(1), Some(1))
        );
        assert!(
        stderr(&o).contains(
            "reservation r2 conflicts with the plan on [50, 100): 0 processors free there, 1 asked"
        ),
        "{}",
        stderr(&o)
    );
        assert!(
            stderr(&o).contains("job 5 cannot run in reservation r9"),
            "{}",
            stderr(&o)
        );
        assert_eq!(
            starts_in(&csv),
            [(1, 0), (2, 100), (3, 100), (4, 200)],
            "{policy}"
        );
        assert_eq!(v["rejected"], 1, "{policy}");
    }
    let bad = write(
        dir.path(),
        "bad.jsonl",
        "{\"at\": 0, \"id\": 1, \"start\": 5}\n",
    );
    let o = gridsim(&[
        "run",
        "--trace",
        &jobs,
        "--procs",
        "10",
        "--reservations",
        &bad,
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("bad.jsonl:1"), "{}", stderr(&o));
}

#[test]
fn jsonl_needs_a_machine_size_and_wide_jobs_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "jobs.jsonl",
        "# native format\n\
         {\"id\": 1, \"submit\": 0, \"procs\": 2, \"estimate\": 100, \"runtime\": 50, \"class\": \"gold\", \"deadline\": 500, \"licences\": [\"matlab\"]}\n\
         {\"id\": 2, \"submit\": 5, \"procs\": 64, \"estimate\": 100, \"runtime\": 50}\n",
    );
    let o = gridsim(&["run", "--trace", &p]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("--procs"), "{}", stderr(&o));
    let o = gridsim(&["run", "--trace", &p, "--procs", "16", "--json"]);
    let v = json(&o);
    assert_eq!(v["jobs"], 1);
    assert_eq!(v["rejected"], 1);
    assert!(
        stderr(&o).contains("refused 1 jobs") && stderr(&o).contains("needs 64 processors"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn usage_errors_are_clear() {
    let o = gridsim(&["run", "--policy", "edf"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("conservative"), "{}", stderr(&o));
    let o = gridsim(&["run", "--trace", "NO-SUCH-TRACE"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("no trace `NO-SUCH-TRACE`"),
        "{}",
        stderr(&o)
    );
    let o = gridsim(&["run", "--estimates", "0.5"]);
    assert_eq!(o.status.code(), Some(2));
}

/// The directory `gridsim` looks in for a trace named without a path, when `$GRIDSCHED_TRACES` is
/// unset and the command runs in `cwd` (read from the error for an unknown name).
fn default_traces_dir_from(cwd: &Path) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_gridsim"))
        .args(["run", "--trace", "NO-SUCH-TRACE"])
        .env_remove(traces::TRACES_ENV)
        .current_dir(cwd)
        .output()
        .expect("gridsim runs");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    let dir = e
        .split_once("no file in ")
        .and_then(|(_, rest)| rest.split_once(" (set GRIDSCHED_TRACES)"))
        .unwrap_or_else(|| panic!("no directory in: {e}"))
        .0;
    dir.to_string()
}

#[test]
fn the_default_traces_dir_is_the_same_from_the_crate_and_from_the_workspace_root() {
    let krate = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = traces::workspace_root(krate).expect("a workspace above the crate");
    let expected = root.join("../shared/traces");
    assert_eq!(
        default_traces_dir_from(krate),
        expected.display().to_string()
    );
    assert_eq!(
        default_traces_dir_from(&root),
        expected.display().to_string()
    );
    // That directory holds the shared traces (a failure under CI=true, else a loud skip).
    traces::for_test_in("KTH-SP2-1996-2.1-cln.swf.gz", &expected, traces::ci());
}

#[test]
fn kth_by_name_gives_the_golden_values() {
    let Some(_) = traces::for_test("KTH-SP2-1996-2.1-cln.swf.gz") else {
        return;
    };
    let v = json(&gridsim(&[
        "run", "--trace", "KTH", "--policy", "easy", "--mode", "pyss", "--json",
    ]));
    assert_eq!(v["jobs"], 27_992);
    assert!((v["mean_wait_s"].as_f64().unwrap() - 6_412.24).abs() < 0.005);
    assert!((v["mean_bsld10"].as_f64().unwrap() - 86.28).abs() < 0.005);
    assert_eq!(v["max_wait_s"], 248_239);
    assert_eq!(v["workload"]["header"]["max_procs"], 100);
}

/// Time-dependent planning rules in a replay (Streit §3.1.2): 100 processors, jobs submitted on
/// Monday 2026-11-23 at 10:00 UTC. Under `width-cap 75% mon-fri 06-20` the 80-processor job waits
/// for 20:00 on an empty machine while the narrow one starts at once; without the rule both start
/// at 10:00. The rule is refused for a policy that does not plan, and a malformed one is named.
/// `gridsim run` of `jobs` on 100 processors, the jobs' records to `csv`, JSON summary, with
/// `extra` arguments.
fn replay_on_100(jobs: &str, csv: &Path, extra: &[&str]) -> Output {
    let mut a = vec![
        "run",
        "--trace",
        jobs,
        "--procs",
        "100",
        "--jobs-out",
        csv.to_str().unwrap(),
        "--json",
    ];
    a.extend_from_slice(extra);
    gridsim(&a)
}

#[test]
fn planning_rules_keep_wide_jobs_out_of_prime_time() {
    let dir = tempfile::tempdir().unwrap();
    let ten = 1_795_392_000 + 36_000;
    let jobs = write(
        dir.path(),
        "jobs.jsonl",
        &format!(
            "{{\"id\": 1, \"submit\": {ten}, \"procs\": 80, \"estimate\": 3600, \"runtime\": 3600}}\n\
             {{\"id\": 2, \"submit\": {ten}, \"procs\": 10, \"estimate\": 600, \"runtime\": 600}}\n"
        ),
    );
    let csv = dir.path().join("out.csv");
    let run = |extra: &[&str]| replay_on_100(&jobs, &csv, extra);
    let starts = || starts_in(&csv);
    for policy in ["planning-fcfs", "dynp"] {
        let o = run(&[
            "--policy",
            policy,
            "--plan-rule",
            "width-cap 75% mon-fri 06-20",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(starts(), [(1, ten + 36_000), (2, ten)], "{policy}");
        let o = run(&["--policy", policy]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(starts(), [(1, ten), (2, ten)], "{policy}");
    }
    let o = run(&[
        "--policy",
        "easy",
        "--plan-rule",
        "width-cap 75% mon-fri 06-20",
    ]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains(
            "planning: the easy policy takes no `planning` options (only planning-fcfs, \
             planning-sjf, planning-ljf, dynp do)"
        ),
        "{}",
        stderr(&o)
    );
    let o = run(&[
        "--policy",
        "dynp",
        "--plan-rule",
        "width-cap 75% moon 06-20",
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("unknown day `moon`"), "{}", stderr(&o));
}

/// A per-user limit in a replay (Streit §3.1.2): 100 processors, Monday 2026-11-23 10:00 UTC,
/// `user-cap 50% mon-fri 06-20`. User 1's third job waits for 11:00, when its first two end,
/// although 30 processors are free; user 2's job starts at once. Without the rule all start at
/// 10:00; a job wider than an all-week cap is refused.
#[test]
fn a_user_cap_holds_back_one_users_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let ten = 1_795_392_000 + 36_000;
    let line = |id: u32, procs: u32, user: u32| {
        format!(
            "{{\"id\": {id}, \"user\": {user}, \"submit\": {ten}, \"procs\": {procs}, \
             \"estimate\": 3600, \"runtime\": 3600}}\n"
        )
    };
    let jobs = write(
        dir.path(),
        "jobs.jsonl",
        &[
            line(1, 30, 1),
            line(2, 20, 1),
            line(3, 20, 1),
            line(4, 20, 2),
        ]
        .concat(),
    );
    let csv = dir.path().join("out.csv");
    let run = |extra: &[&str]| replay_on_100(&jobs, &csv, extra);
    for policy in ["planning-fcfs", "dynp"] {
        let o = run(&[
            "--policy",
            policy,
            "--plan-rule",
            "user-cap 50% mon-fri 06-20",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(
            starts_in(&csv),
            [(1, ten), (2, ten), (3, ten + 3600), (4, ten)],
            "{policy}"
        );
        let o = run(&["--policy", policy]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(
            starts_in(&csv),
            [(1, ten), (2, ten), (3, ten), (4, ten)],
            "{policy}"
        );
    }
    // Job 1 (30 processors) is wider than an all-week cap of 25: refused; user 1's two jobs of
    // 20 then run one after the other.
    let o = run(&[
        "--policy",
        "planning-fcfs",
        "--plan-rule",
        "user-cap 25 all 00-24",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("planning rules"), "{}", stderr(&o));
    assert_eq!(json(&o)["rejected"], 1);
    assert_eq!(starts_in(&csv), [(2, ten), (3, ten + 3600), (4, ten)]);
}

/// `--set KEY=VALUE` takes the keys of a local scheduler's `[policy]` table: the same replay as
/// the matching flag, job for job; a key of a table the policy does not read, an unknown key and
/// a bad value are refused, each naming the key.
#[test]
fn set_takes_the_configuration_keys_of_the_policy() {
    let dir = tempfile::tempdir().unwrap();
    let replay = |name: &str, extra: &[&str]| {
        let csv = dir.path().join(name);
        let mut a = vec![
            "run",
            "--policy",
            "sjf-bf",
            "--synthetic-jobs",
            "3000",
            "--jobs-out",
            csv.to_str().unwrap(),
        ];
        a.extend_from_slice(extra);
        let o = gridsim(&a);
        (
            o.status.success(),
            stderr(&o),
            std::fs::read_to_string(csv).unwrap_or_default(),
        )
    };
    let (ok, err, flag) = replay("flag.csv", &["--shadow", "stale", "--no-extra-procs"]);
    assert!(ok, "{err}");
    let (ok, err, set) = replay(
        "set.csv",
        &[
            "--set",
            "backfill.shadow=stale",
            "--set",
            "backfill.extra_procs=false",
        ],
    );
    assert!(ok, "{err}");
    let (_, _, plain) = replay("plain.csv", &[]);
    assert_eq!(flag, set);
    assert_ne!(flag, plain, "the options change the schedule");
    let refused = |extra: &[&str], want: &str| {
        let (ok, err, _) = replay("bad.csv", extra);
        assert!(!ok && err.contains(want), "{extra:?}: {err}");
    };
    refused(
        &["--set", "gang.mpl=3"],
        "gang: the sjf-bf policy takes no `gang` options (only gs, bgs, mgs, mbgs, bgs-adaptive do)",
    );
    refused(
        &["--set", "backfill.shadw=stale"],
        "--set backfill.shadw: unknown field `shadw`",
    );
    refused(
        &["--set", "urgent.mode=preempt"],
        "--set urgent: a replay runs no urgent layer",
    );
    refused(
        &["--set", "partition=false"],
        "--set partition: a replay runs one space-shared machine",
    );
    refused(
        &["--set", "backfill.shadow=old"],
        "--set backfill.shadow: unknown variant `old`",
    );
}
