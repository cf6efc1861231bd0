//! Helpers of the tests of the meta-scheduler's replicas: which replica leads (its health service
//! reports the API SERVING), tokened submissions, and a stream of them that retries a refused
//! one, with the same token, on the next replica.

use gridsched_proto::v1::{self, meta_scheduler_client::MetaSchedulerClient};
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Whether the replica at `addr` (`host:port`) leads.
pub async fn serving(addr: &str) -> bool {
    match tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .expect("address")
        .connect_timeout(Duration::from_millis(500))
        .connect()
        .await
    {
        Ok(c) => {
            gridsched_proto::standard::serves(
                c,
                v1::meta_scheduler_server::SERVICE_NAME,
                Duration::from_secs(1),
            )
            .await
        }
        Err(_) => false,
    }
}

/// Waits until the replica at `addr` leads; how long that took.
pub async fn leads(addr: &str, limit: Duration) -> Duration {
    let t = Instant::now();
    while !serving(addr).await {
        assert!(t.elapsed() < limit, "{addr} does not lead after {limit:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    t.elapsed()
}

/// Waits until one of `addrs` leads: its index.
pub async fn leader(addrs: &[&str], limit: Duration) -> usize {
    let t = Instant::now();
    loop {
        for (i, a) in addrs.iter().enumerate() {
            if serving(a).await {
                return i;
            }
        }
        assert!(
            t.elapsed() < limit,
            "none of {addrs:?} leads after {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Submits `spec` with `token` to `addr`: the job's id and whether it was a duplicate, or why it
/// was refused (an endpoint that cannot be reached or does not answer in 3 s is UNAVAILABLE).
pub async fn submit(
    addr: &str,
    token: &str,
    spec: &v1::JobSpec,
) -> Result<(u64, bool), tonic::Status> {
    let mut c = match tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .expect("address")
        .connect_timeout(Duration::from_millis(500))
        .connect()
        .await
    {
        Ok(ch) => MetaSchedulerClient::new(ch),
        Err(e) => return Err(tonic::Status::unavailable(e.to_string())),
    };
    let spec = v1::JobSpec {
        client_token: Some(token.into()),
        ..spec.clone()
    };
    let r = tokio::time::timeout(
        Duration::from_secs(3),
        c.submit(v1::SubmitRequest { spec: Some(spec) }),
    )
    .await
    .map_err(|_| tonic::Status::unavailable("no answer in 3 s"))??
    .into_inner();
    Ok((r.job_id, r.duplicate))
}

/// What a stream of submissions saw.
#[derive(Debug, Default)]
pub struct Stream {
    /// Per token: the job id acknowledged, where and when.
    pub acked: Vec<(String, u64, String, Instant)>,
    /// Tokens refused at least once before being acknowledged.
    pub retried: HashSet<String>,
}

impl Stream {
    /// The acknowledged ids, in order.
    pub fn ids(&self) -> Vec<u64> {
        self.acked.iter().map(|(_, id, _, _)| *id).collect()
    }

    /// How long after `since` the first submission was acknowledged at `addr`.
    pub fn first_at(&self, addr: &str, since: Instant) -> Option<Duration> {
        self.acked
            .iter()
            .filter(|(_, _, at, when)| at == addr && *when > since)
            .map(|(_, _, _, when)| *when - since)
            .min()
    }
}

/// Submits `spec` with tokens `prefix0`, `prefix1`, ... one after another to whichever of
/// `addrs` answers, retrying a refused one (same token) on the next endpoint, until `stop`.
/// Every refusal must be UNAVAILABLE or a connection broken under the call.
pub async fn stream(
    addrs: Vec<String>,
    prefix: String,
    spec: v1::JobSpec,
    stop: Arc<AtomicBool>,
) -> Stream {
    let mut out = Stream::default();
    let mut at = 0;
    for i in 0.. {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let token = format!("{prefix}{i}");
        loop {
            match submit(&addrs[at], &token, &spec).await {
                Ok((id, _)) => {
                    out.acked
                        .push((token.clone(), id, addrs[at].clone(), Instant::now()));
                    break;
                }
                Err(s) => {
                    // UNAVAILABLE, or the connection broke under the call (its outcome unknown:
                    // the token makes the retry safe).
                    let broken = std::error::Error::source(&s).is_some();
                    assert!(s.code() == tonic::Code::Unavailable || broken, "{s:?}");
                    out.retried.insert(token.clone());
                    at = (at + 1) % addrs.len();
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    out
}
