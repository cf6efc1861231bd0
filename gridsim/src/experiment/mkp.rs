//! `gridsim experiment mkp`: the greedy knapsack pre-matching of Convergent Scheduling against
//! branch and bound and against the proven optimum (spec `two-level-grid-scheduler.md` D7.3, D9.2
//! MKP set-up, Table 5; D12 #21, #36).
//!
//! Set-up of D9.2: 100 machines, 40 licence types, 1,000 jobs at Ta = 10, licence ratio ranges
//! [40–45], [45–50], [50–55], [55–60] %. The seed does not say how its MKP instances were cut from
//! the run; our reading: the stream is cut into instances of 200 consecutive jobs (enough demand
//! for the licences to be critical: about 36 copies each against 40 requests), each a knapsack over the cluster's pools whose item value is the number of licences
//! the job uses, so that the objective is the licence usage Table 5 reports. Reported per instance:
//! licence usage (copies used / copies the instance could use) of the greedy (with re-admission)
//! and of our node-limited branch and bound, and each solver's time (Table 5's columns).
//!
//! Our branch and bound stops after a node budget, so its plan is not always optimal. Each
//! instance is therefore also solved by a general MILP solver ([`milp`], a maintained library)
//! under a node budget; on the instances it proves optimal the greedy's and our branch and
//! bound's gaps to that optimum are exact, and the run fails if either exceeds it or if the two
//! exact solvers, both proving optimality, disagree.

pub mod milp;

use super::{Experiment, Figure, Metrics, Options, RunKey, Summary, lookup, output::Row, verdict};
use anyhow::{Result, anyhow, bail};
use gridsched_core::convergent::knapsack::{Item, branch_and_bound_proved, greedy, value};
use gridsched_workload::seed_setups::SetupParams;
use std::fmt::Write as _;
use std::time::Instant;

/// The licence-ratio ranges of Table 5.
pub const RATIOS: [(&str, (f64, f64)); 4] = [
    ("[40-45]", (0.40, 0.45)),
    ("[45-50]", (0.45, 0.50)),
    ("[50-55]", (0.50, 0.55)),
    ("[55-60]", (0.55, 0.60)),
];

/// Table 5 (B&B time ms, Sml, Avg, Bst; MKP time ms, Sml, Avg, Bst), rows as reconstructed in D9.2.
pub const TABLE5: [[f64; 8]; 4] = [
    [496.53, 0.57, 0.87, 1.00, 11.23, 0.54, 0.82, 1.00],
    [353.51, 0.62, 0.88, 1.00, 10.40, 0.59, 0.84, 1.00],
    [331.28, 0.64, 0.89, 1.00, 10.10, 0.62, 0.87, 1.00],
    [556.96, 0.64, 0.88, 1.00, 10.42, 0.62, 0.87, 1.00],
];

/// The paper's aggregate claim on Table 5, word for word as D12 #36 states it.
pub const CLAIM: &str = "MKP ≈ 3% below B&B on average, ≈ 97% faster, Best = 1.00 everywhere";

/// Branch-and-bound nodes the MILP solver may solve per instance before it gives up its proof
/// (a node budget, not a time limit, so that which instances are proved does not depend on the
/// machine).
pub const MILP_NODE_LIMIT: u64 = 20_000;

const INSTANCE: usize = 200;

/// The experiment.
#[derive(Debug)]
pub struct MkpExperiment {
    jobs: u64,
    reps: u32,
    seed: u64,
}

impl MkpExperiment {
    /// The full experiment, or with `quick` 200 jobs (one instance) and 2 repetitions.
    pub fn new(opts: &Options) -> MkpExperiment {
        MkpExperiment {
            jobs: if opts.quick { 200 } else { 1_000 },
            reps: opts.reps.unwrap_or(if opts.quick { 2 } else { 20 }),
            seed: opts.seed,
        }
    }
}

/// The knapsack instances of one run: a stream of `jobs` jobs at Ta = 10 on the set-up of the
/// licence `ratio` range, cut into instances of 200 consecutive jobs; with the licence capacities
/// (`u32::MAX` for a licence the cluster has no pool of).
pub fn instances(jobs: u64, ratio: (f64, f64), seed: u64) -> (Vec<Vec<Item>>, Vec<u32>) {
    let setup = SetupParams {
        jobs,
        ..SetupParams::mkp(ratio)
    };
    let platform = setup.platform(seed);
    let stream = setup.jobs(&platform, 10.0, seed);
    let mut caps = vec![u32::MAX; usize::from(setup.licences)];
    for p in &platform.clusters[0].pools {
        caps[p.licence.index()] = p.copies;
    }
    let instances = stream
        .chunks(INSTANCE)
        .map(|chunk| {
            chunk
                .iter()
                .map(|j| Item {
                    value: j.licences.len() as f64,
                    licences: j.licences.iter().map(|l| l.index()).collect(),
                    pinned: false,
                    order: j.id.0,
                })
                .collect()
        })
        .collect();
    (instances, caps)
}

/// The licence copies an instance could use: per licence, the smaller of its demand and its
/// capacity. A feasible plan's licence usage is its value (copies used) over this.
pub fn possible(items: &[Item], caps: &[u32]) -> f64 {
    let mut demand = vec![0u32; caps.len()];
    for it in items {
        for &l in &it.licences {
            demand[l] += 1;
        }
    }
    demand
        .iter()
        .zip(caps)
        .map(|(d, c)| f64::from((*d).min(*c)))
        .sum()
}

/// One instance solved three ways. Values are the knapsack objective (licence copies used).
#[derive(Clone, Debug)]
pub struct Compared {
    /// Copies the instance could use ([`possible`]).
    pub possible: f64,
    /// The greedy's value and seconds.
    pub greedy: (f64, f64),
    /// Our branch and bound's value, whether it proved it optimal, and seconds.
    pub bb: (f64, bool, f64),
    /// The MILP solver's outcome.
    pub milp: milp::MilpOutcome,
}

impl Compared {
    /// The proven optimum, if the MILP solver proved one.
    pub fn optimum(&self) -> Option<f64> {
        self.milp.value.filter(|_| self.milp.proved)
    }
}

/// Solves one instance with the greedy, our branch and bound and the MILP solver (at most
/// `node_limit` nodes); fails if the pinned items do not fit, if a heuristic beats a proven
/// optimum, or if both exact solvers prove optimality with different values.
pub fn compare(items: &[Item], caps: &[u32], node_limit: Option<u64>) -> Result<Compared> {
    let t = Instant::now();
    let g = greedy(items, caps, true);
    let g_time = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let (b, b_exact) =
        branch_and_bound_proved(items, caps).ok_or_else(|| anyhow!("no feasible plan"))?;
    let b_time = t.elapsed().as_secs_f64();
    let m = milp::solve(items, caps, node_limit)?.ok_or_else(|| anyhow!("no feasible plan"))?;
    let c = Compared {
        possible: possible(items, caps),
        greedy: (value(items, &g), g_time),
        bb: (value(items, &b), b_exact, b_time),
        milp: m,
    };
    if let Some(opt) = c.optimum() {
        if c.greedy.0 > opt + 1e-9 || c.bb.0 > opt + 1e-9 {
            bail!(
                "a plan beats the proven optimum {opt}: greedy {}, branch and bound {}",
                c.greedy.0,
                c.bb.0
            );
        }
        if b_exact && (c.bb.0 - opt).abs() > 1e-9 {
            bail!(
                "both exact solvers prove optimality with different values: branch and bound {}, \
                 MILP {opt}",
                c.bb.0
            );
        }
    }
    Ok(c)
}

/// The gap of `v` below `opt`, in % of `opt`.
fn gap(v: f64, opt: f64) -> f64 {
    if opt > 0.0 {
        100.0 * (opt - v) / opt
    } else {
        0.0
    }
}

/// The per-run metrics pooled over every repetition of a range by [`MkpExperiment::finish_summary`]:
/// (pooled name, per-run name, how). Sums are divided by the number of proved instances.
const POOLED: [(&str, &str, Pool); 12] = [
    ("opt_average", "opt_usage_sum", Pool::PerProved),
    ("opt_best", "opt_usage_max", Pool::Max),
    ("opt_mkp_best", "opt_mkp_usage_max", Pool::Max),
    ("opt_mkp_gap_mean", "opt_mkp_gap_sum", Pool::PerProved),
    ("opt_mkp_gap_worst", "opt_mkp_gap_max", Pool::Max),
    ("opt_mkp_at_opt_pct", "opt_mkp_at_opt", Pool::PctOfProved),
    ("opt_bb_gap_mean", "opt_bb_gap_sum", Pool::PerProved),
    ("opt_bb_gap_worst", "opt_bb_gap_max", Pool::Max),
    ("opt_mkp_ms", "opt_mkp_sum_ms", Pool::PerProved),
    ("opt_bb_ms", "opt_bb_sum_ms", Pool::PerProved),
    ("opt_milp_ms", "opt_milp_sum_ms", Pool::PerProved),
    ("milp_nodes_worst", "milp_nodes_max", Pool::MaxAll),
];

#[derive(Clone, Copy, Debug)]
enum Pool {
    PerProved,
    PctOfProved,
    /// The largest per-run value among the runs with a proved instance.
    Max,
    /// The largest per-run value.
    MaxAll,
}

impl Experiment for MkpExperiment {
    fn name(&self) -> &'static str {
        "mkp"
    }

    fn runs(&self) -> Vec<RunKey> {
        let mut v = Vec::new();
        for (variant, _) in RATIOS {
            for rep in 0..self.reps {
                v.push(RunKey {
                    algorithm: "MKP vs B&B".into(),
                    variant: variant.into(),
                    ta: 10.0,
                    rep,
                    seed: self.seed + u64::from(rep),
                });
            }
        }
        v
    }

    fn run(&self, key: &RunKey) -> Result<Metrics> {
        let ratio = *lookup(&RATIOS, &key.variant, "variant")?;
        let (instances, caps) = instances(self.jobs, ratio, key.seed);
        let (mut g_use, mut b_use) = (Vec::new(), Vec::new());
        let (mut g_time, mut b_time, mut m_time) = (0.0, 0.0, 0.0);
        let (mut proved, mut m_proved, mut both) = (0u32, 0u32, 0u32);
        let (mut m_nodes, mut m_nodes_max) = (0u64, 0u64);
        // Over the instances the MILP solver proved: optimum usage, gaps, times.
        let (mut o_use, mut o_use_max, mut o_g_use_max) = (0.0, 0.0f64, 0.0f64);
        let (mut g_gap, mut g_gap_max, mut g_at_opt) = (0.0, 0.0f64, 0u32);
        let (mut b_gap, mut b_gap_max) = (0.0, 0.0f64);
        let (mut o_g_time, mut o_b_time, mut o_m_time) = (0.0, 0.0, 0.0);
        for items in &instances {
            let c = compare(items, &caps, Some(MILP_NODE_LIMIT))?;
            let usage = |v: f64| {
                if c.possible == 0.0 {
                    1.0
                } else {
                    v / c.possible
                }
            };
            g_time += c.greedy.1;
            b_time += c.bb.2;
            m_time += c.milp.seconds;
            m_nodes += c.milp.nodes;
            m_nodes_max = m_nodes_max.max(c.milp.nodes);
            proved += u32::from(c.bb.1);
            g_use.push(usage(c.greedy.0));
            b_use.push(usage(c.bb.0));
            if let Some(opt) = c.optimum() {
                m_proved += 1;
                both += u32::from(c.bb.1);
                o_use += usage(opt);
                o_use_max = o_use_max.max(usage(opt));
                o_g_use_max = o_g_use_max.max(usage(c.greedy.0));
                let (gg, bg) = (gap(c.greedy.0, opt), gap(c.bb.0, opt));
                g_gap += gg;
                g_gap_max = g_gap_max.max(gg);
                g_at_opt += u32::from(c.greedy.0 >= opt - 1e-9);
                b_gap += bg;
                b_gap_max = b_gap_max.max(bg);
                o_g_time += c.greedy.1;
                o_b_time += c.bb.2;
                o_m_time += c.milp.seconds;
            }
        }
        let n = g_use.len().max(1) as f64;
        let stats = |v: &[f64]| {
            (
                v.iter().copied().fold(f64::MAX, f64::min),
                v.iter().sum::<f64>() / n,
                v.iter().copied().fold(0.0f64, f64::max),
            )
        };
        let (gs, ga, gb) = stats(&g_use);
        let (bs, ba, bb) = stats(&b_use);
        Ok(vec![
            ("bb_ms", 1e3 * b_time / n),
            ("bb_smallest", bs),
            ("bb_average", ba),
            ("bb_best", bb),
            ("mkp_ms", 1e3 * g_time / n),
            ("mkp_smallest", gs),
            ("mkp_average", ga),
            ("mkp_best", gb),
            ("bb_proved_pct", 100.0 * f64::from(proved) / n),
            ("instances", n),
            ("milp_ms", 1e3 * m_time / n),
            ("milp_nodes", m_nodes as f64 / n),
            ("milp_nodes_max", m_nodes_max as f64),
            ("milp_proved_pct", 100.0 * f64::from(m_proved) / n),
            ("opt_proved", f64::from(m_proved)),
            ("opt_both_proved", f64::from(both)),
            ("opt_usage_sum", o_use),
            ("opt_usage_max", o_use_max),
            ("opt_mkp_usage_max", o_g_use_max),
            ("opt_mkp_gap_sum", g_gap),
            ("opt_mkp_gap_max", g_gap_max),
            ("opt_mkp_at_opt", f64::from(g_at_opt)),
            ("opt_bb_gap_sum", b_gap),
            ("opt_bb_gap_max", b_gap_max),
            ("opt_mkp_sum_ms", 1e3 * o_g_time),
            ("opt_bb_sum_ms", 1e3 * o_b_time),
            ("opt_milp_sum_ms", 1e3 * o_m_time),
        ])
    }

    fn figures(&self) -> Vec<Figure> {
        Vec::new()
    }

    /// Pools the figures over the proved instances of every repetition of a range (the plain
    /// mean of per-run means would weigh a run with one proved instance like one with five, and a
    /// mean of per-run maxima is no worst case): adds the [`POOLED`] names and the totals
    /// `opt_instances`, `opt_proved_total` and `opt_both_total`.
    fn finish_summary(&self, rows: &[Row], summary: &mut Summary) {
        for row in &mut summary.rows {
            let runs: Vec<&Vec<(String, f64)>> = rows
                .iter()
                .filter(|(k, _)| {
                    k.algorithm == row.algorithm && k.variant == row.variant && k.ta == row.ta
                })
                .map(|(_, m)| m)
                .collect();
            let get = |m: &[(String, f64)], name: &str| {
                m.iter().find(|(n, _)| n == name).map_or(0.0, |(_, v)| *v)
            };
            let total = |name: &str| runs.iter().map(|m| get(m, name)).sum::<f64>();
            let proved = total("opt_proved");
            for (pooled, name, how) in POOLED {
                let v = match how {
                    Pool::PerProved => total(name) / proved,
                    Pool::PctOfProved => 100.0 * total(name) / proved,
                    Pool::Max => runs
                        .iter()
                        .filter(|m| get(m, "opt_proved") > 0.0)
                        .map(|m| get(m, name))
                        .fold(f64::NAN, f64::max),
                    Pool::MaxAll => runs.iter().map(|m| get(m, name)).fold(f64::NAN, f64::max),
                };
                row.mean.insert(pooled.to_string(), v);
            }
            row.mean.insert("opt_instances".into(), total("instances"));
            row.mean.insert("opt_proved_total".into(), proved);
            row.mean
                .insert("opt_both_total".into(), total("opt_both_proved"));
        }
    }

    fn report(&self, s: &Summary) -> String {
        let mut r = String::new();
        let get = |variant: &str, metric: &str| s.get("MKP vs B&B", variant, 10.0, metric);
        let cell = |variant: &str, metric: &str, digits: usize| {
            get(variant, metric)
                .filter(|v| v.is_finite())
                .map_or("–".into(), |v| format!("{v:.digits$}"))
        };
        let _ = writeln!(
            r,
            "# Experiment `mkp`: greedy knapsack vs branch and bound (D9.2, Table 5)\n"
        );
        let _ = writeln!(
            r,
            "{} jobs per stream cut into instances of {INSTANCE} jobs, {} repetitions; licence usage \
             = copies used / copies the instance could use. Times are per instance (wall clock).\n",
            self.jobs, self.reps
        );
        let _ = writeln!(
            r,
            "| ratio | source | B&B ms | B&B Sml | B&B Avg | B&B Bst | MKP ms | MKP Sml | MKP Avg | MKP Bst |"
        );
        let _ = writeln!(r, "|---|---|---|---|---|---|---|---|---|---|");
        let keys = [
            "bb_ms",
            "bb_smallest",
            "bb_average",
            "bb_best",
            "mkp_ms",
            "mkp_smallest",
            "mkp_average",
            "mkp_best",
        ];
        let mut gaps = Vec::new();
        for (i, (variant, _)) in RATIOS.iter().enumerate() {
            let paper: Vec<String> = TABLE5[i].iter().map(|v| format!("{v:.2}")).collect();
            let _ = writeln!(r, "| {variant} | paper | {} |", paper.join(" | "));
            let ours: Vec<String> = keys.iter().map(|k| cell(variant, k, 3)).collect();
            let _ = writeln!(r, "| {variant} | ours | {} |", ours.join(" | "));
            if let (Some(b), Some(g)) = (get(variant, "bb_average"), get(variant, "mkp_average")) {
                gaps.push(100.0 * (b - g) / b);
            }
        }
        let mean_gap = gaps.iter().sum::<f64>() / gaps.len().max(1) as f64;
        let _ = writeln!(
            r,
            "\n- **{}** — the greedy MKP stays within a few percent of branch and bound on average (paper: ≈ 3 %): {mean_gap:.2} %",
            verdict(mean_gap <= 5.0)
        );
        let proved: Vec<String> = RATIOS
            .iter()
            .map(|(v, _)| format!("{v}: {} %", cell(v, "bb_proved_pct", 0)))
            .collect();
        let _ = writeln!(
            r,
            "- Branch and bound proved its plan optimal within {} nodes on: {} of the instances \
             (elsewhere it returns its best plan so far, which the greedy can beat — a negative gap).",
            gridsched_core::convergent::knapsack::NODE_LIMIT,
            proved.join(", ")
        );
        self.report_optimum(s, &mut r);
        r
    }
}

impl MkpExperiment {
    /// The section against the proven optimum of the MILP solver.
    fn report_optimum(&self, s: &Summary, r: &mut String) {
        let get = |variant: &str, metric: &str| {
            s.get("MKP vs B&B", variant, 10.0, metric)
                .filter(|v| v.is_finite())
        };
        let cell = |variant: &str, metric: &str, digits: usize| {
            get(variant, metric).map_or("–".into(), |v| format!("{v:.digits$}"))
        };
        let _ = writeln!(r, "\n## Against the proven optimum (MILP)\n");
        let _ = writeln!(
            r,
            "Every instance is also solved by the `microlp` MILP solver (binary x_i per job, one \
             row Σ x_i ≤ copies per over-asked licence, max Σ licences_i · x_i — the same objective \
             as the usage above) with at most {MILP_NODE_LIMIT} branch-and-bound nodes. Gaps are \
             (optimum − plan) / optimum over the instances it proved optimal, pooled over the \
             repetitions; times (ms per instance) are over those instances too. On every instance \
             that both exact solvers proved, their values are equal (checked in each run).\n"
        );
        let _ = writeln!(
            r,
            "| ratio | instances | MILP proved % | B&B proved % | both proved | optimum Avg | \
             optimum Bst | MKP gap mean % | MKP gap worst % | MKP = optimum % | B&B gap mean % | \
             B&B gap worst % | MKP ms | B&B ms | MILP ms | MILP ms (all) | MILP nodes (all) | MILP nodes \
             (largest) |"
        );
        let _ = writeln!(
            r,
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        );
        for (variant, _) in RATIOS {
            let cells = [
                cell(variant, "opt_instances", 0),
                cell(variant, "milp_proved_pct", 0),
                cell(variant, "bb_proved_pct", 0),
                cell(variant, "opt_both_total", 0),
                cell(variant, "opt_average", 3),
                cell(variant, "opt_best", 3),
                cell(variant, "opt_mkp_gap_mean", 2),
                cell(variant, "opt_mkp_gap_worst", 2),
                cell(variant, "opt_mkp_at_opt_pct", 0),
                cell(variant, "opt_bb_gap_mean", 2),
                cell(variant, "opt_bb_gap_worst", 2),
                cell(variant, "opt_mkp_ms", 3),
                cell(variant, "opt_bb_ms", 1),
                cell(variant, "opt_milp_ms", 1),
                cell(variant, "milp_ms", 1),
                cell(variant, "milp_nodes", 0),
                cell(variant, "milp_nodes_worst", 0),
            ];
            let _ = writeln!(r, "| {variant} | {} |", cells.join(" | "));
        }
        // The claim, judged on the proved instances of every range pooled.
        let (mut proved, mut gap_sum, mut worst) = (0.0, 0.0, 0.0f64);
        let (mut g_ms, mut m_ms, mut b_ms) = (0.0, 0.0, 0.0);
        let mut best: Vec<String> = Vec::new();
        let mut best_ok = true;
        let mut opt_below_one = 0;
        for (variant, _) in RATIOS {
            let n = get(variant, "opt_proved_total").unwrap_or(0.0);
            if n > 0.0 {
                proved += n;
                gap_sum += n * get(variant, "opt_mkp_gap_mean").unwrap_or(0.0);
                worst = worst.max(get(variant, "opt_mkp_gap_worst").unwrap_or(0.0));
                g_ms += n * get(variant, "opt_mkp_ms").unwrap_or(0.0);
                m_ms += n * get(variant, "opt_milp_ms").unwrap_or(0.0);
                b_ms += n * get(variant, "opt_bb_ms").unwrap_or(0.0);
                let mb = get(variant, "opt_mkp_best").unwrap_or(0.0);
                opt_below_one += u32::from(get(variant, "opt_best").unwrap_or(0.0) < 0.995);
                best_ok &= mb >= 0.995;
                best.push(format!(
                    "{variant}: {mb:.3} (optimum {})",
                    cell(variant, "opt_best", 3)
                ));
            } else {
                best_ok = false;
                best.push(format!("{variant}: no proved instance"));
            }
        }
        let total: f64 = RATIOS
            .iter()
            .map(|(v, _)| get(v, "opt_instances").unwrap_or(0.0))
            .sum();
        let _ = writeln!(
            r,
            "\nThe paper's claim (D12 #36): \"{CLAIM}\". Judged against the proven optimum on the \
             {proved:.0} of {total:.0} instances the MILP solver proved ({:.0} %), all ranges \
             pooled{}:\n",
            100.0 * proved / total.max(1.0),
            if proved < total {
                " (the proved instances are the easier ones, so this is the greedy's gap where an \
                 optimum is known, not on every instance)"
            } else {
                ""
            }
        );
        if proved > 0.0 {
            let mean = gap_sum / proved;
            let saved_milp = 100.0 * (1.0 - g_ms / m_ms);
            let saved_bb = 100.0 * (1.0 - g_ms / b_ms);
            let _ = writeln!(
                r,
                "- **{}** — MKP ≈ 3% below the optimum on average (read: at most 3 % plus 2 points \
                 of noise, D12 #38): {mean:.2} % below on average, {worst:.2} % at worst",
                verdict(mean <= 5.0)
            );
            let _ = writeln!(
                r,
                "- **{}** — ≈ 97% faster than the exact solver (read: at least 95 % of its time \
                 saved): {saved_milp:.2} % of the MILP solver's time saved, {saved_bb:.2} % of our \
                 branch and bound's, on the proved instances",
                verdict(saved_milp >= 95.0)
            );
            let _ = writeln!(
                r,
                "- **{}** — Best = 1.00 everywhere (the greedy's best licence usage on the proved \
                 instances of each range rounds to 1.00): {}{}",
                verdict(best_ok),
                best.join(", "),
                if opt_below_one > 0 {
                    format!(
                        "; the optimum itself stays below 1.00 in {opt_below_one} range(s), where \
                         no plan can reach it"
                    )
                } else {
                    String::new()
                }
            );
        } else {
            let _ = writeln!(
                r,
                "- No instance was proved optimal: the claim cannot be judged against an optimum."
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On generated instances of the experiment: the MILP solver proves every one within its node
    /// budget; neither the greedy nor our branch and bound exceeds that optimum; where our branch
    /// and bound proves its plan optimal it has the MILP solver's value; and the greedy is below
    /// the optimum somewhere (the comparison is not trivial).
    #[test]
    fn the_milp_optimum_bounds_both_plans_and_equals_branch_and_bound_where_both_prove() {
        let (mut both, mut greedy_below, mut n) = (0, 0, 0);
        for (ratio, jobs, seeds) in [((0.55, 0.60), 1_000, 1..=2), ((0.40, 0.45), 400, 1..=1)] {
            for seed in seeds {
                let (instances, caps) = instances(jobs, ratio, seed);
                for items in &instances {
                    let c = compare(items, &caps, Some(MILP_NODE_LIMIT)).unwrap();
                    n += 1;
                    let opt = c.optimum().expect("proved within the node budget");
                    assert!(c.greedy.0 <= opt && c.bb.0 <= opt, "{c:?}");
                    assert!(opt <= c.possible, "{c:?}");
                    if c.bb.1 {
                        assert_eq!(c.bb.0, opt, "{c:?}");
                        both += 1;
                    }
                    greedy_below += u32::from(c.greedy.0 < opt);
                }
            }
        }
        assert_eq!(n, 12);
        assert!(both >= 3, "both exact solvers prove {both} instances");
        assert!(
            greedy_below >= 2,
            "the greedy is below the optimum on {greedy_below}"
        );
    }
}
