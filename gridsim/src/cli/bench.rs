//! `gridsim bench`: the simulator's speed, measured the way a user meets it — wall time of a whole
//! run including decompression and parsing — on every shared trace, and its growth with the
//! queue length when the same trace's arrivals are compressed (shrinking factor, §5.5) to raise
//! the load. With `--fb`, the cost of one Flexible Backfilling pass instead (see `bench_fb`).
//! Figures go to docs/performance.md; no test asserts a timing.

use super::bench_fb::{fb_pass, parse_size};
use super::dispatch_bench;
use super::knobs::Knobs;
use super::output::group;
use super::run::{RunArgs, execute};
use super::say;
use anyhow::{Result, bail};
use clap::Args;
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use gridsched_workload::{JobSource, traces};
use serde::Serialize;
use std::path::PathBuf;
use std::time::Instant;

/// Arguments of `gridsim bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Traces to time (names or prefixes in the traces directory); default: every trace there
    /// whose header gives the machine size.
    #[arg(long, value_delimiter = ',')]
    pub traces: Vec<String>,
    /// Runs per measurement; the best is reported.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// Trace for the queue-length study (empty to skip it).
    #[arg(long, default_value = "HPC2N")]
    pub growth_trace: String,
    /// Shrinking factors of the queue-length study.
    #[arg(long, value_delimiter = ',', default_value = "1.0,0.9,0.8,0.7,0.6,0.5")]
    pub factors: Vec<f64>,
    #[command(flatten)]
    pub knobs: Knobs,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Time one Flexible Backfilling pass on a filled heterogeneous cluster with licences instead
    /// of the traces.
    #[arg(long)]
    pub fb: bool,
    /// Sizes of the `--fb` study, `QUEUEDxMACHINES`.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "100x50,1000x200,10000x800"
    )]
    pub fb_sizes: Vec<String>,
    /// Time one Convergent Scheduling plan (IMFS, IMFS-warm, MFS, MIS) instead of the traces.
    #[arg(long)]
    pub cs: bool,
    /// With --cs: the (jobs x machines) points, e.g. `1000x200,5000x200` (default: 1,000 x 200,
    /// then 100 / 5,000 jobs and 50 / 800 machines).
    #[arg(long, value_delimiter = ',', value_parser = parse_point)]
    pub cs_points: Vec<(u64, u32)>,
    /// With --cs: licence types.
    #[arg(long, default_value_t = 20)]
    pub cs_licences: u16,
    /// Time one dispatch decision of every strategy instead (see [`dispatch_bench`]).
    #[arg(long)]
    pub dispatch: bool,
    /// Clusters of the dispatch benchmark.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..))]
    pub clusters: u32,
    /// Jobs dispatched (and left unfinished) before timing the dispatch benchmark.
    #[arg(long, default_value_t = 10_000)]
    pub warm_jobs: u64,
}

/// `gridsim bench --fb`.
fn bench_fb(args: &BenchArgs) -> Result<()> {
    let sizes = args
        .fb_sizes
        .iter()
        .map(|s| parse_size(s))
        .collect::<Result<Vec<_>>>()?;
    let rows = fb_pass(&sizes, args.repeat);
    if args.json {
        say!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_header(vec![
        "queued",
        "machines",
        "running",
        "started",
        "best (µs)",
        "median (µs)",
    ]);
    for r in &rows {
        t.add_row(vec![
            group(r.queued as i64),
            group(r.machines as i64),
            group(r.running as i64),
            group(r.started as i64),
            format!("{:.1}", r.best_us),
            format!("{:.1}", r.median_us),
        ]);
    }
    say!(
        "fb-unmod (fb-4.1): one scheduling pass on a filled cluster with 20 licences, {} runs",
        args.repeat
    );
    say!("{t}");
    Ok(())
}

fn parse_point(s: &str) -> Result<(u64, u32), String> {
    let (j, m) = s
        .split_once('x')
        .ok_or_else(|| format!("`{s}`: expected JOBSxMACHINES, e.g. 1000x200"))?;
    let j = j.trim().parse().map_err(|e| format!("`{s}`: jobs: {e}"))?;
    let m: u32 = m
        .trim()
        .parse()
        .map_err(|e| format!("`{s}`: machines: {e}"))?;
    if m == 0 {
        return Err(format!("`{s}`: at least one machine"));
    }
    Ok((j, m))
}

#[derive(Debug, Serialize)]
struct TraceTiming {
    trace: String,
    procs: u32,
    jobs: u64,
    parse_s: f64,
    run_s: f64,
    jobs_per_s: f64,
    mean_queue: f64,
    max_queue: usize,
    mean_wait_s: f64,
}

#[derive(Debug, Serialize)]
struct GrowthPoint {
    factor: f64,
    utilization: f64,
    mean_queue: f64,
    max_queue: usize,
    passes: u64,
    run_s: f64,
    us_per_pass: f64,
}

#[derive(Debug, Serialize)]
struct BenchReport {
    policy: String,
    traces: Vec<TraceTiming>,
    growth_trace: Option<String>,
    growth: Vec<GrowthPoint>,
}

fn run_args(trace: &str, knobs: &Knobs) -> RunArgs {
    RunArgs {
        trace: Some(trace.to_string()),
        procs: None,
        knobs: knobs.clone(),
        skip_bad_lines: false,
        synthetic_jobs: 0,
        load: 0.0,
        seed: 0,
        json: false,
        jobs_out: None,
        reservations: None,
        quiet: true,
    }
}

fn best<T>(repeat: u32, mut f: impl FnMut() -> Result<(f64, T)>) -> Result<(f64, T)> {
    let mut best: Option<(f64, T)> = None;
    for _ in 0..repeat {
        let (t, v) = f()?;
        if best.as_ref().is_none_or(|(b, _)| t < *b) {
            best = Some((t, v));
        }
    }
    Ok(best.expect("repeat >= 1"))
}

/// `gridsim bench`.
pub fn bench(args: &BenchArgs) -> Result<()> {
    if args.fb {
        return bench_fb(args);
    }
    if args.cs {
        let points = if args.cs_points.is_empty() {
            super::bench_cs::default_points()
        } else {
            args.cs_points.clone()
        };
        return super::bench_cs::bench_cs(&points, args.cs_licences, args.repeat, args.json);
    }
    if args.dispatch {
        return dispatch_bench::run(args.clusters, args.warm_jobs, args.repeat, args.json);
    }
    let dir = traces::dir();
    let names: Vec<PathBuf> = if args.traces.is_empty() {
        traces::list(&dir)
    } else {
        args.traces
            .iter()
            .map(|n| traces::resolve(n, &dir).map_err(anyhow::Error::msg))
            .collect::<Result<_>>()?
    };
    if names.is_empty() {
        bail!(
            "no trace found in {} (set {})",
            dir.display(),
            traces::TRACES_ENV
        );
    }
    let mut report = BenchReport {
        policy: args.knobs.policy.to_string(),
        traces: Vec::new(),
        growth_trace: None,
        growth: Vec::new(),
    };
    for path in &names {
        let name = path.display().to_string();
        match JobSource::open(path, None, args.knobs.normalize()) {
            Ok(s) if s.normalized_procs().is_some() => {}
            _ => {
                eprintln!("gridsim bench: skipping {name}: its header gives no machine size");
                continue;
            }
        }
        let (parse_s, jobs) = best(args.repeat, || {
            let t = Instant::now();
            let mut n = 0u64;
            for j in JobSource::open(path, None, args.knobs.normalize())? {
                j?;
                n += 1;
            }
            Ok((t.elapsed().as_secs_f64(), n))
        })?;
        let ra = run_args(&name, &args.knobs);
        let (run_s, o) = best(args.repeat, || {
            let o = execute(&ra, false)?;
            Ok((o.wall_s, o))
        })?;
        eprintln!("gridsim bench: {name}: {jobs} jobs, parse {parse_s:.3} s, run {run_s:.3} s");
        report.traces.push(TraceTiming {
            trace: path
                .file_name()
                .map_or(name.clone(), |n| n.to_string_lossy().into_owned()),
            procs: o.workload.procs,
            jobs,
            parse_s,
            run_s,
            jobs_per_s: jobs as f64 / run_s,
            mean_queue: o.report.stats.mean_waiting,
            max_queue: o.report.stats.max_waiting,
            mean_wait_s: o.report.summary.mean_wait_s,
        });
    }
    if !args.growth_trace.is_empty() {
        let path = traces::resolve(&args.growth_trace, &dir).map_err(anyhow::Error::msg)?;
        report.growth_trace = Some(path.display().to_string());
        for &f in &args.factors {
            let mut knobs = args.knobs.clone();
            knobs.shrink = Some(f);
            let ra = run_args(&path.display().to_string(), &knobs);
            let (run_s, o) = best(args.repeat, || {
                let o = execute(&ra, false)?;
                Ok((o.wall_s, o))
            })?;
            let st = &o.report.stats;
            eprintln!(
                "gridsim bench: shrink {f}: mean queue {:.1}, run {run_s:.3} s",
                st.mean_waiting
            );
            report.growth.push(GrowthPoint {
                factor: f,
                utilization: o.report.summary.utilization,
                mean_queue: st.mean_waiting,
                max_queue: st.max_waiting,
                passes: st.passes,
                run_s,
                us_per_pass: run_s * 1e6 / st.passes.max(1) as f64,
            });
        }
    }
    if args.json {
        say!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_header(vec![
        "trace",
        "procs",
        "jobs",
        "parse (s)",
        "run (s)",
        "jobs/s",
        "queue mean / max",
    ]);
    for r in &report.traces {
        t.add_row(vec![
            r.trace.clone(),
            group(i64::from(r.procs)),
            group(r.jobs as i64),
            format!("{:.3}", r.parse_s),
            format!("{:.3}", r.run_s),
            group(r.jobs_per_s as i64),
            format!("{:.1} / {}", r.mean_queue, group(r.max_queue as i64)),
        ]);
    }
    say!(
        "{} — wall time including decompression and parsing, best of {}",
        report.policy,
        args.repeat
    );
    say!("{t}");
    if let Some(g) = &report.growth_trace {
        let mut t = Table::new();
        t.load_style(UTF8_FULL_CONDENSED);
        t.set_header(vec![
            "shrink",
            "utilization",
            "queue mean / max",
            "passes",
            "run (s)",
            "µs / pass",
        ]);
        for p in &report.growth {
            t.add_row(vec![
                format!("{}", p.factor),
                format!("{:.1} %", 100.0 * p.utilization),
                format!("{:.1} / {}", p.mean_queue, group(p.max_queue as i64)),
                group(p.passes as i64),
                format!("{:.3}", p.run_s),
                format!("{:.2}", p.us_per_pass),
            ]);
        }
        say!("queue length growth on {g} (arrivals compressed by the shrinking factor)");
        say!("{t}");
    }
    Ok(())
}
