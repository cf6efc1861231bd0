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
