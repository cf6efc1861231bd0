//! The gRPC face of a local scheduler: each call becomes a message to the
//! [`crate::driver`] task and waits for its answer. Calls are checked against the secret of the
//! peer they belong to: the meta-scheduler's or the agents'. The meta-scheduler's calls are
//! fenced too: once a replica of a newer lease epoch has called, an older one is refused, and
//! its start-claim answers are no longer heard ([`Fence`]).

use crate::driver::Msg;
use gridsched_proto::v1::{self, local_scheduler_server::LocalScheduler};
use gridsched_security::{Fence, SharedSecret};
use std::pin::Pin;
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
        }
    }

    /// Checks a call of the meta-scheduler: its secret, then its epoch; the epoch it called with.
    fn meta_call(&self, md: &tonic::metadata::MetadataMap) -> Result<Option<u64>, Status> {
        self.meta.check(md, "meta-scheduler")?;
        let newest = self.fence.newest();
        let epoch = self.fence.admit(md)?;
        if let Some(e) = epoch.filter(|&e| e > newest) {
            tracing::info!(epoch = e, "the meta-scheduler calls with a new lease epoch");
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
        self.meta_call(r.metadata())?;
        let r = r.into_inner();
        self.ask(|tx| Msg::Enqueue(Box::new(r), tx))
            .await
            .map(Response::new)
    }

    async fn cancel(
        &self,
        r: Request<v1::CancelRequest>,
    ) -> Result<Response<v1::CancelResponse>, Status> {
        self.meta_call(r.metadata())?;
        let r = r.into_inner();
        self.ask(|tx| Msg::Cancel(r, tx)).await.map(Response::new)
    }

    async fn status(
        &self,
        r: Request<v1::StatusRequest>,
    ) -> Result<Response<v1::StatusResponse>, Status> {
        self.meta_call(r.metadata())?;
        self.ask(Msg::Status).await.map(Response::new)
    }

    type JobEventsStream = BoxStream<v1::JobEvent>;

    async fn job_events(
        &self,
        r: Request<v1::JobEventsRequest>,
    ) -> Result<Response<Self::JobEventsStream>, Status> {
        self.meta_call(r.metadata())?;
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
        self.ask(|tx| Msg::Register(r, tx)).await.map(Response::new)
    }

    async fn heartbeat(
        &self,
        r: Request<v1::HeartbeatRequest>,
    ) -> Result<Response<v1::HeartbeatResponse>, Status> {
        self.agents.check(r.metadata(), "site agents")?;
        let r = r.into_inner();
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
        let epoch = self.meta_call(r.metadata())?;
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
        self.meta_call(r.metadata())?;
        let r = r.into_inner();
        self.ask(|tx| Msg::Reserve(r, tx)).await.map(Response::new)
    }

    async fn cancel_reservation(
        &self,
        r: Request<v1::CancelReservationRequest>,
    ) -> Result<Response<v1::CancelReservationResponse>, Status> {
        self.meta_call(r.metadata())?;
        let r = r.into_inner();
        self.ask(|tx| Msg::CancelReservation(r, tx))
            .await
            .map(Response::new)
    }

    async fn commit_reservation(
        &self,
        r: Request<v1::CommitReservationRequest>,
    ) -> Result<Response<v1::CommitReservationResponse>, Status> {
        self.meta_call(r.metadata())?;
        let r = r.into_inner();
        self.ask(|tx| Msg::CommitReservation(r, tx))
            .await
            .map(Response::new)
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
