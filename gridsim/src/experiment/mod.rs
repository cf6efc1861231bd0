//! The experiment framework of `gridsim experiment <name>`: an experiment is a list of runs
//! (algorithm × variant × inter-arrival time × repetition), executed in parallel over the cores
//! with a progress bar, then written to `--out DIR` as `runs.csv` (one row per run, every metric),
//! `summary.json` (means per algorithm, variant and inter-arrival time), one SVG plot per figure of
//! the paper and `report.md` (our numbers beside the published ones, and a verdict per published
//! claim). Results are independent of the number of threads: each run has its own seed and is
//! stored at its index (spec `two-level-grid-scheduler.md` D8, D9).
//!
//! * [`runner`]: parallel execution.
//! * [`output`]: CSV, JSON and the summary.
//! * [`plot`]: SVG line charts (plotters, SVG backend, no system fonts).
//! * [`cs`]: D9.2 Convergent Scheduling on one cluster (Figs. 19–23).
//! * [`adh`]: thesis §5.1.5, the self-optimizing Deadline classification (Figs. 34–38).
//! * [`mkp`]: D9.2 greedy knapsack pre-matching against branch and bound (Table 5).
//! * [`fb`]: D9.1 Flexible Backfilling on one cluster (Figs. 16–18, Tables 2–3).
//! * [`multisite`]: the multi-site grid study (`self-tuning-and-multisite.md` §6).
//! * [`constraints`]: its constrained scheduler over the thesis's lower bounds and fragment
//!   limits (§6.4, §6.10).
//! * [`two_level`], [`ms_fb`], [`ms_cs`]: D9.3 and D9.4, the meta-scheduler above four clusters;
//!   [`shares`]: their load shares against the optimal and capacity shares.
//! * [`dynp`]: the self-tuning dynP scheduler against FCFS, SJF and LJF planning
//!   (`self-tuning-and-multisite.md` §4).
//! * [`quoted`]: published claims quoted, judged as printed and in our readings, side by side.
//! * [`eg_edf`]: D10.2, the schedule-based EG-EDF and Tabu search of Klusáček & Rudová against
//!   FCFS and backfilling (thesis §5.2.3, Figs. 39–40).
//! * [`gang`]: BF, GS, BGS, MGS and MBGS on one 320-processor machine over nine loads (Zhang et
//!   al., §6.3–§6.6; `gang-urgent-scaling.md` A.11, A.14).
//! * [`lcg`]: every dispatch strategy on the LCG grid trace (D4, `gang-urgent-scaling.md` B.4).
//! * [`urgent`]: urgent jobs in a two-level grid, the local urgent policies and the urgent
//!   brokers (`gang-urgent-scaling.md` Part B).
//! * [`data`]: data-aware dispatch (MCT, Min-Min, HEFT counting the inputs' transfers) against
//!   the same strategies blind to them, inputs moved over shared links.
//! * [`fairshare`]: the seeds' classifier and fair share (Slurm's classic factor, Fair Tree, a
//!   dominant-resource share) against FCFS and EASY over the shared traces' users.
//! * [`workflows`]: HEFT against the independent-job strategies on streams of synthetic
//!   scientific workflows (Topcuoglu et al. 2002, §4.1).

pub mod adh;
pub mod constraints;
pub mod cs;
pub mod cs_findings;
pub mod cs_variants;
pub mod data;
pub mod dynp;
pub mod dynp_syn;
pub mod eg_edf;
pub mod fairshare;
pub mod fb;
pub mod gang;
pub mod intervals;
pub mod lcg;
pub mod mkp;
pub mod ms_cs;
pub mod ms_fb;
pub mod multisite;
pub mod output;
pub mod per_cluster;
pub mod plot;
pub mod quoted;
pub mod runner;
pub mod shares;
pub mod two_level;
pub mod urgent;
pub mod workflows;

use anyhow::Result;
use serde::Serialize;
use std::collections::BTreeMap;

/// One run of an experiment.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunKey {
    /// Algorithm name.
    pub algorithm: String,
    /// A set-up variant (e.g. a licence ratio range), or empty.
    pub variant: String,
    /// Mean inter-arrival time.
    pub ta: f64,
    /// Repetition number (0-based).
    pub rep: u32,
    /// The seed of its platform and workload.
    pub seed: u64,
}

/// The metrics of one run, by name, in a fixed order.
pub type Metrics = Vec<(&'static str, f64)>;

/// A finished run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunResult {
    /// Which run.
    pub key: RunKey,
    /// Its metrics.
    pub metrics: Metrics,
}

/// One figure: a metric against the x value of the runs (the inter-arrival time, or the overhead).
#[derive(Clone, Debug)]
pub struct Figure {
    /// File name without extension (`fig16-deadline-misses`).
    pub file: String,
    /// Title.
    pub title: String,
    /// The metric plotted.
    pub metric: &'static str,
    /// Y axis label.
    pub y_label: &'static str,
    /// X axis label.
    pub x_label: &'static str,
    /// The lines.
    pub series: Series,
}

/// Which rows make the lines of a figure. A line with a single point (a configuration that does
/// not depend on x) is drawn as a horizontal line across the figure.
#[derive(Clone, Debug)]
pub enum Series {
    /// One line per algorithm, for one variant.
    Algorithms(String),
    /// One line per variant, for one algorithm.
    Variants(String, Vec<String>),
}

/// Common options of every experiment.
#[derive(Clone, Debug)]
pub struct Options {
    /// Reduced sizes for tests.
    pub quick: bool,
    /// Repetitions (default: the paper's 20, 2 with `quick`).
    pub reps: Option<u32>,
    /// Base seed.
    pub seed: u64,
    /// Jobs per workload, for the experiments that take it (`gang`); `None`: the default.
    pub jobs: Option<usize>,
}

/// An experiment.
pub trait Experiment: Sync {
    /// Its name (`fb`).
    fn name(&self) -> &'static str;
    /// The runs, in a fixed order.
    fn runs(&self) -> Vec<RunKey>;
    /// Executes one run.
    fn run(&self, key: &RunKey) -> Result<Metrics>;
    /// The figures to plot.
    fn figures(&self) -> Vec<Figure>;
    /// The report (Markdown) from the summary.
    fn report(&self, summary: &Summary) -> String;
    /// Rewrites the summary from the stored runs before it is written (default: nothing), e.g.
    /// to replace plain means over repetitions by trimmed means or to add derived figures.
    fn finish_summary(&self, _rows: &[output::Row], _summary: &mut Summary) {}
}

/// The mean of `v` without its lowest and highest value when it has at least three (the
/// thesis' "trimmed mean of 8" out of 10 sets, Streit §5.2), else the plain mean.
pub fn trimmed_mean(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let kept = if v.len() >= 3 {
        &v[1..v.len() - 1]
    } else {
        &v[..]
    };
    kept.iter().sum::<f64>() / kept.len().max(1) as f64
}

/// The word of a claim's verdict in the reports.
pub fn verdict(holds: bool) -> &'static str {
    if holds { "holds" } else { "does not hold" }
}

/// The value named `name` in a table of (name, value) pairs, or an error naming `what`.
pub fn lookup<'a, T>(table: &'a [(&str, T)], name: &str, what: &str) -> Result<&'a T> {
    table
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v)
        .ok_or_else(|| anyhow::anyhow!("unknown {what} `{name}`"))
}

/// Mean metrics per (algorithm, variant, inter-arrival time).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    /// Experiment name.
    pub experiment: String,
    /// Rows.
    pub rows: Vec<SummaryRow>,
    /// Derived figures by name, if the experiment adds any ([`Experiment::finish_summary`]).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, f64>,
}

/// One row of the summary.
#[derive(Clone, Debug, Serialize)]
pub struct SummaryRow {
    /// Algorithm.
    pub algorithm: String,
    /// Variant.
    pub variant: String,
    /// Mean inter-arrival time.
    pub ta: f64,
    /// Repetitions averaged.
    pub runs: u32,
    /// Mean of each metric.
    pub mean: BTreeMap<String, f64>,
}

impl Summary {
    /// Averages the results over repetitions, keeping the runs' order of first appearance.
    pub fn of(experiment: &str, results: &[RunResult]) -> Summary {
        Summary::of_rows(
            experiment,
            results
                .iter()
                .map(|r| (&r.key, r.metrics.iter().map(|(n, v)| (*n, *v)))),
        )
    }

    /// [`Summary::of`] for rows with metric names of any lifetime (e.g. read back from a
    /// `runs.csv`).
    pub fn of_rows<'a, M>(
        experiment: &str,
        rows: impl IntoIterator<Item = (&'a RunKey, M)>,
    ) -> Summary
    where
        M: IntoIterator<Item = (&'a str, f64)>,
    {
        let mut out: Vec<SummaryRow> = Vec::new();
        for (k, metrics) in rows {
            let pos = out
                .iter()
                .position(|x| x.algorithm == k.algorithm && x.variant == k.variant && x.ta == k.ta);
            let row = match pos {
                Some(i) => &mut out[i],
                None => {
                    out.push(SummaryRow {
                        algorithm: k.algorithm.clone(),
                        variant: k.variant.clone(),
                        ta: k.ta,
                        runs: 0,
                        mean: BTreeMap::new(),
                    });
                    out.last_mut().expect("just pushed")
                }
            };
            row.runs += 1;
            for (name, v) in metrics {
                *row.mean.entry(name.to_string()).or_insert(0.0) += v;
            }
        }
        for row in &mut out {
            for v in row.mean.values_mut() {
                *v /= f64::from(row.runs);
            }
        }
        Summary {
            experiment: experiment.to_string(),
            rows: out,
            extra: BTreeMap::new(),
        }
    }

    /// The mean of `metric` for an algorithm, variant and inter-arrival time.
    pub fn get(&self, algorithm: &str, variant: &str, ta: f64, metric: &str) -> Option<f64> {
        self.rows
            .iter()
            .find(|r| r.algorithm == algorithm && r.variant == variant && r.ta == ta)
            .and_then(|r| r.mean.get(metric).copied())
    }

    /// A Markdown table of `metric`: one row per x value (headed `x`), one column per algorithm,
    /// for `variant`; missing cells are `–`.
    pub fn table(&self, x: &str, algs: &[&str], variant: &str, metric: &str) -> String {
        let cols: Vec<(&str, &str, &str)> = algs.iter().map(|a| (*a, *a, variant)).collect();
        self.table_of(x, &cols, metric)
    }

    /// A Markdown table of `metric`: one row per x value (headed `x`), one column per
    /// (heading, algorithm, variant); missing cells are `–`.
    pub fn table_of(&self, x: &str, cols: &[(&str, &str, &str)], metric: &str) -> String {
        let names: Vec<&str> = cols.iter().map(|c| c.0).collect();
        let mut t = format!(
            "| {x} | {} |\n|---|{}\n",
            names.join(" | "),
            "---|".repeat(cols.len())
        );
        for ta in self.tas() {
            let cells: Vec<String> = cols
                .iter()
                .map(|(_, a, v)| {
                    self.get(a, v, ta, metric)
                        .map_or("–".into(), |v| format!("{v:.2}"))
                })
                .collect();
            t.push_str(&format!("| {ta} | {} |\n", cells.join(" | ")));
        }
        t
    }

    /// The inter-arrival times present, ascending.
    pub fn tas(&self) -> Vec<f64> {
        let mut v: Vec<f64> = self.rows.iter().map(|r| r.ta).collect();
        v.sort_by(f64::total_cmp);
        v.dedup();
        v
    }

    /// The algorithms present, in order of first appearance.
    pub fn algorithms(&self) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for r in &self.rows {
            if !v.contains(&r.algorithm) {
                v.push(r.algorithm.clone());
            }
        }
        v
    }
}

#[cfg(test)]
mod trimmed_tests {
    use super::trimmed_mean;

    #[test]
    fn the_trimmed_mean_drops_the_extremes_from_three_values_on() {
        assert_eq!(trimmed_mean(&[10.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(trimmed_mean(&[5.0, 1.0, 100.0]), 5.0);
        assert_eq!(trimmed_mean(&[5.0, 1.0]), 3.0);
        assert_eq!(trimmed_mean(&[4.0]), 4.0);
    }
}
