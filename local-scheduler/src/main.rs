//! The `local-scheduler` service: one per cluster: schedules its machines and licences in real time with a gridsched-core policy (FCFS, EASY, conservative; later Flexible Backfilling and Convergent Scheduling).
//!
//! Its gRPC API is drafted in `gridsched-proto` (`proto/gridsched/v1/`); the service itself is
//! built by the live-grid issue. Until then the binary says so and exits.

fn main() -> std::process::ExitCode {
    eprintln!(
        "local-scheduler: the live service is not built yet; its API is drafted in proto/gridsched/v1/. \
         Use `gridsim run` to replay workloads through the same scheduling core."
    );
    std::process::ExitCode::from(2)
}
