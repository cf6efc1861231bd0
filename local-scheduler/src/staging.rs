//! Input staging at a site: the site's cache of job inputs (content-addressed blobs, see
//! [`gridsched_proto::blobs`]) and the stager that fills it before a job joins the queue. The
//! meta-scheduler pushes a job's uploads into the cache before it enqueues the job
//! (`PushBlob`); the stager fetches its `http(s)://` and `file://` inputs, each checked against its
//! SHA-256 when the job gives one, and a URL fetched recently is not fetched again (the cache
//! remembers which content it had for `url_cache_s`), so a thousand array tasks reading one URL
//! move it once. When all of a job's inputs are in place the stager tells the driver
//! ([`crate::driver::Msg::Staged`]), which submits the job to the cluster runner; a failed fetch
//! ends the job FAILED, naming the URL and the error. The agents read the cache (`ReadBlob`) into
//! their machine's own and place the inputs in the job's working directory before starting it.
//! The design is ARC's data staging (a cache in front of the batch system) and HTCondor's input
//! transfer.

use crate::driver::Msg;
use gridsched_core::Time;
use gridsched_proto::blobs::{BlobError, Blobs};
use gridsched_proto::v1;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Semaphore, mpsc};

/// A URL's content as fetched: its digest, its size, and when the staging that fetched it began
/// (Unix seconds, as the edge read them).
type Fetched = (String, u64, Time);

/// Fetches a job's URL inputs into the site's cache.
#[derive(Debug, Clone)]
pub struct Stager {
    cache: Blobs,
    http: reqwest::Client,
    tx: mpsc::Sender<Msg>,
    /// Per job being staged: its progress.
    progress: Arc<Mutex<HashMap<u64, v1::StagingProgress>>>,
    /// Per URL: the content it had when fetched, and when.
    urls: Arc<Mutex<HashMap<String, Fetched>>>,
    /// One fetch of a URL at a time: the others wait for it and find it in the cache.
    fetching: Arc<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>>,
    /// Transfers at once.
    slots: Arc<Semaphore>,
    /// Seconds a URL's content is taken as current.
    url_cache_s: Time,
    /// Fetches made (URL inputs not found in the cache), for the metrics and the tests.
    pub fetches: Arc<std::sync::atomic::AtomicU64>,
}

/// What a job's staging came to: its inputs with their digests and sizes, or why it failed.
pub type Staged = Result<Vec<v1::StagedInput>, String>;

impl Stager {
    /// A stager filling `cache`, reporting to the driver behind `tx`.
    pub fn new(cache: Blobs, tx: mpsc::Sender<Msg>, url_cache_s: u64) -> anyhow::Result<Stager> {
        let http =
            http_client(|| reqwest::Client::builder().connect_timeout(Duration::from_secs(10)))?;
        Ok(Stager {
            cache,
            http,
            tx,
            progress: Arc::default(),
            urls: Arc::default(),
            fetching: Arc::default(),
            slots: Arc::new(Semaphore::new(4)),
            url_cache_s: Time::try_from(url_cache_s).unwrap_or(Time::MAX),
            fetches: Arc::default(),
        })
    }

    /// The site's cache.
    pub fn cache(&self) -> &Blobs {
        &self.cache
    }

    /// The staging progress of job `id`, while it is being staged.
    pub fn progress(&self, id: u64) -> Option<v1::StagingProgress> {
        self.progress.lock().ok()?.get(&id).copied()
    }

    /// Whether every input is in the cache already (uploads pushed, URLs with a digest held).
    pub fn in_place(&self, inputs: &[v1::StagedInput]) -> bool {
        inputs
            .iter()
            .all(|i| !i.sha256.is_empty() && self.cache.size(&i.sha256).is_some())
    }

    /// Stages job `id`'s `inputs` in the background from `now` (the edge's Unix seconds: a URL
    /// fetched within `url_cache_s` before is not fetched again); the driver hears the outcome.
    pub fn stage(&self, id: u64, inputs: Vec<v1::StagedInput>, now: Time) {
        let me = self.clone();
        tokio::spawn(async move {
            let out = me.stage_all(id, inputs, now).await;
            if let Ok(mut m) = me.progress.lock() {
                m.remove(&id);
            }
            let _ = me.tx.send(Msg::Staged(id, out)).await;
        });
    }

    fn show(&self, id: u64, f: impl FnOnce(&mut v1::StagingProgress)) {
        if let Ok(mut m) = self.progress.lock() {
            f(m.entry(id).or_default());
        }
    }

    async fn stage_all(&self, id: u64, mut inputs: Vec<v1::StagedInput>, now: Time) -> Staged {
        let known: u64 = inputs.iter().map(|i| i.size).sum();
        self.show(id, |p| {
            p.inputs_total = inputs.len() as u32;
            p.bytes_total = known;
        });
        for i in &mut inputs {
            if i.url.is_empty() {
                // An upload: the meta-scheduler pushed it before the job came.
                if self.cache.size(&i.sha256).is_none() {
                    return Err(format!(
                        "input `{}`: upload {} is not at this site",
                        i.name, i.sha256
                    ));
                }
            } else {
                let (sha, size) = self.fetch(id, i, now).await?;
                if i.size == 0 {
                    self.show(id, |p| p.bytes_total += size);
                }
                i.sha256 = sha;
                i.size = size;
            }
            let size = i.size;
            self.show(id, |p| {
                p.inputs_done += 1;
                p.bytes_done += size;
            });
        }
        Ok(inputs)
    }

    /// The content of URL input `i` in the cache: its digest and size.
    async fn fetch(
        &self,
        id: u64,
        i: &v1::StagedInput,
        now: Time,
    ) -> Result<(String, u64), String> {
        let want = (!i.sha256.is_empty()).then_some(i.sha256.as_str());
        if let Some(sha) = want
            && let Some(size) = self.cache.size(sha)
        {
            return Ok((sha.to_owned(), size));
        }
        let gate = {
            let mut m = self.fetching.lock().expect("fetch map");
            m.entry(i.url.clone()).or_default().clone()
        };
        let _one = gate.lock().await;
        // Fetched recently (by another job waiting at the gate, say): the same content.
        let recent = self.urls.lock().ok().and_then(|m| m.get(&i.url).cloned());
        if let Some((sha, size, at)) = recent
            && now.saturating_sub(at) < self.url_cache_s
            && want.is_none_or(|w| w == sha)
            && self.cache.size(&sha).is_some()
        {
            return Ok((sha, size));
        }
        let _slot = self.slots.acquire().await.map_err(|e| e.to_string())?;
        let mut last = String::new();
        for attempt in 0..3u32 {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(500 << attempt)).await;
            }
            self.fetches
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            match self.fetch_once(id, i, want).await {
                Ok((sha, size)) => {
                    if let Ok(mut m) = self.urls.lock() {
                        m.insert(i.url.clone(), (sha.clone(), size, now));
                    }
                    return Ok((sha, size));
                }
                Err((why, retry)) => {
                    last = format!("input `{}` from {}: {why}", i.name, i.url);
                    tracing::warn!(job = id, "{last}");
                    if !retry {
                        break;
                    }
                }
            }
        }
        Err(last)
    }

    /// One attempt: the error, and whether another attempt may succeed. The bytes it shows in
    /// the progress while it runs are taken back at its end: the whole input is counted once it
    /// is in place.
    async fn fetch_once(
        &self,
        id: u64,
        i: &v1::StagedInput,
        want: Option<&str>,
    ) -> Result<(String, u64), (String, bool)> {
        let mut shown = (0u64, 0u64);
        let out = self.fetch_shown(id, i, want, &mut shown).await;
        self.show(id, |p| {
            p.bytes_done -= shown.0;
            p.bytes_total -= shown.1;
        });
        out
    }

    async fn fetch_shown(
        &self,
        id: u64,
        i: &v1::StagedInput,
        want: Option<&str>,
        shown: &mut (u64, u64),
    ) -> Result<(String, u64), (String, bool)> {
        let mut w = self.cache.writer().map_err(|e| (e.to_string(), true))?;
        if let Some(path) = i.url.strip_prefix("file://") {
            let path = path.to_owned();
            let (sha, size) = tokio::task::spawn_blocking(move || -> Result<_, BlobError> {
                let mut f = std::fs::File::open(&path)?;
                let mut buf = vec![0; gridsched_proto::blobs::CHUNK];
                loop {
                    let n = std::io::Read::read(&mut f, &mut buf)?;
                    if n == 0 {
                        break;
                    }
                    w.write(&buf[..n])?;
                }
                w.finish(None)
            })
            .await
            .map_err(|e| (e.to_string(), false))?
            .map_err(|e| (e.to_string(), false))?;
            return check(want, sha, size).map_err(|e| (e, false));
        }
        let mut resp = self
            .http
            .get(&i.url)
            .send()
            .await
            .map_err(|e| (error_chain(&e), true))?;
        let status = resp.status();
        if !status.is_success() {
            // A server error may pass; a missing or forbidden file will not.
            return Err((format!("HTTP {status}"), status.is_server_error()));
        }
        if let Some(len) = resp.content_length()
            && i.size == 0
        {
            shown.1 = len;
            self.show(id, |p| p.bytes_total += len);
        }
        while let Some(chunk) = resp.chunk().await.map_err(|e| (error_chain(&e), true))? {
            w.write(&chunk).map_err(|e| (e.to_string(), true))?;
            let n = chunk.len() as u64;
            shown.0 += n;
            self.show(id, |p| p.bytes_done += n);
        }
        let (sha, size) = w.finish(None).map_err(|e| (e.to_string(), true))?;
        check(want, sha, size).map_err(|e| (e, false))
    }
}

/// An HTTP client from `builder`, verifying servers against the machine's CA certificates; on a
/// machine without any (a container image built from scratch) one that still fetches `http://`
/// but verifies no `https://` server, said in a warning, rather than no site at all.
pub fn http_client(
    builder: impl Fn() -> reqwest::ClientBuilder,
) -> anyhow::Result<reqwest::Client> {
    crypto();
    match builder().build() {
        Ok(c) => Ok(c),
        Err(e) => {
            tracing::warn!(
                "no usable CA certificates on this machine ({e}): https:// servers cannot be verified, so fetching from them fails"
            );
            Ok(builder()
                .tls_certs_only(Vec::<reqwest::Certificate>::new())
                .build()?)
        }
    }
}

/// Makes ring the process's TLS provider (the one the gRPC side uses) before an HTTP client is
/// built: `https://` inputs and a Slurm REST endpoint over TLS need one. Idempotent.
pub fn crypto() {
    let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
}

/// A fetched content with another digest than the one the job gives is never used.
fn check(want: Option<&str>, sha: String, size: u64) -> Result<(String, u64), String> {
    match want {
        Some(w) if w != sha => Err(format!(
            "the content fetched ({size} bytes) has SHA-256 {sha}, not {w}: not used"
        )),
        _ => Ok((sha, size)),
    }
}

/// An HTTP client error with its causes (`error sending request: connection refused`).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(c) = src {
        s += &format!(": {c}");
        src = c.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stager(dir: &std::path::Path) -> (Stager, mpsc::Receiver<Msg>) {
        let (tx, rx) = mpsc::channel(8);
        let s = Stager::new(Blobs::open(dir).unwrap(), tx, 3600).unwrap();
        (s, rx)
    }

    fn staged(m: Msg) -> (u64, Staged) {
        match m {
            Msg::Staged(id, r) => (id, r),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn a_file_url_is_staged_by_its_digest_and_a_wrong_digest_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src.txt");
        std::fs::write(&src, b"hello input").unwrap();
        let (s, mut rx) = stager(&dir.path().join("cache"));
        let url = format!("file://{}", src.display());
        let input = |sha: &str| v1::StagedInput {
            name: "in.txt".into(),
            sha256: sha.into(),
            url: url.clone(),
            size: 0,
            site: String::new(),
        };
        s.stage(7, vec![input("")], 0);
        let (id, r) = staged(rx.recv().await.unwrap());
        let got = r.unwrap();
        assert_eq!((id, got[0].size), (7, 11));
        let sha = got[0].sha256.clone();
        assert_eq!(std::fs::read(s.cache().path(&sha)).unwrap(), b"hello input");
        assert!(s.in_place(&got));
        // Named with its digest, it is read from the cache: no fetch.
        let before = s.fetches.load(std::sync::atomic::Ordering::Relaxed);
        s.stage(8, vec![input(&sha)], 0);
        assert!(staged(rx.recv().await.unwrap()).1.is_ok());
        assert_eq!(s.fetches.load(std::sync::atomic::Ordering::Relaxed), before);
        // Another digest: fetched, and refused.
        s.stage(9, vec![input(&"0".repeat(64))], 0);
        let why = staged(rx.recv().await.unwrap()).1.unwrap_err();
        assert!(why.contains("not used") && why.contains(&url), "{why}");
        // An unreachable server: the URL and the error, after its attempts.
        s.stage(
            10,
            vec![v1::StagedInput {
                name: "x".into(),
                url: "http://127.0.0.1:1/x".into(),
                ..Default::default()
            }],
            0,
        );
        let why = staged(rx.recv().await.unwrap()).1.unwrap_err();
        assert!(why.contains("http://127.0.0.1:1/x"), "{why}");
        assert!(s.progress(10).is_none(), "no progress left behind");
        // The URL without a digest, again: within `url_cache_s` (3600 s) of its fetch at 0 it is
        // taken from the cache; an hour later it is fetched again.
        let before = s.fetches.load(std::sync::atomic::Ordering::Relaxed);
        s.stage(11, vec![input("")], 3599);
        assert!(staged(rx.recv().await.unwrap()).1.is_ok());
        assert_eq!(s.fetches.load(std::sync::atomic::Ordering::Relaxed), before);
        s.stage(12, vec![input("")], 3600);
        assert!(staged(rx.recv().await.unwrap()).1.is_ok());
        assert_eq!(
            s.fetches.load(std::sync::atomic::Ordering::Relaxed),
            before + 1
        );
    }
}
