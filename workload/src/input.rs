//! Opening input files for every text format of the crate (infrastructure, no spec section):
//! gzip is recognised by its magic bytes (`1f 8b`), never by the file name, and the bytes read
//! from the file (compressed bytes for a gzip file) are counted so that a caller can show
//! progress.

use crate::error::WorkloadError;
use crate::prefetch::Prefetch;
use flate2::bufread::MultiGzDecoder;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A boxed buffered reader, the input type of readers opened from a path.
pub type DynBufRead = Box<dyn BufRead + Send>;

/// Buffer size for both the file and the decompressed stream.
const BUFFER_BYTES: usize = 256 * 1024;

/// The two magic bytes that start every gzip member.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// How far a reader has got through its file: bytes read from the file so far (compressed bytes
/// for a gzip file, so they compare with the file size) and the file size. Cheap to clone; clones
/// share the counter, so a progress bar can hold one while another thread reads.
#[derive(Clone, Debug, Default)]
pub struct Progress {
    consumed: Arc<AtomicU64>,
    total: Option<u64>,
}

impl Progress {
    /// Bytes read from the file so far (reads run ahead of parsing by at most one buffer).
    pub fn consumed(&self) -> u64 {
        self.consumed.load(Ordering::Relaxed)
    }

    /// The file size in bytes, when known.
    pub fn total(&self) -> Option<u64> {
        self.total
    }

    /// `consumed / total` in [0, 1], when the size is known and non-zero.
    pub fn fraction(&self) -> Option<f64> {
        match self.total {
            Some(t) if t > 0 => Some((self.consumed() as f64 / t as f64).min(1.0)),
            _ => None,
        }
    }
}

/// A reader that adds every byte it reads to a shared counter.
struct CountingReader<R> {
    inner: R,
    counter: Arc<AtomicU64>,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.counter.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// An input opened by [`open_input`].
pub struct OpenedInput {
    /// The (decompressed) text.
    pub reader: DynBufRead,
    /// Whether the file is gzip-compressed.
    pub gzip: bool,
    /// Progress through the file.
    pub progress: Progress,
    /// The name used in error messages (the path as given).
    pub name: String,
}

impl std::fmt::Debug for OpenedInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenedInput")
            .field("name", &self.name)
            .field("gzip", &self.gzip)
            .field("progress", &self.progress)
            .finish_non_exhaustive()
    }
}

/// Opens `path`, decompressing it on the fly when it starts with the gzip magic bytes
/// (concatenated gzip members are read as one stream).
pub fn open_input(path: &Path) -> Result<OpenedInput, WorkloadError> {
    let name = path.display().to_string();
    let io_err = |source| WorkloadError::Io {
        file: name.clone(),
        source,
    };
    let file = File::open(path).map_err(io_err)?;
    let total = file.metadata().map_err(io_err)?.len();
    let progress = Progress {
        consumed: Arc::new(AtomicU64::new(0)),
        total: Some(total),
    };
    let counting = CountingReader {
        inner: file,
        counter: Arc::clone(&progress.consumed),
    };
    let buffered = BufReader::with_capacity(BUFFER_BYTES, counting);
    let (reader, gzip) = detect_gzip(buffered).map_err(io_err)?;
    Ok(OpenedInput {
        reader,
        gzip,
        progress,
        name,
    })
}

/// Wraps `reader` in a gzip decoder when its first two bytes are the gzip magic bytes; returns
/// the reader to use and whether it is gzip. Decompression runs ahead on a background thread
/// (see the private `prefetch` module).
pub fn detect_gzip<R: BufRead + Send + 'static>(mut reader: R) -> io::Result<(DynBufRead, bool)> {
    let mut head = [0u8; 2];
    let mut have = 0;
    // `fill_buf` may return fewer bytes than the buffer holds; peek without consuming, and
    // fall back to reading the two bytes into a chain only in the (rare) short-read case.
    {
        let buf = reader.fill_buf()?;
        if buf.len() >= 2 {
            head.copy_from_slice(&buf[..2]);
            have = 2;
        }
    }
    if have == 2 {
        return Ok(if head == GZIP_MAGIC {
            (Prefetch::spawn(MultiGzDecoder::new(reader)), true)
        } else {
            (Box::new(reader), false)
        });
    }
    while have < 2 {
        let n = reader.read(&mut head[have..])?;
        if n == 0 {
            break;
        }
        have += n;
    }
    let prefix = io::Cursor::new(head[..have].to_vec());
    let chained = BufReader::with_capacity(BUFFER_BYTES, prefix.chain(reader));
    if have == 2 && head == GZIP_MAGIC {
        Ok((Prefetch::spawn(MultiGzDecoder::new(chained)), true))
    } else {
        Ok((Box::new(chained), false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::Compression;
    use flate2::write::GzEncoder;
    use std::io::Write;

    fn read_all(mut r: DynBufRead) -> String {
        let mut s = String::new();
        r.read_to_string(&mut s).unwrap();
        s
    }

    #[test]
    fn gzip_is_detected_by_magic_bytes() {
        let mut enc = GzEncoder::new(Vec::new(), Compression::default());
        enc.write_all(b"hello\nworld\n").unwrap();
        let gz = enc.finish().unwrap();
        let (r, gzip) = detect_gzip(io::Cursor::new(gz)).unwrap();
        assert!(gzip);
        assert_eq!(read_all(r), "hello\nworld\n");
        let (r, gzip) = detect_gzip(io::Cursor::new(b"plain\n".to_vec())).unwrap();
        assert!(!gzip);
        assert_eq!(read_all(r), "plain\n");
        let (r, gzip) = detect_gzip(io::Cursor::new(b"x".to_vec())).unwrap();
        assert!(!gzip);
        assert_eq!(read_all(r), "x");
        let (r, gzip) = detect_gzip(io::Cursor::new(Vec::new())).unwrap();
        assert!(!gzip);
        assert_eq!(read_all(r), "");
    }

    #[test]
    fn short_first_read_still_detects_gzip() {
        let mut enc = GzEncoder::new(Vec::new(), Compression::default());
        enc.write_all(b"abc\n").unwrap();
        let gz = enc.finish().unwrap();
        // A BufReader of capacity 1 returns one byte from fill_buf.
        let r = BufReader::with_capacity(1, io::Cursor::new(gz));
        let (r, gzip) = detect_gzip(r).unwrap();
        assert!(gzip);
        assert_eq!(read_all(r), "abc\n");
    }

    #[test]
    fn missing_file_names_the_path() {
        let err = open_input(Path::new("/nonexistent/dir/trace.swf")).unwrap_err();
        assert!(err.to_string().starts_with("/nonexistent/dir/trace.swf: "));
    }
}
