//! `gridsim grid`: one run of the multi-site grid study — a workload on a machine configuration of
//! Tab. 7.1 (or any list of machine sizes) under one scenario — printing the §3.4 metrics.

use super::say;
use anyhow::{Result, anyhow, bail};
use clap::{Args, ValueEnum};
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use gridsim::experiment::multisite::{Workload, synthetic_workload, trace_workload};
use gridsim::grid::{Fragments, GridConfig, MachineConfig, Modification, Scenario, simulate_grid};

/// Scenarios on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ScenarioArg {
    /// Each site alone.
    Local,
    /// One grid scheduler, one machine per job.
    JobSharing,
    /// Jobs may span machines.
    MultiSite,
}

/// Arguments of `gridsim grid`.
#[derive(Clone, Debug, Args)]
pub struct GridArgs {
    /// Machine configuration: m64, m64-8, m128, m256, m256-5, m384, m512, or sizes like 128,128,256.
    #[arg(long, default_value = "m128")]
    pub config: String,
    /// Scenario.
    #[arg(long, value_enum, default_value = "multi-site")]
    pub scenario: ScenarioArg,
    /// WAN overhead p of a multi-site job, percent.
    #[arg(long, default_value_t = 0)]
    pub overhead: u32,
    /// Split only jobs wider than this (multi-site).
    #[arg(long, default_value_t = 0)]
    pub lower_bound: u32,
    /// Limit fragments as Tab. 7.5's "limited" column.
    #[arg(long)]
    pub limited_fragments: bool,
    /// The adaptive wait-or-split rule.
    #[arg(long)]
    pub adaptive: bool,
    /// Split wide jobs to the largest machine first (workload modification 2).
    #[arg(long)]
    pub split_to_largest: bool,
    /// Our variant: at p = 0 the grid behaves as one machine of the summed size (a split may
    /// also backfill, and wins ties); the thesis's scheduler has no such rule.
    #[arg(long)]
    pub pooled_at_zero: bool,
    /// Trace (name, prefix or path) whose jobs 10,001–20,000 are used, widths scaled to the grid;
    /// default: the synthetic workload.
    #[arg(long)]
    pub trace: Option<String>,
    /// Jobs.
    #[arg(long, default_value_t = 10_000)]
    pub jobs: usize,
    /// Seed of the synthetic workload.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Home site from the SWF partition field instead of round robin.
    #[arg(long)]
    pub by_partition: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

fn sizes(spec: &str) -> Result<(String, Vec<u32>)> {
    if let Some(c) = MachineConfig::preset(spec) {
        return Ok((c.name.to_string(), c.sizes));
    }
    let v: Result<Vec<u32>, _> = spec.split(',').map(|x| x.trim().parse::<u32>()).collect();
    match v {
        Ok(v) if !v.is_empty() && v.iter().all(|&n| n > 0) => Ok((spec.to_string(), v)),
        _ => bail!(
            "--config {spec}: expected m64, m64-8, m128, m256, m256-5, m384, m512 or a list of positive sizes"
        ),
    }
}

/// Runs the command.
pub fn grid(args: &GridArgs) -> Result<()> {
    let (name, sizes) = sizes(&args.config)?;
    let total: u32 = sizes.iter().sum();
    let w: Workload = match &args.trace {
        Some(t) => trace_workload(t, 10_000, args.jobs, total)?,
        None => synthetic_workload(args.jobs as u64, args.seed, total)?,
    };
    let cfg = GridConfig {
        scenario: match args.scenario {
            ScenarioArg::Local => Scenario::Local,
            ScenarioArg::JobSharing => Scenario::JobSharing,
            ScenarioArg::MultiSite => Scenario::MultiSite,
        },
        overhead_pct: args.overhead,
        lower_bound: args.lower_bound,
        fragments: if args.limited_fragments {
            Fragments::Limited
        } else {
            Fragments::Unlimited
        },
        adaptive: args.adaptive,
        modification: if args.split_to_largest {
            Modification::Largest
        } else {
            Modification::ScenarioDefault
        },
        pooled_at_zero: args.pooled_at_zero,
    };
    if w.jobs.is_empty() {
        return Err(anyhow!("the workload has no job"));
    }
    let (r, _) = simulate_grid(&sizes, &cfg, &w.jobs, args.by_partition)?;
    if args.json {
        say!(
            "{}",
            serde_json::json!({"workload": w.name, "config": name, "sizes": sizes, "settings": cfg, "report": r})
        );
        return Ok(());
    }
    say!(
        "{} ({} jobs) on {name} ({} machines, {total} nodes), {}",
        w.name,
        w.jobs.len(),
        sizes.len(),
        cfg.scenario.as_str()
    );
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_header(vec!["metric", "value"]);
    for (k, v) in [
        ("jobs run (after splitting)", r.jobs.to_string()),
        ("refused", r.refused.to_string()),
        (
            "AWRT (h, width-weighted)",
            format!("{:.3}", r.awrt / 3600.0),
        ),
        (
            "AWWT (h, width-weighted)",
            format!("{:.3}", r.awwt / 3600.0),
        ),
        (
            "AWRT (h, consumption-weighted)",
            format!("{:.3}", r.awrt_rc / 3600.0),
        ),
        ("multi-site jobs", r.multi_site_jobs.to_string()),
        (
            "multi-site area share %",
            format!("{:.2}", r.multi_site_area_pct),
        ),
        ("makespan (s)", r.makespan.to_string()),
    ] {
        t.add_row(vec![k.to_string(), v]);
    }
    say!("{t}");
    Ok(())
}
