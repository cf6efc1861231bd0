//! Anti-Aging (spec `two-level-grid-scheduler.md` D5): a job's priority grows with the time it has
//! waited at the local scheduler, `Δ_AA = (wall_clock − Submission_i) · age_factor`.

use crate::model::Time;

/// `(now − submitted) · age_factor`; `submitted` is the job's arrival at the local scheduler.
pub fn anti_aging(now: Time, submitted: Time, age_factor: f64) -> f64 {
    (now - submitted) as f64 * age_factor
}

#[cfg(test)]
mod tests {
    #[test]
    fn grows_linearly_with_waiting() {
        assert_eq!(super::anti_aging(1_000, 400, 0.01), 6.0);
        assert_eq!(super::anti_aging(400, 400, 0.01), 0.0);
        assert!((super::anti_aging(410, 400, 1.1) - 11.0).abs() < 1e-12);
    }
}
