//! The shrinking factor of `self-tuning-and-multisite.md` §5.5: raise the load of a workload by
//! multiplying every submit time, measured from the first job's submit time, by a factor
//! f (< 1 to compress), rounding down. Job shapes are unchanged; a deadline moves with its job's
//! submit time (same slack). Works as an iterator adapter over `Job`s or `Result<Job, _>`s.
//!
//! Rounding down is done on the exact product; a product within 1e-9 (relative) of an integer
//! counts as that integer, so that e.g. 10 × 0.7 gives 7, not 6 through binary rounding.

use crate::error::WorkloadError;
use gridsched_core::model::{Job, Time};

/// Items a [`Shrink`] can rewrite: a job, or a result holding one (errors pass through).
pub trait JobItem {
    /// The job inside, if any.
    fn job_mut(&mut self) -> Option<&mut Job>;
}

impl JobItem for Job {
    fn job_mut(&mut self) -> Option<&mut Job> {
        Some(self)
    }
}

impl<E> JobItem for Result<Job, E> {
    fn job_mut(&mut self) -> Option<&mut Job> {
        self.as_mut().ok()
    }
}

/// The iterator adapter; see the module documentation.
#[derive(Clone, Debug)]
pub struct Shrink<I> {
    inner: I,
    factor: f64,
    origin: Option<Time>,
}

impl<I> Shrink<I> {
    /// Shrinks the submit times of `inner` by `factor` (finite, ≥ 0; 0 submits everything at
    /// the first job's time).
    pub fn new(inner: I, factor: f64) -> Result<Self, WorkloadError> {
        if !(factor.is_finite() && factor >= 0.0) {
            return Err(WorkloadError::Options(format!(
                "shrinking factor must be a finite number >= 0, got {factor}"
            )));
        }
        Ok(Shrink {
            inner,
            factor,
            origin: None,
        })
    }

    /// The factor.
    pub fn factor(&self) -> f64 {
        self.factor
    }
}

/// `origin + floor((t − origin) × f)`, clamped at 0.
pub fn shrink_time(t: Time, origin: Time, factor: f64) -> Time {
    let x = (t - origin) as f64 * factor;
    let r = x.round();
    let scaled = if (x - r).abs() <= 1e-9 * r.abs().max(1.0) {
        r
    } else {
        x.floor()
    };
    (origin.saturating_add(scaled as i64)).max(0)
}

impl<I> Iterator for Shrink<I>
where
    I: Iterator,
    I::Item: JobItem,
{
    type Item = I::Item;

    fn next(&mut self) -> Option<I::Item> {
        let mut item = self.inner.next()?;
        if let Some(job) = item.job_mut() {
            let origin = *self.origin.get_or_insert(job.submit);
            let new_submit = shrink_time(job.submit, origin, self.factor);
            if let Some(d) = job.deadline.as_mut() {
                *d = d.saturating_add(new_submit - job.submit);
            }
            job.submit = new_submit;
        }
        Some(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

/// `.shrink(f)` on any iterator of jobs.
pub trait ShrinkExt: Iterator + Sized {
    /// See [`Shrink::new`].
    fn shrink(self, factor: f64) -> Result<Shrink<Self>, WorkloadError> {
        Shrink::new(self, factor)
    }
}

impl<I: Iterator> ShrinkExt for I where I::Item: JobItem {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn submits_shrink_from_the_first_job() {
        let jobs = vec![
            Job::new(1, 100, 1, 10, 10),
            Job::new(2, 110, 1, 10, 10),
            Job::new(3, 115, 1, 10, 10),
            Job::new(4, 1100, 1, 10, 10),
        ];
        let out: Vec<Time> = jobs
            .clone()
            .into_iter()
            .shrink(0.7)
            .unwrap()
            .map(|j| j.submit)
            .collect();
        // 10 × 0.7 = 7 exactly; 15 × 0.7 = 10.5 → 10; 1000 × 0.7 = 700.
        assert_eq!(out, vec![100, 107, 110, 800]);
        let all_at_once: Vec<Time> = jobs
            .clone()
            .into_iter()
            .shrink(0.0)
            .unwrap()
            .map(|j| j.submit)
            .collect();
        assert_eq!(all_at_once, vec![100; 4]);
        let same: Vec<Job> = jobs.clone().into_iter().shrink(1.0).unwrap().collect();
        assert_eq!(same, jobs);
    }

    #[test]
    fn results_and_deadlines() {
        let mut j = Job::new(2, 200, 1, 10, 10);
        j.deadline = Some(250);
        let items: Vec<Result<Job, String>> =
            vec![Ok(Job::new(1, 0, 1, 10, 10)), Err("bad line".into()), Ok(j)];
        let out: Vec<_> = items.into_iter().shrink(0.5).unwrap().collect();
        assert_eq!(out[1], Err("bad line".to_owned()));
        let j = out[2].as_ref().unwrap();
        assert_eq!((j.submit, j.deadline), (100, Some(150)));
        assert!(Shrink::new(std::iter::empty::<Job>(), -0.1).is_err());
        assert!(Shrink::new(std::iter::empty::<Job>(), f64::INFINITY).is_err());
    }

    #[test]
    fn rounding_down_is_exact() {
        for f in [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3] {
            for d in 0..2000i64 {
                let want = (d * (f * 10.0_f64).round() as i64).div_euclid(10);
                assert_eq!(shrink_time(d, 0, f), want, "d={d} f={f}");
            }
        }
    }
}
