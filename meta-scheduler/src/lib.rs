//! The gridsched meta-scheduler service (the Meta-Scheduler of spec
//! `two-level-grid-scheduler.md` D3–D4): the grid's gRPC entry point. It validates each submitted
//! job, classifies and dispatches it with the core's classifier and
//! dispatch strategy, records it durably in a `redb` store before acknowledging, forwards it to
//! its site's local scheduler and follows it to its end through that scheduler's event stream;
//! it serves get / list / cancel / watch / sites / explain.

pub mod access;
pub mod cli;
pub mod coallocate;
pub mod config;
pub mod dashboard;
pub mod decide;
pub mod explain;
pub mod history;
pub mod links;
pub mod metrics;
pub mod reservations;
pub mod service;
pub mod state;
pub mod store;
pub mod validate;

pub use cli::main_with_args;
pub use config::MetaConfig;
pub use service::MetaService;

use gridsched_proto::v1::meta_scheduler_server::MetaSchedulerServer;

/// Starts the links to the local schedulers and serves `service` on an already bound listener
/// until `shutdown` resolves: the gRPC API (over TLS when `tls.cert` is set) with the standard
/// health and reflection services ([`gridsched_proto::standard`], reachable without a token:
/// the API checks tokens in each method) and, on `metrics_listen`, `/metrics` and the dashboard.
pub async fn serve(
    service: MetaService,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> anyhow::Result<()> {
    links::start(&service);
    let mut registry = gridsched_telemetry::Registry::default();
    let layer = gridsched_telemetry::GrpcMetricsLayer::new(&mut registry);
    if let Ok(mut st) = service.inner.state.lock() {
        st.metrics = metrics::MetaMetrics::new(&mut registry);
    }
    let cfg = &service.inner.cfg;
    if let Some(addr) = cfg.metrics_listen {
        let routes = dashboard::routes(service.clone());
        let tls = cfg.tls.rustls_server()?;
        let scheme = if tls.is_some() { "https" } else { "http" };
        match gridsched_telemetry::serve_with(addr, std::sync::Arc::new(registry), routes, tls)
            .await
        {
            Ok(bound) => tracing::info!(%bound, "dashboard on {scheme}://{bound}/"),
            Err(e) => tracing::error!(%addr, "HTTP endpoint: {e}"),
        }
    }
    let mut server = tonic::transport::Server::builder();
    if let Some(tls) = cfg.tls.server()? {
        server = server.tls_config(tls)?;
    }
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    let standard = gridsched_proto::standard::standard_services(
        gridsched_proto::v1::meta_scheduler_server::SERVICE_NAME,
    )
    .await?;
    server
        .layer(layer)
        .add_routes(standard.routes)
        .add_service(MetaSchedulerServer::new(service))
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await?;
    Ok(())
}
