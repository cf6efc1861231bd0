//! Helpers of the docker-compose tests: finding a Docker engine with compose (or skipping, a
//! failure under `CI=true`), building the images without a registry, a compose project taken
//! down with its volumes when dropped, and containers' addresses.

use std::path::Path;
use std::process::{Command, Stdio};

/// The workspace's root.
pub const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// Whether `cmd` runs and succeeds (its output discarded).
pub fn ok(cmd: &mut Command) -> bool {
    cmd.stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The compose command (`docker-compose`, or `docker compose`) of a usable Docker engine; `None`
/// after [`crate::skip`] saying what is missing (a failure under `CI=true`).
pub fn compose_or_skip(what: &str) -> Option<Vec<&'static str>> {
    if !ok(Command::new("docker").arg("info")) {
        crate::skip(&format!(
            "{what}: no usable Docker engine here (`docker info` failed)"
        ));
        return None;
    }
    if ok(Command::new("docker-compose").arg("version")) {
        Some(vec!["docker-compose"])
    } else if ok(Command::new("docker").args(["compose", "version"])) {
        Some(vec!["docker", "compose"])
    } else {
        crate::skip(&format!(
            "{what}: Docker runs but has no compose (neither `docker-compose version` nor \
             `docker compose version` works)"
        ));
        None
    }
}

/// Runs one of the repository's image scripts (`docker/...`) with `args`; panics with its
/// errors when it fails.
pub fn build_image(script: &str, args: &[&str]) {
    let built = Command::new(Path::new(ROOT).join(script))
        .args(args)
        .output()
        .expect("an image script");
    assert!(
        built.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&built.stderr)
    );
}

/// Builds the gridsched image `tag` from one `gridctl` binary, which serves every service
/// (`docker/build-offline.sh --gridctl-bin`).
pub fn build_gridsched_image(gridctl: &str, tag: &str) {
    build_image(
        "docker/build-offline.sh",
        &["--gridctl-bin", gridctl, "--tag", tag],
    );
}

/// A free TCP port on the loopback interface, below the ephemeral range (see
/// [`crate::live::free_addr`]).
pub fn free_port() -> u16 {
    let addr = crate::live::free_addr();
    addr.rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("a port")
}

/// A compose project of the repository's files, taken down (with its volumes) when dropped.
#[derive(Debug)]
pub struct Project {
    /// The compose command.
    pub cmd: Vec<&'static str>,
    /// The project's name.
    pub name: String,
    /// Its compose files, relative to the root (the first is the project's directory).
    pub files: Vec<&'static str>,
    /// Its variables.
    pub env: Vec<(String, String)>,
}

impl Project {
    /// Runs compose with `args`.
    pub fn run(&self, args: &[&str]) -> std::process::Output {
        let (prog, pre) = self.cmd.split_first().expect("command");
        let mut c = Command::new(prog);
        c.args(pre).args(["-p", &self.name]);
        for f in &self.files {
            c.arg("-f").arg(Path::new(ROOT).join(f));
        }
        c.args(args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .output()
            .expect("run compose")
    }

    /// The id of a service's container.
    pub fn container(&self, service: &str) -> String {
        let o = self.run(&["ps", "-q", service]);
        String::from_utf8_lossy(&o.stdout).trim().to_owned()
    }

    /// Runs compose with `args`; panics with its errors when it fails.
    pub fn must(&self, args: &[&str]) {
        let o = self.run(args);
        assert!(
            o.status.success(),
            "compose {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }

    /// The name compose gives one of the project's networks.
    pub fn network(&self, name: &str) -> String {
        format!("{}_{name}", self.name)
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        let _ = self.run(&["down", "-v", "--remove-orphans"]);
    }
}

/// The address of the host on a Docker network (its gateway): where the containers reach a
/// server the test runs.
pub fn gateway(network: &str) -> String {
    let o = Command::new("docker")
        .args([
            "network",
            "inspect",
            "-f",
            "{{(index .IPAM.Config 0).Gateway}}",
            network,
        ])
        .output()
        .expect("docker network inspect");
    let ip = String::from_utf8_lossy(&o.stdout).trim().to_owned();
    assert!(!ip.is_empty(), "no gateway of {network}");
    ip
}

/// The address of a container on a network.
pub fn container_ip(container: &str, network: &str) -> String {
    let o = Command::new("docker")
        .args([
            "inspect",
            "-f",
            &format!("{{{{(index .NetworkSettings.Networks \"{network}\").IPAddress}}}}"),
            container,
        ])
        .output()
        .expect("docker inspect");
    let ip = String::from_utf8_lossy(&o.stdout).trim().to_owned();
    assert!(!ip.is_empty(), "no address of {container} on {network}");
    ip
}
