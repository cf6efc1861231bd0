//! What clients reach: the meta-scheduler's servers, in front of a service that leads or of a
//! replica that follows (see [`crate::replica`]).
//!
//! The gRPC server and the HTTP endpoint run from the start. While the replica follows, every
//! call of the API is answered UNAVAILABLE, naming the leader it last saw; the standard health
//! service reports the API NOT_SERVING (the server itself SERVING), so clients given several
//! endpoints pick the one that serves; the dashboard's pages answer 503 with the same words, and
//! `/metrics` shows `gridsched_meta_leader 0`. Once the replica leads, the calls and the pages go
//! to its [`MetaService`] and the links to the local schedulers start (so the sites follow the
//! leader: the links are its calls).

use crate::MetaService;
use crate::store::Leader;
use gridsched_proto::v1::{self, meta_scheduler_server::MetaScheduler};
use std::sync::{Arc, Mutex, OnceLock};
use tonic::{Request, Response, Status, Streaming};

/// The API, answered by the leading service or refused while following.
#[derive(Debug, Clone, Default)]
pub struct Gate {
    inner: Arc<GateInner>,
}

#[derive(Debug, Default)]
struct GateInner {
    /// The service, once this replica leads.
    service: OnceLock<MetaService>,
    /// The leader this replica last saw while following.
    seen: Mutex<Option<Leader>>,
}

impl Gate {
    /// The service, or UNAVAILABLE naming the leader last seen.
    fn service(&self) -> Result<&MetaService, Status> {
        self.inner
            .service
            .get()
            .ok_or_else(|| Status::unavailable(self.following()))
    }

    /// What a follower answers: the leader it last saw.
    fn following(&self) -> String {
        let seen = self.inner.seen.lock().ok().and_then(|s| s.clone());
        match seen {
            Some(l) if !l.expired => format!(
                "this meta-scheduler is a follower: the leader is {} at {} (epoch {})",
                l.holder, l.address, l.epoch
            ),
            _ => "this meta-scheduler is a follower: no replica leads now (one takes over \
                  within the lease's time)"
                .into(),
        }
    }

    /// Records the leader seen while following.
    pub(crate) fn saw(&self, leader: Option<Leader>) {
        if let Ok(mut s) = self.inner.seen.lock() {
            *s = leader;
        }
    }

    /// The service, once leading.
    pub fn leading(&self) -> Option<&MetaService> {
        self.inner.service.get()
    }
}

/// The servers of one meta-scheduler: gRPC (the API behind its [`Gate`], health and
/// reflection) from the start, the links and the HTTP endpoint once it leads.
pub struct Front {
    gate: Gate,
    health: gridsched_proto::standard::tonic_health::server::HealthReporter,
    /// The service's metrics, registered at start (handed to the service when it leads).
    metrics: crate::metrics::MetaMetrics,
    /// The dashboard's routes, once leading.
    pages: Arc<OnceLock<axum::Router>>,
    server: Mutex<Option<ServerParts>>,
    cfg: crate::MetaConfig,
}

impl std::fmt::Debug for Front {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Front").field("gate", &self.gate).finish()
    }
}

/// What the gRPC server is built from, taken once by [`Front::serve`].
struct ServerParts {
    layer: gridsched_telemetry::GrpcMetricsLayer,
    routes: tonic::service::Routes,
}

const API: &str = v1::meta_scheduler_server::SERVICE_NAME;

/// The HTTP routes beside `/metrics`: the dashboard's once leading, before that a 503 page
/// saying who leads.
fn switch(gate: Gate, pages: Arc<OnceLock<axum::Router>>) -> axum::Router {
    axum::Router::new().fallback(move |req: axum::extract::Request| {
        let (gate, pages) = (gate.clone(), pages.clone());
        async move {
            use axum::response::IntoResponse;
            match pages.get() {
                Some(r) => {
                    let r = r.clone();
                    match tower::ServiceExt::oneshot(r, req).await {
                        Ok(resp) => resp.into_response(),
                        Err(never) => match never {},
                    }
                }
                None => (
                    axum::http::StatusCode::SERVICE_UNAVAILABLE,
                    axum::response::Html(format!(
                        "<!doctype html><title>gridsched: follower</title><p>{}</p>",
                        crate::dashboard::html::esc(&gate.following())
                    )),
                )
                    .into_response(),
            }
        }
    })
}

impl Front {
    /// The servers of a meta-scheduler of `cfg`, its API NOT_SERVING until it leads; the HTTP
    /// endpoint (on `metrics_listen`) opens now.
    pub async fn new(cfg: &crate::MetaConfig) -> anyhow::Result<Front> {
        let mut registry = gridsched_telemetry::Registry::default();
        let layer = gridsched_telemetry::GrpcMetricsLayer::new(&mut registry);
        let metrics = crate::metrics::MetaMetrics::new(&mut registry);
        let gate = Gate::default();
        let pages: Arc<OnceLock<axum::Router>> = Arc::default();
        if let Some(addr) = cfg.metrics_listen {
            let routes = switch(gate.clone(), pages.clone());
            let tls = cfg.tls.rustls_server()?;
            let scheme = if tls.is_some() { "https" } else { "http" };
            match gridsched_telemetry::serve_with(addr, Arc::new(registry), routes, tls).await {
                Ok(bound) => tracing::info!(%bound, "dashboard on {scheme}://{bound}/"),
                Err(e) => tracing::error!(%addr, "HTTP endpoint: {e}"),
            }
        }
        let standard = gridsched_proto::standard::standard_services(API).await?;
        standard
            .health
            .set_service_status(
                API,
                gridsched_proto::standard::tonic_health::ServingStatus::NotServing,
            )
            .await;
        Ok(Front {
            gate,
            health: standard.health,
            metrics,
            pages,
            server: Mutex::new(Some(ServerParts {
                layer,
                routes: standard.routes,
            })),
            cfg: cfg.clone(),
        })
    }

    /// The gate of its API.
    pub fn gate(&self) -> &Gate {
        &self.gate
    }

    /// Hands the API and the dashboard to `service`, which now leads: gives it the metrics,
    /// starts its links to the local schedulers and reports the API SERVING.
    pub async fn lead(&self, service: MetaService) -> anyhow::Result<()> {
        self.metrics.leader.set(1);
        self.metrics.epoch.set(service.epoch() as i64);
        if let Ok(mut st) = service.inner.state.lock() {
            st.metrics = self.metrics.clone();
        }
        crate::links::start(&service);
        let _ = self.pages.set(crate::dashboard::routes(service.clone()));
        self.gate
            .inner
            .service
            .set(service)
            .map_err(|_| anyhow::anyhow!("the meta-scheduler already leads"))?;
        self.health
            .set_service_status(
                API,
                gridsched_proto::standard::tonic_health::ServingStatus::Serving,
            )
            .await;
        Ok(())
    }

    /// Serves gRPC on `listener` until `shutdown` resolves (over TLS when `tls.cert` is set).
    pub async fn serve(
        &self,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send,
    ) -> anyhow::Result<()> {
        let parts = self
            .server
            .lock()
            .ok()
            .and_then(|mut s| s.take())
            .ok_or_else(|| anyhow::anyhow!("the gRPC server already runs"))?;
        // Windows wide enough for input transfers (1 MiB chunks) to stream without waiting.
        let mut server = tonic::transport::Server::builder()
            .initial_stream_window_size(Some(gridsched_proto::blobs::WINDOW))
            .initial_connection_window_size(Some(2 * gridsched_proto::blobs::WINDOW))
            .max_frame_size(Some(gridsched_proto::blobs::FRAME));
        if let Some(tls) = self.cfg.tls.server()? {
            server = server.tls_config(tls)?;
        }
        let incoming =
            tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
        server
            .layer(parts.layer)
            .add_routes(parts.routes)
            .add_service(v1::meta_scheduler_server::MetaSchedulerServer::new(
                self.gate.clone(),
            ))
            .serve_with_incoming_shutdown(incoming, shutdown)
            .await?;
        Ok(())
    }
}

#[tonic::async_trait]
impl MetaScheduler for Gate {
    async fn submit(
        &self,
        r: Request<v1::SubmitRequest>,
    ) -> Result<Response<v1::SubmitResponse>, Status> {
        MetaScheduler::submit(self.service()?, r).await
    }

    async fn submit_batch(
        &self,
        r: Request<Streaming<v1::SubmitRequest>>,
    ) -> Result<Response<v1::SubmitBatchResponse>, Status> {
        MetaScheduler::submit_batch(self.service()?, r).await
    }

    async fn get_job(
        &self,
        r: Request<v1::GetJobRequest>,
    ) -> Result<Response<v1::GetJobResponse>, Status> {
        MetaScheduler::get_job(self.service()?, r).await
    }

    async fn list_jobs(
        &self,
        r: Request<v1::ListJobsRequest>,
    ) -> Result<Response<v1::ListJobsResponse>, Status> {
        MetaScheduler::list_jobs(self.service()?, r).await
    }

    async fn cancel_job(
        &self,
        r: Request<v1::CancelJobRequest>,
    ) -> Result<Response<v1::CancelJobResponse>, Status> {
        MetaScheduler::cancel_job(self.service()?, r).await
    }

    type WatchStream = <MetaService as MetaScheduler>::WatchStream;

    async fn watch(
        &self,
        r: Request<v1::WatchRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        MetaScheduler::watch(self.service()?, r).await
    }

    async fn list_sites(
        &self,
        r: Request<v1::ListSitesRequest>,
    ) -> Result<Response<v1::ListSitesResponse>, Status> {
        MetaScheduler::list_sites(self.service()?, r).await
    }

    async fn reserve(
        &self,
        r: Request<v1::ReserveRequest>,
    ) -> Result<Response<v1::ReserveResponse>, Status> {
        MetaScheduler::reserve(self.service()?, r).await
    }

    async fn list_reservations(
        &self,
        r: Request<v1::ListReservationsRequest>,
    ) -> Result<Response<v1::ListReservationsResponse>, Status> {
        MetaScheduler::list_reservations(self.service()?, r).await
    }

    async fn cancel_reservation(
        &self,
        r: Request<v1::CancelReservationRequest>,
    ) -> Result<Response<v1::CancelReservationResponse>, Status> {
        MetaScheduler::cancel_reservation(self.service()?, r).await
    }

    type OutputStream = <MetaService as MetaScheduler>::OutputStream;

    async fn output(
        &self,
        r: Request<v1::OutputRequest>,
    ) -> Result<Response<Self::OutputStream>, Status> {
        MetaScheduler::output(self.service()?, r).await
    }

    async fn list_output_files(
        &self,
        r: Request<v1::ListOutputFilesRequest>,
    ) -> Result<Response<v1::ListOutputFilesResponse>, Status> {
        MetaScheduler::list_output_files(self.service()?, r).await
    }

    async fn explain(
        &self,
        r: Request<v1::ExplainRequest>,
    ) -> Result<Response<v1::ExplainResponse>, Status> {
        MetaScheduler::explain(self.service()?, r).await
    }

    async fn upload(
        &self,
        r: Request<Streaming<v1::BlobChunk>>,
    ) -> Result<Response<v1::UploadResponse>, Status> {
        MetaScheduler::upload(self.service()?, r).await
    }

    async fn usage(
        &self,
        r: Request<v1::UsageRequest>,
    ) -> Result<Response<v1::UsageResponse>, Status> {
        MetaScheduler::usage(self.service()?, r).await
    }

    async fn history(
        &self,
        r: Request<v1::HistoryRequest>,
    ) -> Result<Response<v1::HistoryResponse>, Status> {
        MetaScheduler::history(self.service()?, r).await
    }
}
