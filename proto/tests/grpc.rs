//! The generated gRPC code works: clients and servers exist for every service, and a tiny
//! in-process `MetaScheduler` server answers the generated client over real HTTP/2.

use gridsched_proto::v1::{
    self, JobEvent, JobState,
    local_scheduler_client::LocalSchedulerClient,
    local_scheduler_server::LocalSchedulerServer,
    meta_scheduler_client::MetaSchedulerClient,
    meta_scheduler_server::{MetaScheduler, MetaSchedulerServer},
};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio_stream::Stream;
use tonic::transport::{Channel, Server, server::TcpIncoming};
use tonic::{Code, Request, Response, Status, Streaming};

/// Names every generated client and server type, so that a missing one fails to compile.
#[allow(dead_code)]
fn _compile_check() {
    fn server<S>() {}
    let _: Option<MetaSchedulerClient<Channel>> = None;
    let _: Option<LocalSchedulerClient<Channel>> = None;
    server::<MetaSchedulerServer<Meta>>();
    server::<LocalSchedulerServer<NoLocal>>();
    fn local_trait<T: v1::local_scheduler_server::LocalScheduler>() {}
    fn meta_trait<T: MetaScheduler>() {}
    meta_trait::<Meta>();
    local_trait::<NoLocal>();
}

type BoxStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// A meta-scheduler that knows no job and numbers submissions from 1.
#[derive(Debug, Default)]
struct Meta {
    next_id: AtomicU64,
}

#[tonic::async_trait]
impl MetaScheduler for Meta {
    async fn reserve(
        &self,
        _: Request<v1::ReserveRequest>,
    ) -> Result<Response<v1::ReserveResponse>, Status> {
        Err(Status::unimplemented("reserve"))
    }

    async fn list_reservations(
        &self,
        _: Request<v1::ListReservationsRequest>,
    ) -> Result<Response<v1::ListReservationsResponse>, Status> {
        Err(Status::unimplemented("list_reservations"))
    }

    async fn cancel_reservation(
        &self,
        _: Request<v1::CancelReservationRequest>,
    ) -> Result<Response<v1::CancelReservationResponse>, Status> {
        Err(Status::unimplemented("cancel_reservation"))
    }

    async fn submit(
        &self,
        request: Request<v1::SubmitRequest>,
    ) -> Result<Response<v1::SubmitResponse>, Status> {
        let spec = request
            .into_inner()
            .spec
            .ok_or_else(|| Status::invalid_argument("field `spec`: required"))?;
        Ok(Response::new(v1::SubmitResponse {
            job_id: self.next_id.fetch_add(1, Ordering::Relaxed) + 1,
            state: JobState::Accepted.into(),
            priority: spec.owner_priority + 1,
            duplicate: false,
        }))
    }

    async fn submit_batch(
        &self,
        _: Request<Streaming<v1::SubmitRequest>>,
    ) -> Result<Response<v1::SubmitBatchResponse>, Status> {
        Err(Status::unimplemented("submit_batch"))
    }

    async fn get_job(
        &self,
        request: Request<v1::GetJobRequest>,
    ) -> Result<Response<v1::GetJobResponse>, Status> {
        Err(Status::not_found(format!(
            "job {} not found",
            request.into_inner().job_id
        )))
    }

    async fn list_jobs(
        &self,
        _: Request<v1::ListJobsRequest>,
    ) -> Result<Response<v1::ListJobsResponse>, Status> {
        Err(Status::unimplemented("list_jobs"))
    }

    async fn cancel_job(
        &self,
        _: Request<v1::CancelJobRequest>,
    ) -> Result<Response<v1::CancelJobResponse>, Status> {
        Err(Status::unimplemented("cancel_job"))
    }

    type WatchStream = BoxStream<JobEvent>;

    async fn watch(
        &self,
        _: Request<v1::WatchRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        Err(Status::unimplemented("watch"))
    }

    async fn list_sites(
        &self,
        _: Request<v1::ListSitesRequest>,
    ) -> Result<Response<v1::ListSitesResponse>, Status> {
        Err(Status::unimplemented("list_sites"))
    }

    async fn explain(
        &self,
        _: Request<v1::ExplainRequest>,
    ) -> Result<Response<v1::ExplainResponse>, Status> {
        Err(Status::unimplemented("explain"))
    }

    type OutputStream = BoxStream<v1::OutputChunk>;

    async fn output(
        &self,
        _: Request<v1::OutputRequest>,
    ) -> Result<Response<Self::OutputStream>, Status> {
        Err(Status::unimplemented("output"))
    }

    async fn list_output_files(
        &self,
        _: Request<v1::ListOutputFilesRequest>,
    ) -> Result<Response<v1::ListOutputFilesResponse>, Status> {
        Err(Status::unimplemented("list_output_files"))
    }

    async fn upload(
        &self,
        _: Request<tonic::Streaming<v1::BlobChunk>>,
    ) -> Result<Response<v1::UploadResponse>, Status> {
        Err(Status::unimplemented("upload"))
    }

    async fn usage(
        &self,
        _: Request<v1::UsageRequest>,
    ) -> Result<Response<v1::UsageResponse>, Status> {
        Err(Status::unimplemented("usage"))
    }

    async fn history(
        &self,
        _: Request<v1::HistoryRequest>,
    ) -> Result<Response<v1::HistoryResponse>, Status> {
        Err(Status::unimplemented("history"))
    }
}

/// A local scheduler that implements nothing (only for the compile check).
#[derive(Debug)]
struct NoLocal;

#[tonic::async_trait]
impl v1::local_scheduler_server::LocalScheduler for NoLocal {
    async fn enqueue(
        &self,
        _: Request<v1::EnqueueRequest>,
    ) -> Result<Response<v1::EnqueueResponse>, Status> {
        Err(Status::unimplemented("enqueue"))
    }

    async fn cancel(
        &self,
        _: Request<v1::CancelRequest>,
    ) -> Result<Response<v1::CancelResponse>, Status> {
        Err(Status::unimplemented("cancel"))
    }

    async fn status(
        &self,
        _: Request<v1::StatusRequest>,
    ) -> Result<Response<v1::StatusResponse>, Status> {
        Err(Status::unimplemented("status"))
    }

    type JobEventsStream = BoxStream<JobEvent>;

    async fn job_events(
        &self,
        _: Request<v1::JobEventsRequest>,
    ) -> Result<Response<Self::JobEventsStream>, Status> {
        Err(Status::unimplemented("job_events"))
    }

    async fn register_agent(
        &self,
        _: Request<v1::RegisterAgentRequest>,
    ) -> Result<Response<v1::RegisterAgentResponse>, Status> {
        Err(Status::unimplemented("register_agent"))
    }

    async fn heartbeat(
        &self,
        _: Request<v1::HeartbeatRequest>,
    ) -> Result<Response<v1::HeartbeatResponse>, Status> {
        Err(Status::unimplemented("heartbeat"))
    }

    type AgentOrdersStream = BoxStream<v1::AgentCommand>;

    async fn agent_orders(
        &self,
        _: Request<v1::AgentOrdersRequest>,
    ) -> Result<Response<Self::AgentOrdersStream>, Status> {
        Err(Status::unimplemented("agent_orders"))
    }

    type StartClaimsStream = BoxStream<v1::ClaimRequest>;

    async fn start_claims(
        &self,
        _: Request<tonic::Streaming<v1::ClaimAnswer>>,
    ) -> Result<Response<Self::StartClaimsStream>, Status> {
        Err(Status::unimplemented("start_claims"))
    }

    async fn reserve(
        &self,
        _: Request<v1::ReserveRequest>,
    ) -> Result<Response<v1::ReserveResponse>, Status> {
        Err(Status::unimplemented("reserve"))
    }

    async fn cancel_reservation(
        &self,
        _: Request<v1::CancelReservationRequest>,
    ) -> Result<Response<v1::CancelReservationResponse>, Status> {
        Err(Status::unimplemented("cancel_reservation"))
    }

    async fn commit_reservation(
        &self,
        _: Request<v1::CommitReservationRequest>,
    ) -> Result<Response<v1::CommitReservationResponse>, Status> {
        Err(Status::unimplemented("commit_reservation"))
    }

    async fn reprioritize(
        &self,
        _: Request<v1::ReprioritizeRequest>,
    ) -> Result<Response<v1::ReprioritizeResponse>, Status> {
        Err(Status::unimplemented("reprioritize"))
    }

    async fn push_output(
        &self,
        _: Request<v1::OutputChunk>,
    ) -> Result<Response<v1::PushOutputResponse>, Status> {
        Err(Status::unimplemented("push_output"))
    }

    type OutputStream = BoxStream<v1::OutputChunk>;

    async fn output(
        &self,
        _: Request<v1::OutputRequest>,
    ) -> Result<Response<Self::OutputStream>, Status> {
        Err(Status::unimplemented("output"))
    }

    async fn list_output_files(
        &self,
        _: Request<v1::ListOutputFilesRequest>,
    ) -> Result<Response<v1::ListOutputFilesResponse>, Status> {
        Err(Status::unimplemented("list_output_files"))
    }

    async fn blob_status(
        &self,
        _: Request<v1::BlobStatusRequest>,
    ) -> Result<Response<v1::BlobStatusResponse>, Status> {
        Err(Status::unimplemented("blob_status"))
    }

    async fn push_blob(
        &self,
        _: Request<tonic::Streaming<v1::BlobChunk>>,
    ) -> Result<Response<v1::BlobStatusResponse>, Status> {
        Err(Status::unimplemented("push_blob"))
    }

    type ReadBlobStream = BoxStream<v1::BlobChunk>;

    async fn read_blob(
        &self,
        _: Request<v1::ReadBlobRequest>,
    ) -> Result<Response<Self::ReadBlobStream>, Status> {
        Err(Status::unimplemented("read_blob"))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn meta_scheduler_round_trip_over_tcp() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(
        Server::builder()
            .add_service(MetaSchedulerServer::new(Meta::default()))
            .serve_with_incoming_shutdown(TcpIncoming::from(listener), async {
                let _ = stop_rx.await;
            }),
    );

    let mut client = MetaSchedulerClient::connect(format!("http://{addr}"))
        .await
        .unwrap();

    let err = client
        .get_job(v1::GetJobRequest { job_id: 77 })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
    assert!(err.message().contains("77"), "{err:?}");

    let spec = v1::JobSpec {
        user: "alice".into(),
        owner_priority: 2,
        processors: 4,
        estimate_s: 60,
        emulate_runtime_s: Some(30),
        ..Default::default()
    };
    for expected_id in 1..=2 {
        let resp = client
            .submit(v1::SubmitRequest {
                spec: Some(spec.clone()),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(resp.job_id, expected_id);
        assert_eq!(resp.state(), JobState::Accepted);
        assert_eq!(resp.priority, 3);
        assert!(!resp.duplicate);
    }

    let err = client
        .submit(v1::SubmitRequest { spec: None })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);

    let err = client
        .list_sites(v1::ListSitesRequest::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unimplemented);

    stop_tx.send(()).unwrap();
    server.await.unwrap().unwrap();
}
