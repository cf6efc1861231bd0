//! Hands a job's standard output and error over to the local scheduler while the job runs, so
//! that its user can read them through the grid wherever the job ran (`gridctl output`): every
//! quarter of a second what the job wrote since is sent in chunks of at most 1 MiB, each at its
//! offset (`PushOutput`, idempotent), and once the job has ended the rest is sent before the
//! job's end is reported, so a site that knows a job ended holds all of its output.
//!
//! The job's declared output files (`JobSpec.outputs`, globs relative to its working directory)
//! are sent the same way once it has ended, each under its path relative to that directory.
//!
//! A push the scheduler does not answer is sent again at the next round (from the size the
//! scheduler says it holds); the last round retries for ten seconds, then gives up with a
//! warning: the output stays in the job's directory on this machine. A scheduler that takes no
//! output (an older one: UNIMPLEMENTED) or refuses the agent is not asked again for that job.

use crate::Client;
use gridsched_proto::v1::{self, OutputStream};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::oneshot;

use gridsched_proto::output::{CHUNK, stream_file as name};
/// Between two rounds while the job runs.
const ROUND: Duration = Duration::from_millis(250);
/// Attempts of the last round, [`ROUND`] apart.
const LAST_TRIES: u32 = 40;

/// Where a job's output goes.
#[derive(Clone, Debug)]
pub struct Shipper {
    client: Client,
}

impl Shipper {
    /// Sends through `client` (a lazily connected channel: it reconnects by itself).
    pub fn new(client: Client) -> Shipper {
        Shipper { client }
    }

    /// Ships job `job`'s standard streams in `dir` until `ended` fires, then the rest, then the
    /// declared output files: those matching `declared.1` in the working directory `declared.0`.
    /// The declared files handed over, each with its size and SHA-256 (for the job's final
    /// report: a workflow node's children read them from the site).
    pub async fn run(
        self,
        job: u64,
        dir: PathBuf,
        declared: (PathBuf, Vec<String>),
        owner: Option<u32>,
        mut ended: oneshot::Receiver<()>,
    ) -> Vec<v1::OutputFile> {
        let mut streams = [
            Stream::new(OutputStream::Stdout),
            Stream::new(OutputStream::Stderr),
        ];
        loop {
            let last = tokio::select! {
                _ = &mut ended => true,
                () = tokio::time::sleep(ROUND) => false,
            };
            if last {
                break;
            }
            for s in &mut streams {
                if let Err(e) = s.round(&self.client, job, &dir, owner).await
                    && !worth_retrying(&e)
                {
                    tracing::warn!(job, "the local scheduler takes no output: {e}");
                    return Vec::new();
                }
            }
        }
        for s in &mut streams {
            let mut tries = 0;
            while let Err(e) = s.round(&self.client, job, &dir, owner).await {
                tries += 1;
                if tries >= LAST_TRIES || !worth_retrying(&e) {
                    tracing::warn!(
                        job,
                        "the job's {} could not be handed to the local scheduler ({e}); it stays in {}",
                        name(s.stream),
                        dir.display()
                    );
                    break;
                }
                tokio::time::sleep(ROUND).await;
            }
        }
        let (cwd, patterns) = declared;
        let mut kept = Vec::new();
        if patterns.is_empty() {
            return kept;
        }
        let found = tokio::task::spawn_blocking(move || declared_files(&cwd, &patterns)).await;
        'files: for (path, name) in found.unwrap_or_default() {
            let mut s = Stream::file(path.clone(), name);
            let mut tries = 0;
            while let Err(e) = s.round(&self.client, job, &dir, owner).await {
                tries += 1;
                if tries >= LAST_TRIES || !worth_retrying(&e) {
                    tracing::warn!(job, file = %s.name, "output file not handed over: {e}");
                    continue 'files;
                }
                tokio::time::sleep(ROUND).await;
            }
            // Hashed as it was read; read again only when a piece was skipped.
            let hashed = s.digest.take().and_then(|d| d.finish(s.sent));
            let digest = match hashed {
                Some(sha) => Ok(Ok(sha)),
                None => {
                    tokio::task::spawn_blocking(move || {
                        gridsched_proto::blobs::digest_reader(open(&path, owner)?)
                    })
                    .await
                }
            };
            match digest {
                Ok(Ok(sha)) => kept.push(v1::OutputFile {
                    name: s.name,
                    size: s.sent,
                    sha256: sha,
                }),
                Ok(Err(e)) => tracing::warn!(job, file = %s.name, "output file not read: {e}"),
                Err(e) => tracing::warn!(job, file = %s.name, "output file not read: {e}"),
            }
        }
        kept
    }
}

/// The regular files of `cwd` matching `patterns` (relative globs), each once, with their names
/// relative to `cwd`; a match that leads out of `cwd` (through a symbolic link) is left out.
pub fn declared_files(cwd: &Path, patterns: &[String]) -> Vec<(PathBuf, String)> {
    let Ok(root) = cwd.canonicalize() else {
        return Vec::new();
    };
    let mut out: Vec<(PathBuf, String)> = Vec::new();
    for p in patterns {
        let Ok(paths) = glob::glob(&root.join(p).to_string_lossy()) else {
            continue;
        };
        for path in paths.flatten() {
            let inside = path.canonicalize().is_ok_and(|c| c.starts_with(&root));
            let regular = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file());
            let Ok(rel) = path.strip_prefix(&root) else {
                continue;
            };
            let name = rel.to_string_lossy().into_owned();
            if inside && regular && !out.iter().any(|(_, n)| *n == name) {
                out.push((path.clone(), name));
            }
        }
    }
    out
}

/// Whether a refused push may succeed later (the scheduler unreachable or restarting), rather
/// than never (a scheduler that takes no output, or refuses this agent).
fn worth_retrying(e: &tonic::Status) -> bool {
    matches!(
        e.code(),
        tonic::Code::Unavailable
            | tonic::Code::DeadlineExceeded
            | tonic::Code::Unknown
            | tonic::Code::Internal
            | tonic::Code::ResourceExhausted
            | tonic::Code::Aborted
    )
}

/// One stream's (or declared file's) progress.
struct Stream {
    stream: OutputStream,
    /// A declared file: where it is, and its name at the site; `None`: the standard stream.
    file: Option<PathBuf>,
    name: String,
    /// Bytes the scheduler holds.
    sent: u64,
    /// Nothing sent yet in this run: the first chunk says so (the site drops an earlier run's).
    fresh: bool,
    /// A declared file: the digest of what was read of it (read once, for both).
    digest: Option<gridsched_proto::blobs::PrefixDigest>,
}

impl Stream {
    fn new(stream: OutputStream) -> Stream {
        Stream {
            stream,
            file: None,
            name: String::new(),
            sent: 0,
            fresh: true,
            digest: None,
        }
    }

    fn file(path: PathBuf, name: String) -> Stream {
        Stream {
            file: Some(path),
            name,
            digest: Some(Default::default()),
            ..Stream::new(OutputStream::Unspecified)
        }
    }

    /// Sends everything written since the last round; an error leaves the rest for the next.
    async fn round(
        &mut self,
        client: &Client,
        job: u64,
        dir: &Path,
        owner: Option<u32>,
    ) -> Result<(), tonic::Status> {
        loop {
            let path = match &self.file {
                Some(p) => p.clone(),
                None => dir.join(name(self.stream)),
            };
            let offset = self.sent;
            let mut digest = self.digest.take();
            let (data, digest) = tokio::task::spawn_blocking(move || {
                let data = read(&path, offset, owner)?;
                if let Some(d) = digest.as_mut() {
                    d.take(offset, &data);
                }
                Ok::<_, std::io::Error>((data, digest))
            })
            .await
            .map_err(|e| tonic::Status::internal(e.to_string()))?
            .map_err(|e| tonic::Status::internal(e.to_string()))?;
            self.digest = digest;
            if data.is_empty() && !self.fresh {
                return Ok(());
            }
            let len = data.len() as u64;
            let chunk = v1::OutputChunk {
                job_id: job,
                stream: self.stream as i32,
                offset,
                data,
                new_run: self.fresh,
                file: self.name.clone(),
            };
            let have = client.clone().push_output(chunk).await?.into_inner().have;
            self.fresh = false;
            self.sent = have.min(offset + len);
            if len == 0 {
                return Ok(());
            }
        }
    }
}

/// `path` opened for reading, not through a symbolic link; with an `owner` (a job run as
/// another account), only a file of that account's (PermissionDenied otherwise): the agent
/// reads no file for a job that the job's account could not.
fn open(path: &Path, owner: Option<u32>) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)?;
    if !crate::account::owns(owner, &f.metadata()?) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("{} is not the job's account's file", path.display()),
        ));
    }
    Ok(f)
}

/// Up to [`CHUNK`] bytes of `path` from `offset`; nothing when the file is not there.
fn read(path: &Path, offset: u64, owner: Option<u32>) -> std::io::Result<Vec<u8>> {
    let mut f = match open(path, owner) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    f.seek(SeekFrom::Start(offset))?;
    let mut buf = Vec::new();
    f.take(CHUNK as u64).read_to_end(&mut buf)?;
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::{declared_files, open};

    /// For a job run as another account the agent reads only that account's files, and never
    /// through a symbolic link (a job swapping its output for a link to somebody else's file).
    #[test]
    fn output_is_read_only_from_the_jobs_own_files() {
        use std::os::unix::fs::MetadataExt;
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("stdout");
        std::fs::write(&file, "mine").unwrap();
        let uid = std::fs::metadata(&file).unwrap().uid();
        open(&file, None).unwrap();
        open(&file, Some(uid)).unwrap();
        let e = open(&file, Some(uid + 1)).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied);
        let link = root.path().join("stderr");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(open(&link, None).is_err(), "a link is not followed");
    }

    #[test]
    fn declared_files_match_globs_inside_the_working_directory_only() {
        let root = std::env::temp_dir().join(format!("gridsched-ship-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let cwd = root.join("job");
        std::fs::create_dir_all(cwd.join("sub/deep")).unwrap();
        for f in ["a.csv", "b.txt", "sub/c.csv", "sub/deep/d.csv"] {
            std::fs::write(cwd.join(f), f).unwrap();
        }
        std::fs::write(root.join("secret"), "x").unwrap();
        std::os::unix::fs::symlink(root.join("secret"), cwd.join("link.csv")).unwrap();
        let names = |patterns: &[&str]| -> Vec<String> {
            let p: Vec<String> = patterns.iter().map(|s| s.to_string()).collect();
            declared_files(&cwd, &p)
                .into_iter()
                .map(|(_, n)| n)
                .collect()
        };
        assert_eq!(
            names(&["*.csv"]),
            ["a.csv"],
            "a link out of the directory is left out"
        );
        assert_eq!(
            names(&["**/*.csv", "a.csv", "b.txt", "missing"]),
            ["a.csv", "sub/c.csv", "sub/deep/d.csv", "b.txt"]
        );
        assert!(names(&["sub"]).is_empty(), "a directory is not a file");
        let _ = std::fs::remove_dir_all(&root);
    }
}
