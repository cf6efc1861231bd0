//! The Deadline heuristic's curve (spec `two-level-grid-scheduler.md` D5 "Deadline (generic)",
//! Figure 14, Eq. 3.5; D6.1 for Flexible Backfilling; D12 #16).
//!
//! With `T = Deadline − k·Estimated`, the score is `MIN` while the expected completion `Extime ≤ T`,
//! rises linearly from `(T, MIN)` to `(Deadline, MAX)`, and beyond the deadline drops to a
//! variant-specific value (Flexible Backfilling: 0; Convergent Scheduling: `MIN`). Jobs without a
//! deadline score 0 (D12 #16).

use crate::model::{Duration, Time};

/// The curve's constants.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DeadlineCurve {
    /// Score while early.
    pub min: f64,
    /// Score at the deadline.
    pub max: f64,
    /// Over-estimation factor.
    pub k: f64,
}

impl DeadlineCurve {
    /// The score of a job finishing at `extime`, with `deadline` and `estimate`; `late` is returned
    /// past the deadline.
    pub fn score(&self, extime: Time, deadline: Time, estimate: Duration, late: f64) -> f64 {
        if extime > deadline {
            return late;
        }
        let span = self.k * estimate as f64;
        let t = deadline as f64 - span;
        let x = extime as f64;
        if x <= t || span <= 0.0 {
            return self.min;
        }
        let a = (self.max - self.min) / span;
        a * (x - t) + self.min
    }
}

/// The Flexible Backfilling deadline term (D6.1): `Extime = now + Estimated` (no machine-speed
/// scaling), 0 past the deadline and for jobs without one.
pub fn deadline_fb(
    curve: &DeadlineCurve,
    now: Time,
    deadline: Option<Time>,
    estimate: Duration,
) -> f64 {
    match deadline {
        None => 0.0,
        Some(d) => curve.score(now + estimate, d, estimate, 0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: DeadlineCurve = DeadlineCurve {
        min: 0.1,
        max: 20.0,
        k: 1.4,
    };

    #[test]
    fn worked_points_of_the_curve() {
        // Estimated 1000, deadline 5000: T = 5000 - 1400 = 3600, slope = 19.9 / 1400.
        let s = |now| deadline_fb(&C, now, Some(5_000), 1_000);
        assert_eq!(s(2_000), 0.1, "Extime 3000 <= T: MIN");
        assert_eq!(s(2_600), 0.1, "Extime = T: still MIN");
        // Extime 4300: 0.1 + 19.9 * 700 / 1400 = 10.05
        assert!((s(3_300) - 10.05).abs() < 1e-9, "{}", s(3_300));
        assert!((s(4_000) - 20.0).abs() < 1e-9, "at the deadline: MAX");
        assert_eq!(s(4_001), 0.0, "late: 0 in FB");
        assert_eq!(deadline_fb(&C, 0, None, 1_000), 0.0, "no deadline");
        // The CS reading keeps MIN beyond the deadline.
        assert_eq!(C.score(6_000, 5_000, 1_000, C.min), 0.1);
    }

    #[test]
    fn the_curve_is_monotone_up_to_the_deadline() {
        let mut last = 0.0;
        for now in (0..=4_000).step_by(50) {
            let v = deadline_fb(&C, now, Some(5_000), 1_000);
            assert!(v >= last, "{now}: {v} < {last}");
            last = v;
        }
    }
}
