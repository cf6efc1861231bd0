//! `gridsim experiment data`: dispatch that counts the transfers of the jobs' inputs against the
//! same strategies blind to them, on one grid and the same data-heavy workloads. The strategies
//! that estimate completion — `min-completion` (MCT, `gang-urgent-scaling.md` B.4), `min-min`
//! (Braun et al. 2001) and `heft` (Topcuoglu et al. 2002, §4.1, its data-ready time) — each run
//! data-blind (the name alone) and data-aware (`+data`: they add the time to move a job's inputs
//! over the grid's links, [`gridsched_core::dispatch::Transfers`]); `load-ordering` (D4.2), which
//! estimates nothing, is the two-level design's baseline. The simulator moves every input over
//! the modelled links, sharing their bandwidth ([`crate::platform`]'s staging), so the blind runs
//! pay for the transfers they do not count.
//!
//! **Grid** (the experiment's own, labelled so): four sites of one space-shared machine each,
//! [`SITES`] (144 processors, one speed), EASY at every site, every job of priority 1. Links
//! ([`network`]): 1 Gbit/s (125 MB/s) and 20 ms between any two sites, 10 Gbit/s between the two
//! largest; the submitters' side reaches every site at 1 Gbit/s (no input comes from there here:
//! every dataset is stored at a site).
//!
//! **Workloads**: per run, [`JOBS`] jobs (`--quick`: [`QUICK_JOBS`]) at Poisson arrivals whose
//! mean gap makes the offered load (processor-seconds over the grid's processors and the
//! arrivals' expected span) the x value (0.5 and 0.8; `--quick`: 0.8); a job takes 1, 2, 4, 8 or
//! 16 processors (uniform), runs log-uniformly 60 s to 1 h, and estimates its run time times a
//! uniform factor in [1, 3). Each reads one dataset of a catalogue of [`DATASETS`]
//! ([`gridsched_workload::data_heavy`]: Zipf 1 popularity, home sites uniform) whose sizes are the
//! variant: `light` 100 MB to 2 GB, `heavy` 2 GB to 50 GB (log-uniform). The jobs and the
//! catalogue depend on the seed and the variant only: every strategy and both loads see the same
//! jobs and data (common random numbers).
//!
//! **Metrics** per run: `response`, the mean of end minus submission (s); `slowdown`, the mean
//! (wait + run) / run; `input_wait`, the mean time a job waited at its site for its input (s);
//! `moved_gb`, the gigabytes moved between sites; `moves`; and the counts that show every job
//! ran. Repetitions ([`REPS`], `--quick` 2) use seeds `seed + rep`; the report gives each mean
//! with its 95 % confidence interval (Student t over the repetitions).

use super::intervals::{self, cell};
use super::output::Row;
use super::{Experiment, Figure, Metrics, Options, RunKey, Series, Summary};
use crate::platform::{Classify, DataLinks, Meta, PlatformHooks, simulate_platform};
use anyhow::{Result, anyhow};
use gridsched_core::dispatch::{DispatchConfig, DispatchKind, Link, Network};
use gridsched_core::model::{ClusterId, Job, Platform};
use gridsched_core::policy::{PolicyConfig, PolicyKind};
use gridsched_workload::data_heavy::{DataHeavy, DataHeavyParams};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::fmt::Write as _;

/// The sites: name and processors.
pub const SITES: [(&str, u32); 4] = [("alpha", 64), ("beta", 32), ("gamma", 32), ("delta", 16)];

/// The strategies compared, in report order: each estimating one blind, then aware.
pub const STRATEGIES: [&str; 7] = [
    "load-ordering",
    "min-completion",
    "min-completion+data",
    "min-min",
    "min-min+data",
    "heft",
    "heft+data",
];

/// The variants: dataset sizes, smallest and largest bytes.
pub const VARIANTS: [(&str, u64, u64); 2] = [
    ("light", 100_000_000, 2_000_000_000),
    ("heavy", 2_000_000_000, 50_000_000_000),
];

/// Jobs per run.
pub const JOBS: usize = 1000;
/// Jobs per run with `--quick`.
pub const QUICK_JOBS: usize = 150;
/// Datasets in a catalogue.
pub const DATASETS: u32 = 400;
/// Repetitions by default.
pub const REPS: u32 = 10;

/// The metrics the report gives with confidence intervals.
pub const CI_METRICS: [&str; 4] = ["response", "slowdown", "input_wait", "moved_gb"];

/// The grid of [`SITES`].
pub fn platform() -> Platform {
    Platform::single_machine_sites(SITES.iter().map(|&(n, p)| (n, p)))
}

const GBIT: u64 = 125_000_000;

/// The links: 1 Gbit/s and 20 ms between sites, 10 Gbit/s between alpha and beta, 1 Gbit/s
/// from the submitters.
pub fn network() -> Network {
    let mut n = Network::uniform(
        SITES.len(),
        Link {
            bytes_per_s: GBIT,
            latency_ms: 20,
        },
        Link {
            bytes_per_s: GBIT,
            latency_ms: 20,
        },
    );
    n.between[0][1].bytes_per_s = 10 * GBIT;
    n.between[1][0].bytes_per_s = 10 * GBIT;
    n
}

/// `count` jobs of `variant` at offered load `load`, from `seed`.
pub fn jobs(variant: &str, load: f64, count: usize, seed: u64) -> Result<Vec<Job>> {
    let v = VARIANTS
        .iter()
        .position(|x| x.0 == variant)
        .ok_or_else(|| anyhow!("unknown data variant `{variant}`"))?;
    let (_, min_bytes, max_bytes) = VARIANTS[v];
    let mut rng = ChaCha8Rng::seed_from_u64(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ v as u64);
    let mut u = move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let mut out: Vec<Job> = (0..count)
        .map(|k| {
            let procs = 1u32 << ((u() * 5.0) as u32).min(4);
            let run = (60f64.ln() + u() * (3600f64.ln() - 60f64.ln()))
                .exp()
                .round() as i64;
            let estimate = (run as f64 * (1.0 + 2.0 * u())).ceil() as i64;
            Job::new(k as u64 + 1, 0, procs, estimate.max(run), run)
        })
        .collect();
    let work: f64 = out
        .iter()
        .map(|j| f64::from(j.procs) * j.runtime.unwrap_or(0) as f64)
        .sum();
    let procs: f64 = SITES.iter().map(|s| f64::from(s.1)).sum();
    let gap = work / (load * procs * count as f64);
    let mut at = 0i64;
    for (k, j) in out.iter_mut().enumerate() {
        if k > 0 {
            at += (-(1.0 - u()).ln() * gap).round() as i64;
        }
        j.submit = at;
    }
    let params = DataHeavyParams {
        datasets: DATASETS,
        min_bytes,
        max_bytes,
        sites: SITES.len() as u32,
        zipf: 1.0,
    };
    let mut data = DataHeavy::new(&params, seed ^ 0xda7a).map_err(|e| anyhow!(e))?;
    for j in &mut out {
        data.attach(j);
    }
    Ok(out)
}

/// Runs `jobs` with the named strategy (`+data`: data-aware).
pub fn run_jobs(jobs: &[Job], strategy: &str, seed: u64) -> Result<Metrics> {
    let platform = platform();
    let (name, aware) = match strategy.strip_suffix("+data") {
        Some(n) => (n, true),
        None => (strategy, false),
    };
    let kind: DispatchKind = name.parse().map_err(|e: String| anyhow!(e))?;
    let meta = Meta {
        classify: Classify::Fixed(1),
        dispatcher: DispatchConfig {
            seed,
            ..DispatchConfig::new(kind)
        }
        .build(),
        splits: None,
        links: Some(DataLinks {
            network: network(),
            blind: !aware,
        }),
    };
    let policies = (0..platform.clusters.len())
        .map(|c| PolicyConfig::new(PolicyKind::Easy).build(&platform, ClusterId(c as u32)))
        .collect::<Result<Vec<_>, _>>()?;
    let stream = jobs
        .iter()
        .cloned()
        .map(Ok::<Job, std::convert::Infallible>);
    let rep = simulate_platform(&platform, policies, meta, stream, PlatformHooks::default())
        .map_err(|e| anyhow!("{strategy}: {e}"))?;
    let n = rep.jobs.finished.max(1) as f64;
    Ok(vec![
        ("response", rep.jobs.mean_response),
        ("slowdown", rep.jobs.slowdown),
        ("input_wait", rep.stats.input_wait_s as f64 / n),
        ("moved_gb", rep.stats.input_bytes as f64 / 1e9),
        ("moves", rep.stats.input_moves as f64),
        ("jobs", jobs.len() as f64),
        ("finished", rep.jobs.finished as f64),
        ("rejected", rep.stats.rejected as f64),
    ])
}

/// The experiment.
#[derive(Debug)]
pub struct DataExperiment {
    loads: Vec<f64>,
    reps: u32,
    count: usize,
    seed: u64,
    quick: bool,
}

impl DataExperiment {
    /// The experiment with `opts`.
    pub fn new(opts: &Options) -> DataExperiment {
        DataExperiment {
            loads: if opts.quick {
                vec![0.8]
            } else {
                vec![0.5, 0.8]
            },
            reps: opts.reps.unwrap_or(if opts.quick { 2 } else { REPS }),
            count: opts
                .jobs
                .unwrap_or(if opts.quick { QUICK_JOBS } else { JOBS }),
            seed: opts.seed,
            quick: opts.quick,
        }
    }
}

impl Experiment for DataExperiment {
    fn name(&self) -> &'static str {
        "data"
    }

    fn runs(&self) -> Vec<RunKey> {
        let mut v = Vec::new();
        for (variant, _, _) in VARIANTS {
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
        let jobs = jobs(&key.variant, key.ta, self.count, key.seed)?;
        run_jobs(&jobs, &key.algorithm, key.seed)
    }

    fn figures(&self) -> Vec<Figure> {
        let mut v = Vec::new();
        for (variant, _, _) in VARIANTS {
            for (metric, what, y_label) in [
                ("response", "mean response time", "response (s)"),
                ("moved_gb", "data moved between sites", "GB moved"),
            ] {
                v.push(Figure {
                    file: format!("data-{variant}-{metric}"),
                    title: format!("{variant} datasets: {what}"),
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

fn report(e: &DataExperiment, s: &Summary) -> String {
    let mut r = String::new();
    let _ = writeln!(
        r,
        "# Experiment `data`: dispatch that counts the inputs' transfers against dispatch blind to them\n"
    );
    let sites: Vec<String> = SITES.iter().map(|(n, p)| format!("{n} {p}")).collect();
    let _ = writeln!(
        r,
        "Sites (processors): {}; EASY at every site. Links: 1 Gbit/s and 20 ms between sites, \
         10 Gbit/s between alpha and beta; the moves on a link share its bandwidth. {} jobs per \
         run{}, each reading one of {DATASETS} datasets (Zipf 1, stored at uniform home sites), \
         Poisson arrivals at offered load {}; {} repetitions (seeds {}..{}); mean ± half-width of \
         the 95 % confidence interval (Student t over the repetitions). `+data`: the strategy \
         adds the estimated transfer time of a job's input at each site.\n",
        sites.join(", "),
        e.count,
        if e.quick { " (--quick)" } else { "" },
        (e.loads.iter().map(|l| l.to_string()).collect::<Vec<_>>()).join(" and "),
        e.reps,
        e.seed,
        e.seed + u64::from(e.reps) - 1,
    );
    let algs = s.algorithms();
    let mut findings = Vec::new();
    for (v, lo, hi) in VARIANTS {
        for load in s.tas() {
            if !s.rows.iter().any(|r| r.variant == v && r.ta == load) {
                continue;
            }
            let _ = writeln!(
                r,
                "## {v} datasets ({:.1} to {:.0} GB), offered load {load}\n",
                lo as f64 / 1e9,
                hi as f64 / 1e9
            );
            let _ = writeln!(
                r,
                "| strategy | response (s) | slowdown | input wait (s) | moved (GB) | jobs finished |\n|---|---|---|---|---|---|"
            );
            for a in &algs {
                let done = s.get(a, v, load, "finished");
                let all = s.get(a, v, load, "jobs");
                let _ = writeln!(
                    r,
                    "| {a} | {} | {} | {} | {} | {} |",
                    cell(s, a, v, load, "response"),
                    cell(s, a, v, load, "slowdown"),
                    cell(s, a, v, load, "input_wait"),
                    cell(s, a, v, load, "moved_gb"),
                    match (done, all) {
                        (Some(d), Some(n)) => format!("{d:.0} / {n:.0}"),
                        _ => "–".into(),
                    }
                );
            }
            r.push('\n');
            for base in ["min-completion", "min-min", "heft"] {
                if let Some(f) = finding(s, base, v, load) {
                    findings.push(f);
                }
            }
        }
    }
    let _ = writeln!(r, "## What the data shows\n");
    for f in findings {
        let _ = writeln!(r, "- {f}");
    }
    r
}

/// How `base+data` compares with `base` on variant `v` at `load`: response and bytes moved,
/// and whether the intervals separate them.
fn finding(s: &Summary, base: &str, v: &str, load: f64) -> Option<String> {
    let aware = format!("{base}+data");
    let get = |a: &str, m: &str| s.get(a, v, load, m);
    let h = |a: &str, m: &str| intervals::half_width(s, m, a, v, load);
    let mut f = format!("{v}, load {load}: `{aware}` against `{base}`:");
    for (m, what) in [("response", "mean response"), ("moved_gb", "data moved")] {
        let (b, a) = (get(base, m)?, get(&aware, m)?);
        let apart = (a - b).abs() > h(base, m) + h(&aware, m);
        let _ = write!(
            f,
            " {what} {a:.0} against {b:.0} ({:+.1} %, {});",
            100.0 * (a - b) / b.max(1e-9),
            if apart {
                "the intervals do not overlap"
            } else {
                "the intervals overlap"
            }
        );
    }
    f.pop();
    f.push('.');
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_jobs_meet_their_load_and_read_the_catalogue() {
        let a = jobs("heavy", 0.8, 300, 3).unwrap();
        assert_eq!(a, jobs("heavy", 0.8, 300, 3).unwrap(), "seeded");
        assert!(a.iter().all(|j| j.stage_in.len() == 1
            && (2_000_000_000..=50_000_000_000).contains(&j.stage_in[0].bytes)));
        let work: f64 = a
            .iter()
            .map(|j| f64::from(j.procs) * j.runtime.unwrap() as f64)
            .sum();
        let span = a.last().unwrap().submit as f64;
        let load = work / (144.0 * span);
        assert!((0.6..1.0).contains(&load), "offered load {load}");
        assert!(jobs("bulky", 0.8, 3, 3).is_err());
    }

    #[test]
    fn counting_the_transfers_moves_less_and_every_job_runs() {
        let jobs = jobs("heavy", 0.8, 120, 1).unwrap();
        let blind = run_jobs(&jobs, "min-completion", 1).unwrap();
        let aware = run_jobs(&jobs, "min-completion+data", 1).unwrap();
        let m = |r: &Metrics, k: &str| r.iter().find(|x| x.0 == k).unwrap().1;
        for r in [&blind, &aware] {
            assert_eq!(m(r, "finished"), 120.0);
            assert!(m(r, "moves") >= 1.0 && m(r, "input_wait") > 0.0);
        }
        assert!(
            m(&aware, "moved_gb") < m(&blind, "moved_gb"),
            "aware {} GB, blind {} GB",
            m(&aware, "moved_gb"),
            m(&blind, "moved_gb")
        );
    }
}
