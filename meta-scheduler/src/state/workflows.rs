//! Workflows on the meta-scheduler's records (HTCondor DAGMan's semantics; the release of nodes,
//! their retries and the abort rule are the grid runner's): a workflow is one record, written at
//! its submission with its spec; each node's run the runner releases becomes a record of its own
//! (the node's spec, its workflow, node name and run in GRIDSCHED_WORKFLOW_ID /
//! GRIDSCHED_WORKFLOW_NODE / GRIDSCHED_WORKFLOW_RUN), written in the commit that dispatches it.
//! While the workflow runs, its nodes' ended records stay in memory (its status reads them);
//! when it is over, its record takes the state of the whole and its nodes' final statuses, the
//! rescue a resumed workflow starts from.

use super::{Batch, State, outcome_of};
use gridsched_core::grid::{Input, NodeState};
use gridsched_core::model::{ArraySpec, Job, JobId, Node, Outcome, Workflow, WorkflowText};
use gridsched_proto::v1::{self, JobState, WorkflowNodeState as Shown};

/// The environment variable holding a node's workflow id.
pub const WORKFLOW_ID_VAR: &str = "GRIDSCHED_WORKFLOW_ID";
/// The environment variable holding a node's name.
pub const WORKFLOW_NODE_VAR: &str = "GRIDSCHED_WORKFLOW_NODE";
/// The environment variable holding a node's run, from 1.
pub const WORKFLOW_RUN_VAR: &str = "GRIDSCHED_WORKFLOW_RUN";

/// Node `n` of a workflow spec as the core has it, running `job`.
pub fn model_node(n: &v1::WorkflowNode, job: Job) -> Node {
    Node {
        name: n.name.clone(),
        parents: n.parents.clone(),
        retries: n.retries,
        retry_unless_exit: n.retry_unless_exit,
        abort_on_exit: n.abort_on_exit,
        done: n.done,
        outputs: Vec::new(),
        job,
    }
}

/// The ids a workflow spec gives its nodes' runs (the core's layout, its jobs left out).
pub fn layout(spec: &v1::Workflow) -> Option<Workflow> {
    let nodes = spec
        .nodes
        .iter()
        .map(|n| {
            let mut job = Job::new(0, 0, 1, 1, 1);
            let array = n.job.as_ref().and_then(|j| j.array.as_deref());
            job.array = match array {
                Some(a) => Some(Box::new(a.parse::<ArraySpec>().ok()?)),
                None => None,
            };
            Some(model_node(n, job))
        })
        .collect::<Option<Vec<_>>>()?;
    Workflow::new(WorkflowText {
        name: String::new(),
        nodes,
    })
    .ok()
}

/// A node's shown state from its latest run's record.
fn shown_of(state: JobState) -> Shown {
    match state {
        JobState::Running | JobState::Suspended => Shown::Running,
        JobState::Completed => Shown::Completed,
        JobState::Cancelled => Shown::Cancelled,
        s if s.is_terminal() => Shown::Failed,
        _ => Shown::Queued,
    }
}

impl State {
    /// Adds an accepted workflow: the grid runner admits it whole and releases its first nodes.
    /// A workflow the runner refuses is not added: the refusal, as the API gives it.
    pub fn add_workflow(
        &mut self,
        b: &mut Batch,
        job: v1::Job,
        model: Workflow,
        time: i64,
    ) -> Result<(), v1::SubmitError> {
        let id = job.id;
        self.jobs.insert(id, job);
        let submit = Input::SubmitWorkflow {
            id: JobId(id),
            workflow: Box::new(model),
        };
        let effects = self.decide(time, submit);
        b.classified = true;
        if let Some(why) = super::refusal_in(&effects, id) {
            self.jobs.remove(&id);
            return Err(why);
        }
        self.metrics.accepted.inc();
        self.metrics.workflows.inc();
        b.jobs.insert(id);
        self.carry_out(b, time, effects);
        Ok(())
    }

    /// The runner released node `node` of workflow `w`, run `attempt`, as job `id`: its record.
    /// The workflow runs from its first node's release.
    pub(super) fn add_node(
        &mut self,
        b: &mut Batch,
        time: i64,
        w: u64,
        id: u64,
        node: u32,
        attempt: u32,
    ) {
        let Some(wf) = self.jobs.get(&w) else {
            return;
        };
        let user = wf.spec.as_ref().map(|s| s.user.clone()).unwrap_or_default();
        let Some(n) = wf
            .spec
            .as_ref()
            .and_then(|s| s.workflow.as_ref())
            .and_then(|f| f.nodes.get(node as usize))
        else {
            return;
        };
        let mut spec = n.job.clone().unwrap_or_default();
        spec.user = user;
        spec.client_token = None;
        spec.stage_in
            .extend(self.parents_outputs(w, node as usize, &spec.stage_in));
        if let Some(c) = spec.command.as_mut() {
            c.env.insert(WORKFLOW_ID_VAR.into(), w.to_string());
            c.env.insert(WORKFLOW_NODE_VAR.into(), n.name.clone());
            c.env.insert(WORKFLOW_RUN_VAR.into(), attempt.to_string());
        }
        // An array node counts its tasks as an array does.
        let array = spec
            .array
            .as_deref()
            .and_then(|a| a.parse::<ArraySpec>().ok());
        let record = v1::Job {
            id,
            array: array.as_ref().map(super::arrays::fresh_progress),
            spec: Some(spec),
            state: JobState::Accepted.into(),
            submit_time: Some(time),
            start_claims: self.start_claims,
            workflow_id: Some(w),
            workflow_node: Some(n.name.clone()),
            workflow_run: attempt,
            ..Default::default()
        };
        let name = n.name.clone();
        self.jobs.insert(id, record);
        b.jobs.insert(id);
        // Its classification (next) moves the classifier's window: written with it.
        b.classified = true;
        self.metrics.workflow_nodes.inc();
        self.update(b, w, time, |j| {
            let run = match attempt {
                1 => String::new(),
                n => format!(", its run {n}"),
            };
            if j.state() == JobState::Accepted {
                j.state = JobState::Running.into();
                j.start_time = Some(time);
            }
            Some(format!("node `{name}` released as job {id}{run}"))
        });
    }

    /// The inputs node `k` of workflow `w` reads from its parents: each completed parent's
    /// declared output files, as its site kept them, named `<parent>/<path>` in the node's
    /// working directory and moved from that site (the names `taken` has already are left
    /// out). A parent completed in the workflow resumed, or at a site that reports no outputs
    /// (Slurm-backed), gives none.
    fn parents_outputs(&self, w: u64, k: usize, taken: &[v1::StagedInput]) -> Vec<v1::StagedInput> {
        let runner = self.decider.runner();
        let Some(nodes) = (self.jobs.get(&w))
            .and_then(|j| j.spec.as_ref())
            .and_then(|s| s.workflow.as_ref())
            .map(|f| &f.nodes)
        else {
            return Vec::new();
        };
        let mut out: Vec<v1::StagedInput> = Vec::new();
        for (p, runs) in runner.parent_runs(JobId(w), k) {
            let completed = (runs.iter().rev())
                .filter_map(|id| self.jobs.get(&id.0))
                .find(|j| j.state() == JobState::Completed);
            let (Some(parent), Some(j)) = (nodes.get(p), completed) else {
                continue;
            };
            let Some(site) = j.site.as_ref() else {
                continue;
            };
            for o in &j.outputs {
                let name = format!("{}/{}", parent.name, o.name);
                if taken.iter().chain(&out).any(|s| s.name == name) {
                    continue;
                }
                out.push(v1::StagedInput {
                    name,
                    sha256: o.sha256.clone(),
                    url: String::new(),
                    size: o.size,
                    site: site.clone(),
                });
            }
        }
        out
    }

    /// The runner stops node run `id` of workflow `w` (aborted or cancelled): the workflow's
    /// record says why, and the node is cancelled as its user would (after the commit).
    pub(super) fn stop_node(&mut self, b: &mut Batch, time: i64, id: u64, why: String) {
        b.stops.push((id, why));
        let runner = self.decider.runner();
        let Some((w, _, _)) = runner.node_of(JobId(id)) else {
            return;
        };
        let Some(stopping) = runner
            .workflow(w)
            .and_then(|s| s.stopping)
            .map(str::to_owned)
        else {
            return;
        };
        self.update(b, w.0, time, |j| {
            (j.reason != stopping).then(|| {
                j.reason.clone_from(&stopping);
                format!("{stopping}: its running nodes are cancelled")
            })
        });
    }

    /// Workflow `w` is over: its record takes the state of the whole, its nodes' final statuses
    /// (its rescue) and why; its nodes' records may leave memory from now on.
    pub(super) fn workflow_over(
        &mut self,
        b: &mut Batch,
        time: i64,
        w: u64,
        outcome: Outcome,
        why: Option<String>,
    ) {
        let Some(mut progress) = self.workflow_progress(w) else {
            return;
        };
        for n in &mut progress.nodes {
            if n.state() == Shown::Waiting {
                n.state = Shown::Never.into();
                n.reason = "a parent did not complete".into();
            }
        }
        let last = self
            .jobs
            .get(&w)
            .and_then(|j| layout(j.spec.as_ref()?.workflow.as_ref()?))
            .map_or(w, |l| l.last_id(JobId(w)).0);
        let nodes: Vec<u64> = self
            .jobs
            .range(w + 1..=last)
            .filter(|(_, j)| j.workflow_id == Some(w))
            .map(|(&id, _)| id)
            .collect();
        let done = progress
            .nodes
            .iter()
            .filter(|n| matches!(n.state(), Shown::Completed | Shown::DoneBefore))
            .count();
        let total = progress.nodes.len();
        self.update(b, w, time, |j| {
            j.state = match outcome {
                Outcome::Completed => JobState::Completed,
                Outcome::Cancelled { .. } => JobState::Cancelled,
                _ => JobState::Failed,
            }
            .into();
            j.end_time = Some(time);
            j.reason = match &why {
                Some(why) => format!("{done} of {total} nodes completed; {why}"),
                None => format!("all {total} nodes completed"),
            };
            j.workflow = Some(progress);
            Some(j.reason.clone())
        });
        b.finished.extend(nodes);
    }

    /// Where workflow `w`'s nodes stand: from its record once it is over, else from the runner
    /// and its nodes' records.
    pub(crate) fn workflow_progress(&self, w: u64) -> Option<v1::WorkflowProgress> {
        let record = self.jobs.get(&w)?;
        if record.state().is_terminal() {
            return record.workflow.clone();
        }
        let spec = record.spec.as_ref()?.workflow.as_ref()?;
        let layout = layout(spec)?;
        let running = self.decider.runner().workflow(JobId(w));
        let mut nodes = Vec::with_capacity(spec.nodes.len());
        for (k, n) in spec.nodes.iter().enumerate() {
            let mut s = v1::WorkflowNodeStatus {
                name: n.name.clone(),
                parents: n.parents.clone(),
                ..Default::default()
            };
            // Its latest run with a record.
            let latest = (1..=n.retries + 1)
                .map(|a| (a, layout.node_id(JobId(w), k, a).0))
                .take_while(|(_, id)| self.jobs.contains_key(id))
                .last();
            match latest {
                Some((run, id)) => {
                    let j = &self.jobs[&id];
                    s.job_id = id;
                    s.run = run;
                    s.state = shown_of(j.state()).into();
                    s.exit_code = j.exit_code;
                    s.site.clone_from(&j.site);
                    s.reason.clone_from(&j.reason);
                }
                None if n.done => s.state = Shown::DoneBefore.into(),
                None => {
                    let waits: Vec<String> = layout
                        .parents(k)
                        .iter()
                        .filter(|&&p| {
                            running
                                .as_ref()
                                .is_some_and(|r| r.nodes[p as usize] != NodeState::Done)
                        })
                        .map(|&p| format!("`{}`", spec.nodes[p as usize].name))
                        .collect();
                    s.reason = match waits.is_empty() {
                        true => String::new(),
                        false => format!("waits for {}", waits.join(", ")),
                    };
                }
            }
            nodes.push(s);
        }
        Some(v1::WorkflowProgress { nodes })
    }

    /// The runner's input restoring workflow record `job` (not over), its nodes where their
    /// records (through `find`) say they stood; the ended records of its nodes come back into
    /// memory for its status.
    pub(super) fn workflow_restored(
        &mut self,
        job: &v1::Job,
        find: &impl Fn(u64) -> Option<v1::Job>,
    ) -> Option<Input> {
        let spec = job.spec.as_ref()?.workflow.as_ref()?;
        let layout = layout(spec)?;
        let mut model = Vec::with_capacity(spec.nodes.len());
        let mut nodes = Vec::with_capacity(spec.nodes.len());
        for (k, n) in spec.nodes.iter().enumerate() {
            let node_spec = n.job.clone().unwrap_or_default();
            let first = layout.node_id(JobId(job.id), k, 1).0;
            let j = self.decider.job(&node_spec, first, 0).ok()?;
            let mut state = match n.done {
                true => NodeState::Done,
                false => NodeState::Waiting,
            };
            for a in 1..=n.retries + 1 {
                let id = layout.node_id(JobId(job.id), k, a).0;
                let Some(r) = find(id) else {
                    break;
                };
                state = match r.state() {
                    JobState::Completed => NodeState::Done,
                    s if s.is_terminal() => NodeState::Failed {
                        outcome: outcome_of(&r),
                        exit: r.exit_code,
                        attempt: a,
                    },
                    _ => NodeState::Out { attempt: a },
                };
                if r.state().is_terminal() {
                    self.jobs.entry(id).or_insert(r);
                }
            }
            nodes.push(state);
            model.push(model_node(n, j));
        }
        let workflow = Workflow::new(WorkflowText {
            name: job.spec.as_ref()?.name.clone().unwrap_or_default(),
            nodes: model,
        })
        .ok()?;
        Some(Input::RestoreWorkflow {
            id: JobId(job.id),
            workflow: Box::new(workflow),
            nodes,
            stopping: (!job.reason.is_empty()).then(|| job.reason.clone()),
        })
    }
}
