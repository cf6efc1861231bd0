//! Run-time estimates from an overestimation model (Zhang et al., §2.1, Fig. 1): the estimate is
//! φ · the actual run time, φ ≥ 1. The Ω model draws φ uniformly from [1, 1 + Ω]; the Φ model lets
//! a fraction Φ of the jobs run exactly to their estimate (φ = 1) and gives the others an
//! actual/estimate ratio uniform on (0, 1]: with y uniform on [0, 1), φ = 1 if y < Φ, else
//! (1 − Φ) / (1 − y). The Φ model's φ has no finite mean (G-A3); an optional cap on the estimate
//! (disabled by default) bounds it. Estimates are whole seconds, rounded up (so never below the
//! run time).

use crate::hyper_erlang::unit;
use gridsched_core::model::Duration;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// An overestimation model.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Overestimation {
    /// φ uniform on [1, 1 + Ω].
    Omega(f64),
    /// A fraction Φ exact, the rest with actual/estimate uniform on (0, 1].
    Phi(f64),
}

impl Overestimation {
    /// Refuses parameters outside the model's range, naming the parameter.
    pub fn check(&self) -> Result<(), String> {
        match *self {
            Overestimation::Omega(o) if !(o.is_finite() && o >= 0.0) => {
                Err(format!("omega: {o} is not a number ≥ 0"))
            }
            Overestimation::Phi(p) if !(0.0..=1.0).contains(&p) => {
                Err(format!("phi: {p} is not a fraction in [0, 1]"))
            }
            _ => Ok(()),
        }
    }

    /// One overestimation factor φ ≥ 1.
    pub fn factor<R: Rng>(&self, rng: &mut R) -> f64 {
        let y = unit(rng);
        match *self {
            Overestimation::Omega(o) => 1.0 + o * y,
            Overestimation::Phi(p) if y < p => 1.0,
            Overestimation::Phi(p) => (1.0 - p) / (1.0 - y),
        }
    }

    /// The estimate of a job of `runtime` seconds: ⌈φ · runtime⌉, at most `cap` (never below the
    /// run time).
    pub fn estimate<R: Rng>(
        &self,
        rng: &mut R,
        runtime: Duration,
        cap: Option<Duration>,
    ) -> Duration {
        let f = self.factor(rng);
        let e = (f * runtime as f64).ceil();
        let e = if e >= 9.0e15 {
            Duration::MAX / 4
        } else {
            e as Duration
        };
        let e = cap.map_or(e, |c| e.min(c));
        e.max(runtime)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn the_phi_model_is_exact_for_a_fraction_phi_and_uniform_otherwise() {
        let m = Overestimation::Phi(0.2);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let n = 200_000;
        let fs: Vec<f64> = (0..n).map(|_| m.factor(&mut rng)).collect();
        let exact = fs.iter().filter(|&&f| f == 1.0).count() as f64 / n as f64;
        assert!((exact - 0.2).abs() < 0.005, "{exact}");
        // The others: actual/estimate = 1/φ uniform on (0, 1]: mean 1/2, quartiles 1/4 and 3/4.
        let r: Vec<f64> = fs.iter().filter(|&&f| f != 1.0).map(|f| 1.0 / f).collect();
        let mean = r.iter().sum::<f64>() / r.len() as f64;
        assert!((mean - 0.5).abs() < 0.005, "{mean}");
        let below = |q: f64| r.iter().filter(|&&x| x <= q).count() as f64 / r.len() as f64;
        assert!((below(0.25) - 0.25).abs() < 0.005);
        assert!((below(0.75) - 0.75).abs() < 0.005);
        assert!(r.iter().all(|&x| x > 0.0 && x <= 1.0));
        // Φ = 1: perfect estimates.
        assert_eq!(Overestimation::Phi(1.0).estimate(&mut rng, 77, None), 77);
    }

    #[test]
    fn the_omega_model_is_uniform_and_estimates_are_seeded_whole_seconds() {
        let m = Overestimation::Omega(3.0);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
        let fs: Vec<f64> = (0..100_000).map(|_| m.factor(&mut rng)).collect();
        assert!(fs.iter().all(|&f| (1.0..=4.0).contains(&f)));
        let mean = fs.iter().sum::<f64>() / fs.len() as f64;
        assert!((mean - 2.5).abs() < 0.01, "{mean}");
        let a: Vec<Duration> = {
            let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(5);
            (0..5).map(|_| m.estimate(&mut r, 100, Some(300))).collect()
        };
        let b: Vec<Duration> = {
            let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(5);
            (0..5).map(|_| m.estimate(&mut r, 100, Some(300))).collect()
        };
        assert_eq!(a, b);
        assert!(a.iter().all(|&e| (100..=300).contains(&e)));
        assert!(
            Overestimation::Phi(1.5)
                .check()
                .unwrap_err()
                .starts_with("phi")
        );
        assert!(
            Overestimation::Omega(-1.0)
                .check()
                .unwrap_err()
                .starts_with("omega")
        );
    }
}
