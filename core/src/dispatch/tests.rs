//! Worked examples of every dispatch strategy, array maintenance, determinism, and the property
//! that no strategy places a job on a cluster that cannot run it or is down.

use super::*;
use crate::model::LicenceId;
use proptest::prelude::*;

fn caps(n: usize) -> Vec<ClusterCaps> {
    (0..n)
        .map(|i| ClusterCaps {
            cluster: ClusterId(i as u32),
            up: true,
            total_procs: 64,
            max_machine_procs: 8,
            licences: vec![LicenceId(0)],
            benchmark: None,
            max_memory_kb: None,
        })
        .collect()
}

fn grid(n: usize) -> GridState {
    GridState {
        caps: caps(n),
        load: None,
        ..Default::default()
    }
}

fn job(id: u64, procs: u32, est: i64) -> Job {
    Job::new(id, 0, procs, est, est)
}

/// Dispatches `j`; a job the strategy holds is placed by a release pass at the same time. The
/// placement and the strategy's reason for it.
fn place(
    d: &mut Box<dyn Dispatcher>,
    j: &Job,
    prio: Priority,
    g: &GridState,
) -> (Placement, Option<Reason>) {
    match d.dispatch(0, j, prio, g) {
        Placement::Hold => {
            let mut out = Vec::new();
            d.release(0, g, &mut out);
            out.into_iter()
                .find(|r| r.job == j.id)
                .map_or((Placement::Hold, None), |r| (r.placement, Some(r.reason)))
        }
        p => (p, d.last_reason()),
    }
}

fn cluster(p: Placement) -> u32 {
    match p {
        Placement::Cluster(c) => c.0,
        other => panic!("expected a cluster, got {other:?}"),
    }
}

#[test]
fn load_prefers_an_idle_cluster_then_the_least_loaded() {
    let mut d = DispatchConfig::new(DispatchKind::Load).build();
    let g = grid(3);
    // Empty grid: the first idle cluster, in id order.
    assert_eq!(cluster(d.dispatch(0, &job(1, 2, 100), 5, &g)), 0);
    assert_eq!(cluster(d.dispatch(0, &job(2, 1, 100), 5, &g)), 1);
    assert_eq!(cluster(d.dispatch(0, &job(3, 1, 50), 5, &g)), 2);
    assert_eq!(d.last_reason(), Some(Reason::Idle { priority: 5 }));
    // Loads at priority 5: c0 200, c1 100, c2 50 -> c2.
    assert_eq!(cluster(d.dispatch(0, &job(4, 1, 10), 5, &g)), 2);
    let names = |c: ClusterId| ["alpha", "beta", "gamma"][c.index()].to_string();
    assert_eq!(
        d.last_reason().unwrap().text(&names),
        "Load 50 at priority 5, least of 3; next: beta 100"
    );
    // A priority-6 job sees every cluster idle (no job of priority >= 6): the first one.
    assert_eq!(cluster(d.dispatch(0, &job(5, 1, 10), 6, &g)), 0);
    // Job 5 (priority 6) now counts at priority 5 on c0: 210 vs 100 vs 60.
    assert_eq!(cluster(d.dispatch(0, &job(6, 1, 10), 5, &g)), 2);
    let a = d.arrays(3);
    assert_eq!((a[0].load[5], a[0].load[6], a[0].count[1]), (210, 10, 2));
    // Terminations free the arrays: c0 becomes idle for priority 5.
    d.job_ended(10, JobId(1), ClusterId(0));
    d.job_ended(10, JobId(5), ClusterId(0));
    assert_eq!(cluster(d.dispatch(0, &job(7, 1, 10), 5, &g)), 0);
}

#[test]
fn ordering_spreads_jobs_of_a_priority() {
    let mut d = DispatchConfig::new(DispatchKind::Ordering).build();
    let g = grid(3);
    let mut seen = [0; 3];
    for i in 0..6 {
        seen[cluster(d.dispatch(0, &job(i, 1, 10), 7, &g)) as usize] += 1;
    }
    assert_eq!(
        seen,
        [2, 2, 2],
        "minimum count first: two rounds over the three clusters"
    );
    // Lower-priority jobs elsewhere do not count for a priority-7 job.
    let mut d = DispatchConfig::new(DispatchKind::Ordering).build();
    d.dispatch(0, &job(10, 1, 10), 2, &g);
    d.dispatch(0, &job(11, 1, 10), 2, &g);
    let a = d.arrays(3);
    let c7 = (0..3).filter(|&c| a[c].count[7] == 0).count();
    assert_eq!(c7, 3);
}

#[test]
fn load_then_ordering_breaks_load_ties_by_count() {
    let mut d = DispatchConfig::new(DispatchKind::LoadOrdering).build();
    let g = grid(2);
    // c0: one job of load 100; c1: two jobs of load 50: equal load at priority 3.
    d.dispatch(0, &job(1, 1, 100), 3, &g);
    d.dispatch(0, &job(2, 1, 50), 3, &g);
    d.dispatch(0, &job(3, 1, 50), 3, &g);
    let a = d.arrays(2);
    assert_eq!((a[0].load[3], a[1].load[3]), (100, 100));
    // Tie on load; Ordering picks the cluster with fewer jobs: c0.
    assert_eq!(cluster(d.dispatch(0, &job(4, 1, 10), 3, &g)), 0);
}

#[test]
fn random_tie_breaks_are_seeded() {
    let g = grid(4);
    let picks = |seed| {
        let mut d = DispatchConfig {
            seed,
            ..DispatchConfig::new(DispatchKind::Ordering)
        }
        .build();
        (0..20)
            .map(|i| cluster(d.dispatch(0, &job(i, 1, 10), 1, &g)))
            .collect::<Vec<_>>()
    };
    assert_eq!(picks(3), picks(3));
    assert_ne!(picks(3), picks(4));
}

#[test]
fn brokers_read_the_site_state() {
    let mut g = grid(3);
    g.load = Some(vec![
        ClusterLoad {
            free_procs: 10,
            waiting_jobs: 5,
            waiting_area: 6_400,
            running_area: 0,
            ..Default::default()
        },
        ClusterLoad {
            free_procs: 4,
            waiting_jobs: 1,
            waiting_area: 64_000,
            running_area: 0,
            ..Default::default()
        },
        ClusterLoad {
            free_procs: 3,
            waiting_jobs: 1,
            waiting_area: 640,
            running_area: 640,
            ..Default::default()
        },
    ]);
    let j = job(1, 4, 100);
    let pick = |k| cluster(DispatchConfig::new(k).build().dispatch(0, &j, 1, &g));
    assert_eq!(
        pick(DispatchKind::LeastLoaded),
        1,
        "fewest waiting; tie to the lowest id"
    );
    assert_eq!(
        pick(DispatchKind::BestFit),
        1,
        "4 free for 4 processors leaves 0"
    );
    // Backlog per processor: 100, 1000, 20 seconds.
    assert_eq!(pick(DispatchKind::MinCompletion), 2);
    let wide = job(2, 9, 100);
    assert_eq!(pick_with(DispatchKind::BestFit, &wide, &g), None);
}

fn pick_with(k: DispatchKind, j: &Job, g: &GridState) -> Option<u32> {
    match DispatchConfig::new(k).build().dispatch(0, j, 1, g) {
        Placement::Cluster(c) => Some(c.0),
        _ => None,
    }
}

#[test]
fn names_and_config_errors() {
    for k in DispatchKind::every() {
        assert_eq!(k.as_str().parse::<DispatchKind>().unwrap(), k);
        assert!(
            DispatchConfig::new(k)
                .build()
                .describe()
                .starts_with(k.as_str())
        );
    }
    assert!(
        "fastest"
            .parse::<DispatchKind>()
            .unwrap_err()
            .contains("load-ordering")
    );
}

proptest! {
    #[test]
    fn no_strategy_places_a_job_where_it_cannot_run(
        kind in 0usize..9,
        ups in proptest::collection::vec(any::<bool>(), 1..6),
        widths in proptest::collection::vec(1u32..12, 1..40),
        prio in 1u8..=10,
    ) {
        let mut g = grid(ups.len());
        for (c, up) in g.caps.iter_mut().zip(&ups) {
            c.up = *up;
        }
        for (i, c) in g.caps.iter_mut().enumerate() {
            c.max_machine_procs = 4 + 2 * i as u32;
        }
        g.load = Some(vec![ClusterLoad { free_procs: 6, ..Default::default() }; ups.len()]);
        let mut d = DispatchConfig::new(DispatchKind::every()[kind]).build();
        for (i, w) in widths.iter().enumerate() {
            let j = job(i as u64, *w, 10);
            match place(&mut d, &j, prio, &g).0 {
                Placement::Cluster(c) => prop_assert!(g.caps[c.index()].can_run(&j)),
                Placement::Refuse(_) => prop_assert!(g.eligible(&j).next().is_none()),
                Placement::Split(parts) => {
                    prop_assert_eq!(parts.iter().map(|p| p.procs).sum::<u32>(), j.procs);
                    for p in parts {
                        let c = &g.caps[p.cluster.index()];
                        prop_assert!(c.up && p.procs <= c.max_machine_procs);
                    }
                }
                // Held until a job ends: the sites it may run on are full.
                Placement::Hold => prop_assert!(d.held() > 0),
            }
        }
    }
}

#[test]
fn restore_rebuilds_the_arrays_a_restart_lost() {
    let g = grid(3);
    let jobs: Vec<(Job, Priority)> = (1..=6)
        .map(|i| {
            (
                job(i, 1 + i as u32 % 3, 10 * i as i64),
                (i % 4 + 1) as Priority,
            )
        })
        .collect();
    let mut live = DispatchConfig::new(DispatchKind::LoadOrdering).build();
    let placed: Vec<ClusterId> = jobs
        .iter()
        .map(|(j, p)| ClusterId(cluster(live.dispatch(0, j, *p, &g))))
        .collect();
    live.job_ended(5, JobId(2), placed[1]);
    // A restarted meta-scheduler re-enters the live placements only.
    let mut restarted = DispatchConfig::new(DispatchKind::LoadOrdering).build();
    for ((j, p), c) in jobs.iter().zip(&placed) {
        if j.id != JobId(2) {
            restarted.restore(j, *p, &Placement::Cluster(*c), 0);
        }
    }
    assert_eq!(restarted.arrays(3), live.arrays(3));
    assert_ne!(live.arrays(3)[placed[0].index()].count[1], 0);
}

#[test]
fn every_strategy_says_why_in_words() {
    let names = |c: ClusterId| ["alpha", "beta", "gamma"][c.index()].to_string();
    let mut g = grid(3);
    g.load = Some(vec![
        ClusterLoad {
            free_procs: 6,
            waiting_jobs: 2,
            waiting_area: 640,
            running_area: 0,
            ..Default::default()
        },
        ClusterLoad {
            free_procs: 3,
            waiting_jobs: 1,
            waiting_area: 0,
            running_area: 1280,
            ..Default::default()
        },
        ClusterLoad {
            free_procs: 1,
            waiting_jobs: 0,
            waiting_area: 0,
            running_area: 0,
            ..Default::default()
        },
    ]);
    let mut said = Vec::new();
    for kind in DispatchKind::every() {
        let mut d = DispatchConfig::new(kind).build();
        // A first job everywhere, so that Load and Ordering have something to compare.
        for (id, est) in [(1, 30), (2, 20), (3, 10)] {
            d.dispatch(0, &job(id, 1, est), 2, &g);
        }
        let (p, why) = place(&mut d, &job(9, 2, 100), 2, &g);
        let c = cluster(p);
        let why = why.expect("every strategy gives its reason");
        said.push(format!(
            "{kind} -> {}: {}",
            names(ClusterId(c)),
            why.text(&names)
        ));
    }
    assert_eq!(
        said,
        [
            "round-robin -> alpha: next in turn",
            "load -> gamma: Load 10 at priority 2, least of 3; next: beta 20",
            "ordering -> beta: Count 1 at priority 2, least of 3, drawn among 3 equal; next: alpha 1",
            "load-ordering -> gamma: Count 1 at priority 2, least of the 1 of least Load",
            "best-fit -> beta: free processors left 1, least of 2; next: alpha 4",
            "least-loaded -> gamma: waiting jobs 0, least of 3; next: beta 1",
            "min-completion -> gamma: estimated completion at 100, least of 3; next: alpha 110",
            "lb-consolidation -> gamma: waiting jobs 0, least of 3; next: beta 1",
            "resource-priority -> gamma: waiting jobs 0, least of 3; next: beta 1",
            "mct-preferred -> gamma: waiting jobs 0, least of 3; next: beta 1",
            "job-sharing -> alpha: best fit: 3 processors left free, the fewest of the sites with room",
            "multi-site -> alpha: best fit: 3 processors left free, the fewest of the sites with room",
            // The three jobs before it mapped in the same pass (1 s of area each on 64
            // processors), except under Max-Min, which maps the longest first.
            "min-min -> gamma: estimated completion at 103, least of 3; next: alpha 110",
            "max-min -> gamma: estimated completion at 100, least of 3; next: alpha 110",
            "sufferage -> gamma: estimated completion at 103, least of 3; next: alpha 110",
            // Ranked 0 (no workflow), mapped in id order; gamma's 64 processors hold all four.
            "heft -> gamma: estimated completion at 100, least of 3; next: alpha 110",
        ]
    );
}

#[test]
fn ordering_counts_jobs_at_or_above_the_priority_or_exactly_at_it() {
    let g = grid(2);
    let mut picks = Vec::new();
    for counting in [OrderingCount::AtLeast, OrderingCount::Equal] {
        let mut d = DispatchConfig {
            ordering_count: counting,
            ..DispatchConfig::new(DispatchKind::Ordering)
        }
        .build();
        // Cluster 0 holds two jobs of priority 5, cluster 1 one of priority 3.
        d.restore(&job(1, 1, 10), 5, &Placement::Cluster(ClusterId(0)), 0);
        d.restore(&job(2, 1, 10), 5, &Placement::Cluster(ClusterId(0)), 0);
        d.restore(&job(3, 1, 10), 3, &Placement::Cluster(ClusterId(1)), 0);
        // A priority-3 job: counts ≥ 3 are 2 and 1; counts = 3 are 0 and 1.
        let c = cluster(d.dispatch(0, &job(4, 1, 10), 3, &g));
        picks.push((c, d.describe()));
    }
    assert_eq!(
        picks,
        [
            (1, "ordering".to_string()),
            (0, "ordering [count = P]".to_string())
        ]
    );
}
