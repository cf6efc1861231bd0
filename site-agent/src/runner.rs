//! Runs one job on the agent's machine: a real OS process (program, arguments, environment plus
//! `GRIDSCHED_JOB_ID`, `GRIDSCHED_USER`, `GRIDSCHED_PROCESSORS` and the node variables
//! `GRIDSCHED_NODES` (the job's machines in rank order, comma-separated), `GRIDSCHED_NODE_RANK`,
//! `GRIDSCHED_NODE_COUNT` and `GRIDSCHED_HEAD_NODE`, the way batch systems hand an MPI launcher its
//! hosts (a job on one machine: that machine, rank 0 of 1); working directory; stdout and stderr
//! to `<dir>/<job>/stdout|stderr`) or, in emulation mode, a sleep of the job's run time × the time
//! scale.
//!
//! The process runs in a process group of its own, so that signals reach the whole job (a shell
//! script and the programs it starts). The agent steers a started job through its [`Control`]
//! channel:
//!
//! - [`Control::Suspend`] stops the job, keeping its progress: SIGSTOP to its process group (an
//!   emulated job pauses its remaining run time). Suspending a suspended job does nothing.
//! - [`Control::Resume`] lets a suspended job run on: SIGCONT to its process group. Resuming a
//!   running job does nothing.
//! - [`Control::Kill`] ends the job: SIGTERM to its process group (followed by SIGCONT when the job
//!   is suspended, so that its processes can handle it), then SIGKILL to the group once the grace
//!   period is over. When the process the agent started exits within the grace period, the report
//!   is sent at once and whatever remains of its group gets SIGKILL at the end of the period.
//!
//! A job with a memory limit (`memory_kb`) has its process group's resident memory measured
//! every [`crate::memory::SAMPLE`]; over the limit, it is killed like on a kill order and its
//! report says how much it held.
//!
//! The job's [`RunClock`] counts the time it has run, suspended time excluded. The wall-time limit
//! (the estimate on this machine, × the time scale) is measured on that clock, so it does not run
//! out while the job is stopped; once reached, the job is killed like on a kill order.
//!
//! Reports, all sent to the agent's channel: RUNNING once the job starts, SUSPENDED and RUNNING
//! again at each suspension and resumption, then the final report. Each carries the running time
//! at the moment it is made (`ran_ms`); the agent reads the clock for the reports of its
//! heartbeats.

use gridsched_proto::v1::{self, AgentJobState, start_job::Execution};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

/// How jobs run on this agent.
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// The agent's machine (a job's node when the local scheduler names none).
    pub machine: String,
    /// Directory holding one sub-directory per job.
    pub work_dir: PathBuf,
    /// Factor applied to emulated run times and wall-time limits.
    pub time_scale: f64,
    /// Time between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// Where a job's standard output and error go while it runs (its head node's only); `None`:
    /// they stay in the job's directory.
    pub shipper: Option<crate::ship::Shipper>,
    /// Where a job's staged inputs come from; `None`: a job with inputs fails to start.
    pub fetcher: Option<crate::fetch::Fetcher>,
}

/// An order for a started job, sent on its control channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Control {
    /// End the job (SIGTERM, SIGKILL after the grace period); the reason goes in the final
    /// report's detail.
    Kill(String),
    /// Stop the job, keeping its progress (SIGSTOP); no-op when it is suspended already.
    Suspend,
    /// Let a suspended job run on (SIGCONT); no-op when it runs.
    Resume,
}

/// The time a job has run, suspended time excluded, shared by its runner (which starts and stops
/// it) and the agent (which reads it for its reports). A new clock is stopped at zero.
#[derive(Debug, Clone, Default)]
pub struct RunClock(Arc<Mutex<Segments>>);

#[derive(Debug, Default)]
struct Segments {
    /// Time run in the closed segments.
    ran: Duration,
    /// Start of the current segment, while the job runs.
    since: Option<Instant>,
}

impl RunClock {
    /// The time run so far.
    pub fn ran(&self) -> Duration {
        let s = self.lock();
        s.ran + s.since.map_or(Duration::ZERO, |t| t.elapsed())
    }

    /// [`RunClock::ran`] in milliseconds, as reported.
    pub fn ran_ms(&self) -> u64 {
        u64::try_from(self.ran().as_millis()).unwrap_or(u64::MAX)
    }

    /// Whether the clock runs (the job runs, not suspended, not ended).
    pub fn is_running(&self) -> bool {
        self.lock().since.is_some()
    }

    fn start(&self) {
        let mut s = self.lock();
        if s.since.is_none() {
            s.since = Some(Instant::now());
        }
    }

    fn stop(&self) {
        let mut s = self.lock();
        if let Some(t) = s.since.take() {
            s.ran += t.elapsed();
        }
    }

    /// When the clock will show `d` if it keeps running; `None` while it is stopped.
    fn reaches(&self, d: Duration) -> Option<tokio::time::Instant> {
        let s = self.lock();
        let t = s.since?;
        Some(tokio::time::Instant::from_std(t + d.saturating_sub(s.ran)))
    }

    fn lock(&self) -> MutexGuard<'_, Segments> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

fn scaled(s: i64, scale: f64) -> Duration {
    Duration::from_secs_f64((s.max(0) as f64 * scale).max(0.0))
}

fn report(job: u64, state: AgentJobState) -> v1::JobReport {
    v1::JobReport {
        job_id: job,
        state: state as i32,
        ..Default::default()
    }
}

/// Sleeps until `t`, forever when `None`.
async fn sleep_until(t: Option<tokio::time::Instant>) {
    match t {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

/// Runs `start`, sending its reports to `out` (see the module documentation) and obeying the
/// orders of `control`; `clock` counts its running time. When `control` closes (nobody can order
/// anything any more), a suspended job is resumed so that it can end.
pub async fn run_job(
    cfg: RunnerConfig,
    start: v1::StartJob,
    mut control: mpsc::UnboundedReceiver<Control>,
    clock: RunClock,
    out: mpsc::UnboundedSender<v1::JobReport>,
) {
    let id = start.job_id;
    let limit = start.wall_time_limit_s.map(|l| scaled(l, cfg.time_scale));
    let started = now_s();
    let job = Job {
        id,
        started,
        limit,
        memory_kb: start.memory_kb,
        clock: &clock,
        out: &out,
    };
    // The local account it runs as (none: the agent's own), known before anything is written.
    let account =
        crate::account::resolve(start.local_account.as_deref(), start.local_group.as_deref());
    let owner = account
        .as_ref()
        .ok()
        .and_then(|a| a.as_ref().map(|a| a.uid));
    // An emulated job writes nothing: there is nothing to hand over.
    let command = matches!(start.execution, Some(Execution::Command(_)));
    let shipping = match (&cfg.shipper, start.node_rank) {
        (Some(s), 0) if command => {
            let (ended, rx) = tokio::sync::oneshot::channel();
            let dir = cfg.work_dir.join(id.to_string());
            let cwd = match &start.execution {
                Some(Execution::Command(c)) => c.working_directory.as_deref().map(PathBuf::from),
                _ => None,
            };
            let declared = (cwd.unwrap_or_else(|| dir.clone()), start.outputs.clone());
            Some((
                ended,
                tokio::spawn(s.clone().run(id, dir, declared, owner, rx)),
            ))
        }
        _ => None,
    };
    let mut fin = match start.execution {
        Some(Execution::Command(mut c)) => {
            // The job's environment: the grid's variables, then the job's own (which win).
            let nodes = match start.nodes.is_empty() {
                true => vec![cfg.machine.clone()],
                false => start.nodes.clone(),
            };
            let job_env = [
                ("GRIDSCHED_JOB_ID", id.to_string()),
                ("GRIDSCHED_USER", start.user.clone()),
                ("GRIDSCHED_PROCESSORS", start.processors.to_string()),
                ("GRIDSCHED_NODES", nodes.join(",")),
                ("GRIDSCHED_NODE_RANK", start.node_rank.to_string()),
                ("GRIDSCHED_NODE_COUNT", nodes.len().to_string()),
                ("GRIDSCHED_HEAD_NODE", nodes[0].clone()),
            ];
            for (k, v) in job_env {
                c.env.entry(k.to_owned()).or_insert(v);
            }
            match start_command(&cfg, id, &mut c, &start.inputs, account).await {
                Ok(p) => {
                    job.supervise(Body::Process(p), &mut control, cfg.grace)
                        .await
                }
                Err(detail) => {
                    let mut r = report(id, AgentJobState::StartFailed);
                    r.detail = detail;
                    r
                }
            }
        }
        Some(Execution::EmulateRuntimeS(rt)) => {
            let run = scaled(rt, cfg.time_scale);
            job.supervise(Body::Emulated(run), &mut control, cfg.grace)
                .await
        }
        None => {
            let mut r = report(id, AgentJobState::StartFailed);
            r.detail = "start order without execution".into();
            r
        }
    };
    clock.stop();
    if fin.state != AgentJobState::StartFailed as i32 {
        fin.ran_ms = Some(clock.ran_ms());
    }
    fin.start_time = Some(started);
    fin.end_time = Some(now_s());
    // The output is handed over before the end is reported.
    if let Some((ended, shipped)) = shipping {
        let _ = ended.send(());
        if let Ok(files) = shipped.await {
            fin.outputs = files;
        }
    }
    let _ = out.send(fin);
}

/// Starts a job's command as `account` (once resolved; `None`: the agent's own): a job of
/// another account gets a fresh directory and the account's `HOME`, `USER` and `LOGNAME`
/// (unless it sets them), its inputs are placed, then its process starts.
async fn start_command(
    cfg: &RunnerConfig,
    id: u64,
    c: &mut v1::Command,
    inputs: &[v1::StagedInput],
    account: Result<Option<crate::account::Account>, String>,
) -> Result<Process, String> {
    let account = account?;
    if let Some(a) = &account {
        if c.working_directory.is_some() && !inputs.is_empty() {
            return Err(format!(
                "a job run as `{}` gets its inputs in its own directory only: drop its working \
                 directory",
                a.name
            ));
        }
        let dir = cfg.work_dir.join(id.to_string());
        crate::account::fresh_dir(&dir)
            .map_err(|e| format!("preparing {} for `{}`: {e}", dir.display(), a.name))?;
        let home = a.home.to_string_lossy().into_owned();
        for (k, v) in [
            ("HOME", home),
            ("USER", a.name.clone()),
            ("LOGNAME", a.name.clone()),
        ] {
            c.env.entry(k.to_owned()).or_insert(v);
        }
    }
    stage_in(cfg, id, c, inputs).await?;
    if account.is_some() {
        // Links to the agent's cache, readable by the job's account whatever the agent's umask.
        let dir = cfg.work_dir.join(id.to_string());
        for i in inputs {
            let path = dir.join(&i.name);
            crate::account::readable(&path).map_err(|e| format!("input `{}`: {e}", i.name))?;
        }
    }
    spawn(cfg, id, c, account.as_ref())
}

/// Places the job's staged inputs in its working directory (the job's directory unless it names
/// one).
async fn stage_in(
    cfg: &RunnerConfig,
    id: u64,
    c: &v1::Command,
    inputs: &[v1::StagedInput],
) -> Result<(), String> {
    if inputs.is_empty() {
        return Ok(());
    }
    let Some(f) = &cfg.fetcher else {
        return Err("this agent cannot place staged inputs".into());
    };
    let dir = c
        .working_directory
        .as_deref()
        .map_or_else(|| cfg.work_dir.join(id.to_string()), PathBuf::from);
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    f.place(inputs, &dir).await
}

/// Starts the job's process in its own process group, its output going to the job's directory;
/// as `account` when given (the directory and output files handed to it first).
fn spawn(
    cfg: &RunnerConfig,
    id: u64,
    c: &v1::Command,
    account: Option<&crate::account::Account>,
) -> Result<Process, String> {
    let dir = cfg.work_dir.join(id.to_string());
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let (out, err) = (dir.join("stdout"), dir.join("stderr"));
    let (o, e) = std::fs::File::create(&out)
        .and_then(|o| Ok((o, std::fs::File::create(&err)?)))
        .map_err(|e| format!("output files in {}: {e}", dir.display()))?;
    let mut cmd = Command::new(&c.program);
    if let Some(a) = account {
        crate::account::hand_over(&dir, &[&out, &err], a)
            .map_err(|e| format!("handing {} to `{}`: {e}", dir.display(), a.name))?;
        cmd.uid(a.uid).gid(a.gid);
    }
    cmd.args(&c.args)
        .envs(&c.env)
        .current_dir(
            c.working_directory
                .as_deref()
                .map_or(dir.clone(), PathBuf::from),
        )
        .stdin(std::process::Stdio::null())
        .stdout(o)
        .stderr(e)
        .process_group(0)
        .kill_on_drop(true);
    let child = cmd
        .spawn()
        .map_err(|e| format!("starting `{}`: {e}", c.program))?;
    // The group's id is its leader's pid (known until the process has been waited for).
    let pid = child.id().and_then(|p| i32::try_from(p).ok());
    let pid = pid.ok_or_else(|| format!("`{}` started without a process id", c.program))?;
    Ok(Process {
        child,
        group: Pid::from_raw(pid),
    })
}

/// What a job runs.
enum Body {
    /// A process leading its own process group.
    Process(Process),
    /// Emulation: nothing runs; the job ends once its clock shows this run time.
    Emulated(Duration),
}

/// A job's process and its process group.
struct Process {
    child: Child,
    group: Pid,
}

impl Process {
    fn signal(&self, sig: Signal) -> nix::Result<()> {
        killpg(self.group, sig)
    }
}

impl Drop for Process {
    /// A job abandoned while its process runs (the agent shutting down) takes its whole group
    /// along, not only the process the agent started (`kill_on_drop`).
    fn drop(&mut self) {
        if self.child.id().is_some() {
            let _ = self.signal(Signal::SIGKILL);
        }
    }
}

/// What ended a job's supervision.
enum End {
    /// The process exited by itself (or the emulated run time elapsed): the final report.
    Exited(v1::JobReport),
    /// It must be killed: the final state and detail.
    Kill(AgentJobState, String),
}

/// One job being run: what its supervision needs besides its body.
struct Job<'a> {
    id: u64,
    started: i64,
    limit: Option<Duration>,
    /// The most resident memory its processes may hold, KiB.
    memory_kb: Option<u64>,
    clock: &'a RunClock,
    out: &'a mpsc::UnboundedSender<v1::JobReport>,
}

impl Job<'_> {
    /// A report on the live job, in `state`.
    fn live(&self, state: AgentJobState, body: &Body) -> v1::JobReport {
        let mut r = report(self.id, state);
        r.start_time = Some(self.started);
        r.ran_ms = Some(self.clock.ran_ms());
        if let Body::Process(p) = body {
            r.pid = p.child.id();
        }
        r
    }

    /// Runs `body` until it ends or is killed, obeying `control`; returns the final report
    /// (without its times).
    async fn supervise(
        &self,
        mut body: Body,
        control: &mut mpsc::UnboundedReceiver<Control>,
        grace: Duration,
    ) -> v1::JobReport {
        self.clock.start();
        let _ = self.out.send(self.live(AgentJobState::Running, &body));
        let mut orders_open = true;
        // A process whose memory is limited is measured every sample.
        let watched = match &body {
            Body::Process(p) => self.memory_kb.map(|kb| (p.group.as_raw(), kb)),
            Body::Emulated(_) => None,
        };
        let mut sample = tokio::time::interval(crate::memory::SAMPLE);
        sample.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let end = loop {
            let limit_at = self.limit.and_then(|l| self.clock.reaches(l));
            tokio::select! {
                biased;
                r = self.finished(&mut body) => break End::Exited(r),
                c = control.recv(), if orders_open => match c {
                    Some(Control::Kill(why)) => break End::Kill(AgentJobState::KilledByOrder, why),
                    Some(Control::Suspend) => self.suspend(&body),
                    Some(Control::Resume) => self.resume(&body),
                    None => {
                        orders_open = false;
                        self.resume(&body);
                    }
                },
                () = sleep_until(limit_at) => {
                    break End::Kill(AgentJobState::KilledTimeLimit, String::new());
                }
                _ = sample.tick(), if watched.is_some() => {
                    let (group, limit) = watched.expect("guarded");
                    if let Some(rss) = crate::memory::group_rss_kb(group)
                        && rss > limit
                    {
                        let why = format!("{rss} KiB resident, over its limit of {limit} KiB");
                        break End::Kill(AgentJobState::KilledMemory, why);
                    }
                }
            }
        };
        match (end, body) {
            (End::Exited(r), _) => r,
            (End::Kill(state, why), body) => {
                let mut r = report(self.id, state);
                r.detail = why;
                if let Body::Process(mut p) = body {
                    let st = self.terminate(&mut p, grace).await;
                    r.exit_code = st.and_then(|s| s.code());
                    r.signal = st.and_then(|s| s.signal());
                }
                r
            }
        }
    }

    /// Resolves when the job ends by itself: its process exits, or its emulated run time has
    /// elapsed on its clock (never while it is suspended).
    async fn finished(&self, body: &mut Body) -> v1::JobReport {
        let mut r = report(self.id, AgentJobState::Exited);
        match body {
            Body::Process(p) => match p.child.wait().await {
                Ok(st) => {
                    r.exit_code = st.code();
                    r.signal = st.signal();
                }
                Err(e) => r.detail = format!("waiting: {e}"),
            },
            Body::Emulated(run) => {
                sleep_until(self.clock.reaches(*run)).await;
                r.exit_code = Some(0);
            }
        }
        r
    }

    fn suspend(&self, body: &Body) {
        if !self.clock.is_running() {
            return;
        }
        if let Body::Process(p) = body
            && let Err(e) = p.signal(Signal::SIGSTOP)
        {
            tracing::warn!(job = self.id, "stopping the job's process group: {e}");
            return;
        }
        self.clock.stop();
        tracing::info!(job = self.id, ran_ms = self.clock.ran_ms(), "job suspended");
        let _ = self.out.send(self.live(AgentJobState::Suspended, body));
    }

    fn resume(&self, body: &Body) {
        if self.clock.is_running() {
            return;
        }
        if let Body::Process(p) = body
            && let Err(e) = p.signal(Signal::SIGCONT)
        {
            tracing::warn!(job = self.id, "continuing the job's process group: {e}");
            return;
        }
        self.clock.start();
        tracing::info!(job = self.id, ran_ms = self.clock.ran_ms(), "job resumed");
        let _ = self.out.send(self.live(AgentJobState::Running, body));
    }

    /// Kills the job's process group: SIGTERM (and SIGCONT if it is stopped), SIGKILL after
    /// `grace`. Returns the exit status of the process the agent started.
    async fn terminate(
        &self,
        p: &mut Process,
        grace: Duration,
    ) -> Option<std::process::ExitStatus> {
        let deadline = tokio::time::Instant::now() + grace;
        let _ = p.signal(Signal::SIGTERM);
        if !self.clock.is_running() {
            let _ = p.signal(Signal::SIGCONT);
            self.clock.start();
        }
        match tokio::time::timeout_at(deadline, p.child.wait()).await {
            Ok(st) => {
                // The leader is gone; the rest of its group, if any, gets the rest of the grace
                // period.
                let group = p.group;
                if killpg(group, None).is_ok() {
                    tokio::spawn(async move {
                        tokio::time::sleep_until(deadline).await;
                        let _ = killpg(group, Signal::SIGKILL);
                    });
                }
                st.ok()
            }
            Err(_) => {
                let _ = p.signal(Signal::SIGKILL);
                p.child.wait().await.ok()
            }
        }
    }
}
