//! A content-addressed file store (blobs named by their SHA-256), the one shape every side of
//! input staging keeps: the meta-scheduler's uploads, a site's cache, a machine's cache. A blob
//! is written to a `.part` file and becomes visible under its digest only once complete and
//! checked, so that a reader never sees a partial or corrupt input; a transfer broken off resumes
//! from the `.part` file's length. The pattern is the one of grid data caches (ARC's cache,
//! HTCondor's file transfer): the content's digest is its name, so the same bytes are moved and
//! kept once.

use sha2::{Digest, Sha256};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Largest piece of a blob in one `BlobChunk`.
pub const CHUNK: usize = 1024 * 1024;

/// The HTTP/2 flow-control window of a stream carrying blobs (servers and the clients that read
/// them): several chunks in flight, so that a transfer is not paced by window updates.
pub const WINDOW: u32 = 8 * 1024 * 1024;

/// The largest HTTP/2 frame such a peer accepts (the protocol's default is 16 KiB: 64 frames per
/// chunk).
pub const FRAME: u32 = 1024 * 1024;

/// Whether `s` is a SHA-256 as the API writes it: 64 lowercase hex digits.
pub fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// The SHA-256 of a file's content.
pub fn digest_file(path: &Path) -> io::Result<String> {
    digest_reader(File::open(path)?)
}

/// The SHA-256 of what `f` reads to its end, in lower-case hex.
pub fn digest_reader(mut f: impl Read) -> io::Result<String> {
    let mut h = Sha256::new();
    let mut buf = vec![0; CHUNK];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Ok(hex(&h.finalize()));
        }
        h.update(&buf[..n]);
    }
}

/// The SHA-256 of a file read in pieces, some of them read again (a sender resending from an
/// offset): each piece counts from where the digest has reached; a piece beyond it leaves the
/// digest incomplete.
#[derive(Debug, Clone, Default)]
pub struct PrefixDigest {
    hash: Sha256,
    upto: u64,
}

impl PrefixDigest {
    /// Takes `data`, the file's bytes from `offset`.
    pub fn take(&mut self, offset: u64, data: &[u8]) {
        let end = offset + data.len() as u64;
        if offset <= self.upto && self.upto < end {
            self.hash.update(&data[(self.upto - offset) as usize..]);
            self.upto = end;
        }
    }

    /// The digest of the file's first `size` bytes, when every one of them was taken.
    pub fn finish(self, size: u64) -> Option<String> {
        (self.upto == size).then(|| hex(&self.hash.finalize()))
    }
}

/// Why a piece of a blob was not taken.
#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    /// The digest is not 64 lowercase hex digits.
    #[error("`{0}` is not a SHA-256 (64 lowercase hex digits)")]
    BadDigest(String),
    /// The bytes received do not have the digest they were sent under: the copy was dropped.
    #[error("the {size} bytes received have SHA-256 {got}, not {want}: dropped")]
    Mismatch {
        /// The digest expected.
        want: String,
        /// The digest of what arrived.
        got: String,
        /// Bytes received.
        size: u64,
    },
    /// More bytes than the blob's size.
    #[error("a chunk ends at byte {end}, past the blob's size {size}")]
    PastEnd {
        /// Where the chunk ends.
        end: u64,
        /// The blob's size.
        size: u64,
    },
    /// The disk refused.
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// What a store holds of one blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    /// Bytes held: the blob's size when complete, else the partial copy's length.
    pub have: u64,
    /// The blob is complete and checked.
    pub complete: bool,
}

/// A directory of blobs, `<dir>/<first two hex digits>/<digest>`.
#[derive(Debug, Clone)]
pub struct Blobs {
    dir: PathBuf,
}

impl Blobs {
    /// The store in `dir`, created if missing.
    pub fn open(dir: impl Into<PathBuf>) -> io::Result<Blobs> {
        let dir = dir.into();
        fs::create_dir_all(dir.join("tmp"))?;
        Ok(Blobs { dir })
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the complete blob `sha` lies (whether or not it is there).
    pub fn path(&self, sha: &str) -> PathBuf {
        self.dir.join(&sha[..2.min(sha.len())]).join(sha)
    }

    fn part(&self, sha: &str) -> PathBuf {
        self.dir.join("tmp").join(format!("{sha}.part"))
    }

    fn checked(sha: &str) -> Result<(), BlobError> {
        match is_sha256(sha) {
            true => Ok(()),
            false => Err(BlobError::BadDigest(sha.to_owned())),
        }
    }

    /// The size of blob `sha` if it is complete here.
    pub fn size(&self, sha: &str) -> Option<u64> {
        if !is_sha256(sha) {
            return None;
        }
        fs::metadata(self.path(sha)).ok().map(|m| m.len())
    }

    /// What the store holds of `sha`.
    pub fn held(&self, sha: &str) -> Result<Held, BlobError> {
        Self::checked(sha)?;
        if let Some(size) = self.size(sha) {
            return Ok(Held {
                have: size,
                complete: true,
            });
        }
        let have = fs::metadata(self.part(sha)).map_or(0, |m| m.len());
        Ok(Held {
            have,
            complete: false,
        })
    }

    /// Takes `data`, the bytes of blob `sha` (of `size` bytes in all) from `offset`: what the
    /// partial copy holds already is skipped, a chunk past its end is not taken (the answer says
    /// where to resend from). The chunk that completes the blob has the whole checked: a match
    /// makes it visible under its digest (durably), a mismatch drops the copy. For a stream of
    /// chunks, [`Blobs::appender`] keeps the file open and hashes as it goes (every transfer
    /// takes that way, through [`crate::intake`]; this one-shot form, which hashes the partial
    /// copy again at each call, serves the store's tests).
    #[cfg(test)]
    pub fn append(
        &self,
        sha: &str,
        offset: u64,
        data: &[u8],
        size: u64,
    ) -> Result<Held, BlobError> {
        self.appender(sha, size)?.append(offset, data)
    }

    /// An appender to blob `sha` of `size` bytes, from where its partial copy ends (whose bytes
    /// are hashed once, here).
    pub fn appender(&self, sha: &str, size: u64) -> Result<Appender, BlobError> {
        let held = self.held(sha)?;
        let mut hash = Sha256::new();
        let mut file = None;
        if !held.complete {
            let part = self.part(sha);
            let mut f = OpenOptions::new()
                .create(true)
                .read(true)
                .append(true)
                .open(&part)?;
            let mut buf = vec![0; CHUNK];
            let mut at = 0u64;
            loop {
                let n = f.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                hash.update(&buf[..n]);
                at += n as u64;
            }
            if at != held.have {
                return Err(io::Error::other("the partial copy changed while being read").into());
            }
            file = Some(f);
        }
        Ok(Appender {
            store: self.clone(),
            sha: sha.to_owned(),
            size,
            held,
            file,
            hash: Hashing::Here(hash),
        })
    }

    /// Moves a checked file to its place under `sha`, durably.
    fn publish(&self, from: &Path, sha: &str) -> io::Result<()> {
        let to = self.path(sha);
        let parent = to.parent().expect("under the store");
        fs::create_dir_all(parent)?;
        fs::rename(from, &to)?;
        File::open(parent)?.sync_all()
    }

    /// A writer for a blob whose digest is known only at its end (an upload, a URL's content).
    pub fn writer(&self) -> io::Result<BlobWriter> {
        let tmp = self
            .dir
            .join("tmp")
            .join(format!("in-{}-{}", std::process::id(), unique()));
        Ok(BlobWriter {
            file: File::create(&tmp)?,
            tmp,
            hash: Sha256::new(),
            len: 0,
            store: self.clone(),
        })
    }

    /// Complete blob `sha`, open and positioned at `offset`, for reading in sequence.
    pub fn reader(&self, sha: &str, offset: u64) -> io::Result<File> {
        let mut f = File::open(self.path(sha))?;
        f.seek(SeekFrom::Start(offset))?;
        Ok(f)
    }

    /// Takes the file at `path`, whose content has SHA-256 `sha` as the one who wrote it says,
    /// into the store (a hard link, or a copy across file systems), unless the store holds it
    /// already: a job's declared output kept at its site becomes readable as a blob there. The
    /// file must not change afterwards (the site's output store only ever appends, and starts a
    /// new run's file afresh). Whoever receives the blob checks its digest, so a wrong claim is
    /// never used.
    pub fn adopt(&self, sha: &str, path: &Path) -> Result<(), BlobError> {
        Self::checked(sha)?;
        if self.size(sha).is_some() {
            return Ok(());
        }
        let tmp = self
            .dir
            .join("tmp")
            .join(format!("adopt-{}-{}", std::process::id(), unique()));
        if fs::hard_link(path, &tmp).is_err() {
            fs::copy(path, &tmp)?;
            File::open(&tmp)?.sync_all()?;
        }
        let out = self.publish(&tmp, sha);
        let _ = fs::remove_file(&tmp);
        Ok(out?)
    }

    /// Places complete blob `sha` at `dest` (a hard link, or a copy across file systems),
    /// creating its directories and replacing what was there.
    pub fn place(&self, sha: &str, dest: &Path) -> io::Result<()> {
        if let Some(p) = dest.parent() {
            fs::create_dir_all(p)?;
        }
        let _ = fs::remove_file(dest);
        let from = self.path(sha);
        if fs::hard_link(&from, dest).is_err() {
            fs::copy(&from, dest)?;
        }
        Ok(())
    }
}

/// Appends the chunks of one blob in order, hashing them as they come ([`Blobs::appender`]).
#[derive(Debug)]
pub struct Appender {
    store: Blobs,
    sha: String,
    size: u64,
    held: Held,
    file: Option<File>,
    hash: Hashing,
}

/// Where an appender's digest is computed.
#[derive(Debug)]
enum Hashing {
    /// Here, chunk after chunk, between the writes.
    Here(Sha256),
    /// On a thread of its own, the chunks handed to it once written ([`Appender::overlapped`]).
    Apart {
        to: std::sync::mpsc::SyncSender<(Vec<u8>, usize)>,
        done: std::thread::JoinHandle<Sha256>,
    },
    /// Taken.
    Spent,
}

impl Hashing {
    fn finish(self) -> Result<String, BlobError> {
        let h = match self {
            Hashing::Here(h) => h,
            Hashing::Apart { to, done } => {
                drop(to);
                done.join()
                    .map_err(|_| io::Error::other("the hashing thread failed"))?
            }
            Hashing::Spent => return Err(io::Error::other("the digest was taken").into()),
        };
        Ok(hex(&h.finalize()))
    }
}

impl Appender {
    /// What is held now.
    pub fn held(&self) -> Held {
        self.held
    }

    /// This appender, hashing on a thread of its own ([`Appender::append_owned`] hands it each
    /// chunk once written): the digest of a large blob overlaps its writes, so that receiving
    /// one costs the slower of the two rather than their sum.
    pub fn overlapped(mut self) -> Appender {
        if let Hashing::Here(h) = std::mem::replace(&mut self.hash, Hashing::Spent) {
            let (to, rx) = std::sync::mpsc::sync_channel::<(Vec<u8>, usize)>(4);
            let done = std::thread::spawn(move || {
                let mut h = h;
                for (data, from) in rx {
                    h.update(&data[from..]);
                }
                h
            });
            self.hash = Hashing::Apart { to, done };
        }
        self
    }

    /// [`Appender::append`] of an owned chunk (handed to the hashing thread of an overlapped
    /// appender without a copy).
    pub fn append_owned(&mut self, offset: u64, data: Vec<u8>) -> Result<Held, BlobError> {
        self.append_with(offset, Bytes::Owned(data))
    }

    /// Takes `data` at `offset`: what the partial copy holds already is skipped, a chunk past
    /// its end is not taken (the answer says where to resend from); the chunk that completes the
    /// blob has the whole checked: a match makes it visible under its digest (durably), a
    /// mismatch drops the copy.
    pub fn append(&mut self, offset: u64, data: &[u8]) -> Result<Held, BlobError> {
        self.append_with(offset, Bytes::Borrowed(data))
    }

    fn append_with(&mut self, offset: u64, data: Bytes<'_>) -> Result<Held, BlobError> {
        if self.held.complete {
            return Ok(self.held);
        }
        let (size, have) = (self.size, self.held.have);
        let end = offset + data.as_slice().len() as u64;
        if end > size {
            return Err(BlobError::PastEnd { end, size });
        }
        // A gap (resend from `have`), or nothing new unless it completes a full partial copy
        // (the copy was written in full but not yet checked, e.g. before a crash).
        if offset > have || end < have || (end == have && have < size) {
            return Ok(self.held);
        }
        let Some(f) = self.file.as_mut() else {
            return Err(io::Error::other("the appender was closed by a mismatch").into());
        };
        if end > have {
            let from = (have - offset) as usize;
            f.write_all(&data.as_slice()[from..])?;
            match (&mut self.hash, data) {
                (Hashing::Here(h), data) => h.update(&data.as_slice()[from..]),
                (Hashing::Apart { to, .. }, Bytes::Owned(v)) => to
                    .send((v, from))
                    .map_err(|_| io::Error::other("the hashing thread stopped"))?,
                (Hashing::Apart { to, .. }, Bytes::Borrowed(b)) => to
                    .send((b[from..].to_vec(), 0))
                    .map_err(|_| io::Error::other("the hashing thread stopped"))?,
                (Hashing::Spent, _) => return Err(io::Error::other("the digest was taken").into()),
            }
        }
        let f = self.file.as_mut().expect("open");
        self.held.have = end.max(have);
        if self.held.have < size {
            return Ok(self.held);
        }
        f.sync_all()?;
        self.file = None;
        let part = self.store.part(&self.sha);
        let got = std::mem::replace(&mut self.hash, Hashing::Spent).finish()?;
        if got != self.sha {
            let _ = fs::remove_file(&part);
            self.held = Held {
                have: 0,
                complete: false,
            };
            return Err(BlobError::Mismatch {
                want: self.sha.clone(),
                got,
                size,
            });
        }
        self.store.publish(&part, &self.sha)?;
        self.held.complete = true;
        Ok(self.held)
    }
}

/// A chunk, borrowed or owned.
enum Bytes<'a> {
    Borrowed(&'a [u8]),
    Owned(Vec<u8>),
}

impl Bytes<'_> {
    fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Borrowed(b) => b,
            Bytes::Owned(v) => v,
        }
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A blob being written whose digest is computed as it goes ([`Blobs::writer`]).
#[derive(Debug)]
pub struct BlobWriter {
    file: File,
    tmp: PathBuf,
    hash: Sha256,
    len: u64,
    store: Blobs,
}

impl BlobWriter {
    /// Appends `data`.
    pub fn write(&mut self, data: &[u8]) -> io::Result<()> {
        self.file.write_all(data)?;
        self.hash.update(data);
        self.len += data.len() as u64;
        Ok(())
    }

    /// Bytes written so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Ends the blob: durable under its digest (kept once: the same bytes stored before stay as
    /// they are); with `expect`, only if its digest is that one (else a mismatch, and nothing
    /// kept). Its digest and size.
    pub fn finish(mut self, expect: Option<&str>) -> Result<(String, u64), BlobError> {
        let sha = hex(&std::mem::take(&mut self.hash).finalize());
        let out = (|| {
            if let Some(want) = expect.filter(|w| *w != sha) {
                return Err(BlobError::Mismatch {
                    want: want.to_owned(),
                    got: sha.clone(),
                    size: self.len,
                });
            }
            if self.store.size(&sha).is_none() {
                self.file.sync_all()?;
                self.store.publish(&self.tmp, &sha)?;
            }
            Ok((sha.clone(), self.len))
        })();
        let _ = fs::remove_file(&self.tmp);
        out
    }
}

impl Drop for BlobWriter {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.tmp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha_of(data: &[u8]) -> String {
        hex(&Sha256::digest(data))
    }

    #[test]
    fn a_blob_resumes_where_its_partial_copy_ends_and_appears_only_once_checked() {
        let dir = tempfile::tempdir().unwrap();
        let b = Blobs::open(dir.path()).unwrap();
        let data: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
        let sha = sha_of(&data);
        let size = data.len() as u64;
        let h = b.append(&sha, 0, &data[..1000], size).unwrap();
        assert_eq!(
            h,
            Held {
                have: 1000,
                complete: false
            }
        );
        assert_eq!(b.size(&sha), None, "not visible while partial");
        // A resend of what is held is skipped; a gap is answered with where to resend from.
        assert_eq!(
            b.append(&sha, 500, &data[500..1000], size).unwrap().have,
            1000
        );
        assert_eq!(
            b.append(&sha, 2000, &data[2000..], size).unwrap().have,
            1000
        );
        // An overlapping chunk adds only its new bytes.
        assert_eq!(
            b.append(&sha, 800, &data[800..2000], size).unwrap().have,
            2000
        );
        let h = b.append(&sha, 2000, &data[2000..], size).unwrap();
        assert_eq!(
            h,
            Held {
                have: size,
                complete: true
            }
        );
        assert_eq!(fs::read(b.path(&sha)).unwrap(), data);
        let mut tail = Vec::new();
        b.reader(&sha, 2990)
            .unwrap()
            .read_to_end(&mut tail)
            .unwrap();
        assert_eq!(tail, &data[2990..]);
        let dest = dir.path().join("job/in/data.bin");
        b.place(&sha, &dest).unwrap();
        assert_eq!(fs::read(dest).unwrap(), data);
    }

    #[test]
    fn a_prefix_digest_counts_resent_pieces_once_and_knows_a_gap() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i % 241) as u8).collect();
        let mut d = PrefixDigest::default();
        d.take(0, &data[..1000]);
        d.take(500, &data[500..1500]);
        d.take(1500, &data[1500..1500]);
        d.take(1500, &data[1500..]);
        assert_eq!(
            d.clone().finish(5000).as_deref(),
            Some(sha_of(&data).as_str())
        );
        assert_eq!(d.finish(6000), None, "not every byte taken");
        let mut gap = PrefixDigest::default();
        gap.take(0, &data[..10]);
        gap.take(20, &data[20..]);
        assert_eq!(gap.finish(5000), None);
    }

    #[test]
    fn a_corrupt_copy_is_dropped_and_never_visible() {
        let dir = tempfile::tempdir().unwrap();
        let b = Blobs::open(dir.path()).unwrap();
        let sha = sha_of(b"the right bytes");
        let err = b.append(&sha, 0, b"the wrong bytes", 15).unwrap_err();
        assert!(matches!(err, BlobError::Mismatch { .. }), "{err}");
        assert_eq!(
            b.held(&sha).unwrap(),
            Held {
                have: 0,
                complete: false
            }
        );
        assert!(matches!(
            b.append("nothex", 0, b"", 0),
            Err(BlobError::BadDigest(_))
        ));
        assert!(matches!(
            b.append(&sha, 10, b"123456", 15),
            Err(BlobError::PastEnd { end: 16, size: 15 })
        ));
    }

    #[test]
    fn an_upload_is_named_by_its_digest_and_kept_once() {
        let dir = tempfile::tempdir().unwrap();
        let b = Blobs::open(dir.path()).unwrap();
        let mut w = b.writer().unwrap();
        w.write(b"hello ").unwrap();
        w.write(b"world").unwrap();
        let (sha, size) = w.finish(None).unwrap();
        assert_eq!((sha.as_str(), size), (sha_of(b"hello world").as_str(), 11));
        assert_eq!(b.size(&sha), Some(11));
        let mut again = b.writer().unwrap();
        again.write(b"hello world").unwrap();
        assert_eq!(again.finish(Some(&sha)).unwrap().0, sha);
        let mut wrong = b.writer().unwrap();
        wrong.write(b"other").unwrap();
        assert!(matches!(
            wrong.finish(Some(&sha)),
            Err(BlobError::Mismatch { .. })
        ));
        // Only the blob is left: no temporary file stays behind.
        assert_eq!(fs::read_dir(dir.path().join("tmp")).unwrap().count(), 0);
    }
}
