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
