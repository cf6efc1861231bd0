//! Turning SWF records into [`Job`]s for a machine of `P` processors: the reference (`pyss`)
//! input rules of `reference-semantics.md` ("Input rules of the reference mode") as the default,
//! the pre-processing rules of `self-tuning-and-multisite.md` §5.3 as the `streit` mode, and the
//! knobs listed at the end of `reference-semantics.md` (run to completion, requested processors,
//! perfect or scaled estimates, rejecting wide jobs, whole-node allocation).
//!
//! # `pyss` mode (default)
//!
//! A job is *problematic* if its run time ≤ 0, its processors ≤ 0 or its submit time < 0; it is
//! kept as a 1-second job: estimate = 1, actual = 1, processors = max(1, processors),
//! submit = max(submit, 1). Otherwise, with the default knobs:
//!
//! * estimate = trunc(max(requested time, run time, 1))
//! * actual = trunc(max(min(requested time, run time), 1)) (killed at the estimate; a job with
//!   requested time −1 therefore runs 1 s)
//! * processors = max(min(allocated processors, P), 1)
//!
//! where trunc truncates the float towards zero *after* the min/max.
//!
//! Processors of problematic jobs are capped at `P` as well. The reference does not cap them, so
//! it would never start such a job and its simulation would stall; we cap instead, and count
//! these jobs in [`NormalizeStats::problematic_capped`] so that a report can say whether the
//! difference matters (it is 0 for the shared traces at `P` = MaxProcs).
//!
//! # `streit` mode (§5.3)
//!
//! A job is dropped (and counted) if its submit time is earlier than the previous *kept* job's
//! (or negative), its width ≤ 0 or > `P` (whatever `wide_jobs` says; the width is checked after
//! rounding up to whole nodes), or its actual or estimated run time is negative. Then
//! actual := min(actual, estimate) (unless `run_to_completion`), both are truncated to whole
//! seconds, and a job whose actual (or estimated) run time is then 0 is dropped (ambiguity 26:
//! truncation before the zero check).
//!
//! # Knobs
//!
//! * `procs_field = requested`: the width is field 8, or field 5 when field 8 ≤ 0; the
//!   problematic-job test then looks at this width too.
//! * `runtime_limit = run_to_completion`: actual = trunc(max(run time, 1)); estimate =
//!   max(trunc(requested time), 1) when requested time > 0, else the actual run time. A job may
//!   run past its estimate.
//! * `estimates = perfect`: estimate := actual; `estimates = {multiple: f}`:
//!   estimate := max(ceil(actual × f), 1) with actual = trunc(max(run time, 1)) (pyss) or
//!   trunc(run time) (streit); when killing at the estimate the actual run is then
//!   min(actual, estimate).
//! * `wide_jobs = reject`: a job wider than `P` is dropped instead of capped.
//! * `node_size = k > 1`: the width is rounded up to a multiple of `k` before capping.
//! * `dependencies = true`: fields 17–18 become a dependency. A job whose preceding job (field 17)
//!   was read earlier and kept waits for it to end (`afterany`), then for its think time (field
//!   18, at least 0) — the SWF's "the job is submitted that long after its preceding job
//!   terminated", the submission taken as the moment the grid may dispatch it. A preceding job
//!   not read (before the stream's start, or dropped) is no dependency. Off by default: the
//!   shared traces set neither field, and the single-machine replay refuses such jobs.
//!
//! Other fields: user = field 12 (negative → 0), partition = field 16 when ≥ 0, memory_kb =
//! field 10 when > 0 (SWF gives it in KB per processor), id = field 1.

use super::record::SwfRecord;
use crate::error::WorkloadError;
use gridsched_core::model::{Condition, Dependency, Job, JobId, Term, UserId};
use serde::{Deserialize, Serialize};

/// Which rule set turns records into jobs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NormalizeMode {
    /// The reference simulator's rules (problematic jobs kept as 1 s jobs).
    #[default]
    Pyss,
    /// Streit's pre-processing (§5.3): bad jobs are dropped.
    Streit,
}

/// Which SWF field gives a job's width.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProcsField {
    /// Field 5, allocated processors (reference).
    #[default]
    Allocated,
    /// Field 8, requested processors; field 5 when field 8 ≤ 0.
    Requested,
}

/// What happens to a job that runs longer than its estimate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuntimeLimit {
    /// It is killed at the estimate (reference).
    #[default]
    KillAtEstimate,
    /// It runs to completion (overruns are left to the simulator).
    RunToCompletion,
}

/// Where estimates come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Estimates {
    /// The user's requested time, field 9 (reference).
    #[default]
    Requested,
    /// The actual run time (perfect estimates).
    Perfect,
    /// `ceil(actual × f)`, at least 1.
    Multiple(f64),
}

/// What happens to a job wider than the machine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WideJobs {
    /// Its processors are capped at `P` (reference).
    #[default]
    Cap,
    /// It is dropped and counted.
    Reject,
}

/// How to turn SWF records into jobs. `Default` is the reference (`pyss`) mode.
///
/// In a configuration file: `{"mode": "streit", "procs_field": "requested", "runtime_limit":
/// "run_to_completion", "estimates": {"multiple": 2.0}, "wide_jobs": "reject", "node_size": 8}`;
/// every key is optional and unknown keys are an error.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NormalizeOptions {
    /// Rule set.
    pub mode: NormalizeMode,
    /// Width field.
    pub procs_field: ProcsField,
    /// Overrun behaviour.
    pub runtime_limit: RuntimeLimit,
    /// Estimate source.
    pub estimates: Estimates,
    /// Jobs wider than the machine (pyss mode; streit always drops them).
    pub wide_jobs: WideJobs,
    /// Processors per node; widths are rounded up to a multiple of it (1 = no rounding).
    pub node_size: u32,
    /// Fields 17–18 as a dependency: `afterany` on the preceding job, delayed by the think time.
    pub dependencies: bool,
}

impl Default for NormalizeOptions {
    fn default() -> Self {
        NormalizeOptions {
            mode: NormalizeMode::Pyss,
            procs_field: ProcsField::Allocated,
            runtime_limit: RuntimeLimit::KillAtEstimate,
            estimates: Estimates::Requested,
            wide_jobs: WideJobs::Cap,
            node_size: 1,
            dependencies: false,
        }
    }
}

impl NormalizeOptions {
    /// The Streit (§5.3) mode with otherwise default knobs.
    pub fn streit() -> Self {
        NormalizeOptions {
            mode: NormalizeMode::Streit,
            ..NormalizeOptions::default()
        }
    }

    /// Checks the values: `node_size` ≥ 1 and a finite positive estimate multiple.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        if self.node_size == 0 {
            return Err(WorkloadError::Options(
                "node_size must be at least 1".into(),
            ));
        }
        if let Estimates::Multiple(f) = self.estimates
            && !(f.is_finite() && f > 0.0)
        {
            return Err(WorkloadError::Options(format!(
                "estimates multiple must be a positive number, got {f}"
            )));
        }
        Ok(())
    }
}

/// What the normalizer did, job by job.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct NormalizeStats {
    /// Records seen.
    pub records: u64,
    /// Jobs produced.
    pub jobs: u64,
    /// pyss: problematic jobs kept as 1-second jobs.
    pub problematic: u64,
    /// pyss: problematic jobs whose processors were capped at `P` (the reference would leave
    /// them wider than the machine, never to start).
    pub problematic_capped: u64,
    /// Jobs whose processors were capped at `P` (problematic ones included).
    pub capped: u64,
    /// Jobs whose width was rounded up to whole nodes.
    pub node_rounded: u64,
    /// pyss with `wide_jobs = reject`: jobs dropped for being wider than `P`.
    pub dropped_wide: u64,
    /// streit: jobs dropped for a submit time earlier than the previous kept job's.
    pub dropped_unsorted: u64,
    /// streit: jobs dropped for a negative submit time.
    pub dropped_negative_submit: u64,
    /// streit: jobs dropped for a width ≤ 0 or > `P`.
    pub dropped_width: u64,
    /// streit: jobs dropped for a negative actual or estimated run time.
    pub dropped_negative_time: u64,
    /// streit: jobs dropped for a zero actual (or estimated) run time after truncation.
    pub dropped_zero_runtime: u64,
    /// With `dependencies`: jobs given their preceding job as a dependency.
    #[serde(skip_serializing_if = "is_zero")]
    pub dependent: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl NormalizeStats {
    /// All dropped jobs.
    pub fn dropped(&self) -> u64 {
        self.dropped_wide
            + self.dropped_unsorted
            + self.dropped_negative_submit
            + self.dropped_width
            + self.dropped_negative_time
            + self.dropped_zero_runtime
    }
}

/// Turns records into jobs for one machine size and counts what it does.
#[derive(Clone, Debug)]
pub struct Normalizer {
    procs: u32,
    options: NormalizeOptions,
    stats: NormalizeStats,
    last_submit: Option<i64>,
    file: String,
    /// With `dependencies`: the ids of the jobs kept so far.
    kept: rustc_hash::FxHashSet<u64>,
}

/// Truncates towards zero, saturating at the `i64` range.
fn trunc(x: f64) -> i64 {
    x.trunc() as i64
}

impl Normalizer {
    /// A normalizer for a machine of `procs` processors.
    pub fn new(procs: u32, options: NormalizeOptions) -> Result<Self, WorkloadError> {
        if procs == 0 {
            return Err(WorkloadError::Options(
                "the machine needs at least one processor".into(),
            ));
        }
        options.validate()?;
        Ok(Normalizer {
            procs,
            options,
            stats: NormalizeStats::default(),
            last_submit: None,
            file: "<swf>".to_owned(),
            kept: rustc_hash::FxHashSet::default(),
        })
    }

    /// Sets the file name used in errors.
    pub fn with_file_name(mut self, name: impl Into<String>) -> Self {
        self.file = name.into();
        self
    }

    /// The machine size.
    pub fn procs(&self) -> u32 {
        self.procs
    }

    /// The options.
    pub fn options(&self) -> &NormalizeOptions {
        &self.options
    }

    /// The counters so far.
    pub fn stats(&self) -> &NormalizeStats {
        &self.stats
    }

    /// The job for `rec`, or `None` when the rules drop it. Fails only when a field that goes
    /// into the job does not fit its type (a user id or partition beyond `u32`).
    pub fn normalize(&mut self, rec: &SwfRecord) -> Result<Option<Job>, WorkloadError> {
        self.stats.records += 1;
        let job = match self.options.mode {
            NormalizeMode::Pyss => self.pyss(rec),
            NormalizeMode::Streit => self.streit(rec),
        };
        let Some(mut job) = job else {
            return Ok(None);
        };
        self.fill_attributes(&mut job, rec)?;
        if self.options.dependencies {
            let before = u64::try_from(rec.preceding_job).unwrap_or(0);
            if before != job.id.0 && self.kept.contains(&before) {
                job.after = Some(Box::new(Dependency {
                    terms: vec![Term {
                        on: Condition::Any,
                        job: JobId(before),
                        delay: rec.think_time.max(0),
                        ended: None,
                    }],
                    ..Dependency::default()
                }));
                self.stats.dependent += 1;
            }
            self.kept.insert(job.id.0);
        }
        self.stats.jobs += 1;
        Ok(Some(job))
    }

    /// The width field chosen by `procs_field`.
    fn width(&self, rec: &SwfRecord) -> i64 {
        match self.options.procs_field {
            ProcsField::Allocated => rec.allocated_procs,
            ProcsField::Requested if rec.requested_procs > 0 => rec.requested_procs,
            ProcsField::Requested => rec.allocated_procs,
        }
    }

    /// Rounds a positive width up to whole nodes.
    fn round_to_nodes(&mut self, width: i64) -> i64 {
        let k = u64::from(self.options.node_size);
        if k <= 1 || width <= 0 {
            return width;
        }
        let w = width.unsigned_abs();
        let rounded = w.div_ceil(k).saturating_mul(k);
        let rounded = i64::try_from(rounded).unwrap_or(i64::MAX);
        if rounded != width {
            self.stats.node_rounded += 1;
        }
        rounded
    }

    /// Rounds to nodes, then caps at `P` or rejects; `None` = rejected.
    fn fit_procs(&mut self, width: i64, problematic: bool) -> Option<u32> {
        let width = self.round_to_nodes(width.max(1));
        let p = i64::from(self.procs);
        if width <= p {
            return u32::try_from(width).ok();
        }
        match self.options.wide_jobs {
            WideJobs::Cap => {
                self.stats.capped += 1;
                if problematic {
                    self.stats.problematic_capped += 1;
                }
                Some(self.procs)
            }
            WideJobs::Reject => {
                self.stats.dropped_wide += 1;
                None
            }
        }
    }

    fn pyss(&mut self, rec: &SwfRecord) -> Option<Job> {
        let width = self.width(rec);
        if rec.run_time <= 0.0 || width <= 0 || rec.submit_time < 0 {
            self.stats.problematic += 1;
            let procs = self.fit_procs(width.max(1), true)?;
            return Some(Job::new(
                rec.job_number,
                rec.submit_time.max(1),
                procs,
                1,
                1,
            ));
        }
        let procs = self.fit_procs(width, false)?;
        let run = rec.run_time;
        let req = rec.requested_time;
        let kill = self.options.runtime_limit == RuntimeLimit::KillAtEstimate;
        let (estimate, actual) = match self.options.estimates {
            Estimates::Requested if kill => {
                (trunc(req.max(run).max(1.0)), trunc(req.min(run).max(1.0)))
            }
            Estimates::Requested => {
                let actual = trunc(run.max(1.0));
                let estimate = if req > 0.0 { trunc(req).max(1) } else { actual };
                (estimate, actual)
            }
            Estimates::Perfect => {
                let actual = trunc(run.max(1.0));
                (actual, actual)
            }
            Estimates::Multiple(f) => {
                let actual = trunc(run.max(1.0));
                let estimate = multiple(actual, f);
                (estimate, if kill { actual.min(estimate) } else { actual })
            }
        };
        Some(Job::new(
            rec.job_number,
            rec.submit_time,
            procs,
            estimate,
            actual,
        ))
    }

    fn streit(&mut self, rec: &SwfRecord) -> Option<Job> {
        let submit = rec.submit_time;
        if submit < 0 {
            self.stats.dropped_negative_submit += 1;
            return None;
        }
        if self.last_submit.is_some_and(|prev| submit < prev) {
            self.stats.dropped_unsorted += 1;
            return None;
        }
        let width = self.width(rec);
        if width <= 0 {
            self.stats.dropped_width += 1;
            return None;
        }
        let width = self.round_to_nodes(width);
        if width > i64::from(self.procs) {
            self.stats.dropped_width += 1;
            return None;
        }
        let run = rec.run_time;
        let requested = self.options.estimates == Estimates::Requested;
        if run < 0.0 || (requested && rec.requested_time < 0.0) {
            self.stats.dropped_negative_time += 1;
            return None;
        }
        let estimate = match self.options.estimates {
            Estimates::Requested => rec.requested_time,
            Estimates::Perfect => run,
            Estimates::Multiple(f) => multiple(trunc(run), f) as f64,
        };
        let actual = match self.options.runtime_limit {
            RuntimeLimit::KillAtEstimate => run.min(estimate),
            RuntimeLimit::RunToCompletion => run,
        };
        let (actual, estimate) = (trunc(actual), trunc(estimate));
        if actual == 0 || estimate == 0 {
            self.stats.dropped_zero_runtime += 1;
            return None;
        }
        self.last_submit = Some(submit);
        let procs = u32::try_from(width).ok()?;
        Some(Job::new(rec.job_number, submit, procs, estimate, actual))
    }

    /// User, partition and memory.
    fn fill_attributes(&self, job: &mut Job, rec: &SwfRecord) -> Result<(), WorkloadError> {
        let too_big = |field: usize, v: i64| WorkloadError::Field {
            file: self.file.clone(),
            line: rec.line,
            field,
            message: format!("{v} does not fit in 32 bits"),
        };
        if rec.user_id > 0 {
            job.user = UserId(u32::try_from(rec.user_id).map_err(|_| too_big(12, rec.user_id))?);
        }
        if rec.partition >= 0 {
            job.partition =
                Some(u32::try_from(rec.partition).map_err(|_| too_big(16, rec.partition))?);
        }
        if rec.requested_memory_kb > 0 {
            job.memory_kb = u64::try_from(rec.requested_memory_kb).ok();
        }
        Ok(())
    }
}

/// `max(ceil(actual × f), 1)`, saturating.
fn multiple(actual: i64, f: f64) -> i64 {
    ((actual as f64 * f).ceil() as i64).max(1)
}

#[cfg(test)]
mod tests;
