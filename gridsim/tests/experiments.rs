//! `gridsim experiment` end to end in its reduced (`--quick`) form: every output file exists and
//! parses, the report carries a verdict per claim, and results do not depend on the thread count.

use gridsched_workload::traces;
use std::path::Path;
use std::process::Command;

fn experiment(name: &str, dir: &Path, extra: &[&str]) {
    let o = Command::new(env!("CARGO_BIN_EXE_gridsim"))
        .args(["experiment", name, "--quick", "--quiet", "--out"])
        .arg(dir)
        .args(extra)
        .output()
        .expect("gridsim runs");
    assert!(
        o.status.success(),
        "experiment {name} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The CSV without its timing column (wall clock, not deterministic).
fn deterministic_csv(dir: &Path) -> Vec<Vec<String>> {
    let mut r = csv::Reader::from_path(dir.join("runs.csv")).unwrap();
    let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    let timing = |h: &str| h == "mean_pass_us" || h.ends_with("_ms");
    let mut rows = vec![
        header
            .iter()
            .filter(|h| !timing(h))
            .cloned()
            .collect::<Vec<_>>(),
    ];
    for rec in r.records() {
        let rec = rec.unwrap();
        rows.push(
            rec.iter()
                .enumerate()
                .filter(|(i, _)| !timing(&header[*i]))
                .map(|(_, v)| v.to_string())
                .collect(),
        );
    }
    rows
}

#[test]
fn fb_quick_writes_every_output_and_is_deterministic() {
    let a = tempfile::tempdir().unwrap();
    experiment("fb", a.path(), &["--threads", "2"]);
    let rows = deterministic_csv(a.path());
    // 3 licence ratios × 2 inter-arrival times × 2 repetitions × 4 algorithms.
    assert_eq!(rows.len(), 1 + 48);
    assert_eq!(
        &rows[0][..5],
        &["algorithm", "variant", "ta", "rep", "seed"].map(String::from)
    );
    assert!(rows[0].contains(&"missed_pct".to_string()));
    let finished = rows[0].iter().position(|h| h == "finished").unwrap();
    assert!(
        rows[1..].iter().all(|r| r[finished] == "150.000000"),
        "every job of every run ends"
    );

    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(a.path().join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["experiment"], "fb");
    let srows = summary["rows"].as_array().unwrap();
    assert_eq!(srows.len(), 24);
    assert!(srows.iter().all(|r| r["runs"] == 2));
    assert!(srows[0]["mean"]["missed_pct"].as_f64().is_some());

    for fig in [
        "fig16-deadline-misses",
        "fig17-system-usage",
        "fig18-slowdown",
        "licence-usage",
    ] {
        let svg = std::fs::read_to_string(a.path().join(format!("{fig}.svg"))).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
            "{fig}"
        );
        for alg in ["FCFS", "BF_FCFS", "BF_UNMOD", "BF_MOD"] {
            assert!(svg.lines().any(|l| l.trim() == alg), "{fig}: legend {alg}");
        }
        let series = svg
            .lines()
            .filter(|l| l.starts_with("<polyline") && l.contains("stroke-width=\"2\""))
            .count();
        assert_eq!(series, 4, "{fig}: one line per algorithm");
    }

    let report = std::fs::read_to_string(a.path().join("report.md")).unwrap();
    assert!(report.contains("Table 3"));
    assert!(report.contains("| ratio 50-70% | paper | 95.5 | 74.6 | 66.2 | 66.2 |"));
    let verdicts =
        report.matches("- **holds**").count() + report.matches("- **does not hold**").count();
    assert_eq!(verdicts, 9, "{report}");
    assert!(report.contains("\"Fig. 17: BF_UNMOD/BF_MOD outperform FCFS and BF_FCFS in usage\""));

    let b = tempfile::tempdir().unwrap();
    experiment("fb", b.path(), &["--threads", "1"]);
    assert_eq!(
        rows,
        deterministic_csv(b.path()),
        "same seed, other thread count"
    );
    let c = tempfile::tempdir().unwrap();
    experiment("fb", c.path(), &["--seed", "5"]);
    assert_ne!(
        rows,
        deterministic_csv(c.path()),
        "another seed changes the workloads"
    );
}

/// `experiment dynp --quick`: 3,000 KTH jobs at factors 1.0 and 0.7, nine configurations at each
/// and the eleven metric and slackness variants at 1.0; dynP decides at every event and its jobs
/// are all started under one of its three policies; a verdict per claim; thread-independent.
/// The synthetic part: three families × two factors × five configurations × two sets of 1,000
/// jobs, summarised per family with the condensed figures of Tab. 5.12.
#[test]
fn dynp_quick_runs_every_configuration_with_verdicts() {
    if traces::for_test("KTH-SP2-1996-2.1-cln.swf.gz").is_none() {
        return;
    }
    let a = tempfile::tempdir().unwrap();
    experiment("dynp", a.path(), &[]);
    let rows = deterministic_csv(a.path());
    assert_eq!(rows.len() - 1, 2 * 9 + 11 + 3 * 2 * 5 * 2);
    let col = |name: &str| rows[0].iter().position(|h| h == name).unwrap();
    let num = |r: &Vec<String>, c: usize| r[c].parse::<f64>().unwrap();
    let (alg, jobs, decisions) = (col("algorithm"), col("jobs"), col("decisions"));
    let shares = [
        col("started_fcfs_pct"),
        col("started_sjf_pct"),
        col("started_ljf_pct"),
    ];
    let variant = col("variant");
    let synthetic = ["syn KTH", "CTC-like", "LANL-like"];
    for r in &rows[1..] {
        let expected = if synthetic.contains(&r[variant].as_str()) {
            1_000.0
        } else {
            3_000.0
        };
        assert_eq!(num(r, jobs), expected, "{r:?}");
        let total: f64 = shares.iter().map(|&c| num(r, c)).sum();
        assert!((total - 100.0).abs() < 1e-6, "{r:?}");
        if r[alg].starts_with("dynP") {
            // A decision per instant with a submission (simultaneous ones are coalesced).
            assert!(num(r, decisions) >= 0.8 * expected, "{r:?}");
        } else {
            assert_eq!(num(r, decisions), 0.0);
        }
    }
    let report = std::fs::read_to_string(a.path().join("report.md")).unwrap();
    // Each claim quoted with its rule: 14 on the KTH trace (3 of them at increased load), 12 on
    // the synthetic sets (the CTC-at-0.6 example needs factor 0.6, not run quick).
    let verdicts: Vec<&str> = report
        .lines()
        .filter(|l| l.starts_with("- **holds**") || l.starts_with("- **does not hold**"))
        .collect();
    assert!(
        verdicts.iter().all(|l| l.contains("— tested as: ")),
        "{report}"
    );
    assert_eq!(verdicts.len(), 14 + 12, "{report}");
    assert!(report.contains("## Not evaluated") && report.contains("### Not evaluated"));
    for section in [
        "## Increased load on synthetic sets",
        "### syn KTH: SLDwA (thesis KTH, Tab. A.13/A.15)",
        "### CTC-like: utilization % (thesis CTC, Tab. A.14/A.16)",
        "### Condensed (Tab. 5.12)",
        "| syn KTH | thesis KTH | +0.15 | -0.72 | +0.13 | +0.12 |",
    ] {
        assert!(report.contains(section), "{section}: {report}");
    }
    // The summary: per family and factor the mean over the two sets (a trimmed mean needs three),
    // the machine sizes, and the condensed figures.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(a.path().join("summary.json")).unwrap())
            .unwrap();
    let sjf_runs: Vec<f64> = rows[1..]
        .iter()
        .filter(|r| r[alg] == "SJF" && r[variant] == "syn KTH" && r[col("ta")] == "1")
        .map(|r| num(r, col("sldwa")))
        .collect();
    assert_eq!(sjf_runs.len(), 2);
    let row = summary["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["algorithm"] == "SJF" && r["variant"] == "syn KTH" && r["ta"] == 1.0)
        .unwrap();
    let mean = row["mean"]["sldwa"].as_f64().unwrap();
    // runs.csv keeps six decimals.
    assert!((mean - (sjf_runs[0] + sjf_runs[1]) / 2.0).abs() < 1e-6);
    let extra = &summary["extra"];
    assert_eq!(extra["syn KTH/procs"], 100.0);
    assert_eq!(extra["LANL-like/procs"], 1152.0);
    // Seeded values (sets 1 and 2, matrices of the first 3,000 jobs).
    assert_eq!(format!("{mean:.4}"), "4.6588");
    assert_eq!(extra["CTC-like/procs"], 1120.0);
    assert_eq!(
        format!(
            "{:.4}",
            extra["CTC-like/tab5.12/sldwa_vs_sjf_pct/advanced"]
                .as_f64()
                .unwrap()
        ),
        "11.8646"
    );
    assert!(
        std::fs::read_to_string(a.path().join("syn-util-ctc-like.svg"))
            .unwrap()
            .contains("shrinking factor")
    );
    assert!(
        std::fs::read_to_string(a.path().join("sldwa-kth.svg"))
            .unwrap()
            .contains("shrinking factor")
    );
    let b = tempfile::tempdir().unwrap();
    experiment("dynp", b.path(), &["--threads", "1"]);
    assert_eq!(rows, deterministic_csv(b.path()));
}

/// The quick multi-site experiment runs from this crate's directory without `$GRIDSCHED_TRACES`
/// being needed: it must find the shared KTH trace (`traces::dir`), and under `CI=true` it must.
#[test]
fn multisite_quick_runs_every_scenario() {
    let kth = traces::for_test("KTH-SP2-1996-2.1-cln.swf.gz").is_some();
    let a = tempfile::tempdir().unwrap();
    experiment("multisite", a.path(), &[]);
    let rows = deterministic_csv(a.path());
    // Per workload: m128 and m384 each local + job sharing + 5 multi-site variants × 3 overheads
    // + the pooled variant at p = 0, m512 one reference run.
    let per_workload = 2 * (2 + 5 * 3 + 1) + 1;
    let workloads = (rows.len() - 1) / per_workload;
    assert_eq!(rows.len() - 1, workloads * per_workload);
    assert_eq!(
        workloads,
        if kth { 2 } else { 1 },
        "synthetic, and KTH when present"
    );
    let refused = rows[0].iter().position(|h| h == "refused").unwrap();
    assert!(
        rows[1..].iter().all(|r| r[refused] == "0.000000"),
        "no job is refused"
    );
    let report = std::fs::read_to_string(a.path().join("report.md")).unwrap();
    assert!(report.contains("## synthetic"));
    assert!(
        report.contains(
            "\"Job sharing improves AWRT over local processing by more than 50% for m128"
        )
    );
    assert!(report.contains("MS p=0 pooled (ours)") && report.contains("(pooled "));
    // Every verdict quotes its finding and states its rule; what m128/m384/m512 cannot judge is
    // listed as not evaluated.
    let verdicts: Vec<&str> = report
        .lines()
        .filter(|l| l.starts_with("- **holds**") || l.starts_with("- **does not hold**"))
        .collect();
    assert!(!verdicts.is_empty());
    assert!(
        verdicts.iter().all(|l| l.contains("— tested as: ")),
        "{report}"
    );
    assert!(report.contains("#### Not evaluated"), "{report}");
    if kth {
        assert!(report.contains("## KTH"), "{report}");
        assert!(!report.contains("SKIPPED"), "{report}");
    }
    for f in [
        "awrt-synthetic-m128",
        "multi-site-configs-synthetic",
        "adaptive-configs-synthetic",
    ] {
        let svg = std::fs::read_to_string(a.path().join(format!("{f}.svg"))).unwrap();
        assert!(svg.contains("overhead p (%)"), "{f}");
    }
    let b = tempfile::tempdir().unwrap();
    experiment("multisite", b.path(), &["--threads", "1"]);
    assert_eq!(rows, deterministic_csv(b.path()));
}

/// The quick constrained sweep: every lower bound × fragment limit × overhead on m256 and m384,
/// the report quoting and judging each finding it can test there.
#[test]
fn multisite_constraints_quick_sweeps_every_setting() {
    let kth = traces::for_test("KTH-SP2-1996-2.1-cln.swf.gz").is_some();
    let a = tempfile::tempdir().unwrap();
    experiment("multisite-constraints", a.path(), &[]);
    let rows = deterministic_csv(a.path());
    // Per workload: 2 configurations × 7 lower bounds × 2 fragment limits × 3 overheads.
    let workloads = if kth { 2 } else { 1 };
    assert_eq!(rows.len() - 1, workloads * 2 * 7 * 2 * 3);
    let refused = rows[0].iter().position(|h| h == "refused").unwrap();
    assert!(rows[1..].iter().all(|r| r[refused] == "0.000000"));
    let report = std::fs::read_to_string(a.path().join("report.md")).unwrap();
    for claim in [
        "\"Lower bound, m384, LB = 128: AWRT decreases by 16.3% at p = 80% and 29.9% at p = 120%\"",
        "\"LB = 256 raises AWRT by 16% and LB = 96 by at least 29%, both relative to LB = 128.\"",
        "\"m256, LB = 128 (half of the largest machine) is best",
        "for overheads above 60% limiting fragmentation pays off",
        "LB = half the largest machine size works in most configurations",
    ] {
        assert!(report.contains(claim), "{claim}: {report}");
    }
    let verdicts =
        report.matches("- **holds**").count() + report.matches("- **does not hold**").count();
    assert_eq!(verdicts, workloads * 6, "{report}");
}

#[test]
fn cs_and_mkp_quick_run_end_to_end() {
    let a = tempfile::tempdir().unwrap();
    experiment("cs", a.path(), &[]);
    let rows = deterministic_csv(a.path());
    // 2 inter-arrival times × 2 repetitions × (4 CS variants as printed and ours + 4 baselines).
    assert_eq!(rows.len() - 1, 48);
    let finished = rows[0].iter().position(|h| h == "finished").unwrap();
    assert!(
        rows[1..].iter().all(|r| r[finished] == "120.000000"),
        "every job ends"
    );
    // Fig. 21's metric is a slowdown (≥ 1); the baselines never suspend, nor do the pinned
    // non-preemptive variants (ours).
    let col = |h: &str| rows[0].iter().position(|x| x == h).unwrap();
    let (sd, susp, alg, var) = (
        col("slowdown_no_deadline"),
        col("suspensions_per_job"),
        col("algorithm"),
        col("variant"),
    );
    for r in &rows[1..] {
        assert!(r[sd].parse::<f64>().unwrap() >= 1.0, "{r:?}");
        let cs = r[alg].starts_with("CS_");
        if !cs {
            assert_eq!(r[var], "", "only the CS variants have our readings: {r:?}");
        }
        if !cs || (r[alg].ends_with("_np") && r[var] == "ours") {
            assert_eq!(r[susp], "0.000000", "{r:?}");
        }
    }
    assert_eq!(
        rows[1..].iter().filter(|r| r[var] == "ours").count(),
        16,
        "every CS variant also in our readings"
    );
    let report = std::fs::read_to_string(a.path().join("report.md")).unwrap();
    // Six quoted claims, each judged as printed and ours.
    let claims = report
        .split("## The paper's claims (D9.2, quoted)")
        .nth(1)
        .expect("the claims section");
    assert!(
        claims.contains("| \"Fig. 22 — % machine usage: CS keeps all machines always busy\" |")
    );
    let verdicts =
        claims.matches("**holds**").count() + claims.matches("**does not hold**").count();
    assert_eq!(verdicts, 12, "{report}");
    assert!(report.contains("| Ta | CS_i_p | CS_i_p (ours) | CS_i_np |"));
    // The explanation section: one row per inter-arrival time, with the hopeless share.
    let why = report
        .split("## Where and why our numbers differ")
        .nth(1)
        .expect("the findings section");
    assert!(why.contains("| 4 |") && why.contains("| 12 |"), "{why}");
    for f in [
        "fig20-deadline-misses",
        "fig20-deadline-misses-ours",
        "fig21-slowdown",
        "fig22-machine-usage",
        "fig23-scheduling-time",
    ] {
        let svg = std::fs::read_to_string(a.path().join(format!("{f}.svg"))).unwrap();
        assert!(svg.lines().any(|l| l.trim() == "CS_i_p"), "{f}");
    }

    let b = tempfile::tempdir().unwrap();
    experiment("mkp", b.path(), &["--reps", "1", "--threads", "2"]);
    let rows = deterministic_csv(b.path());
    assert_eq!(rows.len() - 1, 4, "one run per licence-ratio range");
    // The MILP solver proves every quick instance; no plan beats its optimum; usage is a share.
    let col = |h: &str| rows[0].iter().position(|x| x == h).unwrap();
    let num = |r: &[String], h: &str| r[col(h)].parse::<f64>().unwrap();
    for r in &rows[1..] {
        assert_eq!(num(r, "milp_proved_pct"), 100.0, "{r:?}");
        assert_eq!(num(r, "opt_proved"), 1.0, "{r:?}");
        assert!(num(r, "opt_mkp_gap_max") >= 0.0 && num(r, "opt_bb_gap_max") >= 0.0);
        let opt = num(r, "opt_usage_max");
        assert!(opt > 0.5 && opt <= 1.0, "{r:?}");
        assert!(num(r, "mkp_average") <= opt + 1e-6 && num(r, "bb_average") <= opt + 1e-6);
    }
    // The MILP's node budget makes the run deterministic: one thread gives the same numbers.
    let c = tempfile::tempdir().unwrap();
    experiment("mkp", c.path(), &["--reps", "1", "--threads", "1"]);
    assert_eq!(deterministic_csv(c.path()), rows);
    let report = std::fs::read_to_string(b.path().join("report.md")).unwrap();
    assert!(report.contains("| [40-45] | paper | 496.53 |"));
    assert!(report.contains("| [55-60] | ours |"));
    let opt = report
        .split("## Against the proven optimum (MILP)")
        .nth(1)
        .expect("the section against the proven optimum");
    for range in ["[40-45]", "[45-50]", "[50-55]", "[55-60]"] {
        assert!(opt.contains(&format!("| {range} | 1 | 100 | ")), "{opt}");
    }
    assert!(
        opt.contains("\"MKP ≈ 3% below B&B on average, ≈ 97% faster, Best = 1.00 everywhere\"")
    );
    assert!(opt.contains("on the 4 of 4 instances the MILP solver proved (100 %)"));
    let verdicts = opt.matches("- **holds**").count() + opt.matches("- **does not hold**").count();
    assert_eq!(verdicts, 3, "{opt}");
}

/// `ms-fb` and `ms-cs` quick: 4 Ta × 2 repetitions × 3 or 4 configurations, every job ends, the optimal
/// shares of Table 6, one SVG per figure and cluster with one line per configuration, a verdict
/// per claim, and the same numbers whatever the thread count.
#[test]
fn two_level_quick_runs_every_configuration_deterministically() {
    for (name, algs, figs, verdicts) in [
        (
            "ms-fb",
            &["MS Heuristics", "LS Heuristics", "NO Heuristics"][..],
            [
                "fig25-share",
                "fig26-slowdown",
                "fig27-deadline-misses",
                "fig28-processor-usage",
                "fig29-licence-usage",
            ],
            9,
        ),
        (
            "ms-cs",
            &["CS", "CS (ours)", "FCFS", "EASY", "FB"][..],
            [
                "fig30-share",
                "fig32-slowdown",
                "fig31-deadline-misses",
                "processor-usage",
                "licence-usage",
            ],
            // D9.4's eight sentences, for CS as printed and ours.
            16,
        ),
    ] {
        let a = tempfile::tempdir().unwrap();
        experiment(name, a.path(), &["--threads", "2"]);
        let rows = deterministic_csv(a.path());
        assert_eq!(rows.len(), 1 + 4 * 2 * algs.len(), "{name}");
        // `deterministic_csv` keeps the whole header but drops the timing column of each row.
        let header: Vec<&String> = rows[0].iter().filter(|h| *h != "mean_pass_us").collect();
        let col = |h: &str| header.iter().position(|x| *x == h).unwrap();
        for r in &rows[1..] {
            assert_eq!(r[col("finished")], "300.000000", "{name}: every job ends");
            assert_eq!(r[col("rejected")], "0.000000");
            let opt: Vec<f64> = (1..=4)
                .map(|c| r[col(&format!("optimal_c{c}"))].parse().unwrap())
                .collect();
            for (o, want) in opt.iter().zip([53.33, 26.67, 13.33, 6.67]) {
                assert!((o - want).abs() < 0.005, "{name}: optimal {opt:?}");
            }
            let share: f64 = (1..=4)
                .map(|c| r[col(&format!("share_c{c}"))].parse::<f64>().unwrap())
                .sum();
            assert!(
                (share - 100.0).abs() < 1e-3,
                "{name}: shares sum to {share}"
            );
            let cap: Vec<f64> = (1..=4)
                .map(|c| r[col(&format!("capacity_c{c}"))].parse().unwrap())
                .collect();
            assert!((cap.iter().sum::<f64>() - 100.0).abs() < 1e-3, "{cap:?}");
            assert!(cap.windows(2).all(|w| w[0] > w[1]), "{name}: {cap:?}");
        }
        let seen: Vec<&str> = rows[1..=algs.len()].iter().map(|r| r[0].as_str()).collect();
        assert_eq!(seen, algs, "{name}");
        for fig in figs {
            for c in 1..=4 {
                let svg =
                    std::fs::read_to_string(a.path().join(format!("{fig}-c{c}.svg"))).unwrap();
                for alg in algs {
                    assert!(svg.lines().any(|l| l.trim() == *alg), "{fig}: legend {alg}");
                }
            }
        }
        let report = std::fs::read_to_string(a.path().join("report.md")).unwrap();
        assert!(
            report.contains("| capacity (processors × benchmark) |"),
            "{name}"
        );
        assert!(
            report.contains("## % jobs missing their deadline, every Ta"),
            "{name}"
        );
        let n =
            report.matches("- **holds**").count() + report.matches("- **does not hold**").count();
        assert_eq!(n, verdicts, "{name}: {report}");
        if name == "ms-fb" {
            // Every D9.3 statement quoted from the spec with the rule it is tested by.
            assert_eq!(
                report.matches("— tested as: ").count(),
                verdicts,
                "{report}"
            );
        }
        let b = tempfile::tempdir().unwrap();
        experiment(name, b.path(), &["--threads", "1"]);
        assert_eq!(rows, deterministic_csv(b.path()), "{name}: thread count");
        // The report rewritten from the stored runs, without running them again.
        let c = tempfile::tempdir().unwrap();
        let stored = a.path().join("runs.csv");
        experiment(name, c.path(), &["--report-from", stored.to_str().unwrap()]);
        assert_eq!(
            std::fs::read_to_string(a.path().join("runs.csv")).unwrap(),
            std::fs::read_to_string(c.path().join("runs.csv")).unwrap()
        );
        let again = std::fs::read_to_string(c.path().join("report.md")).unwrap();
        assert_eq!(report, again, "{name}: report from runs.csv");
    }
}

/// `experiment lcg --quick` with the shared traces directory.
/// `experiment NAME --quick` over the shared traces.
fn on_traces(name: &str, dir: &Path, extra: &[&str]) {
    let o = Command::new(env!("CARGO_BIN_EXE_gridsim"))
        .args(["experiment", name, "--quick", "--quiet", "--out"])
        .arg(dir)
        .args(extra)
        .env(traces::TRACES_ENV, traces::dir())
        .output()
        .expect("gridsim runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn lcg_quick(dir: &Path, extra: &[&str]) {
    on_traces("lcg", dir, extra);
}

#[test]
fn lcg_quick_runs_every_strategy_and_the_home_site_baseline() {
    let Some(_) = traces::for_test("LCG-2005-1.swf.gz") else {
        return;
    };
    let a = tempfile::tempdir().unwrap();
    lcg_quick(a.path(), &[]);
    let rows = deterministic_csv(a.path());
    // Two capacity factors × (home site + 16 strategies).
    assert_eq!(rows.len() - 1, 2 * 17);
    let col = |name: &str| rows[0].iter().position(|h| h == name).unwrap();
    let (alg, ta, wait, moved, fin, rej) = (
        col("algorithm"),
        col("ta"),
        col("mean_wait"),
        col("moved_pct"),
        col("finished"),
        col("rejected"),
    );
    for r in &rows[1..] {
        assert_eq!(r[fin], "3000.000000", "{r:?}");
        assert_eq!(r[rej], "0.000000", "{r:?}");
        if r[alg] == "home-site" {
            assert_eq!(r[moved], "0.000000", "home site moves nothing");
            if r[ta] == "1" {
                assert_eq!(r[wait], "0.000000", "sites of their peak size never queue");
            }
        }
    }
    let report = std::fs::read_to_string(a.path().join("report.md")).unwrap();
    assert!(report.contains("3000 jobs"), "{report}");
    assert!(report.contains("## What the data shows"));
    // No published claim is judged; the spec's statements on the strategies are listed.
    assert!(report.contains("This report judges no published claim"));
    assert!(!report.contains("- **holds**") && !report.contains("- **does not hold**"));
    assert_eq!(report.matches("\n- \"").count(), 3, "{report}");
    for f in ["lcg-awrt", "lcg-wait", "lcg-slowdown", "lcg-imbalance"] {
        let svg = std::fs::read_to_string(a.path().join(format!("{f}.svg"))).unwrap();
        assert!(svg.contains("best-fit"), "{f}");
    }
    let b = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_gridsim"))
        .args([
            "experiment",
            "lcg",
            "--quick",
            "--quiet",
            "--threads",
            "1",
            "--out",
        ])
        .arg(b.path())
        .env(traces::TRACES_ENV, traces::dir())
        .output()
        .expect("gridsim runs");
    assert!(o.status.success());
    assert_eq!(
        rows,
        deterministic_csv(b.path()),
        "thread count changes nothing"
    );
}

/// `experiment eg-edf --quick`: 2 deadline margins × 2 Ta × 2 repetitions × 7 algorithms (FCFS,
/// EASY BF, Flex BF, EG-EDF, Tabu as printed and in our reading) on Table 13's platform: every job ends, the figures' metrics
/// are in range, the schedule-based kinds place jobs in gaps and nobody else does, one SVG per
/// figure and variant with one line per algorithm, a verdict per claim of the Results and
/// variant and reading, and the same numbers on one thread.
#[test]
fn eg_edf_quick_runs_every_algorithm_with_a_verdict_per_claim() {
    let a = tempfile::tempdir().unwrap();
    experiment("eg-edf", a.path(), &["--threads", "2"]);
    let rows = deterministic_csv(a.path());
    assert_eq!(
        rows.len() - 1,
        56,
        "2 margins × 2 Ta × 2 reps × 7 algorithms"
    );
    let col = |h: &str| rows[0].iter().position(|x| x == h).unwrap();
    let num = |r: &[String], h: &str| r[col(h)].parse::<f64>().unwrap();
    let algs = [
        "FCFS",
        "EASY BF",
        "Flex BF",
        "EG-EDF",
        "Tabu",
        "EG-EDF-now",
        "Tabu-now",
    ];
    for alg in algs {
        let n = rows[1..]
            .iter()
            .filter(|r| r[col("algorithm")] == alg)
            .count();
        assert_eq!(n, 8, "{alg}");
    }
    for r in &rows[1..] {
        assert_eq!(num(r, "finished"), 300.0, "every job ends: {r:?}");
        let delayed = num(r, "missed_pct");
        assert!((0.0..=100.0).contains(&delayed), "{r:?}");
        let usage = num(r, "processor_pct");
        assert!(usage > 0.0 && usage <= 100.0 + 1e-9, "{r:?}");
        assert!(num(r, "slowdown") >= 1.0, "{r:?}");
        assert_eq!(num(r, "suspensions_per_job"), 0.0, "no algorithm preempts");
        let waited = num(r, "waited_pct");
        assert!((0.0..=100.0).contains(&waited), "{r:?}");
        let schedule_based = matches!(
            r[col("algorithm")].as_str(),
            "EG-EDF" | "Tabu" | "EG-EDF-now" | "Tabu-now"
        );
        assert_eq!(num(r, "gap_pct") > 0.0, schedule_based, "{r:?}");
        if !schedule_based || r[col("algorithm")].starts_with("EG-EDF") {
            assert_eq!(num(r, "tabu_moves_per_job"), 0.0, "{r:?}");
        }
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(a.path().join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["experiment"], "eg-edf");
    let srows = summary["rows"].as_array().unwrap();
    assert_eq!(srows.len(), 28);
    for variant in ["margin 25-150", "margin 300-1100"] {
        for alg in algs {
            for ta in [5.0, 10.0] {
                let row = srows
                    .iter()
                    .find(|r| {
                        r["algorithm"] == alg
                            && r["variant"] == variant
                            && r["ta"].as_f64() == Some(ta)
                    })
                    .unwrap_or_else(|| panic!("summary row {variant} {alg} Ta={ta}"));
                assert_eq!(row["runs"], 2);
                assert!(row["mean"]["mean_pass_us"].as_f64().unwrap() > 0.0);
            }
        }
    }
    for fig in [
        "fig39-delayed",
        "fig39-usage",
        "fig40-runtime",
        "fig40-slowdown",
        "fig39-delayed-wide-margin",
        "fig39-usage-wide-margin",
        "fig40-runtime-wide-margin",
        "fig40-slowdown-wide-margin",
    ] {
        let svg = std::fs::read_to_string(a.path().join(format!("{fig}.svg"))).unwrap();
        for alg in algs {
            assert!(svg.lines().any(|l| l.trim() == alg), "{fig}: legend {alg}");
        }
        let series = svg
            .lines()
            .filter(|l| l.starts_with("<polyline") && l.contains("stroke-width=\"2\""))
            .count();
        assert_eq!(series, 7, "{fig}: one line per algorithm");
    }
    let report = std::fs::read_to_string(a.path().join("report.md")).unwrap();
    assert!(report.contains("Published: figures only"), "{report}");
    for quote in [
        "\"% delayed jobs: decreases with larger inter-arrival\"",
        "\"EG-EDF and Tabu much better than Flex BF, EASY BF, FCFS\"",
        "\"Tabu best\"",
        "our reading: low contention = the largest mean inter-arrival time, Ta=10",
        "\"EG-EDF/Tabu shorter and stable (incremental)\"",
        "\"close to Flex BF\"",
    ] {
        assert!(report.contains(quote), "{quote}: {report}");
    }
    let verdicts =
        report.matches("| **holds**").count() + report.matches("| **does not hold**").count();
    assert_eq!(
        verdicts,
        2 * 15 * 2,
        "2 margins × 15 claims × 2 readings: {report}"
    );
    assert!(
        report.contains("| claim | rule | as printed | ours |"),
        "{report}"
    );
    assert!(report.contains("## The paper's claims (margin 300-1100)"));

    let b = tempfile::tempdir().unwrap();
    experiment("eg-edf", b.path(), &["--threads", "1"]);
    assert_eq!(
        rows,
        deterministic_csv(b.path()),
        "thread count changes nothing"
    );
}

/// `adh`: every stream through every heuristic, shares that add up, the static heuristic never
/// reconfigured, our quantile variant closer to the target than the static heuristic on the
/// streams whose margins jump (Tables 11 and 12), a verdict per claim and variant, the figures.
#[test]
fn adh_quick_classifies_every_stream_with_a_verdict_per_claim() {
    let a = tempfile::tempdir().unwrap();
    experiment("adh", a.path(), &["--threads", "2"]);
    let rows = deterministic_csv(a.path());
    // 3 streams × 4 heuristics × 2 seeds.
    assert_eq!(rows.len() - 1, 24);
    let col = |name: &str| rows[0].iter().position(|h| h == name).unwrap();
    let num = |r: &Vec<String>, c: usize| r[c].parse::<f64>().unwrap();
    let shares: Vec<usize> = (0..5).map(|p| col(&format!("share_p{p}"))).collect();
    for r in &rows[1..] {
        let total: f64 = shares.iter().map(|&c| num(r, c)).sum();
        assert!((total - 100.0).abs() < 1e-6, "{r:?}");
        if r[col("algorithm")] == "DeadLine" {
            assert_eq!(num(r, col("changes")), 0.0, "{r:?}");
        }
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(a.path().join("summary.json")).unwrap())
            .unwrap();
    let get = |alg: &str, stream: &str, metric: &str| {
        summary["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["algorithm"] == alg && r["variant"] == stream && r["ta"] == 0.0)
            .unwrap()["mean"][metric]
            .as_f64()
            .unwrap()
    };
    for stream in ["table11", "table12"] {
        assert!(
            get("ADH-quantiles", stream, "windowed") < get("DeadLine", stream, "windowed"),
            "{stream}"
        );
    }
    assert!(get("DeadLine", "table10-uniform", "distance") < 0.05);
    let report = std::fs::read_to_string(a.path().join("report.md")).unwrap();
    let verdicts = report
        .lines()
        .filter(|l| l.contains(": **holds** —") || l.contains(": **does not hold** —"))
        .count();
    // Three parts about the static heuristic, seven about ADH for each of its three variants.
    assert_eq!(verdicts, 3 + 7 * 3, "{report}");
    for f in [
        "fig34-uniform-distance",
        "fig37-table11-base",
        "fig38-table12-distance",
    ] {
        let svg = std::fs::read_to_string(a.path().join(format!("{f}.svg"))).unwrap();
        assert!(svg.contains("<svg"), "{f}");
    }
}

/// `experiment gang --quick`: 15 configurations × workloads 0 and 5 × 2 repetitions of 300 jobs on
/// the model fitted to SDSC Blue: every job ends, the space-sharing runs (BF, BGS-1) never suspend
/// a job, only the gang runs do, κ with δ never exceeds the printed κ, Table 1 and a verdict per
/// claim are in the report, one SVG per figure, and one thread gives the same numbers.
#[test]
fn gang_quick_runs_every_configuration_with_a_verdict_per_claim() {
    if traces::for_test("SDSC-BLUE-2000-4.2-cln.swf.gz").is_none() {
        return;
    }
    let a = tempfile::tempdir().unwrap();
    experiment("gang", a.path(), &["--threads", "2"]);
    let rows = deterministic_csv(a.path());
    assert_eq!(rows.len() - 1, 15 * 2 * 2);
    let col = |h: &str| rows[0].iter().position(|x| x == h).unwrap();
    let num = |r: &[String], h: &str| r[col(h)].parse::<f64>().unwrap();
    let mut gang_suspended = 0;
    for r in &rows[1..] {
        let alg = r[col("algorithm")].as_str();
        assert_eq!(num(r, "finished"), 300.0, "every job ends: {r:?}");
        let rho = num(r, "rho");
        assert!(rho > 0.0 && rho <= 1.0, "{r:?}");
        assert!(num(r, "slowdown") >= 1.0, "{r:?}");
        let (k, kl) = (num(r, "kappa"), num(r, "kappa_literal"));
        assert!((0.0..=1.0).contains(&k) && k <= kl + 1e-12, "{r:?}");
        let susp = num(r, "suspensions_per_job");
        if alg == "BF" || alg == "BGS-1" {
            assert_eq!(susp, 0.0, "space sharing never suspends: {r:?}");
        } else if susp > 0.0 {
            gang_suspended += 1;
        }
        if r[col("variant")] == "cs 0%" {
            assert_eq!(num(r, "context_switches_per_job"), 0.0, "{r:?}");
        }
    }
    assert!(
        gang_suspended > 10,
        "gang runs time-share: {gang_suspended}"
    );
    let report = std::fs::read_to_string(a.path().join("report.md")).unwrap();
    assert!(report.contains("## Table 1"), "{report}");
    assert!(report.contains("## Estimates (§4, Fig. 8)"), "{report}");
    for quote in [
        "“BF always better” — **",
        "“BF better when ρ > 0.65” — **",
        "“BGS-k outperforms GS-k at every combination of context-switch overhead and utilization” — **",
        "“BGS-5 better than BF only up to ρ = 0.83” — **",
        "“% s better” — **",
        "“MGS wait 50–100 % larger than BGS at all utilizations” — **",
        "“best on κ, slowdown, wait across all utilizations; GS always worst” — **",
        "“BGS-1 slowdown ≈ 2 × BF over 0.55 ≤ ρ ≤ 0.80” — **",
        "“Individual good estimators get lower wait times” — **",
        "“BGS below ρ_critical = 0.8, BF above it, is at least as good as the better of BGS-5 and BF at every load” — **",
    ] {
        assert!(report.contains(quote), "missing verdict {quote}");
    }
    for f in [
        "fig15-slowdown",
        "fig17-wait",
        "fig20-kappa",
        "utilization",
        "fig16-context-switch-bgs5",
    ] {
        let svg = std::fs::read_to_string(a.path().join(format!("{f}.svg"))).unwrap();
        assert!(svg.starts_with("<svg"), "{f}");
    }
    let b = tempfile::tempdir().unwrap();
    experiment("gang", b.path(), &["--threads", "1"]);
    assert_eq!(
        rows,
        deterministic_csv(b.path()),
        "thread count changes nothing"
    );
}

/// `experiment urgent --quick` with the shared traces directory, into `dir`.
fn urgent_quick(dir: &Path, threads: &str) {
    let o = Command::new(env!("CARGO_BIN_EXE_gridsim"))
        .args([
            "experiment",
            "urgent",
            "--quick",
            "--quiet",
            "--threads",
            threads,
        ])
        .arg("--out")
        .arg(dir)
        .env(traces::TRACES_ENV, traces::dir())
        .output()
        .expect("gridsim runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn urgent_quick_runs_every_broker_and_judges_each_claim() {
    let Some(_) = traces::for_test("KTH-SP2-1996-2.1-cln.swf.gz") else {
        return;
    };
    let a = tempfile::tempdir().unwrap();
    urgent_quick(a.path(), "0");
    let rows = deterministic_csv(a.path());
    // 2 repetitions × 4 brokers × (baseline + 2 variants × 3 sizes).
    assert_eq!(rows.len() - 1, 2 * 4 * 7);
    let col = |name: &str| rows[0].iter().position(|h| h == name).unwrap();
    let (variant, size, fin, urgent, pre, lost) = (
        col("variant"),
        col("ta"),
        col("finished"),
        col("urgent_jobs"),
        col("preemptions"),
        col("lost_cpu_hours"),
    );
    let jobs = &rows[1][fin];
    for r in &rows[1..] {
        assert_eq!(&r[fin], jobs, "every job finishes: {r:?}");
        match r[variant].as_str() {
            "baseline" => assert_eq!(r[urgent], "0.000000", "{r:?}"),
            // 10 % of the window's jobs.
            _ => assert_ne!(r[urgent], "0.000000", "{r:?}"),
        }
        if r[variant] == "suspend (ours)" {
            assert_eq!(r[lost], "0.000000", "a suspended job loses no work: {r:?}");
        }
        if r[variant] == "as printed" && r[size] == "50" {
            assert_ne!(r[pre], "0.000000", "full-site urgent jobs preempt: {r:?}");
        }
    }
    let report = std::fs::read_to_string(a.path().join("report.md")).unwrap();
    assert!(report.contains("KTH-SP2"), "{report}");
    let verdicts =
        report.matches("**holds**").count() + report.matches("**does not hold**").count();
    assert_eq!(
        verdicts, 7,
        "one verdict per claim of the quick run: {report}"
    );
    for f in [
        "urgent-utilization",
        "urgent-wait-urgent",
        "urgent-kill-vs-suspend",
    ] {
        assert!(a.path().join(format!("{f}.svg")).exists(), "{f}");
    }
    let b = tempfile::tempdir().unwrap();
    urgent_quick(b.path(), "1");
    assert_eq!(
        rows,
        deterministic_csv(b.path()),
        "independent of the threads"
    );
}

/// `--only` runs the named configurations alone (an algorithm, or an algorithm and its variant),
/// with the same numbers as in the whole run, and refuses an unknown algorithm by name.
#[test]
fn only_runs_the_named_configurations() {
    let all = tempfile::tempdir().unwrap();
    experiment("cs", all.path(), &[]);
    let some = tempfile::tempdir().unwrap();
    experiment("cs", some.path(), &["--only", "CS_i_p/ours,EDF"]);
    let rows = deterministic_csv(some.path());
    let whole = deterministic_csv(all.path());
    assert_eq!(rows.len() - 1, 8, "2 Ta × 2 repetitions × 2 configurations");
    for r in &rows[1..] {
        assert!(
            (r[0] == "CS_i_p" && r[1] == "ours") || (r[0] == "EDF" && r[1].is_empty()),
            "{r:?}"
        );
        assert!(
            whole.contains(r),
            "the same numbers as in the whole run: {r:?}"
        );
    }
    let o = Command::new(env!("CARGO_BIN_EXE_gridsim"))
        .args(["experiment", "cs", "--quick", "--only", "CS_x", "--out"])
        .arg(some.path())
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--only CS_x: cs has no algorithm `CS_x` (it has: CS_i_p, CS_i_np, CS_ni_p, CS_ni_np, BF-easy, FB_UNMOD, FB_MOD, EDF)"),
        "{err}"
    );
}

/// `experiment data --quick`: every strategy blind and aware on both dataset sizes, every job
/// ends, the report compares each pair, and the runs do not depend on the thread count.
#[test]
fn data_quick_compares_every_strategy_blind_and_aware_deterministically() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    experiment("data", a.path(), &[]);
    experiment("data", b.path(), &["--threads", "1"]);
    assert_eq!(deterministic_csv(a.path()), deterministic_csv(b.path()));
    let report = std::fs::read_to_string(a.path().join("report.md")).unwrap();
    for s in [
        "min-completion+data",
        "min-min+data",
        "heft+data",
        "load-ordering",
    ] {
        assert!(
            report.contains(&format!("| {s} |")),
            "{s} missing:\n{report}"
        );
    }
    assert_eq!(report.matches("| 150 / 150 |").count(), 14, "{report}");
    assert_eq!(report.matches("`heft+data` against `heft`").count(), 2);
    for f in [
        "data-light-response.svg",
        "data-heavy-moved_gb.svg",
        "summary.json",
    ] {
        assert!(a.path().join(f).exists(), "{f}");
    }
}

/// `experiment fairshare --quick`: every algorithm on both traces ends every job, fair share
/// cuts the light users' wait against the seeds' classifier on the same local policy, the
/// classifier with no deadlines, licences nor classes schedules as EASY, and the runs do not
/// depend on the thread count.
#[test]
fn fairshare_quick_serves_light_users_first_deterministically() {
    for t in ["KTH-SP2-1996-2.1-cln.swf.gz", "HPC2N-2002-2.1-cln.swf.gz"] {
        let Some(_) = traces::for_test(t) else {
            return;
        };
    }
    let run = |dir: &Path, extra: &[&str]| on_traces("fairshare", dir, extra);
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    run(a.path(), &[]);
    run(b.path(), &["--threads", "1"]);
    let rows = deterministic_csv(a.path());
    assert_eq!(rows, deterministic_csv(b.path()));
    // Two traces × eight algorithms at one speed-up.
    assert_eq!(rows.len() - 1, 16);
    let col = |name: &str| rows[0].iter().position(|h| h == name).unwrap();
    let get = |alg: &str, trace: &str, m: &str| -> f64 {
        let r = (rows.iter())
            .find(|r| r[col("algorithm")] == alg && r[col("variant")] == trace)
            .unwrap_or_else(|| panic!("{alg} {trace}"));
        r[col(m)].parse().unwrap()
    };
    for t in ["KTH-SP2", "HPC2N"] {
        for alg in gridsim::experiment::fairshare::ALGORITHMS {
            assert_eq!(get(alg, t, "finished"), 1000.0, "{alg} {t}");
        }
        for alg in ["classic", "fair-tree", "dominant"] {
            assert!(
                get(alg, t, "light_wait") < get("seeds", t, "light_wait"),
                "{alg} {t}"
            );
        }
        assert_eq!(get("seeds", t, "bsld"), get("easy", t, "bsld"), "{t}");
        // The simulator ticks the grid runner at each recalculation period: the factors read
        // again change the schedule.
        assert_ne!(
            get("classic-5min", t, "wait"),
            get("classic", t, "wait"),
            "{t}"
        );
    }
    let report = std::fs::read_to_string(a.path().join("report.md")).unwrap();
    assert!(
        report.contains("`seeds` gives EASY's schedule job for job"),
        "{report}"
    );
    assert!(a.path().join("fairshare-kth-sp2-light_wait.svg").exists());
}
