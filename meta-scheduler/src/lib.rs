//! The gridsched meta-scheduler service (issue 5 part 1): the grid's gRPC entry point. It
//! validates and classifies each submitted job, places it on a site, records it durably in a
//! `redb` store before acknowledging and serves get / list / cancel / watch / sites / explain.

pub mod config;
pub mod service;
pub mod state;
pub mod store;
pub mod validate;

pub use config::MetaConfig;
pub use service::MetaService;

use gridsched_proto::v1::meta_scheduler_server::MetaSchedulerServer;

/// Serves `service` on an already bound listener until `shutdown` resolves.
pub async fn serve(
    service: MetaService,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> Result<(), tonic::transport::Error> {
    let incoming = tonic::transport::server::TcpIncoming::from(listener);
    tonic::transport::Server::builder()
        .add_service(MetaSchedulerServer::new(service))
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await
}
