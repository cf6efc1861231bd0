//! Scaling factors and the per-job size and copy rules of Ernemann's trace scaling
//! (`gang-urgent-scaling.md` Part C, C.6 stages 1–4, Table 1 and Table 4).
//!
//! * Precise factor f* = target / original machine size (C.3).
//! * Enlarged size g(procs) = min(target, max(1, round-half-up(f · procs))) (G-C4); stage 1
//!   multiplies by an integer instead.
//! * Copy count: a static integer (stages 1–2, G-C11) or randomised rounding with mean f
//!   (stages 3–4): k = ⌈f⌉ if p1 < 100 · frac(f), else ⌊f⌋ (G-C3, not the inverted rule of the
//!   paper's prose).

use crate::error::WorkloadError;

/// Which of the four stages of C.6 to apply.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Stage {
    /// Stage 1: integer factor for both the size and the number of copies.
    Integer(u32),
    /// Stage 2: precise size factor, integer number of copies.
    PreciseSize {
        /// Size factor (f*, or adjusted).
        size: f64,
        /// Static integer copy count.
        copies: u32,
    },
    /// Stages 3 and 4: one factor f for the size and, with randomised rounding, the number of
    /// copies (stage 3: f = f*; stage 4: an adjusted f ≥ f*, e.g. [`adjusted_factor`]).
    Precise(f64),
}

impl Stage {
    /// Checks the factors: finite and ≥ 1 (scaling down is not part of C), integers ≥ 1.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        let bad = |what: &str, v: String| {
            Err(WorkloadError::Options(format!(
                "scaling: {what} must be a finite number >= 1, got {v}"
            )))
        };
        match *self {
            Stage::Integer(0) => bad("the integer factor", "0".into()),
            Stage::PreciseSize { copies: 0, .. } => bad("the copy count", "0".into()),
            Stage::PreciseSize { size, .. } | Stage::Precise(size)
                if !(size.is_finite() && size >= 1.0) =>
            {
                bad("the factor", size.to_string())
            }
            _ => Ok(()),
        }
    }

    /// The factor by which enlargement multiplies a job's size.
    pub fn size_factor(&self) -> f64 {
        match *self {
            Stage::Integer(f) => f64::from(f),
            Stage::PreciseSize { size, .. } | Stage::Precise(size) => size,
        }
    }

    /// The mean number of copies of a duplicated job.
    pub fn mean_copies(&self) -> f64 {
        match *self {
            Stage::Integer(f) => f64::from(f),
            Stage::PreciseSize { copies, .. } => f64::from(copies),
            Stage::Precise(f) => f,
        }
    }

    /// The number of copies for the second draw `p1` ∈ [0, 100) (G-C3).
    pub fn copies(&self, p1: f64) -> u32 {
        match *self {
            Stage::Integer(f) => f,
            Stage::PreciseSize { copies, .. } => copies,
            Stage::Precise(f) => {
                let lo = f.floor();
                let frac = 100.0 * (f - lo);
                (if p1 < frac { lo + 1.0 } else { lo }) as u32
            }
        }
    }

    /// The enlarged size of a job of `procs` processors on a `target`-processor machine.
    pub fn enlarge(&self, procs: u32, target: u32) -> u32 {
        let scaled = match *self {
            Stage::Integer(f) => u64::from(procs) * u64::from(f),
            _ => round_half_up(self.size_factor() * f64::from(procs)),
        };
        scaled.clamp(1, u64::from(target.max(1))) as u32
    }
}

/// Rounds half up, treating products within 1e-9 (relative) of a half as that half, so that
/// e.g. 10 × 2.45 gives 25 and not 24 through binary rounding.
pub fn round_half_up(x: f64) -> u64 {
    let fl = x.floor();
    let frac = x - fl;
    let eps = 1e-9 * x.abs().max(1.0);
    let up = frac + eps >= 0.5;
    (fl as u64) + u64::from(up)
}

/// The precise factor f* = target / original (C.3).
pub fn precise_factor(original: u32, target: u32) -> Result<f64, WorkloadError> {
    if original == 0 || target == 0 {
        return Err(WorkloadError::Options(format!(
            "scaling: machine sizes must be positive (from {original} to {target})"
        )));
    }
    if target < original {
        return Err(WorkloadError::Options(format!(
            "scaling: target size {target} is smaller than the original {original}; \
             Part C only scales up"
        )));
    }
    Ok(f64::from(target) / f64::from(original))
}

/// The static integer factor of Table 1 for the published traces (CTC 3, NASA 8, KTH 10,
/// LANL 1, SDSC95 3, SDSC96 3, SDSC00 8), by a case-insensitive name prefix.
pub fn table1_integer_factor(trace: &str) -> Option<u32> {
    let t = trace.to_ascii_uppercase();
    let rows: [(&str, u32); 7] = [
        ("CTC", 3),
        ("NASA", 8),
        ("KTH", 10),
        ("LANL", 1),
        ("SDSC95", 3),
        ("SDSC96", 3),
        ("SDSC00", 8),
    ];
    rows.iter().find(|(n, _)| t.starts_with(n)).map(|r| r.1)
}

/// The validation scheduler a factor was calibrated with (Table 4 differs only for SDSC00).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Calibration {
    /// EASY backfilling (the recommended choice, C.6).
    Easy,
    /// Strict FCFS.
    Fcfs,
}

/// The adjusted factors of Table 4 (d = 50, 1024 processors): CTC 2.45, KTH 10.71,
/// NASA 8.00, SDSC00 8.21 (EASY) / 8.58 (FCFS), SDSC95 2.48, SDSC96 2.48. SDSC00 is the 128-node
/// SDSC SP2, not the 1152-processor SDSC Blue Horizon. `None` for other traces (calibrate them,
/// C.6).
pub fn adjusted_factor(trace: &str, by: Calibration) -> Option<f64> {
    let t = trace.to_ascii_uppercase();
    let sdsc00 = if by == Calibration::Easy { 8.21 } else { 8.58 };
    let rows: [(&str, f64); 6] = [
        ("CTC", 2.45),
        ("KTH", 10.71),
        ("NASA", 8.00),
        ("SDSC00", sdsc00),
        ("SDSC95", 2.48),
        ("SDSC96", 2.48),
    ];
    rows.iter().find(|(n, _)| t.starts_with(n)).map(|r| r.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enlargement_rounds_half_up_and_caps() {
        let s = Stage::Precise(2.45);
        assert_eq!(s.enlarge(10, 1024), 25, "24.5 rounds up");
        assert_eq!(s.enlarge(1, 1024), 2, "2.45 rounds to 2");
        assert_eq!(s.enlarge(430, 1024), 1024, "1053.5 is capped");
        // SDSC95's one job of 400 × 3 = 1200 is capped at 1024 (C.6 stage 1).
        assert_eq!(Stage::Integer(3).enlarge(400, 1024), 1024);
        assert_eq!(Stage::Integer(3).enlarge(336, 1024), 1008);
        // SDSC00 128 × 8.21 → 1024 (G-C4).
        assert_eq!(Stage::Precise(8.21).enlarge(128, 1024), 1024);
        let kth = precise_factor(100, 1024).unwrap();
        assert_eq!(Stage::Precise(kth).enlarge(7, 1024), 72, "71.68 → 72");
    }

    #[test]
    fn randomised_copies_have_mean_f() {
        let s = Stage::Precise(2.3814);
        // p1 below 38.14 gives the upper bound, else the lower one (G-C3).
        assert_eq!(s.copies(0.0), 3);
        assert_eq!(s.copies(38.13), 3);
        assert_eq!(s.copies(38.15), 2);
        assert_eq!(s.copies(99.99), 2);
        // Mean over an even grid of p1 values.
        let n = 100_000;
        let sum: u64 = (0..n)
            .map(|i| u64::from(s.copies(100.0 * (i as f64 + 0.5) / n as f64)))
            .sum();
        assert!((sum as f64 / n as f64 - 2.3814).abs() < 1e-4);
        assert_eq!(Stage::Precise(8.0).copies(99.9), 8);
        assert_eq!(
            Stage::PreciseSize {
                size: 2.38,
                copies: 3
            }
            .copies(0.0),
            3
        );
    }

    #[test]
    fn factors_and_errors() {
        assert!((precise_factor(430, 1024).unwrap() - 2.3814).abs() < 1e-4);
        assert!((precise_factor(416, 1024).unwrap() - 2.4615).abs() < 1e-4);
        assert!(precise_factor(0, 1024).is_err());
        let e = precise_factor(2048, 1024).unwrap_err().to_string();
        assert!(e.contains("smaller"), "{e}");
        assert!(Stage::Precise(0.5).validate().is_err());
        assert!(Stage::Precise(f64::NAN).validate().is_err());
        assert!(Stage::Integer(0).validate().is_err());
        assert!(Stage::Precise(2.45).validate().is_ok());
        assert_eq!(table1_integer_factor("KTH-SP2"), Some(10));
        assert_eq!(adjusted_factor("SDSC00", Calibration::Fcfs), Some(8.58));
        assert_eq!(adjusted_factor("SDSC-BLUE-2000", Calibration::Easy), None);
        assert_eq!(adjusted_factor("HPC2N", Calibration::Easy), None);
    }
}
