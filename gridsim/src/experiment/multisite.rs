//! `gridsim experiment multisite`: the grid study of `self-tuning-and-multisite.md` §6 (Tab. 7.1
//! configurations; scenarios of §6.2; overhead sweep of §8 #15; constrained and adaptive
//! scheduling of §6.4; results §6.8–§6.10).
//!
//! Workloads: 10,000-job extracts (jobs 10,001–20,000) of the real traces available in the traces
//! directory (CTC, used by the paper, is not among them), their widths resized to the grid's 512
//! nodes by the workload crate (`⌈w · 512 / N⌉`, N = the trace's machine size,
//! [`scale::resize_widths`]; the full Part C scaling is `gridsim trace scale`), plus a synthetic workload of 10,000 jobs generated for 512
//! processors at offered load 0.7. Jobs go to sites round robin (§8 #23). For every machine
//! configuration: local processing and job sharing once (they do not depend on p), and multi-site
//! (wide jobs unchanged, modification 4), multi-site on modification 2 (wide jobs split to the
//! largest machine, as job sharing; the paper compares the two on it), constrained multi-site
//! (lower bound = half the largest machine, fragments limited above p = 60 %, §8 #18) and adaptive
//! multi-site, on modification 4 and on modification 2 (so that no job is wider than the largest
//! machine and the adaptive rule may always choose to wait), for every overhead
//! p ∈ {0, 5, …, 60, 80, 120, 180, 300} %. m512 is the single-machine reference (job sharing on
//! one machine = EASY on 512 nodes).

use super::{Experiment, Figure, Metrics, Options, RunKey, Series, Summary, verdict};
use crate::grid::{Fragments, GridConfig, MachineConfig, Modification, Scenario, simulate_grid};
use anyhow::{Result, anyhow};
use gridsched_core::model::Job;
use gridsched_workload::{
    JobSource, NormalizeOptions, SyntheticGenerator, SyntheticParams, scale, traces,
};
use std::fmt::Write as _;

/// The overheads of the sweep, percent.
pub const OVERHEADS: [u32; 17] = [
    0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 80, 120, 180, 300,
];

/// Scenario labels, as they appear in the results.
pub const SCENARIOS: [&str; 7] = [
    "local",
    "job-sharing",
    "multi-site",
    "multi-site-mod2",
    "constrained",
    "adaptive",
    "adaptive-mod2",
];

/// A prepared workload.
#[derive(Debug, Clone)]
pub struct Workload {
    /// Its name.
    pub name: String,
    /// Its jobs, sorted by submission, widths ≤ 512 after scaling (wider ones are split by the
    /// scenarios).
    pub jobs: Vec<Job>,
}

/// The experiment.
#[derive(Debug)]
pub struct MultisiteExperiment {
    workloads: Vec<Workload>,
    configs: Vec<MachineConfig>,
    overheads: Vec<u32>,
    /// Traces that were not found.
    pub missing: Vec<String>,
}

/// Jobs `skip + 1 ..= skip + take` of a trace, widths scaled from the trace's machine size to
/// `total` nodes (`⌈w · total / N⌉`, [`scale::resize_widths`]), submissions shifted to start at 0
/// and ids renumbered ([`scale::rebase`]).
pub fn trace_workload(name: &str, skip: usize, take: usize, total: u32) -> Result<Workload> {
    let path = traces::resolve(name, &traces::cli_traces_dir()).map_err(|e| anyhow!(e))?;
    let mut src = JobSource::open(&path, None, NormalizeOptions::default())?;
    let n = src
        .normalized_procs()
        .ok_or_else(|| anyhow!("{name}: the header gives no machine size"))?;
    let mut jobs = Vec::with_capacity(take);
    for j in src.by_ref().skip(skip).take(take) {
        jobs.push(j?);
    }
    scale::rebase(&mut jobs);
    scale::resize_widths(&mut jobs, n, total)?;
    Ok(Workload {
        name: name.to_string(),
        jobs,
    })
}

/// The synthetic workload for a grid of `total` nodes at offered load 0.7.
pub fn synthetic_workload(jobs: u64, seed: u64, total: u32) -> Result<Workload> {
    let g = SyntheticGenerator::new(SyntheticParams {
        jobs,
        procs: total,
        load: 0.7,
        seed,
    })?;
    Ok(Workload {
        name: "synthetic".into(),
        jobs: g.collect(),
    })
}

impl MultisiteExperiment {
    /// The full experiment, or with `quick` a reduced one (synthetic 800 jobs, KTH 800 jobs if
    /// present; m128, m384, m512; p ∈ {0, 30, 300}).
    pub fn new(opts: &Options) -> Result<MultisiteExperiment> {
        let (take, configs, overheads, names): (usize, Vec<&str>, Vec<u32>, Vec<&str>) =
            if opts.quick {
                (
                    800,
                    vec!["m128", "m384", "m512"],
                    vec![0, 30, 300],
                    vec!["KTH"],
                )
            } else {
                (
                    10_000,
                    MachineConfig::presets().iter().map(|c| c.name).collect(),
                    OVERHEADS.to_vec(),
                    vec!["KTH", "SDSC-BLUE", "HPC2N"],
                )
            };
        let mut workloads = vec![synthetic_workload(take as u64, opts.seed, 512)?];
        let mut missing = Vec::new();
        for n in names {
            match trace_workload(n, 10_000.min(take * 10), take, 512) {
                Ok(w) => workloads.push(w),
                Err(e) => missing.push(format!("{n}: {e:#}")),
            }
        }
        Ok(MultisiteExperiment {
            workloads,
            configs: configs
                .into_iter()
                .filter_map(MachineConfig::preset)
                .collect(),
            overheads,
            missing,
        })
    }

    fn config(scenario: &str, p: u32, largest: u32) -> Option<GridConfig> {
        let base = GridConfig {
            overhead_pct: p,
            ..Default::default()
        };
        Some(match scenario {
            "local" => GridConfig {
                scenario: Scenario::Local,
                ..base
            },
            "job-sharing" => GridConfig {
                scenario: Scenario::JobSharing,
                ..base
            },
            "multi-site" => base,
            "multi-site-mod2" => GridConfig {
                modification: Modification::Largest,
                ..base
            },
            "constrained" => GridConfig {
                lower_bound: largest / 2,
                fragments: if p > 60 {
                    Fragments::Limited
                } else {
                    Fragments::Unlimited
                },
                ..base
            },
            "adaptive" => GridConfig {
                adaptive: true,
                ..base
            },
            "adaptive-mod2" => GridConfig {
                adaptive: true,
                modification: Modification::Largest,
                ..base
            },
            _ => return None,
        })
    }
}

impl Experiment for MultisiteExperiment {
    fn name(&self) -> &'static str {
        "multisite"
    }

    fn runs(&self) -> Vec<RunKey> {
        let mut v = Vec::new();
        for w in &self.workloads {
            for c in &self.configs {
                let variant = format!("{} {}", w.name, c.name);
                let key = |alg: &str, p: u32| RunKey {
                    algorithm: alg.to_string(),
                    variant: variant.clone(),
                    ta: f64::from(p),
                    rep: 0,
                    seed: 0,
                };
                if c.sizes.len() == 1 {
                    v.push(key("job-sharing", 0));
                    continue;
                }
                v.push(key("local", 0));
                v.push(key("job-sharing", 0));
                for &p in &self.overheads {
                    for s in &SCENARIOS[2..] {
                        v.push(key(s, p));
                    }
                }
            }
        }
        v
    }

    fn run(&self, key: &RunKey) -> Result<Metrics> {
        let (wname, cname) = key
            .variant
            .rsplit_once(' ')
            .ok_or_else(|| anyhow!("bad variant {}", key.variant))?;
        let w = self
            .workloads
            .iter()
            .find(|w| w.name == wname)
            .ok_or_else(|| anyhow!("unknown workload {wname}"))?;
        let c = self
            .configs
            .iter()
            .find(|c| c.name == cname)
            .ok_or_else(|| anyhow!("unknown configuration {cname}"))?;
        let cfg = Self::config(&key.algorithm, key.ta as u32, c.largest())
            .ok_or_else(|| anyhow!("unknown scenario {}", key.algorithm))?;
        let (r, _) = simulate_grid(&c.sizes, &cfg, &w.jobs, false)?;
        Ok(vec![
            ("awrt_h", r.awrt / 3600.0),
            ("awwt_h", r.awwt / 3600.0),
            ("awrt_rc_h", r.awrt_rc / 3600.0),
            ("multi_site_jobs", r.multi_site_jobs as f64),
            ("multi_site_area_pct", r.multi_site_area_pct),
            ("jobs", r.jobs as f64),
            ("refused", r.refused as f64),
        ])
    }

    fn figures(&self) -> Vec<Figure> {
        let mut v = Vec::new();
        for w in &self.workloads {
            for c in self.configs.iter().filter(|c| c.sizes.len() > 1) {
                v.push(Figure {
                    file: format!("awrt-{}-{}", slug(&w.name), c.name),
                    title: format!("AWRT, {} on {}", w.name, c.name),
                    metric: "awrt_h",
                    y_label: "AWRT (hours)",
                    x_label: "overhead p (%)",
                    series: Series::Algorithms(format!("{} {}", w.name, c.name)),
                });
            }
            let variants: Vec<String> = self
                .configs
                .iter()
                .map(|c| format!("{} {}", w.name, c.name))
                .collect();
            for (alg, metric, label) in [
                ("multi-site", "awrt_h", "AWRT (hours)"),
                (
                    "adaptive",
                    "awrt_rc_h",
                    "AWRT weighted by resource consumption (hours)",
                ),
            ] {
                v.push(Figure {
                    file: format!("{alg}-configs-{}", slug(&w.name)),
                    title: format!("{alg}, every configuration, {}", w.name),
                    metric,
                    y_label: label,
                    x_label: "overhead p (%)",
                    series: Series::Variants(alg.into(), variants.clone()),
                });
            }
        }
        v
    }

    fn report(&self, s: &Summary) -> String {
        report(self, s)
    }
}

fn slug(s: &str) -> String {
    s.to_lowercase().replace(' ', "-")
}

fn pct(a: f64, b: f64) -> f64 {
    100.0 * (a - b) / b
}

fn report(e: &MultisiteExperiment, s: &Summary) -> String {
    let mut r = String::new();
    let _ = writeln!(
        r,
        "# Experiment `multisite`: grid scheduling with multi-site jobs (§6)\n"
    );
    let _ = writeln!(
        r,
        "Workloads: {}. Configurations: {}. Overheads p: {:?} %. AWRT/AWWT weighted by requested \
         nodes (Eq. 7.1/7.2), `awrt_rc` by resource consumption (§7.3.3), in hours.\n",
        e.workloads
            .iter()
            .map(|w| format!("{} ({} jobs)", w.name, w.jobs.len()))
            .collect::<Vec<_>>()
            .join(", "),
        e.configs
            .iter()
            .map(|c| c.name)
            .collect::<Vec<_>>()
            .join(", "),
        e.overheads
    );
    for m in &e.missing {
        let _ = writeln!(r, "- SKIPPED workload {m}");
    }
    let g =
        |alg: &str, v: &str, p: u32, m: &str| s.get(alg, v, f64::from(p), m).unwrap_or(f64::NAN);
    for w in &e.workloads {
        let _ = writeln!(r, "\n## {}\n", w.name);
        let _ = writeln!(
            r,
            "| config | local | job sharing | MS p=0 | MS p=30 | MS p=300 | constrained p=300 | adaptive p=300 (RC) | AWWT MS p=0 |"
        );
        let _ = writeln!(r, "|---|---|---|---|---|---|---|---|---|");
        for c in &e.configs {
            let v = format!("{} {}", w.name, c.name);
            let _ = writeln!(
                r,
                "| {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
                c.name,
                g("local", &v, 0, "awrt_h"),
                g("job-sharing", &v, 0, "awrt_h"),
                g("multi-site", &v, 0, "awrt_h"),
                g("multi-site", &v, 30, "awrt_h"),
                g("multi-site", &v, 300, "awrt_h"),
                g("constrained", &v, 300, "awrt_h"),
                g("adaptive", &v, 300, "awrt_rc_h"),
                g("multi-site", &v, 0, "awwt_h"),
            );
        }
        let v128 = format!("{} m128", w.name);
        let _ = writeln!(
            r,
            "\nMulti-site jobs and their squashed-area share on m128 (cf. Tab. 7.3, 7.4 for CTC):\n"
        );
        let _ = writeln!(r, "| p | multi-site jobs | area share % |");
        let _ = writeln!(r, "|---|---|---|");
        for &p in &e.overheads {
            let _ = writeln!(
                r,
                "| {p} | {:.0} | {:.2} |",
                g("multi-site", &v128, p, "multi_site_jobs"),
                g("multi-site", &v128, p, "multi_site_area_pct")
            );
        }
        let _ = writeln!(r, "\n### The paper's findings on {}\n", w.name);
        let local = g("local", &v128, 0, "awrt_h");
        let js = g("job-sharing", &v128, 0, "awrt_h");
        let gain = -pct(js, local);
        let _ = writeln!(
            r,
            "- **{}** — job sharing beats local processing by more than 50 % AWRT (m128): {gain:.1} % ({local:.2} h → {js:.2} h)",
            verdict(gain > 50.0)
        );
        let cross = e
            .overheads
            .iter()
            .copied()
            .take_while(|&p| g("multi-site-mod2", &v128, p, "awrt_h") < js)
            .last();
        let _ = writeln!(
            r,
            "- **{}** — multi-site beats job sharing up to an overhead of about 25 % (m128, both on modification 2): better up to p = {} %",
            verdict(cross.is_some_and(|p| (15..=45).contains(&p))),
            cross.map_or("none".into(), |p| p.to_string())
        );
        let m512 = g("job-sharing", &format!("{} m512", w.name), 0, "awrt_h");
        let m512_rc = g("job-sharing", &format!("{} m512", w.name), 0, "awrt_rc_h");
        let ms0 = g("multi-site", &v128, 0, "awrt_h");
        let _ = writeln!(
            r,
            "- **{}** — multi-site at p = 0 is about as good as one 512-node machine (m128): {ms0:.2} h vs {m512:.2} h ({:+.1} %)",
            verdict(pct(ms0, m512).abs() <= 10.0),
            pct(ms0, m512)
        );
        let v384 = format!("{} m384", w.name);
        let ad = pct(g("adaptive", &v384, 300, "awrt_rc_h"), m512_rc);
        let na = pct(g("multi-site", &v384, 300, "awrt_rc_h"), m512_rc);
        let _ = writeln!(
            r,
            "- **{}** — at p = 300 % the adaptive scheduler stays within tens of percent of m512 while the non-adaptive one does not (m384, RC-weighted AWRT; paper +35 % vs +244 %): adaptive {ad:+.1} %, non-adaptive {na:+.1} %",
            verdict(ad < 100.0 && na > 2.0 * ad.max(1.0))
        );
        let c0 = g("multi-site", &v128, 0, "multi_site_jobs");
        let c60 = g("multi-site", &v128, 60, "multi_site_jobs");
        if c0.is_finite() && c60.is_finite() {
            let _ = writeln!(
                r,
                "- **{}** — the number of multi-site jobs grows by at least 30 % from p = 0 to 60 % (m128, Tab. 7.3): {c0:.0} → {c60:.0} ({:+.1} %)",
                verdict(pct(c60, c0) >= 30.0),
                pct(c60, c0)
            );
        }
    }
    r
}
