//! The real `meta-scheduler` binary on a loopback port: submissions (unary and batch), get,
//! list, cancel, the error codes of malformed requests, and a kill -9 followed by a restart on the
//! same state directory that finds every acknowledged job as it was.

use gridsched_proto::v1::{self, JobState, meta_scheduler_client::MetaSchedulerClient};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use tonic::Code;

const CONFIG: &str = r#"
listen = "127.0.0.1:0"
[links]
site_down_after_ms = 600000
[[sites]]
name = "alpha"
endpoint = "http://127.0.0.1:1"
licences = ["matlab"]
machines = [{ name = "a1", processors = 16 }]
[[sites]]
name = "beta"
endpoint = "http://127.0.0.1:2"
machines = [{ name = "b1", processors = 64 }, { name = "b2", processors = 8 }]
"#;

/// Starts the binary; returns the child and its endpoint.
fn start(dir: &std::path::Path) -> (Child, String) {
    let cfg = dir.join("meta.toml");
    std::fs::write(&cfg, CONFIG).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_meta-scheduler"))
        .arg("--config")
        .arg(&cfg)
        .arg("--state-dir")
        .arg(dir.join("state"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let endpoint = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_owned();
    (child, endpoint)
}

fn spec(i: u32) -> v1::JobSpec {
    v1::JobSpec {
        user: format!("user{}", i % 3),
        processors: 1 + i % 16,
        estimate_s: 60,
        emulate_runtime_s: Some(1),
        ..Default::default()
    }
}

#[tokio::test]
async fn durable_submissions_survive_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, ep) = start(dir.path());
    let mut c = MetaSchedulerClient::connect(ep).await.unwrap();

    // A batch of 300 jobs, one of them invalid.
    let mut reqs: Vec<v1::SubmitRequest> = (0..300)
        .map(|i| v1::SubmitRequest {
            spec: Some(spec(i)),
        })
        .collect();
    reqs[5].spec.as_mut().unwrap().processors = 65;
    let r = c
        .submit_batch(tokio_stream::iter(reqs))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.results.len(), 300);
    let refused: Vec<_> = r
        .results
        .iter()
        .filter_map(|r| match &r.outcome {
            Some(v1::submit_result::Outcome::Rejected(e)) => Some((r.index, e.field.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(refused, vec![(5, Some("processors".to_string()))]);

    // Unary with a token: the second submission is a duplicate.
    let tok = v1::JobSpec {
        client_token: Some("t1".into()),
        licences: vec!["matlab".into()],
        ..spec(1)
    };
    let a = c
        .submit(v1::SubmitRequest {
            spec: Some(tok.clone()),
        })
        .await
        .unwrap()
        .into_inner();
    let b = c
        .submit(v1::SubmitRequest { spec: Some(tok) })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (a.job_id, a.duplicate, b.job_id, b.duplicate),
        (300, false, 300, true)
    );
    let job = c
        .get_job(v1::GetJobRequest { job_id: 300 })
        .await
        .unwrap()
        .into_inner()
        .job
        .unwrap();
    assert_eq!(job.site.as_deref(), Some("alpha"), "only alpha has matlab");

    // Cancel, then cancelling again is a failed precondition.
    let cj = c
        .cancel_job(v1::CancelJobRequest {
            job_id: 7,
            reason: "test".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .job
        .unwrap();
    assert_eq!(cj.state(), JobState::Cancelled);
    let e = c
        .cancel_job(v1::CancelJobRequest {
            job_id: 7,
            reason: String::new(),
        })
        .await;
    assert_eq!(e.unwrap_err().code(), Code::FailedPrecondition);

    // Malformed requests.
    let e = c
        .get_job(v1::GetJobRequest { job_id: 9999 })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    for (bad, field) in [
        (
            v1::JobSpec {
                licences: vec!["nope".into()],
                ..spec(1)
            },
            "licences[0]",
        ),
        (
            v1::JobSpec {
                deadline: Some(1),
                ..spec(1)
            },
            "deadline",
        ),
        (
            v1::JobSpec {
                command: Some(v1::Command::default()),
                emulate_runtime_s: None,
                ..spec(1)
            },
            "command.program",
        ),
        (
            v1::JobSpec {
                processors: 100,
                ..spec(1)
            },
            "processors",
        ),
    ] {
        let e = c
            .submit(v1::SubmitRequest { spec: Some(bad) })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument);
        assert!(
            e.message().contains(&format!("`{field}`")),
            "{}",
            e.message()
        );
    }

    // List with a filter and paging.
    let page = c
        .list_jobs(v1::ListJobsRequest {
            user: Some("user0".into()),
            limit: 50,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(page.jobs.len(), 50);
    assert!(
        page.jobs
            .iter()
            .all(|j| j.spec.as_ref().unwrap().user == "user0")
    );
    let rest = c
        .list_jobs(v1::ListJobsRequest {
            user: Some("user0".into()),
            limit: 1000,
            page_token: page.next_page_token,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        page.jobs.len() + rest.jobs.len(),
        100,
        "user0 has jobs 0, 3, ..., 297"
    );

    // kill -9 and restart: every acknowledged job is there, as it was.
    child.kill().unwrap();
    child.wait().unwrap();
    let (mut child, ep) = start(dir.path());
    let mut c = MetaSchedulerClient::connect(ep).await.unwrap();
    let all = c
        .list_jobs(v1::ListJobsRequest {
            limit: 1000,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .jobs;
    assert_eq!(all.len(), 300);
    assert_eq!(
        all.iter()
            .filter(|j| j.state() == JobState::Cancelled)
            .count(),
        1
    );
    let again = c
        .submit(v1::SubmitRequest {
            spec: Some(v1::JobSpec {
                client_token: Some("t1".into()),
                licences: vec!["matlab".into()],
                ..spec(1)
            }),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(
        again.duplicate && again.job_id == 300,
        "token survives restart"
    );
    let next = c
        .submit(v1::SubmitRequest {
            spec: Some(spec(2)),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(next.job_id, 301, "ids continue after the restart");
    let sites = c
        .list_sites(v1::ListSitesRequest::default())
        .await
        .unwrap()
        .into_inner();
    let counts: u32 = sites.sites.iter().map(|s| s.clusters[0].count[0]).sum();
    assert_eq!(
        counts, 300,
        "301 accepted minus one cancelled are live in the Count arrays"
    );
    child.kill().unwrap();
    child.wait().unwrap();
}
