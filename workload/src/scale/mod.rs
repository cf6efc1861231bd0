//! Ernemann's scaling of a job stream from its original machine size to a larger one
//! (`gang-urgent-scaling.md` Part C, C.6), and the wide-job splitting of the grid workloads
//! (`self-tuning-and-multisite.md` §6.6, modifications 1–4, in [`split`]), with the proportional
//! width resizing the grid study applies to traces from other machine sizes (in [`resize`]).
//! The choice rule of stage 4's search for the adjusted factor is in [`calibrate`].
//!
//! Every job of the original stream, in order, is either **enlarged** (one job, size
//! g(procs), see [`factors`]) or **duplicated** (k identical copies, same submit time): with
//! p uniform in [0, 100), the job is enlarged iff p > d (so P(duplicate) = d/100, G-C2).
//! [`Method::Widths`] enlarges every job (d = 0), [`Method::Copies`] duplicates every job
//! (d = 100), [`Method::Decision`] uses the decision value d. Run times and estimates never
//! change (G-C9); copies keep the submit time, so the output stays sorted by submit time, ties
//! in original order then copy index, and gets sequential ids from 1 (G-C8).
//!
//! Random stream (documented so scaled traces are reproducible): one `ChaCha8Rng` seeded with
//! `seed`; for every original job exactly two uniforms are drawn, p then p1, each made from the
//! high 53 bits of one `next_u64` and multiplied by 100 — whatever the method, so that runs
//! with different d but the same seed are coupled job by job.
//!
//! Total work: enlarging and duplicating both multiply a job's area by ≈ f, so the scaled
//! squashed area is ≈ f × the original (exactly f × for an integer f without capping, C.9 #3),
//! i.e. the work relative to the machine size is preserved.

pub mod calibrate;
pub mod factors;
pub mod resize;
pub mod split;
#[cfg(test)]
mod tests;

pub use calibrate::{FactorSearch, Outcome, Row, Scan};
pub use factors::{
    Calibration, Stage, adjusted_factor, precise_factor, round_half_up, table1_integer_factor,
};
pub use resize::{rebase, resize_widths, resized};
pub use split::{Modification, SplitJob, split_homed, split_job, split_workload};

use crate::error::WorkloadError;
use gridsched_core::model::{Job, JobId};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// How each job is transformed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Method {
    /// Duplicate every job (more, unchanged jobs).
    Copies,
    /// Enlarge every job (same number of wider jobs).
    Widths,
    /// Per job: duplicate with probability d/100, otherwise enlarge (d ∈ [0, 100]).
    Decision(f64),
}

/// Everything a scaling needs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScaleOptions {
    /// Size of the target machine (1024 in Part C); enlarged jobs are capped at it.
    pub target: u32,
    /// Factors (stage of C.6).
    pub stage: Stage,
    /// Copies, widths or the decision value.
    pub method: Method,
    /// Seed of the random stream.
    pub seed: u64,
}

impl ScaleOptions {
    /// Stage 3 of C.6 (precise factor f* = target / original for sizes and copies) with the
    /// given method.
    pub fn precise(
        original: u32,
        target: u32,
        method: Method,
        seed: u64,
    ) -> Result<Self, WorkloadError> {
        let f = precise_factor(original, target)?;
        Ok(ScaleOptions {
            target,
            stage: Stage::Precise(f),
            method,
            seed,
        })
    }

    /// Checks the options.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        self.stage.validate()?;
        if self.target == 0 {
            return Err(WorkloadError::Options(
                "scaling: target size must be positive".into(),
            ));
        }
        if let Method::Decision(d) = self.method
            && !(d.is_finite() && (0.0..=100.0).contains(&d))
        {
            return Err(WorkloadError::Options(format!(
                "scaling: decision value d must be in [0, 100], got {d}"
            )));
        }
        Ok(())
    }

    /// Expected number of jobs for `n` original jobs: N · [(1 − d/100) + (d/100) · mean copies]
    /// (C.6, C.9 #4).
    pub fn expected_jobs(&self, n: u64) -> f64 {
        let d = match self.method {
            Method::Copies => 100.0,
            Method::Widths => 0.0,
            Method::Decision(d) => d,
        };
        n as f64 * ((1.0 - d / 100.0) + d / 100.0 * self.stage.mean_copies())
    }
}

/// One job of a scaled stream with its provenance.
#[derive(Clone, Debug, PartialEq)]
pub struct Scaled {
    /// The new job (sequential id).
    pub job: Job,
    /// Id of the original job.
    pub original: JobId,
    /// Copy index (0 for an enlarged job or the first copy).
    pub copy: u32,
    /// Whether the job was enlarged (rather than duplicated).
    pub enlarged: bool,
}

/// The scaling as an iterator adapter over original jobs; see the module documentation.
#[derive(Clone, Debug)]
pub struct Scale<I> {
    inner: I,
    opts: ScaleOptions,
    rng: ChaCha8Rng,
    next_id: u64,
    pending: Option<(Job, u32, u32)>,
}

fn uniform100(rng: &mut ChaCha8Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (100.0 / (1u64 << 53) as f64)
}

impl<I: Iterator<Item = Job>> Scale<I> {
    /// Scales `inner` with `opts` (validated).
    pub fn new(inner: I, opts: ScaleOptions) -> Result<Self, WorkloadError> {
        opts.validate()?;
        Ok(Scale {
            inner,
            opts,
            rng: ChaCha8Rng::seed_from_u64(opts.seed),
            next_id: 1,
            pending: None,
        })
    }

    fn emit(&mut self, mut job: Job, original: JobId, copy: u32, enlarged: bool) -> Scaled {
        job.id = JobId(self.next_id);
        self.next_id += 1;
        Scaled {
            job,
            original,
            copy,
            enlarged,
        }
    }
}

impl<I: Iterator<Item = Job>> Iterator for Scale<I> {
    type Item = Scaled;

    fn next(&mut self) -> Option<Scaled> {
        if let Some((job, copy, k)) = self.pending.take() {
            let original = job.id;
            if copy + 1 < k {
                self.pending = Some((job.clone(), copy + 1, k));
            }
            return Some(self.emit(job, original, copy, false));
        }
        let mut job = self.inner.next()?;
        let p = uniform100(&mut self.rng);
        let p1 = uniform100(&mut self.rng);
        let duplicate = match self.opts.method {
            Method::Copies => true,
            Method::Widths => false,
            Method::Decision(d) => p <= d,
        };
        let original = job.id;
        if duplicate {
            let k = self.opts.stage.copies(p1);
            if k > 1 {
                self.pending = Some((job.clone(), 1, k));
            }
            Some(self.emit(job, original, 0, false))
        } else {
            job.procs = self.opts.stage.enlarge(job.procs, self.opts.target);
            Some(self.emit(job, original, 0, true))
        }
    }
}

/// Adds `.scale(opts)` to job iterators.
pub trait ScaleExt: Iterator<Item = Job> + Sized {
    /// See [`Scale`].
    fn scale(self, opts: ScaleOptions) -> Result<Scale<Self>, WorkloadError> {
        Scale::new(self, opts)
    }
}

impl<I: Iterator<Item = Job>> ScaleExt for I {}

/// Scales a job list (the jobs only, without provenance).
pub fn scale_jobs(jobs: Vec<Job>, opts: ScaleOptions) -> Result<Vec<Job>, WorkloadError> {
    Ok(Scale::new(jobs.into_iter(), opts)?.map(|s| s.job).collect())
}

/// Jobs, squashed area and widest job of a workload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Summary {
    /// Number of jobs.
    pub jobs: u64,
    /// Σ procs × run time (the estimate when no run time is known), processor-seconds (C.4 eq. 4).
    pub area: u128,
    /// Widest job.
    pub max_procs: u32,
}

impl Summary {
    /// Adds one job.
    pub fn add(&mut self, job: &Job) {
        self.jobs += 1;
        let run = job.runtime.unwrap_or(job.estimate).max(0) as u128;
        self.area += u128::from(job.procs) * run;
        self.max_procs = self.max_procs.max(job.procs);
    }

    /// The summary of `jobs`.
    pub fn of<'a>(jobs: impl IntoIterator<Item = &'a Job>) -> Summary {
        let mut s = Summary::default();
        for j in jobs {
            s.add(j);
        }
        s
    }
}
