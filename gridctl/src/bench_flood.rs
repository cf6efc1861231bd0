//! `gridctl bench --flood SECONDS`: one user floods the meta-scheduler with submissions while
//! another submits at a calm pace; the calm user's submit latency, alone and beside the flood,
//! with the grid's `[submit_rate]` as given (`--submit-rate`, `--submit-burst`).

use crate::bench::{emulated, pct};
use crate::out::outln;
use gridsched_proto::v1::{self, meta_scheduler_client::MetaSchedulerClient};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tonic::transport::Channel;

/// A job of `user`.
fn of(user: &str) -> v1::JobSpec {
    v1::JobSpec {
        user: user.into(),
        ..emulated(0)
    }
}

/// The calm user's submit latencies (ms), one job every 50 ms for `d`.
async fn calm(c: &mut MetaSchedulerClient<Channel>, d: Duration) -> anyhow::Result<Vec<f64>> {
    let mut lat = Vec::new();
    let end = Instant::now() + d;
    while Instant::now() < end {
        let t = Instant::now();
        c.submit(v1::SubmitRequest {
            spec: Some(of("calm")),
        })
        .await?;
        lat.push(t.elapsed().as_secs_f64() * 1e3);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(lat)
}

/// Runs the measurement against the meta-scheduler at `meta`: `clients` flooding connections
/// for `seconds`.
pub async fn measure(meta: &str, clients: usize, seconds: u64, rate: &str) -> anyhow::Result<()> {
    let connect = || async {
        Ok::<_, anyhow::Error>(MetaSchedulerClient::new(
            tonic::transport::Endpoint::from_shared(format!("http://{meta}"))?
                .connect()
                .await?,
        ))
    };
    let mut c = connect().await?;
    let mut alone = calm(&mut c, Duration::from_secs(3)).await?;
    let stop = Instant::now() + Duration::from_secs(seconds);
    let (accepted, refused) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let mut tasks = Vec::new();
    for _ in 0..clients.max(1) {
        let mut f = connect().await?;
        let (accepted, refused) = (accepted.clone(), refused.clone());
        tasks.push(tokio::spawn(async move {
            // As fast as the answers come, refusals ignored.
            while Instant::now() < stop {
                match f
                    .submit(v1::SubmitRequest {
                        spec: Some(of("flood")),
                    })
                    .await
                {
                    Ok(_) => accepted.fetch_add(1, Ordering::Relaxed),
                    Err(s) if s.code() == tonic::Code::ResourceExhausted => {
                        refused.fetch_add(1, Ordering::Relaxed)
                    }
                    Err(s) => return Err(s),
                };
            }
            Ok(())
        }));
    }
    let t = Instant::now();
    let mut beside = calm(&mut c, Duration::from_secs(seconds)).await?;
    for task in tasks {
        task.await??;
    }
    let secs = t.elapsed().as_secs_f64();
    outln!(
        "flood of {clients} clients for {seconds} s, {rate}: {:.0} jobs/s accepted, {:.0} refused/s",
        accepted.load(Ordering::Relaxed) as f64 / secs,
        refused.load(Ordering::Relaxed) as f64 / secs
    );
    outln!(
        "calm user (a job every 50 ms), submit latency alone: p50 {:.2} ms, p99 {:.2} ms; beside the flood ({} samples): p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        pct(&mut alone, 0.5),
        pct(&mut alone, 0.99),
        beside.len(),
        pct(&mut beside, 0.5),
        pct(&mut beside, 0.99),
        pct(&mut beside, 1.0)
    );
    Ok(())
}
