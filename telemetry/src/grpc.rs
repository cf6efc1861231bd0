//! A tower layer for tonic servers that counts every gRPC request by method and status code and
//! times it (until the response headers; for a stream, until it opens). The status is the
//! `grpc-status` header of a trailers-only response (errors), else `0` (OK).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Call {
    method: String,
    code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Method {
    method: String,
}

type Latency = Family<Method, Histogram, fn() -> Histogram>;

#[derive(Debug)]
struct GrpcMetrics {
    requests: Family<Call, Counter>,
    latency: Latency,
}

/// The layer; clone it freely.
#[derive(Clone, Debug)]
pub struct GrpcMetricsLayer {
    m: Arc<GrpcMetrics>,
}

impl GrpcMetricsLayer {
    /// A layer whose metrics are registered in `registry`.
    pub fn new(registry: &mut Registry) -> GrpcMetricsLayer {
        let requests = Family::<Call, Counter>::default();
        let latency: Latency =
            Family::new_with_constructor(|| Histogram::new(crate::duration_buckets()));
        registry.register(
            "gridsched_grpc_requests",
            "gRPC requests served, by method and status code",
            requests.clone(),
        );
        registry.register(
            "gridsched_grpc_request_duration_seconds",
            "Time to answer a gRPC request (to the response headers)",
            latency.clone(),
        );
        GrpcMetricsLayer {
            m: Arc::new(GrpcMetrics { requests, latency }),
        }
    }
}

impl<S> tower::Layer<S> for GrpcMetricsLayer {
    type Service = GrpcMetricsService<S>;
    fn layer(&self, inner: S) -> Self::Service {
        GrpcMetricsService {
            inner,
            m: self.m.clone(),
        }
    }
}

/// The service the layer wraps around the server.
#[derive(Clone, Debug)]
pub struct GrpcMetricsService<S> {
    inner: S,
    m: Arc<GrpcMetrics>,
}

impl<S, B, RB> tower::Service<http::Request<B>> for GrpcMetricsService<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<RB>>,
    S::Future: Send + 'static,
    S::Error: 'static,
    RB: 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let method = req.uri().path().to_owned();
        let start = Instant::now();
        let m = self.m.clone();
        let fut = self.inner.call(req);
        Box::pin(async move {
            let r = fut.await;
            let code = match &r {
                Ok(resp) => resp
                    .headers()
                    .get("grpc-status")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("0")
                    .to_owned(),
                Err(_) => "transport".to_owned(),
            };
            m.requests
                .get_or_create(&Call {
                    method: method.clone(),
                    code,
                })
                .inc();
            m.latency
                .get_or_create(&Method { method })
                .observe(start.elapsed().as_secs_f64());
            r
        })
    }
}
