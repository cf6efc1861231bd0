//! The standard gRPC services every gridsched server offers beside its own: health checking
//! (`grpc.health.v1.Health`, from `tonic-health`) and server reflection (`grpc.reflection.v1`
//! and `v1alpha`, from `tonic-reflection`, over [`crate::FILE_DESCRIPTOR_SET`]).
//!
//! They carry no bearer-token check: the gridsched services check the caller's token in each of
//! their own methods, not in a server-wide interceptor or layer, so health probes (container
//! orchestrators, `grpc_health_probe`) and tools such as `grpcurl` work without a token. They
//! reveal only whether the server is up and the public schema. TLS, when configured, covers them
//! like every other service of the same server.

use tonic::service::Routes;

pub use tonic_health;
pub use tonic_reflection;

use tonic_health::ServingStatus;
use tonic_health::server::HealthReporter;

/// The health and reflection services for a server whose own gRPC service is `service` (its
/// full name, e.g. `gridsched.v1.MetaScheduler`), with the handle that sets its health.
#[derive(Debug)]
pub struct StandardServices {
    /// Sets the served statuses: the server (`""`) and `service` start SERVING.
    pub health: HealthReporter,
    /// The routes to add to the server (`Router::add_routes`).
    pub routes: Routes,
}

/// Builds the standard services for a server of `service`. Reflection lists `service`, the
/// health service and itself; the server's overall status and `service`'s are SERVING, so call
/// this once the service is ready to answer.
pub async fn standard_services(
    service: &str,
) -> Result<StandardServices, tonic_reflection::server::Error> {
    use tonic_health::pb::health_server::SERVICE_NAME as HEALTH;
    let names = |b: tonic_reflection::server::Builder<'static>, reflection: &str| {
        b.register_encoded_file_descriptor_set(crate::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
            .with_service_name(service)
            .with_service_name(HEALTH)
            .with_service_name(reflection)
    };
    let builder = tonic_reflection::server::Builder::configure;
    let v1 = names(
        builder(),
        tonic_reflection::pb::v1::server_reflection_server::SERVICE_NAME,
    )
    .build_v1()?;
    let v1alpha = names(
        builder(),
        tonic_reflection::pb::v1alpha::server_reflection_server::SERVICE_NAME,
    )
    .build_v1alpha()?;
    let (health, health_server) = tonic_health::server::health_reporter();
    health.set_service_status("", ServingStatus::Serving).await;
    health
        .set_service_status(service, ServingStatus::Serving)
        .await;
    let routes = Routes::new(health_server)
        .add_service(v1)
        .add_service(v1alpha);
    Ok(StandardServices { health, routes })
}

/// Whether the server behind `channel` reports `service` SERVING (false when it does not answer
/// in `within` or reports anything else). Among replicas of the meta-scheduler only the leader
/// serves the API: a client given several endpoints picks the one for which this is true.
pub async fn serves(
    channel: tonic::transport::Channel,
    service: &str,
    within: std::time::Duration,
) -> bool {
    let mut c = tonic_health::pb::health_client::HealthClient::new(channel);
    let check = c.check(tonic_health::pb::HealthCheckRequest {
        service: service.to_owned(),
    });
    matches!(
        tokio::time::timeout(within, check).await,
        Ok(Ok(r)) if r.get_ref().status() == tonic_health::pb::health_check_response::ServingStatus::Serving
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic_health::pb::{HealthCheckRequest, health_server::Health};

    #[tokio::test]
    async fn builds_and_reports_serving() {
        let s = standard_services("gridsched.v1.MetaScheduler")
            .await
            .unwrap();
        // The reporter is shared with the served health service: a change is visible through it.
        s.health
            .set_service_status("gridsched.v1.MetaScheduler", ServingStatus::NotServing)
            .await;
        let svc = tonic_health::server::HealthService::from_health_reporter(s.health.clone());
        let check = |name: &str| {
            let req = tonic::Request::new(HealthCheckRequest {
                service: name.into(),
            });
            let svc = &svc;
            async move { svc.check(req).await.map(|r| r.into_inner().status) }
        };
        assert_eq!(check("").await.unwrap(), ServingStatus::Serving as i32);
        assert_eq!(
            check("gridsched.v1.MetaScheduler").await.unwrap(),
            ServingStatus::NotServing as i32
        );
        let unknown = check("nope").await.unwrap_err();
        assert_eq!(unknown.code(), tonic::Code::NotFound);
    }
}
