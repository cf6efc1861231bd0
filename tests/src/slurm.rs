//! The single-host Slurm of `scripts/slurm.sh` for the tests of Slurm-backed sites: where it is
//! (`GRIDSCHED_TEST_SLURM`, the script's directory, set by `.ci/run`), a token, its jobs as the
//! controller lists them, and restarts of its daemons.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Cancels the Slurm jobs of a site when dropped, so that a failed test leaves no job holding the
/// cluster for the next one.
#[derive(Debug)]
pub struct Cleanup(pub Slurm, pub &'static str);

impl Drop for Cleanup {
    fn drop(&mut self) {
        self.0.cancel_all(self.1);
    }
}

/// A running single-host Slurm.
#[derive(Debug, Clone)]
pub struct Slurm {
    /// The directory `scripts/slurm.sh start DIR` used.
    pub dir: PathBuf,
    /// slurmrestd's address.
    pub rest_url: String,
}

/// The Slurm of `GRIDSCHED_TEST_SLURM`, or `None` after a loud SKIPPED (a failure under CI=true).
pub fn cluster() -> Option<Slurm> {
    match std::env::var("GRIDSCHED_TEST_SLURM") {
        Ok(d) if !d.is_empty() => Some(Slurm {
            dir: PathBuf::from(d),
            rest_url: std::env::var("SLURM_REST_URL")
                .unwrap_or_else(|_| "http://127.0.0.1:6820".into()),
        }),
        _ => {
            crate::skip(
                "GRIDSCHED_TEST_SLURM is not set: .ci/run starts Slurm with scripts/slurm.sh \
                 and sets it to the script's directory",
            );
            None
        }
    }
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/slurm.sh")
}

impl Slurm {
    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("bash")
            .arg(script())
            .args(args)
            .arg(&self.dir)
            .output()
            .expect("run scripts/slurm.sh");
        assert!(
            out.status.success(),
            "slurm.sh {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Writes a fresh JWT for root into `file`.
    pub fn token_file(&self, file: &Path) -> PathBuf {
        std::fs::write(file, self.run(&["token"]).trim()).expect("write the token");
        file.to_path_buf()
    }

    /// The `[slurm]` section of a site using this cluster, its token in `token` and its jobs'
    /// directories under `work`.
    pub fn section(&self, token: &Path, work: &Path, extra: &str) -> String {
        format!(
            "rest_url = \"{}\"\ntoken_file = \"{}\"\nwork_dir = \"{}\"\npoll_ms = 200\n{extra}",
            self.rest_url,
            token.display(),
            work.display()
        )
    }

    /// The tag of the Slurm-backed site `cluster` whose state directory is `state_dir`.
    pub fn tag(cluster: &str, state_dir: &Path) -> String {
        let id = std::fs::read_to_string(state_dir.join("slurm-site-id")).expect("the site's id");
        format!("{cluster}.{}", id.trim())
    }

    /// Stops daemon `name` (`slurmctld`, `slurmd`, `slurmrestd`) with `signal` (`TERM`: it
    /// shuts down cleanly, slurmctld saving its state; `KILL`: it crashes).
    pub fn kill(&self, name: &str, signal: &str) {
        let pid = std::fs::read_to_string(self.dir.join("run").join(format!("{name}.pid")))
            .expect("its pid file");
        let st = Command::new("kill")
            .args([&format!("-{signal}"), pid.trim()])
            .status()
            .expect("kill");
        assert!(st.success(), "kill {name}");
        // Wait for it to be gone, so that `start` sees it missing (slurmctld saving its state on
        // TERM may take several seconds).
        for _ in 0..600 {
            if !Path::new(&format!("/proc/{}", pid.trim())).exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// Starts whatever daemon is not running.
    pub fn start(&self) {
        self.run(&["start"]);
    }

    /// Cancels every Slurm job of the sites tagged `tag` (a cluster's name: all its incarnations)
    /// that has not ended: a test's leftovers.
    pub fn cancel_all(&self, tag: &str) {
        let live: Vec<String> = self
            .jobs_of(tag)
            .into_values()
            .flatten()
            .filter(|(_, st)| matches!(st.as_str(), "PENDING" | "RUNNING" | "SUSPENDED"))
            .map(|(id, _)| id.to_string())
            .collect();
        if live.is_empty() {
            return;
        }
        let _ = Command::new("scancel")
            .args(&live)
            .env("SLURM_CONF", self.dir.join("slurm.conf"))
            .status();
    }

    /// Slurm's jobs of the site tagged `tag` (`<cluster>.<incarnation>`, see [`Slurm::tag`]) as
    /// the controller lists them: grid job → (Slurm id, state) of each Slurm job named after it.
    pub fn jobs_of(&self, tag: &str) -> BTreeMap<u64, Vec<(u32, String)>> {
        let out = Command::new("scontrol")
            .args(["-o", "show", "job"])
            .env("SLURM_CONF", self.dir.join("slurm.conf"))
            .output()
            .expect("scontrol");
        let text = String::from_utf8_lossy(&out.stdout);
        let prefix = format!("gridsched.{tag}.");
        let mut jobs: BTreeMap<u64, Vec<(u32, String)>> = BTreeMap::new();
        for line in text.lines() {
            let field = |k: &str| {
                line.split_whitespace()
                    .find_map(|w| w.strip_prefix(k))
                    .unwrap_or_default()
                    .to_string()
            };
            let name = field("JobName=");
            let Some(rest) = name.strip_prefix(&prefix) else {
                continue;
            };
            // `<incarnation>.<job>.<run>` when `tag` is a cluster name, `<job>.<run>` when it is
            // the whole tag.
            let Some(job) = rest.rsplit('.').nth(1).and_then(|j| j.parse().ok()) else {
                continue;
            };
            let id = field("JobId=").parse().unwrap_or(0);
            jobs.entry(job).or_default().push((id, field("JobState=")));
        }
        jobs
    }
}
