//! `gridctl bench`: measures a live grid it starts itself (3 sites, `--sites`, x 4 agents x
//! 8 processors, EASY, real processes on loopback): acknowledged-and-durable submissions per
//! second through the meta endpoint (unary with concurrent clients, and batched), the latency from
//! the submit call to the job's process running on an idle grid (read from the process's own
//! clock: the job is `date +%s%N`), the start skew between the fragments of jobs split over two
//! sites and their submit-to-start latency with the co-allocation (Streit, thesis §6.3: the
//! fragments of a multi-site job start together), and the time to run N one-second emulated jobs
//! against the ideal `N x 1 s / 96 processors`.

use crate::out::outln;
use crate::up::grid_file::GridFile;
use gridsched_proto::v1::{self, JobState, meta_scheduler_client::MetaSchedulerClient};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tonic::transport::Channel;

/// Options of `gridctl bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// One-second emulated jobs of the run (submitted in batches).
    #[arg(long, default_value_t = 10_000)]
    pub jobs: usize,
    /// Jobs per batch.
    #[arg(long, default_value_t = 1_000)]
    pub batch: usize,
    /// Unary submissions, spread over `--clients` concurrent clients.
    #[arg(long, default_value_t = 2_000)]
    pub unary: usize,
    /// Concurrent unary clients.
    #[arg(long, default_value_t = 8)]
    pub clients: usize,
    /// Submit-to-start latency samples.
    #[arg(long, default_value_t = 200)]
    pub samples: usize,
    /// Samples of a job split over two sites (40 processors: 32 + 8): the start skew between its
    /// fragments and its submit-to-start latency, co-allocation included (0: none).
    #[arg(long, default_value_t = 50)]
    pub split_samples: usize,
    /// Tasks of the job arrays whose submission is measured against 10 single submissions
    /// (zero-second emulated tasks, no `%N`).
    #[arg(long, default_value_t = 10_000)]
    pub array_tasks: usize,
    /// Job arrays submitted, each run to its end before the next (0: none).
    #[arg(long, default_value_t = 3)]
    pub array_samples: usize,
    /// Samples of a dependency's release: a job `afterok` on a running one, from the moment
    /// the first prints its last clock to the second's start (0: none).
    #[arg(long, default_value_t = 20)]
    pub dependency_samples: usize,
    /// Start jobs without asking the meta-scheduler (`start_claims = false`), to measure what
    /// the claims cost.
    #[arg(long)]
    pub no_start_claims: bool,
    /// Directory of the benchmark grid (default: a temporary one).
    #[arg(long)]
    pub dir: Option<std::path::PathBuf>,
    /// Instead of the other measurements: run this many zero-second jobs to their end, then
    /// measure the meta-scheduler's resident memory, `get` and `list` latencies over that
    /// history, and its restart (killed -9) to serving.
    #[arg(long, default_value_t = 0)]
    pub history: usize,
    /// Instead of the other measurements: stage an input of this many MiB (e.g. 1024) and
    /// compare with `cp` of the same file on this machine: the upload to the meta-scheduler, then
    /// a job reading it (pushed to its site, read by its machine's agent, each hop checked), then
    /// a second job reading it at the same site (from the caches).
    #[arg(long, default_value_t = 0)]
    pub staging: u64,
    /// Instead of the other measurements: write the accounting records of this many finished
    /// jobs (a synthetic year) into the meta-scheduler's store before it starts, then time
    /// `gridctl usage` and `gridctl history` over them (`--samples` calls of each kind).
    #[arg(long, default_value_t = 0)]
    pub accounting: usize,
    /// Instead of the other measurements: one user floods the meta-scheduler with unary
    /// submissions from `--clients` connections for this many seconds while another submits a
    /// job every 50 ms; the second's submit latency, alone and beside the flood.
    #[arg(long, default_value_t = 0)]
    pub flood: u64,
    /// The grid's `[submit_rate] per_user` (jobs per second a user may submit; 0: no limit).
    #[arg(long, default_value_t = 0.0)]
    pub submit_rate: f64,
    /// The grid's `[submit_rate] burst`.
    #[arg(long, default_value_t = 1_000)]
    pub submit_burst: u32,
    /// With `--history`: at most this many jobs are submitted and not yet ended at a time (the
    /// history is submitted in waves of this size, each run to its end before the next).
    #[arg(long, default_value_t = 10_000)]
    pub backlog: usize,
    /// Sites of the benchmark grid (each of four 8-processor machines); `--history 1000000
    /// --sites 1` runs the whole history through one local scheduler.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=26))]
    pub sites: u32,
    /// The meta-scheduler keeps its state in this PostgreSQL database (e.g. the URL
    /// `scripts/postgres.sh` prints; its tables are created there) instead of its embedded store.
    #[arg(long)]
    pub postgres: Option<String>,
    /// Instead of the other measurements: the same streams through a native site, a
    /// Slurm-backed site and plain `sbatch`, side by side (`slurm`: the host's Slurm, e.g. the one
    /// `scripts/slurm.sh start` runs).
    #[arg(long, value_enum)]
    pub against: Option<Against>,
    /// With `--against slurm`: Slurm's configuration file.
    #[arg(
        long,
        env = "SLURM_CONF",
        default_value = "/tmp/gridsched-slurm/slurm.conf"
    )]
    pub slurm_conf: std::path::PathBuf,
    /// With `--against slurm`: slurmrestd's address.
    #[arg(long, env = "SLURM_REST_URL", default_value = "http://127.0.0.1:6820")]
    pub slurm_rest: String,
    /// With `--against slurm`: the CPUs of Slurm's node, also the native site's processors.
    #[arg(long, default_value_t = 16)]
    pub slurm_cpus: u32,
    /// With `--against slurm`: one-second jobs of the makespan run.
    #[arg(long, default_value_t = 1_000)]
    pub slurm_jobs: usize,
    /// With `--against slurm`: submit-to-start latency samples of each way.
    #[arg(long, default_value_t = 50)]
    pub slurm_samples: usize,
    /// With `--against slurm`: submissions one job per request, over `--clients`.
    #[arg(long, default_value_t = 400)]
    pub slurm_single: usize,
    /// With `--against slurm`: the Slurm-backed site's `slurm.poll_ms`.
    #[arg(long, default_value_t = 500)]
    pub slurm_poll_ms: u64,
    /// With `--against slurm-fairshare`: jobs of the stream.
    #[arg(long, default_value_t = 60)]
    pub fs_jobs: usize,
}

/// A peer to measure beside the native grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Against {
    /// The host's Slurm: through a Slurm-backed site and through plain `sbatch`.
    Slurm,
    /// The host's Slurm with accounting (`GRIDSCHED_SLURM_ACCOUNTING=1 scripts/slurm.sh
    /// start`): one stream of jobs from several accounts through its classic fair share and
    /// through gridsched's, the start order and the usage per account side by side.
    SlurmFairshare,
}

fn grid(sites: u32) -> GridFile {
    // Jobs wider than a site (32 processors) are split over sites at 10 % WAN overhead.
    let mut t = String::from("[meta]\nwan_overhead_pct = 10\n");
    for s in (1..=sites).map(|i| format!("s{i}")) {
        t += &format!("[[sites]]\nname = \"{s}\"\npolicy = \"easy\"\nmachines = [");
        t += &(1..=4)
            .map(|k| format!("{{ name = \"{s}-m{k}\", processors = 8 }}"))
            .collect::<Vec<_>>()
            .join(", ");
        t += "]\n";
        // A licence only this site has: `--staging` pins a job to a site with it.
        t += &format!("licences = [{{ name = \"at-{s}\", copies = 8 }}]\n");
    }
    GridFile::parse(&t).expect("the benchmark grid is valid")
}

/// A job of `procs` processors whose processes print their start (`date +%s%N`).
pub(crate) fn clocked(procs: u32) -> v1::JobSpec {
    v1::JobSpec {
        processors: procs,
        command: Some(v1::Command {
            program: "date".into(),
            args: vec!["+%s%N".into()],
            ..Default::default()
        }),
        emulate_runtime_s: None,
        ..emulated(0)
    }
}

/// Submits `spec` and waits for its end.
pub(crate) async fn run_one(
    c: &mut MetaSchedulerClient<Channel>,
    spec: v1::JobSpec,
) -> anyhow::Result<v1::Job> {
    let id = c
        .submit(v1::SubmitRequest { spec: Some(spec) })
        .await?
        .into_inner()
        .job_id;
    ended(c, id).await
}

/// Waits for job `id`'s end.
pub(crate) async fn ended(
    c: &mut MetaSchedulerClient<Channel>,
    id: u64,
) -> anyhow::Result<v1::Job> {
    loop {
        let j = c
            .get_job(v1::GetJobRequest { job_id: id })
            .await?
            .into_inner()
            .job;
        if let Some(j) = j.filter(|j| j.state().is_terminal()) {
            return Ok(j);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The start (ns) job `id` printed on `machine`.
pub(crate) fn printed_start(dir: &std::path::Path, machine: &str, id: u64) -> anyhow::Result<u128> {
    let out = dir
        .join("work")
        .join(machine)
        .join(id.to_string())
        .join("stdout");
    let text = std::fs::read_to_string(&out)?;
    Ok(text.trim().parse()?)
}

pub(crate) fn emulated(run: i64) -> v1::JobSpec {
    v1::JobSpec {
        user: "bench".into(),
        processors: 1,
        estimate_s: 60,
        emulate_runtime_s: Some(run),
        ..Default::default()
    }
}

pub(crate) fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

pub(crate) async fn wait_ready(
    c: &mut MetaSchedulerClient<Channel>,
    machines: usize,
) -> anyhow::Result<()> {
    let t = Instant::now();
    loop {
        let s = c
            .list_sites(v1::ListSitesRequest {
                site: None,
                include_resources: true,
            })
            .await?
            .into_inner();
        let online: usize = s
            .sites
            .iter()
            .flat_map(|s| &s.clusters)
            .filter(|c| c.reachable)
            .map(|c| c.machines.iter().filter(|m| m.online).count())
            .sum();
        if online == machines {
            return Ok(());
        }
        if t.elapsed() > Duration::from_secs(30) {
            anyhow::bail!("only {online} of {machines} machines came online");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until every job up to id `last` has ended; returns when the last one ended.
pub(crate) async fn wait_all_ended(
    c: &mut MetaSchedulerClient<Channel>,
    last: u64,
) -> anyhow::Result<()> {
    loop {
        let live = c
            .list_jobs(v1::ListJobsRequest {
                states: [
                    JobState::Accepted,
                    JobState::Dispatched,
                    JobState::Queued,
                    JobState::Running,
                ]
                .map(i32::from)
                .to_vec(),
                limit: 1,
                ..Default::default()
            })
            .await?
            .into_inner();
        if live.jobs.is_empty() {
            let j = c.get_job(v1::GetJobRequest { job_id: last }).await?;
            if j.into_inner().job.is_some_and(|j| j.state().is_terminal()) {
                return Ok(());
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub(crate) fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v.get(i).copied().unwrap_or(f64::NAN)
}

/// `gridctl bench`.
pub async fn bench(a: BenchArgs) -> anyhow::Result<()> {
    let tmp = tempfile::tempdir()?;
    let dir = a.dir.clone().unwrap_or_else(|| tmp.path().to_owned());
    let mut g = grid(a.sites);
    g.meta.start_claims = !a.no_start_claims;
    g.meta.postgres_url.clone_from(&a.postgres);
    if a.submit_rate > 0.0 {
        let mut t = toml::Table::new();
        t.insert("per_user".into(), a.submit_rate.into());
        t.insert("burst".into(), i64::from(a.submit_burst).into());
        g.meta.submit_rate = Some(t);
    }
    if a.accounting > 0 {
        crate::bench_accounting::fill(a.accounting, &dir, a.postgres.as_deref())?;
    }
    let mut grid = crate::up::launch(&g, &dir, "127.0.0.1:0", None, 1.0)?;
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", grid.meta()))?
        .connect()
        .await?;
    // A meta-scheduler over PostgreSQL serves the API once it holds the lease.
    let t = Instant::now();
    let api = v1::meta_scheduler_server::SERVICE_NAME;
    while !gridsched_proto::standard::serves(channel.clone(), api, Duration::from_secs(1)).await {
        anyhow::ensure!(
            t.elapsed() < Duration::from_secs(30),
            "the meta-scheduler does not serve"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut c = MetaSchedulerClient::new(channel.clone());
    wait_ready(&mut c, 4 * a.sites as usize).await?;
    outln!(
        "benchmark grid: {} sites x 4 agents x 8 processors (EASY), start claims {}, in {}",
        a.sites,
        if a.no_start_claims { "off" } else { "on" },
        grid.dir.display()
    );

    if a.history > 0 {
        return history(&a, &mut grid, c).await;
    }
    if a.accounting > 0 {
        return crate::bench_accounting::measure(&mut c, a.samples).await;
    }
    if a.flood > 0 {
        let rate = if a.submit_rate > 0.0 {
            format!(
                "[submit_rate] per_user = {}, burst = {}",
                a.submit_rate, a.submit_burst
            )
        } else {
            "no [submit_rate]".to_owned()
        };
        return crate::bench_flood::measure(grid.meta(), a.clients, a.flood, &rate).await;
    }
    if a.staging > 0 {
        return staging(&a, &grid.dir, channel, c).await;
    }

    // 1. Submit-to-start latency on the idle grid.
    let mut lat = Vec::with_capacity(a.samples);
    for _ in 0..a.samples {
        let t0 = now_ns();
        let job = run_one(&mut c, clocked(1)).await?;
        let started = printed_start(&grid.dir, &job.machine.unwrap_or_default(), job.id)?;
        lat.push(started.saturating_sub(t0) as f64 / 1e6);
    }
    let (p50, p99, max) = (pct(&mut lat, 0.5), pct(&mut lat, 0.99), pct(&mut lat, 1.0));
    outln!(
        "submit -> process start, idle grid, {} samples: p50 {p50:.2} ms, p99 {p99:.2} ms, max {max:.2} ms",
        a.samples
    );

    // 1b. Jobs split over two sites: co-allocated, their fragments' starts read from their clocks.
    if a.split_samples > 0 {
        let (mut skew, mut lat) = (Vec::new(), Vec::new());
        for _ in 0..a.split_samples {
            let t0 = now_ns();
            let job = run_one(&mut c, clocked(40)).await?;
            if job.state() != JobState::Completed || job.fragments.len() != 2 {
                anyhow::bail!(
                    "split job {} ended {:?} ({}) with fragments {:?}",
                    job.id,
                    job.state(),
                    job.reason,
                    job.fragments
                );
            }
            let mut starts = Vec::new();
            for f in &job.fragments {
                let machine = f.machine.clone().unwrap_or_default();
                starts.push(printed_start(&grid.dir, &machine, job.id)?);
            }
            let (first, last) = (starts.iter().min().unwrap(), starts.iter().max().unwrap());
            skew.push((last - first) as f64 / 1e6);
            lat.push(first.saturating_sub(t0) as f64 / 1e6);
        }
        let n = a.split_samples;
        outln!(
            "jobs split over two sites (32 + 8 processors), {n} samples: start skew p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; submit -> first fragment start p50 {:.2} ms, p99 {:.2} ms (co-allocation included)",
            pct(&mut skew, 0.5),
            pct(&mut skew, 0.99),
            pct(&mut skew, 1.0),
            pct(&mut lat, 0.5),
            pct(&mut lat, 0.99)
        );
    }

    // 1b'. A dependency's release: job A waits for a file, prints its clock and exits; job B,
    // `afterok:A`, prints its start.
    if a.dependency_samples > 0 {
        let mut lat = Vec::new();
        for k in 0..a.dependency_samples {
            let flag = grid.dir.join(format!("release-{k}"));
            let first = v1::JobSpec {
                command: Some(v1::Command {
                    program: "sh".into(),
                    args: vec![
                        "-c".into(),
                        format!(
                            "while [ ! -e {} ]; do sleep 0.005; done; date +%s%N",
                            flag.display()
                        ),
                    ],
                    ..Default::default()
                }),
                emulate_runtime_s: None,
                ..emulated(0)
            };
            let a_id = c
                .submit(v1::SubmitRequest { spec: Some(first) })
                .await?
                .into_inner()
                .job_id;
            let second = v1::JobSpec {
                after: Some(format!("afterok:{a_id}")),
                ..clocked(1)
            };
            let b_id = c
                .submit(v1::SubmitRequest { spec: Some(second) })
                .await?
                .into_inner()
                .job_id;
            std::fs::write(&flag, "")?;
            let first = ended(&mut c, a_id).await?;
            let second = ended(&mut c, b_id).await?;
            let end = printed_start(&grid.dir, &first.machine.unwrap_or_default(), a_id)?;
            let started = printed_start(&grid.dir, &second.machine.unwrap_or_default(), b_id)?;
            lat.push(started.saturating_sub(end) as f64 / 1e6);
        }
        outln!(
            "a job afterok on another, {} samples: the other's last clock -> its start p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms (the end's report up, the release, the dispatch and the start)",
            a.dependency_samples,
            pct(&mut lat, 0.5),
            pct(&mut lat, 0.99),
            pct(&mut lat, 1.0)
        );
    }

    // 1c. A job array's submission against 10 single submissions, on the idle grid; then the
    // array's tasks run through.
    if a.array_samples > 0 {
        let (mut array, mut singles, mut through) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..a.array_samples {
            let t = Instant::now();
            let mut last = 0;
            for _ in 0..10 {
                let r = c.submit(v1::SubmitRequest {
                    spec: Some(emulated(0)),
                });
                last = r.await?.into_inner().job_id;
            }
            singles.push(t.elapsed().as_secs_f64() * 1e3);
            wait_all_ended(&mut c, last).await?;
            let spec = v1::JobSpec {
                array: Some(format!("0-{}", a.array_tasks - 1)),
                ..emulated(0)
            };
            let t = Instant::now();
            let id = c
                .submit(v1::SubmitRequest { spec: Some(spec) })
                .await?
                .into_inner()
                .job_id;
            array.push(t.elapsed().as_secs_f64() * 1e3);
            wait_all_ended(&mut c, id).await?;
            through.push(a.array_tasks as f64 / t.elapsed().as_secs_f64());
        }
        outln!(
            "a {}-task job array, {} samples: submission acknowledged and durable in p50 {:.2} ms (max {:.2}), against 10 single submissions in p50 {:.2} ms (max {:.2}); its zero-second tasks run through at p50 {:.0} tasks/s",
            a.array_tasks,
            a.array_samples,
            pct(&mut array, 0.5),
            pct(&mut array, 1.0),
            pct(&mut singles, 0.5),
            pct(&mut singles, 1.0),
            pct(&mut through, 0.5)
        );
    }

    // 2. Unary submissions with concurrent clients (zero-second emulated jobs).
    let unary = submit_unary(&mut c, a.unary, a.clients).await?;
    outln!(
        "unary submissions, {} clients: {unary:.0} jobs/s acknowledged and durable",
        a.clients
    );

    // 3. Batched submissions of N one-second jobs, then their run against the ideal.
    let t = Instant::now();
    let last = submit_batched(&mut c, a.jobs, a.batch, 1).await?;
    let ack = t.elapsed().as_secs_f64();
    outln!(
        "batched submissions ({} per batch): {:.0} jobs/s acknowledged and durable ({} jobs in {ack:.2} s)",
        a.batch,
        a.jobs as f64 / ack,
        a.jobs
    );
    wait_all_ended(&mut c, last).await?;
    let run = t.elapsed().as_secs_f64();
    let ideal = (a.jobs as f64 / 96.0).ceil();
    outln!(
        "{} one-second jobs on 96 processors: {run:.1} s from the first submission to the last end; ideal {ideal:.0} s ({:.1}% above)",
        a.jobs,
        (run / ideal - 1.0) * 100.0
    );
    if let Some(what) = grid.exited()? {
        anyhow::bail!("{what} during the benchmark");
    }
    Ok(())
}

/// The resident memory of process `pid`, MiB (Linux).
fn rss_mib(pid: u32) -> anyhow::Result<f64> {
    let kb = site_agent::memory::process_rss_kb(pid)
        .ok_or_else(|| anyhow::anyhow!("no VmRSS for process {pid}"))?;
    Ok(kb as f64 / 1024.0)
}

/// Submits `n` emulated jobs of `run` seconds in batches of `batch`: the last id.
/// Submits about `n` zero-second jobs one per request from `clients` concurrent clients, each
/// waiting for its answer (acknowledged and durable), then waits until they have all ended; the
/// rate of the submissions, jobs per second.
pub(crate) async fn submit_unary(
    c: &mut MetaSchedulerClient<Channel>,
    n: usize,
    clients: usize,
) -> anyhow::Result<f64> {
    let t = Instant::now();
    let per = n.div_ceil(clients.max(1));
    let mut tasks = Vec::new();
    for _ in 0..clients.max(1) {
        let mut c = c.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..per {
                c.submit(v1::SubmitRequest {
                    spec: Some(emulated(0)),
                })
                .await?;
            }
            Ok::<_, tonic::Status>(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    let rate = (per * clients.max(1)) as f64 / t.elapsed().as_secs_f64();
    let last = c
        .submit(v1::SubmitRequest {
            spec: Some(emulated(0)),
        })
        .await?
        .into_inner()
        .job_id;
    wait_all_ended(c, last).await?;
    Ok(rate)
}

pub(crate) async fn submit_batched(
    c: &mut MetaSchedulerClient<Channel>,
    n: usize,
    batch: usize,
    run: i64,
) -> anyhow::Result<u64> {
    let mut last = 0;
    let mut submitted = 0;
    while submitted < n {
        let k = batch.max(1).min(n - submitted);
        let reqs: Vec<v1::SubmitRequest> = (0..k)
            .map(|_| v1::SubmitRequest {
                spec: Some(emulated(run)),
            })
            .collect();
        let r = c.submit_batch(tokio_stream::iter(reqs)).await?.into_inner();
        for res in r.results {
            match res.outcome {
                Some(v1::submit_result::Outcome::Accepted(a)) => last = last.max(a.job_id),
                other => anyhow::bail!("a benchmark job was refused: {other:?}"),
            }
        }
        submitted += k;
    }
    Ok(last)
}

/// Latencies (ms) of `get` of `samples` finished jobs spread over ids 1..=`last`, and of
/// `samples` pages of `list` (100 completed jobs each, following the page tokens).
async fn read_latencies(
    c: &mut MetaSchedulerClient<Channel>,
    last: u64,
    samples: usize,
) -> anyhow::Result<(Vec<f64>, Vec<f64>)> {
    let mut get = Vec::with_capacity(samples);
    // A fixed stride coprime with most histories: every part of the id range is read.
    let mut id = 1;
    for _ in 0..samples {
        id = (id + 7_919) % last.max(1) + 1;
        let t = Instant::now();
        let j = c
            .get_job(v1::GetJobRequest { job_id: id })
            .await?
            .into_inner();
        get.push(t.elapsed().as_secs_f64() * 1e3);
        if j.job.is_none() {
            anyhow::bail!("job {id} not found");
        }
    }
    let mut list = Vec::with_capacity(samples);
    let mut token = String::new();
    for _ in 0..samples {
        let t = Instant::now();
        let page = c
            .list_jobs(v1::ListJobsRequest {
                states: vec![JobState::Completed.into()],
                limit: 100,
                page_token: token.clone(),
                ..Default::default()
            })
            .await?
            .into_inner();
        list.push(t.elapsed().as_secs_f64() * 1e3);
        token = page.next_page_token;
    }
    Ok((get, list))
}

/// `gridctl bench --history N`: the meta-scheduler's memory, reads and restart over a history of
/// N finished jobs.
async fn history(
    a: &BenchArgs,
    grid: &mut crate::up::Launched,
    mut c: MetaSchedulerClient<Channel>,
) -> anyhow::Result<()> {
    let pid = grid
        .pid("meta-scheduler")
        .ok_or_else(|| anyhow::anyhow!("no meta-scheduler process"))?;
    let fresh = rss_mib(pid)?;
    let t = Instant::now();
    let (mut last, mut submitted, mut peak) = (0, 0, fresh);
    while submitted < a.history {
        let wave = a.backlog.max(1).min(a.history - submitted);
        last = submit_batched(&mut c, wave, a.batch, 0).await?;
        peak = peak.max(rss_mib(pid)?);
        wait_all_ended(&mut c, last).await?;
        submitted += wave;
    }
    let ran = t.elapsed().as_secs_f64();
    let full = rss_mib(pid)?;
    outln!(
        "{} zero-second jobs run to their end in {ran:.1} s, in waves of {} (at most that many not ended at a time); meta-scheduler resident memory {fresh:.0} MiB fresh, {peak:.0} MiB at most after a wave's submission, {full:.0} MiB after",
        a.history,
        a.backlog.max(1)
    );
    // Memory is to follow the live work: sampled for a minute after the last job's end.
    let ended = Instant::now();
    let mut after = Vec::new();
    for at in [10, 30, 60] {
        tokio::time::sleep(Duration::from_secs(at).saturating_sub(ended.elapsed())).await;
        after.push(format!("{:.0} MiB at +{at} s", rss_mib(pid)?));
    }
    outln!(
        "meta-scheduler after the last job's end: {}",
        after.join(", ")
    );
    let mut sites = Vec::new();
    for (name, site) in grid.pids("local-scheduler ") {
        let name = name.trim_start_matches("local-scheduler ");
        sites.push(format!("{name} {:.0} MiB", rss_mib(site)?));
    }
    outln!("local schedulers then: {}", sites.join(", "));
    let (mut get, mut list) = read_latencies(&mut c, last, a.samples).await?;
    outln!(
        "over that history, {} samples each: get p50 {:.2} ms, p99 {:.2} ms; list (100 completed jobs a page) p50 {:.2} ms, p99 {:.2} ms",
        a.samples,
        pct(&mut get, 0.5),
        pct(&mut get, 0.99),
        pct(&mut list, 0.5),
        pct(&mut list, 0.99)
    );
    let t = Instant::now();
    grid.restart_meta()?;
    let listening = t.elapsed().as_secs_f64();
    let mut c = MetaSchedulerClient::connect(format!("http://{}", grid.meta())).await?;
    loop {
        if let Ok(j) = c.get_job(v1::GetJobRequest { job_id: last }).await
            && j.into_inner().job.is_some()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let serving = t.elapsed().as_secs_f64();
    let pid = grid
        .pid("meta-scheduler")
        .ok_or_else(|| anyhow::anyhow!("no meta-scheduler process after the restart"))?;
    outln!(
        "restart (killed -9, started again on its store): listening after {listening:.2} s, serving after {serving:.2} s; resident memory then {:.0} MiB",
        rss_mib(pid)?
    );
    if let Some(what) = grid.exited()? {
        anyhow::bail!("{what} during the benchmark");
    }
    Ok(())
}

/// `gridctl bench --staging MIB`: an input's way through the grid against `cp` of the same file.
async fn staging(
    a: &BenchArgs,
    dir: &std::path::Path,
    channel: Channel,
    mut c: MetaSchedulerClient<Channel>,
) -> anyhow::Result<()> {
    use std::io::Write;
    let size = a.staging << 20;
    let file = dir.join("bench-input.bin");
    {
        // Distinct bytes per run (its digest is new: nothing is cached yet).
        let mut w = std::io::BufWriter::new(std::fs::File::create(&file)?);
        let seed = now_ns() as u64;
        let mut block = vec![0u8; 1 << 20];
        for k in 0..a.staging {
            for (i, b) in block.iter_mut().enumerate() {
                *b = (seed ^ k.wrapping_mul(0x9e37_79b9) ^ (i as u64).wrapping_mul(31)) as u8;
            }
            w.write_all(&block)?;
        }
        w.into_inner()?.sync_all()?;
    }
    let mb = |d: Duration| size as f64 / 1e6 / d.as_secs_f64();
    let t = Instant::now();
    let copy = dir.join("bench-input.copy");
    std::fs::copy(&file, &copy)?;
    std::fs::File::open(&copy)?.sync_all()?;
    let cp = t.elapsed();
    std::fs::remove_file(&copy)?;
    outln!(
        "cp of {} MiB on this machine (synced): {:.2} s, {:.0} MB/s",
        a.staging,
        cp.as_secs_f64(),
        mb(cp)
    );
    let mut up =
        MetaSchedulerClient::with_interceptor(channel, gridsched_security::Bearer::new(None)?);
    let t = Instant::now();
    let (sha, _) = crate::inputs::upload(&mut up, &file, "bench-input.bin").await?;
    let upload = t.elapsed();
    outln!(
        "upload to the meta-scheduler (streamed, hashed, synced): {:.2} s, {:.0} MB/s ({:.2} of cp)",
        upload.as_secs_f64(),
        mb(upload),
        cp.as_secs_f64() / upload.as_secs_f64()
    );
    // The start latency of a job without inputs, then of jobs reading the input.
    let start = async |c: &mut MetaSchedulerClient<Channel>, input: bool| {
        let mut spec = clocked(8);
        if input {
            spec.stage_in = vec![v1::StagedInput {
                name: "input.bin".into(),
                sha256: sha.clone(),
                ..Default::default()
            }];
        }
        let t0 = now_ns();
        let job = run_one(c, spec).await?;
        anyhow::ensure!(
            job.state() == JobState::Completed,
            "job {} ended {:?}: {}",
            job.id,
            job.state(),
            job.reason
        );
        let started = printed_start(dir, &job.machine.clone().unwrap_or_default(), job.id)?;
        anyhow::Ok((
            Duration::from_nanos(started.saturating_sub(t0) as u64),
            job.site.unwrap_or_default(),
        ))
    };
    let (base, _) = start(&mut c, false).await?;
    let t0 = SystemTime::now();
    let (first, site) = start(&mut c, true).await?;
    let staged = first.saturating_sub(base);
    // Each hop's end: when its copy was last written (its file's modification time).
    let copies = copies_of(dir, &sha);
    let done = |part: &str| {
        copies
            .iter()
            .find(|(p, _)| p.to_string_lossy().contains(part))
            .map(|(_, t)| *t)
    };
    if let (Some(site_t), Some(machine_t)) = (done("/cache/"), done("/.cache/")) {
        let hop1 = site_t.duration_since(t0).unwrap_or_default();
        let hop2 = machine_t.duration_since(site_t).unwrap_or_default();
        outln!(
            "  hop 1, meta-scheduler -> {site}'s cache (pushed, hashed, synced): {:.2} s, {:.0} MB/s ({:.2} of cp)",
            hop1.as_secs_f64(),
            mb(hop1),
            cp.as_secs_f64() / hop1.as_secs_f64()
        );
        outln!(
            "  hop 2, {site}'s cache -> the machine's (read by its agent, hashed, synced): {:.2} s, {:.0} MB/s ({:.2} of cp)",
            hop2.as_secs_f64(),
            mb(hop2),
            cp.as_secs_f64() / hop2.as_secs_f64()
        );
    }
    outln!(
        "a job reading it, submit -> start: {:.2} s against {:.3} s without input: staged in {:.2} s, {:.0} MB/s ({:.2} of cp) over two hops, each checked (meta-scheduler -> {site}'s cache -> its machine's)",
        first.as_secs_f64(),
        base.as_secs_f64(),
        staged.as_secs_f64(),
        mb(staged),
        cp.as_secs_f64() / staged.as_secs_f64()
    );
    let mut again = Vec::new();
    for _ in 0..3 {
        again.push(start(&mut c, true).await?);
    }
    for (d, s) in &again {
        outln!(
            "another job reading it at {s}: submit -> start {:.3} s (from the caches{})",
            d.as_secs_f64(),
            if *s == site {
                ""
            } else {
                ", a new site: pushed"
            }
        );
    }
    site_to_site(a, dir, &mut c, &sha, cp).await?;
    std::fs::remove_file(&file)?;
    Ok(())
}

/// The site-to-site part of `--staging`: a workflow whose first node, at s1, writes a new file
/// of the input's size (the input with one more byte) as its declared output, and whose second,
/// at s2, reads it: the output goes from s1's machine to s1 (handed over by its agent), then from
/// s1's cache to s2's (moved site to site), then to s2's machine. Each move is timed by its
/// copy's own clock: from the file's creation to its last status change (its last write, its
/// sync and its rename into place).
async fn site_to_site(
    a: &BenchArgs,
    dir: &std::path::Path,
    c: &mut MetaSchedulerClient<Channel>,
    sha: &str,
    cp: Duration,
) -> anyhow::Result<()> {
    let node = |name: &str, parents: &[&str], site: &str, script: &str| {
        let mut job = clocked(1);
        job.licences = vec![format!("at-{site}")];
        job.command = Some(v1::Command {
            program: "sh".into(),
            args: vec!["-c".into(), script.into()],
            ..Default::default()
        });
        v1::WorkflowNode {
            name: name.into(),
            parents: parents.iter().map(|p| p.to_string()).collect(),
            job: Some(job),
            ..Default::default()
        }
    };
    let mut put = node("put", &[], "s1", "cp input.bin out.bin && echo >> out.bin");
    if let Some(j) = put.job.as_mut() {
        j.stage_in = vec![v1::StagedInput {
            name: "input.bin".into(),
            sha256: sha.to_owned(),
            ..Default::default()
        }];
        j.outputs = vec!["out.bin".into()];
    }
    let get = node("get", &["put"], "s2", "test -s put/out.bin");
    let spec = v1::JobSpec {
        user: "bench".into(),
        workflow: Some(v1::Workflow {
            nodes: vec![put, get],
            resume: None,
        }),
        ..Default::default()
    };
    let w = run_one(c, spec).await?;
    anyhow::ensure!(
        w.state() == JobState::Completed,
        "the site-to-site workflow {} ended {:?}: {}",
        w.id,
        w.state(),
        w.reason
    );
    let put = ended(c, w.id + 1).await?;
    let Some(out) = put.outputs.first() else {
        anyhow::bail!("node `put` reported no output");
    };
    let size = out.size;
    let mb = |d: Duration| size as f64 / 1e6 / d.as_secs_f64();
    let line = |what: &str, d: Duration| -> anyhow::Result<()> {
        outln!(
            "  {what}: {:.2} s, {:.0} MB/s ({:.2} of cp)",
            d.as_secs_f64(),
            mb(d),
            cp.as_secs_f64() / d.as_secs_f64()
        );
        Ok(())
    };
    outln!(
        "site to site: a workflow node's {} MiB output written at s1, read by its child at s2",
        a.staging
    );
    let copies = copies_of(dir, &out.sha256);
    let handed = dir.join("s1/state/outputs").join(put.id.to_string());
    if let Some(d) = own_time(&handed.join("files/out.bin")) {
        line(
            "s1's machine -> s1 (handed over by its agent, 1 MiB pushes)",
            d,
        )?;
    }
    let at = |site: &str| {
        copies
            .iter()
            .find(|(p, _)| {
                p.to_string_lossy()
                    .contains(&format!("/{site}/state/cache/"))
            })
            .and_then(|(p, _)| own_time(p))
    };
    match at("s2") {
        Some(d) => line(
            "s1's cache -> s2's (moved site to site: read at s1, relayed, hashed and synced at s2)",
            d,
        )?,
        None => outln!("  (no copy found in s2's cache under {})", dir.display()),
    }
    Ok(())
}

/// How long a file took to come into place: from its creation to its last status change (its
/// last write, sync and rename), by the file system's own clock.
fn own_time(p: &std::path::Path) -> Option<Duration> {
    use std::os::unix::fs::MetadataExt as _;
    let m = std::fs::metadata(p).ok()?;
    let born = m.created().ok()?;
    let changed = std::time::UNIX_EPOCH
        + Duration::new(u64::try_from(m.ctime()).ok()?, m.ctime_nsec() as u32);
    changed.duration_since(born).ok()
}

/// The copies of blob `sha` under `dir` (the meta-scheduler's, the sites' caches, the machines'),
/// each with its modification time.
fn copies_of(dir: &std::path::Path, sha: &str) -> Vec<(std::path::PathBuf, SystemTime)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => todo.push(p),
                Ok(_) if e.file_name() == sha => {
                    if let Ok(m) = e.metadata().and_then(|m| m.modified()) {
                        out.push((p, m));
                    }
                }
                _ => {}
            }
        }
    }
    out
}
