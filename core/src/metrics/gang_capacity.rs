//! Loss of capacity under gang scheduling (Zhang et al., §2.3, eq. (3)): between consecutive
//! events, the empty columns of the executing row (and the columns of jobs that ended inside a
//! slice, which stay empty until the next recomputation), plus the processors held by jobs in a
//! context switch or a migration (the T·C·Σ n_j term and G-A12), integrated over time and divided by
//! N · t_f. Eq. (3) as printed has no δ_i; as recommended (G-A4) the default counts an interval only
//! while a job waits in the queue, and [`GangCapacityTracker::literal`] gives the printed formula.
//! With no job ever in a setup this is eq. (2), the space-sharing loss of capacity.

use crate::model::Time;

/// Integrates lost processor-seconds.
#[derive(Clone, Debug, Default)]
pub struct GangCapacityTracker {
    last: Option<(Time, u64, bool)>,
    /// Lost while a job waited (δ = 1).
    with_delta: i128,
    /// Lost at any time.
    literal: i128,
}

impl GangCapacityTracker {
    /// A tracker with nothing observed.
    pub fn new() -> GangCapacityTracker {
        GangCapacityTracker::default()
    }

    /// The state from `t` on: `empty` processors unused, `waiting` whether a job is in the queue.
    /// Calls come in non-decreasing time order; several at one instant keep only the last state.
    pub fn observe(&mut self, t: Time, empty: u64, waiting: bool) {
        if let Some((t0, e0, w0)) = self.last {
            let lost = i128::from(e0) * i128::from((t - t0).max(0));
            self.literal += lost;
            if w0 {
                self.with_delta += lost;
            }
        }
        self.last = Some((t, empty, waiting));
    }

    /// `seconds` of a setup (context switch or migration delay) on `procs` processors, counted
    /// with δ when `waiting` held over them (the caller splits them at events).
    pub fn setup(&mut self, procs: u32, seconds: i64, waiting: bool) {
        let lost = i128::from(procs) * i128::from(seconds.max(0));
        self.literal += lost;
        if waiting {
            self.with_delta += lost;
        }
    }

    /// κ with δ (G-A4): lost processor-seconds while jobs waited over N · t_f.
    pub fn kappa(&self, procs: u32, t_f: Time) -> f64 {
        self.with_delta as f64 / (f64::from(procs) * t_f.max(1) as f64)
    }

    /// κ as printed (no δ).
    pub fn literal(&self, procs: u32, t_f: Time) -> f64 {
        self.literal as f64 / (f64::from(procs) * t_f.max(1) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worked example on N = 10 up to t_f = 100: 4 empty while nobody waits [0, 20), 6 empty while
    /// a job waits [20, 50) (180), 2 empty [50, 100) while it waits (100), and a context switch of
    /// 5 s on 4 processors while it waits (20): κ = 300 / 1000; the literal formula adds the 80
    /// processor-seconds lost while nobody waited.
    #[test]
    fn kappa_of_a_worked_example() {
        let mut k = GangCapacityTracker::new();
        k.observe(0, 4, false);
        k.observe(20, 6, true);
        k.observe(50, 2, true);
        k.setup(4, 5, true);
        k.observe(100, 10, false);
        assert_eq!(k.kappa(10, 100), 0.3);
        assert_eq!(k.literal(10, 100), 0.38);
    }
}
