//! `gridsim trace scale` as a user meets it: JSON summary, both output formats read back,
//! determinism with a seed, clear errors, and a real trace when present.

use gridsched_workload::{JobSource, NormalizeOptions, traces};
use std::path::Path;
use std::process::{Command, Output};

fn gridsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gridsim"))
        .args(args)
        .env(traces::TRACES_ENV, traces::dir())
        .output()
        .expect("gridsim runs")
}

fn json(o: &Output) -> serde_json::Value {
    assert!(
        o.status.success(),
        "gridsim failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("one JSON object on stdout")
}

const SWF: &str = "; MaxProcs: 8\n\
1 0 -1 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n\
2 10 -1 50 8 -1 -1 8 60 -1 1 2 1 -1 1 -1 -1 -1\n\
3 20 -1 30 3 -1 -1 3 40 -1 1 1 1 -1 1 -1 -1 -1\n";

fn read(path: &Path) -> Vec<(i64, u32, Option<i64>)> {
    let mut src =
        JobSource::open(path, None, NormalizeOptions::default()).expect("readable output");
    src.by_ref()
        .map(|j| j.expect("job"))
        .map(|j| (j.submit, j.procs, j.runtime))
        .collect()
}

/// `trace scale --trace input --to to --method method --out out --json`.
fn scale_json(input: &Path, to: &str, method: &str, out: &Path) -> serde_json::Value {
    let (i, o) = (input.to_str().unwrap(), out.to_str().unwrap());
    json(&gridsim(&[
        "trace", "scale", "--trace", i, "--to", to, "--method", method, "--out", o, "--json",
    ]))
}

#[test]
fn widths_and_copies_on_a_small_trace() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.swf");
    std::fs::write(&input, SWF).unwrap();
    let out = dir.path().join("w.jsonl");
    let v = scale_json(&input, "20", "widths", &out);
    // f* = 2.5: 4 → 10, 8 → 20, 3 → 7.5 → 8.
    assert_eq!(v["before"]["jobs"], 3);
    assert_eq!(v["before"]["area"], 400 + 400 + 90);
    assert_eq!(v["after"]["jobs"], 3);
    assert_eq!(v["after"]["area"], 1000 + 1000 + 240);
    assert_eq!(v["before"]["max_procs"], 8);
    assert_eq!(v["after"]["max_procs"], 20);
    assert_eq!(
        read(&out),
        vec![(0, 10, Some(100)), (10, 20, Some(50)), (20, 8, Some(30))]
    );

    let swf = dir.path().join("c.swf");
    let v = scale_json(&input, "24", "copies", &swf);
    assert_eq!(v["after"]["jobs"], 9);
    assert_eq!(v["after"]["area"], 3 * (400 + 400 + 90));
    let jobs = read(&swf);
    assert_eq!(jobs.len(), 9);
    assert_eq!(jobs[..3], [(0, 4, Some(100)); 3]);
}

#[test]
fn seeded_output_is_reproducible_and_errors_are_clear() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.swf");
    let mut text = String::from("; MaxProcs: 8\n");
    for i in 0..200 {
        text += &format!(
            "{} {} -1 100 {} -1 -1 {} 200 -1 1 1 1 -1 1 -1 -1 -1\n",
            i + 1,
            i * 10,
            1 + i % 8,
            1 + i % 8
        );
    }
    std::fs::write(&input, text).unwrap();
    let run = |name: &str, seed: &str| {
        let out = dir.path().join(name);
        let o = gridsim(&[
            "trace",
            "scale",
            "--trace",
            input.to_str().unwrap(),
            "--to",
            "19",
            "--d",
            "50",
            "--seed",
            seed,
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::read(out).unwrap()
    };
    assert_eq!(run("a.jsonl", "5"), run("b.jsonl", "5"));
    assert_ne!(run("a.jsonl", "5"), run("c.jsonl", "6"));

    for (args, needle) in [
        (vec!["--to", "4"], "smaller"),
        (vec!["--d", "150"], "decision value"),
        (vec!["--stage", "integer", "--factor", "2.5"], "integer"),
        (vec!["--adjusted"], "Table 4"),
    ] {
        let out = dir.path().join("e.jsonl");
        let mut a = vec![
            "trace",
            "scale",
            "--trace",
            input.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ];
        a.extend(args);
        let o = gridsim(&a);
        assert!(!o.status.success());
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(needle), "{e}");
    }
}

/// A temporary directory and an output path in it, when the KTH trace is present.
fn kth_and_output() -> Option<(tempfile::TempDir, std::path::PathBuf)> {
    traces::for_test("KTH-SP2-1996-2.1-cln.swf.gz")?;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("kth.jsonl");
    Some((dir, out))
}

#[test]
fn kth_scaled_to_1024_keeps_the_work_per_processor() {
    let Some((_dir, out)) = kth_and_output() else {
        return;
    };
    let v = json(&gridsim(&[
        "trace",
        "scale",
        "--trace",
        "KTH",
        "--to",
        "1024",
        "--method",
        "decision",
        "--adjusted",
        "--out",
        out.to_str().unwrap(),
        "--json",
    ]));
    let before = v["before"]["area"].as_f64().unwrap();
    let after = v["after"]["area"].as_f64().unwrap();
    assert!(
        (after / before / 10.71 - 1.0).abs() < 0.01,
        "area ×{}",
        after / before
    );
    assert_eq!(v["after"]["max_procs"], 1024);
    let jobs = v["after"]["jobs"].as_f64().unwrap();
    let expected = v["expected_jobs"].as_f64().unwrap();
    assert!((jobs / expected - 1.0).abs() < 0.01, "{jobs} vs {expected}");
}

#[test]
fn synth_follows_the_small_trace_and_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.swf");
    std::fs::write(&input, SWF).unwrap();
    let out = dir.path().join("s.swf");
    let (i, o) = (input.to_str().unwrap(), out.to_str().unwrap());
    let args = [
        "trace",
        "synth",
        "--trace",
        i,
        "--arrivals",
        "ctc",
        "--jobs",
        "300",
        "--out",
        o,
        "--json",
    ];
    let v = json(&gridsim(&args));
    assert_eq!(v["generated"]["jobs"], 300);
    assert_eq!(v["alpha"], 0.35);
    let jobs = read(&out);
    assert_eq!(jobs.len(), 300);
    // Every (width, actual run time) is one of the trace's three jobs.
    for (_, procs, runtime) in &jobs {
        assert!(
            [(4, Some(100)), (8, Some(50)), (3, Some(30))].contains(&(*procs, *runtime)),
            "{procs} {runtime:?}"
        );
    }
    // The same seed gives the same file.
    let again = dir.path().join("t.swf");
    let mut args2 = args;
    args2[9] = again.to_str().unwrap();
    json(&gridsim(&args2));
    assert_eq!(read(&again), jobs);
    // An unknown fit is a clear error naming the option and the known names.
    let bad = gridsim(&[
        "trace",
        "synth",
        "--trace",
        i,
        "--arrivals",
        "xyz",
        "--out",
        o,
    ]);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        !bad.status.success() && err.contains("--arrivals") && err.contains("KTH"),
        "{err}"
    );
}

#[test]
fn synth_from_kth_keeps_its_job_sizes_and_the_fitted_arrivals() {
    let Some((_dir, out)) = kth_and_output() else {
        return;
    };
    let v = json(&gridsim(&[
        "trace",
        "synth",
        "--trace",
        "KTH",
        "--arrivals",
        "KTH",
        "--jobs",
        "10000",
        "--out",
        out.to_str().unwrap(),
        "--json",
    ]));
    let per_job = |s: &serde_json::Value| s["area"].as_f64().unwrap() / s["jobs"].as_f64().unwrap();
    let (trace, generated) = (per_job(&v["trace_summary"]), per_job(&v["generated"]));
    assert!(
        (generated / trace - 1.0).abs() < 0.05,
        "mean job area {generated} vs the trace's {trace}"
    );
    let (gap, expected) = (
        v["mean_interarrival"].as_f64().unwrap(),
        v["expected_mean_interarrival"].as_f64().unwrap(),
    );
    assert!((expected - 1006.0).abs() < 1.0, "{expected}");
    assert!((gap / expected - 1.0).abs() < 0.1, "{gap} vs {expected}");
    assert!(v["generated"]["max_procs"].as_u64().unwrap() <= 100);
}

/// A small busy trace for the stage-4 search: 300 jobs on 16 processors at ≈ 90 % load, so
/// that jobs wait and AWWT responds to the factor.
fn busy_trace(dir: &Path) -> std::path::PathBuf {
    let mut text = String::from("; MaxProcs: 16\n");
    for i in 0..300u64 {
        let (run, procs) = (50 + (i * 53) % 400, (i * 7) % 16 + 1);
        let estimate = if i % 3 == 0 { run } else { 2 * run };
        text += &format!(
            "{} {} -1 {run} {procs} -1 -1 {procs} {estimate} -1 1 {} 1 -1 1 -1 -1 -1\n",
            i + 1,
            i * 150,
            1 + i % 5
        );
    }
    let path = dir.join("busy.swf");
    std::fs::write(&path, text).unwrap();
    path
}

fn f64_of(v: &serde_json::Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("no number `{key}` in {v}"))
}

/// `trace calibrate --trace input --to 40 --json` with `extra` arguments.
fn calibrate_json(input: &Path, extra: &[&str]) -> serde_json::Value {
    let mut a = vec![
        "trace",
        "calibrate",
        "--trace",
        input.to_str().unwrap(),
        "--to",
        "40",
        "--json",
    ];
    a.extend(extra);
    json(&gridsim(&a))
}

/// `gridsim run --json` on `input` under `policy`, with `--procs` when given.
fn run_json(input: &Path, policy: &str, procs: Option<&str>) -> serde_json::Value {
    let mut a = vec![
        "run",
        "--trace",
        input.to_str().unwrap(),
        "--policy",
        policy,
        "--json",
        "--quiet",
    ];
    if let Some(p) = procs {
        a.extend(["--procs", p]);
    }
    json(&gridsim(&a))
}

#[test]
fn calibrate_runs_every_factor_as_gridsim_run_does_and_chooses_the_closest() {
    let dir = tempfile::tempdir().unwrap();
    let input = busy_trace(dir.path());
    for policy in ["easy", "fcfs"] {
        let args = ["--policy", policy, "--step", "0.1", "--steps", "8"];
        let v = calibrate_json(&input, &[&args[..], &["--threads", "2"]].concat());
        assert_eq!(v["precise_factor"], 2.5);
        assert_eq!(v["from_procs"], 16);
        // The reference is `gridsim run` of the original trace on its own machine.
        let (reference, run) = (&v["reference"], run_json(&input, policy, None));
        assert_eq!(reference["jobs"], 300);
        assert_eq!(reference["makespan"], run["makespan_s"]);
        assert_eq!(reference["area"], run["squashed_area"]);
        assert_eq!(f64_of(reference, "awrt"), f64_of(&run, "awrt"));
        assert_eq!(f64_of(reference, "awwt"), f64_of(&run, "awwt"));
        let rows = v["rows"].as_array().unwrap();
        let factors: Vec<f64> = rows.iter().map(|r| f64_of(r, "factor")).collect();
        assert_eq!(factors, [2.5, 2.6, 2.7, 2.8, 2.9, 3.0, 3.1, 3.2]);
        // Each row is `trace scale --factor f` run by `gridsim run` on 40 processors.
        for r in rows.iter().step_by(3) {
            let f = format!("{}", f64_of(r, "factor"));
            let out = dir.path().join(format!("s{f}.jsonl"));
            let (i, o) = (input.to_str().unwrap(), out.to_str().unwrap());
            let scaled = json(&gridsim(&[
                "trace", "scale", "--trace", i, "--to", "40", "--factor", &f, "--out", o, "--json",
            ]));
            assert_eq!(r["jobs"], scaled["after"]["jobs"], "f = {f}");
            let run = run_json(&out, policy, Some("40"));
            assert_eq!(r["makespan"], run["makespan_s"], "f = {f}");
            assert_eq!(f64_of(r, "awrt"), f64_of(&run, "awrt"), "f = {f}");
            assert_eq!(f64_of(r, "awwt"), f64_of(&run, "awwt"), "f = {f}");
            assert_eq!(f64_of(r, "area"), f64_of(&run, "squashed_area"), "f = {f}");
        }
        // Distance: the larger relative error of AWRT and AWWT; the closest row wins, ties to
        // the smaller factor.
        let rel = |r: &serde_json::Value, k: &str| {
            (f64_of(r, k) - f64_of(reference, k)).abs() / f64_of(reference, k)
        };
        let dist: Vec<f64> = rows
            .iter()
            .map(|r| rel(r, "awrt").max(rel(r, "awwt")))
            .collect();
        for (r, d) in rows.iter().zip(&dist) {
            assert!((f64_of(r, "distance") - d).abs() < 1e-12);
        }
        let best = (0..rows.len())
            .min_by(|&a, &b| {
                dist[a]
                    .total_cmp(&dist[b])
                    .then(factors[a].total_cmp(&factors[b]))
            })
            .unwrap();
        assert_eq!(v["chosen"], rows[best], "{policy}");
        // This trace's response is not monotone in the scanned range and the best is inside it.
        assert!(best > 0 && best + 1 < rows.len(), "{policy}: {dist:?}");
        assert_eq!(v["chosen_at_upper_end"], false);
        // The result does not depend on the thread count.
        let one = calibrate_json(&input, &[&args[..], &["--threads", "1"]].concat());
        assert_eq!(one["rows"], v["rows"]);
        assert_eq!(one["chosen"], v["chosen"]);
    }
    // The default scan: f* … f* + 0.60 by 0.01, 61 rows; the text report marks the choice.
    let v = calibrate_json(&input, &[]);
    assert_eq!(v["rows"].as_array().unwrap().len(), 61);
    assert_eq!(v["rows"][60]["factor"], 3.1);
    assert_eq!(v["published"], serde_json::Value::Null, "no Table 4 factor");
    let o = gridsim(&[
        "trace",
        "calibrate",
        "--trace",
        input.to_str().unwrap(),
        "--to",
        "40",
        "--step",
        "0.1",
        "--steps",
        "8",
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        text.contains("*2.60") && text.contains("chosen f = 2.60"),
        "{text}"
    );
    assert_eq!(
        text.lines()
            .filter(|l| l.trim_start().starts_with('*'))
            .count(),
        1
    );
}

#[test]
fn calibrated_scaling_uses_the_searched_factor() {
    let dir = tempfile::tempdir().unwrap();
    let input = busy_trace(dir.path());
    let i = input.to_str().unwrap();
    for (policy, fcfs) in [("easy", None), ("fcfs", Some("--fcfs"))] {
        let searched = calibrate_json(&input, &["--policy", policy]);
        let f = f64_of(&searched["chosen"], "factor");
        let out = dir.path().join(format!("cal-{policy}.jsonl"));
        let mut a = vec![
            "trace",
            "scale",
            "--trace",
            i,
            "--to",
            "40",
            "--calibrated",
            "--out",
            out.to_str().unwrap(),
            "--json",
        ];
        a.extend(fcfs);
        let v = json(&gridsim(&a));
        assert_eq!(v["stage"], format!("Precise({f})"), "{policy}");
        assert_eq!(v["calibration"]["factor"], f);
        assert_eq!(v["calibration"]["policy"], policy);
        assert_eq!(v["calibration"]["rows"], searched["rows"]);
        // The written workload is the one the search ran for f.
        let fixed = dir.path().join(format!("fixed-{policy}.jsonl"));
        let fs = format!("{f}");
        json(&gridsim(&[
            "trace",
            "scale",
            "--trace",
            i,
            "--to",
            "40",
            "--factor",
            &fs,
            "--out",
            fixed.to_str().unwrap(),
            "--json",
        ]));
        assert_eq!(read(&out), read(&fixed));
        assert_eq!(v["after"]["jobs"], searched["chosen"]["jobs"]);
    }
    // --calibrated excludes the other ways of giving stage 4's factor.
    for (args, needle) in [
        (vec!["--calibrated", "--adjusted"], "cannot be used with"),
        (
            vec!["--calibrated", "--factor", "2.6"],
            "cannot be used with",
        ),
        (
            vec!["--calibrated", "--stage", "integer"],
            "--stage precise",
        ),
        (vec!["--calibrated", "--to", "8"], "smaller"),
    ] {
        let out = dir.path().join("e.jsonl");
        let mut a = vec![
            "trace",
            "scale",
            "--trace",
            i,
            "--out",
            out.to_str().unwrap(),
        ];
        a.extend(args);
        let o = gridsim(&a);
        assert!(!o.status.success());
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(needle), "{e}");
    }
}

#[test]
fn calibrate_refuses_bad_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let input = busy_trace(dir.path());
    for (args, needles) in [
        (vec!["--policy", "sjf"], vec!["sjf", "easy", "fcfs"]),
        (vec!["--steps", "0"], vec!["--steps 0"]),
        (vec!["--step", "0"], vec!["--step 0", "> 0"]),
        (vec!["--step", "-0.01"], vec!["--step -0.01", "> 0"]),
        (vec!["--from", "0.5"], vec!["--from 0.5"]),
        (vec!["--d", "150"], vec!["decision value"]),
        (vec!["--to", "8"], vec!["smaller"]),
    ] {
        let mut a = vec!["trace", "calibrate", "--trace", input.to_str().unwrap()];
        a.extend(&args);
        let o = gridsim(&a);
        assert!(!o.status.success(), "{args:?} accepted");
        let e = String::from_utf8_lossy(&o.stderr);
        for n in needles {
            assert!(e.contains(n), "{args:?}: {e}");
        }
    }
}

#[test]
fn kth_calibration_scans_table_4s_factor() {
    let Some((_dir, out)) = kth_and_output() else {
        return;
    };
    let v = json(&gridsim(&[
        "trace",
        "calibrate",
        "--trace",
        "KTH",
        "--from",
        "10.70",
        "--steps",
        "3",
        "--json",
    ]));
    assert_eq!(v["from_procs"], 100);
    assert_eq!(v["precise_factor"], 10.24);
    assert_eq!(v["published"]["factor"], 10.71);
    assert_eq!(v["published"]["scanned"], true);
    let row = &v["rows"][1];
    assert_eq!(row["factor"], 10.71);
    assert_eq!(v["published"]["distance"], row["distance"]);
    // The row of 10.71 ran the workload `trace scale --adjusted` writes.
    let scaled = json(&gridsim(&[
        "trace",
        "scale",
        "--trace",
        "KTH",
        "--adjusted",
        "--out",
        out.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(row["jobs"], scaled["after"]["jobs"]);
    // The reference is KTH under EASY on its 100 processors; the scaled runs' makespan is the
    // reference's (C.9 #5: it is dominated by a late job).
    let run = json(&gridsim(&["run", "--trace", "KTH", "--json", "--quiet"]));
    assert_eq!(v["reference"]["makespan"], run["makespan_s"]);
    assert_eq!(f64_of(&v["reference"], "awrt"), f64_of(&run, "awrt"));
    for r in v["rows"].as_array().unwrap() {
        assert_eq!(r["makespan"], run["makespan_s"]);
    }
}
