//! The DAG view of a workflow (HTCondor DAGMan's nodes and edges): one box per node in the colour
//! of its state, in columns by depth (a node one column right of its deepest parent, the roots
//! first, each column in the order the nodes were given), an edge from each parent to its child,
//! each box linked to the page of the node's latest run.

use super::html::{esc, state_colour};
use gridsched_proto::v1::{self, JobState, WorkflowNodeState as N};
use std::collections::HashMap;
use std::fmt::Write;

const BOX_W: f64 = 150.0;
const BOX_H: f64 = 30.0;
const COL: f64 = 200.0;
const ROW: f64 = 42.0;
const PAD: f64 = 10.0;

/// A node's state as the job state whose colour it takes, and its name.
fn look(s: N) -> (JobState, &'static str) {
    match s {
        N::Waiting => (JobState::Accepted, "waiting"),
        N::Queued => (JobState::Queued, "queued"),
        N::Running => (JobState::Running, "running"),
        N::Completed => (JobState::Completed, "completed"),
        N::Failed => (JobState::Failed, "failed"),
        N::Cancelled => (JobState::Cancelled, "cancelled"),
        N::Never => (JobState::Cancelled, "never ran"),
        N::DoneBefore => (JobState::Completed, "done before"),
    }
}

/// Each node's column: one right of its deepest parent (parents named but unknown are ignored;
/// the core refused cycles at the door).
fn depths(nodes: &[v1::WorkflowNodeStatus]) -> Vec<usize> {
    let index: HashMap<&str, usize> = (nodes.iter().enumerate())
        .map(|(k, n)| (n.name.as_str(), k))
        .collect();
    let mut depth = vec![0usize; nodes.len()];
    // Longest path by relaxation, at most one round per node.
    for _ in 0..nodes.len() {
        let mut changed = false;
        for (k, n) in nodes.iter().enumerate() {
            for p in &n.parents {
                if let Some(&j) = index.get(p.as_str())
                    && depth[k] < depth[j] + 1
                {
                    depth[k] = depth[j] + 1;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    depth
}

/// The SVG of `p`'s nodes and edges.
pub fn svg(p: &v1::WorkflowProgress) -> String {
    let depth = depths(&p.nodes);
    let mut rows = vec![0usize; depth.iter().max().map_or(1, |d| d + 1)];
    let mut at = Vec::with_capacity(p.nodes.len());
    for &d in &depth {
        at.push((d, rows[d]));
        rows[d] += 1;
    }
    let tallest = rows.iter().max().copied().unwrap_or(1);
    let width = PAD * 2.0 + (rows.len() as f64 - 1.0) * COL + BOX_W;
    let height = PAD * 2.0 + (tallest as f64 - 1.0) * ROW + BOX_H;
    let pos = |k: usize| {
        let (c, r) = at[k];
        (PAD + c as f64 * COL, PAD + r as f64 * ROW)
    };
    let index: HashMap<&str, usize> = (p.nodes.iter().enumerate())
        .map(|(k, n)| (n.name.as_str(), k))
        .collect();
    let mut s = format!(
        "<svg id=\"dag\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" \
         height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">"
    );
    for (k, n) in p.nodes.iter().enumerate() {
        let (x, y) = pos(k);
        for parent in &n.parents {
            if let Some(&j) = index.get(parent.as_str()) {
                let (px, py) = pos(j);
                let _ = write!(
                    s,
                    "<line x1=\"{}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\" stroke=\"#999\"/>",
                    px + BOX_W,
                    py + BOX_H / 2.0,
                    y + BOX_H / 2.0
                );
            }
        }
    }
    for (k, n) in p.nodes.iter().enumerate() {
        let (x, y) = pos(k);
        let (state, said) = look(n.state());
        let fill = state_colour(state as i32);
        let dashed = match n.state() {
            N::DoneBefore | N::Never | N::Waiting => " stroke-dasharray=\"4 3\"",
            _ => "",
        };
        let run = match n.run {
            0 | 1 => String::new(),
            r => format!(" (run {r})"),
        };
        let title = format!("{}: {said}{run}. {}", n.name, n.reason);
        let rect = format!(
            "<g class=\"dag-node\" data-node=\"{name}\" data-state=\"{said}\"><title>{t}</title>\
             <rect x=\"{x}\" y=\"{y}\" width=\"{BOX_W}\" height=\"{BOX_H}\" rx=\"4\" \
             fill=\"{fill}\" fill-opacity=\"0.85\" stroke=\"#333\"{dashed}/>\
             <text x=\"{tx}\" y=\"{ty}\" fill=\"#fff\">{name}{run}</text></g>",
            name = esc(&n.name),
            t = esc(&title),
            tx = x + 6.0,
            ty = y + BOX_H / 2.0 + 4.0,
        );
        if n.job_id > 0 {
            let _ = write!(s, "<a href=\"/job/{}\">{rect}</a>", n.job_id);
        } else {
            s.push_str(&rect);
        }
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, parents: &[&str], state: N, job: u64) -> v1::WorkflowNodeStatus {
        v1::WorkflowNodeStatus {
            name: name.into(),
            parents: parents.iter().map(|p| p.to_string()).collect(),
            state: state.into(),
            job_id: job,
            ..Default::default()
        }
    }

    /// Columns by depth, an edge per parent, a link per node that ran, a box per node.
    #[test]
    fn a_diamond_and_a_tail() {
        let p = v1::WorkflowProgress {
            nodes: vec![
                node("a", &[], N::Completed, 2),
                node("b", &["a"], N::Running, 3),
                node("c", &["a"], N::Failed, 4),
                node("d", &["b", "c"], N::Waiting, 0),
                node("e", &["a", "d"], N::Waiting, 0),
            ],
        };
        assert_eq!(depths(&p.nodes), [0, 1, 1, 2, 3]);
        let s = svg(&p);
        assert_eq!(s.matches("<line ").count(), 6);
        assert_eq!(s.matches("class=\"dag-node\"").count(), 5);
        assert_eq!(s.matches("<a href=\"/job/").count(), 3);
        assert!(s.contains("data-node=\"c\" data-state=\"failed\""), "{s}");
        assert!(s.contains("width=\"770\""), "four columns: {s}");
    }
}
