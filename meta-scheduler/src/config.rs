//! Configuration of the meta-scheduler (`docs/operations.md`): listen address, state directory, the
//! classification (`[classifier]`, the core's `ClassifierConfig`) and dispatch (`[dispatch]`, the
//! core's `DispatchConfig`: the same names and defaults as `gridsim`), the links to the local
//! schedulers, and the sites with their endpoints and static capabilities.
//!
//! Read from a TOML file; unknown keys are refused and every error names the offending key.
//! `[tls]` and `[auth]` (`docs/security.md`) secure the client API and the links to the sites.

use gridsched_core::classify::ClassifierConfig;
use gridsched_core::dispatch::{DispatchConfig, PairOverhead};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The whole configuration file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetaConfig {
    /// Address the gRPC server listens on.
    #[serde(default = "default_listen")]
    pub listen: String,
    /// Directory of the durable store.
    #[serde(default = "default_state_dir")]
    pub state_dir: PathBuf,
    /// Classification (D4.1). `max` is the highest priority and the length of the Load / Count
    /// arrays; `licence_types = 0` means the number of distinct licences of the configured sites.
    #[serde(default)]
    pub classifier: ClassifierConfig,
    /// Dispatch strategy and options (D4.2); its `max_priority` always follows `classifier.max`.
    #[serde(default)]
    pub dispatch: DispatchConfig,
    /// Links to the local schedulers.
    #[serde(default)]
    pub links: LinkConfig,
    /// Address of the HTTP endpoint: Prometheus `/metrics` and the web dashboard at `/`;
    /// absent = no endpoint. Also accepted as `http_listen`.
    #[serde(default, alias = "http_listen")]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// TLS of the client API, of the HTTP endpoint and of the calls to the local schedulers
    /// (whose certificates are checked against `tls.ca`).
    #[serde(default)]
    pub tls: gridsched_security::TlsConfig,
    /// Authentication of the client API.
    #[serde(default)]
    pub auth: AuthConfig,
    /// How big a submitted job may be: longer text, more arguments or a longer estimate is
    /// refused at submission with INVALID_ARGUMENT naming the field. Keys and defaults:
    /// `max_name_bytes` = 256 (`user`, `client_token`), `max_path_bytes` = 4096
    /// (`command.program`, `command.working_directory`), `max_args` = 4096, `max_env` = 1024,
    /// `max_command_bytes` = 131072 (program, arguments, environment and working directory
    /// together), `max_inputs` = 1024, `max_estimate_s` = 31536000 (a year: the grid-wide cap,
    /// see also each site's `max_estimate_s`), `max_array_tasks` = 100000.
    #[serde(default)]
    pub limits: gridsched_proto::SpecLimits,
    /// The sites of the grid, one cluster (local scheduler) each.
    #[serde(default)]
    pub sites: Vec<SiteConfig>,
    /// WAN overheads of particular pairs of sites for jobs split over sites (`multi-site`),
    /// where they differ from `dispatch.multi_site.overhead_pct`.
    #[serde(default)]
    pub wan: Vec<WanPair>,
    /// Faults injected on purpose, for tests and failure drills; all off by default.
    #[serde(default)]
    pub faults: FaultConfig,
    /// How long finished jobs and job events stay in memory (they stay in the store).
    #[serde(default)]
    pub retention: crate::history::RetentionConfig,
    /// The durable store's settings.
    #[serde(default)]
    pub store: crate::store::StoreConfig,
    /// This replica's name, address and lease times, for replicas sharing a PostgreSQL store.
    #[serde(default)]
    pub replica: ReplicaConfig,
    /// Who may submit urgent jobs, and up to which level; without it, nobody.
    #[serde(default)]
    pub urgent: crate::urgent::UrgentConfig,
    /// Uploads of job inputs: where they are kept, their size limits.
    #[serde(default)]
    pub inputs: crate::inputs::InputsConfig,
    /// The grid's links, counted by the strategies that estimate completion; absent = data
    /// costs nothing.
    #[serde(default)]
    pub network: Option<gridsched_core::dispatch::NetworkConfig>,
    /// JSON Lines file to which the grid runner's inputs and decisions are appended (a header
    /// at every start), for `gridsim rerun`; absent = none.
    #[serde(default)]
    pub input_log: Option<PathBuf>,
    /// The grid's accounts and users with their shares, and the fair-share factor the
    /// classifier weighs (`classifier.weights.fairshare`); a job whose user has no account is
    /// refused. Absent: nobody is charged.
    #[serde(default)]
    pub fairshare: Option<gridsched_core::fairshare::FairShareConfig>,
    /// How fast each user may submit (`per_user` jobs per second, `burst` at once); a job beyond
    /// is refused with RESOURCE_EXHAUSTED saying when to retry. Default: no limit.
    #[serde(default)]
    pub submit_rate: crate::rate::RateConfig,
}

/// The `[faults]` section: delays injected on purpose so that a test or a failure drill can hit
/// a narrow window (a site or the meta-scheduler itself dying inside it). Keep it off in
/// production.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FaultConfig {
    /// A co-allocation waits this long (milliseconds) between recording its holds, PENDING, and
    /// asking the sites to commit them: the window where a site may go down or the
    /// meta-scheduler die between the two phases. 0: no wait.
    pub pause_before_commit_ms: u64,
    /// A push of an uploaded input to a site waits this long (milliseconds) after each chunk: the
    /// window where the meta-scheduler or the site may die in the middle of a transfer. 0: no
    /// wait.
    pub push_pause_ms: u64,
}

/// The WAN overhead between two sites.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WanPair {
    /// The two sites, by name.
    pub sites: [String; 2],
    /// p between them, in percent: a job split over sites runs `(100 + p) / 100` times as long,
    /// p the largest among the pairs of its sites.
    pub overhead_pct: u32,
}

/// How the meta-scheduler talks to the local schedulers.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LinkConfig {
    /// A site whose local scheduler could not be reached for this long (milliseconds) is marked
    /// down: it receives no new job and its jobs that have not started (not sent yet, or waiting
    /// there without a start claim) are dispatched again elsewhere.
    pub site_down_after_ms: u64,
    /// Delay before reconnecting to an unreachable local scheduler (milliseconds).
    pub retry_ms: u64,
    /// Timeout of one call to a local scheduler (milliseconds).
    pub call_timeout_ms: u64,
    /// Enqueue calls in flight at once per site.
    pub forward_concurrency: usize,
    /// How often the sites' state is polled for strategies that read it (milliseconds).
    pub poll_ms: u64,
    /// Interval of the HTTP/2 pings on each link (milliseconds); a link whose ping is not answered
    /// within twice this is broken, so a partitioned site is noticed within about three times it.
    pub keepalive_ms: u64,
    /// Dispatch jobs under the start-claim protocol: a site starts a job only once the
    /// meta-scheduler has durably granted it, so the jobs waiting at a site that goes down can be
    /// withdrawn and run elsewhere without ever running twice. Off: a job sent to a site stays
    /// there (it waits for the site to come back), and starts save one round trip.
    pub start_claims: bool,
    /// Co-allocation of a split job: how long a site holds a fragment's tentative reservation
    /// before it lapses unless committed (milliseconds).
    pub hold_lease_ms: u32,
    /// Co-allocation: rounds of holds without a common start before the job is planned again.
    pub coallocation_rounds: u32,
    /// A split job whose fragment failed (the others killed) is requeued — planned and
    /// co-allocated again as a new run — up to this many times; 0: it fails.
    pub fragment_requeues: u32,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            site_down_after_ms: 3_000,
            retry_ms: 250,
            call_timeout_ms: 5_000,
            forward_concurrency: 32,
            poll_ms: 500,
            keepalive_ms: 1_000,
            start_claims: true,
            hold_lease_ms: 10_000,
            coallocation_rounds: 8,
            fragment_requeues: 0,
        }
    }
}

/// The `[auth]` section: the users allowed to call the client API, by bearer token. No user =
/// authentication off (anyone may do anything: the development default).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    /// `[[auth.users]]`: `user`, `token` or `token_file`, `admin`.
    #[serde(default)]
    pub users: Vec<gridsched_security::token::UserToken>,
}

/// One site and its cluster's static capabilities.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SiteConfig {
    /// Site (and cluster) name.
    pub name: String,
    /// Address of its local scheduler, e.g. `http://127.0.0.1:50061`.
    #[serde(default)]
    pub endpoint: String,
    /// Its machines.
    pub machines: Vec<MachineConfig>,
    /// Its machines are a partition of alike nodes whose local policy (a classic or planning one)
    /// runs a job over several of them: the widest job it takes is all their processors, not its
    /// largest machine's. The same machines as its local scheduler's, which decides it.
    #[serde(default)]
    pub multi_node: bool,
    /// Names of the licences available at the site.
    #[serde(default)]
    pub licences: Vec<String>,
    /// The longest estimate (`estimate_s`, seconds) the site runs, like a batch partition's time
    /// limit: the same value as its local scheduler's `max_estimate_s`. Absent = the grid-wide
    /// `limits.max_estimate_s`, which also caps it. A job no site's limit admits is refused at
    /// submission; one that some site admits is only dispatched to those sites.
    #[serde(default)]
    pub max_estimate_s: Option<i64>,
    /// The secret this site's local scheduler expects from the meta-scheduler (its
    /// `auth.meta_token`), inline ...
    #[serde(default)]
    pub token: Option<String>,
    /// ... or in a file.
    #[serde(default)]
    pub token_file: Option<PathBuf>,
    /// Whether the site stages jobs' inputs in (default true; a Slurm-backed site does not yet,
    /// and `gridctl up` says so): a job with inputs is dispatched only to sites that do, and
    /// refused at submission when none can run it.
    #[serde(default = "default_true")]
    pub stages_inputs: bool,
    /// Whether the site holds advance reservations (default true; a Slurm-backed site does not,
    /// and `gridctl up` says so): a job split over sites has its fragments co-allocated in
    /// reservations only at sites that do.
    #[serde(default = "default_true")]
    pub holds_reservations: bool,
    /// The grid users whose jobs the site runs, when its local scheduler maps each to a local
    /// account (its `[users]` table) and has no catch-all `"*"` entry: the same names. Absent =
    /// every user's. A job is dispatched only to the sites that run its owner's jobs, and
    /// refused at submission when none does.
    #[serde(default)]
    pub users: Option<Vec<String>>,
}

fn default_true() -> bool {
    true
}

/// One machine of a site.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineConfig {
    /// Machine name.
    pub name: String,
    /// Its processors.
    pub processors: u32,
    /// Its benchmark score (default 1): the same as its local scheduler's. A job's estimate
    /// scaled by its own score over the fastest machine's must fit a site's limit.
    #[serde(default = "one")]
    pub benchmark: u32,
    /// Its memory in KiB, the same as its local scheduler's; absent = not known (a job's
    /// `memory_kb` is then not checked against it). A job asking for more memory than any
    /// machine of the grid has is refused at submission.
    #[serde(default)]
    pub memory_kb: Option<u64>,
}

fn one() -> u32 {
    1
}

fn default_listen() -> String {
    "127.0.0.1:50051".into()
}
fn default_state_dir() -> PathBuf {
    PathBuf::from("meta-state")
}

impl Default for MetaConfig {
    fn default() -> Self {
        MetaConfig {
            listen: default_listen(),
            state_dir: default_state_dir(),
            classifier: ClassifierConfig::default(),
            dispatch: DispatchConfig::default(),
            links: LinkConfig::default(),
            metrics_listen: None,
            tls: Default::default(),
            auth: Default::default(),
            limits: Default::default(),
            sites: Vec::new(),
            wan: Vec::new(),
            faults: FaultConfig::default(),
            retention: Default::default(),
            store: Default::default(),
            replica: Default::default(),
            urgent: Default::default(),
            inputs: Default::default(),
            network: None,
            input_log: None,
            fairshare: None,
            submit_rate: Default::default(),
        }
    }
}

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The TOML is malformed or has a wrong key (the message names it).
    #[error("invalid configuration: {0}")]
    Parse(String),
    /// A value is inconsistent; names the key.
    #[error("invalid configuration: `{key}`: {reason}")]
    Invalid {
        /// The offending key.
        key: String,
        /// Why.
        reason: String,
    },
}

impl SiteConfig {
    /// The widest job the site runs: all its processors on a multi-node site, else its largest
    /// machine's.
    pub fn widest_job(&self) -> u32 {
        let procs = self.machines.iter().map(|m| m.processors);
        match self.multi_node {
            true => procs.sum(),
            false => procs.max().unwrap_or(0),
        }
    }

    /// The longest estimate the site runs: its own limit within the grid's `cap`.
    pub fn max_estimate(&self, cap: i64) -> i64 {
        self.max_estimate_s.map_or(cap, |m| m.min(cap))
    }

    /// The secret sent to this site's local scheduler, if any.
    pub fn token(&self) -> Result<Option<String>, gridsched_security::token::TokenError> {
        gridsched_security::token::read_secret(
            self.token.as_deref(),
            self.token_file.as_deref(),
            "token",
        )
    }
}

impl MetaConfig {
    /// Parses and checks a TOML text.
    pub fn from_toml(text: &str) -> Result<MetaConfig, ConfigError> {
        let mut cfg: MetaConfig =
            toml::from_str(text).map_err(|e| ConfigError::Parse(e.to_string()))?;
        cfg.check()?;
        cfg.complete();
        Ok(cfg)
    }

    /// Reads, parses and checks a TOML file.
    pub fn from_file(path: &Path) -> Result<MetaConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: path.to_owned(),
            source,
        })?;
        MetaConfig::from_toml(&text)
    }

    /// Checks the values that serde cannot.
    pub fn check(&self) -> Result<(), ConfigError> {
        let bad = |key: String, reason: &str| ConfigError::Invalid {
            key,
            reason: reason.into(),
        };
        self.classifier
            .validate()
            .map_err(|e| ConfigError::Invalid {
                key: "classifier".into(),
                reason: e.to_string(),
            })?;
        if let Some(f) = &self.fairshare {
            // The meta-scheduler gives the users their ids.
            let mut f = f.clone();
            for (i, a) in f.accounts.iter_mut().enumerate() {
                a.id = Some(i as u32);
            }
            gridsched_core::fairshare::Shares::new(f).map_err(|e| ConfigError::Invalid {
                key: "fairshare".into(),
                reason: e.to_string(),
            })?;
        }
        if let Err((key, reason)) = self.submit_rate.check() {
            return Err(bad(key.into(), &reason));
        }
        if self.links.forward_concurrency == 0 {
            return Err(bad(
                "links.forward_concurrency".into(),
                "must be at least 1",
            ));
        }
        let l = &self.links;
        if l.retry_ms == 0 || l.call_timeout_ms == 0 || l.poll_ms == 0 || l.keepalive_ms == 0 {
            return Err(bad(
                "links".into(),
                "retry_ms, call_timeout_ms, poll_ms and keepalive_ms must be positive",
            ));
        }
        if l.hold_lease_ms == 0 {
            return Err(bad("links.hold_lease_ms".into(), "must be positive"));
        }
        if let Err((key, reason)) = self.replica.check() {
            return Err(bad(key, &reason));
        }
        if self.retention.events == 0 {
            return Err(bad("retention.events".into(), "must be at least 1"));
        }
        if self.store.backend == crate::store::BackendKind::Postgres && self.store.url.is_none() {
            return Err(bad(
                "store.url".into(),
                "needed with backend = \"postgres\" (postgres://user:password@host:port/database)",
            ));
        }
        if self.store.cache_mib == 0 {
            return Err(bad("store.cache_mib".into(), "must be at least 1"));
        }
        if l.coallocation_rounds == 0 {
            return Err(bad(
                "links.coallocation_rounds".into(),
                "must be at least 1",
            ));
        }
        self.tls.validate().map_err(|e| ConfigError::Invalid {
            key: "tls".into(),
            reason: e.to_string(),
        })?;
        self.limits
            .validate()
            .map_err(|key| bad(format!("limits.{key}"), "must be at least 1"))?;
        for (i, u) in self.auth.users.iter().enumerate() {
            gridsched_core::model::check_name(&u.user).map_err(|why| {
                bad(
                    format!("auth.users[{i}].user"),
                    &format!("`{}` is not a valid name: {why}", u.user.escape_default()),
                )
            })?;
        }
        gridsched_security::Tokens::new(&self.auth.users).map_err(|e| ConfigError::Invalid {
            key: "auth".into(),
            reason: e.to_string(),
        })?;
        for (i, w) in self.wan.iter().enumerate() {
            for (k, name) in w.sites.iter().enumerate() {
                if !self.sites.iter().any(|s| &s.name == name) {
                    return Err(bad(format!("wan[{i}].sites[{k}]"), "no such site"));
                }
            }
            if w.sites[0] == w.sites[1] {
                return Err(bad(format!("wan[{i}].sites"), "two different sites"));
            }
        }
        if let Some(n) = &self.network {
            let names: Vec<&str> = self.sites.iter().map(|s| s.name.as_str()).collect();
            n.resolve(&names).map_err(|(key, why)| bad(key, &why))?;
        }
        let mut names = std::collections::HashSet::new();
        for (i, s) in self.sites.iter().enumerate() {
            s.token().map_err(|e| ConfigError::Invalid {
                key: format!("sites[{i}]"),
                reason: e.to_string(),
            })?;
            if s.name.is_empty() {
                return Err(bad(format!("sites[{i}].name"), "must not be empty"));
            }
            if !names.insert(&s.name) {
                return Err(bad(format!("sites[{i}].name"), "duplicate site name"));
            }
            if s.machines.is_empty() {
                return Err(bad(
                    format!("sites[{i}].machines"),
                    "a site needs a machine",
                ));
            }
            if let Some(users) = &s.users {
                if users.is_empty() {
                    return Err(bad(
                        format!("sites[{i}].users"),
                        "an empty list runs nobody's jobs (leave the key out for every user's)",
                    ));
                }
                for (j, u) in users.iter().enumerate() {
                    gridsched_core::model::check_name(u)
                        .map_err(|e| bad(format!("sites[{i}].users[{j}]"), &e))?;
                }
            }
            if s.max_estimate_s.is_some_and(|m| m < 1) {
                return Err(bad(
                    format!("sites[{i}].max_estimate_s"),
                    "must be at least 1",
                ));
            }
            let url = s.endpoint.starts_with("http://") || s.endpoint.starts_with("https://");
            if !s.endpoint.is_empty() && !url {
                return Err(bad(
                    format!("sites[{i}].endpoint"),
                    "must be a URL such as http://127.0.0.1:50061",
                ));
            }
            for (j, m) in s.machines.iter().enumerate() {
                if m.processors == 0 {
                    return Err(bad(
                        format!("sites[{i}].machines[{j}].processors"),
                        "must be at least 1",
                    ));
                }
                if m.benchmark == 0 {
                    return Err(bad(
                        format!("sites[{i}].machines[{j}].benchmark"),
                        "must be at least 1",
                    ));
                }
                if m.memory_kb == Some(0) {
                    return Err(bad(
                        format!("sites[{i}].machines[{j}].memory_kb"),
                        "must be at least 1 (or absent: not known)",
                    ));
                }
                if s.multi_node && m.processors != s.machines[0].processors {
                    return Err(bad(
                        format!("sites[{i}].multi_node"),
                        &format!(
                            "a job spans machines only on alike nodes, and {} has {} processors \
                             where {} has {}",
                            m.name, m.processors, s.machines[0].name, s.machines[0].processors
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Fills the derived values: the dispatch arrays follow the classifier's `max`, and a
    /// `licence_types` of 0 becomes the size of the grid's licence catalogue.
    pub fn complete(&mut self) {
        self.dispatch.max_priority = self.classifier.max;
        let index = |name: &str| self.sites.iter().position(|s| s.name == name);
        let pairs: Vec<PairOverhead> = self
            .wan
            .iter()
            .filter_map(|w| {
                Some(PairOverhead {
                    sites: [index(&w.sites[0])? as u32, index(&w.sites[1])? as u32],
                    overhead_pct: w.overhead_pct,
                })
            })
            .collect();
        if !pairs.is_empty() {
            self.dispatch.multi_site.pairs = pairs;
        }
        if self.classifier.licence_types == 0 {
            let mut all: Vec<&String> = self.sites.iter().flat_map(|s| &s.licences).collect();
            all.sort();
            all.dedup();
            self.classifier.licence_types = all.len();
        }
    }

    /// The highest priority.
    pub fn max_priority(&self) -> u32 {
        u32::from(self.classifier.max)
    }
}

/// The `[replica]` section: this replica's name and address in the lease, and the lease's
/// times.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReplicaConfig {
    /// The replica's name in the lease (default: its address). Two replicas must not share it:
    /// a replica takes a lease held under its own name at once (its earlier life, restarted).
    pub name: Option<String>,
    /// The address clients reach this replica at, which followers name in their answers
    /// (default: the listen address, with this host's name for an unspecified one).
    pub advertise: Option<String>,
    /// How long a lease lasts without renewal, in milliseconds: a dead leader is replaced after
    /// at most this plus `poll_ms` and the time to load the open jobs.
    pub lease_ms: u64,
    /// How often the leader renews its lease (milliseconds).
    pub renew_ms: u64,
    /// How often a follower asks for the lease (milliseconds).
    pub poll_ms: u64,
}

impl Default for ReplicaConfig {
    fn default() -> Self {
        ReplicaConfig {
            name: None,
            advertise: None,
            lease_ms: 3000,
            renew_ms: 1000,
            poll_ms: 500,
        }
    }
}

impl ReplicaConfig {
    /// Checks the times: positive, and a renewal well inside the lease.
    pub fn check(&self) -> Result<(), (String, String)> {
        if self.lease_ms == 0 || self.renew_ms == 0 || self.poll_ms == 0 {
            return Err((
                "replica".into(),
                "lease_ms, renew_ms and poll_ms must be positive".into(),
            ));
        }
        if self.renew_ms.saturating_mul(2) > self.lease_ms {
            return Err((
                "replica.renew_ms".into(),
                format!(
                    "{} is more than half of replica.lease_ms ({}): one late renewal would \
                     lose the lease",
                    self.renew_ms, self.lease_ms
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fair-share description is checked at the door: a user's parent that is no account, a
    /// dampening below 1 and a misspelt key are named.
    #[test]
    fn a_wrong_fair_share_is_refused_naming_it() {
        let err = |text: &str| MetaConfig::from_toml(text).unwrap_err().to_string();
        let e = err(
            "[fairshare]\naccounts = [{ name = \"ann\", kind = \"user\", parent = \"X\", shares = 1 }]",
        );
        assert!(
            e.contains("fairshare") && e.contains("`X` is not an account"),
            "{e}"
        );
        let e = err("[fairshare]\ndampening = 0.5\naccounts = [{ name = \"A\", shares = 1 }]");
        assert!(e.contains("`dampening`"), "{e}");
        let e = err("[fairshare]\nhalf_lfe = 5\naccounts = []");
        assert!(e.contains("half_lfe"), "{e}");
        let ok = MetaConfig::from_toml(
            "[fairshare]\naccounts = [{ name = \"A\", shares = 1 }, { name = \"ann\", kind = \"user\", parent = \"A\", shares = 1 }]",
        )
        .unwrap();
        assert_eq!(ok.fairshare.unwrap().half_life, 7 * 24 * 3600);
    }

    /// A token's user follows the names' character set, and the key is named.
    #[test]
    fn a_tokens_user_is_a_valid_name() {
        let with = |user: &str| {
            MetaConfig::from_toml(&format!(
                "[[auth.users]]\nuser = {user:?}\ntoken = \"0123456789abcdef0123\"\n"
            ))
        };
        let e = with("ann lee").unwrap_err().to_string();
        assert!(
            e.contains("auth.users[0].user") && e.contains("`ann lee` is not a valid name"),
            "{e}"
        );
        with("ann").unwrap();
    }

    #[test]
    fn parses_sites_and_defaults() {
        let cfg = MetaConfig::from_toml(
            "[[sites]]\nname = \"a\"\nendpoint = \"http://x\"\nlicences = [\"matlab\"]\n\
             machines = [{ name = \"m1\", processors = 8 }]\n",
        )
        .unwrap();
        assert_eq!(cfg.sites[0].machines[0].processors, 8);
        assert_eq!(cfg.max_priority(), 10);
        assert_eq!(cfg.classifier.licence_types, 1, "the grid's catalogue");
        assert_eq!(cfg.dispatch.strategy.as_str(), "load-ordering");
        assert_eq!(cfg.listen, "127.0.0.1:50051");
    }

    #[test]
    fn wrong_key_is_named() {
        let e = MetaConfig::from_toml("[[sites]]\nname = \"a\"\nmachins = []\n").unwrap_err();
        assert!(e.to_string().contains("machins"), "{e}");
        let two = "[[sites]]\nname = \"a\"\nmachines = [{ name = \"m1\", processors = 8 }]\n\
                   [[sites]]\nname = \"b\"\nmachines = [{ name = \"m2\", processors = 8 }]\n";
        let c = MetaConfig::from_toml(&format!(
            "[dispatch]\nstrategy = \"multi-site\"\n{two}\
             [[wan]]\nsites = [\"b\", \"a\"]\noverhead_pct = 25\n"
        ))
        .unwrap();
        assert_eq!(c.dispatch.multi_site.overhead_over([0, 1].into_iter()), 25);
        let e = MetaConfig::from_toml(&format!(
            "{two}[[wan]]\nsites = [\"a\", \"c\"]\noverhead_pct = 25\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("wan[0].sites[1]"), "{e}");
        let e = MetaConfig::from_toml("[dispatch]\nstrategy = \"fastest\"\n").unwrap_err();
        assert!(e.to_string().contains("fastest"), "{e}");
        let e = MetaConfig::from_toml("[classifier]\nmax = 0\n").unwrap_err();
        assert!(e.to_string().contains("max"), "{e}");
        let e = MetaConfig::from_toml(
            "[[sites]]\nname = \"a\"\nmachines = [{ name = \"m\", processors = 0 }]\n",
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("sites[0].machines[0].processors"),
            "{e}"
        );
        let e = MetaConfig::from_toml(
            "[[sites]]\nname = \"a\"\nmulti_node = true\nmachines = [{ name = \"m\", \
             processors = 4 }, { name = \"n\", processors = 8 }]\n",
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("sites[0].multi_node") && e.to_string().contains("alike"),
            "{e}"
        );
        let e = MetaConfig::from_toml("[limits]\nmax_name_byte = 3\n").unwrap_err();
        assert!(e.to_string().contains("max_name_byte"), "{e}");
        let e = MetaConfig::from_toml("[limits]\nmax_estimate_s = 0\n").unwrap_err();
        assert!(e.to_string().contains("limits.max_estimate_s"), "{e}");
        let e = MetaConfig::from_toml(
            "[[sites]]\nname = \"a\"\nmax_estimate_s = -1\nmachines = [{ name = \"m\", processors = 1 }]\n",
        )
        .unwrap_err();
        assert!(e.to_string().contains("sites[0].max_estimate_s"), "{e}");
        let site = |users: &str| {
            MetaConfig::from_toml(&format!(
                "[[sites]]\nname = \"a\"\nusers = {users}\nmachines = [{{ name = \"m\", processors = 1 }}]\n"
            ))
        };
        let e = site("[]").unwrap_err().to_string();
        assert!(
            e.contains("sites[0].users") && e.contains("runs nobody's jobs"),
            "{e}"
        );
        let e = site("[\"alice\", \"../x\"]").unwrap_err().to_string();
        assert!(e.contains("sites[0].users[1]"), "{e}");
        assert_eq!(
            site("[\"alice\"]").unwrap().sites[0].users,
            Some(vec!["alice".to_string()])
        );
        let e = MetaConfig::from_toml("[store]\nbackend = \"postgres\"\n").unwrap_err();
        assert!(e.to_string().contains("store.url"), "{e}");
        let e = MetaConfig::from_toml("[store]\nbackend = \"mysql\"\n").unwrap_err();
        assert!(e.to_string().contains("mysql"), "{e}");
        let e = MetaConfig::from_toml("[retention]\nevents = 0\n").unwrap_err();
        assert!(e.to_string().contains("retention.events"), "{e}");
        let e = MetaConfig::from_toml("[retention]\nfinished = 3\n").unwrap_err();
        assert!(e.to_string().contains("finished"), "{e}");
        let e = MetaConfig::from_toml("[submit_rate]\nper_user = 5\n").unwrap_err();
        assert!(e.to_string().contains("submit_rate.burst"), "{e}");
        let e = MetaConfig::from_toml("[submit_rate]\nper_user = -1\nburst = 3\n").unwrap_err();
        assert!(e.to_string().contains("submit_rate.per_user"), "{e}");
    }

    #[test]
    fn limits_default_and_override() {
        let cfg = MetaConfig::from_toml(
            "[limits]\nmax_estimate_s = 7200\n[[sites]]\nname = \"a\"\nmax_estimate_s = 600\n\
             machines = [{ name = \"m\", processors = 1 }]\n[[sites]]\nname = \"b\"\n\
             machines = [{ name = \"m2\", processors = 1 }]\n",
        )
        .unwrap();
        assert_eq!(cfg.limits.max_name_bytes, 256);
        assert_eq!(cfg.limits.max_command_bytes, 128 * 1024);
        assert_eq!(cfg.sites[0].max_estimate(cfg.limits.max_estimate_s), 600);
        assert_eq!(cfg.sites[1].max_estimate(cfg.limits.max_estimate_s), 7200);
        assert_eq!(MetaConfig::default().limits.max_estimate_s, 365 * 86_400);
    }

    #[test]
    fn the_ordering_count_is_a_dispatch_option() {
        use gridsched_core::dispatch::OrderingCount;
        assert_eq!(
            MetaConfig::default().dispatch.ordering_count,
            OrderingCount::AtLeast
        );
        let cfg = MetaConfig::from_toml("[dispatch]\nordering_count = \"equal\"\n").unwrap();
        assert_eq!(cfg.dispatch.ordering_count, OrderingCount::Equal);
        let e = MetaConfig::from_toml("[dispatch]\nordering_count = \"exact\"\n").unwrap_err();
        assert!(e.to_string().contains("exact"), "{e}");
    }
}
