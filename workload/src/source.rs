//! One job stream over every kind of input: an SWF trace (reader + normalizer,
//! `reference-semantics.md`, `self-tuning-and-multisite.md` §5.3), a native JSON Lines file, or
//! the synthetic generator (§5.4). It decides what a bad line does (end the stream, or be
//! skipped and counted) and exposes what a run report needs: the machine-size hint, the SWF
//! header, the normalizer's counters and read progress.

use crate::error::WorkloadError;
use crate::input::{Progress, open_input};
use crate::jsonl::JsonlReader;
use crate::swf::{NormalizeOptions, NormalizeStats, Normalizer, SwfHeader, SwfReader};
use crate::synthetic::{SyntheticGenerator, SyntheticParams};
use gridsched_core::model::Job;
use std::io::BufRead;
use std::path::Path;

/// How many skipped-line errors a source keeps for its report.
pub const KEPT_ERRORS: usize = 10;

/// The format of an input file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputFormat {
    /// Standard Workload Format.
    Swf,
    /// The native JSON Lines format.
    Jsonl,
}

/// An SWF reader with its normalizer.
#[derive(Debug)]
struct SwfSource {
    reader: SwfReader,
    normalizer: Normalizer,
}

#[derive(Debug)]
enum Kind {
    Swf(Box<SwfSource>),
    Jsonl(Box<JsonlReader>),
    Synthetic(Box<SyntheticGenerator>),
}

/// An iterator of jobs from any input; see the module documentation.
#[derive(Debug)]
pub struct JobSource {
    kind: Kind,
    skip_bad_lines: bool,
    skipped: u64,
    kept_errors: Vec<WorkloadError>,
    finished: bool,
}

impl JobSource {
    fn new(kind: Kind) -> Self {
        JobSource {
            kind,
            skip_bad_lines: false,
            skipped: 0,
            kept_errors: Vec::new(),
            finished: false,
        }
    }

    /// Jobs from an SWF reader, turned into jobs by `normalizer`.
    pub fn from_swf(reader: SwfReader, normalizer: Normalizer) -> Self {
        let normalizer = normalizer.with_file_name(reader.name());
        JobSource::new(Kind::Swf(Box::new(SwfSource { reader, normalizer })))
    }

    /// Opens an SWF file (plain or gzip) for a machine of `procs` processors, or, when `procs`
    /// is `None`, of the size its header gives (MaxProcs, else MaxNodes).
    pub fn open_swf(
        path: impl AsRef<Path>,
        procs: Option<u32>,
        options: NormalizeOptions,
    ) -> Result<Self, WorkloadError> {
        Self::swf_source(SwfReader::open(path)?, procs, options)
    }

    fn swf_source(
        reader: SwfReader,
        procs: Option<u32>,
        options: NormalizeOptions,
    ) -> Result<Self, WorkloadError> {
        let procs = match procs.or_else(|| reader.header().machine_procs_hint()) {
            Some(p) => p,
            None => {
                return Err(WorkloadError::Options(format!(
                    "{}: the SWF header gives no machine size (neither MaxProcs nor MaxNodes); \
                     give the number of processors explicitly",
                    reader.name()
                )));
            }
        };
        let normalizer = Normalizer::new(procs, options)?;
        Ok(JobSource::from_swf(reader, normalizer))
    }

    /// Jobs from a JSON Lines reader.
    pub fn from_jsonl(reader: JsonlReader) -> Self {
        JobSource::new(Kind::Jsonl(Box::new(reader)))
    }

    /// Opens a JSON Lines file (plain or gzip).
    pub fn open_jsonl(path: impl AsRef<Path>) -> Result<Self, WorkloadError> {
        Ok(JobSource::from_jsonl(JsonlReader::open(path)?))
    }

    /// Jobs from the synthetic generator.
    pub fn from_synthetic(generator: SyntheticGenerator) -> Self {
        JobSource::new(Kind::Synthetic(Box::new(generator)))
    }

    /// A synthetic workload with `params`.
    pub fn synthetic(params: SyntheticParams) -> Result<Self, WorkloadError> {
        Ok(JobSource::from_synthetic(SyntheticGenerator::new(params)?))
    }

    /// Opens a file of either format, recognised by its first non-blank character once
    /// decompressed: `{` or `#` means JSON Lines, anything else SWF. `procs` and `options`
    /// apply to SWF only (see [`JobSource::open_swf`]).
    pub fn open(
        path: impl AsRef<Path>,
        procs: Option<u32>,
        options: NormalizeOptions,
    ) -> Result<Self, WorkloadError> {
        let mut opened = open_input(path.as_ref())?;
        let first = loop {
            let buf = opened.reader.fill_buf().map_err(|e| WorkloadError::Io {
                file: opened.name.clone(),
                source: e,
            })?;
            if buf.is_empty() {
                break None;
            }
            match buf.iter().position(|b| !b.is_ascii_whitespace()) {
                Some(i) => break Some(buf[i]),
                None => {
                    let n = buf.len();
                    opened.reader.consume(n);
                }
            }
        };
        match first {
            Some(b'{' | b'#') => Ok(JobSource::from_jsonl(JsonlReader::from_opened(opened))),
            _ => Self::swf_source(SwfReader::from_opened(opened), procs, options),
        }
    }

    /// With `true`, lines that cannot be read are skipped and counted instead of ending the
    /// stream; I/O and gzip errors still end it. Default `false`.
    pub fn skip_bad_lines(mut self, skip: bool) -> Self {
        self.skip_bad_lines = skip;
        self
    }

    /// The input format (`None` for the synthetic generator).
    pub fn format(&self) -> Option<InputFormat> {
        match &self.kind {
            Kind::Swf(_) => Some(InputFormat::Swf),
            Kind::Jsonl(_) => Some(InputFormat::Jsonl),
            Kind::Synthetic(_) => None,
        }
    }

    /// Number of bad lines skipped so far.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// The first [`KEPT_ERRORS`] errors of skipped lines, for the report.
    pub fn skipped_errors(&self) -> &[WorkloadError] {
        &self.kept_errors
    }

    /// The machine size the input suggests: SWF header MaxProcs, else MaxNodes; the synthetic
    /// generator's P; nothing for JSON Lines.
    pub fn machine_procs_hint(&self) -> Option<u32> {
        match &self.kind {
            Kind::Swf(s) => s.reader.header().machine_procs_hint(),
            Kind::Jsonl(_) => None,
            Kind::Synthetic(g) => Some(g.procs()),
        }
    }

    /// The machine size SWF records are normalized for (SWF only).
    pub fn normalized_procs(&self) -> Option<u32> {
        match &self.kind {
            Kind::Swf(s) => Some(s.normalizer.procs()),
            _ => None,
        }
    }

    /// The SWF header (SWF only).
    pub fn header(&self) -> Option<&SwfHeader> {
        match &self.kind {
            Kind::Swf(s) => Some(s.reader.header()),
            _ => None,
        }
    }

    /// The normalizer's counters (SWF only).
    pub fn normalize_stats(&self) -> Option<&NormalizeStats> {
        match &self.kind {
            Kind::Swf(s) => Some(s.normalizer.stats()),
            _ => None,
        }
    }

    /// Read progress (files only): bytes consumed and file size.
    pub fn progress(&self) -> Option<&Progress> {
        match &self.kind {
            Kind::Swf(s) => s.reader.progress(),
            Kind::Jsonl(r) => r.progress(),
            Kind::Synthetic(_) => None,
        }
    }

    /// The licence-name table (JSON Lines; empty otherwise): `names[i]` is `LicenceId(i)`.
    pub fn licence_names(&self) -> &[String] {
        match &self.kind {
            Kind::Jsonl(r) => r.licence_names(),
            _ => &[],
        }
    }

    /// The next job or error from the underlying input, before the bad-line policy.
    fn next_raw(&mut self) -> Option<Result<Job, WorkloadError>> {
        match &mut self.kind {
            Kind::Swf(s) => loop {
                match s.reader.next_record()? {
                    Ok(rec) => match s.normalizer.normalize(&rec) {
                        Ok(Some(job)) => return Some(Ok(job)),
                        Ok(None) => continue,
                        Err(e) => return Some(Err(e)),
                    },
                    Err(e) => return Some(Err(e)),
                }
            },
            Kind::Jsonl(r) => r.next_job(),
            Kind::Synthetic(g) => g.next().map(Ok),
        }
    }
}

impl Iterator for JobSource {
    type Item = Result<Job, WorkloadError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.finished {
            match self.next_raw() {
                None => self.finished = true,
                Some(Ok(job)) => return Some(Ok(job)),
                Some(Err(e)) if self.skip_bad_lines && e.is_line_error() => {
                    self.skipped += 1;
                    if self.kept_errors.len() < KEPT_ERRORS {
                        self.kept_errors.push(e);
                    }
                }
                Some(Err(e)) => {
                    self.finished = true;
                    return Some(Err(e));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests;
