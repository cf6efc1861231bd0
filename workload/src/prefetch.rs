//! A buffered reader that fills its buffers on a background thread, so that decompressing a
//! gzip trace overlaps with parsing it (part of the input layer behind every format; no spec
//! section: it only makes reading the real traces about twice as fast on two cores).
//!
//! The worker reads fixed-size chunks and sends them over a bounded channel; the consumer sends
//! emptied chunks back for reuse, so there is no allocation per chunk once a few are in flight.
//! A read error is passed on in order and ends the stream. Dropping the reader stops the worker
//! at its next send.

use std::io::{self, BufRead, Read};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread;

/// Bytes per chunk.
const CHUNK_BYTES: usize = 256 * 1024;
/// Chunks in flight between the worker and the consumer.
const CHUNKS_IN_FLIGHT: usize = 4;

/// What the worker sends: a filled chunk (empty = end of input) or the error that ended it.
type Message = io::Result<Vec<u8>>;

/// The consumer side; implements [`BufRead`].
pub(crate) struct Prefetch {
    /// `None` once the end or an error was received.
    chunks: Option<Receiver<Message>>,
    recycle: SyncSender<Vec<u8>>,
    current: Vec<u8>,
    pos: usize,
}

impl Prefetch {
    /// Starts a worker thread reading `inner`. Falls back to reading on the caller's thread if
    /// no thread can be spawned.
    pub(crate) fn spawn<R: Read + Send + 'static>(inner: R) -> Box<dyn BufRead + Send> {
        let (chunk_tx, chunk_rx) = sync_channel::<Message>(CHUNKS_IN_FLIGHT);
        let (recycle_tx, recycle_rx) = sync_channel::<Vec<u8>>(CHUNKS_IN_FLIGHT + 2);
        let inner = std::sync::Arc::new(std::sync::Mutex::new(Some(inner)));
        let worker_inner = std::sync::Arc::clone(&inner);
        let spawned = thread::Builder::new()
            .name("gridsched-prefetch".into())
            .spawn(move || {
                let taken = worker_inner.lock().ok().and_then(|mut g| g.take());
                if let Some(reader) = taken {
                    worker(reader, &chunk_tx, &recycle_rx);
                }
            });
        if spawned.is_err() {
            let taken = inner.lock().ok().and_then(|mut g| g.take());
            if let Some(reader) = taken {
                return Box::new(io::BufReader::with_capacity(CHUNK_BYTES, reader));
            }
        }
        Box::new(Prefetch {
            chunks: Some(chunk_rx),
            recycle: recycle_tx,
            current: Vec::new(),
            pos: 0,
        })
    }
}

/// The worker loop: fill chunks until the end, an error, or the consumer is gone.
fn worker<R: Read>(mut reader: R, chunks: &SyncSender<Message>, recycle: &Receiver<Vec<u8>>) {
    loop {
        let mut buf = recycle.try_recv().unwrap_or_default();
        buf.resize(CHUNK_BYTES, 0);
        let mut filled = 0;
        let mut error = None;
        while filled < CHUNK_BYTES {
            match reader.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
        buf.truncate(filled);
        let at_end = filled == 0;
        if filled > 0 && chunks.send(Ok(buf)).is_err() {
            return;
        }
        if let Some(e) = error {
            let _ = chunks.send(Err(e));
            return;
        }
        if at_end {
            let _ = chunks.send(Ok(Vec::new()));
            return;
        }
    }
}

impl Read for Prefetch {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Prefetch {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.pos >= self.current.len() {
            let Some(rx) = &self.chunks else {
                return Ok(&[]);
            };
            let next = rx.recv().unwrap_or_else(|_| Ok(Vec::new()));
            match next {
                Ok(chunk) if chunk.is_empty() => {
                    self.chunks = None;
                }
                Ok(chunk) => {
                    let old = std::mem::replace(&mut self.current, chunk);
                    self.pos = 0;
                    if old.capacity() > 0 {
                        let _ = self.recycle.try_send(old);
                    }
                }
                Err(e) => {
                    self.chunks = None;
                    return Err(e);
                }
            }
        }
        Ok(&self.current[self.pos..])
    }

    fn consume(&mut self, amt: usize) {
        self.pos = (self.pos + amt).min(self.current.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that yields `data` in small pieces, then fails.
    struct Flaky {
        data: Vec<u8>,
        pos: usize,
        fail_at_end: bool,
    }

    impl Read for Flaky {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            if self.pos >= self.data.len() {
                return if self.fail_at_end {
                    Err(io::Error::new(io::ErrorKind::InvalidData, "broken"))
                } else {
                    Ok(0)
                };
            }
            let n = out.len().min(1000).min(self.data.len() - self.pos);
            out[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
            self.pos += n;
            Ok(n)
        }
    }

    #[test]
    fn delivers_everything_in_order() {
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let mut r = Prefetch::spawn(Flaky {
            data: data.clone(),
            pos: 0,
            fail_at_end: false,
        });
        let mut out = Vec::new();
        r.read_to_end(&mut out).unwrap();
        assert_eq!(out, data);
        assert_eq!(r.fill_buf().unwrap().len(), 0);
    }

    #[test]
    fn passes_the_error_on_after_the_data() {
        let data = b"line one\nline two\n".to_vec();
        let mut r = Prefetch::spawn(Flaky {
            data,
            pos: 0,
            fail_at_end: true,
        });
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        r.read_line(&mut line).unwrap();
        assert_eq!(line, "line one\nline two\n");
        let e = r.read_line(&mut String::new()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert_eq!(r.read_line(&mut String::new()).unwrap(), 0);
    }

    #[test]
    fn dropping_early_stops_the_worker() {
        let data = vec![b'x'; 10 * CHUNK_BYTES];
        let mut r = Prefetch::spawn(Flaky {
            data,
            pos: 0,
            fail_at_end: false,
        });
        assert!(!r.fill_buf().unwrap().is_empty());
        drop(r); // must not hang
    }
}
