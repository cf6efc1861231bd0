//! A service's record file of JSON Lines (the input logs of the cluster and grid runners, which
//! `gridsim rerun` re-decides): appended to, one value a line, written through at each
//! [`JsonLines::flush`]. A write that fails is reported once and the record stops there, so that
//! a full disk never stops a scheduler.

use std::io::Write;
use std::path::Path;

/// An open JSON Lines file.
#[derive(Debug)]
pub struct JsonLines {
    out: std::io::BufWriter<std::fs::File>,
    failed: bool,
}

impl JsonLines {
    /// Opens `path` for appending (created when missing).
    pub fn open(path: &Path) -> std::io::Result<JsonLines> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(JsonLines {
            out: std::io::BufWriter::new(file),
            failed: false,
        })
    }

    /// Appends `value` as a line.
    pub fn line(&mut self, value: &impl serde::Serialize) {
        if self.failed {
            return;
        }
        let res = serde_json::to_writer(&mut self.out, value)
            .and_then(|_| self.out.write_all(b"\n").map_err(serde_json::Error::io));
        if let Err(e) = res {
            self.fail(&e);
        }
    }

    /// Writes what is buffered.
    pub fn flush(&mut self) {
        if !self.failed
            && let Err(e) = self.out.flush()
        {
            self.fail(&e);
        }
    }

    fn fail(&mut self, e: &dyn std::fmt::Display) {
        tracing::error!("input log: {e}; no more lines are written");
        self.failed = true;
    }
}
