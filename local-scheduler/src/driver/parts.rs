//! Multi-node jobs of a partition of alike nodes, live: the policy sees the partition as one pool
//! of processors, the runner maps each start onto nodes ([`gridsched_core::runner::NodePool`]),
//! and the driver sends one part to each node's agent, each knowing the whole node list, its rank
//! and the head node (the multi-node jobs of a site of the two-level design, spec
//! `two-level-grid-scheduler.md` D4.2.5; the way batch systems hand a parallel job its hosts).
//!
//! The job is RUNNING once every part runs and ends once every part has ended; until then it
//! holds all its nodes. A part that fails, is killed or whose node is lost ends the others
//! (`part_failure = "kill-others"`, the default) or lets them run to their own end
//! (`"let-run"`). The job's outcome is that of the first part to end badly ("part 1 of 3 on n2:
//! exited with code 3"), or COMPLETED when all exited with code 0; a lost node makes it LOST or
//! requeues it, as `lost_agent` says. Cancel reaches every part. A part's end is stored with the
//! job, so a restart of the local scheduler keeps it.

use super::{Driver, JobRec};
use crate::config::PartFailure;
use crate::store::StoredPart;
use gridsched_core::Time;
use gridsched_core::model::{JobId, MachineId};
use gridsched_core::runner::{Input, Started};
use gridsched_proto::NameTable;
use gridsched_proto::v1::{self, JobState, agent_command::Kind};

/// One node's part of a running multi-node job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Part {
    /// Its node.
    pub node: MachineId,
    /// Processors it takes there.
    pub procs: u32,
    /// Its agent reported its process running.
    pub running: bool,
    /// How it ended, once it has.
    pub end: Option<PartEnd>,
}

/// How a part ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct PartEnd {
    pub state: JobState,
    pub detail: String,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// 1 for the job's first part to end, then 2, ...
    pub order: u32,
    /// Its node was lost, not its process.
    pub lost: bool,
}

impl Part {
    pub(super) fn stored(&self) -> StoredPart {
        let end = self.end.as_ref();
        StoredPart {
            node: self.node.0,
            procs: self.procs,
            ended: end.map_or(0, |e| e.state as i32),
            detail: end.map(|e| e.detail.clone()).unwrap_or_default(),
            exit_code: end.and_then(|e| e.exit_code),
            order: end.map_or(0, |e| e.order),
            lost: end.is_some_and(|e| e.lost),
        }
    }

    pub(super) fn restored(p: &StoredPart) -> Part {
        let end = (p.ended != 0).then(|| PartEnd {
            state: JobState::try_from(p.ended).unwrap_or(JobState::Lost),
            detail: p.detail.clone(),
            exit_code: p.exit_code,
            signal: None,
            order: p.order,
            lost: p.lost,
        });
        Part {
            node: MachineId(p.node),
            procs: p.procs,
            running: true,
            end,
        }
    }
}

/// "n1, n2, n3": the nodes of a multi-node job in rank order.
fn node_list(names: &NameTable, parts: &[Part]) -> String {
    let names: Vec<&str> = parts
        .iter()
        .map(|p| names.machine_name(p.node).unwrap_or("?"))
        .collect();
    names.join(", ")
}

impl JobRec {
    /// Whether the job (one of its parts) runs, or is to run, on `m`.
    pub(super) fn runs_on(&self, m: MachineId) -> bool {
        match self.parts.is_empty() {
            true => self.machine == Some(m),
            false => self.parts.iter().any(|p| p.node == m),
        }
    }
}

impl Driver {
    /// The start orders of a start the runner decided: one per node of a multi-node job (each
    /// with the node list and its rank), else `order` for its one machine.
    pub(super) fn part_orders(
        &self,
        s: &Started,
        order: v1::StartJob,
    ) -> Vec<(MachineId, v1::StartJob)> {
        let parts = match self.runner.nodes_of(s.job) {
            Some(parts) if parts.len() > 1 => parts,
            _ => return vec![(s.machine, order)],
        };
        let names: Vec<String> = parts
            .iter()
            .map(|p| self.names.machine_name(p.node).unwrap_or("?").to_string())
            .collect();
        parts
            .iter()
            .enumerate()
            .map(|(rank, p)| {
                let mut o = order.clone();
                o.processors = p.procs;
                // Each part is held to its processors' share of the job's memory, the share the
                // runner's ledger holds on its node.
                o.memory_kb = order.memory_kb.map(|kb| {
                    (u128::from(kb) * u128::from(p.procs) / u128::from(s.procs.max(1))) as u64
                });
                o.nodes = names.clone();
                o.node_rank = rank as u32;
                (p.node, o)
            })
            .collect()
    }

    /// The agent of `m` reports its part of multi-node job `id` running: the job is RUNNING once
    /// every part is. A part given up (its node was lost meanwhile) is killed.
    pub(super) fn part_running(&mut self, now: Time, id: u64, m: MachineId) {
        let Some(rec) = self.jobs.get_mut(&id) else {
            return;
        };
        let Some(part) = rec.parts.iter_mut().find(|p| p.node == m) else {
            return;
        };
        if part.end.is_some() {
            self.order(
                m,
                Kind::Kill(v1::KillJob {
                    job_id: id,
                    reason: "its part was given up".into(),
                }),
            );
            return;
        }
        part.running = true;
        if rec.reported_running || rec.parts.iter().any(|p| !p.running) {
            return;
        }
        rec.reported_running = true;
        let detail = Self::started_detail(rec.launch, Some(&node_list(&self.names, &rec.parts)));
        self.emit(id, JobState::Running, now, &detail, None);
    }

    /// The part of job `id` on `m` has ended with `state` (its report `rep`, or none when its
    /// node was `lost`): the others are killed when it ended badly and `part_failure` says so,
    /// and the job ends once every part has.
    pub(super) fn part_ended(
        &mut self,
        now: Time,
        id: u64,
        m: MachineId,
        (state, detail): (JobState, String),
        rep: Option<&v1::JobReport>,
        lost: bool,
    ) {
        let kill_others = self.cfg.part_failure == PartFailure::KillOthers;
        let Some(rec) = self.jobs.get_mut(&id) else {
            return;
        };
        let order = 1 + rec.parts.iter().filter(|p| p.end.is_some()).count() as u32;
        let Some(rank) = rec
            .parts
            .iter()
            .position(|p| p.node == m && p.end.is_none())
        else {
            return;
        };
        rec.parts[rank].end = Some(PartEnd {
            state,
            detail,
            exit_code: rep.and_then(|r| r.exit_code),
            signal: rep.and_then(|r| r.signal),
            order,
            lost,
        });
        self.journal.save(id, Some(Self::stored(rec)));
        if state != JobState::Completed && kill_others && !rec.cancel_requested {
            let node = self.names.machine_name(m).unwrap_or("?");
            let reason = format!("part {rank} on {node} ended: {state:?}").to_lowercase();
            self.kill_parts(id, &reason);
        }
        self.finish_parts(now, id);
    }

    /// Orders every part of job `id` that has not ended to be killed.
    pub(super) fn kill_parts(&mut self, id: u64, reason: &str) {
        let Some(rec) = self.jobs.get(&id) else {
            return;
        };
        let nodes: Vec<MachineId> = rec
            .parts
            .iter()
            .filter(|p| p.end.is_none())
            .map(|p| p.node)
            .collect();
        for m in nodes {
            self.order(
                m,
                Kind::Kill(v1::KillJob {
                    job_id: id,
                    reason: reason.to_string(),
                }),
            );
        }
    }

    /// Ends multi-node job `id` once every part has ended: LOST or requeued when a node was lost,
    /// else the outcome of its first part to end badly, else COMPLETED.
    fn finish_parts(&mut self, now: Time, id: u64) {
        let Some(rec) = self.jobs.get_mut(&id) else {
            return;
        };
        if rec.parts.iter().any(|p| p.end.is_none()) {
            return;
        }
        let parts = std::mem::take(&mut rec.parts);
        let n = parts.len();
        let first_bad = parts
            .iter()
            .enumerate()
            .filter_map(|(rank, p)| p.end.as_ref().map(|e| (rank, p.node, e)))
            .filter(|(_, _, e)| e.state != JobState::Completed)
            .min_by_key(|(_, _, e)| e.order);
        let name = |m: MachineId| self.names.machine_name(m).unwrap_or("?").to_string();
        if let Some((rank, node, e)) = first_bad
            && e.lost
        {
            let why = format!("part {rank} of {n} on {}: {}", name(node), e.detail);
            self.lose(now, &[id], &why);
            return;
        }
        let (state, detail, rep) = match first_bad {
            Some((_, _, e)) if e.state == JobState::Cancelled => {
                (e.state, e.detail.clone(), v1::JobReport::default())
            }
            Some((rank, node, e)) => (
                e.state,
                format!("part {rank} of {n} on {}: {}", name(node), e.detail),
                v1::JobReport {
                    exit_code: e.exit_code,
                    signal: e.signal,
                    ..Default::default()
                },
            ),
            None => (
                JobState::Completed,
                format!("all {n} parts exited with code 0"),
                v1::JobReport {
                    exit_code: Some(0),
                    ..Default::default()
                },
            ),
        };
        if let (_, Err(e)) = self.feed(now, Input::Ended { job: JobId(id) }) {
            tracing::warn!("job {id}: {e}");
        }
        if let Some(rec) = self.jobs.get_mut(&id)
            && !rec.reported_running
        {
            // So short that some part's RUNNING report was coalesced away.
            rec.reported_running = true;
            let detail = Self::started_detail(rec.launch, Some(&node_list(&self.names, &parts)));
            self.emit(id, JobState::Running, now, &detail, None);
        }
        self.emit(id, state, now, &detail, Some(&rep));
    }

    /// The node `m` of running jobs `ids` is gone (`why`): a multi-node job loses its part there
    /// (and ends as [`Driver::part_ended`] says), a job on that one machine is lost or requeued.
    pub(super) fn lose_on(&mut self, now: Time, m: MachineId, ids: &[u64], why: &str) {
        for &id in ids {
            let multi = self.jobs.get(&id).is_some_and(|r| !r.parts.is_empty());
            match multi {
                true => {
                    let end = (JobState::Lost, why.to_string());
                    self.part_ended(now, id, m, end, None, true);
                }
                false => self.lose(now, &[id], why),
            }
        }
    }
}

#[cfg(test)]
mod tests;
