//! Errors of workload input (infrastructure for every format; SWF field names from SWF v2.2):
//! every error names the file, the 1-based line and, where it applies, the SWF field (number and
//! name) or the JSON field path, so that a bad trace can be fixed by hand.

use gridsched_core::model::JobError;
use std::io;

/// The names of the 18 SWF v2.2 fields, index 0 = field 1.
pub const SWF_FIELD_NAMES: [&str; 18] = [
    "job number",
    "submit time",
    "wait time",
    "run time",
    "allocated processors",
    "average CPU time",
    "used memory",
    "requested processors",
    "requested time",
    "requested memory",
    "status",
    "user id",
    "group id",
    "executable",
    "queue",
    "partition",
    "preceding job",
    "think time",
];

/// The name of SWF field `field` (1-based), or `"unknown field"` outside 1..=18.
pub fn swf_field_name(field: usize) -> &'static str {
    field
        .checked_sub(1)
        .and_then(|i| SWF_FIELD_NAMES.get(i))
        .copied()
        .unwrap_or("unknown field")
}

/// Anything that can go wrong while reading a workload.
///
/// The `Display` form always starts with `file:line:` when a line is involved (`file:` alone for
/// errors that concern the whole file), e.g.
/// `KTH.swf.gz:1234: field 5 (allocated processors): expected a number, found "abc"`.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// The file could not be opened or read.
    #[error("{file}: {source}")]
    Io {
        /// The file.
        file: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The file starts like gzip (magic bytes 1f 8b) but its compressed data is corrupt or
    /// truncated. `line` is the line that was being read when the problem was found.
    #[error("{file}:{line}: corrupt or truncated gzip data: {source}")]
    Gzip {
        /// The file.
        file: String,
        /// The line being read.
        line: u64,
        /// The decoder's error.
        #[source]
        source: io::Error,
    },
    /// An SWF job line does not have exactly 18 fields.
    #[error("{file}:{line}: expected 18 fields, found {found}")]
    FieldCount {
        /// The file.
        file: String,
        /// The line (1-based).
        line: u64,
        /// How many whitespace-separated fields the line has.
        found: usize,
    },
    /// One SWF field is malformed or out of range.
    #[error("{file}:{line}: field {field} ({}): {message}", swf_field_name(*.field))]
    Field {
        /// The file.
        file: String,
        /// The line (1-based).
        line: u64,
        /// The field number (1-based, as in the SWF definition).
        field: usize,
        /// What is wrong, including the text found.
        message: String,
    },
    /// A JSON Lines record could not be decoded. `path` is the field path inside the object
    /// (`procs`, `inputs[1].size`), empty when the problem is the line's syntax as a whole.
    #[error("{file}:{line}: {}{message}", json_path_prefix(.path))]
    Json {
        /// The file.
        file: String,
        /// The line (1-based).
        line: u64,
        /// The field path, or empty.
        path: String,
        /// The decoder's message, without its own (always `line 1`) position.
        message: String,
    },
    /// A record decoded but describes an impossible job (see [`gridsched_core::model::Job::validate`]);
    /// the message names the field.
    #[error("{file}:{line}: {source}")]
    InvalidJob {
        /// The file.
        file: String,
        /// The line (1-based).
        line: u64,
        /// Which invariant is broken.
        #[source]
        source: JobError,
    },
    /// Options or parameters that cannot be used (e.g. a machine of 0 processors).
    #[error("invalid workload options: {0}")]
    Options(String),
}

fn json_path_prefix(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!("field `{path}`: ")
    }
}

impl WorkloadError {
    /// True for errors confined to one line (a malformed or invalid record), which a reader can
    /// skip to go on with the next line; false for errors that end the input (I/O, gzip, options).
    pub fn is_line_error(&self) -> bool {
        matches!(
            self,
            WorkloadError::FieldCount { .. }
                | WorkloadError::Field { .. }
                | WorkloadError::Json { .. }
                | WorkloadError::InvalidJob { .. }
        )
    }

    /// The 1-based line the error is about, when there is one.
    pub fn line(&self) -> Option<u64> {
        match self {
            WorkloadError::Gzip { line, .. }
            | WorkloadError::FieldCount { line, .. }
            | WorkloadError::Field { line, .. }
            | WorkloadError::Json { line, .. }
            | WorkloadError::InvalidJob { line, .. } => Some(*line),
            WorkloadError::Io { .. } | WorkloadError::Options(_) => None,
        }
    }

    /// A read error on `file` at `line`: corrupt compressed data becomes [`WorkloadError::Gzip`]
    /// when the file is gzip, anything else [`WorkloadError::Io`].
    pub(crate) fn read(file: &str, line: u64, gzip: bool, source: io::Error) -> WorkloadError {
        let data_error = matches!(
            source.kind(),
            io::ErrorKind::InvalidData | io::ErrorKind::InvalidInput | io::ErrorKind::UnexpectedEof
        );
        if gzip && data_error {
            WorkloadError::Gzip {
                file: file.to_owned(),
                line,
                source,
            }
        } else {
            WorkloadError::Io {
                file: file.to_owned(),
                source,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_file_line_and_field() {
        let e = WorkloadError::Field {
            file: "KTH.swf.gz".into(),
            line: 1234,
            field: 5,
            message: "expected a number, found \"abc\"".into(),
        };
        assert_eq!(
            e.to_string(),
            "KTH.swf.gz:1234: field 5 (allocated processors): expected a number, found \"abc\""
        );
        let e = WorkloadError::FieldCount {
            file: "x.swf".into(),
            line: 17,
            found: 17,
        };
        assert_eq!(e.to_string(), "x.swf:17: expected 18 fields, found 17");
        assert!(e.is_line_error());
        assert_eq!(e.line(), Some(17));
        let e = WorkloadError::Json {
            file: "jobs.jsonl".into(),
            line: 3,
            path: "procs".into(),
            message: "invalid type".into(),
        };
        assert_eq!(e.to_string(), "jobs.jsonl:3: field `procs`: invalid type");
        assert_eq!(swf_field_name(18), "think time");
        assert_eq!(swf_field_name(0), "unknown field");
        assert_eq!(swf_field_name(19), "unknown field");
    }
}
