//! `gridsim experiment workflows`: HEFT (Topcuoglu, Hariri and Wu, 2002, IEEE TPDS 13(3), §4.1;
//! [`gridsched_core::dispatch::Heft`]) against the strategies that place each job on its own —
//! `load-ordering` (D4.2), `min-completion` (MCT, `gang-urgent-scaling.md` B.4) and the
//! batch-mode heuristics `min-min`, `max-min` and `sufferage` (Braun et al., 2001) — on streams of
//! synthetic scientific workflows ([`shapes`]).
//!
//! **Grid** (the grid's reading: heterogeneous in size and speed): four sites of one space-shared
//! machine each, [`SITES`]: 48 processors of benchmark 50, 24 of 100, 8 of 250 and 16 of 150 —
//! 184 processors of the reference machine in all. The tasks' run times are given for the
//! slowest site's machine (benchmark 50, [`shapes::REFERENCE_BENCHMARK`]), so a task runs at its
//! run time there and faster elsewhere: the local policies free a job's processors at its start
//! plus its estimate as given, and a job scaled to a slower machine than its own would still
//! hold them (the engine stops such a run with an error). EASY backfilling at every site; every
//! job of priority 1 (no classifier).
//!
//! **Workloads**: per run, [`WORKFLOWS`] workflows (`--quick`: [`QUICK_WORKFLOWS`]) of one
//! shape (the variant: `montage`, `epigenomics`, `fork-join`, `chain`) or of shapes drawn
//! uniformly (`mixed`), submitted at Poisson arrivals whose mean gap makes the offered load —
//! the workflows' run time on the reference machine over the grid's reference processors and
//! the arrivals' expected span — the x value of the run (0.6 and 0.9; `--quick`: 0.9). The
//! workflows and the uniform draws behind the gaps depend on the seed and the variant only: every
//! strategy, and both loads, see the same workflows (common random numbers). The jobs' stream is
//! empty: all the work comes as workflows.
//!
//! **Metrics** per run: `makespan`, the mean over workflows of their end minus their submission;
//! `slowdown`, the mean over the node jobs of (wait + execution) / execution; `utilization`, the
//! processor-seconds the node jobs ran (every task takes one processor) over the grid's
//! processors times the span from the first submission to the last end, in %; and the counts
//! that show every workflow ended and every node completed. Repetitions ([`REPS`], `--quick` 2)
//! use seeds `seed + rep`; the report gives each mean with its 95 % confidence interval (Student
//! t over the repetitions, [`ci95`]).

pub mod shapes;

#[cfg(test)]
mod tests;

use super::intervals::{self, cell};
use super::output::Row;
use super::{Experiment, Figure, Metrics, Options, RunKey, Series, Summary};
use crate::platform::{
    Classify, GridEvents, Meta, PlatformHooks, PlatformRecord, WorkflowSubmission,
    simulate_platform_with,
};
use anyhow::{Result, anyhow};
use gridsched_core::dispatch::{DispatchConfig, DispatchKind};
use gridsched_core::model::{ClusterId, Job, JobId, Outcome, Platform};
use gridsched_core::policy::{PolicyConfig, PolicyKind};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use shapes::{REFERENCE_BENCHMARK, Shape};
use std::fmt::Write as _;

/// The sites: name, processors, benchmark score.
pub const SITES: [(&str, u32, u32); 4] = [
    ("big-slow", 48, 50),
    ("mid", 24, 100),
    ("small-fast", 8, 250),
    ("mid-fast", 16, 150),
];

/// The strategies compared, in report order.
pub const STRATEGIES: [&str; 6] = [
    "load-ordering",
    "min-completion",
    "min-min",
    "max-min",
    "sufferage",
    "heft",
];

/// The variants: one shape each, then the mix.
pub const VARIANTS: [&str; 5] = ["montage", "epigenomics", "fork-join", "chain", "mixed"];

/// Workflows per run.
pub const WORKFLOWS: usize = 100;

/// Workflows per run with `--quick`.
pub const QUICK_WORKFLOWS: usize = 8;

/// Repetitions by default.
pub const REPS: u32 = 20;

/// The metrics of a run, in CSV order.
pub const METRICS: [&str; 8] = [
    "makespan",
    "slowdown",
    "utilization",
    "workflows",
    "workflows_completed",
    "nodes",
    "nodes_completed",
    "rejected",
];

/// The metrics the report gives with confidence intervals.
pub const CI_METRICS: [&str; 3] = ["makespan", "slowdown", "utilization"];

/// The grid of [`SITES`].
pub fn platform() -> Platform {
    let mut p = Platform::single_machine_sites(SITES.iter().map(|&(n, procs, _)| (n, procs)));
    for (m, &(_, _, bench)) in p.machines.iter_mut().zip(&SITES) {
        m.benchmark = bench;
    }
    p
}

/// The grid's processors in reference-machine processors.
pub fn capacity() -> f64 {
    SITES
        .iter()
        .map(|&(_, procs, bench)| f64::from(procs) * f64::from(bench))
        .sum::<f64>()
        / f64::from(REFERENCE_BENCHMARK)
}

/// The workflows of one run.
#[derive(Clone, Debug)]
pub struct Stream {
    /// The workflows with their submission times and ids.
    pub workflows: Vec<WorkflowSubmission>,
    /// Their nodes.
    pub nodes: usize,
    /// Their run time on the reference machine, processor-seconds.
    pub work: i128,
}

/// `count` workflows of `variant` at offered load `load`, from `seed`.
pub fn stream(variant: &str, load: f64, count: usize, seed: u64) -> Result<Stream> {
    let v = VARIANTS
        .iter()
        .position(|&x| x == variant)
        .ok_or_else(|| anyhow!("unknown workflow variant `{variant}`"))?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ v as u64);
    let fixed = Shape::parse(variant);
    let flows: Vec<_> = (0..count)
        .map(|_| {
            let shape = fixed.unwrap_or_else(|| Shape::ALL[rng.random_range(0..Shape::ALL.len())]);
            shapes::generate(shape, &mut rng)
        })
        .collect();
    let units: Vec<f64> = (0..count).map(|_| rng.random::<f64>()).collect();
    let work: i128 = (flows.iter().flat_map(|w| w.nodes()))
        .map(|n| i128::from(n.job.procs) * i128::from(n.job.runtime.unwrap_or(n.job.estimate)))
        .sum();
    let nodes = flows.iter().map(|w| w.len()).sum();
    // The mean gap that makes `load`: work / (load × capacity × count).
    let gap = work as f64 / (load * capacity() * count as f64);
    let (mut at, mut id) = (0i64, 1u64);
    let mut workflows = Vec::with_capacity(count);
    for (k, (workflow, u)) in flows.into_iter().zip(units).enumerate() {
        if k > 0 {
            at += (-(1.0 - u).ln() * gap).round() as i64;
        }
        let span = workflow.span();
        workflows.push(WorkflowSubmission {
            at,
            id: JobId(id),
            workflow,
        });
        id += span + 1;
    }
    Ok(Stream {
        workflows,
        nodes,
        work,
    })
}

/// Runs `stream` with the named strategy.
pub fn run_stream(s: &Stream, strategy: &str, seed: u64) -> Result<Metrics> {
    let platform = platform();
    let kind: DispatchKind = strategy.parse().map_err(|e: String| anyhow!(e))?;
    let dispatcher = DispatchConfig {
        seed,
        ..DispatchConfig::new(kind)
    }
    .build();
    let policies = (0..platform.clusters.len())
        .map(|c| PolicyConfig::new(PolicyKind::Easy).build(&platform, ClusterId(c as u32)))
        .collect::<Result<Vec<_>, _>>()?;
    let events = GridEvents {
        workflows: s.workflows.clone(),
        ..GridEvents::default()
    };
    let (mut busy, mut first, mut last) = (0i128, i64::MAX, i64::MIN);
    let mut record = |r: &PlatformRecord| {
        busy += i128::from(r.exec);
        first = first.min(r.submit);
        last = last.max(r.end);
    };
    let rep = simulate_platform_with(
        &platform,
        policies,
        Meta {
            classify: Classify::Fixed(1),
            dispatcher,
            splits: None,
            links: None,
        },
        Vec::<Result<Job, std::convert::Infallible>>::new(),
        PlatformHooks {
            record: Some(&mut record),
            pass: None,
            refused: None,
        },
        &events,
    )
    .map_err(|e| anyhow!("{strategy}: {e}"))?;
    let flows = &rep.stats.workflows;
    let makespan =
        flows.iter().map(|w| (w.end - w.submit) as f64).sum::<f64>() / flows.len().max(1) as f64;
    let span = (last - first).max(1) as f64;
    let utilization = 100.0 * busy as f64 / (platform.total_procs() as f64 * span);
    Ok(vec![
        ("makespan", makespan),
        ("slowdown", rep.jobs.slowdown),
        ("utilization", utilization),
        ("workflows", flows.len() as f64),
        (
            "workflows_completed",
            flows
                .iter()
                .filter(|w| w.outcome == Outcome::Completed)
                .count() as f64,
        ),
        ("nodes", s.nodes as f64),
        (
            "nodes_completed",
            flows.iter().map(|w| f64::from(w.done)).sum(),
        ),
        ("rejected", rep.stats.rejected as f64),
    ])
}

/// The experiment.
#[derive(Debug)]
pub struct WorkflowsExperiment {
    loads: Vec<f64>,
    reps: u32,
    count: usize,
    seed: u64,
    quick: bool,
}

impl WorkflowsExperiment {
    /// The experiment with `opts`.
    pub fn new(opts: &Options) -> WorkflowsExperiment {
        WorkflowsExperiment {
            loads: if opts.quick {
                vec![0.9]
            } else {
                vec![0.6, 0.9]
            },
            reps: opts.reps.unwrap_or(if opts.quick { 2 } else { REPS }),
            count: if opts.quick {
                QUICK_WORKFLOWS
            } else {
                WORKFLOWS
            },
            seed: opts.seed,
            quick: opts.quick,
        }
    }
}

impl Experiment for WorkflowsExperiment {
    fn name(&self) -> &'static str {
        "workflows"
    }

    fn runs(&self) -> Vec<RunKey> {
        let mut v = Vec::new();
        for variant in VARIANTS {
            for &load in &self.loads {
                for alg in STRATEGIES {
                    for rep in 0..self.reps {
                        v.push(RunKey {
                            algorithm: alg.into(),
                            variant: variant.into(),
                            ta: load,
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
        let s = stream(&key.variant, key.ta, self.count, key.seed)?;
        run_stream(&s, &key.algorithm, key.seed)
    }

    fn figures(&self) -> Vec<Figure> {
        let mut v = Vec::new();
        for variant in VARIANTS {
            for (metric, what, y_label) in [
                ("makespan", "mean workflow makespan", "makespan (s)"),
                ("slowdown", "mean node slowdown", "slowdown"),
            ] {
                v.push(Figure {
                    file: format!("workflows-{variant}-{metric}"),
                    title: format!("{variant}: {what}"),
                    metric,
                    y_label,
                    x_label: "offered load",
                    series: Series::Algorithms(variant.into()),
                });
            }
        }
        v
    }

    fn finish_summary(&self, rows: &[Row], summary: &mut Summary) {
        intervals::summarize(rows, &CI_METRICS, summary);
    }

    fn report(&self, s: &Summary) -> String {
        report(self, s)
    }
}

fn report(e: &WorkflowsExperiment, s: &Summary) -> String {
    let mut r = String::new();
    let _ = writeln!(
        r,
        "# Experiment `workflows`: HEFT and the independent-job strategies on workflow streams\n"
    );
    let sites: Vec<String> = SITES
        .iter()
        .map(|(n, p, b)| format!("{n} {p} processors × benchmark {b}"))
        .collect();
    let _ = writeln!(
        r,
        "Sites: {} ({} reference processors). EASY at every site. {} workflows per run{}, \
         Poisson arrivals at offered load {}; {} repetitions (seeds {}..{}); mean ± half-width \
         of the 95 % confidence interval (Student t over the repetitions). Makespan: a \
         workflow's end minus its submission, mean over workflows (s); slowdown: node jobs' \
         (wait + run) / run, mean; utilization: processor-seconds run over the grid's \
         processors × the run's span (%).\n",
        sites.join(", "),
        capacity(),
        e.count,
        if e.quick { " (--quick)" } else { "" },
        e.loads
            .iter()
            .map(|l| l.to_string())
            .collect::<Vec<_>>()
            .join(" and "),
        e.reps,
        e.seed,
        e.seed + u64::from(e.reps) - 1,
    );
    let algs = s.algorithms();
    let variants: Vec<String> = VARIANTS
        .iter()
        .filter(|v| s.rows.iter().any(|r| r.variant == **v))
        .map(|v| v.to_string())
        .collect();
    let mut findings = Vec::new();
    for v in &variants {
        for load in s.tas() {
            if !s.rows.iter().any(|r| r.variant == *v && r.ta == load) {
                continue;
            }
            let _ = writeln!(r, "## {v}, offered load {load}\n");
            let _ = writeln!(
                r,
                "| strategy | makespan (s) | node slowdown | utilization (%) | workflows completed |\n|---|---|---|---|---|"
            );
            for a in &algs {
                let done = s.get(a, v, load, "workflows_completed");
                let all = s.get(a, v, load, "workflows");
                let _ = writeln!(
                    r,
                    "| {a} | {} | {} | {} | {} |",
                    cell(s, a, v, load, "makespan"),
                    cell(s, a, v, load, "slowdown"),
                    cell(s, a, v, load, "utilization"),
                    match (done, all) {
                        (Some(d), Some(n)) => format!("{d:.1} / {n:.1}"),
                        _ => "–".into(),
                    }
                );
            }
            r.push('\n');
            if let Some(f) = finding(s, &algs, v, load) {
                let _ = writeln!(r, "{f}\n");
                findings.push(f);
            }
        }
    }
    let _ = writeln!(r, "## What the data shows\n");
    for f in findings {
        let _ = writeln!(r, "- {f}");
    }
    r
}

/// The lowest mean makespan of variant `v` at `load`, which strategies' intervals overlap it,
/// and where HEFT stands.
fn finding(s: &Summary, algs: &[String], v: &str, load: f64) -> Option<String> {
    let m = |a: &str| s.get(a, v, load, "makespan");
    let h = |a: &str| intervals::half_width(s, "makespan", a, v, load);
    let mut ranked: Vec<(&str, f64)> = algs
        .iter()
        .filter_map(|a| Some((a.as_str(), m(a)?)))
        .collect();
    ranked.sort_by(|x, y| x.1.total_cmp(&y.1));
    let &(best, bm) = ranked.first()?;
    let overlap: Vec<&str> = ranked[1..]
        .iter()
        .filter(|(a, x)| (x - bm).abs() <= h(a) + h(best))
        .map(|(a, _)| *a)
        .collect();
    let mut f = format!(
        "{v} at load {load}: lowest mean makespan `{best}` ({bm:.0} ± {:.0} s); ",
        h(best)
    );
    if overlap.is_empty() {
        f.push_str("no other strategy's interval overlaps it");
    } else {
        let _ = write!(
            f,
            "the intervals of {} overlap it (not distinguishable at these repetitions)",
            overlap
                .iter()
                .map(|a| format!("`{a}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if best != "heft"
        && let Some(pos) = ranked.iter().position(|x| x.0 == "heft")
    {
        let hm = ranked[pos].1;
        let _ = write!(
            f,
            "; `heft` {} of {} ({hm:.0} s, {:+.1} % against the best)",
            pos + 1,
            ranked.len(),
            100.0 * (hm - bm) / bm.max(1e-9)
        );
    } else if best == "heft"
        && let Some(&(second, sm)) = ranked.get(1)
    {
        let _ = write!(
            f,
            "; the next, `{second}`, {sm:.0} s ({:+.1} %)",
            100.0 * (sm - bm) / bm.max(1e-9)
        );
    }
    f.push('.');
    Some(f)
}
