//! Faults of split jobs, live. A site whose local scheduler has died (but is not yet marked down)
//! is chosen for a fragment: its hold fails, every hold taken at the other sites is let go at once
//! (not left to lapse: the lease here is a minute), and the job is planned again — once the dead
//! site is down, over the sites still up — and runs there. A fragment that fails while running:
//! the others are killed, and the job is requeued as a new run (`links.fragment_requeues`), each
//! site starting each run once, until the limit, then fails. A meta-scheduler killed (-9) while
//! co-allocations are under way: after its restart every job completes, each site started each
//! job once, and no hold is left behind. Real processes on loopback, `split_wide` under
//! load-ordering.

use gridsched_proto::v1::{self, JobState};
use gridsched_tests::live::{
    LiveGrid, SiteSpec, completed, fragments_of, held_at, runs_at, scrape, submit_all, wait_ended,
};
use std::time::Duration;

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
    let job = completed(&mut c, id, Duration::from_secs(60)).await;
    assert_eq!(fragments_of(&job), [("alpha", 4), ("gamma", 2)], "{job:?}");

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
        let left: Vec<(i64, i64, bool)> = held_at(&g.local_addrs[0])
            .await
            .iter()
            .map(|r| (r.start_time, r.end_time, r.tentative))
            .collect();
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_fragment_requeues_its_job_as_a_new_run_up_to_the_limit() {
    let sites = vec![
        SiteSpec::new("alpha", "easy", 1, 4),
        SiteSpec::new("beta", "easy", 1, 4),
    ];
    let meta = "[dispatch]\nsplit_wide = true\n[dispatch.multi_site]\noverhead_pct = 10\n\
                [links]\nfragment_requeues = 1\n";
    let g = LiveGrid::start(gridsched_tests::test_bins!(), sites, meta);
    g.ready().await;
    let mut c = g.client().await;
    let marker = g.path("failed-once");
    // Fragment 1 (beta) fails on the job's first run only; fragment 0 would run 30 s, and is
    // killed when fragment 1 fails. A second job's fragment 1 always fails.
    let once = format!(
        "if [ \"$GRIDSCHED_FRAGMENT_RANK\" = 1 ] && [ ! -e {m} ]; then touch {m}; exit 3; fi; \
         [ -e {m} ] && exit 0; sleep 30",
        m = marker.display()
    );
    let always = "[ \"$GRIDSCHED_FRAGMENT_RANK\" = 1 ] && exit 4; sleep 30";
    // One after the other: a split job waiting for a later common start would hold the
    // processors the other's new run needs until then.
    let mut ids = Vec::new();
    let mut ended = Vec::new();
    for script in [once.as_str(), always] {
        let id = submit_all(&mut c, vec![gridsched_tests::live::sh_job(6, 100, script)]).await[0];
        let jobs = wait_ended(&mut c, &[id], Duration::from_secs(30)).await;
        ended.push(jobs.into_iter().find(|j| j.id == id).unwrap());
        ids.push(id);
    }
    let (ok, bad) = (ended[0].clone(), ended[1].clone());
    assert_eq!(ok.state(), JobState::Completed, "{ok:?}");
    assert_eq!(
        (ok.requeues, ok.reason.as_str()),
        (1, "all 2 fragments completed")
    );
    assert_eq!(bad.state(), JobState::Failed, "{bad:?}");
    assert_eq!(bad.requeues, 1, "{bad:?}");
    assert!(
        bad.reason.starts_with("fragment 1 of 2 at beta: ") && bad.exit_code == Some(4),
        "{bad:?}"
    );
    // Each site started each run of each job once: run 0, then run 1.
    for addr in &g.local_addrs {
        for id in &ids {
            let runs = runs_at(addr, *id).await;
            assert_eq!(runs, [0, 1], "job {id} at {addr}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_meta_scheduler_killed_amid_co_allocations_loses_and_repeats_nothing() {
    let sites = vec![
        SiteSpec::new("alpha", "easy", 1, 4),
        SiteSpec::new("beta", "easy", 1, 4),
    ];
    let meta = "[dispatch]\nsplit_wide = true\n[dispatch.multi_site]\noverhead_pct = 10\n\
                [links]\nhold_lease_ms = 2000\n";
    let mut g = LiveGrid::start(gridsched_tests::test_bins!(), sites, meta);
    g.ready().await;
    let mut c = g.client().await;
    // Four jobs of 6 processors, each split 4 + 2: one at a time fits, so they are co-allocated
    // one after the other (reservations of 2 s x 1.1 + 2 s), each running 1 s x 0.05.
    let spec = v1::JobSpec {
        user: "u".into(),
        processors: 6,
        estimate_s: 2,
        emulate_runtime_s: Some(1),
        ..Default::default()
    };
    let ids = submit_all(&mut c, vec![spec; 4]).await;
    // Killed while the co-allocations are under way (they all begin at once).
    tokio::time::sleep(Duration::from_millis(10)).await;
    let before: Vec<JobState> = gridsched_tests::live::all_jobs(&mut c)
        .await
        .iter()
        .map(|j| j.state())
        .collect();
    assert!(
        before.iter().any(|s| !s.is_terminal()),
        "all ended before the kill: {before:?}"
    );
    eprintln!("states at the kill: {before:?}");
    let addr = g.meta_addr.clone();
    g.kill_meta();
    g.start_meta(Some(&addr));
    let mut c = g.client().await;
    let jobs = wait_ended(&mut c, &ids, Duration::from_secs(90)).await;
    for id in &ids {
        let j = jobs.iter().find(|j| j.id == *id).unwrap();
        assert_eq!(j.state(), JobState::Completed, "{j:?}");
        assert_eq!(j.fragments.len(), 2, "{j:?}");
    }
    // Each site started each job once, and holds nothing once its lease has lapsed.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    for addr in &g.local_addrs {
        for id in &ids {
            assert_eq!(runs_at(addr, *id).await, [0], "job {id} at {addr}");
        }
        assert!(
            held_at(addr).await.is_empty(),
            "{addr} still holds reservations"
        );
    }
}
