//! Memory bounded by live work: finished jobs leave the meta-scheduler's memory after their
//! retention and are still answered from the store (get, list with filters and pages, explain,
//! cancel, a retried submission's token); a restart loads the open jobs only, and its classifier
//! goes on from the snapshot as if nothing had happened (or, for a store without one, from the
//! newest jobs with a deadline).

use gridsched_proto::v1;
use gridsched_proto::v1::meta_scheduler_server::MetaScheduler;
use meta_scheduler::service::MetaService;
use tonic::{Code, Request};

/// A meta-scheduler on `dir` with one site that has no endpoint (jobs wait there ACCEPTED), at
/// most `keep` finished jobs in memory and a Deadline window of 3 jobs.
fn meta(dir: &std::path::Path, keep: usize) -> MetaService {
    meta_on(dir, keep, None)
}

/// The same, its state in the PostgreSQL database of `url` when given.
fn meta_on(dir: &std::path::Path, keep: usize, url: Option<&str>) -> MetaService {
    meta_with(dir, keep, url, "")
}

/// [`meta_on`] with more `[classifier]` keys (`extra`, TOML lines after `window = 3`).
fn meta_with(dir: &std::path::Path, keep: usize, url: Option<&str>, extra: &str) -> MetaService {
    let mut toml = format!(
        "state_dir = {:?}\n[retention]\nfinished_max = {keep}\n[classifier]\nwindow = 3\n{extra}\
         [[sites]]\nname = \"a\"\nmachines = [{{ name = \"a1\", processors = 4 }}]\n",
        dir.join("meta")
    );
    if let Some(url) = url {
        toml += &format!("[store]\nbackend = \"postgres\"\nurl = {url:?}\n");
    }
    MetaService::open(&meta_scheduler::config::MetaConfig::from_toml(&toml).unwrap()).unwrap()
}

fn spec(user: &str, token: &str, slack: Option<i64>) -> v1::JobSpec {
    let now = meta_scheduler::service::now();
    v1::JobSpec {
        user: user.into(),
        processors: 1,
        estimate_s: 100,
        emulate_runtime_s: Some(1),
        client_token: Some(token.into()),
        deadline: slack.map(|s| now + 100 + s),
        ..Default::default()
    }
}

async fn submit(m: &MetaService, s: v1::JobSpec) -> v1::SubmitResponse {
    m.submit(Request::new(v1::SubmitRequest { spec: Some(s) }))
        .await
        .unwrap()
        .into_inner()
}

async fn cancel(m: &MetaService, id: u64) -> Result<v1::Job, tonic::Status> {
    m.cancel_job(Request::new(v1::CancelJobRequest {
        job_id: id,
        reason: String::new(),
    }))
    .await
    .map(|r| r.into_inner().job.unwrap())
}

/// Submits a job of `ann` with a deadline `slack` seconds after its estimate ends; how it was
/// classified.
async fn next(m: &MetaService, token: &str, slack: i64) -> v1::ExplainResponse {
    let id = submit(m, spec("ann", token, Some(slack))).await.job_id;
    m.explain(Request::new(v1::ExplainRequest { job_id: id }))
        .await
        .unwrap()
        .into_inner()
}

async fn list(m: &MetaService, req: v1::ListJobsRequest) -> (Vec<(u64, i32)>, String) {
    let r = m.list_jobs(Request::new(req)).await.unwrap().into_inner();
    (
        r.jobs.iter().map(|j| (j.id, j.state)).collect(),
        r.next_page_token,
    )
}

/// Six jobs, the first five cancelled: with two finished jobs kept in memory, jobs 1–3 are
/// answered from the store alone, alike to those in memory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finished_jobs_leave_memory_and_are_answered_from_the_store() {
    let dir = tempfile::tempdir().unwrap();
    leave_memory(meta(dir.path(), 2)).await;
}

/// The same over PostgreSQL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finished_jobs_leave_memory_and_are_answered_from_postgres() {
    let Some(admin) = meta_scheduler::store::postgres::test_server() else {
        return;
    };
    let db = meta_scheduler::store::postgres::ScratchDatabase::create(&admin).unwrap();
    let dir = tempfile::tempdir().unwrap();
    leave_memory(meta_on(dir.path(), 2, Some(&db.url))).await;
}

async fn leave_memory(m: MetaService) {
    for i in 1..=6u64 {
        let user = if i % 2 == 0 { "bob" } else { "ann" };
        let r = submit(&m, spec(user, &format!("t{i}"), Some(i as i64 * 1000))).await;
        assert_eq!(r.job_id, i);
    }
    let in_memory = m.in_memory().unwrap().0;
    assert_eq!(in_memory, 6);
    for i in 1..=5 {
        assert_eq!(
            cancel(&m, i).await.unwrap().state(),
            v1::JobState::Cancelled
        );
    }
    // Jobs 4 and 5 (finished last) and 6 (waiting) are in memory.
    assert_eq!(m.in_memory().unwrap().0, 3);
    let got = m
        .get_job(Request::new(v1::GetJobRequest { job_id: 1 }))
        .await
        .unwrap()
        .into_inner()
        .job
        .unwrap();
    assert_eq!((got.id, got.state()), (1, v1::JobState::Cancelled));
    assert_eq!(got.spec.unwrap().user, "ann");
    let e = m
        .explain(Request::new(v1::ExplainRequest { job_id: 2 }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(e.priority.unwrap().contributions.len(), 3);
    let e = cancel(&m, 3).await.unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
    assert!(
        e.message().contains("already ended (JOB_STATE_CANCELLED)"),
        "{e:?}"
    );
    let e = cancel(&m, 99).await.unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    // A retried submission of job 1 (its token) is answered with job 1, not run again.
    let again = submit(&m, spec("ann", "t1", Some(1000))).await;
    assert_eq!((again.job_id, again.duplicate), (1, true));
    // Pages over memory and store together, in id order.
    let cancelled = v1::JobState::Cancelled as i32;
    let accepted = v1::JobState::Accepted as i32;
    let (page, token) = list(
        &m,
        v1::ListJobsRequest {
            limit: 4,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(
        page,
        vec![
            (1, cancelled),
            (2, cancelled),
            (3, cancelled),
            (4, cancelled)
        ]
    );
    assert_eq!(token, "4");
    let (page, token) = list(
        &m,
        v1::ListJobsRequest {
            limit: 4,
            page_token: token,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(
        (page, token.as_str()),
        (vec![(5, cancelled), (6, accepted)], "")
    );
    let (page, _) = list(
        &m,
        v1::ListJobsRequest {
            user: Some("bob".into()),
            states: vec![cancelled],
            ..Default::default()
        },
    )
    .await;
    assert_eq!(page, vec![(2, cancelled), (4, cancelled)]);
    let (page, _) = list(
        &m,
        v1::ListJobsRequest {
            site: Some("a".into()),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(page.len(), 6);
}

/// A restart loads the open job only; the classifier, restored from its snapshot, classifies
/// the next jobs as the meta-scheduler that never stopped does, and so does one rebuilt from a
/// store without a snapshot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_loads_live_work_and_classifies_on_as_before() {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (restarted, steady) = (meta(d1.path(), 0), meta(d2.path(), 0));
    // Margins 5000, 10, 40 000 and 20 (a window of 3 keeps the last three), one job without a
    // deadline in between.
    let slacks = [Some(5_000), Some(10), None, Some(40_000), Some(20)];
    for (i, s) in slacks.iter().enumerate() {
        for m in [&restarted, &steady] {
            submit(m, spec("ann", &format!("t{i}"), *s)).await;
        }
    }
    for m in [&restarted, &steady] {
        for id in 1..=4 {
            cancel(m, id).await.unwrap();
        }
    }
    drop(restarted);
    let restarted = meta(d1.path(), 0);
    assert_eq!(restarted.in_memory().unwrap().0, 1, "job 5 only");
    let priorities = |r: &v1::ExplainResponse| {
        let p = r.priority.clone().unwrap();
        (p.priority, p.contributions[0].value)
    };
    for (k, slack) in [30, 15_000, 5].into_iter().enumerate() {
        let t = format!("n{k}");
        let (a, b) = (
            next(&restarted, &t, slack).await,
            next(&steady, &t, slack).await,
        );
        assert_eq!(priorities(&a), priorities(&b), "next job {k}");
    }
    // Without its snapshot (a store of an older layout), the window is rebuilt from the newest
    // jobs with a deadline.
    drop(restarted);
    {
        let db = redb::Database::create(d1.path().join("meta/meta.redb")).unwrap();
        let tx = db.begin_write().unwrap();
        {
            let mut t = tx
                .open_table(redb::TableDefinition::<&str, &[u8]>::new("snapshots"))
                .unwrap();
            assert!(t.remove("classifier").unwrap().is_some());
        }
        tx.commit().unwrap();
    }
    let rebuilt = meta(d1.path(), 0);
    let (a, b) = (next(&rebuilt, "z", 20).await, next(&steady, "z", 20).await);
    assert_eq!(priorities(&a), priorities(&b));
    // A fresh classifier compares the job's margin with itself (the lowest level); with the
    // window (margins 30, 15 000 and 5, mean 5 012) a margin of 20 is urgent.
    let fresh = meta(tempfile::tempdir().unwrap().path(), 0);
    let f = next(&fresh, "z", 20).await;
    assert_ne!(priorities(&f), priorities(&a));
}

/// The self-optimizing Deadline heuristic (ADH) as the live classifier: its reconfigurations
/// change the priorities the static heuristic gives, and its state (base and record) survives a
/// restart in the snapshot, so the restarted meta-scheduler classifies on as the one that never
/// stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adh_classifies_live_and_keeps_its_state_across_a_restart() {
    let adh = "adh = { history = 2 }\n";
    let (d1, d2, d3) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let (restarted, steady) = (
        meta_with(d1.path(), 0, None, adh),
        meta_with(d2.path(), 0, None, adh),
    );
    let plain = meta(d3.path(), 0);
    let deadline = |r: &v1::ExplainResponse| r.priority.clone().unwrap().contributions[0].value;
    // Margins far below the window's mean, and between half and all of the estimate (no size
    // correction): the top levels pile up and ADH widens the base, narrowing them.
    let mut differs = false;
    for (i, slack) in [5_000, 60, 70, 80, 90, 60].into_iter().enumerate() {
        let t = format!("t{i}");
        let (a, b, p) = (
            next(&restarted, &t, slack).await,
            next(&steady, &t, slack).await,
            next(&plain, &t, slack).await,
        );
        assert_eq!(deadline(&a), deadline(&b));
        differs |= deadline(&a) != deadline(&p);
    }
    assert!(differs, "ADH changed no priority of the static heuristic");
    drop(restarted);
    let restarted = meta_with(d1.path(), 0, None, adh);
    let (mut after, mut fresh_differs) = (Vec::new(), false);
    let fresh = meta_with(tempfile::tempdir().unwrap().path(), 0, None, adh);
    for (k, slack) in [65, 75, 95, 55].into_iter().enumerate() {
        let t = format!("n{k}");
        let (a, b) = (
            next(&restarted, &t, slack).await,
            next(&steady, &t, slack).await,
        );
        assert_eq!(deadline(&a), deadline(&b), "next job {k}");
        after.push(deadline(&a));
        fresh_differs |= deadline(&next(&fresh, &t, slack).await) != deadline(&a);
    }
    assert!(fresh_differs, "the restored state mattered: {after:?}");
    let bad = meta_scheduler::config::MetaConfig::from_toml(
        "[classifier]\nadh = { delta = -1.0 }\n[[sites]]\nname = \"a\"\n\
         machines = [{ name = \"a1\", processors = 4 }]\n",
    );
    let e = format!("{:#}", bad.expect_err("refused"));
    assert!(e.contains("adh.delta"), "{e}");
}

/// An acknowledged array is in the store from its submission on: a restart before any of its
/// tasks started still knows it, and releases its tasks (the chaos soak with arrays: a leader
/// killed just after acknowledging one lost it, its tasks' records left without their array).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acknowledged_array_survives_a_restart_before_its_tasks_start() {
    let d = tempfile::tempdir().unwrap();
    let m = meta(d.path(), 0);
    let mut s = spec("ann", "arr", None);
    s.array = Some("0-3%2".into());
    let id = submit(&m, s).await.job_id;
    drop(m);
    let m = meta(d.path(), 0);
    let get = |id: u64| m.get_job(Request::new(v1::GetJobRequest { job_id: id }));
    let array = get(id)
        .await
        .expect("the array after a restart")
        .into_inner();
    let progress = array.job.and_then(|j| j.array).expect("an array");
    assert_eq!(progress.tasks, 4);
    let (tasks, _) = list(
        &m,
        v1::ListJobsRequest {
            array: Some(id),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(tasks.len(), 4, "{tasks:?}");
}
