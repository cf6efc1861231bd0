//! `gridctl bench --against slurm-fairshare`: one stream of jobs from several accounts through
//! Slurm's multifactor priority with its classic fair share (slurmdbd over MariaDB, as
//! `GRIDSCHED_SLURM_ACCOUNTING=1 scripts/slurm.sh start` runs it) and through gridsched's classic
//! fair share (the grid runner and an `fb-meta` site, in virtual time) with the same account
//! tree, half-life, recalculation period and weight; then the order in which the jobs started
//! (Kendall's tau-b between the two start times) and the processor-seconds each account
//! received over the first half of the run, side by side.
//!
//! The tree: account A (3 shares) with sub-accounts A1 and A2 (1 each), B (2), C (1); one user
//! association in each leaf account (in Slurm the submitting user, `root`, under A1, A2, B and
//! C; in gridsched the users `a1`, `a2`, `b`, `c`). The stream: `--fs-jobs` jobs, seeded, all
//! submitted at once in one order, each of 1 to 4 processors sleeping 20 to 90 s with a limit of
//! the next whole minute; the accounts' demands differ (C asks the most, A2 the least).

use crate::bench::BenchArgs;
use crate::bench_slurm::output;
use crate::out::outln;
use gridsched_core::classify::{ClassifierConfig, Weights};
use gridsched_core::fairshare::{Algorithm, Assoc, FairShareConfig, Kind, ResetPeriod};
use gridsched_core::model::{Job, UserId};
use gridsched_core::policy::PolicyKind;
use rand::{RngExt, SeedableRng};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// The leaf accounts (each one user association), their parents and shares; then the upper
/// accounts.
const LEAVES: [(&str, &str); 4] = [("A1", "A"), ("A2", "A"), ("B", ""), ("C", "")];
const SHARES: [(&str, &str, u32); 5] = [
    ("A", "", 3),
    ("A1", "A", 1),
    ("A2", "A", 1),
    ("B", "", 2),
    ("C", "", 1),
];
/// How often each leaf account submits, out of 10.
const DEMAND: [u32; 4] = [3, 1, 2, 4];
/// Slurm's `PriorityWeightFairshare`, also gridsched's top priority.
const WEIGHT: u8 = 100;

/// One job of the stream.
#[derive(Clone, Debug)]
struct StreamJob {
    /// Index of its leaf account.
    leaf: usize,
    procs: u32,
    /// Seconds it sleeps.
    run: i64,
    /// Its limit, whole minutes.
    minutes: i64,
}

/// The seeded stream.
fn stream(n: usize, seed: u64) -> Vec<StreamJob> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let total: u32 = DEMAND.iter().sum();
    (0..n)
        .map(|_| {
            let mut pick = rng.random_range(0..total);
            let leaf = DEMAND
                .iter()
                .position(|&d| {
                    if pick < d {
                        true
                    } else {
                        pick -= d;
                        false
                    }
                })
                .unwrap_or(0);
            let run = rng.random_range(20..=90);
            StreamJob {
                leaf,
                procs: rng.random_range(1..=4),
                run,
                minutes: run / 60 + 1,
            }
        })
        .collect()
}

/// The same tree for gridsched: users `a1`, `a2`, `b`, `c` (ids 1–4) under the leaves.
fn tree(half_life: i64, period: i64) -> FairShareConfig {
    let mut accounts: Vec<Assoc> = SHARES
        .iter()
        .map(|&(name, parent, shares)| Assoc {
            name: name.into(),
            kind: Kind::Account,
            parent: (!parent.is_empty()).then(|| parent.into()),
            shares,
            ..Assoc::default()
        })
        .collect();
    for (i, (leaf, _)) in LEAVES.iter().enumerate() {
        accounts.push(Assoc {
            name: leaf.to_lowercase(),
            kind: Kind::User,
            parent: Some((*leaf).into()),
            shares: 1,
            id: Some(i as u32 + 1),
            ..Assoc::default()
        });
    }
    FairShareConfig {
        algorithm: Algorithm::Classic,
        half_life,
        dampening: 1.0,
        recalc_period: period,
        reset_period: ResetPeriod::None,
        accounts,
    }
}

fn slurm(conf: &Path, program: &str) -> Command {
    let mut c = Command::new(program);
    c.env("SLURM_CONF", conf).env("TZ", "UTC");
    c
}

/// A `slurm.conf` key's value (`scontrol show config`).
fn config_value(conf: &Path, key: &str) -> anyhow::Result<String> {
    let mut c = slurm(conf, "scontrol");
    c.args(["show", "config"]);
    let text = output(c)?;
    text.lines()
        .find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == key).then(|| v.trim().to_owned())
        })
        .ok_or_else(|| anyhow::anyhow!("Slurm's configuration has no {key}"))
}

/// Slurm's `PriorityDecayHalfLife` or `PriorityCalcPeriod` (`[D-]HH:MM:SS`, or `N min`,
/// `N sec`) in seconds.
fn slurm_seconds(v: &str) -> anyhow::Result<i64> {
    let v = v.trim();
    if let Some(m) = v.strip_suffix("min") {
        return Ok(m.trim().parse::<i64>()? * 60);
    }
    if let Some(s) = v.strip_suffix("sec") {
        return Ok(s.trim().parse::<i64>()?);
    }
    let (days, hms) = match v.split_once('-') {
        Some((d, rest)) => (d.parse::<i64>()?, rest),
        None => (0, v),
    };
    let parts: Vec<i64> = hms.split(':').map(str::parse).collect::<Result<_, _>>()?;
    let secs = parts.iter().fold(0, |acc, p| acc * 60 + p);
    Ok(days * 86_400 + secs)
}

/// Kendall's tau-b of two rankings of the same items (ties allowed in both).
pub fn kendall_tau_b(x: &[i64], y: &[i64]) -> f64 {
    let (mut concordant, mut discordant, mut tx, mut ty) = (0i64, 0i64, 0i64, 0i64);
    for i in 0..x.len() {
        for j in i + 1..x.len() {
            let (dx, dy) = ((x[i] - x[j]).signum(), (y[i] - y[j]).signum());
            match (dx, dy) {
                (0, 0) => {}
                (0, _) => tx += 1,
                (_, 0) => ty += 1,
                _ if dx == dy => concordant += 1,
                _ => discordant += 1,
            }
        }
    }
    let n1 = (concordant + discordant + tx) as f64;
    let n2 = (concordant + discordant + ty) as f64;
    if n1 == 0.0 || n2 == 0.0 {
        return 1.0;
    }
    (concordant - discordant) as f64 / (n1 * n2).sqrt()
}

/// Processor-seconds per leaf account within `[0, until)` of runs `(leaf, procs, start, end)`.
fn used_until(runs: &[(usize, u32, i64, i64)], until: i64) -> [i64; 4] {
    let mut used = [0i64; 4];
    for &(leaf, procs, start, end) in runs {
        used[leaf] += i64::from(procs) * (end.min(until) - start).max(0);
    }
    used
}

/// `gridctl bench --against slurm-fairshare`.
pub async fn against_slurm_fairshare(a: &BenchArgs) -> anyhow::Result<()> {
    let conf = &a.slurm_conf;
    let flags = config_value(conf, "PriorityType")?;
    anyhow::ensure!(
        flags == "priority/multifactor",
        "Slurm's PriorityType is {flags}: start it with `GRIDSCHED_SLURM_ACCOUNTING=1 \
         scripts/slurm.sh start` (slurmdbd and the multifactor priority)"
    );
    let half_life = slurm_seconds(&config_value(conf, "PriorityDecayHalfLife")?)?;
    let period = slurm_seconds(&config_value(conf, "PriorityCalcPeriod")?)?;
    let weight = config_value(conf, "PriorityWeightFairShare")?;
    let priority_flags = config_value(conf, "PriorityFlags").unwrap_or_default();
    anyhow::ensure!(
        weight == WEIGHT.to_string(),
        "Slurm's PriorityWeightFairShare is {weight}, gridsched's top priority {WEIGHT}"
    );
    anyhow::ensure!(
        priority_flags.contains("NO_FAIR_TREE"),
        "Slurm's PriorityFlags ({priority_flags}) lack NO_FAIR_TREE: its fair share is Fair Tree"
    );
    // The tree, its usage cleared.
    let sacctmgr = |args: &[&str]| {
        let mut c = slurm(conf, "sacctmgr");
        c.arg("-i").args(args);
        output(c)
    };
    for &(name, parent, shares) in &SHARES {
        let mut args = vec![
            "add".to_owned(),
            "account".into(),
            name.into(),
            format!("fairshare={shares}"),
        ];
        if !parent.is_empty() {
            args.push(format!("parent={parent}"));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        // Already there: modified to the same shares.
        if sacctmgr(&args).is_err() {
            sacctmgr(&[
                "modify",
                "account",
                name,
                "set",
                &format!("fairshare={shares}"),
            ])?;
        }
    }
    let leaves: Vec<&str> = LEAVES.iter().map(|l| l.0).collect();
    let _ = sacctmgr(&[
        "add",
        "user",
        "root",
        &format!("account={}", leaves.join(",")),
        "fairshare=1",
    ]);
    // Slurm gives the submitting user an association of one share at the root of the tree
    // (`sacctmgr add cluster` does), a sibling of A, B and C that gridsched's tree has not.
    let _ = sacctmgr(&["remove", "user", "root", "where", "account=root"]);
    for (name, ..) in SHARES {
        sacctmgr(&[
            "modify",
            "account",
            "where",
            &format!("name={name}"),
            "set",
            "rawusage=0",
        ])?;
    }
    for leaf in &leaves {
        sacctmgr(&[
            "modify",
            "user",
            "where",
            "name=root",
            &format!("account={leaf}"),
            "set",
            "rawusage=0",
        ])?;
    }

    let jobs = stream(a.fs_jobs, 1);
    let work = Instant::now();
    let dir = tempfile::tempdir()?;
    let mut ids = Vec::new();
    for (k, j) in jobs.iter().enumerate() {
        let mut c = slurm(conf, "sbatch");
        c.args([
            "--parsable",
            &format!("--account={}", LEAVES[j.leaf].0),
            "--ntasks=1",
            &format!("--cpus-per-task={}", j.procs),
            &format!("--time={}", j.minutes),
            &format!("--job-name=gs-fs-{k}"),
            "--output=/dev/null",
            &format!("--chdir={}", dir.path().display()),
            &format!("--wrap=sleep {}", j.run),
        ]);
        let id = output(c)?.trim().to_owned();
        ids.push(id.split(';').next().unwrap_or_default().to_owned());
    }
    outln!(
        "{} jobs submitted to Slurm; waiting for them to end (about {} min)",
        ids.len(),
        jobs.iter().map(|j| i64::from(j.procs) * j.run).sum::<i64>() / i64::from(a.slurm_cpus) / 60
            + 1
    );
    loop {
        let mut c = slurm(conf, "squeue");
        c.args(["-h", "-o", "%i", "-j", &ids.join(",")]);
        if output(c)?.trim().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let wall = work.elapsed();
    let mut c = slurm(conf, "sacct");
    c.args([
        "-X",
        "-n",
        "-P",
        "-o",
        "JobID,Submit,Start,End",
        "-j",
        &ids.join(","),
    ]);
    let text = output(c)?;
    let parse = |t: &str| -> anyhow::Result<i64> {
        let dt: jiff::civil::DateTime = t.parse()?;
        Ok(dt
            .to_zoned(jiff::tz::TimeZone::UTC)?
            .timestamp()
            .as_second())
    };
    let mut times: BTreeMap<String, (i64, i64, i64)> = BTreeMap::new();
    for l in text.lines() {
        let f: Vec<&str> = l.split('|').collect();
        if let [id, submit, start, end] = f[..] {
            times.insert(id.to_owned(), (parse(submit)?, parse(start)?, parse(end)?));
        }
    }
    let first = times.values().map(|t| t.1).min().unwrap_or(0);
    let mut slurm_waits = [0i64; 4];
    let slurm_runs: Vec<(usize, u32, i64, i64)> = (ids.iter().zip(&jobs))
        .map(|(id, j)| {
            let (q, s, e) = times.get(id).copied().unwrap_or((first, first, first));
            slurm_waits[j.leaf] += s - q;
            (j.leaf, j.procs, s - first, e - first)
        })
        .collect();
    let charged = raw_usage(conf)?;

    // gridsched: the same stream in virtual time.
    let cpus = a.slurm_cpus;
    let sim_jobs: Vec<Job> = (jobs.iter().enumerate())
        .map(|(k, j)| {
            let mut job = Job::new(k as u64 + 1, 0, j.procs, j.minutes * 60, j.run);
            job.user = UserId(j.leaf as u32 + 1);
            job
        })
        .collect();
    let classifier = ClassifierConfig {
        max: WEIGHT,
        weights: Weights::fairshare_only(),
        ..ClassifierConfig::default()
    };
    let records = gridsim::experiment::fairshare::replay(
        cpus,
        PolicyKind::FbMeta,
        Some(classifier),
        Some(tree(half_life, period)),
        &sim_jobs,
    )?;
    let mut ours: Vec<(usize, u32, i64, i64)> = vec![(0, 0, 0, 0); jobs.len()];
    let mut our_waits = [0i64; 4];
    for r in &records {
        let k = r.id.0 as usize - 1;
        ours[k] = (jobs[k].leaf, jobs[k].procs, r.start, r.end);
        our_waits[jobs[k].leaf] += r.start;
    }
    let tau = kendall_tau_b(
        &slurm_runs.iter().map(|r| r.2).collect::<Vec<_>>(),
        &ours.iter().map(|r| r.2).collect::<Vec<_>>(),
    );
    let span = |runs: &[(usize, u32, i64, i64)]| runs.iter().map(|r| r.3).max().unwrap_or(0);
    let half = span(&slurm_runs).min(span(&ours)) / 2;
    let (su, gu) = (used_until(&slurm_runs, half), used_until(&ours, half));
    let (st, gt) = (su.iter().sum::<i64>().max(1), gu.iter().sum::<i64>().max(1));
    outln!(
        "Slurm ({}, {} CPUs): PriorityDecayHalfLife {half_life} s, PriorityCalcPeriod {period} s, \
         PriorityWeightFairShare {WEIGHT}, PriorityFlags {priority_flags}; gridsched: classic \
         fair share, the same half-life and recalc_period, fb-meta, priority from the factor \
         alone (max {WEIGHT})",
        config_value(conf, "SLURM_VERSION").unwrap_or_default(),
        cpus
    );
    outln!(
        "{} jobs; makespan Slurm {} s, gridsched {} s (wall {:.0} s); start order: Kendall's \
         tau-b {tau:.3}",
        jobs.len(),
        span(&slurm_runs),
        span(&ours),
        wall.as_secs_f64()
    );
    outln!(
        "per account: mean wait (s), processor-seconds over the first {half} s (share), and \
         what Slurm charged of the processor-seconds its jobs ran (RawUsage after the run)"
    );
    outln!(
        "| account | jobs | wait Slurm | wait gridsched | first half Slurm | first half \
         gridsched | ran in Slurm | Slurm's RawUsage |"
    );
    outln!("|---|---|---|---|---|---|---|---|");
    let ran = used_until(&slurm_runs, i64::MAX);
    for (i, (leaf, _)) in LEAVES.iter().enumerate() {
        let n = jobs.iter().filter(|j| j.leaf == i).count();
        let mean = |w: i64| w as f64 / n.max(1) as f64;
        outln!(
            "| {leaf} | {n} | {:.0} | {:.0} | {} ({:.3}) | {} ({:.3}) | {} | {} |",
            mean(slurm_waits[i]),
            mean(our_waits[i]),
            su[i],
            su[i] as f64 / st as f64,
            gu[i],
            gu[i] as f64 / gt as f64,
            ran[i],
            charged
                .get(&leaf.to_lowercase())
                .map_or("-".into(), |u| u.to_string()),
        );
    }
    Ok(())
}

/// Each leaf account's `RawUsage` as Slurm's `sshare` reports it (lowercase account names).
fn raw_usage(conf: &Path) -> anyhow::Result<BTreeMap<String, u64>> {
    let mut c = slurm(conf, "sshare");
    c.args(["-n", "-P", "-a", "-o", "Account,User,RawUsage"]);
    Ok(raw_usage_of(&output(c)?))
}

/// The user associations' `RawUsage` of `sshare -n -P -a -o Account,User,RawUsage` by account.
fn raw_usage_of(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('|').collect();
            match f[..] {
                [acct, user, raw] if !user.trim().is_empty() => {
                    Some((acct.trim().to_lowercase(), raw.trim().parse().ok()?))
                }
                _ => None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kendall_tau_b_counts_pairs_and_ties() {
        assert_eq!(kendall_tau_b(&[1, 2, 3], &[1, 2, 3]), 1.0);
        assert_eq!(kendall_tau_b(&[1, 2, 3], &[3, 2, 1]), -1.0);
        // One discordant pair of three: (2 − 1) / 3.
        assert!((kendall_tau_b(&[1, 2, 3], &[1, 3, 2]) - 1.0 / 3.0).abs() < 1e-12);
        // Ties in y: tau-b = (1 − 0) / sqrt(3 · 1)... pairs (1,2) tie in y, (1,3) and (2,3)
        // concordant: (2 − 0) / sqrt(3 · 2).
        assert!((kendall_tau_b(&[1, 2, 3], &[1, 1, 2]) - 2.0 / 6f64.sqrt()).abs() < 1e-12);
    }

    /// Only the user associations count, by their account in lowercase.
    #[test]
    fn raw_usage_is_read_from_the_user_rows() {
        let text = "root||4300\n a||1804\n  a1||1750\n   a1|root|1750\n c||2069\n  c|root|2069\n";
        let u = raw_usage_of(text);
        assert_eq!(u.get("a1"), Some(&1750));
        assert_eq!(u.get("c"), Some(&2069));
        assert_eq!(
            (u.get("a"), u.get("root")),
            (None, None),
            "accounts without a user"
        );
    }

    #[test]
    fn slurm_durations_read_in_seconds() {
        assert_eq!(slurm_seconds("01:00:00").unwrap(), 3_600);
        assert_eq!(slurm_seconds("7-00:00:00").unwrap(), 604_800);
        assert_eq!(slurm_seconds("1 min").unwrap(), 60);
        assert_eq!(slurm_seconds("00:01:00").unwrap(), 60);
    }

    #[test]
    fn the_stream_is_seeded_and_its_tree_checks() {
        let a = stream(40, 1);
        assert_eq!(a.len(), 40);
        assert!(
            a.iter()
                .all(|j| (1..=4).contains(&j.procs) && (20..=90).contains(&j.run))
        );
        assert_eq!(
            format!("{a:?}"),
            format!("{:?}", stream(40, 1)),
            "same seed, same stream"
        );
        gridsched_core::fairshare::Shares::new(tree(3_600, 60)).unwrap();
    }
}
