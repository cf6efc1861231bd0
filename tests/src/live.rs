//! A whole live grid for the end-to-end tests: one meta-scheduler, local
//! schedulers and site agents as real processes on loopback ports, started from the tests crate's
//! copies of the service binaries (their paths are given by the test, from
//! `env!("CARGO_BIN_EXE_...")`, which only integration tests can read).

use gridsched_proto::v1::{self, meta_scheduler_client::MetaSchedulerClient};
use gridsched_security::Bearer;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

/// A meta-scheduler client sending a bearer token (none on an open grid).
pub type Client = MetaSchedulerClient<InterceptedService<Channel, Bearer>>;

/// TLS and authentication of a secured test grid: a development certificate set, the secrets
/// between the services and the users' tokens.
#[derive(Debug, Clone)]
pub struct Security {
    /// The certificate files.
    pub certs: gridsched_security::devcerts::DevCertFiles,
    /// The local schedulers' secret for the meta-scheduler.
    pub meta_token: String,
    /// The local schedulers' secret for the agents.
    pub agent_token: String,
    /// Users: name, token, admin.
    pub users: Vec<(String, String, bool)>,
}

impl Security {
    /// A fresh set in `dir`: users `alice`, `bob` and the admin `root`, token = `<user>-token`.
    pub fn generate(dir: &Path) -> Security {
        Security {
            certs: gridsched_security::devcerts::generate(dir, &[]).expect("dev certificates"),
            meta_token: "meta-secret".into(),
            agent_token: "agent-secret".into(),
            users: ["alice", "bob", "root"]
                .iter()
                .map(|u| ((*u).to_owned(), format!("{u}-token"), *u == "root"))
                .collect(),
        }
    }

    /// The `[tls]` section for a service.
    fn tls_toml(&self, require_client_cert: bool) -> String {
        format!(
            "[tls]\ncert = \"{}\"\nkey = \"{}\"\nca = \"{}\"\nrequire_client_cert = {require_client_cert}\n",
            self.certs.cert.display(),
            self.certs.key.display(),
            self.certs.ca.display()
        )
    }

    /// The token of the admin user.
    pub fn admin_token(&self) -> &str {
        self.users
            .iter()
            .find(|u| u.2)
            .map(|u| u.1.as_str())
            .expect("an admin")
    }
}

/// A child process killed when dropped.
#[derive(Debug)]
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The paths of the three service binaries.
#[derive(Debug, Clone)]
pub struct Bins {
    /// meta-scheduler.
    pub meta: PathBuf,
    /// local-scheduler.
    pub local: PathBuf,
    /// site-agent.
    pub agent: PathBuf,
}

/// The [`Bins`] of this crate's copies of the service binaries. `env!("CARGO_BIN_EXE_...")`
/// is known only to the crate's integration tests, so only they can expand it.
#[macro_export]
macro_rules! test_bins {
    () => {
        $crate::live::Bins {
            meta: env!("CARGO_BIN_EXE_gridsched-test-meta-scheduler").into(),
            local: env!("CARGO_BIN_EXE_gridsched-test-local-scheduler").into(),
            agent: env!("CARGO_BIN_EXE_gridsched-test-site-agent").into(),
        }
    };
}

/// One cluster of a test grid.
#[derive(Debug, Clone)]
pub struct SiteSpec {
    /// Site (and cluster) name.
    pub name: String,
    /// Local policy name.
    pub policy: String,
    /// Machines: name and processors.
    pub machines: Vec<(String, u32)>,
    /// Floating licence pools: name and copies.
    pub licences: Vec<(String, u32)>,
    /// The longest estimate the site runs (its local scheduler's and its `[[sites]]` entry's
    /// `max_estimate_s`); `None` = the default.
    pub max_estimate_s: Option<i64>,
    /// Its `[[sites]]` entry says `multi_node = true` (alike machines under a classic or
    /// planning policy, which runs jobs over several of them).
    pub multi_node: bool,
    /// The factor its agents apply to emulated run times (0.05 unless a test needs real time).
    pub time_scale: f64,
    /// A Slurm-backed site: its `[slurm]` section (`backend = "slurm"`, no agents).
    pub slurm: Option<String>,
    /// More keys of its local scheduler's `[policy]` section (TOML lines, e.g.
    /// `urgent = { preempt_by = "suspend" }`).
    pub policy_extra: String,
    /// More top-level keys of its local scheduler's configuration (TOML lines).
    pub local_extra: String,
}

impl SiteSpec {
    /// A site of `machines` machines of `procs` processors named `<name>-m<k>`.
    pub fn new(name: &str, policy: &str, machines: usize, procs: u32) -> SiteSpec {
        SiteSpec {
            name: name.into(),
            policy: policy.into(),
            machines: (1..=machines)
                .map(|k| (format!("{name}-m{k}"), procs))
                .collect(),
            licences: Vec::new(),
            max_estimate_s: None,
            multi_node: false,
            time_scale: 0.05,
            slurm: None,
            policy_extra: String::new(),
            local_extra: String::new(),
        }
    }
}

/// Where a service's stderr goes: nowhere, or with `GRIDSCHED_TEST_LOGS=DIR` (for debugging a
/// test) appended to `DIR/<name>.log`, at the level `RUST_LOG` gives the services.
pub fn log_to(name: &str) -> Stdio {
    match std::env::var("GRIDSCHED_TEST_LOGS") {
        Ok(dir) if !dir.is_empty() => {
            let _ = std::fs::create_dir_all(&dir);
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(Path::new(&dir).join(format!("{name}.log")))
                .map_or_else(|_| Stdio::null(), Stdio::from)
        }
        _ => Stdio::null(),
    }
}

/// Spawns `cmd`, reads its first stdout line `listening on ADDR`, returns the process and ADDR.
pub fn spawn_listening(mut cmd: Command) -> (Proc, String) {
    let mut child = cmd.stdout(Stdio::piped()).spawn().expect("spawn a service");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read the address");
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .trim_start_matches("http://")
        .trim_start_matches("https://")
        .to_string();
    (Proc(child), addr)
}

/// A running grid.
#[derive(Debug)]
pub struct LiveGrid {
    /// Its directory (configurations, state, job outputs).
    pub dir: tempfile::TempDir,
    /// The binaries.
    pub bins: Bins,
    /// The meta-scheduler, while it runs.
    pub meta: Option<Proc>,
    /// Its address `127.0.0.1:PORT`.
    pub meta_addr: String,
    /// Local schedulers, by site.
    pub locals: Vec<Proc>,
    /// Their addresses.
    pub local_addrs: Vec<String>,
    /// Agents: site index, machine name, process.
    pub agents: Vec<(usize, String, Proc)>,
    /// The sites.
    pub sites: Vec<SiteSpec>,
    /// `/metrics` addresses: the meta-scheduler's, then each local scheduler's.
    pub metrics: Vec<String>,
    /// `/metrics` address of each machine's agent.
    pub agent_metrics: std::collections::HashMap<String, String>,
    /// TLS and tokens, for a secured grid.
    pub security: Option<Security>,
}

/// A free loopback address for a service to bind later: a port below the system's ephemeral
/// range (32768 and up on Linux), found bindable now. A port the system hands out (`:0`) can be
/// taken, before the service binds it, as the source port of any outgoing connection of the
/// many grids a test binary runs at once: the service then fails to start and its grid is never
/// ready. Successive calls in a process take successive ports, from a start that depends on the
/// process id.
pub fn free_addr() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    const LOW: u32 = 20_000;
    const SPAN: u32 = 12_000;
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    let _ = NEXT.compare_exchange(
        u32::MAX,
        std::process::id().wrapping_mul(7_919) % SPAN,
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
    for _ in 0..SPAN {
        let port = LOW + NEXT.fetch_add(1, Ordering::SeqCst) % SPAN;
        let addr = format!("127.0.0.1:{port}");
        if std::net::TcpListener::bind(&addr).is_ok() {
            return addr;
        }
    }
    panic!("no free port in {LOW}..{}", LOW + SPAN)
}

/// The text of `GET http://ADDR/metrics`.
pub fn scrape(addr: &str) -> String {
    http_get(addr, "/metrics", "")
}

/// The whole response (status line, headers, body) to `GET path` on `addr` over plain HTTP/1.0,
/// with `headers` (CRLF-terminated lines) added to the request.
pub fn http_get(addr: &str, path: &str, headers: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connect to the HTTP endpoint");
    write!(s, "GET {path} HTTP/1.0\r\nHost: x\r\n{headers}\r\n").expect("request");
    let mut out = String::new();
    s.read_to_string(&mut out).expect("response");
    out
}

/// Like [`http_get`] over HTTPS, checking the server's certificate against `ca` (name
/// `localhost`).
pub async fn https_get(addr: &str, path: &str, headers: &str, ca: &Path) -> String {
    use rustls::pki_types::{CertificateDer, ServerName, pem::PemObject};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_rustls::rustls;
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(ca).expect("read the CA") {
        roots.add(c.expect("a CA certificate")).expect("add the CA");
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(cfg));
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let name = ServerName::try_from("localhost").expect("name");
    let mut s = connector.connect(name, tcp).await.expect("TLS handshake");
    let req = format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n{headers}\r\n");
    s.write_all(req.as_bytes()).await.expect("request");
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out).await;
    String::from_utf8_lossy(&out).into_owned()
}

impl LiveGrid {
    /// Starts the local schedulers, one agent per machine and the meta-scheduler (with extra
    /// TOML `meta_extra` at the top of its configuration).
    pub fn start(bins: Bins, sites: Vec<SiteSpec>, meta_extra: &str) -> LiveGrid {
        LiveGrid::start_with(bins, sites, meta_extra, false)
    }

    /// Like [`LiveGrid::start`], with TLS on every link and tokens when `secure` (see
    /// [`Security::generate`]). The local schedulers also require client certificates; the
    /// meta-scheduler does not (its clients are users, who authenticate by token).
    pub fn start_with(
        bins: Bins,
        sites: Vec<SiteSpec>,
        meta_extra: &str,
        secure: bool,
    ) -> LiveGrid {
        let dir = tempfile::tempdir().expect("tempdir");
        let security = secure.then(|| Security::generate(&dir.path().join("certs")));
        if let Some(sec) = &security {
            std::fs::write(dir.path().join("agent.token"), &sec.agent_token)
                .expect("write the agent token");
        }
        let mut g = LiveGrid {
            dir,
            bins,
            meta: None,
            meta_addr: String::new(),
            locals: Vec::new(),
            local_addrs: Vec::new(),
            agents: Vec::new(),
            metrics: Vec::new(),
            agent_metrics: Default::default(),
            sites,
            security,
        };
        g.metrics = (0..=g.sites.len()).map(|_| free_addr()).collect();
        for i in 0..g.sites.len() {
            let s = g.sites[i].clone();
            let mut toml = format!(
                "listen = \"127.0.0.1:0\"\ncluster = \"{}\"\nsite = \"{}\"\n\
                 heartbeat_interval_ms = 100\nlost_after_ms = 1000\nstate_dir = \"{}\"\n\
                 metrics_listen = \"{}\"\n[policy]\npolicy = \"{}\"\n{}\n",
                s.name,
                s.name,
                g.path(&format!("{}/state", s.name)).display(),
                g.metrics[i + 1],
                s.policy,
                s.policy_extra
            );
            if let Some(m) = s.max_estimate_s {
                toml = format!("max_estimate_s = {m}\n{toml}");
            }
            toml = format!("{}\n{toml}", s.local_extra);
            if s.slurm.is_some() {
                toml = format!("backend = \"slurm\"\n{toml}");
            }
            for (m, p) in &s.machines {
                toml += &format!("[[machines]]\nname = \"{m}\"\nprocessors = {p}\n");
            }
            for (l, c) in &s.licences {
                toml += &format!("[[licences]]\nname = \"{l}\"\ncopies = {c}\n");
            }
            if let Some(sec) = &g.security {
                // Locals require client certificates: only holders of the grid's certificate
                // (the meta-scheduler, the agents) can even open a connection.
                toml += &sec.tls_toml(true);
                toml += &format!(
                    "[auth]\nmeta_token = \"{}\"\nagent_token = \"{}\"\n",
                    sec.meta_token, sec.agent_token
                );
            }
            if let Some(section) = &s.slurm {
                toml += &format!("[slurm]\n{section}\n");
            }
            let cfg = g.path(&format!("{}.toml", s.name));
            std::fs::write(&cfg, toml).expect("write local config");
            let (p, addr) = g.spawn_local(i, None);
            g.locals.push(p);
            g.local_addrs.push(addr);
            if s.slurm.is_some() {
                continue;
            }
            for (m, procs) in &s.machines {
                let a = g.agent(i, m, *procs);
                g.agents.push((i, m.clone(), a));
            }
        }
        let mut toml = format!(
            "listen = \"127.0.0.1:0\"\nstate_dir = \"{}\"\nmetrics_listen = \"{}\"\n{meta_extra}\n",
            g.path("meta-state").display(),
            g.metrics[0]
        );
        let scheme = g.scheme();
        if let Some(sec) = &g.security {
            toml += &sec.tls_toml(false);
            for (u, t, admin) in &sec.users {
                toml +=
                    &format!("[[auth.users]]\nuser = \"{u}\"\ntoken = \"{t}\"\nadmin = {admin}\n");
            }
        }
        for (i, s) in g.sites.iter().enumerate() {
            let token = g
                .security
                .as_ref()
                .map_or(String::new(), |s| format!("token = \"{}\"\n", s.meta_token));
            toml += &format!(
                "[[sites]]\nname = \"{}\"\nendpoint = \"{scheme}://{}\"\n{token}licences = [{}]\nmachines = [{}]\n",
                s.name,
                g.local_addrs[i],
                s.licences
                    .iter()
                    .map(|(l, _)| format!("\"{l}\""))
                    .collect::<Vec<_>>()
                    .join(", "),
                s.machines
                    .iter()
                    .map(|(m, p)| format!("{{ name = \"{m}\", processors = {p} }}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            if let Some(m) = s.max_estimate_s {
                toml += &format!("max_estimate_s = {m}\n");
            }
            if s.multi_node {
                toml += "multi_node = true\n";
            }
            // A Slurm-backed site does not stage inputs in yet.
            if s.slurm.is_some() {
                toml += "stages_inputs = false\n";
            }
        }
        std::fs::write(g.path("meta.toml"), toml).expect("write meta config");
        g.start_meta(None);
        g
    }

    /// Starts site `i`'s local scheduler (on `listen` when given).
    fn spawn_local(&self, i: usize, listen: Option<&str>) -> (Proc, String) {
        let mut cmd = Command::new(&self.bins.local);
        cmd.arg("--config")
            .arg(self.path(&format!("{}.toml", self.sites[i].name)))
            .stderr(log_to(&self.sites[i].name));
        if let Some(l) = listen {
            cmd.args(["--listen", l]);
        }
        spawn_listening(cmd)
    }

    /// Kills site `i`'s local scheduler with SIGKILL.
    pub fn kill_local(&mut self, i: usize) {
        let p = &mut self.locals[i].0;
        p.kill().expect("kill -9");
        p.wait().expect("reap");
    }

    /// Restarts site `i`'s local scheduler on its former address (its state directory is kept).
    pub fn restart_local(&mut self, i: usize) {
        let addr = self.local_addrs[i].clone();
        let (p, _) = self.spawn_local(i, Some(&addr));
        self.locals[i] = p;
    }

    /// A path inside the grid's directory.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Starts an agent for machine `m` of site `i`.
    pub fn agent(&mut self, i: usize, m: &str, procs: u32) -> Proc {
        let metrics = self
            .agent_metrics
            .entry(m.to_owned())
            .or_insert_with(free_addr)
            .clone();
        let mut cmd = Command::new(&self.bins.agent);
        if let Some(sec) = &self.security {
            // Written once, before any agent exists: rewriting it here would truncate the file
            // while an agent started just before reads it, and an agent refused for an empty
            // token stops for good.
            cmd.arg("--token-file").arg(self.path("agent.token"));
            cmd.arg("--tls-ca").arg(&sec.certs.ca);
            cmd.arg("--tls-cert").arg(&sec.certs.cert);
            cmd.arg("--tls-key").arg(&sec.certs.key);
        }
        let scheme = self.scheme();
        Proc(
            cmd.args([
                "--scheduler",
                &format!("{scheme}://{}", self.local_addrs[i]),
            ])
            .args(["--machine", m, "--processors", &procs.to_string()])
            .args(["--time-scale", &self.sites[i].time_scale.to_string()])
            .args(["--grace-ms", "300"])
            .args(["--metrics-listen", &metrics])
            .arg("--work-dir")
            .arg(self.work_dir(m))
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn agent"),
        )
    }

    /// The work directory of machine `m`'s agent.
    pub fn work_dir(&self, m: &str) -> PathBuf {
        self.path(&format!("work/{m}"))
    }

    /// Starts (or restarts) the meta-scheduler, on `listen` when given.
    pub fn start_meta(&mut self, listen: Option<&str>) {
        let mut cmd = Command::new(&self.bins.meta);
        cmd.arg("--config").arg(self.path("meta.toml"));
        if let Some(l) = listen {
            cmd.args(["--listen", l]);
        }
        cmd.stderr(Stdio::null());
        let (p, addr) = spawn_listening(cmd);
        self.meta = Some(p);
        self.meta_addr = addr;
    }

    /// Kills the meta-scheduler with SIGKILL.
    pub fn kill_meta(&mut self) {
        if let Some(mut p) = self.meta.take() {
            p.0.kill().expect("kill -9");
            p.0.wait().expect("reap");
        }
    }

    /// `https` on a secured grid, else `http`.
    pub fn scheme(&self) -> &'static str {
        if self.security.is_some() {
            "https"
        } else {
            "http"
        }
    }

    /// A client of the meta-scheduler (the admin's, on a secured grid).
    pub async fn client(&self) -> Client {
        let token = self.security.as_ref().map(|s| s.admin_token().to_owned());
        self.client_as(token.as_deref()).await
    }

    /// A client of the meta-scheduler sending `token`.
    pub async fn client_as(&self, token: Option<&str>) -> Client {
        let url = format!("{}://{}", self.scheme(), self.meta_addr);
        let tls = gridsched_security::TlsConfig {
            ca: self.security.as_ref().map(|s| s.certs.ca.clone()),
            ..Default::default()
        };
        let bearer = Bearer::new(token).expect("a valid token");
        let t = Instant::now();
        loop {
            let ep = tls.endpoint(&url).expect("endpoint");
            match ep.connect().await {
                Ok(c) => return MetaSchedulerClient::with_interceptor(c, bearer),
                Err(e) if t.elapsed() > Duration::from_secs(10) => panic!("connect {url}: {e}"),
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    /// Waits until the meta-scheduler reaches every site and every agent is online.
    pub async fn ready(&self) {
        let mut c = self.client().await;
        let machines: usize = self.sites.iter().map(|s| s.machines.len()).sum();
        let t = Instant::now();
        loop {
            let s = c
                .list_sites(v1::ListSitesRequest {
                    site: None,
                    include_resources: true,
                })
                .await
                .expect("list sites")
                .into_inner();
            let reachable = s.sites.iter().all(|s| s.clusters[0].reachable);
            let online: usize = s
                .sites
                .iter()
                .map(|s| s.clusters[0].machines.iter().filter(|m| m.online).count())
                .sum();
            if reachable && online == machines {
                return;
            }
            // A bound, not a timing: on 2 cores a test binary starts a dozen grids at once.
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "grid not ready: reachable {reachable}, {online}/{machines} machines online"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Submits `specs` in one batch; every one must be accepted. Returns their ids in order.
pub async fn submit_all(c: &mut Client, specs: Vec<v1::JobSpec>) -> Vec<u64> {
    let reqs: Vec<v1::SubmitRequest> = specs
        .into_iter()
        .map(|s| v1::SubmitRequest { spec: Some(s) })
        .collect();
    let r = c
        .submit_batch(tokio_stream::iter(reqs))
        .await
        .expect("batch")
        .into_inner();
    r.results
        .into_iter()
        .map(|r| match r.outcome {
            Some(v1::submit_result::Outcome::Accepted(a)) => a.job_id,
            other => panic!("refused: {other:?}"),
        })
        .collect()
}

/// Job `id` as the meta-scheduler has it now.
pub async fn get_job(c: &mut Client, id: u64) -> v1::Job {
    c.get_job(v1::GetJobRequest { job_id: id })
        .await
        .expect("get job")
        .into_inner()
        .job
        .expect("a job")
}

/// How the meta-scheduler chose job `id`'s site (or why it has none yet).
pub async fn decided_by(c: &mut Client, id: u64) -> String {
    c.explain(v1::ExplainRequest { job_id: id })
        .await
        .expect("explain")
        .into_inner()
        .dispatch
        .expect("a dispatch decision")
        .decided_by
}

/// Every job of the meta-scheduler, through ListJobs pages.
pub async fn all_jobs(c: &mut Client) -> Vec<v1::Job> {
    let mut out = Vec::new();
    let mut token = String::new();
    loop {
        let page = c
            .list_jobs(v1::ListJobsRequest {
                limit: 1000,
                page_token: token,
                ..Default::default()
            })
            .await
            .expect("list jobs")
            .into_inner();
        out.extend(page.jobs);
        if page.next_page_token.is_empty() {
            return out;
        }
        token = page.next_page_token;
    }
}

/// Waits until every job of `ids` has reached its site's queue or gone further (QUEUED or a
/// later state); returns those jobs.
pub async fn wait_queued(c: &mut Client, ids: &[u64], limit: Duration) -> Vec<v1::Job> {
    let t = Instant::now();
    loop {
        let jobs: Vec<v1::Job> = all_jobs(c)
            .await
            .into_iter()
            .filter(|j| ids.contains(&j.id))
            .collect();
        if jobs.len() == ids.len() && jobs.iter().all(|j| j.state() >= v1::JobState::Queued) {
            return jobs;
        }
        assert!(
            t.elapsed() < limit,
            "not all queued after {limit:?}: {jobs:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Everything `MetaScheduler.Output` streams for `req`, checking that the chunks come in order
/// without a gap; the error that ended the stream, if any.
pub async fn read_output(c: &mut Client, req: v1::OutputRequest) -> Result<Vec<u8>, tonic::Status> {
    use tokio_stream::StreamExt;
    let mut s = c.output(req.clone()).await?.into_inner();
    let mut out = Vec::new();
    while let Some(chunk) = s.next().await {
        let chunk = chunk?;
        assert_eq!(
            chunk.offset,
            req.offset + out.len() as u64,
            "chunks in order, without a gap"
        );
        out.extend(chunk.data);
    }
    Ok(out)
}

/// Waits until every job of `ids` has ended; returns them all.
pub async fn wait_ended(c: &mut Client, ids: &[u64], limit: Duration) -> Vec<v1::Job> {
    let t = Instant::now();
    loop {
        let jobs = all_jobs(c).await;
        let live: Vec<(u64, i32)> = jobs
            .iter()
            .filter(|j| ids.contains(&j.id) && !j.state().is_terminal())
            .map(|j| (j.id, j.state))
            .collect();
        let known = jobs.iter().filter(|j| ids.contains(&j.id)).count();
        if live.is_empty() && known == ids.len() {
            return jobs;
        }
        assert!(
            t.elapsed() < limit,
            "jobs still live after {limit:?} ({} of {known}): {:?}",
            live.len(),
            &live[..live.len().min(10)]
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until job `id` runs (failing after `limit`), then cancels it.
pub async fn cancel_once_running(c: &mut Client, id: u64, limit: Duration) {
    let until = Instant::now() + limit;
    loop {
        let j = get_job(c, id).await;
        if j.state() == v1::JobState::Running {
            break;
        }
        assert!(Instant::now() < until, "never running: {j:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    c.cancel_job(v1::CancelJobRequest {
        job_id: id,
        reason: "test".into(),
    })
    .await
    .expect("cancel");
}

/// A job of user `u` running `sh -c script` on `procs` processors, estimate `estimate_s`.
pub fn sh_job(procs: u32, estimate_s: i64, script: &str) -> v1::JobSpec {
    v1::JobSpec {
        user: "u".into(),
        processors: procs,
        estimate_s,
        command: Some(v1::Command {
            program: "sh".into(),
            args: vec!["-c".into(), script.into()],
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The stdout file of job `id` run on machine `m` of `grid`.
pub fn stdout_of(grid: &LiveGrid, m: &str, id: u64) -> String {
    let p: PathBuf = grid.work_dir(m).join(id.to_string()).join("stdout");
    std::fs::read_to_string(Path::new(&p)).unwrap_or_default()
}

/// Every event a local scheduler at `url` (`http://...`) has logged, from its first, read until
/// the log is quiet for a second.
pub async fn local_log(url: &str) -> Vec<v1::JobEvent> {
    let mut c = v1::local_scheduler_client::LocalSchedulerClient::connect(url.to_owned())
        .await
        .unwrap_or_else(|e| panic!("{url}: {e}"));
    let mut s = c
        .job_events(v1::JobEventsRequest {
            from_sequence: Some(1),
        })
        .await
        .expect("event log")
        .into_inner();
    let mut all = Vec::new();
    while let Ok(Ok(Some(e))) = tokio::time::timeout(Duration::from_secs(1), s.message()).await {
        all.push(e);
    }
    all
}

/// Follows a local scheduler's event stream from its start until every job of `ids` reached a
/// terminal state (failing after `secs` seconds): all events, and each job's last one.
pub async fn local_events_until_ended(
    c: &mut v1::local_scheduler_client::LocalSchedulerClient<Channel>,
    ids: &[u64],
    secs: u64,
) -> (
    Vec<v1::JobEvent>,
    std::collections::HashMap<u64, v1::JobEvent>,
) {
    let mut s = c
        .job_events(v1::JobEventsRequest {
            from_sequence: Some(1),
        })
        .await
        .unwrap()
        .into_inner();
    let mut all = Vec::new();
    let mut last = std::collections::HashMap::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    while ids.iter().any(|i| {
        !last
            .get(i)
            .is_some_and(|e: &v1::JobEvent| e.state().is_terminal())
    }) {
        let e = tokio::time::timeout_at(deadline, s.message())
            .await
            .unwrap_or_else(|_| panic!("timeout; last states: {last:?}"))
            .unwrap()
            .expect("stream open");
        last.insert(e.job_id, e.clone());
        all.push(e);
    }
    (all, last)
}

/// The run of every RUNNING event the local scheduler at `addr` (`host:port`) logged about job
/// `id`, from its first event: `[0]` when it started the job once.
pub async fn runs_at(addr: &str, id: u64) -> Vec<u32> {
    let log = local_log(&format!("http://{addr}")).await;
    log.iter()
        .filter(|e| e.job_id == id && e.state() == v1::JobState::Running)
        .map(|e| e.run)
        .collect()
}

/// The advance reservations the local scheduler at `addr` (`host:port`) holds now.
pub async fn held_at(addr: &str) -> Vec<v1::AdvanceReservation> {
    let mut c = v1::local_scheduler_client::LocalSchedulerClient::connect(format!("http://{addr}"))
        .await
        .unwrap_or_else(|e| panic!("{addr}: {e}"));
    let st = c.status(v1::StatusRequest {}).await.unwrap().into_inner();
    st.advance_reservations
}

/// Waits for job `id` to end (failing after `limit`) and checks that it completed: the job.
pub async fn completed(c: &mut Client, id: u64, limit: Duration) -> v1::Job {
    let jobs = wait_ended(c, &[id], limit).await;
    let job = jobs.into_iter().find(|j| j.id == id).expect("the job");
    assert_eq!(job.state(), v1::JobState::Completed, "{job:?}");
    job
}

/// A split job's fragments as (site, processors).
pub fn fragments_of(job: &v1::Job) -> Vec<(&str, u32)> {
    job.fragments
        .iter()
        .map(|f| (f.site.as_str(), f.processors))
        .collect()
}

/// How many times each job started (its RUNNING events) at the local scheduler at `addr`
/// (`host:port`), from the whole of that scheduler's event log.
pub async fn starts_at(addr: &str) -> std::collections::HashMap<u64, usize> {
    let mut starts = std::collections::HashMap::new();
    for e in local_log(&format!("http://{addr}")).await {
        if std::env::var("DEBUG_EVENTS").is_ok() {
            eprintln!("{addr}: {e:?}");
        }
        if e.state() == v1::JobState::Running {
            *starts.entry(e.job_id).or_insert(0) += 1;
        }
    }
    starts
}

/// A small HTTP/1.1 file server for the inputs a test's jobs fetch (`http://ADDR/NAME`): each
/// file's body, sent in 64 KiB pieces `pause` apart (a slow source, to watch a transfer under
/// way); 404 for any other path. Counts the GETs of each path.
#[derive(Debug, Clone)]
pub struct HttpFiles {
    /// `host:port` it listens on.
    pub addr: String,
    gets: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, u64>>>,
}

impl HttpFiles {
    /// Serves `files` (path without its leading `/`, body, pause between pieces) until the
    /// test's runtime ends.
    pub async fn serve(files: Vec<(&str, Vec<u8>, Duration)>) -> HttpFiles {
        Self::serve_for("127.0.0.1", files).await
    }

    /// [`HttpFiles::serve`] on every interface, its URLs naming `host` (e.g. the host's address
    /// on a Docker network, for the containers of a compose grid).
    pub async fn serve_for(host: &str, files: Vec<(&str, Vec<u8>, Duration)>) -> HttpFiles {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let bind = match host {
            "127.0.0.1" => "127.0.0.1:0",
            _ => "0.0.0.0:0",
        };
        let listener = tokio::net::TcpListener::bind(bind).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let addr = format!("{host}:{port}");
        let files: std::sync::Arc<std::collections::HashMap<String, (Vec<u8>, Duration)>> =
            std::sync::Arc::new(
                files
                    .into_iter()
                    .map(|(p, b, d)| (format!("/{p}"), (b, d)))
                    .collect(),
            );
        let gets = std::sync::Arc::new(std::sync::Mutex::new(std::collections::HashMap::new()));
        let counted = gets.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut sock, _)) = listener.accept().await else {
                    return;
                };
                let (files, gets) = (files.clone(), counted.clone());
                tokio::spawn(async move {
                    let mut req = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                        match sock.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => req.extend_from_slice(&buf[..n]),
                        }
                    }
                    let line = String::from_utf8_lossy(&req);
                    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
                    *gets.lock().unwrap().entry(path.clone()).or_default() += 1;
                    let Some((body, pause)) = files.get(&path) else {
                        let _ = sock
                            .write_all(
                                b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                            )
                            .await;
                        return;
                    };
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        body.len()
                    );
                    if sock.write_all(head.as_bytes()).await.is_err() {
                        return;
                    }
                    for piece in body.chunks(64 * 1024) {
                        if sock.write_all(piece).await.is_err() {
                            return;
                        }
                        if !pause.is_zero() {
                            tokio::time::sleep(*pause).await;
                        }
                    }
                    let _ = sock.shutdown().await;
                });
            }
        });
        HttpFiles { addr, gets }
    }

    /// `http://ADDR/PATH`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}/{path}", self.addr)
    }

    /// How many GETs of `/PATH` it served.
    pub fn gets(&self, path: &str) -> u64 {
        self.gets
            .lock()
            .unwrap()
            .get(&format!("/{path}"))
            .copied()
            .unwrap_or(0)
    }
}

/// Uploads `data` under `name` through `c` (MetaScheduler.Upload, 1 MiB chunks): its digest.
pub async fn upload(c: &mut Client, name: &str, data: &[u8]) -> Result<String, tonic::Status> {
    let chunks: Vec<v1::BlobChunk> = data
        .chunks(gridsched_proto::blobs::CHUNK)
        .enumerate()
        .map(|(k, d)| v1::BlobChunk {
            offset: (k * gridsched_proto::blobs::CHUNK) as u64,
            data: d.to_vec(),
            name: if k == 0 {
                name.to_owned()
            } else {
                String::new()
            },
            ..Default::default()
        })
        .collect();
    let r = c.upload(tokio_stream::iter(chunks)).await?.into_inner();
    assert_eq!(r.size, data.len() as u64);
    Ok(r.sha256)
}
