//! The grid scheduler of the multi-site study live: with `strategy = "job-sharing"` the
//! meta-scheduler holds a job in its own queue until a site has its processors free (by its
//! account of the jobs it released and their estimated ends), then releases it to the best-fit
//! site; a held job survives a kill -9 of the meta-scheduler. Real processes on loopback ports.

use gridsched_proto::v1::{self, JobState};
use gridsched_tests::live::{
    Bins, LiveGrid, SiteSpec, decided_by, get_job as job, submit_all, wait_ended,
};
use std::time::Duration;

fn bins() -> Bins {
    Bins {
        meta: env!("CARGO_BIN_EXE_gridsched-test-meta-scheduler").into(),
        local: env!("CARGO_BIN_EXE_gridsched-test-local-scheduler").into(),
        agent: env!("CARGO_BIN_EXE_gridsched-test-site-agent").into(),
    }
}

fn emulated(procs: u32, run: i64) -> v1::JobSpec {
    v1::JobSpec {
        user: "u".into(),
        processors: procs,
        estimate_s: 30,
        emulate_runtime_s: Some(run),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_job_waits_at_the_meta_level_survives_a_restart_and_runs_where_room_frees() {
    let sites = vec![
        SiteSpec::new("alpha", "easy", 1, 2),
        SiteSpec::new("beta", "easy", 1, 4),
    ];
    let mut g = LiveGrid::start(bins(), sites, "[dispatch]\nstrategy = \"job-sharing\"\n");
    g.ready().await;
    let mut c = g.client().await;
    // 2 processors: alpha is the best fit (0 left); 4: beta; then 2 more fit nowhere: held.
    let ids = submit_all(&mut c, vec![emulated(2, 3), emulated(4, 4), emulated(2, 1)]).await;
    let held = job(&mut c, ids[2]).await;
    assert_eq!(
        (held.site.as_deref(), held.state()),
        (None, JobState::Accepted)
    );
    let decided = decided_by(&mut c, ids[2]).await;
    assert!(
        decided.contains("held in the meta-level queue"),
        "{decided}"
    );
    let first = job(&mut c, ids[0]).await;
    assert_eq!(first.site.as_deref(), Some("alpha"));
    assert_eq!(
        decided_by(&mut c, ids[0]).await,
        "job-sharing (best fit: 0 processors left free, the fewest of the sites with room)"
    );
    // The meta-scheduler dies with the job held; restarted, it holds it again.
    let addr = g.meta_addr.clone();
    g.kill_meta();
    g.start_meta(Some(&addr));
    let mut c = g.client().await;
    let jobs = wait_ended(&mut c, &ids, Duration::from_secs(30)).await;
    let by = |id: u64| jobs.iter().find(|j| j.id == id).unwrap();
    for &id in &ids {
        assert_eq!(by(id).state(), JobState::Completed, "{:?}", by(id));
    }
    // Released when alpha's job ended (its processors were free nowhere before), to alpha.
    let (a, h) = (by(ids[0]), by(ids[2]));
    assert_eq!(h.site.as_deref(), Some("alpha"));
    assert!(
        h.start_time.unwrap() >= a.end_time.unwrap(),
        "held job started at {:?}, alpha's job ended at {:?}",
        h.start_time,
        a.end_time
    );
}
