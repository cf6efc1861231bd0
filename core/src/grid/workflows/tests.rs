//! Worked examples of workflows in the grid runner.

use super::NodeState;
use crate::dispatch::DispatchKind;
use crate::grid::tests::{on, runner};
use crate::grid::{Effect, GridRunner, GridSettings, Input};
use crate::model::workflow::tests::node;
use crate::model::{ArraySpec, Job, JobId, Node, Outcome, Workflow, WorkflowText};

fn workflow(nodes: Vec<Node>) -> Box<Workflow> {
    Box::new(
        Workflow::new(WorkflowText {
            name: "w".into(),
            nodes,
        })
        .unwrap(),
    )
}

/// a → {b, c} → d, b retried once.
fn diamond() -> Vec<Node> {
    let mut b = node("b", &["a"]);
    b.retries = 1;
    vec![node("a", &[]), b, node("c", &["a"]), node("d", &["b", "c"])]
}

fn submit(r: &mut GridRunner, t: i64, id: u64, nodes: Vec<Node>) -> Vec<Effect> {
    on(
        r,
        t,
        Input::SubmitWorkflow {
            id: JobId(id),
            workflow: workflow(nodes),
        },
    )
}

/// The nodes released by `effects`, as (job, node, attempt), each followed by its placement.
fn released(effects: &[Effect]) -> Vec<(u64, u32, u32)> {
    let mut got = Vec::new();
    for (i, e) in effects.iter().enumerate() {
        if let Effect::Node {
            job, node, attempt, ..
        } = e
        {
            assert!(
                matches!(effects.get(i + 1), Some(Effect::Place { job: j, .. }) if j == job),
                "{effects:?}"
            );
            got.push((job.0, *node, *attempt));
        }
    }
    got
}

/// Job `job` runs at site 0 and ends at `t` with `outcome` and `exit`.
fn end(r: &mut GridRunner, t: i64, job: u64, outcome: Outcome, exit: Option<i32>) -> Vec<Effect> {
    on(
        r,
        t,
        Input::Claimed {
            job: JobId(job),
            site: 0,
        },
    );
    on(
        r,
        t,
        Input::Ended {
            job: JobId(job),
            site: 0,
            outcome,
            exit,
        },
    )
}

fn over(effects: &[Effect]) -> Option<(Outcome, Vec<u32>, Option<String>)> {
    effects.iter().find_map(|e| match e {
        Effect::WorkflowOver {
            outcome, done, why, ..
        } => Some((*outcome, done.clone(), why.clone())),
        _ => None,
    })
}

/// Each node starts once its parents completed; a failed run with a retry left runs again as
/// the same job; the workflow completes with its last node.
#[test]
fn a_diamond_runs_in_order_with_a_retry() {
    let mut r = runner(DispatchKind::LoadOrdering, &[8], GridSettings::default());
    let e = submit(&mut r, 0, 10, diamond());
    assert_eq!(released(&e), [(11, 0, 1)]);
    // a is 11; b 12, and 13 for its retry; c 14; d 15.
    let e = end(&mut r, 5, 11, Outcome::Completed, Some(0));
    assert_eq!(released(&e), [(12, 1, 1), (14, 2, 1)]);
    let e = end(&mut r, 6, 12, Outcome::Failed, Some(1));
    assert_eq!(released(&e), [(13, 1, 2)], "b again, its second run");
    assert!(released(&end(&mut r, 7, 14, Outcome::Completed, Some(0))).is_empty());
    assert_eq!(
        r.workflow(JobId(10)).unwrap().nodes,
        [
            NodeState::Done,
            NodeState::Out { attempt: 2 },
            NodeState::Done,
            NodeState::Waiting
        ]
    );
    let e = end(&mut r, 8, 13, Outcome::Completed, Some(0));
    assert_eq!(released(&e), [(15, 3, 1)]);
    let e = end(&mut r, 9, 15, Outcome::Completed, Some(0));
    assert_eq!(over(&e), Some((Outcome::Completed, vec![0, 1, 2, 3], None)));
    assert!(r.workflow(JobId(10)).is_none());
}

/// A node that fails for good keeps its descendants from running while the other branch goes
/// on; the rescue names what completed, and a resume runs only the rest.
#[test]
fn a_failed_node_ends_the_workflow_with_its_rescue_and_a_resume_runs_the_rest() {
    let mut r = runner(DispatchKind::LoadOrdering, &[8], GridSettings::default());
    let mut nodes = diamond();
    nodes[1].retry_unless_exit = Some(3);
    nodes.push(node("e", &["c"]));
    submit(&mut r, 0, 10, nodes.clone());
    end(&mut r, 1, 11, Outcome::Completed, Some(0));
    // b exits 3: no retry (its exception).
    assert!(released(&end(&mut r, 2, 12, Outcome::Failed, Some(3))).is_empty());
    let e = end(&mut r, 3, 14, Outcome::Completed, Some(0));
    assert_eq!(released(&e), [(16, 4, 1)], "e, after c; d waits for b");
    let e = end(&mut r, 4, 16, Outcome::Completed, Some(0));
    assert_eq!(
        over(&e),
        Some((
            Outcome::Failed,
            vec![0, 2, 4],
            Some("failed: `b` (exit 3); 1 node(s) never ran".into())
        ))
    );
    // Resumed as workflow 20 with the rescue: b first, then d.
    for n in nodes
        .iter_mut()
        .filter(|n| ["a", "c", "e"].contains(&n.name.as_str()))
    {
        n.done = true;
    }
    let w = workflow(nodes);
    let e = on(
        &mut r,
        10,
        Input::SubmitWorkflow {
            id: JobId(20),
            workflow: w,
        },
    );
    assert_eq!(released(&e), [(22, 1, 1)]);
    let e = end(&mut r, 11, 22, Outcome::Completed, Some(0));
    assert_eq!(released(&e), [(25, 3, 1)]);
    let e = end(&mut r, 12, 25, Outcome::Completed, Some(0));
    assert_eq!(over(&e).unwrap().0, Outcome::Completed);
}

/// Retries run out: the node fails for good after its last run.
#[test]
fn retries_run_out() {
    let mut r = runner(DispatchKind::LoadOrdering, &[8], GridSettings::default());
    let mut a = node("a", &[]);
    a.retries = 2;
    submit(&mut r, 0, 1, vec![a, node("b", &["a"])]);
    assert_eq!(
        released(&end(&mut r, 1, 2, Outcome::Failed, Some(1))),
        [(3, 0, 2)]
    );
    assert_eq!(
        released(&end(&mut r, 2, 3, Outcome::Failed, None)),
        [(4, 0, 3)]
    );
    let e = end(&mut r, 3, 4, Outcome::Failed, Some(1));
    assert_eq!(
        over(&e).unwrap().2.as_deref(),
        Some("failed: `a` (exit 1, after 3 runs); 1 node(s) never ran")
    );
}

/// A node exiting with its abort code stops the nodes out and releases nothing more.
#[test]
fn an_abort_stops_the_running_nodes() {
    let mut r = runner(DispatchKind::LoadOrdering, &[8], GridSettings::default());
    let mut nodes = diamond();
    nodes[2].abort_on_exit = Some(7);
    submit(&mut r, 0, 10, nodes);
    end(&mut r, 1, 11, Outcome::Completed, Some(0));
    let e = end(&mut r, 2, 14, Outcome::Failed, Some(7));
    let why = "workflow 10 aborted: node `c` exited with 7 (its abort condition)";
    assert_eq!(
        e,
        [Effect::Stop {
            job: JobId(12),
            why: why.into()
        }]
    );
    // The driver cancels it as a user would.
    let e = on(&mut r, 3, Input::Cancel { job: JobId(12) });
    let (outcome, done, why) = over(&e).unwrap();
    assert_eq!((outcome, done), (Outcome::Failed, vec![0]));
    assert!(why.unwrap().starts_with("aborted: node `c`"));
}

/// Cancelling the workflow stops its nodes out; it leaves once they are.
#[test]
fn cancelling_a_workflow() {
    let mut r = runner(DispatchKind::LoadOrdering, &[8], GridSettings::default());
    submit(&mut r, 0, 10, diamond());
    end(&mut r, 1, 11, Outcome::Completed, Some(0));
    let e = on(&mut r, 2, Input::Cancel { job: JobId(10) });
    let stopped: Vec<u64> = e
        .iter()
        .filter_map(|e| match e {
            Effect::Stop { job, .. } => Some(job.0),
            _ => None,
        })
        .collect();
    assert_eq!(stopped, [12, 14]);
    assert!(on(&mut r, 3, Input::Cancel { job: JobId(12) }).is_empty());
    let e = on(&mut r, 3, Input::Cancel { job: JobId(14) });
    assert_eq!(
        over(&e),
        Some((
            Outcome::Cancelled { started: true },
            vec![0],
            Some("cancelled".into())
        ))
    );
}

/// A node no site can run refuses the whole workflow at the door, naming the node; ids taken
/// refuse it too; a job cannot take a node's id.
#[test]
fn admission_is_of_the_whole_workflow() {
    let mut r = runner(DispatchKind::LoadOrdering, &[8], GridSettings::default());
    let mut nodes = diamond();
    nodes[3].job.procs = 64;
    let e = submit(&mut r, 0, 10, nodes);
    let Some(Effect::Refuse { why, .. }) = e.first() else {
        panic!("{e:?}");
    };
    assert!(
        why.starts_with("workflow 10: node `d`: 64 processors"),
        "{why}"
    );
    assert!(r.workflow(JobId(10)).is_none());
    on(
        &mut r,
        0,
        Input::Submit {
            job: Job::new(13, 0, 1, 10, 10),
            priority: None,
        },
    );
    let e = submit(&mut r, 0, 10, diamond());
    let Some(Effect::Refuse { why, .. }) = e.first() else {
        panic!("{e:?}");
    };
    assert_eq!(
        why,
        "workflow 10: its nodes take the ids 10 to 15, and job 13 has one"
    );
    submit(&mut r, 0, 20, diamond());
    let mut out = Vec::new();
    let twice = r.on(
        0,
        Input::Submit {
            job: Job::new(23, 0, 1, 10, 10),
            priority: None,
        },
        &mut out,
    );
    assert_eq!(twice, Err(crate::grid::GridError::DuplicateJob(JobId(23))));
}

/// An array node's child waits for every task of it.
#[test]
fn an_array_node() {
    let mut r = runner(DispatchKind::LoadOrdering, &[8], GridSettings::default());
    let mut a = node("a", &[]);
    a.job.array = Some(Box::new(ArraySpec::parse("0-1", 10).unwrap()));
    submit(&mut r, 0, 10, vec![a, node("b", &["a"])]);
    // a is 11, its tasks 12 and 13, b 14.
    assert!(released(&end(&mut r, 1, 12, Outcome::Completed, Some(0))).is_empty());
    let e = end(&mut r, 2, 13, Outcome::Completed, Some(0));
    assert_eq!(released(&e), [(14, 1, 1)]);
    assert_eq!(r.node_of(JobId(14)), Some((JobId(10), 1, 1)));
    assert_eq!(r.node_of(JobId(13)), None);
}

/// Restored after its driver restarted, a workflow releases what is ready on the call back,
/// with its nodes out back as jobs.
#[test]
fn a_restored_workflow_goes_on() {
    let mut r = runner(DispatchKind::LoadOrdering, &[8], GridSettings::default());
    let nodes = vec![
        NodeState::Done,
        NodeState::Out { attempt: 1 },
        NodeState::Done,
        NodeState::Waiting,
    ];
    let e = on(
        &mut r,
        50,
        Input::RestoreWorkflow {
            id: JobId(10),
            workflow: workflow(diamond()),
            nodes,
            stopping: None,
        },
    );
    assert_eq!(e, [Effect::Continue { job: JobId(10) }]);
    let mut b = Job::new(12, 0, 1, 100, 100);
    b.submit = 40;
    on(
        &mut r,
        50,
        Input::Restore {
            job: b,
            priority: 1,
            at: crate::grid::Restored::Site {
                site: 0,
                claimed: true,
                since: 45,
            },
        },
    );
    assert!(released(&on(&mut r, 50, Input::Retry { job: JobId(10) })).is_empty());
    let e = on(
        &mut r,
        60,
        Input::Ended {
            job: JobId(12),
            site: 0,
            outcome: Outcome::Completed,
            exit: Some(0),
        },
    );
    assert_eq!(released(&e), [(15, 3, 1)]);
}
