//! `gridsim experiment fb`: Flexible Backfilling on one cluster (spec
//! `two-level-grid-scheduler.md` D9.1; generator Table 1 of D8/D9.1; metrics D8.1; readings D12
//! #25–#29, #38).
//!
//! FCFS, BF_FCFS (EASY on heterogeneous machines and licences), BF_UNMOD and BF_MOD (constants of
//! D6.4 row 1) on 100 machines without space sharing, 20 licence types, 1,000 jobs, for every mean
//! inter-arrival time {4, 6, 12, 24, 48} and three licence-ratio ranges (30–50 %, 40–60 %, 50–70 %;
//! Table 1's own range is 50–70 %, used for Figs. 16–18), 20 repetitions. Every algorithm sees the
//! same platform and jobs for a given repetition (common random numbers).

use super::{Experiment, Figure, Metrics, Options, RunKey, Series, Summary, lookup, verdict};
use crate::platform::{Meta, simulate_jobs};
use anyhow::{Result, anyhow};
use gridsched_core::dispatch::RoundRobin;
use gridsched_core::model::{ClusterId, Job, Time};
use gridsched_core::policy::{PolicyConfig, PolicyKind};
use gridsched_workload::seed_setups::SetupParams;
use std::fmt::Write as _;

/// The algorithms, as (report name, policy kind).
pub const ALGORITHMS: [(&str, PolicyKind); 4] = [
    ("FCFS", PolicyKind::Fcfs),
    ("BF_FCFS", PolicyKind::Easy),
    ("BF_UNMOD", PolicyKind::FbUnmod),
    ("BF_MOD", PolicyKind::FbMod),
];

/// The licence-ratio variants (Tables 2–3), as (name, range).
pub const RATIOS: [(&str, (f64, f64)); 3] = [
    ("ratio 30-50%", (0.30, 0.50)),
    ("ratio 40-60%", (0.40, 0.60)),
    ("ratio 50-70%", (0.50, 0.70)),
];

/// Table 2 of the paper: % licence usage per ratio (FCFS, BF_FCFS, BF_UNMOD, BF_MOD).
pub const TABLE2: [[f64; 4]; 3] = [
    [55.7, 78.5, 80.5, 79.7],
    [52.1, 76.1, 75.5, 76.3],
    [49.5, 74.8, 72.2, 72.4],
];

/// Table 3 of the paper: % jobs missing their deadline per ratio.
pub const TABLE3: [[f64; 4]; 3] = [
    [95.6, 78.9, 74.5, 73.5],
    [95.5, 74.8, 69.4, 69.0],
    [95.5, 74.6, 66.2, 66.2],
];

/// The metrics every single-cluster run reports, in CSV order.
pub const METRICS: [&str; 9] = [
    "missed_pct",
    "slowdown",
    "system_pct",
    "machine_pct",
    "processor_pct",
    "licence_pct",
    "mean_wait",
    "finished",
    "mean_pass_us",
];

/// The experiment.
#[derive(Debug)]
pub struct FbExperiment {
    setup: SetupParams,
    reps: u32,
    seed: u64,
}

impl FbExperiment {
    /// The full experiment, or the reduced one with `quick` (150 jobs, Ta ∈ {4, 24}, 2 reps).
    pub fn new(opts: &Options) -> FbExperiment {
        let mut setup = SetupParams::table1();
        if opts.quick {
            setup.jobs = 150;
            setup.inter_arrivals = vec![4.0, 24.0];
        }
        FbExperiment {
            setup,
            reps: opts.reps.unwrap_or(if opts.quick { 2 } else { 20 }),
            seed: opts.seed,
        }
    }
}

/// Runs `jobs` on the one-cluster `platform` with `cfg` and returns the D8.1 metrics.
pub fn single_cluster_metrics(
    platform: &gridsched_core::model::Platform,
    cfg: PolicyConfig,
    jobs: Vec<Job>,
) -> Result<Metrics> {
    let policies = vec![cfg.build(platform, ClusterId(0))?];
    let mut rr = RoundRobin::default();
    let mut classify = |_: Time, _: &Job| 1;
    let rep = simulate_jobs(
        platform,
        policies,
        Meta {
            classify: &mut classify,
            dispatcher: &mut rr,
            splits: None,
        },
        jobs,
    )
    .map_err(|e| anyhow!("{e}"))?;
    Ok(vec![
        ("missed_pct", rep.jobs.missed_pct),
        ("slowdown", rep.jobs.slowdown),
        ("slowdown_no_deadline", rep.jobs.slowdown_no_deadline),
        ("system_pct", rep.usage.system_pct),
        ("machine_pct", rep.usage.machine_pct),
        ("processor_pct", rep.usage.processor_pct),
        ("licence_pct", rep.usage.licence_pct),
        ("mean_wait", rep.jobs.mean_wait),
        ("finished", rep.jobs.finished as f64),
        ("mean_pass_us", rep.stats.mean_pass_us),
        (
            "suspensions_per_job",
            rep.stats.suspensions as f64 / rep.jobs.finished.max(1) as f64,
        ),
    ])
}

impl Experiment for FbExperiment {
    fn name(&self) -> &'static str {
        "fb"
    }

    fn runs(&self) -> Vec<RunKey> {
        let mut v = Vec::new();
        for (variant, _) in RATIOS {
            for &ta in &self.setup.inter_arrivals {
                for rep in 0..self.reps {
                    for (alg, _) in ALGORITHMS {
                        v.push(RunKey {
                            algorithm: alg.to_string(),
                            variant: variant.to_string(),
                            ta,
                            rep,
                            seed: self.seed + u64::from(rep),
                        });
                    }
                }
            }
        }
        v
    }

    fn run(&self, key: &RunKey) -> Result<Metrics> {
        let ratio = *lookup(&RATIOS, &key.variant, "variant")?;
        let kind = *lookup(&ALGORITHMS, &key.algorithm, "algorithm")?;
        let setup = SetupParams {
            licence_ratio: ratio,
            ..self.setup.clone()
        };
        let platform = setup.platform(key.seed);
        let jobs = setup.jobs(&platform, key.ta, key.seed);
        single_cluster_metrics(&platform, PolicyConfig::new(kind), jobs)
    }

    fn figures(&self) -> Vec<Figure> {
        let v = RATIOS[2].0.to_string();
        vec![
            Figure {
                file: "fig16-deadline-misses".into(),
                title: "Fig. 16: executed jobs missing their deadline".into(),
                metric: "missed_pct",
                y_label: "% of jobs with a deadline",
                x_label: "mean inter-arrival time",
                series: Series::Algorithms(v.clone()),
            },
            Figure {
                file: "fig17-system-usage".into(),
                title: "Fig. 17: used hardware".into(),
                metric: "processor_pct",
                y_label: "% busy CPUs / min(CPUs, CPUs requested)",
                x_label: "mean inter-arrival time",
                series: Series::Algorithms(v.clone()),
            },
            Figure {
                file: "fig18-slowdown".into(),
                title: "Fig. 18: slowdown".into(),
                metric: "slowdown",
                y_label: "mean slowdown",
                x_label: "mean inter-arrival time",
                series: Series::Algorithms(v.clone()),
            },
            Figure {
                file: "licence-usage".into(),
                title: "Licence usage".into(),
                metric: "licence_pct",
                y_label: "% licence usage (D8.1 §4.3)",
                x_label: "mean inter-arrival time",
                series: Series::Algorithms(v),
            },
        ]
    }

    fn report(&self, s: &Summary) -> String {
        report(self, s)
    }
}

fn report(e: &FbExperiment, s: &Summary) -> String {
    let mut r = String::new();
    let algs: Vec<&str> = ALGORITHMS.iter().map(|(n, _)| *n).collect();
    let _ = writeln!(
        r,
        "# Experiment `fb`: Flexible Backfilling on one cluster (D9.1)\n"
    );
    let _ = writeln!(
        r,
        "Set-up: {} machines (no space sharing), {} licence types, {} jobs per stream, Ta ∈ {:?}, \
         {} repetitions (seeds {}..{}), FB constants of D6.4 row 1. Generator readings: D12 #25–#27 \
         (see `workload/src/seed_setups`).\n",
        e.setup.clusters[0],
        e.setup.licences,
        e.setup.jobs,
        e.setup.inter_arrivals,
        e.reps,
        e.seed,
        e.seed + u64::from(e.reps) - 1
    );
    let main = RATIOS[2].0;
    for (metric, title) in [
        ("missed_pct", "Fig. 16 — % jobs missing their deadline"),
        (
            "processor_pct",
            "Fig. 17 — % used hardware: busy CPUs / min(total CPUs, CPUs requested) (§5.2.3 form)",
        ),
        (
            "system_pct",
            "§4.1 system usage, literal: busy CPUs / min(total CPUs, jobs in system) — mixes units \
             and exceeds 100 % when jobs ask for several CPUs (D12 #29)",
        ),
        (
            "machine_pct",
            "machine usage: busy machines / min(machines, jobs in system) (§4.2 form)",
        ),
        ("slowdown", "Fig. 18 — slowdown"),
        ("licence_pct", "% licence usage"),
        (
            "mean_pass_us",
            "mean scheduling time per pass, µs (wall clock, not deterministic)",
        ),
    ] {
        let _ = writeln!(r, "## {title} ({main})\n");
        r.push_str(&s.table("Ta", &algs, main, metric));
        r.push('\n');
    }
    for (table, data, metric) in [
        ("Table 2 — % licence usage", &TABLE2, "licence_pct"),
        ("Table 3 — % jobs missing deadline", &TABLE3, "missed_pct"),
    ] {
        let _ = writeln!(
            r,
            "## {table} (published beside ours; the paper does not state Ta, D12 #28)\n"
        );
        let _ = writeln!(r, "| ratio | source | {} |", algs.join(" | "));
        let _ = writeln!(r, "|---|---|{}", "---|".repeat(algs.len()));
        for (i, (variant, _)) in RATIOS.iter().enumerate() {
            let published: Vec<String> = data[i].iter().map(|v| format!("{v:.1}")).collect();
            let _ = writeln!(r, "| {variant} | paper | {} |", published.join(" | "));
            for ta in s.tas() {
                let ours: Vec<String> = algs
                    .iter()
                    .map(|a| {
                        s.get(a, variant, ta, metric)
                            .map_or("–".into(), |v| format!("{v:.1}"))
                    })
                    .collect();
                let _ = writeln!(r, "| {variant} | ours, Ta={ta} | {} |", ours.join(" | "));
            }
        }
        r.push('\n');
    }
    let _ = writeln!(r, "## The paper's claims\n");
    for c in claims(s) {
        let _ = writeln!(
            r,
            "- **{}** — {}: {}",
            verdict(c.holds),
            c.claim,
            c.evidence
        );
    }
    r
}

/// A published claim and whether our numbers support it.
#[derive(Debug, Clone)]
pub struct Claim {
    /// The claim.
    pub claim: String,
    /// Whether it holds.
    pub holds: bool,
    /// The numbers.
    pub evidence: String,
}

/// Checks the D9.1 claims on the Table 1 variant.
pub fn claims(s: &Summary) -> Vec<Claim> {
    let v = RATIOS[2].0;
    let g = |a: &str, ta: f64, m: &str| s.get(a, v, ta, m).unwrap_or(f64::NAN);
    let tas = s.tas();
    let high: Vec<f64> = tas.iter().copied().filter(|t| *t <= 12.0).collect();
    let mut out = Vec::new();
    let mut ev = Vec::new();
    let mut ok = true;
    for &ta in &high {
        let fb = g("BF_UNMOD", ta, "missed_pct").min(g("BF_MOD", ta, "missed_pct"));
        let base = g("FCFS", ta, "missed_pct").min(g("BF_FCFS", ta, "missed_pct"));
        ok &= fb < base;
        ev.push(format!("Ta={ta}: FB {fb:.1} vs best baseline {base:.1}"));
    }
    out.push(Claim {
        claim: "under high contention (Ta ≤ 12) the FB variants miss fewer deadlines than FCFS and BF_FCFS".into(),
        holds: ok && !high.is_empty(),
        evidence: ev.join("; "),
    });
    let mut ev = Vec::new();
    let mut ok = true;
    for &ta in &tas {
        let f = g("FCFS", ta, "processor_pct");
        let others = ["BF_FCFS", "BF_UNMOD", "BF_MOD"].map(|a| g(a, ta, "processor_pct"));
        ok &= others.iter().all(|o| *o >= f);
        ev.push(format!(
            "Ta={ta}: FCFS {f:.1}, backfilling {:.1}/{:.1}/{:.1}",
            others[0], others[1], others[2]
        ));
    }
    out.push(Claim {
        claim: "the backfilling variants use more of the hardware than FCFS".into(),
        holds: ok,
        evidence: ev.join("; "),
    });
    let mut ev = Vec::new();
    let mut ok = true;
    for &ta in &tas {
        let f = g("FCFS", ta, "slowdown");
        let b = g("BF_FCFS", ta, "slowdown");
        ok &= b <= f;
        ev.push(format!(
            "Ta={ta}: FCFS {f:.2}, BF_FCFS {b:.2}, BF_UNMOD {:.2}",
            g("BF_UNMOD", ta, "slowdown")
        ));
    }
    out.push(Claim {
        claim: "backfilling reduces the slowdown compared with FCFS".into(),
        holds: ok,
        evidence: ev.join("; "),
    });
    let mut ev = Vec::new();
    let mut ok = true;
    for &ta in &tas {
        let d = (g("BF_UNMOD", ta, "missed_pct") - g("BF_MOD", ta, "missed_pct")).abs();
        ok &= d <= 2.0;
        ev.push(format!("Ta={ta}: |Δ| = {d:.2} points"));
    }
    out.push(Claim {
        claim: "no measurable difference between BF_UNMOD and BF_MOD (≤ 2 points, D12 #38)".into(),
        holds: ok,
        evidence: ev.join("; "),
    });
    if let Some(&last) = tas.last() {
        let b = g("BF_FCFS", last, "missed_pct");
        let f = g("BF_UNMOD", last, "missed_pct");
        out.push(Claim {
            claim: "at the largest inter-arrival time BF_FCFS performs similarly to the FB variants (≤ 5 points)".into(),
            holds: (b - f).abs() <= 5.0,
            evidence: format!("Ta={last}: BF_FCFS {b:.1}, BF_UNMOD {f:.1}"),
        });
    }
    out
}
