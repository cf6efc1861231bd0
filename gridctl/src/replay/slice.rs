//! The jobs of a replay: a slice of a workload trace (SWF with the reference normalisation of
//! `reference-semantics.md`, or JSON Lines with classes, deadlines and licences), its times
//! multiplied by a time scale and rounded to whole seconds, renumbered from 1 in submission order.
//!
//! Rounding (all in integers, so that the same slice always gives the same jobs): a submission
//! offset from the slice's first job rounds down, which keeps the order; run times, estimates and
//! deadline margins round up, so a job never gets less time than its scaled share and an estimate
//! that covered its run still does. An estimate is at least 1 s; a job without a recorded run time
//! runs for its estimate.

use gridsched_core::model::{Duration, Job, JobId, Time};
use gridsched_workload::{JobSource, NormalizeOptions};
use std::fmt;
use std::path::Path;
use std::str::FromStr;

/// A factor applied to a trace's times, as an exact fraction: `0.01` or `1/100` replays a day in
/// 864 s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeScale {
    num: u64,
    den: u64,
}

impl TimeScale {
    /// `d` scaled, rounded down.
    pub fn floor(self, d: Duration) -> Duration {
        let v = i128::from(d) * i128::from(self.num);
        v.div_euclid(i128::from(self.den)) as Duration
    }

    /// `d` scaled, rounded up.
    pub fn ceil(self, d: Duration) -> Duration {
        let v = i128::from(d) * i128::from(self.num);
        let den = i128::from(self.den);
        (v.div_euclid(den) + i128::from(v.rem_euclid(den) != 0)) as Duration
    }

    /// A replay duration back in trace seconds.
    pub fn to_trace(self, replay_s: f64) -> f64 {
        replay_s * self.den as f64 / self.num as f64
    }
}

impl fmt::Display for TimeScale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.den == 1 {
            write!(f, "{}", self.num)
        } else {
            write!(f, "{}/{}", self.num, self.den)
        }
    }
}

impl FromStr for TimeScale {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("`{s}`: a positive number such as 0.01 or a fraction such as 1/60");
        let digits = |t: &str| -> Result<u64, String> {
            if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) || t.len() > 12 {
                return Err(bad());
            }
            t.parse().map_err(|_| bad())
        };
        let (num, den) = match s.split_once('/') {
            Some((n, d)) => (digits(n)?, digits(d)?),
            None => match s.split_once('.') {
                Some((i, frac)) => {
                    let i = if i.is_empty() { "0" } else { i };
                    let den = 10u64.pow(u32::try_from(frac.len()).map_err(|_| bad())?);
                    (digits(i)? * den + digits(frac)?, den)
                }
                None => (digits(s)?, 1),
            },
        };
        if num == 0 || den == 0 {
            return Err(bad());
        }
        let g = gcd(num, den);
        Ok(TimeScale {
            num: num / g,
            den: den / g,
        })
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The scaled jobs of a replay.
#[derive(Clone, Debug, PartialEq)]
pub struct Slice {
    /// The jobs, ids 1..=n in submission order, the first submitted at 0, times scaled.
    pub jobs: Vec<Job>,
    /// Each job's id in the trace.
    pub trace_ids: Vec<JobId>,
    /// The trace's licence names (JSON Lines), indexed by the jobs' licence ids.
    pub licence_names: Vec<String>,
    /// Lines skipped as unreadable.
    pub bad_lines: u64,
    /// The trace time of the slice's first submission: replay second 0.
    pub origin: Time,
}

/// Reads jobs `skip..skip + count` of `path` and scales them.
pub fn read(
    path: &Path,
    skip: usize,
    count: usize,
    scale: TimeScale,
    skip_bad_lines: bool,
) -> anyhow::Result<Slice> {
    let mut source =
        JobSource::open(path, None, NormalizeOptions::default())?.skip_bad_lines(skip_bad_lines);
    let mut raw = Vec::with_capacity(count);
    for job in source.by_ref().skip(skip).take(count) {
        raw.push(job?);
    }
    if raw.is_empty() {
        anyhow::bail!(
            "{}: no job after skipping {skip} (--skip too large?)",
            path.display()
        );
    }
    let mut slice = scale_jobs(raw, scale);
    slice.licence_names = source.licence_names().to_vec();
    slice.bad_lines = source.skipped();
    Ok(slice)
}

/// Renumbers and scales `raw` (in submission order).
pub fn scale_jobs(raw: Vec<Job>, scale: TimeScale) -> Slice {
    let first = raw.first().map_or(0, |j| j.submit);
    let mut jobs = Vec::with_capacity(raw.len());
    let mut trace_ids = Vec::with_capacity(raw.len());
    for (i, mut j) in raw.into_iter().enumerate() {
        trace_ids.push(j.id);
        let submit = scale.floor(j.submit - first);
        let run = scale.ceil(j.runtime.unwrap_or(j.estimate).max(0));
        j.deadline = j
            .deadline
            .map(|d| submit + scale.ceil((d - j.submit).max(0)));
        j.id = JobId(i as u64 + 1);
        j.submit = submit;
        j.estimate = scale.ceil(j.estimate).max(1);
        j.runtime = Some(run);
        // The home partition of a trace job names a machine of the trace's own system.
        j.partition = None;
        jobs.push(j);
    }
    Slice {
        jobs,
        trace_ids,
        origin: first,
        licence_names: Vec::new(),
        bad_lines: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_scales_parse_exactly() {
        let s: TimeScale = "0.01".parse().unwrap();
        assert_eq!(s, TimeScale { num: 1, den: 100 });
        assert_eq!("1/100".parse::<TimeScale>().unwrap(), s);
        assert_eq!("2/4".parse::<TimeScale>().unwrap().to_string(), "1/2");
        assert_eq!(
            "3".parse::<TimeScale>().unwrap(),
            TimeScale { num: 3, den: 1 }
        );
        assert_eq!(".5".parse::<TimeScale>().unwrap().to_string(), "1/2");
        // 100 × 0.01 is exactly 1 (no floating-point 1.0000000000000002 rounding up to 2).
        assert_eq!((s.floor(100), s.ceil(100)), (1, 1));
        assert_eq!((s.floor(150), s.ceil(150)), (1, 2));
        assert_eq!((s.floor(0), s.ceil(0)), (0, 0));
        for bad in ["0", "0.0", "-1", "1/0", "x", "", "1e3", "1.2.3"] {
            let e = bad.parse::<TimeScale>().unwrap_err();
            assert!(e.contains("positive number"), "{bad}: {e}");
        }
    }

    #[test]
    fn jobs_are_renumbered_and_scaled_with_documented_rounding() {
        let mut a = Job::new(70, 1000, 4, 3600, 1801);
        a.deadline = Some(1000 + 7201);
        a.partition = Some(3);
        let b = Job::new(71, 1099, 2, 50, 0);
        let mut c = Job::new(75, 1100, 1, 10, 10);
        c.runtime = None;
        let s = scale_jobs(vec![a, b, c], "0.01".parse().unwrap());
        assert_eq!(s.trace_ids, vec![JobId(70), JobId(71), JobId(75)]);
        let got: Vec<_> = s
            .jobs
            .iter()
            .map(|j| {
                (
                    j.id.0,
                    j.submit,
                    j.estimate,
                    j.runtime,
                    j.deadline,
                    j.partition,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (1, 0, 36, Some(19), Some(73), None),
                (2, 0, 1, Some(0), None, None),
                (3, 1, 1, Some(1), None, None),
            ]
        );
    }
}
