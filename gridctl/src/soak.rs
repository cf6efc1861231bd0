//! `gridctl soak`: a chaos soak of real processes, as Jepsen checks a real cluster under faults
//! against stated invariants. It starts a grid of real processes (`gridctl up`'s, from a grid
//! file: by default three sites, one meta-scheduler), sends it a steady stream of jobs (real
//! commands; single jobs, jobs wider than any machine, split over sites and co-allocated, urgent
//! jobs, jobs with a deadline, jobs that wait for another, job arrays, and jobs in advance
//! reservations the stream makes),
//! and meanwhile a seeded chaos loop kills processes with SIGKILL and starts them again (the
//! meta-scheduler and the local schedulers from their stores, on their addresses), and stops
//! processes with SIGSTOP for a few seconds (a hang), and cuts the links into a process for a few
//! seconds (its port's packets dropped by nftables: [`crate::cut`]; with `--cut-shared` also the
//! PostgreSQL store's and Slurm's). Then the faults stop, the grid settles, and the run is
//! checked:
//!
//! - every acknowledged submission is a job the meta-scheduler knows, once (its client token:
//!   retried submissions are not new jobs), and no other job of the soak's user exists;
//! - every such job has ended (completed, failed, lost with its agent, ...), and every task of an
//!   array too, the array counting as many tasks as it has;
//! - no part of a job started more often than it may: each start appends a line (job, head
//!   node, rank) to a ledger, and each part may start once per run (1 + the job's requeues);
//! - a job (or task) the grid calls completed did start.
//!
//! The figures (jobs, faults by kind, the meta-scheduler's takeover times) are printed; any
//! broken rule makes the command fail.

use crate::out::outln;
use crate::up::{Launched, grid_file::GridFile, launch};
use gridsched_proto::v1::{self, meta_scheduler_client::MetaSchedulerClient};
use nix::sys::signal::Signal;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The grid of a soak when no --grid file is given.
const DEFAULT_GRID: &str = include_str!("soak_grid.toml");

/// Options of `gridctl soak`.
#[derive(Debug, clap::Args)]
pub struct SoakArgs {
    /// How long faults are injected (minutes; fractions allowed).
    #[arg(long, default_value_t = 5.0)]
    pub minutes: f64,
    /// Seed of the jobs and the faults.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Seconds between two faults (each fault is drawn at random).
    #[arg(long, default_value_t = 8.0)]
    pub fault_every: f64,
    /// Jobs submitted per second.
    #[arg(long, default_value_t = 2.0)]
    pub rate: f64,
    /// Once the faults stop, how long the grid may go without ending a job while some are not
    /// ended (seconds): a grid that still works through a backlog is waited for, a stuck one
    /// is not.
    #[arg(long, default_value_t = 300)]
    pub settle: u64,
    /// Grid description (TOML, as `gridctl up --grid`); default: three sites.
    #[arg(long)]
    pub grid: Option<PathBuf>,
    /// The meta-scheduler keeps its state in this PostgreSQL database (e.g. the URL
    /// `scripts/postgres.sh` prints; the jobs of earlier soaks there are left alone) ...
    #[arg(long)]
    pub postgres: Option<String>,
    /// ... shared by this many replicas, one leading, the others taking over when it dies.
    #[arg(long, default_value_t = 1, requires = "postgres")]
    pub replicas: u32,
    /// Adds a Slurm-backed site, `delta`, to the grid: the REST address of an existing Slurm
    /// (`scripts/slurm.sh start` prints it). Its local scheduler is faulted like the others;
    /// Slurm's own daemons are not ...
    #[arg(long, requires = "slurm_token_file")]
    pub slurm: Option<String>,
    /// ... with the JWT in this file (`scripts/slurm.sh token > FILE`) ...
    #[arg(long, requires = "slurm")]
    pub slurm_token_file: Option<PathBuf>,
    /// ... and this node of it (8 of its processors taken), as Slurm names it.
    #[arg(long, default_value = "localhost")]
    pub slurm_node: String,
    /// Only single jobs and jobs split over sites: no urgent jobs, deadlines, dependencies or
    /// advance reservations in the stream.
    #[arg(long)]
    pub plain: bool,
    /// Inject no link cuts (they need nftables and root), only crashes and hangs.
    #[arg(long)]
    pub no_cuts: bool,
    /// Cut also the links to the PostgreSQL server of --postgres and to Slurm's REST API of
    /// --slurm: every client of theirs on this machine is cut with the grid (run it on a machine
    /// of its own).
    #[arg(long, conflicts_with = "no_cuts")]
    pub cut_shared: bool,
    /// Directory of the grid's state, logs and the start ledger (emptied first).
    #[arg(long, default_value = "gridsched-soak")]
    pub dir: PathBuf,
}

/// One kind of fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    /// SIGKILL, then started again at once from its store.
    Crash,
    /// SIGSTOP, then SIGCONT a few seconds later.
    Hang,
    /// The links into a process (its listening port) cut, then healed a few seconds later.
    Cut,
}

/// A fault injected.
#[derive(Debug)]
struct Fault {
    kind: Kind,
    /// The process.
    target: String,
    /// A crash of the leading meta-scheduler: how long until a replica served again.
    takeover: Option<tokio::task::JoinHandle<Duration>>,
}

/// What kind of job of the mixed stream a submission is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Mix {
    /// A job of 1 to 4 processors.
    Plain,
    /// Wider than any machine: split over sites, its fragments co-allocated.
    Wide,
    /// Urgency high or critical.
    Urgent,
    /// With a deadline two minutes ahead.
    Deadline,
    /// Waits for an earlier job of the stream to end (`afterany:ID`).
    After,
    /// Runs in a user's advance reservation made by the stream.
    Reserved,
    /// A job array of 4 tasks, 2 at a time (Slurm's `--array 0-3%2`).
    Array,
    /// A task of an array of the stream (listed once the array has ended).
    Task,
}

/// An acknowledged submission.
#[derive(Clone, Debug)]
struct Acked {
    id: u64,
    mix: Mix,
}

/// What the submitter saw.
#[derive(Debug, Default)]
struct Submitted {
    acked: Vec<Acked>,
    /// Submissions tried again after an error (the meta-scheduler down or stopped).
    retries: u64,
    /// The longest time one submission took to be acknowledged.
    longest: Duration,
    /// Advance reservations made.
    reservations: u64,
}

/// `gridctl soak`: runs it and prints the report; an error when a rule was broken. Interrupted
/// (SIGINT, SIGTERM), it stops the grid it started.
pub async fn soak(a: SoakArgs) -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let (mut int, mut term) = (
        signal(SignalKind::interrupt())?,
        signal(SignalKind::terminate())?,
    );
    tokio::select! {
        r = run(a) => r,
        _ = int.recv() => anyhow::bail!("soak: interrupted; its grid is stopped"),
        _ = term.recv() => anyhow::bail!("soak: terminated; its grid is stopped"),
    }
}

async fn run(a: SoakArgs) -> anyhow::Result<()> {
    let mut text = match &a.grid {
        Some(p) => std::fs::read_to_string(p)?,
        None => DEFAULT_GRID.to_owned(),
    };
    if let (Some(url), Some(token)) = (&a.slurm, &a.slurm_token_file) {
        text += &slurm_site(url, token, &a.slurm_node);
    }
    let cutter = match a.no_cuts {
        true => None,
        false => Some(crate::cut::Cutter::new()?),
    };
    let mut grid = GridFile::parse(&text)?.with_host_memory();
    if let Some(url) = &a.postgres {
        grid.meta.postgres_url = Some(url.clone());
        grid.meta.replicas = a.replicas;
    }
    let widest = (grid.sites.iter())
        .flat_map(|s| s.machines.iter().map(|m| m.processors))
        .max()
        .unwrap_or(1);
    let _ = std::fs::remove_dir_all(&a.dir);
    std::fs::create_dir_all(&a.dir)?;
    let mut g = launch(&grid, &a.dir, "127.0.0.1:0", None, 1.0)?;
    let ledger = g.dir.join("starts.ledger");
    std::fs::write(&ledger, "")?;
    let metas = g.metas.clone();
    outln!(
        "soak: {} processes, meta-scheduler at http://{}; faults for {} min, one every {} s \
         (seed {})",
        g.names().len(),
        metas.join(", http://"),
        a.minutes,
        a.fault_every,
        a.seed
    );
    let user = format!(
        "soak-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_millis()
    );
    let stop = Arc::new(AtomicBool::new(false));
    let submitted = Arc::new(Mutex::new(Submitted::default()));
    let feeder = tokio::spawn(submit(
        metas.clone(),
        Feed {
            seed: a.seed,
            user: user.clone(),
            rate: a.rate,
            widest,
            reserving: (grid.sites.iter())
                .filter(|s| s.slurm.is_none())
                .map(|s| s.name.clone())
                .collect(),
            plain: a.plain,
            ledger: ledger.clone(),
        },
        stop.clone(),
        submitted.clone(),
    ));
    let t0 = Instant::now();
    let mut faults = chaos(&mut g, &a, cutter.as_ref(), t0).await?;
    stop.store(true, Ordering::Relaxed);
    feeder.await??;
    let submitted = std::mem::take(&mut *submitted.lock().expect("submitted"));
    outln!(
        "soak: faults over after {:.0} s; {} jobs acknowledged; settling (until none ends for {} s)",
        t0.elapsed().as_secs_f64(),
        submitted.acked.len(),
        a.settle
    );
    let mut settled = settle(&metas, &submitted.acked, Duration::from_secs(a.settle)).await?;
    let tasks = tasks(&metas, &user, &submitted.acked, &mut settled).await?;
    let report = check(&metas, &user, &submitted, &tasks, &settled, &ledger).await?;
    let mut takeovers = Vec::new();
    for f in faults.iter_mut() {
        if let Some(t) = f.takeover.take() {
            takeovers.push(t.await?);
        }
    }
    print(&report, &submitted, &faults, &mut takeovers, t0.elapsed())?;
    if let Some(e) = g.exited()? {
        anyhow::bail!("soak: a process of the grid died on its own: {e}");
    }
    match report.broken.is_empty() {
        true => Ok(()),
        false => anyhow::bail!("soak: {} rules broken", report.broken.len()),
    }
}

/// The seeded chaos loop: a fault every `fault_every` seconds until the time is up; killed
/// processes are started again, stopped ones continued and cut links healed after their time,
/// all of them at the end.
async fn chaos(
    g: &mut Launched,
    a: &SoakArgs,
    cutter: Option<&crate::cut::Cutter>,
    t0: Instant,
) -> anyhow::Result<Vec<Fault>> {
    // What may be cut: the processes that listen, and with --cut-shared the store and Slurm.
    let mut links: Vec<(String, u16)> = (g.names().into_iter())
        .filter_map(|n| {
            let port = g.listening(&n).and_then(crate::cut::port_of)?;
            Some((n, port))
        })
        .collect();
    if a.cut_shared {
        let shared = [("PostgreSQL", &a.postgres), ("Slurm REST", &a.slurm)];
        for (name, url) in shared {
            if let Some(port) = url.as_deref().and_then(crate::cut::port_of) {
                links.push((name.to_owned(), port));
            }
        }
    }
    let links = match cutter {
        Some(c) => links.into_iter().map(|(n, p)| (n, p, c)).collect(),
        None => Vec::new(),
    };
    let mut cut: Vec<(u16, &crate::cut::Cutter, Instant)> = Vec::new();
    let mut rng = ChaCha8Rng::seed_from_u64(a.seed ^ 0x736f_616b);
    let end = t0 + Duration::from_secs_f64(a.minutes * 60.0);
    let every = Duration::from_secs_f64(a.fault_every.max(0.5));
    let mut next = t0 + every;
    // Processes killed (to start again) and stopped (to continue), and when.
    let mut down: Vec<(String, Instant)> = Vec::new();
    let mut stopped: Vec<(String, Instant)> = Vec::new();
    let mut faults = Vec::new();
    while Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = Instant::now();
        for (name, _) in down.extract_if(.., |(_, until)| *until <= now) {
            g.start(&name)?;
        }
        for (name, _) in stopped.extract_if(.., |(_, until)| *until <= now) {
            g.signal(&name, Signal::SIGCONT)?;
        }
        for (port, c, _) in cut.extract_if(.., |(_, _, until)| *until <= now) {
            c.heal(port)?;
        }
        // A leader that could not renew its lease (hung past it) steps down with exit code 75;
        // a supervisor starts it again, as a follower.
        for name in g.deposed()? {
            outln!(
                "  {:>6.1} s  {name} stepped down (exit 75): started again",
                t0.elapsed().as_secs_f64()
            );
            g.start(&name)?;
        }
        if now < next {
            continue;
        }
        next = now + every;
        // Half crashes, a quarter hangs, a quarter cuts (hangs where nothing can be cut).
        let whole: Vec<_> = (links.iter())
            .filter(|(_, p, _)| !cut.iter().any(|(q, _, _)| q == p))
            .collect();
        let kind = match rng.random_range(0..4) {
            0 | 1 => Kind::Crash,
            3 if !whole.is_empty() => Kind::Cut,
            _ => Kind::Hang,
        };
        let mut link = None;
        let target = match kind {
            Kind::Cut => {
                let (name, port, c) = whole[rng.random_range(0..whole.len())];
                link = Some((*port, *c));
                name.clone()
            }
            _ => {
                let busy = |n: &String| down.iter().chain(&stopped).any(|(s, _)| s == n);
                let names: Vec<String> = g.names().into_iter().filter(|n| !busy(n)).collect();
                names[rng.random_range(0..names.len())].clone()
            }
        };
        let secs = Duration::from_secs_f64(match kind {
            Kind::Crash => rng.random_range(0.0..10.0),
            Kind::Hang => rng.random_range(1.0..8.0),
            Kind::Cut => rng.random_range(1.0..10.0),
        });
        // A leader's crash: how long until a replica serves again (measured aside).
        let leader = match (kind, g.replica_address(&target)) {
            (Kind::Crash, Some(addr)) => answering(addr).await.is_some(),
            _ => false,
        };
        let t = Instant::now();
        match kind {
            Kind::Crash => {
                g.kill(&target)?;
                down.push((target.clone(), now + secs));
            }
            Kind::Hang => {
                g.signal(&target, Signal::SIGSTOP)?;
                stopped.push((target.clone(), now + secs));
            }
            Kind::Cut => {
                let (port, c) = link.expect("the link chosen");
                c.cut(port)?;
                cut.push((port, c, now + secs));
            }
        }
        let takeover = leader.then(|| tokio::spawn(serves(g.metas.clone(), t)));
        let what = match kind {
            Kind::Cut => "Cut the links of",
            Kind::Crash => "Crash",
            Kind::Hang => "Hang",
        };
        outln!(
            "  {:>6.1} s  {what} {target} for {:.1} s",
            t0.elapsed().as_secs_f64(),
            secs.as_secs_f64()
        );
        faults.push(Fault {
            kind,
            target,
            takeover,
        });
    }
    for (name, _) in down {
        g.start(&name)?;
    }
    for (name, _) in stopped {
        g.signal(&name, Signal::SIGCONT)?;
    }
    for (port, c, _) in cut {
        c.heal(port)?;
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    for name in g.deposed()? {
        g.start(&name)?;
    }
    Ok(faults)
}

/// A client of the meta-scheduler at `addr` when it answers a call (it leads).
async fn answering(addr: &str) -> Option<MetaSchedulerClient<tonic::transport::Channel>> {
    let mut c = client(addr).await.ok()?;
    let answered = c.list_sites(v1::ListSitesRequest::default()).await.is_ok();
    answered.then_some(c)
}

/// Waits until one of the replicas at `addrs` answers a call: the time since `since`.
async fn serves(addrs: Vec<String>, since: Instant) -> Duration {
    while since.elapsed() < Duration::from_secs(120) {
        for a in &addrs {
            if answering(a).await.is_some() {
                return since.elapsed();
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    since.elapsed()
}

/// A client of whichever replica at `addrs` answers, the last good one `at` first.
async fn leading(
    addrs: &[String],
    at: &mut usize,
) -> anyhow::Result<MetaSchedulerClient<tonic::transport::Channel>> {
    for k in 0..addrs.len() {
        let i = (*at + k) % addrs.len();
        if let Some(c) = answering(&addrs[i]).await {
            *at = i;
            return Ok(c);
        }
    }
    anyhow::bail!("no replica of the meta-scheduler answers")
}

async fn client(addr: &str) -> anyhow::Result<MetaSchedulerClient<tonic::transport::Channel>> {
    let ch = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))?
        .connect_timeout(Duration::from_millis(500))
        .timeout(Duration::from_secs(3))
        .connect()
        .await?;
    Ok(MetaSchedulerClient::new(ch))
}

/// What the submitter sends.
struct Feed {
    seed: u64,
    /// The user the jobs belong to, one of this run's own (`soak-<unix ms>`): its jobs are this
    /// run's, whatever an earlier soak left in a shared store.
    user: String,
    rate: f64,
    /// The widest machine's processors: a job wider than it is split over sites.
    widest: u32,
    /// The sites that hold advance reservations (not Slurm-backed): where the stream reserves.
    reserving: Vec<String>,
    /// Single and split jobs only (`--plain`).
    plain: bool,
    ledger: PathBuf,
}

/// What the stream refers back to: the jobs acknowledged lately (for `after`), and its current
/// advance reservation with the number of jobs it may still send there.
#[derive(Debug, Default)]
struct Recent {
    ids: std::collections::VecDeque<u64>,
    reservation: Option<(u64, u32)>,
}

/// The grid file's entry of a Slurm-backed site `delta` on `node` of the Slurm at `url`.
fn slurm_site(url: &str, token: &Path, node: &str) -> String {
    let q = |s: &str| toml::Value::String(s.to_owned()).to_string();
    format!(
        "\n[[sites]]\nname = \"delta\"\nmachines = [{{ name = {}, processors = 8 }}]\n\
         slurm = {{ rest_url = {}, token_file = {}, poll_ms = 500 }}\n",
        q(node),
        q(url),
        q(&token.display().to_string())
    )
}

/// The stream's job arrays: 4 tasks, at most 2 of them out at a time.
const ARRAY: &str = "0-3%2";

/// Job `n` of the stream: a command that writes its start to the ledger, then sleeps. Of 120
/// draws, 20 are wider than any machine, 10 urgent, 10 with a deadline, 15 wait for a recent
/// job and 8 are arrays (`--plain`: the wide ones only); while the stream holds an advance
/// reservation, its next jobs run in it.
fn job(n: u64, f: &Feed, rng: &mut ChaCha8Rng, recent: &mut Recent) -> (v1::JobSpec, Mix) {
    let mix = match rng.random_range(0..120) {
        _ if recent.reservation.is_some() => Mix::Reserved,
        0..20 => Mix::Wide,
        _ if f.plain => Mix::Plain,
        20..30 => Mix::Urgent,
        30..40 => Mix::Deadline,
        40..55 if !recent.ids.is_empty() => Mix::After,
        55..63 => Mix::Array,
        _ => Mix::Plain,
    };
    let procs = match mix {
        Mix::Wide => f.widest + rng.random_range(1..=f.widest / 2 + 1),
        Mix::Reserved | Mix::Array => rng.random_range(1..=2),
        _ => rng.random_range(1..=4),
    };
    let secs = rng.random_range(1..=5);
    let script = format!(
        "echo \"$GRIDSCHED_JOB_ID $GRIDSCHED_HEAD_NODE $GRIDSCHED_NODE_RANK\" >> '{}'; \
         sleep {secs}",
        f.ledger.display()
    );
    let spec = v1::JobSpec {
        user: f.user.clone(),
        processors: procs,
        estimate_s: 60,
        client_token: Some(format!("{}-{n}", f.user)),
        command: Some(v1::Command {
            program: "sh".into(),
            args: vec!["-c".into(), script],
            ..Default::default()
        }),
        ..Default::default()
    };
    let mut spec = spec;
    match mix {
        Mix::Urgent => spec.set_urgency(match rng.random_bool(0.5) {
            true => v1::Urgency::High,
            false => v1::Urgency::Critical,
        }),
        Mix::Deadline => spec.deadline = Some(unix_now() + 120),
        Mix::After => {
            let back = rng.random_range(0..recent.ids.len());
            spec.after = Some(format!("afterany:{}", recent.ids[back]));
        }
        Mix::Reserved => {
            let (id, left) = recent.reservation.as_mut().expect("a reservation");
            spec.reservation = Some(*id);
            // Six of them fit its 4 processors x 90 s whatever their order.
            spec.estimate_s = 10;
            *left -= 1;
            if *left == 0 {
                recent.reservation = None;
            }
        }
        Mix::Array => spec.array = Some(ARRAY.into()),
        Mix::Plain | Mix::Wide | Mix::Task => {}
    }
    (spec, mix)
}

/// Seconds since the Unix epoch.
fn unix_now() -> i64 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    t.map_or(0, |d| d.as_secs() as i64)
}

/// Every 60 jobs the stream reserves 4 processors of a site for 90 s, 15 s ahead, and sends its
/// next 6 jobs there; a reservation the grid refuses or cannot make now (its site down) is
/// skipped.
async fn reserve(
    c: &mut MetaSchedulerClient<tonic::transport::Channel>,
    f: &Feed,
    rng: &mut ChaCha8Rng,
) -> Option<u64> {
    let site = f
        .reserving
        .get(rng.random_range(0..f.reserving.len().max(1)))?;
    let start = unix_now() + 15;
    let req = v1::ReserveRequest {
        reservation: Some(v1::AdvanceReservation {
            start_time: start,
            end_time: start + 90,
            processors: 4,
            site: site.clone(),
            user: f.user.clone(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let r = c.reserve(req).await.ok()?.into_inner();
    r.reservation.map(|r| r.id)
}

/// Submits the stream until `stop`, each submission tried again until it is acknowledged.
async fn submit(
    metas: Vec<String>,
    f: Feed,
    stop: Arc<AtomicBool>,
    out: Arc<Mutex<Submitted>>,
) -> anyhow::Result<()> {
    let mut rng = ChaCha8Rng::seed_from_u64(f.seed);
    let gap = Duration::from_secs_f64(1.0 / f.rate.max(0.01));
    let (mut c, mut at) = (None, 0);
    let mut n = 0;
    let mut recent = Recent::default();
    while !stop.load(Ordering::Relaxed) {
        if n % 60 == 59
            && !f.plain
            && let Some(c) = c.as_mut()
        {
            let id = reserve(c, &f, &mut rng).await;
            recent.reservation = id.map(|id| (id, 6));
            out.lock().expect("submitted").reservations += u64::from(id.is_some());
        }
        let (mut spec, mut mix) = job(n, &f, &mut rng, &mut recent);
        n += 1;
        let t = Instant::now();
        let mut said = Duration::ZERO;
        loop {
            if c.is_none() {
                c = leading(&metas, &mut at).await.ok();
            }
            let answer = match c.as_mut() {
                Some(c) => c
                    .submit(v1::SubmitRequest {
                        spec: Some(spec.clone()),
                    })
                    .await
                    .map(tonic::Response::into_inner),
                None => Err(tonic::Status::unavailable("not connected")),
            };
            match answer {
                Ok(r) => {
                    let mut s = out.lock().expect("submitted");
                    s.acked.push(Acked { id: r.job_id, mix });
                    s.longest = s.longest.max(t.elapsed());
                    // Later jobs wait for plain ones (what a dependency on an array means is
                    // the arrays' own tests').
                    if mix != Mix::Array {
                        recent.ids.push_back(r.job_id);
                    }
                    if recent.ids.len() > 20 {
                        recent.ids.pop_front();
                    }
                    break;
                }
                // A reservation that cannot hold the job (or has gone): sent without it.
                Err(e)
                    if spec.reservation.is_some()
                        && matches!(
                            e.code(),
                            tonic::Code::FailedPrecondition | tonic::Code::NotFound
                        ) =>
                {
                    spec.reservation = None;
                    mix = Mix::Plain;
                    recent.reservation = None;
                }
                // Refused for good (not a grid down or busy): the stream is wrong.
                Err(e)
                    if !matches!(
                        e.code(),
                        tonic::Code::Unavailable
                            | tonic::Code::DeadlineExceeded
                            | tonic::Code::Unknown
                            | tonic::Code::Cancelled
                            | tonic::Code::Internal
                            | tonic::Code::Aborted
                            | tonic::Code::ResourceExhausted
                    ) =>
                {
                    anyhow::bail!("soak: job {n} refused: {:?}: {}", e.code(), e.message());
                }
                Err(e) => {
                    c = None;
                    out.lock().expect("submitted").retries += 1;
                    // Said once a minute while one submission is not acknowledged.
                    if t.elapsed() >= said + Duration::from_secs(60) {
                        said = t.elapsed();
                        eprintln!(
                            "soak: job {n} not acknowledged after {:.0} s: {:?}: {}",
                            said.as_secs_f64(),
                            e.code(),
                            e.message()
                        );
                    }
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
        tokio::time::sleep(gap).await;
    }
    Ok(())
}

/// Waits until every acknowledged job has ended, or none has ended for `limit`: each job's last
/// answer.
async fn settle(
    metas: &[String],
    acked: &[Acked],
    limit: Duration,
) -> anyhow::Result<HashMap<u64, v1::Job>> {
    let mut t = Instant::now();
    let mut ended = 0;
    let mut seen: HashMap<u64, v1::Job> = HashMap::new();
    let mut at = 0;
    loop {
        let mut c = leading(metas, &mut at).await?;
        for a in acked {
            if seen.get(&a.id).is_some_and(|j| j.state().is_terminal()) {
                continue;
            }
            if let Ok(r) = c.get_job(v1::GetJobRequest { job_id: a.id }).await
                && let Some(j) = r.into_inner().job
            {
                seen.insert(a.id, j);
            }
        }
        let open = (acked.iter())
            .filter(|a| !seen.get(&a.id).is_some_and(|j| j.state().is_terminal()))
            .count();
        if acked.len() - open > ended {
            ended = acked.len() - open;
            t = Instant::now();
        }
        if open == 0 || t.elapsed() > limit {
            return Ok(seen);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// The tasks of the acknowledged arrays, each by its own id, added to `jobs` as the grid ended
/// them (the arrays have settled: so have their tasks).
async fn tasks(
    metas: &[String],
    user: &str,
    acked: &[Acked],
    jobs: &mut HashMap<u64, v1::Job>,
) -> anyhow::Result<Vec<Acked>> {
    let mut c = leading(metas, &mut 0).await?;
    let mut tasks = Vec::new();
    for a in acked.iter().filter(|a| a.mix == Mix::Array) {
        let listed = c
            .list_jobs(v1::ListJobsRequest {
                user: Some(user.to_owned()),
                array: Some(a.id),
                limit: 1000,
                ..Default::default()
            })
            .await;
        // An array the grid does not know is a broken rule of its own (`rules`).
        let Ok(page) = listed.map(tonic::Response::into_inner) else {
            continue;
        };
        for j in page.jobs {
            tasks.push(Acked {
                id: j.id,
                mix: Mix::Task,
            });
            jobs.insert(j.id, j);
        }
    }
    Ok(tasks)
}

/// The run's outcome.
#[derive(Debug, Default)]
struct Report {
    /// Jobs by final state.
    states: BTreeMap<String, usize>,
    /// Starts written to the ledger.
    starts: usize,
    /// Jobs acknowledged by kind.
    mix: BTreeMap<Mix, usize>,
    /// Every rule broken, said plainly.
    broken: Vec<String>,
}

/// Checks the rules of the module documentation.
async fn check(
    metas: &[String],
    user: &str,
    s: &Submitted,
    tasks: &[Acked],
    jobs: &HashMap<u64, v1::Job>,
    ledger: &Path,
) -> anyhow::Result<Report> {
    let mut r = rules(s, tasks, jobs, &std::fs::read_to_string(ledger)?);
    // No job of the soak's user but the acknowledged ones.
    let mut c = leading(metas, &mut 0).await?;
    let mut token = String::new();
    let mut total = 0;
    loop {
        let page = c
            .list_jobs(v1::ListJobsRequest {
                user: Some(user.to_owned()),
                limit: 1000,
                page_token: token,
                ..Default::default()
            })
            .await?
            .into_inner();
        total += page.jobs.len();
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    let acked: std::collections::HashSet<u64> = s.acked.iter().map(|a| a.id).collect();
    if total != acked.len() {
        r.broken.push(format!(
            "the grid holds {total} jobs of user {user}, {} were acknowledged",
            acked.len()
        ));
    }
    Ok(r)
}

/// The rules over what was acknowledged (and the tasks of its arrays), the jobs as the grid ended
/// them, and the ledger.
fn rules(s: &Submitted, tasks: &[Acked], jobs: &HashMap<u64, v1::Job>, ledger: &str) -> Report {
    let mut r = Report {
        mix: (s.acked.iter().chain(tasks)).fold(BTreeMap::new(), |mut m, a| {
            *m.entry(a.mix).or_default() += 1;
            m
        }),
        ..Report::default()
    };
    // Starts of each part: (job, its head node, the part's rank).
    let mut starts: HashMap<u64, HashMap<(String, String), usize>> = HashMap::new();
    for line in ledger.lines() {
        let mut w = line.split_whitespace();
        if let (Some(id), Some(head), Some(rank)) =
            (w.next().and_then(|w| w.parse().ok()), w.next(), w.next())
        {
            *starts
                .entry(id)
                .or_default()
                .entry((head.to_owned(), rank.to_owned()))
                .or_default() += 1;
            r.starts += 1;
        }
    }
    let mut ids: HashMap<u64, usize> = HashMap::new();
    for a in &s.acked {
        *ids.entry(a.id).or_default() += 1;
    }
    for (id, n) in &ids {
        if *n > 1 {
            r.broken
                .push(format!("job {id}: {n} submissions acknowledged as it"));
        }
    }
    for a in s.acked.iter().chain(tasks) {
        let Some(j) = jobs.get(&a.id) else {
            r.broken
                .push(format!("job {}: acknowledged, unknown to the grid", a.id));
            continue;
        };
        let state = j.state();
        // An array's own record sums its tasks, which are counted one by one.
        if a.mix != Mix::Array {
            let name = state.as_str_name().trim_start_matches("JOB_STATE_");
            *r.states.entry(name.to_lowercase()).or_default() += 1;
        }
        if !state.is_terminal() {
            r.broken.push(format!(
                "job {}: still {} after the grid settled",
                a.id,
                state.as_str_name()
            ));
        }
        let parts = starts.get(&a.id);
        // Once per run: the first, each requeue of a split job, each restart at its site.
        let may = 1 + j.requeues as usize + j.restarts as usize;
        for ((head, rank), n) in parts.into_iter().flatten() {
            if *n > may {
                r.broken.push(format!(
                    "job {}: its part {rank} headed by {head} started {n} times, at most {may} \
                     allowed",
                    a.id
                ));
            }
        }
        if a.mix == Mix::Array {
            // An array runs as its tasks: as many as it counts, each ended.
            let listed = (tasks.iter())
                .filter(|t| jobs.get(&t.id).and_then(|t| t.array_id) == Some(a.id))
                .count();
            let counted = j.array.map_or(0, |p| p.tasks as usize);
            if listed != counted {
                r.broken.push(format!(
                    "array {}: {counted} tasks counted, {listed} listed",
                    a.id
                ));
            }
            continue;
        }
        if state == v1::JobState::Completed && parts.is_none() {
            r.broken
                .push(format!("job {}: completed, but never started", a.id));
        }
    }
    r
}

fn print(
    r: &Report,
    s: &Submitted,
    faults: &[Fault],
    takeovers: &mut [Duration],
    took: Duration,
) -> std::io::Result<()> {
    let count = |k: Kind, meta: bool| {
        (faults.iter())
            .filter(|f| f.kind == k && f.target.starts_with("meta-scheduler") == meta)
            .count()
    };
    takeovers.sort();
    let states: Vec<String> = r.states.iter().map(|(k, v)| format!("{v} {k}")).collect();
    outln!("soak report ({:.0} s in all)", took.as_secs_f64());
    let mix = |m: Mix| r.mix.get(&m).copied().unwrap_or(0);
    outln!(
        "  jobs acknowledged  {} ({} wider than any machine, {} urgent, {} with a deadline, {} after \
         another, {} in {} advance reservations, {} arrays of {} tasks); jobs and tasks ended: {}",
        s.acked.len(),
        mix(Mix::Wide),
        mix(Mix::Urgent),
        mix(Mix::Deadline),
        mix(Mix::After),
        mix(Mix::Reserved),
        s.reservations,
        mix(Mix::Array),
        mix(Mix::Task),
        states.join(", ")
    );
    outln!(
        "  starts in ledger   {}; submissions retried {}; longest to acknowledge {:.1} s",
        r.starts,
        s.retries,
        s.longest.as_secs_f64()
    );
    outln!(
        "  faults injected    {} (crash: {} meta-scheduler, {} other; hang: {} meta-scheduler, \
         {} other; links cut: {} meta-scheduler, {} other)",
        faults.len(),
        count(Kind::Crash, true),
        count(Kind::Crash, false),
        count(Kind::Hang, true),
        count(Kind::Hang, false),
        count(Kind::Cut, true),
        count(Kind::Cut, false)
    );
    match &*takeovers {
        [] => outln!("  takeovers          none"),
        t => outln!(
            "  takeovers          {} (a leader killed: a replica serving again after {:.2} s \
             median, {:.2} s at most)",
            t.len(),
            t[t.len() / 2].as_secs_f64(),
            t[t.len() - 1].as_secs_f64()
        ),
    }
    outln!("  rules broken       {}", r.broken.len());
    for b in &r.broken {
        outln!("    {b}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--slurm` adds a fourth site that hands its jobs to Slurm: its local scheduler gets the
    /// REST address and token file, and the meta-scheduler keeps split jobs' fragments away
    /// from it.
    #[test]
    fn the_slurm_site_joins_the_default_grid() {
        let text = DEFAULT_GRID.to_owned()
            + &slurm_site("http://127.0.0.1:6820", Path::new("/t/s \"q\".jwt"), "n1");
        let g = GridFile::parse(&text).unwrap();
        assert_eq!(g.sites.len(), 4);
        let local = local_scheduler::Config::from_toml(&g.local_toml(3, Path::new("/g"))).unwrap();
        assert_eq!(local.backend, local_scheduler::config::Backend::Slurm);
        let slurm = local.slurm.unwrap();
        assert_eq!(slurm.rest_url, "http://127.0.0.1:6820");
        assert_eq!(local.machines[0].name, "n1");
        let meta = g.meta_toml(
            "127.0.0.1:1",
            None,
            Path::new("/g"),
            &vec!["127.0.0.1:2".to_string(); 4],
        );
        let m = meta_scheduler::MetaConfig::from_toml(&meta).unwrap();
        assert!(!m.sites[3].holds_reservations && m.sites[0].holds_reservations);
    }

    fn job(id: u64, state: v1::JobState, requeues: u32) -> v1::Job {
        v1::Job {
            id,
            state: state as i32,
            requeues,
            ..Default::default()
        }
    }

    /// Each rule breaks on the run that breaks it, and a sound run breaks none.
    #[test]
    fn the_rules_catch_what_breaks_them() {
        let acked = |ids: &[u64]| Submitted {
            acked: (ids.iter())
                .map(|&id| Acked {
                    id,
                    mix: Mix::Plain,
                })
                .collect(),
            ..Submitted::default()
        };
        let jobs: HashMap<u64, v1::Job> = [
            job(1, v1::JobState::Completed, 0),
            job(2, v1::JobState::Lost, 0),
            job(3, v1::JobState::Completed, 1),
        ]
        .into_iter()
        .map(|j| (j.id, j))
        .collect();
        // Job 1 over two nodes, job 3 twice (requeued once): sound.
        let ledger = "1 a-1 0\n1 a-1 1\n3 b-1 0\n3 b-1 0\n";
        let sound = rules(&acked(&[1, 2, 3]), &[], &jobs, ledger);
        assert_eq!(sound.broken, Vec::<String>::new());
        assert_eq!((sound.starts, sound.states["completed"]), (4, 2));
        let broken = |ids: &[u64], jobs: &HashMap<u64, v1::Job>, ledger: &str| {
            rules(&acked(ids), &[], jobs, ledger).broken
        };
        assert_eq!(
            broken(&[1, 2, 3, 4], &jobs, ledger),
            ["job 4: acknowledged, unknown to the grid"]
        );
        assert_eq!(
            broken(&[1, 1, 2, 3], &jobs, ledger)[0],
            "job 1: 2 submissions acknowledged as it"
        );
        assert_eq!(
            broken(&[1, 2, 3], &jobs, &format!("{ledger}1 a-1 1\n")),
            ["job 1: its part 1 headed by a-1 started 2 times, at most 1 allowed"]
        );
        assert_eq!(
            broken(&[1, 2, 3], &jobs, "1 a-1 0\n"),
            ["job 3: completed, but never started"]
        );
        let mut open = jobs.clone();
        open.insert(2, job(2, v1::JobState::Running, 0));
        assert_eq!(
            broken(&[1, 2, 3], &open, ledger),
            ["job 2: still JOB_STATE_RUNNING after the grid settled"]
        );
    }

    /// An array is its tasks: each ended and started as a job must, and as many as it counts.
    #[test]
    fn an_array_is_checked_through_its_tasks() {
        let array = Submitted {
            acked: vec![Acked {
                id: 10,
                mix: Mix::Array,
            }],
            ..Submitted::default()
        };
        let task = |id: u64| Acked { id, mix: Mix::Task };
        let mut jobs: HashMap<u64, v1::Job> = HashMap::new();
        let mut a = job(10, v1::JobState::Completed, 0);
        a.array = Some(v1::ArrayProgress {
            tasks: 2,
            completed: 2,
            ..Default::default()
        });
        jobs.insert(10, a);
        for id in [11, 12] {
            let mut t = job(id, v1::JobState::Completed, 0);
            t.array_id = Some(10);
            jobs.insert(id, t);
        }
        let ledger = "11 a-1 0\n12 a-2 0\n";
        let sound = rules(&array, &[task(11), task(12)], &jobs, ledger);
        assert_eq!(sound.broken, Vec::<String>::new());
        assert_eq!((sound.states["completed"], sound.mix[&Mix::Task]), (2, 2));
        // A task missing from the list, one that never started, one that started twice.
        assert_eq!(
            rules(&array, &[task(11)], &jobs, ledger).broken,
            ["array 10: 2 tasks counted, 1 listed"]
        );
        assert_eq!(
            rules(&array, &[task(11), task(12)], &jobs, "11 a-1 0\n").broken,
            ["job 12: completed, but never started"]
        );
        let twice = format!("{ledger}11 a-1 0\n");
        assert_eq!(
            rules(&array, &[task(11), task(12)], &jobs, &twice).broken,
            ["job 11: its part 0 headed by a-1 started 2 times, at most 1 allowed"]
        );
    }
}
