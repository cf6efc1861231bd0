//! A secured live grid (`docs/security.md`): TLS on every link (client → meta-scheduler →
//! local schedulers ← agents, and the HTTP endpoint), bearer tokens with per-user visibility, and
//! local schedulers that accept only the meta-scheduler's and the agents' secrets (and, with
//! `require_client_cert`, only holders of a certificate of the grid's CA).

use gridsched_proto::v1::{self, JobState, local_scheduler_client::LocalSchedulerClient};
use gridsched_security::Bearer;
use gridsched_tests::live::{Bins, LiveGrid, SiteSpec, https_get, submit_all, wait_ended};
use std::process::Command;
use std::time::Duration;
use tonic::Code;

fn bins() -> Bins {
    Bins {
        meta: env!("CARGO_BIN_EXE_gridsched-test-meta-scheduler").into(),
        local: env!("CARGO_BIN_EXE_gridsched-test-local-scheduler").into(),
        agent: env!("CARGO_BIN_EXE_gridsched-test-site-agent").into(),
    }
}

fn job(user: &str, run: i64) -> v1::JobSpec {
    v1::JobSpec {
        user: user.into(),
        processors: 1,
        estimate_s: 600,
        emulate_runtime_s: Some(run),
        ..Default::default()
    }
}

/// A registration of machine alpha-m1.
fn alpha_m1() -> v1::RegisterAgentRequest {
    v1::RegisterAgentRequest {
        machine: "alpha-m1".into(),
        processors: 4,
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_tls_and_per_user_visibility() {
    let sites = vec![
        SiteSpec::new("alpha", "easy", 2, 4),
        SiteSpec::new("beta", "fb-mod", 2, 4),
    ];
    let g = LiveGrid::start_with(bins(), sites, "", true);
    g.ready().await; // as the admin, over TLS: every agent registered over TLS with its secret
    let sec = g.security.clone().expect("secured");

    // No token, a wrong token: UNAUTHENTICATED, on every call.
    for token in [None, Some("guess")] {
        let mut c = g.client_as(token).await;
        let e = c
            .list_jobs(v1::ListJobsRequest::default())
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::Unauthenticated, "{token:?}: {e}");
        let e = c
            .submit(v1::SubmitRequest {
                spec: Some(job("", 1)),
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::Unauthenticated);
    }
    // Plain text against the TLS endpoint does not get an answer.
    let plain = tonic::transport::Endpoint::from_shared(format!("http://{}", g.meta_addr))
        .unwrap()
        .connect()
        .await;
    if let Ok(ch) = plain {
        let mut c = v1::meta_scheduler_client::MetaSchedulerClient::new(ch);
        assert!(c.list_jobs(v1::ListJobsRequest::default()).await.is_err());
    }

    let mut alice = g.client_as(Some("alice-token")).await;
    let mut bob = g.client_as(Some("bob-token")).await;
    // An empty owner becomes the caller; another user's name is refused, naming the field.
    let a_ids = submit_all(&mut alice, vec![job("", 1), job("alice", 200)]).await;
    let b_ids = submit_all(&mut bob, vec![job("", 200)]).await;
    let e = alice
        .submit(v1::SubmitRequest {
            spec: Some(job("bob", 1)),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);
    assert!(e.message().contains("spec.user"), "{e}");

    // Alice sees only her jobs; asking for Bob's list is refused.
    let mine = alice
        .list_jobs(v1::ListJobsRequest::default())
        .await
        .unwrap()
        .into_inner()
        .jobs;
    assert_eq!(mine.iter().map(|j| j.id).collect::<Vec<_>>(), a_ids);
    assert!(
        mine.iter()
            .all(|j| j.spec.as_ref().unwrap().user == "alice")
    );
    let e = alice
        .list_jobs(v1::ListJobsRequest {
            user: Some("bob".into()),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);
    for e in [
        alice
            .get_job(v1::GetJobRequest { job_id: b_ids[0] })
            .await
            .unwrap_err(),
        alice
            .explain(v1::ExplainRequest { job_id: b_ids[0] })
            .await
            .unwrap_err(),
        alice
            .cancel_job(v1::CancelJobRequest {
                job_id: b_ids[0],
                reason: "not mine".into(),
            })
            .await
            .unwrap_err(),
    ] {
        assert_eq!(e.code(), Code::PermissionDenied, "{e}");
    }
    // Her own job's output comes back: its agent handed it over TLS with the agents' secret.
    let mut echo = gridsched_tests::live::sh_job(1, 60, "echo over tls");
    echo.user = String::new();
    let echo = submit_all(&mut alice, vec![echo]).await[0];
    wait_ended(&mut alice, &[echo], Duration::from_secs(30)).await;
    let out = gridsched_tests::live::read_output(
        &mut alice,
        v1::OutputRequest {
            job_id: echo,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(out, b"over tls\n");
    // Nor read what Bob's job wrote, nor list his files, nor list the tasks of his array.
    let e = gridsched_tests::live::read_output(
        &mut alice,
        v1::OutputRequest {
            job_id: b_ids[0],
            ..Default::default()
        },
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied, "{e}");
    let e = alice
        .list_output_files(v1::ListOutputFilesRequest {
            job_id: b_ids[0],
            fragment: None,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied, "{e}");
    let mut array = job("", 1);
    array.array = Some("0-1".into());
    let bobs_array = submit_all(&mut bob, vec![array]).await[0];
    let e = alice
        .list_jobs(v1::ListJobsRequest {
            array: Some(bobs_array),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied, "{e}");
    let tasks = bob
        .list_jobs(v1::ListJobsRequest {
            array: Some(bobs_array),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .jobs;
    assert_eq!(tasks.len(), 2, "{tasks:?}");
    // Alice may not make a job wait for Bob's (she may not see it), alone or in a batch; she
    // may wait for her own.
    let mut waits_for_bob = job("", 1);
    waits_for_bob.after = Some(format!("afterok:{}", b_ids[0]));
    let e = alice
        .submit(v1::SubmitRequest {
            spec: Some(waits_for_bob.clone()),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied, "{e}");
    assert!(
        e.message().contains(&format!(
            "`spec.after`: job {} belongs to another user",
            b_ids[0]
        )),
        "{e}"
    );
    let batch = tokio_stream::iter([v1::SubmitRequest {
        spec: Some(waits_for_bob),
    }]);
    let e = alice.submit_batch(batch).await.unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied, "{e}");
    assert!(e.message().contains("requests[0].spec.after"), "{e}");
    let mut waits_for_mine = job("", 1);
    waits_for_mine.after = Some(format!("afterany:{}", a_ids[0]));
    alice
        .submit(v1::SubmitRequest {
            spec: Some(waits_for_mine),
        })
        .await
        .expect("her own job");
    // Bob's job was not cancelled by Alice's attempt; Bob may cancel it himself.
    let j = bob
        .get_job(v1::GetJobRequest { job_id: b_ids[0] })
        .await
        .unwrap()
        .into_inner()
        .job
        .unwrap();
    assert_ne!(j.state(), JobState::Cancelled);
    bob.cancel_job(v1::CancelJobRequest {
        job_id: b_ids[0],
        reason: "mine".into(),
    })
    .await
    .expect("the owner cancels");
    // The admin sees everything and cancels Alice's long job.
    let mut root = g.client().await;
    let all = root
        .list_jobs(v1::ListJobsRequest::default())
        .await
        .unwrap()
        .into_inner()
        .jobs;
    assert_eq!(all.len(), 6, "Alice's 4, Bob's job and his array");
    root.cancel_job(v1::CancelJobRequest {
        job_id: a_ids[1],
        reason: "admin".into(),
    })
    .await
    .expect("the admin cancels anyone's job");
    let ended = wait_ended(
        &mut root,
        &[a_ids[0], a_ids[1], b_ids[0]],
        Duration::from_secs(60),
    )
    .await;
    let state = |id: u64| ended.iter().find(|j| j.id == id).expect("ended").state();
    assert_eq!(state(a_ids[0]), JobState::Completed, "ran over TLS links");
    assert_eq!(state(a_ids[1]), JobState::Cancelled);
    assert_eq!(state(b_ids[0]), JobState::Cancelled);

    // A local scheduler: without a grid certificate no connection; with one but without the
    // right secret, nothing can be registered or enqueued.
    let local = format!("https://{}", g.local_addrs[0]);
    let ca_only = gridsched_security::TlsConfig {
        ca: Some(sec.certs.ca.clone()),
        ..Default::default()
    };
    if let Ok(ch) = ca_only.endpoint(&local).unwrap().connect().await {
        let mut c = LocalSchedulerClient::new(ch);
        assert!(
            c.status(v1::StatusRequest {}).await.is_err(),
            "no client certificate"
        );
    }
    let with_cert = gridsched_security::TlsConfig {
        cert: Some(sec.certs.cert.clone()),
        key: Some(sec.certs.key.clone()),
        ca: Some(sec.certs.ca.clone()),
        ..Default::default()
    };
    let ch = with_cert.endpoint(&local).unwrap().connect().await.unwrap();
    let as_agent = Bearer::new(Some(&sec.agent_token)).unwrap();
    let mut c = LocalSchedulerClient::with_interceptor(ch.clone(), as_agent);
    let e = c.enqueue(v1::EnqueueRequest::default()).await.unwrap_err();
    assert_eq!(
        e.code(),
        Code::Unauthenticated,
        "an agent's secret cannot enqueue"
    );
    let mut c = LocalSchedulerClient::new(ch.clone());
    let e = c.register_agent(alpha_m1()).await.unwrap_err();
    assert_eq!(
        e.code(),
        Code::Unauthenticated,
        "no secret, no registration"
    );
    let as_meta = Bearer::new(Some(&sec.meta_token)).unwrap();
    let mut c = LocalSchedulerClient::with_interceptor(ch, as_meta);
    let e = c.register_agent(alpha_m1()).await.unwrap_err();
    assert_eq!(
        e.code(),
        Code::Unauthenticated,
        "the meta's secret cannot register"
    );
    c.status(v1::StatusRequest {})
        .await
        .expect("the meta's secret reads status");

    // A stranger agent with a wrong secret is refused and exits with a clear error.
    let wrong = g.path("wrong.token");
    std::fs::write(&wrong, "not-the-secret").unwrap();
    let out = Command::new(&g.bins.agent)
        .args([
            "--scheduler",
            &local,
            "--machine",
            "alpha-m1",
            "--processors",
            "4",
        ])
        .arg("--token-file")
        .arg(&wrong)
        .arg("--tls-ca")
        .arg(&sec.certs.ca)
        .arg("--tls-cert")
        .arg(&sec.certs.cert)
        .arg("--tls-key")
        .arg(&sec.certs.key)
        .arg("--work-dir")
        .arg(g.path("stranger"))
        .output()
        .expect("run the stranger agent");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("refused this agent"), "{err}");

    // The HTTP endpoint is HTTPS and asks for a token too.
    let addr = &g.metrics[0];
    let r = https_get(addr, "/", "", &sec.certs.ca).await;
    assert!(
        r.starts_with("HTTP/1.0 401") || r.starts_with("HTTP/1.1 401"),
        "{r}"
    );
    let r = https_get(addr, "/?token=alice-token", "", &sec.certs.ca).await;
    assert!(
        r.contains(" 303 ") && r.contains("gridsched_token=alice-token"),
        "{r}"
    );
    let r = https_get(
        addr,
        "/",
        "Cookie: gridsched_token=alice-token\r\n",
        &sec.certs.ca,
    )
    .await;
    assert!(
        r.contains(" 200 ") && r.contains("signed in as <b>alice</b>"),
        "{r}"
    );
    assert!(
        r.contains(&format!("/job/{}", a_ids[0])) && !r.contains(&format!("/job/{}\"", b_ids[0]))
    );
    let r = https_get(
        addr,
        &format!("/job/{}", b_ids[0]),
        "Authorization: Bearer alice-token\r\n",
        &sec.certs.ca,
    )
    .await;
    assert!(r.contains(" 403 "), "{r}");
}
