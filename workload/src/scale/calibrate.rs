//! The search for the adjusted scaling factor of stage 4 (Ernemann, Song & Yahyapour 2003,
//! "Scaling of Workload Traces", §3.3; `gang-urgent-scaling.md` C.6 "Calibration procedure").
//!
//! The study scales a trace at d = 50 with f = f*, f* + 0.01, f* + 0.02, … (size factor f and
//! mean copy count f), runs each scaled workload on the target machine under the scheduler that
//! produced the trace, and keeps the f whose AWRT and AWWT come closest to those of the original
//! trace on its original machine under the same scheduler. This module is the pure part of that
//! search — which factors are scanned ([`Scan`]), how far a run is from the reference
//! ([`distance`]) and which factor is chosen ([`choose`], [`FactorSearch`]); the simulations are
//! the simulator's (`gridsim trace calibrate`).
//!
//! * **A scanned range, not a bisection.** AWRT and AWWT do not respond monotonically to f (the
//!   study's KTH/FCFS sweep: AWWT 167 185 s at f = 10.71, 104 541 s at 10.72, 291 278 s at 10.80),
//!   so every factor of the range is run and the best one taken.
//! * **Distance.** The study gives no numeric criterion (G-C12). We use the larger of the two
//!   relative errors, max(|AWRT − AWRT_ref| / AWRT_ref, |AWWT − AWWT_ref| / AWWT_ref), each
//!   denominator at least 1 s (a reference without waiting, as NASA's 6 s, stays comparable).
//! * **Choice.** The smallest distance wins; equal distances go to the smaller f (the smaller
//!   change to the workload). A distance that is not a number never wins.

use crate::error::WorkloadError;
use serde::Serialize;

/// What the comparison looks at in one simulation (C.4): jobs run, makespan (last end, seconds
/// since the trace origin), utilization = area / (processors × makespan) as a fraction, AWWT
/// and AWRT (weighted by resource consumption, seconds) and the squashed area
/// (processor-seconds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Outcome {
    /// Jobs that ran.
    pub jobs: u64,
    /// End of the last job.
    pub makespan: i64,
    /// Squashed area / (processors × makespan).
    pub utilization: f64,
    /// Area-weighted average waiting time.
    pub awwt: f64,
    /// Area-weighted average response time.
    pub awrt: f64,
    /// Σ processors × (end − start).
    pub area: f64,
}

/// One scanned factor: the scaled workload's outcome and its distance from the reference.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Row {
    /// The factor f (size factor and mean copy count).
    pub factor: f64,
    /// The simulation of the workload scaled with it.
    #[serde(flatten)]
    pub outcome: Outcome,
    /// [`distance`] from the reference.
    pub distance: f64,
}

/// The scanned factors: `steps` values `from`, `from + step`, …, each rounded to nine decimals
/// (so that 10.24 + 47 × 0.01 is exactly 10.71).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Scan {
    /// First factor (the study's f*).
    pub from: f64,
    /// Increment (the study's 0.01).
    pub step: f64,
    /// Number of factors.
    pub steps: u32,
}

impl Scan {
    /// The study's increment.
    pub const DEFAULT_STEP: f64 = 0.01;
    /// Default number of factors: f* … f* + 0.60 (G-C12), which holds every adjusted factor of
    /// the study's Table 4 (the farthest, SDSC00 under FCFS, is f* + 0.58; KTH's 10.71 is
    /// f* + 0.47).
    pub const DEFAULT_STEPS: u32 = 61;
    /// More factors than this are refused as a mistake.
    pub const MAX_STEPS: u32 = 100_000;

    /// A checked scan: `from` finite and ≥ 1 (scaling only enlarges), `step` finite and > 0,
    /// `steps` in 1..=[`Scan::MAX_STEPS`]. Errors name the option (`--from`, `--step`,
    /// `--steps`).
    pub fn new(from: f64, step: f64, steps: u32) -> Result<Scan, WorkloadError> {
        if !(from.is_finite() && from >= 1.0) {
            return Err(WorkloadError::Options(format!(
                "--from {from}: the first factor must be a finite number >= 1"
            )));
        }
        if !(step.is_finite() && step > 0.0) {
            return Err(WorkloadError::Options(format!(
                "--step {step}: the increment must be a finite number > 0 \
                 (the response to f is not monotone, so the search scans upwards)"
            )));
        }
        if !(1..=Self::MAX_STEPS).contains(&steps) {
            return Err(WorkloadError::Options(format!(
                "--steps {steps}: the number of factors must be between 1 and {}",
                Self::MAX_STEPS
            )));
        }
        Ok(Scan { from, step, steps })
    }

    /// The factors, in increasing order.
    pub fn factors(&self) -> Vec<f64> {
        (0..self.steps)
            .map(|i| ((self.from + f64::from(i) * self.step) * 1e9).round() / 1e9)
            .collect()
    }

    /// Whether `f` is one of the factors (within 1e-9).
    pub fn contains(&self, f: f64) -> bool {
        self.factors().iter().any(|&x| (x - f).abs() < 1e-9)
    }
}

/// Relative error of `x` against `reference`, the denominator at least 1 (second).
fn relative(x: f64, reference: f64) -> f64 {
    (x - reference).abs() / reference.abs().max(1.0)
}

/// The distance of `run` from `reference`: the larger of the relative errors of AWRT and AWWT
/// (not a number when either is not).
pub fn distance(reference: &Outcome, run: &Outcome) -> f64 {
    let (rt, wt) = (
        relative(run.awrt, reference.awrt),
        relative(run.awwt, reference.awwt),
    );
    if rt.is_nan() || wt.is_nan() {
        f64::NAN
    } else {
        rt.max(wt)
    }
}

/// The index of the chosen row: the smallest distance, ties to the smaller factor; `None` for no
/// rows. The rows may come in any order.
pub fn choose(rows: &[Row]) -> Option<usize> {
    let key = |r: &Row| {
        if r.distance.is_nan() {
            f64::INFINITY
        } else {
            r.distance
        }
    };
    (0..rows.len()).min_by(|&a, &b| {
        let (ra, rb) = (&rows[a], &rows[b]);
        key(ra)
            .total_cmp(&key(rb))
            .then(ra.factor.total_cmp(&rb.factor))
    })
}

/// A finished search: the reference, every scanned row (in scan order) and the chosen one.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FactorSearch {
    /// The original trace on its original machine.
    pub reference: Outcome,
    /// One row per scanned factor.
    pub rows: Vec<Row>,
    /// Index of the chosen row in `rows`.
    pub chosen: usize,
}

impl FactorSearch {
    /// Computes every row's distance from `reference` and chooses; `None` without runs.
    pub fn new(reference: Outcome, runs: impl IntoIterator<Item = (f64, Outcome)>) -> Option<Self> {
        let rows: Vec<Row> = runs
            .into_iter()
            .map(|(factor, outcome)| Row {
                factor,
                outcome,
                distance: distance(&reference, &outcome),
            })
            .collect();
        let chosen = choose(&rows)?;
        Some(FactorSearch {
            reference,
            rows,
            chosen,
        })
    }

    /// The chosen row.
    pub fn best(&self) -> &Row {
        &self.rows[self.chosen]
    }

    /// Whether the chosen factor is the largest one scanned (of at least two): the response may
    /// come closer still beyond the range, so the range should be widened.
    pub fn chosen_at_upper_end(&self) -> bool {
        let best = self.best().factor;
        self.rows.len() > 1 && self.rows.iter().all(|r| r.factor <= best)
    }

    /// The row of factor `f` (within 1e-9), if it was scanned.
    pub fn row_of(&self, f: f64) -> Option<&Row> {
        self.rows.iter().find(|r| (r.factor - f).abs() < 1e-9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(awrt: f64, awwt: f64) -> Outcome {
        Outcome {
            awrt,
            awwt,
            ..Outcome::default()
        }
    }

    const REF: Outcome = Outcome {
        jobs: 100,
        makespan: 1000,
        utilization: 0.5,
        awwt: 1000.0,
        awrt: 3000.0,
        area: 1e6,
    };

    #[test]
    fn distance_is_the_larger_relative_error() {
        assert_eq!(distance(&REF, &out(3000.0, 1000.0)), 0.0);
        // AWRT 1 % high, AWWT 5 % low: 5 %.
        assert!((distance(&REF, &out(3030.0, 950.0)) - 0.05).abs() < 1e-12);
        // AWRT 10 % low, AWWT exact: 10 %.
        assert!((distance(&REF, &out(2700.0, 1000.0)) - 0.1).abs() < 1e-12);
        // A reference without waiting: the denominator is 1 s.
        let idle = out(500.0, 0.0);
        assert!((distance(&idle, &out(500.0, 4.0)) - 4.0).abs() < 1e-12);
    }

    #[test]
    fn the_closest_row_wins() {
        let runs = [
            (10.24, out(2400.0, 600.0)),  // 40 %
            (10.25, out(2900.0, 1080.0)), // 8 %
            (10.26, out(3010.0, 990.0)),  // 1 %
            (10.27, out(3300.0, 1200.0)), // 20 %
        ];
        let s = FactorSearch::new(REF, runs).unwrap();
        assert_eq!(s.chosen, 2);
        assert_eq!(s.best().factor, 10.26);
        assert!((s.best().distance - 0.01).abs() < 1e-12);
        assert_eq!(s.rows.len(), 4);
        assert!(!s.chosen_at_upper_end());
        assert_eq!(s.row_of(10.25).unwrap().outcome.awrt, 2900.0);
        assert!(s.row_of(10.3).is_none());
    }

    #[test]
    fn one_good_metric_is_not_enough() {
        // 10.30 matches AWRT exactly but misses AWWT by 30 %; 10.31 misses both by 2 %.
        let runs = [(10.30, out(3000.0, 1300.0)), (10.31, out(3060.0, 980.0))];
        assert_eq!(FactorSearch::new(REF, runs).unwrap().best().factor, 10.31);
    }

    #[test]
    fn equal_distances_go_to_the_smaller_factor_whatever_the_order() {
        // 10.50 and 10.40 are both 2 % away (one above, one below); rows out of order.
        let runs = [
            (10.50, out(3060.0, 1000.0)),
            (10.45, out(3300.0, 1000.0)),
            (10.40, out(2940.0, 1020.0)),
        ];
        let s = FactorSearch::new(REF, runs).unwrap();
        assert_eq!(s.best().factor, 10.40);
        assert_eq!(s.chosen, 2);
    }

    #[test]
    fn a_non_monotone_response_is_scanned_to_its_best_point() {
        // Distance over f: falls, rises, falls lower far away, rises. A bisection or a stop at
        // the first local minimum (10.26) would miss 10.31.
        let awwt = [
            700.0, 850.0, 960.0, 1150.0, 1300.0, 1200.0, 1080.0, 1004.0, 1100.0, 1250.0,
        ];
        let runs: Vec<(f64, Outcome)> = awwt
            .iter()
            .enumerate()
            .map(|(i, &w)| (10.24 + 0.01 * i as f64, out(3000.0 + (w - 1000.0), w)))
            .collect();
        let s = FactorSearch::new(REF, runs.clone()).unwrap();
        assert!(
            (s.best().factor - 10.31).abs() < 1e-9,
            "{}",
            s.best().factor
        );
        // Cut off at 10.29, the best is the last factor: a hint to scan further.
        let s = FactorSearch::new(REF, runs[..6].to_vec()).unwrap();
        assert!((s.best().factor - 10.26).abs() < 1e-9);
        assert!(!s.chosen_at_upper_end());
        let s = FactorSearch::new(REF, runs[..2].to_vec()).unwrap();
        assert!(s.chosen_at_upper_end());
        // NaN never wins.
        let nan = [(2.0, out(f64::NAN, 1000.0)), (2.1, out(4000.0, 1000.0))];
        assert_eq!(FactorSearch::new(REF, nan).unwrap().best().factor, 2.1);
        assert!(FactorSearch::new(REF, Vec::new()).is_none());
    }

    /// The study's own KTH sweep (Table 5, d = 50): the rule picks Table 4's 10.71 under EASY;
    /// under FCFS it picks 10.88, the only row within 1 % (G-C13), not Table 4's 10.71.
    #[test]
    fn on_the_studys_kth_sweep_the_rule_picks_table_4s_easy_factor() {
        let pick = |reference: (f64, f64), rows: &[(f64, f64, f64)]| {
            let runs = rows.iter().map(|&(f, awwt, awrt)| (f, out(awrt, awwt)));
            let s = FactorSearch::new(out(reference.1, reference.0), runs).unwrap();
            (s.best().factor, s.best().distance)
        };
        let easy = [
            (10.68, 24756.0, 75880.0),
            (10.69, 24274.0, 75233.0),
            (10.70, 24344.0, 75549.0),
            (10.71, 24672.0, 75826.0),
            (10.72, 24648.0, 75775.0),
            (10.75, 24190.0, 75273.0),
            (10.78, 24417.0, 75546.0),
            (10.80, 25217.0, 76284.0),
            (10.83, 25510.0, 76587.0),
        ];
        let (f, d) = pick((24677.0, 75805.0), &easy);
        assert_eq!(f, 10.71);
        assert!(d < 0.0003, "{d}");
        let fcfs = [
            (10.71, 167185.0, 218339.0),
            (10.72, 104541.0, 155669.0),
            (10.80, 291278.0, 342345.0),
            (10.85, 295568.0, 346661.0),
            (10.88, 404008.0, 455149.0),
            (10.89, 424255.0, 475405.0),
            (10.90, 281495.0, 332646.0),
            (10.92, 415358.0, 466515.0),
            (10.96, 539856.0, 590999.0),
            (10.99, 491738.0, 542886.0),
        ];
        let (f, d) = pick((400649.0, 451777.0), &fcfs);
        assert_eq!(f, 10.88);
        assert!(d < 0.01, "{d}");
    }

    #[test]
    fn the_scan_covers_table_4_and_refuses_bad_ranges() {
        let kth = Scan::new(10.24, Scan::DEFAULT_STEP, Scan::DEFAULT_STEPS).unwrap();
        let f = kth.factors();
        assert_eq!(f.len(), 61);
        assert_eq!((f[0], f[1], f[47], f[60]), (10.24, 10.25, 10.71, 10.84));
        assert!(kth.contains(10.71));
        // SDSC00 under FCFS, the farthest of Table 4: 8.00 + 0.58.
        assert!(
            Scan::new(8.0, 0.01, Scan::DEFAULT_STEPS)
                .unwrap()
                .contains(8.58)
        );
        for (from, step, steps, needle) in [
            (0.5, 0.01, 10, "--from"),
            (f64::NAN, 0.01, 10, "--from"),
            (2.0, 0.0, 10, "--step"),
            (2.0, -0.01, 10, "--step"),
            (2.0, f64::INFINITY, 10, "--step"),
            (2.0, 0.01, 0, "--steps"),
        ] {
            let e = Scan::new(from, step, steps).unwrap_err().to_string();
            assert!(e.contains(needle), "{e}");
        }
    }
}
