//! A seeded, deterministic, streaming synthetic workload, so that the simulator runs with no trace
//! at hand. Arrivals follow Streit's Weibull model (`self-tuning-and-multisite.md` §5.4, KTH's
//! shape α = 0.35), estimates the Φ model of `gang-urgent-scaling.md` A.3.5 with Φ = 0.2.
//!
//! # Model
//!
//! Each job gets, from a "shape" random stream (five uniforms u₁…u₅ per job, always drawn):
//!
//! * **width**: 1 (serial) if u₁ < 0.25; otherwise log₂(width) = 1 + u₃² (log₂ P − 1), so that
//!   small jobs dominate as in real logs (the median parallel job on 128 processors has 5), and
//!   the width is that power of two rounded (if u₂ < 0.75, real logs prefer powers of two) or
//!   2^(log₂ width) rounded to an integer in [2, P]. On a 1-processor machine every job is serial.
//! * **actual run time**: log-uniform on [10 s, 36 h]: round(exp(ln 10 + u₄ (ln 129600 − ln 10))).
//! * **estimate**: actual × φ with φ = 1 if u₅ < Φ, else (1 − Φ)/(1 − u₅); rounded up, capped at
//!   36 h and never below the actual run time.
//!
//! and, from a separate "arrival" stream, the inter-arrival time before it (none before the first
//! job, which is submitted at 0): Weibull with CDF 1 − exp(−(x/β)^α), sampled by inversion
//! x = β (−ln(1 − u))^{1/α}. Submit times are the integer part of the running sum.
//!
//! β is chosen so that the offered load Σ(width × actual) / (P × span) matches the target: the
//! mean job area is computed by a first pass over the same shape stream (same seed, so it is
//! exact and the generator still streams), the mean inter-arrival time is
//! mean_area / (P × load), and β = mean / Γ(1 + 1/α) (Γ by a Lanczos approximation).
//!
//! Uniforms are made from the generator's 64-bit outputs by hand (53 high bits), and every
//! inversion is written out here, so the jobs depend only on `rand_chacha`'s ChaCha8 stream
//! (stream 0 for shapes, 1 for arrivals), not on `rand`'s distribution code.

use crate::error::WorkloadError;
use gridsched_core::model::Job;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Fraction of serial jobs.
pub const SERIAL_FRACTION: f64 = 0.25;
/// Among parallel jobs, the fraction whose width is a power of two.
pub const POWER_OF_TWO_FRACTION: f64 = 0.75;
/// Shortest actual run time, seconds.
pub const MIN_RUNTIME: f64 = 10.0;
/// Longest actual run time and estimate, seconds (36 h).
pub const MAX_RUNTIME: i64 = 36 * 3600;
/// Φ of the estimate model: the fraction of jobs whose estimate is exact.
pub const PHI: f64 = 0.2;
/// Weibull shape of the inter-arrival times (KTH, §5.4).
pub const WEIBULL_ALPHA: f64 = 0.35;

/// Parameters of the synthetic workload.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SyntheticParams {
    /// Number of jobs.
    pub jobs: u64,
    /// Machine size P.
    pub procs: u32,
    /// Target offered load Σ(width × actual) / (P × span).
    pub load: f64,
    /// Random seed.
    pub seed: u64,
}

impl Default for SyntheticParams {
    fn default() -> Self {
        SyntheticParams {
            jobs: 10_000,
            procs: 128,
            load: 0.75,
            seed: 1,
        }
    }
}

/// A uniform on [0, 1) from the 53 high bits of one output.
fn uniform(rng: &mut ChaCha8Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, 9 coefficients; relative error ~1e-15).
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1 − x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + G + 0.5;
    let mut a = C[0];
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The (width, actual, estimate) stream.
#[derive(Clone, Debug)]
struct ShapeStream {
    rng: ChaCha8Rng,
    procs: u32,
    log2_procs: u32,
}

impl ShapeStream {
    fn new(seed: u64, procs: u32) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(0);
        ShapeStream {
            rng,
            procs,
            log2_procs: procs.ilog2(),
        }
    }

    /// (width, actual, estimate).
    fn next_shape(&mut self) -> (u32, i64, i64) {
        let u: [f64; 5] = std::array::from_fn(|_| uniform(&mut self.rng));
        let width = if u[0] < SERIAL_FRACTION || self.procs == 1 {
            1
        } else {
            // log2(width) on [1, log2 P], squared uniform so that small jobs dominate.
            let top = f64::from(self.procs).log2();
            let lw = 1.0 + u[2] * u[2] * (top - 1.0);
            if u[1] < POWER_OF_TWO_FRACTION {
                1u32 << (lw.round() as u32).min(self.log2_procs)
            } else {
                (lw.exp2().round() as u32).clamp(2, self.procs)
            }
        };
        let (lo, hi) = (MIN_RUNTIME.ln(), (MAX_RUNTIME as f64).ln());
        let actual = ((lo + u[3] * (hi - lo)).exp().round() as i64).clamp(10, MAX_RUNTIME);
        let phi = if u[4] < PHI {
            1.0
        } else {
            (1.0 - PHI) / (1.0 - u[4])
        };
        let estimate = ((actual as f64 * phi).ceil() as i64).clamp(actual, MAX_RUNTIME);
        (width, actual, estimate)
    }
}

/// The synthetic job generator: an iterator of jobs with ids 1..=n in submission order.
#[derive(Clone, Debug)]
pub struct SyntheticGenerator {
    params: SyntheticParams,
    shapes: ShapeStream,
    arrivals: ChaCha8Rng,
    mean_area: f64,
    beta: f64,
    produced: u64,
    clock: f64,
}

impl SyntheticGenerator {
    /// A generator for `params` (P ≥ 1, a positive finite load).
    pub fn new(params: SyntheticParams) -> Result<Self, WorkloadError> {
        if params.procs == 0 {
            return Err(WorkloadError::Options(
                "synthetic workload: procs must be at least 1".into(),
            ));
        }
        if !(params.load.is_finite() && params.load > 0.0) {
            return Err(WorkloadError::Options(format!(
                "synthetic workload: load must be a positive number, got {}",
                params.load
            )));
        }
        // First pass: the exact mean area of the jobs that will be generated.
        let mut probe = ShapeStream::new(params.seed, params.procs);
        let mut total: u128 = 0;
        for _ in 0..params.jobs {
            let (w, a, _) = probe.next_shape();
            total += u128::from(w) * a.unsigned_abs() as u128;
        }
        let mean_area = if params.jobs == 0 {
            0.0
        } else {
            total as f64 / params.jobs as f64
        };
        let mean_interarrival = mean_area / (f64::from(params.procs) * params.load);
        let beta = mean_interarrival / ln_gamma(1.0 + 1.0 / WEIBULL_ALPHA).exp();
        let mut arrivals = ChaCha8Rng::seed_from_u64(params.seed);
        arrivals.set_stream(1);
        Ok(SyntheticGenerator {
            params,
            shapes: ShapeStream::new(params.seed, params.procs),
            arrivals,
            mean_area,
            beta,
            produced: 0,
            clock: 0.0,
        })
    }

    /// The parameters.
    pub fn params(&self) -> &SyntheticParams {
        &self.params
    }

    /// The machine size the workload is made for.
    pub fn procs(&self) -> u32 {
        self.params.procs
    }

    /// The mean job area (processors × actual seconds) over all jobs of the workload.
    pub fn mean_area(&self) -> f64 {
        self.mean_area
    }

    /// The Weibull scale β of the inter-arrival times, seconds.
    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// The mean inter-arrival time, seconds.
    pub fn mean_interarrival(&self) -> f64 {
        self.beta * ln_gamma(1.0 + 1.0 / WEIBULL_ALPHA).exp()
    }
}

impl Iterator for SyntheticGenerator {
    type Item = Job;

    fn next(&mut self) -> Option<Job> {
        if self.produced >= self.params.jobs {
            return None;
        }
        if self.produced > 0 {
            let u = uniform(&mut self.arrivals);
            self.clock += self.beta * (-(1.0 - u).ln()).powf(1.0 / WEIBULL_ALPHA);
        }
        self.produced += 1;
        let (width, actual, estimate) = self.shapes.next_shape();
        Some(Job::new(
            self.produced,
            self.clock.floor() as i64,
            width,
            estimate,
            actual,
        ))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = usize::try_from(self.params.jobs - self.produced).unwrap_or(usize::MAX);
        (left, Some(left))
    }
}

#[cfg(test)]
mod tests;
pub mod trace_model;
