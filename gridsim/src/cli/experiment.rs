//! `gridsim experiment <name> --out DIR`: runs one of the published experiments in parallel and
//! writes runs.csv, summary.json, the SVG figures and report.md (see [`gridsim::experiment`]).

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use gridsim::experiment::{
    Experiment, Options, adh, constraints::ConstraintsExperiment, cs::CsExperiment,
    data::DataExperiment, dynp::DynpExperiment, eg_edf::EgEdfExperiment,
    fairshare::FairShareExperiment, fb::FbExperiment, gang::GangExperiment, lcg::LcgExperiment,
    mkp::MkpExperiment, ms_cs, ms_fb, multisite::MultisiteExperiment, output, runner,
    two_level::TwoLevelExperiment, urgent::UrgentExperiment, workflows::WorkflowsExperiment,
};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

/// The experiments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Name {
    /// D9.1: Flexible Backfilling on one cluster (FCFS, BF_FCFS, BF_UNMOD, BF_MOD).
    Fb,
    /// Streit §6: local / job sharing / multi-site (constrained, adaptive) on Tab. 7.1's grids.
    Multisite,
    /// Streit §7.3.3: constrained multi-site over lower bounds × fragment limits × overheads.
    MultisiteConstraints,
    /// D9.2: Convergent Scheduling variants against BF-easy, Flexible Backfilling and EDF.
    Cs,
    /// D9.2: the greedy knapsack pre-matching against branch and bound (Table 5).
    Mkp,
    /// D9.3: meta-scheduler + Flexible Backfilling on 4 clusters (MS / LS / NO heuristics).
    MsFb,
    /// D9.4: meta-scheduler + local CS, FCFS, EASY, Flexible Backfilling on 4 clusters.
    MsCs,
    /// Every dispatch strategy and a home-site baseline on the LCG grid trace (one cluster per site).
    Lcg,
    /// Streit Ch. 5: the self-tuning dynP scheduler against FCFS, SJF and LJF planning.
    Dynp,
    /// D10.2 (thesis §5.2.3): schedule-based EG-EDF and Tabu search against FCFS and backfilling.
    EgEdf,
    /// Thesis §5.1.5: the self-optimizing Deadline classification (ADH) against the static one.
    Adh,
    /// Kurowski et al. §5: urgent jobs preempting typical ones, four brokers, on two KTH sites.
    Urgent,
    /// Zhang et al. §6.3–§6.6: BF, GS, BGS, MGS and MBGS on a 320-processor machine.
    Gang,
    /// Topcuoglu et al. §4.1: HEFT against MCT, Min-Min, Max-Min, Sufferage on workflow streams.
    Workflows,
    /// Data-aware dispatch (MCT, Min-Min, HEFT counting input transfers) against data-blind.
    Data,
    /// Fair share (Slurm's classic, Fair Tree, dominant resource) against the seeds' classifier,
    /// FCFS and EASY over the shared traces' users.
    Fairshare,
}

/// Arguments of `gridsim experiment`.
#[derive(Clone, Debug, Args)]
pub struct ExperimentArgs {
    /// Which experiment.
    #[arg(value_enum)]
    pub name: Name,
    /// Output directory (created if needed).
    #[arg(long)]
    pub out: PathBuf,
    /// Reduced sizes (few jobs, two inter-arrival times, two repetitions), for tests.
    #[arg(long)]
    pub quick: bool,
    /// Repetitions per configuration (default 20, or 2 with --quick; for `dynp`, the synthetic
    /// sets per family: default 10).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub reps: Option<u32>,
    /// Jobs per workload (`gang`: default 3,000, the paper's 10,000 with --jobs 10000; `data`:
    /// default 1,000).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub jobs: Option<u64>,
    /// Base seed; repetition r uses seed + r.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Worker threads (default: every core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// No progress bar (it is shown only when stderr is a terminal anyway).
    #[arg(long)]
    pub quiet: bool,
    /// Run nothing: rewrite runs.csv, summary.json, the figures and report.md in --out from these
    /// stored runs.csv files (merged in order; e.g. repetitions run in chunks with --seed and
    /// --reps, which should then describe the merged set).
    #[arg(long, num_args = 1.., value_name = "RUNS_CSV")]
    pub report_from: Vec<PathBuf>,
    /// Run only these configurations, `ALGORITHM` or `ALGORITHM/VARIANT` (an empty variant:
    /// `ALGORITHM/`), e.g. to run one algorithm again after a change and merge its runs.csv with
    /// the others' through --report-from. The report then covers these runs alone.
    #[arg(long, value_delimiter = ',', value_name = "ALGORITHM[/VARIANT]")]
    pub only: Vec<String>,
}

/// Runs the experiment.
pub fn experiment(args: &ExperimentArgs) -> Result<()> {
    let opts = Options {
        quick: args.quick,
        reps: args.reps,
        seed: args.seed,
        jobs: args.jobs.map(|j| j as usize),
    };
    let exp: Box<dyn Experiment> = match args.name {
        Name::Fb => Box::new(FbExperiment::new(&opts)),
        Name::Multisite => Box::new(MultisiteExperiment::new(&opts)?),
        Name::MultisiteConstraints => Box::new(ConstraintsExperiment::new(&opts)?),
        Name::Cs => Box::new(CsExperiment::new(&opts)),
        Name::Mkp => Box::new(MkpExperiment::new(&opts)),
        Name::MsFb => Box::new(TwoLevelExperiment::new(&opts, &ms_fb::SPEC)),
        Name::MsCs => Box::new(TwoLevelExperiment::new(&opts, &ms_cs::SPEC)),
        Name::Lcg => Box::new(LcgExperiment::new(&opts)?),
        Name::Dynp => Box::new(DynpExperiment::new(&opts)?),
        Name::EgEdf => Box::new(EgEdfExperiment::new(&opts)),
        Name::Adh => Box::new(adh::AdhExperiment::new(&opts)),
        Name::Urgent => Box::new(UrgentExperiment::new(&opts)?),
        Name::Gang => Box::new(GangExperiment::new(&opts)?),
        Name::Workflows => Box::new(WorkflowsExperiment::new(&opts)),
        Name::Data => Box::new(DataExperiment::new(&opts)),
        Name::Fairshare => Box::new(FairShareExperiment::new(&opts)?),
    };
    if args.out.is_file() {
        bail!(
            "--out {}: is a file, expected a directory",
            args.out.display()
        );
    }
    if !args.report_from.is_empty() {
        let mut rows = Vec::new();
        for p in &args.report_from {
            rows.extend(output::read_csv(p)?);
        }
        output::write_rows(exp.as_ref(), &rows, &args.out)?;
        eprintln!(
            "experiment {}: report from {} stored runs in {}",
            exp.name(),
            rows.len(),
            args.out.display()
        );
        return Ok(());
    }
    let t0 = Instant::now();
    let progress = !args.quiet && std::io::stderr().is_terminal();
    let mut keys = exp.runs();
    if !args.only.is_empty() {
        let wanted = |k: &gridsim::experiment::RunKey| {
            args.only.iter().any(|o| match o.split_once('/') {
                Some((a, v)) => k.algorithm == a && k.variant == v,
                None => k.algorithm == *o,
            })
        };
        for o in &args.only {
            let alg = o.split_once('/').map_or(o.as_str(), |(a, _)| a);
            if !keys.iter().any(|k| k.algorithm == alg) {
                let mut known: Vec<&str> = Vec::new();
                for k in &keys {
                    if !known.contains(&k.algorithm.as_str()) {
                        known.push(&k.algorithm);
                    }
                }
                bail!(
                    "--only {o}: {} has no algorithm `{alg}` (it has: {})",
                    exp.name(),
                    known.join(", ")
                );
            }
        }
        keys.retain(wanted);
    }
    let results = runner::run_keys(exp.as_ref(), keys, args.threads, progress)?;
    output::write_all(exp.as_ref(), &results, &args.out)?;
    eprintln!(
        "experiment {}: {} runs in {:.1} s; results in {}",
        exp.name(),
        results.len(),
        t0.elapsed().as_secs_f64(),
        args.out.display()
    );
    Ok(())
}
