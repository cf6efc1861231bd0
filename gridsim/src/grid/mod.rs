//! Grid simulation of the multi-site study (spec `self-tuning-and-multisite.md` §6; metrics §3.4;
//! readings §8 #14–#23): sites with one machine each, a workload submitted round robin to the
//! sites, and the three scenarios — local processing (each site its own FCFS + EASY), job sharing
//! (one grid scheduler, BestFit, one machine per job) and multi-site (a job may span machines at a
//! (1 + p) run-time overhead; optionally constrained or adaptive). The grid scheduler is the core's
//! [`GridScheduler`] dispatch strategy, the one the live meta-scheduler runs; this module is its
//! driver in virtual time, where each site is one machine.
//!
//! Jobs wider than what a scenario can run are split first (§6.6, §8 #22) by the workload crate's
//! [`gridsched_workload::scale::split_homed`]: to the home site's machine under local processing
//! (modification 1), to the largest machine under job sharing (modification 2), and only beyond
//! the grid's total size under multi-site (modification 4: wide jobs unchanged). A split job
//! becomes ⌈w/M⌉ independent jobs of widths M, …, remainder with the same submission, estimate and
//! run time, all at its home site.
//!
//! The runs go through gridsim's platform engine ([`crate::platform`]), at each instant the ends,
//! then the submissions, then one release pass of the core's grid runner (the grid level's one
//! engine, which the live meta-scheduler drives too), each site one single-machine cluster; the
//! grid scheduler's splits start at once ([`GridSettings::splits_at_once`]), since each site is
//! one machine whose occupancy the grid scheduler tracks itself.

pub mod config;
#[cfg(test)]
mod tests;

pub use config::{Fragments, GridConfig, MachineConfig, Modification, Scenario};

use crate::platform::{PlatformHooks, PlatformRecord, simulate_platform};
use gridsched_core::dispatch::{DispatchConfig, DispatchKind, GridState};
use gridsched_core::grid::{CoallocationRules, GridConfig as RunnerConfig, GridSettings, SiteSpec};
use gridsched_core::model::{ClusterId, Job, JobId, Platform, Time};
use gridsched_core::policy::{PolicyConfig, PolicyKind};
use gridsched_workload::WorkloadError;
use gridsched_workload::scale::{self, SplitJob};
use serde::Serialize;

/// Where a job runs: (machine, nodes) per fragment.
pub type Alloc = Vec<(usize, u32)>;

/// The outcome of one job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GridRecord {
    /// Index of the (possibly split) job in the run's workload.
    pub idx: usize,
    /// Home site.
    pub site: usize,
    /// Nodes.
    pub width: u32,
    /// Submission.
    pub submit: Time,
    /// Start.
    pub start: Time,
    /// End.
    pub end: Time,
    /// Its run time before any overhead.
    pub run: i64,
    /// Machines it ran on.
    pub fragments: usize,
    /// Its fragments: (machine, nodes).
    pub parts: Alloc,
}

/// Metrics of a grid run (§3.4).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct GridReport {
    /// Jobs run (after splitting).
    pub jobs: u64,
    /// Jobs refused because no allocation could ever hold them (e.g. a fragment limit).
    pub refused: u64,
    /// AWRT weighted by requested nodes (Eq. 7.1), seconds.
    pub awrt: f64,
    /// AWWT weighted by requested nodes (Eq. 7.2), seconds.
    pub awwt: f64,
    /// AWRT weighted by resource consumption `w·(end − start)` (§7.3.3), seconds.
    pub awrt_rc: f64,
    /// Jobs that ran on more than one machine.
    pub multi_site_jobs: u64,
    /// Their squashed area `w·run` (before the overhead) as a percentage of the whole workload's.
    pub multi_site_area_pct: f64,
    /// Last end − first submission.
    pub makespan: i64,
}

/// The home site of every job: job k's is k mod S (§8 #23), or its SWF partition (mod S) when
/// `by_partition` is set and the job has one.
pub fn home_sites(jobs: &[Job], sites: usize, by_partition: bool) -> Vec<usize> {
    let s = sites.max(1);
    jobs.iter()
        .enumerate()
        .map(|(k, j)| match (by_partition, j.partition) {
            (true, Some(p)) => p as usize % s,
            _ => k % s,
        })
        .collect()
}

/// Runs `jobs` (sorted by submission) on machines of `sizes` under `cfg`; job k's home site is
/// k mod S (§8 #23), or its SWF partition when `by_partition` is set. Wide jobs are first split
/// by the workload crate ([`scale::split_homed`]) with the scenario's modification
/// ([`GridConfig::split_modification`]); the parts keep their job's home site.
pub fn simulate_grid(
    sizes: &[u32],
    cfg: &GridConfig,
    jobs: &[Job],
    by_partition: bool,
) -> Result<(GridReport, Vec<GridRecord>), WorkloadError> {
    let homes = home_sites(jobs, sizes.len(), by_partition);
    let work = scale::split_homed(
        jobs.iter().cloned().zip(homes),
        sizes,
        cfg.split_modification(sizes),
    )?;
    let mut records = Vec::new();
    let mut refused = 0;
    if cfg.scenario == Scenario::Local {
        let single = GridConfig {
            scenario: Scenario::JobSharing,
            ..*cfg
        };
        for (site, &size) in sizes.iter().enumerate() {
            let mine: Vec<SplitJob> = work.iter().filter(|x| x.site == site).cloned().collect();
            let (recs, r) = run_central(&[size], &single, &mine);
            refused += r;
            records.extend(recs.into_iter().map(|mut x| {
                x.site = site;
                for part in &mut x.parts {
                    part.0 = site;
                }
                x
            }));
        }
    } else {
        (records, refused) = run_central(sizes, cfg, &work);
    }
    Ok((report(&records, refused), records))
}

/// The central scheduler over `work` (sorted by submission): the platform engine's run of one
/// single-machine cluster per site (FCFS, which starts at once what the grid scheduler sends,
/// since it sends a job only where it fits now), its grid runner built with the grid scheduler
/// and splits started at once (each site is one machine the grid scheduler tracks itself).
fn run_central(sizes: &[u32], cfg: &GridConfig, work: &[SplitJob]) -> (Vec<GridRecord>, u64) {
    let ms = cfg.multi_site();
    let strategy = match cfg.scenario {
        Scenario::MultiSite => DispatchKind::MultiSite,
        Scenario::JobSharing | Scenario::Local => DispatchKind::JobSharing,
    };
    let sites = GridState::single_machines(sizes)
        .caps
        .into_iter()
        .enumerate()
        .map(|(i, caps)| SiteSpec::plain(format!("m{i}"), caps))
        .collect();
    let grid = RunnerConfig {
        sites,
        dispatch: DispatchConfig {
            multi_site: ms.clone(),
            ..DispatchConfig::new(strategy)
        },
        classifier: None,
        settings: GridSettings {
            splits_at_once: true,
            // Their WAN overhead stretches the splits started at once.
            coallocation: Some(CoallocationRules::new(ms.clone(), 1)),
            ..GridSettings::default()
        },
        classifier_state: None,
        usage_state: None,
    };
    let platform = Platform::single_machine_sites(sizes.iter().map(|&n| ("m", n)));
    let policies = (0..sizes.len())
        .map(|c| {
            PolicyConfig::new(PolicyKind::Fcfs)
                .build(&platform, ClusterId(c as u32))
                .expect("FCFS runs on one machine")
        })
        .collect();
    let jobs = work.iter().enumerate().map(|(k, x)| {
        Ok::<_, std::convert::Infallible>(Job {
            id: JobId(k as u64),
            estimate: x.job.estimate.max(1),
            ..x.job.clone()
        })
    });
    let mut records: Vec<Option<GridRecord>> = vec![None; work.len()];
    let mut record = |r: &PlatformRecord| {
        let idx = r.id.0 as usize;
        let SplitJob { job: j, site, .. } = &work[idx];
        let parts: Alloc = match r.parts.is_empty() {
            true => vec![(r.cluster.index(), j.procs)],
            false => r.parts.iter().map(|p| (p.0.index(), p.1)).collect(),
        };
        let est = j.estimate.max(1);
        records[idx] = Some(GridRecord {
            idx,
            site: *site,
            width: j.procs,
            submit: j.submit,
            start: r.start,
            end: r.end,
            run: j.runtime.unwrap_or(j.estimate).clamp(0, est),
            fragments: parts.len(),
            parts,
        });
    };
    let hooks = PlatformHooks {
        record: Some(&mut record),
        ..PlatformHooks::default()
    };
    let report = simulate_platform(&platform, policies, grid, jobs, hooks)
        .expect("every job the grid scheduler starts fits where it starts");
    let records = records.into_iter().flatten().collect();
    (records, report.stats.rejected)
}

/// The §3.4 metrics of a set of records.
pub fn report(records: &[GridRecord], refused: u64) -> GridReport {
    let mut w = 0.0;
    let mut wr = 0.0;
    let mut ww = 0.0;
    let mut rc = 0.0;
    let mut rcr = 0.0;
    let mut area = 0.0;
    let mut multi_area = 0.0;
    let mut multi = 0;
    let mut first = Time::MAX;
    let mut last = Time::MIN;
    for r in records {
        let width = f64::from(r.width);
        w += width;
        wr += width * (r.end - r.submit) as f64;
        ww += width * (r.start - r.submit) as f64;
        let c = width * (r.end - r.start) as f64;
        rc += c;
        rcr += c * (r.end - r.submit) as f64;
        let a = width * r.run as f64;
        area += a;
        if r.fragments > 1 {
            multi += 1;
            multi_area += a;
        }
        first = first.min(r.submit);
        last = last.max(r.end);
    }
    let div = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
    GridReport {
        jobs: records.len() as u64,
        refused,
        awrt: div(wr, w),
        awwt: div(ww, w),
        awrt_rc: div(rcr, rc),
        multi_site_jobs: multi,
        multi_site_area_pct: 100.0 * div(multi_area, area),
        makespan: if records.is_empty() { 0 } else { last - first },
    }
}
