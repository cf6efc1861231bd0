//! The `local-scheduler` service (the Local-Scheduler of spec `two-level-grid-scheduler.md`
//! D3): one per cluster. It queues the jobs the meta-scheduler enqueues, runs the configured
//! gridsched-core policy (built by name through `PolicyConfig`, the same code `gridsim`
//! simulates) in real time, orders its machines' site
//! agents to start and kill jobs, and streams job events. State is kept in `redb` and survives a
//! restart (queued jobs are resubmitted; running ones restored with `restore_running`, or requeued
//! when the policy cannot).
//!
//! Reading adopted where the specification leaves it open: a lost agent's jobs end in state LOST
//! (`lost_agent = "fail"`, the proto's state for "outcome unknown") or are requeued
//! (`lost_agent = "requeue"`); the RUNNING event is emitted when the agent reports the process
//! started, not when the order is sent.

pub mod accounts;
pub mod claim_link;
pub mod config;
pub mod driver;
pub mod edge;
pub mod journal;
pub mod metrics;
pub mod outputs;
pub mod service;
pub mod slurm;
pub mod staging;
pub mod store;

pub use config::{Config, LostAgent};

use clap::Parser;
use gridsched_proto::v1::local_scheduler_server::LocalSchedulerServer;
use std::net::SocketAddr;
use std::path::PathBuf;
use tokio::net::TcpListener;

/// Command line of the `local-scheduler` binary; flags override the configuration file.
#[derive(Debug, Parser)]
#[command(
    name = "local-scheduler",
    about = "gridsched local scheduler (one per cluster)"
)]
pub struct Cli {
    /// TOML configuration file.
    #[arg(long)]
    pub config: PathBuf,
    /// Listen address (overrides `listen`).
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// Cluster name (overrides `cluster`).
    #[arg(long)]
    pub cluster: Option<String>,
    /// Policy name (overrides `policy.policy`).
    #[arg(long)]
    pub policy: Option<String>,
    /// Lost-agent handling (overrides `lost_agent`).
    #[arg(long, value_enum)]
    pub lost_agent: Option<LostAgent>,
    /// State directory (overrides `state_dir`).
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
    /// Agent heartbeat timeout in ms (overrides `lost_after_ms`).
    #[arg(long)]
    pub lost_after_ms: Option<u32>,
}

impl Cli {
    /// The configuration: the file, then the flags.
    pub fn config(&self) -> anyhow::Result<Config> {
        let mut c = Config::load(&self.config)?;
        if let Some(l) = self.listen {
            c.listen = l;
        }
        if let Some(n) = &self.cluster {
            c.cluster.clone_from(n);
        }
        if let Some(p) = &self.policy {
            c.policy.policy = p.parse().map_err(|e| anyhow::anyhow!("--policy: {e}"))?;
        }
        if let Some(l) = self.lost_agent {
            c.lost_agent = l;
        }
        if let Some(d) = &self.state_dir {
            c.state_dir = Some(d.clone());
        }
        if let Some(t) = self.lost_after_ms {
            c.lost_after_ms = t;
        }
        c.platform()?;
        Ok(c)
    }
}

/// Serves `cfg` on an already bound listener until the process ends, with the standard health
/// and reflection services ([`gridsched_proto::standard`], reachable without a secret: the
/// scheduler's own methods check the caller's).
pub async fn serve(cfg: Config, listener: TcpListener) -> anyhow::Result<()> {
    let metrics_listen = cfg.metrics_listen;
    let (meta_secret, agent_secret) = cfg.auth.secrets()?;
    let http_tls = cfg.tls.rustls_server()?;
    let grpc_tls = cfg.tls.server()?;
    let mut registry = gridsched_telemetry::Registry::default();
    let layer = gridsched_telemetry::GrpcMetricsLayer::new(&mut registry);
    let gauges = metrics::LocalMetrics::new(&mut registry);
    let (tx, rx) = tokio::sync::mpsc::channel(4096);
    let outputs = match (&cfg.backend, &cfg.slurm) {
        (config::Backend::Slurm, Some(s)) => (outputs::Outputs::new(s.work_dir.clone()), false),
        _ => (outputs::Outputs::new(cfg.outputs_dir()), true),
    };
    let outputs = (std::sync::Arc::new(outputs.0), outputs.1);
    if outputs.1 {
        // A Slurm-backed site's job directories are Slurm's working directories: not swept.
        let retention = outputs::Retention {
            keep_s: cfg.output_retention_s,
            max_bytes_per_user: cfg.output_max_bytes_per_user,
        };
        let period = std::time::Duration::from_secs((cfg.output_retention_s / 4).clamp(1, 60));
        tokio::spawn(service::sweep_outputs(
            outputs.0.clone(),
            retention,
            tx.clone(),
            period,
        ));
    }
    let cache = gridsched_proto::blobs::Blobs::open(cfg.cache_dir())?;
    let url_cache_s = cfg.url_cache_s;
    let faults = cfg.faults.clone();
    let epoch;
    match cfg.backend {
        config::Backend::Native => {
            let mut driver = edge::driver(cfg)?;
            epoch = driver.stored_epoch();
            driver.set_metrics(gauges, edge::stopwatch);
            driver.set_stager(
                staging::Stager::new(cache.clone(), tx.clone(), url_cache_s)?,
                edge::now().secs,
            );
            tokio::spawn(edge::run(driver, rx));
        }
        config::Backend::Slurm => {
            let section = cfg.slurm.as_ref();
            let section =
                section.ok_or_else(|| anyhow::anyhow!("slurm: the section is required"))?;
            let rest = slurm::rest::Rest::new(section)?;
            let mut site = slurm::SlurmSite::new(cfg, edge::now().secs)?;
            epoch = site.stored_epoch();
            site.set_metrics(gauges);
            let shell = slurm::edge::SlurmShell::start(site, rest, tx.clone());
            tokio::spawn(edge::run(shell, rx));
        }
    }
    if let Some(addr) = metrics_listen {
        let registry = std::sync::Arc::new(registry);
        let bound =
            gridsched_telemetry::serve_with(addr, registry, axum::Router::new(), http_tls).await?;
        tracing::info!(%bound, "metrics on http://{bound}/metrics");
    }
    // Windows wide enough for input transfers (1 MiB chunks) to stream without waiting.
    let mut server = tonic::transport::Server::builder()
        .initial_stream_window_size(Some(gridsched_proto::blobs::WINDOW))
        .initial_connection_window_size(Some(2 * gridsched_proto::blobs::WINDOW))
        .max_frame_size(Some(gridsched_proto::blobs::FRAME));
    if let Some(tls) = grpc_tls {
        server = server.tls_config(tls)?;
    }
    let service = service::Service::with_secrets(tx, meta_secret, agent_secret)
        .with_epoch(epoch)
        .with_outputs(outputs.0, outputs.1)
        .with_cache(cache, &faults);
    let standard = gridsched_proto::standard::standard_services(
        gridsched_proto::v1::local_scheduler_server::SERVICE_NAME,
    )
    .await?;
    server
        .layer(layer)
        .add_routes(standard.routes)
        .add_service(LocalSchedulerServer::new(service))
        // No Nagle delay: orders and events are small frames that must leave at once.
        .serve_with_incoming(
            tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)),
        )
        .await?;
    Ok(())
}

/// The binary's main: parses `args`, binds, prints `listening on ADDR`, serves.
pub fn main_with_args(args: impl IntoIterator<Item = String>) -> anyhow::Result<()> {
    let cli = Cli::try_parse_from(args)?;
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .try_init();
    let cfg = cli.config()?;
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async move {
        let listener = TcpListener::bind(cfg.listen).await?;
        println!("listening on {}", listener.local_addr()?);
        serve(cfg, listener).await
    })
}
