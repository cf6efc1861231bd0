//! The local scheduler's replayable input log: every input its cluster runner handles, with the
//! time it handled it, and every decision the runner made, appended as JSON Lines to the file
//! named by `input_log` (a header line each time the service starts). `gridsim rerun` builds the
//! same runner from a header, feeds it the logged inputs and checks that it decides the same.

use gridsched_core::Time;
use gridsched_core::runner::replay::{Decision, Entry, Header, Line};
use gridsched_core::runner::{Effect, Input};
use std::io::Write;
use std::path::Path;

/// An open log.
#[derive(Debug)]
pub struct InputLog {
    out: std::io::BufWriter<std::fs::File>,
    failed: bool,
}

impl InputLog {
    /// Opens `path` for appending and writes `header`.
    pub fn open(path: &Path, header: Header) -> std::io::Result<InputLog> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        let mut log = InputLog {
            out: std::io::BufWriter::new(file),
            failed: false,
        };
        log.line(&Line::Header(Box::new(header)));
        log.flush();
        Ok(log)
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

    /// Logs an input.
    pub fn input(&mut self, time: Time, input: &Input) {
        self.line(&Line::In(Entry {
            time,
            input: input.clone(),
        }));
    }

    /// Logs the decisions an input gave.
    pub fn effects(&mut self, time: Time, effects: &[Effect]) {
        for &effect in effects {
            self.line(&Line::Out(Decision { time, effect }));
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
