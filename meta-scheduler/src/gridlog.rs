//! The meta-scheduler's replayable input log: every input its grid runner handles, with the time
//! it handled it, and every effect the runner decided, appended as JSON Lines to the file named by
//! `input_log` (a header line each time the service starts: the runner's configuration, its
//! classifier's state at that moment). `gridsim rerun` builds the same runner from each header,
//! feeds it the logged inputs and checks that it decides the same.

use gridsched_core::Time;
use gridsched_core::grid::replay::Line;
use gridsched_core::grid::{Effect, GridConfig, Input};
use gridsched_telemetry::JsonLines;
use std::path::Path;

/// An open log.
#[derive(Debug)]
pub struct GridLog(JsonLines);

impl GridLog {
    /// Opens `path` for appending.
    pub fn open(path: &Path) -> std::io::Result<GridLog> {
        JsonLines::open(path).map(GridLog)
    }

    /// Logs the header of a runner built from `cfg`.
    pub fn header(&mut self, cfg: &GridConfig) {
        self.0.line(&Line::Header(Box::new(cfg.clone())));
        self.0.flush();
    }

    /// Logs an input and the effects it gave, written through.
    pub fn input(&mut self, time: Time, input: Input, effects: &[Effect]) {
        self.0.line(&Line::In { time, input });
        for e in effects {
            self.0.line(&Line::Out(e.clone()));
        }
        self.0.flush();
    }
}
