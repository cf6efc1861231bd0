//! The native job format of gridsched: JSON Lines, carrying what SWF cannot (service class,
//! owner priority, deadlines, licences, input data, benchmark scores; the job model of
//! `two-level-grid-scheduler.md` D2.1).
//!
//! # Format
//!
//! A UTF-8 text file (optionally gzip-compressed, recognised by its magic bytes) with one JSON
//! object per line. Blank lines and lines whose first non-blank character is `#` are ignored.
//! Each object is one job:
//!
//! | key | type | required | meaning |
//! |---|---|---|---|
//! | `id` | u64 | yes | unique job id |
//! | `submit` | i64 ≥ 0 | yes | submission time, seconds |
//! | `procs` | u32 ≥ 1 | yes | processors |
//! | `estimate` | i64 ≥ 1 | yes | estimated run time, seconds on the reference machine |
//! | `runtime` | i64 ≥ 0 | no | actual run time for replays |
//! | `user` | u32 | no (0) | owner |
//! | `class` | `"gold"`, `"silver"`, `"regular"` | no (`regular`) | owner's service class |
//! | `owner_priority` | 0..=3 | no (0) | priority the owner gives the job |
//! | `deadline` | i64 ≥ `submit` | no | absolute time by which the job must finish |
//! | `licences` | array of strings | no | licence names, each at most once |
//! | `memory_kb` | u64 | no | memory needed, KiB |
//! | `inputs` | array of `{"machine": u32 (optional), "size": u64}` | no | input data; no machine = shared storage |
//! | `stage_in` | array of `{"key": string, "bytes": u64, "at": [u32] (optional)}` | no | data staged in at the job's site before it starts: inputs of one key are the same bytes; `at` lists the sites (cluster indices) holding a copy at submission, none = the submitters' side |
//! | `benchmark` | u32 ≥ 1 | no | benchmark score of the machine the times were measured on |
//! | `partition` | u32 | no | home partition or site |
//! | `reservation` | u64 | no | the advance reservation the job runs in (planning policies) |
//! | `urgency` | `"important"`, `"high"`, `"critical"` | no (typical) | an urgent job's level: it outranks typical jobs and may preempt them |
//! | `after` | string | no | the jobs it waits for, in Slurm's `--dependency` syntax (`"afterok:12,afterany:13+60"`; delays in seconds) |
//! | `name` | string | no | the job's name, which `singleton` in `after` refers to |
//! | `array` | string | no | makes the job an array of tasks, in Slurm's `--array` syntax (`"0-99%10"`); its tasks take the ids `id + 1` to `id + tasks`, which no other job of the file may have |
//!
//! Unknown keys are an error. Licence names are interned into [`LicenceId`]s in order of first
//! appearance in the file (or after the names given to [`JsonlReader::with_licence_names`], so
//! that ids can match a platform's licence catalogue); [`JsonlReader::licence_names`] is the
//! resulting table. Example:
//!
//! ```text
//! # gridsched jobs
//! {"id":1,"submit":0,"procs":4,"estimate":3600,"runtime":1800}
//! {"id":2,"submit":60,"procs":1,"estimate":600,"class":"gold","licences":["matlab"],"deadline":7200}
//! ```
//!
//! Errors name the file, the line and the field path, e.g.
//! ``jobs.jsonl:3: field `procs`: invalid type: string "four", expected u32``.

use crate::error::WorkloadError;
use crate::input::{DynBufRead, OpenedInput, Progress, open_input};
use gridsched_core::model::{
    ArraySpec, DataIn, Dependency, InputRef, Job, JobId, LicenceId, MachineId, ReservationId,
    Urgency, UserClass, UserId,
};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::{self, BufRead, Write};
use std::path::Path;

/// One `inputs` element.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonInput {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    machine: Option<u32>,
    size: u64,
}

/// One job line as read.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonJobIn {
    id: u64,
    submit: i64,
    procs: u32,
    estimate: i64,
    #[serde(default)]
    runtime: Option<i64>,
    #[serde(default)]
    user: Option<u32>,
    #[serde(default)]
    class: Option<UserClass>,
    #[serde(default)]
    owner_priority: Option<u8>,
    #[serde(default)]
    deadline: Option<i64>,
    #[serde(default)]
    licences: Vec<String>,
    #[serde(default)]
    memory_kb: Option<u64>,
    #[serde(default)]
    inputs: Vec<JsonInput>,
    #[serde(default)]
    stage_in: Vec<DataIn>,
    #[serde(default)]
    benchmark: Option<u32>,
    #[serde(default)]
    partition: Option<u32>,
    #[serde(default)]
    reservation: Option<u64>,
    #[serde(default)]
    urgency: Option<Urgency>,
    #[serde(default)]
    after: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    array: Option<String>,
}

/// One job line as written (same keys, defaults left out).
#[derive(Serialize)]
struct JsonJobOut<'a> {
    id: u64,
    submit: i64,
    procs: u32,
    estimate: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    runtime: Option<i64>,
    #[serde(skip_serializing_if = "is_zero_u32")]
    user: u32,
    #[serde(skip_serializing_if = "is_regular")]
    class: UserClass,
    #[serde(skip_serializing_if = "is_zero_u8")]
    owner_priority: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    deadline: Option<i64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    licences: Vec<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    memory_kb: Option<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    inputs: Vec<JsonInput>,
    #[serde(skip_serializing_if = "<[DataIn]>::is_empty")]
    stage_in: &'a [DataIn],
    #[serde(skip_serializing_if = "Option::is_none")]
    benchmark: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    partition: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reservation: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    urgency: Option<Urgency>,
    #[serde(skip_serializing_if = "Option::is_none")]
    after: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    array: Option<String>,
}

fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}
fn is_zero_u8(v: &u8) -> bool {
    *v == 0
}
fn is_regular(c: &UserClass) -> bool {
    *c == UserClass::Regular
}

/// Licence names interned to ids in order of first appearance.
#[derive(Clone, Debug, Default)]
struct LicenceTable {
    names: Vec<String>,
    index: HashMap<String, LicenceId>,
}

impl LicenceTable {
    fn intern(&mut self, name: &str) -> Option<LicenceId> {
        if let Some(&id) = self.index.get(name) {
            return Some(id);
        }
        let id = LicenceId(u16::try_from(self.names.len()).ok()?);
        self.names.push(name.to_owned());
        self.index.insert(name.to_owned(), id);
        Some(id)
    }
}

/// A streaming reader of the JSON Lines job format.
pub struct JsonlReader<R = DynBufRead> {
    input: R,
    name: String,
    gzip: bool,
    progress: Option<Progress>,
    buf: Vec<u8>,
    line: u64,
    done: bool,
    licences: LicenceTable,
}

impl<R> std::fmt::Debug for JsonlReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonlReader")
            .field("name", &self.name)
            .field("line", &self.line)
            .field("licences", &self.licences.names)
            .finish_non_exhaustive()
    }
}

impl JsonlReader<DynBufRead> {
    /// Opens a JSON Lines file, plain or gzip (detected by the magic bytes).
    pub fn open(path: impl AsRef<Path>) -> Result<Self, WorkloadError> {
        Ok(JsonlReader::from_opened(open_input(path.as_ref())?))
    }

    /// Reads an input opened by [`open_input`].
    pub(crate) fn from_opened(opened: OpenedInput) -> Self {
        let mut r = JsonlReader::from_reader(opened.reader, opened.name);
        r.gzip = opened.gzip;
        r.progress = Some(opened.progress);
        r
    }
}

impl<R: BufRead> JsonlReader<R> {
    /// Reads jobs from `input`; `name` is used in error messages.
    pub fn from_reader(input: R, name: impl Into<String>) -> Self {
        JsonlReader {
            input,
            name: name.into(),
            gzip: false,
            progress: None,
            buf: Vec::with_capacity(256),
            line: 0,
            done: false,
            licences: LicenceTable::default(),
        }
    }

    /// Pre-assigns licence ids: `names[i]` gets `LicenceId(i)`; names met later in the file
    /// get the next ids.
    pub fn with_licence_names(mut self, names: &[String]) -> Result<Self, WorkloadError> {
        for n in names {
            if self.licences.index.contains_key(n) {
                return Err(WorkloadError::Options(format!(
                    "licence `{n}` is listed twice in the licence table"
                )));
            }
            self.licences.intern(n).ok_or_else(|| {
                WorkloadError::Options("more than 65,536 licence names".to_owned())
            })?;
        }
        Ok(self)
    }

    /// The licence names met so far; `names[i]` is `LicenceId(i)`.
    pub fn licence_names(&self) -> &[String] {
        &self.licences.names
    }

    /// The name used in error messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Progress through the file (only for readers made by [`JsonlReader::open`]).
    pub fn progress(&self) -> Option<&Progress> {
        self.progress.as_ref()
    }

    /// The next job, `None` at the end. A bad line yields its error and reading can go on;
    /// an I/O or gzip error ends the stream.
    pub fn next_job(&mut self) -> Option<Result<Job, WorkloadError>> {
        while !self.done {
            self.buf.clear();
            match self.input.read_until(b'\n', &mut self.buf) {
                Ok(0) => self.done = true,
                Ok(_) => {
                    self.line += 1;
                    let text = self.buf.trim_ascii();
                    if text.is_empty() || text.starts_with(b"#") {
                        continue;
                    }
                    return Some(self.parse_line());
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(WorkloadError::read(
                        &self.name,
                        self.line + 1,
                        self.gzip,
                        e,
                    )));
                }
            }
        }
        None
    }

    fn json_error(&self, path: &str, message: String) -> WorkloadError {
        WorkloadError::Json {
            file: self.name.clone(),
            line: self.line,
            path: path.to_owned(),
            message,
        }
    }

    fn parse_line(&mut self) -> Result<Job, WorkloadError> {
        let text = self.buf.trim_ascii();
        if let Some(&c) = text.first()
            && c != b'{'
        {
            return Err(self.json_error(
                "",
                format!(
                    "expected a JSON object, found `{}`",
                    char::from(c).escape_default()
                ),
            ));
        }
        let mut de = serde_json::Deserializer::from_slice(text);
        let raw: JsonJobIn = match serde_path_to_error::deserialize(&mut de) {
            Ok(raw) => raw,
            Err(e) => {
                let path = e.path().to_string();
                // "." is the whole object; "?" an unknown position (a syntax error).
                let path = if path == "." || path == "?" {
                    String::new()
                } else {
                    path
                };
                return Err(self.json_error(&path, describe_json_error(e.inner())));
            }
        };
        if let Err(e) = de.end() {
            return Err(self.json_error("", describe_json_error(&e)));
        }
        let mut licences = Vec::with_capacity(raw.licences.len());
        for (i, name) in raw.licences.iter().enumerate() {
            if raw.licences[..i].contains(name) {
                return Err(
                    self.json_error("licences", format!("licence `{name}` is listed twice"))
                );
            }
            let id = self.licences.intern(name).ok_or_else(|| {
                self.json_error("licences", "more than 65,536 licence names".to_owned())
            })?;
            licences.push(id);
        }
        let after = match &raw.after {
            Some(text) => Some(Box::new(
                Dependency::parse(text, raw.name.as_deref())
                    .map_err(|e| self.json_error("after", e.why))?,
            )),
            None => None,
        };
        let array = match &raw.array {
            Some(text) => Some(Box::new(
                text.parse::<ArraySpec>()
                    .map_err(|e| self.json_error("array", e.why))?,
            )),
            None => None,
        };
        let job = Job {
            id: JobId(raw.id),
            user: UserId(raw.user.unwrap_or(0)),
            user_class: raw.class.unwrap_or_default(),
            owner_priority: raw.owner_priority.unwrap_or(0),
            submit: raw.submit,
            procs: raw.procs,
            memory_kb: raw.memory_kb,
            estimate: raw.estimate,
            runtime: raw.runtime,
            deadline: raw.deadline,
            licences,
            inputs: raw
                .inputs
                .iter()
                .map(|i| InputRef {
                    machine: i.machine.map(MachineId),
                    size: i.size,
                })
                .collect(),
            stage_in: raw.stage_in,
            benchmark: raw.benchmark,
            partition: raw.partition,
            reservation: raw.reservation.map(ReservationId),
            urgency: raw.urgency,
            after,
            array,
            task: None,
        };
        job.validate().map_err(|source| WorkloadError::InvalidJob {
            file: self.name.clone(),
            line: self.line,
            source,
        })?;
        Ok(job)
    }
}

/// serde_json's message without its position (always line 1 here); the column is kept for
/// syntax errors, where it helps.
fn describe_json_error(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let msg = full.strip_suffix(&suffix).unwrap_or(&full);
    match e.classify() {
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
            format!("column {}: {msg}", e.column())
        }
        _ => msg.to_owned(),
    }
}

impl<R: BufRead> Iterator for JsonlReader<R> {
    type Item = Result<Job, WorkloadError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_job()
    }
}

/// Writes jobs in the JSON Lines format; licence ids are written as their names.
#[derive(Debug)]
pub struct JsonlWriter<W: Write> {
    out: W,
    licence_names: Vec<String>,
    buf: Vec<u8>,
}

impl<W: Write> JsonlWriter<W> {
    /// A writer to `out`; `licence_names[i]` is the name of `LicenceId(i)`.
    pub fn new(out: W, licence_names: Vec<String>) -> Self {
        JsonlWriter {
            out,
            licence_names,
            buf: Vec::with_capacity(256),
        }
    }

    /// Writes `# text` (one line; newlines in `text` become spaces).
    pub fn write_comment(&mut self, text: &str) -> io::Result<()> {
        writeln!(self.out, "# {}", text.replace(['\n', '\r'], " "))
    }

    /// Writes one job line. Fails with `InvalidInput` when the job uses a licence id that has
    /// no name in the table.
    pub fn write_job(&mut self, job: &Job) -> io::Result<()> {
        let mut licences = Vec::with_capacity(job.licences.len());
        for l in &job.licences {
            let name = self.licence_names.get(l.index()).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "job {}: licence {l} has no name (the table has {} names)",
                        job.id,
                        self.licence_names.len()
                    ),
                )
            })?;
            licences.push(name.as_str());
        }
        let out = JsonJobOut {
            id: job.id.0,
            submit: job.submit,
            procs: job.procs,
            estimate: job.estimate,
            runtime: job.runtime,
            user: job.user.0,
            class: job.user_class,
            owner_priority: job.owner_priority,
            deadline: job.deadline,
            licences,
            memory_kb: job.memory_kb,
            inputs: job
                .inputs
                .iter()
                .map(|i| JsonInput {
                    machine: i.machine.map(|m| m.0),
                    size: i.size,
                })
                .collect(),
            stage_in: &job.stage_in,
            benchmark: job.benchmark,
            partition: job.partition,
            reservation: job.reservation.map(|r| r.0),
            urgency: job.urgency,
            after: job.after.as_ref().map(|d| d.to_string()),
            array: job.array.as_ref().map(|a| a.to_string()),
            name: job.after.as_ref().and_then(|d| d.singleton.as_deref()),
        };
        self.buf.clear();
        serde_json::to_writer(&mut self.buf, &out).map_err(io::Error::other)?;
        self.buf.push(b'\n');
        self.out.write_all(&self.buf)
    }

    /// Flushes the output.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.out
    }
}

#[cfg(test)]
mod tests;
