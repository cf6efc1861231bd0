//! The standard gRPC services on a secured live grid (TLS everywhere, tokens, local schedulers
//! that require a client certificate): `grpc.health.v1.Health/Check` and server reflection (v1 and
//! v1alpha) answer on the meta-scheduler and on a local scheduler without any bearer token,
//! while the gridsched services themselves still refuse a call without one.

use gridsched_proto::standard::tonic_health::pb::health_check_response::ServingStatus;
use gridsched_proto::standard::tonic_health::pb::{
    HealthCheckRequest, health_client::HealthClient,
};
use gridsched_proto::standard::tonic_reflection::pb::{v1 as refl, v1alpha as refl_alpha};
use gridsched_proto::v1;
use gridsched_tests::live::{LiveGrid, SiteSpec};
use tonic::Code;
use tonic::transport::Channel;

/// The health status of `service` (`""` = the whole server), or the call's error code.
async fn health(ch: &Channel, service: &str) -> Result<i32, Code> {
    HealthClient::new(ch.clone())
        .check(HealthCheckRequest {
            service: service.into(),
        })
        .await
        .map(|r| r.into_inner().status)
        .map_err(|e| e.code())
}

/// The services listed by reflection v1.
async fn listed_v1(ch: &Channel) -> Vec<String> {
    use refl::server_reflection_request::MessageRequest;
    use refl::server_reflection_response::MessageResponse;
    let req = refl::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut c = refl::server_reflection_client::ServerReflectionClient::new(ch.clone());
    let mut answers = c
        .server_reflection_info(tokio_stream::iter([req]))
        .await
        .expect("reflection v1")
        .into_inner();
    match answers.message().await.expect("an answer") {
        Some(refl::ServerReflectionResponse {
            message_response: Some(MessageResponse::ListServicesResponse(l)),
            ..
        }) => l.service.into_iter().map(|s| s.name).collect(),
        other => panic!("not a service list: {other:?}"),
    }
}

/// The services listed by reflection v1alpha, and whether the file defining `symbol` is served.
async fn listed_v1alpha(ch: &Channel, symbol: &str) -> (Vec<String>, bool) {
    use refl_alpha::server_reflection_request::MessageRequest;
    use refl_alpha::server_reflection_response::MessageResponse;
    let ask = |m| refl_alpha::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(m),
    };
    let reqs = [
        ask(MessageRequest::ListServices(String::new())),
        ask(MessageRequest::FileContainingSymbol(symbol.into())),
    ];
    let mut c = refl_alpha::server_reflection_client::ServerReflectionClient::new(ch.clone());
    let mut answers = c
        .server_reflection_info(tokio_stream::iter(reqs))
        .await
        .expect("reflection v1alpha")
        .into_inner();
    let mut names = Vec::new();
    let mut file = false;
    while let Some(a) = answers.message().await.expect("an answer") {
        match a.message_response {
            Some(MessageResponse::ListServicesResponse(l)) => {
                names = l.service.into_iter().map(|s| s.name).collect();
            }
            Some(MessageResponse::FileDescriptorResponse(f)) => {
                file = !f.file_descriptor_proto.is_empty();
            }
            other => panic!("unexpected answer {other:?}"),
        }
    }
    (names, file)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_and_reflection_answer_without_a_token_over_tls() {
    let g = LiveGrid::start_with(
        gridsched_tests::test_bins!(),
        vec![SiteSpec::new("alpha", "easy", 1, 2)],
        "",
        true,
    );
    g.ready().await;
    let sec = g.security.clone().expect("secured");
    // The grid's certificate is presented because the local schedulers require one; no token.
    let tls = gridsched_security::TlsConfig {
        cert: Some(sec.certs.cert.clone()),
        key: Some(sec.certs.key.clone()),
        ca: Some(sec.certs.ca.clone()),
        ..Default::default()
    };
    let connect = |addr: &str| {
        let ep = tls.endpoint(&format!("https://{addr}")).expect("endpoint");
        async move { ep.connect().await.expect("connect over TLS") }
    };
    let meta = connect(&g.meta_addr).await;
    let local = connect(&g.local_addrs[0]).await;
    let serving = ServingStatus::Serving as i32;

    for (ch, service, other) in [
        (
            &meta,
            "gridsched.v1.MetaScheduler",
            "gridsched.v1.LocalScheduler",
        ),
        (
            &local,
            "gridsched.v1.LocalScheduler",
            "gridsched.v1.MetaScheduler",
        ),
    ] {
        assert_eq!(health(ch, "").await, Ok(serving), "{service}: server");
        assert_eq!(health(ch, service).await, Ok(serving), "{service}");
        assert_eq!(
            health(ch, other).await,
            Err(Code::NotFound),
            "{service} does not serve {other}"
        );
        let names = listed_v1(ch).await;
        for n in [
            service,
            "grpc.health.v1.Health",
            "grpc.reflection.v1.ServerReflection",
        ] {
            assert!(names.iter().any(|s| s == n), "{n} not in {names:?}");
        }
        assert!(!names.iter().any(|s| s == other), "{other} in {names:?}");
        let (alpha_names, file) = listed_v1alpha(ch, service).await;
        assert!(
            alpha_names.iter().any(|s| s == service),
            "{service} not in {alpha_names:?}"
        );
        assert!(file, "the file defining {service} is served");
    }

    // The gridsched services themselves still want a token.
    let mut c = v1::meta_scheduler_client::MetaSchedulerClient::new(meta.clone());
    let e = c
        .list_jobs(v1::ListJobsRequest::default())
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated);
    let mut c = v1::local_scheduler_client::LocalSchedulerClient::new(local.clone());
    let e = c.status(v1::StatusRequest {}).await.unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated);
}
