//! The user metrics of Zhang et al. (§2.3, §6.3, §6.6): wait time, response time and bounded
//! slowdown s = max(t_r, Γ) / max(t_e, Γ) with Γ = 10 s, each as mean and standard deviation (the
//! fairness measure), for all jobs and broken down by size (small ≤ 32 processors, large above) and
//! by dedicated run time (short ≤ the median, long above) and by estimate accuracy (the ten
//! classes of Fig. 8: actual / estimate in (i · 10 %, (i + 1) · 10 %]), and utilization eq. (1).

use crate::model::{Duration, Time};

/// One finished job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Arrival.
    pub submit: Time,
    /// First instant it executed.
    pub start: Time,
    /// Finish.
    pub end: Time,
    /// Dedicated run time t_e.
    pub run: Duration,
    /// Its estimate (what the scheduler planned with).
    pub estimate: Duration,
    /// Processors.
    pub procs: u32,
}

impl Outcome {
    /// Bounded slowdown with threshold `gamma`.
    pub fn slowdown(&self, gamma: Duration) -> f64 {
        (self.end - self.submit).max(gamma) as f64 / self.run.max(gamma) as f64
    }
}

/// Mean and (population) standard deviation.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MeanStd {
    /// Mean.
    pub mean: f64,
    /// Standard deviation.
    pub std: f64,
}

impl MeanStd {
    /// Of a list of values (zeros for an empty list).
    pub fn of(v: &[f64]) -> MeanStd {
        if v.is_empty() {
            return MeanStd::default();
        }
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
        MeanStd {
            mean,
            std: var.sqrt(),
        }
    }
}

/// The metrics of one group of jobs.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Group {
    /// Jobs.
    pub jobs: usize,
    /// Wait time t_s − t_a.
    pub wait: MeanStd,
    /// Response time t_f − t_a.
    pub response: MeanStd,
    /// Bounded slowdown.
    pub slowdown: MeanStd,
}

impl Group {
    fn of<'a>(jobs: impl Iterator<Item = &'a Outcome>, gamma: Duration) -> Group {
        let (mut w, mut r, mut s) = (Vec::new(), Vec::new(), Vec::new());
        for j in jobs {
            w.push((j.start - j.submit) as f64);
            r.push((j.end - j.submit) as f64);
            s.push(j.slowdown(gamma));
        }
        Group {
            jobs: w.len(),
            wait: MeanStd::of(&w),
            response: MeanStd::of(&r),
            slowdown: MeanStd::of(&s),
        }
    }
}

/// All jobs and the four groups.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Breakdown {
    /// Every job.
    pub all: Group,
    /// At most `large_above` processors.
    pub small: Group,
    /// More.
    pub large: Group,
    /// Dedicated run time at most the split.
    pub short: Group,
    /// Longer.
    pub long: Group,
    /// The run-time split used (the median, or as given).
    pub split: Duration,
}

/// The paper's threshold Γ of the bounded slowdown, seconds.
pub const GAMMA: Duration = 10;
/// The paper's small/large boundary, processors.
pub const LARGE_ABOVE: u32 = 32;

/// The lower median of the dedicated run times.
pub fn median_run(jobs: &[Outcome]) -> Duration {
    let mut v: Vec<Duration> = jobs.iter().map(|j| j.run).collect();
    v.sort_unstable();
    v.get(v.len().saturating_sub(1) / 2).copied().unwrap_or(0)
}

/// The breakdown of `jobs` with threshold `gamma`, size boundary `large_above` and run-time split
/// `split` (the median when `None`).
pub fn breakdown(
    jobs: &[Outcome],
    gamma: Duration,
    large_above: u32,
    split: Option<Duration>,
) -> Breakdown {
    let split = split.unwrap_or_else(|| median_run(jobs));
    Breakdown {
        all: Group::of(jobs.iter(), gamma),
        small: Group::of(jobs.iter().filter(|j| j.procs <= large_above), gamma),
        large: Group::of(jobs.iter().filter(|j| j.procs > large_above), gamma),
        short: Group::of(jobs.iter().filter(|j| j.run <= split), gamma),
        long: Group::of(jobs.iter().filter(|j| j.run > split), gamma),
        split,
    }
}

/// Estimate-accuracy classes of Fig. 8 under the Φ model: class `i` holds the jobs whose actual
/// run time is in (i · 10 %, (i + 1) · 10 %] of their estimate (class 9, the best estimators,
/// includes the exact ones); a job of no run time is in class 0.
pub const ACCURACY_CLASSES: usize = 10;

/// The accuracy class of a job of run time `run` and estimate `estimate` (exact integer
/// arithmetic: ⌈10 · run / estimate⌉ − 1, clamped to 0..=9).
pub fn accuracy_class(run: Duration, estimate: Duration) -> usize {
    if run <= 0 || estimate <= 0 {
        return 0;
    }
    let c = (10 * i128::from(run) + i128::from(estimate) - 1) / i128::from(estimate) - 1;
    c.clamp(0, ACCURACY_CLASSES as i128 - 1) as usize
}

/// The ten accuracy classes of `jobs`, worst estimators first.
pub fn by_accuracy(jobs: &[Outcome], gamma: Duration) -> [Group; ACCURACY_CLASSES] {
    std::array::from_fn(|i| {
        Group::of(
            jobs.iter()
                .filter(|j| accuracy_class(j.run, j.estimate) == i),
            gamma,
        )
    })
}

/// Utilization, eq. (1): Σ n_i t_e,i / (N · t_f of the last job), the first job arriving at 0.
pub fn utilization(jobs: &[Outcome], procs: u32) -> f64 {
    let t_f = jobs.iter().map(|j| j.end).max().unwrap_or(0);
    let work: f64 = jobs.iter().map(|j| f64::from(j.procs) * j.run as f64).sum();
    work / (f64::from(procs) * t_f.max(1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn breakdown_of_three_jobs() {
        let jobs = [
            Outcome {
                submit: 0,
                start: 0,
                end: 5,
                run: 5,
                estimate: 50,
                procs: 1,
            },
            Outcome {
                submit: 0,
                start: 100,
                end: 200,
                run: 100,
                estimate: 100,
                procs: 64,
            },
            Outcome {
                submit: 50,
                start: 50,
                end: 450,
                run: 200,
                estimate: 210,
                procs: 32,
            },
        ];
        // Slowdowns: max(5,10)/max(5,10) = 1; 200/100 = 2; 400/200 = 2.
        let b = breakdown(&jobs, GAMMA, LARGE_ABOVE, None);
        assert_eq!(b.split, 100);
        assert_eq!(b.all.jobs, 3);
        assert!((b.all.slowdown.mean - 5.0 / 3.0).abs() < 1e-12);
        assert_eq!(b.all.wait.mean, 100.0 / 3.0);
        assert_eq!((b.small.jobs, b.large.jobs), (2, 1));
        assert_eq!(b.large.slowdown.mean, 2.0);
        assert_eq!((b.short.jobs, b.long.jobs), (2, 1));
        assert_eq!(b.short.slowdown.mean, 1.5);
        assert_eq!(b.short.slowdown.std, 0.5);
        // ρ = (5 + 6400 + 6400) / (100 · 450).
        assert!((utilization(&jobs, 100) - 12_805.0 / 45_000.0).abs() < 1e-12);
        // Accuracy 10 %, 100 % and 95 %: classes 0, 9 and 9.
        let c = by_accuracy(&jobs, GAMMA);
        assert_eq!(c.map(|g| g.jobs), [1, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        assert_eq!(c[9].wait.mean, 50.0);
    }

    #[test]
    fn accuracy_classes_are_the_open_closed_tenths() {
        assert_eq!(accuracy_class(1, 10), 0, "10 % is the top of class 0");
        assert_eq!(accuracy_class(11, 100), 1, "11 % is in (10, 20]");
        assert_eq!(accuracy_class(20, 100), 1);
        assert_eq!(accuracy_class(21, 100), 2);
        assert_eq!(accuracy_class(90, 100), 8, "90 % is the top of class 8");
        assert_eq!(accuracy_class(91, 100), 9);
        assert_eq!(accuracy_class(100, 100), 9);
        assert_eq!(accuracy_class(0, 100), 0);
        assert_eq!(accuracy_class(150, 100), 9, "an overrun counts as exact");
        for run in 1..=1000 {
            let exact = (run as f64 / 1000.0 * 10.0).ceil() as usize - 1;
            assert_eq!(accuracy_class(run, 1000), exact.min(9), "{run}");
        }
    }
}
