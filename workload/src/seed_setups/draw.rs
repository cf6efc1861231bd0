//! Uniform draws from a ChaCha8 stream, written out by hand so that generated workloads depend only
//! on the stream, not on `rand`'s distribution code.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A source of uniform draws.
#[derive(Clone, Debug)]
pub(crate) struct Uniform(ChaCha8Rng);

impl Uniform {
    /// Stream `stream` of `seed`.
    pub(crate) fn new(seed: u64, stream: u64) -> Uniform {
        let mut r = ChaCha8Rng::seed_from_u64(seed);
        r.set_stream(stream);
        Uniform(r)
    }

    /// Uniform in [0, 1) from the 53 high bits.
    pub(crate) fn unit(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in [lo, hi] (inclusive).
    pub(crate) fn int(&mut self, lo: i64, hi: i64) -> i64 {
        if hi <= lo {
            return lo;
        }
        let span = (hi - lo + 1) as f64;
        lo + ((self.unit() * span) as i64).min(hi - lo)
    }

    /// Uniform real in [lo, hi).
    pub(crate) fn real(&mut self, lo: f64, hi: f64) -> f64 {
        lo + self.unit() * (hi - lo)
    }

    /// True with probability `p`.
    pub(crate) fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// Exponential with the given mean, by inversion.
    pub(crate) fn exponential(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.unit()).ln()
    }
}
