//! How a grid job becomes a Slurm batch job, and how Slurm's record of it becomes the grid job's
//! state: the pure half of a Slurm-backed site (no I/O), following the cooperation with an
//! existing batch system that the two-level design names as its next step (Streit, thesis §4.3).
//!
//! The mapping (`docs/slurm-site.md`):
//! * processors → one task of that many CPUs on one node (`-n 1 -c P`), the grid's rigid job on
//!   one machine;
//! * estimate → the time limit, in Slurm's whole minutes rounded up (the site itself ends a job
//!   at its estimate to the second);
//! * deadline → Slurm's deadline, when it is still ahead at submission (Slurm refuses a past one;
//!   the grid's deadline is a target, not a cut-off, so a late job still runs);
//! * licences → Slurm licences, one copy each;
//! * the meta-scheduler's priority p → `nice` = step × (255 − p); user class → QOS where
//!   configured; the grid user in the comment; the account as configured;
//! * an emulated job → `sleep` of its run time; a command → its program and arguments, quoted,
//!   in its working directory (by default the job's directory), its environment added to a plain
//!   `PATH`; standard output and error in `<work_dir>/<job>/stdout|stderr`, as a site agent
//!   writes them.
//!
//! A job's Slurm name `gridsched.<cluster>.<incarnation>.<job>.<run>` lets a restarted site find
//! the jobs it submitted but had not recorded yet, and the held ones it no longer wants.

use crate::config::SlurmConfig;
use gridsched_core::Time;
use gridsched_proto::v1::{self, JobState};
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::PathBuf;

/// A plain `PATH` for jobs, before their own environment.
pub const JOB_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The Slurm name of run `run` of grid job `job` at the site tagged `tag` (`<cluster>.<incarnation>`).
pub fn job_name(tag: &str, job: u64, run: u32) -> String {
    format!("gridsched.{tag}.{job}.{run}")
}

/// The grid job and run a Slurm job name stands for, if it is one of the site tagged `tag`.
pub fn parse_name(tag: &str, name: &str) -> Option<(u64, u32)> {
    let rest = name.strip_prefix("gridsched.")?.strip_prefix(tag)?;
    let (job, run) = rest.strip_prefix('.')?.split_once('.')?;
    Some((job.parse().ok()?, run.parse().ok()?))
}

/// A batch job to submit: the request body, and the job's directory to create first.
#[derive(Clone, Debug, PartialEq)]
pub struct Submission {
    /// The body of `POST job/submit`.
    pub body: Value,
    /// `<work_dir>/<job>`.
    pub dir: PathBuf,
}

fn quote(s: &str) -> String {
    shlex::try_quote(s).map_or_else(|_| "''".into(), |q| q.into_owned())
}

/// What every job is told of its machines, as a site agent tells it (`GRIDSCHED_NODES`,
/// `GRIDSCHED_HEAD_NODE`, ...): a Slurm job of this site runs on one node, the one Slurm chose.
const NODE_ENV: &str = "GRIDSCHED_HEAD_NODE=\"${SLURMD_NODENAME:-$(hostname)}\" \
GRIDSCHED_NODES=\"$GRIDSCHED_HEAD_NODE\" GRIDSCHED_NODE_RANK=0 GRIDSCHED_NODE_COUNT=1\n\
export GRIDSCHED_HEAD_NODE GRIDSCHED_NODES GRIDSCHED_NODE_RANK GRIDSCHED_NODE_COUNT\n";

/// The batch script of `spec`.
pub fn script(spec: &v1::JobSpec) -> String {
    let mut s = format!("#!/bin/sh\n{NODE_ENV}");
    match (&spec.command, spec.emulate_runtime_s) {
        (_, Some(t)) => s += &format!("exec sleep {}\n", t.max(0)),
        (Some(c), None) => {
            let mut line = vec![quote(&c.program)];
            line.extend(c.args.iter().map(|a| quote(a)));
            s += &format!("exec {}\n", line.join(" "));
        }
        (None, None) => s += "exit 0\n",
    }
    s
}

/// Slurm's time limit in whole minutes for a limit of `secs` seconds (at least one).
pub fn minutes(secs: i64) -> i64 {
    ((secs.max(1) + 59) / 60).max(1)
}

/// Slurm's `nice` for meta-scheduler priority `p`.
pub fn nice(step: u32, p: u32) -> i64 {
    i64::from(step) * (255 - i64::from(p.min(255)))
}

/// The submission of `req` at `now`: held (priority 0) while it waits for its start claim.
pub fn submission(
    cfg: &SlurmConfig,
    tag: &str,
    req: &v1::EnqueueRequest,
    held: bool,
    now: Time,
) -> Submission {
    let spec = req.spec.clone().unwrap_or_default();
    let dir = cfg.work_dir.join(req.job_id.to_string());
    let cwd = spec
        .command
        .as_ref()
        .and_then(|c| c.working_directory.clone())
        .unwrap_or_else(|| dir.display().to_string());
    let mut env = serde_json::Map::new();
    env.insert("PATH".into(), JOB_PATH.into());
    if let Some(c) = &spec.command {
        for (k, v) in &c.env {
            env.insert(k.clone(), v.clone().into());
        }
    }
    env.insert("GRIDSCHED_JOB_ID".into(), req.job_id.to_string().into());
    let mut job = json!({
        "name": job_name(tag, req.job_id, req.run),
        "hold": held,
        "tasks": 1,
        "cpus_per_task": spec.processors.max(1),
        "nodes": [1, 1],
        "time_limit": minutes(spec.estimate_s),
        "current_working_directory": cwd,
        "standard_output": dir.join("stdout").display().to_string(),
        "standard_error": dir.join("stderr").display().to_string(),
        "environment": env,
        "requeue": false,
        "comment": format!("gridsched job {} run {} of {}", req.job_id, req.run, spec.user),
    });
    let o = job.as_object_mut().expect("an object");
    if let Some(d) = spec.deadline.filter(|&d| d > now) {
        o.insert("deadline".into(), format!("now+{}", d - now).into());
    }
    if !spec.licences.is_empty() {
        o.insert("licenses".into(), spec.licences.join(",").into());
    }
    // Slurm counts memory in MiB (`--mem`): a job's KiB rounded up.
    if let Some(kb) = spec.memory_kb {
        o.insert("memory_per_node".into(), kb.div_ceil(1024).into());
    }
    if cfg.nice_per_priority > 0 {
        o.insert(
            "nice".into(),
            nice(cfg.nice_per_priority, req.priority).into(),
        );
    }
    if let Some(p) = &cfg.partition {
        o.insert("partition".into(), p.clone().into());
    }
    if let Some(a) = &cfg.account {
        o.insert("account".into(), a.clone().into());
    }
    let class = match v1::UserClass::try_from(spec.user_class) {
        Ok(v1::UserClass::Gold) => "gold",
        Ok(v1::UserClass::Silver) => "silver",
        _ => "regular",
    };
    if let Some(q) = cfg.qos.get(class) {
        o.insert("qos".into(), q.clone().into());
    }
    Submission {
        body: json!({ "script": script(&spec), "job": job }),
        dir,
    }
}

/// What this site reads of a Slurm job (a subset of slurmrestd's job record).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct SlurmJob {
    /// Slurm's job id.
    pub job_id: u32,
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// Its base state (`PENDING`, `RUNNING`, `COMPLETED`, ...).
    #[serde(default)]
    pub job_state: String,
    /// Why it waits (`Resources`, `Licenses`, `JobHeldUser`, ...).
    #[serde(default)]
    pub state_reason: String,
    /// When it started, or (pending) when Slurm expects it to; 0 = unknown.
    #[serde(default)]
    pub start_time: i64,
    /// When it ended; 0 = not yet.
    #[serde(default)]
    pub end_time: i64,
    /// Its wait status (exit code × 256, or the signal that ended it).
    #[serde(default)]
    pub exit_code: i64,
    /// The node its batch script runs on.
    #[serde(default)]
    pub batch_host: String,
    /// Its priority (0 = held).
    #[serde(default)]
    pub priority: i64,
}

impl SlurmJob {
    /// Held (priority 0) and not released.
    pub fn held(&self) -> bool {
        self.job_state == "PENDING" && self.priority == 0
    }
}

/// A Slurm job's state as the grid sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seen {
    /// Waiting: why, and when Slurm expects to start it.
    Waiting {
        /// Slurm's pending reason.
        reason: String,
        /// Its expected start, when Slurm has computed one.
        expected: Option<Time>,
    },
    /// Running since `start` on `host`.
    Running {
        /// When it started.
        start: Time,
        /// Its (head) node.
        host: String,
    },
    /// Ended.
    Ended(Ending),
}

/// How a Slurm job ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ending {
    /// The grid state.
    pub state: JobState,
    /// When it ended.
    pub time: Time,
    /// When it had started, if it had.
    pub start: Option<Time>,
    /// Its exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it.
    pub signal: Option<i32>,
    /// Why, in words.
    pub detail: String,
}

/// Exit code and signal of wait status `w`.
pub fn wait_status(w: i64) -> (Option<i32>, Option<i32>) {
    let w = w as i32;
    if w & 0x7f == 0 {
        (Some((w >> 8) & 0xff), None)
    } else {
        (None, Some(w & 0x7f))
    }
}

/// What `j`'s state means for the grid.
pub fn seen(j: &SlurmJob) -> Seen {
    let start = (j.start_time > 0).then_some(j.start_time);
    let (exit_code, signal) = wait_status(j.exit_code);
    let end = |state: JobState, detail: String| {
        Seen::Ended(Ending {
            state,
            time: j.end_time.max(j.start_time),
            start,
            exit_code: if state == JobState::Cancelled {
                None
            } else {
                exit_code
            },
            signal,
            detail,
        })
    };
    let id = j.job_id;
    match j.job_state.as_str() {
        "PENDING" | "SUSPENDED" | "REQUEUED" | "REQUEUE_HOLD" | "REQUEUE_FED" => Seen::Waiting {
            reason: match j.job_state.as_str() {
                "PENDING" => j.state_reason.clone(),
                other => format!("{other} ({})", j.state_reason),
            },
            expected: start,
        },
        "RUNNING" | "CONFIGURING" | "COMPLETING" | "RESIZING" | "STAGE_OUT" | "SIGNALING" => {
            Seen::Running {
                start: j.start_time,
                host: j.batch_host.clone(),
            }
        }
        "COMPLETED" => end(JobState::Completed, format!("completed (Slurm job {id})")),
        "CANCELLED" => end(
            JobState::Cancelled,
            format!("cancelled in Slurm (job {id})"),
        ),
        "TIMEOUT" => end(
            JobState::Killed,
            format!("Slurm ended it at its time limit (job {id})"),
        ),
        "NODE_FAIL" => end(JobState::Lost, format!("its Slurm node failed (job {id})")),
        "DEADLINE" => end(
            JobState::Failed,
            format!("Slurm removed it: it could not end before its deadline (job {id})"),
        ),
        other => {
            let why = match (exit_code, signal) {
                (_, Some(s)) => format!("signal {s}"),
                (Some(c), _) => format!("exit code {c}"),
                _ => String::new(),
            };
            end(
                JobState::Failed,
                format!(
                    "{} in Slurm (job {id}{}{}): {}",
                    other.to_lowercase(),
                    if why.is_empty() { "" } else { ", " },
                    why,
                    j.state_reason
                ),
            )
        }
    }
}

/// A node as this site reads it.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct SlurmNode {
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// Its CPUs.
    #[serde(default)]
    pub cpus: u32,
    /// CPUs allocated to jobs.
    #[serde(default)]
    pub alloc_cpus: u32,
    /// Its base state (`idle`, `mixed`, `allocated`, `down`, ...).
    #[serde(default)]
    pub state: String,
    /// Flags such as `DRAIN`.
    #[serde(default)]
    pub state_flags: Vec<String>,
}

impl SlurmNode {
    /// It can take jobs.
    pub fn usable(&self) -> bool {
        matches!(
            self.state.to_lowercase().as_str(),
            "idle" | "mixed" | "allocated"
        ) && !self.state_flags.iter().any(|f| {
            matches!(
                f.as_str(),
                "DRAIN" | "DRAINING" | "DRAINED" | "NOT_RESPONDING"
            )
        })
    }
}

/// A licence pool as this site reads it.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct SlurmLicence {
    /// Its name.
    #[serde(rename = "LicenseName", default)]
    pub name: String,
    /// Copies.
    #[serde(rename = "Total", default)]
    pub total: u32,
    /// Copies in use.
    #[serde(rename = "Used", default)]
    pub used: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> SlurmConfig {
        toml::from_str("rest_url = \"http://127.0.0.1:6820\"\nwork_dir = \"/w\"\n").unwrap()
    }

    fn req(spec: v1::JobSpec) -> v1::EnqueueRequest {
        v1::EnqueueRequest {
            job_id: 42,
            spec: Some(spec),
            priority: 7,
            run: 1,
            ..Default::default()
        }
    }

    #[test]
    fn names_round_trip_and_other_clusters_are_not_ours() {
        let n = job_name("c1", 42, 3);
        assert_eq!(n, "gridsched.c1.42.3");
        assert_eq!(parse_name("c1", &n), Some((42, 3)));
        assert_eq!(parse_name("c", &n), None);
        assert_eq!(parse_name("c1", "gridsched.c1.x.3"), None);
        assert_eq!(parse_name("c1", "other"), None);
    }

    /// A command job with every mapped field, worked by hand.
    #[test]
    fn a_command_job_maps_field_by_field() {
        let mut c = cfg();
        c.partition = Some("main".into());
        c.qos.insert("gold".into(), "high".into());
        let spec = v1::JobSpec {
            user: "alice".into(),
            user_class: v1::UserClass::Gold as i32,
            processors: 4,
            estimate_s: 61,
            deadline: Some(1_000_500),
            licences: vec!["matlab".into(), "fluent".into()],
            memory_kb: Some(1_048_577),
            command: Some(v1::Command {
                program: "/bin/echo".into(),
                args: vec!["it's".into(), "a b".into()],
                env: [("X".to_string(), "1".to_string())].into(),
                working_directory: None,
            }),
            ..Default::default()
        };
        let s = submission(&c, "c1", &req(spec), true, 1_000_000);
        assert_eq!(s.dir, PathBuf::from("/w/42"));
        assert_eq!(
            s.body["script"],
            format!("#!/bin/sh\n{NODE_ENV}exec /bin/echo \"it's\" 'a b'\n")
        );
        let j = &s.body["job"];
        assert_eq!(j["name"], "gridsched.c1.42.1");
        assert_eq!(j["hold"], true);
        assert_eq!(j["tasks"], 1);
        assert_eq!(j["cpus_per_task"], 4);
        assert_eq!(j["nodes"], json!([1, 1]));
        assert_eq!(j["time_limit"], 2, "61 s is two of Slurm's minutes");
        assert_eq!(j["deadline"], "now+500");
        assert_eq!(j["licenses"], "matlab,fluent");
        assert_eq!(j["memory_per_node"], 1025, "1 GiB and 1 KiB is 1025 MiB");
        assert_eq!(j["nice"], 1000 * (255 - 7));
        assert_eq!(j["partition"], "main");
        assert_eq!(j["qos"], "high");
        assert_eq!(j["current_working_directory"], "/w/42");
        assert_eq!(j["standard_output"], "/w/42/stdout");
        assert_eq!(j["environment"]["X"], "1");
        assert_eq!(j["environment"]["PATH"], JOB_PATH);
        assert!(j.get("account").is_none());
    }

    /// An emulated job sleeps; a deadline already passed is not handed on.
    #[test]
    fn an_emulated_job_sleeps_and_a_past_deadline_is_dropped() {
        let spec = v1::JobSpec {
            user: "bob".into(),
            processors: 1,
            estimate_s: 30,
            deadline: Some(10),
            emulate_runtime_s: Some(5),
            ..Default::default()
        };
        let s = submission(&cfg(), "c1", &req(spec), false, 100);
        assert_eq!(
            s.body["script"],
            format!("#!/bin/sh\n{NODE_ENV}exec sleep 5\n")
        );
        assert_eq!(s.body["job"]["hold"], false);
        assert_eq!(s.body["job"]["time_limit"], 1);
        assert!(s.body["job"].get("deadline").is_none());
        assert!(s.body["job"].get("qos").is_none());
    }

    fn job(state: &str, exit: i64) -> SlurmJob {
        SlurmJob {
            job_id: 9,
            job_state: state.into(),
            state_reason: "None".into(),
            start_time: 100,
            end_time: 160,
            exit_code: exit,
            batch_host: "n1".into(),
            priority: 1,
            ..Default::default()
        }
    }

    /// Slurm's wait statuses as read off a real cluster: `exit 3` is 768, `kill -9` is 9,
    /// scancel's SIGTERM 15.
    #[test]
    fn states_and_wait_statuses_decode() {
        let ended = |s: Seen| match s {
            Seen::Ended(e) => e,
            other => panic!("not ended: {other:?}"),
        };
        let e = ended(seen(&job("FAILED", 768)));
        assert_eq!(
            (e.state, e.exit_code, e.signal),
            (JobState::Failed, Some(3), None)
        );
        assert_eq!((e.start, e.time), (Some(100), 160));
        let e = ended(seen(&job("FAILED", 9)));
        assert_eq!((e.exit_code, e.signal), (None, Some(9)));
        let e = ended(seen(&job("COMPLETED", 0)));
        assert_eq!((e.state, e.exit_code), (JobState::Completed, Some(0)));
        assert_eq!(
            ended(seen(&job("CANCELLED", 15))).state,
            JobState::Cancelled
        );
        assert_eq!(ended(seen(&job("TIMEOUT", 0))).state, JobState::Killed);
        assert_eq!(ended(seen(&job("NODE_FAIL", 0))).state, JobState::Lost);
        assert_eq!(
            ended(seen(&job("OUT_OF_MEMORY", 0))).state,
            JobState::Failed
        );
        assert_eq!(
            seen(&job("RUNNING", 0)),
            Seen::Running {
                start: 100,
                host: "n1".into()
            }
        );
        let mut p = job("PENDING", 0);
        p.state_reason = "Licenses".into();
        p.start_time = 0;
        assert_eq!(
            seen(&p),
            Seen::Waiting {
                reason: "Licenses".into(),
                expected: None
            }
        );
        p.priority = 0;
        assert!(p.held());
    }
}
