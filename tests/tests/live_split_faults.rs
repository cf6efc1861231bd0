//! Faults during a co-allocation, live: a site whose local scheduler has died (but is not yet
//! marked down) is chosen for a fragment; its hold fails, every hold taken at the other sites is
//! let go at once (not left to lapse: the lease here is a minute), and the job is planned again —
//! once the dead site is down, over the sites still up — and runs there. Real processes on
//! loopback, `split_wide` under load-ordering.

use gridsched_proto::v1::local_scheduler_client::LocalSchedulerClient;
use gridsched_proto::v1::{self, JobState};
use gridsched_tests::live::{LiveGrid, SiteSpec, scrape, submit_all, wait_ended};
use std::time::Duration;

/// (start, end, tentative) of the reservations site `addr` holds.
async fn holds(addr: &str) -> Vec<(i64, i64, bool)> {
    let mut c = LocalSchedulerClient::connect(format!("http://{addr}"))
        .await
        .expect("local scheduler");
    let st = c.status(v1::StatusRequest {}).await.unwrap().into_inner();
    st.advance_reservations
        .iter()
        .map(|r| (r.start_time, r.end_time, r.tentative))
        .collect()
}

fn counter(metrics: &str, name: &str) -> u64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_site_dead_during_the_co_allocation_lets_every_hold_go_and_the_job_runs_elsewhere() {
    let sites = vec![
        SiteSpec::new("alpha", "easy", 1, 4),
        SiteSpec::new("beta", "easy", 1, 4),
        SiteSpec::new("gamma", "easy", 1, 2),
    ];
    let meta = "[dispatch]\nsplit_wide = true\n[dispatch.multi_site]\noverhead_pct = 10\n\
                [links]\nhold_lease_ms = 60000\nsite_down_after_ms = 3000\n";
    let mut g = LiveGrid::start(gridsched_tests::test_bins!(), sites, meta);
    g.ready().await;
    let mut c = g.client().await;

    // 6 processors, wider than every site: alpha 4 + beta 2 (the widest first, ties to the lower
    // index) — but beta's local scheduler has just died.
    g.kill_local(1);
    let spec = v1::JobSpec {
        user: "u".into(),
        processors: 6,
        estimate_s: 30,
        emulate_runtime_s: Some(20), // 1 s at the agents' time scale
        ..Default::default()
    };
    let id = submit_all(&mut c, vec![spec]).await[0];
    let jobs = wait_ended(&mut c, &[id], Duration::from_secs(60)).await;
    let job = jobs.iter().find(|j| j.id == id).unwrap();
    assert_eq!(job.state(), JobState::Completed, "{job:?}");
    let placed: Vec<(&str, u32)> = job
        .fragments
        .iter()
        .map(|f| (f.site.as_str(), f.processors))
        .collect();
    assert_eq!(placed, [("alpha", 4), ("gamma", 2)], "{job:?}");

    let metrics = scrape(&g.metrics[0]);
    let given_up = counter(
        &metrics,
        "gridsched_meta_coallocations_total{outcome=\"given-up\"}",
    );
    let released = counter(&metrics, "gridsched_meta_holds_released_total");
    assert!(given_up >= 1, "{metrics}");
    assert!(released >= given_up, "{metrics}");
    assert_eq!(
        counter(
            &metrics,
            "gridsched_meta_coallocations_total{outcome=\"committed\"}"
        ),
        1,
        "{metrics}"
    );
    // alpha held a fragment at every failed attempt; each hold was let go (a minute's lease
    // could not have lapsed), and the reservation of the fragment that ran too, after its end.
    let t = std::time::Instant::now();
    loop {
        let left = holds(&g.local_addrs[0]).await;
        if left.is_empty() {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(3),
            "alpha still holds {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    eprintln!(
        "{given_up} co-allocations given up, {released} holds let go, then alpha 4 + gamma 2"
    );
}
