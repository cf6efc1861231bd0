//! Streaming SWF reader (Standard Workload Format v2.2; `reference-semantics.md` "Input rules"):
//! reads the header block eagerly, then yields one [`SwfRecord`] per job line, reusing a single
//! line buffer (no heap allocation per line on the success path).
//!
//! Lines whose first non-blank character is `;` are comments (the ones before the first job line
//! form the [`SwfHeader`]); blank lines are skipped. A malformed job line yields an error for that
//! line and reading can go on with the next one; an I/O or gzip error ends the stream.

use super::header::SwfHeader;
use super::record::{SwfRecord, parse_record};
use crate::error::WorkloadError;
use crate::input::{DynBufRead, OpenedInput, Progress, open_input};
use std::io::BufRead;
use std::path::Path;

/// What kind of line the buffer holds.
enum LineKind {
    Blank,
    Comment,
    Job,
}

fn classify(line: &[u8]) -> LineKind {
    match line.iter().find(|b| !b.is_ascii_whitespace()) {
        None => LineKind::Blank,
        Some(b';') => LineKind::Comment,
        Some(_) => LineKind::Job,
    }
}

/// A streaming reader of SWF records.
pub struct SwfReader<R = DynBufRead> {
    input: R,
    name: String,
    gzip: bool,
    progress: Option<Progress>,
    header: SwfHeader,
    buf: Vec<u8>,
    /// 1-based number of the line in `buf`.
    line: u64,
    /// `buf` holds a job line not yet returned (the first one, read with the header).
    pending: bool,
    /// An I/O error ended the stream, or the end was reached.
    done: bool,
    /// An error met while reading the header, returned by the first `next_record`.
    deferred: Option<WorkloadError>,
}

impl<R> std::fmt::Debug for SwfReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SwfReader")
            .field("name", &self.name)
            .field("gzip", &self.gzip)
            .field("line", &self.line)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl SwfReader<DynBufRead> {
    /// Opens an SWF file, plain or gzip (detected by the magic bytes), and reads its header.
    ///
    /// Fails only if the file cannot be opened; a read error inside the header is reported by
    /// the first [`SwfReader::next_record`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self, WorkloadError> {
        Ok(SwfReader::from_opened(open_input(path.as_ref())?))
    }

    /// Reads an input opened by [`open_input`].
    pub(crate) fn from_opened(opened: OpenedInput) -> Self {
        let mut r = SwfReader::with_parts(opened.reader, opened.name, opened.gzip);
        r.progress = Some(opened.progress);
        r.read_header();
        r
    }
}

impl<R: BufRead> SwfReader<R> {
    /// Reads SWF text (already decompressed) from `input`; `name` is used in error messages.
    /// See [`crate::input::detect_gzip`] to accept gzip from any reader.
    pub fn from_reader(input: R, name: impl Into<String>) -> Self {
        let mut r = SwfReader::with_parts(input, name.into(), false);
        r.read_header();
        r
    }

    fn with_parts(input: R, name: String, gzip: bool) -> Self {
        SwfReader {
            input,
            name,
            gzip,
            progress: None,
            header: SwfHeader::new(),
            buf: Vec::with_capacity(256),
            line: 0,
            pending: false,
            done: false,
            deferred: None,
        }
    }

    /// Reads the next line into `buf`; `Ok(false)` at the end.
    fn read_line(&mut self) -> Result<bool, WorkloadError> {
        self.buf.clear();
        match self.input.read_until(b'\n', &mut self.buf) {
            Ok(0) => Ok(false),
            Ok(_) => {
                self.line += 1;
                Ok(true)
            }
            Err(e) => Err(WorkloadError::read(&self.name, self.line + 1, self.gzip, e)),
        }
    }

    fn read_header(&mut self) {
        loop {
            match self.read_line() {
                Ok(true) => match classify(&self.buf) {
                    LineKind::Blank => {}
                    LineKind::Comment => {
                        let text = String::from_utf8_lossy(&self.buf);
                        if let Some(rest) = text.trim_start().strip_prefix(';') {
                            self.header.push_comment(rest);
                        }
                    }
                    LineKind::Job => {
                        self.pending = true;
                        return;
                    }
                },
                Ok(false) => {
                    self.done = true;
                    return;
                }
                Err(e) => {
                    self.done = true;
                    self.deferred = Some(e);
                    return;
                }
            }
        }
    }

    /// The header (empty for a file without header lines).
    pub fn header(&self) -> &SwfHeader {
        &self.header
    }

    /// The name used in error messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the input is gzip-compressed.
    pub fn is_gzip(&self) -> bool {
        self.gzip
    }

    /// Progress through the file (only for readers made by [`SwfReader::open`]).
    pub fn progress(&self) -> Option<&Progress> {
        self.progress.as_ref()
    }

    /// Bytes read from the file so far (compressed bytes for gzip), 0 when not opened from a file.
    pub fn bytes_consumed(&self) -> u64 {
        self.progress.as_ref().map_or(0, Progress::consumed)
    }

    /// The file size in bytes, when opened from a file.
    pub fn file_size(&self) -> Option<u64> {
        self.progress.as_ref().and_then(Progress::total)
    }

    /// The number of the last line read (1-based; 0 before any).
    pub fn line_number(&self) -> u64 {
        self.line
    }

    /// The next job record, `None` at the end of the input. After an I/O or gzip error the
    /// stream ends; after a malformed line it goes on with the next line.
    pub fn next_record(&mut self) -> Option<Result<SwfRecord, WorkloadError>> {
        if let Some(e) = self.deferred.take() {
            return Some(Err(e));
        }
        if self.pending {
            self.pending = false;
            return Some(parse_record(&self.buf, &self.name, self.line));
        }
        while !self.done {
            match self.read_line() {
                Ok(true) => {
                    if let LineKind::Job = classify(&self.buf) {
                        return Some(parse_record(&self.buf, &self.name, self.line));
                    }
                }
                Ok(false) => self.done = true,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
        None
    }
}

impl<R: BufRead> Iterator for SwfReader<R> {
    type Item = Result<SwfRecord, WorkloadError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_record()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "; Version: 2.2\n; MaxProcs: 8\n\n;\n\
        1 0 5 100 4 -1 -1 4 200 -1 1 3 1 -1 -1 -1 -1 -1\n\
        \n\
        ; a comment in the middle\n\
        2 10 5 100 4 -1 -1 4 200 -1 1 3 1 -1 -1 -1 -1\n\
        3 20 5 100 4 -1 -1 4 200 -1 1 3 1 -1 -1 -1 -1 -1";

    #[test]
    fn header_before_first_record_and_line_numbers() {
        let mut r = SwfReader::from_reader(SAMPLE.as_bytes(), "s.swf");
        assert_eq!(r.header().max_procs(), Some(8));
        assert_eq!(r.header().entries().len(), 2);
        let a = r.next_record().unwrap().unwrap();
        assert_eq!((a.job_number, a.line), (1, 5));
        let e = r.next_record().unwrap().unwrap_err();
        assert_eq!(e.to_string(), "s.swf:8: expected 18 fields, found 17");
        let c = r.next_record().unwrap().unwrap();
        assert_eq!((c.job_number, c.line, c.submit_time), (3, 9, 20));
        assert!(r.next_record().is_none());
        assert!(r.next_record().is_none());
        assert_eq!(
            r.header().entries().len(),
            2,
            "later comments are not header"
        );
    }

    #[test]
    fn empty_and_header_only_inputs() {
        let mut r = SwfReader::from_reader(&b""[..], "e.swf");
        assert!(r.header().is_empty());
        assert!(r.next().is_none());
        let mut r = SwfReader::from_reader(&b"; MaxNodes: 3\n"[..], "h.swf");
        assert_eq!(r.header().max_nodes(), Some(3));
        assert!(r.next().is_none());
    }

    #[test]
    fn no_header_file() {
        let text = "757900 53191355  15656   5998   21     -1    -1   21  86400    -1  1 649 371  -1 -1 10 -1 -1\n";
        let recs: Vec<_> = SwfReader::from_reader(text.as_bytes(), "c.swf")
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(recs.len(), 1);
        assert_eq!(recs[0].partition, 10);
        assert_eq!(recs[0].line, 1);
    }
}
