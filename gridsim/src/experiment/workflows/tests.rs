//! The workflows experiment: its quick run ends every workflow, the streams are deterministic,
//! and the confidence intervals are those computed by hand.

use super::*;
use crate::experiment::intervals::{ci_key, ci95, t975};
use crate::experiment::runner;

fn quick() -> WorkflowsExperiment {
    WorkflowsExperiment::new(&Options {
        quick: true,
        reps: None,
        seed: 1,
        jobs: None,
    })
}

/// Every run of the quick experiment completes every workflow and every node, refusing nothing.
#[test]
fn the_quick_run_completes_every_workflow_and_node() {
    let e = quick();
    let keys = e.runs();
    // 5 variants × 1 load × 6 strategies × 2 repetitions.
    assert_eq!(keys.len(), 60);
    let results = runner::run_keys(&e, keys, 2, false).unwrap();
    for r in &results {
        let m = |name: &str| r.metrics.iter().find(|x| x.0 == name).unwrap().1;
        let what = format!("{} {} rep {}", r.key.algorithm, r.key.variant, r.key.rep);
        assert_eq!(m("workflows"), QUICK_WORKFLOWS as f64, "{what}");
        assert_eq!(m("workflows_completed"), m("workflows"), "{what}");
        assert!(m("nodes") > 0.0, "{what}");
        assert_eq!(m("nodes_completed"), m("nodes"), "{what}");
        assert_eq!(m("rejected"), 0.0, "{what}");
        assert!(m("makespan") > 0.0 && m("slowdown") >= 1.0, "{what}");
        assert!(
            m("utilization") > 0.0 && m("utilization") <= 100.0,
            "{what}"
        );
    }
    let rows: Vec<Row> = results
        .iter()
        .map(|r| {
            let m = r.metrics.iter().map(|(n, v)| (n.to_string(), *v));
            (r.key.clone(), m.collect())
        })
        .collect();
    let mut s = Summary::of(e.name(), &results);
    e.finish_summary(&rows, &mut s);
    assert!(
        s.extra
            .contains_key(&ci_key("makespan", "heft", "montage", 0.9))
    );
    let report = e.report(&s);
    assert!(report.contains("## mixed, offered load 0.9"), "{report}");
    assert!(report.contains("| heft | "), "{report}");
}

/// One seed and variant, one stream, at both loads the same workflows (gaps scaled); ids never
/// overlap.
#[test]
fn streams_are_deterministic_and_share_their_workflows_across_loads() {
    let a = stream("mixed", 0.8, 12, 5).unwrap();
    let b = stream("mixed", 0.8, 12, 5).unwrap();
    assert_eq!(a.workflows, b.workflows);
    let light = stream("mixed", 0.4, 12, 5).unwrap();
    for (x, y) in a.workflows.iter().zip(&light.workflows) {
        assert_eq!((x.id, &x.workflow), (y.id, &y.workflow));
        assert!(y.at >= x.at, "half the load, gaps twice as long");
    }
    assert!(light.workflows[11].at > a.workflows[11].at);
    for w in a.workflows.windows(2) {
        assert!(w[0].workflow.last_id(w[0].id) < w[1].id);
        assert!(w[0].at <= w[1].at);
    }
    assert_eq!(a.workflows[0].at, 0);
    let nodes: usize = a.workflows.iter().map(|w| w.workflow.len()).sum();
    assert_eq!(nodes, a.nodes);
    let other = stream("montage", 0.8, 12, 5).unwrap();
    assert!(
        other
            .workflows
            .iter()
            .all(|w| w.workflow.name().starts_with("montage-"))
    );
    assert!(stream("spiral", 0.8, 1, 5).is_err());
}

/// By hand: 1, 2, 3 have mean 2 and standard deviation 1, so the half-width is
/// t(0.975, 2) / √3 = 4.303 / 1.732 = 2.484; one value has none.
#[test]
fn confidence_intervals_by_hand() {
    let (m, h) = ci95(&[1.0, 2.0, 3.0]);
    assert_eq!(m, 2.0);
    assert!((h - 4.303 / 3f64.sqrt()).abs() < 1e-12);
    assert!(ci95(&[5.0]).1.is_nan());
    assert_eq!(t975(9), 2.262);
    assert_eq!(t975(100), 1.96);
    assert_eq!(capacity(), 184.0);
}
