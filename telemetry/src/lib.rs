//! Prometheus metrics of the gridsched services (issue 6 part 3): each service registers its own
//! metrics in a [`Registry`], serves them in the text exposition format on `GET /metrics`
//! ([`serve`]), and counts and times its gRPC requests with [`GrpcMetricsLayer`]
//! (`gridsched_grpc_requests_total{method, code}`, `gridsched_grpc_request_duration_seconds`).

mod grpc;

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
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let app = axum::Router::new().route(
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
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!("metrics server: {e}");
        }
    });
    Ok(bound)
}
