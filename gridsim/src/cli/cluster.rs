//! `gridsim cluster`: one run of a cluster policy on heterogeneous clusters with licences — the
//! seed's synthetic set-ups (Tables 1, 4, 6/7), or a platform file and a JSON Lines workload of
//! one's own — printing the metrics of D8.1 per cluster and for the platform ("what if my cluster
//! ran Flexible Backfilling instead of EASY?").

use super::output::group;
use super::say;
use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use gridsched_core::classify::{Classifier, ClassifierConfig};
use gridsched_core::dispatch::{DispatchConfig, DispatchKind, Network, NetworkConfig};
use gridsched_core::heuristics::HeuristicParams;
use gridsched_core::model::{ClusterId, Job, Platform};
use gridsched_core::policy::{Policy, PolicyConfig, PolicyKind};
use gridsched_workload::seed_setups::SetupParams;
use gridsched_workload::{JobSource, JsonlReader, NormalizeOptions};
use gridsim::platform::{Classify, DataLinks, Meta, PlatformReport, simulate_jobs};
use std::path::PathBuf;

/// Arguments of `gridsim cluster`.
#[derive(Clone, Debug, Args)]
pub struct ClusterArgs {
    #[arg(
        long,
        default_value = "fb-unmod",
        value_parser = PolicyKind::parse_cluster,
        help = format!(
            "Local policy of every cluster: {} (fcfs and easy are the seed's FCFS and BF_FCFS)",
            PolicyKind::names(&PolicyKind::cluster())
        ),
        long_help = format!(
            "Local policy of every cluster:\n{}",
            PolicyKind::help_lines(&PolicyKind::cluster())
        )
    )]
    pub policy: PolicyKind,
    /// Constants of the Flexible Backfilling heuristics: fb-4.1, fb-4.3.1, fb-4.3.2, cs.
    #[arg(long, default_value = "fb-4.1")]
    pub heuristics: String,
    /// A policy option by its configuration key (repeatable; the keys of a local scheduler's
    /// `[policy]` table), e.g. `--set gang.mpl=3`, `--set cs.pin=true`; applied after
    /// `--heuristics`.
    #[arg(
        long = "set",
        value_name = "KEY=VALUE",
        long_help = format!(
            "A policy option by its configuration key (repeatable; the keys of a local \
             scheduler's [policy] table), applied after --heuristics. The keys each policy \
             takes:\n{}",
            crate::cli::knobs::option_keys(&PolicyKind::cluster(), &[])
        )
    )]
    pub set: Vec<String>,
    /// On a cluster of alike machines, keep one machine per job (the heterogeneous cluster's
    /// scheduler) instead of running an FCFS / backfilling / planning policy over the machines as
    /// one pool of processors with multi-node jobs.
    #[arg(long)]
    pub no_partition: bool,
    /// Synthetic set-up of the paper: table1 (§4.1), table4 (§4.2), mkp, table6 (§4.3, 4 clusters).
    #[arg(long, default_value = "table1")]
    pub setup: String,
    /// Mean inter-arrival time of the synthetic stream (default: the set-up's first).
    #[arg(long)]
    pub ta: Option<f64>,
    /// Jobs of the synthetic stream (default: the set-up's).
    #[arg(long)]
    pub jobs: Option<u64>,
    /// Seed of the synthetic platform and stream.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// A platform file (JSON, the `Platform` model) instead of the set-up's.
    #[arg(long)]
    pub platform: Option<PathBuf>,
    /// A workload instead of the synthetic stream: JSON Lines (licence names are looked up in
    /// the platform's catalogue) or a Standard Workload Format trace (`.swf`, `.swf.gz`; by
    /// content, normalised with the defaults).
    #[arg(long)]
    pub workload: Option<PathBuf>,
    /// An SWF workload's preceding job and think time (fields 17–18) as dependencies: a job
    /// waits for its preceding job to end (`afterany`), then for its think time. Off, the
    /// fields are ignored, as before.
    #[arg(long, requires = "workload")]
    pub swf_dependencies: bool,
    #[arg(
        long,
        default_value = "load-ordering",
        help = format!(
            "Meta-scheduler dispatch over the clusters: {}",
            DispatchKind::names()
        ),
        long_help = format!(
            "Meta-scheduler dispatch over the clusters:\n{}",
            DispatchKind::help_lines()
        )
    )]
    pub dispatch: DispatchKind,
    /// The grid's links, a TOML file in the live meta-scheduler's `[network]` format (`submitters`
    /// and `between` links, `[[links]]` by cluster name): the jobs' `stage_in` inputs move over
    /// them, sharing their bandwidth, before the jobs reach their clusters, and the strategies
    /// that estimate completion count the transfers.
    #[arg(long, value_name = "FILE")]
    pub network: Option<PathBuf>,
    /// With --network: the strategies do not count the transfers (they still take time).
    #[arg(long, requires = "network")]
    pub data_blind: bool,
    /// Print one JSON object instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// Whether `path` holds JSON Lines (its first character that is not white space opens an object
/// or a comment), else SWF.
fn is_jsonl(path: &std::path::Path) -> Result<bool> {
    let source = JobSource::open(path, None, NormalizeOptions::default())?;
    Ok(source.format() == Some(gridsched_workload::InputFormat::Jsonl))
}

fn platform_and_jobs(args: &ClusterArgs) -> Result<(Platform, Vec<Job>)> {
    let mut setup = SetupParams::preset(&args.setup).ok_or_else(|| {
        anyhow!(
            "--setup {}: unknown (expected table1, table4, mkp, table6)",
            args.setup
        )
    })?;
    if let Some(n) = args.jobs {
        setup.jobs = n;
    }
    let platform = match &args.platform {
        None => setup.platform(args.seed),
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            let de = &mut serde_json::Deserializer::from_str(&text);
            let p: Platform = serde_path_to_error::deserialize(de)
                .map_err(|e| anyhow!("{}: at `{}`: {}", path.display(), e.path(), e.inner()))?;
            p.validate()
                .map_err(|e| anyhow!("{}: {e}", path.display()))?;
            p
        }
    };
    let jobs = match &args.workload {
        None => {
            let ta = args
                .ta
                .unwrap_or_else(|| setup.inter_arrivals.first().copied().unwrap_or(0.0));
            if ta < 0.0 || !ta.is_finite() {
                bail!("--ta {ta}: must be a non-negative number");
            }
            setup.jobs(&platform, ta, args.seed)
        }
        Some(path) if !is_jsonl(path)? => {
            let options = NormalizeOptions {
                dependencies: args.swf_dependencies,
                ..NormalizeOptions::default()
            };
            let source = JobSource::open(path, None, options)?;
            source.collect::<Result<Vec<Job>, _>>()?
        }
        Some(path) => {
            if args.swf_dependencies {
                bail!(
                    "--swf-dependencies: {} is JSON Lines, not SWF",
                    path.display()
                );
            }
            let names: Vec<String> = platform.licences.iter().map(|l| l.name.clone()).collect();
            let mut r = JsonlReader::open(path)?.with_licence_names(&names)?;
            let mut v = Vec::new();
            while let Some(j) = r.next_job() {
                v.push(j?);
            }
            if r.licence_names().len() > names.len() {
                bail!(
                    "{}: licence `{}` is not in the platform's catalogue",
                    path.display(),
                    r.licence_names()[names.len()]
                );
            }
            v
        }
    };
    Ok((platform, jobs))
}

/// The links of `path` (the `[network]` format) over `platform`'s clusters, or what is wrong,
/// naming the file and the key.
fn network_file(path: &std::path::Path, platform: &Platform) -> Result<Network> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("--network {}", path.display()))?;
    let cfg: NetworkConfig =
        toml::from_str(&text).map_err(|e| anyhow!("--network {}: {e}", path.display()))?;
    let names: Vec<&str> = platform.clusters.iter().map(|c| c.name.as_str()).collect();
    cfg.resolve(&names)
        .map_err(|(key, why)| anyhow!("--network {}: {key}: {why}", path.display()))
}

/// Runs the command.
pub fn cluster(args: &ClusterArgs) -> Result<()> {
    let kind = args.policy;
    let heuristics = HeuristicParams::preset(&args.heuristics).ok_or_else(|| {
        anyhow!(
            "--heuristics {}: unknown (expected fb-4.1, fb-4.3.1, fb-4.3.2, cs)",
            args.heuristics
        )
    })?;
    // A preset other than the default for a policy without heuristics is refused by `check`.
    let mut cfg = PolicyConfig {
        heuristics,
        partition: !args.no_partition,
        ..PolicyConfig::new(kind)
    };
    for a in &args.set {
        cfg.set(a).map_err(|e| anyhow!("--set {e}"))?;
    }
    cfg.check()?;
    let (platform, jobs) = platform_and_jobs(args)?;
    let policies: Vec<Box<dyn Policy>> = (0..platform.clusters.len())
        .map(|c| cfg.build(&platform, ClusterId(c as u32)))
        .collect::<Result<_, _>>()?;
    let classifier = Classifier::new(ClassifierConfig {
        licence_types: platform.licences.len(),
        ..Default::default()
    })?;
    let kind = args.dispatch;
    let dispatcher = DispatchConfig {
        seed: args.seed,
        ..DispatchConfig::new(kind)
    }
    .build();
    let links = match &args.network {
        None => None,
        Some(path) => Some(DataLinks {
            network: network_file(path, &platform)?,
            blind: args.data_blind,
        }),
    };
    let n = jobs.len();
    let described = policies[0].describe();
    let dispatched_by = dispatcher.describe();
    let report = simulate_jobs(
        &platform,
        policies,
        Meta {
            classify: Classify::By(Box::new(classifier)),
            dispatcher,
            splits: None,
            links,
        },
        jobs,
    )
    .map_err(|e| anyhow!("{e}"))?;
    if args.json {
        say!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        say!(
            "{} on {} cluster(s), {} machines, dispatched by {}; {} jobs",
            described,
            platform.clusters.len(),
            platform.machines.len(),
            dispatched_by,
            group(n as i64)
        );
        say!("{}", table(&report));
        let st = &report.stats;
        if st.input_moves > 0 {
            say!(
                "inputs: {} moves between sites, {:.1} GB; jobs waited {:.1} s on average for them",
                group(st.input_moves as i64),
                st.input_bytes as f64 / 1e9,
                st.input_wait_s as f64 / report.jobs.finished.max(1) as f64
            );
        }
    }
    Ok(())
}

fn table(r: &PlatformReport) -> Table {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_header(vec![
        "cluster",
        "jobs",
        "workload %",
        "optimal %",
        "deadline missed %",
        "slowdown",
        "slowdown (no deadline)",
        "CPU usage %",
        "licence usage %",
    ]);
    let row = |name: &str,
               jobs: u64,
               w: String,
               o: String,
               s: &gridsim::platform::JobSummary,
               u: &gridsim::platform::Usage| {
        vec![
            name.to_string(),
            group(jobs as i64),
            w,
            o,
            format!("{:.2}", s.missed_pct),
            format!("{:.2}", s.slowdown),
            format!("{:.2}", s.slowdown_no_deadline),
            format!("{:.1}", u.processor_pct),
            format!("{:.1}", u.licence_pct),
        ]
    };
    for c in &r.clusters {
        t.add_row(row(
            &c.name,
            c.jobs.finished,
            format!("{:.2}", c.workload_pct),
            format!("{:.2}", c.optimal_pct),
            &c.jobs,
            &c.usage,
        ));
    }
    t.add_row(row(
        "all",
        r.jobs.finished,
        "100".into(),
        "100".into(),
        &r.jobs,
        &r.usage,
    ));
    t
}
