//! Faults between the two phases of a co-allocation, live. The meta-scheduler is made to wait
//! between recording a split job's holds (PENDING) and asking the sites to commit them
//! (`[faults] pause_before_commit_ms`), so that a test can act inside that window on purpose:
//!
//! * a site dies inside it: its commit fails, every other hold is let go at once (the lease here
//!   is a minute), the PENDING records are forgotten, and the job is planned again — once the
//!   dead site is down, over the sites still up — and runs there;
//! * the meta-scheduler is killed (-9) inside it: at restart the grid runner takes the PENDING
//!   holds back, the job is co-allocated anew and completes, each site starting it once, and no
//!   reservation is left anywhere.
//!
//! Real processes on loopback, `split_wide` under load-ordering.

use gridsched_proto::v1::{self, AdvanceReservationState as St};
use gridsched_tests::live::{
    Client, LiveGrid, SiteSpec, completed, fragments_of, held_at, runs_at, submit_all,
};
use std::time::{Duration, Instant};

/// Reservations the meta-scheduler records, as (site, state).
async fn recorded(c: &mut Client) -> Vec<(String, St)> {
    let r = c
        .list_reservations(v1::ListReservationsRequest::default())
        .await
        .expect("list reservations")
        .into_inner();
    r.reservations
        .iter()
        .map(|r| (r.site.clone(), r.state()))
        .collect()
}

/// Waits until the meta-scheduler records a co-allocation's holds as PENDING: it is inside the
/// window between the two phases.
async fn until_pending(c: &mut Client) -> Vec<(String, St)> {
    let t = Instant::now();
    loop {
        let r = recorded(c).await;
        if r.iter().any(|(_, s)| *s == St::Pending) {
            return r;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "never PENDING: {r:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until the meta-scheduler records no reservation: a fragment's end lets its served
/// reservation go (at its site, then here) just after the job's end is published, so a client
/// may see the job COMPLETED a moment before the last record goes.
async fn until_none_recorded(c: &mut Client) {
    let t = Instant::now();
    loop {
        let r = recorded(c).await;
        if r.is_empty() {
            return;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "still recorded 10 s after the job's end: {r:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn wide_job() -> v1::JobSpec {
    v1::JobSpec {
        user: "u".into(),
        processors: 6,
        estimate_s: 30,
        emulate_runtime_s: Some(20), // 1 s at the agents' time scale
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_site_dead_between_hold_and_commit_lets_every_hold_go_and_the_job_runs_elsewhere() {
    let sites = vec![
        SiteSpec::new("alpha", "easy", 1, 4),
        SiteSpec::new("beta", "easy", 1, 4),
        SiteSpec::new("gamma", "easy", 1, 2),
    ];
    let meta = "[dispatch]\nsplit_wide = true\n[dispatch.multi_site]\noverhead_pct = 10\n\
                [links]\nhold_lease_ms = 60000\nsite_down_after_ms = 3000\n\
                [faults]\npause_before_commit_ms = 1500\n";
    let mut g = LiveGrid::start(gridsched_tests::test_bins!(), sites, meta);
    g.ready().await;
    let mut c = g.client().await;
    let mut events = c
        .watch(v1::WatchRequest::default())
        .await
        .expect("watch")
        .into_inner();

    // Split alpha 4 + beta 2; both hold, the holds are recorded PENDING — and beta dies.
    let id = submit_all(&mut c, vec![wide_job()]).await[0];
    let pending = until_pending(&mut c).await;
    let mut sites: Vec<&str> = pending.iter().map(|(s, _)| s.as_str()).collect();
    sites.sort_unstable();
    assert_eq!(sites, ["alpha", "beta"], "{pending:?}");
    g.kill_local(1);

    let job = completed(&mut c, id, Duration::from_secs(60)).await;
    assert_eq!(fragments_of(&job), [("alpha", 4), ("gamma", 2)], "{job:?}");
    // The commit that failed gave the co-allocation up, the reason named.
    let mut details = Vec::new();
    while let Ok(Ok(Some(e))) =
        tokio::time::timeout(Duration::from_millis(300), events.message()).await
    {
        details.push(e.detail);
    }
    assert!(
        details
            .iter()
            .any(|d| d.contains("co-allocation given up") && d.contains("commit")),
        "{details:#?}"
    );
    // Nothing is left: no record at the meta-scheduler (the PENDING ones were forgotten, the
    // served ones dropped), no reservation at alpha or gamma, and each started the job once.
    until_none_recorded(&mut c).await;
    for i in [0, 2] {
        let addr = &g.local_addrs[i];
        assert_eq!(held_at(addr).await, [], "{addr}");
        assert_eq!(runs_at(addr, id).await, [0], "{addr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_meta_scheduler_killed_between_hold_and_commit_loses_and_repeats_nothing() {
    let sites = vec![
        SiteSpec::new("alpha", "easy", 1, 4),
        SiteSpec::new("beta", "easy", 1, 4),
    ];
    let meta = "[dispatch]\nsplit_wide = true\n[dispatch.multi_site]\noverhead_pct = 10\n\
                [links]\nhold_lease_ms = 60000\n\
                [faults]\npause_before_commit_ms = 1500\n";
    let mut g = LiveGrid::start(gridsched_tests::test_bins!(), sites, meta);
    g.ready().await;
    let mut c = g.client().await;
    let id = submit_all(&mut c, vec![wide_job()]).await[0];
    until_pending(&mut c).await;
    // Killed inside the window: both sites hold a tentative reservation for a minute.
    let addr = g.meta_addr.clone();
    g.kill_meta();
    for a in &g.local_addrs {
        assert_eq!(held_at(a).await.len(), 1, "{a}");
    }
    g.start_meta(Some(&addr));
    let mut c = g.client().await;
    let job = completed(&mut c, id, Duration::from_secs(60)).await;
    assert_eq!(job.fragments.len(), 2, "{job:?}");
    // The PENDING holds were taken back at restart, not left to lapse (a minute's lease): no
    // reservation anywhere, and each site started the job once.
    until_none_recorded(&mut c).await;
    for a in &g.local_addrs {
        assert_eq!(held_at(a).await, [], "{a}");
        assert_eq!(runs_at(a, id).await, [0], "{a}");
    }
}
