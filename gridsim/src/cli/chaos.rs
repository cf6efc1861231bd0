//! `gridsim chaos`: the whole grid under deterministic fault simulation ([`gridsim::chaos`]) over a
//! range of seeds, for the nightly habit (CI runs a few thousand in its tests). Prints the totals
//! and, for each failing seed, its invariant, its shrunk plan and the trace of the jobs it names;
//! `--seed N` runs one seed again, exactly.

use super::say;
use anyhow::{Result, bail};
use gridsim::chaos::{self, Mutation};
use std::time::Instant;

/// Arguments of `gridsim chaos`.
#[derive(Debug, clap::Args)]
pub struct ChaosArgs {
    /// Seeds to run.
    #[arg(long, default_value_t = 10_000)]
    pub seeds: u64,
    /// The first seed.
    #[arg(long, default_value_t = 0)]
    pub from: u64,
    /// Run this one seed (and print its trace if it fails).
    #[arg(long, conflicts_with_all = ["seeds", "from"])]
    pub seed: Option<u64>,
    /// Break one rule on purpose, to see its invariant catch it.
    #[arg(long, value_enum)]
    pub mutation: Option<Mutation>,
}

/// Runs `gridsim chaos`.
pub fn chaos(args: &ChaosArgs) -> Result<()> {
    let (from, count) = match args.seed {
        Some(s) => (s, 1),
        None => (args.from, args.seeds),
    };
    let clock = Instant::now();
    let s = chaos::sweep(from, count, args.mutation);
    let t = &s.total;
    say!(
        "{} seeds ({}..{}) in {:.1} s: {} failed",
        s.seeds,
        from,
        from + count,
        clock.elapsed().as_secs_f64(),
        s.failures.len()
    );
    if (s.failures.len() as u64) < s.seeds {
        say!(
            "passed seeds: {} steps, {} jobs acknowledged: {} completed ({} split over sites), {} failed, {} cancelled, {} refused; {} faults injected, {} messages lost, {} duplicated",
            t.steps,
            t.jobs,
            t.completed,
            t.split,
            t.failed,
            t.cancelled,
            t.refused,
            t.faults,
            t.lost,
            t.duplicated
        );
    }
    for f in &s.failures {
        say!("\n{f}");
    }
    if !s.failures.is_empty() {
        bail!(
            "{} of {} seeds broke an invariant",
            s.failures.len(),
            s.seeds
        );
    }
    Ok(())
}
