//! Prometheus metrics of the gridsched services: each service registers its own
//! metrics in a [`Registry`], serves them in the text exposition format on `GET /metrics`
//! ([`serve`]), and counts and times its gRPC requests with [`GrpcMetricsLayer`]
//! (`gridsched_grpc_requests_total{method, code}`, `gridsched_grpc_request_duration_seconds`).
//! [`serve_with`] adds a service's own pages (the meta-scheduler's dashboard) and HTTPS.
//! [`JsonLines`] is the file the services record their runners' input logs in.

mod grpc;
mod jsonl;
mod tls_listener;

pub use jsonl::JsonLines;
pub use tls_listener::TlsListener;

pub use grpc::{GrpcMetricsLayer, GrpcMetricsService};
pub use prometheus_client;
pub use prometheus_client::registry::Registry;

use std::net::SocketAddr;
use std::sync::Arc;

/// Histogram buckets for durations from 50 µs to about 1.6 s (doubling).
pub fn duration_buckets() -> impl Iterator<Item = f64> {
    prometheus_client::metrics::histogram::exponential_buckets(0.000_05, 2.0, 16)
}

/// The text exposition of a registry.
pub fn render(registry: &Registry) -> String {
    let mut out = String::new();
    if let Err(e) = prometheus_client::encoding::text::encode(&mut out, registry) {
        tracing::error!("encoding metrics: {e}");
    }
    out
}

/// Binds `addr` and serves `GET /metrics` from `registry` in the background; returns the bound
/// address (port 0 picks a free one).
pub async fn serve(addr: SocketAddr, registry: Arc<Registry>) -> std::io::Result<SocketAddr> {
    serve_with(addr, registry, axum::Router::new(), None).await
}

/// Like [`serve`], with `routes` beside `/metrics`, over HTTPS when `tls` is given.
pub async fn serve_with(
    addr: SocketAddr,
    registry: Arc<Registry>,
    routes: axum::Router,
    tls: Option<Arc<tokio_rustls::rustls::ServerConfig>>,
) -> std::io::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let app = routes.route(
        "/metrics",
        axum::routing::get(move || {
            let registry = registry.clone();
            async move {
                (
                    [(
                        http::header::CONTENT_TYPE,
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    )],
                    render(&registry),
                )
            }
        }),
    );
    match tls {
        None => {
            tokio::spawn(async move {
                if let Err(e) = axum::serve(listener, app).await {
                    tracing::error!("HTTP server: {e}");
                }
            });
        }
        Some(cfg) => {
            let listener = TlsListener::new(listener, cfg)?;
            tokio::spawn(async move {
                if let Err(e) = axum::serve(listener, app).await {
                    tracing::error!("HTTPS server: {e}");
                }
            });
        }
    }
    Ok(bound)
}
