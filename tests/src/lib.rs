//! Shared helpers of gridsched's end-to-end tests: finding the shared traces and replaying one
//! through a policy with the library API.

pub mod arbitrary;
pub mod live;

use gridsched_core::model::MachineId;
use gridsched_core::policy::PolicyConfig;
use gridsched_workload::{JobSource, NormalizeOptions, traces};
use gridsim::{EngineOptions, Hooks, RunReport, simulate};
use std::path::{Path, PathBuf};

/// The path of a shared trace, or `None` after printing `SKIPPED` when it is absent (a failure
/// under `CI=true`). The directory is `$GRIDSCHED_TRACES`, default `../shared/traces` beside the
/// workspace.
pub fn trace(file: &str) -> Option<PathBuf> {
    traces::for_test(
        file,
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/traces")),
    )
}

/// Replays `path` on its header's machine size through `policy`.
pub fn replay(
    path: &Path,
    policy: PolicyConfig,
    norm: NormalizeOptions,
    engine: EngineOptions,
) -> RunReport {
    let mut source = JobSource::open(path, None, norm).expect("trace opens");
    let procs = source
        .normalized_procs()
        .expect("header gives the machine size");
    let mut p = policy.build_single(MachineId(0), procs);
    simulate(
        p.as_mut(),
        &[procs],
        source.by_ref(),
        &engine,
        Hooks::default(),
    )
    .expect("replay succeeds")
}
