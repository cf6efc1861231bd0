//! Shared helpers of gridsched's end-to-end tests: finding the shared traces and replaying one
//! through a policy with the library API.

pub mod arbitrary;
pub mod compose;
pub mod live;
pub mod replicas;
pub mod slurm;
pub mod up;

use gridsched_core::model::MachineId;
use gridsched_core::policy::PolicyConfig;
use gridsched_workload::{JobSource, NormalizeOptions, traces};
use gridsim::{EngineOptions, Hooks, RunReport, simulate};
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The path of a shared trace, or `None` after printing `SKIPPED` when it is absent (a failure
/// under `CI=true`). The directory is `traces::dir()`: `$GRIDSCHED_TRACES`, default
/// `../shared/traces` beside the workspace root.
pub fn trace(file: &str) -> Option<PathBuf> {
    traces::for_test(file)
}

/// Gives up on a test that cannot run on this machine (no Docker engine, no browser): under
/// `CI=true` a failure saying why, else a loud `SKIPPED` line on stderr, after which the caller
/// returns.
pub fn skip(why: &str) {
    skip_in(why, traces::ci());
}

/// [`skip`] with the CI flag given.
pub fn skip_in(why: &str, ci: bool) {
    if ci {
        panic!("{why} — under CI=true this test must run, not skip");
    }
    // Straight to stderr, not `eprintln!`, which the test harness captures and hides on success.
    let rule = "=".repeat(60);
    let _ = writeln!(std::io::stderr(), "\n{rule}\nSKIPPED: {why}\n{rule}\n");
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

#[cfg(test)]
mod tests {
    #[test]
    fn a_skip_outside_ci_returns() {
        super::skip_in("nothing to run here", false);
    }

    #[test]
    #[should_panic(expected = "no engine — under CI=true this test must run, not skip")]
    fn a_skip_under_ci_fails() {
        super::skip_in("no engine", true);
    }
}
