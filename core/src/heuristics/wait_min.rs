//! Wait Minimization (spec `two-level-grid-scheduler.md` D5): a shortest-job boost,
//! `Δ_WM = priority_boost_value · min_ex_t / Estimated_i` with `min_ex_t` the smallest estimate in
//! the queue — the shortest queued job gets the whole boost, a job ten times longer a tenth.

use crate::model::Duration;

/// `boost · min_estimate / estimate` (0 for a non-positive estimate).
pub fn wait_min(min_estimate: Duration, estimate: Duration, boost: f64) -> f64 {
    if estimate <= 0 {
        return 0.0;
    }
    boost * min_estimate as f64 / estimate as f64
}

#[cfg(test)]
mod tests {
    #[test]
    fn shortest_job_gets_the_whole_boost() {
        assert_eq!(super::wait_min(500, 500, 2.0), 2.0);
        assert_eq!(super::wait_min(500, 2_000, 2.0), 0.5);
        assert_eq!(super::wait_min(500, 3_000, 4.0), 4.0 * 500.0 / 3_000.0);
        assert_eq!(super::wait_min(500, 0, 2.0), 0.0);
    }
}
