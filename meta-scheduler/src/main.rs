//! The `meta-scheduler` service: the grid's single entry point: classifies each job into a priority (Deadline, Licence and User heuristics) and dispatches it to a cluster's local scheduler (Load / Ordering functions, BestFit, multi-site).
//!
//! Its gRPC API is drafted in `gridsched-proto` (`proto/gridsched/v1/`); the service itself is
//! built by the live-grid issue. Until then the binary says so and exits.

fn main() -> std::process::ExitCode {
    eprintln!(
        "meta-scheduler: the live service is not built yet; its API is drafted in proto/gridsched/v1/. \
         Use `gridsim run` to replay workloads through the same scheduling core."
    );
    std::process::ExitCode::from(2)
}
