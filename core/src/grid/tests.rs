//! Worked examples of the grid runner: dispatch and its bookkeeping, refusals, the meta-level
//! queue, co-allocation round by round, given-up co-allocations and their retries, sites going
//! down and up.

use super::*;
use crate::dispatch::{
    ClusterCaps, ClusterLoad, DispatchConfig, DispatchKind, MultiSiteConfig, Part,
};
use crate::model::{LicenceId, UserId};

/// Site `i` of one machine of `procs` processors, named `s<i>`.
pub(super) fn site(i: u32, procs: u32) -> SiteSpec {
    SiteSpec {
        name: format!("s{i}"),
        caps: ClusterCaps {
            cluster: ClusterId(i),
            up: true,
            total_procs: u64::from(procs),
            max_machine_procs: procs,
            licences: Vec::new(),
            benchmark: None,
            max_memory_kb: None,
        },
        max_estimate: None,
        machines: None,
        stages: true,
        users: None,
        reserves: true,
    }
}

pub(super) fn runner(kind: DispatchKind, sizes: &[u32], settings: GridSettings) -> GridRunner {
    let sites = sizes
        .iter()
        .enumerate()
        .map(|(i, &p)| site(i as u32, p))
        .collect();
    runner_of(kind, sites, settings)
}

/// A runner over these sites.
fn runner_of(kind: DispatchKind, sites: Vec<SiteSpec>, settings: GridSettings) -> GridRunner {
    let cfg = GridConfig {
        sites,
        dispatch: DispatchConfig {
            split_wide: true,
            ..DispatchConfig::new(kind)
        },
        classifier: None,
        settings,
        classifier_state: None,
        usage_state: None,
    };
    GridRunner::from_config(&cfg).unwrap()
}

fn job(id: u64, procs: u32, estimate: i64) -> Job {
    Job::new(id, 0, procs, estimate, estimate)
}

pub(crate) fn on(r: &mut GridRunner, now: Time, input: Input) -> Vec<Effect> {
    let mut out = Vec::new();
    r.on(now, input, &mut out).unwrap();
    out
}

fn submit(r: &mut GridRunner, now: Time, j: Job) -> Vec<Effect> {
    on(
        r,
        now,
        Input::Submit {
            job: j,
            priority: None,
        },
    )
}

fn placed(effects: &[Effect]) -> Vec<(u64, usize)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Place { job, site, .. } => Some((job.0, *site)),
            _ => None,
        })
        .collect()
}

pub(super) fn splitting() -> GridSettings {
    GridSettings {
        coallocation: Some(CoallocationRules::new(
            MultiSiteConfig {
                overhead_pct: 25,
                ..MultiSiteConfig::default()
            },
            5,
        )),
        ..GridSettings::default()
    }
}

#[test]
fn load_ordering_places_on_idle_sites_and_counts_ends() {
    let mut r = runner(
        DispatchKind::LoadOrdering,
        &[8, 16],
        GridSettings::default(),
    );
    assert_eq!(placed(&submit(&mut r, 0, job(1, 4, 100))), [(1, 0)]);
    assert_eq!(placed(&submit(&mut r, 0, job(2, 4, 100))), [(2, 1)]);
    // Wider than site 0's machine: only site 1.
    assert_eq!(placed(&submit(&mut r, 0, job(3, 12, 100))), [(3, 1)]);
    assert_eq!(r.placer().arrays()[1].count[1], 2);
    // An end reported from the wrong site changes nothing; from its own, the job leaves.
    on(
        &mut r,
        5,
        Input::Ended {
            job: JobId(2),
            site: 0,
            outcome: Outcome::Completed,
            exit: None,
        },
    );
    assert!(r.contains(JobId(2)));
    on(
        &mut r,
        5,
        Input::Ended {
            job: JobId(2),
            site: 1,
            outcome: Outcome::Completed,
            exit: None,
        },
    );
    assert!(!r.contains(JobId(2)));
    assert_eq!(r.placer().arrays()[1].count[1], 1);
    // A job id in the grid cannot come in again.
    let mut out = Vec::new();
    let again = Input::Submit {
        job: job(1, 1, 1),
        priority: None,
    };
    assert_eq!(
        r.on(6, again, &mut out),
        Err(GridError::DuplicateJob(JobId(1)))
    );
    assert!(out.is_empty());
}

#[test]
fn invalid_and_impossible_jobs_are_refused_with_the_reason() {
    let mut r = runner(DispatchKind::LoadOrdering, &[8], GridSettings::default());
    let e = submit(&mut r, 0, job(1, 0, 100));
    assert!(
        matches!(&e[..], [Effect::Refuse { job: JobId(1), why, refusal: Some(Refusal { field: Field::Procs, kind: Kind::Invalid, .. }) }] if why.starts_with("job 1: ")),
        "{e:?}"
    );
    // Wider than every site together: refused, not left waiting.
    let e = submit(&mut r, 0, job(2, 9, 100));
    assert!(
        matches!(&e[..], [Effect::Refuse { job: JobId(2), why, refusal: Some(Refusal { field: Field::Procs, .. }) }] if why.contains("9 processors exceed")),
        "{e:?}"
    );
    assert!(!r.contains(JobId(2)));
    // A licence no site has: its index blamed.
    let licensed = Job {
        licences: vec![LicenceId(4)],
        ..job(4, 1, 100)
    };
    let e = submit(&mut r, 0, licensed);
    assert!(
        matches!(
            &e[..],
            [Effect::Refuse {
                refusal: Some(Refusal {
                    field: Field::Licence(0),
                    kind: Kind::Invalid,
                    ..
                }),
                ..
            }]
        ),
        "{e:?}"
    );
    // A site refusing a job it was sent: the job leaves, the strategy forgets it.
    assert_eq!(placed(&submit(&mut r, 0, job(3, 4, 100))), [(3, 0)]);
    let e = on(
        &mut r,
        1,
        Input::Refused {
            job: JobId(3),
            site: 0,
            why: "no".into(),
        },
    );
    assert_eq!(
        e,
        [Effect::Refuse {
            job: JobId(3),
            why: "no".into(),
            refusal: None,
        }]
    );
    assert_eq!(r.placer().arrays()[0].count[1], 0);
}

#[test]
fn a_wide_job_is_co_allocated_round_by_round_and_sent_stretched() {
    let mut r = runner(DispatchKind::LoadOrdering, &[8, 4], splitting());
    let e = submit(&mut r, 0, job(1, 10, 100));
    assert!(matches!(&e[..], [Effect::Wait { held: true, .. }]), "{e:?}");
    assert_eq!(r.waiting(), 1);
    let e = on(&mut r, 0, Input::Release);
    // Fragments 8 + 2, held for 125 s (p = 25 %) and the send grace.
    let holds: Vec<(usize, usize, u64, Time, i64, u32)> = e
        .iter()
        .filter_map(|e| match *e {
            Effect::Hold {
                fragment,
                site,
                reservation,
                from,
                length,
                procs,
                ..
            } => Some((fragment, site, reservation.0, from, length, procs)),
            _ => None,
        })
        .collect();
    assert_eq!(holds, [(0, 0, 1, 0, 127, 8), (1, 1, 2, 0, 127, 2)]);
    let held = |fragment, site, reservation, start| Input::Held {
        job: JobId(1),
        fragment,
        site,
        reservation: ReservationId(reservation),
        answer: Ok(start),
    };
    // Site 0 can start at 0, site 1 only at 30: site 0 is asked again from 30.
    assert!(on(&mut r, 0, held(0, 0, 1, 0)).is_empty());
    let e = on(&mut r, 0, held(1, 1, 2, 30));
    assert_eq!(
        e,
        [
            Effect::LetGo {
                job: JobId(1),
                site: 0,
                reservation: ReservationId(1)
            },
            Effect::Hold {
                job: JobId(1),
                fragment: 0,
                site: 0,
                reservation: ReservationId(3),
                from: 30,
                length: 127,
                procs: 8
            }
        ]
    );
    // The stale answer of the first hold is let go if it comes late.
    let e = on(&mut r, 0, held(0, 0, 1, 0));
    assert!(matches!(
        &e[..],
        [Effect::LetGo {
            reservation: ReservationId(1),
            ..
        }]
    ));
    let e = on(&mut r, 0, held(0, 0, 3, 30));
    assert_eq!(e.len(), 2);
    assert!(
        e.iter()
            .all(|e| matches!(e, Effect::Commit { start: 30, .. }))
    );
    let commit = |fragment| Input::Committed {
        job: JobId(1),
        fragment,
        answer: Ok(()),
    };
    assert!(on(&mut r, 0, commit(1)).is_empty());
    let e = on(&mut r, 0, commit(0));
    let [
        Effect::Send {
            start: 30,
            rounds: 2,
            fragments,
            ..
        },
    ] = &e[..]
    else {
        panic!("{e:?}")
    };
    assert_eq!(
        fragments
            .iter()
            .map(|f| (f.site, f.procs, f.reservation.0, f.length, f.overhead_pct))
            .collect::<Vec<_>>(),
        [(0, 8, 3, 125, 25), (1, 2, 2, 125, 25)]
    );
    assert_eq!(r.waiting(), 0);
    // The committed holds are the owner's reservations in the grid's book while they run: a job
    // of the owner's may be submitted into one.
    let held = |r: &GridRunner, id| {
        r.reservation(ReservationId(id))
            .map(|h| (h.site, h.procs, h.start, h.standing))
    };
    let standing = Standing::Held { speed: None };
    assert_eq!(held(&r, 3), Some((0, 8, 30, standing)));
    assert_eq!(held(&r, 2), Some((1, 2, 30, standing)));
    let inside = Job {
        reservation: Some(ReservationId(3)),
        ..job(9, 8, 100)
    };
    assert_eq!(r.admit(30, &inside), Ok(Some(0)));
    // Each fragment's end lets its reservation go; the last one ends the job.
    let e = on(
        &mut r,
        200,
        Input::FragmentEnded {
            job: JobId(1),
            site: 1,
            ok: true,
            again: false,
        },
    );
    assert_eq!(
        e,
        [Effect::LetGo {
            job: JobId(1),
            site: 1,
            reservation: ReservationId(2)
        }]
    );
    assert_eq!((held(&r, 2), held(&r, 3).is_some()), (None, true));
    let e = on(
        &mut r,
        201,
        Input::FragmentEnded {
            job: JobId(1),
            site: 0,
            ok: true,
            again: false,
        },
    );
    assert_eq!(
        e.last(),
        Some(&Effect::Over {
            job: JobId(1),
            site: 0
        })
    );
    assert!(!r.contains(JobId(1)));
    assert_eq!(held(&r, 3), None);
}

#[test]
fn a_refused_co_allocation_is_retried_a_second_later_then_refused_for_good() {
    let mut r = runner(DispatchKind::LoadOrdering, &[8, 4], splitting());
    submit(&mut r, 0, job(1, 10, 100));
    let mut now = 0;
    let mut effects = on(&mut r, now, Input::Release);
    for attempt in 1..=MAX_REFUSED_FOR_TEST {
        let holds: Vec<(usize, usize, ReservationId)> = effects
            .iter()
            .filter_map(|e| match *e {
                Effect::Hold {
                    fragment,
                    site,
                    reservation,
                    ..
                } => Some((fragment, site, reservation)),
                _ => None,
            })
            .collect();
        assert_eq!(holds.len(), 2, "attempt {attempt}: {effects:?}");
        // Site 0 holds; site 1 refuses.
        let (f, s, id) = holds[0];
        let ok = Input::Held {
            job: JobId(1),
            fragment: f,
            site: s,
            reservation: id,
            answer: Ok(now),
        };
        assert!(on(&mut r, now, ok).is_empty());
        let (f, s, id) = holds[1];
        let no = Input::Held {
            job: JobId(1),
            fragment: f,
            site: s,
            reservation: id,
            answer: Err("takes no reservations".into()),
        };
        let e = on(&mut r, now, no);
        assert!(matches!(e[0], Effect::LetGo { site: 0, .. }), "{e:?}");
        if attempt < MAX_REFUSED_FOR_TEST {
            let Effect::GivenUp {
                retry_at: Some(at), ..
            } = e[1]
            else {
                panic!("{e:?}")
            };
            assert_eq!(at, now + 1);
            assert_eq!(r.waiting(), 1);
            // Nothing happens before the retry; the retry asks again.
            now = at;
            effects = on(&mut r, now, Input::Retry { job: JobId(1) });
            let e = on(&mut r, now, Input::Release);
            effects.extend(e);
        } else {
            assert!(
                matches!(e[1], Effect::GivenUp { retry_at: None, .. }),
                "{e:?}"
            );
            assert!(
                matches!(&e[2], Effect::Refuse { why, .. } if why.contains("refused 10 times in a row")),
                "{e:?}"
            );
            assert!(!r.contains(JobId(1)));
        }
    }
}

const MAX_REFUSED_FOR_TEST: u32 = MAX_REFUSED;

#[test]
fn a_site_down_long_enough_loses_its_unstarted_jobs_and_gets_them_back_when_up() {
    let settings = GridSettings {
        site_down_after_ms: Some(1_000),
        ..GridSettings::default()
    };
    let mut r = runner(DispatchKind::RoundRobin, &[8, 8], settings);
    for s in 0..2 {
        on(
            &mut r,
            0,
            Input::Link {
                site: s,
                reachable: true,
                at_ms: 0,
            },
        );
    }
    assert_eq!(placed(&submit(&mut r, 0, job(1, 4, 100))), [(1, 0)]);
    assert_eq!(placed(&submit(&mut r, 0, job(2, 4, 100))), [(2, 1)]);
    assert_eq!(placed(&submit(&mut r, 0, job(3, 4, 100))), [(3, 0)]);
    // Job 1 started at site 0 (claimed): it stays whatever happens.
    on(
        &mut r,
        1,
        Input::Claimed {
            job: JobId(1),
            site: 0,
        },
    );
    on(
        &mut r,
        1,
        Input::Link {
            site: 0,
            reachable: false,
            at_ms: 1_000,
        },
    );
    assert!(on(&mut r, 1, Input::Tick { at_ms: 1_999 }).is_empty());
    assert!(r.placer().is_up(0));
    let e = on(&mut r, 2, Input::Tick { at_ms: 2_000 });
    assert_eq!(e[0], Effect::SiteDown { site: 0 });
    assert!(
        matches!(
            e[1],
            Effect::Place {
                job: JobId(3),
                site: 1,
                cause: Cause::Withdrawn { from: 0 },
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(e.len(), 2);
    // A new job goes to site 1 alone; one that only site 0 could run waits for it.
    assert_eq!(placed(&submit(&mut r, 2, job(4, 4, 100))), [(4, 1)]);
    let mut big = runner(
        DispatchKind::LoadOrdering,
        &[8, 4],
        GridSettings {
            site_down_after_ms: Some(1_000),
            ..GridSettings::default()
        },
    );
    on(
        &mut big,
        0,
        Input::Link {
            site: 1,
            reachable: true,
            at_ms: 0,
        },
    );
    // Unreachable from the first tick on (at 0), down a second later.
    on(&mut big, 0, Input::Tick { at_ms: 0 });
    assert!(big.placer().is_up(0));
    on(&mut big, 0, Input::Tick { at_ms: 1_000 });
    assert!(!big.placer().is_up(0) && big.placer().is_up(1));
    let e = submit(&mut big, 1, job(7, 6, 100));
    assert!(
        matches!(&e[..], [Effect::Wait { held: false, .. }]),
        "{e:?}"
    );
    assert!(
        on(&mut big, 2, Input::Tick { at_ms: 1_200 }).is_empty(),
        "waits quietly"
    );
    let e = on(
        &mut big,
        3,
        Input::Link {
            site: 0,
            reachable: true,
            at_ms: 1_400,
        },
    );
    assert_eq!(e[0], Effect::SiteUp { site: 0 });
    assert_eq!(placed(&e), [(7, 0)]);
}

#[test]
fn explanations_name_every_candidate() {
    let mut r = runner(
        DispatchKind::LoadOrdering,
        &[8, 16],
        GridSettings {
            explain: true,
            ..GridSettings::default()
        },
    );
    let e = submit(&mut r, 0, job(1, 12, 100));
    let Some(Effect::Place {
        explanation: Some(x),
        ..
    }) = e.iter().find(|e| matches!(e, Effect::Place { .. }))
    else {
        panic!("{e:?}")
    };
    assert_eq!(x.site, Some(1));
    assert!(!x.candidates[0].feasible);
    assert_eq!(
        x.candidates[0].note,
        "cannot run the job (processors or licences)"
    );
    assert_eq!(x.candidates[1].note, "");
    assert!(
        x.decided_by.starts_with("load-ordering ("),
        "{}",
        x.decided_by
    );
}

#[test]
fn inputs_are_plain_data() {
    let inputs = [
        Input::Submit {
            job: job(1, 2, 3),
            priority: Some(2),
        },
        Input::Held {
            job: JobId(1),
            fragment: 0,
            site: 1,
            reservation: ReservationId(4),
            answer: Err("no".into()),
        },
        Input::Loads {
            loads: vec![ClusterLoad {
                waiting_area: i128::from(u64::MAX) * 4,
                ..ClusterLoad::default()
            }],
        },
        Input::Tick { at_ms: 5 },
    ];
    for i in inputs {
        let text = serde_json::to_string(&i).unwrap();
        assert_eq!(serde_json::from_str::<Input>(&text).unwrap(), i, "{text}");
    }
}

/// A seeded random driver: submissions (some wider than every site), hold and commit answers
/// (some refused, some late), ends, links going down and up, ticks, release passes and retries,
/// over random grids and strategies. After every effect: no job is placed on a site marked
/// down, no job is placed while it is at another site (unless withdrawn from it), nothing comes
/// for a refused job but the release of a late hold; at the end, with every link up and every
/// answer in, every hold that was made is let go or served, and no job is left waiting. The same
/// seed gives the same effects.
#[test]
fn random_drives_keep_the_grid_invariants() {
    use rand::{RngExt, SeedableRng};
    use std::collections::{BTreeMap, BTreeSet};
    let mut all = String::new();
    for seed in 0..300u64 {
        let a = drive(seed);
        assert_eq!(a, drive(seed), "seed {seed}: not deterministic");
        all.push_str(&a);
    }
    // The drives reach every part of the runner.
    for (what, at_least) in [
        ("Send {", 100),
        ("GivenUp {", 100),
        ("retry_at: Some", 100),
        ("SiteDown {", 50),
        ("SiteUp {", 50),
        ("Withdrawn {", 20),
        ("Refuse {", 50),
        ("LetGo {", 200),
        ("Over {", 50),
    ] {
        let n = all.matches(what).count();
        assert!(
            n >= at_least,
            "{what} seen {n} times, fewer than {at_least}"
        );
    }

    fn drive(seed: u64) -> String {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let n = rng.random_range(2..=4usize);
        let sizes: Vec<u32> = (0..n).map(|_| rng.random_range(2..=16u32)).collect();
        let kinds = [
            DispatchKind::LoadOrdering,
            DispatchKind::RoundRobin,
            DispatchKind::LeastLoaded,
            DispatchKind::JobSharing,
            DispatchKind::MultiSite,
        ];
        let kind = kinds[rng.random_range(0..kinds.len())];
        let settings = GridSettings {
            coallocation: Some(CoallocationRules::new(MultiSiteConfig::default(), 3)),
            site_down_after_ms: Some(1_000),
            ..splitting()
        };
        let mut r = runner(kind, &sizes, settings);
        let total: u32 = sizes.iter().sum();
        let mut log = String::new();
        let mut now: Time = 0;
        let mut ms: u64 = 0;
        let mut up = vec![true; n];
        let mut next_id = 1u64;
        // Where each job is, as the effects said: site, or None at the meta level.
        let mut at: BTreeMap<JobId, Option<usize>> = BTreeMap::new();
        let mut refused: BTreeSet<JobId> = BTreeSet::new();
        let mut holds: Vec<(JobId, usize, usize, ReservationId, Time)> = Vec::new();
        let mut commits: Vec<(JobId, usize)> = Vec::new();
        let mut made: BTreeSet<ReservationId> = BTreeSet::new();
        let mut gone: BTreeSet<ReservationId> = BTreeSet::new();
        let mut running_splits: BTreeMap<JobId, Vec<usize>> = BTreeMap::new();
        let mut retries: Vec<(Time, JobId)> = Vec::new();
        let step = |r: &mut GridRunner,
                    now: Time,
                    input: Input,
                    log: &mut String,
                    up: &mut Vec<bool>,
                    at: &mut BTreeMap<JobId, Option<usize>>,
                    refused: &mut BTreeSet<JobId>,
                    holds: &mut Vec<(JobId, usize, usize, ReservationId, Time)>,
                    commits: &mut Vec<(JobId, usize)>,
                    gone: &mut BTreeSet<ReservationId>,
                    running_splits: &mut BTreeMap<JobId, Vec<usize>>,
                    retries: &mut Vec<(Time, JobId)>| {
            let mut out = Vec::new();
            r.on(now, input, &mut out).unwrap();
            for e in out {
                log.push_str(&format!("{now} {e:?}\n"));
                match e {
                    Effect::SiteDown { site } => up[site] = false,
                    Effect::SiteUp { site } => up[site] = true,
                    Effect::Place {
                        job, site, cause, ..
                    } => {
                        assert!(up[site], "seed {seed}: {job} placed on down site {site}");
                        assert!(!refused.contains(&job), "seed {seed}: {job} refused");
                        match (at.get(&job).copied().flatten(), cause) {
                            (None, _) => {}
                            (Some(s), Cause::Withdrawn { from }) if s == from => {}
                            (Some(s), c) => {
                                panic!("seed {seed}: {job} at {s} placed again on {site} ({c:?})")
                            }
                        }
                        at.insert(job, Some(site));
                    }
                    Effect::Wait { job, .. }
                    | Effect::GivenUp { job, .. }
                    | Effect::Limited { job, .. } => {
                        at.insert(job, None);
                        if let Effect::GivenUp {
                            retry_at: Some(t), ..
                        } = e
                        {
                            retries.push((t, job));
                        }
                    }
                    Effect::Refuse { job, .. } => {
                        refused.insert(job);
                        at.remove(&job);
                    }
                    Effect::Hold {
                        job,
                        fragment,
                        site,
                        reservation,
                        from,
                        ..
                    } => {
                        assert!(!refused.contains(&job));
                        holds.push((job, fragment, site, reservation, from));
                    }
                    Effect::Commit { job, fragment, .. } => commits.push((job, fragment)),
                    Effect::LetGo { reservation, .. } => {
                        gone.insert(reservation);
                    }
                    Effect::Send { job, fragments, .. } => {
                        assert!(!refused.contains(&job));
                        running_splits.insert(job, fragments.iter().map(|f| f.site).collect());
                        at.insert(job, None);
                    }
                    Effect::StartSplit { .. } => unreachable!("not at once here"),
                    Effect::Blocked { .. }
                    | Effect::Defer { .. }
                    | Effect::Continue { .. }
                    | Effect::Unmet { .. } => {
                        unreachable!("no dependencies here")
                    }
                    Effect::Task { .. }
                    | Effect::ArrayOver { .. }
                    | Effect::Node { .. }
                    | Effect::Stop { .. }
                    | Effect::WorkflowOver { .. } => {
                        unreachable!("no arrays nor workflows here")
                    }
                    Effect::Over { job, .. } => {
                        running_splits.remove(&job);
                        at.remove(&job);
                    }
                    Effect::Classified { .. }
                    | Effect::Coallocating { .. }
                    | Effect::Recalculated { .. }
                    | Effect::Kill { .. } => {}
                    Effect::ReservationRefused { .. }
                    | Effect::AskReservation { .. }
                    | Effect::ReservationHeld { .. }
                    | Effect::ReservationDropped { .. }
                    | Effect::TakeBack { .. } => unreachable!("no advance reservation here"),
                }
            }
        };
        macro_rules! go {
            ($input:expr) => {
                step(
                    &mut r,
                    now,
                    $input,
                    &mut log,
                    &mut up,
                    &mut at,
                    &mut refused,
                    &mut holds,
                    &mut commits,
                    &mut gone,
                    &mut running_splits,
                    &mut retries,
                )
            };
        }
        for s in 0..n {
            go!(Input::Link {
                site: s,
                reachable: true,
                at_ms: ms
            });
        }
        for _ in 0..120 {
            now += rng.random_range(0..3i64);
            ms = now as u64 * 1_000 + rng.random_range(0..1_000u64);
            match rng.random_range(0..10u32) {
                0..=2 => {
                    let procs = rng.random_range(1..=total + 2);
                    let j = Job::new(next_id, now, procs, rng.random_range(1..100i64), 10);
                    next_id += 1;
                    go!(Input::Submit {
                        job: j,
                        priority: None,
                    });
                }
                3 if !holds.is_empty() => {
                    let k = rng.random_range(0..holds.len());
                    let (job, fragment, site, reservation, from) = holds.remove(k);
                    let answer = if rng.random_range(0..5u32) == 0 {
                        Err("no".to_string())
                    } else {
                        made.insert(reservation);
                        Ok(from + rng.random_range(0..3i64))
                    };
                    go!(Input::Held {
                        job,
                        fragment,
                        site,
                        reservation,
                        answer
                    });
                }
                4 if !commits.is_empty() => {
                    let (job, fragment) = commits.remove(0);
                    let answer = match rng.random_range(0..8u32) {
                        0 => Err("lapsed".to_string()),
                        _ => Ok(()),
                    };
                    go!(Input::Committed {
                        job,
                        fragment,
                        answer
                    });
                }
                5 => {
                    let placed: Vec<(JobId, usize)> =
                        at.iter().filter_map(|(&j, &s)| s.map(|s| (j, s))).collect();
                    if let Some(&(job, site)) = placed.first() {
                        if rng.random_range(0..2u32) == 0 {
                            go!(Input::Claimed { job, site });
                        }
                        go!(Input::Ended {
                            job,
                            site,
                            outcome: Outcome::Completed,
                            exit: None,
                        });
                        at.remove(&job);
                    }
                    if let Some((&job, sites)) = running_splits.iter().next() {
                        let site = sites[0];
                        go!(Input::FragmentEnded {
                            job,
                            site,
                            ok: true,
                            again: false,
                        });
                        if let Some(v) = running_splits.get_mut(&job) {
                            v.retain(|&s| s != site);
                        }
                    }
                }
                6 => {
                    let site = rng.random_range(0..n);
                    let reachable = rng.random_range(0..3u32) > 0;
                    go!(Input::Link {
                        site,
                        reachable,
                        at_ms: ms
                    });
                }
                7 => go!(Input::Tick { at_ms: ms }),
                _ => {
                    let due: Vec<JobId> = retries
                        .iter()
                        .filter(|(t, _)| *t <= now)
                        .map(|x| x.1)
                        .collect();
                    retries.retain(|(t, _)| *t > now);
                    for job in due {
                        go!(Input::Retry { job });
                    }
                    go!(Input::Release);
                }
            }
        }
        // Every link up, every answer in (holds granted, commits made), every job ended.
        for s in 0..n {
            go!(Input::Link {
                site: s,
                reachable: true,
                at_ms: ms
            });
        }
        for _ in 0..400 {
            now += 1;
            ms += 1_000;
            if let Some((job, fragment, site, reservation, from)) = holds.pop() {
                made.insert(reservation);
                go!(Input::Held {
                    job,
                    fragment,
                    site,
                    reservation,
                    answer: Ok(from)
                });
                continue;
            }
            if let Some((job, fragment)) = commits.pop() {
                go!(Input::Committed {
                    job,
                    fragment,
                    answer: Ok(())
                });
                continue;
            }
            let placed: Vec<(JobId, usize)> =
                at.iter().filter_map(|(&j, &s)| s.map(|s| (j, s))).collect();
            for (job, site) in placed {
                go!(Input::Ended {
                    job,
                    site,
                    outcome: Outcome::Completed,
                    exit: None,
                });
                at.remove(&job);
            }
            let splits: Vec<(JobId, Vec<usize>)> =
                std::mem::take(&mut running_splits).into_iter().collect();
            for (job, sites) in splits {
                for site in sites {
                    go!(Input::FragmentEnded {
                        job,
                        site,
                        ok: true,
                        again: false,
                    });
                }
            }
            let due: Vec<JobId> = retries.drain(..).map(|x| x.1).collect();
            for job in due {
                go!(Input::Retry { job });
            }
            go!(Input::Release);
            go!(Input::Tick { at_ms: ms });
        }
        assert!(
            holds.is_empty() && commits.is_empty(),
            "seed {seed}: answers left"
        );
        let leaked: Vec<&ReservationId> = made.difference(&gone).collect();
        assert!(
            leaked.is_empty(),
            "seed {seed}: holds never let go: {leaked:?}\n{log}"
        );
        assert_eq!(r.waiting(), 0, "seed {seed}: jobs left waiting\n{log}");
        log
    }
}

#[test]
fn site_links_count_the_timeout_from_the_first_sight_of_a_lost_link() {
    let mut l = SiteLinks::new(2, Some(500));
    l.report(0, true, 0);
    // Site 1 never reached: unreachable from its first check on.
    assert!(l.overdue(100, |_| true).is_empty());
    assert_eq!(l.overdue(600, |_| true), [1]);
    // A site already down is not reported again.
    assert!(l.overdue(700, |i| i != 1).is_empty());
    l.report(0, false, 1_000);
    l.report(0, false, 1_400);
    assert!(l.overdue(1_499, |i| i == 0).is_empty());
    assert_eq!(l.overdue(1_500, |i| i == 0), [0]);
    // Back, then lost again: counted afresh.
    l.report(0, true, 1_600);
    l.report(0, false, 1_700);
    assert!(l.overdue(2_100, |i| i == 0).is_empty());
    assert!(!l.reachable(1));
    assert!(
        SiteLinks::new(1, None)
            .overdue(u64::MAX, |_| true)
            .is_empty()
    );
}

/// A logged run (classifier, explanations, a split co-allocated round by round, a site going
/// down and up) read back from JSON Lines decides the same again; a tampered effect, a missing
/// one and an extra one are each reported at their line.
#[test]
fn an_input_log_re_decides_identically_and_names_the_first_difference() {
    use super::replay::{Line, Mismatch, Recorder, check};
    let cfg = GridConfig {
        sites: [8u32, 4, 16]
            .iter()
            .enumerate()
            .map(|(i, &p)| site(i as u32, p))
            .collect(),
        dispatch: DispatchConfig {
            split_wide: true,
            ..DispatchConfig::new(DispatchKind::LoadOrdering)
        },
        classifier: Some(crate::classify::ClassifierConfig::default()),
        settings: GridSettings {
            explain: true,
            site_down_after_ms: Some(1_000),
            ..splitting()
        },
        classifier_state: None,
        usage_state: None,
    };
    let mut r = Recorder::new(cfg).unwrap();
    let mut out = Vec::new();
    for s in 0..3 {
        let link = Input::Link {
            site: s,
            reachable: true,
            at_ms: 0,
        };
        r.on(0, link, &mut out).unwrap();
    }
    for id in 1..=6 {
        let mut j = job(id, [3, 9, 20, 2, 12, 1][id as usize - 1], 50 * id as i64);
        j.submit = id as i64;
        if id == 4 {
            j.deadline = Some(500);
        }
        let submit = Input::Submit {
            job: j,
            priority: None,
        };
        r.on(id as i64, submit, &mut out).unwrap();
    }
    out.clear();
    r.on(7, Input::Release, &mut out).unwrap();
    // Answer the holds: every site can start at 10.
    let holds: Vec<Effect> = out.clone();
    for e in holds {
        if let Effect::Hold {
            job,
            fragment,
            site,
            reservation,
            ..
        } = e
        {
            let held = Input::Held {
                job,
                fragment,
                site,
                reservation,
                answer: Ok(10),
            };
            let mut more = Vec::new();
            r.on(8, held, &mut more).unwrap();
            for c in more {
                if let Effect::Commit { job, fragment, .. } = c {
                    let ok = Input::Committed {
                        job,
                        fragment,
                        answer: Ok(()),
                    };
                    r.on(9, ok, &mut Vec::new()).unwrap();
                }
            }
        }
    }
    let lost = Input::Link {
        site: 2,
        reachable: false,
        at_ms: 10_000,
    };
    r.on(10, lost, &mut Vec::new()).unwrap();
    r.on(12, Input::Tick { at_ms: 11_000 }, &mut Vec::new())
        .unwrap();
    let back = Input::Link {
        site: 2,
        reachable: true,
        at_ms: 12_000,
    };
    r.on(13, back, &mut Vec::new()).unwrap();
    let lines = r.lines.clone();
    let text: Vec<String> = lines
        .iter()
        .map(|l| serde_json::to_string(l).unwrap())
        .collect();
    let read: Vec<Line> = text
        .iter()
        .map(|t| serde_json::from_str(t).unwrap())
        .collect();
    assert_eq!(read, lines);
    let checked = check(read.clone()).unwrap();
    assert_eq!(checked.runs, 1);
    assert!(checked.placements >= 4, "{checked:?}");
    assert!(
        text.iter().any(|t| t.contains("\"send\"")) && text.iter().any(|t| t.contains("site-down")),
        "the log holds a co-allocation and a site down"
    );
    // A placement logged elsewhere than decided.
    let k = read
        .iter()
        .position(|l| matches!(l, Line::Out(Effect::Place { .. })))
        .unwrap();
    let mut tampered = read.clone();
    if let Line::Out(Effect::Place { site, .. }) = &mut tampered[k] {
        *site = (*site + 1) % 3;
    }
    assert!(
        matches!(check(tampered), Err(Mismatch::Differs(crate::rerun::Differ { line, .. })) if line == k + 1)
    );
    // An effect missing from the log: the next input's line is named.
    let mut missing = read.clone();
    missing.remove(k);
    assert!(
        matches!(check(missing), Err(Mismatch::Differs(crate::rerun::Differ { logged, .. })) if logged == "nothing")
    );
    // An extra effect the re-run does not decide.
    let mut extra = read;
    extra.insert(k, Line::Out(Effect::SiteUp { site: 1 }));
    assert!(
        matches!(check(extra), Err(Mismatch::Differs(crate::rerun::Differ { line, .. })) if line == k + 1)
    );
}

/// Cancellations at each place a job can be, and a split job's fragment that fails: the
/// strategy forgets the job, a co-allocation's holds and a split job's reservations are let go,
/// and a failed fragment has the others killed.
/// Answers every hold of `pending` (and of what follows) with a start at `start`, and every
/// commit with success, at `now`.
fn hold_and_commit_all(r: &mut GridRunner, now: Time, mut pending: Vec<Effect>, start: Time) {
    while let Some(e) = pending.pop() {
        let input = match e {
            Effect::Hold {
                job,
                fragment,
                site,
                reservation,
                ..
            } => Input::Held {
                job,
                fragment,
                site,
                reservation,
                answer: Ok(start),
            },
            Effect::Commit { job, fragment, .. } => Input::Committed {
                job,
                fragment,
                answer: Ok(()),
            },
            _ => continue,
        };
        pending.extend(on(r, now, input));
    }
}

#[test]
fn cancellations_and_failed_fragments_release_what_the_job_held() {
    let mut r = runner(DispatchKind::LoadOrdering, &[8, 4], splitting());
    // Held, then cancelled: the strategy's queue is empty again.
    submit(&mut r, 0, job(1, 10, 100));
    assert_eq!(r.held(), 1);
    assert!(on(&mut r, 0, Input::Cancel { job: JobId(1) }).is_empty());
    assert_eq!((r.held(), r.waiting()), (0, 0));
    // Co-allocating with one hold answered: cancelling lets both holds go.
    submit(&mut r, 1, job(2, 10, 100));
    let e = on(&mut r, 1, Input::Release);
    assert!(matches!(e[0], Effect::Coallocating { .. }), "{e:?}");
    let Effect::Hold { reservation, .. } = e[1] else {
        panic!("{e:?}")
    };
    let held = Input::Held {
        job: JobId(2),
        fragment: 0,
        site: 0,
        reservation,
        answer: Ok(1),
    };
    assert!(on(&mut r, 1, held).is_empty());
    let e = on(&mut r, 2, Input::Cancel { job: JobId(2) });
    assert_eq!(e.len(), 2, "{e:?}");
    assert!(e.iter().all(|e| matches!(e, Effect::LetGo { .. })));
    assert!(!r.contains(JobId(2)));
    // Co-allocated: a fragment that fails has the other killed, and the job is over with it.
    submit(&mut r, 3, job(3, 10, 100));
    let pending = on(&mut r, 3, Input::Release);
    hold_and_commit_all(&mut r, 3, pending, 3);
    let failed = Input::FragmentEnded {
        job: JobId(3),
        site: 1,
        ok: false,
        again: false,
    };
    let e = on(&mut r, 9, failed);
    assert!(matches!(e[0], Effect::LetGo { site: 1, .. }), "{e:?}");
    assert!(matches!(e[1], Effect::Kill { site: 0, .. }), "{e:?}");
    let killed = Input::FragmentEnded {
        job: JobId(3),
        site: 0,
        ok: false,
        again: false,
    };
    let e = on(&mut r, 10, killed);
    assert_eq!(
        e.last(),
        Some(&Effect::Over {
            job: JobId(3),
            site: 0
        })
    );
    // Placed on a site, then cancelled: its count there is given back.
    assert_eq!(placed(&submit(&mut r, 11, job(4, 2, 100))), [(4, 0)]);
    assert_eq!(r.placer().arrays()[0].count[1], 1);
    on(&mut r, 12, Input::Cancel { job: JobId(4) });
    assert_eq!(r.placer().arrays()[0].count[1], 0);
}

/// A fragment its site refuses (sent too late for its reservation, say) cannot start with the
/// others: the other fragment is killed, and the job fails even if that one completes, so that
/// a job that depends on its success never runs.
#[test]
fn a_refused_fragment_fails_the_split_job() {
    let mut r = runner(DispatchKind::LoadOrdering, &[8, 4], splitting());
    submit(&mut r, 0, job(1, 10, 100));
    let pending = on(&mut r, 0, Input::Release);
    hold_and_commit_all(&mut r, 0, pending, 3);
    let mut after = job(2, 1, 10);
    after.after = Some(Box::new(
        crate::model::Dependency::parse("afterok:1", None).unwrap(),
    ));
    submit(&mut r, 1, after);
    let refused = Input::Refused {
        job: JobId(1),
        site: 1,
        why: "too late for its reservation".into(),
    };
    let e = on(&mut r, 4, refused);
    assert!(matches!(e[0], Effect::LetGo { site: 1, .. }), "{e:?}");
    assert!(matches!(e[1], Effect::Kill { site: 0, .. }), "{e:?}");
    assert_eq!(e.len(), 2, "{e:?}");
    // The fragment that ran alone completes before its kill: the job is over, failed.
    let ended = Input::FragmentEnded {
        job: JobId(1),
        site: 0,
        ok: true,
        again: false,
    };
    let e = on(&mut r, 5, ended);
    assert!(e.contains(&Effect::Over {
        job: JobId(1),
        site: 0
    }));
    assert!(
        e.iter()
            .any(|e| matches!(e, Effect::Unmet { job: JobId(2), .. })),
        "{e:?}"
    );
}

/// A runner restarted from where its jobs stood counts them as the one that decided them, and
/// goes on with them alike: a restored split job's fragments end it, a job restored waiting is
/// dispatched at the next tick, a job whose run failed comes back as a requeue.
#[test]
fn restored_jobs_count_again_and_go_on_as_before() {
    let mut live = runner(DispatchKind::LoadOrdering, &[8, 4], splitting());
    let mut back = runner(DispatchKind::LoadOrdering, &[8, 4], splitting());
    // Job 1 at site 0 (claimed), job 2 at site 1, job 3 split 8 + 2 with reservations 7 and 8.
    assert_eq!(placed(&submit(&mut live, 0, job(1, 2, 100))), [(1, 0)]);
    assert_eq!(placed(&submit(&mut live, 0, job(2, 2, 100))), [(2, 1)]);
    let restore = |r: &mut GridRunner, j: Job, at: Restored| {
        let input = Input::Restore {
            job: j,
            priority: 1,
            at,
        };
        on(r, 0, input)
    };
    let at = |site, claimed| Restored::Site {
        site,
        claimed,
        since: 0,
    };
    assert!(restore(&mut back, job(1, 2, 100), at(0, true)).is_empty());
    assert!(restore(&mut back, job(2, 2, 100), at(1, false)).is_empty());
    assert_eq!(back.placer().arrays(), live.placer().arrays());
    let part = |c: u32, procs: u32| Part {
        cluster: ClusterId(c),
        procs,
    };
    let fragments = vec![
        (part(0, 8), ReservationId(7), false),
        (part(1, 2), ReservationId(8), false),
    ];
    let split = Restored::Split {
        fragments,
        since: 0,
    };
    assert!(restore(&mut back, job(3, 10, 100), split).is_empty());
    let again = Input::Restore {
        job: job(3, 10, 100),
        priority: 1,
        at: Restored::Waiting,
    };
    assert_eq!(
        back.on(0, again, &mut Vec::new()),
        Err(GridError::DuplicateJob(JobId(3)))
    );
    let e = on(
        &mut back,
        5,
        Input::FragmentEnded {
            job: JobId(3),
            site: 1,
            ok: false,
            again: false,
        },
    );
    assert_eq!(
        e,
        [
            Effect::LetGo {
                job: JobId(3),
                site: 1,
                reservation: ReservationId(8),
            },
            Effect::Kill {
                job: JobId(3),
                site: 0,
                why: "fragment 1 at site 1 ended badly".into(),
            },
        ]
    );
    let e = on(
        &mut back,
        6,
        Input::FragmentEnded {
            job: JobId(3),
            site: 0,
            ok: false,
            again: false,
        },
    );
    assert_eq!(
        e.last(),
        Some(&Effect::Over {
            job: JobId(3),
            site: 0,
        })
    );
    // Its run failed: it comes back, and the strategy holds it (wider than any site) until a
    // release pass splits it anew.
    let requeue = Input::Requeue {
        job: job(3, 10, 100),
        priority: 1,
    };
    let e = on(&mut back, 7, requeue);
    assert!(
        matches!(
            e[..],
            [Effect::Wait {
                held: true,
                cause: Cause::Requeued,
                ..
            }]
        ),
        "{e:?}"
    );
    // A job restored waiting, under a strategy that does not hold it, is dispatched at the next
    // tick.
    assert!(restore(&mut back, job(4, 1, 100), Restored::Waiting).is_empty());
    assert!(back.waits(JobId(4)));
    let e = on(&mut back, 8, Input::Tick { at_ms: 0 });
    assert_eq!(placed(&e).len(), 1, "{e:?}");
    assert!(!back.waits(JobId(4)));
}

/// Hold reservation ids continue after the ids the grid's advance reservations took, one counter
/// for both.
#[test]
fn holds_take_their_ids_after_the_grids_reservations() {
    let mut r = runner(DispatchKind::LoadOrdering, &[8, 4], splitting());
    assert!(on(&mut r, 0, Input::Reservations { last: 10 }).is_empty());
    submit(&mut r, 0, job(1, 10, 100));
    let ids: Vec<u64> = on(&mut r, 0, Input::Release)
        .iter()
        .filter_map(|e| match e {
            Effect::Hold { reservation, .. } => Some(reservation.0),
            _ => None,
        })
        .collect();
    assert_eq!(ids, [11, 12]);
    assert_eq!(r.last_reservation(), 12);
    // A lower count never takes ids back.
    on(&mut r, 0, Input::Reservations { last: 3 });
    assert_eq!(r.last_reservation(), 12);
}

/// A runner built from a header with the classifier's state classifies the next job as the
/// runner that wrote the state would.
#[test]
fn a_header_with_the_classifiers_state_classifies_on_from_it() {
    let cfg = |state: Option<Vec<i64>>| GridConfig {
        sites: vec![site(0, 8)],
        dispatch: DispatchConfig::new(DispatchKind::LoadOrdering),
        classifier: Some(crate::classify::ClassifierConfig::default()),
        settings: GridSettings {
            explain: true,
            ..GridSettings::default()
        },
        classifier_state: state,
        usage_state: None,
    };
    let with_deadline = |id: u64, deadline: i64| {
        let mut j = job(id, 1, 100);
        j.deadline = Some(deadline);
        j
    };
    let priority = |e: &[Effect]| {
        e.iter().find_map(|e| match e {
            Effect::Classified { priority, .. } => Some(*priority),
            _ => None,
        })
    };
    let mut first = GridRunner::from_config(&cfg(None)).unwrap();
    for (id, d) in [(1, 150), (2, 5_000), (3, 120), (4, 90_000)] {
        submit(&mut first, 0, with_deadline(id, d));
    }
    let state = first.classifier_snapshot();
    let mut fresh = GridRunner::from_config(&cfg(None)).unwrap();
    let mut restarted = GridRunner::from_config(&cfg(Some(state))).unwrap();
    let next = with_deadline(5, 400);
    let p_first = priority(&submit(&mut first, 0, next.clone()));
    let p_restarted = priority(&submit(&mut restarted, 0, next.clone()));
    assert_eq!(p_restarted, p_first);
    assert_ne!(
        priority(&submit(&mut fresh, 0, next)),
        p_first,
        "the state matters here"
    );
}

/// A job asking for more memory than a site's largest machine goes to a site that has it; one
/// asking for more than any has is refused naming its memory; a site whose memory is not known
/// counts as having enough.
#[test]
fn memory_decides_where_a_job_may_go() {
    let with = |s0: Option<u64>| {
        let mut sites = vec![site(0, 8), site(1, 8)];
        sites[0].caps.max_memory_kb = s0;
        sites[1].caps.max_memory_kb = Some(4 << 20);
        runner_of(DispatchKind::RoundRobin, sites, GridSettings::default())
    };
    let mut r = with(Some(1 << 20));
    let mut big = job(1, 1, 10);
    big.memory_kb = Some(2 << 20);
    for id in 1..=3 {
        let j = Job {
            id: JobId(id),
            ..big.clone()
        };
        assert_eq!(
            placed(&submit(&mut r, 0, j)),
            [(id, 1)],
            "only s1 has 2 GiB"
        );
    }
    let mut huge = job(4, 1, 10);
    huge.memory_kb = Some(8 << 20);
    let e = submit(&mut r, 0, huge.clone());
    assert!(
        matches!(
            &e[..],
            [Effect::Refuse {
                refusal: Some(Refusal {
                    field: Field::Memory,
                    ..
                }),
                ..
            }]
        ),
        "{e:?}"
    );
    let mut r = with(None);
    assert_eq!(
        placed(&submit(&mut r, 0, huge)),
        [(4, 0)],
        "s0's memory is not known"
    );
}

/// A site that runs only the users it maps to local accounts gets no other user's job: user 1's
/// jobs go round both sites, user 2's only to the site that runs every user's, and a user no
/// site runs is refused at the door naming the owner; the explanation says why a site was out.
#[test]
fn a_site_gets_only_the_users_it_maps() {
    let with = |s0: Option<Vec<u32>>, s1: Option<Vec<u32>>| {
        let mut sites = vec![site(0, 8), site(1, 8)];
        sites[0].users = s0.map(|u| u.into_iter().map(UserId).collect());
        sites[1].users = s1.map(|u| u.into_iter().map(UserId).collect());
        runner_of(
            DispatchKind::RoundRobin,
            sites,
            GridSettings {
                explain: true,
                ..GridSettings::default()
            },
        )
    };
    let of = |id: u64, user: u32| Job {
        user: UserId(user),
        ..job(id, 1, 10)
    };
    let mut r = with(Some(vec![1]), None);
    let mut at = Vec::new();
    for (id, user) in [(1, 1), (2, 1), (3, 2), (4, 2), (5, 1)] {
        at.extend(placed(&submit(&mut r, 0, of(id, user))));
    }
    assert_eq!(at, [(1, 0), (2, 1), (3, 1), (4, 1), (5, 0)]);
    let e = submit(&mut r, 0, of(6, 2));
    let why = e.iter().find_map(|e| match e {
        Effect::Place {
            explanation: Some(x),
            ..
        } => Some(x.candidates[0].note.clone()),
        _ => None,
    });
    assert_eq!(
        why.as_deref(),
        Some("maps no local account to the job's owner")
    );
    let mut r = with(Some(vec![1]), Some(vec![1, 3]));
    let e = submit(&mut r, 0, of(7, 2));
    assert!(
        matches!(
            &e[..],
            [Effect::Refuse {
                refusal: Some(Refusal {
                    field: Field::User,
                    ..
                }),
                ..
            }]
        ),
        "{e:?}"
    );
    assert_eq!(placed(&submit(&mut r, 0, of(8, 3))), [(8, 1)]);
}

/// After a burst of 5,000 jobs has left, compaction gives the room of the runner's job map back
/// and changes no decision: a twin never compacted decides the same from then on.
#[test]
fn compaction_after_a_burst_gives_room_back_and_decides_nothing() {
    let drive = |compact: bool| {
        let mut r = runner(
            DispatchKind::LoadOrdering,
            &[8, 16],
            GridSettings::default(),
        );
        let mut seen = Vec::new();
        for id in 1..=5_000 {
            seen.extend(placed(&submit(&mut r, 0, job(id, 4, 100))));
        }
        let grown = r.jobs.capacity();
        for &(id, site) in &seen[..4_990] {
            let ended = Input::Ended {
                job: JobId(id),
                site,
                outcome: Outcome::Completed,
                exit: None,
            };
            on(&mut r, 10, ended);
        }
        if compact {
            r.compact();
            assert!(
                r.jobs.capacity() * 4 < grown,
                "{} of {grown} after the burst",
                r.jobs.capacity()
            );
        }
        for id in 5_001..5_100 {
            seen.extend(placed(&submit(
                &mut r,
                20,
                job(id, 4 + (id % 5) as u32, 100),
            )));
        }
        (seen, r.waiting())
    };
    assert_eq!(drive(true), drive(false));
}

/// An input log is re-decided to the last digit: a float it carries (a fair-share factor, the
/// usage in a header) reads back as the very value written. Seen live: a factor read one unit
/// in the last place off made a rerun differ.
#[test]
fn a_logged_effect_reads_back_to_the_last_digit() {
    let factor = 0.371_498_572_284_237_16_f64;
    let text = serde_json::to_string(&factor).unwrap();
    assert_eq!(text, "0.37149857228423716");
    let back: f64 = serde_json::from_str(&text).unwrap();
    assert_eq!(back.to_bits(), factor.to_bits());
}

/// A site that holds no advance reservations (a Slurm-backed one) takes whole jobs but no
/// fragment of a split one; the widest job the grid takes is the reserving sites together (or
/// its widest site), and `explain` says why the site was passed over.
#[test]
fn a_split_jobs_fragments_go_only_to_sites_that_hold_reservations() {
    let mut sites: Vec<SiteSpec> = [8, 4, 6]
        .iter()
        .zip(0..)
        .map(|(&p, i)| site(i, p))
        .collect();
    sites[2].reserves = false;
    let settings = GridSettings {
        explain: true,
        ..splitting()
    };
    let mut r = runner_of(DispatchKind::LoadOrdering, sites, settings);
    // Six processors fit site 2 as one job: it goes there (Load-Ordering's idle widest first
    // would be site 0 otherwise, so take sites 0 and 1 first).
    assert_eq!(placed(&submit(&mut r, 0, job(1, 8, 100))), [(1, 0)]);
    assert_eq!(placed(&submit(&mut r, 0, job(2, 4, 100))), [(2, 1)]);
    assert_eq!(placed(&submit(&mut r, 0, job(3, 6, 100))), [(3, 2)]);
    // Ten processors are split: over sites 0 and 1 only, though site 2 is idle once job 3 ends.
    on(
        &mut r,
        1,
        Input::Ended {
            job: JobId(3),
            site: 2,
            outcome: crate::model::Outcome::Completed,
            exit: None,
        },
    );
    let e = submit(&mut r, 1, job(4, 10, 100));
    let note = e.iter().find_map(|e| match e {
        Effect::Wait {
            held: true,
            explanation: Some(x),
            ..
        } => Some(x.candidates[2].note.clone()),
        _ => None,
    });
    assert_eq!(
        note.as_deref(),
        Some(
            "holds no advance reservations (the job is split over sites, its fragments \
             co-allocated in reservations)"
        ),
        "{e:?}"
    );
    for id in [1, 2] {
        let site = if id == 1 { 0 } else { 1 };
        on(
            &mut r,
            2,
            Input::Ended {
                job: JobId(id),
                site,
                outcome: crate::model::Outcome::Completed,
                exit: None,
            },
        );
    }
    let holds: Vec<(usize, u32)> = on(&mut r, 2, Input::Release)
        .iter()
        .filter_map(|e| match *e {
            Effect::Hold { site, procs, .. } => Some((site, procs)),
            _ => None,
        })
        .collect();
    assert_eq!(holds, [(0, 8), (1, 2)]);
    // Thirteen processors exceed the reserving sites together (12): refused at the door.
    let refusal = r.admit(3, &job(5, 13, 100)).unwrap_err();
    assert_eq!(refusal.field, Field::Procs);
    assert!(refusal.why.contains("(largest: 12)"), "{}", refusal.why);
}
