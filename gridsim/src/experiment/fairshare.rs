//! `gridsim experiment fairshare`: sharing one machine among a trace's users. The seeds'
//! classifier (Pasquali, thesis §3.1.1: Deadline, Licence and User heuristics) and Slurm's fair
//! share — the classic factor and Fair Tree, as Slurm's priority/multifactor pages document them —
//! and a dominant-resource share ([`gridsched_core::fairshare`]) against FCFS and EASY, over
//! windows of the shared traces replayed through the grid runner and the cluster runner.
//!
//! **Set-up** (the experiment's own, labelled so): one site, the trace's machine (its header's
//! `MaxProcs`); the first [`JOBS`] usable jobs (`--quick`: [`QUICK_JOBS`]) of each trace (a
//! positive run time, at most the machine's processors; estimates below the run time raised to
//! it), submissions shifted to start at 0 and divided by the x value, the arrival speed-up (1:
//! as recorded; 1.5: half as much again offered). The SWF user and group numbers are the users
//! and accounts; a trace whose window records fewer than two groups makes each user its own
//! account (spec reading). Every account has one share, every user one share of its account;
//! half-life 7 days (Slurm's default), dampening 1.
//!
//! **Algorithms**: `fcfs` and `easy` (the site's policy, priorities unused); `seeds`, the
//! classifier as printed (weights 1, 1, 1, max 10) with Flexible Backfilling ordered by the
//! meta-scheduler's priority (`fb-meta`, D9.3); `classic`, `fair-tree` and `dominant`, the same
//! `fb-meta` with the priority from the owner's factor alone (weight 1, the three heuristics 0,
//! max 100: a spec reading for a finer order than the seeds' ten levels). The factor is read at
//! submission, once (the two-level design classifies once), and a run is charged when it ends;
//! `classic-5min` recalculates as Slurm does every `PriorityCalcPeriod` (its default, 300 s: the
//! running jobs charged so far, the waiting jobs weighed again and reordered at the site);
//! `classic-capped` is `classic` with a limit per user of [`CAP_JOBS`] jobs out at once
//! (`max_jobs`, Slurm's `MaxJobs`; a limit on processors would refuse the trace's widest jobs).
//!
//! **Metrics** per run: `wait` (mean, s); `bsld`, the mean bounded slowdown
//! `max(1, (wait + run) / max(run, 10 s))`; `light_wait` and `heavy_wait`, the mean wait of the
//! jobs of the light and heavy users (heavy: the fewest users, largest first, who together used
//! half of the window's processor-seconds); `jain_bsld` and `jain_wait`, Jain's fairness index
//! `(Σx)² / (n Σx²)` over the users' mean bounded slowdown and mean wait (1: every user served
//! alike); `top_share` and `top_usage_25` … `top_usage_100`, the share promised to the account
//! with the most processor-seconds in the window (its normalized share) and its part of the
//! grid's decayed usage (half-life 7 days, runs charged at their ends: what `sshare` shows as
//! effective usage) at a quarter, half, three quarters and the end of the run's span. A replay
//! has no randomness: one run per cell.

use super::{Experiment, Figure, Metrics, Options, RunKey, Series, Summary};
use crate::platform::{Grid, PlatformHooks, PlatformRecord, caps_of, simulate_platform};
use anyhow::{Context, Result, anyhow, bail};
use gridsched_core::classify::{ClassifierConfig, Weights};
use gridsched_core::dispatch::{DispatchConfig, DispatchKind};
use gridsched_core::fairshare::{Algorithm, Assoc, FairShareConfig, Kind, ResetPeriod, WEEK};
use gridsched_core::grid::{GridConfig, GridSettings, SiteSpec};
use gridsched_core::model::{ClusterId, Job, JobId, Platform, UserId};
use gridsched_core::policy::{PolicyConfig, PolicyKind};
use gridsched_workload::swf::SwfReader;
use gridsched_workload::traces;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// The traces, by the prefix of their file names.
pub const TRACES: [&str; 2] = ["KTH-SP2", "HPC2N"];
/// The algorithms, in report order.
pub const ALGORITHMS: [&str; 8] = [
    "fcfs",
    "easy",
    "seeds",
    "classic",
    "classic-5min",
    "classic-capped",
    "fair-tree",
    "dominant",
];
/// The recalculation period of `classic-5min` (Slurm's default `PriorityCalcPeriod`).
pub const RECALC: i64 = gridsched_core::fairshare::CALC_PERIOD;
/// `classic-capped`'s jobs out at once per user.
pub const CAP_JOBS: u32 = 16;
/// When the top account's usage share is read, as fractions of the run's span.
pub const CHECKPOINTS: [(&str, f64); 4] = [
    ("top_usage_25", 0.25),
    ("top_usage_50", 0.5),
    ("top_usage_75", 0.75),
    ("top_usage_100", 1.0),
];
/// The arrival speed-ups.
pub const SPEEDUPS: [f64; 2] = [1.0, 1.5];
/// Jobs per window.
pub const JOBS: usize = 10_000;
/// Jobs per window with `--quick`.
pub const QUICK_JOBS: usize = 1_000;
/// The bounded slowdown's threshold, seconds.
pub const TAU: i64 = 10;

/// A trace's window: its machine, its jobs and each user's account.
#[derive(Clone, Debug)]
pub struct Window {
    /// The machine's processors.
    pub procs: u32,
    /// The jobs, by submission.
    pub jobs: Vec<Job>,
    /// Each user's account name.
    pub accounts: BTreeMap<u32, String>,
}

/// The first `count` usable jobs of the trace named `name` (a file-name prefix).
pub fn window(name: &str, count: usize) -> Result<Window> {
    let path = traces::resolve(name, &traces::dir()).map_err(|e| anyhow!(e))?;
    let mut r = SwfReader::open(&path).with_context(|| path.display().to_string())?;
    let procs = r
        .header()
        .max_procs()
        .and_then(|p| u32::try_from(p).ok())
        .ok_or_else(|| anyhow!("{}: no MaxProcs in the header", path.display()))?;
    let mut jobs = Vec::new();
    let mut group = BTreeMap::new();
    while jobs.len() < count {
        let Some(rec) = r.next_record() else { break };
        let rec = rec?;
        let (run, p) = (rec.run_time.round() as i64, rec.procs());
        if run <= 0 || p <= 0 || p > i64::from(procs) {
            continue;
        }
        let estimate = (rec.requested_time.round() as i64).max(run);
        let mut j = Job::new(rec.job_number, rec.submit_time, p as u32, estimate, run);
        let user = u32::try_from(rec.user_id.max(0)).unwrap_or(0);
        j.user = UserId(user);
        group.entry(user).or_insert(rec.group_id);
        jobs.push(j);
    }
    jobs.sort_by_key(|j| (j.submit, j.id));
    let t0 = jobs.first().map_or(0, |j| j.submit);
    for j in &mut jobs {
        j.submit -= t0;
    }
    let groups: BTreeSet<i64> = group.values().copied().filter(|g| *g >= 0).collect();
    let accounts = group
        .iter()
        .map(|(&u, &g)| {
            let a = if groups.len() >= 2 && g >= 0 {
                format!("g{g}")
            } else {
                format!("a{u}")
            };
            (u, a)
        })
        .collect();
    Ok(Window {
        procs,
        jobs,
        accounts,
    })
}

/// The account tree of a window: one share per account, one per user in it.
pub fn tree(w: &Window, algorithm: Algorithm) -> FairShareConfig {
    let names: BTreeSet<&String> = w.accounts.values().collect();
    let mut accounts: Vec<Assoc> = names
        .into_iter()
        .map(|a| Assoc {
            name: a.clone(),
            kind: Kind::Account,
            parent: None,
            shares: 1,
            id: None,
            ..Assoc::default()
        })
        .collect();
    accounts.extend(w.accounts.iter().map(|(&u, a)| Assoc {
        name: format!("u{u}"),
        kind: Kind::User,
        parent: Some(a.clone()),
        shares: 1,
        id: Some(u),
        ..Assoc::default()
    }));
    FairShareConfig {
        algorithm,
        half_life: WEEK,
        dampening: 1.0,
        recalc_period: 0,
        reset_period: ResetPeriod::None,
        accounts,
    }
}

/// Jain's fairness index of `x` (1 when empty or all zero).
pub fn jain(x: &[f64]) -> f64 {
    let (s, q) = x.iter().fold((0.0, 0.0), |(s, q), v| (s + v, q + v * v));
    if q == 0.0 {
        1.0
    } else {
        s * s / (x.len() as f64 * q)
    }
}

/// Runs window `w` with arrivals sped up `speedup` times under `algorithm`.
pub fn run_window(w: &Window, algorithm: &str, speedup: f64) -> Result<Metrics> {
    let fair = |a: Algorithm| {
        let cfg = ClassifierConfig {
            max: 100,
            weights: Weights::fairshare_only(),
            ..ClassifierConfig::default()
        };
        (PolicyKind::FbMeta, Some(cfg), Some(tree(w, a)))
    };
    let (policy, classifier, fairshare) = match algorithm {
        "fcfs" => (PolicyKind::Fcfs, None, None),
        "easy" => (PolicyKind::Easy, None, None),
        "seeds" => (PolicyKind::FbMeta, Some(ClassifierConfig::default()), None),
        "classic" => fair(Algorithm::Classic),
        "classic-5min" => {
            let (p, c, mut f) = fair(Algorithm::Classic);
            if let Some(f) = f.as_mut() {
                f.recalc_period = RECALC;
            }
            (p, c, f)
        }
        "classic-capped" => {
            let (p, c, mut f) = fair(Algorithm::Classic);
            for a in f.iter_mut().flat_map(|f| f.accounts.iter_mut()) {
                if a.kind == Kind::User {
                    a.max_jobs = Some(CAP_JOBS);
                }
            }
            (p, c, f)
        }
        "fair-tree" => fair(Algorithm::FairTree),
        "dominant" => fair(Algorithm::Dominant),
        other => bail!("unknown fair-share algorithm `{other}`"),
    };
    let jobs: Vec<Job> = (w.jobs.iter().cloned())
        .map(|mut j| {
            j.submit = (j.submit as f64 / speedup).round() as i64;
            j
        })
        .collect();
    let user: BTreeMap<JobId, u32> = jobs.iter().map(|j| (j.id, j.user.0)).collect();
    let records = replay(w.procs, policy, classifier, fairshare, &jobs)
        .map_err(|e| anyhow!("{algorithm}: {e}"))?;
    let mut m = measure(&jobs, &user, &records);
    m.extend(top_account(w, &jobs, &records));
    Ok(m)
}

/// The account with the most processor-seconds in the window (ties: the first name), its
/// normalized share, and its part of the grid's decayed usage at the [`CHECKPOINTS`] of the
/// run's span.
fn top_account(w: &Window, jobs: &[Job], records: &[PlatformRecord]) -> Metrics {
    let account = |u: u32| w.accounts.get(&u).map_or("", String::as_str);
    let mut demand: BTreeMap<&str, f64> = BTreeMap::new();
    for j in jobs {
        *demand.entry(account(j.user.0)).or_default() +=
            f64::from(j.procs) * j.runtime.unwrap_or(0) as f64;
    }
    let top = (demand.iter())
        .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(a.0)))
        .map_or("", |(a, _)| *a);
    let accounts: BTreeSet<&str> = w.accounts.values().map(String::as_str).collect();
    let by_id: BTreeMap<JobId, &Job> = jobs.iter().map(|j| (j.id, j)).collect();
    let mut ends: Vec<(i64, &str, f64)> = (records.iter())
        .filter_map(|r| {
            let j = by_id.get(&r.id)?;
            let used = f64::from(j.procs) * r.exec.max(0) as f64;
            Some((r.end, account(j.user.0), used))
        })
        .collect();
    ends.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(b.1)));
    let span = ends.last().map_or(0, |e| e.0);
    let mut usage = gridsched_core::fairshare::Usage::new(WEEK);
    let mut next = ends.iter().peekable();
    let mut m: Metrics = vec![("top_share", 1.0 / accounts.len().max(1) as f64)];
    for (name, at) in CHECKPOINTS {
        let t = (span as f64 * at).round() as i64;
        while let Some(&&(end, a, used)) = next.peek() {
            if end > t {
                break;
            }
            usage.charge(a, used, end);
            next.next();
        }
        m.push((name, usage.normalized(top, t)));
    }
    m
}

/// Replays `jobs` on one site of `procs` processors under `policy`, classified by `classifier`
/// with the fair share `fairshare` (`None`: none), through the grid runner and the cluster
/// runner: every job's record.
pub fn replay(
    procs: u32,
    policy: PolicyKind,
    classifier: Option<ClassifierConfig>,
    fairshare: Option<FairShareConfig>,
    jobs: &[Job],
) -> Result<Vec<PlatformRecord>> {
    let platform = Platform::single_machine_sites([("site", procs)]);
    let sites = caps_of(&platform)
        .into_iter()
        .map(|caps| SiteSpec::plain("site", caps))
        .collect();
    let mut dispatch = DispatchConfig::new(DispatchKind::LoadOrdering);
    dispatch.max_priority = classifier.map_or(10, |c| c.max);
    let grid = Grid::Config(Box::new(GridConfig {
        sites,
        dispatch,
        classifier,
        settings: GridSettings {
            fairshare,
            ..GridSettings::default()
        },
        classifier_state: None,
        usage_state: None,
    }));
    let policies = vec![PolicyConfig::new(policy).build(&platform, ClusterId(0))?];
    let mut records: Vec<PlatformRecord> = Vec::new();
    let mut keep = |r: &PlatformRecord| records.push(r.clone());
    let hooks = PlatformHooks {
        record: Some(&mut keep),
        ..PlatformHooks::default()
    };
    let stream = jobs
        .iter()
        .cloned()
        .map(Ok::<Job, std::convert::Infallible>);
    simulate_platform(&platform, policies, grid, stream, hooks).map_err(|e| anyhow!("{e}"))?;
    Ok(records)
}

/// The metrics of a run's records.
fn measure(jobs: &[Job], user: &BTreeMap<JobId, u32>, records: &[PlatformRecord]) -> Metrics {
    // Heavy users: the fewest, largest first, who used half of the processor-seconds.
    let mut used: BTreeMap<u32, f64> = BTreeMap::new();
    for j in jobs {
        *used.entry(j.user.0).or_default() += f64::from(j.procs) * j.runtime.unwrap_or(0) as f64;
    }
    let total: f64 = used.values().sum();
    let mut by_use: Vec<(u32, f64)> = used.into_iter().collect();
    by_use.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut heavy = BTreeSet::new();
    let mut acc = 0.0;
    for (u, x) in by_use {
        if acc >= total / 2.0 {
            break;
        }
        acc += x;
        heavy.insert(u);
    }
    let mut per_user: BTreeMap<u32, (f64, f64, f64)> = BTreeMap::new();
    let (mut wait, mut bsld) = (0.0, 0.0);
    let (mut light, mut heavy_w): ((f64, f64), (f64, f64)) = ((0.0, 0.0), (0.0, 0.0));
    for r in records {
        let w = (r.start - r.submit).max(0) as f64;
        let run = r.exec.max(0);
        let b = (((r.end - r.submit) as f64) / run.max(TAU) as f64).max(1.0);
        wait += w;
        bsld += b;
        let u = user.get(&r.id).copied().unwrap_or(0);
        let e = per_user.entry(u).or_default();
        *e = (e.0 + w, e.1 + b, e.2 + 1.0);
        let side = if heavy.contains(&u) {
            &mut heavy_w
        } else {
            &mut light
        };
        *side = (side.0 + w, side.1 + 1.0);
    }
    let n = records.len().max(1) as f64;
    let waits: Vec<f64> = per_user.values().map(|e| e.0 / e.2).collect();
    let bslds: Vec<f64> = per_user.values().map(|e| e.1 / e.2).collect();
    vec![
        ("wait", wait / n),
        ("bsld", bsld / n),
        ("light_wait", light.0 / light.1.max(1.0)),
        ("heavy_wait", heavy_w.0 / heavy_w.1.max(1.0)),
        ("jain_wait", jain(&waits)),
        ("jain_bsld", jain(&bslds)),
        ("users", per_user.len() as f64),
        ("heavy_users", heavy.len() as f64),
        ("jobs", jobs.len() as f64),
        ("finished", records.len() as f64),
    ]
}

/// The experiment.
#[derive(Debug)]
pub struct FairShareExperiment {
    count: usize,
    speedups: Vec<f64>,
    quick: bool,
    windows: BTreeMap<&'static str, Window>,
}

impl FairShareExperiment {
    /// Reads the traces' windows.
    pub fn new(opts: &Options) -> Result<FairShareExperiment> {
        let count = opts
            .jobs
            .unwrap_or(if opts.quick { QUICK_JOBS } else { JOBS });
        let windows = TRACES
            .iter()
            .map(|t| window(t, count).map(|w| (*t, w)))
            .collect::<Result<_>>()?;
        Ok(FairShareExperiment {
            count,
            speedups: if opts.quick {
                vec![1.5]
            } else {
                SPEEDUPS.to_vec()
            },
            quick: opts.quick,
            windows,
        })
    }
}

impl Experiment for FairShareExperiment {
    fn name(&self) -> &'static str {
        "fairshare"
    }

    fn runs(&self) -> Vec<RunKey> {
        let mut v = Vec::new();
        for t in TRACES {
            for &s in &self.speedups {
                for a in ALGORITHMS {
                    v.push(RunKey {
                        algorithm: a.into(),
                        variant: t.into(),
                        ta: s,
                        rep: 0,
                        seed: 0,
                    });
                }
            }
        }
        v
    }

    fn run(&self, key: &RunKey) -> Result<Metrics> {
        let w = (self.windows.get(key.variant.as_str()))
            .ok_or_else(|| anyhow!("unknown trace `{}`", key.variant))?;
        run_window(w, &key.algorithm, key.ta)
    }

    fn figures(&self) -> Vec<Figure> {
        let mut v = Vec::new();
        for t in TRACES {
            for (metric, what, y_label) in [
                (
                    "light_wait",
                    "mean wait of the light users' jobs",
                    "wait (s)",
                ),
                (
                    "jain_bsld",
                    "Jain's index over the users' slowdowns",
                    "Jain's index",
                ),
            ] {
                v.push(Figure {
                    file: format!("fairshare-{}-{metric}", t.to_lowercase()),
                    title: format!("{t}: {what}"),
                    metric,
                    y_label,
                    x_label: "arrival speed-up",
                    series: Series::Algorithms(t.into()),
                });
            }
        }
        v
    }

    fn report(&self, s: &Summary) -> String {
        report(self, s)
    }
}

fn report(e: &FairShareExperiment, s: &Summary) -> String {
    let mut r = String::new();
    let _ = writeln!(
        r,
        "# Experiment `fairshare`: the seeds' classifier and fair share against FCFS and EASY\n"
    );
    let _ = writeln!(
        r,
        "One site, the trace's machine; the first {} usable jobs of each trace{}, arrivals sped \
         up by the x value; SWF users as users, groups as accounts (each user its own account \
         when the window records fewer than two groups); one share each; half-life 7 days. \
         `seeds`: the classifier as printed with `fb-meta`; `classic`, `fair-tree`, `dominant`: \
         `fb-meta` ordered by the owner's factor alone (max 100). Light users: those outside the \
         fewest heavy users who used half the processor-seconds. One run per cell (a replay has \
         no randomness).\n",
        e.count,
        if e.quick { " (--quick)" } else { "" },
    );
    let mut findings = Vec::new();
    for t in TRACES {
        for x in s.tas() {
            if !s.rows.iter().any(|r| r.variant == t && r.ta == x) {
                continue;
            }
            let w = &e.windows[t];
            let users = s.get("fcfs", t, x, "users").unwrap_or(0.0);
            let heavy = s.get("fcfs", t, x, "heavy_users").unwrap_or(0.0);
            let _ = writeln!(
                r,
                "## {t} ({} processors, {users:.0} users of which {heavy:.0} heavy), arrivals × {x}\n",
                w.procs
            );
            let _ = writeln!(
                r,
                "| algorithm | wait (s) | bounded slowdown | light users' wait (s) | heavy users' wait (s) | Jain (slowdown) | Jain (wait) | finished |\n|---|---|---|---|---|---|---|---|"
            );
            for a in s.algorithms() {
                let g = |m: &str| s.get(&a, t, x, m).unwrap_or(f64::NAN);
                let _ = writeln!(
                    r,
                    "| {a} | {:.0} | {:.2} | {:.0} | {:.0} | {:.3} | {:.3} | {:.0} / {:.0} |",
                    g("wait"),
                    g("bsld"),
                    g("light_wait"),
                    g("heavy_wait"),
                    g("jain_bsld"),
                    g("jain_wait"),
                    g("finished"),
                    g("jobs"),
                );
            }
            r.push('\n');
            let promised = s.get("fcfs", t, x, "top_share").unwrap_or(f64::NAN);
            let _ = writeln!(
                r,
                "The account with the most processor-seconds in the window, its share promised \
                 ({promised:.3}) against its part of the grid's decayed usage over the run:\n\n\
                 | algorithm | at 25 % | at 50 % | at 75 % | at the end |\n|---|---|---|---|---|"
            );
            for a in s.algorithms() {
                let g = |m: &str| s.get(&a, t, x, m).unwrap_or(f64::NAN);
                let _ = writeln!(
                    r,
                    "| {a} | {:.3} | {:.3} | {:.3} | {:.3} |",
                    g("top_usage_25"),
                    g("top_usage_50"),
                    g("top_usage_75"),
                    g("top_usage_100"),
                );
            }
            r.push('\n');
            findings.extend(finding(s, t, x));
        }
    }
    let same = |a: &str, b: &str, t: &str| {
        let cells: Vec<f64> = s.tas();
        cells.iter().all(|&x| {
            METRICS
                .iter()
                .all(|m| s.get(a, t, x, m) == s.get(b, t, x, m))
        })
    };
    if TRACES.iter().all(|t| same("seeds", "easy", t)) {
        findings.push(
            "`seeds` gives EASY's schedule job for job: the traces carry no deadline, licence \
             nor user class, so the classifier gives every job the same priority and `fb-meta` \
             keeps arrival order with a reservation for the head, which is EASY."
                .into(),
        );
    }
    for t in TRACES.iter().filter(|t| same("dominant", "classic", t)) {
        findings.push(format!(
            "{t}: `dominant` equals `classic`: without licences and with one user per account \
             the dominant share is the classic factor (its definition)."
        ));
    }
    findings.push(
        "Jain's index over the users' slowdowns measures equal service per user; fair share \
         aims at usage in proportion to the shares instead, and serves the heavy users last, so \
         the index falls where their slowdowns grow (read it beside the light and heavy users' \
         waits)."
            .into(),
    );
    let _ = writeln!(r, "## What the runs show\n");
    for f in findings {
        let _ = writeln!(r, "- {f}");
    }
    r
}

/// The metrics compared when two algorithms are said to schedule alike.
const METRICS: [&str; 6] = [
    "wait",
    "bsld",
    "light_wait",
    "heavy_wait",
    "jain_wait",
    "jain_bsld",
];

/// What the fair-share factors did to the light users and to fairness against the seeds'
/// classifier (same local policy, `fb-meta`), read from the numbers only.
fn finding(s: &Summary, t: &str, x: f64) -> Vec<String> {
    let g = |a: &str, m: &str| s.get(a, t, x, m);
    let Some(base_light) = g("seeds", "light_wait") else {
        return Vec::new();
    };
    let base_jain = g("seeds", "jain_bsld").unwrap_or(f64::NAN);
    let mut out = Vec::new();
    for a in ["classic", "fair-tree", "dominant"] {
        let (Some(light), Some(jain), Some(heavy), Some(base_heavy)) = (
            g(a, "light_wait"),
            g(a, "jain_bsld"),
            g(a, "heavy_wait"),
            g("seeds", "heavy_wait"),
        ) else {
            continue;
        };
        let change = |new: f64, old: f64| {
            if old > 0.0 {
                format!("{:+.0} %", (new / old - 1.0) * 100.0)
            } else {
                format!("{new:.0} s against {old:.0} s")
            }
        };
        out.push(format!(
            "{t}, arrivals × {x}: `{a}` against `seeds` (both `fb-meta`): light users' wait {} \
             ({light:.0} s), heavy users' wait {} ({heavy:.0} s); Jain's index over slowdowns \
             {jain:.3} against {base_jain:.3} ({}).",
            change(light, base_light),
            change(heavy, base_heavy),
            if jain > base_jain {
                "fairer"
            } else if jain < base_jain {
                "less fair"
            } else {
                "equal"
            }
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jains_index_of_worked_cases() {
        assert_eq!(jain(&[1.0, 1.0, 1.0]), 1.0);
        // One user served, three not: 1/4.
        assert_eq!(jain(&[4.0, 0.0, 0.0, 0.0]), 0.25);
        assert_eq!(jain(&[]), 1.0);
        // (1 + 3)² / (2 · 10) = 0.8.
        assert_eq!(jain(&[1.0, 3.0]), 0.8);
    }
}
