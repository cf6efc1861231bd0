//! The `meta-scheduler` binary: reads its TOML configuration (flags override it), opens the
//! durable store and serves the `MetaScheduler` gRPC API until Ctrl-C.

use clap::Parser;
use meta_scheduler::{MetaConfig, MetaService};
use std::path::PathBuf;

/// The gridsched meta-scheduler.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// Configuration file (TOML).
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// Listen address (overrides the file's `listen`).
    #[arg(long)]
    listen: Option<String>,
    /// State directory of the durable store (overrides the file's `state_dir`).
    #[arg(long)]
    state_dir: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    match run(Args::parse()).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("meta-scheduler: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> anyhow::Result<()> {
    let mut cfg = match &args.config {
        Some(p) => MetaConfig::from_file(p)?,
        None => MetaConfig::default(),
    };
    if let Some(l) = args.listen {
        cfg.listen = l;
    }
    if let Some(d) = args.state_dir {
        cfg.state_dir = d;
    }
    let service = MetaService::open(&cfg)?;
    let listener = tokio::net::TcpListener::bind(&cfg.listen).await?;
    let addr = listener.local_addr()?;
    tracing::info!(%addr, sites = cfg.sites.len(), "meta-scheduler listening");
    println!("listening on http://{addr}");
    meta_scheduler::serve(service, listener, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await?;
    Ok(())
}
