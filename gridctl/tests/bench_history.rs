//! `gridctl bench --history`, small: it runs its jobs to their end on its own grid, reads them
//! back (a `get` of a job it never ran would fail it), kills and restarts the meta-scheduler and
//! waits for it to serve the last job from its store, and reports each figure. The figures
//! themselves are measured in the docs, not asserted here.

use std::process::Command;

#[test]
fn the_history_benchmark_runs_reads_back_and_restarts() {
    let out = Command::new(env!("CARGO_BIN_EXE_gridctl"))
        .args([
            "bench",
            "--history",
            "300",
            "--batch",
            "100",
            "--samples",
            "20",
        ])
        .output()
        .expect("run gridctl bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for line in [
        "300 zero-second jobs run to their end in ",
        "over that history, 20 samples each: get p50 ",
        "restart (killed -9, started again on its store): listening after ",
    ] {
        assert!(stdout.contains(line), "no `{line}` in:\n{stdout}");
    }
    // Only the history is measured: the other figures are not.
    assert!(!stdout.contains("unary submissions"), "{stdout}");
}
