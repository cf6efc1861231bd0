//! `gridctl replay` end to end: a busy slice of the KTH SP2 trace, scaled to 1/200 of its times,
//! replayed as emulated jobs on a two-site grid started by `gridctl up`, and compared with the
//! pure simulation of the same jobs on the same grid description.

use serde_json::Value;
use std::path::Path;

const GRIDCTL: &str = env!("CARGO_BIN_EXE_gridctl");
const GRID: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/replay_grid.toml");

#[test]
fn a_trace_slice_replayed_live_completes_and_is_compared_with_its_simulation() {
    let Some(kth) = gridsched_tests::trace("KTH-SP2-1996-2.1-cln.swf.gz") else {
        return;
    };
    let (report, lines) = gridsched_tests::up::replay(
        Path::new(GRIDCTL),
        GRID,
        &kth,
        &["--skip", "12000", "--jobs", "80", "--time-scale", "1/200"],
    );
    let (live, sim) = (&report["live"], &report["simulated"]);
    assert_eq!(report["jobs"], 80);
    assert_eq!(report["time_scale"], "1/200");
    // Every job of the slice fits the 100-processor site: nothing is refused on either side, and
    // every job completes live as in the simulation.
    assert_eq!((&live["refused"], &sim["refused"]), (&0.into(), &0.into()));
    assert_eq!(
        (&live["completed"], &sim["completed"]),
        (&80.into(), &80.into())
    );
    // The slice queues (simulated, its jobs wait 257.5 s on average).
    assert!(sim["mean_wait_s"].as_f64().unwrap() > 0.0, "{report}");

    assert_eq!(lines.len(), 80);
    let mut trace_ids: Vec<u64> = Vec::new();
    for l in &lines {
        let (lv, sv) = (&l["live"], &l["simulated"]);
        let t = |v: &Value, k: &str| v[k].as_i64().unwrap_or_else(|| panic!("{k} in {l}"));
        // The simulated run is the scaled run time; live, an emulated job holds its processors
        // at least that long and ends within two whole-second clock ticks of it.
        let sim_run = t(sv, "end") - t(sv, "start");
        let live_run = t(lv, "end") - t(lv, "start");
        assert!(
            (sim_run..=sim_run + 2).contains(&live_run),
            "live run {live_run} s, simulated {sim_run} s: {l}"
        );
        // Submitted on time (within a second), started after that.
        assert!(
            (t(sv, "submit")..=t(sv, "submit") + 1).contains(&t(lv, "submit")),
            "{l}"
        );
        assert!(t(lv, "start") >= t(lv, "submit"), "{l}");
        assert!(lv["site"].is_u64() && sv["site"].is_u64(), "{l}");
        trace_ids.push(l["trace_id"].as_u64().unwrap());
    }
    // The slice keeps the trace's order.
    assert!(trace_ids.windows(2).all(|w| w[0] < w[1]), "{trace_ids:?}");
}
