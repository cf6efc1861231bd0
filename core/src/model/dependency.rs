//! A job's dependencies on other jobs: what it waits for before the grid dispatches it. The names
//! and semantics are Slurm's (`sbatch --dependency`, as its manual documents them): `after`
//! (the other job began, or was cancelled before it could), `afterok` (it completed),
//! `afternotok` (it ran and failed, timed out or was cancelled while running), `afterany` (it
//! ran and ended, however), each optionally delayed (`after:12+30`, seconds here), terms joined
//! by `,` (all must be met) or `?` (any one), and `singleton` (one job of a name and user runs at
//! a time). A term that can never be met ends the job as never started (Slurm's
//! `kill_invalid_depend`). A job cancelled before it ran, or refused, satisfies no `afterok`,
//! `afternotok` nor `afterany` (the grid's reading: it never ran).
//!
//! `aftercorr` (Slurm's, for arrays): each task of this array waits for the task of the same index
//! of the array named to complete; the grid runner gives each released task that term.
//!
//! The Standard Workload Format's preceding job and think time (fields 17–18) are an `afterany`
//! term delayed by the think time.

use super::{Duration, JobId, Time};
use serde::{Deserialize, Serialize};
use std::fmt;

/// What a term waits for of the job it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Condition {
    /// `after`: the job began running (or was cancelled before it could).
    Start,
    /// `afterok`: the job completed successfully.
    Ok,
    /// `afternotok`: the job ran and ended in failure (failed, timed out, lost, cancelled while
    /// running).
    NotOk,
    /// `afterany`: the job ran and ended, however.
    Any,
    /// `aftercorr`: of an array on an array, each task waits for the task of the same index to
    /// complete successfully (a task's own term is on that task).
    Corr,
}

impl Condition {
    /// Slurm's name of the condition.
    pub fn as_str(self) -> &'static str {
        match self {
            Condition::Start => "after",
            Condition::Ok => "afterok",
            Condition::NotOk => "afternotok",
            Condition::Any => "afterany",
            Condition::Corr => "aftercorr",
        }
    }

    /// Whether a job that left the grid with `outcome` met the condition (if not, it never
    /// will).
    pub fn met_by(self, outcome: Outcome) -> bool {
        use Outcome::*;
        match self {
            Condition::Start => !matches!(outcome, Refused),
            Condition::Ok | Condition::Corr => outcome == Completed,
            Condition::NotOk => matches!(outcome, Failed | Cancelled { started: true }),
            Condition::Any => matches!(outcome, Completed | Failed | Cancelled { started: true }),
        }
    }
}

/// How a job left the grid, as its dependants see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// It ran and completed (exit code 0).
    #[default]
    Completed,
    /// It ran and failed: a non-zero exit, killed at its limit, lost with its site.
    Failed,
    /// The user cancelled it; `started` when it had begun running.
    Cancelled {
        /// Whether it had begun running.
        started: bool,
    },
    /// The grid refused it, or ended it as never started: it never ran.
    Refused,
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Outcome::Completed => "completed",
            Outcome::Failed => "failed",
            Outcome::Cancelled { started: true } => "cancelled while running",
            Outcome::Cancelled { started: false } => "cancelled before it ran",
            Outcome::Refused => "never ran",
        })
    }
}

/// How and when a job left the grid, as a driver's history has it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ended {
    /// How.
    pub outcome: Outcome,
    /// When it ended.
    pub at: Time,
    /// When it began running, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<Time>,
}

impl Ended {
    /// When a term of condition `on` on this job was met (if it was): its start for `after`
    /// (its end when it never started), its end otherwise.
    pub fn met_at(&self, on: Condition) -> Option<Time> {
        on.met_by(self.outcome).then(|| match on {
            Condition::Start => self.started.unwrap_or(self.at),
            _ => self.at,
        })
    }
}

/// One term: a condition on one job, met `delay` seconds after the job meets it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Term {
    /// What is waited for.
    pub on: Condition,
    /// The job.
    pub job: JobId,
    /// Seconds after the condition is met (Slurm's `+time`; the SWF's think time).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay: Duration,
    /// How and when the job ended, when it had already left the grid at the submission: filled
    /// in by the driver from its history (the grid runner keeps only the jobs it has).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<Ended>,
}

fn is_zero(d: &Duration) -> bool {
    *d == 0
}

/// What a job waits for: its terms, all (`,`) or any one (`?`), and whether it is a singleton.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Dependency {
    /// The terms.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub terms: Vec<Term>,
    /// Any one term suffices (`?`); otherwise all must be met (`,`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub any: bool,
    /// `singleton`: the job's name; it runs only once every earlier singleton job of this name
    /// and the same user has left the grid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub singleton: Option<String>,
}

/// Why a dependency's text cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("dependency `{text}`: {why}")]
pub struct DependencyError {
    /// The text.
    pub text: String,
    /// What is wrong.
    pub why: String,
}

impl Dependency {
    /// Reads Slurm's syntax: `afterok:12:13,afterany:14+60`, `after:7?afternotok:8`,
    /// `singleton` (which takes the job's `name`). Delays are in seconds. `,` and `?` cannot be
    /// mixed (as in Slurm).
    pub fn parse(text: &str, name: Option<&str>) -> Result<Dependency, DependencyError> {
        let err = |why: String| DependencyError {
            text: text.to_string(),
            why,
        };
        let t = text.trim();
        if t.is_empty() {
            return Err(err("empty".into()));
        }
        let (any, parts): (bool, Vec<&str>) = match (t.contains(','), t.contains('?')) {
            (true, true) => {
                return Err(err(
                    "`,` (all) and `?` (any) cannot be mixed in one dependency".into(),
                ));
            }
            (false, true) => (true, t.split('?').collect()),
            _ => (false, t.split(',').collect()),
        };
        let mut dep = Dependency {
            any,
            ..Dependency::default()
        };
        for part in parts {
            let part = part.trim();
            if part == "singleton" {
                let Some(n) = name.filter(|n| !n.is_empty()) else {
                    return Err(err("`singleton` needs the job's name".into()));
                };
                dep.singleton = Some(n.to_string());
                continue;
            }
            let mut fields = part.split(':');
            let kind = fields.next().unwrap_or_default();
            let on = match kind {
                "after" => Condition::Start,
                "afterok" => Condition::Ok,
                "afternotok" => Condition::NotOk,
                "afterany" => Condition::Any,
                "aftercorr" => Condition::Corr,
                "afterburstbuffer" => {
                    return Err(err(format!("`{kind}` is not supported")));
                }
                "" => return Err(err(format!("`{part}`: a term names its type first"))),
                other => {
                    return Err(err(format!(
                        "unknown type `{other}` (expected after, afterok, afternotok, afterany, \
                         aftercorr or singleton)"
                    )));
                }
            };
            let mut any_job = false;
            for f in fields {
                let (id, delay) = match f.split_once('+') {
                    Some((id, d)) => {
                        let d: Duration = d.parse().ok().filter(|d| *d >= 0).ok_or_else(|| {
                            err(format!(
                                "`{f}`: the delay must be whole seconds, at least 0"
                            ))
                        })?;
                        (id, d)
                    }
                    None => (f, 0),
                };
                if on == Condition::Corr && (delay > 0 || any) {
                    return Err(err(
                        "`aftercorr` takes no delay and is not joined by `?`".into()
                    ));
                }
                let id: u64 = id
                    .parse()
                    .ok()
                    .filter(|i| *i > 0)
                    .ok_or_else(|| err(format!("`{id}` is not a job id")))?;
                dep.terms.push(Term {
                    on,
                    job: JobId(id),
                    delay,
                    ended: None,
                });
                any_job = true;
            }
            if !any_job {
                return Err(err(format!("`{kind}` names no job")));
            }
        }
        Ok(dep)
    }

    /// Whether it waits for nothing.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty() && self.singleton.is_none()
    }
}

impl fmt::Display for Dependency {
    /// Slurm's syntax, one term per job (`afterok:12,afterok:13`), `singleton` last.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sep = if self.any { "?" } else { "," };
        let mut first = true;
        for t in &self.terms {
            if !first {
                f.write_str(sep)?;
            }
            first = false;
            write!(f, "{}:{}", t.on.as_str(), t.job)?;
            if t.delay > 0 {
                write!(f, "+{}", t.delay)?;
            }
        }
        if self.singleton.is_some() {
            if !first {
                f.write_str(sep)?;
            }
            f.write_str("singleton")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn term(on: Condition, job: u64, delay: Duration) -> Term {
        Term {
            on,
            job: JobId(job),
            delay,
            ended: None,
        }
    }

    #[test]
    fn slurm_syntax_reads_and_prints_back() {
        let d = Dependency::parse("afterok:12:13,afterany:14+60", None).unwrap();
        assert_eq!(
            d.terms,
            vec![
                term(Condition::Ok, 12, 0),
                term(Condition::Ok, 13, 0),
                term(Condition::Any, 14, 60),
            ]
        );
        assert!(!d.any);
        assert_eq!(d.to_string(), "afterok:12,afterok:13,afterany:14+60");
        let d = Dependency::parse("after:7?afternotok:8", None).unwrap();
        assert!(d.any);
        assert_eq!(d.to_string(), "after:7?afternotok:8");
        let d = Dependency::parse("singleton,afterok:3", Some("nightly")).unwrap();
        assert_eq!(d.singleton.as_deref(), Some("nightly"));
        assert_eq!(d.to_string(), "afterok:3,singleton");
    }

    #[test]
    fn bad_text_is_refused_naming_what_is_wrong() {
        let why = |t: &str, name| Dependency::parse(t, name).unwrap_err().to_string();
        assert!(why("afterok:1,after:2?after:3", None).contains("cannot be mixed"));
        assert!(why("afterok", None).contains("names no job"));
        assert!(why("afterok:x", None).contains("`x` is not a job id"));
        assert!(why("afterok:0", None).contains("`0` is not a job id"));
        assert!(why("after:4+-1", None).contains("delay"));
        assert!(why("before:4", None).contains("unknown type `before`"));
        assert!(why("singleton", None).contains("needs the job's name"));
        assert!(why("afterburstbuffer:4", None).contains("not supported"));
        assert!(why("aftercorr:4+5", None).contains("`aftercorr` takes no delay"));
        assert!(why("aftercorr:4?afterok:5", None).contains("not joined by `?`"));
        let d = Dependency::parse("aftercorr:4", None).unwrap();
        assert_eq!(d.terms[0].on, Condition::Corr);
        assert_eq!(d.to_string(), "aftercorr:4");
        assert!(why(" ", None).contains("empty"));
    }

    #[test]
    fn each_condition_is_met_by_the_outcomes_slurm_names() {
        use Outcome::*;
        let outcomes = [
            Completed,
            Failed,
            Cancelled { started: true },
            Cancelled { started: false },
            Refused,
        ];
        let table = [
            (Condition::Start, [true, true, true, true, false]),
            (Condition::Ok, [true, false, false, false, false]),
            (Condition::NotOk, [false, true, true, false, false]),
            (Condition::Any, [true, true, true, false, false]),
        ];
        for (c, expected) in table {
            for (o, e) in outcomes.iter().zip(expected) {
                assert_eq!(c.met_by(*o), e, "{} by {o}", c.as_str());
            }
        }
    }
}
