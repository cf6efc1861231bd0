//! Workflows: jobs (or arrays) as the nodes of a directed acyclic graph, each starting once its
//! parents have completed, with per-node retries, an abort condition and a rescue of what
//! completed (HTCondor's DAGMan, as its manual documents it: `PARENT ... CHILD`, `RETRY n
//! UNLESS-EXIT v`, `ABORT-DAG-ON node v`, the rescue DAG marking nodes `DONE`; the workflow model
//! of the grid meta-schedulers GridWay and KOALA). The grid gives the nodes ids of their own: a
//! workflow of id `W` takes the ids after it, node by node in the order given, each node one id
//! per run it may have (`1 + retries`: a retry is a new job, as DAGMan submits it anew), an array
//! node's run followed by its tasks' ids.

use super::{DataOut, Job, JobId};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};

/// The most nodes a workflow may have.
pub const MAX_NODES: usize = 100_000;

/// The most retries a node may have.
pub const MAX_RETRIES: u32 = 100;

/// One node of a workflow.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Node {
    /// Its name, unique in the workflow.
    pub name: String,
    /// The nodes that must complete before it starts, by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parents: Vec<String>,
    /// How many times it runs again after a failed run (DAGMan's `RETRY n`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retries: u32,
    /// A failed run with this exit code is not retried (DAGMan's `UNLESS-EXIT v`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_unless_exit: Option<i32>,
    /// A run ending with this exit code aborts the whole workflow: its running nodes are
    /// stopped and nothing more starts (DAGMan's `ABORT-DAG-ON node v`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abort_on_exit: Option<i32>,
    /// Completed in an earlier run of the workflow (a rescue's `DONE`): not run again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub done: bool,
    /// The files it writes that its children read: each child stages them in from the site this
    /// node ran at, under the key `<workflow id>/<node>/<name>`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<DataOut>,
    /// The job it runs (its id is given by the workflow's; an array node runs its tasks).
    pub job: Job,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// A checked workflow: names unique, parents known, no cycle.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "WorkflowText", into = "WorkflowText")]
pub struct Workflow {
    name: String,
    nodes: Vec<Node>,
    /// Per node, its parents' positions.
    parents: Vec<Vec<u32>>,
    /// Per node, its children's positions.
    children: Vec<Vec<u32>>,
    /// Per node, its first run's id's offset after the workflow's id (1 for the first node).
    offsets: Vec<u64>,
    /// The ids it takes after its own.
    span: u64,
}

/// A workflow as written: its name and nodes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkflowText {
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// Its nodes.
    pub nodes: Vec<Node>,
}

/// Why a workflow cannot be accepted, naming the node.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WorkflowError {
    /// No node.
    #[error("a workflow needs at least one node")]
    Empty,
    /// Too many nodes.
    #[error("{0} nodes is more than the most a workflow may have ({MAX_NODES})")]
    TooLarge(usize),
    /// A node without a name, or with a name that is not a plain word.
    #[error("node {position}: `{name}` is not a node name (letters, digits, `-`, `_`, `.`)")]
    BadName {
        /// Its position, from 1.
        position: usize,
        /// Its name.
        name: String,
    },
    /// Two nodes of one name.
    #[error("node `{0}` is named twice")]
    Duplicate(String),
    /// A parent that is not a node.
    #[error("node `{node}`: its parent `{parent}` is not a node of the workflow")]
    UnknownParent {
        /// The node.
        node: String,
        /// The parent named.
        parent: String,
    },
    /// A cycle, named node by node.
    #[error("the workflow has a cycle: {}", .0.join(" → "))]
    Cycle(Vec<String>),
    /// A node's job is itself a task of an array.
    #[error("node `{0}`: its job is a task of an array")]
    Task(String),
    /// Too many retries.
    #[error("node `{0}`: more than {MAX_RETRIES} retries")]
    Retries(String),
    /// An output without a name, or two of one name.
    #[error("node `{node}`: output `{output}` is unnamed or named twice")]
    Output {
        /// The node.
        node: String,
        /// The output's name.
        output: String,
    },
}

impl Workflow {
    /// Checks `text`: at least one node, names unique words, every parent a node, no cycle
    /// (the error names one, node by node).
    pub fn new(text: WorkflowText) -> Result<Workflow, WorkflowError> {
        let WorkflowText { name, nodes } = text;
        if nodes.is_empty() {
            return Err(WorkflowError::Empty);
        }
        if nodes.len() > MAX_NODES {
            return Err(WorkflowError::TooLarge(nodes.len()));
        }
        let mut by_name = BTreeMap::new();
        for (i, n) in nodes.iter().enumerate() {
            let word = !n.name.is_empty()
                && n.name.len() <= 128
                && n.name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
            if !word {
                return Err(WorkflowError::BadName {
                    position: i + 1,
                    name: n.name.clone(),
                });
            }
            if by_name.insert(n.name.as_str(), i as u32).is_some() {
                return Err(WorkflowError::Duplicate(n.name.clone()));
            }
            if n.job.task.is_some() {
                return Err(WorkflowError::Task(n.name.clone()));
            }
            if n.retries > MAX_RETRIES {
                return Err(WorkflowError::Retries(n.name.clone()));
            }
            for (k, o) in n.outputs.iter().enumerate() {
                if o.name.is_empty() || n.outputs[..k].iter().any(|x| x.name == o.name) {
                    return Err(WorkflowError::Output {
                        node: n.name.clone(),
                        output: o.name.clone(),
                    });
                }
            }
        }
        let mut parents = Vec::with_capacity(nodes.len());
        let mut children = vec![Vec::new(); nodes.len()];
        for (i, n) in nodes.iter().enumerate() {
            let mut ps = Vec::with_capacity(n.parents.len());
            for p in &n.parents {
                let &k = by_name
                    .get(p.as_str())
                    .ok_or_else(|| WorkflowError::UnknownParent {
                        node: n.name.clone(),
                        parent: p.clone(),
                    })?;
                if !ps.contains(&k) {
                    ps.push(k);
                    children[k as usize].push(i as u32);
                }
            }
            parents.push(ps);
        }
        let mut offsets = Vec::with_capacity(nodes.len());
        let mut next = 1u64;
        for n in &nodes {
            offsets.push(next);
            next += run_span(n) * (1 + u64::from(n.retries));
        }
        let w = Workflow {
            name,
            nodes,
            parents,
            children,
            offsets,
            span: next - 1,
        };
        if let Some(cycle) = w.cycle() {
            return Err(WorkflowError::Cycle(cycle));
        }
        Ok(w)
    }

    /// Kahn's order of the nodes from those without parents, and per node its parents left
    /// out of it (those on or behind a cycle).
    fn kahn(&self) -> (Vec<usize>, Vec<usize>) {
        let mut missing: Vec<usize> = self.parents.iter().map(Vec::len).collect();
        let mut ready: VecDeque<usize> = (0..self.len()).filter(|&k| missing[k] == 0).collect();
        let mut order = Vec::with_capacity(self.len());
        while let Some(k) = ready.pop_front() {
            order.push(k);
            for &c in &self.children[k] {
                missing[c as usize] -= 1;
                if missing[c as usize] == 0 {
                    ready.push_back(c as usize);
                }
            }
        }
        (order, missing)
    }

    /// Its nodes in an order where each comes after its parents (Kahn's, from those without).
    pub fn order(&self) -> Vec<usize> {
        self.kahn().0
    }

    /// A cycle, when there is one: its nodes' names, the first repeated at the end.
    fn cycle(&self) -> Option<Vec<String>> {
        let (order, missing) = self.kahn();
        if order.len() == self.len() {
            return None;
        }
        // Walk back through parents still left: a node left has a parent left, so the walk
        // comes back to a node it passed.
        let mut at = (0..self.len()).find(|&k| missing[k] > 0)?;
        let mut path = Vec::new();
        let mut on_path = vec![usize::MAX; self.len()];
        loop {
            if on_path[at] != usize::MAX {
                // Parent to child, from the node given first.
                let mut ring: Vec<usize> = path[on_path[at]..].iter().rev().copied().collect();
                let first = (0..ring.len()).min_by_key(|&i| ring[i]).unwrap_or(0);
                ring.rotate_left(first);
                ring.push(ring[0]);
                return Some(ring.iter().map(|&k| self.nodes[k].name.clone()).collect());
            }
            on_path[at] = path.len();
            path.push(at);
            at = self.parents[at]
                .iter()
                .map(|&p| p as usize)
                .find(|&p| missing[p] > 0)?;
        }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its nodes, in the order given.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// Node `k`'s parents, by position.
    pub fn parents(&self, k: usize) -> &[u32] {
        &self.parents[k]
    }

    /// Node `k`'s children, by position.
    pub fn children(&self, k: usize) -> &[u32] {
        &self.children[k]
    }

    /// How many nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether it has no node (never, once checked).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The job id of node `k`'s run `attempt` (from 1) in workflow `w`.
    pub fn node_id(&self, w: JobId, k: usize, attempt: u32) -> JobId {
        let run = u64::from(attempt.max(1) - 1);
        JobId(w.0 + self.offsets[k] + run * run_span(&self.nodes[k]))
    }

    /// The node and run whose job id is `id` in workflow `w`, if one is.
    pub fn node_of(&self, w: JobId, id: JobId) -> Option<(usize, u32)> {
        let off = id.0.checked_sub(w.0)?;
        let k = self.offsets.partition_point(|&o| o <= off).checked_sub(1)?;
        let (span, into) = (run_span(&self.nodes[k]), off - self.offsets[k]);
        let run = into / span;
        (into % span == 0 && run <= u64::from(self.nodes[k].retries)).then_some((k, run as u32 + 1))
    }

    /// The ids it takes after its own: per node, one per run it may have, each followed by an
    /// array node's tasks'.
    pub fn span(&self) -> u64 {
        self.span
    }

    /// The last id it takes.
    pub fn last_id(&self, w: JobId) -> JobId {
        JobId(w.0 + self.span())
    }
}

/// The ids one run of node `n` takes: its own, and an array's tasks'.
fn run_span(n: &Node) -> u64 {
    1 + n.job.array.as_ref().map_or(0, |a| a.len() as u64)
}

impl TryFrom<WorkflowText> for Workflow {
    type Error = WorkflowError;

    fn try_from(t: WorkflowText) -> Result<Self, Self::Error> {
        Workflow::new(t)
    }
}

impl From<Workflow> for WorkflowText {
    fn from(w: Workflow) -> WorkflowText {
        WorkflowText {
            name: w.name,
            nodes: w.nodes,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::ArraySpec;

    /// A one-processor node of 100 s after `parents`.
    pub(crate) fn node(name: &str, parents: &[&str]) -> Node {
        Node {
            name: name.into(),
            parents: parents.iter().map(|p| p.to_string()).collect(),
            retries: 0,
            retry_unless_exit: None,
            abort_on_exit: None,
            done: false,
            outputs: Vec::new(),
            job: Job::new(0, 0, 1, 100, 100),
        }
    }

    fn flow(nodes: Vec<Node>) -> Result<Workflow, WorkflowError> {
        Workflow::new(WorkflowText {
            name: "w".into(),
            nodes,
        })
    }

    #[test]
    fn a_cycle_is_refused_naming_it() {
        let e = flow(vec![
            node("a", &[]),
            node("b", &["a", "d"]),
            node("c", &["b"]),
            node("d", &["c"]),
            node("e", &["d"]),
        ])
        .unwrap_err();
        assert_eq!(e.to_string(), "the workflow has a cycle: b → c → d → b");
        let e = flow(vec![node("a", &["a"])]).unwrap_err();
        assert_eq!(e.to_string(), "the workflow has a cycle: a → a");
    }

    #[test]
    fn names_and_parents_are_checked() {
        let e = flow(vec![node("a", &[]), node("a", &[])]).unwrap_err();
        assert_eq!(e, WorkflowError::Duplicate("a".into()));
        let e = flow(vec![node("a", &["z"])]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "node `a`: its parent `z` is not a node of the workflow"
        );
        let e = flow(vec![node("a b", &[])]).unwrap_err();
        assert!(e.to_string().starts_with("node 1: `a b`"), "{e}");
        assert_eq!(flow(vec![]).unwrap_err(), WorkflowError::Empty);
    }

    /// Nodes take the ids after the workflow's, one per run they may have, an array node's run
    /// followed by its tasks'.
    #[test]
    fn ids_follow_the_workflow_s() {
        let mut b = node("b", &["a"]);
        b.job.array = Some(Box::new(ArraySpec::parse("0-3", 10).unwrap()));
        b.retries = 1;
        let mut c = node("c", &["b"]);
        c.retries = 2;
        let w = flow(vec![node("a", &[]), b, c]).unwrap();
        let ids: Vec<u64> = (0..3).map(|k| w.node_id(JobId(10), k, 1).0).collect();
        assert_eq!(ids, [11, 12, 22]);
        assert_eq!(w.node_id(JobId(10), 1, 2), JobId(17));
        assert_eq!(w.node_id(JobId(10), 2, 3), JobId(24));
        assert_eq!(w.span(), 14);
        assert_eq!(w.node_of(JobId(10), JobId(17)), Some((1, 2)));
        assert_eq!(w.node_of(JobId(10), JobId(23)), Some((2, 2)));
        assert_eq!(w.node_of(JobId(10), JobId(13)), None, "a task, not a node");
        assert_eq!(w.node_of(JobId(10), JobId(10)), None);
        assert_eq!(w.children(0), [1]);
        let text = serde_json::to_string(&w).unwrap();
        let back: Workflow = serde_json::from_str(&text).unwrap();
        assert_eq!(back, w);
    }
}
