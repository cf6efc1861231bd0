//! `gridsim trace synth`: Streit's trace-fitted synthetic workload (spec
//! `self-tuning-and-multisite.md` §5.4; see `gridsched_workload::synthetic::trace_model`): job
//! shapes from a trace's 3-D (width, estimate, actual) matrix, Weibull arrivals with one of the
//! study's per-trace fits, written as SWF or JSON Lines with an optional JSON summary.

use super::trace_out::{print_summary, write_jobs};
use anyhow::{Result, anyhow, bail};
use clap::Args;
use gridsched_workload::scale::Summary;
use gridsched_workload::synthetic::trace_model::{ShapeMatrix, TraceModelGenerator, Weibull};
use gridsched_workload::{JobSource, NormalizeOptions, traces};
use std::path::PathBuf;

/// Arguments of `gridsim trace synth`.
#[derive(Debug, Args)]
pub struct SynthArgs {
    /// Trace whose (width, estimate, actual run time) matrix shapes the jobs: name, prefix or path.
    #[arg(long)]
    pub trace: String,
    /// Weibull inter-arrival fit of §5.4: CTC, KTH, SDSC, LANL, PC2-2001, PC2-2002, CHPC, MHPCC.
    #[arg(long, default_value = "CTC")]
    pub arrivals: String,
    /// Or explicit Weibull shape α (with --beta).
    #[arg(long, requires = "beta")]
    pub alpha: Option<f64>,
    /// Weibull scale β, seconds (with --alpha).
    #[arg(long, requires = "alpha")]
    pub beta: Option<f64>,
    /// Jobs to generate (the study uses sets of 10,000).
    #[arg(long, default_value_t = 10_000)]
    pub jobs: u64,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output file: `.jsonl` or `.swf`.
    #[arg(long)]
    pub out: PathBuf,
    /// Print a JSON summary.
    #[arg(long)]
    pub json: bool,
}

/// Runs `gridsim trace synth`.
pub fn synth(a: &SynthArgs) -> Result<()> {
    let arrivals = match (a.alpha, a.beta) {
        (Some(alpha), Some(beta)) => {
            if !(alpha > 0.0 && alpha.is_finite() && beta > 0.0 && beta.is_finite()) {
                bail!("--alpha {alpha} --beta {beta}: both must be positive numbers");
            }
            Weibull { alpha, beta }
        }
        _ => Weibull::fitted(&a.arrivals).map_err(|e| anyhow!("--arrivals: {e}"))?,
    };
    let path = traces::resolve(&a.trace, &traces::dir()).map_err(|e| anyhow!(e))?;
    let mut src = JobSource::open(&path, None, NormalizeOptions::default())?;
    let mut fitted = Vec::new();
    for j in src.by_ref() {
        fitted.push(j?);
    }
    let before = Summary::of(&fitted);
    let matrix = ShapeMatrix::fit(&fitted)?;
    let procs = src.normalized_procs().unwrap_or(before.max_procs);
    let header = format!(
        "synthetic (Streit 5.4) from the matrix of {} ({} jobs), Weibull alpha {} beta {} s, seed {}",
        path.file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        matrix.jobs(),
        arrivals.alpha,
        arrivals.beta,
        a.seed
    );
    let mut after = Summary::default();
    let mut last_submit = 0;
    let generated = TraceModelGenerator::new(matrix, arrivals, a.jobs, a.seed);
    write_jobs(&a.out, &header, procs, &[], generated, |j| {
        after.add(j);
        last_submit = j.submit;
    })?;
    let mean_gap = if a.jobs > 1 {
        last_submit as f64 / (a.jobs - 1) as f64
    } else {
        0.0
    };
    let json = serde_json::json!({
        "trace": path.display().to_string(),
        "alpha": arrivals.alpha,
        "beta": arrivals.beta,
        "expected_mean_interarrival": arrivals.mean(),
        "mean_interarrival": mean_gap,
        "seed": a.seed,
        "trace_summary": before,
        "generated": after,
        "out": a.out.display().to_string(),
    });
    let text = format!(
        "{} jobs, area {}, max width {}, mean inter-arrival {:.0} s (Weibull mean {:.0} s) ({})",
        after.jobs,
        after.area,
        after.max_procs,
        mean_gap,
        arrivals.mean(),
        a.out.display()
    );
    print_summary(a.json, &json, &text)
}
