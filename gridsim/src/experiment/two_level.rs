//! The shared part of the two-level experiments `ms-fb` and `ms-cs` (spec
//! `two-level-grid-scheduler.md` D9.3, D9.4; platform and stream of Tables 6/7 from
//! [`SetupParams::table6`]; metrics D8.1 per cluster; architecture D3, dispatch D4).
//!
//! A run is one platform (4 clusters of 120/60/30/15 machines, space sharing, 20 licence types with
//! per-cluster pools) and one 5,000-job stream for a mean inter-arrival time Ta, both drawn from the
//! run's seed, scheduled by a meta-scheduler (classification on or off, a [`DispatchKind`]) above
//! one local policy per cluster. Every configuration of a repetition sees the same platform and
//! jobs (common random numbers). The metrics are the platform totals and, per cluster `cN`
//! (N = 1..4, largest first), the workload share and its optimal value (the cluster's share of the
//! machines: 53.33/26.67/13.33/6.67 %) and its share of processors × benchmark (see
//! [`super::shares`]), the % and number of deadline misses, the slowdown of the
//! jobs without a deadline, and the processor and licence usage.

use super::fb::Claim;
use super::shares;
use super::{Experiment, Figure, Metrics, Options, RunKey, Series, Summary};
use crate::platform::{Classify, Meta, PlatformReport, simulate_jobs};
use anyhow::{Result, anyhow};
use gridsched_core::classify::{Classifier, ClassifierConfig};
use gridsched_core::dispatch::{DispatchConfig, DispatchKind};
use gridsched_core::model::{ClusterId, Job, Platform};
use gridsched_core::policy::{Policy, PolicyConfig};
use gridsched_workload::seed_setups::SetupParams;
use std::fmt::Write as _;

pub use super::per_cluster::{
    CAPACITY, CLUSTERS, LIC, MISSED, MISSED_N, OPTIMAL, PER_CLUSTER, PROC, SHARE, SLOWDOWN,
    per_cluster,
};

/// How the meta-scheduler and the local schedulers of one configuration work.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Whether the MS classifies jobs (D4.1); otherwise every job has priority 1.
    pub classify: bool,
    /// The dispatch strategy (D4.2).
    pub dispatch: DispatchKind,
    /// The local policy of every cluster.
    pub policy: PolicyConfig,
}

/// The set-up and repetitions of a two-level experiment.
#[derive(Clone, Debug)]
pub struct TwoLevelSetup {
    /// Generator parameters (Table 6).
    pub params: SetupParams,
    /// Repetitions.
    pub reps: u32,
    /// Base seed; repetition r uses seed + r.
    pub seed: u64,
}

impl TwoLevelSetup {
    /// The paper's set-up (5,000 jobs, Ta ∈ {0, 5, 10, 15}, 20 repetitions), or with `quick` 300
    /// jobs and 2 repetitions on the same platform and inter-arrival times.
    pub fn new(opts: &Options) -> TwoLevelSetup {
        let mut params = SetupParams::table6();
        if opts.quick {
            params.jobs = 300;
        }
        TwoLevelSetup {
            params,
            reps: opts.reps.unwrap_or(if opts.quick { 2 } else { 20 }),
            seed: opts.seed,
        }
    }

    /// The set-up in words, for reports.
    pub fn describe(&self) -> String {
        let p = &self.params;
        format!(
            "clusters of {:?} machines, space sharing, {} licence types, {} jobs per stream ({} % \
             without deadline), Ta ∈ {:?}, {} repetitions (seeds {}..{})",
            p.clusters,
            p.licences,
            p.jobs,
            p.no_deadline * 100.0,
            p.inter_arrivals,
            self.reps,
            self.seed,
            self.seed + u64::from(self.reps) - 1
        )
    }

    /// The platform and jobs of one run.
    pub fn draw(&self, ta: f64, seed: u64) -> (Platform, Vec<Job>) {
        let platform = self.params.platform(seed);
        let jobs = self.params.jobs(&platform, ta, seed);
        (platform, jobs)
    }
}

/// What distinguishes `ms-fb` from `ms-cs`.
#[derive(Debug)]
pub struct Spec {
    /// Experiment name.
    pub name: &'static str,
    /// The configurations, in run and legend order.
    pub configs: &'static [&'static str],
    /// The configuration of a name.
    pub config: fn(&str) -> Option<Config>,
    /// File prefixes of the share, slowdown, misses, processor and licence figures.
    pub figures: [&'static str; 5],
    /// Report title and set-up paragraph.
    pub header: fn(&TwoLevelSetup) -> String,
    /// The paper's number of the share figure.
    pub share_fig: &'static str,
    /// The claims our numbers can check.
    pub claims: fn(&Summary, &TwoLevelSetup) -> Vec<Claim>,
    /// Claims that cannot be checked yet, with the reason.
    pub not_evaluated: &'static [&'static str],
}

/// A two-level experiment: every configuration of `spec` × Ta × repetition.
#[derive(Debug)]
pub struct TwoLevelExperiment {
    /// The set-up.
    pub setup: TwoLevelSetup,
    /// The configurations and report.
    pub spec: &'static Spec,
}

impl TwoLevelExperiment {
    /// The full experiment of `spec`, or the reduced one with `quick`.
    pub fn new(opts: &Options, spec: &'static Spec) -> TwoLevelExperiment {
        TwoLevelExperiment {
            setup: TwoLevelSetup::new(opts),
            spec,
        }
    }
}

impl Experiment for TwoLevelExperiment {
    fn name(&self) -> &'static str {
        self.spec.name
    }

    fn runs(&self) -> Vec<RunKey> {
        let mut v = Vec::new();
        for &ta in &self.setup.params.inter_arrivals {
            for rep in 0..self.setup.reps {
                for n in self.spec.configs {
                    v.push(RunKey {
                        algorithm: (*n).to_string(),
                        variant: String::new(),
                        ta,
                        rep,
                        seed: self.setup.seed + u64::from(rep),
                    });
                }
            }
        }
        v
    }

    fn run(&self, key: &RunKey) -> Result<Metrics> {
        let cfg = (self.spec.config)(&key.algorithm)
            .ok_or_else(|| anyhow!("unknown configuration {}", key.algorithm))?;
        let (platform, jobs) = self.setup.draw(key.ta, key.seed);
        let capacity = shares::capacity_shares(&platform);
        metrics(&simulate(&platform, jobs, &cfg, key.seed)?, &capacity)
    }

    fn figures(&self) -> Vec<Figure> {
        let o = optimal_shares(&self.setup.params);
        let n = self.spec.figures;
        [
            (n[0], "workload share", SHARE, "% of the workload", true),
            (
                n[1],
                "slowdown of jobs without deadline",
                SLOWDOWN,
                "mean slowdown",
                false,
            ),
            (
                n[2],
                "jobs missing their deadline",
                MISSED,
                "% of jobs with a deadline",
                false,
            ),
            (n[3], "processor usage", PROC, "% processor usage", false),
            (n[4], "licence usage", LIC, "% licence usage", false),
        ]
        .into_iter()
        .flat_map(|(n, what, k, y, opt)| cluster_figures(n, what, k, y, opt.then_some(&o)))
        .collect()
    }

    fn report(&self, s: &Summary) -> String {
        let mut r = (self.spec.header)(&self.setup);
        body(
            &mut r,
            s,
            &self.setup,
            self.spec.configs,
            self.spec.share_fig,
            5.0,
        );
        write_claims(
            &mut r,
            &(self.spec.claims)(s, &self.setup),
            self.spec.not_evaluated,
        );
        r
    }
}

/// The report tables: shares per Ta per configuration, then per-cluster tables at `ta`.
pub fn body(r: &mut String, s: &Summary, setup: &TwoLevelSetup, algs: &[&str], fig: &str, ta: f64) {
    let o = optimal_shares(&setup.params);
    load_table(r, setup);
    shares::definitions(r);
    for a in algs {
        let _ = writeln!(r, "## Fig. {fig} — workload share per cluster, {a}\n");
        shares::share_table(r, s, a, &o);
    }
    let _ = writeln!(r, "## % jobs missing their deadline, every Ta\n");
    let _ = writeln!(r, "{}", s.table("Ta", algs, "", "missed_pct"));
    for (k, title) in [
        (MISSED, "% jobs missing their deadline"),
        (MISSED_N, "jobs missing their deadline (count)"),
        (SLOWDOWN, "slowdown of jobs without deadline"),
        (PROC, "% processor usage"),
        (LIC, "% licence usage"),
    ] {
        let _ = writeln!(r, "## {title} per cluster, Ta = {ta}\n");
        cluster_table(r, s, algs, ta, k);
    }
    let _ = writeln!(r, "## Platform totals, Ta = {ta}\n");
    let _ = writeln!(
        r,
        "| configuration | % missed | slowdown (no deadline) | % processors | % licences | mean pass µs |"
    );
    let _ = writeln!(r, "|---|---|---|---|---|---|");
    for a in algs {
        let g = |m: &str| {
            s.get(a, "", ta, m)
                .map_or("–".into(), |v| format!("{v:.2}"))
        };
        let _ = writeln!(
            r,
            "| {a} | {} | {} | {} | {} | {} |",
            g("missed_pct"),
            g("slowdown_nd"),
            g("processor_pct"),
            g("licence_pct"),
            g("mean_pass_us")
        );
    }
    r.push('\n');
}

/// Runs `jobs` on `platform` under `cfg` (dispatch tie-breaks seeded with `seed`).
pub fn simulate(
    platform: &Platform,
    jobs: Vec<Job>,
    cfg: &Config,
    seed: u64,
) -> Result<PlatformReport> {
    let policies: Vec<Box<dyn Policy>> = (0..platform.clusters.len())
        .map(|c| cfg.policy.build(platform, ClusterId(c as u32)))
        .collect::<Result<_, _>>()?;
    let classifier = Classifier::new(ClassifierConfig {
        licence_types: platform.licences.len(),
        ..Default::default()
    })?;
    let classify = match cfg.classify {
        true => Classify::By(Box::new(classifier)),
        false => Classify::Fixed(1),
    };
    let dispatcher = DispatchConfig {
        seed,
        ..DispatchConfig::new(cfg.dispatch)
    }
    .build();
    simulate_jobs(
        platform,
        policies,
        Meta {
            classify,
            dispatcher,
            splits: None,
            links: None,
        },
        jobs,
    )
    .map_err(|e| anyhow!("{e}"))
}

/// The metrics of a run: platform totals, then [`PER_CLUSTER`] (`capacity`: the clusters' shares
/// of processors × benchmark).
pub fn metrics(rep: &PlatformReport, capacity: &[f64; CLUSTERS]) -> Result<Metrics> {
    if rep.clusters.len() != CLUSTERS {
        return Err(anyhow!(
            "expected {CLUSTERS} clusters, the platform has {}",
            rep.clusters.len()
        ));
    }
    let mut m: Metrics = vec![
        ("missed_pct", rep.jobs.missed_pct),
        ("missed_n", rep.jobs.missed_deadline as f64),
        ("slowdown_nd", rep.jobs.slowdown_no_deadline),
        ("processor_pct", rep.usage.processor_pct),
        ("licence_pct", rep.usage.licence_pct),
        ("finished", rep.jobs.finished as f64),
        ("rejected", rep.stats.rejected as f64),
        ("mean_pass_us", rep.stats.mean_pass_us),
    ];
    for (k, names) in PER_CLUSTER.iter().enumerate() {
        for ((c, name), cap) in rep.clusters.iter().zip(names).zip(capacity) {
            let v = match k {
                SHARE => c.workload_pct,
                OPTIMAL => c.optimal_pct,
                MISSED => c.jobs.missed_pct,
                MISSED_N => c.jobs.missed_deadline as f64,
                SLOWDOWN => c.jobs.slowdown_no_deadline,
                PROC => c.usage.processor_pct,
                LIC => c.usage.licence_pct,
                _ => *cap,
            };
            m.push((name, v));
        }
    }
    Ok(m)
}

/// One figure per cluster for the per-cluster metric `k`, one line per configuration against Ta.
pub fn cluster_figures(
    fig: &str,
    what: &str,
    k: usize,
    y_label: &'static str,
    optimal: Option<&[f64; CLUSTERS]>,
) -> Vec<Figure> {
    (0..CLUSTERS)
        .map(|c| Figure {
            file: format!("{fig}-c{}", c + 1),
            title: match optimal {
                Some(o) => format!("{what}, cluster {} (optimal {:.2} %)", c + 1, o[c]),
                None => format!("{what}, cluster {}", c + 1),
            },
            metric: PER_CLUSTER[k][c],
            y_label,
            x_label: "mean inter-arrival time Ta",
            series: Series::Algorithms(String::new()),
        })
        .collect()
}

/// The optimal shares of the set-up's clusters (their shares of the machines), percent.
pub fn optimal_shares(params: &SetupParams) -> [f64; CLUSTERS] {
    let total: u32 = params.clusters.iter().sum();
    let mut o = [0.0; CLUSTERS];
    for (x, n) in o.iter_mut().zip(&params.clusters) {
        *x = 100.0 * f64::from(*n) / f64::from(total.max(1));
    }
    o
}

/// A Markdown table of the per-cluster metric `k` at `ta`: one row per configuration.
pub fn cluster_table(r: &mut String, s: &Summary, algs: &[&str], ta: f64, k: usize) {
    let _ = writeln!(r, "| configuration | c1 | c2 | c3 | c4 |");
    let _ = writeln!(r, "|---|---|---|---|---|");
    for a in algs {
        let cells: Vec<String> = PER_CLUSTER[k]
            .iter()
            .map(|m| {
                s.get(a, "", ta, m)
                    .map_or("–".into(), |v| format!("{v:.2}"))
            })
            .collect();
        let _ = writeln!(r, "| {a} | {} |", cells.join(" | "));
    }
    r.push('\n');
}

/// A claim with its verdict and evidence.
pub fn claim(claim: &str, holds: bool, evidence: String) -> Claim {
    Claim {
        claim: claim.to_string(),
        holds,
        evidence,
    }
}

/// Writes the claims as a Markdown list with their verdicts.
pub fn write_claims(r: &mut String, claims: &[Claim], not_evaluated: &[&str]) {
    let _ = writeln!(r, "## The paper's claims\n");
    for c in claims {
        let _ = writeln!(
            r,
            "- **{}** — {}: {}",
            super::verdict(c.holds),
            c.claim,
            c.evidence
        );
    }
    for c in not_evaluated {
        let _ = writeln!(r, "- **not evaluated** — {c}");
    }
}

/// The offered load of the set-up's streams at `ta` (mean over the repetitions' draws), or `None`
/// when the jobs all arrive at once.
pub fn offered_load(setup: &TwoLevelSetup, ta: f64) -> Option<f64> {
    let mut sum = 0.0;
    for rep in 0..setup.reps.max(1) {
        let (platform, jobs) = setup.draw(ta, setup.seed + u64::from(rep));
        let procs: f64 = platform.machines.iter().map(|m| f64::from(m.procs)).sum();
        let span = match (jobs.first(), jobs.last()) {
            (Some(a), Some(b)) if b.submit > a.submit => (b.submit - a.submit) as f64,
            _ => return None,
        };
        let work: f64 = jobs
            .iter()
            .map(|j| f64::from(j.procs) * j.estimate as f64)
            .sum();
        sum += work / (procs * span);
    }
    Some(sum / f64::from(setup.reps.max(1)))
}

/// A one-row table of the offered load at every Ta of the set-up.
pub fn load_table(r: &mut String, setup: &TwoLevelSetup) {
    let tas = &setup.params.inter_arrivals;
    let _ = writeln!(
        r,
        "Offered load (Σ processors × estimate / (platform processors × arrival span); above 1 \
         the queues grow all run long):\n"
    );
    let head: Vec<String> = tas.iter().map(|t| format!("Ta = {t}")).collect();
    let _ = writeln!(r, "| {} |", head.join(" | "));
    let _ = writeln!(r, "|{}", "---|".repeat(tas.len()));
    let cells: Vec<String> = tas
        .iter()
        .map(|&t| offered_load(setup, t).map_or("all at once".into(), |l| format!("{l:.2}")))
        .collect();
    let _ = writeln!(r, "| {} |\n", cells.join(" | "));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offered_load_falls_as_ta_grows() {
        let setup = TwoLevelSetup {
            params: SetupParams::table6(),
            reps: 1,
            seed: 1,
        };
        assert_eq!(offered_load(&setup, 0.0), None);
        let l5 = offered_load(&setup, 5.0).unwrap();
        let l10 = offered_load(&setup, 10.0).unwrap();
        // 4.5 processors × 9,000 s per job every Ta seconds on about 225 × 18 processors.
        assert!((1.6..2.4).contains(&l5), "{l5}");
        assert!((l5 / l10 - 2.0).abs() < 0.2, "{l5} {l10}");
        let mut r = String::new();
        load_table(&mut r, &setup);
        assert!(r.contains("| all at once |"), "{r}");
    }

    #[test]
    fn optimal_shares_of_table6() {
        let o = optimal_shares(&SetupParams::table6());
        let want = [53.33, 26.67, 13.33, 6.67];
        for (a, b) in o.iter().zip(want) {
            assert!((a - b).abs() < 0.005, "{o:?}");
        }
        assert!((o.iter().sum::<f64>() - 100.0).abs() < 1e-9);
    }

    /// The Table 6 stream and platform as one run draws them: deterministic per seed, every value
    /// in its range, the D8 shares (30 % without deadline, 30 % per licence need, exponential
    /// inter-arrival of mean Ta) and the per-cluster pools (50–70 % of the suitable machines).
    #[test]
    fn table6_draws_are_deterministic_and_in_range() {
        let setup = TwoLevelSetup::new(&Options {
            quick: false,
            jobs: None,
            reps: None,
            seed: 7,
        });
        assert_eq!(setup.reps, 20);
        let (p, jobs) = setup.draw(5.0, 7);
        let (p2, jobs2) = setup.draw(5.0, 7);
        assert_eq!((&p, &jobs), (&p2, &jobs2));
        assert_ne!(jobs, setup.draw(5.0, 8).1);
        assert_eq!(jobs.len(), 5_000);
        for m in &p.machines {
            assert!((4..=32).contains(&m.procs) && (100..=500).contains(&m.benchmark));
        }
        for c in &p.clusters {
            assert_eq!(c.pools.len(), 20);
            for pl in &c.pools {
                let n = pl.machines.len() as f64;
                assert_eq!(pl.machines.len(), c.machines.len(), "suitability 100 %");
                let copies = f64::from(pl.copies);
                assert!(copies >= (0.5 * n).round() && copies <= (0.7 * n).round());
            }
        }
        let mut no_deadline = 0;
        let mut needs = 0;
        for j in &jobs {
            assert!((8_000..=10_000).contains(&j.estimate));
            assert!((1..=8).contains(&j.procs));
            assert!(j.benchmark.is_some_and(|b| (100..=500).contains(&b)));
            match j.deadline {
                Some(d) => assert!((1_500..=5_500).contains(&(d - j.submit - j.estimate))),
                None => no_deadline += 1,
            }
            needs += j.licences.len();
        }
        let share = f64::from(no_deadline) / 5_000.0;
        assert!((0.27..=0.33).contains(&share), "no deadline {share}");
        let per_job = needs as f64 / 5_000.0;
        assert!((5.6..=6.4).contains(&per_job), "licences per job {per_job}");
        let mean_gap = jobs.last().unwrap().submit as f64 / 4_999.0;
        assert!(
            (4.7..=5.3).contains(&mean_gap),
            "mean inter-arrival {mean_gap}"
        );
    }

    #[test]
    fn the_engine_reports_the_same_optimal_shares_and_every_job_ends() {
        let opts = Options {
            quick: true,
            jobs: None,
            reps: None,
            seed: 3,
        };
        let setup = TwoLevelSetup::new(&opts);
        let (platform, jobs) = setup.draw(5.0, 3);
        assert_eq!(
            platform
                .clusters
                .iter()
                .map(|c| c.machines.len())
                .collect::<Vec<_>>(),
            vec![120, 60, 30, 15]
        );
        let cfg = Config {
            classify: true,
            dispatch: DispatchKind::LoadOrdering,
            policy: PolicyConfig::new(gridsched_core::policy::PolicyKind::FbMeta),
        };
        let cap = shares::capacity_shares(&platform);
        let m = metrics(&simulate(&platform, jobs, &cfg, 3).unwrap(), &cap).unwrap();
        let get = |n: &str| m.iter().find(|(k, _)| *k == n).unwrap().1;
        assert_eq!(get("finished"), 300.0);
        assert_eq!(get("rejected"), 0.0);
        let o = optimal_shares(&setup.params);
        for c in 0..CLUSTERS {
            assert!((get(PER_CLUSTER[OPTIMAL][c]) - o[c]).abs() < 1e-9);
        }
        let total: f64 = PER_CLUSTER[SHARE].iter().map(|n| get(n)).sum();
        assert!((total - 100.0).abs() < 1e-6, "shares sum to 100: {total}");
        for c in 0..CLUSTERS {
            assert_eq!(get(PER_CLUSTER[CAPACITY][c]), cap[c]);
        }
    }
}
