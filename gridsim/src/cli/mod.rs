//! Command-line parsing and dispatch of `gridsim`.

mod bench;
mod bench_cs;
mod bench_fb;
mod chaos;
mod cluster;
mod dispatch_bench;
mod experiment;
mod grid;
mod knobs;
mod output;
mod rerun;
mod run;
mod trace;
mod trace_calibrate;
mod trace_out;
mod trace_synth;

use clap::{Parser, Subcommand};
use std::io::Write;
use std::process::ExitCode;

/// `println!` that ends the program quietly when stdout is closed (`gridsim ... | head`) instead of
/// panicking.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::cli::write_line(format_args!($($arg)*))
    };
}
pub(crate) use say;

/// Writes one line to stdout; a closed pipe ends the process with success, any other error with 1.
pub(crate) fn write_line(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.write_all(b"\n")) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("gridsim: error: writing to stdout: {e}");
        std::process::exit(1);
    }
}

/// gridsched's simulator: replays real workload traces and synthetic streams through the same
/// scheduling code the live grid runs.
#[derive(Debug, Parser)]
#[command(name = "gridsim", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Replay a trace (SWF, plain or gzip; or native JSON Lines) or the built-in synthetic
    /// workload through one policy and print the metrics.
    Run(Box<run::RunArgs>),
    /// Time the simulator on the shared traces and on rising loads (queue lengths).
    Bench(bench::BenchArgs),
    /// Run a cluster policy (FB, EASY, FCFS, EDF) on heterogeneous clusters with licences: a
    /// synthetic set-up of the paper or your own platform and workload.
    Cluster(Box<cluster::ClusterArgs>),
    /// Run the multi-site grid study once: a workload on a machine configuration (Tab. 7.1)
    /// under local processing, job sharing or multi-site scheduling.
    Grid(Box<grid::GridArgs>),
    /// Run a published experiment in parallel and write runs.csv, summary.json, SVG figures
    /// and report.md to --out.
    Experiment(experiment::ExperimentArgs),
    /// Transform workload traces: `trace scale` (Ernemann's scaling to a larger machine),
    /// `trace calibrate` (its stage-4 search for the adjusted factor), `trace synth`.
    Trace(trace::TraceArgs),
    /// Run a live input log through the same runner again and check that it makes the same
    /// decisions: a local scheduler's through the cluster runner, the meta-scheduler's through
    /// the grid runner.
    Rerun(rerun::RerunArgs),
    /// Run the whole grid (meta-scheduler, sites, network) under deterministic fault simulation
    /// over a range of seeds and check its invariants after every step.
    Chaos(chaos::ChaosArgs),
}

/// Runs the command line; errors are printed on stderr with exit code 1.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run::run(&args),
        Command::Bench(args) => bench::bench(&args),
        Command::Cluster(args) => cluster::cluster(&args),
        Command::Grid(args) => grid::grid(&args),
        Command::Experiment(args) => experiment::experiment(&args),
        Command::Trace(args) => trace::trace(&args),
        Command::Rerun(args) => rerun::rerun(&args),
        Command::Chaos(args) => chaos::chaos(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gridsim: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
