//! Worked examples: Slurm's documented classic example (its Figure 3), Fair Tree's ordering and
//! tie rules on the same tree and on small ones, the half-life, and the tree's checks.

use super::*;

fn account(name: &str, parent: Option<&str>, shares: u32) -> Assoc {
    Assoc {
        name: name.into(),
        kind: Kind::Account,
        parent: parent.map(Into::into),
        shares,
        id: None,
        ..Assoc::default()
    }
}

fn user(name: &str, parent: &str, shares: u32) -> Assoc {
    Assoc {
        name: name.into(),
        kind: Kind::User,
        parent: Some(parent.into()),
        shares,
        id: None,
        ..Assoc::default()
    }
}

/// Slurm's classic example: A (40) and D (60) under the root; B (30) and C (10) under A; E (25)
/// and F (35) under D; user 1 in B, users 2 and 3 (one share each) in C, user 4 in E, user 5 in F.
fn slurm_example() -> Tree {
    Tree::new(vec![
        account("A", None, 40),
        account("D", None, 60),
        account("B", Some("A"), 30),
        account("C", Some("A"), 10),
        account("E", Some("D"), 25),
        account("F", Some("D"), 35),
        user("user1", "B", 1),
        user("user2", "C", 1),
        user("user3", "C", 1),
        user("user4", "E", 1),
        user("user5", "F", 1),
    ])
    .unwrap()
}

/// Users 1, 2 and 4 used 0.2, 0.25 and 0.25 of the machine.
fn example_usage(u: &str) -> f64 {
    match u {
        "user1" => 0.2,
        "user2" | "user4" => 0.25,
        _ => 0.0,
    }
}

fn by_user(tree: &Tree, factors: &[Option<f64>]) -> Vec<(String, f64)> {
    (1..=5)
        .map(|k| {
            let name = format!("user{k}");
            let f = factors[tree.user(&name).unwrap()].unwrap();
            (name, f)
        })
        .collect()
}

#[test]
fn classic_reproduces_slurms_worked_example_to_its_printed_digits() {
    let tree = slurm_example();
    let got = by_user(&tree, &classic(&tree, example_usage, 1.0));
    // As printed: 0.408479, 0.022097, 0.125000, 0.500000, 0.749154.
    let printed = [0.408_479, 0.022_097, 0.125, 0.5, 0.749_154];
    for ((name, f), want) in got.iter().zip(printed) {
        assert_eq!(format!("{f:.6}"), format!("{want:.6}"), "{name}");
    }
    // Accounts have no factor of their own.
    assert!(classic(&tree, example_usage, 1.0)[0].is_none());
    // The dampening factor divides the exponent: user 4 used its share exactly, 2^(-1/2).
    let damped = classic(&tree, example_usage, 2.0);
    let u4 = damped[tree.user("user4").unwrap()].unwrap();
    assert!((u4 - 0.5f64.sqrt()).abs() < 1e-12, "{u4}");
}

#[test]
fn fair_tree_ranks_every_user_of_a_higher_account_above_the_lower_ones() {
    let tree = slurm_example();
    let got = by_user(&tree, &fair_tree(&tree, example_usage));
    // Root level: D (LF 0.6 / (0.25 / 0.7) = 1.68) before A (0.4 / (0.45 / 0.7) = 0.62); under
    // D, F (unused: infinite) before E; under A, B (0.75 / (0.2 / 0.45)) before C (0.25 /
    // (0.25 / 0.45)); in C, user 3 (unused) before user 2. Five users: 1.0, 0.8, ... 0.2.
    let want = [
        ("user1", 0.6),
        ("user2", 0.2),
        ("user3", 0.4),
        ("user4", 0.8),
        ("user5", 1.0),
    ];
    for ((name, f), (w, v)) in got.iter().zip(want) {
        assert_eq!((name.as_str(), *f), (w, v));
    }
}

#[test]
fn fair_tree_ties_share_a_rank_as_slurm_documents() {
    // Sibling accounts X and Y tie (each used 10 of 20 with half the shares: LF 1): their
    // children are merged before descending. There b (unused) comes first, and a and c (10 of
    // 20 each, a third of the shares each) tie and share the next rank; descending X then Y
    // would have put c last.
    let tree = Tree::new(vec![
        account("X", None, 1),
        account("Y", None, 1),
        user("a", "X", 1),
        user("b", "X", 1),
        user("c", "Y", 1),
    ])
    .unwrap();
    let used = |u: &str| if u == "b" { 0.0 } else { 10.0 };
    let f = fair_tree(&tree, used);
    let of = |u: &str| f[tree.user(u).unwrap()].unwrap();
    assert_eq!(of("b"), 1.0);
    assert_eq!((of("a"), of("c")), (2.0 / 3.0, 2.0 / 3.0));
    // A user tied with a sibling account takes the rank of that account's highest user.
    let tree = Tree::new(vec![
        account("Q", None, 1),
        account("P", None, 1),
        user("u", "Q", 1),
        account("R", Some("Q"), 1),
        user("r1", "R", 1),
        user("r2", "R", 2),
        user("p", "P", 1),
    ])
    .unwrap();
    let used = |u: &str| match u {
        "r2" => 1.0,
        "p" => 3.0,
        _ => 0.0,
    };
    let f = fair_tree(&tree, used);
    let of = |u: &str| f[tree.user(u).unwrap()].unwrap();
    // Root: Q (S 0.5, U 0.25) before P (S 0.5, U 0.75). In Q, u (unused: LF infinite) before R
    // (S 0.5, all of Q's usage: LF 0.5), then R's r1 (unused) and r2; then p.
    assert_eq!(
        [of("u"), of("r1"), of("r2"), of("p")],
        [1.0, 0.75, 0.5, 0.25]
    );
    let unused = |_: &str| 0.0;
    let f = fair_tree(&tree, unused);
    let of = |u: &str| f[tree.user(u).unwrap()].unwrap();
    // Nothing used: every level ties; Q and P merge, u ties with R and takes the rank of R's
    // highest user: everyone shares the first rank.
    assert_eq!([of("u"), of("r1"), of("r2"), of("p")], [1.0; 4]);
}

#[test]
fn usage_halves_every_half_life() {
    let mut u = Usage::new(10);
    u.charge("ann", 100.0, 0);
    u.charge("bob", 300.0, 0);
    assert_eq!(u.of("ann", 10), 50.0);
    assert_eq!(u.of("ann", 20), 25.0);
    assert_eq!(u.total(10), 200.0);
    u.charge("ann", 150.0, 10);
    assert_eq!(u.of("ann", 10), 200.0);
    assert_eq!(u.of("ann", 20), 100.0);
    assert_eq!(u.normalized("ann", 20), 100.0 / 175.0);
    assert_eq!(u.normalized("nobody", 20), 0.0);
    // No half-life: nothing decays.
    let mut flat = Usage::new(0);
    flat.charge("ann", 7.0, 0);
    assert_eq!(flat.of("ann", 1_000_000), 7.0);
}

#[test]
fn a_wrong_tree_is_refused_naming_what_is_wrong() {
    let err = |assocs: Vec<Assoc>| Tree::new(assocs).unwrap_err().to_string();
    assert_eq!(
        err(vec![account("A", None, 1), account("A", None, 1)]),
        "`A` is named twice"
    );
    assert_eq!(
        err(vec![user("u", "nowhere", 1)]),
        "`u`: its parent `nowhere` is not an account"
    );
    assert_eq!(
        err(vec![Assoc {
            parent: None,
            ..user("u", "x", 1)
        }]),
        "user `u`: a user belongs to an account (give its parent)"
    );
    assert_eq!(
        err(vec![account("A", None, 0), account("B", None, 0)]),
        "`A` and its siblings have no shares at all"
    );
    assert_eq!(
        err(vec![account("A", Some("B"), 1), account("B", Some("A"), 1)]),
        "`A` is its own ancestor"
    );
    assert_eq!(
        err(vec![account("A", None, 1), user("../ann", "A", 1)]),
        "`../ann` is not a valid name: begins with `.`: a name begins with a letter, a digit or `_`"
    );
    // A user may share a name with an account (Slurm's associations are separate).
    assert!(Tree::new(vec![account("x", None, 1), user("x", "x", 1)]).is_ok());
}

/// With processors alone and one user per account, the dominant-resource factor is the classic
/// one; with a licence, a user's scarce-licence use dominates its processor use.
#[test]
fn the_dominant_share_is_the_classic_one_for_processors_alone_and_counts_licences() {
    let tree = Tree::new(vec![
        account("A", None, 3),
        account("B", None, 1),
        user("ann", "A", 1),
        user("bob", "B", 1),
    ])
    .unwrap();
    let procs = |u: &str| if u == "ann" { 0.6 } else { 0.4 };
    let c = classic(&tree, procs, 1.0);
    let d = dominant(&tree, |u| vec![procs(u)]);
    assert_eq!(c, d);
    // bob used every licence-second: dominant share 1 against S = 0.25, F = 2^(−4).
    let d = dominant(&tree, |u| {
        vec![procs(u), if u == "bob" { 1.0 } else { 0.0 }]
    });
    assert_eq!(d[3], Some(0.0625));
    assert_eq!(d[2], c[2]);
}

fn with_ids(mut a: Vec<Assoc>) -> FairShareConfig {
    for (k, x) in a.iter_mut().enumerate() {
        if x.kind == Kind::User {
            x.id = Some(k as u32);
        }
    }
    FairShareConfig {
        algorithm: Algorithm::Dominant,
        half_life: 100,
        dampening: 1.0,
        recalc_period: 0,
        reset_period: ResetPeriod::None,
        accounts: a,
    }
}

/// The book charges processors × seconds and seconds per licence, decays them with its
/// half-life, and refuses a description it cannot use, naming why.
#[test]
fn the_book_charges_runs_and_refuses_a_wrong_description() {
    use crate::model::{LicenceId, UserId};
    let cfg = with_ids(vec![
        account("A", None, 1),
        account("B", None, 1),
        user("ann", "A", 1),
        user("bob", "B", 1),
    ]);
    let mut s = Shares::new(cfg.clone()).unwrap();
    assert_eq!(s.user(UserId(2)), Some("ann"));
    assert_eq!(s.user(UserId(0)), None);
    // ann: 4 processors × 50 s; bob: 1 processor × 200 s with licence 7, both ended at 100.
    s.charge(UserId(2), 4, &[], 50, 100);
    s.charge(UserId(3), 1, &[LicenceId(7)], 200, 100);
    let ann = s.standing(UserId(2), 100).unwrap();
    assert_eq!((ann.usage, ann.share), (0.5, 0.5));
    // bob: half the processor-seconds, all the licence's: dominant 1, F = 2^(−1 / 0.5).
    assert_eq!(s.standing(UserId(3), 100).unwrap().factor, 0.25);
    assert_eq!(s.standing(UserId(2), 100).unwrap().factor, 0.5);
    // Shares are relative: one half-life later the parts are the same.
    assert_eq!(s.standing(UserId(3), 200).unwrap().factor, 0.25);
    assert_eq!(s.state().procs.of("ann", 200), 100.0);
    let mut back = Shares::new(cfg.clone()).unwrap();
    back.restore(s.state().clone());
    assert_eq!(back.standing(UserId(3), 150), s.standing(UserId(3), 150));
    let err = |c: FairShareConfig| Shares::new(c).unwrap_err().to_string();
    let mut c = cfg.clone();
    c.accounts[2].id = None;
    assert_eq!(err(c), "user `ann` has no id");
    let mut c = cfg.clone();
    c.accounts[3].id = Some(2);
    assert_eq!(err(c), "users `ann` and `bob` have the same id 2");
    let mut c = cfg.clone();
    c.dampening = f64::NAN;
    assert!(err(c).contains("`dampening`"));
    let mut c = cfg.clone();
    c.recalc_period = -1;
    assert!(err(c).contains("`recalc_period`"));
    let mut c = cfg;
    c.accounts[2].parent = Some("Z".into());
    assert_eq!(err(c), "accounts: `ann`: its parent `Z` is not an account");
    let parsed: FairShareConfig = serde_json::from_str(
        r#"{"algorithm": "fair-tree", "accounts": [{"name": "A", "kind": "account", "shares": 1}]}"#,
    )
    .unwrap();
    assert_eq!(
        (parsed.half_life, parsed.dampening, parsed.recalc_period),
        (WEEK, 1.0, CALC_PERIOD)
    );
    let e = serde_json::from_str::<FairShareConfig>(r#"{"half_lfe": 5, "accounts": []}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("half_lfe"), "{e}");
}

/// Slurm's `PriorityUsageResetPeriod`, at 00:00 UTC: the week turns on Sunday, the month on the
/// first, the quarter in January, April, July and October.
#[test]
fn reset_periods_turn_at_midnight_utc() {
    // 2026-11-28 23:59:59 (a Saturday), the next second, 2026-11-30 23:59:59, 2026-12-01 00:00.
    let (sat, sun, mon, dec) = (1_795_910_399, 1_795_910_400, 1_796_083_199, 1_796_083_200);
    let w = |t| ResetPeriod::Weekly.index(t).unwrap();
    assert_eq!(w(sun) - w(sat), 1);
    assert_eq!(w(mon), w(sun));
    let m = |t| ResetPeriod::Monthly.index(t).unwrap();
    assert_eq!((m(mon), m(dec)), (2026 * 12 + 10, 2026 * 12 + 11));
    let q = |t| ResetPeriod::Quarterly.index(t).unwrap();
    assert_eq!(q(dec), q(mon));
    assert_eq!(q(1_798_761_600) - q(1_798_761_599), 1, "2027-01-01");
    assert_eq!(ResetPeriod::Yearly.index(1_798_761_600), Some(2027));
    assert_eq!(ResetPeriod::Daily.index(sun), Some(20_786));
    assert_eq!(ResetPeriod::None.index(sun), None);
    // Each period begins where its index says, and the next one where the index turns.
    use ResetPeriod::{Daily, Monthly, Quarterly, Weekly, Yearly};
    for p in [Daily, Weekly, Monthly, Quarterly, Yearly] {
        for t in [0, sat, sun, mon, dec, 1_798_761_599, 1_798_761_600, -86_401] {
            let i = p.index(t).unwrap();
            let (begin, end) = (p.start(i).unwrap(), p.start(i + 1).unwrap());
            assert!(begin <= t && t < end, "{p:?} at {t}: [{begin}, {end})");
            assert_eq!(p.index(begin), Some(i), "{p:?} {i} begins at {begin}");
            assert_eq!(p.index(end - 1), Some(i));
        }
    }
    assert_eq!(Weekly.start(Weekly.index(mon).unwrap()), Some(sun));
    assert_eq!(Monthly.start(Monthly.index(dec).unwrap()), Some(dec));
    assert_eq!(ResetPeriod::None.start(0), None);
}

/// The usage is cleared once its period is over, for every association, and only then.
#[test]
fn usage_is_cleared_when_its_reset_period_ends() {
    use crate::model::UserId;
    let mut cfg = with_ids(vec![account("A", None, 1), user("ann", "A", 1)]);
    cfg.half_life = 0;
    cfg.reset_period = ResetPeriod::Monthly;
    let mut s = Shares::new(cfg).unwrap();
    let nov = 1_796_083_199;
    assert!(
        !s.reset_if_due(nov),
        "a fresh book takes the period it starts in"
    );
    s.charge(UserId(1), 4, &[], 100, nov);
    assert!(!s.reset_if_due(nov - 3_600));
    assert_eq!(s.state().procs.of("ann", nov), 400.0);
    assert!(s.reset_if_due(nov + 1));
    assert_eq!(s.state().procs.of("ann", nov + 1), 0.0);
    assert_eq!(s.state().period, Some(2026 * 12 + 11));
    assert!(!s.reset_if_due(nov + 2));
}
