//! The PostgreSQL store out of reach: a submission fails with UNAVAILABLE and leaves nothing
//! behind (neither in the answers nor in the database), and once the server is back the next
//! one goes through on a new connection, as does a restart.

use gridsched_proto::v1;
use gridsched_proto::v1::meta_scheduler_server::MetaScheduler;
use meta_scheduler::service::MetaService;
use meta_scheduler::store::postgres::ScratchDatabase;
use tonic::{Code, Request};

fn meta(dir: &std::path::Path, url: &str) -> MetaService {
    let toml = format!(
        "state_dir = {:?}\n[store]\nbackend = \"postgres\"\nurl = {url:?}\n\
         [[sites]]\nname = \"a\"\nmachines = [{{ name = \"a1\", processors = 4 }}]\n",
        dir.join("meta")
    );
    MetaService::open(&meta_scheduler::config::MetaConfig::from_toml(&toml).unwrap()).unwrap()
}

async fn submit(m: &MetaService, token: &str) -> Result<u64, tonic::Status> {
    let spec = v1::JobSpec {
        user: "ann".into(),
        processors: 1,
        estimate_s: 60,
        emulate_runtime_s: Some(1),
        client_token: Some(token.into()),
        ..Default::default()
    };
    m.submit(Request::new(v1::SubmitRequest { spec: Some(spec) }))
        .await
        .map(|r| r.into_inner().job_id)
}

async fn ids(m: &MetaService) -> Vec<u64> {
    let r = m
        .list_jobs(Request::new(v1::ListJobsRequest::default()))
        .await
        .unwrap()
        .into_inner();
    r.jobs.iter().map(|j| j.id).collect()
}

/// Runs `sql` as the database's owner, through `admin` (off the test's runtime: the synchronous
/// client runs one of its own).
fn admin_sql(admin: &str, sql: String) {
    let admin = admin.to_owned();
    std::thread::spawn(move || {
        let mut c = postgres::Client::connect(&admin, postgres::NoTls).unwrap();
        c.batch_execute(&sql).unwrap();
    })
    .join()
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_database_makes_submissions_unavailable_and_leaves_nothing() {
    let Some(admin) = meta_scheduler::store::postgres::test_server() else {
        return;
    };
    let db = ScratchDatabase::create(&admin).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let m = meta(dir.path(), &db.url);
    assert_eq!(submit(&m, "one").await.unwrap(), 1);
    // The server turns the meta-scheduler's connection away and takes no new one.
    let name = db.name().to_owned();
    admin_sql(
        &admin,
        format!(
            "ALTER DATABASE {name} ALLOW_CONNECTIONS false; \
             SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = '{name}' AND pid <> pg_backend_pid()"
        ),
    );
    let e = submit(&m, "two").await.unwrap_err();
    assert_eq!(e.code(), Code::Unavailable, "{e:?}");
    assert!(
        e.message().starts_with("store unavailable: PostgreSQL at "),
        "{e:?}"
    );
    let e = submit(&m, "two").await.unwrap_err();
    assert_eq!(e.code(), Code::Unavailable, "still out of reach: {e:?}");
    // Back: the next call connects again; the retried submission is accepted once, and the
    // refused ones left nothing (their ids were given and are skipped).
    admin_sql(
        &admin,
        format!("ALTER DATABASE {name} ALLOW_CONNECTIONS true"),
    );
    let two = submit(&m, "two").await.unwrap();
    assert_eq!(submit(&m, "two").await.unwrap(), two, "the token finds it");
    assert_eq!(ids(&m).await, vec![1, two]);
    for id in 2..two {
        let e = m
            .get_job(Request::new(v1::GetJobRequest { job_id: id }))
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::NotFound, "job {id}");
    }
    drop(m);
    let m = meta(dir.path(), &db.url);
    assert_eq!(ids(&m).await, vec![1, two], "after a restart");
}

/// A replica whose PostgreSQL server cannot be reached when it starts (cut off, or not started
/// yet) stops with exit status 75, "try again later", as a deposed one does, so that its
/// supervisor starts it again; it is not a configuration error (exit 1).
#[test]
fn a_replica_that_cannot_reach_its_database_at_start_exits_75() {
    // A port nothing listens on: bound, then let go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("postgres://gridsched:gridsched@127.0.0.1:{port}/gridsched");
    let cfg = dir.path().join("meta.toml");
    let toml = format!(
        "listen = \"127.0.0.1:0\"\n[store]\nbackend = \"postgres\"\nurl = {url:?}\n\
         [[sites]]\nname = \"a\"\nendpoint = \"http://127.0.0.1:2\"\n\
         machines = [{{ name = \"a1\", processors = 4 }}]\n"
    );
    std::fs::write(&cfg, toml).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_meta-scheduler"))
        .arg("--config")
        .arg(&cfg)
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(75), "{err}");
    assert!(err.contains("try again later"), "{err}");
}
