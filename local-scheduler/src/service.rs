//! The gRPC face of a local scheduler: each call becomes a message to the
//! [`crate::driver`] task and waits for its answer. Calls are checked against the secret of the
//! peer they belong to: the meta-scheduler's or the agents'. The meta-scheduler's calls are
//! fenced too: once a replica of a newer lease epoch has called, an older one is refused, and
//! its start-claim answers are no longer heard ([`Fence`]).

use crate::driver::Msg;
use crate::outputs::Outputs;
use gridsched_proto::blobs::{self, BlobError, Blobs};
use gridsched_proto::v1::{self, local_scheduler_server::LocalScheduler};
use gridsched_security::{Fence, SharedSecret};
use std::io::Read as _;
use std::pin::Pin;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};
use tokio_stream::Stream;
use tonic::{Request, Response, Status};

type BoxStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// The service: a handle on the driver task.
#[derive(Debug, Clone)]
pub struct Service {
    tx: mpsc::Sender<Msg>,
    /// Expected from the meta-scheduler's calls.
    meta: SharedSecret,
    /// Expected from the agents' calls.
    agents: SharedSecret,
    /// The newest epoch of the meta-scheduler's lease that has called.
    fence: Fence,
    /// Where the jobs' output lies, and whether agents hand it over (a native site) or the
    /// batch system writes it there itself (a Slurm-backed site); `None`: no output is kept.
    outputs: Option<(Arc<Outputs>, bool)>,
    /// The site's cache of job inputs; `None`: the site stages no inputs.
    cache: Option<Blobs>,
    /// A fault injected on purpose: the pause after each chunk an agent reads.
    read_pause: std::time::Duration,
}

impl Service {
    /// A service talking to the driver behind `tx`, open to every caller.
    pub fn new(tx: mpsc::Sender<Msg>) -> Service {
        Service::with_secrets(tx, SharedSecret::default(), SharedSecret::default())
    }

    /// A service that checks the meta-scheduler's and the agents' secrets.
    pub fn with_secrets(
        tx: mpsc::Sender<Msg>,
        meta: SharedSecret,
        agents: SharedSecret,
    ) -> Service {
        Service {
            tx,
            meta,
            agents,
            fence: Fence::default(),
            outputs: None,
            cache: None,
            read_pause: std::time::Duration::ZERO,
        }
    }

    /// The service fenced from the newest lease epoch the site has stored: an older leader is
    /// refused from the first call on.
    pub fn with_epoch(mut self, epoch: u64) -> Service {
        self.fence = Fence::starting_at(epoch);
        self
    }

    /// The service keeping the jobs' output in `outputs`, pushed by the agents when `pushes`.
    pub fn with_outputs(mut self, outputs: Arc<Outputs>, pushes: bool) -> Service {
        self.outputs = Some((outputs, pushes));
        self
    }

    /// The service keeping the jobs' inputs in `cache`.
    pub fn with_cache(mut self, cache: Blobs, faults: &crate::config::Faults) -> Service {
        self.cache = Some(cache);
        self.read_pause = std::time::Duration::from_millis(faults.read_blob_pause_ms);
        self
    }

    fn cache(&self) -> Result<Blobs, Status> {
        self.cache
            .clone()
            .ok_or_else(|| Status::unimplemented("this site stages no inputs"))
    }

    /// Settles the output of the jobs whose final reports `jobs` holds, before their ends are
    /// taken ([`Outputs::settle`]): synced, and their declared files taken into the site's input
    /// cache under the digests their agents computed, from where a workflow node's children read
    /// them (at this site, or moved to theirs). A failure is a warning: the end is taken anyway,
    /// and a child that cannot stage the file fails saying so.
    async fn settle_outputs(&self, jobs: &[v1::JobReport]) {
        let Some((outputs, true)) = &self.outputs else {
            return;
        };
        let ended: Vec<(u64, Vec<(String, String)>)> = (jobs.iter())
            .filter(|j| {
                !matches!(
                    j.state(),
                    v1::AgentJobState::Running | v1::AgentJobState::Suspended
                )
            })
            .map(|j| {
                let files = j.outputs.iter();
                (
                    j.job_id,
                    files.map(|o| (o.name.clone(), o.sha256.clone())).collect(),
                )
            })
            .collect();
        if ended.is_empty() {
            return;
        }
        let (outputs, cache) = (outputs.clone(), self.cache.clone());
        let _ = tokio::task::spawn_blocking(move || {
            for (job, files) in ended {
                if let Err(e) = outputs.settle(job, &files, cache.as_ref()) {
                    tracing::warn!(job, "output not settled: {e}");
                }
            }
        })
        .await;
    }

    fn outputs(&self) -> Result<&(Arc<Outputs>, bool), Status> {
        self.outputs
            .as_ref()
            .ok_or_else(|| Status::unimplemented("this site keeps no job output"))
    }

    /// Checks a call of the meta-scheduler: its secret, then its epoch; the epoch it called with.
    /// A new epoch is made durable before its call is served: a deposed leader stays deposed
    /// over a restart of this site.
    async fn meta_call(&self, md: &tonic::metadata::MetadataMap) -> Result<Option<u64>, Status> {
        self.meta.check(md, "meta-scheduler")?;
        let newest = self.fence.newest();
        let epoch = self.fence.admit(md)?;
        if let Some(e) = epoch.filter(|&e| e > newest) {
            tracing::info!(epoch = e, "the meta-scheduler calls with a new lease epoch");
            self.ask(|tx| Msg::Epoch(e, tx)).await?;
        }
        Ok(epoch)
    }

    async fn ask<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<Result<T, Status>>) -> Msg,
    ) -> Result<T, Status> {
        let (tx, rx) = oneshot::channel();
        self.tx
            .send(make(tx))
            .await
            .map_err(|_| Status::unavailable("local scheduler is shutting down"))?;
        rx.await
            .map_err(|_| Status::unavailable("local scheduler is shutting down"))?
    }
}

#[tonic::async_trait]
impl LocalScheduler for Service {
    async fn enqueue(
        &self,
        r: Request<v1::EnqueueRequest>,
    ) -> Result<Response<v1::EnqueueResponse>, Status> {
        self.meta_call(r.metadata()).await?;
        let r = r.into_inner();
        self.ask(|tx| Msg::Enqueue(Box::new(r), tx))
            .await
            .map(Response::new)
    }

    async fn cancel(
        &self,
        r: Request<v1::CancelRequest>,
    ) -> Result<Response<v1::CancelResponse>, Status> {
        self.meta_call(r.metadata()).await?;
        let r = r.into_inner();
        self.ask(|tx| Msg::Cancel(r, tx)).await.map(Response::new)
    }

    async fn status(
        &self,
        r: Request<v1::StatusRequest>,
    ) -> Result<Response<v1::StatusResponse>, Status> {
        self.meta_call(r.metadata()).await?;
        self.ask(Msg::Status).await.map(Response::new)
    }

    type JobEventsStream = BoxStream<v1::JobEvent>;

    async fn job_events(
        &self,
        r: Request<v1::JobEventsRequest>,
    ) -> Result<Response<Self::JobEventsStream>, Status> {
        self.meta_call(r.metadata()).await?;
        let from = r.into_inner().from_sequence;
        let (backlog, mut live) = self.ask(|tx| Msg::Events(from, tx)).await?;
        let last = backlog.last().map(|e| e.sequence);
        let stream = async_stream(backlog, move |out| async move {
            loop {
                match live.recv().await {
                    Ok(e) if last.is_some_and(|l| e.sequence <= l) => {}
                    Ok(e) => {
                        if out.send(Ok(e)).await.is_err() {
                            return;
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                        let _ = out
                            .send(Err(Status::out_of_range(format!(
                                "subscriber lagged by {n} events: resume with from_sequence"
                            ))))
                            .await;
                        return;
                    }
                    Err(_) => return,
                }
            }
        });
        Ok(Response::new(stream))
    }

    async fn register_agent(
        &self,
        r: Request<v1::RegisterAgentRequest>,
    ) -> Result<Response<v1::RegisterAgentResponse>, Status> {
        self.agents.check(r.metadata(), "site agents")?;
        let r = r.into_inner();
        self.settle_outputs(&r.jobs).await;
        self.ask(|tx| Msg::Register(r, tx)).await.map(Response::new)
    }

    async fn heartbeat(
        &self,
        r: Request<v1::HeartbeatRequest>,
    ) -> Result<Response<v1::HeartbeatResponse>, Status> {
        self.agents.check(r.metadata(), "site agents")?;
        let r = r.into_inner();
        self.settle_outputs(&r.jobs).await;
        self.ask(|tx| Msg::Heartbeat(r, tx))
            .await
            .map(Response::new)
    }

    type AgentOrdersStream = BoxStream<v1::AgentCommand>;

    async fn agent_orders(
        &self,
        r: Request<v1::AgentOrdersRequest>,
    ) -> Result<Response<Self::AgentOrdersStream>, Status> {
        self.agents.check(r.metadata(), "site agents")?;
        let id = r.into_inner().agent_id;
        let rx = self.ask(|tx| Msg::Orders(id, tx)).await?;
        let s = tokio_stream::wrappers::UnboundedReceiverStream::new(rx);
        Ok(Response::new(Box::pin(tokio_stream::StreamExt::map(s, Ok))))
    }

    type StartClaimsStream = BoxStream<v1::ClaimRequest>;

    async fn start_claims(
        &self,
        r: Request<tonic::Streaming<v1::ClaimAnswer>>,
    ) -> Result<Response<Self::StartClaimsStream>, Status> {
        let epoch = self.meta_call(r.metadata()).await?;
        let rx = self.ask(Msg::Claims).await?;
        let fence = self.fence.clone();
        tokio::spawn(forward_answers(
            r.into_inner(),
            self.tx.clone(),
            fence,
            epoch,
        ));
        let s = tokio_stream::wrappers::UnboundedReceiverStream::new(rx);
        Ok(Response::new(Box::pin(tokio_stream::StreamExt::map(s, Ok))))
    }

    async fn reserve(
        &self,
        r: Request<v1::ReserveRequest>,
    ) -> Result<Response<v1::ReserveResponse>, Status> {
        self.meta_call(r.metadata()).await?;
        let r = r.into_inner();
        self.ask(|tx| Msg::Reserve(r, tx)).await.map(Response::new)
    }

    async fn cancel_reservation(
        &self,
        r: Request<v1::CancelReservationRequest>,
    ) -> Result<Response<v1::CancelReservationResponse>, Status> {
        self.meta_call(r.metadata()).await?;
        let r = r.into_inner();
        self.ask(|tx| Msg::CancelReservation(r, tx))
            .await
            .map(Response::new)
    }

    async fn commit_reservation(
        &self,
        r: Request<v1::CommitReservationRequest>,
    ) -> Result<Response<v1::CommitReservationResponse>, Status> {
        self.meta_call(r.metadata()).await?;
        let r = r.into_inner();
        self.ask(|tx| Msg::CommitReservation(r, tx))
            .await
            .map(Response::new)
    }

    async fn reprioritize(
        &self,
        r: Request<v1::ReprioritizeRequest>,
    ) -> Result<Response<v1::ReprioritizeResponse>, Status> {
        self.meta_call(r.metadata()).await?;
        let r = r.into_inner();
        self.ask(|tx| Msg::Reprioritize(r, tx))
            .await
            .map(Response::new)
    }

    async fn push_output(
        &self,
        r: Request<v1::OutputChunk>,
    ) -> Result<Response<v1::PushOutputResponse>, Status> {
        self.agents.check(r.metadata(), "site agents")?;
        let (outputs, pushes) = self.outputs()?.clone();
        if !pushes {
            return Err(Status::failed_precondition(
                "this site's batch system writes the jobs' output itself",
            ));
        }
        let chunk = r.into_inner();
        if chunk.data.len() > crate::outputs::CHUNK {
            return Err(Status::invalid_argument(format!(
                "field `data`: {} bytes, at most {} in one chunk",
                chunk.data.len(),
                crate::outputs::CHUNK
            )));
        }
        if chunk.new_run
            && let Some(owner) = self.ask(|tx| Msg::Active(chunk.job_id, tx)).await?
        {
            let o = outputs.clone();
            let job = chunk.job_id;
            let _ = tokio::task::spawn_blocking(move || o.set_owner(job, &owner)).await;
        }
        let have = tokio::task::spawn_blocking(move || outputs.push(&chunk))
            .await
            .map_err(|e| Status::internal(e.to_string()))?
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::InvalidInput => Status::invalid_argument(e.to_string()),
                _ => Status::internal(format!("keeping the job's output: {e}")),
            })?;
        Ok(Response::new(v1::PushOutputResponse { have }))
    }

    type OutputStream = BoxStream<v1::OutputChunk>;

    async fn output(
        &self,
        r: Request<v1::OutputRequest>,
    ) -> Result<Response<Self::OutputStream>, Status> {
        self.meta_call(r.metadata()).await?;
        let (outputs, _) = self.outputs()?.clone();
        let req = r.into_inner();
        let (job, stream) = (req.job_id, req.stream());
        let path = outputs
            .path_of(job, stream, &req.file)
            .map_err(Status::invalid_argument)?;
        let active = self.ask(|tx| Msg::Active(job, tx)).await?.is_some();
        held_here(&outputs, job, active)?;
        let service = self.clone();
        let stream = async_stream(Vec::new(), move |out| async move {
            let mut offset = req.offset;
            let mut pushed = outputs.watch();
            loop {
                // Whether the job still runs, asked before reading: its agent hands over its
                // last output before it reports its end, so once it has ended here what is
                // read next is all of it.
                let running = match req.follow {
                    true => service
                        .ask(|tx| Msg::Active(job, tx))
                        .await
                        .is_ok_and(|o| o.is_some()),
                    false => false,
                };
                loop {
                    let p = path.clone();
                    let data = tokio::task::spawn_blocking(move || Outputs::read(&p, offset))
                        .await
                        .map_err(|e| Status::internal(e.to_string()))
                        .and_then(|r| r.map_err(|e| Status::internal(e.to_string())));
                    let data = match data {
                        Ok(d) if d.is_empty() => break,
                        Ok(d) => d,
                        Err(e) => {
                            let _ = out.send(Err(e)).await;
                            return;
                        }
                    };
                    let chunk = v1::OutputChunk {
                        job_id: job,
                        stream: stream as i32,
                        offset,
                        data,
                        new_run: false,
                        file: req.file.clone(),
                    };
                    offset += chunk.data.len() as u64;
                    if out.send(Ok(chunk)).await.is_err() {
                        return;
                    }
                }
                if !running {
                    return;
                }
                // Woken by the next push, or after a second to look at the job again (a
                // Slurm-backed site's files grow without a push).
                let _ =
                    tokio::time::timeout(std::time::Duration::from_secs(1), pushed.changed()).await;
            }
        });
        Ok(Response::new(stream))
    }

    async fn list_output_files(
        &self,
        r: Request<v1::ListOutputFilesRequest>,
    ) -> Result<Response<v1::ListOutputFilesResponse>, Status> {
        self.meta_call(r.metadata()).await?;
        let (outputs, _) = self.outputs()?.clone();
        let job = r.into_inner().job_id;
        let active = self.ask(|tx| Msg::Active(job, tx)).await?.is_some();
        held_here(&outputs, job, active)?;
        let files = tokio::task::spawn_blocking(move || outputs.files(job))
            .await
            .map_err(|e| Status::internal(e.to_string()))?
            .map_err(|e| Status::internal(format!("listing the job's files: {e}")))?;
        Ok(Response::new(v1::ListOutputFilesResponse { files }))
    }

    async fn blob_status(
        &self,
        r: Request<v1::BlobStatusRequest>,
    ) -> Result<Response<v1::BlobStatusResponse>, Status> {
        self.meta_call(r.metadata()).await?;
        let held = self
            .cache()?
            .held(&r.into_inner().sha256)
            .map_err(blob_status)?;
        Ok(Response::new(v1::BlobStatusResponse {
            have: held.have,
            complete: held.complete,
        }))
    }

    async fn push_blob(
        &self,
        r: Request<tonic::Streaming<v1::BlobChunk>>,
    ) -> Result<Response<v1::BlobStatusResponse>, Status> {
        self.meta_call(r.metadata()).await?;
        let cache = self.cache()?;
        let mut chunks = r.into_inner();
        let h = match chunks.message().await? {
            None => blobs::Held {
                have: 0,
                complete: false,
            },
            // Written and hashed as the chunks come, on a thread of its own.
            Some(first) => {
                let (sha, size) = (first.sha256.clone(), first.size);
                gridsched_proto::intake::receive(&cache, &sha, size, Some(first), &mut chunks)
                    .await
                    .map_err(|e| match e {
                        gridsched_proto::intake::IntakeError::Stream(s) => s,
                        gridsched_proto::intake::IntakeError::Store(b) => blob_status(b),
                    })?
            }
        };
        Ok(Response::new(v1::BlobStatusResponse {
            have: h.have,
            complete: h.complete,
        }))
    }

    type ReadBlobStream = BoxStream<v1::BlobChunk>;

    async fn read_blob(
        &self,
        r: Request<v1::ReadBlobRequest>,
    ) -> Result<Response<Self::ReadBlobStream>, Status> {
        // The agents read their jobs' inputs; the meta-scheduler moves a workflow node's
        // outputs from here to another site.
        if self.meta.check(r.metadata(), "meta-scheduler").is_err() {
            self.agents
                .check(r.metadata(), "site agents or the meta-scheduler")?;
        }
        let cache = self.cache()?;
        let req = r.into_inner();
        let Some(size) = cache.size(&req.sha256) else {
            return Err(Status::not_found(format!(
                "input {} is not in this site's cache",
                req.sha256
            )));
        };
        let pause = self.read_pause;
        let (tx, rx) = mpsc::channel::<Result<v1::BlobChunk, Status>>(4);
        // One reader, the file open from the offset to the end.
        tokio::task::spawn_blocking(move || {
            let mut f = match cache.reader(&req.sha256, req.offset) {
                Ok(f) => f,
                Err(e) => {
                    let _ = tx.blocking_send(Err(Status::internal(e.to_string())));
                    return;
                }
            };
            let mut at = req.offset;
            while at < size {
                if at > req.offset && !pause.is_zero() {
                    std::thread::sleep(pause);
                }
                let mut data = Vec::with_capacity(blobs::CHUNK);
                match std::io::Read::take(&mut f, blobs::CHUNK as u64).read_to_end(&mut data) {
                    Ok(0) => return,
                    Ok(_) => {}
                    Err(e) => {
                        let _ = tx.blocking_send(Err(Status::internal(e.to_string())));
                        return;
                    }
                }
                let n = data.len() as u64;
                let chunk = v1::BlobChunk {
                    sha256: req.sha256.clone(),
                    offset: at,
                    data,
                    size,
                    name: String::new(),
                };
                if tx.blocking_send(Ok(chunk)).is_err() {
                    return;
                }
                at += n;
            }
        });
        let stream: BoxStream<v1::BlobChunk> =
            Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx));
        Ok(Response::new(stream))
    }
}

/// A blob the cache refuses: a bad digest or a chunk past the end is the caller's error, a
/// mismatch means the bytes were damaged on the way (DATA_LOSS: sent again from scratch).
fn blob_status(e: BlobError) -> Status {
    match e {
        BlobError::BadDigest(_) | BlobError::PastEnd { .. } => {
            Status::invalid_argument(e.to_string())
        }
        BlobError::Mismatch { .. } => Status::data_loss(e.to_string()),
        BlobError::Io(e) => Status::internal(format!("input cache: {e}")),
    }
}

/// NOT_FOUND, saying why, unless the site holds `job`'s output (or the job is `active` here).
fn held_here(outputs: &Outputs, job: u64, active: bool) -> Result<(), Status> {
    if let Some(why) = outputs.gone(job) {
        return Err(Status::not_found(format!(
            "job {job}'s output was removed by the site's retention ({why})"
        )));
    }
    if !active && !outputs.holds(job) {
        return Err(Status::not_found(format!(
            "job {job} has no output here: it never ran at this site"
        )));
    }
    Ok(())
}

/// Removes, every `period`, the output that `retention` no longer keeps (the jobs still held
/// at the site are left alone), leaving why in its place.
pub async fn sweep_outputs(
    outputs: Arc<Outputs>,
    retention: crate::outputs::Retention,
    tx: mpsc::Sender<Msg>,
    period: std::time::Duration,
) {
    let service = Service::new(tx);
    loop {
        tokio::time::sleep(period).await;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let o = outputs.clone();
        let expired = tokio::task::spawn_blocking(move || o.expired(now, &retention)).await;
        let expired = match expired {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => {
                tracing::warn!("outputs: {e}");
                continue;
            }
            Err(_) => continue,
        };
        for (job, why) in expired {
            match service.ask(|tx| Msg::Active(job, tx)).await {
                Ok(None) => {}
                Ok(Some(_)) => continue,
                Err(_) => return,
            }
            let o = outputs.clone();
            let done = tokio::task::spawn_blocking(move || o.remove(job, &why)).await;
            if let Ok(Err(e)) = done {
                tracing::warn!(job, "outputs: removing: {e}");
            }
        }
    }
}

/// Forwards the meta-scheduler's answers on the StartClaims link to the driver while the link's
/// `epoch` holds: a deposed leader's grants are not heard.
async fn forward_answers(
    mut inbound: impl Stream<Item = Result<v1::ClaimAnswer, Status>> + Unpin,
    tx: mpsc::Sender<Msg>,
    fence: Fence,
    epoch: Option<u64>,
) {
    while let Some(Ok(a)) = tokio_stream::StreamExt::next(&mut inbound).await {
        if !fence.holds(epoch) {
            tracing::warn!(
                ?epoch,
                "start-claim answers of a deposed meta-scheduler dropped"
            );
            return;
        }
        if tx.send(Msg::ClaimAnswer(a)).await.is_err() {
            return;
        }
    }
}

/// A stream yielding `first`, then what `rest` sends.
fn async_stream<T, F, Fut>(first: Vec<T>, rest: F) -> BoxStream<T>
where
    T: Send + 'static,
    F: FnOnce(mpsc::Sender<Result<T, Status>>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = mpsc::channel(1024);
    let fut = rest(tx.clone());
    tokio::spawn(async move {
        for e in first {
            if tx.send(Ok(e)).await.is_err() {
                return;
            }
        }
        drop(tx);
        fut.await;
    });
    Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::metadata::MetadataMap;

    fn calls_with(fence: &Fence, epoch: u64) {
        let mut md = MetadataMap::new();
        md.insert(gridsched_security::fence::EPOCH_KEY, epoch.into());
        fence.admit(&md).unwrap();
    }

    /// A claims link opened by epoch 3 is heard until epoch 4 calls; its next answer is dropped
    /// and the link ends.
    #[tokio::test]
    async fn a_deposed_leaders_claim_answers_are_not_heard() {
        let fence = Fence::default();
        calls_with(&fence, 3);
        let (answers, inbound) = mpsc::channel(4);
        let (tx, mut driver) = mpsc::channel(4);
        let link = tokio::spawn(forward_answers(
            tokio_stream::wrappers::ReceiverStream::new(inbound),
            tx,
            fence.clone(),
            Some(3),
        ));
        let grant = |id| v1::ClaimAnswer {
            granted: vec![id],
            ..Default::default()
        };
        answers.send(Ok(grant(7))).await.unwrap();
        match driver.recv().await {
            Some(Msg::ClaimAnswer(a)) => assert_eq!(a.granted, [7]),
            _ => panic!("the answer of the leading epoch was not forwarded"),
        }
        calls_with(&fence, 4);
        answers.send(Ok(grant(8))).await.unwrap();
        drop(answers);
        link.await.unwrap();
        assert!(
            driver.recv().await.is_none(),
            "a deposed leader's grant was heard"
        );
    }
}
