//! The `site-agent` service: one per machine: registers the machine with its local scheduler, heartbeats, and runs jobs as real OS processes.
//!
//! Its gRPC API is drafted in `gridsched-proto` (`proto/gridsched/v1/`); the service itself is
//! built by the live-grid issue. Until then the binary says so and exits.

fn main() -> std::process::ExitCode {
    eprintln!(
        "site-agent: the live service is not built yet; its API is drafted in proto/gridsched/v1/. \
         Use `gridsim run` to replay workloads through the same scheduling core."
    );
    std::process::ExitCode::from(2)
}
