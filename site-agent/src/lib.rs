//! The `site-agent` service: one per machine. It registers the machine (processors, benchmark
//! score, node-locked licences) with its local scheduler, opens the `AgentOrders` stream, sends
//! heartbeats (at once after any job change, so terminations and suspensions reach the scheduler
//! quickly) carrying reports of every job it runs and every ended job not yet acknowledged, and
//! runs jobs ([`runner`]). When the scheduler forgets its session (restart: NOT_FOUND) or is
//! unreachable, the agent registers again and re-reports what it runs, so the scheduler can
//! reconcile.
//!
//! Orders: a start order spawns a runner with its own control channel; kill, suspend and resume
//! orders go down that channel ([`runner::Control`]) to the job's runner, which signals the job's
//! process group. A suspended job is reported SUSPENDED (in heartbeats and in registrations) until
//! it is resumed; reports of live jobs carry their running time so far, suspended time excluded
//! (`ran_ms`, read from the job's [`runner::RunClock`] when the report is sent).

pub mod account;
pub mod fetch;
pub mod memory;
pub mod runner;
pub mod ship;

use clap::Parser;
use gridsched_proto::v1::{
    self, AgentJobState, agent_command::Kind, local_scheduler_client::LocalSchedulerClient,
};
use runner::{Control, RunClock, RunnerConfig};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;
use tokio::sync::mpsc;
use tonic::transport::Channel;

/// Command line of the `site-agent` binary.
#[derive(Debug, Parser, Clone)]
#[command(name = "site-agent", about = "gridsched site agent (one per machine)")]
pub struct Cli {
    /// Local scheduler URL, e.g. http://127.0.0.1:50061.
    #[arg(long)]
    pub scheduler: String,
    /// Machine name (as configured at the local scheduler).
    #[arg(long)]
    pub machine: String,
    /// Processors offered.
    #[arg(long)]
    pub processors: u32,
    /// Benchmark score (0 = take the scheduler's configuration).
    #[arg(long, default_value_t = 0)]
    pub benchmark: u32,
    /// Node-locked licence (repeatable).
    #[arg(long = "licence")]
    pub licences: Vec<String>,
    /// Work directory: `<dir>/<job>/stdout|stderr`.
    #[arg(long)]
    pub work_dir: PathBuf,
    /// Factor applied to emulated run times and wall-time limits (e.g. 0.01 for demos).
    #[arg(long, default_value_t = 1.0)]
    pub time_scale: f64,
    /// Milliseconds between SIGTERM and SIGKILL.
    #[arg(long, default_value_t = 2000)]
    pub grace_ms: u64,
    /// Address of a Prometheus `/metrics` endpoint (running jobs, jobs ended by outcome,
    /// heartbeats sent); absent = none.
    #[arg(long)]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// File holding the secret the local scheduler expects from its agents (its
    /// `auth.agent_token`).
    #[arg(long, env = "GRIDSCHED_AGENT_TOKEN_FILE")]
    pub token_file: Option<PathBuf>,
    /// CA certificate (PEM) the local scheduler's certificate must be signed by; needed for an
    /// `https://` scheduler URL.
    #[arg(long)]
    pub tls_ca: Option<PathBuf>,
    /// This agent's certificate (PEM), for a scheduler requiring client certificates; also
    /// serves `/metrics` over HTTPS.
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of `--tls-cert` (PEM).
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Name expected in the scheduler's certificate, when not the URL's host.
    #[arg(long)]
    pub tls_server_name: Option<String>,
}

impl Cli {
    fn tls(&self) -> gridsched_security::TlsConfig {
        gridsched_security::TlsConfig {
            cert: self.tls_cert.clone(),
            key: self.tls_key.clone(),
            ca: self.tls_ca.clone(),
            require_client_cert: false,
            server_name: self.tls_server_name.clone(),
        }
    }
}

/// The agent's Prometheus metrics.
#[derive(Clone, Debug, Default)]
struct AgentMetrics {
    running: prometheus_client::metrics::gauge::Gauge,
    ended: prometheus_client::metrics::family::Family<
        Outcome,
        prometheus_client::metrics::counter::Counter,
    >,
    heartbeats: prometheus_client::metrics::counter::Counter,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, prometheus_client::encoding::EncodeLabelSet)]
struct Outcome {
    outcome: String,
}

impl AgentMetrics {
    fn register(&self, r: &mut gridsched_telemetry::Registry) {
        r.register(
            "gridsched_agent_running_jobs",
            "Jobs running on this machine",
            self.running.clone(),
        );
        r.register(
            "gridsched_agent_jobs_ended",
            "Jobs ended, by outcome",
            self.ended.clone(),
        );
        r.register(
            "gridsched_agent_heartbeats_sent",
            "Heartbeats sent",
            self.heartbeats.clone(),
        );
    }
}

/// A job the agent runs (or has suspended).
struct Running {
    /// Orders for its runner.
    control: mpsc::UnboundedSender<Control>,
    /// Its running time.
    clock: RunClock,
}

/// Whether a job in `state` (a [`v1::JobReport::state`]) is still there: running or suspended.
fn is_live(state: i32) -> bool {
    state == AgentJobState::Running as i32 || state == AgentJobState::Suspended as i32
}

/// The agent's state.
struct Agent {
    cli: Cli,
    runner: RunnerConfig,
    reports: HashMap<u64, v1::JobReport>,
    running: HashMap<u64, Running>,
    done_tx: mpsc::UnboundedSender<v1::JobReport>,
    metrics: AgentMetrics,
}

impl Agent {
    /// The reports to send: those of the live jobs with their current running time, and those of
    /// the ended jobs not acknowledged yet.
    fn reports(&self) -> Vec<v1::JobReport> {
        let mut v: Vec<_> = self
            .reports
            .values()
            .map(|r| {
                let mut r = r.clone();
                if is_live(r.state)
                    && let Some(j) = self.running.get(&r.job_id)
                {
                    r.ran_ms = Some(j.clock.ran_ms());
                }
                r
            })
            .collect();
        v.sort_by_key(|r| r.job_id);
        v
    }

    /// Passes `c` to job `id`'s runner, if the job is live here.
    fn control(&self, id: u64, c: Control) {
        match self.running.get(&id) {
            Some(r) => {
                let _ = r.control.send(c);
            }
            None => {
                tracing::debug!(job = id, order = ?c, "order for a job not running here: ignored")
            }
        }
    }

    fn order(&mut self, c: v1::AgentCommand) {
        match c.kind {
            Some(Kind::Start(s)) => {
                if self.reports.contains_key(&s.job_id) {
                    return;
                }
                let (ctx, crx) = mpsc::unbounded_channel();
                let clock = RunClock::default();
                self.running.insert(
                    s.job_id,
                    Running {
                        control: ctx,
                        clock: clock.clone(),
                    },
                );
                self.metrics.running.set(self.running.len() as i64);
                self.reports.insert(
                    s.job_id,
                    v1::JobReport {
                        job_id: s.job_id,
                        state: AgentJobState::Running as i32,
                        ..Default::default()
                    },
                );
                tokio::spawn(runner::run_job(
                    self.runner.clone(),
                    s,
                    crx,
                    clock,
                    self.done_tx.clone(),
                ));
            }
            Some(Kind::Kill(k)) => self.control(k.job_id, Control::Kill(k.reason)),
            Some(Kind::Suspend(k)) => {
                tracing::debug!(job = k.job_id, reason = %k.reason, "suspend order");
                self.control(k.job_id, Control::Suspend);
            }
            Some(Kind::Resume(k)) => {
                tracing::debug!(job = k.job_id, "resume order");
                self.control(k.job_id, Control::Resume);
            }
            None => {}
        }
    }

    fn update(&mut self, r: v1::JobReport) {
        if !is_live(r.state) && self.running.remove(&r.job_id).is_some() {
            let outcome = AgentJobState::try_from(r.state)
                .map_or("unknown", |s| s.as_str_name())
                .trim_start_matches("AGENT_JOB_STATE_")
                .to_ascii_lowercase();
            self.metrics.ended.get_or_create(&Outcome { outcome }).inc();
        }
        self.metrics.running.set(self.running.len() as i64);
        self.reports.insert(r.job_id, r);
    }
}

/// Runs the agent until the process ends.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    std::fs::create_dir_all(&cli.work_dir)?;
    account::close_dirs(&cli.work_dir, &cli.work_dir.join(".cache"))?;
    let metrics = AgentMetrics::default();
    if let Some(addr) = cli.metrics_listen {
        let mut registry = gridsched_telemetry::Registry::default();
        metrics.register(&mut registry);
        let tls = cli.tls().rustls_server()?;
        let registry = std::sync::Arc::new(registry);
        let bound =
            gridsched_telemetry::serve_with(addr, registry, axum::Router::new(), tls).await?;
        tracing::info!(%bound, "metrics on http://{bound}/metrics");
    }
    let tls = cli.tls();
    tls.validate()?;
    let token = gridsched_security::token::read_secret(None, cli.token_file.as_deref(), "token")
        .map_err(|e| anyhow::anyhow!("--{e}"))?;
    let bearer = gridsched_security::Bearer::new(token.as_deref())?;
    let (done_tx, mut done_rx) = mpsc::unbounded_channel();
    let mut a = Agent {
        runner: RunnerConfig {
            machine: cli.machine.clone(),
            work_dir: cli.work_dir.clone(),
            time_scale: cli.time_scale,
            grace: Duration::from_millis(cli.grace_ms),
            shipper: Some(ship::Shipper::new(LocalSchedulerClient::with_interceptor(
                tls.endpoint(&cli.scheduler)?
                    .connect_timeout(CALL_TIMEOUT)
                    .timeout(CALL_TIMEOUT)
                    .connect_lazy(),
                bearer.clone(),
            ))),
            fetcher: Some(fetch::Fetcher::new(
                LocalSchedulerClient::with_interceptor(
                    tls.endpoint(&cli.scheduler)?
                        .connect_timeout(CALL_TIMEOUT)
                        .initial_stream_window_size(gridsched_proto::blobs::WINDOW)
                        .initial_connection_window_size(2 * gridsched_proto::blobs::WINDOW)
                        .max_frame_size(gridsched_proto::blobs::FRAME)
                        .connect_lazy(),
                    bearer.clone(),
                ),
                gridsched_proto::blobs::Blobs::open(cli.work_dir.join(".cache"))?,
            )),
        },
        cli,
        reports: HashMap::new(),
        running: HashMap::new(),
        done_tx,
        metrics,
    };
    loop {
        let mut client = match connect(&a.cli.scheduler, &tls, &bearer).await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!("connecting to {}: {e}", a.cli.scheduler);
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        if let Err(e) = session(&mut a, &mut client, &mut done_rx).await {
            // A refused credential will not get better by retrying: stop, loudly.
            if let Some(s) = e.downcast_ref::<tonic::Status>()
                && matches!(
                    s.code(),
                    tonic::Code::Unauthenticated | tonic::Code::PermissionDenied
                )
            {
                anyhow::bail!("the local scheduler refused this agent: {}", s.message());
            }
            tracing::warn!("session ended: {e}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// A client of the local scheduler whose link notices a silent peer: HTTP/2 pings every second
/// (the order stream is otherwise idle), and every unary call bounded by [`CALL_TIMEOUT`].
async fn connect(
    url: &str,
    tls: &gridsched_security::TlsConfig,
    bearer: &gridsched_security::Bearer,
) -> anyhow::Result<Client> {
    let ep = tls
        .endpoint(url)?
        .connect_timeout(CALL_TIMEOUT)
        .tcp_nodelay(true)
        .http2_keep_alive_interval(Duration::from_secs(1))
        .keep_alive_timeout(Duration::from_secs(2))
        .keep_alive_while_idle(true);
    Ok(LocalSchedulerClient::with_interceptor(
        ep.connect().await?,
        bearer.clone(),
    ))
}

/// A client of the local scheduler sending the agents' secret with every call.
pub(crate) type Client = LocalSchedulerClient<
    tonic::service::interceptor::InterceptedService<Channel, gridsched_security::Bearer>,
>;

/// Bound of one unary call to the local scheduler.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

async fn session(
    a: &mut Agent,
    client: &mut Client,
    done_rx: &mut mpsc::UnboundedReceiver<v1::JobReport>,
) -> anyhow::Result<()> {
    let account = account::agent();
    let reg = client
        .register_agent(v1::RegisterAgentRequest {
            machine: a.cli.machine.clone(),
            processors: a.cli.processors,
            benchmark: a.cli.benchmark,
            node_locked_licences: a.cli.licences.clone(),
            memory_kb: crate::memory::total_kb(),
            hostname: String::new(),
            agent_version: env!("CARGO_PKG_VERSION").into(),
            jobs: a.reports(),
            account: account.0.clone(),
            separates_users: account.1,
        })
        .await?
        .into_inner();
    forget_acknowledged(a, &reg.acknowledged_jobs);
    let mut orders = client
        .agent_orders(v1::AgentOrdersRequest {
            agent_id: reg.agent_id.clone(),
        })
        .await?
        .into_inner();
    let mut interval = Duration::from_millis(u64::from(reg.heartbeat_interval_ms.max(10)));
    let mut next = tokio::time::Instant::now() + interval;
    let mut stream_open = true;
    loop {
        let mut beat = false;
        tokio::select! {
            o = orders.message(), if stream_open => match o {
                Ok(Some(c)) => a.order(c),
                _ => stream_open = false,
            },
            r = done_rx.recv() => {
                if let Some(r) = r {
                    a.update(r);
                }
                while let Ok(r) = done_rx.try_recv() {
                    a.update(r);
                }
                beat = true;
            }
            _ = tokio::time::sleep_until(next) => beat = true,
        }
        if !beat {
            continue;
        }
        a.metrics.heartbeats.inc();
        let beat = client.heartbeat(v1::HeartbeatRequest {
            agent_id: reg.agent_id.clone(),
            jobs: a.reports(),
            time: 0,
        });
        let resp = tokio::time::timeout(CALL_TIMEOUT, beat)
            .await
            .map_err(|_| anyhow::anyhow!("heartbeat unanswered for {CALL_TIMEOUT:?}"))??
            .into_inner();
        forget_acknowledged(a, &resp.acknowledged_jobs);
        for c in resp.commands {
            a.order(c);
        }
        if resp.heartbeat_interval_ms > 0 {
            interval = Duration::from_millis(u64::from(resp.heartbeat_interval_ms));
        }
        next = tokio::time::Instant::now() + interval;
        if !stream_open {
            anyhow::bail!("order stream closed");
        }
    }
}

/// Forgets the reports of ended jobs the local scheduler has recorded.
fn forget_acknowledged(a: &mut Agent, ids: &[u64]) {
    for id in ids {
        if a.reports.get(id).is_some_and(|r| !is_live(r.state)) {
            a.reports.remove(id);
        }
    }
}

/// The binary's main: parses `args` and runs the agent.
pub fn main_with_args(args: impl IntoIterator<Item = String>) -> anyhow::Result<()> {
    let cli = Cli::try_parse_from(args)?;
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .try_init();
    tokio::runtime::Runtime::new()?.block_on(run(cli))
}
