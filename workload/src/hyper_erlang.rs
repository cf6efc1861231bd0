//! The Hyper-Erlang distribution of common order and its fit to three moments (Zhang et al., §2.2,
//! after Jann et al.): m = 2 Erlang branches of the same order k, chosen with probabilities p and
//! 1 − p, with rates λ1 and λ2. Its n-th raw moment is Σ_b p_b · k(k+1)…(k+n−1) / λ_b^n. The fit
//! takes the smallest order k for which the first three moments of the data are matched by a valid
//! solution (0 < p < 1, λ1, λ2 > 0).
//!
//! With a_b = 1/λ_b and m_n the n-th moment divided by k(k+1)…(k+n−1), the branches' scales a1, a2
//! are the two points of a two-point distribution with moments m1, m2, m3: the roots of
//! x² = c1·x + c0 with c1 = (m3 − m1·m2) / (m2 − m1²) and c0 = m2 − c1·m1, and p = (a2 − m1) /
//! (a2 − a1). Moments, fit and sampling are in f64 (the spec's distributions); samples are
//! rounded to whole seconds by the generator.

use rand::Rng;

/// A fitted Hyper-Erlang distribution of common order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HyperErlang {
    /// The common order k.
    pub order: u32,
    /// Probability of branch 1.
    pub p: f64,
    /// Rate of branch 1.
    pub rate1: f64,
    /// Rate of branch 2.
    pub rate2: f64,
}

/// Why three moments cannot be fitted.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum FitError {
    /// The moments are not those of a positive random variable (a moment ≤ 0, or variance ≤ 0).
    #[error("moments {0:?} are not those of a positive, non-constant variable")]
    NotPositive([f64; 3]),
    /// No order up to the limit gives a valid solution.
    #[error("no order up to {limit} fits the moments {moments:?}")]
    NoOrder {
        /// The moments.
        moments: [f64; 3],
        /// The largest order tried.
        limit: u32,
    },
}

/// The largest order tried.
pub const MAX_ORDER: u32 = 10_000;

/// The product k(k+1)…(k+n−1).
fn rising(k: f64, n: u32) -> f64 {
    (0..n).map(|i| k + f64::from(i)).product()
}

impl HyperErlang {
    /// The n-th raw moment (n ≥ 1).
    pub fn moment(&self, n: u32) -> f64 {
        let k = f64::from(self.order);
        let c = rising(k, n);
        self.p * c / self.rate1.powi(n as i32) + (1.0 - self.p) * c / self.rate2.powi(n as i32)
    }

    /// The mean.
    pub fn mean(&self) -> f64 {
        self.moment(1)
    }

    /// Fits the three raw moments `m` with the smallest valid order.
    pub fn fit(m: [f64; 3]) -> Result<HyperErlang, FitError> {
        if m.iter().any(|&x| !(x.is_finite() && x > 0.0)) || m[1] <= m[0] * m[0] {
            return Err(FitError::NotPositive(m));
        }
        for order in 1..=MAX_ORDER {
            if let Some(h) = HyperErlang::fit_order(m, order) {
                return Ok(h);
            }
        }
        Err(FitError::NoOrder {
            moments: m,
            limit: MAX_ORDER,
        })
    }

    /// The solution of order `order`, if valid.
    pub fn fit_order(m: [f64; 3], order: u32) -> Option<HyperErlang> {
        let k = f64::from(order);
        let m1 = m[0] / rising(k, 1);
        let m2 = m[1] / rising(k, 2);
        let m3 = m[2] / rising(k, 3);
        let var = m2 - m1 * m1;
        if var <= 0.0 {
            return None;
        }
        let c1 = (m3 - m1 * m2) / var;
        let c0 = m2 - c1 * m1;
        let disc = c1 * c1 + 4.0 * c0;
        if disc <= 0.0 {
            return None;
        }
        let s = disc.sqrt();
        let (a1, a2) = ((c1 - s) / 2.0, (c1 + s) / 2.0);
        if a1 <= 0.0 || a2 <= a1 {
            return None;
        }
        let p = (a2 - m1) / (a2 - a1);
        if !(p > 0.0 && p < 1.0) {
            return None;
        }
        Some(HyperErlang {
            order,
            p,
            rate1: 1.0 / a1,
            rate2: 1.0 / a2,
        })
    }

    /// One sample: a branch, then the sum of `order` exponential variates of its rate.
    pub fn sample<R: Rng>(&self, rng: &mut R) -> f64 {
        let rate = if unit(rng) < self.p {
            self.rate1
        } else {
            self.rate2
        };
        let mut x = 0.0;
        for _ in 0..self.order {
            // 1 − u lies in (0, 1]: the logarithm is finite.
            x -= (1.0 - unit(rng)).ln();
        }
        x / rate
    }
}

/// A uniform variate in [0, 1) from the top 53 bits of one draw.
pub fn unit<R: Rng>(rng: &mut R) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// The first three raw moments of a sample.
pub fn moments(xs: &[f64]) -> [f64; 3] {
    let n = xs.len().max(1) as f64;
    let mut m = [0.0; 3];
    for &x in xs {
        m[0] += x;
        m[1] += x * x;
        m[2] += x * x * x;
    }
    m.map(|v| v / n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn rel(a: f64, b: f64) -> f64 {
        ((a - b) / b).abs()
    }

    #[test]
    fn the_fit_matches_three_moments_with_the_smallest_valid_order() {
        // A high-variance target (scv 4): order 1 is valid.
        let m = [100.0, 50_000.0, 60_000_000.0];
        let h = HyperErlang::fit(m).unwrap();
        assert_eq!(h.order, 1);
        for n in 1..=3 {
            assert!(
                rel(h.moment(n), m[n as usize - 1]) < 1e-9,
                "moment {n}: {h:?}"
            );
        }
        // A low-variance target (scv 0.25): orders up to 4 have m2 ≤ m1² and no solution; the
        // fit takes the first larger order that has one.
        let m = [100.0, 12_500.0, 1_800_000.0];
        let h = HyperErlang::fit(m).unwrap();
        assert!(h.order > 1);
        assert!(HyperErlang::fit_order(m, h.order - 1).is_none());
        for n in 1..=3 {
            assert!(
                rel(h.moment(n), m[n as usize - 1]) < 1e-9,
                "moment {n}: {h:?}"
            );
        }
        assert!(HyperErlang::fit([1.0, 1.0, 1.0]).is_err(), "a constant");
        assert!(HyperErlang::fit([-1.0, 1.0, 1.0]).is_err());
    }

    #[test]
    fn a_sample_approaches_the_fitted_moments() {
        let m = [100.0, 50_000.0, 60_000_000.0];
        let h = HyperErlang::fit(m).unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let xs: Vec<f64> = (0..400_000).map(|_| h.sample(&mut rng)).collect();
        let s = moments(&xs);
        assert!(rel(s[0], m[0]) < 0.01, "{s:?}");
        assert!(rel(s[1], m[1]) < 0.05, "{s:?}");
        assert!(rel(s[2], m[2]) < 0.25, "{s:?}");
        // Seeded: the same draws again.
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        assert_eq!(h.sample(&mut rng), xs[0]);
    }
}
