//! The command line of the `meta-scheduler` binary: a TOML configuration file,
//! flags that override it, structured logs on stderr (`RUST_LOG`, default `info`), and
//! `listening on ADDR` printed on stdout once the port is bound.

use crate::MetaConfig;
use clap::Parser;
use std::path::PathBuf;

/// The gridsched meta-scheduler.
#[derive(Debug, Parser)]
#[command(name = "meta-scheduler", version, about)]
pub struct Cli {
    /// Configuration file (TOML).
    #[arg(long, short)]
    pub config: Option<PathBuf>,
    /// Listen address (overrides the file's `listen`).
    #[arg(long)]
    pub listen: Option<String>,
    /// State directory of the durable store (overrides the file's `state_dir`).
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
    /// A PostgreSQL store's URL (sets `store.backend = "postgres"` and `store.url`): replicas
    /// started with the same URL share it, one leading.
    #[arg(long)]
    pub store_url: Option<String>,
    /// This replica's name in the lease (overrides `replica.name`).
    #[arg(long)]
    pub replica_name: Option<String>,
    /// The address clients reach this replica at (overrides `replica.advertise`).
    #[arg(long)]
    pub advertise: Option<String>,
}

impl Cli {
    /// The configuration: the file (or the defaults), then the flags.
    pub fn config(&self) -> anyhow::Result<MetaConfig> {
        let mut cfg = match &self.config {
            Some(p) => MetaConfig::from_file(p)?,
            None => MetaConfig::default(),
        };
        if let Some(l) = &self.listen {
            cfg.listen.clone_from(l);
        }
        if let Some(d) = &self.state_dir {
            cfg.state_dir.clone_from(d);
        }
        if let Some(u) = &self.store_url {
            cfg.store.backend = crate::store::BackendKind::Postgres;
            cfg.store.url = Some(u.clone());
        }
        if let Some(n) = &self.replica_name {
            cfg.replica.name = Some(n.clone());
        }
        if let Some(a) = &self.advertise {
            cfg.replica.advertise = Some(a.clone());
        }
        cfg.complete();
        Ok(cfg)
    }
}

/// The binary's main: parses `args`, binds, prints `listening on http://ADDR` and serves until
/// Ctrl-C or SIGTERM (as the leader, or as a replica that follows until it leads). A replica
/// that lost the lead ends the process at once with exit status 75 (its supervisor starts it
/// again, as a follower), and so does one whose store cannot be reached at start.
pub fn main_with_args(args: impl IntoIterator<Item = String>) -> anyhow::Result<()> {
    let cli = Cli::try_parse_from(args)?;
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .try_init();
    let cfg = cli.config()?;
    let rt = tokio::runtime::Runtime::new()?;
    let outcome = rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&cfg.listen).await?;
        let addr = listener.local_addr()?;
        tracing::info!(%addr, sites = cfg.sites.len(), "meta-scheduler listening");
        let scheme = if cfg.tls.serves_tls() {
            "https"
        } else {
            "http"
        };
        println!("listening on {scheme}://{addr}");
        let deposed = |d: &crate::replica::Deposed| {
            tracing::error!("{d}: stopping");
            // Calls may still wait on a store cut off: do not wait for them.
            std::process::exit(75);
        };
        crate::replica::run(&cfg, listener, async {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                Some(()) = async { match term.as_mut() { Some(t) => t.recv().await, None => None } } => {}
            }
        }, deposed)
        .await
    });
    rt.shutdown_background();
    // A store that cannot be reached now (cut off, not started yet) is a temporary failure:
    // the same exit status as a replica deposed, for its supervisor to start it again.
    if let Err(e) = &outcome
        && let Some(crate::store::StoreError::Unavailable(_)) = e.downcast_ref()
    {
        eprintln!("meta-scheduler: {e}: stopping (exit status 75: try again later)");
        std::process::exit(75);
    }
    outcome
}
