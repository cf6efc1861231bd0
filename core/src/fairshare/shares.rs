//! The grid's fair-share book: the account tree of the grid description, each user's decayed
//! usage of processors and licences, charged when a job's run ends, and the factor of the chosen
//! algorithm for a job's owner at its classification. Spec readings: a run is charged
//! `procs × seconds` (and `seconds` per licence); with a recalculation period
//! ([`FairShareConfig::recalc_period`], Slurm's `PriorityCalcPeriod`) the grid runner charges the
//! running jobs what they used so far and re-reads every waiting job's factor once a period,
//! without one (`0`) a run is charged when it ends and the factor is read once, at
//! classification, as the two-level design classifies once (Pasquali, thesis §3.1.1).

use super::tree::{Assoc, Kind, Tree, TreeError};
use super::{Usage, classic, dominant, fair_tree};
use crate::model::{Duration, LicenceId, Time, UserId};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Which fair-share factor the book computes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Algorithm {
    /// Slurm's classic fair share ([`classic`]).
    #[default]
    Classic,
    /// Slurm's Fair Tree ([`fair_tree`]).
    FairTree,
    /// The dominant-resource share over processors and licences ([`dominant`]).
    Dominant,
}

impl Algorithm {
    /// Its name in configurations and reports.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Classic => "classic",
            Algorithm::FairTree => "fair-tree",
            Algorithm::Dominant => "dominant",
        }
    }
}

/// Slurm's default `PriorityDecayHalfLife`: 7 days.
pub const WEEK: Duration = 7 * 24 * 3600;

fn week() -> Duration {
    WEEK
}

fn one() -> f64 {
    1.0
}

/// When every association's usage is cleared (Slurm's `PriorityUsageResetPeriod`): at 00:00
/// UTC on the first day of the period (a week begins on Sunday, as Slurm's). Spec reading: UTC,
/// where Slurm takes the controller's local time. With `half_life = 0` this is what turns
/// `max_proc_seconds` into a budget per period.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResetPeriod {
    /// Never (the default).
    #[default]
    None,
    /// Every day.
    Daily,
    /// Every week, on Sunday.
    Weekly,
    /// On the first of every month.
    Monthly,
    /// On the first of January, April, July and October.
    Quarterly,
    /// On the first of January.
    Yearly,
}

impl ResetPeriod {
    /// The number of the period `now` (Unix seconds) falls in; `None` when usage is never reset.
    pub fn index(self, now: Time) -> Option<i64> {
        let day = now.div_euclid(86_400);
        let date = || {
            let t = jiff::Timestamp::from_second(now).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
            t.to_zoned(jiff::tz::TimeZone::UTC).date()
        };
        let month = || {
            let d = date();
            i64::from(d.year()) * 12 + i64::from(d.month()) - 1
        };
        match self {
            ResetPeriod::None => None,
            ResetPeriod::Daily => Some(day),
            // 1970-01-01 was a Thursday: day 3 is the first Sunday.
            ResetPeriod::Weekly => Some((day + 4).div_euclid(7)),
            ResetPeriod::Monthly => Some(month()),
            ResetPeriod::Quarterly => Some(month().div_euclid(3)),
            ResetPeriod::Yearly => Some(i64::from(date().year())),
        }
    }

    /// When period `index` begins (Unix seconds, 00:00 UTC); `None` when usage is never reset or
    /// the period lies beyond the calendar.
    pub fn start(self, index: i64) -> Option<Time> {
        let first_of = |year: i64, month: i64| {
            let year = i16::try_from(year).ok()?;
            let month = i8::try_from(month + 1).ok()?;
            let d = jiff::civil::Date::new(year, month, 1).ok()?;
            let z = d.to_zoned(jiff::tz::TimeZone::UTC).ok()?;
            Some(z.timestamp().as_second())
        };
        match self {
            ResetPeriod::None => None,
            ResetPeriod::Daily => index.checked_mul(86_400),
            ResetPeriod::Weekly => index.checked_mul(7)?.checked_sub(4)?.checked_mul(86_400),
            ResetPeriod::Monthly => first_of(index.div_euclid(12), index.rem_euclid(12)),
            ResetPeriod::Quarterly => {
                let m = index.checked_mul(3)?;
                first_of(m.div_euclid(12), m.rem_euclid(12))
            }
            ResetPeriod::Yearly => first_of(index, 0),
        }
    }
}

/// Slurm's default `PriorityCalcPeriod`: 5 minutes.
pub const CALC_PERIOD: Duration = 300;

fn calc_period() -> Duration {
    CALC_PERIOD
}

/// The fair share of a grid description.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FairShareConfig {
    /// The factor (default classic).
    #[serde(default)]
    pub algorithm: Algorithm,
    /// Seconds after which usage left alone counts half (default 7 days; 0: never decays).
    #[serde(default = "week")]
    pub half_life: Duration,
    /// Slurm's `FairShareDampeningFactor` of the classic factor (default 1).
    #[serde(default = "one")]
    pub dampening: f64,
    /// Seconds between two recalculations (Slurm's `PriorityCalcPeriod`, default 5 minutes):
    /// the running jobs are charged what they used so far and every waiting job's priority is
    /// computed again from its owner's factor. 0: a run is charged when it ends and a job's
    /// factor is read once, when it is classified.
    #[serde(default = "calc_period")]
    pub recalc_period: Duration,
    /// When the usage is cleared (Slurm's `PriorityUsageResetPeriod`; default never).
    #[serde(default)]
    pub reset_period: ResetPeriod,
    /// The accounts and users with their shares.
    pub accounts: Vec<Assoc>,
}

/// A fair-share description that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShareError {
    /// The tree is wrong.
    #[error("accounts: {0}")]
    Tree(#[from] TreeError),
    /// The recalculation period is negative.
    #[error("fairshare key `recalc_period`: must be 0 (read once) or a number of seconds")]
    RecalcPeriod,
    /// The dampening factor is not a number of at least 1.
    #[error("fairshare key `dampening`: must be a number of at least 1")]
    Dampening,
    /// The half-life is negative.
    #[error("fairshare key `half_life`: must be 0 (no decay) or a number of seconds")]
    HalfLife,
    /// A user without the id its jobs carry (a driver's mistake).
    #[error("user `{0}` has no id")]
    NoId(String),
    /// Two users of one id.
    #[error("users `{1}` and `{2}` have the same id {0}")]
    SameId(u32, String, String),
}

/// The usage a book has charged, to continue from (a driver restarted with its snapshot).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UsageState {
    /// Processor-seconds.
    pub procs: Usage,
    /// Seconds per licence type used.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub licences: BTreeMap<u16, Usage>,
    /// The last recalculation, up to which the jobs then running were charged (a job restored
    /// running is charged from then on, not again from its start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub charged_to: Option<Time>,
    /// The reset period ([`ResetPeriod::index`]) the usage belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<i64>,
}

/// A user's standing: its factor, its normalized share and its part of the grid's usage.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShareStanding {
    /// The factor, in `0..=1`.
    pub factor: f64,
    /// Its normalized share `S`.
    pub share: f64,
    /// Its part of the grid's decayed processor-seconds.
    pub usage: f64,
}

/// A limit of an association that refuses a submission or holds a job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("limit {limit} of {kind} `{assoc}`: {detail}")]
pub struct LimitHit {
    /// The key: `max_submit`, `max_jobs`, `max_procs` or `max_proc_seconds`.
    pub limit: String,
    /// `user` or `account`.
    pub kind: String,
    /// The association.
    pub assoc: String,
    /// The current use against the limit, in words.
    pub detail: String,
}

/// What each association has in the grid now, for its limits.
#[derive(Clone, Debug, Default)]
struct InUse {
    /// Jobs in the grid.
    jobs: Vec<u32>,
    /// Jobs past their running limits (out at the sites or in the meta level's queue).
    out: Vec<u32>,
    /// Their processors.
    procs: Vec<u64>,
    /// Their processors × estimates (what they may use at most).
    committed: Vec<f64>,
}

/// User `user`'s association and its ancestors (a free function: the counters beside the tree
/// are updated while it is walked).
fn path<'a>(
    tree: &'a Tree,
    by_id: &FxHashMap<u32, usize>,
    user: UserId,
) -> impl Iterator<Item = usize> + 'a {
    std::iter::successors(by_id.get(&user.0).copied(), |&i| tree.parent[i])
}

/// The book.
#[derive(Clone, Debug)]
pub struct Shares {
    cfg: FairShareConfig,
    tree: Tree,
    by_id: FxHashMap<u32, usize>,
    used: UsageState,
    /// The factors by association, as of a time, until the next charge.
    factors: Option<(Time, Vec<Option<f64>>)>,
    in_use: InUse,
    /// When the current reset period ends, once known: until then no input needs a calendar.
    next_reset: Option<Time>,
}

impl Shares {
    /// A book over the checked description, nothing used yet.
    pub fn new(cfg: FairShareConfig) -> Result<Shares, ShareError> {
        if !(cfg.dampening >= 1.0 && cfg.dampening.is_finite()) {
            return Err(ShareError::Dampening);
        }
        if cfg.half_life < 0 {
            return Err(ShareError::HalfLife);
        }
        if cfg.recalc_period < 0 {
            return Err(ShareError::RecalcPeriod);
        }
        let tree = Tree::new(cfg.accounts.clone())?;
        let mut by_id = FxHashMap::default();
        for (i, a) in tree.assocs().iter().enumerate() {
            if a.kind != Kind::User {
                continue;
            }
            let id = a.id.ok_or_else(|| ShareError::NoId(a.name.clone()))?;
            if let Some(j) = by_id.insert(id, i) {
                let other = tree.name(j).to_owned();
                return Err(ShareError::SameId(id, other, a.name.clone()));
            }
        }
        let used = UsageState {
            procs: Usage::new(cfg.half_life),
            licences: BTreeMap::new(),
            charged_to: None,
            period: None,
        };
        let n = tree.assocs().len();
        Ok(Shares {
            cfg,
            tree,
            by_id,
            used,
            factors: None,
            next_reset: None,
            in_use: InUse {
                jobs: vec![0; n],
                out: vec![0; n],
                procs: vec![0; n],
                committed: vec![0.0; n],
            },
        })
    }

    /// The description.
    pub fn config(&self) -> &FairShareConfig {
        &self.cfg
    }

    /// The name of user `user`'s association, when it has one.
    pub fn user(&self, user: UserId) -> Option<&str> {
        self.by_id.get(&user.0).map(|&i| self.tree.name(i))
    }

    /// Charges `user`'s run of `seconds` on `procs` processors and `licences`, ended at `now`.
    pub fn charge(
        &mut self,
        user: UserId,
        procs: u32,
        licences: &[LicenceId],
        seconds: Duration,
        now: Time,
    ) {
        let Some(&i) = self.by_id.get(&user.0) else {
            return;
        };
        if seconds <= 0 {
            return;
        }
        let name = self.tree.name(i);
        let half_life = self.cfg.half_life;
        (self.used.procs).charge(name, f64::from(procs) * seconds as f64, now);
        for l in licences {
            let u = (self.used.licences)
                .entry(l.0)
                .or_insert_with(|| Usage::new(half_life));
            u.charge(name, seconds as f64, now);
        }
        self.factors = None;
    }

    /// `user`'s standing at `now`; `None` for a user without an association.
    pub fn standing(&mut self, user: UserId, now: Time) -> Option<ShareStanding> {
        let &i = self.by_id.get(&user.0)?;
        if self.factors.as_ref().is_none_or(|(t, _)| *t != now) {
            self.factors = Some((now, self.compute(now)));
        }
        let factor = self.factors.as_ref().and_then(|(_, f)| f[i])?;
        Some(ShareStanding {
            factor,
            share: self.tree.normalized_share(i),
            usage: self.used.procs.normalized(self.tree.name(i), now),
        })
    }

    fn compute(&self, now: Time) -> Vec<Option<f64>> {
        let procs = &self.used.procs;
        match self.cfg.algorithm {
            Algorithm::Classic => {
                classic(&self.tree, |u| procs.normalized(u, now), self.cfg.dampening)
            }
            Algorithm::FairTree => fair_tree(&self.tree, |u| procs.of(u, now)),
            Algorithm::Dominant => dominant(&self.tree, |u| {
                std::iter::once(procs)
                    .chain(self.used.licences.values())
                    .map(|r| r.normalized(u, now))
                    .collect()
            }),
        }
    }

    /// User `user`'s association and its ancestors.
    fn path(&self, user: UserId) -> impl Iterator<Item = usize> + '_ {
        path(&self.tree, &self.by_id, user)
    }

    fn hit(&self, i: usize, limit: &str, detail: String) -> LimitHit {
        let a = &self.tree.assocs()[i];
        LimitHit {
            limit: limit.into(),
            kind: match a.kind {
                Kind::User => "user".into(),
                Kind::Account => "account".into(),
            },
            assoc: a.name.clone(),
            detail,
        }
    }

    /// Whether one more job of `user` may enter the grid (`max_submit`).
    pub fn may_submit(&self, user: UserId) -> Result<(), LimitHit> {
        for i in self.path(user) {
            let has = self.in_use.jobs[i];
            if let Some(max) = self.tree.assocs()[i].max_submit
                && has >= max
            {
                return Err(self.hit(i, "max_submit", format!("{has} jobs in the grid of {max}")));
            }
        }
        Ok(())
    }

    /// A job of `user` entered the grid (`1`) or left it (`-1`).
    pub fn count_in_grid(&mut self, user: UserId, by: i32) {
        for i in path(&self.tree, &self.by_id, user) {
            self.in_use.jobs[i] = self.in_use.jobs[i].saturating_add_signed(by);
        }
    }

    /// Whether a job of `user` on `procs` processors for at most `estimate` seconds may go out
    /// at `now` (`max_jobs`, `max_procs`, `max_proc_seconds`).
    pub fn may_run(
        &self,
        user: UserId,
        procs: u32,
        estimate: Duration,
        now: Time,
    ) -> Result<(), LimitHit> {
        for i in self.path(user) {
            let a = &self.tree.assocs()[i];
            let (out, used) = (self.in_use.out[i], self.in_use.procs[i]);
            if let Some(max) = a.max_jobs
                && out >= max
            {
                return Err(self.hit(i, "max_jobs", format!("{out} jobs out of {max}")));
            }
            if let Some(max) = a.max_procs
                && used + u64::from(procs) > u64::from(max)
            {
                return Err(self.hit(
                    i,
                    "max_procs",
                    format!("{used} processors in use, {procs} more asked, of {max}"),
                ));
            }
            if let Some(max) = a.max_proc_seconds {
                let (spent, committed) = (self.spent(i, now), self.in_use.committed[i]);
                let ask = f64::from(procs) * estimate.max(0) as f64;
                if spent + committed + ask > max as f64 {
                    return Err(self.hit(
                        i,
                        "max_proc_seconds",
                        format!(
                            "{spent:.0} processor-seconds used, {committed:.0} held by running \
                             jobs, {ask:.0} more asked, of {max}"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Whether a job of `user` on `procs` processors for at most `estimate` seconds could ever
    /// go out, its association and every ancestor idle and unused: wider than a `max_procs`, or
    /// asking more than a whole `max_proc_seconds`, it never could (refused at the door, where
    /// Slurm would leave it pending for good).
    pub fn may_ever_run(
        &self,
        user: UserId,
        procs: u32,
        estimate: Duration,
    ) -> Result<(), LimitHit> {
        for i in self.path(user) {
            let a = &self.tree.assocs()[i];
            if let Some(max) = a.max_procs
                && procs > max
            {
                return Err(self.hit(
                    i,
                    "max_procs",
                    format!("{procs} processors asked, more than the {max} it may ever have out"),
                ));
            }
            let ask = u64::from(procs).saturating_mul(estimate.max(0) as u64);
            if let Some(max) = a.max_proc_seconds
                && ask > max
            {
                return Err(self.hit(
                    i,
                    "max_proc_seconds",
                    format!(
                        "{procs} processors × {estimate} s = {ask} processor-seconds asked, more \
                         than the whole budget of {max}"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The decayed processor-seconds of association `i` (an account: of all its users) at
    /// `now`.
    fn spent(&self, i: usize, now: Time) -> f64 {
        (self.by_id.iter())
            .filter(|&(&id, _)| self.path(UserId(id)).any(|k| k == i))
            .map(|(_, &u)| self.used.procs.of(self.tree.name(u), now))
            .sum()
    }

    /// A job of `user` on `procs` processors for at most `estimate` seconds went out (`1`) or
    /// ended (`-1`).
    pub fn count_out(&mut self, user: UserId, procs: u32, estimate: Duration, by: i32) {
        let committed = f64::from(procs) * estimate.max(0) as f64;
        for i in path(&self.tree, &self.by_id, user) {
            self.in_use.out[i] = self.in_use.out[i].saturating_add_signed(by);
            let p = &mut self.in_use.procs[i];
            let c = &mut self.in_use.committed[i];
            if by > 0 {
                *p += u64::from(procs);
                *c += committed;
            } else {
                *p = p.saturating_sub(u64::from(procs));
                *c = (*c - committed).max(0.0);
            }
        }
    }

    /// Whether a held job may go out without a job ending: some association's budget refills
    /// as its usage decays.
    pub fn refills(&self) -> bool {
        self.cfg.half_life > 0 && (self.tree.assocs().iter()).any(|a| a.max_proc_seconds.is_some())
    }

    /// Whether any association limits its running jobs (else nothing is held).
    pub fn limits_running(&self) -> bool {
        (self.tree.assocs().iter())
            .any(|a| a.max_jobs.is_some() || a.max_procs.is_some() || a.max_proc_seconds.is_some())
    }

    /// Clears every association's usage when `now` falls in a later reset period than the usage
    /// does ([`ResetPeriod`]); whether it did.
    pub fn reset_if_due(&mut self, now: Time) -> bool {
        if self.next_reset.is_some_and(|end| now < end) {
            return false;
        }
        let Some(p) = self.cfg.reset_period.index(now) else {
            return false;
        };
        self.next_reset = p
            .checked_add(1)
            .and_then(|n| self.cfg.reset_period.start(n));
        let due = self.used.period.is_some_and(|old| p > old);
        if due {
            self.used.procs = Usage::new(self.cfg.half_life);
            self.used.licences.clear();
            self.factors = None;
        }
        self.used.period = Some(p);
        due
    }

    /// The recalculation period (0: none).
    pub fn recalc_period(&self) -> Duration {
        self.cfg.recalc_period
    }

    /// Notes a recalculation at `now`: the running jobs are charged up to it.
    pub fn charged_to(&mut self, now: Time) {
        self.used.charged_to = Some(now);
    }

    /// What it has charged.
    pub fn state(&self) -> &UsageState {
        &self.used
    }

    /// Continues from a [`state`](Self::state).
    pub fn restore(&mut self, state: UsageState) {
        self.used = state;
        self.factors = None;
        self.next_reset = None;
    }
}
