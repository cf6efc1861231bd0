//! `gridctl up` as a child process, for the client's end-to-end tests: started with its
//! arguments, the meta-scheduler's endpoint read from its first line, and stopped with SIGTERM
//! (its whole grid with it) when dropped, even when the test fails.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `gridctl up`.
#[derive(Debug)]
pub struct Up {
    /// The process.
    pub child: Child,
    /// The meta-scheduler's URL.
    pub endpoint: String,
    /// Its standard output after the first line (the rest of the banner).
    pub out: BufReader<ChildStdout>,
}

impl Up {
    /// Runs `gridctl up ARGS --dir DIR` with the `gridctl` binary at `gridctl`.
    pub fn start(gridctl: &Path, args: &[&str], dir: &Path) -> Up {
        let mut child = Command::new(gridctl)
            .arg("up")
            .args(args)
            .arg("--dir")
            .arg(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn gridctl up");
        let out = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut up = Up {
            child,
            endpoint: String::new(),
            out,
        };
        let mut first = String::new();
        up.out
            .read_line(&mut first)
            .expect("read gridctl up's banner");
        up.endpoint = first
            .trim()
            .strip_prefix("gridsched grid up: meta-scheduler at ")
            .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
            .to_owned();
        up
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
}

impl Drop for Up {
    fn drop(&mut self) {
        self.terminate();
        let t = Instant::now();
        while matches!(self.child.try_wait(), Ok(None)) && t.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `gridctl replay` of `trace` (with `args`) on a fresh `gridctl up` of the grid file `grid`: the
/// JSON report, and each job's record (`--records`), in the slice's order.
pub fn replay(
    gridctl: &Path,
    grid: &str,
    trace: &Path,
    args: &[&str],
) -> (serde_json::Value, Vec<serde_json::Value>) {
    run_replay(gridctl, grid, trace, args, false)
}

/// `gridctl replay --up` of `trace` (with `args`): the replay starts the grid file `grid` itself
/// (and can lose its sites); the JSON report and each job's record.
pub fn replay_up(
    gridctl: &Path,
    grid: &str,
    trace: &Path,
    args: &[&str],
) -> (serde_json::Value, Vec<serde_json::Value>) {
    run_replay(gridctl, grid, trace, args, true)
}

fn run_replay(
    gridctl: &Path,
    grid: &str,
    trace: &Path,
    args: &[&str],
    up: bool,
) -> (serde_json::Value, Vec<serde_json::Value>) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut cmd = Command::new(gridctl);
    let _grid = (!up).then(|| {
        let g = Up::start(
            gridctl,
            &["--grid", grid, "--listen", "127.0.0.1:0", "--http", "none"],
            dir.path(),
        );
        cmd.args(["--endpoint", &g.endpoint]);
        g
    });
    let records = dir.path().join("records.jsonl");
    let out = cmd
        .args(["--json", "replay", "--trace"])
        .arg(trace)
        .args(args)
        .args(up.then_some("--up"))
        .args(["--grid", grid, "--records"])
        .arg(&records)
        .output()
        .expect("run gridctl replay");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let report = serde_json::from_slice(&out.stdout).expect("a JSON report");
    let lines = std::fs::read_to_string(&records)
        .expect("the records")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON record"))
        .collect();
    (report, lines)
}
