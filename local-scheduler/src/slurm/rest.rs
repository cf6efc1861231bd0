//! The Slurm-backed site's client of slurmrestd, Slurm's REST daemon, authenticated by a JWT
//! (`X-SLURM-USER-NAME`, `X-SLURM-USER-TOKEN`): submit, release a held job, cancel, and read the
//! jobs, nodes and licences. It is the network edge of the site; what to call and what the answers
//! mean are decided by [`super::SlurmSite`], without I/O.

use super::mapping::{SlurmJob, SlurmLicence, SlurmNode};
use crate::config::SlurmConfig;
use reqwest::{Method, StatusCode};
use serde::Deserialize;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

/// Why a call to Slurm did not succeed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallError {
    /// Slurm could not be reached, or did not answer: whether the call took effect is unknown.
    Unreachable(String),
    /// Slurm answered no, with its reason.
    Refused(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Unreachable(e) => write!(f, "Slurm unreachable: {e}"),
            CallError::Refused(e) => write!(f, "Slurm refused: {e}"),
        }
    }
}

/// One error of slurmrestd's answer.
#[derive(Debug, Deserialize)]
struct SlurmError {
    #[serde(default)]
    error_code: i64,
    #[serde(default)]
    error: String,
}

#[derive(Debug, Deserialize)]
struct Answer {
    #[serde(default)]
    errors: Vec<SlurmError>,
    #[serde(default)]
    job_id: Option<u32>,
    #[serde(default)]
    jobs: Option<Vec<SlurmJob>>,
    #[serde(default)]
    nodes: Option<Vec<SlurmNode>>,
    #[serde(default)]
    licenses: Option<Vec<SlurmLicence>>,
}

/// Slurm's error codes that mean the controller could not be reached (slurm_errno.h:
/// `SLURM_COMMUNICATIONS_*`, `SLURMCTLD_COMMUNICATIONS_*`) rather than a refusal.
fn unreachable_code(code: i64) -> bool {
    (1000..=1010).contains(&code) || (1800..=1810).contains(&code)
}

/// A slurmrestd client.
#[derive(Debug)]
pub struct Rest {
    http: reqwest::Client,
    /// `<rest_url>/slurm/<api_version>`.
    base: String,
    user: String,
    token: Mutex<String>,
    token_file: Option<PathBuf>,
}

impl Rest {
    /// A client for `cfg`; fails when no token can be found.
    pub fn new(cfg: &SlurmConfig) -> anyhow::Result<Rest> {
        let token = match (&cfg.token, &cfg.token_file) {
            (Some(t), _) => t.trim().to_string(),
            (None, Some(f)) => read_token(f)?,
            (None, None) => std::env::var("SLURM_JWT").map_err(|_| {
                anyhow::anyhow!(
                    "slurm.token: no token (give slurm.token, slurm.token_file or SLURM_JWT)"
                )
            })?,
        };
        let http = crate::staging::http_client(|| {
            reqwest::Client::builder()
                .timeout(Duration::from_millis(cfg.call_timeout_ms))
                .connect_timeout(Duration::from_millis(cfg.call_timeout_ms.min(2000)))
                .tcp_nodelay(true)
        })?;
        Ok(Rest {
            http,
            base: format!(
                "{}/slurm/{}",
                cfg.rest_url.trim_end_matches('/'),
                cfg.api_version
            ),
            user: cfg.user.clone(),
            token: Mutex::new(token),
            token_file: cfg.token_file.clone(),
        })
    }

    /// One call; `None` for "not modified". A refused token is read again from its file and the
    /// call made once more.
    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Option<Answer>, CallError> {
        for attempt in 0..2 {
            let token = self.token.lock().map(|t| t.clone()).unwrap_or_default();
            let mut req = self
                .http
                .request(method.clone(), format!("{}{path}", self.base))
                .header("X-SLURM-USER-NAME", &self.user)
                .header("X-SLURM-USER-TOKEN", token);
            if let Some(b) = body {
                req = req.json(b);
            }
            let resp = req
                .send()
                .await
                .map_err(|e| CallError::Unreachable(error_chain(&e)))?;
            let status = resp.status();
            if status == StatusCode::NOT_MODIFIED {
                return Ok(None);
            }
            if matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
                if attempt == 0
                    && let Some(f) = &self.token_file
                    && let Ok(t) = read_token(f)
                    && let Ok(mut held) = self.token.lock()
                {
                    *held = t;
                    continue;
                }
                return Err(CallError::Refused(format!(
                    "slurmrestd refused the token of `{}` ({status})",
                    self.user
                )));
            }
            let text = resp
                .text()
                .await
                .map_err(|e| CallError::Unreachable(error_chain(&e)))?;
            let answer: Answer = serde_json::from_str(&text).map_err(|e| {
                let head: String = text.chars().take(200).collect();
                if status.is_server_error() {
                    CallError::Unreachable(format!("{status}: {head}"))
                } else {
                    CallError::Refused(format!("{status}, unreadable answer ({e}): {head}"))
                }
            })?;
            return Ok(Some(answer));
        }
        Err(CallError::Refused("the token was refused".into()))
    }

    /// The errors of `a` as one call error, if any (submission's "held" notice is not one).
    fn failed(a: &Answer) -> Option<CallError> {
        let errs: Vec<&SlurmError> = a
            .errors
            .iter()
            .filter(|e| !(e.error_code == 0 && e.error.is_empty()))
            .collect();
        if errs.is_empty() {
            return None;
        }
        let text = errs
            .iter()
            .map(|e| format!("{} (error {})", e.error, e.error_code))
            .collect::<Vec<_>>()
            .join("; ");
        Some(
            if errs
                .iter()
                .any(|e| unreachable_code(e.error_code) || e.error.contains("Unable to contact"))
            {
                CallError::Unreachable(text)
            } else {
                CallError::Refused(text)
            },
        )
    }

    /// Submits a batch job; its Slurm id.
    pub async fn submit(&self, body: &Value) -> Result<u32, CallError> {
        let a = self
            .call(Method::POST, "/job/submit", Some(body))
            .await?
            .ok_or_else(|| CallError::Refused("no answer to a submission".into()))?;
        match (a.job_id, Self::failed(&a)) {
            // A held job comes with the notice "Job is in held state, pending scheduler release".
            (Some(id), _) if id > 0 => Ok(id),
            (_, Some(e)) => Err(e),
            _ => Err(CallError::Refused("no job id in the answer".into())),
        }
    }

    /// Releases held job `id`.
    pub async fn release(&self, id: u32) -> Result<(), CallError> {
        let body = serde_json::json!({ "hold": false });
        let a = self
            .call(Method::POST, &format!("/job/{id}"), Some(&body))
            .await?;
        a.and_then(|a| Self::failed(&a)).map_or(Ok(()), Err)
    }

    /// Cancels job `id` (a job that has already ended is not an error).
    pub async fn cancel(&self, id: u32) -> Result<(), CallError> {
        let a = self
            .call(Method::DELETE, &format!("/job/{id}"), None)
            .await?;
        match a.and_then(|a| Self::failed(&a)) {
            Some(CallError::Refused(e)) if e.contains("completed") || e.contains("completing") => {
                Ok(())
            }
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Every job Slurm retains, or `None` when nothing changed since `since` (Unix seconds).
    pub async fn jobs(&self, since: Option<i64>) -> Result<Option<Vec<SlurmJob>>, CallError> {
        let path = match since {
            Some(t) => format!("/jobs?update_time={t}"),
            None => "/jobs".into(),
        };
        let Some(a) = self.call(Method::GET, &path, None).await? else {
            return Ok(None);
        };
        if let Some(e) = Self::failed(&a) {
            return Err(e);
        }
        Ok(Some(a.jobs.unwrap_or_default()))
    }

    /// The nodes.
    pub async fn nodes(&self) -> Result<Vec<SlurmNode>, CallError> {
        let a = self.call(Method::GET, "/nodes", None).await?;
        match a {
            Some(a) => Self::failed(&a).map_or(Ok(a.nodes.unwrap_or_default()), Err),
            None => Ok(Vec::new()),
        }
    }

    /// The licence pools.
    pub async fn licences(&self) -> Result<Vec<SlurmLicence>, CallError> {
        let a = self.call(Method::GET, "/licenses", None).await?;
        match a {
            Some(a) => Self::failed(&a).map_or(Ok(a.licenses.unwrap_or_default()), Err),
            None => Ok(Vec::new()),
        }
    }
}

fn read_token(f: &std::path::Path) -> anyhow::Result<String> {
    let t = std::fs::read_to_string(f)
        .map_err(|e| anyhow::anyhow!("slurm.token_file: {}: {e}", f.display()))?;
    let t = t.trim();
    // `scontrol token` prints `SLURM_JWT=...`.
    Ok(t.strip_prefix("SLURM_JWT=").unwrap_or(t).to_string())
}

/// An error with its causes, on one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        s += &format!(": {c}");
        cause = c.source();
    }
    s
}
