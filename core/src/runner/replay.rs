//! The runner's input log: what a live cluster saw, with the time it saw it, so that the simulator
//! can run the same inputs through the same [`ClusterRunner`] again and show that it decides the
//! same starts, suspensions and overruns (the "one engine, two clocks" proof of the two-level
//! design, Pasquali, thesis §3.1).
//!
//! A log is a sequence of [`Line`]s (JSON Lines in a file): a [`Header`] each time a runner is
//! built (the platform, the cluster, the policy and the runner's settings), then every input the
//! runner handled and every decision it made, in order. [`check`] builds the runner of each header
//! again, feeds it the logged inputs and compares its decisions with the logged ones.

use super::{ClusterRunner, Effect, Input, RunnerConfig, RunnerError};
use crate::model::{ClusterId, Platform, Time};
use crate::policy::PolicyConfig;
use crate::rerun::{Differ, Pending};
use serde::{Deserialize, Serialize};

/// What a runner was built from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// The platform.
    pub platform: Platform,
    /// The cluster of the platform the runner drives.
    pub cluster: ClusterId,
    /// Its policy.
    pub policy: PolicyConfig,
    /// The runner's settings.
    pub config: RunnerConfig,
}

impl Header {
    /// A runner in the header's initial state.
    pub fn runner(&self) -> Result<ClusterRunner, RunnerError> {
        let policy = self
            .policy
            .build(&self.platform, self.cluster)
            .map_err(|e| {
                RunnerError::Rejected(crate::policy::Rejection::Unsupported(e.to_string()))
            })?;
        ClusterRunner::new(&self.platform, self.cluster, policy, self.config)
    }
}

/// One line of a log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Line {
    /// A runner was built.
    Header(Box<Header>),
    /// It handled an input.
    In(Entry),
    /// It decided something.
    Out(Decision),
}

/// The result of checking a log.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Checked {
    /// Runners built (headers).
    pub runs: usize,
    /// Inputs fed.
    pub inputs: usize,
    /// Decisions compared.
    pub decisions: usize,
    /// Starts among them.
    pub starts: usize,
    /// Suspensions among them.
    pub suspensions: usize,
    /// Kills among them.
    pub kills: usize,
}

/// Where a log and its re-run part.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Mismatch {
    /// Inputs before any header.
    #[error("line {0}: an input or decision before the first header")]
    NoHeader(usize),
    /// The header's runner cannot be built.
    #[error("line {line}: {error}")]
    Build {
        /// Its line.
        line: usize,
        /// Why.
        error: RunnerError,
    },
    /// The re-run decided something else.
    #[error(transparent)]
    Differs(#[from] Differ),
}

/// Re-runs every segment of `lines` (numbered from 1) and compares every decision.
pub fn check(lines: impl IntoIterator<Item = Line>) -> Result<Checked, Mismatch> {
    check_with(lines, Header::runner)
}

/// [`check`] with the runner of each header built by `build` (a policy the header cannot name).
pub fn check_with(
    lines: impl IntoIterator<Item = Line>,
    mut build: impl FnMut(&Header) -> Result<ClusterRunner, RunnerError>,
) -> Result<Checked, Mismatch> {
    let mut res = Checked::default();
    let mut runner: Option<ClusterRunner> = None;
    let mut rerun = Pending::new();
    let mut out = Vec::new();
    let mut last = 0;
    for (i, line) in lines.into_iter().enumerate() {
        let n = i + 1;
        last = n;
        match line {
            Line::Header(h) => {
                rerun.settled(n)?;
                runner = Some(build(&h).map_err(|error| Mismatch::Build { line: n, error })?);
                res.runs += 1;
            }
            Line::In(e) => {
                let r = runner.as_mut().ok_or(Mismatch::NoHeader(n))?;
                rerun.settled(n)?;
                out.clear();
                let _ = r.on(e.time, e.input, &mut out);
                res.inputs += 1;
                rerun.decided(out.iter().map(|&effect| Decision {
                    time: e.time,
                    effect,
                }));
            }
            Line::Out(d) => {
                if runner.is_none() {
                    return Err(Mismatch::NoHeader(n));
                }
                rerun.matches(n, &d)?;
                res.decisions += 1;
                match d.effect {
                    Effect::Start(_) => res.starts += 1,
                    Effect::Suspend { .. } => res.suspensions += 1,
                    Effect::Kill { .. } => res.kills += 1,
                    _ => {}
                }
            }
        }
    }
    rerun.settled(last + 1)?;
    Ok(res)
}

/// One logged input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// When the runner handled it.
    pub time: Time,
    /// What it was.
    #[serde(flatten)]
    pub input: Input,
}

/// One effect with the time of the input that caused it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    /// When.
    pub time: Time,
    /// What.
    #[serde(flatten)]
    pub effect: Effect,
}

/// What a run of a log gives: every decision, and every refused input with its position.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rerun {
    /// The decisions, in order.
    pub decisions: Vec<Decision>,
    /// The inputs refused (position in the log, error).
    pub refused: Vec<(usize, RunnerError)>,
}

/// Runs `entries` through `runner`.
pub fn rerun(runner: &mut ClusterRunner, entries: impl IntoIterator<Item = Entry>) -> Rerun {
    let mut res = Rerun::default();
    let mut out = Vec::new();
    for (i, e) in entries.into_iter().enumerate() {
        out.clear();
        if let Err(err) = runner.on(e.time, e.input, &mut out) {
            res.refused.push((i, err));
        }
        res.decisions.extend(out.iter().map(|&effect| Decision {
            time: e.time,
            effect,
        }));
    }
    res
}
