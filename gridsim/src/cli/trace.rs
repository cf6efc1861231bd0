//! `gridsim trace scale`: Ernemann's scaling of a trace to a larger machine
//! (`gang-urgent-scaling.md` Part C, C.6; see `gridsched_workload::scale`), written as JSON Lines
//! or SWF, with an optional JSON summary (jobs, total work, widest job before and after). Stage 4's
//! factor is Table 4's published one (`--adjusted`) or the one the stage-4 search finds for this
//! trace (`--calibrated`, the search of `gridsim trace calibrate`, [`super::trace_calibrate`]).

use super::trace_calibrate::{Loaded, SearchPolicy, SearchSpec, fmt_factor};
use super::trace_out::{out_is_swf, print_summary, write_jobs};
use anyhow::{Result, anyhow, bail};
use clap::{Args, Subcommand, ValueEnum};
use gridsched_workload::scale::{
    Calibration, FactorSearch, Method, Scale, ScaleOptions, Scan, Stage, Summary, adjusted_factor,
    precise_factor, round_half_up, table1_integer_factor,
};
use std::path::PathBuf;

/// Subcommands of `gridsim trace`.
#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Scale a trace to a larger machine (Part C): job copies, enlarged widths or per job by
    /// the decision value d.
    Scale(ScaleArgs),
    /// Search the adjusted factor of stage 4 (§3.3): scale with f = f*, f* + 0.01, …, run each
    /// scaled workload under EASY or FCFS and keep the f whose AWRT and AWWT are closest to the
    /// original trace's on its original machine.
    Calibrate(super::trace_calibrate::CalibrateArgs),
    /// Generate a synthetic workload (§5.4): shapes from a trace's (width, estimate, actual)
    /// matrix, Weibull arrivals with a fitted (α, β).
    Synth(super::trace_synth::SynthArgs),
}

/// Arguments of `gridsim trace`.
#[derive(Debug, Args)]
pub struct TraceArgs {
    #[command(subcommand)]
    command: TraceCommand,
}

/// How each job is transformed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MethodArg {
    /// Duplicate every job.
    Copies,
    /// Enlarge every job.
    Widths,
    /// Duplicate with probability d/100, else enlarge.
    Decision,
}

/// Which stage of C.6 gives the factors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StageArg {
    /// Stage 1: integer factor for size and copies (default: Table 1's, else round(f*)).
    Integer,
    /// Stage 2: precise size factor, integer copies (--copies, default as stage 1).
    PreciseSize,
    /// Stages 3–4: one factor (default f*; `--factor`, `--adjusted` or `--calibrated` for
    /// stage 4).
    Precise,
}

/// Arguments of `gridsim trace scale`.
#[derive(Clone, Debug, Args)]
pub struct ScaleArgs {
    /// Trace: name, prefix or path (SWF, plain or gzip, or JSON Lines).
    #[arg(long)]
    pub trace: String,
    /// Original machine size (default: the trace header's).
    #[arg(long)]
    pub from: Option<u32>,
    /// Target machine size.
    #[arg(long, default_value_t = 1024)]
    pub to: u32,
    /// Copies, widths or decision.
    #[arg(long, value_enum, default_value = "decision")]
    pub method: MethodArg,
    /// Decision value d in [0, 100] (method decision).
    #[arg(long, default_value_t = 50.0)]
    pub d: f64,
    /// Stage of C.6.
    #[arg(long, value_enum, default_value = "precise")]
    pub stage: StageArg,
    /// Factor (precise: size and mean copies; precise-size: size; integer: both, an integer).
    #[arg(long, conflicts_with_all = ["adjusted", "calibrated"])]
    pub factor: Option<f64>,
    /// Copy count of stage 2.
    #[arg(long)]
    pub copies: Option<u32>,
    /// Use Table 4's adjusted factor for the trace (CTC, KTH, NASA, SDSC00, SDSC95, SDSC96).
    #[arg(long, conflicts_with = "calibrated")]
    pub adjusted: bool,
    /// Search the adjusted factor for this trace first (`trace calibrate`'s default scan
    /// f* … f* + 0.60 by 0.01, with this --d and --seed, under EASY or, with --fcfs, FCFS) and
    /// scale with the chosen one.
    #[arg(long)]
    pub calibrated: bool,
    /// With --adjusted or --calibrated: the FCFS-calibrated factor (Table 4: differs only for
    /// SDSC00).
    #[arg(long)]
    pub fcfs: bool,
    /// With --calibrated: threads for the search's simulations (0 = all cores).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Seed of the random stream.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output file: `.jsonl` (JSON Lines) or `.swf`.
    #[arg(long)]
    pub out: PathBuf,
    /// Print a JSON summary.
    #[arg(long)]
    pub json: bool,
}

/// Runs `gridsim trace ...`.
pub fn trace(args: &TraceArgs) -> Result<()> {
    match &args.command {
        TraceCommand::Scale(a) => scale(a),
        TraceCommand::Calibrate(a) => super::trace_calibrate::calibrate(a),
        TraceCommand::Synth(a) => super::trace_synth::synth(a),
    }
}

/// The stage the arguments select; `searched` is the factor `--calibrated` found.
fn stage(a: &ScaleArgs, original: u32, searched: Option<f64>) -> Result<Stage> {
    let fstar = precise_factor(original, a.to)?;
    let int_default = || {
        table1_integer_factor(&a.trace)
            .filter(|_| a.to == 1024)
            .unwrap_or(round_half_up(fstar).max(1) as u32)
    };
    let as_int = |f: f64| -> Result<u32> {
        if f.fract() != 0.0 || !(1.0..=f64::from(u32::MAX)).contains(&f) {
            bail!("--factor {f}: the integer stage needs a positive integer factor");
        }
        Ok(f as u32)
    };
    Ok(match a.stage {
        StageArg::Integer => Stage::Integer(
            a.factor
                .map(as_int)
                .transpose()?
                .unwrap_or_else(int_default),
        ),
        StageArg::PreciseSize => Stage::PreciseSize {
            size: a.factor.unwrap_or(fstar),
            copies: a.copies.unwrap_or_else(int_default),
        },
        StageArg::Precise => {
            let f = if let Some(f) = searched {
                f
            } else if a.adjusted {
                let by = if a.fcfs {
                    Calibration::Fcfs
                } else {
                    Calibration::Easy
                };
                adjusted_factor(&a.trace, by).ok_or_else(|| {
                    anyhow!("--adjusted: Table 4 has no factor for trace `{}`", a.trace)
                })?
            } else {
                a.factor.unwrap_or(fstar)
            };
            Stage::Precise(f)
        }
    })
}

fn scale(a: &ScaleArgs) -> Result<()> {
    if a.calibrated && a.stage != StageArg::Precise {
        bail!("--calibrated searches the factor of stage 4: use it with --stage precise");
    }
    // Refused now rather than after a search.
    out_is_swf(&a.out)?;
    let Loaded {
        path,
        jobs,
        procs: original,
        licence_names,
    } = Loaded::read(&a.trace, a.from, "--from")?;
    let before = Summary::of(&jobs);
    let method = match a.method {
        MethodArg::Copies => Method::Copies,
        MethodArg::Widths => Method::Widths,
        MethodArg::Decision => Method::Decision(a.d),
    };
    let policy = if a.fcfs {
        SearchPolicy::Fcfs
    } else {
        SearchPolicy::Easy
    };
    let searched: Option<FactorSearch> = if a.calibrated {
        let fstar = precise_factor(original, a.to)?;
        let spec = SearchSpec {
            original,
            target: a.to,
            policy,
            method,
            seed: a.seed,
            scan: Scan::new(fstar, Scan::DEFAULT_STEP, Scan::DEFAULT_STEPS)?,
            threads: a.threads,
        };
        let found = super::trace_calibrate::search(&jobs, &spec)?;
        if found.chosen_at_upper_end() {
            eprintln!(
                "gridsim: warning: --calibrated chose f = {}, the last factor of the scan \
                 (f* + 0.60); `gridsim trace calibrate` with a larger --steps may find a closer one",
                fmt_factor(found.best().factor)
            );
        }
        Some(found)
    } else {
        None
    };
    let opts = ScaleOptions {
        target: a.to,
        stage: stage(a, original, searched.as_ref().map(|s| s.best().factor))?,
        method,
        seed: a.seed,
    };
    let header = format!(
        "scaled from {} ({original} processors) to {} by gridsched trace scale: {:?}, {:?}, seed {}",
        path.file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        a.to,
        opts.stage,
        opts.method,
        a.seed
    );
    let mut after = Summary::default();
    let scaled = Scale::new(jobs.into_iter(), opts)?;
    write_jobs(
        &a.out,
        &header,
        a.to,
        &licence_names,
        scaled.map(|s| s.job),
        |j| after.add(j),
    )?;
    let calibration = searched.as_ref().map(|s| {
        serde_json::json!({
            "policy": policy.kind().as_str(),
            "factor": s.best().factor,
            "distance": s.best().distance,
            "reference": s.reference,
            "chosen": s.best(),
            "rows": s.rows,
        })
    });
    let json = serde_json::json!({
        "trace": path.display().to_string(),
        "from": original,
        "to": a.to,
        "stage": format!("{:?}", opts.stage),
        "method": format!("{:?}", opts.method),
        "seed": a.seed,
        "expected_jobs": opts.expected_jobs(before.jobs),
        "before": before,
        "after": after,
        "out": a.out.display().to_string(),
        "calibration": calibration,
    });
    let mut text = String::new();
    if let Some(s) = &searched {
        text += &format!(
            "calibrated f = {} under {} (distance {:.2} % over {} factors); ",
            fmt_factor(s.best().factor),
            policy.name(),
            100.0 * s.best().distance,
            s.rows.len()
        );
    }
    text += &format!(
        "{} jobs, area {}, max width {} → {} jobs, area {}, max width {} ({})",
        before.jobs,
        before.area,
        before.max_procs,
        after.jobs,
        after.area,
        after.max_procs,
        a.out.display()
    );
    print_summary(a.json, &json, &text)
}
