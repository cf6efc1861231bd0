//! HEFT's ranks and placements in worked examples computed by hand, directly and through the grid
//! runner.

use super::*;
use crate::dispatch::{ClusterCaps, ClusterLoad, DispatchConfig, DispatchKind};
use crate::grid::{Effect, GridConfig, GridRunner, GridSettings, Input, SiteSpec};
use crate::model::{Node, Outcome, WorkflowText};

/// A node of `procs` processors and estimate `est` s (benchmark 100) after `parents`.
fn node(name: &str, parents: &[&str], procs: u32, est: i64) -> Node {
    let mut n = crate::model::workflow::tests::node(name, parents);
    n.job = Job::new(0, 0, procs, est, est);
    n.job.benchmark = Some(100);
    n
}

fn workflow(nodes: Vec<Node>) -> Workflow {
    Workflow::new(WorkflowText {
        name: "w".into(),
        nodes,
    })
    .unwrap()
}

/// Site 0: two processors of benchmark 100; site 1: one processor of benchmark 200 (twice as
/// fast); no polled backlog.
fn two_sites() -> GridState {
    let mut g = GridState::single_machines(&[2, 1]);
    g.caps[0].benchmark = Some(100);
    g.caps[1].benchmark = Some(200);
    g.load = Some(vec![ClusterLoad::default(); 2]);
    g
}

/// The worked example's DAG, nodes in this order (ids 101..=107 in workflow 100):
///
/// ```text
/// A (40 s) ──┬─> B (80 s, 2 procs) ──┐
///            ├─> C (40 s) ───────────┴─> E (16 s) ──┐
///            └─> D (12 s) ──────────────────────────┼─> F (8 s)
/// X (32 s) ─────────────────────────────────────────┘
/// ```
fn example() -> Workflow {
    workflow(vec![
        node("A", &[], 1, 40),
        node("X", &[], 1, 32),
        node("B", &["A"], 2, 80),
        node("C", &["A"], 1, 40),
        node("D", &["A"], 1, 12),
        node("E", &["B", "C"], 1, 16),
        node("F", &["X", "D", "E"], 1, 8),
    ])
}

/// Mean costs: a one-processor node takes `e` at site 0 and `e / 2` at site 1, mean `3e / 4`;
/// B (two processors) runs at site 0 only, mean 80. So w̄ = A 30, X 24, B 80, C 30, D 9, E 12,
/// F 6, and the upward ranks (no links: communication costs zero) are F = 6, E = 12 + 6 = 18,
/// D = 9 + 6 = 15, C = 30 + 18 = 48, B = 80 + 18 = 98, X = 24 + 6 = 30,
/// A = 30 + max(98, 48, 15) = 128.
#[test]
fn upward_ranks_of_the_worked_example_by_hand() {
    let g = two_sites();
    let wf = example();
    assert_eq!(upward_ranks(&wf, &g), [128, 30, 98, 48, 15, 18, 6]);
    let mut h = Heft::new();
    h.workflow_admitted(0, JobId(100), &wf, &g);
    let ranks: Vec<i128> = (101..=107).map(|i| h.rank(JobId(i))).collect();
    assert_eq!(ranks, [128, 30, 98, 48, 15, 18, 6]);
    assert_eq!(h.rank(JobId(108)), 0, "not a node");
    h.workflow_over(JobId(100));
    assert_eq!(h.rank(JobId(101)), 0, "forgotten with its workflow");
    assert!(h.ranks.is_empty() && h.flows.is_empty());
}

/// With links and A declaring a 50 MB output: `c̄(A → child) = L̄ + data / B̄` = 1 s + 5 s over
/// links of 1 s latency and 10 MB/s, so A = 30 + max(98, 48, 15) + 6 = 134; the other ranks stay.
/// Over links of 10 and 30 MB/s (B̄ = 20 MB/s) and no latency, 50 MB cost 2.5 s, rounded up to 3.
#[test]
fn upward_ranks_count_what_a_parent_passes_over_the_mean_link() {
    use crate::dispatch::{Link, Network, Transfers, mean_comm};
    use crate::model::DataOut;
    let mut g = two_sites();
    let link = Link {
        bytes_per_s: 10_000_000,
        latency_ms: 1000,
    };
    g.transfers = Transfers::new(Some(Network::uniform(2, link, link)), false);
    let mut nodes = example().nodes().to_vec();
    nodes[0].outputs = vec![DataOut {
        name: "a.out".into(),
        bytes: 50_000_000,
    }];
    let wf = workflow(nodes);
    assert_eq!(upward_ranks(&wf, &g), [134, 30, 98, 48, 15, 18, 6]);
    let mut net = Network::uniform(2, link, link);
    net.between[0][1] = Link {
        bytes_per_s: 10_000_000,
        latency_ms: 0,
    };
    net.between[1][0] = Link {
        bytes_per_s: 30_000_000,
        latency_ms: 0,
    };
    g.transfers = Transfers::new(Some(net), false);
    assert_eq!(mean_comm(50_000_000, &g), 3);
    assert_eq!(mean_comm(0, &g), 0);
    assert_eq!(mean_comm(50_000_000, &two_sites()), 0, "no links, no cost");
}

/// Releases the held jobs at `now`: (job, site) in the order placed.
fn pass(h: &mut Heft, now: Time, g: &GridState, jobs: &[(u64, &Job)]) -> Vec<(u64, u32)> {
    for (id, j) in jobs {
        let mut j = (*j).clone();
        j.id = JobId(*id);
        assert_eq!(h.dispatch(now, &j, 1, g), Placement::Hold);
    }
    let mut out = Vec::new();
    h.release(now, g, &mut out);
    assert_eq!(h.held(), 0);
    out.iter()
        .map(|r| match r.placement {
            Placement::Cluster(c) => (r.job.0, c.0),
            ref other => panic!("{other:?}"),
        })
        .collect()
}

/// Each node released when its parents have ended, every job running for its ETC. By hand:
///
/// * t = 0, A (128) then X (30). A: site 0 [0, 40), site 1 [0, 20) → site 1. X: site 0 [0, 32),
///   site 1 after A [20, 36) → site 0.
/// * t = 20, A ended; B (98), C (48), D (15). B runs at site 0 only and needs both processors,
///   one busy with X until 32: [32, 112). C: site 0 has one processor free for the 12 s before
///   B, too short for 40 s, so [112, 152); site 1 [20, 40) → site 1. D: site 0's gap [20, 32)
///   holds its 12 s exactly (insertion before B, placed earlier in the pass); site 1 after C
///   [40, 46) → site 0, finishing at 32.
/// * t = 112, B ended (X, D at 32, C at 40): E: site 0 [112, 128), site 1 [112, 120) → site 1.
/// * t = 120, E ended: F: site 0 [120, 128), site 1 [120, 124) → site 1. Makespan 124.
#[test]
fn heft_places_the_worked_example_as_computed_by_hand() {
    let g = two_sites();
    let wf = example();
    let mut h = Heft::new();
    h.workflow_admitted(0, JobId(100), &wf, &g);
    let job = |k: usize| &wf.nodes()[k].job;
    let ended = |h: &mut Heft, t: Time, ids: &[(u64, u32)]| {
        for &(id, c) in ids {
            h.job_ended(t, JobId(id), ClusterId(c));
        }
    };

    assert_eq!(
        pass(&mut h, 0, &g, &[(101, job(0)), (102, job(1))]),
        [(101, 1), (102, 0)]
    );
    assert_eq!(
        h.planned[&JobId(101)],
        Planned {
            site: 1,
            start: 0,
            finish: 20,
            procs: 1,
            estimate: 40
        }
    );
    ended(&mut h, 20, &[(101, 1)]);

    let mut out = Vec::new();
    for (id, k) in [(103, 2), (104, 3), (105, 4)] {
        let mut j = job(k).clone();
        j.id = JobId(id);
        h.dispatch(20, &j, 1, &g);
    }
    h.release(20, &g, &mut out);
    let placed: Vec<(u64, u32)> = out
        .iter()
        .map(|r| match r.placement {
            Placement::Cluster(c) => (r.job.0, c.0),
            ref other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(placed, [(103, 0), (104, 1), (105, 0)]);
    let site0 = |start, finish, procs, estimate| Planned {
        site: 0,
        start,
        finish,
        procs,
        estimate,
    };
    assert_eq!(h.planned[&JobId(103)], site0(32, 112, 2, 80));
    assert_eq!(
        h.planned[&JobId(105)],
        site0(20, 32, 1, 12),
        "inserted before B"
    );
    let names = |c: ClusterId| format!("s{}", c.0);
    assert_eq!(
        out[1].reason.text(&names),
        "estimated completion at 40, least of 2; next: s0 152"
    );
    assert_eq!(
        out[2].reason.text(&names),
        "estimated completion at 32, least of 2; next: s1 46"
    );
    ended(&mut h, 32, &[(102, 0), (105, 0)]);
    ended(&mut h, 40, &[(104, 1)]);
    ended(&mut h, 112, &[(103, 0)]);
    assert_eq!(pass(&mut h, 112, &g, &[(106, job(5))]), [(106, 1)]);
    ended(&mut h, 120, &[(106, 1)]);
    assert_eq!(pass(&mut h, 120, &g, &[(107, job(6))]), [(107, 1)]);
    assert_eq!(h.planned[&JobId(107)].finish, 124);
    ended(&mut h, 124, &[(107, 1)]);
    assert!(h.planned.is_empty());
}

/// The polled backlog the record does not explain fills a site from now: 400 processor-seconds
/// on 4 processors is 100 s. With a recorded job of 2 processors planned [0, 50) (100
/// processor-seconds ahead) and 300 polled, 200 are unexplained: a block of the 4 processors for
/// 50 s, beside the recorded job.
#[test]
fn the_unexplained_backlog_delays_a_site() {
    let mut g = GridState::single_machines(&[4, 4]);
    let busy = ClusterLoad {
        waiting_area: 400,
        ..ClusterLoad::default()
    };
    g.load = Some(vec![busy, ClusterLoad::default()]);
    let mut h = Heft::new();
    let lines = h.timelines(0, &g);
    assert_eq!(lines[0].changes, [(0, 4), (100, -4)]);
    assert_eq!(lines[0].earliest_start(0, 1, 10), 100);
    assert!(lines[1].changes.is_empty());
    // A job of 4 processors, 30 s: site 1 at once.
    assert_eq!(
        pass(&mut h, 0, &g, &[(1, &Job::new(1, 0, 4, 30, 30))]),
        [(1, 1)]
    );
    h.restore(
        &Job::new(2, 0, 2, 50, 50),
        1,
        &Placement::Cluster(ClusterId(0)),
        0,
    );
    g.load.as_mut().unwrap()[0].waiting_area = 300;
    let lines = h.timelines(0, &g);
    assert_eq!(lines[0].changes, [(0, 2), (0, 4), (50, -2), (50, -4)]);
    // Site 1 is held by job 1 until 30 (its own polled load not reported: the record stands).
    assert_eq!(lines[1].changes, [(0, 4), (30, -4)]);
    // A one-processor job of 40 s: site 0 from 50 (90), site 1 from 30 (70).
    assert_eq!(
        pass(&mut h, 0, &g, &[(3, &Job::new(3, 0, 1, 40, 40))]),
        [(3, 1)]
    );
}

/// The sites report areas in the jobs' estimates as given: a job of estimate 40 (benchmark 100)
/// placed at a site twice as fast runs [0, 20) there, and the 40 processor-seconds the site then
/// reports of it are explained; 10 s later, running since 0, it is reported as 30.
#[test]
fn the_record_is_subtracted_in_the_sites_units() {
    let mut g = two_sites();
    let mut h = Heft::new();
    let mut j = Job::new(1, 0, 1, 40, 40);
    j.benchmark = Some(100);
    assert_eq!(pass(&mut h, 0, &g, &[(1, &j)]), [(1, 1)]);
    g.load.as_mut().unwrap()[1].waiting_area = 40;
    assert_eq!(h.timelines(0, &g)[1].changes, [(0, 1), (20, -1)]);
    g.load.as_mut().unwrap()[1] = ClusterLoad {
        running_area: 30,
        ..ClusterLoad::default()
    };
    assert_eq!(h.timelines(10, &g)[1].changes, [(10, 1), (20, -1)]);
    // Reported 90 instead: 60 unexplained, a block of the one processor for 60 s from 10.
    g.load.as_mut().unwrap()[1].running_area = 90;
    assert_eq!(
        h.timelines(10, &g)[1].changes,
        [(10, 1), (10, 1), (20, -1), (70, -1)]
    );
}

/// Insertion on a multi-processor timeline: the first instant with enough processors free for
/// the whole duration, a gap before later intervals counting.
#[test]
fn earliest_start_finds_the_first_gap_that_holds_the_job() {
    let mut t = Timeline {
        procs: 4,
        changes: Vec::new(),
    };
    t.add(0, 10, 3);
    t.add(20, 40, 4);
    t.add(45, 60, 2);
    // 1 processor: free at 0 (3 used) for 20 s.
    assert_eq!(t.earliest_start(0, 1, 20), 0);
    // 1 processor for 21 s: the gap [0, 20) is too short; [40, ∞) has 2 to 4 free.
    assert_eq!(t.earliest_start(0, 1, 21), 40);
    // 2 processors for 10 s: [10, 20).
    assert_eq!(t.earliest_start(0, 2, 10), 10);
    // 3 processors: 10 s in [10, 20); for 11 s, not before 60 ([40, 45) is 5 s).
    assert_eq!(t.earliest_start(0, 3, 10), 10);
    assert_eq!(t.earliest_start(0, 3, 11), 60);
    // From 21 on, 3 processors: the gap [40, 45) holds 5 s, not 6.
    assert_eq!(t.earliest_start(21, 3, 5), 40);
    assert_eq!(t.earliest_start(21, 3, 6), 60);
    // From 12 on, 2 processors for 8 s: [12, 20).
    assert_eq!(t.earliest_start(12, 2, 8), 12);
    assert_eq!(t.earliest_start(12, 2, 9), 40);
    // Zero length at the first instant with room.
    assert_eq!(t.earliest_start(20, 1, 0), 40);
}

/// A runner over one-processor sites of no benchmark, dispatching by HEFT.
fn runner(sites: usize) -> GridRunner {
    let sites = (0..sites)
        .map(|i| SiteSpec {
            name: format!("s{i}"),
            caps: ClusterCaps {
                cluster: ClusterId(i as u32),
                up: true,
                total_procs: 1,
                max_machine_procs: 1,
                licences: Vec::new(),
                benchmark: None,
                max_memory_kb: None,
            },
            max_estimate: None,
            machines: None,
            stages: true,
            users: None,
            reserves: true,
        })
        .collect();
    GridRunner::from_config(&GridConfig {
        sites,
        dispatch: DispatchConfig::new(DispatchKind::Heft),
        classifier: None,
        settings: GridSettings::default(),
        classifier_state: None,
        usage_state: None,
    })
    .unwrap()
}

use crate::grid::tests::on;

fn placed(effects: &[Effect]) -> Vec<(u64, usize)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Place { job, site, .. } => Some((job.0, *site)),
            _ => None,
        })
        .collect()
}

/// Workflow 10: r (10 s) → a (10 s), b (50 s), c (30 s); ids r 11, a 12, b 13, c 14; ranks r 60,
/// a 10, b 50, c 30. Two one-processor sites. r goes to site 0 (a tie: the lower id); once it
/// ended, the pass places b, c, a in rank order: b at site 0 [10, 60) (a tie), c at site 1
/// [10, 40), a after c at site 1 [40, 50) rather than after b at site 0 (70).
#[test]
fn the_grid_runner_places_a_workflow_s_ready_nodes_in_rank_order() {
    let mut r = runner(2);
    let wf = workflow(vec![
        node("r", &[], 1, 10),
        node("a", &["r"], 1, 10),
        node("b", &["r"], 1, 50),
        node("c", &["r"], 1, 30),
    ]);
    let fx = on(
        &mut r,
        0,
        Input::SubmitWorkflow {
            id: JobId(10),
            workflow: Box::new(wf),
        },
    );
    assert!(placed(&fx).is_empty(), "held: {fx:?}");
    assert_eq!(placed(&on(&mut r, 0, Input::Release)), [(11, 0)]);
    let site = 0;
    on(
        &mut r,
        10,
        Input::Claimed {
            job: JobId(11),
            site,
        },
    );
    let fx = on(
        &mut r,
        10,
        Input::Ended {
            job: JobId(11),
            site,
            outcome: Outcome::Completed,
            exit: None,
        },
    );
    let nodes: Vec<u64> = (fx.iter())
        .filter_map(|e| match e {
            Effect::Node { job, .. } => Some(job.0),
            _ => None,
        })
        .collect();
    assert_eq!(nodes, [12, 13, 14], "released in node order");
    assert!(placed(&fx).is_empty());
    assert_eq!(
        placed(&on(&mut r, 10, Input::Release)),
        [(13, 0), (14, 1), (12, 1)]
    );
    for (job, site, t) in [(14, 1, 40), (12, 1, 50), (13, 0, 60)] {
        on(
            &mut r,
            t,
            Input::Claimed {
                job: JobId(job),
                site,
            },
        );
        let fx = on(
            &mut r,
            t,
            Input::Ended {
                job: JobId(job),
                site,
                outcome: Outcome::Completed,
                exit: None,
            },
        );
        if job == 13 {
            assert!(
                fx.iter().any(|e| matches!(
                    e,
                    Effect::WorkflowOver {
                        outcome: Outcome::Completed,
                        ..
                    }
                )),
                "{fx:?}"
            );
        }
    }
}

/// The tasks of an array node take their node's rank: workflow 10 of `a` (an array of two 40 s
/// tasks, rank 40) and `b` (10 s, rank 10), both ready at once; ids a 11 with tasks 12, 13, b 14.
/// The pass places the tasks before b: without their node's rank they would rank 0, below b's.
#[test]
fn an_array_node_s_tasks_take_its_rank() {
    let mut r = runner(2);
    let mut a = node("a", &[], 1, 40);
    a.job.array = Some(Box::new(crate::model::ArraySpec::parse("0-1", 10).unwrap()));
    let wf = workflow(vec![a, node("b", &[], 1, 10)]);
    on(
        &mut r,
        0,
        Input::SubmitWorkflow {
            id: JobId(10),
            workflow: Box::new(wf),
        },
    );
    let order: Vec<u64> = placed(&on(&mut r, 0, Input::Release))
        .into_iter()
        .map(|(job, _)| job)
        .collect();
    assert_eq!(order, [12, 13, 14]);
}
