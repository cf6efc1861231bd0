//! Runs one job on the agent's machine (issue 5, part 3): a real OS process (program, arguments,
//! environment plus `GRIDSCHED_JOB_ID`, `GRIDSCHED_USER` and `GRIDSCHED_PROCESSORS`, working
//! directory; stdout and stderr to `<dir>/<job>/stdout|stderr`) or, in
//! emulation mode, a sleep of the job's run time × the time scale. The wall-time limit (the
//! estimate on this machine, × the time scale) is enforced with SIGTERM, then SIGKILL after the
//! grace period; a kill order does the same.

use gridsched_proto::v1::{self, AgentJobState, start_job::Execution};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::time::Duration;
use tokio::process::Command;
use tokio::sync::{mpsc, oneshot};

/// How jobs run on this agent.
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// Directory holding one sub-directory per job.
    pub work_dir: PathBuf,
    /// Factor applied to emulated run times and wall-time limits.
    pub time_scale: f64,
    /// Time between SIGTERM and SIGKILL.
    pub grace: Duration,
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

/// Runs `start`, sending its RUNNING report then its final report to `out`. `kill` ends it early.
pub async fn run_job(
    cfg: RunnerConfig,
    start: v1::StartJob,
    kill: oneshot::Receiver<String>,
    out: mpsc::UnboundedSender<v1::JobReport>,
) {
    let id = start.job_id;
    let limit = start.wall_time_limit_s.map(|l| scaled(l, cfg.time_scale));
    let limit_sleep = async {
        match limit {
            Some(l) => tokio::time::sleep(l).await,
            None => std::future::pending().await,
        }
    };
    let started = now_s();
    let mut fin = match start.execution {
        Some(Execution::Command(mut c)) => {
            // The job's environment: the grid's variables, then the job's own (which win).
            let job_env = [
                ("GRIDSCHED_JOB_ID", id.to_string()),
                ("GRIDSCHED_USER", start.user.clone()),
                ("GRIDSCHED_PROCESSORS", start.processors.to_string()),
            ];
            for (k, v) in job_env {
                c.env.entry(k.to_owned()).or_insert(v);
            }
            run_process(&cfg, id, c, limit_sleep, kill, &out).await
        }
        Some(Execution::EmulateRuntimeS(rt)) => {
            let mut r = report(id, AgentJobState::Running);
            r.start_time = Some(started);
            let _ = out.send(r);
            tokio::select! {
                _ = tokio::time::sleep(scaled(rt, cfg.time_scale)) => {
                    let mut r = report(id, AgentJobState::Exited);
                    r.exit_code = Some(0);
                    r
                }
                _ = limit_sleep => report(id, AgentJobState::KilledTimeLimit),
                why = kill => {
                    let mut r = report(id, AgentJobState::KilledByOrder);
                    r.detail = why.unwrap_or_default();
                    r
                }
            }
        }
        None => {
            let mut r = report(id, AgentJobState::StartFailed);
            r.detail = "start order without execution".into();
            r
        }
    };
    fin.start_time = Some(started);
    fin.end_time = Some(now_s());
    let _ = out.send(fin);
}

async fn run_process(
    cfg: &RunnerConfig,
    id: u64,
    c: v1::Command,
    limit: impl std::future::Future<Output = ()>,
    kill: oneshot::Receiver<String>,
    out: &mpsc::UnboundedSender<v1::JobReport>,
) -> v1::JobReport {
    let failed = |detail: String| {
        let mut r = report(id, AgentJobState::StartFailed);
        r.detail = detail;
        r
    };
    let dir = cfg.work_dir.join(id.to_string());
    if let Err(e) = std::fs::create_dir_all(&dir) {
        return failed(format!("creating {}: {e}", dir.display()));
    }
    let files = std::fs::File::create(dir.join("stdout"))
        .and_then(|o| Ok((o, std::fs::File::create(dir.join("stderr"))?)));
    let (o, e) = match files {
        Ok(f) => f,
        Err(e) => return failed(format!("output files in {}: {e}", dir.display())),
    };
    let mut cmd = Command::new(&c.program);
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
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(ch) => ch,
        Err(e) => return failed(format!("starting `{}`: {e}", c.program)),
    };
    let pid = child.id();
    let mut r = report(id, AgentJobState::Running);
    r.pid = pid;
    r.start_time = Some(now_s());
    let _ = out.send(r);
    let (state, why) = tokio::select! {
        st = child.wait() => {
            let mut r = report(id, AgentJobState::Exited);
            match st {
                Ok(st) => {
                    r.exit_code = st.code();
                    r.signal = st.signal();
                }
                Err(e) => r.detail = format!("waiting: {e}"),
            }
            return r;
        }
        _ = limit => (AgentJobState::KilledTimeLimit, String::new()),
        why = kill => (AgentJobState::KilledByOrder, why.unwrap_or_default()),
    };
    if let Some(pid) = pid {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    let st = match tokio::time::timeout(cfg.grace, child.wait()).await {
        Ok(st) => st.ok(),
        Err(_) => {
            let _ = child.kill().await;
            child.wait().await.ok()
        }
    };
    let mut r = report(id, state);
    r.detail = why;
    r.exit_code = st.and_then(|s| s.code());
    r.signal = st.and_then(|s| s.signal());
    r
}
