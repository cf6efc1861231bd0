//! `gridsim experiment cs`: Convergent Scheduling on one cluster (spec
//! `two-level-grid-scheduler.md` D9.2; generator Table 4; metrics D8.1; readings D12 #17, #18,
//! #31).
//!
//! The four CS variants (constants of D7.5), EASY backfilling (BF-easy), the two Flexible
//! Backfilling variants with the CS constants (D12 #31) and EDF on 150 machines without space
//! sharing, 20 licence types, 1,500 jobs (30 % without deadline), Ta ∈ {4, 6, 8, 10, 12, 16, 20},
//! 20 repetitions (common random numbers across algorithms). The CS runs dominate the cost
//! (seconds each): `--reps` trades precision for time.

use super::cs_findings;
use super::fb::single_cluster_metrics;
use super::{Experiment, Figure, Metrics, Options, RunKey, Series, Summary, lookup, verdict};
use anyhow::Result;
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
    ("BF-easy", PolicyKind::Easy),
    ("FB_UNMOD", PolicyKind::FbUnmod),
    ("FB_MOD", PolicyKind::FbMod),
    ("EDF", PolicyKind::Edf),
];

/// The experiment.
#[derive(Debug)]
pub struct CsExperiment {
    setup: SetupParams,
    reps: u32,
    seed: u64,
}

impl CsExperiment {
    /// The full experiment, or with `quick` 120 jobs, Ta ∈ {4, 12}, 2 repetitions.
    pub fn new(opts: &Options) -> CsExperiment {
        let mut setup = SetupParams::table4();
        if opts.quick {
            setup.jobs = 120;
            setup.inter_arrivals = vec![4.0, 12.0];
        }
        CsExperiment {
            setup,
            reps: opts.reps.unwrap_or(if opts.quick { 2 } else { 20 }),
            seed: opts.seed,
        }
    }
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
                        algorithm: alg.into(),
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
        let kind = *lookup(&ALGORITHMS, &key.algorithm, "algorithm")?;
        let platform = self.setup.platform(key.seed);
        let jobs = self.setup.jobs(&platform, key.ta, key.seed);
        let cfg = PolicyConfig {
            heuristics: HeuristicParams::CS,
            ..PolicyConfig::new(kind)
        };
        single_cluster_metrics(&platform, cfg, jobs)
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
                "fig19-wait",
                "Fig. 19 (proxy: the backlog as mean wait)",
                "mean_wait",
                "mean wait (s)",
            ),
            fig(
                "fig20-deadline-misses",
                "Fig. 20: jobs missing their deadline",
                "missed_pct",
                "% of jobs with a deadline",
            ),
            fig(
                "fig21-slowdown",
                "Fig. 21: slowdown of jobs without deadline",
                "slowdown_no_deadline",
                "slowdown",
            ),
            fig(
                "fig22-machine-usage",
                "Fig. 22: machine usage",
                "machine_pct",
                "% busy machines / min(machines, jobs)",
            ),
            fig(
                "fig23-scheduling-time",
                "Fig. 23: scheduling time per plan",
                "mean_pass_us",
                "µs per pass",
            ),
        ]
    }

    fn report(&self, s: &Summary) -> String {
        let mut r = String::new();
        let _ = writeln!(
            r,
            "# Experiment `cs`: Convergent Scheduling on one cluster (D9.2)\n"
        );
        let _ = writeln!(
            r,
            "Set-up: {} machines (no space sharing), {} licence types, {} jobs per stream, Ta ∈ {:?}, \
             {} repetitions (seeds {}..{}). CS constants of D7.5 (late machines: fixed reading of \
             D12 #17), FB with the CS constants (D12 #31).\n",
            self.setup.clusters[0],
            self.setup.licences,
            self.setup.jobs,
            self.setup.inter_arrivals,
            self.reps,
            self.seed,
            self.seed + u64::from(self.reps) - 1
        );
        let algs: Vec<&str> = ALGORITHMS.iter().map(|(n, _)| *n).collect();
        for (metric, title) in [
            ("missed_pct", "Fig. 20 — % jobs missing their deadline"),
            (
                "slowdown_no_deadline",
                "Fig. 21 — slowdown of jobs without deadline",
            ),
            ("machine_pct", "Fig. 22 — % machine usage"),
            (
                "suspensions_per_job",
                "Preemptions — suspensions per job (the `_p` variants suspend, D7.5)",
            ),
            (
                "mean_pass_us",
                "Fig. 23 — mean scheduling time per plan, µs (wall clock)",
            ),
        ] {
            let _ = writeln!(r, "## {title}\n");
            r.push_str(&s.table("Ta", &algs, "", metric));
            r.push('\n');
        }
        let _ = writeln!(r, "## The paper's claims\n");
        let g = |a: &str, ta: f64, m: &str| s.get(a, "", ta, m).unwrap_or(f64::NAN);
        let cs = ["CS_i_p", "CS_i_np", "CS_ni_p", "CS_ni_np"];
        let others = ["BF-easy", "FB_UNMOD", "FB_MOD", "EDF"];
        let mut ok = true;
        let mut ev = Vec::new();
        for ta in s.tas() {
            let worst_cs = cs
                .iter()
                .map(|a| g(a, ta, "missed_pct"))
                .fold(f64::MIN, f64::max);
            let best_other = others
                .iter()
                .map(|a| g(a, ta, "missed_pct"))
                .fold(f64::MAX, f64::min);
            ok &= worst_cs < best_other;
            ev.push(format!(
                "Ta={ta}: worst CS {worst_cs:.1} vs best other {best_other:.1}"
            ));
        }
        let _ = writeln!(
            r,
            "- **{}** — every CS variant misses fewer deadlines than the backfilling algorithms and EDF: {}",
            verdict(ok),
            ev.join("; ")
        );
        let mut ok = true;
        let mut ev = Vec::new();
        for ta in s.tas() {
            let d = g("CS_i_p", ta, "missed_pct") - g("CS_ni_p", ta, "missed_pct");
            ok &= d.abs() <= 2.0;
            ev.push(format!("Ta={ta}: {d:+.2}"));
        }
        let _ = writeln!(
            r,
            "- **{}** — incremental matching loses no quality (CS_i_p ≈ CS_ni_p within 2 points): {}",
            verdict(ok),
            ev.join("; ")
        );
        let mut ok = true;
        let mut ev = Vec::new();
        for ta in s.tas() {
            let (i, n) = (
                g("CS_i_p", ta, "mean_pass_us"),
                g("CS_ni_p", ta, "mean_pass_us"),
            );
            ok &= i < n;
            ev.push(format!("Ta={ta}: {i:.0} vs {n:.0} µs"));
        }
        let _ = writeln!(
            r,
            "- **{}** — incremental matching is faster than non-incremental (CS_i_p vs CS_ni_p): {}",
            verdict(ok),
            ev.join("; ")
        );
        let mut ok = true;
        let mut ev = Vec::new();
        for ta in s.tas() {
            let cs_use = cs
                .iter()
                .map(|a| g(a, ta, "machine_pct"))
                .fold(f64::MAX, f64::min);
            ok &= cs_use >= 95.0;
            ev.push(format!("Ta={ta}: {cs_use:.1} %"));
        }
        let _ = writeln!(
            r,
            "- **{}** — CS keeps the machines busy (every variant ≥ 95 % machine usage): {}",
            verdict(ok),
            ev.join("; ")
        );
        let mut ok = true;
        let mut ev = Vec::new();
        for ta in s.tas().into_iter().filter(|ta| *ta >= 10.0) {
            let worst = cs
                .iter()
                .map(|a| g(a, ta, "slowdown_no_deadline"))
                .fold(f64::MIN, f64::max);
            ok &= worst <= 1.25;
            ev.push(format!("Ta={ta}: worst CS {worst:.2}"));
        }
        let _ = writeln!(
            r,
            "- **{}** — for Ta ≥ 10 the slowdown of jobs without deadline is 1 or very close (every CS variant ≤ 1.25): {}\n",
            verdict(ok),
            ev.join("; ")
        );
        let hopeless: Vec<(f64, f64)> = s
            .tas()
            .into_iter()
            .map(|ta| {
                let seeds = (0..self.reps).map(|k| self.seed + u64::from(k));
                (ta, cs_findings::hopeless_pct(&self.setup, ta, seeds))
            })
            .collect();
        r.push_str(&cs_findings::section(s, &hopeless));
        r
    }
}
