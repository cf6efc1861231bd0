//! Comparing what a runner decided when it ran live with what it decides again from the same
//! inputs, the check both input logs share (the cluster runner's, [`crate::runner::replay`], and
//! the grid runner's, [`crate::grid::replay`]): the re-run's effects wait in order, each logged
//! effect must be the next of them, and none may be left over when the log goes on to its next
//! input or header, or ends.

use std::collections::VecDeque;
use std::fmt::Debug;

/// Where a log and its re-run part: the line, what the log says, what the re-run says.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: logged {logged}, re-run {rerun}")]
pub struct Differ {
    /// The line of the logged decision (or of the input after which a decision was missing).
    pub line: usize,
    /// What the log says.
    pub logged: String,
    /// What the re-run says.
    pub rerun: String,
}

/// The re-run's effects not yet matched with the log's.
#[derive(Debug)]
pub(crate) struct Pending<E> {
    pending: VecDeque<E>,
}

impl<E: PartialEq + Debug> Pending<E> {
    pub(crate) fn new() -> Pending<E> {
        Pending {
            pending: VecDeque::new(),
        }
    }

    /// The re-run decided `effects`.
    pub(crate) fn decided(&mut self, effects: impl IntoIterator<Item = E>) {
        self.pending.extend(effects);
    }

    /// At `line` the log goes on (or ends): the re-run must have decided nothing more.
    pub(crate) fn settled(&self, line: usize) -> Result<(), Differ> {
        match self.pending.front() {
            None => Ok(()),
            Some(e) => Err(Differ {
                line,
                logged: "nothing".into(),
                rerun: format!("{e:?}"),
            }),
        }
    }

    /// The log's effect at `line` must be the re-run's next.
    pub(crate) fn matches(&mut self, line: usize, logged: &E) -> Result<(), Differ> {
        let ours = self.pending.pop_front();
        if ours.as_ref() == Some(logged) {
            return Ok(());
        }
        Err(Differ {
            line,
            logged: format!("{logged:?}"),
            rerun: ours.map_or_else(|| "nothing".to_string(), |e| format!("{e:?}")),
        })
    }
}
