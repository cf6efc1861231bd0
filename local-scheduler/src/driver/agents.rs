//! The agents' side of the local-scheduler driver: registration (with the jobs a returning agent
//! still runs), the order streams, heartbeats and their job reports, and the loss of an agent (its
//! jobs LOST or requeued, per `lost_agent`) found by the periodic tick, which also hands the runner
//! its overrun checks and due wake-ups.

use super::{Agent, Driver, JobRec, Now, Order};
use crate::config::LostAgent;
use gridsched_core::Time;
use gridsched_core::model::{JobId, MachineId};
use gridsched_core::runner::{Input, Launch};
use gridsched_proto::v1::{self, AgentJobState, JobState, agent_command::Kind};
use tokio::sync::mpsc;
use tonic::Status;

impl Driver {
    pub(super) fn agent_of(&mut self, id: &str) -> Result<MachineId, Status> {
        self.agents
            .iter()
            .position(|a| a.as_ref().is_some_and(|a| !a.placeholder && a.id == id))
            .map(|i| MachineId(i as u32))
            .ok_or_else(|| Status::not_found(format!("agent_id: unknown agent session `{id}`")))
    }

    pub(super) fn register(
        &mut self,
        r: v1::RegisterAgentRequest,
        now: Now,
    ) -> Result<v1::RegisterAgentResponse, Status> {
        if r.machine.is_empty() {
            return Err(Status::invalid_argument("machine: must not be empty"));
        }
        if r.processors == 0 {
            return Err(Status::invalid_argument("processors: must be at least 1"));
        }
        let m = self.names.machine_id(&r.machine).ok_or_else(|| {
            Status::not_found(format!("machine: unknown machine `{}`", r.machine))
        })?;
        let conf = self.platform.machine(m).expect("named machines exist");
        if r.processors > conf.procs {
            return Err(Status::failed_precondition(format!(
                "processors: {} exceed the configured {}",
                r.processors, conf.procs
            )));
        }
        if let (Some(has), Some(configured)) = (r.memory_kb, conf.memory_kb)
            && has < configured
        {
            tracing::warn!(
                "{}: the agent's machine has {has} KiB of memory, less than the configured \
                 {configured} KiB (the configuration is used)",
                r.machine
            );
        }
        if r.benchmark != 0 && r.benchmark != conf.benchmark {
            tracing::warn!(
                "{}: agent benchmark {} differs from the configured {}",
                r.machine,
                r.benchmark,
                conf.benchmark
            );
        }
        let mono = now.mono_ms;
        let now = now.secs;
        let id = uuid::Uuid::new_v4().to_string();
        self.agents[m.index()] = Some(Agent {
            id: id.clone(),
            last_seen: mono,
            orders: None,
            placeholder: false,
            account: r.account.clone(),
            separates_users: r.separates_users,
        });
        // Jobs this machine should run that the (new) agent does not report are gone, unless their
        // start order was never delivered.
        let pending: Vec<u64> = self.pending[m.index()]
            .iter()
            .filter_map(|c| match &c.kind {
                Some(Kind::Start(s)) => Some(s.job_id),
                _ => None,
            })
            .collect();
        let gone: Vec<u64> = self
            .jobs
            .iter()
            .filter(|(id, rec)| {
                rec.state == JobState::Running
                    && rec.runs_on(m)
                    && !pending.contains(id)
                    && rec.after_kill.is_none()
                    && !r.jobs.iter().any(|j| j.job_id == **id)
            })
            .map(|(id, _)| *id)
            .collect();
        self.lose_on(now, m, &gone, "its agent restarted without it");
        // Processes killed here that the (new) agent does not report have ended.
        let unreported = |d: &Driver, here: fn(&JobRec, MachineId) -> bool| -> Vec<u64> {
            (d.jobs.iter())
                .filter(|(id, rec)| here(rec, m) && !r.jobs.iter().any(|j| j.job_id == **id))
                .map(|(id, _)| *id)
                .collect()
        };
        for id in unreported(self, |rec, m| rec.killed_on == Some(m)) {
            self.killed_ended(now, id);
        }
        // Suspended jobs whose stopped process the agent no longer has lose their progress.
        let stopped = unreported(self, |rec, m| rec.suspended_on == Some(m));
        self.forget_stopped(now, &stopped);
        self.note(
            now,
            Input::Machine {
                machine: m,
                up: true,
            },
        );
        let acknowledged_jobs = self.reports(now, m, &r.jobs);
        self.pass(now);
        Ok(v1::RegisterAgentResponse {
            agent_id: id,
            heartbeat_interval_ms: self.cfg.heartbeat_interval_ms,
            lost_after_ms: self.cfg.lost_after_ms,
            cluster: self.cfg.cluster.clone(),
            acknowledged_jobs,
        })
    }

    pub(super) fn open_orders(
        &mut self,
        id: &str,
    ) -> Result<mpsc::UnboundedReceiver<v1::AgentCommand>, Status> {
        let m = self.agent_of(id)?;
        let (tx, rx) = mpsc::unbounded_channel();
        for c in std::mem::take(&mut self.pending[m.index()]) {
            let _ = tx.send(c);
        }
        if let Some(a) = &mut self.agents[m.index()] {
            a.orders = Some(tx);
        }
        Ok(rx)
    }

    pub(super) fn heartbeat(
        &mut self,
        r: v1::HeartbeatRequest,
        now: Now,
    ) -> Result<v1::HeartbeatResponse, Status> {
        let m = self.agent_of(&r.agent_id)?;
        if let Some(a) = &mut self.agents[m.index()] {
            a.last_seen = now.mono_ms;
        }
        let now = now.secs;
        if let Some((mm, _)) = &self.metrics {
            let machine = self.names.machine_name(m).unwrap_or("?").to_owned();
            mm.heartbeats
                .get_or_create(&crate::metrics::MachineLabel { machine })
                .inc();
        }
        let acked = self.reports(now, m, &r.jobs);
        self.pass(now);
        Ok(v1::HeartbeatResponse {
            commands: std::mem::take(&mut self.pending[m.index()]),
            acknowledged_jobs: acked,
            heartbeat_interval_ms: 0,
        })
    }

    /// Applies an agent's job reports; returns the ended jobs now recorded.
    pub(super) fn reports(
        &mut self,
        now: Time,
        m: MachineId,
        reports: &[v1::JobReport],
    ) -> Vec<u64> {
        let mut acked = Vec::new();
        for rep in reports {
            let id = rep.job_id;
            let st = AgentJobState::try_from(rep.state).unwrap_or(AgentJobState::Unspecified);
            let ours = self
                .jobs
                .get(&id)
                .is_some_and(|r| r.state == JobState::Running && r.runs_on(m));
            let multi = ours && self.jobs.get(&id).is_some_and(|r| !r.parts.is_empty());
            if multi {
                // One part of a multi-node job (never suspended: partitions' policies do not).
                match st {
                    AgentJobState::Running => self.part_running(now, id, m),
                    AgentJobState::Suspended => {}
                    _ => {
                        acked.push(id);
                        let cancel = self.jobs.get(&id).is_some_and(|r| r.cancel_requested);
                        let end = Self::outcome(st, rep, cancel);
                        self.part_ended(now, id, m, end, Some(rep), false);
                    }
                }
                continue;
            }
            if self.jobs.get(&id).is_some_and(|r| r.killed_on == Some(m)) {
                // A process killed here that is not the job's current run: still there (its kill
                // on its way, or lost: ordered again), or ended.
                if st == AgentJobState::Running || st == AgentJobState::Suspended {
                    self.kill_stray(m, id, "not the job's current run");
                } else {
                    acked.push(id);
                    self.killed_ended(now, id);
                }
                continue;
            }
            let stopped_here = self
                .jobs
                .get(&id)
                .is_some_and(|r| r.suspended_on == Some(m));
            if st == AgentJobState::Suspended || (st == AgentJobState::Running && stopped_here) {
                // Stopped on our order and waiting to resume, or not yet stopped (the order is on
                // its way), or stopped before a resume order arrived; a stopped process nobody
                // waits for is killed.
                if !ours && !stopped_here {
                    self.kill_stray(m, id, "not scheduled here");
                }
                continue;
            }
            if stopped_here && st != AgentJobState::Running {
                // The stopped process ended (killed, or it was already exiting): the job stays
                // queued and will start again from scratch.
                acked.push(id);
                self.forget_stopped(now, &[id]);
                continue;
            }
            if st == AgentJobState::Running {
                if !ours {
                    self.kill_stray(m, id, "not scheduled here");
                } else if let Some(rec) = self.jobs.get_mut(&id)
                    && !rec.reported_running
                {
                    rec.reported_running = true;
                    let detail = Self::started_detail(rec.launch, self.names.machine_name(m));
                    self.emit(id, JobState::Running, now, &detail, Some(rep));
                }
                continue;
            }
            acked.push(id);
            if !ours {
                continue;
            }
            let cancel = self.jobs.get(&id).is_some_and(|r| r.cancel_requested);
            let (state, detail) = Self::outcome(st, rep, cancel);
            if !rep.detail.is_empty() {
                tracing::debug!("job {id}: {}", rep.detail);
            }
            let (_, res) = self.feed(now, Input::Ended { job: JobId(id) });
            if let Err(e) = res {
                tracing::warn!("job {id}: {e}");
            }
            // A process so short that its RUNNING report was coalesced away still shows RUNNING.
            if let Some(rec) = self.jobs.get_mut(&id)
                && !rec.reported_running
            {
                rec.reported_running = true;
                let detail = Self::started_detail(rec.launch, self.names.machine_name(m));
                self.emit(id, JobState::Running, now, &detail, None);
            }
            self.emit(id, state, now, &detail, Some(rep));
        }
        acked
    }

    /// The state and detail of a job (or part) whose agent reports it ended as `st` (`cancel`: the
    /// user asked for it to end).
    pub(super) fn outcome(
        st: AgentJobState,
        rep: &v1::JobReport,
        cancel: bool,
    ) -> (JobState, String) {
        match st {
            AgentJobState::Exited if rep.exit_code == Some(0) => {
                (JobState::Completed, "exited with code 0".to_string())
            }
            AgentJobState::Exited => (
                JobState::Failed,
                match (rep.exit_code, rep.signal) {
                    (Some(c), _) => format!("exited with code {c}"),
                    (None, Some(s)) => format!("ended by signal {s}"),
                    _ => "ended".into(),
                },
            ),
            AgentJobState::StartFailed => {
                (JobState::Failed, format!("could not start: {}", rep.detail))
            }
            AgentJobState::KilledTimeLimit => {
                (JobState::Killed, "exceeded its wall-time limit".into())
            }
            AgentJobState::KilledMemory => (
                JobState::Killed,
                format!("exceeded its memory: {}", rep.detail),
            ),
            AgentJobState::KilledByOrder if cancel => (JobState::Cancelled, "cancelled".into()),
            AgentJobState::KilledByOrder => (JobState::Failed, "killed".into()),
            _ => (
                JobState::Lost,
                format!("unknown to its agent: {}", rep.detail),
            ),
        }
    }

    /// Handles running jobs whose process is gone: LOST or requeued.
    pub(super) fn lose(&mut self, now: Time, ids: &[u64], why: &str) {
        for &id in ids {
            match self.cfg.lost_agent {
                LostAgent::Fail => {
                    self.note(now, Input::Ended { job: JobId(id) });
                    self.emit(id, JobState::Lost, now, why, None);
                }
                LostAgent::Requeue => {
                    let Some(rec) = self.jobs.get_mut(&id) else {
                        continue;
                    };
                    rec.machine = None;
                    rec.start = None;
                    rec.reported_running = false;
                    match self.feed(now, Input::Requeue { job: JobId(id) }).1 {
                        Ok(()) => {
                            self.emit(id, JobState::Queued, now, &format!("requeued: {why}"), None)
                        }
                        Err(e) => self.emit(
                            id,
                            JobState::Lost,
                            now,
                            &format!("{why}; cannot requeue: {e}"),
                            None,
                        ),
                    }
                }
            }
        }
    }

    /// Suspended jobs whose stopped process is gone: they keep waiting, from scratch (QUEUED
    /// again: the meta-scheduler counts the restart).
    pub(super) fn forget_stopped(&mut self, now: Time, ids: &[u64]) {
        for &id in ids {
            let Some(rec) = self.jobs.get_mut(&id) else {
                continue;
            };
            if rec.suspended_on.take().is_none() {
                continue;
            }
            rec.machine = None;
            rec.start = None;
            rec.reported_running = false;
            match self.feed(now, Input::Requeue { job: JobId(id) }).1 {
                Ok(()) => self.emit(
                    id,
                    JobState::Queued,
                    now,
                    "requeued: its stopped process is gone; it starts again from scratch",
                    None,
                ),
                Err(e) => tracing::warn!("job {id}: {e}"),
            }
        }
    }

    /// Orders killed the process of job `id` on `m` that is not the job's current run there (an
    /// earlier run's, stopped or still going). Until its end is reported, its reports are that
    /// process's and a start of the job on `m` waits ([`Driver::killed_ended`]): the agent holds
    /// one run of a job at a time.
    pub(super) fn kill_stray(&mut self, m: MachineId, id: u64, reason: &str) {
        self.order(
            m,
            Kind::Kill(v1::KillJob {
                job_id: id,
                reason: reason.into(),
            }),
        );
        if let Some(rec) = self.jobs.get_mut(&id)
            && rec.killed_on.is_none()
        {
            rec.killed_on = Some(m);
        }
    }

    /// The process of job `id` killed on its `killed_on` machine has ended: a start order of a
    /// later run there, kept back until now, leaves with the next flush (an agent holds one run of
    /// a job at a time), unless its cancellation was asked meanwhile: then it ends CANCELLED.
    pub(super) fn killed_ended(&mut self, now: Time, id: u64) {
        let Some(rec) = self.jobs.get_mut(&id) else {
            return;
        };
        let Some(m) = rec.killed_on.take() else {
            return;
        };
        let Some(order) = rec.after_kill.take() else {
            return;
        };
        if !(rec.state == JobState::Running && rec.runs_on(m)) {
            return;
        }
        if rec.cancel_requested {
            let (_, res) = self.feed(now, Input::Ended { job: JobId(id) });
            if let Err(e) = res {
                tracing::warn!("job {id}: {e}");
            }
            let detail = "cancelled before its process started";
            self.emit(id, JobState::Cancelled, now, detail, None);
            return;
        }
        self.starts.push((m, Order::Start(order)));
    }

    /// The detail of a RUNNING event.
    pub(super) fn started_detail(launch: Launch, machine: Option<&str>) -> String {
        let m = machine.unwrap_or("?");
        match launch {
            Launch::First => format!("started on {m}"),
            Launch::Resume => format!("resumed on {m} with its progress"),
            Launch::Migrate | Launch::Restart => format!("restarted from scratch on {m}"),
        }
    }

    /// The periodic tick: lost agents, then the runner's overrun check when a running job is
    /// due, then a pass when the policy's wake-up is due or something changed; always a commit.
    pub(crate) fn tick(&mut self, now: Now) {
        self.refresh_metrics();
        // Memory follows the live work: the room a burst of jobs left goes back.
        self.runner.compact();
        gridsched_core::structures::Shrink::shrink_if_sparse(&mut self.jobs);
        self.expire_reservations(now.secs);
        self.lapse_leases(now);
        let mono = now.mono_ms;
        let now = now.secs;
        let lost_after = u64::from(self.cfg.lost_after_ms);
        let mut changed = false;
        for i in 0..self.agents.len() {
            let expired = self.agents[i]
                .as_ref()
                .is_some_and(|a| mono.saturating_sub(a.last_seen) > lost_after);
            if !expired {
                continue;
            }
            changed = true;
            let m = MachineId(i as u32);
            tracing::warn!(
                "agent of {} lost",
                self.names.machine_name(m).unwrap_or("?")
            );
            self.agents[i] = None;
            self.pending[i].clear();
            self.note(
                now,
                Input::Machine {
                    machine: m,
                    up: false,
                },
            );
            let ids: Vec<u64> = self
                .jobs
                .iter()
                .filter(|(_, r)| r.state == JobState::Running && r.runs_on(m))
                .map(|(id, _)| *id)
                .collect();
            self.lose_on(now, m, &ids, "its agent stopped sending heartbeats");
            let stopped: Vec<u64> = self
                .jobs
                .iter()
                .filter(|(_, r)| r.suspended_on == Some(m))
                .map(|(id, _)| *id)
                .collect();
            self.forget_stopped(now, &stopped);
            let held: Vec<u64> = self
                .jobs
                .iter()
                .filter(|(_, r)| {
                    r.held
                        .as_ref()
                        .is_some_and(|h| h.orders.iter().any(|(n, _)| *n == m))
                })
                .map(|(id, _)| *id)
                .collect();
            for id in held {
                self.unhold(now, id);
            }
        }
        if self.runner.next_overrun().is_some_and(|t| t <= now) {
            self.note(now, Input::Tick);
            changed = true;
        }
        if changed || self.runner.next_wakeup().is_some_and(|w| w <= now) {
            self.pass(now);
        } else if let Err(e) = self.flush() {
            tracing::error!("{e}");
        }
    }
}
