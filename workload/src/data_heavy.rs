//! Data-heavy workloads: a seeded catalogue of datasets, each stored at a home site, and jobs
//! that read them, for the studies of data-aware dispatch (the seeds' Convergent Scheduling reads
//! each job's input from storage nodes, Pasquali, thesis D7.2; the catalogue puts that between
//! sites). Any job stream can be given inputs: [`DataHeavy::attach`] gives each job one dataset.
//!
//! # Model
//!
//! * **datasets**: `datasets` of them, `d0`, `d1`, …; a dataset's size is log-uniform on
//!   `[min_bytes, max_bytes]`, its home site uniform over `sites`.
//! * **popularity**: Zipf with exponent `zipf` over the catalogue order (`P(k) ∝ 1/(k+1)^s`):
//!   a few datasets are read by many jobs, as on production grids; `0` makes it uniform.
//! * each job reads one dataset (`stage_in` with its key, size and home site).
//!
//! Draws come from a ChaCha8 stream of the seed, uniforms from its 64-bit outputs by hand (53
//! high bits), so the workload depends on `rand_chacha` alone.

use gridsched_core::model::{ClusterId, DataIn, Job};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// The catalogue's parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DataHeavyParams {
    /// Datasets in the catalogue.
    pub datasets: u32,
    /// Smallest dataset, bytes.
    pub min_bytes: u64,
    /// Largest dataset, bytes.
    pub max_bytes: u64,
    /// Sites the datasets are stored at (home sites `0..sites`).
    pub sites: u32,
    /// Zipf exponent of the datasets' popularity.
    pub zipf: f64,
}

/// A catalogue of datasets and the draw of each job's.
#[derive(Clone, Debug)]
pub struct DataHeavy {
    datasets: Vec<DataIn>,
    /// Cumulative popularity, ending at 1.
    cumulative: Vec<f64>,
    rng: ChaCha8Rng,
}

fn uniform(rng: &mut ChaCha8Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

impl DataHeavy {
    /// The catalogue of `p` drawn from `seed`, or what is wrong with `p`.
    pub fn new(p: &DataHeavyParams, seed: u64) -> Result<DataHeavy, String> {
        if p.datasets == 0 || p.sites == 0 {
            return Err("a catalogue needs a dataset and a site".into());
        }
        if p.min_bytes == 0 || p.max_bytes < p.min_bytes {
            return Err(format!(
                "dataset sizes {}..{} bytes: need 0 < min <= max",
                p.min_bytes, p.max_bytes
            ));
        }
        if !(p.zipf >= 0.0 && p.zipf.is_finite()) {
            return Err(format!("zipf {}: must be a number >= 0", p.zipf));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (lo, hi) = ((p.min_bytes as f64).ln(), (p.max_bytes as f64).ln());
        let datasets = (0..p.datasets)
            .map(|k| {
                let bytes = (lo + uniform(&mut rng) * (hi - lo)).exp().round() as u64;
                let home = ((uniform(&mut rng) * f64::from(p.sites)) as u32).min(p.sites - 1);
                DataIn {
                    key: format!("d{k}"),
                    bytes: bytes.clamp(p.min_bytes, p.max_bytes),
                    at: vec![ClusterId(home)],
                }
            })
            .collect();
        let weights: Vec<f64> = (0..p.datasets)
            .map(|k| 1.0 / f64::from(k + 1).powf(p.zipf))
            .collect();
        let total: f64 = weights.iter().sum();
        let mut acc = 0.0;
        let cumulative = weights
            .iter()
            .map(|w| {
                acc += w / total;
                acc
            })
            .collect();
        Ok(DataHeavy {
            datasets,
            cumulative,
            rng,
        })
    }

    /// The catalogue.
    pub fn datasets(&self) -> &[DataIn] {
        &self.datasets
    }

    /// `job` reads one dataset, drawn by popularity.
    pub fn attach(&mut self, job: &mut Job) {
        let u = uniform(&mut self.rng);
        let k = self.cumulative.partition_point(|&c| c <= u);
        let d = &self.datasets[k.min(self.datasets.len() - 1)];
        job.stage_in = vec![d.clone()];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> DataHeavyParams {
        DataHeavyParams {
            datasets: 20,
            min_bytes: 1_000_000_000,
            max_bytes: 20_000_000_000,
            sites: 4,
            zipf: 1.0,
        }
    }

    #[test]
    fn a_catalogue_is_seeded_bounded_and_read_by_popularity() {
        let mut a = DataHeavy::new(&params(), 7).unwrap();
        let b = DataHeavy::new(&params(), 7).unwrap();
        assert_eq!(a.datasets(), b.datasets(), "same seed, same catalogue");
        assert!(
            a.datasets()
                .iter()
                .all(|d| (1_000_000_000..=20_000_000_000).contains(&d.bytes) && d.at[0].0 < 4)
        );
        let mut counts = [0u32; 20];
        for id in 0..10_000 {
            let mut j = Job::new(id, 0, 1, 10, 10);
            a.attach(&mut j);
            let k: usize = j.stage_in[0].key[1..].parse().unwrap();
            counts[k] += 1;
        }
        // Zipf 1 over 20: the first is read 1/H(20) = 27.7 % of the time, the last 1.4 %.
        assert!((2_550..3_000).contains(&counts[0]), "{counts:?}");
        assert!(
            counts[19] < 250 && counts[0] > 10 * counts[19],
            "{counts:?}"
        );
    }

    #[test]
    fn a_catalogue_that_cannot_be_made_says_why() {
        let p = DataHeavyParams {
            min_bytes: 0,
            ..params()
        };
        assert!(DataHeavy::new(&p, 1).unwrap_err().contains("0 < min"));
        let p = DataHeavyParams {
            datasets: 0,
            ..params()
        };
        assert!(DataHeavy::new(&p, 1).is_err());
    }
}
