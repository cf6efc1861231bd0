//! Streit's trace-fitted synthetic workload (spec `self-tuning-and-multisite.md` §5.4): Weibull
//! inter-arrival times with the per-trace (α, β) the study fitted, and job shapes drawn from a
//! 3-D probability matrix over (width, estimated run time, actual run time) built from a trace,
//! sampled with three random numbers per job.
//!
//! The matrix keeps the trace's own values as its cells (no binning): the width is drawn from its
//! marginal distribution (u₁), the estimate from its distribution given the width (u₂), the
//! actual run time from its distribution given both (u₃). Every generated triple therefore occurs
//! in the trace, and the joint frequencies converge to the trace's. A cell is chosen by inverting
//! the cumulative counts: the first value whose cumulative count exceeds ⌊u · total⌋.
//!
//! Randomness: one ChaCha8 stream per purpose (stream 2 for shapes, 3 for arrivals, so it never
//! overlaps the parametric generator's), uniforms from the 53 high bits, inversions written out:
//! the jobs depend only on the seed and the fitted trace.

use super::{ln_gamma, uniform};
use crate::error::WorkloadError;
use gridsched_core::model::Job;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

/// The Weibull inter-arrival fits of §5.4: (trace, α, β in seconds).
pub const WEIBULL_FITS: [(&str, f64, f64); 8] = [
    ("CTC", 0.35, 60.0),
    ("KTH", 0.35, 200.0),
    ("SDSC", 0.40, 290.0),
    ("LANL", 0.45, 180.0),
    ("PC2-2001", 0.25, 40.0),
    ("PC2-2002", 0.25, 40.0),
    ("CHPC", 0.35, 300.0),
    ("MHPCC", 0.35, 120.0),
];

/// Weibull inter-arrival times, CDF `1 − exp(−(x/β)^α)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Weibull {
    /// Shape α.
    pub alpha: f64,
    /// Scale β, seconds.
    pub beta: f64,
}

impl Weibull {
    /// The §5.4 fit of a trace by name (case-insensitive), e.g. `ctc`.
    pub fn fitted(trace: &str) -> Result<Weibull, WorkloadError> {
        WEIBULL_FITS
            .iter()
            .find(|(n, _, _)| n.eq_ignore_ascii_case(trace))
            .map(|&(_, alpha, beta)| Weibull { alpha, beta })
            .ok_or_else(|| {
                let names: Vec<&str> = WEIBULL_FITS.iter().map(|f| f.0).collect();
                WorkloadError::Options(format!(
                    "arrivals: no Weibull fit named {trace:?} (known: {})",
                    names.join(", ")
                ))
            })
    }

    /// The mean inter-arrival time `β Γ(1 + 1/α)`.
    pub fn mean(&self) -> f64 {
        self.beta * ln_gamma(1.0 + 1.0 / self.alpha).exp()
    }

    /// The inter-arrival time at uniform `u ∈ [0, 1)`: `β (−ln(1 − u))^{1/α}`.
    pub fn at(&self, u: f64) -> f64 {
        self.beta * (-(1.0 - u).ln()).powf(1.0 / self.alpha)
    }
}

/// Values with their cumulative counts, ascending by value.
#[derive(Clone, Debug, Default, PartialEq)]
struct Cumulative<T> {
    values: Vec<T>,
    cum: Vec<u64>,
}

impl<T: Copy> Cumulative<T> {
    fn from_counts(counts: impl Iterator<Item = (T, u64)>) -> Self {
        let mut c = Cumulative {
            values: Vec::new(),
            cum: Vec::new(),
        };
        let mut total = 0;
        for (v, n) in counts {
            total += n;
            c.values.push(v);
            c.cum.push(total);
        }
        c
    }

    fn pick(&self, u: f64) -> (usize, T) {
        let total = *self.cum.last().expect("non-empty");
        let target = ((u * total as f64) as u64).min(total - 1);
        let i = self.cum.partition_point(|&c| c <= target);
        (i, self.values[i])
    }
}

/// The 3-D probability matrix of a trace: width → estimate → actual run time.
#[derive(Clone, Debug, PartialEq)]
pub struct ShapeMatrix {
    widths: Cumulative<u32>,
    estimates: Vec<Cumulative<i64>>,
    actuals: Vec<Vec<Cumulative<i64>>>,
    jobs: u64,
}

impl ShapeMatrix {
    /// The matrix of `jobs` (a job without an actual run time counts its estimate as actual).
    pub fn fit<'a>(jobs: impl IntoIterator<Item = &'a Job>) -> Result<ShapeMatrix, WorkloadError> {
        let mut m: BTreeMap<u32, BTreeMap<i64, BTreeMap<i64, u64>>> = BTreeMap::new();
        let mut n = 0;
        for j in jobs {
            let actual = j.runtime.unwrap_or(j.estimate);
            *m.entry(j.procs)
                .or_default()
                .entry(j.estimate)
                .or_default()
                .entry(actual)
                .or_default() += 1;
            n += 1;
        }
        if n == 0 {
            return Err(WorkloadError::Options(
                "trace model: the trace has no job to fit".into(),
            ));
        }
        let count = |e: &BTreeMap<i64, u64>| e.values().sum::<u64>();
        Ok(ShapeMatrix {
            widths: Cumulative::from_counts(
                m.iter()
                    .map(|(w, es)| (*w, es.values().map(count).sum::<u64>())),
            ),
            estimates: m
                .values()
                .map(|es| Cumulative::from_counts(es.iter().map(|(e, a)| (*e, count(a)))))
                .collect(),
            actuals: m
                .values()
                .map(|es| {
                    es.values()
                        .map(|a| Cumulative::from_counts(a.iter().map(|(v, n)| (*v, *n))))
                        .collect()
                })
                .collect(),
            jobs: n,
        })
    }

    /// Jobs the matrix was fitted on.
    pub fn jobs(&self) -> u64 {
        self.jobs
    }

    /// (width, estimate, actual run time) at three uniforms.
    pub fn sample(&self, u1: f64, u2: f64, u3: f64) -> (u32, i64, i64) {
        let (w, width) = self.widths.pick(u1);
        let (e, estimate) = self.estimates[w].pick(u2);
        let (_, actual) = self.actuals[w][e].pick(u3);
        (width, estimate, actual)
    }
}

/// The generator: jobs 1..=n, the first submitted at 0, shapes from the matrix, arrivals Weibull.
#[derive(Clone, Debug)]
pub struct TraceModelGenerator {
    matrix: ShapeMatrix,
    arrivals: Weibull,
    shape_rng: ChaCha8Rng,
    arrival_rng: ChaCha8Rng,
    jobs: u64,
    produced: u64,
    clock: f64,
}

impl TraceModelGenerator {
    /// `jobs` jobs from `matrix` and `arrivals`, seeded.
    pub fn new(matrix: ShapeMatrix, arrivals: Weibull, jobs: u64, seed: u64) -> Self {
        let mut shape_rng = ChaCha8Rng::seed_from_u64(seed);
        shape_rng.set_stream(2);
        let mut arrival_rng = ChaCha8Rng::seed_from_u64(seed);
        arrival_rng.set_stream(3);
        TraceModelGenerator {
            matrix,
            arrivals,
            shape_rng,
            arrival_rng,
            jobs,
            produced: 0,
            clock: 0.0,
        }
    }
}

impl Iterator for TraceModelGenerator {
    type Item = Job;

    fn next(&mut self) -> Option<Job> {
        if self.produced >= self.jobs {
            return None;
        }
        if self.produced > 0 {
            self.clock += self.arrivals.at(uniform(&mut self.arrival_rng));
        }
        self.produced += 1;
        let (u1, u2, u3) = (
            uniform(&mut self.shape_rng),
            uniform(&mut self.shape_rng),
            uniform(&mut self.shape_rng),
        );
        let (w, estimate, actual) = self.matrix.sample(u1, u2, u3);
        Some(Job::new(
            self.produced,
            self.clock as i64,
            w,
            estimate,
            actual,
        ))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = (self.jobs - self.produced) as usize;
        (left, Some(left))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn trace() -> Vec<Job> {
        // Widths 1 (50 %), 4 (30 %), 16 (20 %); estimates and actuals tied to the width.
        let mut v = Vec::new();
        for k in 0..100u64 {
            let (w, e, a) = match k % 10 {
                0..=4 => (1, 600, 300 + (k % 3) as i64),
                5..=7 => (4, 3_600, 1_800),
                _ => (16, 7_200 + (k % 2) as i64 * 100, 7_000),
            };
            v.push(Job::new(k + 1, k as i64 * 10, w, e, a));
        }
        v
    }

    #[test]
    fn the_fits_of_section_5_4_have_the_implied_means() {
        // β Γ(1 + 1/α), the check column of the spec's table.
        for (name, mean) in [
            ("CTC", 302.0),
            ("KTH", 1006.0),
            ("SDSC", 964.0),
            ("LANL", 446.0),
            ("PC2-2001", 960.0),
            ("CHPC", 1509.0),
            ("MHPCC", 603.0),
        ] {
            let w = Weibull::fitted(name).unwrap();
            assert!((w.mean() - mean).abs() < 1.0, "{name}: {}", w.mean());
        }
        assert!(Weibull::fitted("ctc").is_ok());
        let err = Weibull::fitted("nowhere").unwrap_err().to_string();
        assert!(err.contains("nowhere") && err.contains("CTC"), "{err}");
    }

    #[test]
    fn samples_stay_in_the_trace_and_follow_its_frequencies() {
        let t = trace();
        let cells: HashSet<(u32, i64, i64)> = t
            .iter()
            .map(|j| (j.procs, j.estimate, j.runtime.unwrap()))
            .collect();
        let m = ShapeMatrix::fit(&t).unwrap();
        assert_eq!(m.jobs(), 100);
        let arrivals = Weibull::fitted("CTC").unwrap();
        let jobs: Vec<Job> = TraceModelGenerator::new(m.clone(), arrivals, 50_000, 7).collect();
        assert_eq!(jobs.len(), 50_000);
        let mut by_width: BTreeMap<u32, usize> = BTreeMap::new();
        for j in &jobs {
            let cell = (j.procs, j.estimate, j.runtime.unwrap());
            assert!(cells.contains(&cell), "{cell:?} is not in the trace");
            *by_width.entry(j.procs).or_default() += 1;
        }
        for (w, share) in [(1, 0.5), (4, 0.3), (16, 0.2)] {
            let got = by_width[&w] as f64 / 50_000.0;
            assert!((got - share).abs() < 0.01, "width {w}: {got}");
        }
        // Arrivals: non-decreasing from 0, mean near β Γ(1 + 1/α) (heavy-tailed: 5 %).
        assert_eq!(jobs[0].submit, 0);
        assert!(jobs.windows(2).all(|p| p[0].submit <= p[1].submit));
        let mean = jobs.last().unwrap().submit as f64 / 49_999.0;
        assert!((mean / arrivals.mean() - 1.0).abs() < 0.05, "mean {mean}");
        // Deterministic per seed, different across seeds.
        let again: Vec<Job> = TraceModelGenerator::new(m.clone(), arrivals, 50, 7).collect();
        assert_eq!(&again[..], &jobs[..50]);
        let other: Vec<Job> = TraceModelGenerator::new(m, arrivals, 50, 8).collect();
        assert_ne!(other, again);
    }

    #[test]
    fn the_inversion_picks_each_cell_by_its_count() {
        let m = ShapeMatrix::fit(&trace()).unwrap();
        // Cumulative widths: 1 → 50, 4 → 80, 16 → 100 jobs.
        assert_eq!(m.sample(0.0, 0.0, 0.0).0, 1);
        assert_eq!(m.sample(0.499, 0.0, 0.0).0, 1);
        assert_eq!(m.sample(0.5, 0.0, 0.0), (4, 3_600, 1_800));
        assert_eq!(m.sample(0.8, 0.0, 0.0).0, 16);
        assert_eq!(
            m.sample(0.999_999, 0.999_999, 0.999_999),
            (16, 7_300, 7_000)
        );
        assert!(ShapeMatrix::fit(&[]).is_err());
    }
}
