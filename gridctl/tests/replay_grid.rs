//! `gridctl replay` at the grid level, live against simulated job by job: jobs wider than every
//! site, which the live grid splits and co-allocates and the simulation too, through the platform
//! engine (the core's co-allocation protocol against the same cluster runners); and urgent jobs
//! placed by the `mct-preferred` broker from the sites' reported urgent load, with a site lost
//! in the middle of the replay, which both sides handle by the grid runner's one site-down rule;
//! and advance reservations asked for during the replay, which jobs run in or are refused.

use serde_json::Value;
use std::path::Path;

const GRIDCTL: &str = env!("CARGO_BIN_EXE_gridctl");
const GRID: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/split_grid.toml");
const JOBS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/split_jobs.jsonl");
const URGENT_GRID: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/urgent_lose_grid.toml"
);
const RESERVE_GRID: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/reserve_grid.toml");
const RESERVE_JOBS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/reserve_jobs.jsonl");
const RESERVATIONS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/reserve_reservations.jsonl"
);
const URGENT_JOBS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/urgent_lose_jobs.jsonl"
);

/// `v[k]` as whole seconds.
fn at(v: &Value, k: &str) -> Option<i64> {
    v[k].as_i64()
}

/// Each record's simulated site, start and end.
type Decided = (Option<u64>, Option<i64>, Option<i64>);

fn simulated(lines: &[Value]) -> Vec<Decided> {
    let s = |l: &Value| (l["site"].as_u64(), at(l, "start"), at(l, "end"));
    lines.iter().map(|l| s(&l["simulated"])).collect()
}

/// Every job at the same site live and simulated (or refused on both sides), lost on both or
/// neither, started within a second of its simulated start, and held about as long (within two
/// whole-second clock ticks).
fn decided_alike(lines: &[Value]) {
    for l in lines {
        let (lv, sv) = (&l["live"], &l["simulated"]);
        assert_eq!(lv["site"], sv["site"], "{l}");
        assert_eq!(lv["lost"], sv["lost"], "{l}");
        assert_eq!(at(lv, "start").is_some(), at(sv, "start").is_some(), "{l}");
        if let (Some(ls), Some(ss)) = (at(lv, "start"), at(sv, "start")) {
            assert!((ls - ss).abs() <= 1, "{l}");
        }
        if let (Some(le), Some(se)) = (at(lv, "end"), at(sv, "end")) {
            assert!((se..=se + 2).contains(&le), "{l}");
        }
    }
}

#[test]
fn split_jobs_replayed_live_start_where_and_when_the_simulation_starts_them() {
    let (report, lines) =
        gridsched_tests::up::replay(Path::new(GRIDCTL), GRID, Path::new(JOBS), &["--jobs", "8"]);
    let (live, sim) = (&report["live"], &report["simulated"]);
    // Before the platform engine co-allocated, the four wide jobs were refused in the simulation
    // while the live grid ran them.
    assert_eq!((&live["refused"], &sim["refused"]), (&0.into(), &0.into()));
    assert_eq!(
        (&live["completed"], &sim["completed"]),
        (&8.into(), &8.into())
    );
    assert_eq!(lines.len(), 8);
    let mut waited = 0;
    for l in &lines {
        let (lv, sv) = (&l["live"], &l["simulated"]);
        let t = |v: &Value, k: &str| v[k].as_i64().unwrap_or_else(|| panic!("{k} in {l}"));
        // The same site (a split job's first fragment's), started within a second of the
        // simulated start, and held as long (within two whole-second clock ticks).
        assert_eq!(lv["site"], sv["site"], "{l}");
        assert!((t(lv, "start") - t(sv, "start")).abs() <= 1, "{l}");
        let (sim_run, live_run) = (t(sv, "end") - t(sv, "start"), t(lv, "end") - t(lv, "start"));
        assert!((sim_run..=sim_run + 2).contains(&live_run), "{l}");
        waited += i64::from(t(sv, "start") > t(sv, "submit"));
    }
    // The stream queues: co-allocations find a common start later than the submission.
    assert!(waited >= 4, "{lines:?}");
    // The split jobs' runs grew by the 10 % overhead: job 2 (12 processors, 6 s) runs 7 s.
    let two = &lines[1]["simulated"];
    assert_eq!(
        two["end"].as_i64().unwrap() - two["start"].as_i64().unwrap(),
        7,
        "{two}"
    );
}

/// Seven jobs, four of them urgent, on three 4-processor sites; site c is killed at 11 s (its
/// local scheduler and agent, SIGKILL) and marked down 3 s later. Worked example of the simulated
/// side (replay seconds; sites a = 0, b = 1, c = 2):
///
/// * urgent 1 (0 s) goes to a, the preferred site, free of urgent jobs; it runs 0–18;
/// * urgent 2 (3 s): urgent 1 holds a until its estimate's end (20 s), so it goes where it
///   completes first: b or c at 15 s, the lower id; it runs 3–13;
/// * typical 3 (5 s) goes to the site with the fewest waiting jobs (none anywhere: a) and waits
///   there for urgent 1: 18–38;
/// * urgent 4 (7 s): a completes it at 30 s, b at 25 s, c at 17 s: c; it runs from 7 s and is
///   lost with c at 11 s;
/// * urgent 5 (9 s, 2 processors): a at 30 s, b at 25 s, c at 27 s: b, after urgent 2: 13–22;
/// * typical 6 (12 s): c has no waiting job (a and b one each) and is not down yet, so it is sent
///   there; when c goes down (14 s) it is taken back, having not started, and sent to b (no
///   waiting job left there), where it runs after urgent 5: 22–28;
/// * typical 7 (16 s, 1 processor): a and b have one waiting job each: a; it starts beside
///   typical 3 when urgent 1 ends: 18–22.
///
/// Live, every job is on the same site, started within a second of its simulated start, and
/// urgent 4 is lost with c on both sides.
#[test]
fn urgent_jobs_and_a_site_lost_mid_replay_are_decided_alike_live_and_simulated() {
    let (report, lines) = gridsched_tests::up::replay_up(
        Path::new(GRIDCTL),
        URGENT_GRID,
        Path::new(URGENT_JOBS),
        &["--lose", "c@11"],
    );
    let (live, sim) = (&report["live"], &report["simulated"]);
    assert_eq!(
        (&live["completed"], &sim["completed"]),
        (&6.into(), &6.into())
    );
    assert_eq!((&live["lost"], &sim["lost"]), (&1.into(), &1.into()));
    let expected = [
        (0, 0, Some(18)),
        (1, 3, Some(13)),
        (0, 18, Some(38)),
        (2, 7, None),
        (1, 13, Some(22)),
        (1, 22, Some(28)),
        (0, 18, Some(22)),
    ]
    .map(|(site, start, end)| (Some(site), Some(start), end));
    assert_eq!(simulated(&lines), expected, "{lines:?}");
    decided_alike(&lines);
    assert_eq!(
        lines[3]["live"]["note"], "lost with site c",
        "{:?}",
        lines[3]
    );
}

/// Seven jobs on two 4-processor planning sites, with two advance reservations asked for during
/// the replay. Worked example of the simulated side (replay seconds; sites a = 0, b = 1):
///
/// * reservation 7 (asked at 0 s, user 3's, b, 4 processors over [10, 30)) is held; reservation 9
///   (asked at 5 s, a, [6, 40)) is refused by a, whose four processors job 1 holds until its
///   estimate's end (20 s);
/// * job 1 runs at a 0–15, job 2 at b 1–7, ending before the reservation starts;
/// * job 3 (user 3, 2 processors, in reservation 7) goes to b and starts with the reservation:
///   10–18;
/// * job 4 goes to b by the grid runner's Load / Ordering arrays, where the reservation keeps its
///   4 processors until 30: 30–34;
/// * job 5 names reservation 9, which the grid does not hold: refused;
/// * job 6 (user 3, 3 processors, in reservation 7) starts when job 3 leaves it room: 18–27;
/// * job 7 (user 5) names user 3's reservation 7: refused.
///
/// Live, every job gets the same site and starts within a second of its simulated start, and the
/// same two are refused.
#[test]
fn advance_reservations_asked_mid_replay_are_decided_alike_live_and_simulated() {
    let (report, lines) = gridsched_tests::up::replay_up(
        Path::new(GRIDCTL),
        RESERVE_GRID,
        Path::new(RESERVE_JOBS),
        &["--reservations", RESERVATIONS],
    );
    let (live, sim) = (&report["live"], &report["simulated"]);
    assert_eq!(
        (&live["completed"], &sim["completed"]),
        (&5.into(), &5.into())
    );
    assert_eq!((&live["refused"], &sim["refused"]), (&2.into(), &2.into()));
    let ran = |site, start, end| (Some(site), Some(start), Some(end));
    let refused = (None, None, None);
    let expected = [
        ran(0, 0, 15),
        ran(1, 1, 7),
        ran(1, 10, 18),
        ran(1, 30, 34),
        refused,
        ran(1, 18, 27),
        refused,
    ];
    assert_eq!(simulated(&lines), expected, "{lines:?}");
    decided_alike(&lines);
    // Both sides give the same reasons.
    let notes = |i: usize| {
        (
            lines[i]["live"]["note"].clone(),
            lines[i]["simulated"]["note"].clone(),
        )
    };
    let not_held = "reservation 9 was not held by the grid";
    assert_eq!(notes(4), (not_held.into(), not_held.into()));
    let (live7, sim7) = notes(6);
    assert!(
        live7.as_str().unwrap().ends_with("belongs to another user"),
        "{live7}"
    );
    assert!(
        sim7.as_str().unwrap().ends_with("belongs to another user"),
        "{sim7}"
    );
}
