//! Differential: the live meta-scheduler under `multi-site` and `gridsim grid` make the same
//! placement decisions on the same job stream — which jobs are split, over which sites, with how
//! many processors each, and which run whole on which site. Three one-machine sites (4, 4 and 2
//! processors) on loopback, emulated jobs submitted together, their estimates their run times; the
//! simulator runs the same stream in virtual time, the grid in real time (about 12 s). Ends in the
//! stream never coincide (checked on the simulated side), so the live passes, one per end as it
//! arrives, see what the simulator's do.

use gridsched_core::model::Job;
use gridsched_proto::v1::{self, JobState};
use gridsched_tests::live::{LiveGrid, SiteSpec, submit_all, wait_ended};
use gridsim::grid::{GridConfig, Scenario, simulate_grid};
use std::collections::BTreeMap;
use std::time::Duration;

const SITES: [(&str, u32); 3] = [("alpha", 4), ("beta", 4), ("gamma", 2)];
/// (processors, run time = estimate, seconds) of each job, in submission order.
const STREAM: [(u32, i64); 8] = [
    (6, 4),
    (2, 3),
    (3, 2),
    (2, 2),
    (4, 3),
    (1, 2),
    (8, 1),
    (2, 2),
];
const OVERHEAD_PCT: u32 = 10;

/// Job index → its parts: (site index, processors), in the order the scheduler gave them.
type Placements = BTreeMap<usize, Vec<(usize, u32)>>;

fn simulated() -> (Placements, Vec<i64>) {
    let jobs: Vec<Job> = STREAM
        .iter()
        .enumerate()
        .map(|(i, &(procs, run))| Job::new(i as u64, 0, procs, run, run))
        .collect();
    let cfg = GridConfig {
        scenario: Scenario::MultiSite,
        overhead_pct: OVERHEAD_PCT,
        ..Default::default()
    };
    let sizes: Vec<u32> = SITES.iter().map(|s| s.1).collect();
    let (report, records) = simulate_grid(&sizes, &cfg, &jobs, false).unwrap();
    assert_eq!(report.jobs, STREAM.len() as u64, "{report:?}");
    // The stream is one where ends never coincide (each live end is its own pass).
    let mut ends: Vec<i64> = records.iter().map(|r| r.end).collect();
    ends.sort_unstable();
    ends.dedup();
    assert_eq!(ends.len(), records.len(), "simultaneous ends: {records:?}");
    let mut starts = vec![0; records.len()];
    for r in &records {
        starts[r.idx] = r.start;
    }
    (
        records.iter().map(|r| (r.idx, r.parts.clone())).collect(),
        starts,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_and_simulated_grid_schedulers_split_the_same_jobs_the_same_way() {
    let (expected, sim_starts) = simulated();
    let splits = expected.values().filter(|p| p.len() > 1).count();
    assert!(splits >= 2, "the stream splits {splits} jobs: {expected:?}");

    let sites = SITES
        .iter()
        .map(|&(name, procs)| SiteSpec {
            // Real time: each end reaches the meta-scheduler in the second the simulator has it.
            time_scale: 1.0,
            ..SiteSpec::new(name, "easy", 1, procs)
        })
        .collect();
    let meta = format!(
        "[dispatch]\nstrategy = \"multi-site\"\n[dispatch.multi_site]\noverhead_pct = {OVERHEAD_PCT}\n"
    );
    let g = LiveGrid::start(gridsched_tests::test_bins!(), sites, &meta);
    g.ready().await;
    let mut c = g.client().await;
    let specs = STREAM
        .iter()
        .map(|&(procs, run)| v1::JobSpec {
            user: "u".into(),
            processors: procs,
            estimate_s: run,
            emulate_runtime_s: Some(run),
            ..Default::default()
        })
        .collect();
    let ids = submit_all(&mut c, specs).await;
    let jobs = wait_ended(&mut c, &ids, Duration::from_secs(60)).await;
    let site = |name: &str| SITES.iter().position(|s| s.0 == name).unwrap();
    let mut live = Placements::new();
    for (idx, id) in ids.iter().enumerate() {
        let j = jobs.iter().find(|j| j.id == *id).unwrap();
        assert_eq!(j.state(), JobState::Completed, "{j:?}");
        let parts = match j.fragments.is_empty() {
            true => vec![(
                site(j.site.as_deref().unwrap()),
                j.spec.as_ref().unwrap().processors,
            )],
            false => j
                .fragments
                .iter()
                .map(|f| (site(&f.site), f.processors))
                .collect(),
        };
        live.insert(idx, parts);
    }
    assert_eq!(live, expected);
    // The live clock's seconds, counted from the common submission, beside the simulated ones.
    let t0 = jobs.iter().filter_map(|j| j.submit_time).min().unwrap();
    let live_starts: Vec<i64> = ids
        .iter()
        .map(|id| {
            jobs.iter()
                .find(|j| j.id == *id)
                .unwrap()
                .start_time
                .unwrap()
                - t0
        })
        .collect();
    for (i, (l, s)) in live_starts.iter().zip(&sim_starts).enumerate() {
        assert!(
            (l - s).abs() <= 1,
            "job {i} started at {l} s live, {s} s simulated"
        );
    }
    eprintln!(
        "{splits} of {} jobs split, live as simulated: {live:?}; starts live {live_starts:?}, \
         simulated {sim_starts:?}",
        STREAM.len()
    );
}
