//! The gridsched meta-scheduler service (issue 5 part 1): the grid's gRPC entry point. It
//! validates each submitted job, classifies and dispatches it with the core's classifier and
//! dispatch strategy, records it durably in a `redb` store before acknowledging, forwards it to
//! its site's local scheduler and follows it to its end through that scheduler's event stream;
//! it serves get / list / cancel / watch / sites / explain.

pub mod cli;
pub mod config;
pub mod decide;
pub mod explain;
pub mod links;
pub mod metrics;
pub mod service;
pub mod state;
pub mod store;
pub mod validate;

pub use cli::main_with_args;
pub use config::MetaConfig;
pub use service::MetaService;

use gridsched_proto::v1::meta_scheduler_server::MetaSchedulerServer;

/// Starts the links to the local schedulers and serves `service` on an already bound listener
/// until `shutdown` resolves.
pub async fn serve(
    service: MetaService,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> Result<(), tonic::transport::Error> {
    links::start(&service);
    let mut registry = gridsched_telemetry::Registry::default();
    let layer = gridsched_telemetry::GrpcMetricsLayer::new(&mut registry);
    if let Ok(mut st) = service.inner.state.lock() {
        st.metrics = metrics::MetaMetrics::new(&mut registry);
    }
    if let Some(addr) = service.inner.cfg.metrics_listen {
        match gridsched_telemetry::serve(addr, std::sync::Arc::new(registry)).await {
            Ok(bound) => tracing::info!(%bound, "metrics on http://{bound}/metrics"),
            Err(e) => tracing::error!(%addr, "metrics endpoint: {e}"),
        }
    }
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    tonic::transport::Server::builder()
        .layer(layer)
        .add_service(MetaSchedulerServer::new(service))
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await
}
