//! Jobs' standard output and error as a site holds them, in `<dir>/<job>/stdout|stderr`: at a
//! native site the agents hand over what their jobs write ([`Outputs::push`], `PushOutput`), at a
//! Slurm-backed site Slurm writes the same files itself; [`Outputs::read`] serves them to the
//! meta-scheduler's `Output` calls (the grid middleware's output staging: HTCondor's
//! `transfer_output_files`, here a stream a user can follow while the job runs).
//!
//! A push is idempotent: a chunk is placed at its offset, the bytes the site holds already are
//! skipped, and a chunk beyond them is refused with the size held, from which the agent resends.
//! The first chunk of a new run drops what an earlier run of the job wrote.

use gridsched_proto::v1::{self, OutputStream};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use tokio::sync::watch;

/// The file left in a job's directory once retention removed its output: why.
const GONE: &str = "gone";
/// The file naming a job's owner (for the per-user limit of retention).
const OWNER: &str = "owner";

/// How long, and how much, a site keeps of its jobs' output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    /// Seconds a job's output is kept after it was last written (after the job has ended).
    pub keep_s: u64,
    /// Bytes of output kept per user, the oldest jobs' removed first; 0 = no limit.
    pub max_bytes_per_user: u64,
}

/// The sub-directory of a job's declared output files.
const FILES: &str = "files";

pub use gridsched_proto::output::CHUNK;

/// The jobs' output files under one directory, and a signal of every push.
#[derive(Debug)]
pub struct Outputs {
    dir: PathBuf,
    /// Serializes pushes (an agent sends one stream's chunks in order; a retry may race).
    write: Mutex<()>,
    pushed: watch::Sender<u64>,
}

impl Outputs {
    /// The outputs under `dir` (created when a job first writes).
    pub fn new(dir: PathBuf) -> Outputs {
        Outputs {
            dir,
            write: Mutex::new(()),
            pushed: watch::channel(0).0,
        }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of one job's stream.
    pub fn path(&self, job: u64, stream: OutputStream) -> PathBuf {
        self.dir
            .join(job.to_string())
            .join(gridsched_proto::output::stream_file(stream))
    }

    /// The file of a chunk or a request: a declared output file when `file` is given (checked:
    /// a relative path without `..`), else the stream's.
    pub fn path_of(&self, job: u64, stream: OutputStream, file: &str) -> Result<PathBuf, String> {
        if file.is_empty() {
            return Ok(self.path(job, stream));
        }
        if !gridsched_proto::output::is_plain_relative(file) {
            return Err(format!(
                "field `file`: `{file}` is not a plain relative path"
            ));
        }
        Ok(self.dir.join(job.to_string()).join(FILES).join(file))
    }

    /// The declared output files held for `job`, by name, with their sizes.
    pub fn files(&self, job: u64) -> std::io::Result<Vec<v1::OutputFile>> {
        let root = self.dir.join(job.to_string()).join(FILES);
        let mut out = Vec::new();
        let mut dirs = vec![root.clone()];
        while let Some(d) = dirs.pop() {
            let entries = match std::fs::read_dir(&d) {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            for e in entries {
                let e = e?;
                let t = e.file_type()?;
                if t.is_dir() {
                    dirs.push(e.path());
                } else if t.is_file() {
                    let name = e.path().strip_prefix(&root).map_or_else(
                        |_| e.file_name().to_string_lossy().into_owned(),
                        |p| p.to_string_lossy().into_owned(),
                    );
                    out.push(v1::OutputFile {
                        name,
                        size: e.metadata()?.len(),
                        sha256: String::new(),
                    });
                }
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// Whether the site holds any output of `job`.
    pub fn holds(&self, job: u64) -> bool {
        self.dir.join(job.to_string()).is_dir()
    }

    /// Places `chunk` at its offset; the bytes of its stream held afterwards.
    pub fn push(&self, chunk: &v1::OutputChunk) -> std::io::Result<u64> {
        let _guard = self.write.lock().unwrap_or_else(|e| e.into_inner());
        let path = self
            .path_of(chunk.job_id, chunk.stream(), &chunk.file)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        std::fs::create_dir_all(path.parent().expect("a job directory"))?;
        // A new run's file starts afresh as a new file: the earlier run's, which the site's
        // input cache may hold as a link (a workflow node's output), is left as it was.
        if chunk.new_run && chunk.offset == 0 {
            match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(false)
            .write(true)
            .truncate(false)
            .open(&path)?;
        let held = f.metadata()?.len();
        let end = chunk.offset + chunk.data.len() as u64;
        if chunk.offset > held || end <= held {
            return Ok(held);
        }
        let skip = (held - chunk.offset) as usize;
        f.seek(SeekFrom::Start(held))?;
        f.write_all(&chunk.data[skip..])?;
        // Synced at the end of what the agent had read (a chunk not full) rather than at every
        // chunk: a file's bytes reach the disk once per round, not once per chunk; the rest is
        // synced when the job's end arrives ([`Outputs::settle`]).
        if chunk.data.len() < CHUNK {
            f.sync_data()?;
        }
        self.pushed.send_modify(|n| *n += 1);
        Ok(end)
    }

    /// Makes job `job`'s output durable once the job has ended, before its end is taken: its
    /// standard streams and `declared` files (by name) synced, and each declared file taken into
    /// `cache` under the digest its agent computed (`(name, sha256)`), for the children of a
    /// workflow node. A file missing is skipped (a job may write no output).
    pub fn settle(
        &self,
        job: u64,
        declared: &[(String, String)],
        cache: Option<&gridsched_proto::blobs::Blobs>,
    ) -> std::io::Result<()> {
        let sync = |p: &Path| match std::fs::File::open(p) {
            Ok(f) => f.sync_all(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        };
        sync(&self.path(job, OutputStream::Stdout))?;
        sync(&self.path(job, OutputStream::Stderr))?;
        for (name, sha) in declared {
            let path = self
                .path_of(job, OutputStream::Unspecified, name)
                .map_err(std::io::Error::other)?;
            sync(&path)?;
            if let Some(cache) = cache {
                cache
                    .adopt(sha, &path)
                    .map_err(|e| std::io::Error::other(format!("{name}: {e}")))?;
            }
        }
        Ok(())
    }

    /// Up to [`CHUNK`] bytes of the file `path` from `offset` (empty at its end, or when there
    /// is no such file).
    pub fn read(path: &Path, offset: u64) -> std::io::Result<Vec<u8>> {
        let mut f = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        f.seek(SeekFrom::Start(offset))?;
        let mut buf = Vec::with_capacity(CHUNK);
        f.take(CHUNK as u64).read_to_end(&mut buf)?;
        Ok(buf)
    }

    /// Why the site no longer holds `job`'s output, when retention removed it.
    pub fn gone(&self, job: u64) -> Option<String> {
        std::fs::read_to_string(self.dir.join(job.to_string()).join(GONE)).ok()
    }

    /// Records `user` as the owner of `job`'s output (once).
    pub fn set_owner(&self, job: u64, user: &str) -> std::io::Result<()> {
        let d = self.dir.join(job.to_string());
        std::fs::create_dir_all(&d)?;
        let p = d.join(OWNER);
        if !p.exists() {
            std::fs::write(p, user)?;
        }
        Ok(())
    }

    /// The jobs whose output `retention` removes at `now` (Unix seconds), with why, oldest
    /// first: those last written more than `keep_s` ago, then, per owner over
    /// `max_bytes_per_user`, the oldest until the rest fits. Nothing is removed here.
    pub fn expired(&self, now: u64, r: &Retention) -> std::io::Result<Vec<(u64, String)>> {
        struct Held {
            job: u64,
            owner: String,
            bytes: u64,
            last: u64,
        }
        let mut held = Vec::new();
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        for e in entries {
            let e = e?;
            let Some(job) = e.file_name().to_str().and_then(|n| n.parse::<u64>().ok()) else {
                continue;
            };
            if e.path().join(GONE).exists() {
                continue;
            }
            let (bytes, last) = usage(&e.path())?;
            let owner = std::fs::read_to_string(e.path().join(OWNER)).unwrap_or_default();
            held.push(Held {
                job,
                owner,
                bytes,
                last,
            });
        }
        held.sort_by_key(|h| (h.last, h.job));
        let mut out = Vec::new();
        let mut kept: std::collections::BTreeMap<String, u64> = Default::default();
        let mut rest = Vec::new();
        for h in held {
            if now.saturating_sub(h.last) > r.keep_s {
                out.push((
                    h.job,
                    format!("kept {} s after it was last written", r.keep_s),
                ));
            } else {
                *kept.entry(h.owner.clone()).or_default() += h.bytes;
                rest.push(h);
            }
        }
        if r.max_bytes_per_user > 0 {
            for h in rest {
                let total = kept.get_mut(&h.owner).expect("counted");
                if *total > r.max_bytes_per_user && !h.owner.is_empty() {
                    *total -= h.bytes;
                    out.push((
                        h.job,
                        format!(
                            "the oldest of user {}'s outputs beyond {} bytes",
                            h.owner, r.max_bytes_per_user
                        ),
                    ));
                }
            }
        }
        Ok(out)
    }

    /// Removes `job`'s output, leaving why in its place.
    pub fn remove(&self, job: u64, why: &str) -> std::io::Result<()> {
        let d = self.dir.join(job.to_string());
        std::fs::remove_dir_all(&d)?;
        std::fs::create_dir_all(&d)?;
        std::fs::write(d.join(GONE), why)
    }

    /// A receiver woken by every push.
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.pushed.subscribe()
    }
}

/// Bytes under `dir` and the newest modification time there (Unix seconds).
fn usage(dir: &Path) -> std::io::Result<(u64, u64)> {
    let (mut bytes, mut last) = (0, 0);
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d)? {
            let e = e?;
            let m = e.metadata()?;
            if m.is_dir() {
                dirs.push(e.path());
                continue;
            }
            bytes += m.len();
            let t = m
                .modified()?
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            last = last.max(t);
        }
    }
    Ok((bytes, last))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(offset: u64, data: &[u8], new_run: bool) -> v1::OutputChunk {
        v1::OutputChunk {
            job_id: 7,
            stream: OutputStream::Stdout as i32,
            offset,
            data: data.to_vec(),
            new_run,
            file: String::new(),
        }
    }

    #[test]
    fn pushes_are_idempotent_a_gap_is_refused_and_a_new_run_starts_afresh() {
        let dir = tempfile::tempdir().unwrap();
        let o = Outputs::new(dir.path().to_path_buf());
        assert!(!o.holds(7));
        assert_eq!(o.push(&chunk(0, b"hello ", true)).unwrap(), 6);
        // Sent again (a retry): nothing changes.
        assert_eq!(o.push(&chunk(0, b"hello ", false)).unwrap(), 6);
        // Overlapping: only the new bytes are kept.
        assert_eq!(o.push(&chunk(3, b"lo world", false)).unwrap(), 11);
        // Beyond what is held: refused with the size held.
        assert_eq!(o.push(&chunk(20, b"!", false)).unwrap(), 11);
        let (out, err) = (
            o.path(7, OutputStream::Stdout),
            o.path(7, OutputStream::Stderr),
        );
        assert_eq!(Outputs::read(&out, 0).unwrap(), b"hello world");
        assert_eq!(Outputs::read(&out, 6).unwrap(), b"world");
        assert!(Outputs::read(&err, 0).unwrap().is_empty());
        // The site's input cache takes the file as a blob (a hard link): a new run's first
        // chunk starts a new file and leaves the blob as it was.
        let cache = gridsched_proto::blobs::Blobs::open(dir.path().join("cache")).unwrap();
        let sha = gridsched_proto::blobs::digest_file(&out).unwrap();
        cache.adopt(&sha, &out).unwrap();
        cache.adopt(&sha, &out).unwrap();
        assert_eq!(o.push(&chunk(0, b"again", true)).unwrap(), 5);
        assert_eq!(Outputs::read(&out, 0).unwrap(), b"again");
        assert_eq!(std::fs::read(cache.path(&sha)).unwrap(), b"hello world");
        assert_eq!(cache.size(&sha), Some(11));
        assert!(cache.adopt("not a digest", &out).is_err());
        assert!(o.holds(7));
    }

    #[test]
    fn declared_files_are_kept_under_the_job_and_a_path_out_of_it_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let o = Outputs::new(dir.path().to_path_buf());
        for (name, data) in [("b.csv", &b"1,2\n"[..]), ("out/a.txt", b"a")] {
            let mut c = chunk(0, data, true);
            c.file = name.into();
            o.push(&c).unwrap();
        }
        let files: Vec<(String, u64)> = o
            .files(7)
            .unwrap()
            .into_iter()
            .map(|f| (f.name, f.size))
            .collect();
        assert_eq!(files, [("b.csv".into(), 4), ("out/a.txt".into(), 1)]);
        for bad in ["../x", "/etc/passwd", "a/../../x", "./a"] {
            let mut c = chunk(0, b"x", true);
            c.file = bad.into();
            assert!(o.push(&c).is_err(), "{bad}");
            assert!(o.path_of(7, OutputStream::Stdout, bad).is_err(), "{bad}");
        }
        assert!(o.files(8).unwrap().is_empty());
    }

    #[test]
    fn retention_removes_old_output_then_each_users_oldest_beyond_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let o = Outputs::new(dir.path().to_path_buf());
        for (job, user, bytes) in [
            (1, "ann", 10),
            (2, "ann", 10),
            (3, "bob", 30),
            (4, "ann", 10),
        ] {
            let mut c = chunk(0, &vec![b'x'; bytes], true);
            c.job_id = job;
            o.push(&c).unwrap();
            o.set_owner(job, user).unwrap();
            // Modification times a second apart: job 1 is the oldest.
            let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1000 + job);
            for f in ["stdout", "owner"] {
                let f = std::fs::File::options()
                    .write(true)
                    .open(dir.path().join(job.to_string()).join(f))
                    .unwrap();
                f.set_modified(t).unwrap();
            }
        }
        let keep = |keep_s, max| Retention {
            keep_s,
            max_bytes_per_user: max,
        };
        assert!(o.expired(1004, &keep(100, 0)).unwrap().is_empty());
        let jobs = |v: Vec<(u64, String)>| v.into_iter().map(|x| x.0).collect::<Vec<_>>();
        // Only job 1, last written at 1001, is more than 1 s old at 1003.
        assert_eq!(jobs(o.expired(1003, &keep(1, 0)).unwrap()), [1]);
        // ann holds 3 × (10 + 3 bytes of owner file) = 39 bytes: to get under 20 her two oldest
        // go; bob's one job of 33 bytes is over the limit by itself and goes too.
        let v = o.expired(1004, &keep(100, 20)).unwrap();
        assert_eq!(jobs(v.clone()), [1, 2, 3], "{v:?}");
        o.remove(1, &v[0].1).unwrap();
        assert!(o.gone(1).unwrap().contains("beyond 20 bytes"));
        assert!(o.gone(2).is_none());
        assert_eq!(jobs(o.expired(1004, &keep(100, 20)).unwrap()), [2, 3]);
    }
}
