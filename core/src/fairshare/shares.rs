//! The grid's fair-share book: the account tree of the grid description, each user's decayed
//! usage of processors and licences, charged when a job's run ends, and the factor of the chosen
//! algorithm for a job's owner at its classification. Spec readings: a run is charged
//! `procs × seconds` (and `seconds` per licence) once, when it ends (Slurm charges running jobs
//! every `PriorityCalcPeriod` as well); the factor is read when the job is classified, once, as
//! the two-level design classifies once (Pasquali, thesis §3.1.1) where Slurm recomputes it.

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
    /// The accounts and users with their shares.
    pub accounts: Vec<Assoc>,
}

/// A fair-share description that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShareError {
    /// The tree is wrong.
    #[error("accounts: {0}")]
    Tree(#[from] TreeError),
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

/// The book.
#[derive(Clone, Debug)]
pub struct Shares {
    cfg: FairShareConfig,
    tree: Tree,
    by_id: FxHashMap<u32, usize>,
    used: UsageState,
    /// The factors by association, as of a time, until the next charge.
    factors: Option<(Time, Vec<Option<f64>>)>,
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
        };
        Ok(Shares {
            cfg,
            tree,
            by_id,
            used,
            factors: None,
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
        let name = self.tree.name(i).to_owned();
        let half_life = self.cfg.half_life;
        self.used
            .procs
            .charge(&name, f64::from(procs) * seconds as f64, now);
        for l in licences {
            let u = self
                .used
                .licences
                .entry(l.0)
                .or_insert_with(|| Usage::new(half_life));
            u.charge(&name, seconds as f64, now);
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

    /// What it has charged.
    pub fn state(&self) -> &UsageState {
        &self.used
    }

    /// Continues from a [`state`](Self::state).
    pub fn restore(&mut self, state: UsageState) {
        self.used = state;
        self.factors = None;
    }
}
