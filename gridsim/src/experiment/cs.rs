//! `gridsim experiment cs`: Convergent Scheduling on one cluster (spec
//! `two-level-grid-scheduler.md` D9.2; generator Table 4 of D8/D9.2; metrics D8.1; readings D12
//! #17, #20–#23, #25–#27).
//!
//! CS_i_p, CS_i_np, CS_ni_p, CS_ni_np (constants D7.5), BF-easy (EASY on heterogeneous machines and
//! licences), the two Flexible Backfilling variants with the CS heuristic constants
//! ([`HeuristicParams::CS`], D12: "FB formulas with CS constants") and EDF, on 150 machines without
//! space sharing, 20 licence types, 1,500 jobs, Ta ∈ {4, 6, 8, 10, 12, 16, 20}, 20 repetitions,
//! common random numbers (every algorithm sees the same platform and jobs for a repetition).
//!
//! Figures 20–23 are drawn from the per-run means; Fig. 19 (workload over time) is summarised by
//! the mean queue length (`mean_waiting`) and Fig. 24 (time per plan against the number of jobs) is
//! measured by `gridsim bench --cs`.

use super::fb::single_cluster_report;
use super::{Experiment, Figure, Metrics, Options, RunKey, Series, Summary};
use anyhow::{Result, anyhow};
use gridsched_core::heuristics::HeuristicParams;
use gridsched_core::policy::{PolicyConfig, PolicyKind};
use gridsched_workload::seed_setups::SetupParams;
use std::fmt::Write as _;

/// The algorithms, as (report name, policy kind).
pub const ALGORITHMS: [(&str, PolicyKind); 8] = [
    ("CS_i_p", PolicyKind::CsIP),
    ("CS_i_np", PolicyKind::CsINp),
    ("CS_ni_p", PolicyKind::CsNiP),
    ("CS_ni_np", PolicyKind::CsNiNp),
    ("BF_easy", PolicyKind::Easy),
    ("FB_UNMOD", PolicyKind::FbUnmod),
    ("FB_MOD", PolicyKind::FbMod),
    ("EDF", PolicyKind::Edf),
];

/// The CS variants (first four algorithms).
const CS: [&str; 4] = ["CS_i_p", "CS_i_np", "CS_ni_p", "CS_ni_np"];
/// The other algorithms.
const OTHERS: [&str; 4] = ["BF_easy", "FB_UNMOD", "FB_MOD", "EDF"];

/// The experiment.
#[derive(Debug)]
pub struct CsExperiment {
    setup: SetupParams,
    reps: u32,
    seed: u64,
}

impl CsExperiment {
    /// The full experiment, or the reduced one with `quick` (30 machines, 150 jobs, Ta ∈ {4, 20},
    /// 2 reps).
    pub fn new(opts: &Options) -> CsExperiment {
        let mut setup = SetupParams::table4();
        if opts.quick {
            setup.clusters = vec![30];
            setup.jobs = 150;
            setup.inter_arrivals = vec![4.0, 20.0];
        }
        CsExperiment {
            setup,
            reps: opts.reps.unwrap_or(if opts.quick { 2 } else { 20 }),
            seed: opts.seed,
        }
    }
}

/// The policy configuration of a report name.
pub fn config(algorithm: &str) -> Result<PolicyConfig> {
    let kind = ALGORITHMS
        .iter()
        .find(|(n, _)| *n == algorithm)
        .ok_or_else(|| anyhow!("unknown algorithm {algorithm}"))?
        .1;
    let mut cfg = PolicyConfig::new(kind);
    if matches!(kind, PolicyKind::FbUnmod | PolicyKind::FbMod) {
        cfg.heuristics = HeuristicParams::CS;
    }
    Ok(cfg)
}

impl Experiment for CsExperiment {
    fn name(&self) -> &'static str {
        "cs"
    }

    fn runs(&self) -> Vec<RunKey> {
        let mut v = Vec::new();
        for &ta in &self.setup.inter_arrivals {
            for rep in 0..self.reps {
                for (alg, _) in ALGORITHMS {
                    v.push(RunKey {
                        algorithm: alg.to_string(),
                        variant: String::new(),
                        ta,
                        rep,
                        seed: self.seed + u64::from(rep),
                    });
                }
            }
        }
        v
    }

    fn run(&self, key: &RunKey) -> Result<Metrics> {
        let cfg = config(&key.algorithm)?;
        let platform = self.setup.platform(key.seed);
        let jobs = self.setup.jobs(&platform, key.ta, key.seed);
        let rep = single_cluster_report(&platform, cfg, jobs)?;
        Ok(vec![
            ("missed_pct", rep.jobs.missed_pct),
            ("slowdown", rep.jobs.slowdown),
            ("slowdown_no_deadline", rep.jobs.slowdown_no_deadline),
            ("machine_pct", rep.usage.machine_pct),
            ("processor_pct", rep.usage.processor_pct),
            ("licence_pct", rep.usage.licence_pct),
            ("mean_wait", rep.jobs.mean_wait),
            ("finished", rep.jobs.finished as f64),
            ("suspensions", rep.stats.suspensions as f64),
            ("mean_pass_us", rep.stats.mean_pass_us),
        ])
    }

    fn figures(&self) -> Vec<Figure> {
        let fig = |file: &str, title: &str, metric, y_label| Figure {
            file: file.into(),
            title: title.into(),
            metric,
            y_label,
            x_label: "mean inter-arrival time",
            series: Series::Algorithms(String::new()),
        };
        vec![
            fig(
                "fig20-deadline-misses",
                "Fig. 20: executed jobs missing their deadline",
                "missed_pct",
                "% of jobs with a deadline",
            ),
            fig(
                "fig21-slowdown-no-deadline",
                "Fig. 21: slowdown of jobs without deadline",
                "slowdown_no_deadline",
                "mean slowdown",
            ),
            fig(
                "fig22-machine-usage",
                "Fig. 22: machine usage",
                "machine_pct",
                "% busy machines / min(machines, jobs)",
            ),
            fig(
                "fig23-scheduling-time",
                "Fig. 23: mean scheduling time per pass",
                "mean_pass_us",
                "µs per pass (wall clock)",
            ),
        ]
    }

    fn report(&self, s: &Summary) -> String {
        report(self, s)
    }
}

fn report(e: &CsExperiment, s: &Summary) -> String {
    let mut r = String::new();
    let algs: Vec<&str> = ALGORITHMS.iter().map(|(n, _)| *n).collect();
    let _ = writeln!(
        r,
        "# Experiment `cs`: Convergent Scheduling on one cluster (D9.2)\n"
    );
    let _ = writeln!(
        r,
        "Set-up: {} machines (no space sharing), {} licence types, {} jobs per stream, Ta ∈ {:?}, \
         {} repetitions (seeds {}..{}), CS constants of D7.5, FB with the CS heuristic constants. \
         Generator readings: D12 #25–#27 (see `workload/src/seed_setups`).\n",
        e.setup.clusters[0],
        e.setup.licences,
        e.setup.jobs,
        e.setup.inter_arrivals,
        e.reps,
        e.seed,
        e.seed + u64::from(e.reps) - 1
    );
    for (metric, title) in [
        ("missed_pct", "Fig. 20 — % jobs missing their deadline"),
        (
            "slowdown_no_deadline",
            "Fig. 21 — slowdown of the jobs without deadline",
        ),
        (
            "machine_pct",
            "Fig. 22 — % machine usage: busy machines / min(machines, jobs in system)",
        ),
        (
            "mean_pass_us",
            "Fig. 23 — mean scheduling time per pass, µs (wall clock, not deterministic)",
        ),
        ("slowdown", "slowdown of every job"),
        ("licence_pct", "% licence usage"),
        ("suspensions", "suspensions per run (preemptive CS only)"),
    ] {
        let _ = writeln!(r, "## {title}\n");
        let _ = writeln!(r, "| Ta | {} |", algs.join(" | "));
        let _ = writeln!(r, "|---|{}", "---|".repeat(algs.len()));
        for ta in s.tas() {
            let cells: Vec<String> = algs
                .iter()
                .map(|a| {
                    s.get(a, "", ta, metric)
                        .map_or("–".into(), |v| format!("{v:.2}"))
                })
                .collect();
            let _ = writeln!(r, "| {ta} | {} |", cells.join(" | "));
        }
        r.push('\n');
    }
    let _ = writeln!(r, "## The paper's claims\n");
    for c in claims(s) {
        let _ = writeln!(
            r,
            "- **{}** — {}: {}",
            if c.holds { "holds" } else { "does not hold" },
            c.claim,
            c.evidence
        );
    }
    r
}

pub use super::fb::Claim;

/// Checks the D9.2 claims (Figs. 20–23).
pub fn claims(s: &Summary) -> Vec<Claim> {
    let g = |a: &str, ta: f64, m: &str| s.get(a, "", ta, m).unwrap_or(f64::NAN);
    let tas = s.tas();
    let mut out = Vec::new();

    let mut ev = Vec::new();
    let mut ok = !tas.is_empty();
    for &ta in &tas {
        let worst_cs = CS
            .iter()
            .map(|a| g(a, ta, "missed_pct"))
            .fold(f64::NEG_INFINITY, f64::max);
        let best_other = OTHERS
            .iter()
            .map(|a| g(a, ta, "missed_pct"))
            .fold(f64::INFINITY, f64::min);
        ok &= worst_cs < best_other;
        ev.push(format!(
            "Ta={ta}: worst CS {worst_cs:.1} vs best other {best_other:.1}"
        ));
    }
    out.push(Claim {
        claim: "Fig. 20: every CS variant misses fewer deadlines than BF-easy, both FB and EDF"
            .into(),
        holds: ok,
        evidence: ev.join("; "),
    });

    let mut ev = Vec::new();
    let mut ok = !tas.is_empty();
    for &ta in &tas {
        let d = g("CS_i_p", ta, "missed_pct") - g("CS_ni_p", ta, "missed_pct");
        ok &= d.abs() <= 2.0;
        ev.push(format!("Ta={ta}: Δ = {d:+.2} points"));
    }
    out.push(Claim {
        claim: "Fig. 20: CS_i_p ≈ CS_ni_p, incremental matching loses no quality (≤ 2 points)"
            .into(),
        holds: ok,
        evidence: ev.join("; "),
    });

    let light: Vec<f64> = tas.iter().copied().filter(|t| *t >= 10.0).collect();
    let mut ev = Vec::new();
    let mut ok = !light.is_empty();
    for &ta in &light {
        let v: Vec<f64> = CS
            .iter()
            .map(|a| g(a, ta, "slowdown_no_deadline"))
            .collect();
        let worst = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        ok &= worst <= 1.1;
        ev.push(format!("Ta={ta}: worst CS {worst:.3}"));
    }
    out.push(Claim {
        claim: "Fig. 21: for Ta ≥ 10 the CS slowdown of jobs without deadline is 1 or very close \
                (≤ 1.1)"
            .into(),
        holds: ok,
        evidence: ev.join("; "),
    });

    let mut ev = Vec::new();
    let mut ok = !tas.is_empty();
    for &ta in &tas {
        let worst = CS
            .iter()
            .map(|a| g(a, ta, "machine_pct"))
            .fold(f64::INFINITY, f64::min);
        ok &= worst >= 99.0;
        ev.push(format!("Ta={ta}: lowest CS {worst:.1} %"));
    }
    out.push(Claim {
        claim: "Fig. 22: CS keeps all machines busy (machine usage ≥ 99 %)".into(),
        holds: ok,
        evidence: ev.join("; "),
    });

    let mut ev = Vec::new();
    let mut inc = !tas.is_empty();
    let mut pre = !tas.is_empty();
    for &ta in &tas {
        let t = |a: &str| g(a, ta, "mean_pass_us");
        inc &= t("CS_i_p") < t("CS_ni_p") && t("CS_i_np") < t("CS_ni_np");
        pre &= t("CS_i_p") > t("CS_i_np") && t("CS_ni_p") > t("CS_ni_np");
        ev.push(format!(
            "Ta={ta}: i_p {:.0}, ni_p {:.0}, i_np {:.0}, ni_np {:.0} µs",
            t("CS_i_p"),
            t("CS_ni_p"),
            t("CS_i_np"),
            t("CS_ni_np")
        ));
    }
    let evidence = ev.join("; ");
    out.push(Claim {
        claim: "Fig. 23: the incremental variants plan faster than the non-incremental ones".into(),
        holds: inc,
        evidence: evidence.clone(),
    });
    out.push(Claim {
        claim: "Fig. 23: the preemptive variants plan slower than the non-preemptive ones".into(),
        holds: pre,
        evidence,
    });
    out
}
