//! Why a job is where it is (the `Explain` call): its priority and the heuristics behind it
//! (D4.1), the dispatch decision with every candidate site (D4.2), and, for a job waiting in a
//! local queue, its position, its reservation and what blocks it, read from its local scheduler's
//! status.

use gridsched_proto::v1::{self, BlockerKind, JobState};
use tonic::Status;

/// How a job's priority and site were chosen, kept for `explain`.
#[derive(Debug, Clone, Default)]
pub struct Decision {
    /// Classification.
    pub priority: Option<v1::PriorityExplanation>,
    /// The latest dispatch decision.
    pub dispatch: Option<v1::DispatchExplanation>,
}

fn blocker(
    kind: BlockerKind,
    resource: Option<String>,
    job: Option<u64>,
    detail: String,
) -> v1::Blocker {
    v1::Blocker {
        kind: kind.into(),
        resource,
        job_id: job,
        detail,
    }
}

/// The blocker of a job whose inputs are being staged in at site `at`: `staging 2 of 3 inputs at
/// beta (1.2 GB of 3.0 GB)`.
pub fn staging(p: &v1::StagingProgress, at: &str) -> v1::Blocker {
    use crate::inputs::human_bytes;
    let mut detail = format!(
        "staging {} of {} inputs at {at}",
        p.inputs_done, p.inputs_total
    );
    if p.bytes_total > 0 {
        detail += &format!(
            " ({} of {})",
            human_bytes(p.bytes_done),
            human_bytes(p.bytes_total)
        );
    }
    blocker(BlockerKind::Staging, Some(at.to_owned()), None, detail)
}

/// A job state as `list` shows it: `RUNNING`.
pub fn state_name(s: JobState) -> &'static str {
    s.as_str_name().trim_start_matches("JOB_STATE_")
}

/// `kb` KiB as people read it: `15.0 GiB`, `512 MiB`, `700 KiB`.
fn kib(kb: u64) -> String {
    match kb {
        k if k >= 1 << 20 => format!("{:.1} GiB", k as f64 / f64::from(1u32 << 20)),
        k if k >= 1 << 10 => format!("{} MiB", k >> 10),
        k => format!("{k} KiB"),
    }
}

/// What keeps a queued job waiting, from its local scheduler's status.
fn blockers(spec: &v1::JobSpec, id: u64, status: &v1::StatusResponse) -> Vec<v1::Blocker> {
    // A site that hands its jobs to a batch system says why that system keeps it waiting.
    if let Some(q) = status.queue.iter().find(|q| q.job_id == id)
        && let Some(why) = &q.pending_reason
    {
        let mut detail = why.clone();
        if let Some(t) = q.expected_start {
            detail += &format!("; expected to start at {t}");
        }
        return vec![blocker(BlockerKind::BatchSystem, None, None, detail)];
    }
    let mut out = Vec::new();
    let online: Vec<&v1::MachineInfo> = status.machines.iter().filter(|m| m.online).collect();
    if online.is_empty() {
        out.push(blocker(
            BlockerKind::NoAgent,
            None,
            None,
            "no machine of the cluster has an agent online".into(),
        ));
        return out;
    }
    if let Some(pos) = status.queue.iter().position(|q| q.job_id == id)
        && pos > 0
    {
        let ahead = status.queue[pos - 1].job_id;
        out.push(blocker(
            BlockerKind::QueueOrder,
            None,
            Some(ahead),
            format!("{pos} job(s) ahead in the policy's order (next ahead: job {ahead})"),
        ));
    }
    let wide = online
        .iter()
        .filter(|m| m.processors.saturating_sub(m.busy_processors) >= spec.processors)
        .count();
    if wide == 0 {
        let holder = status.running.first().map(|r| r.job_id);
        out.push(blocker(
            BlockerKind::Processors,
            None,
            holder,
            format!(
                "no online machine has {} free processors now",
                spec.processors
            ),
        ));
    }
    // Memory, for a job one machine can run: no online machine that has the processors also has
    // the memory free.
    if let Some(need) = spec.memory_kb
        && wide > 0
    {
        let free = |m: &v1::MachineInfo| {
            m.memory_kb
                .map_or(u64::MAX, |kb| kb.saturating_sub(m.busy_memory_kb))
        };
        let fitting = online
            .iter()
            .filter(|m| m.processors.saturating_sub(m.busy_processors) >= spec.processors);
        if fitting.clone().all(|m| free(m) < need) {
            let most = fitting.map(|m| free(m)).max().unwrap_or(0);
            let holder = status.running.first().map(|r| r.job_id);
            out.push(blocker(
                BlockerKind::Memory,
                None,
                holder,
                format!(
                    "no online machine with {} free processors has {} of memory free (most: {})",
                    spec.processors,
                    kib(need),
                    kib(most)
                ),
            ));
        }
    }
    for l in &spec.licences {
        if let Some(pool) = status.licence_pools.iter().find(|p| &p.licence == l)
            && pool.in_use >= pool.copies
        {
            let holder = status
                .running
                .iter()
                .find(|r| r.licences.contains(l))
                .map(|r| r.job_id);
            out.push(blocker(
                BlockerKind::Licence,
                Some(l.clone()),
                holder,
                format!("all {} copies of `{l}` are in use", pool.copies),
            ));
        }
    }
    if let Some(r) = status
        .reservations
        .iter()
        .find(|r| r.job_id != id && r.start_time > status.time)
        && out.is_empty()
    {
        out.push(blocker(
            BlockerKind::Reservation,
            r.machine.clone(),
            Some(r.job_id),
            format!(
                "starting now would delay job {}'s reservation at {}",
                r.job_id, r.start_time
            ),
        ));
    }
    out
}

/// A workflow's explanation: its nodes counted by state, and a blocker for each node waiting
/// for its parents.
fn workflow(job: &v1::Job, p: &v1::WorkflowProgress, mut text: String) -> v1::ExplainResponse {
    use v1::WorkflowNodeState as N;
    let name = job.spec.as_ref().and_then(|s| s.name.clone());
    text = text.replacen("job", "workflow", 1);
    if let Some(n) = name {
        text += &format!(" (`{n}`)");
    }
    let states = [
        (N::Completed, "completed"),
        (N::DoneBefore, "done before"),
        (N::Running, "running"),
        (N::Queued, "queued"),
        (N::Waiting, "waiting for their parents"),
        (N::Failed, "failed"),
        (N::Cancelled, "cancelled"),
        (N::Never, "never ran"),
    ];
    let mut counts = Vec::new();
    for (s, said) in states {
        let names: Vec<&str> = (p.nodes.iter())
            .filter(|n| n.state() == s)
            .map(|n| n.name.as_str())
            .collect();
        if names.is_empty() {
            continue;
        }
        let shown = match names.len() {
            1..=4 => format!(" ({})", names.join(", ")),
            _ => String::new(),
        };
        counts.push(format!("{} {said}{shown}", names.len()));
    }
    text += &format!("; {} nodes: {}", p.nodes.len(), counts.join(", "));
    if job.state().is_terminal() && !job.reason.is_empty() {
        text += &format!("; {}", job.reason);
    }
    let blockers = p
        .nodes
        .iter()
        .filter(|n| n.state() == N::Waiting && !job.state().is_terminal())
        .map(|n| {
            blocker(
                BlockerKind::Workflow,
                Some(n.name.clone()),
                None,
                format!("node `{}` {}", n.name, n.reason),
            )
        })
        .collect();
    v1::ExplainResponse {
        job_id: job.id,
        state: job.state,
        text,
        blockers,
        ..Default::default()
    }
}

/// The explanation of `job`; `local` is its local scheduler's status when it is queued or
/// running there (or why that status could not be read).
pub fn explain(
    job: &v1::Job,
    decision: Decision,
    local: Option<Result<v1::StatusResponse, Status>>,
    dependency: Vec<v1::Blocker>,
) -> v1::ExplainResponse {
    let id = job.id;
    let spec = job.spec.clone().unwrap_or_default();
    let mut text = match (job.array_id, job.array_index) {
        (Some(a), Some(i)) => format!("task {a}_{i} (job {id}) is {}", state_name(job.state())),
        _ => format!("job {id} is {}", state_name(job.state())),
    };
    if let Some(p) = &job.array {
        text += &format!(
            "; an array of {} tasks: {} pending, {} queued, {} running, {} completed, {} failed, {} cancelled",
            p.tasks, p.pending, p.queued, p.running, p.completed, p.failed, p.cancelled
        );
    }
    if let (Some(w), Some(node)) = (job.workflow_id, &job.workflow_node) {
        text += &format!(
            "; node `{node}` of workflow {w}, its run {}",
            job.workflow_run
        );
    }
    if let Some(p) = &job.workflow {
        return workflow(job, p, text);
    }
    if let Some(p) = &decision.priority {
        let parts: Vec<String> = p
            .contributions
            .iter()
            .map(|c| {
                // The fair share's F · max is fractional; the heuristics' values are whole.
                let v = match c.value {
                    v if v.fract() == 0.0 => format!("{v}"),
                    v => format!("{v:.2}"),
                };
                format!("{} {v} (weight {})", c.heuristic, c.weight)
            })
            .collect();
        text += &format!(
            "; priority {} = weighted mean of {}",
            p.priority,
            parts.join(", ")
        );
    }
    if let Some(d) = &decision.dispatch {
        if d.cluster.is_empty() {
            text += &format!("; not dispatched yet ({})", d.decided_by);
        } else {
            text += &format!("; dispatched to {} by {}", d.cluster, d.decided_by);
        }
        let others: Vec<String> = d
            .candidates
            .iter()
            .filter(|c| !c.note.is_empty())
            .map(|c| format!("{}: {}", c.cluster, c.note))
            .collect();
        if !others.is_empty() {
            text += &format!(" (others: {})", others.join("; "));
        }
        let moves: Vec<String> = (d.candidates.iter())
            .filter_map(|c| {
                let s = c.transfer_s?;
                if c.transfer_bytes == 0 && s == 0 {
                    return Some(format!("{} holds them", c.cluster));
                }
                let bytes = crate::inputs::human_bytes(c.transfer_bytes);
                Some(format!("{} ~{s} s ({bytes})", c.cluster))
            })
            .collect();
        if !moves.is_empty() {
            text += &format!("; inputs to move: {}", moves.join(", "));
        }
    }
    if let Some(site) = &job.site
        && decision
            .dispatch
            .as_ref()
            .is_some_and(|d| &d.cluster != site)
    {
        text += &format!("; now at {site}");
    }
    let mut out = v1::ExplainResponse {
        job_id: id,
        state: job.state,
        priority: decision.priority,
        dispatch: decision.dispatch,
        text: String::new(),
        ..Default::default()
    };
    match job.state() {
        JobState::Accepted if !dependency.is_empty() => out.blockers = dependency,
        JobState::Accepted | JobState::Dispatched => {
            out.blockers.push(blocker(
                BlockerKind::Dispatch,
                None,
                None,
                if job.site.is_some() {
                    "not at its local scheduler yet".into()
                } else {
                    "waiting for a site that is up and can run it".into()
                },
            ));
        }
        JobState::Queued => match &local {
            Some(Ok(status)) if let Some(r) = held(status, id) => {
                text += &format!("; placed on {} by {}", r.machine, status.policy);
                out.blockers.push(blocker(
                    BlockerKind::StartClaim,
                    Some(r.machine.clone()),
                    None,
                    "the meta-scheduler to grant its start claim".into(),
                ));
            }
            Some(Ok(status)) => {
                out.queue_position = status
                    .queue
                    .iter()
                    .position(|q| q.job_id == id)
                    .map(|p| p as u32);
                out.reservation = status.reservations.iter().find(|r| r.job_id == id).cloned();
                out.blockers = blockers(&spec, id, status);
                if let Some(q) = status.queue.iter().find(|q| q.job_id == id)
                    && let Some(p) = &q.staging
                {
                    let at = job.site.clone().unwrap_or_default();
                    out.blockers = vec![staging(p, &at)];
                }
                if let Some(p) = out.queue_position {
                    text += &format!("; position {p} in the local queue ({})", status.policy);
                }
                if let Some(rid) = spec.reservation
                    && let Some(a) = status.advance_reservations.iter().find(|a| a.id == rid)
                {
                    text += &format!(
                        "; inside advance reservation r{rid} ({} processors on [{}, {}))",
                        a.processors, a.start_time, a.end_time
                    );
                }
                if let Some(r) = &out.reservation {
                    let kind = if r.kind == v1::ReservationKind::Planned as i32 {
                        "planned"
                    } else {
                        "reserved"
                    };
                    text += &format!(
                        "; {kind} to start at {}{}",
                        r.start_time,
                        r.machine
                            .as_ref()
                            .map(|m| format!(" on {m}"))
                            .unwrap_or_default()
                    );
                }
            }
            Some(Err(e)) => {
                text += &format!("; its local scheduler cannot be asked: {}", e.message())
            }
            None => {}
        },
        JobState::Running => {
            if let Some(m) = &job.machine {
                text += &format!("; running on {m}");
            }
        }
        JobState::Suspended => {
            let on = job.machine.as_deref().unwrap_or("its machine");
            let since = job
                .suspended_since
                .map_or(String::new(), |t| format!(" since {t}"));
            text += &format!("; suspended on {on}{since} ({})", job.reason);
            text += "; it resumes there with its progress when its local policy starts it again";
            if let Some(Ok(status)) = &local {
                let ends = status
                    .running
                    .iter()
                    .filter(|r| job.machine.as_deref() == Some(r.machine.as_str()))
                    .map(|r| (r.predicted_end, r.job_id));
                if let Some((end, by)) = ends.max() {
                    text += &format!(
                        ", at the latest once what runs on {on} now ends (job {by}, predicted at \
                         {end})"
                    );
                }
            }
        }
        _ => {
            if !job.reason.is_empty() {
                text += &format!("; {}", job.reason);
            }
        }
    }
    for b in &out.blockers {
        text += &format!("; waits for: {}", b.detail);
    }
    out.text = text;
    out
}

/// Job `id` as placed by the local policy but held for its start claim, if it is.
fn held(status: &v1::StatusResponse, id: u64) -> Option<&v1::RunningJob> {
    status
        .running
        .iter()
        .find(|r| r.job_id == id && r.awaiting_claim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_suspended_job_says_why_since_when_and_until_when() {
        let job = v1::Job {
            id: 3,
            state: JobState::Suspended.into(),
            site: Some("a".into()),
            machine: Some("a1".into()),
            suspended_since: Some(1_000),
            reason: "suspended on a1 (stopped, keeps its progress)".into(),
            ..Default::default()
        };
        let status = v1::StatusResponse {
            running: vec![
                v1::RunningJob {
                    job_id: 9,
                    machine: "a1".into(),
                    predicted_end: 1_300,
                    ..Default::default()
                },
                v1::RunningJob {
                    job_id: 8,
                    machine: "a2".into(),
                    predicted_end: 9_000,
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let e = explain(&job, Decision::default(), Some(Ok(status)), Vec::new());
        assert!(e.text.contains("suspended on a1 since 1000"), "{}", e.text);
        assert!(e.text.contains("keeps its progress"), "{}", e.text);
        assert!(e.text.contains("job 9, predicted at 1300"), "{}", e.text);
    }

    #[test]
    fn a_placed_job_waits_for_its_start_claim() {
        let job = v1::Job {
            id: 7,
            state: JobState::Queued.into(),
            site: Some("a".into()),
            ..Default::default()
        };
        let status = v1::StatusResponse {
            policy: "easy".into(),
            running: vec![v1::RunningJob {
                job_id: 7,
                machine: "a1".into(),
                awaiting_claim: true,
                ..Default::default()
            }],
            ..Default::default()
        };
        let e = explain(&job, Decision::default(), Some(Ok(status)), Vec::new());
        let kinds: Vec<BlockerKind> = e.blockers.iter().map(|b| b.kind()).collect();
        assert_eq!(kinds, vec![BlockerKind::StartClaim]);
        assert_eq!(e.blockers[0].resource.as_deref(), Some("a1"));
        assert!(
            e.text
                .contains("placed on a1 by easy; waits for: the meta-scheduler to grant"),
            "{}",
            e.text
        );
    }

    #[test]
    fn the_inputs_to_move_are_explained_per_site() {
        let job = v1::Job {
            id: 4,
            state: JobState::Dispatched.into(),
            site: Some("b".into()),
            ..Default::default()
        };
        let candidate = |cluster: &str, transfer_s, note: &str| v1::DispatchCandidate {
            cluster: cluster.into(),
            feasible: true,
            note: note.into(),
            transfer_s,
            transfer_bytes: transfer_s.filter(|&s| s > 0).map_or(0, |_| 50_000_000),
            ..Default::default()
        };
        let decision = Decision {
            priority: None,
            dispatch: Some(v1::DispatchExplanation {
                cluster: "b".into(),
                decided_by: "min-completion (estimated completion at 101)".into(),
                candidates: vec![
                    candidate("a", Some(50), "not chosen by the strategy"),
                    candidate("b", Some(1), ""),
                    candidate("c", Some(0), "not chosen by the strategy"),
                    candidate("d", None, "site down"),
                ],
                ..Default::default()
            }),
        };
        let e = explain(&job, decision, None, Vec::new());
        assert!(
            e.text
                .contains("; inputs to move: a ~50 s (50.0 MB), b ~1 s (50.0 MB)"),
            "{}",
            e.text
        );
    }

    #[test]
    fn a_queued_job_behind_a_full_licence_pool() {
        let job = v1::Job {
            id: 7,
            state: JobState::Queued.into(),
            site: Some("a".into()),
            spec: Some(v1::JobSpec {
                processors: 2,
                licences: vec!["matlab".into()],
                ..Default::default()
            }),
            ..Default::default()
        };
        let status = v1::StatusResponse {
            policy: "easy".into(),
            time: 100,
            queue: vec![
                v1::QueuedJob {
                    job_id: 5,
                    ..Default::default()
                },
                v1::QueuedJob {
                    job_id: 7,
                    ..Default::default()
                },
            ],
            running: vec![v1::RunningJob {
                job_id: 3,
                licences: vec!["matlab".into()],
                ..Default::default()
            }],
            licence_pools: vec![v1::LicencePoolState {
                licence: "matlab".into(),
                copies: 1,
                in_use: 1,
                ..Default::default()
            }],
            machines: vec![v1::MachineInfo {
                online: true,
                processors: 8,
                busy_processors: 1,
                ..Default::default()
            }],
            ..Default::default()
        };
        let e = explain(&job, Decision::default(), Some(Ok(status)), Vec::new());
        assert_eq!(e.queue_position, Some(1));
        let kinds: Vec<BlockerKind> = e.blockers.iter().map(|b| b.kind()).collect();
        assert_eq!(kinds, vec![BlockerKind::QueueOrder, BlockerKind::Licence]);
        assert_eq!(e.blockers[1].job_id, Some(3));
        assert!(e.text.contains("position 1"), "{}", e.text);
    }

    /// A job whose memory no machine with its processors free has free waits for memory, and
    /// `explain` says how much the freest such machine has.
    #[test]
    fn a_queued_job_waits_for_memory() {
        let job = v1::Job {
            id: 6,
            state: JobState::Queued.into(),
            site: Some("delta".into()),
            spec: Some(v1::JobSpec {
                processors: 1,
                memory_kb: Some(15 << 20),
                ..Default::default()
            }),
            ..Default::default()
        };
        let machine = |busy_gib: u64| v1::MachineInfo {
            online: true,
            processors: 16,
            busy_processors: 1,
            memory_kb: Some(23 << 20),
            busy_memory_kb: busy_gib << 20,
            ..Default::default()
        };
        let status = |machines| v1::StatusResponse {
            policy: "dynp".into(),
            queue: vec![v1::QueuedJob {
                job_id: 6,
                ..Default::default()
            }],
            running: vec![v1::RunningJob {
                job_id: 4,
                ..Default::default()
            }],
            machines,
            ..Default::default()
        };
        let e = explain(
            &job,
            Decision::default(),
            Some(Ok(status(vec![machine(15), machine(20)]))),
            Vec::new(),
        );
        assert_eq!(e.blockers.len(), 1, "{:?}", e.blockers);
        assert_eq!(e.blockers[0].kind(), BlockerKind::Memory);
        assert_eq!(
            e.blockers[0].detail,
            "no online machine with 1 free processors has 15.0 GiB of memory free (most: 8.0 GiB)"
        );
        let free = status(vec![machine(15), machine(8)]);
        let e = explain(&job, Decision::default(), Some(Ok(free)), Vec::new());
        assert!(e.blockers.is_empty(), "{:?}", e.blockers);
    }
}
