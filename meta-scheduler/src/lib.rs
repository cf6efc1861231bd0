//! The gridsched meta-scheduler service (the Meta-Scheduler of spec
//! `two-level-grid-scheduler.md` D3–D4): the grid's gRPC entry point. It validates each submitted
//! job, classifies and dispatches it with the core's classifier and
//! dispatch strategy, records it durably in its store (embedded, or PostgreSQL shared by replicas
//! of which one leads: [`replica`]) before acknowledging, forwards it to its site's local
//! scheduler and follows it to its end through that scheduler's event stream; it serves get /
//! list / cancel / watch / sites / explain.

pub mod access;
pub mod accounting;
pub mod cli;
pub mod coallocate;
pub mod config;
pub mod dashboard;
pub mod decide;
pub mod explain;
#[doc(hidden)]
pub mod fuzz;
pub mod gate;
pub mod gridlog;
pub mod history;
pub mod inputs;
pub mod links;
pub mod metrics;
pub mod output;
pub mod rate;
pub mod replica;
pub mod reports;
pub mod reservations;
pub mod service;
pub mod state;
pub mod store;
pub mod urgent;
pub mod validate;
pub mod workflows;

pub use cli::main_with_args;
pub use config::MetaConfig;
pub use service::MetaService;

/// Serves `service`, which leads (it is the only meta-scheduler of its store), on an already
/// bound listener until `shutdown` resolves: the gRPC API (over TLS when `tls.cert` is set) with
/// the standard health and reflection services ([`gridsched_proto::standard`], reachable without a
/// token: the API checks tokens in each method), the links to the local schedulers and, on
/// `metrics_listen`, `/metrics` and the dashboard. Replicas sharing a store run
/// [`replica::run`] instead.
pub async fn serve(
    service: MetaService,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> anyhow::Result<()> {
    let front = gate::Front::new(&service.inner.cfg).await?;
    front.lead(service).await?;
    front.serve(listener, shutdown).await
}
