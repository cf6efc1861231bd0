//! Worked examples of the grid's fair share (Slurm's classic factor through the runner): runs
//! charged to their owners as they end, the owner's factor weighed at classification, a job of
//! a user without an account refused, and the usage carried over a restart.

use super::tests::{on, site};
use super::*;
use crate::classify::{ClassifierConfig, Weights};
use crate::dispatch::{DispatchConfig, DispatchKind};
use crate::fairshare::{Algorithm, Assoc, FairShareConfig, Kind as AssocKind};
use crate::model::UserId;

/// Accounts A (3 shares) and B (1); ann (id 1) in A, bob (id 2) in B; no decay; priority from
/// the fair share alone (`max` 10); one site of 4 processors.
fn config(usage: Option<UsageState>) -> GridConfig {
    let assoc = |name: &str, parent: Option<&str>, shares: u32, id: Option<u32>| Assoc {
        name: name.into(),
        kind: if id.is_some() {
            AssocKind::User
        } else {
            AssocKind::Account
        },
        parent: parent.map(Into::into),
        shares,
        id,
        ..Assoc::default()
    };
    GridConfig {
        sites: vec![site(0, 4)],
        dispatch: DispatchConfig::new(DispatchKind::LoadOrdering),
        classifier: Some(ClassifierConfig {
            weights: Weights::fairshare_only(),
            ..ClassifierConfig::default()
        }),
        settings: GridSettings {
            explain: true,
            fairshare: Some(FairShareConfig {
                algorithm: Algorithm::Classic,
                half_life: 0,
                dampening: 1.0,
                recalc_period: 0,
                reset_period: crate::fairshare::ResetPeriod::None,
                accounts: vec![
                    assoc("A", None, 3, None),
                    assoc("B", None, 1, None),
                    assoc("ann", Some("A"), 1, Some(1)),
                    assoc("bob", Some("B"), 1, Some(2)),
                ],
            }),
            ..GridSettings::default()
        },
        classifier_state: None,
        usage_state: usage,
    }
}

fn job_of(id: u64, user: u32, procs: u32) -> Job {
    let mut j = Job::new(id, 0, procs, 1_000, 1_000);
    j.user = UserId(user);
    j
}

/// The priority and the factor a submission was classified with.
fn submitted(r: &mut GridRunner, now: Time, j: Job) -> (Priority, Option<f64>) {
    let e = on(
        r,
        now,
        Input::Submit {
            job: j,
            priority: None,
        },
    );
    e.iter()
        .find_map(|e| match e {
            Effect::Classified {
                priority,
                explained: Some(c),
                ..
            } => Some((*priority, c.fairshare)),
            _ => None,
        })
        .expect("classified")
}

/// Runs `j` at site 0 from `start` to `end`.
fn run(r: &mut GridRunner, start: Time, end: Time, j: Job) {
    let id = j.id;
    submitted(r, start, j);
    on(r, start, Input::Claimed { job: id, site: 0 });
    let ended = Input::Ended {
        job: id,
        site: 0,
        outcome: Outcome::Completed,
        exit: None,
    };
    on(r, end, ended);
}

#[test]
fn a_run_is_charged_to_its_owner_and_lowers_the_next_jobs_priority() {
    let mut r = GridRunner::from_config(&config(None)).unwrap();
    // Nothing used yet: every factor is 1, the top priority.
    assert_eq!(submitted(&mut r, 0, job_of(1, 1, 1)), (10, Some(1.0)));
    on(&mut r, 0, Input::Cancel { job: JobId(1) });
    // ann runs 4 processors for 100 s: 400 processor-seconds, all of the grid's usage.
    run(&mut r, 0, 100, job_of(2, 1, 4));
    let ann = r.standing(UserId(1), 100).unwrap();
    assert_eq!((ann.usage, ann.share), (1.0, 0.75));
    // F = 2^(−1 / 0.75) = 0.3969…: contribution 3.97, priority 4; bob (unused) keeps 10.
    let (p, f) = submitted(&mut r, 100, job_of(3, 1, 1));
    assert_eq!(p, 4);
    assert!(
        (f.unwrap() - (-1.0f64 / 0.75).exp2()).abs() < 1e-12,
        "{f:?}"
    );
    assert_eq!(submitted(&mut r, 100, job_of(4, 2, 1)), (10, Some(1.0)));
    // bob's started job cancelled at 200 is charged too (1 processor × 100 s); ann's waiting
    // job 3, cancelled, is not.
    on(
        &mut r,
        100,
        Input::Claimed {
            job: JobId(4),
            site: 0,
        },
    );
    on(&mut r, 200, Input::Cancel { job: JobId(4) });
    on(&mut r, 200, Input::Cancel { job: JobId(3) });
    let bob = r.standing(UserId(2), 200).unwrap();
    assert_eq!(bob.usage, 100.0 / 500.0);
    // bob: U = 0.2 against S = 0.25: F = 2^(−0.8) = 0.574…, priority 6.
    assert_eq!(submitted(&mut r, 200, job_of(5, 2, 1)).0, 6);
}

#[test]
fn a_job_of_a_user_without_an_account_is_refused() {
    let mut r = GridRunner::from_config(&config(None)).unwrap();
    let e = on(
        &mut r,
        0,
        Input::Submit {
            job: job_of(1, 9, 1),
            priority: None,
        },
    );
    assert!(
        matches!(&e[..], [Effect::Refuse { refusal: Some(Refusal { field: Field::User, kind: Kind::Forbidden, why }), .. }] if why == "its owner (u9) has no account in the grid's fair-share tree"),
        "{e:?}"
    );
    // A wrong description is refused naming the key.
    let mut bad = config(None);
    bad.settings.fairshare.as_mut().unwrap().dampening = 0.5;
    let e = GridRunner::from_config(&bad).err().unwrap().to_string();
    assert!(e.contains("`dampening`"), "{e}");
}

#[test]
fn usage_carries_over_a_restart_in_the_header() {
    let mut first = GridRunner::from_config(&config(None)).unwrap();
    run(&mut first, 0, 100, job_of(1, 1, 4));
    run(&mut first, 100, 150, job_of(2, 2, 2));
    let state = first.usage_state().cloned();
    let mut restarted = GridRunner::from_config(&config(state)).unwrap();
    let mut fresh = GridRunner::from_config(&config(None)).unwrap();
    for (id, user) in [(3, 1), (4, 2)] {
        let a = submitted(&mut first, 150, job_of(id, user, 1));
        assert_eq!(submitted(&mut restarted, 150, job_of(id, user, 1)), a);
        assert_ne!(
            submitted(&mut fresh, 150, job_of(id, user, 1)),
            a,
            "job {id}"
        );
    }
}

/// [`config`] with limits: ann at most 2 jobs in the grid and 3 processors out; account A at
/// most 2 jobs out.
fn limited() -> GridConfig {
    let mut cfg = config(None);
    let f = cfg.settings.fairshare.as_mut().unwrap();
    f.accounts[0].max_jobs = Some(2);
    f.accounts[2].max_submit = Some(3);
    f.accounts[2].max_procs = Some(3);
    cfg.sites = vec![site(0, 16)];
    cfg
}

fn placed(e: &[Effect]) -> Vec<u64> {
    e.iter()
        .filter_map(|e| match e {
            Effect::Place { job, .. } => Some(job.0),
            _ => None,
        })
        .collect()
}

fn held(e: &[Effect]) -> Vec<(u64, String)> {
    e.iter()
        .filter_map(|e| match e {
            Effect::Limited { job, why } => Some((job.0, why.clone())),
            _ => None,
        })
        .collect()
}

fn end(r: &mut GridRunner, now: Time, id: u64) -> Vec<Effect> {
    let ended = Input::Ended {
        job: JobId(id),
        site: 0,
        outcome: Outcome::Completed,
        exit: None,
    };
    on(r, now, ended)
}

#[test]
fn a_running_limit_holds_a_job_until_a_job_of_its_association_ends() {
    let mut r = GridRunner::from_config(&limited()).unwrap();
    let submit = |r: &mut GridRunner, id: u64, procs: u32| {
        on(
            r,
            0,
            Input::Submit {
                job: job_of(id, 1, procs),
                priority: None,
            },
        )
    };
    assert_eq!(placed(&submit(&mut r, 1, 2)), vec![1]);
    // 2 processors out of ann's 3: job 2 (2 more) waits, saying which limit holds it.
    let e = submit(&mut r, 2, 2);
    assert_eq!(
        held(&e),
        vec![(
            2,
            "held by the limit max_procs of user `ann`: 2 processors in use, 2 more asked, of 3"
                .into()
        )]
    );
    assert!(r.waits(JobId(2)));
    // One processor fits; then A's two jobs out hold the next.
    assert_eq!(placed(&submit(&mut r, 3, 1)), vec![3]);
    // ann has 3 jobs in the grid: a fourth is refused at the door.
    let e = submit(&mut r, 4, 1);
    assert!(
        matches!(&e[..], [Effect::Refuse { refusal: Some(Refusal { field: Field::User, kind: Kind::Exhausted, why }), .. }] if why == "limit max_submit of user `ann`: 3 jobs in the grid of 3"),
        "{e:?}"
    );
    // Job 3 ends: 2 processors out, job 2 still does not fit (ann's 3).
    assert_eq!(placed(&end(&mut r, 10, 3)), Vec::<u64>::new());
    // Job 1 ends: job 2 goes.
    assert_eq!(placed(&end(&mut r, 20, 1)), vec![2]);
    // bob, also in... his own account B: not held by A's limit.
    let e = on(
        &mut r,
        20,
        Input::Submit {
            job: job_of(5, 2, 8),
            priority: None,
        },
    );
    assert_eq!(placed(&e), vec![5]);
}

#[test]
fn an_accounts_limit_counts_its_users_and_a_cancelled_held_job_is_forgotten() {
    let mut cfg = limited();
    let f = cfg.settings.fairshare.as_mut().unwrap();
    f.accounts[2].max_procs = None;
    f.accounts[2].max_submit = None;
    let mut r = GridRunner::from_config(&cfg).unwrap();
    for id in 1..=4 {
        on(
            &mut r,
            0,
            Input::Submit {
                job: job_of(id, 1, 1),
                priority: None,
            },
        );
    }
    assert!(!r.waits(JobId(1)) && !r.waits(JobId(2)));
    assert!(r.waits(JobId(3)) && r.waits(JobId(4)));
    // Job 3 cancelled while held; job 1's end lets job 4 go, not 3.
    on(&mut r, 5, Input::Cancel { job: JobId(3) });
    assert_eq!(placed(&end(&mut r, 10, 1)), vec![4]);
    assert!(!r.contains(JobId(3)));
}

/// A job restored running at its site counts against its owner's limits again and is charged
/// from the start it had before the restart.
#[test]
fn a_restored_running_job_counts_against_the_limits_and_is_charged_from_its_start() {
    let mut r = GridRunner::from_config(&limited()).unwrap();
    let at = Restored::Site {
        site: 0,
        claimed: true,
        since: 0,
    };
    let restore = Input::Restore {
        job: job_of(1, 1, 2),
        priority: 10,
        at,
    };
    on(&mut r, 50, restore);
    // 2 processors out already: 2 more exceed ann's 3.
    let e = on(
        &mut r,
        50,
        Input::Submit {
            job: job_of(2, 1, 2),
            priority: None,
        },
    );
    assert_eq!(held(&e).len(), 1, "{e:?}");
    assert_eq!(placed(&end(&mut r, 100, 1)), vec![2]);
    // 2 processors × 100 s since its start at 0, not since the restart at 50.
    assert_eq!(r.usage_state().unwrap().procs.of("ann", 100), 200.0);
}

/// Account A's processor-seconds (`max_proc_seconds`), with half-life `half_life`.
fn budgeted(max: u64, half_life: i64) -> GridRunner {
    let mut cfg = config(None);
    let f = cfg.settings.fairshare.as_mut().unwrap();
    f.accounts[0].max_proc_seconds = Some(max);
    f.half_life = half_life;
    cfg.sites = vec![site(0, 16)];
    GridRunner::from_config(&cfg).unwrap()
}

fn submit_at(r: &mut GridRunner, now: Time, id: u64, procs: u32) -> Vec<Effect> {
    let mut j = job_of(id, 1, procs);
    j.submit = now;
    on(
        r,
        now,
        Input::Submit {
            job: j,
            priority: None,
        },
    )
}

/// Ann's job `id` on `procs` processors submitted and started at 0 (placed at once).
fn started(r: &mut GridRunner, id: u64, procs: u32) {
    assert_eq!(placed(&submit_at(r, 0, id, procs)), vec![id]);
    on(
        r,
        0,
        Input::Claimed {
            job: JobId(id),
            site: 0,
        },
    );
}

/// A hard budget (no decay) of 5,000 processor-seconds for account A: two jobs of 2 × 1,000
/// commit 4,000, a third waits (it would make 6,000); once the first ends after 500 s (1,000
/// used, its other 1,000 given back), the third fits exactly.
#[test]
fn a_processor_seconds_budget_counts_use_and_what_running_jobs_may_still_use() {
    let mut r = budgeted(5_000, 0);
    started(&mut r, 1, 2);
    assert_eq!(placed(&submit_at(&mut r, 0, 2, 2)), vec![2]);
    let e = submit_at(&mut r, 0, 3, 2);
    assert_eq!(
        held(&e),
        vec![(
            3,
            "held by the limit max_proc_seconds of account `A`: 0 processor-seconds used, 4000 \
             held by running jobs, 2000 more asked, of 5000"
                .into()
        )]
    );
    assert_eq!(placed(&end(&mut r, 500, 1)), vec![3]);
    // bob's account has no budget.
    let mut bob = job_of(4, 2, 16);
    bob.submit = 500;
    let e = on(
        &mut r,
        500,
        Input::Submit {
            job: bob,
            priority: None,
        },
    );
    assert_eq!(placed(&e), vec![4]);
}

/// With a half-life the budget refills as the usage decays: 2,000 used at 1,000 s leave no
/// room for 2,000 more under 3,000; half of it has decayed one half-life later, and the held
/// job goes at that tick (not before).
#[test]
fn a_budget_refills_as_usage_decays_and_a_tick_lets_the_held_job_go() {
    let mut r = budgeted(3_000, 1_000);
    started(&mut r, 1, 2);
    end(&mut r, 1_000, 1);
    let e = submit_at(&mut r, 1_000, 2, 2);
    assert_eq!(held(&e).len(), 1, "{e:?}");
    let tick = |r: &mut GridRunner, t: Time| {
        on(
            r,
            t,
            Input::Tick {
                at_ms: t as u64 * 1_000,
            },
        )
    };
    assert!(placed(&tick(&mut r, 1_500)).is_empty());
    assert_eq!(placed(&tick(&mut r, 2_000)), vec![2]);
}

/// [`config`] recalculating every 60 s.
fn recalculating(usage: Option<UsageState>) -> GridRunner {
    let mut cfg = config(usage);
    cfg.settings.fairshare.as_mut().unwrap().recalc_period = 60;
    GridRunner::from_config(&cfg).unwrap()
}

fn recalculated(e: &[Effect]) -> Option<Vec<(u64, Option<usize>, Priority)>> {
    e.iter().find_map(|e| match e {
        Effect::Recalculated { jobs } => Some(jobs.iter().map(|j| (j.0.0, j.1, j.2)).collect()),
        _ => None,
    })
}

fn tick(r: &mut GridRunner, now: Time) -> Vec<Effect> {
    let at_ms = u64::try_from(now).unwrap() * 1000;
    on(r, now, Input::Tick { at_ms })
}

/// Slurm's `PriorityCalcPeriod`: once a period the running jobs are charged what they used so
/// far and the jobs that have not started are weighed again with their owners' factors; a run
/// is charged once in all (the periods, then the rest at its end); a running job restored after
/// a restart is charged from the last recalculation, not again from its start.
#[test]
fn each_period_charges_the_running_jobs_and_weighs_the_waiting_ones_again() {
    let mut r = recalculating(None);
    // ann runs 4 processors from 0; bob's job and a second of ann's wait at the site, both
    // classified at 10 (nothing used yet).
    assert_eq!(submitted(&mut r, 0, job_of(1, 1, 4)).0, 10);
    on(
        &mut r,
        0,
        Input::Claimed {
            job: JobId(1),
            site: 0,
        },
    );
    assert_eq!(submitted(&mut r, 0, job_of(2, 2, 1)).0, 10);
    assert_eq!(submitted(&mut r, 0, job_of(3, 1, 1)).0, 10);
    assert_eq!(recalculated(&tick(&mut r, 30)), None, "not due before 60");
    // At 60 ann has used 240 processor-seconds, all of the grid's: F = 2^(−1/0.75), priority 4.
    let e = tick(&mut r, 60);
    assert_eq!(
        recalculated(&e),
        Some(vec![(2, Some(0), 10), (3, Some(0), 4)])
    );
    assert_eq!(r.usage_state().unwrap().procs.of("ann", 60), 240.0);
    assert_eq!(r.job(JobId(3)).unwrap().1, 4);
    assert_eq!(r.usage_state().unwrap().charged_to, Some(60));
    // Restarted at 60: the running job is restored from 0 and ends at 100 in both.
    let mut back = recalculating(r.usage_state().cloned());
    let restore = Input::Restore {
        job: job_of(1, 1, 4),
        priority: 10,
        at: Restored::Site {
            site: 0,
            claimed: true,
            since: 0,
        },
    };
    on(&mut back, 60, restore);
    for g in [&mut r, &mut back] {
        end(g, 100, 1);
        // 240 at 60, then 4 × 40 at its end: 400, not 240 + 400.
        assert_eq!(g.usage_state().unwrap().procs.of("ann", 100), 400.0);
    }
    // bob's job runs 100..200: charged 20 at 120, 60 at 180, 20 at its end.
    on(
        &mut r,
        100,
        Input::Claimed {
            job: JobId(2),
            site: 0,
        },
    );
    let e = tick(&mut r, 120);
    assert_eq!(recalculated(&e), Some(vec![(3, Some(0), 4)]), "job 2 runs");
    assert_eq!(r.usage_state().unwrap().procs.of("bob", 120), 20.0);
    assert_eq!(recalculated(&tick(&mut r, 150)), None);
    tick(&mut r, 180);
    end(&mut r, 200, 2);
    assert_eq!(r.usage_state().unwrap().procs.of("bob", 200), 100.0);
    // The period restarts from the tick that recalculated (180), not from the end.
    assert_eq!(r.next_recalc(), Some(240));
    // Without a period the factor is read once: nothing is recalculated.
    let mut once = GridRunner::from_config(&config(None)).unwrap();
    submitted(&mut once, 0, job_of(1, 1, 4));
    assert_eq!(recalculated(&tick(&mut once, 600)), None);
    assert_eq!(once.next_recalc(), None);
}

/// A budget per month (`reset_period = "monthly"`, no decay: Slurm's `PriorityUsageResetPeriod`
/// with `GrpTRESMins`): 2,000 of 3,000 processor-seconds used on 30 November leave no room for
/// 2,000 more; the tick at midnight UTC on 1 December clears the usage and the held job goes.
#[test]
fn a_monthly_reset_clears_the_budget_at_midnight_and_the_held_job_goes() {
    let mut cfg = config(None);
    let f = cfg.settings.fairshare.as_mut().unwrap();
    f.accounts[0].max_proc_seconds = Some(3_000);
    f.reset_period = crate::fairshare::ResetPeriod::Monthly;
    cfg.sites = vec![site(0, 16)];
    let mut r = GridRunner::from_config(&cfg).unwrap();
    // 2026-11-30 22:00:00 UTC.
    let t0 = 1_796_076_000;
    assert_eq!(placed(&submit_at(&mut r, t0, 1, 2)), vec![1]);
    on(
        &mut r,
        t0,
        Input::Claimed {
            job: JobId(1),
            site: 0,
        },
    );
    end(&mut r, t0 + 1_000, 1);
    let e = submit_at(&mut r, t0 + 1_000, 2, 2);
    assert_eq!(held(&e).len(), 1, "{e:?}");
    let tick = |r: &mut GridRunner, t: Time| {
        let at_ms = u64::try_from(t).unwrap() * 1_000;
        on(r, t, Input::Tick { at_ms })
    };
    assert!(placed(&tick(&mut r, t0 + 7_199)).is_empty(), "23:59:59");
    assert_eq!(placed(&tick(&mut r, t0 + 7_200)), vec![2], "00:00:00");
    assert_eq!(r.usage_state().unwrap().procs.of("ann", t0 + 7_200), 0.0);
}

/// A job its association could never have out (wider than `max_procs`, or asking more than the
/// whole `max_proc_seconds`) is refused at the door naming the limit, not held for good.
#[test]
fn a_job_over_what_its_association_may_ever_have_is_refused_at_the_door() {
    let refusal = |e: &[Effect]| match e {
        [
            Effect::Refuse {
                refusal: Some(r), ..
            },
        ] => r.clone(),
        other => panic!("{other:?}"),
    };
    let mut r = GridRunner::from_config(&limited()).unwrap();
    let r4 = refusal(&submit_at(&mut r, 0, 1, 4));
    assert_eq!((r4.field, r4.kind), (Field::Procs, Kind::Exhausted));
    assert_eq!(
        r4.why,
        "limit max_procs of user `ann`: 4 processors asked, more than the 3 it may ever have out"
    );
    assert_eq!(placed(&submit_at(&mut r, 0, 2, 3)), vec![2]);
    let mut b = budgeted(3_000, 0);
    let r2 = refusal(&submit_at(&mut b, 0, 1, 4));
    assert_eq!((r2.field, r2.kind), (Field::Estimate, Kind::Exhausted));
    assert!(
        r2.why
            .contains("4000 processor-seconds asked, more than the whole budget of 3000")
    );
    assert_eq!(placed(&submit_at(&mut b, 0, 2, 3)), vec![2]);
}
