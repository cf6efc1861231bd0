//! Places a job's staged inputs in its working directory before the job starts: each is read
//! from the local scheduler's cache (`ReadBlob`) into this machine's own cache (content-addressed
//! by SHA-256, see [`gridsched_proto::blobs`]), checked, then linked (or copied) under its name.
//! A machine reads a content once, whatever the number of its jobs reading it; a read broken off
//! resumes where the machine's partial copy ends, and a copy that does not match its digest is
//! dropped and read again, never used.

use crate::Client;
use gridsched_proto::blobs::Blobs;
use gridsched_proto::v1;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Attempts at reading one input before the job fails to start.
const TRIES: u32 = 5;

/// Reads inputs from the local scheduler into the machine's cache.
#[derive(Clone, Debug)]
pub struct Fetcher {
    client: Client,
    cache: Blobs,
    /// One read of a content at a time: the other jobs wait for it and find it in the cache.
    gates: Arc<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>>,
}

impl Fetcher {
    /// Reads through `client` into `cache`.
    pub fn new(client: Client, cache: Blobs) -> Fetcher {
        Fetcher {
            client,
            cache,
            gates: Arc::default(),
        }
    }

    /// Places every input in `dir` (the job's working directory), or says which could not be.
    pub async fn place(&self, inputs: &[v1::StagedInput], dir: &Path) -> Result<(), String> {
        for i in inputs {
            self.ensure(&i.sha256, i.size)
                .await
                .map_err(|e| format!("input `{}`: {e}", i.name))?;
            let (cache, sha, dest) = (self.cache.clone(), i.sha256.clone(), dir.join(&i.name));
            tokio::task::spawn_blocking(move || cache.place(&sha, &dest))
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| format!("placing input `{}` in {}: {e}", i.name, dir.display()))?;
        }
        Ok(())
    }

    /// Brings content `sha` (`size` bytes) into the machine's cache.
    async fn ensure(&self, sha: &str, size: u64) -> Result<(), String> {
        if self.cache.size(sha).is_some() {
            return Ok(());
        }
        let gate = {
            let mut g = self.gates.lock().expect("gates");
            g.entry(sha.to_owned()).or_default().clone()
        };
        let _one = gate.lock().await;
        let mut last = String::new();
        for attempt in 0..TRIES {
            if self.cache.size(sha).is_some() {
                return Ok(());
            }
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(200 << attempt)).await;
            }
            match self.read(sha, size).await {
                Ok(()) => return Ok(()),
                Err(e) => {
                    tracing::warn!(sha256 = sha, attempt, "reading an input: {e}");
                    last = e;
                }
            }
        }
        Err(format!(
            "not read from the site after {TRIES} attempts: {last}"
        ))
    }

    async fn read(&self, sha: &str, size: u64) -> Result<(), String> {
        let held = self.cache.held(sha).map_err(|e| e.to_string())?;
        let mut c = self.client.clone();
        let mut stream = c
            .read_blob(v1::ReadBlobRequest {
                sha256: sha.to_owned(),
                offset: held.have,
            })
            .await
            .map_err(|e| e.message().to_owned())?
            .into_inner();
        // Written and hashed as the chunks come, on a thread of its own.
        let held = gridsched_proto::intake::receive(&self.cache, sha, size, None, &mut stream)
            .await
            .map_err(|e| e.to_string())?;
        if held.complete {
            return Ok(());
        }
        Err("the site's stream ended before the whole content".into())
    }
}
