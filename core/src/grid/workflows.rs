//! Workflows in the grid runner (HTCondor's DAGMan semantics, as its manual documents them; the
//! DAG workflows of the grid meta-schedulers GridWay and KOALA): a workflow is admitted whole —
//! every node's job checked at the door, so none is accepted that could never run — and then
//! releases each node, as a job submitted to the grid (classified, through its own dependency,
//! dispatched by the strategy), once its parents have completed.
//!
//! * A node whose run fails is released again, as a new job (the id of its next run), while it
//!   has retries left (`RETRY n`), unless it exited with its `retry_unless_exit` code; a node
//!   cancelled by its user is not retried.
//! * A node that exits with its `abort_on_exit` code aborts the workflow: its running nodes are
//!   stopped ([`Effect::Stop`]) and nothing more is released.
//! * A node that failed for good keeps its descendants from ever running; the others go on (as
//!   DAGMan does), and the workflow is over once nothing runs: [`Effect::WorkflowOver`] names the
//!   nodes completed, the rescue from which a resumed workflow (its nodes marked
//!   [`Node::done`](crate::model::Node::done)) runs only what is left.

use super::{Effect, GridRunner, cluster};
use crate::model::{ClusterId, DataIn, DataOut, JobId, Outcome, Time, Workflow};
use crate::structures::Shrink;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};

/// Where a node of a workflow is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NodeState {
    /// Waiting for its parents (or never to run, when one failed for good).
    Waiting,
    /// Released as a job, its `attempt`-th run (from 1).
    Out {
        /// Its run.
        attempt: u32,
    },
    /// Completed (in this run of the workflow or, marked done, an earlier one).
    Done,
    /// Failed for good after `attempt` runs: failed with `exit`, cancelled, or refused.
    Failed {
        /// How its last run ended.
        outcome: Outcome,
        /// Its exit code, when the site reported one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit: Option<i32>,
        /// Its runs.
        attempt: u32,
    },
}

/// One workflow in the grid.
#[derive(Clone, Debug)]
struct Flow {
    wf: Workflow,
    state: Vec<NodeState>,
    /// Per node, its parents not yet completed.
    missing: Vec<u32>,
    /// Nodes out.
    out: u32,
    /// Why it releases no more: aborted, or [`CANCELLED`].
    stopping: Option<String>,
    /// Per node, the site its completed run ran at (its outputs are there), when known.
    ran_at: Vec<Option<usize>>,
    /// Per node, the outputs its completed run's site reported (they replace the node's
    /// declared ones), when it reported some.
    wrote: Vec<Option<Vec<DataOut>>>,
}

/// The `stopping` of a workflow its user cancelled.
const CANCELLED: &str = "cancelled";

impl Flow {
    fn new(wf: Workflow) -> Flow {
        let state: Vec<NodeState> = wf
            .nodes()
            .iter()
            .map(|n| match n.done {
                true => NodeState::Done,
                false => NodeState::Waiting,
            })
            .collect();
        let missing = (0..wf.len())
            .map(|k| {
                wf.parents(k)
                    .iter()
                    .filter(|&&p| state[p as usize] != NodeState::Done)
                    .count() as u32
            })
            .collect();
        Flow {
            ran_at: vec![None; wf.len()],
            wrote: vec![None; wf.len()],
            wf,
            state,
            missing,
            out: 0,
            stopping: None,
        }
    }

    fn cancelled(&self) -> bool {
        self.stopping.as_deref() == Some(CANCELLED)
    }

    /// The nodes that may be released: waiting, every parent completed.
    fn ready(&self) -> Vec<usize> {
        (0..self.wf.len())
            .filter(|&k| self.state[k] == NodeState::Waiting && self.missing[k] == 0)
            .collect()
    }

    fn outcome(&self) -> Outcome {
        if self.state.iter().all(|s| *s == NodeState::Done) {
            Outcome::Completed
        } else if self.cancelled() {
            Outcome::Cancelled {
                started: self.state.iter().any(|s| !matches!(s, NodeState::Waiting)),
            }
        } else {
            Outcome::Failed
        }
    }

    /// Why it is over, in words (`None` when every node completed).
    fn why(&self) -> Option<String> {
        if let Some(s) = &self.stopping {
            return Some(s.clone());
        }
        let failed: Vec<String> = (0..self.wf.len())
            .filter_map(|k| match self.state[k] {
                NodeState::Failed {
                    outcome,
                    exit,
                    attempt,
                } => {
                    let how = match (outcome, exit) {
                        (Outcome::Failed, Some(c)) => format!("exit {c}"),
                        (o, _) => o.to_string(),
                    };
                    let runs = match attempt {
                        0 | 1 => String::new(),
                        n => format!(", after {n} runs"),
                    };
                    Some(format!("`{}` ({how}{runs})", self.wf.nodes()[k].name))
                }
                _ => None,
            })
            .collect();
        if failed.is_empty() {
            return None;
        }
        let never = self
            .state
            .iter()
            .filter(|s| **s == NodeState::Waiting)
            .count();
        Some(format!(
            "failed: {}; {never} node(s) never ran",
            failed.join(", ")
        ))
    }
}

/// What a workflow is doing, for the drivers' views.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkflowStatus<'a> {
    /// Per node, where it is.
    pub nodes: &'a [NodeState],
    /// Why it releases no more, when it was aborted or cancelled.
    pub stopping: Option<&'a str>,
}

/// A node's run that left the grid: its workflow, its position, how it ended, its exit code,
/// the site it ran at and the outputs it wrote there (when reported).
#[derive(Clone, Debug)]
struct NodeEnd {
    workflow: JobId,
    node: usize,
    outcome: Outcome,
    exit: Option<i32>,
    site: Option<usize>,
    wrote: Option<Vec<DataOut>>,
}

/// The workflows in the grid, by id (ordered: a node's workflow is the one before its id).
#[derive(Debug, Default)]
pub(super) struct Book {
    flows: BTreeMap<JobId, Flow>,
    /// Nodes that left the grid, to settle.
    changes: VecDeque<NodeEnd>,
    /// Exit codes reported with a node's end, until its end is noted.
    exits: FxHashMap<JobId, i32>,
    /// The sites reported with a node's end, until its end is noted.
    sites: FxHashMap<JobId, usize>,
    /// The outputs reported with a node's end, until its end is noted.
    wrote: FxHashMap<JobId, Vec<DataOut>>,
}

impl Book {
    /// Gives back the room a burst left ([`Shrink`]).
    pub(super) fn shrink(&mut self) {
        self.changes.shrink_if_sparse();
        self.exits.shrink_if_sparse();
        self.sites.shrink_if_sparse();
        self.wrote.shrink_if_sparse();
    }

    /// The workflow whose ids hold `id`, and the node and run `id` is (if it is one).
    fn owner(&self, id: JobId) -> Option<(JobId, Option<(usize, u32)>)> {
        let (&w, f) = self.flows.range(..id).next_back()?;
        (id <= f.wf.last_id(w)).then(|| (w, f.wf.node_of(w, id)))
    }

    /// Whether `id` is one of the ids a workflow in the grid takes.
    pub(super) fn owns(&self, id: JobId) -> bool {
        self.flows.contains_key(&id) || self.owner(id).is_some()
    }

    pub(super) fn pending(&self) -> bool {
        !self.changes.is_empty()
    }

    /// Job `id` ended at `site` with exit code `exit`: kept for its node.
    pub(super) fn exit(&mut self, id: JobId, site: usize, exit: Option<i32>) {
        if !self.flows.is_empty() && matches!(self.owner(id), Some((_, Some(_)))) {
            self.sites.insert(id, site);
            if let Some(c) = exit {
                self.exits.insert(id, c);
            }
        }
    }

    /// Job `id` wrote `files` at its site (reported with its end): kept for its node, whose
    /// children read them.
    pub(super) fn wrote(&mut self, id: JobId, files: Vec<DataOut>) {
        if !self.flows.is_empty() && matches!(self.owner(id), Some((_, Some(_)))) {
            self.wrote.insert(id, files);
        }
    }

    /// Job `id` left the grid with `outcome`: noted when it is a node out.
    pub(super) fn left(&mut self, id: JobId, outcome: Outcome) {
        if self.flows.is_empty() {
            return;
        }
        if let Some((w, Some((k, run)))) = self.owner(id)
            && self.flows[&w].state[k] == (NodeState::Out { attempt: run })
        {
            let exit = self.exits.remove(&id);
            let site = self.sites.remove(&id);
            let wrote = self.wrote.remove(&id);
            self.changes.push_back(NodeEnd {
                workflow: w,
                node: k,
                outcome,
                exit,
                site,
                wrote,
            });
        }
    }
}

impl GridRunner {
    /// A workflow enters the grid as `id`: every node's job admitted (the first refusal refuses
    /// the whole, naming the node), then the nodes without parents left are released.
    pub(super) fn submit_workflow(
        &mut self,
        now: Time,
        id: JobId,
        wf: Workflow,
        out: &mut Vec<Effect>,
    ) {
        if let Err(why) = self.admit_workflow(now, id, &wf) {
            out.push(Effect::Refuse {
                job: id,
                why: format!("workflow {id}: {why}"),
                refusal: Some(why),
            });
            return;
        }
        let placer = &mut self.placer;
        placer
            .dispatcher
            .workflow_admitted(now, id, &wf, &placer.grid);
        self.workflows.flows.insert(id, Flow::new(wf));
        self.release_nodes(now, id, out);
    }

    /// Whether the grid admits workflow `id`: its ids free, each node's job admitted.
    fn admit_workflow(&self, now: Time, id: JobId, wf: &Workflow) -> Result<(), super::Refusal> {
        use super::{Field, Kind, Refusal};
        let last = wf.last_id(id);
        if let Some(t) = (id.0..=last.0)
            .map(JobId)
            .find(|&t| self.jobs.contains_key(&t) || self.arrays.owns(t))
        {
            return Err(Refusal::new(
                Field::Array,
                Kind::Invalid,
                format!("its nodes take the ids {id} to {last}, and job {t} has one"),
            ));
        }
        for (k, node) in wf.nodes().iter().enumerate() {
            if node.done {
                continue;
            }
            let mut job = node.job.clone();
            job.id = wf.node_id(id, k, 1);
            job.submit = now;
            self.admit(now, &job).map_err(|r| Refusal {
                why: format!("node `{}`: {}", node.name, r.why),
                ..r
            })?;
        }
        Ok(())
    }

    /// Releases the nodes of workflow `id` that may go now; it is over when none is out.
    fn release_nodes(&mut self, now: Time, id: JobId, out: &mut Vec<Effect>) {
        let Some(f) = self.workflows.flows.get(&id) else {
            return;
        };
        let ready = match f.stopping {
            None => f.ready(),
            Some(_) => Vec::new(),
        };
        for k in ready {
            self.release_node(now, id, k, out);
        }
        self.end_workflow_if_over(id, out);
    }

    /// Releases node `k` of workflow `w` for its next run.
    fn release_node(&mut self, now: Time, w: JobId, k: usize, out: &mut Vec<Effect>) {
        let Some(f) = self.workflows.flows.get_mut(&w) else {
            return;
        };
        let attempt = match f.state[k] {
            NodeState::Out { attempt } => attempt + 1,
            _ => 1,
        };
        f.state[k] = NodeState::Out { attempt };
        f.out += 1;
        let mut job = f.wf.nodes()[k].job.clone();
        job.id = f.wf.node_id(w, k, attempt);
        job.submit = now;
        // Its parents' outputs, where they ran (not known for an array node or one completed
        // before a restart: from the submitters' side): those their sites reported, else those
        // the nodes declare.
        for &p in f.wf.parents(k) {
            let parent = &f.wf.nodes()[p as usize];
            let at: Vec<ClusterId> = f.ran_at[p as usize].map(cluster).into_iter().collect();
            let files = f.wrote[p as usize].as_ref().unwrap_or(&parent.outputs);
            for o in files {
                job.stage_in.push(DataIn {
                    key: format!("{w}/{}/{}", parent.name, o.name),
                    bytes: o.bytes,
                    at: at.clone(),
                });
            }
        }
        let id = job.id;
        out.push(Effect::Node {
            workflow: w,
            job: id,
            node: k as u32,
            attempt,
        });
        let noted = self.workflows.changes.len();
        self.submit(now, job, None, out);
        if !self.jobs.contains_key(&id) && self.workflows.changes.len() == noted {
            // Refused at its admission: it never entered.
            self.workflows.changes.push_back(NodeEnd {
                workflow: w,
                node: k,
                outcome: Outcome::Refused,
                exit: None,
                site: None,
                wrote: None,
            });
        }
    }

    /// Settles the nodes that left: their workflows release more, retry, abort, or are over.
    pub(super) fn settle_workflows(&mut self, now: Time, out: &mut Vec<Effect>) {
        while let Some(end) = self.workflows.changes.pop_front() {
            let NodeEnd {
                workflow: w,
                node: k,
                outcome,
                exit,
                site,
                wrote,
            } = end;
            let Some(f) = self.workflows.flows.get_mut(&w) else {
                continue;
            };
            let NodeState::Out { attempt } = f.state[k] else {
                continue;
            };
            f.out -= 1;
            let node = &f.wf.nodes()[k];
            let mut again = false;
            // The children it makes ready (a pass over every node per change would make a
            // large workflow quadratic).
            let mut ready = Vec::new();
            if outcome == Outcome::Completed {
                f.state[k] = NodeState::Done;
                f.ran_at[k] = site;
                f.wrote[k] = wrote;
                for &c in f.wf.children(k) {
                    let c = c as usize;
                    f.missing[c] -= 1;
                    if f.missing[c] == 0 && f.state[c] == NodeState::Waiting {
                        ready.push(c);
                    }
                }
                if f.stopping.is_some() {
                    ready.clear();
                }
            } else if exit.is_some() && exit == node.abort_on_exit && f.stopping.is_none() {
                f.stopping = Some(format!(
                    "aborted: node `{}` exited with {} (its abort condition)",
                    node.name,
                    exit.unwrap_or_default()
                ));
                f.state[k] = NodeState::Failed {
                    outcome,
                    exit,
                    attempt,
                };
                let why = f.stopping.clone().unwrap_or_default();
                self.stop_nodes(w, &why, out);
            } else {
                again = outcome == Outcome::Failed
                    && attempt <= node.retries
                    && (exit.is_none() || exit != node.retry_unless_exit)
                    && f.stopping.is_none();
                if !again {
                    f.state[k] = NodeState::Failed {
                        outcome,
                        exit,
                        attempt,
                    };
                }
            }
            if again {
                ready.push(k);
            }
            for c in ready {
                self.release_node(now, w, c, out);
            }
            self.end_workflow_if_over(w, out);
        }
    }

    /// Asks the driver to stop every node of workflow `w` out (it cancels each as its user
    /// would, [`Input::Cancel`](super::Input::Cancel)).
    fn stop_nodes(&mut self, w: JobId, why: &str, out: &mut Vec<Effect>) {
        let Some(f) = self.workflows.flows.get(&w) else {
            return;
        };
        for k in 0..f.wf.len() {
            if let NodeState::Out { attempt } = f.state[k] {
                out.push(Effect::Stop {
                    job: f.wf.node_id(w, k, attempt),
                    why: format!("workflow {w} {why}"),
                });
            }
        }
    }

    /// The workflow leaves the grid once no node is out (nothing more can be released then).
    fn end_workflow_if_over(&mut self, id: JobId, out: &mut Vec<Effect>) {
        let Some(f) = self.workflows.flows.get(&id) else {
            return;
        };
        if f.out > 0 {
            return;
        }
        let f = self.workflows.flows.remove(&id).expect("just seen");
        self.placer.dispatcher.workflow_over(id);
        out.push(Effect::WorkflowOver {
            workflow: id,
            outcome: f.outcome(),
            done: (0..f.wf.len())
                .filter(|&k| f.state[k] == NodeState::Done)
                .map(|k| k as u32)
                .collect(),
            why: f.why(),
        });
    }

    /// The user cancelled workflow `id`: nothing more is released and its nodes out are
    /// stopped. Whether `id` is a workflow in the grid.
    pub(super) fn cancel_workflow(&mut self, id: JobId, out: &mut Vec<Effect>) -> bool {
        let Some(f) = self.workflows.flows.get_mut(&id) else {
            return false;
        };
        if f.stopping.is_none() {
            f.stopping = Some(CANCELLED.into());
            self.stop_nodes(id, CANCELLED, out);
        }
        self.end_workflow_if_over(id, out);
        true
    }

    /// Re-enters workflow `id` as its driver had it: its nodes where they stood (those out are
    /// restored apart, as jobs, after it). It releases what is ready on the driver's next
    /// [`Input::Retry`](super::Input::Retry), asked for with an [`Effect::Continue`].
    pub(super) fn restore_workflow(
        &mut self,
        now: Time,
        id: JobId,
        wf: Workflow,
        nodes: Vec<NodeState>,
        stopping: Option<String>,
        out: &mut Vec<Effect>,
    ) {
        let mut f = Flow::new(wf);
        for (k, s) in nodes.into_iter().enumerate().take(f.state.len()) {
            if s == NodeState::Done && f.state[k] != NodeState::Done {
                for &c in f.wf.children(k) {
                    f.missing[c as usize] -= 1;
                }
            }
            if matches!(s, NodeState::Out { .. }) {
                f.out += 1;
            }
            f.state[k] = s;
        }
        f.stopping = stopping;
        let placer = &mut self.placer;
        placer
            .dispatcher
            .workflow_admitted(now, id, &f.wf, &placer.grid);
        self.workflows.flows.insert(id, f);
        out.push(Effect::Continue { job: id });
    }

    /// The driver's call back after a restore: workflow `id` releases what is ready (or
    /// stops what is out, when it was stopping). Whether `id` is a workflow.
    pub(super) fn workflow_retry(&mut self, now: Time, id: JobId, out: &mut Vec<Effect>) -> bool {
        let Some(f) = self.workflows.flows.get(&id) else {
            return false;
        };
        if let Some(why) = f.stopping.clone() {
            self.stop_nodes(id, &why, out);
        }
        self.release_nodes(now, id, out);
        true
    }

    /// What workflow `id` is doing, while it is in the grid.
    pub fn workflow(&self, id: JobId) -> Option<WorkflowStatus<'_>> {
        let f = self.workflows.flows.get(&id)?;
        Some(WorkflowStatus {
            nodes: &f.state,
            stopping: f.stopping.as_deref(),
        })
    }

    /// Node `k`'s parents in workflow `w`: each one's position and the ids its runs take, the
    /// first run first (a driver finds the completed one among its records).
    pub fn parent_runs(&self, w: JobId, k: usize) -> Vec<(usize, Vec<JobId>)> {
        let Some(f) = self.workflows.flows.get(&w) else {
            return Vec::new();
        };
        (f.wf.parents(k).iter())
            .map(|&p| {
                let p = p as usize;
                let runs = f.wf.nodes()[p].retries + 1;
                (p, (1..=runs).map(|a| f.wf.node_id(w, p, a)).collect())
            })
            .collect()
    }

    /// The workflow of the node run whose job id is `id`, the node and the run.
    pub fn node_of(&self, id: JobId) -> Option<(JobId, usize, u32)> {
        match self.workflows.owner(id)? {
            (w, Some((k, run))) => Some((w, k, run)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
