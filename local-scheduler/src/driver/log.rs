//! The local scheduler's replayable input log: every input its cluster runner handles, with the
//! time it handled it, and every decision the runner made, appended as JSON Lines to the file
//! named by `input_log` (a header line each time the service starts). `gridsim rerun` builds the
//! same runner from a header, feeds it the logged inputs and checks that it decides the same.

use gridsched_core::Time;
use gridsched_core::runner::replay::{Decision, Entry, Header, Line};
use gridsched_core::runner::{Effect, Input};
use gridsched_telemetry::JsonLines;
use std::path::Path;

/// An open log.
#[derive(Debug)]
pub struct InputLog(JsonLines);

impl InputLog {
    /// Opens `path` for appending and writes `header`.
    pub fn open(path: &Path, header: Header) -> std::io::Result<InputLog> {
        let mut log = InputLog(JsonLines::open(path)?);
        log.0.line(&Line::Header(Box::new(header)));
        log.flush();
        Ok(log)
    }

    /// Logs an input.
    pub fn input(&mut self, time: Time, input: &Input) {
        self.0.line(&Line::In(Entry {
            time,
            input: input.clone(),
        }));
    }

    /// Logs the decisions an input gave.
    pub fn effects(&mut self, time: Time, effects: &[Effect]) {
        for &effect in effects {
            self.0.line(&Line::Out(Decision { time, effect }));
        }
    }

    /// Writes what is buffered.
    pub fn flush(&mut self) {
        self.0.flush();
    }
}
