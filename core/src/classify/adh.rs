//! ADH, the self-optimizing Deadline heuristic (Mariotti's thesis §5.1; spec
//! `two-level-grid-scheduler.md` D10.1, readings D12 #35).
//!
//! The static Deadline heuristic divides `[0, 2E]` into intervals whose widths grow by a factor
//! `base = 2` from the top priority down, so that with evenly spread margins each level receives
//! the share of Eq. 3.2 (level `L` of `max`: `2^(max−L) / (2^max − 1)`). When the margins change
//! abruptly between sub-streams the mean `E` lags behind and the levels pile up at the extremes.
//! ADH makes `base` a tuning parameter, generalising Eq. 3.3–3.4:
//! `MinUnity = 2E / Σ_{k=1}^{max} base^k`, `S_k = S_{k−1} + MinUnity·base^k`
//! ([`super::deadline::interval_level`]).
//!
//! The thesis' pattern (§5.1.3, Figure 33) maps onto this module: the **DataRepository** is the
//! bounded record of past levels ([`Repository`]); the **Evaluator** ([`Adh::adapt`]) compares
//! their distribution with the target and, when it leaves the polytope `‖d − d_target‖ ≤ δ`,
//! suggests a new `base`; the **Reconfigurator** installs it; the **Strategy** is the interval
//! division with the installed `base`. As in the thesis' sequence, the evaluation runs before the
//! next item is classified, and the item's level is stored afterwards.
//!
//! The thesis gives neither δ, the norm, the history's length nor the update rule. Readings
//! (D12 #35, the default): L2 distance, δ = 0.1, the last 200 levels (judged once there are 200:
//! a distribution of fewer is noise, not a deviation), and when outside the
//! polytope `base ← base·1.1` if the top half of the levels (the `⌊max/2⌋` highest) holds more than
//! its target share, `base ← max(1.05, base/1.1)` if less. With that reading the record still
//! holds the levels of the old configuration after a change, so the base keeps moving for as long
//! as they stay in it ([`Memory::Sliding`]). Our variant, [`Memory::SinceChange`], judges a
//! configuration only by the levels it produced: the record is emptied at each change and the
//! evaluation waits for `min_samples` new levels. `base` is kept within `[min_base, max_base]`
//! (1.05 and 1,000: the upper bound only guards the arithmetic).

use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// The distance of the polytope `‖d − d_target‖ ≤ δ`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Norm {
    /// Euclidean, as the thesis' text describes it (default).
    #[default]
    L2,
    /// The 1-norm, as its formula is written.
    L1,
}

/// Which levels the Evaluator judges.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Memory {
    /// The last `history` levels, whatever configuration produced them, judged once the record is
    /// full (D12 #35; default).
    #[default]
    Sliding,
    /// Only the levels produced since the last change, once there are `min_samples` (ours).
    SinceChange,
}

/// What the Reconfigurator changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Division {
    /// The intervals' growth factor `base` (the thesis; default).
    #[default]
    Base,
    /// The interval bounds themselves, set to the target's quantiles of the recent margins (ours).
    Quantiles,
}

/// ADH's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdhConfig {
    /// Levels the record keeps (default 200).
    pub history: usize,
    /// Radius δ of the polytope (default 0.1).
    pub delta: f64,
    /// Its norm (default L2).
    pub norm: Norm,
    /// Factor of one change of `base` (default 1.1).
    pub step: f64,
    /// Smallest `base` (default 1.05).
    pub min_base: f64,
    /// Largest `base` (default 1,000).
    pub max_base: f64,
    /// `base` before any change (default 2, the static heuristic's).
    pub initial_base: f64,
    /// Which levels are judged (default sliding).
    pub memory: Memory,
    /// With [`Memory::SinceChange`]: levels needed before a judgement (default 20).
    pub min_samples: usize,
    /// What a reconfiguration changes (default the base).
    pub division: Division,
}

impl Default for AdhConfig {
    fn default() -> Self {
        AdhConfig::SPECIFIED
    }
}

impl AdhConfig {
    /// The thesis' ADH with the specification's readings (D12 #35): the default.
    pub const SPECIFIED: AdhConfig = AdhConfig {
        history: 200,
        delta: 0.1,
        norm: Norm::L2,
        step: 1.1,
        min_base: 1.05,
        max_base: 1_000.0,
        initial_base: 2.0,
        memory: Memory::Sliding,
        min_samples: 20,
        division: Division::Base,
    };

    /// The first wrong key, if any (as `adh.<key>: <why>`).
    pub fn problem(&self) -> Option<String> {
        let bad = |k: &str, why: &str| Some(format!("adh.{k}: {why}"));
        if self.history == 0 {
            return bad("history", "must be at least 1");
        }
        if !(self.delta.is_finite() && self.delta > 0.0) {
            return bad("delta", "must be a positive number");
        }
        if !(self.step.is_finite() && self.step > 1.0) {
            return bad("step", "must be greater than 1");
        }
        if !(self.min_base.is_finite() && self.min_base > 1.0) {
            return bad("min_base", "must be greater than 1");
        }
        if !(self.max_base.is_finite() && self.max_base >= self.min_base) {
            return bad("max_base", "must be at least min_base");
        }
        if !(self.initial_base >= self.min_base && self.initial_base <= self.max_base) {
            return bad("initial_base", "must lie within [min_base, max_base]");
        }
        let judged = self.memory == Memory::SinceChange;
        if self.min_samples == 0 || (judged && self.min_samples > self.history) {
            return bad("min_samples", "must be within 1..=history");
        }
        None
    }
}

/// The target distribution of Eq. 3.2 over the levels `1..=max` (index `L − 1`): each level
/// receives half the share of the one below it.
pub fn target(max: u8) -> Vec<f64> {
    let total = 2f64.powi(i32::from(max)) - 1.0;
    (1..=max)
        .map(|l| 2f64.powi(i32::from(max - l)) / total)
        .collect()
}

/// `‖a − b‖` in the given norm.
pub fn distance(a: &[f64], b: &[f64], norm: Norm) -> f64 {
    let d = a.iter().zip(b).map(|(x, y)| (x - y).abs());
    match norm {
        Norm::L1 => d.sum(),
        Norm::L2 => d.map(|x| x * x).sum::<f64>().sqrt(),
    }
}

/// The DataRepository: the last jobs' inputs (margins) with their outputs (levels), oldest
/// first, and the count of each level.
#[derive(Clone, Debug)]
pub struct Repository {
    capacity: usize,
    items: VecDeque<(i64, u8)>,
    counts: Vec<u32>,
}

impl Repository {
    fn new(capacity: usize, max: u8) -> Repository {
        Repository {
            capacity,
            items: VecDeque::with_capacity(capacity),
            counts: vec![0; usize::from(max)],
        }
    }

    fn push(&mut self, margin: i64, level: u8) {
        let Some(i) = usize::from(level).checked_sub(1) else {
            return;
        };
        if i >= self.counts.len() {
            return;
        }
        self.items.push_back((margin, level));
        self.counts[i] += 1;
        if self.items.len() > self.capacity {
            let (_, old) = self.items.pop_front().expect("non-empty");
            self.counts[usize::from(old) - 1] -= 1;
        }
    }

    fn clear(&mut self) {
        self.items.clear();
        self.counts.iter_mut().for_each(|c| *c = 0);
    }

    /// Jobs recorded.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether none is recorded.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The share of each level `1..=max` among the recorded ones (index `L − 1`).
    pub fn distribution(&self) -> Vec<f64> {
        let n = self.items.len().max(1) as f64;
        self.counts.iter().map(|&c| f64::from(c) / n).collect()
    }
}

/// ADH's state: the installed `base` and the record of levels.
#[derive(Clone, Debug)]
pub struct Adh {
    cfg: AdhConfig,
    max: u8,
    base: f64,
    target: Vec<f64>,
    repo: Repository,
    changes: u64,
    cuts: Vec<f64>,
}

impl Adh {
    /// ADH over the levels `1..=max`.
    pub fn new(cfg: AdhConfig, max: u8) -> Adh {
        Adh {
            base: cfg.initial_base,
            target: target(max),
            repo: Repository::new(cfg.history, max),
            cfg,
            max,
            changes: 0,
            cuts: Vec::new(),
        }
    }

    /// With [`Division::Quantiles`], once reconfigured: the margins separating the levels,
    /// ascending (a margin below `cuts[0]` gets `max`, one at or above the last gets 1).
    pub fn cuts(&self) -> Option<&[f64]> {
        (!self.cuts.is_empty()).then_some(self.cuts.as_slice())
    }

    /// The level of a margin under the installed cuts, if there are any.
    pub fn level_by_cuts(&self, margin: f64) -> Option<u8> {
        let cuts = self.cuts()?;
        let below = cuts.iter().take_while(|&&c| margin >= c).count();
        Some(self.max - below as u8)
    }

    /// The installed `base`.
    pub fn base(&self) -> f64 {
        self.base
    }

    /// How many times the base was changed.
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// The record of past levels.
    pub fn repository(&self) -> &Repository {
        &self.repo
    }

    /// The distance of the recorded levels' distribution from the target.
    pub fn deviation(&self) -> f64 {
        distance(&self.repo.distribution(), &self.target, self.cfg.norm)
    }

    /// Evaluator and Reconfigurator, before the next item: changes the configuration when the
    /// recorded distribution lies outside the polytope. Returns whether it changed.
    pub fn adapt(&mut self) -> bool {
        let n = self.repo.len();
        let needed = match self.cfg.memory {
            Memory::Sliding => self.cfg.history,
            Memory::SinceChange => self.cfg.min_samples,
        };
        if n < needed || self.deviation() <= self.cfg.delta {
            return false;
        }
        let changed = match self.cfg.division {
            Division::Base => self.step_base(),
            Division::Quantiles => self.cut_at_quantiles(),
        };
        if !changed {
            return false;
        }
        self.changes += 1;
        if self.cfg.memory == Memory::SinceChange {
            self.repo.clear();
        }
        true
    }

    fn step_base(&mut self) -> bool {
        let top = usize::from(self.max / 2);
        let first_top = self.target.len() - top;
        let share: f64 = self.repo.distribution()[first_top..].iter().sum();
        let wanted: f64 = self.target[first_top..].iter().sum();
        let next = if share > wanted {
            (self.base * self.cfg.step).min(self.cfg.max_base)
        } else if share < wanted {
            (self.base / self.cfg.step).max(self.cfg.min_base)
        } else {
            self.base
        };
        let changed = next != self.base;
        self.base = next;
        changed
    }

    /// Cuts between the levels at the target's cumulative shares of the recorded margins, from
    /// the top (smallest margins) down: with margins like those each level receives its share.
    fn cut_at_quantiles(&mut self) -> bool {
        let mut m: Vec<i64> = self.repo.items.iter().map(|(x, _)| (*x).max(0)).collect();
        if m.is_empty() {
            return false;
        }
        m.sort_unstable();
        let mut cum = 0.0;
        let cuts: Vec<f64> = (2..=self.max)
            .rev()
            .map(|level| {
                cum += self.target[usize::from(level) - 1];
                let k = ((cum * m.len() as f64).round() as usize).min(m.len() - 1);
                m[k] as f64
            })
            .collect();
        let changed = cuts != self.cuts;
        self.cuts = cuts;
        changed
    }

    /// Stores an item's margin with the level the Strategy gave it (levels outside `1..=max` are
    /// not recorded).
    pub fn record(&mut self, margin: i64, level: u8) {
        self.repo.push(margin, level);
    }

    /// The state as words: the base's bits, the number of changes, the number of cuts and their
    /// bits, then the recorded (margin, level) pairs.
    pub fn snapshot(&self) -> Vec<i64> {
        let mut v = vec![
            self.base.to_bits() as i64,
            self.changes as i64,
            self.cuts.len() as i64,
        ];
        v.extend(self.cuts.iter().map(|c| c.to_bits() as i64));
        v.extend(self.repo.items.iter().flat_map(|&(m, l)| [m, i64::from(l)]));
        v
    }

    /// Continues from a [`snapshot`](Self::snapshot) (a malformed one leaves the state as is).
    pub fn restore(&mut self, words: &[i64]) {
        let [base, changes, ncuts, rest @ ..] = words else {
            return;
        };
        let base = f64::from_bits(*base as u64);
        let Ok(ncuts) = usize::try_from(*ncuts) else {
            return;
        };
        if !(base >= self.cfg.min_base && base <= self.cfg.max_base) || ncuts > rest.len() {
            return;
        }
        let (cuts, levels) = rest.split_at(ncuts);
        self.base = base;
        self.changes = (*changes).max(0) as u64;
        self.cuts = cuts.iter().map(|&c| f64::from_bits(c as u64)).collect();
        self.repo.clear();
        for pair in levels.chunks_exact(2) {
            if let Ok(l) = u8::try_from(pair[1]) {
                self.repo.push(pair[0], l);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_of_eq_3_2() {
        let t = target(5);
        let pct: Vec<f64> = t.iter().map(|x| (x * 1e4).round() / 100.0).collect();
        // Levels 1..=5 (the §5.1.5 priorities 0..=4): 51.61, 25.81, 12.9, 6.45, 3.23 %.
        assert_eq!(pct, vec![51.61, 25.81, 12.9, 6.45, 3.23]);
        assert!((t.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn inside_the_polytope_nothing_changes() {
        let mut a = Adh::new(AdhConfig::default(), 5);
        // Exactly the target's proportions: 16, 8, 4, 2, 1 of 31.
        for (level, n) in [(1, 16), (2, 8), (3, 4), (4, 2), (5, 1)] {
            for _ in 0..n {
                a.record(0, level);
            }
        }
        assert!(a.deviation() < 1e-12);
        assert!(!a.adapt());
        assert_eq!((a.base(), a.changes()), (2.0, 0));
    }

    #[test]
    fn too_many_high_levels_raise_the_base_too_few_lower_it() {
        let cfg = AdhConfig {
            history: 10,
            ..AdhConfig::default()
        };
        let mut a = Adh::new(cfg, 5);
        for _ in 0..9 {
            a.record(0, 5);
        }
        assert!(!a.adapt(), "judged only once the record is full");
        a.record(0, 5);
        // All at the top: the top half (levels 4, 5) holds 100 % against 9.7 %.
        assert!(a.adapt());
        assert!((a.base() - 2.2).abs() < 1e-12);
        // Sliding: the same record judges again, the base keeps rising.
        assert!(a.adapt());
        assert!((a.base() - 2.42).abs() < 1e-12);
        let mut b = Adh::new(cfg, 5);
        for _ in 0..10 {
            b.record(0, 1);
        }
        assert!(b.adapt());
        assert!((b.base() - 2.0 / 1.1).abs() < 1e-12);
        for _ in 0..20 {
            b.adapt();
        }
        assert_eq!(b.base(), 1.05, "never below min_base");
    }

    #[test]
    fn since_change_judges_only_the_new_levels() {
        let cfg = AdhConfig {
            memory: Memory::SinceChange,
            min_samples: 3,
            ..AdhConfig::default()
        };
        let mut a = Adh::new(cfg, 5);
        a.record(0, 5);
        a.record(0, 5);
        assert!(!a.adapt(), "fewer than min_samples");
        a.record(0, 5);
        assert!(a.adapt());
        assert!(a.repository().is_empty(), "the record starts again");
        assert!(!a.adapt());
        assert_eq!(a.changes(), 1);
    }

    #[test]
    fn a_snapshot_restores_the_state() {
        let cfg = AdhConfig {
            history: 3,
            ..AdhConfig::default()
        };
        let mut a = Adh::new(cfg, 5);
        for l in [5, 5, 1, 2, 5] {
            a.record(0, l);
            a.adapt();
        }
        let mut b = Adh::new(cfg, 5);
        b.restore(&a.snapshot());
        assert_eq!(b.snapshot(), a.snapshot());
        assert_eq!(b.base(), a.base());
        for l in [3, 5, 1] {
            a.record(0, l);
            b.record(0, l);
            assert_eq!(a.adapt(), b.adapt());
            assert_eq!(a.base(), b.base());
        }
        let before = b.snapshot();
        b.restore(&[]);
        b.restore(&[f64::to_bits(0.5) as i64, 0, 0]);
        assert_eq!(b.snapshot(), before, "malformed snapshots are ignored");
    }

    /// The quantile division cuts the recent margins at the target's cumulative shares, so that
    /// margins like them fill each level with its share; the cuts travel in the snapshot.
    #[test]
    fn quantile_division_cuts_at_the_target_shares() {
        let cfg = AdhConfig {
            division: Division::Quantiles,
            memory: Memory::SinceChange,
            min_samples: 5,
            history: 1_000,
            ..AdhConfig::default()
        };
        let mut a = Adh::new(cfg, 5);
        assert_eq!(a.level_by_cuts(3.0), None, "no cuts before a change");
        // Margins 0..=999, all at level 1 so far: cuts at 3.2, 9.7, 22.6 and 48.4 % of them.
        for m in 0..1_000 {
            a.record(m, 1);
        }
        assert!(a.adapt());
        assert_eq!(a.cuts().unwrap(), &[32.0, 97.0, 226.0, 484.0]);
        let levels: Vec<u8> = [0.0, 31.0, 32.0, 100.0, 483.0, 484.0, 5_000.0]
            .iter()
            .map(|&m| a.level_by_cuts(m).unwrap())
            .collect();
        assert_eq!(levels, vec![5, 5, 4, 3, 2, 1, 1]);
        let mut b = Adh::new(cfg, 5);
        b.restore(&a.snapshot());
        assert_eq!(b.cuts(), a.cuts());
        assert_eq!(b.snapshot(), a.snapshot());
    }

    #[test]
    fn bad_keys_are_named() {
        let bad = AdhConfig {
            step: 1.0,
            ..AdhConfig::default()
        };
        assert_eq!(bad.problem().unwrap(), "adh.step: must be greater than 1");
        let bad = AdhConfig {
            min_samples: 300,
            memory: Memory::SinceChange,
            ..AdhConfig::default()
        };
        assert!(bad.problem().unwrap().starts_with("adh.min_samples"));
        assert!(AdhConfig::default().problem().is_none());
    }
}
