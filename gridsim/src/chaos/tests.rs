//! The deterministic simulation's own tests: a few thousand seeds keep every invariant, the seeds
//! that found bugs stay fixed, a seed reproduces exactly, and each invariant catches the
//! mutation that breaks its rule.

use super::*;

/// Seeds that once broke an invariant, with the bug each found (fixed since).
const REGRESSIONS: &[(u64, &str)] = &[
    (
        9,
        "a reservation placed at a running job's predicted end: the job's process, started within the second, ended after it and the fragment's start was refused mid-pass, leaving the policy believing it had started",
    ),
    (
        71,
        "a restarted site could not restore a fragment whose reservation had ended while it was down",
    ),
    (
        197,
        "a process that ended while its local scheduler was down was counted twice at the restart",
    ),
    (
        198,
        "jobs held in the meta-level queue were never released (no release pass)",
    ),
    (
        610,
        "a split job whose fragment a site refused ended as refused though its other fragment had run and completed",
    ),
    (877, "as 610, over two sites"),
    (
        1190,
        "a restarted site admitted its reservations before restoring its running jobs, and a job held for its start claim ran its whole time from its grant, past the end the reservation was planned on",
    ),
    (
        3610,
        "a claim answer overtaken by the job's new Enqueue to the same site withdrew it there, and the meta-scheduler never sent it again",
    ),
    (
        4768,
        "a fragment kept from its reservation's start by a late end started three seconds after the others",
    ),
    (
        17194,
        "a cancellation that reached a site unanswered: the job, withdrawn from there, was placed at that site again, which had it cancelled, and never ran",
    ),
    (
        36284,
        "a hold lost with a site's restart and made again by a duplicate request held from another start than the one committed: a fragment started 11 s early",
    ),
];

#[test]
fn two_thousand_seeds_keep_every_invariant() {
    let s = sweep(0, 2_000, None);
    let t = &s.total;
    eprintln!("{t:?}");
    let failures: Vec<String> = s.failures.iter().map(ToString::to_string).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The seeds exercise what they are meant to: split jobs, failures and faults of every kind.
    assert!(t.jobs > 25_000, "{t:?}");
    assert!(
        t.split > 2_000 && t.failed > 100 && t.faults > 8_000,
        "{t:?}"
    );
    assert!(t.lost > 50_000 && t.duplicated > 10_000, "{t:?}");
}

#[test]
fn the_seeds_that_found_bugs_stay_fixed() {
    for &(seed, bug) in REGRESSIONS {
        if let Err(f) = run(seed, None) {
            panic!("seed {seed} ({bug}) fails again:\n{}", explain(&f, None));
        }
    }
}

#[test]
fn a_seed_reproduces_exactly() {
    let plan = Plan::of(4768);
    let mut a = world::World::new(4768, plan.clone(), None, true);
    let mut b = world::World::new(4768, plan, None, true);
    let (ra, rb) = (a.run().expect("passes"), b.run().expect("passes"));
    assert_eq!(ra, rb);
    let (ta, tb) = (a.take_trace(), b.take_trace());
    assert!(ta.len() > 1_000, "{}", ta.len());
    assert_eq!(ta, tb);
}

#[test]
fn every_invariant_catches_the_mutation_that_breaks_its_rule() {
    for m in Mutation::ALL {
        let caught = (0..100).find_map(|seed| run(seed, Some(m)).err());
        let Some(f) = caught else {
            panic!("{m:?}: no seed of 100 broke an invariant");
        };
        assert_eq!(f.invariant, m.caught_by(), "{m:?}: {f}");
        // The failure shrinks to a plan that still fails the same way, and says which job.
        let small = explain(&shrink(&f, Some(m)), Some(m));
        assert_eq!(small.invariant, f.invariant);
        assert!(small.plan.faults.len() <= f.plan.faults.len());
        assert!(!small.trace.is_empty(), "{m:?}: {small}");
    }
}

#[test]
fn the_state_machine_of_a_job_at_the_meta_scheduler() {
    use super::meta::MState::*;
    use gridsched_core::model::Outcome as O;
    let at = |site, claimed| Site {
        site,
        claimed,
        since: 0,
    };
    let split = Split {
        frags: Vec::new(),
        start: 5,
        since: 0,
    };
    let cases = [
        (Waiting, at(0, false), true),
        (Waiting, Ended(O::Completed), false),
        (Waiting, Ended(O::Cancelled { started: false }), true),
        (Waiting, Ended(O::Cancelled { started: true }), false),
        (at(0, false), at(1, false), true),
        (at(0, false), Waiting, true),
        (at(0, true), at(1, false), false),
        (at(0, true), at(0, false), false),
        (at(0, true), Waiting, false),
        (at(0, true), Ended(O::Failed), true),
        (Waiting, split.clone(), true),
        (split.clone(), Waiting, false),
        (split, Ended(O::Completed), true),
        (Ended(O::Completed), at(0, false), false),
        (Refused, Waiting, false),
    ];
    for (from, to, ok) in cases {
        assert_eq!(check::allowed(&from, &to), ok, "{from:?} → {to:?}");
    }
}
