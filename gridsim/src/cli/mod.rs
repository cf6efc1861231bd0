//! Command-line parsing and dispatch of `gridsim`.

mod bench;
mod cluster;
mod dispatch_bench;
mod experiment;
mod grid;
mod knobs;
mod output;
mod run;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

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
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gridsim: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
