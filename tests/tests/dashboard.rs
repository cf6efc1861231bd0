//! The meta-scheduler's web dashboard in a real browser: a live grid runs jobs,
//! headless Chromium loads the overview and a job page, the rendered DOM must show the live data
//! (sites, waiting and running jobs, events, a Gantt bar per running job, the explain text) and a
//! screenshot is written to `$CARGO_TARGET_TMPDIR/dashboard.png`.
//!
//! Chromium is found as `$GRIDSCHED_CHROMIUM`, `chromium`, `chromium-browser` or `google-chrome`;
//! `.ci/run` installs it. Without it the test is skipped loudly, or fails under `CI=true`.

use gridsched_proto::v1::{self, JobState};
use gridsched_tests::live::{Bins, LiveGrid, SiteSpec, all_jobs, http_get, submit_all};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn bins() -> Bins {
    Bins {
        meta: env!("CARGO_BIN_EXE_gridsched-test-meta-scheduler").into(),
        local: env!("CARGO_BIN_EXE_gridsched-test-local-scheduler").into(),
        agent: env!("CARGO_BIN_EXE_gridsched-test-site-agent").into(),
    }
}

fn chromium() -> Option<PathBuf> {
    let candidates = std::env::var("GRIDSCHED_CHROMIUM")
        .into_iter()
        .chain(["chromium", "chromium-browser", "google-chrome"].map(String::from));
    for c in candidates {
        let ok = Command::new(&c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return Some(c.into());
        }
    }
    None
}

/// Runs headless Chromium on `url` with `args`; returns its stdout.
fn browse(chrome: &Path, profile: &Path, args: &[&str], url: &str) -> String {
    let out = Command::new(chrome)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn job(user: &str, procs: u32, run: i64, deadline: Option<i64>) -> v1::JobSpec {
    v1::JobSpec {
        user: user.into(),
        processors: procs,
        estimate_s: 1200,
        emulate_runtime_s: Some(run),
        deadline,
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_shows_the_live_grid_in_headless_chromium() {
    let Some(chrome) = chromium() else {
        gridsched_tests::skip(
            "dashboard in a browser: no Chromium (install the `chromium` package or set \
             GRIDSCHED_CHROMIUM)",
        );
        return;
    };
    let sites = vec![
        SiteSpec::new("alpha", "easy", 2, 4),
        SiteSpec::new("beta", "fb-mod", 2, 4),
    ];
    let g = LiveGrid::start(bins(), sites, "");
    g.ready().await;
    let mut c = g.client().await;
    // Short jobs that end first (events, green Gantt bars), then six long ones on four 4-way
    // machines (agents run at time scale 0.05: 1,200 s = 60 s): four run, two must wait.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let mut ids = submit_all(&mut c, (0..6).map(|_| job("alice", 1, 2, None)).collect()).await;
    let states = async |c: &mut gridsched_tests::live::Client| {
        let jobs = all_jobs(c).await;
        let of = |s: JobState| -> Vec<u64> {
            jobs.iter()
                .filter(|j| j.state() == s)
                .map(|j| j.id)
                .collect()
        };
        (
            of(JobState::Running),
            of(JobState::Queued),
            of(JobState::Completed),
        )
    };
    let t = Instant::now();
    while states(&mut c).await.2.len() < 6 {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "short jobs did not end"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let long = (0..6)
        .map(|_| job("bob", 4, 1200, Some(now + 86_400)))
        .collect();
    ids.extend(submit_all(&mut c, long).await);
    let t = Instant::now();
    let (running, waiting) = loop {
        let (r, q, _) = states(&mut c).await;
        if r.len() == 4 && q.len() == 2 {
            break (r, q);
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "running {r:?}, queued {q:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };

    // Each job's events go forward only (no agent was lost, so nothing is requeued): a job is
    // never RUNNING before QUEUED, which the event table would show.
    let mut events = c
        .watch(v1::WatchRequest {
            from_sequence: Some(1),
            ..Default::default()
        })
        .await
        .expect("watch")
        .into_inner();
    let mut seen: std::collections::HashMap<u64, Vec<JobState>> = Default::default();
    while let Ok(Ok(Some(e))) =
        tokio::time::timeout(Duration::from_millis(300), events.message()).await
    {
        seen.entry(e.job_id).or_default().push(e.state());
    }
    for (id, states) in &seen {
        let rank = |s: &JobState| *s as i32;
        assert!(
            states.windows(2).all(|w| rank(&w[0]) < rank(&w[1])),
            "job {id}: {states:?}"
        );
    }
    assert_eq!(seen.len(), ids.len());

    let http = &g.metrics[0];
    let profile = g.path("chromium-profile");
    let dom = browse(
        &chrome,
        &profile,
        &["--virtual-time-budget=2000", "--dump-dom"],
        &format!("http://{http}/"),
    );
    let saved = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dashboard.html");
    std::fs::write(&saved, &dom).expect("save the DOM");
    assert!(dom.contains("gridsched grid"), "{dom}");
    let table = |id: &str| {
        let start = dom.find(&format!("<table id=\"{id}\"")).expect(id);
        let end = start + dom[start..].find("</table>").expect("table end");
        dom[start..end].to_owned()
    };
    for site in ["alpha", "beta"] {
        assert!(
            dom.contains(&format!("data-cluster=\"{site}\"")),
            "Gantt of {site}"
        );
    }
    assert!(
        table("sites").contains("<td>easy</td>") && table("sites").contains("<td>fb-mod</td>"),
        "local policies shown: {}",
        saved.display()
    );
    for id in &running {
        assert!(
            dom.contains(&format!("data-job=\"{id}\"")),
            "Gantt bar of running job {id}"
        );
    }
    for id in &waiting {
        assert!(
            table("waiting").contains(&format!("/job/{id}\"")),
            "waiting {id}"
        );
    }
    for id in &running {
        assert!(
            table("running").contains(&format!("/job/{id}\"")),
            "running {id}"
        );
    }
    assert!(table("events").contains("COMPLETED"), "recent events");
    assert!(
        table("sites").matches("up</span>").count() == 2,
        "both sites up"
    );

    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dashboard.png");
    let _ = std::fs::remove_file(&shot);
    browse(
        &chrome,
        &profile,
        &[
            "--virtual-time-budget=2000",
            "--window-size=1280,1600",
            &format!("--screenshot={}", shot.display()),
        ],
        &format!("http://{http}/"),
    );
    let png = std::fs::read(&shot).expect("a screenshot");
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 20_000,
        "{} bytes",
        png.len()
    );
    eprintln!("dashboard screenshot: {}", shot.display());

    // The page of a waiting job explains why it waits.
    let page = browse(
        &chrome,
        &profile,
        &["--virtual-time-budget=1000", "--dump-dom"],
        &format!("http://{http}/job/{}", waiting[0]),
    );
    assert!(page.contains(&format!("Job {}", waiting[0])));
    let start = page.find("id=\"explain\"").expect("explain block");
    let explain = &page[start..start + page[start..].find("</pre>").expect("end")];
    assert!(explain.contains("priority"), "{explain}");
    assert!(
        explain.contains("QUEUED") || explain.contains("queue"),
        "{explain}"
    );

    // The same data as JSON, and an unknown job as a 404 page.
    let json = http_get(http, "/api/overview", "");
    let body = &json[json.find("\r\n\r\n").expect("body") + 4..];
    let v: serde_json::Value = serde_json::from_str(body).expect("JSON");
    assert_eq!(v["running"].as_array().map(Vec::len), Some(running.len()));
    assert_eq!(v["sites"].as_array().map(Vec::len), Some(2));
    let r = http_get(http, &format!("/job/{}", ids.len() + 100), "");
    assert!(
        r.starts_with("HTTP/1.0 404") || r.starts_with("HTTP/1.1 404"),
        "{r}"
    );
}
