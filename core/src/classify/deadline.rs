//! The meta-scheduler's Deadline heuristic (spec `two-level-grid-scheduler.md` D4.1.1, Eq. 3.1–3.4,
//! Figure 10; ambiguities D12 #1, #3–#6).
//!
//! A job's margin (`deadline − estimate − submission`) is compared with the mean margin `E` of the
//! previous `window` jobs that had a deadline. `[0, 2E]` is cut into `max` intervals whose widths
//! double from the top priority down (`S_k = MinUnity·(2^{k+1} − 2)`, `MinUnity = 2E / Σ 2^k`), so
//! each priority level receives half as many jobs as the one below it; beyond `2E` the job gets the
//! lowest priority, 1. The result is then corrected by `R = margin / estimate`: a "faraway" job
//! (`R ≥ 1`) loses `⌊R⌋` levels (not below 0), a "proximity" job gains `w` levels where
//! `R ∈ [1/2^{w+1}, 1/2^w)` (not above `max`).
//!
//! Readings (D12): intervals half-open `[lo, hi)`, the last one closed (#6); `R` below `1/2^max`
//! gives `w = max − 1` (#6); an empty window uses the job's own margin (#3); jobs without deadline
//! get 0 and stay out of the window (#3, #4); a negative margin counts as 0, i.e. the top interval
//! (#5, configurable: [`Infeasible::Lowest`]); with `E ≤ 0` a job with margin ≤ 0 gets `max`, any
//! other 1 (#5).

use super::adh::{Adh, AdhConfig};
use crate::model::{Duration, Job};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// What a job whose deadline is already infeasible at submission (negative margin) gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Infeasible {
    /// Its margin counts as 0: the top interval (recommended).
    #[default]
    Highest,
    /// The lowest Deadline priority, 0.
    Lowest,
}

/// The priority level of a margin given the mean margin `e`, before the size correction.
pub fn interval_priority(margin: f64, e: f64, max: u8) -> u8 {
    interval_level(margin, e, max, 2.0)
}

/// [`interval_priority`] with the interval widths growing by `base` instead of 2 (the
/// generalised Eq. 3.3–3.4 of ADH, thesis §5.1.4): `S_k = MinUnity·Σ_{j=1}^{k} base^j`,
/// `MinUnity = 2E / Σ_{k=1}^{max} base^k`. With `base = 2` the bounds are those of the static
/// heuristic to the last bit.
pub fn interval_level(margin: f64, e: f64, max: u8, base: f64) -> u8 {
    if e <= 0.0 {
        return if margin <= 0.0 { max } else { 1 };
    }
    let total: f64 = (1..=i32::from(max)).map(|k| base.powi(k)).sum();
    let unit = 2.0 * e / total;
    let mut below = 0.0;
    for k in 0..i32::from(max) {
        let lo = unit * below;
        below += base.powi(k + 1);
        let hi = unit * below;
        let last = k == i32::from(max) - 1;
        if margin >= lo && (margin < hi || (last && margin <= hi)) {
            return max - k as u8;
        }
    }
    1
}

/// The size correction of a level `d` by `R = margin / estimate`.
pub fn size_correction(d: u8, margin: f64, estimate: Duration, max: u8) -> u8 {
    let r = margin / estimate.max(1) as f64;
    if r >= 1.0 {
        return d.saturating_sub(r.floor().min(255.0) as u8);
    }
    let mut w = max - 1;
    for k in 0..max {
        let lo = 0.5f64.powi(i32::from(k) + 1);
        let hi = 0.5f64.powi(i32::from(k));
        if r >= lo && r < hi {
            w = k;
            break;
        }
    }
    d.saturating_add(w).min(max)
}

/// The Deadline heuristic with its window of previous margins.
#[derive(Clone, Debug)]
pub struct DeadlineHeuristic {
    max: u8,
    window: usize,
    infeasible: Infeasible,
    margins: VecDeque<i64>,
    sum: i128,
    adh: Option<Adh>,
}

/// The heuristic's view of one job (for explanations).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeadlineDetail {
    /// The job's margin (deadline − estimate − submission), if it has a deadline.
    pub margin: Option<i64>,
    /// The mean margin of the window it was compared with.
    pub mean_margin: Option<f64>,
    /// The level from the intervals.
    pub interval: u8,
    /// After the size correction: the heuristic's contribution.
    pub value: u8,
    /// The intervals' growth factor used (2, or ADH's installed base).
    pub base: f64,
}

impl DeadlineHeuristic {
    /// A heuristic with levels up to `max` and a window of `window` jobs.
    pub fn new(max: u8, window: usize, infeasible: Infeasible) -> DeadlineHeuristic {
        DeadlineHeuristic {
            max,
            window: window.max(1),
            infeasible,
            margins: VecDeque::new(),
            sum: 0,
            adh: None,
        }
    }

    /// The heuristic made self-optimizing (ADH, thesis §5.1.4).
    pub fn with_adh(mut self, cfg: AdhConfig) -> DeadlineHeuristic {
        self.adh = Some(Adh::new(cfg, self.max));
        self
    }

    /// ADH's state, if the heuristic adapts.
    pub fn adh(&self) -> Option<&Adh> {
        self.adh.as_ref()
    }

    /// ADH's state, to restore a snapshot into.
    pub fn adh_mut(&mut self) -> Option<&mut Adh> {
        self.adh.as_mut()
    }

    /// The margins of the window, oldest first: the heuristic's whole memory of the jobs it has
    /// seen (a snapshot to [`restore_window`](Self::restore_window) from).
    pub fn window(&self) -> Vec<i64> {
        self.margins.iter().copied().collect()
    }

    /// Takes the window's margins (oldest first) from a snapshot of [`window`](Self::window):
    /// the heuristic then classifies as the one that took the snapshot did. Margins beyond the
    /// window's length keep only the newest.
    pub fn restore_window(&mut self, margins: &[i64]) {
        let keep = &margins[margins.len().saturating_sub(self.window)..];
        self.margins = keep.iter().copied().collect();
        self.sum = keep.iter().map(|&m| i128::from(m)).sum();
    }

    /// The intervals' growth factor now: ADH's installed base, else 2.
    pub fn base(&self) -> f64 {
        self.adh.as_ref().map_or(2.0, Adh::base)
    }

    /// The contribution of `job` (then its margin joins the window).
    pub fn evaluate(&mut self, job: &Job) -> DeadlineDetail {
        let Some(deadline) = job.deadline else {
            return DeadlineDetail {
                margin: None,
                mean_margin: None,
                interval: 0,
                value: 0,
                base: self.base(),
            };
        };
        let raw = deadline - job.estimate - job.submit;
        let e = if self.margins.is_empty() {
            raw.max(0) as f64
        } else {
            self.sum as f64 / self.margins.len() as f64
        };
        self.margins.push_back(raw);
        self.sum += i128::from(raw);
        if self.margins.len() > self.window {
            let old = self.margins.pop_front().expect("non-empty");
            self.sum -= i128::from(old);
        }
        if raw < 0 && self.infeasible == Infeasible::Lowest {
            return DeadlineDetail {
                margin: Some(raw),
                mean_margin: Some(e),
                interval: 0,
                value: 0,
                base: self.base(),
            };
        }
        let m = raw.max(0) as f64;
        if let Some(adh) = &mut self.adh {
            adh.adapt();
        }
        let base = self.base();
        let interval = match self.adh.as_ref().and_then(|a| a.level_by_cuts(m)) {
            Some(level) => level,
            None => interval_level(m, e, self.max, base),
        };
        if let Some(adh) = &mut self.adh {
            adh.record(raw, interval);
        }
        DeadlineDetail {
            margin: Some(raw),
            mean_margin: Some(e),
            interval,
            value: size_correction(interval, m, job.estimate, self.max),
            base,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// D4.1.1's table for max = 10, in units of E[Margin]: (level, lower bound).
    const BOUNDS: [(u8, f64); 10] = [
        (10, 0.0),
        (9, 0.00196),
        (8, 0.00587),
        (7, 0.01369),
        (6, 0.02933),
        (5, 0.06061),
        (4, 0.12317),
        (3, 0.24829),
        (2, 0.49853),
        (1, 0.99902),
    ];

    #[test]
    fn the_worked_boundary_table() {
        let e = 1_000_000.0;
        for (level, lo) in BOUNDS {
            // Just inside the interval (the table rounds to 5 digits).
            assert_eq!(interval_priority((lo + 0.00001) * e, e, 10), level, "{lo}");
            if lo > 0.0 {
                assert_eq!(
                    interval_priority((lo - 0.00001) * e, e, 10),
                    level + 1,
                    "{lo}"
                );
            }
        }
        assert_eq!(
            interval_priority(2.0 * e, e, 10),
            1,
            "the last interval is closed"
        );
        assert_eq!(
            interval_priority(2.0 * e + 1.0, e, 10),
            1,
            "beyond 2E: lowest"
        );
        assert_eq!(interval_priority(0.0, 0.0, 10), 10, "E <= 0, margin 0: max");
        assert_eq!(interval_priority(5.0, 0.0, 10), 1);
    }

    /// The generalised intervals with base 2 are the static heuristic's to the last bit (the
    /// static form is kept here as it was written before ADH).
    #[test]
    fn base_two_is_the_static_division_exactly() {
        fn static_form(margin: f64, e: f64, max: u8) -> u8 {
            let total: f64 = (1..=i32::from(max)).map(|k| 2f64.powi(k)).sum();
            let unit = 2.0 * e / total;
            for k in 0..i32::from(max) {
                let lo = unit * (2f64.powi(k + 1) - 2.0);
                let hi = unit * (2f64.powi(k + 2) - 2.0);
                let last = k == i32::from(max) - 1;
                if margin >= lo && (margin < hi || (last && margin <= hi)) {
                    return max - k as u8;
                }
            }
            1
        }
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let e = (x % 100_000) as f64 + 1.0;
            let margin = ((x >> 20) % 250_000) as f64;
            let max = 1 + ((x >> 40) % 12) as u8;
            assert_eq!(
                interval_level(margin, e, max, 2.0),
                static_form(margin, e, max),
                "{margin} {e} {max}"
            );
        }
        // A larger base narrows the top intervals: margin 0.05 E is level 6 with base 2,
        // level 3 with base 3 (max 10).
        assert_eq!(interval_level(5.0, 100.0, 10, 2.0), 6);
        assert!(interval_level(5.0, 100.0, 10, 3.0) < 6);
        assert_eq!(
            interval_level(0.0, 100.0, 10, 50.0),
            10,
            "margin 0 stays on top"
        );
    }

    #[test]
    fn the_size_correction() {
        // Faraway: R = 2.5 -> minus 2, not below 0.
        assert_eq!(size_correction(5, 250.0, 100, 10), 3);
        assert_eq!(size_correction(1, 250.0, 100, 10), 0);
        // Proximity: R in [0.5, 1) -> +0; [0.25, 0.5) -> +1; [0.125, 0.25) -> +2.
        assert_eq!(size_correction(5, 60.0, 100, 10), 5);
        assert_eq!(size_correction(5, 30.0, 100, 10), 6);
        assert_eq!(size_correction(5, 20.0, 100, 10), 7);
        assert_eq!(size_correction(9, 20.0, 100, 10), 10, "capped at max");
        assert_eq!(size_correction(1, 0.0, 100, 10), 10, "R = 0: w = max - 1");
    }

    fn job(submit: i64, est: i64, margin: Option<i64>) -> Job {
        let mut j = Job::new(1, submit, 1, est, est);
        j.deadline = margin.map(|m| submit + est + m);
        j
    }

    #[test]
    fn window_mean_and_readings() {
        let mut h = DeadlineHeuristic::new(10, 2, Infeasible::Highest);
        // Empty window: own margin, ratio 1 -> level 1; R = 100/1000 -> w = 3 -> 4.
        let d = h.evaluate(&job(0, 1_000, Some(100)));
        assert_eq!((d.interval, d.value, d.mean_margin), (1, 4, Some(100.0)));
        // No deadline: 0 and not in the window.
        assert_eq!(h.evaluate(&job(0, 1_000, None)).value, 0);
        // E = 100: margin 10 is 0.1 E -> level 5; R = 0.01 -> w = 6 -> 10 (capped).
        let d = h.evaluate(&job(0, 1_000, Some(10)));
        assert_eq!((d.interval, d.value), (5, 10));
        // Window of 2 now {100, 10}: E = 55; margin 200 > 2E -> 1; R = 0.2 -> +2.
        let d = h.evaluate(&job(0, 1_000, Some(200)));
        assert_eq!((d.mean_margin, d.interval, d.value), (Some(55.0), 1, 3));
        // Window {10, 200}: E = 105. Infeasible job: margin -5 -> 0 -> top interval, R = 0 -> 10.
        let d = h.evaluate(&job(0, 1_000, Some(-5)));
        assert_eq!((d.interval, d.value), (10, 10));
        let mut low = DeadlineHeuristic::new(10, 2, Infeasible::Lowest);
        assert_eq!(low.evaluate(&job(0, 1_000, Some(-5))).value, 0);
    }
}
