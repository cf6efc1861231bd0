//! The grid's accounting: a record of every finished job's use (processor-seconds,
//! licence-seconds, wall time, wait; where it ran; its owner, account and class), written with
//! its end, and the rollups `gridctl usage` sums (per hour and per day, by user, account, site,
//! machine and class), in the manner of Slurm's `sacct` and `sreport` (its hourly and daily
//! rollups of the jobs' use).
//!
//! Spec readings (the two-level design charges nothing; these follow Slurm's accounting): a run's
//! processor- and licence-seconds go to the hours it ran in, split at each hour's edge; a job's
//! count, wall time and wait go to the hour it ended in; a split job's fragments each count at
//! their own site and machine; a job that never started has a record (its wait runs to its end)
//! and uses nothing; arrays and workflows have no record of their own (their tasks and nodes
//! have). Only the run that ended is charged: an earlier run of a requeued job is not.

use gridsched_proto::v1;
use std::collections::BTreeMap;

/// An hour, in seconds: the fine grain of the rollups.
pub const HOUR: i64 = 3_600;
/// A day: the coarse grain.
pub const DAY: i64 = 86_400;

/// The sums of one rollup row (see [`v1::UsageRow`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sums {
    /// Jobs that ended after running.
    pub jobs: u64,
    /// Processor-seconds used.
    pub proc_s: u64,
    /// Licence-seconds used.
    pub licence_s: u64,
    /// Wall seconds of the jobs that ended.
    pub wall_s: u64,
    /// Waits of the jobs that ended, seconds.
    pub wait_s: u64,
}

impl Sums {
    /// Adds `o`.
    pub fn add(&mut self, o: &Sums) {
        self.jobs += o.jobs;
        self.proc_s += o.proc_s;
        self.licence_s += o.licence_s;
        self.wall_s += o.wall_s;
        self.wait_s += o.wait_s;
    }

    /// As stored: five little-endian u64s.
    pub fn to_bytes(self) -> [u8; 40] {
        let mut b = [0u8; 40];
        for (i, v) in self.fields().iter().enumerate() {
            b[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
        }
        b
    }

    /// From [`Sums::to_bytes`] (missing bytes read as zero).
    pub fn from_bytes(b: &[u8]) -> Sums {
        let f = |i: usize| {
            b.get(i * 8..i * 8 + 8)
                .map_or(0, |s| u64::from_le_bytes(s.try_into().expect("8 bytes")))
        };
        Sums {
            jobs: f(0),
            proc_s: f(1),
            licence_s: f(2),
            wall_s: f(3),
            wait_s: f(4),
        }
    }

    fn fields(self) -> [u64; 5] {
        [
            self.jobs,
            self.proc_s,
            self.licence_s,
            self.wall_s,
            self.wait_s,
        ]
    }

    /// The row of `key`.
    pub fn row(self, key: String) -> v1::UsageRow {
        v1::UsageRow {
            key,
            jobs: self.jobs,
            processor_seconds: self.proc_s,
            licence_seconds: self.licence_s,
            wall_seconds: self.wall_s,
            wait_seconds: self.wait_s,
        }
    }
}

/// A rollup row's key: what it sums by (a [`v1::UsageBy`] value), its grain ([`HOUR`] or
/// [`DAY`]), the bucket's start and the user, account, site, `site/machine` or class.
pub type RollKey = (i32, i64, i64, String);

/// The users' accounts, from the grid's fair-share tree (a user's parent in it).
#[derive(Debug, Clone, Default)]
pub struct Accounts(std::collections::HashMap<String, String>);

impl Accounts {
    /// From the `[fairshare]` tree, if any.
    pub fn new(tree: Option<&gridsched_core::fairshare::FairShareConfig>) -> Accounts {
        use gridsched_core::fairshare::Kind;
        Accounts(
            tree.into_iter()
                .flat_map(|t| &t.accounts)
                .filter(|a| a.kind == Kind::User)
                .filter_map(|a| Some((a.name.clone(), a.parent.clone()?)))
                .collect(),
        )
    }

    /// `user`'s account; empty outside the tree.
    pub fn of(&self, user: &str) -> &str {
        self.0.get(user).map_or("", String::as_str)
    }
}

/// The class's name in the rollups and reports.
pub fn class_name(c: v1::UserClass) -> &'static str {
    match c {
        v1::UserClass::Gold => "gold",
        v1::UserClass::Silver => "silver",
        v1::UserClass::Regular | v1::UserClass::Unspecified => "regular",
    }
}

/// The accounting record of `job` once it has finished; `None` while it runs, and for an array
/// or a workflow (their tasks and nodes have records of their own).
pub fn record(job: &v1::Job, accounts: &Accounts) -> Option<v1::UsageRecord> {
    let spec = job.spec.as_ref()?;
    if !job.state().is_terminal() || spec.array.is_some() || spec.workflow.is_some() {
        return None;
    }
    let end = job.end_time?;
    let submit = job.submit_time.unwrap_or(end);
    let parts: Vec<v1::UsagePart> = if job.fragments.is_empty() {
        job.start_time
            .map(|start| v1::UsagePart {
                site: job.site.clone().unwrap_or_default(),
                machine: job.machine.clone().unwrap_or_default(),
                processors: spec.processors,
                start_time: start,
                end_time: end.max(start),
            })
            .into_iter()
            .collect()
    } else {
        job.fragments
            .iter()
            .filter_map(|f| {
                let start = f.start_time?;
                Some(v1::UsagePart {
                    site: f.site.clone(),
                    machine: f.machine.clone().unwrap_or_default(),
                    processors: f.processors,
                    start_time: start,
                    end_time: f.end_time.unwrap_or(end).max(start),
                })
            })
            .collect()
    };
    let start = parts.iter().map(|p| p.start_time).min();
    let proc_s = parts
        .iter()
        .map(|p| u64::from(p.processors) * (p.end_time - p.start_time) as u64)
        .sum();
    let wall = start.map_or(0, |s| (end - s).max(0));
    Some(v1::UsageRecord {
        job: job.id,
        name: spec.name.clone().unwrap_or_default(),
        user: spec.user.clone(),
        account: accounts.of(&spec.user).to_owned(),
        user_class: spec.user_class,
        priority: job.priority,
        state: job.state,
        processors: spec.processors,
        licences: spec.licences.clone(),
        submit_time: submit,
        start_time: start,
        end_time: end,
        wait_s: (start.unwrap_or(end) - submit).max(0),
        wall_s: wall,
        processor_seconds: proc_s,
        licence_seconds: spec.licences.len() as u64 * wall as u64,
        exit_code: job.exit_code,
        array_id: job.array_id,
        workflow_id: job.workflow_id,
        parts,
    })
}

/// The rollup rows the records add to, each once, summed per key (so that a store adds each
/// key once per write).
pub fn rollups<'a>(
    records: impl IntoIterator<Item = &'a v1::UsageRecord>,
) -> BTreeMap<RollKey, Sums> {
    let mut out: BTreeMap<RollKey, Sums> = BTreeMap::new();
    for r in records {
        charge(r, &mut out);
    }
    out
}

/// Adds one record's use to `out`, under both grains.
fn charge(r: &v1::UsageRecord, out: &mut BTreeMap<RollKey, Sums>) {
    use v1::UsageBy as By;
    // Adds `s` to the bucket of `grain` holding time `at`, under `key`.
    let mut put = |by: By, grain: i64, at: i64, key: &str, s: &Sums| {
        let bucket = at.div_euclid(grain) * grain;
        (out.entry((by as i32, grain, bucket, key.to_owned()))
            .or_default())
        .add(s);
    };
    let class = class_name(r.user_class());
    let owner = [
        (By::User, r.user.as_str()),
        (By::Account, r.account.as_str()),
        (By::Class, class),
    ];
    let machines: Vec<String> = (r.parts.iter())
        .map(|p| format!("{}/{}", p.site, p.machine))
        .collect();
    let mut sites: Vec<&str> = r.parts.iter().map(|p| p.site.as_str()).collect();
    sites.sort_unstable();
    sites.dedup();
    // The job, its wall time and wait: once per owner key and site, once per part's machine, in
    // the bucket it ended in.
    let ended = Sums {
        jobs: 1,
        wall_s: r.wall_s as u64,
        wait_s: r.wait_s as u64,
        ..Sums::default()
    };
    let sites = sites.into_iter().map(|s| (By::Site, s));
    let ended_keys =
        (owner.into_iter().chain(sites)).chain(machines.iter().map(|m| (By::Machine, m.as_str())));
    for (by, key) in ended_keys.filter(|_| !r.parts.is_empty()) {
        for grain in [HOUR, DAY] {
            put(by, grain, r.end_time, key, &ended);
        }
    }
    // The run, bucket by bucket: each gets the seconds of the run inside it; a job's licences
    // are counted once, with its first part.
    for (i, (p, machine)) in r.parts.iter().zip(&machines).enumerate() {
        let licences = if i == 0 { r.licences.len() as u64 } else { 0 };
        let keys = owner
            .into_iter()
            .chain([(By::Site, p.site.as_str()), (By::Machine, machine.as_str())]);
        for grain in [HOUR, DAY] {
            let mut t = p.start_time;
            while t < p.end_time {
                let upto = ((t.div_euclid(grain) + 1) * grain).min(p.end_time);
                let secs = (upto - t) as u64;
                let s = Sums {
                    proc_s: u64::from(p.processors) * secs,
                    licence_s: licences * secs,
                    ..Sums::default()
                };
                for (by, key) in keys.clone() {
                    put(by, grain, t, key, &s);
                }
                t = upto;
            }
        }
    }
}

/// The buckets summing `[since, until)` (both whole hours): whole days as day buckets, the hours
/// at either edge as hour buckets, as `(grain, first bucket, end)` ranges of bucket starts.
pub fn spans(since: i64, until: i64) -> Vec<(i64, i64, i64)> {
    if until <= since {
        return Vec::new();
    }
    let d0 = (since + DAY - 1).div_euclid(DAY) * DAY;
    let d1 = until.div_euclid(DAY) * DAY;
    if d0 >= d1 {
        return vec![(HOUR, since, until)];
    }
    let mut out = Vec::new();
    if since < d0 {
        out.push((HOUR, since, d0));
    }
    out.push((DAY, d0, d1));
    if d1 < until {
        out.push((HOUR, d1, until));
    }
    out
}

/// `[since, until)` rounded out to whole hours.
pub fn hours(since: i64, until: i64) -> (i64, i64) {
    (
        since.div_euclid(HOUR) * HOUR,
        (until + HOUR - 1).div_euclid(HOUR) * HOUR,
    )
}

#[cfg(test)]
mod tests;
