//! The job: what a user submits and what the schedulers reason about (spec
//! `two-level-grid-scheduler.md` D2.1, `self-tuning-and-multisite.md` §1.1, §1.5).

use super::{
    ArraySpec, DataIn, Dependency, Duration, LicenceId, Machine, MachineId, ReservationId, Task,
    Time, Urgency, UserId,
};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The service class of a job's owner, used by the meta-scheduler's User heuristic (D4.1.3).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "lowercase")]
pub enum UserClass {
    /// Highest class.
    Gold,
    /// Middle class.
    Silver,
    /// Default class.
    #[default]
    Regular,
}

impl UserClass {
    /// The lower-case name used in files and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            UserClass::Gold => "gold",
            UserClass::Silver => "silver",
            UserClass::Regular => "regular",
        }
    }
}

impl fmt::Display for UserClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for UserClass {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "gold" => Ok(UserClass::Gold),
            "silver" => Ok(UserClass::Silver),
            "regular" => Ok(UserClass::Regular),
            other => Err(format!(
                "unknown user class `{other}` (expected gold, silver or regular)"
            )),
        }
    }
}

/// A reference to input data of a job: `size` units stored on `machine` (or on the cluster's
/// shared storage when `machine` is `None`). Used by Convergent Scheduling's Input heuristic (D7.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct InputRef {
    /// Where the data lives; `None` = the cluster's shared storage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<MachineId>,
    /// Size in abstract data units (the seed's generators use 100–800).
    pub size: u64,
}

/// A rigid batch job.
///
/// `estimate` is what schedulers plan with; `runtime` is the actual run time known only to a
/// replay (the simulator uses it to decide when the job really ends). Both are measured on the
/// reference machine whose benchmark score is `benchmark` (when set); see [`Job::duration_on`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    /// Unique identifier.
    pub id: JobId,
    /// Owner.
    #[serde(default)]
    pub user: UserId,
    /// Owner's service class.
    #[serde(default)]
    pub user_class: UserClass,
    /// Priority the owner gives this job, 0..=3 (D4.1.3).
    #[serde(default)]
    pub owner_priority: u8,
    /// Submission time.
    pub submit: Time,
    /// Processors needed, on one machine unless a multi-site policy splits the job.
    pub procs: u32,
    /// Memory needed, in KiB, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_kb: Option<u64>,
    /// Estimated run time (the user's request), in seconds on the reference machine.
    pub estimate: Duration,
    /// Actual run time for replays, in seconds on the reference machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Duration>,
    /// Absolute time by which the job must finish.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<Time>,
    /// Software licences needed: one activated copy of each for the job's whole run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub licences: Vec<LicenceId>,
    /// Input data the job reads.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<InputRef>,
    /// Data staged in at its site before it starts (the grid's transfers; see [`DataIn`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stage_in: Vec<DataIn>,
    /// Benchmark score of the machine on which `estimate` (and `runtime`) were measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub benchmark: Option<u32>,
    /// Home partition or site (SWF field 16), used to submit a replayed job at its home site.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<u32>,
    /// The advance reservation the job runs in: it starts and ends inside it, on its processors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation: Option<ReservationId>,
    /// Its urgency; `None` for a typical job (Kurowski et al. §4: urgent jobs outrank typical
    /// ones and may preempt them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub urgency: Option<Urgency>,
    /// The jobs it waits for before the grid dispatches it (Slurm's `--dependency`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Box<Dependency>>,
    /// Its tasks, when it is an array (Slurm's `--array`): the grid runs one task per index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array: Option<Box<ArraySpec>>,
    /// The array and index of a task of an array.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<Task>,
}

pub use super::JobId;

/// Why a job description is invalid. Each variant names the offending field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JobError {
    /// `procs` is zero.
    #[error("field `procs`: a job needs at least one processor")]
    NoProcessors,
    /// `estimate` is not positive.
    #[error("field `estimate`: must be at least 1 second, got {0}")]
    NonPositiveEstimate(Duration),
    /// `runtime` is negative.
    #[error("field `runtime`: must not be negative, got {0}")]
    NegativeRuntime(Duration),
    /// `submit` is negative.
    #[error("field `submit`: must not be negative, got {0}")]
    NegativeSubmit(Time),
    /// `owner_priority` is out of range.
    #[error("field `owner_priority`: must be in 0..=3, got {0}")]
    OwnerPriority(u8),
    /// `deadline` is before `submit`.
    #[error("field `deadline`: {deadline} is before the submission time {submit}")]
    DeadlineBeforeSubmit {
        /// The deadline given.
        deadline: Time,
        /// The submission time.
        submit: Time,
    },
    /// A licence is listed twice.
    #[error("field `licences`: licence {0} is listed twice")]
    DuplicateLicence(LicenceId),
    /// `benchmark` is zero.
    #[error("field `benchmark`: a benchmark score must be positive")]
    ZeroBenchmark,
    /// A dependency names the job itself.
    #[error("field `after`: job {0} cannot wait for itself")]
    DependsOnItself(JobId),
    /// Two inputs staged in under one key, or one without a key.
    #[error("field `stage_in`: input {0:?} is listed twice or has no key")]
    StageIn(String),
    /// An array's task is itself an array.
    #[error("field `array`: a task of an array cannot be an array")]
    NestedArray,
}

impl Job {
    /// A job with only the fields a trace replay needs; everything else takes its default.
    pub fn new(id: u64, submit: Time, procs: u32, estimate: Duration, runtime: Duration) -> Job {
        Job {
            id: JobId(id),
            user: UserId(0),
            user_class: UserClass::Regular,
            owner_priority: 0,
            submit,
            procs,
            memory_kb: None,
            estimate,
            runtime: Some(runtime),
            deadline: None,
            licences: Vec::new(),
            inputs: Vec::new(),
            stage_in: Vec::new(),
            benchmark: None,
            partition: None,
            reservation: None,
            urgency: None,
            after: None,
            array: None,
            task: None,
        }
    }

    /// Whether the job is urgent (has an urgency level).
    pub fn is_urgent(&self) -> bool {
        self.urgency.is_some()
    }

    /// Checks the invariants of a job description, naming the first field that breaks one.
    pub fn validate(&self) -> Result<(), JobError> {
        if self.procs == 0 {
            return Err(JobError::NoProcessors);
        }
        if self.estimate < 1 {
            return Err(JobError::NonPositiveEstimate(self.estimate));
        }
        if let Some(r) = self.runtime
            && r < 0
        {
            return Err(JobError::NegativeRuntime(r));
        }
        if self.submit < 0 {
            return Err(JobError::NegativeSubmit(self.submit));
        }
        if self.owner_priority > 3 {
            return Err(JobError::OwnerPriority(self.owner_priority));
        }
        if let Some(d) = self.deadline
            && d < self.submit
        {
            return Err(JobError::DeadlineBeforeSubmit {
                deadline: d,
                submit: self.submit,
            });
        }
        for (i, d) in self.stage_in.iter().enumerate() {
            if d.key.is_empty() || self.stage_in[..i].iter().any(|e| e.key == d.key) {
                return Err(JobError::StageIn(d.key.clone()));
            }
        }
        for (i, l) in self.licences.iter().enumerate() {
            if self.licences[..i].contains(l) {
                return Err(JobError::DuplicateLicence(*l));
            }
        }
        if self.benchmark == Some(0) {
            return Err(JobError::ZeroBenchmark);
        }
        if let Some(d) = &self.after
            && d.terms.iter().any(|t| t.job == self.id)
        {
            return Err(JobError::DependsOnItself(self.id));
        }
        if self.array.is_some() && self.task.is_some() {
            return Err(JobError::NestedArray);
        }
        Ok(())
    }

    /// Processor-seconds the job asks for (`procs × estimate`), the "workload" of a job (D12 #9).
    pub fn requested_area(&self) -> i128 {
        i128::from(self.procs) * i128::from(self.estimate)
    }

    /// The time a job would take on `machine` for a duration `d` measured on the job's reference
    /// machine: `d · BM_job / BM_machine` (spec D2.1, Eq. 3.9), rounded up to whole seconds so that a
    /// job scaled to a machine never gets less time than the exact ratio. A job without a benchmark
    /// score runs in `d` everywhere.
    pub fn duration_on(&self, d: Duration, machine: &Machine) -> Duration {
        match self.benchmark {
            None => d,
            Some(bm_ref) => scale_duration(d, bm_ref, machine.benchmark),
        }
    }
}

/// `d · from / to`, rounded up, computed exactly in integers (`to` must be positive).
pub fn scale_duration(d: Duration, from: u32, to: u32) -> Duration {
    let num = i128::from(d) * i128::from(from);
    let den = i128::from(to.max(1));
    let q = num.div_euclid(den) + i128::from(num.rem_euclid(den) != 0);
    q as Duration
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_names_the_field() {
        let mut j = Job::new(1, 0, 4, 100, 50);
        assert!(j.validate().is_ok());
        j.procs = 0;
        assert_eq!(j.validate(), Err(JobError::NoProcessors));
        assert!(j.validate().unwrap_err().to_string().contains("`procs`"));
        j.procs = 1;
        j.deadline = Some(-5);
        assert!(j.validate().unwrap_err().to_string().contains("`deadline`"));
        j.deadline = None;
        j.licences = vec![LicenceId(2), LicenceId(3), LicenceId(2)];
        assert_eq!(j.validate(), Err(JobError::DuplicateLicence(LicenceId(2))));
        j.licences.clear();
        j.owner_priority = 4;
        assert!(
            j.validate()
                .unwrap_err()
                .to_string()
                .contains("`owner_priority`")
        );
    }

    #[test]
    fn duration_scales_with_benchmark_ratio_rounding_up() {
        let mut j = Job::new(1, 0, 1, 1000, 1000);
        let fast = Machine::new(MachineId(0), "fast", 4, 300);
        assert_eq!(j.duration_on(1000, &fast), 1000, "no benchmark: unchanged");
        j.benchmark = Some(200);
        // 1000 * 200 / 300 = 666.67 -> 667
        assert_eq!(j.duration_on(1000, &fast), 667);
        let slow = Machine::new(MachineId(1), "slow", 4, 100);
        assert_eq!(j.duration_on(1000, &slow), 2000);
        assert_eq!(scale_duration(0, 5, 3), 0);
    }

    #[test]
    fn user_class_parses_and_prints() {
        for c in [UserClass::Gold, UserClass::Silver, UserClass::Regular] {
            assert_eq!(c.as_str().parse::<UserClass>().unwrap(), c);
        }
        assert!(
            "platinum"
                .parse::<UserClass>()
                .unwrap_err()
                .contains("platinum")
        );
    }
}
