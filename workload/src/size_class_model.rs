//! The per-size-class workload model of Zhang et al. (§2.2, after Jann et al.): jobs are grouped
//! into classes whose upper bounds are powers of two (1, 2, 3–4, 5–8, …); in each class the first
//! three moments of the inter-arrival times and of the service (dedicated run) times are fitted by
//! a [`HyperErlang`] of common order. Synthetic workloads merge one independent arrival stream per
//! class (G-A1), draw each job's size from the trace's sizes in its class, multiply the arrival
//! rate and the service times by separate factors (§2.2: workload k has run-time factor
//! 1.0 + 0.1·k, G-A2), and stop at the requested number of jobs. Estimates come from an
//! [`Overestimation`] model drawn on a stream of their own, so that the estimate model changes no
//! arrival, size or run time.

use crate::hyper_erlang::{FitError, HyperErlang, moments, unit};
use crate::overestimation::Overestimation;
use gridsched_core::model::{Duration, Job, Time};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// One fitted size class.
#[derive(Clone, Debug, PartialEq)]
pub struct SizeClass {
    /// Smallest size of the class.
    pub lo: u32,
    /// Largest size of the class (a power of two).
    pub hi: u32,
    /// Trace jobs in the class.
    pub jobs: usize,
    /// Inter-arrival times within the class, seconds.
    pub interarrival: HyperErlang,
    /// Service times, seconds.
    pub service: HyperErlang,
    /// The trace's sizes in the class (sampled uniformly: the empirical distribution).
    pub sizes: Vec<u32>,
}

impl SizeClass {
    /// Mean size.
    pub fn mean_size(&self) -> f64 {
        self.sizes.iter().map(|&s| f64::from(s)).sum::<f64>() / self.sizes.len().max(1) as f64
    }
}

/// Why a model cannot be fitted.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// A class's moments cannot be fitted.
    #[error("size class {lo}-{hi} ({what}): {source}")]
    Fit {
        /// Class bounds.
        lo: u32,
        /// Class bounds.
        hi: u32,
        /// Inter-arrival or service times.
        what: &'static str,
        /// The fit error.
        source: FitError,
    },
    /// No class has enough jobs.
    #[error("no size class has at least {0} jobs")]
    Empty(usize),
}

/// The fitted model: its classes, smallest first.
#[derive(Clone, Debug, PartialEq)]
pub struct SizeClassModel {
    /// The classes with enough jobs.
    pub classes: Vec<SizeClass>,
    /// Classes left out because their moments cannot be fitted (e.g. every run time equal), with
    /// their trace jobs and why.
    pub skipped: Vec<(u32, u32, usize, ModelError)>,
}

/// Classes with fewer trace jobs than this are left out (their moments say nothing).
pub const MIN_CLASS_JOBS: usize = 10;

/// The class bounds of size `n`: (lo, hi) with hi the smallest power of two ≥ n.
pub fn class_of(n: u32) -> (u32, u32) {
    let hi = n.max(1).next_power_of_two();
    (if hi == 1 { 1 } else { hi / 2 + 1 }, hi)
}

/// Parameters of a synthetic workload.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Generate {
    /// Jobs.
    pub jobs: usize,
    /// Seed.
    pub seed: u64,
    /// Multiplies every class's arrival rate.
    pub arrival_rate: f64,
    /// Multiplies every service time (the load factor 1.0 + 0.1·k).
    pub runtime_factor: f64,
    /// Estimates.
    pub estimates: Overestimation,
    /// Optional cap on estimates, seconds (G-A3; `None` as printed).
    pub estimate_cap: Option<Duration>,
}

impl SizeClassModel {
    /// Fits the model to trace jobs (their submit times, sizes and run times), keeping classes of
    /// at least [`MIN_CLASS_JOBS`] jobs whose moments can be fitted (the others are listed in
    /// [`SizeClassModel::skipped`]).
    pub fn fit(trace: &[Job]) -> Result<SizeClassModel, ModelError> {
        let mut jobs: Vec<&Job> = trace
            .iter()
            .filter(|j| j.runtime.unwrap_or(0) > 0)
            .collect();
        jobs.sort_by_key(|j| (j.submit, j.id));
        let mut his: Vec<u32> = jobs.iter().map(|j| class_of(j.procs).1).collect();
        his.sort_unstable();
        his.dedup();
        let mut classes = Vec::new();
        let mut skipped = Vec::new();
        for hi in his {
            let (lo, _) = class_of(hi);
            let members: Vec<&&Job> = jobs.iter().filter(|j| class_of(j.procs).1 == hi).collect();
            if members.len() < MIN_CLASS_JOBS {
                continue;
            }
            let ia: Vec<f64> = members
                .windows(2)
                .map(|w| (w[1].submit - w[0].submit) as f64)
                .collect();
            let st: Vec<f64> = members
                .iter()
                .map(|j| j.runtime.unwrap_or(0) as f64)
                .collect();
            let fit = |xs: &[f64], what| {
                HyperErlang::fit(moments(xs)).map_err(|source| ModelError::Fit {
                    lo,
                    hi,
                    what,
                    source,
                })
            };
            match (fit(&ia, "inter-arrival times"), fit(&st, "service times")) {
                (Ok(interarrival), Ok(service)) => classes.push(SizeClass {
                    lo,
                    hi,
                    jobs: members.len(),
                    interarrival,
                    service,
                    sizes: members.iter().map(|j| j.procs).collect(),
                }),
                (Err(e), _) | (_, Err(e)) => skipped.push((lo, hi, members.len(), e)),
            }
        }
        if classes.is_empty() {
            return Err(ModelError::Empty(MIN_CLASS_JOBS));
        }
        Ok(SizeClassModel { classes, skipped })
    }

    /// The offered load on `procs` processors at arrival-rate factor 1 and run-time factor 1:
    /// Σ over classes of rate × mean size × mean service time, over `procs`.
    pub fn offered_load(&self, procs: u32) -> f64 {
        self.classes
            .iter()
            .map(|c| c.mean_size() * c.service.mean() / c.interarrival.mean())
            .sum::<f64>()
            / f64::from(procs)
    }

    /// A synthetic workload: the merged class streams (ties to the smaller class), the first
    /// arrival at t = 0, ids from 1, run times at least one second.
    pub fn generate(&self, g: &Generate) -> Vec<Job> {
        let mut rng = ChaCha8Rng::seed_from_u64(g.seed);
        let mut est_rng = ChaCha8Rng::seed_from_u64(g.seed);
        est_rng.set_stream(1);
        let mut next: Vec<f64> = self
            .classes
            .iter()
            .map(|c| c.interarrival.sample(&mut rng) / g.arrival_rate)
            .collect();
        let mut out = Vec::with_capacity(g.jobs);
        let mut origin: Option<f64> = None;
        while out.len() < g.jobs {
            let (k, t) = next
                .iter()
                .copied()
                .enumerate()
                .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
                .expect("at least one class");
            let c = &self.classes[k];
            next[k] = t + c.interarrival.sample(&mut rng) / g.arrival_rate;
            let t0 = *origin.get_or_insert(t);
            let size =
                c.sizes[((unit(&mut rng) * c.sizes.len() as f64) as usize).min(c.sizes.len() - 1)];
            let service = c.service.sample(&mut rng);
            let run = ((service * g.runtime_factor).round() as Duration).max(1);
            let est = g.estimates.estimate(&mut est_rng, run, g.estimate_cap);
            let submit = (t - t0).floor() as Time;
            out.push(Job::new(out.len() as u64 + 1, submit, size, est, run));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace() -> Vec<Job> {
        // Two classes: size 1 (every 100 s, runs 50/150 s) and sizes 5-8 (every 300 s).
        let mut v = Vec::new();
        let mut id = 0;
        for i in 0..200i64 {
            id += 1;
            v.push(Job::new(
                id,
                i * 100 + (i % 7) * 13,
                1,
                1_000,
                50 + 100 * (i % 2) + i % 5,
            ));
            if i % 3 == 0 {
                id += 1;
                let size = 5 + (i % 4) as u32;
                v.push(Job::new(
                    id,
                    i * 100 + (i % 11) * 7,
                    size,
                    5_000,
                    1_000 + 37 * (i % 13),
                ));
            }
        }
        v
    }

    #[test]
    fn classes_are_power_of_two_bins_and_the_fit_matches_their_moments() {
        assert_eq!(class_of(1), (1, 1));
        assert_eq!(class_of(2), (2, 2));
        assert_eq!(class_of(3), (3, 4));
        assert_eq!(class_of(8), (5, 8));
        assert_eq!(class_of(129), (129, 256));
        let t = trace();
        let m = SizeClassModel::fit(&t).unwrap();
        assert_eq!(
            m.classes
                .iter()
                .map(|c| (c.lo, c.hi, c.jobs))
                .collect::<Vec<_>>(),
            vec![(1, 1, 200), (5, 8, 67)]
        );
        // A class whose run times are all equal cannot be fitted: it is left out, named.
        let mut t2 = t.clone();
        for i in 0..12 {
            t2.push(Job::new(
                1_000 + i,
                i as i64 * 50 + (i as i64 % 3) * 7,
                2,
                10,
                7,
            ));
        }
        let m2 = SizeClassModel::fit(&t2).unwrap();
        assert_eq!(m2.classes.len(), 2);
        assert_eq!(
            (m2.skipped[0].0, m2.skipped[0].1, m2.skipped[0].2),
            (2, 2, 12)
        );
        assert!(m2.skipped[0].3.to_string().contains("service times"));
        let st: Vec<f64> = t
            .iter()
            .filter(|j| j.procs == 1)
            .map(|j| j.runtime.unwrap() as f64)
            .collect();
        let target = moments(&st);
        for n in 1..=3 {
            let got = m.classes[0].service.moment(n);
            assert!(((got - target[n as usize - 1]) / target[n as usize - 1]).abs() < 1e-9);
        }
    }

    #[test]
    fn generation_is_seeded_scales_run_times_and_hits_the_offered_load() {
        let m = SizeClassModel::fit(&trace()).unwrap();
        let g = Generate {
            jobs: 20_000,
            seed: 4,
            arrival_rate: 1.0,
            runtime_factor: 1.0,
            estimates: Overestimation::Phi(0.2),
            estimate_cap: None,
        };
        let a = m.generate(&g);
        assert_eq!(a, m.generate(&g), "seeded");
        assert_eq!(a[0].submit, 0);
        assert!(a.windows(2).all(|w| w[0].submit <= w[1].submit));
        // Workload k: the same arrivals and sizes, run times × (1 + 0.1·k), rounded.
        let b = m.generate(&Generate {
            runtime_factor: 1.5,
            ..g
        });
        for (x, y) in a.iter().zip(&b) {
            assert_eq!((x.submit, x.procs), (y.submit, y.procs));
            assert!(y.estimate >= y.runtime.unwrap());
        }
        // The measured load approaches the model's offered load.
        let span = a.last().unwrap().submit as f64;
        let work: f64 = a
            .iter()
            .map(|j| f64::from(j.procs) * j.runtime.unwrap() as f64)
            .sum();
        let measured = work / (8.0 * span);
        let model = m.offered_load(8);
        assert!(
            ((measured - model) / model).abs() < 0.05,
            "{measured} vs {model}"
        );
    }
}
