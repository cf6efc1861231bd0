//! `gridsim experiment gang`: space sharing against gang scheduling, with backfilling and with
//! migration (Zhang, Franke, Moreira & Sivasubramaniam, §6.3–§6.6; spec A.11, A.14, A.15).
//!
//! One machine of 320 processors, FCFS, Φ = 0.2 estimates, T = 200 s; BF (conservative
//! backfilling rebuilt in FCFS order at every event, G-A6: `planning-fcfs`), GS-2/3/5,
//! BGS-2/3/5, MGS and MBGS (MPL 5, C = 0, unlimited Q: Table 1), over the nine workloads
//! k = 0…8 whose run times are the base workload's × (1.0 + 0.1·k). Further variants: the
//! context switch at 1, 2 and 5 % of the slice (GS-5, BGS-5), migration at
//! C = 10 s and Q = 64 (Fig. 25's settings), and discrete invocation (BGS-1 = BF invoked at slice
//! boundaries, BGS-5 discrete; Fig. 21).
//!
//! The paper's source trace (LLNL ASCI Blue-Pacific) is not available: the per-size-class
//! Hyper-Erlang model is fitted on the closest shared trace, SDSC Blue Horizon (an IBM SP, jobs of
//! 1–256 processors), and the arrival rate is scaled so that workload 0 offers ρ = 0.55 on 320
//! processors, as the paper's does. Absolute values therefore differ from the paper's; the report
//! checks the claims as stated.

mod drive;
mod published;
mod report;

use super::{Experiment, Figure, Metrics, Options, RunKey, Series, Summary};
use anyhow::{Context, Result, anyhow};
use gridsched_core::metrics::breakdown::{GAMMA, LARGE_ABOVE, breakdown, by_accuracy, utilization};
use gridsched_core::model::Job;
use gridsched_core::policy::gang::{GangOptions, Invocation};
use gridsched_core::policy::{PolicyConfig, PolicyKind};
use gridsched_workload::overestimation::Overestimation;
use gridsched_workload::size_class_model::{Generate, SizeClassModel};
use gridsched_workload::{SwfReader, traces};

/// Processors of the simulated machine.
pub const NODES: u32 = 320;
/// The source trace of the model.
pub const TRACE: &str = "SDSC-BLUE-2000-4.2-cln.swf.gz";
/// The offered load of workload 0.
pub const BASE_LOAD: f64 = 0.55;
/// Jobs per workload in the paper.
pub const PAPER_JOBS: usize = 10_000;
/// Jobs per workload by default (a full run at 10,000 takes too long here: `--jobs 10000`).
pub const DEFAULT_JOBS: usize = 3_000;
/// Jobs per workload with `--quick`.
pub const QUICK_JOBS: usize = 300;

/// The main variant (Table 1's settings).
pub const MAIN: &str = "cs 0%";

/// The metrics of the mean wait of each estimate-accuracy class (Fig. 8), worst estimators first.
pub const WAIT_BY_ACCURACY: [&str; 10] = [
    "wait_acc0",
    "wait_acc1",
    "wait_acc2",
    "wait_acc3",
    "wait_acc4",
    "wait_acc5",
    "wait_acc6",
    "wait_acc7",
    "wait_acc8",
    "wait_acc9",
];
/// Our adaptive scheduler (`bgs-adaptive` at MPL 5), after §6.3's adaptive idea.
pub const ADAPTIVE: &str = "adaptive (ours)";
/// Its ρ_critical: BF above a utilization of 0.8 over the last five slices.
pub const RHO_CRITICAL: f64 = 0.8;

/// A configuration of the experiment: its algorithm name, variant and policy.
#[derive(Clone, Debug)]
pub struct Config {
    /// Algorithm label (BF, GS-5, …).
    pub algorithm: &'static str,
    /// Variant label.
    pub variant: &'static str,
    /// The policy.
    pub policy: PolicyConfig,
}

fn gang(kind: PolicyKind, mpl: u32, f: impl FnOnce(&mut GangOptions)) -> PolicyConfig {
    let mut g = GangOptions {
        mpl,
        ..GangOptions::default()
    };
    f(&mut g);
    PolicyConfig {
        gang: g,
        ..PolicyConfig::new(kind)
    }
}

/// Every configuration, in report order (`quick`: the main variant and one of each other kind).
pub fn configs(quick: bool) -> Vec<Config> {
    let c = |algorithm, variant, policy| Config {
        algorithm,
        variant,
        policy,
    };
    let mut v = vec![
        c("BF", MAIN, PolicyConfig::new(PolicyKind::PlanningFcfs)),
        c("GS-2", MAIN, gang(PolicyKind::Gs, 2, |_| {})),
        c("GS-3", MAIN, gang(PolicyKind::Gs, 3, |_| {})),
        c("GS-5", MAIN, gang(PolicyKind::Gs, 5, |_| {})),
        c("BGS-2", MAIN, gang(PolicyKind::Bgs, 2, |_| {})),
        c("BGS-3", MAIN, gang(PolicyKind::Bgs, 3, |_| {})),
        c("BGS-5", MAIN, gang(PolicyKind::Bgs, 5, |_| {})),
        c("MGS", MAIN, gang(PolicyKind::Mgs, 5, |_| {})),
        c("MBGS", MAIN, gang(PolicyKind::Mbgs, 5, |_| {})),
        c(
            ADAPTIVE,
            MAIN,
            gang(PolicyKind::BgsAdaptive, 5, |g| {
                g.rho_critical = RHO_CRITICAL
            }),
        ),
    ];
    let sweep: &[(&'static str, u32)] = if quick {
        &[("cs 5%", 5)]
    } else {
        &[("cs 1%", 1), ("cs 2%", 2), ("cs 5%", 5)]
    };
    for &(variant, pct) in sweep {
        v.push(c(
            "GS-5",
            variant,
            gang(PolicyKind::Gs, 5, |g| g.context_switch_pct = pct),
        ));
        v.push(c(
            "BGS-5",
            variant,
            gang(PolicyKind::Bgs, 5, |g| g.context_switch_pct = pct),
        ));
    }
    let fig25 = |g: &mut GangOptions| {
        g.migration_cost = 10;
        g.migration_tasks = Some(64);
    };
    v.push(c("MGS", "C=10 Q=64", gang(PolicyKind::Mgs, 5, fig25)));
    v.push(c("MBGS", "C=10 Q=64", gang(PolicyKind::Mbgs, 5, fig25)));
    let discrete = |g: &mut GangOptions| g.invocation = Invocation::Discrete;
    v.push(c("BGS-1", "discrete", gang(PolicyKind::Bgs, 1, discrete)));
    if !quick {
        v.push(c("BGS-5", "discrete", gang(PolicyKind::Bgs, 5, discrete)));
    }
    v
}

/// The experiment.
#[derive(Debug)]
pub struct GangExperiment {
    quick: bool,
    reps: u32,
    seed: u64,
    jobs: usize,
    workloads: Vec<u32>,
    model: SizeClassModel,
    /// The arrival-rate factor that makes workload 0 offer [`BASE_LOAD`].
    arrival_rate: f64,
    configs: Vec<Config>,
}

/// The trace jobs the model is fitted on: the allocated processors (the requested ones when the
/// allocation is not recorded, as the trace's provenance advises), 1–256 of them, and a positive
/// run time (jobs with neither are left out).
pub fn source_jobs() -> Result<Vec<Job>> {
    let path = traces::resolve(TRACE, &traces::dir()).map_err(|e| anyhow!(e))?;
    let reader = SwfReader::open(&path).with_context(|| format!("opening {}", path.display()))?;
    let mut v = Vec::new();
    for rec in reader {
        let rec = rec?;
        let procs = rec.procs();
        let run = rec.run_time.round() as i64;
        if (1..=256).contains(&procs) && run > 0 {
            let est = (rec.requested_time.round() as i64).max(run);
            v.push(Job::new(
                rec.job_number,
                rec.submit_time,
                procs as u32,
                est,
                run,
            ));
        }
    }
    Ok(v)
}

impl GangExperiment {
    /// The experiment for `opts` (fits the model on the trace).
    pub fn new(opts: &Options) -> Result<GangExperiment> {
        let model = SizeClassModel::fit(&source_jobs()?)?;
        let arrival_rate = BASE_LOAD / model.offered_load(NODES);
        Ok(GangExperiment {
            quick: opts.quick,
            reps: opts.reps.unwrap_or(if opts.quick { 2 } else { 1 }),
            seed: opts.seed,
            jobs: opts
                .jobs
                .unwrap_or(if opts.quick { QUICK_JOBS } else { DEFAULT_JOBS }),
            workloads: if opts.quick {
                vec![0, 5]
            } else {
                (0..9).collect()
            },
            model,
            arrival_rate,
            configs: configs(opts.quick),
        })
    }

    /// The workload k of repetition `seed`.
    pub fn workload(&self, k: u32, seed: u64) -> Vec<Job> {
        self.model.generate(&Generate {
            jobs: self.jobs,
            seed,
            arrival_rate: self.arrival_rate,
            runtime_factor: 1.0 + 0.1 * f64::from(k),
            estimates: Overestimation::Phi(0.2),
            estimate_cap: None,
        })
    }
}

impl Experiment for GangExperiment {
    fn name(&self) -> &'static str {
        "gang"
    }

    fn runs(&self) -> Vec<RunKey> {
        let mut v = Vec::new();
        for c in &self.configs {
            for &k in &self.workloads {
                for rep in 0..self.reps {
                    v.push(RunKey {
                        algorithm: c.algorithm.to_string(),
                        variant: c.variant.to_string(),
                        ta: f64::from(k),
                        rep,
                        seed: self.seed + u64::from(rep),
                    });
                }
            }
        }
        v
    }

    fn run(&self, key: &RunKey) -> Result<Metrics> {
        let c = self
            .configs
            .iter()
            .find(|c| c.algorithm == key.algorithm && c.variant == key.variant)
            .ok_or_else(|| anyhow!("unknown configuration {} / {}", key.algorithm, key.variant))?;
        let jobs = self.workload(key.ta as u32, key.seed);
        let t0 = std::time::Instant::now();
        let m = drive::drive(&c.policy, NODES, &jobs)?;
        let wall = t0.elapsed().as_secs_f64() * 1e3;
        let b = breakdown(&m.outcomes, GAMMA, LARGE_ABOVE, None);
        let counter = |name: &str| {
            m.counters
                .iter()
                .find(|(n, _)| n == name)
                .map_or(0.0, |(_, v)| *v as f64)
        };
        let n = m.outcomes.len().max(1) as f64;
        let accuracy = by_accuracy(&m.outcomes, GAMMA);
        let mut metrics = vec![
            ("finished", m.outcomes.len() as f64),
            ("rho", utilization(&m.outcomes, NODES)),
            ("kappa", m.kappa),
            ("kappa_literal", m.kappa_literal),
            ("slowdown", b.all.slowdown.mean),
            ("slowdown_std", b.all.slowdown.std),
            ("wait", b.all.wait.mean),
            ("wait_std", b.all.wait.std),
            ("response", b.all.response.mean),
            ("slowdown_small", b.small.slowdown.mean),
            ("slowdown_large", b.large.slowdown.mean),
            ("wait_small", b.small.wait.mean),
            ("wait_large", b.large.wait.mean),
            ("slowdown_short", b.short.slowdown.mean),
            ("slowdown_long", b.long.slowdown.mean),
            ("median_run", b.split as f64),
            ("suspensions_per_job", m.suspensions as f64 / n),
            ("context_switches_per_job", counter("context_switches") / n),
            ("migrations_per_job", counter("migrations") / n),
            ("wall_ms", wall),
        ];
        metrics.extend(
            WAIT_BY_ACCURACY
                .iter()
                .zip(&accuracy)
                .map(|(&name, g)| (name, g.wait.mean)),
        );
        Ok(metrics)
    }

    fn figures(&self) -> Vec<Figure> {
        let fig = |file: &str, title: &str, metric, y_label, series| Figure {
            file: file.to_string(),
            title: title.to_string(),
            metric,
            y_label,
            x_label: "workload k (run times × (1 + 0.1·k))",
            series,
        };
        let main = || Series::Algorithms(MAIN.to_string());
        vec![
            fig(
                "fig15-slowdown",
                "Figs. 15/22 — mean bounded slowdown (cs 0%)",
                "slowdown",
                "slowdown",
                main(),
            ),
            fig(
                "fig17-wait",
                "Fig. 17 — mean wait time, s (cs 0%)",
                "wait",
                "wait (s)",
                main(),
            ),
            fig(
                "fig20-kappa",
                "Fig. 20 — loss of capacity κ (with δ, G-A4)",
                "kappa",
                "κ",
                main(),
            ),
            fig("utilization", "Utilization ρ, eq. (1)", "rho", "ρ", main()),
            fig(
                "fig16-context-switch-bgs5",
                "Fig. 16 — BGS-5 slowdown by context-switch overhead",
                "slowdown",
                "slowdown",
                Series::Variants(
                    "BGS-5".into(),
                    self.configs
                        .iter()
                        .filter(|c| c.algorithm == "BGS-5")
                        .map(|c| c.variant.to_string())
                        .collect(),
                ),
            ),
        ]
    }

    fn report(&self, s: &Summary) -> String {
        report::report(self, s)
    }
}
