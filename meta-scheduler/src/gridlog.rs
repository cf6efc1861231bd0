//! The meta-scheduler's replayable input log: every input its grid runner handles, with the time
//! it handled it, and every effect the runner decided, appended as JSON Lines to the file named by
//! `input_log` (a header line each time the service starts: the runner's configuration, its
//! classifier's state at that moment). `gridsim rerun` builds the same runner from each header,
//! feeds it the logged inputs and checks that it decides the same.

use gridsched_core::Time;
use gridsched_core::grid::replay::Line;
use gridsched_core::grid::{Effect, GridConfig, Input};
use std::io::Write;
use std::path::Path;

/// An open log.
#[derive(Debug)]
pub struct GridLog {
    out: std::io::BufWriter<std::fs::File>,
    failed: bool,
}

impl GridLog {
    /// Opens `path` for appending.
    pub fn open(path: &Path) -> std::io::Result<GridLog> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(GridLog {
            out: std::io::BufWriter::new(file),
            failed: false,
        })
    }

    fn line(&mut self, line: &Line) {
        if self.failed {
            return;
        }
        let res = serde_json::to_writer(&mut self.out, line)
            .and_then(|_| self.out.write_all(b"\n").map_err(serde_json::Error::io));
        if let Err(e) = res {
            tracing::error!("input log: {e}; no more lines are written");
            self.failed = true;
        }
    }

    /// Logs the header of a runner built from `cfg`.
    pub fn header(&mut self, cfg: &GridConfig) {
        self.line(&Line::Header(Box::new(cfg.clone())));
        self.flush();
    }

    /// Logs an input and the effects it gave.
    pub fn input(&mut self, time: Time, input: &Input, effects: &[Effect]) {
        self.line(&Line::In {
            time,
            input: input.clone(),
        });
        for e in effects {
            self.line(&Line::Out(e.clone()));
        }
    }

    /// Writes what is buffered.
    pub fn flush(&mut self) {
        if !self.failed
            && let Err(e) = self.out.flush()
        {
            tracing::error!("input log: {e}; no more lines are written");
            self.failed = true;
        }
    }
}
