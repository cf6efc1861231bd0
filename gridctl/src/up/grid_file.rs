//! The grid description `gridctl up` starts: sites with their machines, floating
//! licences and local policy, plus the meta-scheduler's dispatch strategy; and the configuration
//! files of each service generated from it. Unknown keys are refused, naming the key.

use serde::Deserialize;
use std::fmt::Write as _;
use std::path::Path;

/// The embedded default: four sites with different machines, licences and policies.
pub const DEFAULT: &str = include_str!("default_grid.toml");

/// A whole grid.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GridFile {
    /// Meta-scheduler options.
    #[serde(default)]
    pub meta: MetaPart,
    /// The sites.
    pub sites: Vec<SitePart>,
}

/// Meta-scheduler options.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetaPart {
    /// Dispatch strategy.
    #[serde(default = "default_dispatch")]
    pub dispatch: String,
    /// Sites ask before they start a job (`[links] start_claims` of the meta-scheduler), so a
    /// down site's waiting jobs can be dispatched again.
    #[serde(default = "yes")]
    pub start_claims: bool,
    /// The WAN overhead p in percent of a job split over sites; given, a job wider than every
    /// site is split over sites (co-allocated, its run time stretched by 1 + p), whatever the
    /// strategy; absent, only the `multi-site` strategy splits (with p = 0).
    #[serde(default)]
    pub wan_overhead_pct: Option<u32>,
    /// The meta-scheduler keeps its state in this PostgreSQL database (`[store] backend =
    /// "postgres"`, e.g. the URL `scripts/postgres.sh` prints) instead of its embedded store.
    #[serde(default)]
    pub postgres_url: Option<String>,
    /// Replicas of the meta-scheduler sharing that PostgreSQL store (default 1): one leads, the
    /// others follow and take over when it dies (`[replica]`, docs/live-grid.md).
    #[serde(default = "one_replica")]
    pub replicas: u32,
    /// Who may submit urgent jobs: the meta-scheduler's `[urgent]` section (`default`, and
    /// `allowance` by user).
    #[serde(default)]
    pub urgent: Option<toml::Table>,
    /// The grid's links, counted by the strategies that estimate completion: the
    /// meta-scheduler's `[network]` section (`submitters`, `between`, `[[links]]`, `data_blind`).
    #[serde(default)]
    pub network: Option<toml::Table>,
    /// How fast each user may submit: the meta-scheduler's `[submit_rate]` section (`per_user`,
    /// `burst`).
    #[serde(default)]
    pub submit_rate: Option<toml::Table>,
}

impl Default for MetaPart {
    fn default() -> Self {
        MetaPart {
            dispatch: default_dispatch(),
            start_claims: true,
            wan_overhead_pct: None,
            postgres_url: None,
            replicas: 1,
            urgent: None,
            network: None,
            submit_rate: None,
        }
    }
}

/// `table` as the TOML section `path` (e.g. `policy.urgent`), nested tables under it.
fn section(path: &[&str], table: &toml::Table) -> String {
    let mut t = toml::Value::Table(table.clone());
    for key in path.iter().rev() {
        let mut outer = toml::Table::new();
        outer.insert((*key).to_string(), t);
        t = toml::Value::Table(outer);
    }
    toml::to_string(&t).expect("a table renders")
}

fn yes() -> bool {
    true
}

fn one_replica() -> u32 {
    1
}

fn default_dispatch() -> String {
    "load-ordering".into()
}

/// One site: one cluster with its local scheduler.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SitePart {
    /// Site name.
    pub name: String,
    /// Local policy (gridsim's names: easy, fb-mod, conservative, ...).
    #[serde(default = "default_policy")]
    pub policy: String,
    /// Machines, one agent each.
    pub machines: Vec<MachinePart>,
    /// Floating licence pools.
    #[serde(default)]
    pub licences: Vec<LicencePart>,
    /// The longest estimate the site runs (seconds), given to its local scheduler and to the
    /// meta-scheduler's entry for it; absent = their default (a year).
    #[serde(default)]
    pub max_estimate_s: Option<i64>,
    /// A site that hands its jobs to an existing Slurm cluster: its local scheduler's `[slurm]`
    /// section (`rest_url`, `token_file`, ...; `work_dir` defaults to `work/<site>` in the grid's
    /// directory, beside the agents' `work/<machine>`). No agents are started; `machines` name Slurm's nodes and `policy` is
    /// not used.
    #[serde(default)]
    pub slurm: Option<toml::Table>,
    /// How the site serves urgent jobs: its local scheduler's `[policy.urgent]` (`mode`,
    /// `preempt_by`, `victims`); absent = urgent jobs queue like any other.
    #[serde(default)]
    pub urgent: Option<toml::Table>,
    /// The site's grid users and the local accounts their jobs run as (`{ alice = "gs-alice",
    /// "*" = "pool" }`): its local scheduler's `[users]` table, and the meta-scheduler's `users`
    /// of its entry (unless `"*"` maps every user). The agents must run as root (`sudo gridctl
    /// up`) to start jobs as these accounts.
    #[serde(default)]
    pub users: Option<toml::Table>,
}

fn default_policy() -> String {
    "easy".into()
}

/// One machine.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachinePart {
    /// Name.
    pub name: String,
    /// Processors.
    pub processors: u32,
    /// Benchmark score.
    #[serde(default = "one")]
    pub benchmark: u32,
    /// Memory in KiB; absent, `gridctl up` gives it this host's (its agents run here). A job
    /// asking for more than any machine has is refused at submission.
    #[serde(default)]
    pub memory_kb: Option<u64>,
}

fn one() -> u32 {
    1
}

/// One floating licence pool.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LicencePart {
    /// Licence name.
    pub name: String,
    /// Copies.
    pub copies: u32,
}

/// `s` as a TOML string. (Rust's `{:?}` is not TOML: it writes `\u{1b}` where TOML wants
/// `\u001B`, and the services would refuse the file.)
fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

/// A path as a TOML string (lossily, where it is not UTF-8).
fn toml_path(p: &Path) -> String {
    toml_str(&p.display().to_string())
}

fn quoted(items: impl Iterator<Item = String>) -> String {
    items.map(|s| toml_str(&s)).collect::<Vec<_>>().join(", ")
}

impl GridFile {
    /// The index of site `name`, in file order.
    pub fn site_index(&self, name: &str) -> Option<usize> {
        self.sites.iter().position(|s| s.name == name)
    }

    /// The sites' names, in file order.
    pub fn site_names(&self) -> Vec<&str> {
        self.sites.iter().map(|s| s.name.as_str()).collect()
    }

    /// Gives each machine whose memory the file leaves out this host's memory (`MemTotal` of
    /// `/proc/meminfo`), where it can be read: `gridctl up` runs every agent on this host.
    pub fn with_host_memory(self) -> GridFile {
        match site_agent::memory::total_kb() {
            Some(kb) => self.with_memory(kb),
            None => self,
        }
    }

    /// Gives each machine whose memory the file leaves out `kb` KiB.
    fn with_memory(mut self, kb: u64) -> GridFile {
        for m in self.sites.iter_mut().flat_map(|s| s.machines.iter_mut()) {
            m.memory_kb.get_or_insert(kb);
        }
        self
    }

    /// Parses a grid description.
    pub fn parse(text: &str) -> anyhow::Result<GridFile> {
        let g: GridFile = toml::from_str(text).map_err(|e| anyhow::anyhow!("grid file: {e}"))?;
        if g.sites.is_empty() {
            anyhow::bail!("grid file: `sites`: at least one site is needed");
        }
        if g.meta.replicas == 0 || (g.meta.replicas > 1 && g.meta.postgres_url.is_none()) {
            anyhow::bail!(
                "grid file: `meta.replicas`: {} replicas: one, or several sharing a \
                 `meta.postgres_url`",
                g.meta.replicas
            );
        }
        g.meta
            .dispatch
            .parse::<gridsched_core::dispatch::DispatchKind>()
            .map_err(|e| anyhow::anyhow!("grid file: `meta.dispatch`: {e}"))?;
        for (i, s) in g.sites.iter().enumerate() {
            if s.slurm.is_none() {
                gridsched_core::policy::PolicyKind::parse_cluster(&s.policy)
                    .or_else(|e| {
                        // A site of one machine, or of alike machines seen as one pool, may also
                        // run a single-machine policy.
                        match s.machines.len() == 1 || g.pools_machines(i) {
                            true => gridsched_core::policy::PolicyKind::parse_single(&s.policy),
                            false => Err(e),
                        }
                    })
                    .map_err(|e| anyhow::anyhow!("grid file: `sites[{i}].policy`: {e}"))?;
            }
            // The whole site as its local scheduler will read it (machines, licences, limits,
            // its `slurm` and `urgent` sections), so that `gridctl up` does not start a grid one
            // of whose services then refuses its configuration.
            local_scheduler::Config::from_toml(&g.local_toml(i, Path::new(".")))
                .map_err(|e| anyhow::anyhow!("grid file: `sites[{i}]`: {e:#}"))?;
        }
        // Likewise the meta-scheduler's (site names, `meta.network`, `meta.urgent`, ...).
        let endpoints = vec!["127.0.0.1:1".to_string(); g.sites.len()];
        let meta = g.meta_toml("127.0.0.1:0", None, Path::new("."), &endpoints);
        meta_scheduler::MetaConfig::from_toml(&meta)
            .map_err(|e| anyhow::anyhow!("grid file: for the meta-scheduler: {e}"))?;
        Ok(g)
    }

    /// Fuzz entry (the unit tests' bounded runs and `fuzz/`'s `cargo fuzz` target): `data` as a
    /// grid file must be refused or accepted without a panic, and the configurations `gridctl up`
    /// writes for an accepted one must be accepted by the services. Returns whether it was.
    #[cfg(any(test, fuzzing))]
    #[doc(hidden)]
    pub fn fuzz(data: &[u8]) -> bool {
        let Ok(text) = std::str::from_utf8(data) else {
            return false;
        };
        let Ok(g) = GridFile::parse(text) else {
            return false;
        };
        let g = g.with_memory(1 << 20);
        let dir = Path::new("/nonexistent/grid");
        for i in 0..g.sites.len() {
            let local = g.local_toml(i, dir);
            if let Err(e) = local_scheduler::Config::from_toml(&local) {
                panic!("accepted, but site {i}'s configuration is refused: {e:#}\n{local}");
            }
        }
        let endpoints: Vec<String> = (0..g.sites.len())
            .map(|i| format!("127.0.0.1:{}", 6000 + i))
            .collect();
        let meta = g.meta_toml("127.0.0.1:50051", Some("127.0.0.1:8080"), dir, &endpoints);
        if let Err(e) = meta_scheduler::MetaConfig::from_toml(&meta) {
            panic!("accepted, but the meta-scheduler's configuration is refused: {e}\n{meta}");
        }
        true
    }

    /// Whether site `i`'s local scheduler sees its machines as one pool and runs jobs over
    /// several of them.
    fn pools_machines(&self, i: usize) -> bool {
        local_scheduler::Config::from_toml(&self.local_toml(i, Path::new(".")))
            .is_ok_and(|c| c.multi_node())
    }

    /// The local scheduler's configuration of site `i`, with its state under `dir`.
    pub fn local_toml(&self, i: usize, dir: &Path) -> String {
        let s = &self.sites[i];
        let mut t = format!(
            "listen = \"127.0.0.1:0\"\ncluster = {}\nsite = {}\nstate_dir = {}\n\
             [policy]\npolicy = {}\n",
            toml_str(&s.name),
            toml_str(&s.name),
            toml_path(&dir.join(&s.name).join("state")),
            toml_str(&s.policy)
        );
        if let Some(m) = s.max_estimate_s {
            // A top-level key: it must come before the first table.
            t = format!("max_estimate_s = {m}\n{t}");
        }
        if let Some(u) = &s.urgent {
            t.push_str(&section(&["policy", "urgent"], u));
        }
        for m in &s.machines {
            let _ = write!(
                t,
                "[[machines]]\nname = {}\nprocessors = {}\nbenchmark = {}\n",
                toml_str(&m.name),
                m.processors,
                m.benchmark
            );
            if let Some(kb) = m.memory_kb {
                let _ = writeln!(t, "memory_kb = {kb}");
            }
        }
        for l in &s.licences {
            let _ = write!(
                t,
                "[[licences]]\nname = {}\ncopies = {}\n",
                toml_str(&l.name),
                l.copies
            );
        }
        if let Some(u) = &s.users {
            t.push_str(&section(&["users"], u));
        }
        if let Some(section) = &s.slurm {
            let mut section = section.clone();
            section
                .entry("work_dir")
                .or_insert_with(|| dir.join("work").join(&s.name).display().to_string().into());
            t = format!("backend = \"slurm\"\n{t}[slurm]\n{section}");
        }
        t
    }

    /// The meta-scheduler's configuration, given each site's local-scheduler address and the
    /// address of its HTTP endpoint (dashboard and metrics), if any.
    pub fn meta_toml(
        &self,
        listen: &str,
        http: Option<&str>,
        dir: &Path,
        endpoints: &[String],
    ) -> String {
        self.replica_toml(0, listen, http, dir, endpoints)
    }

    /// The configuration of replica `k` (from 0) of the meta-scheduler: [`GridFile::meta_toml`]
    /// with a replica name of its own.
    pub fn replica_toml(
        &self,
        k: usize,
        listen: &str,
        http: Option<&str>,
        dir: &Path,
        endpoints: &[String],
    ) -> String {
        let http = http.map_or(String::new(), |h| {
            format!("metrics_listen = {}\n", toml_str(h))
        });
        let wan = self.meta.wan_overhead_pct.map_or(String::new(), |p| {
            format!("split_wide = true\n[dispatch.multi_site]\noverhead_pct = {p}\n")
        });
        let mut t = format!(
            "listen = {}\n{http}state_dir = {}\n[dispatch]\nstrategy = {}\n{wan}\
             [links]\nstart_claims = {}\n",
            toml_str(listen),
            toml_path(&dir.join("meta-state")),
            toml_str(&self.meta.dispatch),
            self.meta.start_claims
        );
        if let Some(u) = &self.meta.urgent {
            t.push_str(&section(&["urgent"], u));
        }
        if let Some(n) = &self.meta.network {
            t.push_str(&section(&["network"], n));
        }
        if let Some(r) = &self.meta.submit_rate {
            t.push_str(&section(&["submit_rate"], r));
        }
        if let Some(url) = &self.meta.postgres_url {
            // Each replica, named, takes its lease back at once when restarted.
            let name = match k {
                0 => "meta".to_owned(),
                k => format!("meta-{}", k + 1),
            };
            let _ = write!(
                t,
                "[store]\nbackend = \"postgres\"\nurl = {}\n[replica]\nname = {}\n",
                toml_str(url),
                toml_str(&name)
            );
        }
        for (i, (s, ep)) in self.sites.iter().zip(endpoints).enumerate() {
            let machines = s
                .machines
                .iter()
                .map(|m| {
                    let memory = m
                        .memory_kb
                        .map_or(String::new(), |kb| format!(", memory_kb = {kb}"));
                    format!(
                        "{{ name = {}, processors = {}, benchmark = {}{memory} }}",
                        toml_str(&m.name),
                        m.processors,
                        m.benchmark
                    )
                })
                .collect::<Vec<_>>()
                .join(", ");
            let _ = write!(
                t,
                "[[sites]]\nname = {}\nendpoint = \"http://{ep}\"\nlicences = [{}]\nmachines = [{machines}]\n",
                toml_str(&s.name),
                quoted(s.licences.iter().map(|l| l.name.clone())),
            );
            if let Some(m) = s.max_estimate_s {
                let _ = writeln!(t, "max_estimate_s = {m}");
            }
            if let Some(u) = s.users.as_ref().filter(|u| !u.contains_key("*")) {
                let _ = writeln!(t, "users = [{}]", quoted(u.keys().cloned()));
            }
            // A Slurm-backed site does not stage inputs in yet, nor hold advance reservations.
            if s.slurm.is_some() {
                t.push_str("stages_inputs = false\nholds_reservations = false\n");
            }
            // Its local scheduler decides whether it runs jobs over several machines.
            if self.pools_machines(i) {
                t.push_str("multi_node = true\n");
            }
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_grid_gives_valid_service_configurations() {
        let g = GridFile::parse(DEFAULT).unwrap();
        assert_eq!(g.sites.len(), 4);
        let dir = Path::new("/tmp/x");
        for i in 0..4 {
            local_scheduler::Config::from_toml(&g.local_toml(i, dir)).unwrap();
        }
        let eps: Vec<String> = (0..4).map(|i| format!("127.0.0.1:{}", 6000 + i)).collect();
        let m = meta_scheduler::MetaConfig::from_toml(&g.meta_toml(
            "127.0.0.1:50051",
            Some("127.0.0.1:8080"),
            dir,
            &eps,
        ))
        .unwrap();
        assert_eq!(m.sites.len(), 4);
        assert_eq!(m.sites[1].licences, vec!["ansys", "matlab"]);
        // alpha's alike machines share a licence pool, so each job keeps to one of them.
        let widest: Vec<u32> = m.sites.iter().map(|s| s.widest_job()).collect();
        assert_eq!(widest, [8, 16, 4, 16]);
        assert!(m.sites.iter().all(|s| !s.multi_node));
        assert!(m.links.start_claims);
        // Jobs wider than every site are split, at 10 % WAN overhead.
        assert!(m.dispatch.splits() && m.dispatch.split_wide);
        assert_eq!(m.dispatch.multi_site.overhead_pct, 10);
    }

    /// Alike machines without a licence pool under a classic policy run a job over several
    /// machines: the meta-scheduler is told so.
    #[test]
    fn a_site_of_alike_machines_takes_multi_node_jobs() {
        let site = |policy: &str| {
            format!(
                "[[sites]]\nname = \"a\"\npolicy = \"{policy}\"\nmachines = [\
                 {{ name = \"m1\", processors = 4 }}, {{ name = \"m2\", processors = 4 }}]\n"
            )
        };
        let eps = ["127.0.0.1:6000".to_string()];
        for (policy, multi) in [("easy", true), ("fcfs", true), ("fb-mod", false)] {
            let g = GridFile::parse(&site(policy)).unwrap();
            let toml = g.meta_toml("127.0.0.1:0", None, Path::new("/tmp/x"), &eps);
            let m = meta_scheduler::MetaConfig::from_toml(&toml).unwrap();
            assert_eq!(m.sites[0].multi_node, multi, "{policy}");
            assert_eq!(m.sites[0].widest_job(), if multi { 8 } else { 4 });
        }
    }

    /// A machine's memory left out is given the host's; one given is kept; both reach the
    /// meta-scheduler's and the local scheduler's configurations.
    #[test]
    fn machines_without_memory_get_the_hosts() {
        let g = GridFile::parse(
            "[[sites]]\nname = \"a\"\nmachines = [{ name = \"m1\", processors = 2 }, \
             { name = \"m2\", processors = 2, memory_kb = 1024 }]\n",
        )
        .unwrap()
        .with_memory(4096);
        let eps = ["127.0.0.1:6000".to_string()];
        let m = meta_scheduler::MetaConfig::from_toml(&g.meta_toml(
            "127.0.0.1:0",
            None,
            Path::new("/tmp/x"),
            &eps,
        ))
        .unwrap();
        let kb: Vec<_> = m.sites[0].machines.iter().map(|m| m.memory_kb).collect();
        assert_eq!(kb, [Some(4096), Some(1024)]);
        let local = local_scheduler::Config::from_toml(&g.local_toml(0, Path::new("/tmp/x")))
            .unwrap()
            .platform()
            .unwrap();
        assert_eq!(local.machines[0].memory_kb, Some(4096));
    }

    #[test]
    fn start_claims_can_be_turned_off() {
        let g = GridFile::parse(
            "[meta]\nstart_claims = false\n[[sites]]\nname = \"a\"\nmachines = [{ name = \"m\", processors = 2 }]\n",
        )
        .unwrap();
        let eps = ["127.0.0.1:6000".to_string()];
        let toml = g.meta_toml("127.0.0.1:50051", None, Path::new("/tmp/x"), &eps);
        let m = meta_scheduler::MetaConfig::from_toml(&toml).unwrap();
        assert!(!m.links.start_claims, "{toml}");
        let g = GridFile::parse(
            "[meta]\npostgres_url = \"postgres://u:p@h/db\"\n[[sites]]\nname = \"a\"\nmachines = [{ name = \"m\", processors = 2 }]\n",
        )
        .unwrap();
        let toml = g.meta_toml("127.0.0.1:50051", None, Path::new("/tmp/x"), &eps);
        let m = meta_scheduler::MetaConfig::from_toml(&toml).unwrap();
        assert_eq!(
            (m.store.backend, m.store.url.as_deref(), m.sites.len()),
            (
                meta_scheduler::store::BackendKind::Postgres,
                Some("postgres://u:p@h/db"),
                1
            ),
            "{toml}"
        );
        assert_eq!(m.replica.name.as_deref(), Some("meta"), "{toml}");
    }

    #[test]
    fn a_site_limit_reaches_both_schedulers() {
        let g = GridFile::parse(
            "[[sites]]\nname = \"a\"\nmax_estimate_s = 3600\nmachines = [{ name = \"m\", processors = 2 }]\n",
        )
        .unwrap();
        let dir = Path::new("/tmp/x");
        let local = local_scheduler::Config::from_toml(&g.local_toml(0, dir)).unwrap();
        assert_eq!(local.max_estimate_s, 3600);
        let eps = ["127.0.0.1:6000".to_string()];
        let meta =
            meta_scheduler::MetaConfig::from_toml(&g.meta_toml("127.0.0.1:0", None, dir, &eps))
                .unwrap();
        assert_eq!(meta.sites[0].max_estimate_s, Some(3600));
    }

    /// A site's users reach its local scheduler as its `[users]` map and the meta-scheduler as
    /// the users its entry runs (none listed with a catch-all `"*"`).
    #[test]
    fn a_sites_users_reach_both_schedulers() {
        let text = "[[sites]]\nname = \"a\"\nmachines = [{ name = \"m\", processors = 2 }]\n\
                    users = { alice = \"gs-alice\", bob = \"gs-bob:proj\" }\n\
                    [[sites]]\nname = \"b\"\nmachines = [{ name = \"n\", processors = 2 }]\n\
                    users = { alice = \"gs-alice\", \"*\" = \"pool\" }\n";
        let g = GridFile::parse(text).unwrap();
        let dir = Path::new("/tmp/x");
        let a = local_scheduler::Config::from_toml(&g.local_toml(0, dir)).unwrap();
        assert_eq!(
            a.users.order("bob"),
            (Some("gs-bob".into()), Some("proj".into()))
        );
        assert_eq!(a.users.order("carol"), (Some(String::new()), None));
        let b = local_scheduler::Config::from_toml(&g.local_toml(1, dir)).unwrap();
        assert_eq!(b.users.order("carol"), (Some("pool".into()), None));
        let eps = ["127.0.0.1:6000".to_string(), "127.0.0.1:6001".to_string()];
        let meta =
            meta_scheduler::MetaConfig::from_toml(&g.meta_toml("127.0.0.1:0", None, dir, &eps))
                .unwrap();
        assert_eq!(
            meta.sites[0].users,
            Some(vec!["alice".to_string(), "bob".to_string()])
        );
        assert_eq!(meta.sites[1].users, None);
    }

    /// A Slurm site's section reaches its local scheduler (its jobs' directories under the
    /// grid's by default); a wrong key in it is named.
    #[test]
    fn a_slurm_site_is_configured_for_its_local_scheduler() {
        let text = "[[sites]]\nname = \"hpc\"\nmachines = [{ name = \"localhost\", processors = 16 }]\n\
                    [sites.slurm]\nrest_url = \"http://127.0.0.1:6820\"\ntoken_file = \"/t\"\n";
        let g = GridFile::parse(text).unwrap();
        let local = local_scheduler::Config::from_toml(&g.local_toml(0, Path::new("/g"))).unwrap();
        assert_eq!(local.backend, local_scheduler::config::Backend::Slurm);
        let s = local.slurm.unwrap();
        assert_eq!(s.rest_url, "http://127.0.0.1:6820");
        assert_eq!(s.work_dir, Path::new("/g/work/hpc"));
        let eps = ["127.0.0.1:6000".to_string()];
        let meta = g.meta_toml("127.0.0.1:1", None, Path::new("/g"), &eps);
        let m = meta_scheduler::MetaConfig::from_toml(&meta).unwrap();
        assert!(
            !m.sites[0].stages_inputs,
            "a Slurm site does not stage inputs"
        );
        assert!(
            !m.sites[0].holds_reservations,
            "nor hold advance reservations"
        );
        let e = GridFile::parse(&text.replace("token_file", "tokn_file"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("`sites[0]`") && e.contains("tokn_file"), "{e}");
    }

    #[test]
    fn urgent_sections_reach_both_schedulers() {
        let g = GridFile::parse(
            "[meta]\ndispatch = \"mct-preferred\"\nurgent = { default = \"high\", allowance = \
             { alice = \"critical\" } }\n[[sites]]\nname = \"a\"\nurgent = { preempt_by = \
             \"suspend\" }\nmachines = [{ name = \"m1\", processors = 4 }]\n",
        )
        .unwrap();
        let dir = Path::new("/tmp/x");
        let local = local_scheduler::Config::from_toml(&g.local_toml(0, dir)).unwrap();
        let u = local.policy.urgent.expect("the site's urgent layer");
        assert_eq!(u.preempt_by, gridsched_core::policy::PreemptBy::Suspend);
        let eps = ["127.0.0.1:6000".to_string()];
        let m = meta_scheduler::MetaConfig::from_toml(&g.meta_toml("127.0.0.1:1", None, dir, &eps))
            .unwrap();
        use gridsched_core::model::Urgency;
        assert_eq!(m.urgent.allowance_of("alice"), Some(Urgency::Critical));
        assert_eq!(m.urgent.allowance_of("bob"), Some(Urgency::High));
        let bad = "[[sites]]\nname = \"a\"\nurgent = { preempt = \"suspend\" }\n\
                   machines = [{ name = \"m1\", processors = 4 }]\n";
        let e = GridFile::parse(bad).unwrap_err().to_string();
        assert!(e.contains("sites[0]") && e.contains("preempt"), "{e}");
    }

    #[test]
    fn the_network_reaches_the_meta_scheduler() {
        let text = "[meta]\ndispatch = \"min-completion\"\n[meta.network]\n\
                    submitters = { bandwidth = \"100 MB/s\", latency_ms = 20 }\n\
                    between = { bandwidth = \"1 GB/s\" }\n[[meta.network.links]]\n\
                    from = \"a\"\nto = \"b\"\nbandwidth = \"10 MB/s\"\n\
                    [[sites]]\nname = \"a\"\nmachines = [{ name = \"m1\", processors = 4 }]\n\
                    [[sites]]\nname = \"b\"\nmachines = [{ name = \"m2\", processors = 4 }]\n";
        let g = GridFile::parse(text).unwrap();
        let eps = ["127.0.0.1:6000".to_string(), "127.0.0.1:6001".to_string()];
        let meta = g.meta_toml("127.0.0.1:1", None, Path::new("/tmp/x"), &eps);
        let m = meta_scheduler::MetaConfig::from_toml(&meta).unwrap();
        let net = m.network.expect("[network]").resolve(&["a", "b"]).unwrap();
        assert_eq!(net.submitters[1].latency_ms, 20);
        assert_eq!(net.between[0][1].bytes_per_s, 10_000_000);
        let e = meta_scheduler::MetaConfig::from_toml(&meta.replace("to = \"b\"", "to = \"c\""))
            .unwrap_err();
        assert!(e.to_string().contains("network.links[0].to"), "{e}");
    }

    /// Found by fuzzing (`GridFile::fuzz`): a machine named `delta-\u{10ffff}` was accepted, then
    /// written into the local scheduler's file as Rust's `"delta-\u{10ffff}"`, which is not TOML,
    /// so the site would not have started. Names are written as TOML strings and reach both
    /// services as given.
    #[test]
    fn names_of_any_characters_reach_the_services_as_given() {
        let odd = "delta-\u{10ffff}\u{1b}\u{85}\"\\'";
        let text = r#"
[[sites]]
name = "s-\u001B"
machines = [{ name = "delta-\U0010FFFF\u001B\u0085\"\\'", processors = 2 }]
licences = [{ name = "delta-\U0010FFFF\u001B\u0085\"\\'", copies = 1 }]
"#;
        let g = GridFile::parse(text).unwrap();
        assert_eq!(g.sites[0].machines[0].name, odd);
        assert!(GridFile::fuzz(text.as_bytes()));
        let dir = Path::new("/tmp/x\u{1b}");
        let local = local_scheduler::Config::from_toml(&g.local_toml(0, dir)).unwrap();
        assert_eq!(local.cluster, "s-\u{1b}");
        assert_eq!(
            local.state_dir.as_deref(),
            Some(Path::new("/tmp/x\u{1b}/s-\u{1b}/state"))
        );
        let platform = local.platform().unwrap();
        assert_eq!(platform.machines[0].name, odd);
        let eps = ["127.0.0.1:6000".to_string()];
        let m = meta_scheduler::MetaConfig::from_toml(&g.meta_toml("127.0.0.1:1", None, dir, &eps))
            .unwrap();
        assert_eq!(m.sites[0].name, "s-\u{1b}");
        assert_eq!(m.sites[0].machines[0].name, odd);
        assert_eq!(m.sites[0].licences, [odd]);
    }

    /// Found by fuzzing (`GridFile::fuzz`): a grid the services would refuse (a machine of 0
    /// processors, two sites of one name, a link to no site) was accepted, and `gridctl up` would
    /// have started it only for a service to fail in its log. It is refused, naming the key.
    #[test]
    fn what_a_service_would_refuse_is_refused_by_the_grid_file() {
        let site = |name: &str, procs: i64| {
            format!(
                "[[sites]]\nname = \"{name}\"\nmachines = [{{ name = \"{name}-1\", processors = {procs} }}]\n"
            )
        };
        let e = GridFile::parse(&format!("{}{}", site("a", 2), site("delta", -0)))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("grid file: `sites[1]`: ")
                && e.contains("processors: must be at least 1"),
            "{e}"
        );
        let e = GridFile::parse(&format!("{}{}", site("a", 2), site("a", 2)))
            .unwrap_err()
            .to_string();
        assert!(e.contains("`sites[1].name`: duplicate site name"), "{e}");
        let e = GridFile::parse(&format!(
            "[meta]\ndispatch = \"min-completion\"\n[meta.network]\nsubmitters = {{ bandwidth = \
             \"1 GB/s\" }}\nbetween = {{ bandwidth = \"1 GB/s\" }}\n[[meta.network.links]]\nfrom = \"a\"\nto = \"z\"\nbandwidth = \"1 MB/s\"\n{}",
            site("a", 2)
        ))
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("grid file: for the meta-scheduler: ") && e.contains("links[0].to"),
            "{e}"
        );
        assert!(
            !GridFile::fuzz(site("a", 0).as_bytes()),
            "refused, no panic"
        );
    }

    #[test]
    fn wrong_keys_are_named() {
        let e =
            GridFile::parse("[[sites]]\nname = \"a\"\nmachines = []\npolcy = \"x\"\n").unwrap_err();
        assert!(e.to_string().contains("polcy"), "{e}");
    }

    #[test]
    fn the_default_grids_comment_names_every_dispatch_strategy() {
        let comment: String = DEFAULT.lines().filter(|l| l.starts_with('#')).collect();
        for k in gridsched_core::dispatch::DispatchKind::every() {
            assert!(
                comment.contains(k.as_str()),
                "{k} is missing from the comment"
            );
        }
    }

    #[test]
    fn wrong_policy_and_dispatch_names_are_named() {
        let site = |policy: &str, machines: u32| {
            let ms = (0..machines)
                .map(|k| format!("{{ name = \"m{k}\", processors = {} }}", 4 + k))
                .collect::<Vec<_>>()
                .join(", ");
            format!("[[sites]]\nname = \"a\"\npolicy = \"{policy}\"\nmachines = [{ms}]\n")
        };
        let e = GridFile::parse(&site("fb-mood", 2))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("grid file: `sites[0].policy`: unknown policy `fb-mood`"),
            "{e}"
        );
        let e = GridFile::parse(&site("conservative", 2))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`sites[0].policy`") && e.contains("fb-meta"),
            "{e}"
        );
        assert!(GridFile::parse(&site("conservative", 1)).is_ok());
        // Alike machines are one pool: conservative backfilling runs there too.
        let alike = "[[sites]]\nname = \"a\"\npolicy = \"conservative\"\nmachines = [\
                     { name = \"m1\", processors = 4 }, { name = \"m2\", processors = 4 }]\n";
        assert!(GridFile::parse(alike).unwrap().pools_machines(0));
        let e = GridFile::parse(&format!(
            "[meta]\ndispatch = \"fastest\"\n{}",
            site("easy", 1)
        ))
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("grid file: `meta.dispatch`: unknown dispatch strategy `fastest`"),
            "{e}"
        );
    }
}
