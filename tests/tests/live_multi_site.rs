//! Multi-site jobs live: with `strategy = "multi-site"` a job wider than any site is split over
//! sites by the grid scheduler, co-allocated (tentative holds at each site's earliest start,
//! committed at the common start), and run as one fragment per site inside its reservation, each
//! knowing the others through its environment, its estimate stretched by the WAN overhead; a
//! failing fragment ends the others; cancel reaches every fragment; the dashboard draws and links
//! the fragments. Real processes on loopback.

use gridsched_proto::v1::{self, JobState};
use gridsched_tests::live::{
    Client, LiveGrid, SiteSpec, cancel_once_running, decided_by, get_job as c_job, scrape, sh_job,
    stdout_of, submit_all, wait_ended,
};
use std::time::{Duration, Instant};

fn script(procs: u32, script: &str) -> v1::JobSpec {
    sh_job(procs, 100, script)
}

async fn ended(c: &mut Client, id: u64) -> v1::Job {
    let all = wait_ended(c, &[id], Duration::from_secs(40)).await;
    all.into_iter().find(|j| j.id == id).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_wider_than_any_site_runs_as_fragments_started_together() {
    let sites = vec![
        SiteSpec::new("alpha", "easy", 1, 4),
        SiteSpec::new("beta", "easy", 1, 4),
    ];
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("grid.jsonl");
    let meta = format!(
        "input_log = {log:?}\n\
         [dispatch]\nstrategy = \"multi-site\"\n[dispatch.multi_site]\noverhead_pct = 10\n"
    );
    let mut g = LiveGrid::start(gridsched_tests::test_bins!(), sites, &meta);
    g.ready().await;
    let mut c = g.client().await;

    // 6 processors: 4 at alpha (the most free, then the lower index) and 2 at beta.
    let env = "echo $GRIDSCHED_FRAGMENT_RANK $GRIDSCHED_FRAGMENT_COUNT $GRIDSCHED_FRAGMENT_SITES \
               $GRIDSCHED_FRAGMENT_PROCESSORS $GRIDSCHED_PROCESSORS; date +%s%N";
    let submitted = std::time::SystemTime::now();
    let ok = submit_all(&mut c, vec![script(6, env)]).await[0];
    let done = ended(&mut c, ok).await;
    let decided = decided_by(&mut c, ok).await;
    assert!(
        decided.starts_with("multi-site (p = 10 %) (split over 2 sites, planned end"),
        "{decided}"
    );
    assert_eq!(done.state(), JobState::Completed, "{done:?}");
    assert_eq!(done.reason, "all 2 fragments completed");
    assert_eq!(done.site, None);
    let shares: Vec<(&str, u32, i64, JobState)> = done
        .fragments
        .iter()
        .map(|f| (f.site.as_str(), f.processors, f.estimate_s, f.state()))
        .collect();
    // The estimate of 100 s stretched by p = 10 %.
    assert_eq!(
        shares,
        [
            ("alpha", 4, 110, JobState::Completed),
            ("beta", 2, 110, JobState::Completed)
        ]
    );
    let out = |m: &str| stdout_of(&g, m, ok);
    let (a, b) = (out("alpha-m1"), out("beta-m1"));
    let line = |s: &str| s.lines().next().unwrap_or_default().to_string();
    assert_eq!(line(&a), "0 2 alpha,beta 4,2 4");
    assert_eq!(line(&b), "1 2 alpha,beta 4,2 2");
    let ns = |s: &str| s.lines().nth(1).and_then(|l| l.trim().parse::<i128>().ok());
    let skew_ms = (ns(&a).unwrap() - ns(&b).unwrap()).abs() / 1_000_000;
    let submit_ns = submitted
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i128;
    let latency_ms = (ns(&a).unwrap().min(ns(&b).unwrap()) - submit_ns) / 1_000_000;
    eprintln!("start skew between the fragments: {skew_ms} ms; submit to start {latency_ms} ms");
    assert!(skew_ms < 1_000, "fragments started {skew_ms} ms apart");
    // Each fragment's output, through the grid from its own site, by its rank.
    for (rank, on_disk) in [(None, &a), (Some(0), &a), (Some(1), &b)] {
        let req = v1::OutputRequest {
            job_id: ok,
            fragment: rank,
            ..Default::default()
        };
        let got = gridsched_tests::live::read_output(&mut c, req)
            .await
            .unwrap();
        assert_eq!(
            String::from_utf8(got).unwrap(),
            *on_disk,
            "fragment {rank:?}"
        );
    }
    let e = c
        .output(v1::OutputRequest {
            job_id: ok,
            fragment: Some(2),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(
        e.message(),
        format!("field `fragment`: job {ok} has 2 fragments (0 to 1)")
    );

    // The dashboard: a bar per fragment on its site's Gantt chart, naming the other, linked to
    // the job's fragments, each of which links back to its site's chart.
    let overview = gridsched_tests::live::http_get(&g.metrics[0], "/", "");
    let bar = format!("<a href=\"/job/{ok}#fragments\"><rect class=\"fragment\" data-job=\"{ok}\"");
    assert_eq!(overview.matches(&bar).count(), 2, "{overview}");
    assert!(
        overview.contains("fragment 1 of 2: alpha 4 + beta 2</title>"),
        "{overview}"
    );
    let page = gridsched_tests::live::http_get(&g.metrics[0], &format!("/job/{ok}"), "");
    assert!(page.contains("<table id=\"fragments\">"), "{page}");
    assert!(
        page.contains("<a href=\"/#gantt-alpha\">alpha</a>")
            && page.contains("<a href=\"/#gantt-beta\">beta</a>"),
        "{page}"
    );

    // A failing fragment ends the other (which would sleep a minute).
    let t0 = Instant::now();
    let fail = "if [ $GRIDSCHED_FRAGMENT_RANK = 1 ]; then sleep 0.5; exit 3; fi; exec sleep 60";
    let bad = submit_all(&mut c, vec![script(6, fail)]).await[0];
    let done = ended(&mut c, bad).await;
    assert_eq!(done.state(), JobState::Failed, "{done:?}");
    assert_eq!(done.exit_code, Some(3));
    assert_eq!(done.reason, "fragment 1 of 2 at beta: exited with code 3");
    assert!(t0.elapsed() < Duration::from_secs(40));

    // A split job survives a kill -9 of the meta-scheduler with its fragments; cancel then
    // reaches every fragment.
    let long = submit_all(&mut c, vec![script(6, "exec sleep 60")]).await[0];
    let limit = Instant::now() + Duration::from_secs(20);
    while c_job(&mut c, long).await.state() != JobState::Running {
        assert!(Instant::now() < limit, "never running");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let metrics = scrape(&g.metrics[0]);
    assert!(
        metrics.contains("gridsched_meta_coallocations_total{outcome=\"committed\"} 3"),
        "{metrics}"
    );
    let addr = g.meta_addr.clone();
    g.kill_meta();
    g.start_meta(Some(&addr));
    let mut c = g.client().await;
    let back = c_job(&mut c, long).await;
    assert_eq!(back.fragments.len(), 2, "{back:?}");
    cancel_once_running(&mut c, long, Duration::from_secs(20)).await;
    let done = ended(&mut c, long).await;
    assert_eq!(done.state(), JobState::Cancelled, "{done:?}");
    assert!(
        done.fragments
            .iter()
            .all(|f| f.state() == JobState::Cancelled),
        "{done:?}"
    );

    // The meta-scheduler's input log, over both of its starts, re-decided by the same grid
    // runner: every classification, placement, hold, commit and fragment sent comes out the
    // same (what `gridsim rerun` checks).
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<gridsched_core::grid::replay::Line> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let sends = lines
        .iter()
        .filter(|l| {
            matches!(
                l,
                gridsched_core::grid::replay::Line::Out(gridsched_core::grid::Effect::Send { .. })
            )
        })
        .count();
    assert_eq!(sends, 3, "three split jobs co-allocated");
    let checked = gridsched_core::grid::replay::check(lines).unwrap();
    assert_eq!(checked.runs, 2, "a header at each start");
    assert!(checked.effects > 10, "{checked:?}");
}
