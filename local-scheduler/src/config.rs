//! Configuration of a local scheduler (`docs/operations.md`): its cluster's machines and floating
//! licence pools, the policy (a [`PolicyConfig`], the same one `gridsim` uses), agent liveness and
//! lost-agent handling, and the state directory. Read from TOML; unknown keys are errors that name
//! the key.

use anyhow::{Context, bail};
use gridsched_core::model::{
    Cluster, ClusterId, LicenceId, LicencePool, LicenceType, Machine, MachineId, Platform, Site,
    SiteId,
};
use gridsched_core::policy::PolicyConfig;
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// What happens to the jobs of an agent that stopped sending heartbeats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum LostAgent {
    /// The jobs end in state LOST (their outcome is unknown).
    #[default]
    Fail,
    /// The jobs go back to the queue and are started again elsewhere.
    Requeue,
}

/// What happens to the other parts of a multi-node job when one part fails or is killed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum PartFailure {
    /// The other parts are killed at once (the batch systems' default for a parallel job).
    #[default]
    KillOthers,
    /// The other parts run to their own end; the job fails once every part has ended.
    LetRun,
}

/// One machine of the cluster.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineConfig {
    /// Unique name; the machine's agent registers under it.
    pub name: String,
    /// Processors.
    pub processors: u32,
    /// Benchmark score (default 1).
    #[serde(default = "one")]
    pub benchmark: u32,
    /// Memory in KiB; absent = not known. A job asking for more than the largest machine's is
    /// refused.
    #[serde(default)]
    pub memory_kb: Option<u64>,
    /// Node-locked licences.
    #[serde(default)]
    pub node_locked: Vec<String>,
}

/// A floating licence pool.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolConfig {
    /// Licence name.
    pub name: String,
    /// Copies active at the same time.
    pub copies: u32,
    /// Machines where a copy can be activated; absent = every machine of the cluster.
    #[serde(default)]
    pub machines: Option<Vec<String>>,
}

fn one() -> u32 {
    1
}
fn default_listen() -> SocketAddr {
    "127.0.0.1:50061".parse().expect("valid address")
}
fn default_interval() -> u32 {
    500
}
fn default_lost() -> u32 {
    3000
}
fn default_max_estimate() -> i64 {
    365 * 86_400
}

/// The whole configuration.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// gRPC listen address (port 0 = any free port, printed at start).
    #[serde(default = "default_listen")]
    pub listen: SocketAddr,
    /// Cluster name.
    pub cluster: String,
    /// Site name.
    #[serde(default)]
    pub site: String,
    /// The local policy.
    #[serde(default)]
    pub policy: PolicyConfig,
    /// Machines.
    pub machines: Vec<MachineConfig>,
    /// Floating licence pools.
    #[serde(default)]
    pub licences: Vec<PoolConfig>,
    /// Agent heartbeat interval in milliseconds.
    #[serde(default = "default_interval")]
    pub heartbeat_interval_ms: u32,
    /// An agent silent for this long is lost (milliseconds).
    #[serde(default = "default_lost")]
    pub lost_after_ms: u32,
    /// What happens to a lost agent's jobs.
    #[serde(default)]
    pub lost_agent: LostAgent,
    /// What a failed or killed part of a multi-node job does to the others.
    #[serde(default)]
    pub part_failure: PartFailure,
    /// Directory of the durable state; absent = in memory only (lost at exit).
    #[serde(default)]
    pub state_dir: Option<PathBuf>,
    /// With a `state_dir`: how many of the newest job events, and of the newest ended jobs, are
    /// kept in memory (default 10000); older ones are read from the state store when asked for
    /// (a meta-scheduler resuming from an old sequence, an Enqueue of a job that ended long
    /// ago), so memory stays bounded however many jobs the site has run. Without a state
    /// directory every event is kept in memory.
    #[serde(default = "default_events_in_memory")]
    pub events_in_memory: usize,
    /// Where the jobs' standard output and error are kept once the agents hand them over
    /// (`<dir>/<job>/stdout|stderr`); absent = `<state_dir>/outputs`, or a directory of the
    /// system's temporary directory without a state directory.
    #[serde(default)]
    pub outputs_dir: Option<PathBuf>,
    /// Seconds a job's output is kept after it was last written (its job ended); then it is
    /// removed and asking for it says so. Default: 7 days.
    #[serde(default = "default_output_retention")]
    pub output_retention_s: u64,
    /// Where the site keeps the jobs' inputs (uploads pushed by the meta-scheduler, URLs it
    /// fetched), by content; absent = `state_dir/cache` (a temporary directory without one).
    #[serde(default)]
    pub cache_dir: Option<PathBuf>,
    /// How long a URL's content is taken as unchanged (seconds, default 3600): another job
    /// naming the URL without a digest within that time reads the cached copy.
    #[serde(default = "default_url_cache")]
    pub url_cache_s: u64,
    /// Faults injected on purpose, for tests and failure drills; all off by default.
    #[serde(default)]
    pub faults: Faults,
    /// Bytes of output kept per user, the oldest jobs' removed first; 0 (the default) = no
    /// limit.
    #[serde(default)]
    pub output_max_bytes_per_user: u64,
    /// Address of the Prometheus `/metrics` endpoint; absent = no endpoint.
    #[serde(default)]
    pub metrics_listen: Option<SocketAddr>,
    /// TLS of the gRPC server and of `/metrics` (`docs/security.md`).
    #[serde(default)]
    pub tls: gridsched_security::TlsConfig,
    /// Who may call: the meta-scheduler and the agents, by two separate secrets.
    #[serde(default)]
    pub auth: AuthConfig,
    /// File to which the cluster runner's inputs and decisions are appended (JSON Lines, a header
    /// at every start), for `gridsim rerun`; absent = no log.
    #[serde(default)]
    pub input_log: Option<PathBuf>,
    /// Seconds an overrunning job's predicted end moves each time it is reached; absent = one
    /// more estimate (the reference simulator's rule, the simulator's default too).
    #[serde(default)]
    pub overrun_extension_s: Option<i64>,
    /// The longest estimate (`estimate_s`, seconds) the cluster runs, like a batch partition's
    /// time limit; a longer job is refused at Enqueue with INVALID_ARGUMENT. Default 31536000
    /// (a year). Give the meta-scheduler's `[[sites]]` entry the same `max_estimate_s`.
    #[serde(default = "default_max_estimate")]
    pub max_estimate_s: i64,
    /// Who runs the cluster's jobs: `native` (the policy over the machines' site agents) or
    /// `slurm` (an existing Slurm cluster, reached through slurmrestd: the `[slurm]` section).
    #[serde(default)]
    pub backend: Backend,
    /// The Slurm cluster of a `backend = "slurm"` site.
    #[serde(default)]
    pub slurm: Option<SlurmConfig>,
    /// Grid users mapped to local accounts (`alice = "gs-alice"`, `bob = "gs-bob:proj"`,
    /// `"*" = "pool"` for every other user): each job runs as its owner's account, which needs
    /// agents running as root; a job whose owner has no entry is refused at Enqueue. Absent = every
    /// job runs as its agent's own account (docs/security.md). Give the meta-scheduler's
    /// `[[sites]]` entry the named users as `users` (unless `"*"` is mapped).
    #[serde(default)]
    pub users: crate::accounts::UserMap,
}

/// Who runs a site's jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Backend {
    /// The configured policy schedules the machines, whose site agents run the jobs.
    #[default]
    Native,
    /// The jobs are handed to a Slurm cluster, which schedules and runs them.
    Slurm,
}

fn default_slurm_user() -> String {
    "root".into()
}
fn default_api() -> String {
    "v0.0.38".into()
}
fn default_nice_step() -> u32 {
    1000
}
fn default_poll() -> u64 {
    500
}
fn default_down() -> u64 {
    5000
}
fn default_call_timeout() -> u64 {
    10_000
}
/// The `[faults]` section: delays injected on purpose so that a test or a failure drill can hit
/// a narrow window. Keep it off in production.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Faults {
    /// An agent's read of an input (`ReadBlob`) waits this long (milliseconds) after each chunk:
    /// the window where the agent may die in the middle of a transfer. 0: no wait.
    pub read_blob_pause_ms: u64,
}

fn default_events_in_memory() -> usize {
    10_000
}

fn default_url_cache() -> u64 {
    3600
}

fn default_output_retention() -> u64 {
    7 * 24 * 3600
}

fn default_work_dir() -> PathBuf {
    PathBuf::from("slurm-work")
}

/// The `[slurm]` section of a Slurm-backed site (`docs/slurm-site.md`): where slurmrestd listens,
/// whose JWT it is called with, how jobs map onto Slurm's fields, and how often the cluster is
/// read.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlurmConfig {
    /// slurmrestd's base address, e.g. `http://127.0.0.1:6820`.
    pub rest_url: String,
    /// The Slurm user the calls are made as (`X-SLURM-USER-NAME`); the jobs run as that user.
    #[serde(default = "default_slurm_user")]
    pub user: String,
    /// Its JWT inline ...
    #[serde(default)]
    pub token: Option<String>,
    /// ... or in a file, read again whenever slurmrestd refuses it (so that a renewed token is
    /// picked up); neither = the `SLURM_JWT` environment variable, as Slurm's own tools.
    #[serde(default)]
    pub token_file: Option<PathBuf>,
    /// The OpenAPI plugin of slurmrestd to use.
    #[serde(default = "default_api")]
    pub api_version: String,
    /// The partition the jobs go to; absent = Slurm's default partition.
    #[serde(default)]
    pub partition: Option<String>,
    /// The account the jobs are charged to; absent = the user's default account.
    #[serde(default)]
    pub account: Option<String>,
    /// The QOS of each user class (`gold`, `silver`, `regular`); a class not listed = none given.
    #[serde(default)]
    pub qos: std::collections::BTreeMap<String, String>,
    /// The meta-scheduler's priority p (0..=255) becomes Slurm's `nice` = this × (255 − p), so a
    /// higher grid priority runs first among the site's jobs. 0 = no nice value.
    #[serde(default = "default_nice_step")]
    pub nice_per_priority: u32,
    /// How often the cluster's jobs, nodes and licences are read (milliseconds).
    #[serde(default = "default_poll")]
    pub poll_ms: u64,
    /// Slurm unreachable for this long (milliseconds) = the site is down for the meta-scheduler:
    /// its calls are refused with UNAVAILABLE and its event streams end.
    #[serde(default = "default_down")]
    pub down_after_ms: u64,
    /// Timeout of one call to slurmrestd (milliseconds).
    #[serde(default = "default_call_timeout")]
    pub call_timeout_ms: u64,
    /// Processors' worth of granted jobs released to Slurm beyond those it runs, so that its
    /// queue never runs dry between two reads; absent = the site's processors.
    #[serde(default)]
    pub release_ahead_cpus: Option<u32>,
    /// Jobs' directories, `<work_dir>/<job>/stdout|stderr` (also the working directory of a job
    /// that names none); on storage the Slurm nodes share with this scheduler, writable by `user`.
    #[serde(default = "default_work_dir")]
    pub work_dir: PathBuf,
}

/// The `[auth]` section: the secret the meta-scheduler must present (for Enqueue, Cancel,
/// Status, JobEvents) and the one the agents must present (RegisterAgent, Heartbeat,
/// AgentOrders), each inline or in a file; absent = not checked.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    /// The meta-scheduler's secret.
    #[serde(default)]
    pub meta_token: Option<String>,
    /// ... in a file.
    #[serde(default)]
    pub meta_token_file: Option<PathBuf>,
    /// The agents' secret.
    #[serde(default)]
    pub agent_token: Option<String>,
    /// ... in a file.
    #[serde(default)]
    pub agent_token_file: Option<PathBuf>,
}

impl AuthConfig {
    /// The two secrets: the meta-scheduler's, the agents'.
    pub fn secrets(
        &self,
    ) -> anyhow::Result<(
        gridsched_security::SharedSecret,
        gridsched_security::SharedSecret,
    )> {
        use gridsched_security::token::read_secret;
        let meta = read_secret(
            self.meta_token.as_deref(),
            self.meta_token_file.as_deref(),
            "auth.meta_token",
        )?;
        let agent = read_secret(
            self.agent_token.as_deref(),
            self.agent_token_file.as_deref(),
            "auth.agent_token",
        )?;
        Ok((
            gridsched_security::SharedSecret::new(meta),
            gridsched_security::SharedSecret::new(agent),
        ))
    }
}

impl Config {
    /// Where the jobs' inputs are kept ([`Config::cache_dir`]'s default applied).
    pub fn cache_dir(&self) -> PathBuf {
        self.kept_in(&self.cache_dir, "cache")
    }

    /// `dir` if given, else `state_dir/<name>`, else a directory of the system's temporary one.
    fn kept_in(&self, dir: &Option<PathBuf>, name: &str) -> PathBuf {
        match (dir, &self.state_dir) {
            (Some(d), _) => d.clone(),
            (None, Some(s)) => s.join(name),
            (None, None) => std::env::temp_dir().join(format!(
                "gridsched-{name}-{}-{}",
                self.cluster,
                std::process::id()
            )),
        }
    }

    /// Where the jobs' output is kept ([`Config::outputs_dir`]'s default applied).
    pub fn outputs_dir(&self) -> PathBuf {
        self.kept_in(&self.outputs_dir, "outputs")
    }

    /// Parses a TOML text; errors name the offending key.
    pub fn from_toml(text: &str) -> anyhow::Result<Config> {
        let c: Config = toml::from_str(text).map_err(|e| anyhow::anyhow!("{e}"))?;
        c.policy
            .check()
            .map_err(|e| anyhow::anyhow!("policy.{e}"))?;
        c.platform()?;
        c.tls.validate()?;
        c.auth.secrets()?;
        c.check_backend()?;
        c.users.check().map_err(|e| anyhow::anyhow!("{e}"))?;
        if c.users.maps() && c.backend == Backend::Slurm {
            bail!("users: not supported with backend = \"slurm\" (its jobs run as slurm.user)");
        }
        Ok(c)
    }

    /// Checks that `[slurm]` comes with `backend = "slurm"` and its values make sense.
    pub fn check_backend(&self) -> anyhow::Result<()> {
        let Some(s) = &self.slurm else {
            if self.backend == Backend::Slurm {
                bail!("slurm: the section is required with backend = \"slurm\"");
            }
            return Ok(());
        };
        if self.backend != Backend::Slurm {
            bail!("slurm: only read with backend = \"slurm\"");
        }
        if !(s.rest_url.starts_with("http://") || s.rest_url.starts_with("https://")) {
            bail!("slurm.rest_url: `{}` is not an http(s) address", s.rest_url);
        }
        if s.user.is_empty() {
            bail!("slurm.user: must not be empty");
        }
        if s.token.is_some() && s.token_file.is_some() {
            bail!("slurm.token_file: give either slurm.token or slurm.token_file");
        }
        for class in s.qos.keys() {
            if !["gold", "silver", "regular"].contains(&class.as_str()) {
                bail!("slurm.qos.{class}: unknown user class (gold, silver, regular)");
            }
        }
        if s.poll_ms == 0 {
            bail!("slurm.poll_ms: must be at least 1");
        }
        if s.down_after_ms <= s.poll_ms {
            bail!("slurm.down_after_ms: must exceed slurm.poll_ms");
        }
        if s.call_timeout_ms == 0 {
            bail!("slurm.call_timeout_ms: must be at least 1");
        }
        Ok(())
    }

    /// Whether the cluster runs jobs over several machines: alike machines under a policy that
    /// sees them as one pool (a classic or planning policy, `policy.partition` on).
    pub fn multi_node(&self) -> bool {
        let Ok(platform) = self.platform() else {
            return false;
        };
        self.machines.len() > 1
            && self
                .policy
                .build(&platform, ClusterId(0))
                .is_ok_and(|p| p.single_machine().is_some())
    }

    /// Reads a TOML file.
    pub fn load(path: &Path) -> anyhow::Result<Config> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        Config::from_toml(&text).with_context(|| format!("in {}", path.display()))
    }

    /// The one-cluster platform the policy schedules: machines in configuration order (machine
    /// id = index), licence catalogue = pool licences then node-locked ones.
    pub fn platform(&self) -> anyhow::Result<Platform> {
        if self.machines.is_empty() {
            bail!("machines: at least one machine is needed");
        }
        if self.max_estimate_s < 1 {
            bail!("max_estimate_s: must be at least 1");
        }
        if self.events_in_memory < 1 {
            bail!("events_in_memory: must be at least 1");
        }
        if self.heartbeat_interval_ms == 0 || self.lost_after_ms <= self.heartbeat_interval_ms {
            bail!("lost_after_ms: must exceed heartbeat_interval_ms (> 0)");
        }
        let mut licences: Vec<String> = Vec::new();
        let mut lic = |name: &str| -> LicenceId {
            if let Some(i) = licences.iter().position(|l| l == name) {
                return LicenceId(i as u16);
            }
            licences.push(name.to_string());
            LicenceId((licences.len() - 1) as u16)
        };
        let mut machines = Vec::new();
        for (i, m) in self.machines.iter().enumerate() {
            if m.processors == 0 {
                bail!("machines[{i}].processors: must be at least 1");
            }
            if m.benchmark == 0 {
                bail!("machines[{i}].benchmark: must be at least 1");
            }
            if m.memory_kb == Some(0) {
                bail!("machines[{i}].memory_kb: must be at least 1 (or absent: not known)");
            }
            let mut mm = Machine::new(MachineId(i as u32), &m.name, m.processors, m.benchmark);
            mm.memory_kb = m.memory_kb;
            mm.cluster = ClusterId(0);
            mm.node_locked = m.node_locked.iter().map(|n| lic(n)).collect();
            machines.push(mm);
        }
        let mut pools = Vec::new();
        for (i, p) in self.licences.iter().enumerate() {
            let ms = match &p.machines {
                None => machines.iter().map(|m| m.id).collect(),
                Some(names) => {
                    let mut v = Vec::new();
                    for (j, n) in names.iter().enumerate() {
                        let Some(m) = machines.iter().find(|m| &m.name == n) else {
                            bail!("licences[{i}].machines[{j}]: unknown machine `{n}`");
                        };
                        v.push(m.id);
                    }
                    v
                }
            };
            pools.push(LicencePool {
                licence: lic(&p.name),
                copies: p.copies,
                machines: ms,
            });
        }
        let platform = Platform {
            licences: licences
                .into_iter()
                .map(|name| LicenceType { name })
                .collect(),
            clusters: vec![Cluster {
                id: ClusterId(0),
                name: self.cluster.clone(),
                site: SiteId(0),
                machines: machines.iter().map(|m| m.id).collect(),
                pools,
                space_sharing: true,
            }],
            machines,
            sites: vec![Site {
                id: SiteId(0),
                name: self.site.clone(),
                clusters: vec![ClusterId(0)],
            }],
        };
        platform.validate().map_err(|e| anyhow::anyhow!("{e}"))?;
        self.policy
            .build(&platform, ClusterId(0))
            .map_err(|e| anyhow::anyhow!("policy: {e}"))?;
        Ok(platform)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = r#"
cluster = "c1"
lost_agent = "requeue"
[policy]
policy = "easy"
[[machines]]
name = "m1"
processors = 4
[[machines]]
name = "m2"
processors = 8
benchmark = 2
[[licences]]
name = "matlab"
copies = 2
"#;

    #[test]
    fn parses_and_builds_platform() {
        let c = Config::from_toml(OK).unwrap();
        assert_eq!(c.lost_agent, LostAgent::Requeue);
        let p = c.platform().unwrap();
        assert_eq!(p.machines.len(), 2);
        assert_eq!(p.clusters[0].pools[0].copies, 2);
        assert_eq!(p.clusters[0].pools[0].machines.len(), 2);
        assert_eq!(p.machines[0].memory_kb, None, "not known");
        let with =
            |kb: &str| OK.replace("benchmark = 2", &format!("benchmark = 2\nmemory_kb = {kb}"));
        let p = Config::from_toml(&with("1048576"))
            .unwrap()
            .platform()
            .unwrap();
        assert_eq!(p.machines[1].memory_kb, Some(1 << 20));
        let e = Config::from_toml(&with("0")).and_then(|c| c.platform().map(|_| c));
        assert!(
            format!("{:#}", e.unwrap_err()).contains("machines[1].memory_kb"),
            "names the key"
        );
    }

    /// Planning rules are read from `[policy.planning.rules]`, and refused for a policy that
    /// does not plan, naming the key.
    #[test]
    fn planning_rules_are_read_and_checked() {
        let toml = |policy: &str, day: &str| {
            format!(
                "cluster = \"c1\"\n[policy]\npolicy = \"{policy}\"\n[policy.planning.rules]\n\
                 list = [\"width-cap 75% {day} 06-20\"]\nutc_offset_h = 1\n\
                 [[machines]]\nname = \"m1\"\nprocessors = 16\n"
            )
        };
        let c = Config::from_toml(&toml("planning-fcfs", "mon-fri")).unwrap();
        let r = c.policy.planning.rules;
        assert_eq!(r.iter().count(), 1);
        assert_eq!(r.utc_offset_h, 1);
        let e = Config::from_toml(&toml("easy", "mon-fri"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("policy.planning: the easy policy takes no `planning` options"),
            "{e}"
        );
        // Any table the chosen policy does not read is refused the same way.
        let e = Config::from_toml(
            "cluster = \"c1\"\n[policy]\npolicy = \"fb-mod\"\n[policy.gang]\nmpl = 2\n\
             [[machines]]\nname = \"m1\"\nprocessors = 16\n",
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "policy.gang: the fb-mod policy takes no `gang` options (only gs, bgs, mgs, mbgs, \
             bgs-adaptive do); fb-mod takes heuristics"
        );
        let e = Config::from_toml(&toml("dynp", "mon-fry"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown day `fry`"), "{e}");
    }

    /// Two alike machines under EASY are one pool of 8 processors (jobs span both machines);
    /// FB keeps one machine per job. A failed part kills the others unless told otherwise.
    #[test]
    fn a_live_partition_pools_alike_machines() {
        let text = |policy: &str, extra: &str| {
            format!(
                "cluster = \"c1\"\n{extra}[policy]\npolicy = \"{policy}\"\n\
                 [[machines]]\nname = \"m1\"\nprocessors = 4\n\
                 [[machines]]\nname = \"m2\"\nprocessors = 4\n"
            )
        };
        let c = Config::from_toml(&text("easy", "")).unwrap();
        assert!(c.policy.partition);
        assert_eq!(c.part_failure, PartFailure::KillOthers);
        let p = c.platform().unwrap();
        let policy = c.policy.build(&p, ClusterId(0)).unwrap();
        assert_eq!(policy.single_machine(), Some((MachineId(0), 8)));
        assert!(c.multi_node());
        let c = Config::from_toml(&text("fb-mod", "part_failure = \"let-run\"\n")).unwrap();
        assert_eq!(c.part_failure, PartFailure::LetRun);
        let policy = c.policy.build(&p, ClusterId(0)).unwrap();
        assert_eq!(policy.single_machine(), None);
        assert!(!c.multi_node());
        let e = Config::from_toml(&text("easy", "part_failure = \"ignore\"\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("part_failure") || e.contains("ignore"), "{e}");
    }

    /// A gang site with MPL 0, or a context switch as long as its slice, and an urgent layer
    /// over a site of several unlike machines, are refused at start, naming the key.
    #[test]
    fn gang_and_urgent_options_are_checked_at_the_door() {
        let one = |policy: &str| {
            format!(
                "cluster = \"c1\"\n[policy]\npolicy = \"gs\"\n{policy}\n\
                 [[machines]]\nname = \"m1\"\nprocessors = 4\n"
            )
        };
        let c = Config::from_toml(&one("gang = { mpl = 2, slice = 2 }")).unwrap();
        assert_eq!((c.policy.gang.mpl, c.policy.gang.slice), (2, 2));
        for (opts, key) in [
            ("gang = { mpl = 0 }", "gang.mpl"),
            (
                "gang = { context_switch_pct = 100 }",
                "gang.context_switch_pct",
            ),
            ("gang = { slice = 0 }", "gang.slice"),
        ] {
            let e = format!("{:#}", Config::from_toml(&one(opts)).unwrap_err());
            assert!(e.contains(key), "{opts}: {e}");
        }
        let e = format!(
            "{:#}",
            Config::from_toml(&one("gang = { mlp = 2 }")).unwrap_err()
        );
        assert!(e.contains("mlp"), "{e}");
        let unlike = "cluster = \"c1\"\n[policy]\npolicy = \"fb-mod\"\n\
                      urgent = { mode = \"preempt\" }\n[[machines]]\nname = \"m1\"\n\
                      processors = 4\n[[machines]]\nname = \"m2\"\nprocessors = 8\n";
        let e = format!("{:#}", Config::from_toml(unlike).unwrap_err());
        assert!(
            e.contains("urgent") && e.contains("one space-shared machine"),
            "{e}"
        );
    }

    #[test]
    fn max_estimate_defaults_to_a_year() {
        assert_eq!(Config::from_toml(OK).unwrap().max_estimate_s, 365 * 86_400);
        let c = Config::from_toml(&format!("max_estimate_s = 600\n{OK}")).unwrap();
        assert_eq!(c.max_estimate_s, 600);
        let e = Config::from_toml(&format!("max_estimate_s = 0\n{OK}"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("max_estimate_s"), "{e}");
    }

    #[test]
    fn errors_name_the_key() {
        let e = Config::from_toml(&OK.replace("copies = 2", "copies = 2\ncopis = 3"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("copis"), "{e}");
        let e = Config::from_toml(&OK.replace("processors = 4", "processors = 0"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("machines[0].processors"), "{e}");
        let e = Config::from_toml(&OK.replace("\"requeue\"", "\"retry\""))
            .unwrap_err()
            .to_string();
        assert!(e.contains("lost_agent") || e.contains("retry"), "{e}");
    }
}
