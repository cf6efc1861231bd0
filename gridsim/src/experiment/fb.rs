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
use crate::platform::{Classify, Meta, simulate_jobs};
use anyhow::{Result, anyhow};
use gridsched_core::dispatch::RoundRobin;
use gridsched_core::model::{ClusterId, Job};
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
    let rep = simulate_jobs(
        platform,
        policies,
        Meta {
            classify: Classify::Fixed(1),
            dispatcher: Box::new(RoundRobin::default()),
            splits: None,
            links: None,
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
    write_claims(&mut r, &claims(s));
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

impl Claim {
    /// A claim quoted word for word from the specification (`source`: its section, figure or
    /// table, may be empty), the rule it is tested by, the verdict and the numbers; shown as
    /// `"quote" (source) — tested as: rule`.
    pub fn quoted(
        source: &str,
        quote: &str,
        rule: &str,
        holds: bool,
        evidence: &[String],
    ) -> Claim {
        let source = if source.is_empty() {
            String::new()
        } else {
            format!(" ({source})")
        };
        Claim {
            claim: format!("\"{quote}\"{source} — tested as: {rule}"),
            holds,
            evidence: evidence.join("; "),
        }
    }
}

/// Writes claims as a list: `- **verdict** — "quote" (source) — tested as: rule: evidence`.
pub fn write_claims(r: &mut String, claims: &[Claim]) {
    for c in claims {
        let _ = writeln!(
            r,
            "- **{}** — {}: {}",
            verdict(c.holds),
            c.claim,
            c.evidence
        );
    }
}

/// Writes the claims a report does not judge, each quoted with its source and the reason, under
/// a "Not evaluated" heading of `level` (`"##"`, `"###"`); nothing when there are none.
pub fn write_not_evaluated(r: &mut String, level: &str, items: &[NotEvaluated]) {
    if items.is_empty() {
        return;
    }
    let _ = writeln!(r, "\n{level} Not evaluated\n");
    for n in items {
        let _ = writeln!(r, "- \"{}\" ({}) — {}", n.quote, n.source, n.reason);
    }
}

/// A published claim a report does not judge, and why.
#[derive(Debug, Clone)]
pub struct NotEvaluated {
    /// The claim, word for word.
    pub quote: String,
    /// Its section, figure or table.
    pub source: String,
    /// Why it is not judged.
    pub reason: String,
}

impl NotEvaluated {
    /// A claim not judged, and why.
    pub fn new(source: &str, quote: &str, reason: impl Into<String>) -> NotEvaluated {
        NotEvaluated {
            quote: quote.into(),
            source: source.into(),
            reason: reason.into(),
        }
    }
}

/// The paper's sentences on Figs. 16–18 and Tables 2–3 (D9.1), each quoted and tested as it is
/// written: "best in every test" at every inter-arrival time and licence ratio, "outperform" as
/// strictly better for each of the two variants, differences of at most 2 points read as "no
/// measurable difference" or "similar" (D12 #38). Figs. 16–18 are the Table 1 ratio (50–70 %);
/// the Table 2–3 remarks compare the ratios, with the means over the inter-arrival times (the paper
/// does not state its Ta, D12 #28).
pub fn claims(s: &Summary) -> Vec<Claim> {
    let main = RATIOS[2].0;
    let g = |a: &str, v: &str, ta: f64, m: &str| s.get(a, v, ta, m).unwrap_or(f64::NAN);
    let tas = s.tas();
    let fb = ["BF_UNMOD", "BF_MOD"];
    let claim = |quote: &str, rule: &str, holds: bool, ev: Vec<String>| {
        Claim::quoted("", quote, rule, holds, &ev)
    };
    let over_ta = |a: &str, v: &str, m: &str| {
        tas.iter().map(|&t| g(a, v, t, m)).sum::<f64>() / tas.len().max(1) as f64
    };
    let mut out = Vec::new();

    let (mut ok, mut ev) = (true, Vec::new());
    for (v, _) in RATIOS {
        for &ta in &tas {
            let f = fb.map(|a| g(a, v, ta, "missed_pct"));
            let b = ["FCFS", "BF_FCFS"].map(|a| g(a, v, ta, "missed_pct"));
            let worst_fb = f[0].max(f[1]);
            let best_base = b[0].min(b[1]);
            ok &= worst_fb < best_base;
            if worst_fb >= best_base {
                ev.push(format!(
                    "{v}, Ta={ta}: BF_UNMOD {:.1} / BF_MOD {:.1} against FCFS {:.1} / BF_FCFS {:.1}",
                    f[0], f[1], b[0], b[1]
                ));
            }
        }
    }
    if ok {
        ev.push("every ratio and Ta".into());
    }
    out.push(claim(
        "Fig. 16: BF_MOD and BF_UNMOD best in every test",
        "at every Ta and licence ratio both FB variants miss fewer deadlines than FCFS and than \
         BF_FCFS",
        ok && !tas.is_empty(),
        ev,
    ));

    if let Some(&last) = tas.last() {
        let b = g("BF_FCFS", main, last, "missed_pct");
        let f = fb.map(|a| g(a, main, last, "missed_pct"));
        let d = (b - f[0]).abs().max((b - f[1]).abs());
        out.push(claim(
            "Fig. 16: at large inter-arrival BF_FCFS performs similarly to the two FB variants",
            "at the largest Ta BF_FCFS's misses are within 2 points of each FB variant's",
            d <= 2.0,
            vec![format!(
                "Ta={last}: BF_FCFS {b:.1}, BF_UNMOD {:.1}, BF_MOD {:.1}",
                f[0], f[1]
            )],
        ));
    }

    let (mut ok, mut ev) = (true, Vec::new());
    let mut gaps = Vec::new();
    for &ta in &tas {
        let f = g("FCFS", main, ta, "processor_pct");
        let others = ["BF_FCFS", "BF_UNMOD", "BF_MOD"].map(|a| g(a, main, ta, "processor_pct"));
        ok &= others.iter().all(|o| *o > f);
        gaps.push(others.iter().copied().fold(f64::MAX, f64::min) - f);
        ev.push(format!(
            "Ta={ta}: FCFS {f:.1}, BF_FCFS {:.1}, BF_UNMOD {:.1}, BF_MOD {:.1}",
            others[0], others[1], others[2]
        ));
    }
    let especially = gaps
        .first()
        .zip(gaps.last())
        .is_some_and(|(hi, lo)| hi > lo);
    out.push(claim(
        "Fig. 17: % used hardware: backfilling variants higher than FCFS, especially under high \
         contention",
        "at every Ta each backfilling variant uses more processors than FCFS, and the smallest \
         gap is larger at the smallest Ta than at the largest",
        ok && especially,
        ev,
    ));

    let (mut ok, mut ev) = (true, Vec::new());
    for &ta in &tas {
        let f = fb.map(|a| g(a, main, ta, "processor_pct"));
        let b = ["FCFS", "BF_FCFS"].map(|a| g(a, main, ta, "processor_pct"));
        let good = f[0].min(f[1]) > b[0].max(b[1]);
        ok &= good;
        ev.push(format!(
            "Ta={ta}: BF_UNMOD {:.1} / BF_MOD {:.1} against FCFS {:.1} / BF_FCFS {:.1}",
            f[0], f[1], b[0], b[1]
        ));
    }
    out.push(claim(
        "Fig. 17: BF_UNMOD/BF_MOD outperform FCFS and BF_FCFS in usage",
        "at every Ta both FB variants use more processors than FCFS and than BF_FCFS",
        ok && !tas.is_empty(),
        ev,
    ));

    let (mut ok, mut ev) = (true, Vec::new());
    for &ta in &tas {
        let f = g("FCFS", main, ta, "mean_wait");
        let b = ["BF_FCFS", "BF_UNMOD", "BF_MOD"].map(|a| g(a, main, ta, "mean_wait"));
        if f >= 1.0 {
            ok &= b.iter().all(|x| *x <= 0.5 * f);
        }
        ev.push(format!(
            "Ta={ta}: FCFS {f:.0} s, BF_FCFS {:.0} s, BF_UNMOD {:.0} s, BF_MOD {:.0} s",
            b[0], b[1], b[2]
        ));
    }
    out.push(claim(
        "Fig. 18: backfilling drastically reduces waiting",
        "at every Ta where FCFS's jobs wait (mean ≥ 1 s) each backfilling variant's mean wait is at \
         most half of FCFS's",
        ok,
        ev,
    ));

    let (mut ok, mut ev) = (true, Vec::new());
    for &ta in &tas {
        let b = g("BF_FCFS", main, ta, "slowdown");
        let f = fb.map(|a| g(a, main, ta, "slowdown"));
        ok &= f.iter().all(|x| *x >= 0.9 * b);
        ev.push(format!(
            "Ta={ta}: BF_FCFS {b:.2}, BF_UNMOD {:.2}, BF_MOD {:.2}",
            f[0], f[1]
        ));
    }
    out.push(claim(
        "Fig. 18: FB variants not much better than BF_FCFS",
        "at every Ta neither FB variant's slowdown is more than 10 % below BF_FCFS's",
        ok,
        ev,
    ));

    let (mut ok, mut worst) = (true, 0.0f64);
    for (v, _) in RATIOS {
        for &ta in &tas {
            let d = (g("BF_UNMOD", v, ta, "missed_pct") - g("BF_MOD", v, ta, "missed_pct")).abs();
            ok &= d <= 2.0;
            worst = worst.max(d);
        }
    }
    out.push(claim(
        "No measurable difference between BF_UNMOD and BF_MOD overall",
        "at every Ta and ratio their misses differ by at most 2 points (D12 #38)",
        ok,
        vec![format!("largest difference {worst:.2} points")],
    ));

    let high = RATIOS[0].0;
    let (m, u) = (
        over_ta("BF_MOD", high, "missed_pct"),
        over_ta("BF_UNMOD", high, "missed_pct"),
    );
    out.push(claim(
        "Table 3: BF_MOD, which re-assigns the reservation, is slightly better when licence \
         contention is high",
        "at the lowest licence ratio (30–50 %) BF_MOD misses fewer deadlines than BF_UNMOD, over \
         the mean of the Ta",
        m < u,
        vec![format!("BF_MOD {m:.2}, BF_UNMOD {u:.2}")],
    ));

    let fb_lic = |v: &str| fb.map(|a| over_ta(a, v, "licence_pct"));
    let (hi_fb, hi_bf) = (fb_lic(high), over_ta("BF_FCFS", high, "licence_pct"));
    let (lo_fb, lo_bf) = (fb_lic(main), over_ta("BF_FCFS", main, "licence_pct"));
    out.push(claim(
        "Table 2: Licence-priority helps only under high licence contention; at lower contention \
         deadline-urgent jobs with few licences get precedence and licence usage drops below \
         BF_FCFS",
        "over the mean of the Ta, both FB variants use more licences than BF_FCFS at the 30–50 % \
         ratio and fewer at the 50–70 % ratio",
        hi_fb.iter().all(|x| *x > hi_bf) && lo_fb.iter().all(|x| *x < lo_bf),
        vec![
            format!(
                "30–50 %: BF_UNMOD {:.1}, BF_MOD {:.1}, BF_FCFS {hi_bf:.1}",
                hi_fb[0], hi_fb[1]
            ),
            format!(
                "50–70 %: BF_UNMOD {:.1}, BF_MOD {:.1}, BF_FCFS {lo_bf:.1}",
                lo_fb[0], lo_fb[1]
            ),
        ],
    ));
    out
}
