//! A whole live grid: the meta-scheduler, two local schedulers and their site
//! agents as real processes on loopback ports. Jobs submitted to the meta-scheduler are
//! classified, dispatched, forwarded, run as real processes and followed to their end; cancel,
//! deadline order, licence limits, a kill -9 of the meta-scheduler in the middle of a stream of
//! submissions and a killed agent are checked through the meta-scheduler's API.

use gridsched_proto::v1::{self, JobState};
use gridsched_tests::live::{
    Bins, LiveGrid, SiteSpec, all_jobs, scrape, starts_at, stdout_of, submit_all, wait_ended,
};
use std::collections::HashMap;
use std::time::Duration;
use tonic::Code;

fn bins() -> Bins {
    Bins {
        meta: env!("CARGO_BIN_EXE_gridsched-test-meta-scheduler").into(),
        local: env!("CARGO_BIN_EXE_gridsched-test-local-scheduler").into(),
        agent: env!("CARGO_BIN_EXE_gridsched-test-site-agent").into(),
    }
}

fn two_sites() -> Vec<SiteSpec> {
    let mut a = SiteSpec::new("alpha", "easy", 2, 4);
    a.licences = vec![("matlab".into(), 2)];
    let b = SiteSpec::new("beta", "fb-mod", 3, 8);
    vec![a, b]
}

fn spec(user: &str, procs: u32, estimate: i64) -> v1::JobSpec {
    v1::JobSpec {
        user: user.into(),
        processors: procs,
        estimate_s: estimate,
        ..Default::default()
    }
}

fn shell(procs: u32, script: &str) -> v1::JobSpec {
    v1::JobSpec {
        command: Some(v1::Command {
            program: "sh".into(),
            args: vec!["-c".into(), script.into()],
            ..Default::default()
        }),
        ..spec("alice", procs, 600)
    }
}

fn emulated(user: &str, procs: u32, estimate: i64, run: i64) -> v1::JobSpec {
    v1::JobSpec {
        emulate_runtime_s: Some(run),
        ..spec(user, procs, estimate)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_jobs_run_across_sites_with_exit_codes_outputs_and_licence_limits() {
    let g = LiveGrid::start(bins(), two_sites(), "");
    g.ready().await;
    let mut c = g.client().await;
    let mut specs = Vec::new();
    for i in 0..300u32 {
        specs.push(match i % 3 {
            0 => shell(1 + i % 4, &format!("echo job-out-{i}; exit {}", i % 5)),
            1 => emulated("bob", 1 + i % 8, 60, 2),
            _ => v1::JobSpec {
                licences: vec!["matlab".into()],
                ..emulated("carol", 1, 60, 4)
            },
        });
    }
    let ids = submit_all(&mut c, specs).await;
    assert_eq!(ids.len(), 300);
    let jobs = wait_ended(&mut c, &ids, Duration::from_secs(240)).await;
    let by_id: HashMap<u64, &v1::Job> = jobs.iter().map(|j| (j.id, j)).collect();
    let mut per_site: HashMap<String, usize> = HashMap::new();
    for (k, id) in ids.iter().enumerate() {
        let j = by_id[id];
        *per_site
            .entry(j.site.clone().unwrap_or_default())
            .or_default() += 1;
        match k % 3 {
            0 => {
                let code = (k % 5) as i32;
                let want = if code == 0 {
                    JobState::Completed
                } else {
                    JobState::Failed
                };
                assert_eq!(
                    (j.state(), j.exit_code),
                    (want, Some(code)),
                    "job {id}: {j:?}"
                );
                let m = j.machine.clone().expect("machine");
                assert_eq!(stdout_of(&g, &m, *id), format!("job-out-{k}\n"), "job {id}");
            }
            1 => assert_eq!(j.state(), JobState::Completed, "job {id}: {j:?}"),
            _ => {
                assert_eq!(j.state(), JobState::Completed, "job {id}: {j:?}");
                assert_eq!(j.site.as_deref(), Some("alpha"), "only alpha has matlab");
            }
        }
        assert!(
            j.start_time.is_some() && j.end_time >= j.start_time,
            "{j:?}"
        );
    }
    assert!(
        per_site.get("beta").copied().unwrap_or(0) > 0 && per_site["alpha"] > 100,
        "both sites used: {per_site:?}"
    );
    // No job started twice, and no more than 2 matlab copies at once: every matlab job runs
    // 4 emulated s x 0.05 = 0.2 s, so 100 of them on 2 copies take at least 10 s of alpha's time.
    for addr in &g.local_addrs {
        let starts = starts_at(addr).await;
        assert!(starts.values().all(|&n| n == 1), "a job started twice");
    }
    let matlab: Vec<&v1::Job> = jobs
        .iter()
        .filter(|j| j.spec.as_ref().is_some_and(|s| !s.licences.is_empty()))
        .collect();
    let first = matlab.iter().filter_map(|j| j.start_time).min().unwrap();
    let last = matlab.iter().filter_map(|j| j.end_time).max().unwrap();
    assert!(
        last - first >= 9,
        "100 matlab jobs of 0.2 s on 2 copies took {} s",
        last - first
    );
    // The Load / Count arrays are empty again: every termination reached the dispatcher.
    let sites = c
        .list_sites(v1::ListSitesRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(sites.dispatch_policy, "load-ordering");
    for s in &sites.sites {
        assert!(s.clusters[0].count.iter().all(|&n| n == 0), "{s:?}");
    }
    // Prometheus metrics of the meta-scheduler and of alpha's local scheduler.
    let meta = scrape(&g.metrics[0]);
    let alpha_jobs = per_site["alpha"];
    for want in [
        format!(
            "gridsched_meta_dispatch_decisions_total{{site=\"alpha\",strategy=\"load-ordering\"}} {alpha_jobs}"
        ),
        "gridsched_meta_jobs_accepted_total 300".into(),
        "gridsched_grpc_requests_total{method=\"/gridsched.v1.MetaScheduler/SubmitBatch\",code=\"0\"} 1"
            .into(),
        "gridsched_meta_site_reachable{site=\"beta\"} 1".into(),
    ] {
        assert!(meta.contains(&want), "{want} not in\n{meta}");
    }
    let local = scrape(&g.metrics[1]);
    for want in [
        "gridsched_local_licence_copies_in_use{licence=\"matlab\"} 0",
        "gridsched_local_running_jobs 0",
        "gridsched_local_machines_online 2",
        "gridsched_local_agent_heartbeats_total{machine=\"alpha-m1\"}",
        "gridsched_local_scheduling_pass_duration_seconds_count",
        "gridsched_grpc_requests_total{method=\"/gridsched.v1.LocalScheduler/Enqueue\",code=\"0\"}",
    ] {
        assert!(local.contains(want), "{want} not in\n{local}");
    }
    let agent = scrape(&g.agent_metrics["alpha-m1"]);
    for want in [
        "gridsched_agent_running_jobs 0",
        "gridsched_agent_heartbeats_sent_total",
        "gridsched_agent_jobs_ended_total{outcome=\"exited\"}",
    ] {
        assert!(agent.contains(want), "{want} not in\n{agent}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_queued_and_running_deadline_order_and_a_killed_agent() {
    let mut g = LiveGrid::start(
        bins(),
        vec![SiteSpec::new("solo", "edf", 2, 2)],
        "[links]\nsite_down_after_ms = 60000\n",
    );
    g.ready().await;
    let mut c = g.client().await;
    // Fill both machines with long jobs, then queue three without deadline and one with.
    let long = submit_all(&mut c, vec![emulated("u", 2, 3600, 3000); 2]).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let mut waiting = vec![emulated("u", 2, 100, 1); 3];
    waiting.push(v1::JobSpec {
        deadline: Some(now + 3600),
        ..emulated("u", 2, 100, 1)
    });
    let queued = submit_all(&mut c, waiting).await;
    let job = |c: &mut v1::meta_scheduler_client::MetaSchedulerClient<_>, id| {
        let mut c = c.clone();
        async move {
            c.get_job(v1::GetJobRequest { job_id: id })
                .await
                .unwrap()
                .into_inner()
                .job
                .unwrap()
        }
    };
    let wanted = long
        .iter()
        .map(|&id| (id, JobState::Running))
        .chain(queued.iter().map(|&id| (id, JobState::Queued)));
    for (id, state) in wanted {
        let t = std::time::Instant::now();
        while job(&mut c, id).await.state() != state {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "job {id} never {state:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    // Explain a queued job: its priority, its site and its place in the local queue.
    let e = c
        .explain(v1::ExplainRequest { job_id: queued[0] })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(e.state(), JobState::Queued);
    assert!(e.queue_position.is_some(), "{e:?}");
    assert!(e.text.contains("dispatched to solo"), "{}", e.text);
    assert_eq!(e.priority.unwrap().contributions.len(), 3);

    // Cancel a queued job: at once. Cancelling it again is a failed precondition.
    let r = c
        .cancel_job(v1::CancelJobRequest {
            job_id: queued[1],
            reason: "test".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.job.unwrap().state(), JobState::Cancelled);
    let e = c
        .cancel_job(v1::CancelJobRequest {
            job_id: queued[1],
            reason: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition);
    let e = c
        .cancel_job(v1::CancelJobRequest {
            job_id: 99_999,
            reason: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound);

    // Cancel a running job: its agent kills it, then it is CANCELLED.
    c.cancel_job(v1::CancelJobRequest {
        job_id: long[0],
        reason: "test".into(),
    })
    .await
    .unwrap();
    let ended = wait_ended(&mut c, &long[..1], Duration::from_secs(10)).await;
    let j0 = ended.iter().find(|j| j.id == long[0]).unwrap();
    assert_eq!(j0.state(), JobState::Cancelled, "{j0:?}");

    // The freed machine goes to the deadline job first (EDF), ahead of earlier submissions.
    let t = std::time::Instant::now();
    loop {
        let d = job(&mut c, queued[3]).await;
        if d.start_time.is_some() {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "deadline job never started"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let d = job(&mut c, queued[3]).await;
    let first = job(&mut c, queued[0]).await;
    assert!(
        first.start_time.is_none_or(|s| s >= d.start_time.unwrap()),
        "the deadline job started first: {d:?} vs {first:?}"
    );

    // Kill the agent running the other long job: the job ends LOST (the default handling).
    let m = job(&mut c, long[1]).await.machine.expect("machine");
    let k = g.agents.iter().position(|(_, name, _)| *name == m).unwrap();
    let (_, _, mut p) = g.agents.remove(k);
    p.0.kill().unwrap();
    p.0.wait().unwrap();
    let ended = wait_ended(&mut c, &long[1..], Duration::from_secs(15)).await;
    let j1 = ended.iter().find(|j| j.id == long[1]).unwrap();
    assert_eq!(j1.state(), JobState::Lost, "{j1:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_the_meta_scheduler_mid_stream_loses_no_acknowledged_job() {
    let mut g = LiveGrid::start(bins(), two_sites(), "");
    g.ready().await;
    let addr = g.meta_addr.clone();
    // A stream of unary submissions; the meta-scheduler is killed while it runs.
    let mut c = g.client().await;
    let sender = tokio::spawn(async move {
        let mut acked = Vec::new();
        for i in 0..100_000u32 {
            tokio::time::sleep(Duration::from_millis(3)).await;
            match c
                .submit(v1::SubmitRequest {
                    spec: Some(emulated("dave", 1 + i % 4, 60, 1)),
                })
                .await
            {
                Ok(r) => acked.push(r.into_inner().job_id),
                Err(_) => break,
            }
        }
        acked
    });
    tokio::time::sleep(Duration::from_millis(1000)).await;
    g.kill_meta();
    let acked = sender.await.unwrap();
    assert!(acked.len() > 10, "{} acked", acked.len());
    g.start_meta(Some(&addr));
    let mut c = g.client().await;
    // Submissions go on after the restart.
    let more = submit_all(&mut c, vec![emulated("dave", 2, 60, 1); 50]).await;
    let mut ids = acked.clone();
    ids.extend(&more);
    let jobs = wait_ended(&mut c, &ids, Duration::from_secs(180)).await;
    for id in &ids {
        let j = jobs
            .iter()
            .find(|j| j.id == *id)
            .expect("acknowledged job known");
        assert_eq!(j.state(), JobState::Completed, "{j:?}");
    }
    assert!(
        more.iter().all(|id| !acked.contains(id)),
        "ids are not reused"
    );
    for addr in &g.local_addrs {
        let starts = starts_at(addr).await;
        assert!(starts.values().all(|&n| n == 1), "a job started twice");
    }
    assert!(all_jobs(&mut c).await.len() >= ids.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_site_that_goes_down_gets_no_work_and_rejoins() {
    let sites = vec![
        SiteSpec::new("alpha", "easy", 1, 4),
        SiteSpec::new("beta", "easy", 1, 4),
    ];
    let mut g = LiveGrid::start(
        bins(),
        sites,
        "[links]\nsite_down_after_ms = 800\nretry_ms = 100\n",
    );
    g.ready().await;
    let mut c = g.client().await;
    // Both sites idle: the first goes to alpha (the first idle cluster), and runs.
    let long = submit_all(&mut c, vec![emulated("u", 4, 3600, 3000)]).await[0];
    let t = std::time::Instant::now();
    loop {
        let j = c
            .get_job(v1::GetJobRequest { job_id: long })
            .await
            .unwrap()
            .into_inner()
            .job
            .unwrap();
        if j.state() == JobState::Running {
            assert_eq!(j.site.as_deref(), Some("alpha"));
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "{j:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Jobs as long as it, by the Load function, go to beta and alpha in turn; those at alpha wait
    // behind it, unclaimed.
    let waiting = submit_all(&mut c, vec![emulated("u", 4, 3600, 20); 4]).await;
    let at_alpha: Vec<u64> =
        gridsched_tests::live::wait_queued(&mut c, &waiting, Duration::from_secs(10))
            .await
            .iter()
            .filter(|j| j.site.as_deref() == Some("alpha"))
            .inspect(|j| assert_eq!(j.state(), JobState::Queued, "{j:?}"))
            .map(|j| j.id)
            .collect();
    assert!(!at_alpha.is_empty(), "no job waits at alpha");
    g.kill_local(0);
    // The jobs waiting at alpha had not started: they are withdrawn and run at beta.
    let jobs = wait_ended(&mut c, &waiting, Duration::from_secs(30)).await;
    for j in jobs.iter().filter(|j| waiting.contains(&j.id)) {
        assert_eq!(
            (j.site.as_deref(), j.state(), j.claimed_by.as_deref()),
            (Some("beta"), JobState::Completed, Some("beta")),
            "{j:?}"
        );
    }
    // Cancelling a job of a site that is down: UNAVAILABLE, and the job is untouched.
    let e = c
        .cancel_job(v1::CancelJobRequest {
            job_id: long,
            reason: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unavailable, "{e:?}");
    // The site is marked down; new jobs all go to beta and finish there.
    let t = std::time::Instant::now();
    loop {
        let s = c
            .list_sites(v1::ListSitesRequest::default())
            .await
            .unwrap()
            .into_inner();
        if !s.sites[0].clusters[0].reachable {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "alpha never unreachable"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let ids = submit_all(&mut c, vec![emulated("u", 1, 60, 1); 6]).await;
    let jobs = wait_ended(&mut c, &ids, Duration::from_secs(30)).await;
    for id in &ids {
        let j = jobs.iter().find(|j| j.id == *id).unwrap();
        assert_eq!(
            (j.site.as_deref(), j.state()),
            (Some("beta"), JobState::Completed),
            "{j:?}"
        );
    }
    // alpha comes back with its state: it rejoins, its running job is still known and can be
    // cancelled; nothing ran twice.
    g.restart_local(0);
    g.ready().await;
    let r = c
        .cancel_job(v1::CancelJobRequest {
            job_id: long,
            reason: "done".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_ne!(r.job.unwrap().state(), JobState::Lost);
    let ended = wait_ended(&mut c, &[long], Duration::from_secs(15)).await;
    let j = ended.iter().find(|j| j.id == long).unwrap();
    assert_eq!(j.state(), JobState::Cancelled, "{j:?}");
    // alpha dropped the jobs withdrawn from it without running them.
    let mut local = gridsched_proto::v1::local_scheduler_client::LocalSchedulerClient::connect(
        format!("http://{}", g.local_addrs[0]),
    )
    .await
    .expect("alpha");
    let t = std::time::Instant::now();
    loop {
        let s = local
            .status(v1::StatusRequest {})
            .await
            .unwrap()
            .into_inner();
        if s.queue.is_empty() && s.running.is_empty() {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "{s:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for addr in &g.local_addrs {
        let starts = starts_at(addr).await;
        assert!(
            starts.values().all(|&n| n == 1),
            "a job started twice: {starts:?}"
        );
    }
}

/// The table of dependency cases (`core::grid::dependency_cases`), live: real processes whose
/// ends the test decides (each waits for a file holding its exit code), cancellations through the
/// API, a split job whose first run fails and is requeued. Each predecessor is held back until
/// its first step by `afterany` on a starter job that ends when the test says (so one cancelled
/// before it ran never starts). After each step, once the predecessor's new state shows, the
/// dependent job must still wait, or be dispatched, or have ended never started, as the case
/// says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_case_of_the_dependency_table_holds_live() {
    use gridsched_core::grid::dependency_cases::{CASES, Expect, Singleton, Step};
    use gridsched_core::model::{Dependency, JobId};
    use gridsched_tests::live::{get_job, sh_job};
    let sites = vec![
        SiteSpec::new("alpha", "easy", 1, 4),
        SiteSpec::new("beta", "easy", 1, 4),
    ];
    let meta = "[dispatch]\nsplit_wide = true\n[dispatch.multi_site]\noverhead_pct = 10\n\
                [links]\nfragment_requeues = 1\n";
    let g = LiveGrid::start(bins(), sites, meta);
    g.ready().await;
    let mut c = g.client().await;
    let waits = |j: &v1::Job| j.state() == JobState::Accepted && j.site.is_none();
    for (n, case) in CASES.iter().enumerate() {
        let file = |k: u64| g.path(&format!("c{n}-p{k}"));
        let starter = |k: u64| g.path(&format!("c{n}-s{k}"));
        let wait_for = |f: std::path::PathBuf| {
            format!(
                "while [ ! -e {f} ]; do sleep 0.05; done; exit $(cat {f})",
                f = f.display()
            )
        };
        let mut ids = HashMap::new();
        for k in 1..=case.jobs {
            let s = submit_all(&mut c, vec![sh_job(1, 300, &wait_for(starter(k)))]).await[0];
            let end = wait_for(file(k));
            let once = g.path(&format!("c{n}-p{k}-once"));
            let script = if case.split && k == 1 {
                // Its first run fails on its own; the next waits for its file.
                format!(
                    "if [ ! -e {m} ]; then sleep 1; touch {m}; exit 1; fi; {end}",
                    m = once.display()
                )
            } else {
                end
            };
            let procs = if case.split && k == 1 { 6 } else { 1 };
            let mut spec = sh_job(procs, 300, &script);
            spec.user = "alice".into();
            let mut after = vec![format!("afterany:{s}")];
            if case.singleton != Singleton::No {
                after.push("singleton".into());
                spec.name = Some(format!("n{n}"));
                if case.singleton == Singleton::OtherUser {
                    spec.user = "bob".into();
                }
            }
            spec.after = Some(after.join(","));
            ids.insert(k, submit_all(&mut c, vec![spec]).await[0]);
        }
        // The dependent, its dependency naming the predecessors by their ids here.
        let mut dep = Dependency::parse(case.after, Some("n")).unwrap();
        for t in &mut dep.terms {
            t.job = JobId(
                ids.get(&t.job.0)
                    .copied()
                    .unwrap_or(1_000_000_000 + t.job.0),
            );
        }
        let mut spec = sh_job(1, 60, "true");
        spec.user = "alice".into();
        spec.after = Some(dep.to_string());
        spec.name = Some(format!("n{n}"));
        let req = v1::SubmitRequest { spec: Some(spec) };
        let dependent = match (c.submit(req).await, case.expect) {
            (Err(e), Expect::Refused(words)) => {
                assert_eq!(e.code(), Code::NotFound, "{}: {e:?}", case.name);
                let words = words.replace("job 7 is not known to the grid", "does not exist");
                assert!(e.message().contains(&words), "{}: {e:?}", case.name);
                continue;
            }
            (Ok(r), _) => r.into_inner().job_id,
            (Err(e), _) => panic!("{}: refused: {e:?}", case.name),
        };
        let named = |words: &str| {
            let mut w = words.to_string();
            for (k, id) in &ids {
                w = w.replace(&format!("job {k} "), &format!("job {id} "));
            }
            w
        };
        let check = |j: &v1::Job, after: Option<usize>| -> bool {
            match case.expect {
                Expect::Runs(k) if after >= k => !waits(j),
                Expect::Never(k, words) if after >= k => {
                    j.state() == JobState::Cancelled && j.reason.contains(&named(words))
                }
                _ => waits(j),
            }
        };
        let settle = async |c: &mut gridsched_tests::live::Client, id: u64, after| {
            let t = std::time::Instant::now();
            loop {
                let j = get_job(c, id).await;
                if check(&j, after) {
                    return;
                }
                assert!(
                    t.elapsed() < Duration::from_secs(10),
                    "{}: after step {after:?}: {j:?}",
                    case.name
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        settle(&mut c, dependent, None).await;
        for (s, &(k, step)) in case.steps.iter().enumerate() {
            let id = ids[&k];
            let shows: fn(&v1::Job) -> bool = match step {
                Step::Start => |j| j.state() == JobState::Running,
                Step::Complete => |j| j.state() == JobState::Completed,
                Step::Fail => |j| j.state() == JobState::Failed,
                Step::Cancel => |j| j.state() == JobState::Cancelled,
                Step::FailRequeued => |j| j.requeues >= 1,
            };
            match step {
                Step::Start => std::fs::write(starter(k), "0").unwrap(),
                Step::Complete => std::fs::write(file(k), "0").unwrap(),
                Step::Fail => std::fs::write(file(k), "1").unwrap(),
                Step::Cancel => {
                    let req = v1::CancelJobRequest {
                        job_id: id,
                        reason: "the dependency table".into(),
                    };
                    c.cancel_job(req).await.expect("cancel");
                }
                Step::FailRequeued => {}
            }
            let t = std::time::Instant::now();
            while !shows(&get_job(&mut c, id).await) {
                assert!(
                    t.elapsed() < Duration::from_secs(20),
                    "{}: job {id} never showed step {s} ({step:?})",
                    case.name
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            settle(&mut c, dependent, Some(s)).await;
        }
        // The starters of predecessors that never started end too.
        for k in 1..=case.jobs {
            std::fs::write(starter(k), "0").unwrap();
        }
    }
}

/// A job waiting for two others, live: `explain` says what it waits for and where each stands;
/// the meta-scheduler killed -9 after the first has completed and restarted finds the first in its
/// history (no longer among its unfinished jobs), keeps the job waiting for the second, and runs
/// it once the second completes. A job waiting for a job of another user is refused
/// (PERMISSION_DENIED is for grids with users; here NOT_FOUND names an unknown job).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_job_survives_a_restart_of_the_meta_scheduler_and_says_what_it_waits_for() {
    use gridsched_tests::live::{get_job, sh_job};
    let sites = vec![SiteSpec::new("alpha", "easy", 1, 4)];
    let mut g = LiveGrid::start(bins(), sites, "");
    g.ready().await;
    let addr = g.meta_addr.clone();
    let mut c = g.client().await;
    let wait_for = |f: &str| {
        let f = g.path(f);
        format!(
            "while [ ! -e {f} ]; do sleep 0.05; done; exit 0",
            f = f.display()
        )
    };
    let a = submit_all(&mut c, vec![sh_job(1, 300, &wait_for("a"))]).await[0];
    let b = submit_all(&mut c, vec![sh_job(1, 300, &wait_for("b"))]).await[0];
    let mut spec = sh_job(1, 60, "true");
    spec.after = Some(format!("afterok:{a}:{b}"));
    let d = submit_all(&mut c, vec![spec]).await[0];
    let running = |j: &v1::Job| j.state() == JobState::Running;
    while !running(&get_job(&mut c, a).await) || !running(&get_job(&mut c, b).await) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let e = c
        .explain(v1::ExplainRequest { job_id: d })
        .await
        .unwrap()
        .into_inner();
    let want = format!("waits for: job {a} (afterok; {a} is RUNNING at alpha)");
    assert!(e.text.contains(&want), "{}", e.text);
    assert_eq!(e.blockers.len(), 2, "{e:?}");
    assert_eq!(e.blockers[1].job_id, Some(b));
    // An unknown job is refused at the door, naming the field.
    let mut bad = sh_job(1, 60, "true");
    bad.after = Some("afterok:999999".into());
    let err = c
        .submit(v1::SubmitRequest { spec: Some(bad) })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
    assert!(
        err.message().contains("`after`: job 999999 does not exist"),
        "{err:?}"
    );

    let waits = |j: &v1::Job| j.reason.clone();
    assert_eq!(
        waits(&get_job(&mut c, d).await),
        format!("waits for job {a} (afterok), job {b} (afterok)")
    );
    std::fs::write(g.path("a"), "").unwrap();
    wait_ended(&mut c, &[a], Duration::from_secs(20)).await;
    let j = get_job(&mut c, d).await;
    assert_eq!(j.state(), JobState::Accepted);
    // What is left, said again once the first is done.
    assert_eq!(waits(&j), format!("waits for job {b} (afterok)"));
    g.kill_meta();
    g.start_meta(Some(&addr));
    let mut c = g.client().await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let j = get_job(&mut c, d).await;
    assert!(j.state() == JobState::Accepted && j.site.is_none(), "{j:?}");
    assert_eq!(waits(&j), format!("waits for job {b} (afterok)"));
    std::fs::write(g.path("b"), "").unwrap();
    let ended = wait_ended(&mut c, &[d], Duration::from_secs(30)).await;
    assert_eq!(ended[0].state(), JobState::Completed, "{:?}", ended[0]);
}

/// A job array, one submission: 300 tasks at `%4`, each a real process appending its array id
/// and index to one file. The array stays one line of ListJobs, never has more than 4 tasks out
/// (polled all along), and survives a kill -9 of the meta-scheduler in its middle: every index
/// runs exactly once. Then a second array: a task cancelled before its release is never
/// released, and cancelling the array kills its running task and releases nothing more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_array_runs_each_index_once_with_at_most_n_out_through_a_kill_9() {
    use gridsched_tests::live::{get_job, sh_job};
    let mut g = LiveGrid::start(bins(), two_sites(), "");
    g.ready().await;
    let addr = g.meta_addr.clone();
    let mut c = g.client().await;
    let out = g.path("indices");
    let script = format!(
        "echo \"$GRIDSCHED_ARRAY_ID $GRIDSCHED_ARRAY_INDEX\" >> {}; sleep 0.02",
        out.display()
    );
    let mut spec = sh_job(1, 60, &script);
    spec.array = Some("0-299%4".into());
    let r = c
        .submit(v1::SubmitRequest { spec: Some(spec) })
        .await
        .unwrap()
        .into_inner();
    let a = r.job_id;
    // The tasks took the ids after the array's.
    let next = submit_all(&mut c, vec![sh_job(1, 60, "true")]).await[0];
    assert_eq!(next, a + 301);
    let progress = |j: &v1::Job| j.array.expect("an array's progress");
    let mut killed = false;
    let mut polls = 0;
    loop {
        let j = get_job(&mut c, a).await;
        let p = progress(&j);
        polls += 1;
        assert!(p.queued + p.running <= 4, "{p:?}");
        assert_eq!(
            p.pending + p.queued + p.running + p.completed + p.failed + p.cancelled,
            300,
            "{p:?}"
        );
        if j.state().is_terminal() {
            assert_eq!(j.state(), JobState::Completed, "{j:?}");
            assert_eq!(j.reason, "300 tasks: 300 completed, 0 failed, 0 cancelled");
            break;
        }
        if !killed && p.completed >= 100 {
            g.kill_meta();
            g.start_meta(Some(&addr));
            c = g.client().await;
            killed = true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(killed && polls > 20, "{polls} polls");
    let text = std::fs::read_to_string(&out).unwrap();
    let mut seen: Vec<u32> = text
        .lines()
        .map(|l| {
            let (id, index) = l.split_once(' ').expect("id and index");
            assert_eq!(id, a.to_string());
            index.parse().unwrap()
        })
        .collect();
    seen.sort_unstable();
    assert_eq!(
        seen,
        (0..300).collect::<Vec<u32>>(),
        "each index exactly once"
    );
    // One line among the jobs; its tasks on request, by their own ids.
    let listed = all_jobs(&mut c).await;
    assert!(listed.iter().all(|j| j.array_id.is_none()));
    assert!(listed.iter().any(|j| j.id == a));
    let tasks = c
        .list_jobs(v1::ListJobsRequest {
            array: Some(a),
            limit: 1000,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .jobs;
    assert_eq!(tasks.len(), 300);
    assert!(
        tasks
            .iter()
            .enumerate()
            .all(|(k, t)| t.id == a + 1 + k as u64
                && t.array_index == Some(k as u32)
                && t.state() == JobState::Completed)
    );

    // Cancelling: task 3 before its release, then the whole array with task 0 running.
    let mut spec = sh_job(1, 60, "sleep 30");
    spec.array = Some("0-9%1".into());
    let b = submit_all(&mut c, vec![spec]).await[0];
    let pending = get_job(&mut c, b + 4).await;
    assert_eq!(pending.state(), JobState::Accepted);
    assert_eq!(pending.array_index, Some(3));
    assert_eq!(
        pending.reason,
        format!("waits in array {b}: 1 of its tasks out, its limit (%1)")
    );
    let cancelled = c
        .cancel_job(v1::CancelJobRequest {
            job_id: b + 4,
            reason: "not this one".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .job
        .unwrap();
    assert_eq!(cancelled.state(), JobState::Cancelled);
    while get_job(&mut c, b + 1).await.state() != JobState::Running {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    c.cancel_job(v1::CancelJobRequest {
        job_id: b,
        reason: String::new(),
    })
    .await
    .unwrap();
    let ended = wait_ended(&mut c, &[b], Duration::from_secs(20)).await;
    let array = ended.iter().find(|j| j.id == b).unwrap();
    assert_eq!(array.state(), JobState::Cancelled, "{array:?}");
    assert_eq!(
        array.reason,
        "10 tasks: 0 completed, 0 failed, 2 cancelled, 8 never released"
    );
    assert_eq!(get_job(&mut c, b + 1).await.state(), JobState::Cancelled);
    // A task never released never existed.
    let never = c
        .get_job(v1::GetJobRequest { job_id: b + 2 })
        .await
        .unwrap_err();
    assert_eq!(never.code(), Code::NotFound);
}

/// A job whose dependency is met with a delay still running when the meta-scheduler is killed
/// -9 is dispatched after the restart once its delay ends (the restore's retry is scheduled, not
/// lost).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delayed_dependency_goes_on_after_a_restart() {
    use gridsched_tests::live::{get_job, sh_job};
    let sites = vec![SiteSpec::new("alpha", "easy", 1, 4)];
    let mut g = LiveGrid::start(bins(), sites, "");
    g.ready().await;
    let addr = g.meta_addr.clone();
    let mut c = g.client().await;
    let a = submit_all(&mut c, vec![sh_job(1, 60, "true")]).await[0];
    wait_ended(&mut c, &[a], Duration::from_secs(20)).await;
    let mut spec = sh_job(1, 60, "true");
    spec.after = Some(format!("afterany:{a}+4"));
    let b = submit_all(&mut c, vec![spec]).await[0];
    let j = get_job(&mut c, b).await;
    assert!(
        j.state() == JobState::Accepted
            && j.reason
                .starts_with("dependency met; dispatched when its delay ends"),
        "{j:?}"
    );
    g.kill_meta();
    g.start_meta(Some(&addr));
    let mut c = g.client().await;
    let ended = wait_ended(&mut c, &[b], Duration::from_secs(30)).await;
    let j = ended.iter().find(|j| j.id == b).unwrap();
    assert_eq!(j.state(), JobState::Completed, "{j:?}");
}

/// A workflow of 30 nodes over both sites (a fan-out of 24 between a start and a merge), with a
/// node that fails once and is retried and one that fails for good (its exit code is not
/// retried), through a kill -9 of the meta-scheduler: it ends FAILED with its rescue, each node
/// having run once (the retried one twice); resumed after the fix, only the failed node and the
/// one after it run, and the workflow completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_retries_fails_with_its_rescue_and_resumes_through_a_kill_9() {
    use gridsched_tests::live::{get_job, sh_job};
    use v1::WorkflowNodeState as N;
    let mut g = LiveGrid::start(bins(), two_sites(), "");
    g.ready().await;
    let addr = g.meta_addr.clone();
    let mut c = g.client().await;
    let log = g.path("runs");
    let (flaky_mark, fixed) = (g.path("flaky-failed-once"), g.path("fixed"));
    let record = format!(
        "echo \"$GRIDSCHED_WORKFLOW_ID $GRIDSCHED_WORKFLOW_NODE $GRIDSCHED_WORKFLOW_RUN\" >> {}",
        log.display()
    );
    let node = |name: &str, parents: &[&str], script: &str| v1::WorkflowNode {
        name: name.into(),
        parents: parents.iter().map(|p| p.to_string()).collect(),
        job: Some(sh_job(1, 60, &format!("{record}; {script}"))),
        ..Default::default()
    };
    let mut nodes = vec![node("start", &[], "sleep 0.2")];
    let work: Vec<String> = (0..24).map(|i| format!("work-{i}")).collect();
    for w in &work {
        nodes.push(node(w, &["start"], "sleep 0.3"));
    }
    let all: Vec<&str> = work.iter().map(String::as_str).collect();
    nodes.push(node("merge", &all, "true"));
    let mut flaky = node(
        "flaky",
        &["merge"],
        &format!(
            "test -e {m} || {{ touch {m}; exit 1; }}",
            m = flaky_mark.display()
        ),
    );
    flaky.retries = 2;
    nodes.push(flaky);
    let mut broken = node(
        "broken",
        &["merge"],
        &format!("test -e {} || exit 3", fixed.display()),
    );
    broken.retries = 1;
    broken.retry_unless_exit = Some(3);
    nodes.push(broken);
    nodes.push(node("after-broken", &["broken"], "true"));
    nodes.push(node("report", &["flaky"], "true"));
    assert_eq!(nodes.len(), 30);
    let spec = v1::JobSpec {
        user: "u".into(),
        name: Some("fan".into()),
        workflow: Some(v1::Workflow {
            nodes: nodes.clone(),
            resume: None,
        }),
        ..Default::default()
    };
    let w = submit_all(&mut c, vec![spec.clone()]).await[0];
    // A cycle is refused naming it.
    let mut cyclic = spec.clone();
    cyclic.workflow.as_mut().unwrap().nodes[0].parents = vec!["report".into()];
    let e = c
        .submit(v1::SubmitRequest { spec: Some(cyclic) })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(
        e.message()
            .contains("the workflow has a cycle: start → work-0 → merge → flaky → report → start"),
        "{}",
        e.message()
    );
    // A node no site can run refuses the whole at the door, naming the node.
    let mut wide = spec.clone();
    wide.workflow.as_mut().unwrap().nodes[2]
        .job
        .as_mut()
        .unwrap()
        .processors = 64;
    let e = c
        .submit(v1::SubmitRequest { spec: Some(wide) })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(
        e.message()
            .starts_with("field `workflow.nodes[2].job.processors`: node `work-1`: 64 processors"),
        "{}",
        e.message()
    );
    // Explained while it runs: its nodes by state, those waiting with what they wait for.
    let x = c
        .explain(v1::ExplainRequest { job_id: w })
        .await
        .unwrap()
        .into_inner();
    assert!(
        x.text.starts_with(&format!("workflow {w} is ")),
        "{}",
        x.text
    );
    assert!(x.text.contains("(`fan`); 30 nodes: "), "{}", x.text);
    let merge = x
        .blockers
        .iter()
        .find(|b| b.resource.as_deref() == Some("merge"));
    let merge = merge.expect("merge waits");
    assert_eq!(merge.kind(), v1::BlockerKind::Workflow);
    assert!(
        merge.detail.starts_with("node `merge` waits for `work-"),
        "{merge:?}"
    );
    let mut killed = false;
    let done = loop {
        let j = get_job(&mut c, w).await;
        let p = j.workflow.clone().expect("a workflow's progress");
        assert_eq!(p.nodes.len(), 30);
        if j.state().is_terminal() {
            break j;
        }
        let completed = p.nodes.iter().filter(|n| n.state() == N::Completed).count();
        if !killed && completed >= 8 {
            g.kill_meta();
            g.start_meta(Some(&addr));
            c = g.client().await;
            killed = true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(killed);
    assert_eq!(done.state(), JobState::Failed, "{done:?}");
    assert_eq!(
        done.reason,
        "28 of 30 nodes completed; failed: `broken` (exit 3); 1 node(s) never ran"
    );
    let p = done.workflow.clone().unwrap();
    let by_name = |name: &str| p.nodes.iter().find(|n| n.name == name).unwrap().clone();
    assert_eq!(
        (by_name("flaky").state(), by_name("flaky").run),
        (N::Completed, 2)
    );
    assert_eq!(
        (by_name("broken").state(), by_name("broken").exit_code),
        (N::Failed, Some(3))
    );
    assert_eq!(by_name("after-broken").state(), N::Never);
    let sites: std::collections::BTreeSet<String> =
        p.nodes.iter().filter_map(|n| n.site.clone()).collect();
    assert_eq!(sites.len(), 2, "over both sites: {sites:?}");
    // Every node ran once (flaky twice), none after a failed parent.
    let runs = |w: u64| -> Vec<String> {
        let text = std::fs::read_to_string(&log).unwrap();
        let mut v: Vec<String> = text
            .lines()
            .filter(|l| l.starts_with(&format!("{w} ")))
            .map(|l| l.split_once(' ').unwrap().1.to_string())
            .collect();
        v.sort();
        v
    };
    let mut expected: Vec<String> = nodes
        .iter()
        .filter(|n| n.name != "after-broken")
        .map(|n| format!("{} 1", n.name))
        .chain(["flaky 2".to_string()])
        .collect();
    expected.sort();
    assert_eq!(runs(w), expected);

    // Fixed, resumed: only `broken` and the node after it run.
    std::fs::write(&fixed, "").unwrap();
    let mut again = spec.clone();
    again.workflow.as_mut().unwrap().resume = Some(w);
    let w2 = submit_all(&mut c, vec![again]).await[0];
    let ended = wait_ended(&mut c, &[w2], Duration::from_secs(60)).await;
    let j = ended.iter().find(|j| j.id == w2).unwrap();
    assert_eq!(j.state(), JobState::Completed, "{j:?}");
    assert_eq!(j.reason, "all 30 nodes completed");
    let p = j.workflow.clone().unwrap();
    let before = p
        .nodes
        .iter()
        .filter(|n| n.state() == N::DoneBefore)
        .count();
    assert_eq!(before, 28);
    assert_eq!(runs(w2), ["after-broken 1", "broken 1"]);
    // Resuming a completed workflow is refused.
    let mut twice = spec;
    twice.workflow.as_mut().unwrap().resume = Some(w2);
    let e = c
        .submit(v1::SubmitRequest { spec: Some(twice) })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");

    // Cancelled while its nodes run: they are cancelled, nothing more starts.
    let slow = v1::JobSpec {
        user: "u".into(),
        workflow: Some(v1::Workflow {
            nodes: vec![
                node("one", &[], "sleep 30"),
                node("two", &[], "sleep 30"),
                node("three", &["one"], "true"),
            ],
            resume: None,
        }),
        ..Default::default()
    };
    let w3 = submit_all(&mut c, vec![slow]).await[0];
    loop {
        let p = get_job(&mut c, w3).await.workflow.unwrap();
        if p.nodes.iter().filter(|n| n.state() == N::Running).count() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    c.cancel_job(v1::CancelJobRequest {
        job_id: w3,
        reason: "enough".into(),
    })
    .await
    .unwrap();
    let ended = wait_ended(&mut c, &[w3], Duration::from_secs(20)).await;
    let j = ended.iter().find(|j| j.id == w3).unwrap();
    assert_eq!(j.state(), JobState::Cancelled, "{j:?}");
    let states: Vec<N> = j
        .workflow
        .clone()
        .unwrap()
        .nodes
        .iter()
        .map(|n| n.state())
        .collect();
    assert_eq!(states, [N::Cancelled, N::Cancelled, N::Never]);
    assert_eq!(j.reason, "0 of 3 nodes completed; cancelled");
}

/// `aftercorr`: each task of an array waits for the task of the same index of the array it
/// follows; the one whose counterpart failed never runs, the others start after theirs ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aftercorr_follows_an_array_task_by_task() {
    use gridsched_tests::live::{get_job, sh_job};
    let g = LiveGrid::start(bins(), two_sites(), "");
    g.ready().await;
    let mut c = g.client().await;
    let mut first = sh_job(1, 60, "sleep 0.3; test \"$GRIDSCHED_ARRAY_INDEX\" != 2");
    first.array = Some("0-3".into());
    let a = submit_all(&mut c, vec![first]).await[0];
    let mut second = sh_job(1, 60, "true");
    second.array = Some("0-3".into());
    second.after = Some(format!("aftercorr:{a}"));
    let b = submit_all(&mut c, vec![second]).await[0];
    let ended = wait_ended(&mut c, &[a, b], Duration::from_secs(30)).await;
    let state = |id: u64| ended.iter().find(|j| j.id == id).unwrap().state();
    assert_eq!(
        (state(a), state(b)),
        (JobState::Failed, JobState::Cancelled)
    );
    for k in 0..4u64 {
        let (ta, tb) = (
            get_job(&mut c, a + 1 + k).await,
            get_job(&mut c, b + 1 + k).await,
        );
        if k == 2 {
            assert_eq!(tb.state(), JobState::Cancelled, "{tb:?}");
            assert_eq!(
                tb.reason,
                format!(
                    "dependency never satisfied: job {} failed (aftercorr)",
                    a + 3
                )
            );
            assert_eq!(tb.start_time, None);
        } else {
            assert_eq!(tb.state(), JobState::Completed, "{tb:?}");
            assert!(tb.start_time >= ta.end_time, "{ta:?} {tb:?}");
        }
    }
    // Refused at the door: a job that is not an array.
    let mut lone = sh_job(1, 60, "true");
    lone.after = Some(format!("aftercorr:{a}"));
    let e = c
        .submit(v1::SubmitRequest { spec: Some(lone) })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert_eq!(
        e.message(),
        "field `after`: `aftercorr` is for an array: this job is not one"
    );
}

/// A client generated from the protos as they were before dependencies, arrays and workflows
/// (Python, grpcio) still submits, follows, reads and lists jobs, the records of an array, its
/// task, a workflow and its node among them. Needs the Python of `GRIDSCHED_TEST_PYTHON` with
/// grpcio-tools (`scripts/python.sh` makes one; `.ci/run` sets it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_of_the_protos_before_arrays_and_workflows_still_works() {
    use gridsched_tests::live::sh_job;
    let Some(python) = std::env::var_os("GRIDSCHED_TEST_PYTHON") else {
        gridsched_tests::skip(
            "old-proto client: GRIDSCHED_TEST_PYTHON is not set (scripts/python.sh makes one)",
        );
        return;
    };
    let g = LiveGrid::start(bins(), two_sites(), "");
    g.ready().await;
    let mut c = g.client().await;
    let mut array = sh_job(1, 60, "true");
    array.array = Some("0-1".into());
    let a = submit_all(&mut c, vec![array]).await[0];
    let flow = v1::JobSpec {
        user: "u".into(),
        workflow: Some(v1::Workflow {
            nodes: vec![v1::WorkflowNode {
                name: "only".into(),
                job: Some(sh_job(1, 60, "true")),
                ..Default::default()
            }],
            resume: None,
        }),
        ..Default::default()
    };
    let w = submit_all(&mut c, vec![flow]).await[0];
    wait_ended(&mut c, &[a, w], Duration::from_secs(30)).await;
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let out = g.path("old-client");
    std::fs::create_dir_all(&out).unwrap();
    let run = tokio::process::Command::new(python)
        .arg(fixtures.join("old_client.py"))
        .arg(&g.meta_addr)
        .arg(fixtures.join("proto-before-dependencies"))
        .arg(&out)
        .args([a, a + 1, w, w + 1].map(|i| i.to_string()))
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "old client failed: {stderr}");
    let said: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(said["state"], "JOB_STATE_COMPLETED", "{said}");
    let completed = serde_json::json!("JOB_STATE_COMPLETED");
    for id in [a, a + 1, w, w + 1] {
        assert_eq!(said["read"][id.to_string()], completed, "job {id}: {said}");
    }
    let listed: Vec<u64> = serde_json::from_value(said["listed"].clone()).unwrap();
    let new = said["submitted"].as_u64().unwrap();
    for id in [a, w, w + 1, new] {
        assert!(listed.contains(&id), "{id} not listed: {said}");
    }
}

/// What `Output` streams for `job` (`stderr` or standard output).
async fn output_of(
    c: &mut gridsched_tests::live::Client,
    job: u64,
    stderr: bool,
    follow: bool,
) -> Result<Vec<u8>, tonic::Status> {
    let stream = match stderr {
        true => v1::OutputStream::Stderr,
        false => v1::OutputStream::Stdout,
    };
    let req = v1::OutputRequest {
        job_id: job,
        stream: stream as i32,
        follow,
        ..Default::default()
    };
    gridsched_tests::live::read_output(c, req).await
}

/// What a job wrote comes back through the meta-scheduler from the site that ran it: standard
/// output and error of an ended job (several chunks, byte for byte as on the agent's disk), an
/// array task's by its `ID_INDEX`, and a running job's followed until it has ended; an array has
/// no output of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_output_comes_back_through_the_grid_and_can_be_followed() {
    use gridsched_tests::live::sh_job;
    let g = LiveGrid::start(bins(), two_sites(), "");
    g.ready().await;
    let mut c = g.client().await;
    // 300,000 bytes of output (5 chunks) and a line on standard error, on both sites.
    let big = "head -c 225000 /dev/urandom | base64; echo oops >&2";
    let ids = submit_all(
        &mut c,
        vec![
            sh_job(1, 60, big),
            sh_job(8, 60, big),
            sh_job(1, 60, "true"),
        ],
    )
    .await;
    let jobs = wait_ended(&mut c, &ids, Duration::from_secs(60)).await;
    for j in &jobs[..2] {
        assert_eq!(j.state(), JobState::Completed, "{j:?}");
        let out = output_of(&mut c, j.id, false, false).await.unwrap();
        let on_disk = stdout_of(&g, j.machine.as_deref().unwrap(), j.id);
        assert!(out.len() > 300_000, "{} bytes", out.len());
        assert_eq!(out, on_disk.as_bytes(), "job {} at {:?}", j.id, j.site);
        assert_eq!(
            output_of(&mut c, j.id, true, false).await.unwrap(),
            b"oops\n"
        );
    }
    assert_ne!(jobs[0].site, jobs[1].site, "8 processors fit only beta");
    // A job that wrote nothing has an empty output.
    assert!(
        output_of(&mut c, ids[2], false, false)
            .await
            .unwrap()
            .is_empty()
    );

    // An array's tasks, each by its own id; the array itself has none.
    let mut spec = sh_job(1, 60, "echo task $GRIDSCHED_ARRAY_INDEX");
    spec.array = Some("0-2".into());
    let a = c
        .submit(v1::SubmitRequest { spec: Some(spec) })
        .await
        .unwrap()
        .into_inner()
        .job_id;
    let tasks: Vec<u64> = (1..=3).map(|k| a + k).collect();
    let t0 = std::time::Instant::now();
    while !gridsched_tests::live::get_job(&mut c, a)
        .await
        .state()
        .is_terminal()
    {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the array did not end"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for (k, t) in tasks.iter().enumerate() {
        let out = output_of(&mut c, *t, false, false).await.unwrap();
        assert_eq!(String::from_utf8_lossy(&out), format!("task {k}\n"));
    }
    let e = output_of(&mut c, a, false, false).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert!(e.message().contains("is an array of 3 tasks"), "{e:?}");

    // Followed from its submission: every line, and the stream ends once the job has.
    let id = submit_all(
        &mut c,
        vec![sh_job(
            1,
            60,
            "for i in 1 2 3 4; do echo line-$i; sleep 0.4; done",
        )],
    )
    .await[0];
    let t0 = std::time::Instant::now();
    let out = output_of(&mut c, id, false, true).await.unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out),
        "line-1\nline-2\nline-3\nline-4\n"
    );
    assert!(
        t0.elapsed() >= Duration::from_millis(1200),
        "{:?}",
        t0.elapsed()
    );
    let j = gridsched_tests::live::get_job(&mut c, id).await;
    assert_eq!(
        j.state(),
        JobState::Completed,
        "the stream ended with the job: {j:?}"
    );
    let e = output_of(&mut c, 999_999, false, false).await.unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "{e:?}");

    // Declared output files: kept at the site, listed and read back byte for byte.
    let mut spec = sh_job(
        8,
        60,
        "mkdir -p res; head -c 100000 /dev/urandom > res/a.bin; echo 1,2 > res/b.csv; \
         echo not declared > log.txt",
    );
    spec.outputs = vec!["res/*.bin".into(), "res/*.csv".into()];
    let id = submit_all(&mut c, vec![spec]).await[0];
    let j = &wait_ended(&mut c, &[id], Duration::from_secs(60)).await;
    let j = j.iter().find(|j| j.id == id).unwrap();
    assert_eq!(j.state(), JobState::Completed, "{j:?}");
    let files = c
        .list_output_files(v1::ListOutputFilesRequest {
            job_id: id,
            fragment: None,
        })
        .await
        .unwrap()
        .into_inner()
        .files;
    let listed: Vec<(&str, u64)> = files.iter().map(|f| (f.name.as_str(), f.size)).collect();
    assert_eq!(listed, [("res/a.bin", 100_000), ("res/b.csv", 4)]);
    let on_disk = g
        .work_dir(j.machine.as_deref().unwrap())
        .join(id.to_string());
    let req = v1::OutputRequest {
        job_id: id,
        file: "res/a.bin".into(),
        ..Default::default()
    };
    let got = gridsched_tests::live::read_output(&mut c, req)
        .await
        .unwrap();
    assert_eq!(got, std::fs::read(on_disk.join("res/a.bin")).unwrap());
    // The dashboard: the job's page lists the files; the whole of a stream is a link away.
    let page = gridsched_tests::live::http_get(&g.metrics[0], &format!("/job/{id}"), "");
    assert!(
        page.contains(&format!(
            "<a href=\"/job/{id}/files/res/b.csv\">res/b.csv</a>"
        )),
        "{page}"
    );
    let first = jobs[0].id;
    let page = gridsched_tests::live::http_get(&g.metrics[0], &format!("/job/{first}"), "");
    assert!(page.contains("<h2 id=\"output\">Output</h2>"), "{page}");
    assert!(page.contains("oops\n</pre>"), "{page}");
    let whole = gridsched_tests::live::http_get(&g.metrics[0], &format!("/job/{first}/stdout"), "");
    assert!(whole.ends_with(&stdout_of(&g, jobs[0].machine.as_deref().unwrap(), first)));
    let e = c
        .output(v1::OutputRequest {
            job_id: id,
            file: "../../etc/passwd".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    let mut bad = sh_job(1, 60, "true");
    bad.outputs = vec!["../x".into()];
    let e = c
        .submit(v1::SubmitRequest { spec: Some(bad) })
        .await
        .unwrap_err();
    assert!(e.message().starts_with("field `outputs[0]`"), "{e:?}");
}

/// A site keeps a job's output for `output_retention_s` after it was last written; then asking
/// for it says that retention removed it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_output_is_removed_by_the_sites_retention_and_says_so() {
    use gridsched_tests::live::sh_job;
    let mut site = SiteSpec::new("alpha", "easy", 1, 4);
    site.local_extra = "output_retention_s = 2".into();
    let g = LiveGrid::start(bins(), vec![site], "");
    g.ready().await;
    let mut c = g.client().await;
    let id = submit_all(&mut c, vec![sh_job(1, 60, "echo kept")]).await[0];
    wait_ended(&mut c, &[id], Duration::from_secs(30)).await;
    assert_eq!(
        output_of(&mut c, id, false, false).await.unwrap(),
        b"kept\n"
    );
    let t0 = std::time::Instant::now();
    let e = loop {
        match output_of(&mut c, id, false, false).await {
            Ok(_) => {
                assert!(t0.elapsed() < Duration::from_secs(10), "never removed");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => break e,
        }
    };
    assert_eq!(e.code(), Code::NotFound, "{e:?}");
    assert_eq!(
        e.message(),
        format!(
            "site alpha: job {id}'s output was removed by the site's retention \
             (kept 2 s after it was last written)"
        )
    );
    assert!(t0.elapsed() >= Duration::from_secs(1), "{:?}", t0.elapsed());
}

/// Jobs `ids`, in that order, once they have all ended (within a minute).
async fn ended(c: &mut gridsched_tests::live::Client, ids: &[u64]) -> Vec<v1::Job> {
    let all = wait_ended(c, ids, Duration::from_secs(60)).await;
    ids.iter()
        .map(|id| all.iter().find(|j| j.id == *id).unwrap().clone())
        .collect()
}

/// The value of counter `name{site="SITE"}` in a Prometheus text (0 when absent).
fn site_counter(text: &str, name: &str, site: &str) -> u64 {
    let key = format!("{name}_total{{site=\"{site}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&key))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map_or(0, |v| v as u64)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_inputs_are_staged_at_its_site_and_moved_once_per_site() {
    use gridsched_tests::live::{HttpFiles, sh_job, upload};
    // 100 MB, read by a thousand array tasks below.
    let data: Vec<u8> = (0..100_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let remote = b"fetched over http\n".repeat(1000);
    let slow = vec![b'z'; 640 * 1024];
    let http = HttpFiles::serve(vec![
        ("remote.txt", remote.clone(), Duration::ZERO),
        // Ten pieces 300 ms apart: three seconds to watch a transfer under way.
        ("slow.bin", slow, Duration::from_millis(300)),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let digest = |b: &[u8]| {
        let p = dir.path().join("d");
        std::fs::write(&p, b).unwrap();
        gridsched_proto::blobs::digest_file(&p).unwrap()
    };
    let g = LiveGrid::start(bins(), two_sites(), "");
    g.ready().await;
    let mut c = g.client().await;
    let sha = upload(&mut c, "data.bin", &data).await.unwrap();
    assert_eq!(sha, digest(&data));
    let input = |name: &str, sha: &str, url: &str| v1::StagedInput {
        name: name.into(),
        sha256: sha.into(),
        url: url.into(),
        size: 0,
        site: String::new(),
    };

    // An upload and a URL at beta (8 processors fit only there), the upload under a directory.
    let mut job = sh_job(
        8,
        60,
        "sha256sum in/data.bin remote.txt > sums && cat remote.txt | head -1",
    );
    job.stage_in = vec![
        input("in/data.bin", &sha, ""),
        input("remote.txt", "", &http.url("remote.txt")),
    ];
    job.outputs = vec!["sums".into()];
    let id = submit_all(&mut c, vec![job.clone()]).await[0];
    let j = &ended(&mut c, &[id]).await[0];
    assert_eq!(j.state(), JobState::Completed, "{j:?}");
    assert_eq!(j.site.as_deref(), Some("beta"));
    assert_eq!(
        output_of(&mut c, id, false, false).await.unwrap(),
        b"fetched over http\n"
    );
    let sums = gridsched_tests::live::read_output(
        &mut c,
        v1::OutputRequest {
            job_id: id,
            file: "sums".into(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let want = format!(
        "{}  in/data.bin\n{}  remote.txt\n",
        digest(&data),
        digest(&remote)
    );
    assert_eq!(
        String::from_utf8_lossy(&sums),
        want,
        "byte-identical inputs"
    );

    // A thousand array tasks reading both, on both sites: each content crosses to a site once.
    let mut tasks = sh_job(1, 60, "test -s data.bin && test -s remote.txt");
    tasks.array = Some("0-999".into());
    tasks.stage_in = vec![
        input("data.bin", &sha, ""),
        input("remote.txt", "", &http.url("remote.txt")),
    ];
    let a = submit_all(&mut c, vec![tasks]).await[0];
    let ids: Vec<u64> = (1..=1000).map(|k| a + k).collect();
    let t0 = std::time::Instant::now();
    let tasks_ended = loop {
        let array = gridsched_tests::live::get_job(&mut c, a).await;
        if array.state().is_terminal() {
            let mut jobs = Vec::new();
            for id in &ids {
                jobs.push(gridsched_tests::live::get_job(&mut c, *id).await);
            }
            break jobs;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(240),
            "the array did not end: {:?}",
            array.array
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let mut sites: Vec<&str> = tasks_ended
        .iter()
        .filter_map(|j| j.site.as_deref())
        .collect();
    for j in &tasks_ended {
        assert_eq!(j.state(), JobState::Completed, "{j:?}");
    }
    sites.push("beta");
    sites.sort();
    sites.dedup();
    let meta = scrape(&g.metrics[0]);
    for s in ["alpha", "beta"] {
        let used = sites.contains(&s) as u64;
        assert_eq!(
            site_counter(&meta, "gridsched_meta_input_pushes", s),
            used,
            "uploads pushed to {s}:\n{meta}"
        );
        assert_eq!(
            site_counter(&meta, "gridsched_meta_input_push_bytes", s),
            used * data.len() as u64
        );
    }
    assert_eq!(
        http.gets("remote.txt"),
        sites.len() as u64,
        "one fetch per site ({sites:?})"
    );

    // A transfer under way is explained; the job starts once it is in place.
    let mut slow = sh_job(1, 60, "wc -c < slow.bin");
    slow.stage_in = vec![input("slow.bin", "", &http.url("slow.bin"))];
    let id = submit_all(&mut c, vec![slow]).await[0];
    let t0 = std::time::Instant::now();
    let seen =
        loop {
            let e = c
                .explain(v1::ExplainRequest { job_id: id })
                .await
                .unwrap()
                .into_inner();
            // Its size is known once the server's answer has begun.
            if let Some(b) = e.blockers.iter().find(|b| {
                b.kind() == v1::BlockerKind::Staging && b.detail.contains(" of 655.4 kB)")
            }) {
                break b.detail.clone();
            }
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "never seen staging: {e:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
    assert!(seen.starts_with("staging 0 of 1 inputs at "), "{seen}");
    let j = &ended(&mut c, &[id]).await[0];
    assert_eq!(j.state(), JobState::Completed, "{j:?}");
    assert_eq!(
        output_of(&mut c, id, false, false).await.unwrap(),
        b"655360\n"
    );

    // A missing URL and a content that is not the one named end the job FAILED, saying so.
    let mut missing = sh_job(1, 60, "true");
    missing.stage_in = vec![input("x", "", &http.url("nowhere.txt"))];
    let mut wrong = sh_job(1, 60, "true");
    wrong.stage_in = vec![input("r", &"0".repeat(64), &http.url("remote.txt"))];
    let ids = submit_all(&mut c, vec![missing, wrong]).await;
    let jobs = ended(&mut c, &ids).await;
    assert_eq!(jobs[0].state(), JobState::Failed, "{:?}", jobs[0]);
    assert!(
        jobs[0].reason.contains(&http.url("nowhere.txt")) && jobs[0].reason.contains("404"),
        "{}",
        jobs[0].reason
    );
    assert_eq!(jobs[1].state(), JobState::Failed, "{:?}", jobs[1]);
    assert!(jobs[1].reason.contains("not used"), "{}", jobs[1].reason);

    // An upload nobody made is refused at the door, naming the field.
    let mut unknown = sh_job(1, 60, "true");
    unknown.stage_in = vec![input("a", &"ab".repeat(32), "")];
    let e = c
        .submit(v1::SubmitRequest {
            spec: Some(unknown),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert!(e.message().contains("stage_in[0].sha256"), "{e:?}");
}

/// Waits until `explain` of job `id` shows it staging with `needle` in the detail; the detail.
async fn staging_seen(c: &mut gridsched_tests::live::Client, id: u64, needle: &str) -> String {
    let t0 = std::time::Instant::now();
    loop {
        if let Ok(e) = c.explain(v1::ExplainRequest { job_id: id }).await {
            let e = e.into_inner();
            if let Some(b) = e
                .blockers
                .iter()
                .find(|b| b.kind() == v1::BlockerKind::Staging && b.detail.contains(needle))
            {
                return b.detail.clone();
            }
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "job {id} never seen staging with `{needle}`: {e:?}"
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_a_service_during_a_transfer_loses_nothing_and_never_uses_a_partial_input() {
    use gridsched_tests::live::{HttpFiles, sh_job, upload};
    let slow = vec![b'z'; 640 * 1024];
    let http = HttpFiles::serve(vec![("slow.bin", slow, Duration::from_millis(300))]).await;
    // One machine per site, so that the agent to kill is known; beta's agents read slowly and
    // its lost agent's jobs are queued again.
    let mut a = SiteSpec::new("alpha", "easy", 1, 4);
    a.licences = vec![("matlab".into(), 1)];
    let mut b = SiteSpec::new("beta", "fb-mod", 1, 8);
    b.local_extra = "lost_agent = \"requeue\"\nfaults = { read_blob_pause_ms = 150 }".into();
    let mut g = LiveGrid::start(bins(), vec![a, b], "[faults]\npush_pause_ms = 150\n");
    g.ready().await;
    let addr = g.meta_addr.clone();
    let mut c = g.client().await;
    let data: Vec<u8> = (0..12_000_000u32).map(|i| (i * 13 % 253) as u8).collect();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("d"), &data).unwrap();
    let want = gridsched_proto::blobs::digest_file(&dir.path().join("d")).unwrap();
    let sha = upload(&mut c, "data.bin", &data).await.unwrap();
    let input = |name: &str, sha: &str, url: &str| v1::StagedInput {
        name: name.into(),
        sha256: sha.into(),
        url: url.into(),
        size: 0,
        site: String::new(),
    };

    // The meta-scheduler killed while it pushes the upload to beta (12 chunks, 150 ms apart):
    // restarted, it pushes the rest from where beta's copy ends.
    let mut job = sh_job(8, 60, "sha256sum < data.bin");
    job.stage_in = vec![input("data.bin", &sha, "")];
    let id = submit_all(&mut c, vec![job.clone()]).await[0];
    let seen = staging_seen(&mut c, id, "MB of 12.0 MB)").await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    g.kill_meta();
    g.start_meta(Some(&addr));
    let mut c = g.client().await;
    let j = &ended(&mut c, &[id]).await[0];
    assert_eq!(j.state(), JobState::Completed, "{j:?} (seen: {seen})");
    let out = output_of(&mut c, id, false, false).await.unwrap();
    assert_eq!(String::from_utf8_lossy(&out), format!("{want}  -\n"));
    let pushed = site_counter(
        &scrape(&g.metrics[0]),
        "gridsched_meta_input_push_bytes",
        "beta",
    );
    assert!(
        pushed > 0 && pushed < data.len() as u64,
        "after the restart only the rest is pushed: {pushed} bytes"
    );

    // Beta's agent killed while it reads the input of a second job (its machine's cache was
    // emptied first): the job is queued again, and runs once a new agent has read it whole.
    std::fs::remove_dir_all(g.work_dir("beta-m1").join(".cache").join(&sha[..2])).unwrap();
    let id = submit_all(&mut c, vec![job]).await[0];
    let t0 = std::time::Instant::now();
    let part = loop {
        let tmp = g.work_dir("beta-m1").join(".cache/tmp");
        let partial = std::fs::read_dir(&tmp)
            .into_iter()
            .flatten()
            .flatten()
            .find(|e| e.metadata().is_ok_and(|m| m.len() > 0));
        if let Some(p) = partial {
            break p.path();
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "no read under way");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let k = g
        .agents
        .iter()
        .position(|(_, m, _)| m == "beta-m1")
        .unwrap();
    let (_, _, mut p) = g.agents.remove(k);
    p.0.kill().unwrap();
    p.0.wait().unwrap();
    assert!(
        std::fs::metadata(&part).unwrap().len() < data.len() as u64,
        "killed mid-read"
    );
    let p = g.agent(1, "beta-m1", 8);
    g.agents.push((1, "beta-m1".into(), p));
    let j = &ended(&mut c, &[id]).await[0];
    assert_eq!(j.state(), JobState::Completed, "{j:?}");
    let out = output_of(&mut c, id, false, false).await.unwrap();
    assert_eq!(String::from_utf8_lossy(&out), format!("{want}  -\n"));

    // Alpha's local scheduler killed while it fetches a URL: restarted, it fetches again.
    let mut job = sh_job(1, 60, "wc -c < slow.bin");
    job.licences = vec!["matlab".into()];
    job.stage_in = vec![input("slow.bin", "", &http.url("slow.bin"))];
    let id = submit_all(&mut c, vec![job]).await[0];
    staging_seen(&mut c, id, "kB of 655.4 kB)").await;
    g.kill_local(0);
    g.restart_local(0);
    let j = &ended(&mut c, &[id]).await[0];
    assert_eq!(j.state(), JobState::Completed, "{j:?}");
    assert_eq!(
        output_of(&mut c, id, false, false).await.unwrap(),
        b"655360\n"
    );
    assert_eq!(http.gets("slow.bin"), 2, "fetched again after the restart");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_nodes_outputs_reach_its_children_site_to_site() {
    use gridsched_tests::live::{get_job, sh_job};
    let g = LiveGrid::start(bins(), two_sites(), "");
    g.ready().await;
    let mut c = g.client().await;
    let node = |name: &str, parents: &[&str], job: v1::JobSpec| v1::WorkflowNode {
        name: name.into(),
        parents: parents.iter().map(|p| p.to_string()).collect(),
        job: Some(job),
        ..Default::default()
    };
    // `prep` needs matlab, which only alpha has; `far` needs 8 processors, which only beta has;
    // `near` needs matlab too.
    let mut prep = sh_job(
        1,
        60,
        "mkdir -p out && head -c 3000000 /dev/urandom > out/big.bin && echo hello > note.txt \
         && sha256sum out/big.bin > sum && echo not declared > other.txt",
    );
    prep.licences = vec!["matlab".into()];
    prep.outputs = vec!["note.txt".into(), "out/*.bin".into(), "sum".into()];
    let far = sh_job(8, 60, "cd prep && sha256sum -c sum && cat note.txt && ls");
    let mut near = sh_job(1, 60, "cat prep/note.txt");
    near.licences = vec!["matlab".into()];
    let spec = v1::JobSpec {
        user: "u".into(),
        workflow: Some(v1::Workflow {
            nodes: vec![
                node("prep", &[], prep),
                node("far", &["prep"], far),
                node("near", &["prep"], near),
            ],
            resume: None,
        }),
        ..Default::default()
    };
    let w = submit_all(&mut c, vec![spec]).await[0];
    let (p, f, n) = (w + 1, w + 2, w + 3);
    let jobs = ended(&mut c, &[p, f, n]).await;
    for j in &jobs {
        assert_eq!(j.state(), JobState::Completed, "{j:?}");
    }
    let sites: Vec<&str> = jobs.iter().filter_map(|j| j.site.as_deref()).collect();
    assert_eq!(sites, ["alpha", "beta", "alpha"]);
    // The parent's record lists what its site kept, with digests.
    let kept: Vec<(&str, u64)> = (jobs[0].outputs.iter())
        .map(|o| (o.name.as_str(), o.size))
        .collect();
    assert_eq!(
        kept,
        [("note.txt", 6), ("out/big.bin", 3_000_000), ("sum", 78)]
    );
    assert_eq!(
        jobs[0].outputs[0].sha256,
        "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03",
        "sha256 of `hello\\n`"
    );
    // Each child read them under the parent's name, byte-identical (checked by sha256sum).
    assert_eq!(
        String::from_utf8_lossy(&output_of(&mut c, f, false, false).await.unwrap()),
        "out/big.bin: OK\nhello\nnote.txt\nout\nsum\n"
    );
    assert_eq!(
        output_of(&mut c, n, false, false).await.unwrap(),
        b"hello\n"
    );
    // Inputs staged say so on the child's record.
    let far_spec = get_job(&mut c, f).await.spec.unwrap();
    let names: Vec<(&str, &str)> = (far_spec.stage_in.iter())
        .map(|s| (s.name.as_str(), s.site.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("prep/note.txt", "alpha"),
            ("prep/out/big.bin", "alpha"),
            ("prep/sum", "alpha")
        ]
    );
    // The bytes crossed from alpha to beta once, site to site; nothing went to alpha, which
    // holds them, and no upload was pushed.
    let meta = scrape(&g.metrics[0]);
    let relayed = |from: &str, to: &str| {
        let key = format!("gridsched_meta_input_relay_bytes_total{{from=\"{from}\",to=\"{to}\"}} ");
        meta.lines()
            .find_map(|l| l.strip_prefix(&key))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .map_or(0, |v| v as u64)
    };
    assert_eq!(relayed("alpha", "beta"), 3_000_000 + 6 + 78, "{meta}");
    assert_eq!(relayed("beta", "alpha"), 0);
    for s in ["alpha", "beta"] {
        assert_eq!(site_counter(&meta, "gridsched_meta_input_pushes", s), 0);
    }
}

/// The door's rate per user (`[submit_rate] per_user = 0.2, burst = 3`): of a batch of 5 jobs of
/// ann and one of bob, ann's first 3 are accepted, her last 2 refused in their places
/// (RESOURCE_EXHAUSTED, field `user`, saying when to retry) and bob's accepted in his; her next single submission is refused too, while bob's is
/// accepted: one user's flood does not take the others' turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_door_holds_each_user_to_the_submission_rate() {
    use gridsched_tests::live::sh_job;
    let meta = "[submit_rate]\nper_user = 0.2\nburst = 3\n";
    let g = LiveGrid::start(bins(), vec![SiteSpec::new("alpha", "easy", 1, 2)], meta);
    g.ready().await;
    let mut c = g.client().await;
    let of = |user: &str| {
        let mut s = sh_job(1, 60, "true");
        s.user = user.into();
        s
    };
    // Five of ann's, then one of bob's: his result keeps its place after her refused two.
    let batch: Vec<v1::SubmitRequest> = ["ann", "ann", "ann", "ann", "ann", "bob"]
        .map(|u| v1::SubmitRequest { spec: Some(of(u)) })
        .to_vec();
    let results = c
        .submit_batch(tokio_stream::iter(batch))
        .await
        .unwrap()
        .into_inner()
        .results;
    let got: Vec<(u32, bool)> = results
        .iter()
        .map(|r| {
            (
                r.index,
                matches!(r.outcome, Some(v1::submit_result::Outcome::Accepted(_))),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (0, true),
            (1, true),
            (2, true),
            (3, false),
            (4, false),
            (5, true)
        ]
    );
    let Some(v1::submit_result::Outcome::Rejected(e)) = &results[3].outcome else {
        unreachable!()
    };
    assert_eq!(e.code, Code::ResourceExhausted as i32);
    assert_eq!(e.field.as_deref(), Some("user"));
    assert!(
        e.message
            .contains("user `ann` submits faster than the grid's limit of 0.2 jobs per second (burst 3): retry in"),
        "{e:?}"
    );
    let err = c
        .submit(v1::SubmitRequest {
            spec: Some(of("ann")),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted, "{err:?}");
    assert!(
        c.submit(v1::SubmitRequest {
            spec: Some(of("bob")),
        })
        .await
        .is_ok()
    );
}

/// Fair share, live: accounts A (3 shares, ann) and B (1, bob), no decay, the priority from the
/// owner's factor alone (max 10). Before any run both have factor 1 (priority 10); once ann's
/// runs are charged and bob has none, her factor is 2^(−1 / 0.75) = 0.397 (priority 4) while
/// bob's stays 1; `explain` shows the factor; a user without an account is refused naming the
/// field; every finished job has its accounting record (account, processor-seconds) and the
/// usage by account sums them; and the usage, the records and the rollups survive a kill -9 of
/// the meta-scheduler (her priority after the restart is 4 again, not 10).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fair_share_charges_a_finished_run_and_keeps_the_usage_over_a_restart() {
    use gridsched_tests::live::sh_job;
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("grid.jsonl");
    let meta = format!("input_log = {log:?}\n")
        + r#"
[classifier.weights]
deadline = 0.0
licence = 0.0
user = 0.0
fairshare = 1.0

[fairshare]
half_life = 0

[[fairshare.accounts]]
name = "A"
shares = 3

[[fairshare.accounts]]
name = "B"
shares = 1

[[fairshare.accounts]]
name = "ann"
kind = "user"
parent = "A"
shares = 1

[[fairshare.accounts]]
name = "bob"
kind = "user"
parent = "B"
shares = 1

[[fairshare.accounts]]
name = "dan"
kind = "user"
parent = "B"
shares = 1
max_submit = 1

[[fairshare.accounts]]
name = "eve"
kind = "user"
parent = "B"
shares = 1
max_jobs = 1

[[fairshare.accounts]]
name = "fay"
kind = "user"
parent = "B"
shares = 1
max_proc_seconds = 100
"#;
    let sites = vec![SiteSpec::new("alpha", "easy", 1, 4)];
    let mut g = LiveGrid::start(bins(), sites, &meta);
    g.ready().await;
    let addr = g.meta_addr.clone();
    let c = g.client().await;
    let of = |user: &str, procs: u32, script: &str| {
        let mut s = sh_job(procs, 60, script);
        s.user = user.into();
        s
    };
    let submit = |c: &gridsched_tests::live::Client, s: v1::JobSpec| {
        let mut c = c.clone();
        async move {
            c.submit(v1::SubmitRequest { spec: Some(s) })
                .await
                .map(|r| r.into_inner())
        }
    };
    let first = submit(&c, of("ann", 1, "true")).await.unwrap();
    assert_eq!(first.priority, 10);
    wait_ended(&mut c.clone(), &[first.job_id], Duration::from_secs(30)).await;
    // ann holds the whole site for 2 s; bob's job waits behind it and is cancelled there (a job
    // cancelled before it starts is not charged).
    let heavy = submit(&c, of("ann", 4, "sleep 2")).await.unwrap();
    let bob = submit(&c, of("bob", 1, "true")).await.unwrap();
    assert_eq!(bob.priority, 10);
    c.clone()
        .cancel_job(v1::CancelJobRequest {
            job_id: bob.job_id,
            ..Default::default()
        })
        .await
        .unwrap();
    wait_ended(
        &mut c.clone(),
        &[heavy.job_id, bob.job_id],
        Duration::from_secs(30),
    )
    .await;
    let ann = submit(&c, of("ann", 1, "true")).await.unwrap();
    assert_eq!(ann.priority, 4, "{ann:?}");
    let e = c
        .clone()
        .explain(v1::ExplainRequest { job_id: ann.job_id })
        .await
        .unwrap()
        .into_inner();
    assert!(e.text.contains("fairshare 3.97 (weight 1)"), "{}", e.text);
    // carol has no account.
    let err = submit(&c, of("carol", 1, "true")).await.unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied, "{err:?}");
    assert!(err.message().contains("field `user`"), "{err:?}");
    wait_ended(&mut c.clone(), &[ann.job_id], Duration::from_secs(30)).await;
    // Accounting: a record per finished job, its account from the tree; the usage by account
    // sums ann's runs under A (bob's job never ran: a record, no use).
    let history = |c: &gridsched_tests::live::Client| {
        let mut c = c.clone();
        async move {
            c.history(v1::HistoryRequest {
                since: Some(0),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner()
            .records
        }
    };
    let usage = |c: &gridsched_tests::live::Client| {
        let mut c = c.clone();
        async move {
            c.usage(v1::UsageRequest {
                by: v1::UsageBy::Account.into(),
                since: Some(0),
                until: None,
            })
            .await
            .unwrap()
            .into_inner()
            .rows
        }
    };
    let records = history(&c).await;
    let ids: Vec<u64> = records.iter().map(|r| r.job).collect();
    for id in [first.job_id, heavy.job_id, bob.job_id, ann.job_id] {
        assert!(ids.contains(&id), "{id} in {records:?}");
    }
    let rec = |id: u64| records.iter().find(|r| r.job == id).unwrap();
    let h = rec(heavy.job_id);
    assert_eq!((h.account.as_str(), h.processors), ("A", 4));
    assert!(
        h.wall_s >= 2 && h.processor_seconds == 4 * h.wall_s as u64,
        "{h:?}"
    );
    assert_eq!(h.parts.len(), 1);
    assert_eq!(h.parts[0].site, "alpha");
    let b = rec(bob.job_id);
    assert_eq!(
        (
            b.account.as_str(),
            b.state(),
            b.parts.len(),
            b.processor_seconds
        ),
        ("B", JobState::Cancelled, 0, 0)
    );
    let ann_used: u64 = records
        .iter()
        .filter(|r| r.user == "ann")
        .map(|r| r.processor_seconds)
        .sum();
    let rows = usage(&c).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        (
            rows[0].key.as_str(),
            rows[0].jobs,
            rows[0].processor_seconds
        ),
        ("A", 3, ann_used)
    );
    g.kill_meta();
    g.start_meta(Some(&addr));
    let c = g.client().await;
    // The records and the rollups outlive the kill.
    assert_eq!(history(&c).await, records);
    assert_eq!(usage(&c).await, rows);
    let after = submit(&c, of("ann", 1, "true")).await.unwrap();
    assert_eq!(after.priority, 4, "{after:?}");
    assert_eq!(submit(&c, of("bob", 1, "true")).await.unwrap().priority, 10);
    // Limits: dan may have one job in the grid (a second is refused at the door); eve one job
    // out (a second waits at the meta level, saying why, and runs after the first).
    let dan = submit(&c, of("dan", 1, "sleep 1")).await.unwrap();
    let err = submit(&c, of("dan", 1, "true")).await.unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted, "{err:?}");
    assert!(
        err.message()
            .contains("limit max_submit of user `dan`: 1 jobs in the grid of 1"),
        "{err:?}"
    );
    let eve1 = submit(&c, of("eve", 1, "sleep 1")).await.unwrap();
    let eve2 = submit(&c, of("eve", 1, "true")).await.unwrap();
    let j = gridsched_tests::live::get_job(&mut c.clone(), eve2.job_id).await;
    assert_eq!(j.state(), JobState::Accepted, "{j:?}");
    assert_eq!(
        j.reason,
        "held by the limit max_jobs of user `eve`: 1 jobs out of 1"
    );
    let ended = wait_ended(
        &mut c.clone(),
        &[dan.job_id, eve1.job_id, eve2.job_id],
        Duration::from_secs(30),
    )
    .await;
    let ours = [dan.job_id, eve1.job_id, eve2.job_id];
    let ours: Vec<&v1::Job> = ended.iter().filter(|j| ours.contains(&j.id)).collect();
    assert_eq!(ours.len(), 3);
    assert!(
        ours.iter().all(|j| j.state() == JobState::Completed),
        "{ours:?}"
    );
    // eve's second ran after her first.
    assert!(ours[2].start_time >= ours[1].end_time, "{ours:?}");
    assert!(submit(&c, of("dan", 1, "true")).await.is_ok());
    // fay's budget of 100 processor-seconds: a job of 1 × 60 s fits, a second waits (60 held by
    // the first), and goes once the first has ended (its actual second or so charged).
    let fay1 = submit(&c, of("fay", 1, "sleep 1")).await.unwrap();
    let fay2 = submit(&c, of("fay", 1, "true")).await.unwrap();
    let j = gridsched_tests::live::get_job(&mut c.clone(), fay2.job_id).await;
    assert_eq!(j.state(), JobState::Accepted, "{j:?}");
    assert!(
        j.reason.starts_with("held by the limit max_proc_seconds of user `fay`: 0 processor-seconds used, 60 held by running jobs, 60 more asked, of 100"),
        "{j:?}"
    );
    let ended = wait_ended(
        &mut c.clone(),
        &[fay1.job_id, fay2.job_id],
        Duration::from_secs(30),
    )
    .await;
    let fay: Vec<&v1::Job> = ended
        .iter()
        .filter(|j| [fay1.job_id, fay2.job_id].contains(&j.id))
        .collect();
    assert!(
        fay.iter().all(|j| j.state() == JobState::Completed),
        "{fay:?}"
    );
    assert!(fay[1].start_time >= fay[0].end_time, "{fay:?}");
    // The meta-scheduler's input log over both starts, re-decided by the grid runner: every
    // priority with its fair-share factor, the refusals and the limit's hold come out the same,
    // the second start going on from the usage its header carries.
    let lines: Vec<gridsched_core::grid::replay::Line> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let checked = gridsched_core::grid::replay::check(lines).unwrap();
    assert_eq!(checked.runs, 2, "a header at each start");
    assert!(checked.effects > 20, "{checked:?}");
}

/// Fair share over a saturating stream, live: accounts A (3 shares, ann) and B (1, bob), no
/// decay, the priority from the owner's factor alone (max 255, the finest), recalculated every
/// second (Slurm's `PriorityCalcPeriod`): the running jobs charged so far and the queued jobs
/// weighed again at their site, an `fb-meta` queue of 16 processors in real seconds. Both users
/// keep far more jobs of 2–4 s waiting than the site can run; over the 180 s from the first
/// start, the processor-seconds they receive stand within 5 % of 3:1.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fair_share_gives_two_accounts_their_three_to_one_over_a_saturating_stream() {
    use gridsched_tests::live::sh_job;
    let meta = r#"
[classifier]
max = 255

[classifier.weights]
deadline = 0.0
licence = 0.0
user = 0.0
fairshare = 1.0

[fairshare]
half_life = 0
recalc_period = 1

[[fairshare.accounts]]
name = "A"
shares = 3

[[fairshare.accounts]]
name = "B"
shares = 1

[[fairshare.accounts]]
name = "ann"
kind = "user"
parent = "A"
shares = 1

[[fairshare.accounts]]
name = "bob"
kind = "user"
parent = "B"
shares = 1
"#;
    let mut site = SiteSpec::new("alpha", "fb-meta", 1, 16);
    // Real seconds: the jobs' limits are not scaled down.
    site.time_scale = 1.0;
    let g = LiveGrid::start(bins(), vec![site], meta);
    g.ready().await;
    let mut c = g.client().await;
    // 500 jobs each, one after the other: 2,000 processor-seconds of each user's work waits.
    // 800 jobs each, alternating, of 2, 3 and 4 s (the starts do not fall in step): more work
    // than the site can run in the window for either user.
    let batch: Vec<v1::SubmitRequest> = (0..1600)
        .map(|i| {
            let mut s = sh_job(1, 30, &format!("sleep {}", 2 + i % 3));
            s.user = if i % 2 == 0 { "ann" } else { "bob" }.into();
            v1::SubmitRequest { spec: Some(s) }
        })
        .collect();
    let results = c
        .submit_batch(tokio_stream::iter(batch))
        .await
        .unwrap()
        .into_inner()
        .results;
    assert!(
        results
            .iter()
            .all(|r| matches!(r.outcome, Some(v1::submit_result::Outcome::Accepted(_)))),
        "{results:?}"
    );
    let window = 180;
    tokio::time::sleep(Duration::from_secs(window as u64 + 3)).await;
    let (mut jobs, mut page) = (Vec::new(), String::new());
    loop {
        let r = c
            .list_jobs(v1::ListJobsRequest {
                limit: 500,
                page_token: page.clone(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        jobs.extend(r.jobs);
        if r.next_page_token.is_empty() {
            break;
        }
        page = r.next_page_token;
    }
    // The window: from the first start on.
    let from = jobs.iter().filter_map(|j| j.start_time).min().unwrap();
    let until = from + window;
    let mut used = std::collections::BTreeMap::<String, i64>::new();
    for j in &jobs {
        let Some(start) = j.start_time else { continue };
        let end = j.end_time.unwrap_or(until).min(until);
        let spec = j.spec.as_ref().unwrap();
        *used.entry(spec.user.clone()).or_default() +=
            i64::from(spec.processors) * (end - start).max(0);
    }
    let waiting = |u: &str| {
        (jobs.iter())
            .filter(|j| j.start_time.is_none_or(|s| s >= until))
            .filter(|j| j.spec.as_ref().is_some_and(|s| s.user == u))
            .count()
    };
    assert!(
        waiting("ann") > 0 && waiting("bob") > 0,
        "both kept jobs waiting"
    );
    let (ann, bob) = (used["ann"], used["bob"]);
    let ratio = ann as f64 / bob as f64;
    eprintln!("processor-seconds over {window} s: ann {ann}, bob {bob}, ratio {ratio:.3}");
    // The site was kept busy (16 processors × 180 s, less the starts' latency) ...
    assert!(ann + bob > 2600, "ann {ann}, bob {bob}");
    // ... and its time went 3:1.
    assert!(
        (ratio - 3.0).abs() <= 0.15,
        "ann {ann}, bob {bob}: {ratio:.3}"
    );
}
