//! `gridsim run`: one replay of a workload through one policy, with the metrics as a table or
//! JSON and optionally every job's record as CSV.

use super::knobs::Knobs;
use super::output::{self, HeaderInfo, RunOutcome, WorkloadInfo};
use super::say;
use anyhow::{Context, Result, bail};
use clap::Args;
use gridsched_core::metrics::JobRecord;
use gridsched_core::model::{Job, MachineId};
use gridsched_workload::{JobSource, ShrinkExt, SyntheticParams, WorkloadError, traces};
use gridsim::{Hooks, ReservationRequest, simulate};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

/// Arguments of `gridsim run`.
#[derive(Clone, Debug, Args)]
pub struct RunArgs {
    /// Workload: a path (SWF, plain or gzip, or JSON Lines), a file name in the traces directory
    /// ($GRIDSCHED_TRACES, default ../shared/traces beside the workspace root) or a unique prefix
    /// of one (`KTH`). Without it, the built-in synthetic workload is used.
    #[arg(long)]
    pub trace: Option<String>,
    /// Processors of the machine. Default: the SWF header's MaxProcs (else MaxNodes); 128 for
    /// the synthetic workload. Required for JSON Lines input.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub procs: Option<u32>,
    #[command(flatten)]
    pub knobs: Knobs,
    /// Skip unreadable lines (they are counted and reported) instead of stopping at the first.
    #[arg(long)]
    pub skip_bad_lines: bool,
    /// Jobs of the synthetic workload.
    #[arg(long, default_value_t = 10_000, help_heading = "Synthetic workload")]
    pub synthetic_jobs: u64,
    /// Offered load of the synthetic workload.
    #[arg(long, default_value_t = 0.75, help_heading = "Synthetic workload")]
    pub load: f64,
    /// Seed of the synthetic workload.
    #[arg(long, default_value_t = 1, help_heading = "Synthetic workload")]
    pub seed: u64,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Write every job's record (submit, start, end, wait, ...) to this CSV file.
    #[arg(long)]
    pub jobs_out: Option<PathBuf>,
    /// Advance reservations to ask for during the run: JSON Lines of
    /// `{"at": T, "id": N, "start": S, "end": E, "procs": P}`, each handed to the policy at time
    /// `at` (planning policies admit them; jobs name one with `"reservation": N`).
    #[arg(long, value_name = "FILE")]
    pub reservations: Option<PathBuf>,
    /// No progress bar (it is shown only when stderr is a terminal anyway).
    #[arg(long)]
    pub quiet: bool,
}

/// Opens the workload the arguments name.
pub fn open_source(args: &RunArgs) -> Result<(JobSource, String)> {
    let source = match &args.trace {
        Some(name) => {
            let path = traces::resolve(name, &traces::dir()).map_err(anyhow::Error::msg)?;
            let s = JobSource::open(&path, args.procs, args.knobs.normalize())?;
            (s, path.display().to_string())
        }
        None => {
            let params = SyntheticParams {
                jobs: args.synthetic_jobs,
                procs: args.procs.unwrap_or(128),
                load: args.load,
                seed: args.seed,
            };
            (JobSource::synthetic(params)?, "synthetic".to_string())
        }
    };
    Ok((source.0.skip_bad_lines(args.skip_bad_lines), source.1))
}

/// Reads reservation requests (JSON Lines, `#` comments and blank lines skipped), sorted by
/// request time; a bad line is an error naming the file, the line and the problem.
fn read_reservations(path: &std::path::Path) -> Result<Vec<ReservationRequest>> {
    let text = std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let r: ReservationRequest =
            serde_json::from_str(line).with_context(|| format!("{}:{}", path.display(), i + 1))?;
        out.push(r);
    }
    out.sort_by_key(|r| r.at);
    Ok(out)
}

/// Runs one replay; `progress` shows a bar on stderr.
pub fn execute(args: &RunArgs, progress: bool) -> Result<RunOutcome> {
    let t0 = Instant::now();
    let (mut source, name) = open_source(args)?;
    let format = match source.format() {
        Some(gridsched_workload::InputFormat::Swf) => "swf",
        Some(gridsched_workload::InputFormat::Jsonl) => "jsonl",
        None => "synthetic",
    };
    let procs = match args
        .procs
        .or(source.normalized_procs())
        .or(source.machine_procs_hint())
    {
        Some(p) => p,
        None => bail!("{name}: the machine size is unknown; give it with --procs"),
    };
    args.knobs.rules()?;
    let config = args.knobs.policy()?;
    let mut policy = config.build_single(MachineId(0), procs);

    let bar = progress
        .then(|| progress_bar(&source, args.synthetic_jobs))
        .flatten();
    let reader_progress = source.progress().cloned();
    let mut csv = match &args.jobs_out {
        Some(p) => Some(
            csv::Writer::from_path(p)
                .with_context(|| format!("cannot create the jobs file {}", p.display()))?,
        ),
        None => None,
    };
    let mut csv_error: Option<csv::Error> = None;
    let mut on_record = |r: &JobRecord| {
        if let Some(w) = csv.as_mut()
            && csv_error.is_none()
            && let Err(e) = w.serialize(CsvRow::from(r))
        {
            csv_error = Some(e);
        }
    };
    let mut on_progress = |submitted: u64| {
        if let Some(b) = &bar {
            match &reader_progress {
                Some(p) => b.set_position(p.consumed()),
                None => b.set_position(submitted),
            }
        }
    };
    let requests = match &args.reservations {
        Some(path) => read_reservations(path)?,
        None => Vec::new(),
    };
    let hooks = Hooks {
        record: Some(&mut on_record),
        pass: None,
        progress: Some(&mut on_progress),
        reservations: &requests,
    };
    let engine = args.knobs.engine();
    let jobs: Box<dyn Iterator<Item = Result<Job, WorkloadError>> + '_> = match args.knobs.shrink {
        Some(f) => Box::new(source.by_ref().shrink(f)?),
        None => Box::new(source.by_ref()),
    };
    let report = simulate(policy.as_mut(), &[procs], jobs, &engine, hooks)?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if let Some(e) = csv_error {
        return Err(e).context("writing the jobs file");
    }
    if let Some(mut w) = csv {
        w.flush().context("writing the jobs file")?;
    }
    let wall_s = t0.elapsed().as_secs_f64();
    let workload = WorkloadInfo {
        source: name,
        format,
        procs,
        jobs_read: report.stats.submitted,
        skipped_lines: source.skipped(),
        normalizer: source.normalize_stats().copied(),
        header: source.header().map(|h| HeaderInfo {
            computer: h.computer().map(str::to_string),
            installation: h.installation().map(str::to_string),
            max_procs: h.max_procs(),
            max_nodes: h.max_nodes(),
            unix_start_time: h.unix_start_time(),
            acknowledge: h.acknowledge().map(str::to_string),
        }),
    };
    Ok(RunOutcome {
        workload,
        policy: policy.describe(),
        options: args.knobs.non_reference(),
        counters: policy.counters(),
        report,
        wall_s,
        skipped_errors: source
            .skipped_errors()
            .iter()
            .map(|e| e.to_string())
            .collect(),
    })
}

fn progress_bar(source: &JobSource, synthetic_jobs: u64) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let (len, unit) = match source.progress().and_then(|p| p.total()) {
        Some(total) => (total, "{bytes}/{total_bytes}"),
        None => (synthetic_jobs, "{pos}/{len} jobs"),
    };
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template(&format!(
        "{{spinner}} simulating [{{bar:40}}] {unit} ({{eta}})"
    ))
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    Some(bar)
}

/// One line of `--jobs-out`.
#[derive(Serialize)]
struct CsvRow {
    job: u64,
    user: u32,
    submit: i64,
    start: i64,
    end: i64,
    wait: i64,
    run: i64,
    procs: u32,
    estimate: i64,
    bsld10: f64,
}

impl From<&JobRecord> for CsvRow {
    fn from(r: &JobRecord) -> CsvRow {
        CsvRow {
            job: r.id.0,
            user: r.user.0,
            submit: r.submit,
            start: r.start,
            end: r.end,
            wait: r.wait(),
            run: r.run(),
            procs: r.procs,
            estimate: r.estimate,
            bsld10: r.bsld10(),
        }
    }
}

/// `gridsim run`.
pub fn run(args: &RunArgs) -> Result<()> {
    let outcome = execute(args, !args.quiet)?;
    let stats = &outcome.report.stats;
    if outcome.workload.skipped_lines > 0 {
        eprintln!(
            "gridsim: warning: skipped {} unreadable lines; first ones:",
            outcome.workload.skipped_lines
        );
        for e in &outcome.skipped_errors {
            eprintln!("  {e}");
        }
    }
    if stats.rejected > 0 {
        eprintln!(
            "gridsim: warning: the policy refused {} jobs; first ones:",
            stats.rejected
        );
        for e in &stats.rejections {
            eprintln!("  {e}");
        }
    }
    if stats.reservations_refused > 0 {
        eprintln!(
            "gridsim: the policy refused {} of {} advance reservations; first ones:",
            stats.reservations_refused,
            stats.reservations_refused + stats.reservations_admitted
        );
        for e in &stats.reservation_refusals {
            eprintln!("  {e}");
        }
    }
    if args.json {
        say!(
            "{}",
            serde_json::to_string_pretty(&output::RunJson::new(&outcome))?
        );
    } else {
        say!("{}", output::table(&outcome));
    }
    Ok(())
}
