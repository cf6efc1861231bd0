//! `gridctl`, the gridsched client: submit, status, list, cancel, watch, sites, explain, advance
//! reservations and replay against a meta-scheduler; tables by default, `--json` everywhere; errors print the
//! gRPC status code and message. `gridctl up` starts a whole grid on localhost ([`up`]).

/// The allocator of gridctl and of every service `gridctl up` starts (they are this binary):
/// jemalloc's background threads give the memory of a burst of jobs back to the system once the
/// jobs have gone, where glibc's keeps it (docs/performance.md).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

mod accounting;
mod bench;
mod bench_accounting;
mod bench_fairshare;
mod bench_flood;
mod bench_slurm;
mod cut;
#[cfg(test)]
mod fuzz;
mod inputs;
mod job_file;
mod out;
mod replay;
mod show;
mod soak;
mod up;
mod when;
mod workflow;

use clap::{Parser, Subcommand};
use gridsched_proto::standard::tonic_health::pb::health_check_response::ServingStatus;
use gridsched_proto::standard::tonic_health::pb::{
    HealthCheckRequest, health_client::HealthClient,
};
use gridsched_proto::v1::{self, meta_scheduler_client::MetaSchedulerClient};
use gridsched_security::Bearer;
use out::outln;
use tokio_stream::StreamExt;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

/// Client of the gridsched meta-scheduler.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    /// Meta-scheduler endpoint; several, comma-separated, are replicas of the meta-scheduler:
    /// the one that leads (its health service reports the API SERVING) is used.
    #[arg(
        long,
        global = true,
        env = "GRIDSCHED_ENDPOINT",
        default_value = "http://127.0.0.1:50051"
    )]
    endpoint: String,
    /// With several endpoints: how long to wait for one of them to lead (seconds), e.g. while a
    /// replica takes over from a leader that died.
    #[arg(
        long,
        global = true,
        env = "GRIDSCHED_FAILOVER_WAIT",
        default_value_t = 10
    )]
    failover_wait: u64,
    /// Print JSON instead of tables.
    #[arg(long, global = true)]
    json: bool,
    /// Bearer token for a grid with authentication (prefer `--token-file` or the variable).
    #[arg(long, global = true, env = "GRIDSCHED_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// File holding the bearer token.
    #[arg(
        long,
        global = true,
        env = "GRIDSCHED_TOKEN_FILE",
        conflicts_with = "token"
    )]
    token_file: Option<std::path::PathBuf>,
    /// CA certificate (PEM) to check an `https://` endpoint against.
    #[arg(long, global = true, env = "GRIDSCHED_CA")]
    ca: Option<std::path::PathBuf>,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Submits a job (flags or a job file).
    Submit(Box<job_file::SubmitArgs>),
    /// Shows one job.
    Status {
        /// The job id (a task of an array: `ID_INDEX`).
        job_id: String,
    },
    /// Lists jobs.
    List {
        /// Only jobs in this state (e.g. queued, running, completed); repeatable.
        #[arg(long)]
        state: Vec<String>,
        /// Only this user's jobs.
        #[arg(long)]
        user: Option<String>,
        /// Only jobs at this site.
        #[arg(long)]
        site: Option<String>,
        /// At most this many jobs (fetched in pages of up to 1,000, by increasing id).
        #[arg(long, default_value_t = 100, conflicts_with = "all")]
        limit: u32,
        /// Every matching job, however many (page after page).
        #[arg(long)]
        all: bool,
        /// Only the tasks of this array, one line each (with those not yet released).
        #[arg(long, value_name = "ID")]
        array: Option<u64>,
        /// Also the tasks of every array (by default an array is one line, with its tasks
        /// counted by state).
        #[arg(long, conflicts_with = "array")]
        tasks: bool,
        /// The columns, comma-separated, in order (like `squeue -o`): id, state, prio, user,
        /// procs, site, machine, planned, exit, reason, name, cluster, estimate, licences,
        /// submit, start, end, wait, requeues. Default: id to reason.
        #[arg(long, short = 'o', value_delimiter = ',')]
        format: Vec<String>,
    },
    /// Cancels a job (an array: its tasks not ended, and those not yet released).
    Cancel {
        /// The job id (a task of an array: `ID_INDEX`).
        job_id: String,
        /// Why.
        #[arg(long, default_value = "")]
        reason: String,
    },
    /// Streams job events until interrupted.
    Watch {
        /// Only these jobs (an array: with its tasks; a task: `ID_INDEX`).
        job_ids: Vec<String>,
        /// From this event sequence (default: live events only).
        #[arg(long)]
        from: Option<u64>,
    },
    /// Workflows: jobs (or arrays) as the nodes of a DAG, each started once its parents
    /// completed, with retries, an abort condition and a resume from the rescue.
    Workflow {
        #[command(subcommand)]
        cmd: workflow::WorkflowCmd,
    },
    /// Prints what a job wrote to its standard output (or error), fetched from the site that
    /// runs or ran it; `--follow` goes on while the job runs.
    Output {
        /// The job id (a task of an array: `ID_INDEX`).
        job_id: String,
        /// Standard error instead of standard output.
        #[arg(long)]
        stderr: bool,
        /// Stream what the job writes until it has ended (a job not started yet is waited for).
        #[arg(long, short = 'f')]
        follow: bool,
        /// A job split over sites: the fragment, by rank (default 0, the head fragment).
        #[arg(long)]
        fragment: Option<u32>,
    },
    /// Fetches the files a job declared with `--output` from the site that ran it, into DIR
    /// (default: `./job-ID`), each under its path relative to the job's working directory.
    Fetch {
        /// The job id (a task of an array: `ID_INDEX`).
        job_id: String,
        /// Where to put the files.
        dir: Option<std::path::PathBuf>,
        /// A job split over sites: the fragment, by rank (default 0, the head fragment).
        #[arg(long)]
        fragment: Option<u32>,
    },
    /// The grid's use over a period (sreport-like): processor-hours, licence-hours, jobs ended,
    /// mean wall time and wait, by user, account, site, machine or class.
    Usage(accounting::UsageArgs),
    /// The jobs that ended in a period (sacct-like), with the fields asked for.
    History(Box<accounting::HistoryArgs>),
    /// Shows the sites and their Load / Count arrays.
    Sites,
    /// Explains why a job is where it is.
    Explain {
        /// The job id (a task of an array: `ID_INDEX`).
        job_id: String,
    },
    /// Reserves processors of a site for a fixed interval ahead (an advance reservation); jobs
    /// submitted with `--reservation` run inside it.
    Reserve {
        /// The site.
        #[arg(long)]
        site: String,
        /// Processors to hold.
        #[arg(long, short = 'n')]
        processors: u32,
        /// Start: `+N` seconds from now, a local time (`2026-11-29T08:00`), an RFC 3339 time, or
        /// Unix seconds.
        #[arg(long)]
        start: String,
        /// Length in seconds.
        #[arg(long)]
        duration: i64,
        /// The machine, on a site of several (default: the site picks the fastest where it fits).
        #[arg(long)]
        machine: Option<String>,
        /// A licence copy to hold (repeat for several); jobs inside may use these.
        #[arg(long = "licence")]
        licences: Vec<String>,
    },
    /// Lists the advance reservations.
    Reservations {
        /// Only this site's.
        #[arg(long)]
        site: Option<String>,
    },
    /// Gives up an advance reservation; its waiting jobs join the site's general queue.
    CancelReservation {
        /// The reservation (`r7` or `7`).
        id: String,
        /// Why.
        #[arg(long, default_value = "")]
        reason: String,
    },
    /// Starts a whole grid on localhost (meta-scheduler, local schedulers, site agents) and runs
    /// it until interrupted.
    Up(up::UpArgs),
    /// Chaos soak: starts a grid of real processes, feeds it jobs while a seeded loop kills and
    /// stops its processes, then checks that every acknowledged job was run and accounted once.
    Soak(soak::SoakArgs),
    /// Starts a benchmark grid and measures submissions per second, submit-to-start latency and
    /// the run of many one-second jobs against the ideal.
    Bench(bench::BenchArgs),
    /// Replays a slice of a workload trace on the grid as emulated jobs at scaled times, then
    /// compares it with the pure simulation of the same jobs on the same grid description.
    Replay(Box<replay::ReplayArgs>),
    /// Health check (for containers): asks the meta-scheduler (or, with `--local URL`, that
    /// local scheduler) through the standard `grpc.health.v1.Health` service, which needs no
    /// token; exits 0 when its service is SERVING.
    Health {
        /// A local scheduler's URL instead of the meta-scheduler.
        #[arg(long)]
        local: Option<String>,
        /// The meta-scheduler is one of several replicas: exit 0 while its server is up, leading
        /// or following (printed), instead of only when it leads.
        #[arg(long, conflicts_with = "local")]
        replica: bool,
    },
    /// Writes a development certificate set (a CA and one certificate for every service name)
    /// for the grid's TLS; not for production.
    Certs {
        /// Directory to write `ca.pem`, `ca-key.pem`, `grid.pem`, `grid-key.pem` into.
        #[arg(long, default_value = "gridsched-certs")]
        out: std::path::PathBuf,
        /// A further host name or address the services are reached by (repeatable); localhost,
        /// loopback and the compose service names are always included.
        #[arg(long = "name")]
        names: Vec<String>,
    },
    /// Prints a new random token (for `[[auth.users]]` and the services' secrets).
    Token,
    /// Prints the shell completion script for `gridctl` (e.g. `gridctl completions bash >
    /// ~/.local/share/bash-completion/completions/gridctl`).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Prints gridctl's man page (roff; e.g. `gridctl man > gridctl.1 && man ./gridctl.1`).
    Man,
}

fn main() -> std::process::ExitCode {
    // `gridctl __serve <service> ...`: the processes `gridctl up` starts (each service builds
    // its own runtime).
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some("__serve") {
        let service = args.next().unwrap_or_default();
        return match up::serve(&service, args.collect()) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{service}: {e:#}");
                std::process::ExitCode::from(2)
            }
        };
    }
    let cli = Cli::parse();
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("gridctl: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(cli)) {
        Ok(code) => code,
        // The reader of our output has gone (`gridctl watch | head`): nothing more to say.
        Err(e) if out::is_closed_pipe(&e) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            if let Some(s) = e.downcast_ref::<tonic::Status>() {
                eprintln!("gridctl: {:?}: {}", s.code(), s.message());
            } else {
                eprintln!("gridctl: {e:#}");
            }
            std::process::ExitCode::FAILURE
        }
    }
}

/// A client sending the bearer token (if any) with every call.
type Client = MetaSchedulerClient<InterceptedService<Channel, Bearer>>;

/// How to reach the grid: the connection flags.
#[derive(Debug, Clone)]
struct Conn {
    endpoint: String,
    failover_wait: u64,
    token: Option<String>,
    token_file: Option<std::path::PathBuf>,
    ca: Option<std::path::PathBuf>,
}

impl Conn {
    fn token(&self) -> anyhow::Result<Option<String>> {
        Ok(gridsched_security::token::read_secret(
            self.token.as_deref(),
            self.token_file.as_deref(),
            "--token",
        )?)
    }

    fn tls(&self) -> gridsched_security::TlsConfig {
        gridsched_security::TlsConfig {
            ca: self.ca.clone(),
            ..Default::default()
        }
    }

    /// A channel to `url` (TLS for `https://`, checked against `--ca`).
    async fn channel(&self, url: &str) -> anyhow::Result<Channel> {
        self.tls()
            .endpoint(url)?
            .connect_timeout(std::time::Duration::from_secs(2))
            .connect()
            .await
            .map_err(|e| anyhow::anyhow!("cannot reach {url}: {e}"))
    }
}

impl Conn {
    /// A channel to the meta-scheduler of `--endpoint`, and its URL. With several endpoints
    /// (replicas), the first whose health service reports the API SERVING (the leader), waiting
    /// up to `--failover-wait` for one; past it, the first that can be reached (whose answers say
    /// why it does not serve). The error names every endpoint tried and why.
    async fn meta_channel(&self) -> anyhow::Result<(String, Channel)> {
        let urls: Vec<&str> = self
            .endpoint
            .split(',')
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .collect();
        match urls[..] {
            [] => anyhow::bail!("--endpoint: no endpoint given"),
            [url] => return Ok((url.to_owned(), self.channel(url).await?)),
            _ => {}
        }
        let deadline =
            std::time::Instant::now() + std::time::Duration::from_secs(self.failover_wait);
        loop {
            let (mut failed, mut reachable) = (Vec::new(), None);
            for url in &urls {
                match self.channel(url).await {
                    Ok(c) => {
                        let api = v1::meta_scheduler_server::SERVICE_NAME;
                        let within = std::time::Duration::from_secs(2);
                        if gridsched_proto::standard::serves(c.clone(), api, within).await {
                            return Ok(((*url).to_owned(), c));
                        }
                        reachable.get_or_insert(((*url).to_owned(), c));
                    }
                    Err(e) => failed.push(e.to_string()),
                }
            }
            if std::time::Instant::now() >= deadline {
                if let Some(r) = reachable {
                    return Ok(r);
                }
                anyhow::bail!("no endpoint answers: {}", failed.join("; "));
            }
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
    }
}

async fn connect(cli: &Conn) -> anyhow::Result<Client> {
    let bearer = Bearer::new(cli.token()?.as_deref())?;
    let (_, channel) = cli.meta_channel().await?;
    Ok(MetaSchedulerClient::with_interceptor(channel, bearer))
}

/// The jobs `req` matches, by increasing id: at most `limit` of them (all when `None`), asked
/// for in pages of at most 1,000 (the server's cap), each continuing from the previous one's
/// `next_page_token`.
async fn list_pages(
    c: &mut Client,
    mut req: v1::ListJobsRequest,
    limit: Option<usize>,
) -> anyhow::Result<Vec<v1::Job>> {
    const PAGE: usize = 1000;
    let mut jobs = Vec::new();
    loop {
        let want = limit.map_or(PAGE, |l| (l - jobs.len()).min(PAGE));
        if want == 0 {
            return Ok(jobs);
        }
        req.limit = want as u32;
        let page = c.list_jobs(req.clone()).await?.into_inner();
        jobs.extend(page.jobs);
        if page.next_page_token.is_empty() {
            return Ok(jobs);
        }
        req.page_token = page.next_page_token;
    }
}

/// The id of a job given as `12`, or of a task of an array given as `12_7` (array 12, index 7:
/// its id comes from the array's indices).
async fn job_ref(c: &mut Client, r: &str) -> anyhow::Result<u64> {
    let bad = || anyhow::anyhow!("`{r}` is not a job id (12) nor a task of an array (12_7)");
    let Some((array, index)) = r.split_once('_') else {
        return r.trim().parse().map_err(|_| bad());
    };
    let (array, index): (u64, u32) = (
        array.trim().parse().map_err(|_| bad())?,
        index.trim().parse().map_err(|_| bad())?,
    );
    let job = c
        .get_job(v1::GetJobRequest { job_id: array })
        .await?
        .into_inner()
        .job
        .unwrap_or_default();
    let text = job.spec.and_then(|s| s.array);
    let Some(text) = text else {
        anyhow::bail!("job {array} is not an array");
    };
    let spec = text
        .parse::<gridsched_core::model::ArraySpec>()
        .map_err(|e| anyhow::anyhow!("job {array}: {e}"))?;
    match spec.position(index) {
        Some(k) => {
            Ok(gridsched_core::model::ArraySpec::task_id(gridsched_core::model::JobId(array), k).0)
        }
        None => anyhow::bail!("array {array} has no index {index} (its indices: {spec})"),
    }
}

/// A reservation id as shown (`r7`) or bare (`7`).
pub(crate) fn reservation_id(s: &str) -> anyhow::Result<u64> {
    let digits = s.strip_prefix('r').unwrap_or(s);
    match digits.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => anyhow::bail!("`{s}` is not a reservation id (r1, r2, ...)"),
    }
}

/// Unix seconds from an absolute value or `+N` from now.
fn parse_state(s: &str) -> anyhow::Result<i32> {
    let name = format!("JOB_STATE_{}", s.to_ascii_uppercase());
    v1::JobState::from_str_name(&name)
        .map(|s| s as i32)
        .ok_or_else(|| anyhow::anyhow!("unknown state `{s}`"))
}

async fn run(cli: Cli) -> anyhow::Result<std::process::ExitCode> {
    let conn = Conn {
        endpoint: cli.endpoint.clone(),
        failover_wait: cli.failover_wait,
        token: cli.token.clone(),
        token_file: cli.token_file.clone(),
        ca: cli.ca.clone(),
    };
    let cmd = match cli.cmd {
        Cmd::Up(a) => return up::up(a).await.map(|()| std::process::ExitCode::SUCCESS),
        Cmd::Soak(a) => {
            return soak::soak(a)
                .await
                .map(|()| std::process::ExitCode::SUCCESS);
        }
        Cmd::Bench(a) if a.against == Some(bench::Against::SlurmFairshare) => {
            return bench_fairshare::against_slurm_fairshare(&a)
                .await
                .map(|()| std::process::ExitCode::SUCCESS);
        }
        Cmd::Bench(a) if a.against == Some(bench::Against::Slurm) => {
            return bench_slurm::against_slurm(&a)
                .await
                .map(|()| std::process::ExitCode::SUCCESS);
        }
        Cmd::Bench(a) => {
            return bench::bench(a)
                .await
                .map(|()| std::process::ExitCode::SUCCESS);
        }
        Cmd::Certs { out, names } => {
            let f = gridsched_security::devcerts::generate(&out, &names)?;
            outln!(
                "CA {}\ncertificate {} (key {})\nnames: {}",
                f.ca.display(),
                f.cert.display(),
                f.key.display(),
                gridsched_security::devcerts::DEFAULT_NAMES
                    .iter()
                    .map(|s| (*s).to_owned())
                    .chain(names)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            return Ok(std::process::ExitCode::SUCCESS);
        }
        // Replays that need no grid at --endpoint (or refuse their options) run here.
        Cmd::Replay(a) if a.dry_run || a.up || !a.lose.is_empty() => {
            return replay::without_endpoint(*a, cli.json).await;
        }
        Cmd::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut cmd, "gridctl", &mut out);
            std::io::Write::write_all(&mut std::io::stdout().lock(), &out)?;
            return Ok(std::process::ExitCode::SUCCESS);
        }
        Cmd::Man => {
            let mut out = Vec::new();
            clap_mangen::Man::new(<Cli as clap::CommandFactory>::command()).render(&mut out)?;
            std::io::Write::write_all(&mut std::io::stdout().lock(), &out)?;
            return Ok(std::process::ExitCode::SUCCESS);
        }
        Cmd::Token => {
            let (a, b) = (uuid::Uuid::new_v4(), uuid::Uuid::new_v4());
            outln!("{}{}", a.simple(), b.simple());
            return Ok(std::process::ExitCode::SUCCESS);
        }
        Cmd::Health { local, replica } => {
            let (url, channel) = match local.as_deref() {
                Some(url) => (url.to_owned(), conn.channel(url).await?),
                None => conn.meta_channel().await?,
            };
            if replica {
                let api = v1::meta_scheduler_server::SERVICE_NAME;
                let within = std::time::Duration::from_secs(2);
                let up = gridsched_proto::standard::serves(channel.clone(), "", within).await;
                let leads = gridsched_proto::standard::serves(channel, api, within).await;
                let role = match (up, leads) {
                    (true, true) => "SERVING (leads)",
                    (true, false) => "SERVING (follows)",
                    _ => "NOT_SERVING",
                };
                outln!("{api} at {url}: {role}");
                return Ok(if up { 0.into() } else { 1.into() });
            }
            let service = if local.is_some() {
                v1::local_scheduler_server::SERVICE_NAME
            } else {
                v1::meta_scheduler_server::SERVICE_NAME
            };
            let mut c = HealthClient::new(channel);
            let r = c
                .check(HealthCheckRequest {
                    service: service.to_owned(),
                })
                .await?
                .into_inner();
            outln!("{service} at {url}: {}", r.status().as_str_name());
            let serving = r.status() == ServingStatus::Serving;
            return Ok(if serving { 0.into() } else { 1.into() });
        }
        cmd => cmd,
    };
    let mut c = connect(&conn).await?;
    let json = cli.json;
    let authenticated = conn.token()?.is_some();
    match cmd {
        Cmd::Submit(args) => {
            let wait = args.wait;
            let mut spec = args.spec(authenticated)?;
            inputs::upload_all(&mut c, &mut spec).await?;
            let array = spec.array.clone();
            let r = c
                .submit(v1::SubmitRequest { spec: Some(spec) })
                .await?
                .into_inner();
            if !wait {
                show::submitted(&r, json)?;
                if let Some(text) = array.filter(|_| !json) {
                    show::array_submitted(r.job_id, &text)?;
                }
                return Ok(std::process::ExitCode::SUCCESS);
            }
            let mut events = c
                .watch(v1::WatchRequest {
                    job_ids: vec![r.job_id],
                    from_sequence: Some(1),
                    ..Default::default()
                })
                .await;
            loop {
                let job = c
                    .get_job(v1::GetJobRequest { job_id: r.job_id })
                    .await?
                    .into_inner();
                let job = job.job.unwrap_or_default();
                if job.state().is_terminal() {
                    show::jobs(std::slice::from_ref(&job), json)?;
                    let ok = job.state() == v1::JobState::Completed;
                    return Ok(if ok { 0.into() } else { 1.into() });
                }
                match &mut events {
                    Ok(s) => {
                        let _ = s.get_mut().next().await;
                    }
                    Err(_) => tokio::time::sleep(std::time::Duration::from_millis(500)).await,
                }
            }
        }
        Cmd::Status { job_id } => {
            let job_id = job_ref(&mut c, &job_id).await?;
            let r = c.get_job(v1::GetJobRequest { job_id }).await?.into_inner();
            match r.job {
                Some(j) if j.spec.as_ref().is_some_and(|s| s.workflow.is_some()) => {
                    workflow::status(&j, json)?;
                }
                j => show::job(j, json)?,
            }
        }
        Cmd::List {
            state,
            user,
            site,
            limit,
            all,
            array,
            tasks,
            format,
        } => {
            if let Some(bad) = format
                .iter()
                .find(|f| !show::JOB_FIELDS.contains(&f.as_str()))
            {
                anyhow::bail!(
                    "--format: `{bad}` is not a column; the columns are {}",
                    show::JOB_FIELDS.join(", ")
                );
            }
            let states = state
                .iter()
                .map(|s| parse_state(s))
                .collect::<anyhow::Result<_>>()?;
            let req = v1::ListJobsRequest {
                states,
                user,
                site,
                array,
                tasks,
                ..Default::default()
            };
            let jobs = list_pages(&mut c, req, (!all).then_some(limit as usize)).await?;
            let fields = (!format.is_empty()).then_some(format.as_slice());
            show::jobs_as(&jobs, fields, json)?;
        }
        Cmd::Cancel { job_id, reason } => {
            let job_id = job_ref(&mut c, &job_id).await?;
            let r = c
                .cancel_job(v1::CancelJobRequest { job_id, reason })
                .await?
                .into_inner();
            show::jobs(&r.job.into_iter().collect::<Vec<_>>(), json)?;
        }
        Cmd::Watch { job_ids, from } => {
            let mut ids = Vec::with_capacity(job_ids.len());
            for r in &job_ids {
                ids.push(job_ref(&mut c, r).await?);
            }
            let job_ids = ids;
            let mut s = c
                .watch(v1::WatchRequest {
                    job_ids,
                    from_sequence: from,
                    ..Default::default()
                })
                .await?
                .into_inner();
            while let Some(ev) = s.next().await {
                show::event(&ev?, json)?;
            }
        }
        Cmd::Usage(a) => accounting::usage(&mut c, a, json).await?,
        Cmd::History(a) => accounting::history(&mut c, *a, json).await?,
        Cmd::Sites => {
            let r = c
                .list_sites(v1::ListSitesRequest {
                    site: None,
                    include_resources: true,
                })
                .await?
                .into_inner();
            show::sites(&r, json)?;
        }
        Cmd::Replay(a) => return replay::replay(*a, &mut c, authenticated, json).await,
        Cmd::Workflow { cmd } => return workflow::run(&mut c, cmd, authenticated, json).await,
        Cmd::Output {
            job_id,
            stderr,
            follow,
            fragment,
        } => {
            use tokio::io::AsyncWriteExt as _;
            let job_id = job_ref(&mut c, &job_id).await?;
            let stream = match stderr {
                true => v1::OutputStream::Stderr,
                false => v1::OutputStream::Stdout,
            };
            let mut s = c
                .output(v1::OutputRequest {
                    job_id,
                    stream: stream as i32,
                    follow,
                    fragment,
                    ..Default::default()
                })
                .await?
                .into_inner();
            let mut out = tokio::io::stdout();
            while let Some(chunk) = s.next().await {
                out.write_all(&chunk?.data).await?;
                out.flush().await?;
            }
        }
        Cmd::Fetch {
            job_id,
            dir,
            fragment,
        } => {
            let label = job_id.clone();
            let job_id = job_ref(&mut c, &job_id).await?;
            let dir = dir.unwrap_or_else(|| std::path::PathBuf::from(format!("job-{label}")));
            let files = c
                .list_output_files(v1::ListOutputFilesRequest { job_id, fragment })
                .await?
                .into_inner()
                .files;
            if files.is_empty() {
                anyhow::bail!(
                    "job {label} has no output files at its site (declare them with `gridctl submit --output PATH`)"
                );
            }
            let (mut count, mut bytes) = (0, 0u64);
            for f in files {
                if !gridsched_proto::output::is_plain_relative(&f.name) {
                    anyhow::bail!(
                        "the site named a file `{}` outside the job's directory",
                        f.name
                    );
                }
                let path = dir.join(&f.name);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)
                        .map_err(|e| anyhow::anyhow!("{}: {e}", parent.display()))?;
                }
                let mut s = c
                    .output(v1::OutputRequest {
                        job_id,
                        fragment,
                        file: f.name.clone(),
                        ..Default::default()
                    })
                    .await?
                    .into_inner();
                use tokio::io::AsyncWriteExt as _;
                let at = |e: std::io::Error| anyhow::anyhow!("{}: {e}", path.display());
                let mut file = tokio::fs::File::create(&path).await.map_err(at)?;
                let mut len = 0u64;
                while let Some(chunk) = s.next().await {
                    let chunk = chunk?;
                    file.write_all(&chunk.data).await.map_err(at)?;
                    len += chunk.data.len() as u64;
                }
                file.flush().await.map_err(at)?;
                count += 1;
                bytes += len;
                println!("{}\t{len} bytes", path.display());
            }
            eprintln!("{count} file(s), {bytes} bytes, in {}", dir.display());
        }
        Cmd::Explain { job_id } => {
            let job_id = job_ref(&mut c, &job_id).await?;
            let r = c.explain(v1::ExplainRequest { job_id }).await?.into_inner();
            show::explain(&r, json)?;
        }
        Cmd::Reserve {
            site,
            processors,
            start,
            duration,
            machine,
            licences,
        } => {
            let start = when::time_arg(&start, "--start")?;
            // The owner, like a job's: the token's user, else $USER.
            let user = if authenticated {
                String::new()
            } else {
                std::env::var("USER").unwrap_or_else(|_| "anonymous".into())
            };
            let r = c
                .reserve(v1::ReserveRequest {
                    reservation: Some(v1::AdvanceReservation {
                        site,
                        user,
                        processors,
                        start_time: start,
                        end_time: start.saturating_add(duration),
                        machine: machine.unwrap_or_default(),
                        licences,
                        ..Default::default()
                    }),
                    ..Default::default()
                })
                .await?
                .into_inner();
            show::reservations(&r.reservation.into_iter().collect::<Vec<_>>(), json)?;
        }
        Cmd::Reservations { site } => {
            let r = c
                .list_reservations(v1::ListReservationsRequest {
                    site: site.unwrap_or_default(),
                })
                .await?
                .into_inner();
            show::reservations(&r.reservations, json)?;
        }
        Cmd::CancelReservation { id, reason } => {
            let id = reservation_id(&id)?;
            let r = c
                .cancel_reservation(v1::CancelReservationRequest { id, reason })
                .await?
                .into_inner();
            show::reservations(&r.reservation.into_iter().collect::<Vec<_>>(), json)?;
        }
        // Handled before connecting.
        Cmd::Up(_)
        | Cmd::Soak(_)
        | Cmd::Bench(_)
        | Cmd::Certs { .. }
        | Cmd::Token
        | Cmd::Health { .. }
        | Cmd::Completions { .. }
        | Cmd::Man => {}
    }
    Ok(std::process::ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// The command line is consistent (clap's own checks), and the completions and the man page
    /// are generated from it, naming its subcommands.
    #[test]
    fn completions_and_the_man_page_come_from_the_command_line() {
        Cli::command().debug_assert();
        let mut bash = Vec::new();
        clap_complete::generate(
            clap_complete::Shell::Bash,
            &mut Cli::command(),
            "gridctl",
            &mut bash,
        );
        let bash = String::from_utf8(bash).unwrap();
        for sub in ["submit", "usage", "history", "completions"] {
            assert!(bash.contains(sub), "{sub} in the bash completions");
        }
        let mut man = Vec::new();
        clap_mangen::Man::new(Cli::command())
            .render(&mut man)
            .unwrap();
        let man = String::from_utf8(man).unwrap();
        assert!(man.contains(".TH gridctl 1"), "{man}");
        assert!(man.contains("history"), "{man}");
    }
}
