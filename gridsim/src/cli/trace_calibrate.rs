//! `gridsim trace calibrate`: the stage-4 search for the adjusted scaling factor of Ernemann,
//! Song & Yahyapour (2003) §3.3 (`gang-urgent-scaling.md` C.6, Tables 4–5), run instead of
//! looking the factor up in Table 4.
//!
//! The reference is the original trace on its original machine under the scheduler S (EASY or
//! FCFS); every scanned factor f scales the trace with the precise stage (size factor f, mean
//! copy count f, the decision method with d, seeded as `trace scale` is) and runs the scaled
//! workload under S on the target machine. Both are the runs `gridsim run` makes: the trace read
//! with the reference normalisation, `PolicyConfig::new(S)` on one machine, the reference engine
//! options. The rows, their distance from the reference and the choice are
//! `gridsched_workload::scale::calibrate`'s. The runs are spread over `--threads` threads; each
//! result is stored at its factor's index, so the report does not depend on the thread count.

use anyhow::{Result, anyhow, bail};
use clap::{Args, ValueEnum};
use gridsched_core::model::{Job, MachineId};
use gridsched_core::policy::{PolicyConfig, PolicyKind};
use gridsched_workload::scale::{
    Calibration, FactorSearch, Method, Outcome, Row, Scale, ScaleOptions, Scan, Stage,
    adjusted_factor, precise_factor,
};
use gridsched_workload::{JobSource, NormalizeOptions, traces};
use gridsim::{EngineOptions, Hooks, simulate};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::convert::Infallible;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// The validation scheduler S of the search.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SearchPolicy {
    /// EASY backfilling (the study's recommended choice).
    Easy,
    /// Strict FCFS.
    Fcfs,
}

impl SearchPolicy {
    /// The policy kind `gridsim run --policy` builds for it.
    pub fn kind(self) -> PolicyKind {
        match self {
            SearchPolicy::Easy => PolicyKind::Easy,
            SearchPolicy::Fcfs => PolicyKind::Fcfs,
        }
    }

    /// Which column of Table 4 it was calibrated with.
    pub fn calibration(self) -> Calibration {
        match self {
            SearchPolicy::Easy => Calibration::Easy,
            SearchPolicy::Fcfs => Calibration::Fcfs,
        }
    }

    /// `EASY` or `FCFS`.
    pub fn name(self) -> &'static str {
        match self {
            SearchPolicy::Easy => "EASY",
            SearchPolicy::Fcfs => "FCFS",
        }
    }
}

/// Arguments of `gridsim trace calibrate`.
#[derive(Clone, Debug, Args)]
pub struct CalibrateArgs {
    /// Trace: name, prefix or path (SWF, plain or gzip, or JSON Lines).
    #[arg(long)]
    pub trace: String,
    /// Original machine size (default: the trace header's).
    #[arg(long)]
    pub procs: Option<u32>,
    /// Target machine size.
    #[arg(long, default_value_t = 1024)]
    pub to: u32,
    /// Validation scheduler S: the one that produced the trace.
    #[arg(long, value_enum, default_value = "easy")]
    pub policy: SearchPolicy,
    /// Decision value d in [0, 100].
    #[arg(long, default_value_t = 50.0)]
    pub d: f64,
    /// First factor (default: the precise factor f* = to / procs).
    #[arg(long, allow_negative_numbers = true)]
    pub from: Option<f64>,
    /// Increment of the factor.
    #[arg(long, default_value_t = Scan::DEFAULT_STEP, allow_negative_numbers = true)]
    pub step: f64,
    /// Number of factors (default 61: f* … f* + 0.60 with the default step).
    #[arg(long, default_value_t = Scan::DEFAULT_STEPS)]
    pub steps: u32,
    /// Seed of the scaling's random stream (the same for every factor).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Threads for the simulations (0 = all cores).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// A trace read into memory with the reference normalisation, and its machine size.
pub struct Loaded {
    /// The resolved file.
    pub path: PathBuf,
    /// Its jobs, in order.
    pub jobs: Vec<Job>,
    /// The original machine size (`procs`, else the header's).
    pub procs: u32,
    /// The licence names of a JSON Lines input.
    pub licence_names: Vec<String>,
}

impl Loaded {
    /// Reads `trace` (name, prefix or path); `procs` overrides the header's machine size, and
    /// `option` names that override in the error when neither gives one.
    pub fn read(trace: &str, procs: Option<u32>, option: &str) -> Result<Loaded> {
        let path = traces::resolve(trace, &traces::dir()).map_err(|e| anyhow!(e))?;
        let mut src = JobSource::open(&path, None, NormalizeOptions::default())?;
        let Some(procs) = procs.or(src.normalized_procs()) else {
            bail!(
                "{}: the header gives no machine size; pass {option}",
                path.display()
            );
        };
        let mut jobs = Vec::new();
        for j in src.by_ref() {
            jobs.push(j?);
        }
        Ok(Loaded {
            path,
            jobs,
            procs,
            licence_names: src.licence_names().to_vec(),
        })
    }

    /// The file name, for Table 4's lookup by name.
    pub fn file_name(&self) -> String {
        self.path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    }
}

/// What a search needs besides the jobs.
#[derive(Clone, Copy, Debug)]
pub struct SearchSpec {
    /// Original machine size (the reference run's).
    pub original: u32,
    /// Target machine size (the scaled runs').
    pub target: u32,
    /// The validation scheduler.
    pub policy: SearchPolicy,
    /// Decision value (or copies / widths).
    pub method: Method,
    /// Seed of the scaling.
    pub seed: u64,
    /// The factors.
    pub scan: Scan,
    /// Threads (0 = all cores).
    pub threads: usize,
}

impl SearchSpec {
    /// The scaling options of factor `f`.
    pub fn options(&self, f: f64) -> ScaleOptions {
        ScaleOptions {
            target: self.target,
            stage: Stage::Precise(f),
            method: self.method,
            seed: self.seed,
        }
    }
}

/// Runs `jobs` under `policy` on one machine of `procs` processors, as `gridsim run` does.
pub fn outcome(policy: PolicyKind, procs: u32, jobs: impl Iterator<Item = Job>) -> Result<Outcome> {
    let mut p = PolicyConfig::new(policy).build_single(MachineId(0), procs);
    let report = simulate(
        p.as_mut(),
        &[procs],
        jobs.map(Ok::<Job, Infallible>),
        &EngineOptions::default(),
        Hooks::default(),
    )?;
    if report.stats.rejected > 0 {
        bail!(
            "the policy refused {} jobs on {procs} processors (first: {})",
            report.stats.rejected,
            report.stats.rejections.first().map_or("", String::as_str)
        );
    }
    let s = &report.summary;
    let capacity = f64::from(procs) * s.makespan_s as f64;
    Ok(Outcome {
        jobs: s.jobs,
        makespan: s.makespan_s,
        utilization: if capacity > 0.0 {
            s.squashed_area / capacity
        } else {
            0.0
        },
        awwt: s.awwt,
        awrt: s.awrt,
        area: s.squashed_area,
    })
}

/// The search: the reference run and one scaled run per factor, on `spec.threads` threads.
pub fn search(jobs: &[Job], spec: &SearchSpec) -> Result<FactorSearch> {
    let factors = spec.scan.factors();
    for &f in &factors {
        spec.options(f).validate()?;
    }
    let kind = spec.policy.kind();
    // Task 0 is the reference, task i ≥ 1 the factor i − 1.
    let tasks = factors.len() + 1;
    let threads = match spec.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        t => t,
    }
    .min(tasks);
    let bar = if std::io::stderr().is_terminal() {
        ProgressBar::with_draw_target(Some(tasks as u64), ProgressDrawTarget::stderr())
    } else {
        ProgressBar::hidden()
    };
    if let Ok(style) =
        ProgressStyle::with_template("calibrating [{bar:40}] {pos}/{len} runs ({eta})")
    {
        bar.set_style(style);
    }
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<Result<Outcome>>>> = (0..tasks).map(|_| Mutex::new(None)).collect();
    let run = |i: usize| -> Result<Outcome> {
        if i == 0 {
            return outcome(kind, spec.original, jobs.iter().cloned());
        }
        let f = factors[i - 1];
        let scaled = Scale::new(jobs.iter().cloned(), spec.options(f))?.map(|s| s.job);
        outcome(kind, spec.target, scaled).map_err(|e| e.context(format!("factor {f}")))
    };
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= tasks {
                        break;
                    }
                    let r = run(i);
                    *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                    bar.inc(1);
                }
            });
        }
    });
    bar.finish_and_clear();
    let mut results = slots.into_iter().map(|m| {
        m.into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .unwrap_or_else(|| Err(anyhow!("a run did not execute")))
    });
    let reference = results.next().expect("the reference task")?;
    let runs = factors
        .iter()
        .zip(results)
        .map(|(&f, r)| r.map(|o| (f, o)))
        .collect::<Result<Vec<_>>>()?;
    FactorSearch::new(reference, runs).ok_or_else(|| anyhow!("no factor was scanned"))
}

/// A factor with two to four decimals (10.71, 4.2667).
pub fn fmt_factor(f: f64) -> String {
    let s = format!("{f:.4}");
    let t = s.trim_end_matches('0');
    match t.split_once('.') {
        Some((_, dec)) if dec.len() >= 2 => t.to_string(),
        _ => format!("{f:.2}"),
    }
}

fn pct(x: f64) -> String {
    format!("{:.2} %", 100.0 * x)
}

/// The rows as a text table like the study's Table 5, the chosen row marked `*`.
fn table(search: &FactorSearch, original: u32) -> String {
    let mut out = format!(
        "{:>9}  {:>8}  {:>10}  {:>6}  {:>10}  {:>10}  {:>14}  {:>9}\n",
        "f", "jobs", "makespan", "util", "AWWT", "AWRT", "area", "distance"
    );
    let line = |label: String, o: &Outcome, dist: String| {
        format!(
            "{label:>9}  {:>8}  {:>10}  {:>5.1}%  {:>10.0}  {:>10.0}  {:>14.0}  {dist:>9}\n",
            o.jobs,
            o.makespan,
            100.0 * o.utilization,
            o.awwt,
            o.awrt,
            o.area
        )
    };
    out += &line(
        format!("ref ({original})"),
        &search.reference,
        String::new(),
    );
    for (i, r) in search.rows.iter().enumerate() {
        let mark = if i == search.chosen { "*" } else { " " };
        out += &line(
            format!("{mark}{}", fmt_factor(r.factor)),
            &r.outcome,
            pct(r.distance),
        );
    }
    out
}

/// Signed relative error of `x` against `r`, as text.
fn signed(x: f64, r: f64) -> String {
    format!("{:+.2} %", 100.0 * (x - r) / r.abs().max(1.0))
}

/// `gridsim trace calibrate`.
pub fn calibrate(a: &CalibrateArgs) -> Result<()> {
    let t0 = Instant::now();
    // The range's options are checked before the trace is read.
    Scan::new(a.from.unwrap_or(1.0), a.step, a.steps)?;
    let loaded = Loaded::read(&a.trace, a.procs, "--procs")?;
    let fstar = precise_factor(loaded.procs, a.to)?;
    let scan = Scan::new(a.from.unwrap_or(fstar), a.step, a.steps)?;
    let spec = SearchSpec {
        original: loaded.procs,
        target: a.to,
        policy: a.policy,
        method: Method::Decision(a.d),
        seed: a.seed,
        scan,
        threads: a.threads,
    };
    let threads = match a.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        t => t,
    };
    let found = search(&loaded.jobs, &spec)?;
    let wall_s = t0.elapsed().as_secs_f64();
    let name = loaded.file_name();
    let published = adjusted_factor(&name, a.policy.calibration()).filter(|_| a.to == 1024);
    let best: &Row = found.best();
    let reference = &found.reference;
    if a.json {
        let published_json = published.map(|f| {
            let row = found.row_of(f);
            serde_json::json!({
                "factor": f,
                "scanned": row.is_some(),
                "distance": row.map(|r| r.distance),
            })
        });
        let v = serde_json::json!({
            "trace": loaded.path.display().to_string(),
            "policy": a.policy.kind().as_str(),
            "from_procs": loaded.procs,
            "to": a.to,
            "d": a.d,
            "seed": a.seed,
            "precise_factor": fstar,
            "scan": scan,
            "distance_rule": "max(|AWRT - AWRT_ref| / AWRT_ref, |AWWT - AWWT_ref| / AWWT_ref), \
                              denominators at least 1 s; ties to the smaller f",
            "reference": reference,
            "rows": found.rows,
            "chosen": best,
            "chosen_at_upper_end": found.chosen_at_upper_end(),
            "published": published_json,
            "threads": threads,
            "wall_s": wall_s,
        });
        super::say!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    let last = found.rows.last().map_or(scan.from, |r| r.factor);
    super::say!(
        "{name}: stage-4 search (Ernemann et al. 2003 §3.3) under {}, d = {}, seed {}, \
         {} → {} processors, f* = {}, f = {} … {} step {} ({} factors)",
        a.policy.name(),
        a.d,
        a.seed,
        loaded.procs,
        a.to,
        fmt_factor(fstar),
        fmt_factor(scan.from),
        fmt_factor(last),
        a.step,
        scan.steps
    );
    super::say!("{}", table(&found, loaded.procs).trim_end());
    super::say!(
        "chosen f = {}: distance {} (AWRT {}, AWWT {}); distance = larger relative error of AWRT \
         and AWWT, ties to the smaller f",
        fmt_factor(best.factor),
        pct(best.distance),
        signed(best.outcome.awrt, reference.awrt),
        signed(best.outcome.awwt, reference.awwt)
    );
    if found.chosen_at_upper_end() {
        super::say!(
            "note: the chosen f is the last one scanned; AWRT/AWWT may come closer beyond it \
             (raise --steps or --from)"
        );
    }
    if let Some(f) = published {
        match found.row_of(f) {
            Some(r) => super::say!(
                "Table 4 publishes f = {}: distance here {} (AWRT {}, AWWT {})",
                fmt_factor(f),
                pct(r.distance),
                signed(r.outcome.awrt, reference.awrt),
                signed(r.outcome.awwt, reference.awwt)
            ),
            None => super::say!("Table 4 publishes f = {} (not scanned)", fmt_factor(f)),
        }
    }
    super::say!("{threads} threads, {wall_s:.1} s");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factors_print_with_two_to_four_decimals() {
        assert_eq!(fmt_factor(10.71), "10.71");
        assert_eq!(fmt_factor(8.0), "8.00");
        assert_eq!(fmt_factor(10.7), "10.70");
        assert_eq!(fmt_factor(1024.0 / 240.0), "4.2667");
        assert_eq!(fmt_factor(2.381), "2.381");
    }
}
