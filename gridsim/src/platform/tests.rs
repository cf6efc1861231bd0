//! Platform engine tests: exact outcomes on a hand-made cluster, suspension keeping progress, and
//! invariants of every cluster policy on random heterogeneous platforms.

use super::*;
use gridsched_core::dispatch::RoundRobin;
use gridsched_core::model::{
    Cluster, LicenceId, LicencePool, LicenceType, Machine, MachineId, SiteId,
};
use gridsched_core::policy::{PolicyConfig, PolicyKind};
use gridsched_core::runner::testing::Preemptor;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;
use std::convert::Infallible;

/// Machines as (processors, benchmark), space sharing, pools as (licence, copies).
type ClusterSpec<'a> = (&'a [(u32, u32)], bool, &'a [(u16, u32)]);
type OwnedSpec = (Vec<(u32, u32)>, bool, Vec<(u16, u32)>);

fn platform(clusters: &[ClusterSpec<'_>]) -> Platform {
    let mut p = Platform::default();
    let nlic = clusters
        .iter()
        .flat_map(|c| c.2.iter().map(|(l, _)| *l + 1))
        .max()
        .unwrap_or(0);
    p.licences = (0..nlic)
        .map(|i| LicenceType {
            name: format!("l{i}"),
        })
        .collect();
    for (ci, (machines, ss, pools)) in clusters.iter().enumerate() {
        let first = p.machines.len() as u32;
        for (k, (procs, bm)) in machines.iter().enumerate() {
            let id = MachineId(first + k as u32);
            let mut m = Machine::new(id, &format!("c{ci}m{k}"), *procs, *bm);
            m.cluster = ClusterId(ci as u32);
            p.machines.push(m);
        }
        let ids: Vec<MachineId> = (first..p.machines.len() as u32).map(MachineId).collect();
        p.clusters.push(Cluster {
            id: ClusterId(ci as u32),
            name: format!("c{ci}"),
            site: SiteId(0),
            machines: ids.clone(),
            pools: pools
                .iter()
                .map(|(l, copies)| LicencePool {
                    licence: LicenceId(*l),
                    copies: *copies,
                    machines: ids.clone(),
                })
                .collect(),
            space_sharing: *ss,
        });
    }
    p.sites.push(gridsched_core::model::Site {
        id: SiteId(0),
        name: "s".into(),
        clusters: (0..p.clusters.len() as u32).map(ClusterId).collect(),
    });
    p.validate().unwrap();
    p
}

fn run(
    p: &Platform,
    policies: Vec<Box<dyn Policy>>,
    jobs: &[Job],
    hooks: PlatformHooks<'_>,
) -> PlatformReport {
    simulate_platform::<_, Infallible>(
        p,
        policies,
        Meta {
            classify: Classify::Fixed(1),
            dispatcher: Box::new(RoundRobin::default()),
            splits: None,
            links: None,
        },
        jobs.iter().cloned().map(Ok),
        hooks,
    )
    .unwrap()
}

fn build(p: &Platform, kind: PolicyKind) -> Vec<Box<dyn Policy>> {
    (0..p.clusters.len())
        .map(|c| {
            PolicyConfig::new(kind)
                .build(p, ClusterId(c as u32))
                .unwrap()
        })
        .collect()
}

#[test]
fn exact_outcome_on_a_small_heterogeneous_cluster() {
    // Two machines without space sharing: fast (bm 400) and slow (bm 100); one copy of l0.
    let p = platform(&[(&[(4, 400), (4, 100)], false, &[(0, 1)])]);
    let mut a = Job::new(1, 0, 2, 1_000, 800);
    a.benchmark = Some(200);
    a.licences = vec![LicenceId(0)];
    a.deadline = Some(500);
    let mut b = Job::new(2, 0, 2, 100, 100);
    b.benchmark = Some(100);
    b.licences = vec![LicenceId(0)];
    let c = Job::new(3, 10, 1, 50, 50);
    let mut recs = Vec::new();
    let mut rec = |r: &PlatformRecord| recs.push((r.id.0, r.start, r.end, r.exec));
    let rep = run(
        &p,
        build(&p, PolicyKind::Fcfs),
        &[a, b, c],
        PlatformHooks {
            record: Some(&mut rec),
            pass: None,
            refused: None,
        },
    );
    // A: 800 s on a bm-200 machine take 400 s on the bm-400 one. B waits for the licence copy
    // (FCFS), then runs 100 s scaled to the fast machine: 25 s. C (no licence) is blocked behind B
    // under FCFS until B starts at 400, then takes the slow machine.
    assert_eq!(
        recs,
        vec![(1, 0, 400, 400), (2, 400, 425, 25), (3, 400, 450, 50)]
    );
    assert_eq!(rep.jobs.finished, 3);
    assert_eq!(rep.jobs.missed_deadline, 0);
    assert_eq!(rep.clusters[0].workload_pct, 100.0);
}

#[test]
fn a_suspended_job_keeps_its_progress() {
    let p = platform(&[(&[(4, 300)], true, &[])]);
    let mut long = Job::new(1, 0, 4, 1_000, 900);
    long.benchmark = Some(100);
    // 900 reference seconds take 300 s on the bm-300 machine.
    let mut urgent = Job::new(2, 100, 4, 30, 30);
    urgent.deadline = Some(1_000);
    let mut recs = Vec::new();
    let mut rec = |r: &PlatformRecord| recs.push((r.id.0, r.start, r.end, r.exec, r.suspensions));
    let pols: Vec<Box<dyn Policy>> = vec![Box::new(Preemptor::default())];
    let rep = run(
        &p,
        pols,
        &[long, urgent],
        PlatformHooks {
            record: Some(&mut rec),
            pass: None,
            refused: None,
        },
    );
    // Long runs 0..100 (300 reference seconds done), the urgent job 100..130, then long resumes
    // with 600 reference seconds left: 200 s, ending at 330. Total execution 300 s as unsuspended.
    assert_eq!(recs, vec![(2, 100, 130, 30, 0), (1, 0, 330, 300, 1)]);
    assert_eq!(rep.stats.suspensions, 1);
}

fn random_platform(rng: &mut ChaCha8Rng) -> Platform {
    let nclusters = rng.random_range(1..=2);
    let mut spec: Vec<OwnedSpec> = Vec::new();
    for _ in 0..nclusters {
        let machines = (0..rng.random_range(1..=5))
            .map(|_| (rng.random_range(1..=8), rng.random_range(1..=5) * 100))
            .collect();
        let mut pools = Vec::new();
        for l in 0..3u16 {
            if rng.random_bool(0.7) {
                pools.push((l, rng.random_range(1..=2)));
            }
        }
        spec.push((machines, rng.random_bool(0.5), pools));
    }
    let borrowed: Vec<ClusterSpec<'_>> = spec
        .iter()
        .map(|(m, s, l)| (m.as_slice(), *s, l.as_slice()))
        .collect();
    platform(&borrowed)
}

fn random_jobs(rng: &mut ChaCha8Rng, n: u64) -> Vec<Job> {
    let mut t = 0;
    (1..=n)
        .map(|id| {
            t += rng.random_range(0..40);
            let est = rng.random_range(1..=200);
            let run = if rng.random_bool(0.5) {
                est
            } else {
                rng.random_range(1..=est)
            };
            let mut j = Job::new(id, t, rng.random_range(1..=8), est, run);
            j.benchmark = Some(rng.random_range(1..=5) * 100);
            j.licences = (0..3u16)
                .filter(|_| rng.random_bool(0.3))
                .map(LicenceId)
                .collect();
            if rng.random_bool(0.7) {
                j.deadline = Some(t + est + rng.random_range(0..300));
            }
            j
        })
        .collect()
}

#[test]
fn every_cluster_policy_keeps_the_invariants_on_random_platforms() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut reserved = 0;
    let mut backfilled_past_reservation = 0;
    for round in 0..40 {
        let p = random_platform(&mut rng);
        let jobs = random_jobs(&mut rng, 60);
        // The gang schedulers time-share one machine; these platforms have several per cluster.
        for kind in PolicyKind::cluster().into_iter().filter(|k| !k.is_gang()) {
            let mut first_res: HashMap<JobId, Time> = HashMap::new();
            let mut starts: HashMap<JobId, Time> = HashMap::new();
            let mut pass = |t: Time, _c: ClusterId, effects: &[Effect], run: &ClusterRunner| {
                for e in effects {
                    if let Effect::Start(st) = e {
                        starts.entry(st.job).or_insert(t);
                    }
                }
                for r in run.policy().reservations() {
                    first_res.entry(r.job).or_insert(r.start);
                }
            };
            let pols = build(&p, kind);
            let rep = run(
                &p,
                pols,
                &jobs,
                PlatformHooks {
                    record: None,
                    pass: Some(&mut pass),
                    refused: None,
                },
            );
            assert_eq!(
                rep.jobs.finished + rep.stats.rejected,
                jobs.len() as u64,
                "round {round} {kind}: every job ends or is refused"
            );
            if matches!(kind, PolicyKind::Easy | PolicyKind::FbUnmod) {
                reserved += first_res.len();
                for (job, res) in &first_res {
                    let s = starts[job];
                    if s < *res {
                        backfilled_past_reservation += 1;
                    }
                    assert!(
                        s <= *res,
                        "round {round} {kind}: job {job} reserved at {res} started at {s}"
                    );
                }
            }
        }
    }
    assert!(
        reserved > 100,
        "the random workloads exercise reservations: {reserved}"
    );
    assert!(
        backfilled_past_reservation > 0,
        "some reserved jobs start earlier than planned"
    );
}

/// The engine hands the meta-scheduler's priority to the local policy right after `submit`:
/// under `fb-meta` the waiting jobs start highest MS priority first, except that job 2, reserved
/// while it was alone in the queue, keeps its reservation (BF_UNMOD semantics).
#[test]
fn the_ms_priority_reaches_the_local_queue() {
    let p = platform(&[(&[(4, 100)], true, &[])]);
    let jobs: Vec<Job> = (1..=4)
        .map(|i| Job::new(i, i as i64 - 1, 4, 100, 100))
        .collect();
    let order = |prio: fn(&Job) -> u8| {
        let mut recs = Vec::new();
        let mut rec = |r: &PlatformRecord| recs.push((r.id.0, r.start, r.priority));
        simulate_platform::<_, Infallible>(
            &p,
            build(&p, PolicyKind::FbMeta),
            Meta {
                classify: Classify::With(prio),
                dispatcher: Box::new(RoundRobin::default()),
                splits: None,
                links: None,
            },
            jobs.iter().cloned().map(Ok),
            PlatformHooks {
                record: Some(&mut rec),
                pass: None,
                refused: None,
            },
        )
        .unwrap();
        recs.sort_by_key(|r| r.1);
        recs
    };
    assert_eq!(
        order(|j| j.id.0 as u8),
        vec![(1, 0, 1), (2, 100, 2), (4, 200, 4), (3, 300, 3)]
    );
    assert_eq!(
        order(|_| 1),
        vec![(1, 0, 1), (2, 100, 1), (3, 200, 1), (4, 300, 1)]
    );
}

/// Records whether the engine handed it the sites' state.
#[derive(Debug)]
struct Spy {
    reads: bool,
    saw_load: std::sync::Arc<std::sync::Mutex<Vec<bool>>>,
}

impl gridsched_core::dispatch::Dispatcher for Spy {
    fn describe(&self) -> String {
        "spy".into()
    }
    fn dispatch(
        &mut self,
        _: Time,
        _: &Job,
        _: gridsched_core::dispatch::Priority,
        grid: &gridsched_core::dispatch::GridState,
    ) -> gridsched_core::dispatch::Placement {
        self.saw_load.lock().unwrap().push(grid.load.is_some());
        gridsched_core::dispatch::Placement::Cluster(ClusterId(0))
    }
    fn job_ended(&mut self, _: Time, _: JobId, _: ClusterId) {}
    fn reads_site_state(&self) -> bool {
        self.reads
    }
}

#[test]
fn only_state_reading_dispatchers_get_the_sites_state() {
    let p = platform(&[(&[(4, 100)], true, &[])]);
    let jobs = vec![Job::new(1, 0, 1, 10, 10), Job::new(2, 5, 1, 10, 10)];
    for reads in [false, true] {
        let saw_load = std::sync::Arc::default();
        let spy = Spy {
            reads,
            saw_load: std::sync::Arc::clone(&saw_load),
        };
        simulate_jobs(
            &p,
            build(&p, PolicyKind::Fcfs),
            Meta {
                classify: Classify::Fixed(1),
                dispatcher: Box::new(spy),
                splits: None,
                links: None,
            },
            jobs.clone(),
        )
        .unwrap();
        assert_eq!(*saw_load.lock().unwrap(), vec![reads, reads]);
    }
}

#[test]
fn a_partition_of_alike_machines_runs_jobs_wider_than_a_machine() {
    // Four alike 4-processor machines: under EASY (one pool of 16) a 10-wide job runs; under
    // Flexible Backfilling (one machine per job) no cluster can take it.
    let p = platform(&[(&[(4, 100); 4], true, &[])]);
    let jobs = [
        Job::new(1, 0, 10, 100, 60),
        Job::new(2, 0, 6, 100, 100),
        Job::new(3, 5, 3, 50, 50),
    ];
    let mut recs = Vec::new();
    let mut rec = |r: &PlatformRecord| recs.push((r.id.0, r.start, r.end));
    let rep = run(
        &p,
        build(&p, PolicyKind::Easy),
        &jobs,
        PlatformHooks {
            record: Some(&mut rec),
            pass: None,
            refused: None,
        },
    );
    recs.sort_unstable();
    // 10 + 6 fill the pool at 0; job 3 waits for job 1's 10 processors at 60.
    assert_eq!(recs, vec![(1, 0, 60), (2, 0, 100), (3, 60, 110)]);
    assert_eq!((rep.jobs.finished, rep.stats.rejected), (3, 0));
    let rep = run(
        &p,
        build(&p, PolicyKind::FbMod),
        &jobs,
        PlatformHooks::default(),
    );
    assert_eq!((rep.jobs.finished, rep.stats.rejected), (1, 2));
    // Refused at the grid's door, as the live meta-scheduler refuses it.
    assert_eq!(
        rep.stats.rejections[0],
        "job 1: 10 processors exceed what any site runs as one job (largest: 4)",
    );
}

/// Runs `jobs` on `p` under conservative backfilling, dispatched round robin with jobs wider
/// than every cluster split ([`WideSplit`](gridsched_core::dispatch::WideSplit)); `splits`: how
/// they are co-allocated. The records as (job, cluster, start, end), and the report.
fn run_wide(
    p: &Platform,
    jobs: &[Job],
    splits: Option<SplitRules>,
) -> (Vec<(u64, u32, Time, Time)>, PlatformReport) {
    run_wide_on(p, build(p, PolicyKind::Conservative), jobs, splits)
}

fn run_wide_on(
    p: &Platform,
    policies: Vec<Box<dyn Policy>>,
    jobs: &[Job],
    splits: Option<SplitRules>,
) -> (Vec<(u64, u32, Time, Time)>, PlatformReport) {
    let d = gridsched_core::dispatch::WideSplit::new(Box::new(RoundRobin::default()));
    let mut recs = Vec::new();
    let mut rec = |r: &PlatformRecord| recs.push((r.id.0, r.cluster.0, r.start, r.end));
    let report = simulate_platform::<_, Infallible>(
        p,
        policies,
        Meta {
            classify: Classify::Fixed(1),
            dispatcher: Box::new(d),
            splits,
            links: None,
        },
        jobs.iter().cloned().map(Ok),
        PlatformHooks {
            record: Some(&mut rec),
            pass: None,
            refused: None,
        },
    )
    .unwrap();
    recs.sort_unstable();
    (recs, report)
}

/// A job wider than both 8-processor clusters is co-allocated over them as the live
/// meta-scheduler does: held at each cluster's earliest start (cluster 0 is busy until 100,
/// cluster 1 free at once), the second round moving cluster 1's hold to the common start 100;
/// both fragments start then, their estimate and run time grown by p = 10 % (50 → 55, 40 → 44);
/// the job is recorded once, at its first fragment's cluster. Cluster 1's full-width job waits
/// for the reservation (4 of 8 processors on [100, 157)) and starts when the fragment's end lets
/// the reservation go, at 144. Without split rules the wide job is refused as before.
#[test]
fn a_wide_job_is_co_allocated_over_two_clusters_and_starts_together() {
    let p = platform(&[(&[(8, 100)], true, &[]), (&[(8, 100)], true, &[])]);
    let jobs = [
        Job::new(1, 0, 8, 100, 100),
        Job::new(2, 10, 12, 50, 40),
        Job::new(3, 20, 8, 90, 90),
    ];
    let multi_site = gridsched_core::dispatch::MultiSiteConfig {
        overhead_pct: 10,
        ..Default::default()
    };
    let rules = SplitRules::new(multi_site, 8);
    let (recs, report) = run_wide(&p, &jobs, Some(rules));
    assert_eq!(
        recs,
        [(1, 0, 0, 100), (2, 0, 100, 144), (3, 1, 144, 234)],
        "{:?}",
        report.stats
    );
    assert_eq!(report.stats.coallocations, 1);
    assert_eq!(report.stats.rejected, 0);
    // Each cluster ran its fragment: two jobs at cluster 0, two at cluster 1.
    let dispatched: Vec<u64> = report.clusters.iter().map(|c| c.dispatched).collect();
    assert_eq!(dispatched, [2, 2]);
    let (recs, report) = run_wide(&p, &jobs, None);
    assert_eq!(recs, [(1, 0, 0, 100), (3, 1, 20, 110)]);
    assert_eq!(report.stats.rejected, 1);
    assert_eq!(
        report.stats.rejections[0],
        "job 2: 12 processors exceed what any site runs as one job, and this grid does not \
         co-allocate (largest: 8)"
    );
}

/// A cluster whose policy takes no reservations (the runner tests' preemptor) refuses every hold: each co-allocation is given
/// up (the other cluster's hold let go at once, so its own job starts), tried again a second
/// later, and after ten refusals in a row the job is refused with the reason, instead of being
/// tried forever.
#[test]
fn a_split_refused_by_a_cluster_is_tried_again_then_refused() {
    let p = platform(&[(&[(8, 100)], true, &[]), (&[(8, 100)], true, &[])]);
    let policies = vec![
        PolicyConfig::new(PolicyKind::Conservative)
            .build(&p, ClusterId(0))
            .unwrap(),
        // Never given a job here (job 2 goes to cluster 0): it only refuses the holds.
        Box::new(Preemptor::default()),
    ];
    let jobs = [Job::new(1, 0, 12, 50, 40), Job::new(2, 5, 8, 20, 20)];
    let rules = SplitRules::new(gridsched_core::dispatch::MultiSiteConfig::default(), 8);
    let (recs, report) = run_wide_on(&p, policies, &jobs, Some(rules));
    assert_eq!(recs, [(2, 0, 5, 25)], "{:?}", report.stats);
    assert_eq!(report.stats.coallocations, 0);
    assert_eq!(
        report.stats.coallocations_given_up,
        u64::from(gridsched_core::grid::MAX_REFUSED)
    );
    assert_eq!(report.stats.rejected, 1);
    let why = &report.stats.rejections[0];
    assert!(
        why.starts_with("job 1: co-allocation refused 10 times in a row"),
        "{why}"
    );
}

/// A site lost at 3 s (down after 2 s): the job it runs is lost with it, the one it had not
/// started is withdrawn when it goes down (5 s) and runs at the other site after that site's own
/// queue; without the loss, each job runs where round robin sent it.
#[test]
fn a_lost_site_loses_its_running_job_and_its_waiting_one_goes_elsewhere() {
    let p = platform(&[(&[(4, 100)], false, &[]), (&[(4, 100)], false, &[])]);
    let jobs = [
        Job::new(1, 0, 4, 30, 20),
        Job::new(2, 0, 4, 30, 10),
        Job::new(3, 1, 4, 10, 5),
        Job::new(4, 2, 4, 10, 5),
    ];
    let outcome = |events: &GridEvents| {
        let policies = build(&p, PolicyKind::Fcfs);
        let rr = Box::new(RoundRobin::default());
        let (recs, rep) = run_with_events(&p, policies, rr, None, &jobs, events);
        let mut recs: Vec<_> = (recs.iter())
            .map(|r| (r.id.0, r.cluster.0, r.start, r.end))
            .collect();
        recs.sort_unstable();
        (recs, rep.stats.lost_jobs)
    };
    let whole = outcome(&GridEvents::default());
    assert_eq!(
        whole,
        (
            vec![(1, 0, 0, 20), (2, 1, 0, 10), (3, 0, 20, 25), (4, 1, 10, 15)],
            vec![]
        )
    );
    let lost = GridEvents {
        down_after_ms: 2_000,
        lost: vec![(3, ClusterId(1))],
        ..GridEvents::default()
    };
    assert_eq!(
        outcome(&lost),
        (
            vec![(1, 0, 0, 20), (3, 0, 20, 25), (4, 0, 25, 30)],
            vec![(JobId(2), ClusterId(1))]
        )
    );
    // Lost at 11 s, after job 4 started there: both of the site's jobs are done or lost.
    let late = GridEvents {
        down_after_ms: 2_000,
        lost: vec![(11, ClusterId(1))],
        ..GridEvents::default()
    };
    assert_eq!(
        outcome(&late),
        (
            vec![(1, 0, 0, 20), (2, 1, 0, 10), (3, 0, 20, 25)],
            vec![(JobId(4), ClusterId(1))]
        )
    );
}

/// Advance reservations asked of the grid during a run: one held (a job named by the request's
/// number runs in it, from its start, at its site whatever the dispatcher says), one refused by
/// its site (a job naming it is refused), one refused by the grid's own checks (an unknown site).
#[test]
fn reservations_asked_of_the_grid_hold_their_jobs_or_refuse_them() {
    use gridsched_core::grid::ReservationRequest;
    use gridsched_core::model::ReservationId;
    let p = platform(&[(&[(4, 100)], true, &[]), (&[(4, 100)], true, &[])]);
    let ask = |at, name, site: &str, start, end| ReservationAsk {
        at,
        name,
        request: ReservationRequest {
            site: site.into(),
            procs: 4,
            start,
            end,
            user: None,
        },
    };
    let events = GridEvents {
        reservations: vec![
            ask(0, 7, "c1", 10, 30),
            ask(2, 8, "c0", 5, 40),
            ask(2, 9, "nowhere", 5, 40),
        ],
        ..GridEvents::default()
    };
    let in_reservation = |id, submit, name| {
        let mut j = Job::new(id, submit, 2, 10, 8);
        j.reservation = Some(ReservationId(name));
        j
    };
    let jobs = [
        Job::new(1, 0, 4, 20, 15),
        in_reservation(2, 1, 7),
        in_reservation(3, 3, 8),
        in_reservation(4, 3, 9),
    ];
    let mut recs = Vec::new();
    let mut rec = |r: &PlatformRecord| recs.push((r.id.0, r.cluster.0, r.start, r.end));
    let mut refusals = Vec::new();
    let mut refused = |j: JobId, why: &str| refusals.push((j.0, why.to_owned()));
    let hooks = PlatformHooks {
        record: Some(&mut rec),
        pass: None,
        refused: Some(&mut refused),
    };
    let meta = round_robin();
    let policies = build(&p, PolicyKind::Conservative);
    let jobs = jobs.into_iter().map(Ok::<_, Infallible>);
    let rep = simulate_platform_with(&p, policies, meta, jobs, hooks, &events).unwrap();
    assert_eq!(recs, [(1, 0, 0, 15), (2, 1, 10, 18)]);
    let not_held = |n| format!("reservation {n} was not held by the grid");
    assert_eq!(refusals, [(3, not_held(8)), (4, not_held(9))]);
    assert_eq!(
        (rep.stats.reservations_held, rep.stats.reservations_refused),
        (1, 2)
    );
}

/// A job no other site can take stays with its lost site and is lost with it, unstarted, beside
/// the job the site was running.
#[test]
fn a_job_only_the_lost_site_could_run_is_lost_with_it() {
    let p = platform(&[(&[(4, 100)], false, &[]), (&[(8, 100)], false, &[])]);
    let jobs = [Job::new(1, 0, 8, 30, 20), Job::new(2, 1, 8, 30, 20)];
    let events = GridEvents {
        down_after_ms: 2_000,
        lost: vec![(3, ClusterId(1))],
        ..GridEvents::default()
    };
    let meta = round_robin();
    let jobs = jobs.into_iter().map(Ok::<_, Infallible>);
    let policies = build(&p, PolicyKind::Fcfs);
    let hooks = PlatformHooks::default();
    let rep = simulate_platform_with(&p, policies, meta, jobs, hooks, &events).unwrap();
    assert_eq!(
        rep.stats.lost_jobs,
        [(JobId(1), ClusterId(1)), (JobId(2), ClusterId(1))]
    );
    assert_eq!((rep.jobs.finished, rep.stats.rejected), (0, 0));
}

/// The engine passes a cluster where a live local scheduler does: on a change (an arrival, an
/// end) or when the runner's wake-up is due, never at a wake-up the policy has since moved nor at
/// the planned end of a job suspended before it.
#[test]
fn passes_come_at_changes_and_due_wake_ups_only() {
    let p = Platform::single_machine(4);
    let mut cfg = PolicyConfig::new(PolicyKind::Gs);
    cfg.gang.mpl = 2;
    let pols = vec![cfg.build(&p, ClusterId(0)).unwrap()];
    // Two jobs filling the machine share it by 200 s slices.
    let jobs = [Job::new(1, 0, 4, 300, 300), Job::new(2, 0, 4, 300, 300)];
    let mut passes = Vec::new();
    let mut pass = |t: Time, _: ClusterId, _: &[Effect], _: &ClusterRunner| passes.push(t);
    let mut recs = Vec::new();
    let mut rec = |r: &PlatformRecord| recs.push((r.id.0, r.start, r.end));
    run(
        &p,
        pols,
        &jobs,
        PlatformHooks {
            record: Some(&mut rec),
            pass: Some(&mut pass),
            refused: None,
        },
    );
    assert_eq!(recs, vec![(1, 0, 500), (2, 200, 600)]);
    // 300 and 500 are the planned ends of job 1 then of job 2 before each was suspended; 500
    // is also job 1's real end. A pass at 700 would be the slice end planned at 500, moved when
    // the matrix emptied at 600.
    assert_eq!(passes, vec![0, 200, 400, 500, 600]);
}

/// A job wider than any site, split while one of its sites is lost but not yet marked down: the
/// hold asked of the lost site is refused ("the site cannot be reached"), the co-allocation given
/// up and tried again each second, until the site is marked down; then the job is split over the
/// two sites left and starts there.
#[test]
fn a_hold_asked_of_a_lost_site_is_refused_until_the_site_is_down() {
    let p = platform(&[
        (&[(8, 100)], true, &[]),
        (&[(8, 100)], true, &[]),
        (&[(8, 100)], true, &[]),
    ]);
    let jobs = [Job::new(1, 10, 12, 50, 40)];
    let rules = SplitRules::new(gridsched_core::dispatch::MultiSiteConfig::default(), 8);
    let lost = GridEvents {
        down_after_ms: 20_000,
        lost: vec![(5, ClusterId(1))],
        ..GridEvents::default()
    };
    let wide = Box::new(gridsim_wide_split());
    let policies = build(&p, PolicyKind::Conservative);
    let (recs, rep) = run_with_events(&p, policies, wide, Some(rules), &jobs, &lost);
    assert_eq!(rep.stats.coallocations, 1, "{:?}", rep.stats);
    assert_eq!(recs.len(), 1);
    let (start, parts) = (&recs[0].start, &recs[0].parts);
    assert!(parts.iter().all(|(c, _)| *c != ClusterId(1)), "{parts:?}");
    assert_eq!(*start, 25, "{:?}", rep.stats);
    assert_eq!(
        rep.stats.coallocations_given_up, 15,
        "one a second from 10 to 24"
    );
}

/// Wide jobs split over the clusters, the others sent round robin.
fn gridsim_wide_split() -> gridsched_core::dispatch::WideSplit {
    gridsched_core::dispatch::WideSplit::new(Box::new(RoundRobin::default()))
}

/// Runs `jobs` under `dispatcher` (priority 1 for every job) with `events`: the records in end
/// order, and the report.
fn run_with_events(
    p: &Platform,
    policies: Vec<Box<dyn Policy>>,
    dispatcher: Box<dyn Dispatcher>,
    splits: Option<SplitRules>,
    jobs: &[Job],
    events: &GridEvents,
) -> (Vec<PlatformRecord>, PlatformReport) {
    run_with_links(p, policies, dispatcher, splits, None, jobs, events)
}

/// [`run_with_events`] over the grid's links.
fn run_with_links(
    p: &Platform,
    policies: Vec<Box<dyn Policy>>,
    dispatcher: Box<dyn Dispatcher>,
    splits: Option<SplitRules>,
    links: Option<super::DataLinks>,
    jobs: &[Job],
    events: &GridEvents,
) -> (Vec<PlatformRecord>, PlatformReport) {
    let mut recs = Vec::new();
    let mut rec = |r: &PlatformRecord| recs.push(r.clone());
    let hooks = PlatformHooks {
        record: Some(&mut rec),
        ..PlatformHooks::default()
    };
    let meta = Meta {
        classify: Classify::Fixed(1),
        dispatcher,
        splits,
        links,
    };
    let jobs = jobs.iter().cloned().map(Ok::<_, Infallible>);
    let rep = simulate_platform_with(p, policies, meta, jobs, hooks, events).unwrap();
    (recs, rep)
}

/// The live order of a second: a job submitted in the very second another job ends is dispatched
/// by Load / Ordering before that end is taken (live, the end's notice comes the fraction of a
/// second after the whole-second submission): both clusters still hold a job, and cluster 1's
/// is the lighter, so the job goes there; by default the end is taken first and the job goes to
/// the idle cluster 0.
#[test]
fn the_live_order_dispatches_a_seconds_submissions_before_its_ends() {
    use gridsched_core::dispatch::{DispatchConfig, DispatchKind};
    let p = platform(&[(&[(4, 100)], true, &[]), (&[(4, 100)], true, &[])]);
    let jobs = [
        Job::new(1, 0, 4, 10, 10),
        Job::new(2, 0, 1, 20, 20),
        Job::new(3, 10, 2, 5, 5),
    ];
    let site_of_3 = |live_order: bool| {
        let events = GridEvents {
            live_order,
            ..GridEvents::default()
        };
        let d = DispatchConfig::new(DispatchKind::LoadOrdering).build();
        let policies = build(&p, PolicyKind::Easy);
        let (recs, _) = run_with_events(&p, policies, d, None, &jobs, &events);
        let r = recs.iter().find(|r| r.id == JobId(3)).unwrap();
        (r.cluster.0, r.start)
    };
    assert_eq!(site_of_3(false), (0, 10));
    assert_eq!(site_of_3(true), (1, 10));
}

/// The table of dependency cases, simulated: each predecessor is held back to the second of its
/// first step by `after:50+T` on a filler job 50 started at 0, completes or fails (killed at its
/// estimate) at the second of its end step, or is cancelled ([`GridEvents::cancels`]); step `k`
/// happens at second 100 (k + 1). The dependent job 100 starts at the second of the step the
/// case names, or is ended never started, or refused. The simulator requeues no job, so the
/// cases of a requeued predecessor are the live grid's and the grid runner's only.
#[test]
fn every_case_of_the_dependency_table_holds_in_the_simulator() {
    use gridsched_core::grid::dependency_cases::{CASES, Expect, Singleton, Step};
    use gridsched_core::model::{Dependency, UserId};
    let p = platform(&[(&[(16, 100)], true, &[])]);
    let at = |k: usize| 100 * (k as i64 + 1);
    let dep = |text: &str| Some(Box::new(Dependency::parse(text, Some("n")).unwrap()));
    let mut skipped = 0;
    for c in CASES {
        if c.split {
            skipped += 1;
            continue;
        }
        let mut jobs = vec![Job::new(50, 0, 1, 1_000_000, 1_000_000)];
        let mut cancels = Vec::new();
        for id in 1..=c.jobs {
            let steps: Vec<(usize, Step)> = (c.steps.iter().enumerate())
                .filter(|(_, s)| s.0 == id)
                .map(|(k, s)| (k, s.1))
                .collect();
            let start = match steps.first() {
                Some(&(k, Step::Start)) => at(k),
                _ => 900_000,
            };
            let (estimate, runtime) = match steps.get(1) {
                Some(&(k, Step::Complete)) => (at(k) - start, at(k) - start),
                Some(&(k, Step::Fail)) => (at(k) - start, at(k) - start + 1),
                _ => (10, 10),
            };
            if let Some(&(k, Step::Cancel)) = steps.iter().find(|s| s.1 == Step::Cancel) {
                cancels.push((at(k), JobId(id)));
            }
            let mut j = Job::new(id, 0, 1, estimate.max(1), runtime);
            if matches!(steps.get(1), Some((_, Step::Cancel))) {
                (j.estimate, j.runtime) = (1_000_000, Some(1_000_000));
            }
            let single = match c.singleton {
                Singleton::No => "",
                Singleton::SameUser => ",singleton",
                Singleton::OtherUser => {
                    j.user = UserId(1);
                    ",singleton"
                }
            };
            j.after = dep(&format!("after:50+{start}{single}"));
            jobs.push(j);
        }
        let mut dependent = Job::new(100, 0, 1, 10, 10);
        dependent.after = dep(c.after);
        jobs.push(dependent);
        let events = GridEvents {
            cancels,
            ..GridEvents::default()
        };
        let mut recs = Vec::new();
        let mut refused = Vec::new();
        let mut rec = |r: &PlatformRecord| recs.push(r.clone());
        let mut refuse = |j: JobId, why: &str| refused.push((j, why.to_string()));
        let hooks = PlatformHooks {
            record: Some(&mut rec),
            refused: Some(&mut refuse),
            ..PlatformHooks::default()
        };
        let meta = round_robin();
        let policies = build(&p, PolicyKind::Easy);
        let stream = jobs.iter().cloned().map(Ok::<_, Infallible>);
        let cancels = events.cancels.len() as u64;
        let rep = simulate_platform_with(&p, policies, meta, stream, hooks, &events).unwrap();
        // Every cancellation is counted, at the meta level or at a cluster; a job ended never
        // started is counted apart from the refusals.
        assert_eq!(rep.stats.cancelled, cancels, "{}", c.name);
        let never = matches!(c.expect, Expect::Never(..));
        assert_eq!(rep.stats.unmet, u64::from(never), "{}", c.name);
        let start = recs.iter().find(|r| r.id == JobId(100)).map(|r| r.start);
        let why = refused
            .iter()
            .find(|r| r.0 == JobId(100))
            .map(|r| r.1.as_str());
        match c.expect {
            Expect::Runs(k) => {
                assert_eq!(start, Some(k.map_or(0, at)), "{}", c.name);
                assert_eq!(why, None, "{}", c.name);
            }
            Expect::Never(_, words) | Expect::Refused(words) => {
                assert_eq!(start, None, "{}", c.name);
                assert!(
                    why.is_some_and(|w| w.contains(words)),
                    "{}: {why:?}",
                    c.name
                );
            }
        }
    }
    assert_eq!(skipped, 2);
}

/// The SWF's think time as a delayed `afterany` (fields 17–18): a job whose preceding job still
/// runs at its submission goes at that job's end plus the think time; one whose preceding job
/// ended before is dispatched at the later of its submission and that end plus the think time
/// (the engine hands the grid runner the outcome and time of jobs that have left).
#[test]
fn a_think_time_counts_from_the_preceding_jobs_end() {
    use gridsched_core::model::Dependency;
    let p = platform(&[(&[(8, 100)], true, &[])]);
    let after = |id: u64, submit: i64, text: &str| {
        let mut j = Job::new(id, submit, 1, 50, 50);
        j.after = Some(Box::new(Dependency::parse(text, None).unwrap()));
        j
    };
    let jobs = [
        Job::new(1, 0, 1, 100, 100),
        after(2, 50, "afterany:1+30"),
        after(3, 500, "afterany:1+30"),
        after(4, 500, "afterany:1+450"),
    ];
    let (recs, rep) = run_with_events(
        &p,
        build(&p, PolicyKind::Easy),
        Box::new(RoundRobin::default()),
        None,
        &jobs,
        &GridEvents::default(),
    );
    let start = |id: u64| recs.iter().find(|r| r.id == JobId(id)).unwrap().start;
    assert_eq!((start(2), start(3), start(4)), (130, 500, 550));
    assert_eq!(rep.stats.rejected, 0);
}

/// A job array in the simulator: 40 tasks at `%3` on two clusters of 16 processors, with a job
/// `afterok` on the array. Every index runs once as a job of its own (ids after the array's),
/// never more than 3 at once, and the dependent job starts when the last task ends.
#[test]
fn an_array_runs_each_task_once_within_its_limit_in_the_simulator() {
    use gridsched_core::model::{ArraySpec, Dependency};
    let p = platform(&[(&[(16, 100)], true, &[]), (&[(16, 100)], true, &[])]);
    let mut array = Job::new(10, 0, 1, 50, 40);
    array.array = Some(Box::new(ArraySpec::parse("0-39%3", 100).unwrap()));
    let mut after = Job::new(60, 5, 1, 10, 10);
    after.after = Some(Box::new(Dependency::parse("afterok:10", None).unwrap()));
    let policies = build(&p, PolicyKind::Easy);
    let dispatcher = Box::new(RoundRobin::default());
    let events = GridEvents::default();
    let (recs, rep) = run_with_events(&p, policies, dispatcher, None, &[array, after], &events);
    assert_eq!(rep.stats.tasks, 40);
    let mut tasks: Vec<&PlatformRecord> = recs.iter().filter(|r| r.id != JobId(60)).collect();
    tasks.sort_by_key(|r| r.id);
    let ids: Vec<u64> = tasks.iter().map(|r| r.id.0).collect();
    assert_eq!(ids, (11..=50).collect::<Vec<u64>>());
    // Three at a time, each 40 s: waves at 0, 40, 80, ...
    for (k, r) in tasks.iter().enumerate() {
        assert_eq!(r.start, 40 * (k as i64 / 3), "task {k}");
    }
    let most = (0..600)
        .map(|t| tasks.iter().filter(|r| r.start <= t && t < r.end).count())
        .max();
    assert_eq!(most, Some(3));
    let last_end = tasks.iter().map(|r| r.end).max().unwrap();
    let dependent = recs.iter().find(|r| r.id == JobId(60)).unwrap();
    assert_eq!((last_end, dependent.start), (560, 560));
}

/// The meta level of the dependency and array tests: every job priority 1, sites in turn.
fn round_robin() -> Meta {
    Meta {
        classify: Classify::Fixed(1),
        dispatcher: Box::new(RoundRobin::default()),
        splits: None,
        links: None,
    }
}

/// The batch mappers in the simulator: a 24-task array released in one instant over a slow and a
/// fast cluster (benchmarks 100 and 200) is mapped as one batch; every task runs once, the fast
/// cluster takes more of them, and each heuristic ends the bag no later than round-robin does.
#[test]
fn the_batch_mappers_map_an_array_s_tasks_in_the_simulator() {
    use gridsched_core::dispatch::DispatchKind;
    use gridsched_core::model::ArraySpec;
    let p = platform(&[(&[(4, 100)], true, &[]), (&[(4, 200)], true, &[])]);
    let mut array = Job::new(1, 0, 1, 100, 100);
    array.benchmark = Some(100);
    array.array = Some(Box::new(ArraySpec::parse("0-23", 100).unwrap()));
    let run = |kind: DispatchKind| {
        let policies = build(&p, PolicyKind::Easy);
        let dispatcher = gridsched_core::dispatch::DispatchConfig::new(kind).build();
        let events = GridEvents::default();
        let (recs, rep) =
            run_with_events(&p, policies, dispatcher, None, &[array.clone()], &events);
        assert_eq!(rep.stats.tasks, 24, "{kind}");
        let mut ids: Vec<u64> = recs.iter().map(|r| r.id.0).collect();
        ids.sort_unstable();
        assert_eq!(ids, (2..=25).collect::<Vec<u64>>(), "{kind}");
        let fast = recs.iter().filter(|r| r.cluster == ClusterId(1)).count();
        let makespan = recs.iter().map(|r| r.end).max().unwrap();
        (fast, makespan)
    };
    let (_, round_robin) = run(DispatchKind::RoundRobin);
    for kind in [
        DispatchKind::MinMin,
        DispatchKind::MaxMin,
        DispatchKind::Sufferage,
    ] {
        let (fast, makespan) = run(kind);
        assert!(fast > 12, "{kind}: {fast} of 24 on the fast cluster");
        assert!(
            makespan <= round_robin,
            "{kind}: {makespan} > {round_robin}"
        );
    }
}

/// A workflow node of one processor, estimate 100 s and run time `run`, after `parents`.
fn node(name: &str, parents: &[&str], run: i64) -> gridsched_core::model::Node {
    gridsched_core::model::Node {
        name: name.into(),
        parents: parents.iter().map(|s| s.to_string()).collect(),
        retries: 0,
        retry_unless_exit: None,
        abort_on_exit: None,
        done: false,
        outputs: Vec::new(),
        job: Job::new(0, 0, 1, 100, run),
    }
}

/// The events of one workflow of `nodes`, id 1 (its nodes 2, 3, ...), submitted at 100.
fn workflow_at_100(nodes: Vec<gridsched_core::model::Node>) -> GridEvents {
    use gridsched_core::model::{Workflow, WorkflowText};
    let workflow = Workflow::new(WorkflowText {
        name: "w".into(),
        nodes,
    })
    .unwrap();
    GridEvents {
        workflows: vec![crate::platform::WorkflowSubmission {
            at: 100,
            id: JobId(1),
            workflow,
        }],
        ..GridEvents::default()
    }
}

/// A workflow in the simulator: a diamond with an array node (a → 3 tasks of b → c, and d after
/// a) on two clusters of 2 processors. Each node starts when its parents have ended, every node
/// runs once as a job of its own (ids after the workflow's), and the workflow's record has its
/// makespan.
#[test]
fn a_workflow_runs_its_nodes_after_their_parents_in_the_simulator() {
    use gridsched_core::model::ArraySpec;
    let p = platform(&[(&[(2, 100)], true, &[]), (&[(2, 100)], true, &[])]);
    let mut b = node("b", &["a"], 30);
    b.job.array = Some(Box::new(ArraySpec::parse("0-2", 10).unwrap()));
    let nodes = vec![
        node("a", &[], 10),
        b,
        node("c", &["b"], 5),
        node("d", &["a"], 50),
    ];
    let events = workflow_at_100(nodes);
    let policies = build(&p, PolicyKind::Easy);
    let dispatcher = Box::new(RoundRobin::default());
    let (recs, rep) = run_with_events(&p, policies, dispatcher, None, &[], &events);
    // a is 2; b 3 with its tasks 4, 5, 6; c 7; d 8.
    let at = |id: u64| {
        let r = recs.iter().find(|r| r.id == JobId(id)).unwrap();
        (r.start, r.end)
    };
    let mut ids: Vec<u64> = recs.iter().map(|r| r.id.0).collect();
    ids.sort_unstable();
    assert_eq!(ids, [2, 4, 5, 6, 7, 8]);
    assert_eq!(at(2), (100, 110));
    // Three tasks and d on four processors, all from a's end.
    for id in [4, 5, 6, 8] {
        assert_eq!(at(id).0, 110, "job {id}");
    }
    assert_eq!(at(7), (140, 145), "c after the last task of b");
    assert_eq!(rep.stats.nodes, 4);
    assert_eq!(rep.stats.tasks, 3);
    let w = &rep.stats.workflows;
    assert_eq!(w.len(), 1);
    assert_eq!(
        (w[0].submit, w[0].end, w[0].outcome, w[0].done),
        (100, 160, gridsched_core::model::Outcome::Completed, 4)
    );
}

/// A workflow's data in the simulator: `a` (10 s) writes 100 MB that `b` (5 s) reads. Round
/// robin runs `a` at cluster 0 and `b` at cluster 1, whose link from cluster 0 carries 10 MB/s:
/// `b` starts 10 s after `a` ends, once the output is there; the same workflow without the
/// output starts `b` at once.
#[test]
fn a_nodes_outputs_move_to_where_its_child_runs_in_the_simulator() {
    use crate::platform::DataLinks;
    use gridsched_core::dispatch::{Link, Network};
    use gridsched_core::model::DataOut;
    let p = platform(&[(&[(2, 100)], true, &[]), (&[(2, 100)], true, &[])]);
    let link = Link {
        bytes_per_s: 10_000_000,
        latency_ms: 0,
    };
    let b_at = |bytes: Option<u64>| {
        let mut a = node("a", &[], 10);
        a.outputs = bytes
            .into_iter()
            .map(|bytes| DataOut {
                name: "out".into(),
                bytes,
            })
            .collect();
        let events = workflow_at_100(vec![a, node("b", &["a"], 5)]);
        let links = DataLinks {
            network: Network::uniform(2, link, link),
            blind: true,
        };
        let policies = build(&p, PolicyKind::Easy);
        let rr = Box::new(RoundRobin::default());
        let (recs, rep) = run_with_links(&p, policies, rr, None, Some(links), &[], &events);
        let b = recs.iter().find(|r| r.id == JobId(3)).unwrap();
        (
            b.cluster,
            b.start,
            b.end,
            rep.stats.input_moves,
            rep.stats.input_wait_s,
        )
    };
    assert_eq!(b_at(Some(100_000_000)), (ClusterId(1), 120, 125, 1, 10));
    assert_eq!(b_at(None), (ClusterId(1), 110, 115, 0, 0));
}

/// `aftercorr` in the simulator: array 20's task of each index starts when array 10's task of that
/// index ends (10 runs two at a time, so its last two end at 80).
#[test]
fn aftercorr_follows_task_by_task_in_the_simulator() {
    use gridsched_core::model::{ArraySpec, Dependency};
    let p = platform(&[(&[(2, 100)], true, &[]), (&[(2, 100)], true, &[])]);
    let mut a = Job::new(10, 0, 1, 50, 40);
    a.array = Some(Box::new(ArraySpec::parse("0-3%2", 100).unwrap()));
    let mut b = Job::new(20, 0, 1, 50, 10);
    b.array = Some(Box::new(ArraySpec::parse("0-3", 100).unwrap()));
    b.after = Some(Box::new(Dependency::parse("aftercorr:10", None).unwrap()));
    let policies = build(&p, PolicyKind::Easy);
    let dispatcher = Box::new(RoundRobin::default());
    let events = GridEvents::default();
    let (recs, rep) = run_with_events(&p, policies, dispatcher, None, &[a, b], &events);
    assert_eq!(
        (rep.stats.tasks, rep.stats.rejected, rep.stats.unmet),
        (8, 0, 0)
    );
    let start = |id: u64| recs.iter().find(|r| r.id == JobId(id)).unwrap().start;
    let end = |id: u64| recs.iter().find(|r| r.id == JobId(id)).unwrap().end;
    assert_eq!([end(11), end(12), end(13), end(14)], [40, 40, 80, 80]);
    assert_eq!(
        [start(21), start(22), start(23), start(24)],
        [40, 40, 80, 80]
    );
}
