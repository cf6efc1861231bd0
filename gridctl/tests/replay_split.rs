//! `gridctl replay` of jobs wider than every site: the live grid splits and co-allocates them,
//! the simulation does the same through the platform engine (the core's co-allocation protocol
//! against the same cluster runners), and the two agree job by job.

use serde_json::Value;
use std::path::Path;

const GRIDCTL: &str = env!("CARGO_BIN_EXE_gridctl");
const GRID: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/split_grid.toml");
const JOBS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/split_jobs.jsonl");

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
