//! Input staging at the meta-scheduler: the uploads users make for their jobs (`Upload`, kept
//! content-addressed by SHA-256 in `[inputs] dir`, durable once answered), the door check that
//! every upload a job names is held (its size filled in), and the push of a job's uploads to the
//! site it is dispatched to, before its Enqueue: the site's cache is asked first, so the same
//! bytes cross to a site once, whatever the number of jobs (a thousand tasks of an array) reading
//! them; a transfer broken off resumes where the site's copy ends. A site fetches a job's URL
//! inputs itself. A workflow node's inputs that its parents wrote at another site are moved from
//! that site's cache to the node's, site to site (the meta-scheduler relays the stream; nothing
//! goes through the user's machine), the same way. The pattern is the one of HTCondor's input
//! transfer and ARC's data staging.

use crate::service::{LocalClient, MetaService};
use gridsched_proto::blobs::{self, Blobs};
use gridsched_proto::v1;
use serde::Deserialize;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_stream::StreamExt as _;
use tonic::{Status, Streaming};

/// The `[inputs]` section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InputsConfig {
    /// Where uploads are kept; absent = `<state_dir>/uploads`.
    pub dir: Option<PathBuf>,
    /// Largest upload (bytes; default 4 GiB).
    pub max_file_bytes: u64,
    /// Most bytes of uploads one user holds (default 64 GiB; 0 = no limit).
    pub max_bytes_per_user: u64,
}

impl Default for InputsConfig {
    fn default() -> Self {
        InputsConfig {
            dir: None,
            max_file_bytes: 4 << 30,
            max_bytes_per_user: 64 << 30,
        }
    }
}

/// How far a push of uploads of `sizes` (pushed in that order) is with `sent` of `total` bytes
/// sent: the inputs whose bytes are all sent are done.
pub fn push_progress(sizes: &[u64], sent: u64, total: u64) -> v1::StagingProgress {
    let mut upto = 0u64;
    let done = sizes
        .iter()
        .take_while(|&&n| {
            upto = upto.saturating_add(n);
            upto <= sent
        })
        .count();
    v1::StagingProgress {
        inputs_done: done as u32,
        inputs_total: sizes.len() as u32,
        bytes_done: sent,
        bytes_total: total,
    }
}

impl InputsConfig {
    /// Whether an upload `name` of `user`, who holds `used` bytes of uploads, may grow to `total`
    /// bytes; otherwise INVALID_ARGUMENT naming the file and the key.
    pub fn admits(&self, name: &str, user: &str, used: u64, total: u64) -> Result<(), Status> {
        if total > self.max_file_bytes {
            return Err(Status::invalid_argument(format!(
                "upload `{name}`: more than the limit of {} per file ([inputs] max_file_bytes = {})",
                human_bytes(self.max_file_bytes),
                self.max_file_bytes
            )));
        }
        let limit = match self.max_bytes_per_user {
            0 => u64::MAX,
            l => l,
        };
        if used.saturating_add(total) > limit {
            return Err(Status::invalid_argument(format!(
                "upload `{name}`: user `{user}` would hold more than {} of uploads ([inputs] max_bytes_per_user = {}; {} held)",
                human_bytes(limit),
                limit,
                human_bytes(used)
            )));
        }
        Ok(())
    }
}

/// The uploads, and what is being pushed to which site.
#[derive(Debug)]
pub struct Uploads {
    blobs: Blobs,
    cfg: InputsConfig,
    /// One transfer per site and blob at a time: the others wait for it, then find it there.
    pushing: Mutex<HashMap<(usize, String), Gate>>,
    /// Per job: the bytes of its uploads sent to its site so far, and in all (for `explain`).
    progress: Progress,
}

/// Held while one transfer of a blob to a site runs.
type Gate = Arc<tokio::sync::Mutex<()>>;

type Progress = Arc<Mutex<HashMap<u64, (u64, u64)>>>;

fn set_progress(p: &Progress, id: u64, v: Option<(u64, u64)>) {
    if let Ok(mut m) = p.lock() {
        match v {
            Some(v) => m.insert(id, v),
            None => m.remove(&id),
        };
    }
}

/// `n` bytes as people read them: `1.2 GB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1000.0 && u + 1 < UNITS.len() {
        v /= 1000.0;
        u += 1;
    }
    match u {
        0 => format!("{n} B"),
        _ => format!("{v:.1} {}", UNITS[u]),
    }
}

impl Uploads {
    /// The store under `cfg.dir`, or `state_dir/uploads`.
    pub fn open(cfg: &InputsConfig, state_dir: &std::path::Path) -> std::io::Result<Uploads> {
        let dir = cfg.dir.clone().unwrap_or_else(|| state_dir.join("uploads"));
        let blobs = Blobs::open(dir.join("blobs"))?;
        std::fs::create_dir_all(dir.join("users"))?;
        Ok(Uploads {
            blobs,
            cfg: cfg.clone(),
            pushing: Mutex::default(),
            progress: Progress::default(),
        })
    }

    fn user_dir(&self, user: &str) -> PathBuf {
        let name: String = user.bytes().map(|b| format!("{b:02x}")).collect();
        self.blobs
            .dir()
            .parent()
            .expect("under the uploads directory")
            .join("users")
            .join(name)
    }

    /// Bytes of uploads `user` holds.
    fn used(&self, user: &str) -> u64 {
        let Ok(rd) = std::fs::read_dir(self.user_dir(user)) else {
            return 0;
        };
        rd.filter_map(Result::ok)
            .filter_map(|e| std::fs::read_to_string(e.path()).ok())
            .filter_map(|s| s.trim().parse::<u64>().ok())
            .sum()
    }

    /// Takes an upload of `user`: the chunks in order, the first naming the file. Its digest and
    /// size once durable.
    pub async fn upload(
        &self,
        user: &str,
        mut chunks: Streaming<v1::BlobChunk>,
    ) -> Result<v1::UploadResponse, Status> {
        // Written and hashed on a thread of its own while the next chunks come.
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(gridsched_proto::intake::DEPTH);
        let store = self.blobs.clone();
        let writer = tokio::task::spawn_blocking(move || {
            let mut w = store.writer()?;
            while let Some(d) = rx.blocking_recv() {
                w.write(&d)?;
            }
            Ok::<_, std::io::Error>(w)
        });
        let mut name = String::new();
        let used = self.used(user);
        let mut len = 0u64;
        let received = async {
            while let Some(c) = chunks.next().await {
                let c = c?;
                if name.is_empty() && !c.name.is_empty() {
                    name = c.name;
                }
                if c.offset != len {
                    return Err(Status::invalid_argument(format!(
                        "upload `{name}`: a chunk at offset {} where {len} bytes were received",
                        c.offset,
                    )));
                }
                let total = len + c.data.len() as u64;
                self.cfg.admits(&name, user, used, total)?;
                len = total;
                if tx.send(c.data).await.is_err() {
                    // The writer failed: its error is below.
                    break;
                }
            }
            Ok(())
        }
        .await;
        drop(tx);
        let w = writer
            .await
            .map_err(|e| Status::internal(e.to_string()))?
            .map_err(io)?;
        received?;
        let (sha, size) = tokio::task::spawn_blocking(move || w.finish(None))
            .await
            .map_err(|e| Status::internal(e.to_string()))?
            .map_err(|e| Status::internal(e.to_string()))?;
        let dir = self.user_dir(user);
        std::fs::create_dir_all(&dir).map_err(io)?;
        std::fs::write(dir.join(&sha), size.to_string()).map_err(io)?;
        tracing::info!(user, file = %name, sha256 = %sha, size, "upload kept");
        Ok(v1::UploadResponse { sha256: sha, size })
    }

    /// Fills in the size of every upload `spec` (and each workflow node's job) names; an upload
    /// not held here is refused, naming its field.
    pub fn resolve(&self, spec: &mut v1::JobSpec) -> Result<(), crate::validate::Refusal> {
        self.resolve_in(spec, "")?;
        if let Some(w) = spec.workflow.as_mut() {
            for (i, n) in w.nodes.iter_mut().enumerate() {
                if let Some(j) = n.job.as_mut() {
                    self.resolve_in(j, &format!("workflow.nodes[{i}].job."))?;
                }
            }
        }
        Ok(())
    }

    fn resolve_in(
        &self,
        spec: &mut v1::JobSpec,
        prefix: &str,
    ) -> Result<(), crate::validate::Refusal> {
        for (i, s) in spec.stage_in.iter_mut().enumerate() {
            if !s.url.is_empty() || !s.site.is_empty() {
                continue;
            }
            match self.blobs.size(&s.sha256) {
                Some(size) => s.size = size,
                None => {
                    return Err(crate::validate::Refusal {
                        field: format!("{prefix}stage_in[{i}].sha256"),
                        message: format!(
                            "no upload `{}` is held for `{}`: upload it first (MetaScheduler.Upload)",
                            s.sha256, s.name
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// The progress of job `id`'s push to its site, if one is under way: bytes sent, in all.
    pub fn progress(&self, id: u64) -> Option<(u64, u64)> {
        self.progress.lock().ok()?.get(&id).copied()
    }

    fn set_progress(&self, id: u64, p: Option<(u64, u64)>) {
        set_progress(&self.progress, id, p);
    }

    /// Hands site `site` (through `client`) every upload job `id`'s spec names that the site's
    /// cache lacks, and every parent's output that another site holds, each resuming where the
    /// site's copy ends. An upload no longer held here, or an output no longer held at its
    /// site, is an error the job cannot recover from (`Err(Ok(reason))`); a transfer that
    /// failed can be retried (`Err(Err(status))`).
    pub async fn push(
        &self,
        svc: &MetaService,
        site: usize,
        client: &LocalClient,
        id: u64,
        spec: &v1::JobSpec,
    ) -> Result<(), Result<String, Status>> {
        // Uploads, and parents' outputs (their site named); a site fetches URLs itself.
        let uploads: Vec<&v1::StagedInput> =
            spec.stage_in.iter().filter(|s| s.url.is_empty()).collect();
        if uploads.is_empty() {
            return Ok(());
        }
        let total: u64 = uploads.iter().map(|s| s.size).sum();
        let mut done = 0;
        self.set_progress(id, Some((0, total)));
        let out = async {
            for s in &uploads {
                let from = match s.site.as_str() {
                    "" => None,
                    name => Some(svc.site_index(name).ok_or_else(|| {
                        Ok(format!("input `{}`: site `{name}` is unknown here", s.name))
                    })?),
                };
                let size = match from {
                    Some(_) => s.size,
                    None => self.blobs.size(&s.sha256).ok_or_else(|| {
                        Ok(format!(
                            "input `{}`: upload {} is no longer held",
                            s.name, s.sha256
                        ))
                    })?,
                };
                let gate = {
                    let mut m = self.pushing.lock().expect("push map");
                    m.entry((site, s.sha256.clone())).or_default().clone()
                };
                let _one = gate.lock().await;
                let file = File {
                    name: &s.name,
                    sha: &s.sha256,
                    size,
                    from,
                };
                self.push_one(svc, site, client, id, &file, (done, total))
                    .await?;
                done += size;
                self.set_progress(id, Some((done, total)));
            }
            Ok(())
        }
        .await;
        self.set_progress(id, None);
        out
    }

    /// Pushes one input to site `site` (see [`Uploads::push`]).
    async fn push_one(
        &self,
        svc: &MetaService,
        site: usize,
        client: &LocalClient,
        id: u64,
        file: &File<'_>,
        (before, total): (u64, u64),
    ) -> Result<(), Result<String, Status>> {
        let (sha, size) = (file.sha, file.size);
        let mut c = client.clone();
        let held = svc
            .call(c.blob_status(v1::BlobStatusRequest {
                sha256: sha.to_owned(),
            }))
            .await
            .map_err(Err)?;
        if held.complete {
            return Ok(());
        }
        let from = held.have.min(size);
        let shown = self.progress.clone();
        let progress = move |c: v1::BlobChunk| {
            let sent = before + c.offset + c.data.len() as u64;
            set_progress(&shown, id, Some((sent, total)));
            c
        };
        let held = match file.from {
            Some(src) => relay(svc, src, site, &mut c, file, from, progress).await?,
            None => self.send(svc, &mut c, sha, size, from, progress).await,
        }
        .map_err(Err)?;
        if held.complete
            && let Ok(st) = svc.lock()
        {
            let m = &st.metrics;
            let to = svc.site_name(site);
            match file.from {
                Some(src) => {
                    let from_to = crate::metrics::RelayLabel {
                        from: svc.site_name(src),
                        to,
                    };
                    m.input_relay_bytes
                        .get_or_create(&from_to)
                        .inc_by(size - from);
                }
                None => {
                    let site = crate::metrics::SiteLabel { site: to };
                    m.input_pushes.get_or_create(&site).inc();
                    m.input_push_bytes.get_or_create(&site).inc_by(size - from);
                }
            }
        }
        match held.complete {
            true => Ok(()),
            false => Err(Err(Status::unavailable(format!(
                "the site holds {} of {size} bytes of {sha}",
                held.have
            )))),
        }
    }

    /// Streams upload `sha` (`size` bytes) from `from` to the site behind `c`: what it holds
    /// then.
    async fn send(
        &self,
        svc: &MetaService,
        c: &mut LocalClient,
        sha: &str,
        size: u64,
        from: u64,
        progress: impl FnMut(v1::BlobChunk) -> v1::BlobChunk + Send + 'static,
    ) -> Result<v1::BlobStatusResponse, Status> {
        let (tx, rx) = tokio::sync::mpsc::channel::<v1::BlobChunk>(4);
        let store = self.blobs.clone();
        let sha_owned = sha.to_owned();
        let pause = Duration::from_millis(svc.inner.cfg.faults.push_pause_ms);
        let reader = tokio::task::spawn_blocking(move || -> std::io::Result<()> {
            use std::io::Read as _;
            let mut at = from;
            let mut f = store.reader(&sha_owned, from)?;
            loop {
                let mut data = Vec::with_capacity(blobs::CHUNK);
                (&mut f).take(blobs::CHUNK as u64).read_to_end(&mut data)?;
                let n = data.len() as u64;
                let last = at + n >= size;
                let chunk = v1::BlobChunk {
                    sha256: sha_owned.clone(),
                    offset: at,
                    data,
                    size,
                    name: String::new(),
                };
                if tx.blocking_send(chunk).is_err() || last || n == 0 {
                    return Ok(());
                }
                at += n;
                if !pause.is_zero() {
                    std::thread::sleep(pause);
                }
            }
        });
        // No call timeout: a large input takes as long as the link needs.
        let res = c
            .push_blob(tokio_stream::wrappers::ReceiverStream::new(rx).map(progress))
            .await;
        let read = reader.await;
        let held = res?.into_inner();
        match read {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(Status::internal(format!("reading upload {sha}: {e}"))),
            Err(e) => return Err(Status::internal(e.to_string())),
        }
        Ok(held)
    }
}

/// One input to push: its name in the job's directory, digest and size, and the site whose
/// cache holds it (`None`: an upload held here).
struct File<'a> {
    name: &'a str,
    sha: &'a str,
    size: u64,
    from: Option<usize>,
}

/// Moves `file` from site `src`'s cache to the site behind `to` (site `dst`), from byte `from`:
/// the source's stream of chunks is handed on as it comes (the receiving site checks the digest).
/// What the receiving site holds then; an input its source no longer holds is the job's end
/// (`Err(Ok(reason))`).
async fn relay(
    svc: &MetaService,
    src: usize,
    dst: usize,
    to: &mut LocalClient,
    file: &File<'_>,
    from: u64,
    progress: impl FnMut(v1::BlobChunk) -> v1::BlobChunk + Send + 'static,
) -> Result<Result<v1::BlobStatusResponse, Status>, Result<String, Status>> {
    let (name, src_name) = (file.name, svc.site_name(src));
    let gone = |why: &str| {
        Ok(format!(
            "input `{name}`: site {src_name} no longer holds it ({why})"
        ))
    };
    if src == dst {
        return Err(gone("it is not in the site's cache"));
    }
    let mut source = svc.client(src).map_err(Err)?;
    let read = v1::ReadBlobRequest {
        sha256: file.sha.to_owned(),
        offset: from,
    };
    let chunks = match svc.call(source.read_blob(read)).await {
        Ok(s) => s,
        Err(e) if e.code() == tonic::Code::NotFound => return Err(gone(e.message())),
        Err(e) => {
            return Err(Err(Status::unavailable(format!(
                "site {src_name} cannot be read for input `{name}`: {}",
                e.message()
            ))));
        }
    };
    // Read from the source on a task of its own, so that reading from one site and writing to
    // the other overlap. A break of the source's stream ends the push short: the site then
    // holds part of it, and the next attempt resumes from there.
    let (tx, rx) = tokio::sync::mpsc::channel(gridsched_proto::intake::DEPTH);
    let mut chunks = chunks;
    let reader = tokio::spawn(async move {
        while let Some(Ok(c)) = chunks.next().await {
            if tx.send(c).await.is_err() {
                return;
            }
        }
    });
    let chunks = tokio_stream::wrappers::ReceiverStream::new(rx).map(progress);
    let pushed = to.push_blob(chunks).await.map(tonic::Response::into_inner);
    reader.abort();
    Ok(pushed)
}

fn io(e: std::io::Error) -> Status {
    Status::internal(format!("uploads: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upload_over_a_limit_is_refused_naming_the_file_and_the_key() {
        let cfg = InputsConfig {
            max_file_bytes: 1_000,
            max_bytes_per_user: 5_000,
            ..InputsConfig::default()
        };
        assert!(cfg.admits("a.dat", "ann", 3_999, 1_000).is_ok());
        let e = cfg.admits("a.dat", "ann", 0, 1_001).unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument);
        assert!(
            e.message().contains("upload `a.dat`")
                && e.message().contains("[inputs] max_file_bytes = 1000"),
            "{}",
            e.message()
        );
        let e = cfg.admits("b.dat", "ann", 4_500, 501).unwrap_err();
        assert!(
            e.message().contains("upload `b.dat`: user `ann`")
                && e.message()
                    .contains("max_bytes_per_user = 5000; 4.5 kB held"),
            "{}",
            e.message()
        );
        let unlimited = InputsConfig {
            max_bytes_per_user: 0,
            ..cfg
        };
        assert!(
            unlimited
                .admits("c.dat", "ann", u64::MAX - 10, 1_000)
                .is_ok()
        );
    }

    #[test]
    fn a_push_counts_the_inputs_whose_bytes_are_all_sent() {
        let p = |sent| {
            let p = push_progress(&[100, 0, 50, 200], sent, 350);
            (p.inputs_done, p.inputs_total, p.bytes_done)
        };
        assert_eq!(p(0), (0, 4, 0));
        assert_eq!(p(100), (2, 4, 100), "the first, then an empty one");
        assert_eq!(p(149), (2, 4, 149));
        assert_eq!(p(150), (3, 4, 150));
        assert_eq!(p(350), (4, 4, 350));
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human_bytes(999), "999 B");
        assert_eq!(human_bytes(1_200_000_000), "1.2 GB");
        assert_eq!(human_bytes(3_000_000_000), "3.0 GB");
    }
}
