//! The grid runner's input log: what a meta-scheduler saw, with the time it saw it, so that the
//! simulator can feed the same inputs to the same [`GridRunner`] again and show that it decides
//! the same placements, holds and refusals (the "one engine, two clocks" proof of the two-level
//! design at the grid level, Pasquali, thesis §3.1), as [`crate::runner::replay`] does for a
//! cluster.
//!
//! A log is a sequence of [`Line`]s (JSON Lines in a file): a header each time a runner is built
//! (its [`GridConfig`]), then every input it handled and every effect it decided, in order.
//! [`check`] builds the runner of each header again, feeds it the logged inputs and compares its
//! effects with the logged ones. [`Recorder`] writes such a log while it drives a runner.

use super::GridConfigError;
use super::{Effect, GridConfig, GridError, GridRunner, Input};
use crate::model::Time;
use crate::rerun::{Differ, Pending};
use serde::{Deserialize, Serialize};

/// One line of a log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Line {
    /// A runner was built.
    Header(Box<GridConfig>),
    /// It handled an input at `time`.
    In {
        /// When.
        time: Time,
        /// What.
        input: Input,
    },
    /// It decided an effect (in answer to the last input).
    Out(Effect),
}

/// A grid runner that logs what it is fed and what it decides.
#[derive(Debug)]
pub struct Recorder {
    runner: GridRunner,
    /// The log so far.
    pub lines: Vec<Line>,
}

impl Recorder {
    /// The runner of `cfg`, its header logged.
    pub fn new(cfg: GridConfig) -> Result<Recorder, GridConfigError> {
        Ok(Recorder {
            runner: GridRunner::from_config(&cfg)?,
            lines: vec![Line::Header(Box::new(cfg))],
        })
    }

    /// [`GridRunner::on`], logged.
    pub fn on(&mut self, now: Time, input: Input, out: &mut Vec<Effect>) -> Result<(), GridError> {
        let from = out.len();
        self.lines.push(Line::In {
            time: now,
            input: input.clone(),
        });
        let r = self.runner.on(now, input, out);
        self.lines
            .extend(out[from..].iter().cloned().map(Line::Out));
        r
    }

    /// The runner.
    pub fn runner(&self) -> &GridRunner {
        &self.runner
    }
}

/// The result of checking a log.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Checked {
    /// Runners built (headers).
    pub runs: usize,
    /// Inputs fed.
    pub inputs: usize,
    /// Effects compared.
    pub effects: usize,
    /// Placements among them.
    pub placements: usize,
}

/// Where a log and its re-run part.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Mismatch {
    /// Inputs before any header.
    #[error("line {0}: an input or effect before the first header")]
    NoHeader(usize),
    /// The header's runner cannot be built.
    #[error("line {line}: {error}")]
    Build {
        /// Its line.
        line: usize,
        /// Why.
        error: GridConfigError,
    },
    /// The re-run decided something else.
    #[error(transparent)]
    Differs(#[from] Differ),
}

/// Re-runs every segment of `lines` (numbered from 1) and compares every effect.
pub fn check(lines: impl IntoIterator<Item = Line>) -> Result<Checked, Mismatch> {
    let mut res = Checked::default();
    let mut runner: Option<GridRunner> = None;
    let mut rerun = Pending::new();
    let mut out = Vec::new();
    let mut last = 0;
    for (i, line) in lines.into_iter().enumerate() {
        let n = i + 1;
        last = n;
        if !matches!(line, Line::Out(_)) {
            rerun.settled(n)?;
        }
        match line {
            Line::Header(cfg) => {
                let r = GridRunner::from_config(&cfg)
                    .map_err(|error| Mismatch::Build { line: n, error })?;
                runner = Some(r);
                res.runs += 1;
            }
            Line::In { time, input } => {
                let r = runner.as_mut().ok_or(Mismatch::NoHeader(n))?;
                out.clear();
                // A refused input decided nothing, live as here.
                let _ = r.on(time, input, &mut out);
                res.inputs += 1;
                rerun.decided(out.drain(..));
            }
            Line::Out(logged) => {
                if runner.is_none() {
                    return Err(Mismatch::NoHeader(n));
                }
                rerun.matches(n, &logged)?;
                res.effects += 1;
                if matches!(logged, Effect::Place { .. }) {
                    res.placements += 1;
                }
            }
        }
    }
    rerun.settled(last + 1)?;
    Ok(res)
}
