//! `gridctl up`: a complete grid on localhost in one command. It starts, as real
//! processes of this very binary (`gridctl __serve <service> ...`), one local scheduler per site,
//! one site agent per machine and the meta-scheduler, all configured from a grid description (the
//! embedded default: four sites with different machines, licences and policies), prints the
//! endpoint and runs until interrupted; it stops everything it started when it exits.
//!
//! Every service keeps its durable state under `--dir`, so running `gridctl up` again on the same
//! directory finds the grid's jobs where they were.

pub mod grid_file;

use crate::out::outln;
use grid_file::GridFile;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// Options of `gridctl up`.
#[derive(Debug, clap::Args)]
pub struct UpArgs {
    /// Grid description (TOML); default: the embedded four-site grid (`--print-grid` shows it).
    #[arg(long)]
    pub grid: Option<PathBuf>,
    /// Directory of the services' configurations, state, logs and job outputs.
    #[arg(long, default_value = "gridsched-up")]
    pub dir: PathBuf,
    /// Address of the meta-scheduler.
    #[arg(long, default_value = "127.0.0.1:50051")]
    pub listen: String,
    /// Address of the web dashboard and the meta-scheduler's `/metrics` (`none`: no endpoint).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub http: String,
    /// Factor applied by the agents to emulated run times and wall-time limits.
    #[arg(long, default_value_t = 1.0)]
    pub time_scale: f64,
    /// Print the grid description in use and exit.
    #[arg(long)]
    pub print_grid: bool,
}

/// The children, killed when dropped.
struct Children(Vec<(String, Child)>);

impl Drop for Children {
    fn drop(&mut self) {
        for (_, c) in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Runs a service of this binary: `gridctl __serve <service> <its arguments>`.
pub fn serve(service: &str, args: Vec<String>) -> anyhow::Result<()> {
    let argv = std::iter::once(service.to_owned()).chain(args);
    match service {
        "meta-scheduler" => meta_scheduler::main_with_args(argv),
        "local-scheduler" => local_scheduler::main_with_args(argv),
        "site-agent" => site_agent::main_with_args(argv),
        other => anyhow::bail!("unknown service `{other}`"),
    }
}

/// Starts `gridctl __serve <service> args`, logging to `log`; when `listens`, waits for its
/// `listening on ADDR` line and returns ADDR.
fn spawn(
    children: &mut Children,
    name: &str,
    service: &str,
    args: &[String],
    log: &Path,
    listens: bool,
) -> anyhow::Result<Option<String>> {
    let exe = std::env::current_exe()?;
    let stderr = std::fs::File::create(log)?;
    let mut child = Command::new(exe)
        .arg("__serve")
        .arg(service)
        .args(args)
        .stdin(Stdio::null())
        .stdout(if listens {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stderr(stderr)
        .spawn()?;
    let addr = if listens {
        let mut line = String::new();
        let out = child
            .stdout
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stdout"))?;
        BufReader::new(out).read_line(&mut line)?;
        match line.trim().strip_prefix("listening on ") {
            Some(a) => Some(a.trim_start_matches("http://").to_owned()),
            None => {
                let _ = child.kill();
                let log_text = std::fs::read_to_string(log).unwrap_or_default();
                anyhow::bail!("{name} did not start:\n{log_text}");
            }
        }
    } else {
        None
    };
    children.0.push((name.to_owned(), child));
    Ok(addr)
}

/// A grid started by [`launch`]: its processes (stopped when dropped) and the meta-scheduler's
/// address.
pub struct Launched {
    children: Children,
    /// How each child was started (service, arguments), for [`Launched::restart`].
    recipes: std::collections::HashMap<String, (String, Vec<String>)>,
    /// Restarts so far (each restarted child logs to a file of its own).
    restarts: usize,
    /// The meta-scheduler's configuration, less its listening address (for a restart).
    meta_config: (GridFile, Option<String>),
    /// `HOST:PORT` of each replica of the meta-scheduler (`meta.replicas`), the first
    /// [`Launched::meta`].
    pub metas: Vec<String>,
    /// Each site's local-scheduler address.
    pub endpoints: Vec<String>,
    /// The grid's directory (absolute).
    pub dir: PathBuf,
}

impl std::fmt::Debug for Launched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "grid at {} ({} processes)",
            self.meta(),
            self.children.0.len()
        )
    }
}

impl Launched {
    /// `HOST:PORT` of the meta-scheduler (its first replica).
    pub fn meta(&self) -> &str {
        &self.metas[0]
    }

    /// The process id of the child named `name` (`meta-scheduler`, `local-scheduler alpha`, ...).
    pub fn pid(&self, name: &str) -> Option<u32> {
        self.children
            .0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| c.id())
    }

    /// The processes of the grid whose names start with `prefix`: name and process id.
    pub fn pids(&self, prefix: &str) -> Vec<(String, u32)> {
        (self.children.0.iter())
            .filter(|(n, _)| n.starts_with(prefix))
            .map(|(n, c)| (n.clone(), c.id()))
            .collect()
    }

    /// Kills the meta-scheduler (SIGKILL) and starts it again on the same address, from its
    /// store: returns once it listens.
    pub fn restart_meta(&mut self) -> anyhow::Result<()> {
        self.restart("meta-scheduler")
    }

    /// The names of the grid's processes (`meta-scheduler`, `local-scheduler alpha`,
    /// `site-agent alpha-1`, ...), in start order.
    pub fn names(&self) -> Vec<String> {
        self.children.0.iter().map(|(n, _)| n.clone()).collect()
    }

    /// Kills child `name` (SIGKILL) and starts it again as it was started (see
    /// [`Launched::start`]).
    pub fn restart(&mut self, name: &str) -> anyhow::Result<()> {
        self.kill(name)?;
        self.start(name)
    }

    /// Kills child `name` (SIGKILL) and waits for its end; nothing when it is not running.
    pub fn kill(&mut self, name: &str) -> anyhow::Result<()> {
        if let Some(k) = self.children.0.iter().position(|(n, _)| n == name) {
            let (_, mut c) = self.children.0.remove(k);
            c.kill()?;
            c.wait()?;
        }
        Ok(())
    }

    /// Starts child `name` again as it was first started, a local scheduler and a replica of the
    /// meta-scheduler on their addresses (from their stores): returns once it listens (an
    /// agent: once started).
    pub fn start(&mut self, name: &str) -> anyhow::Result<()> {
        let (service, mut args) = (self.recipes.get(name).cloned())
            .ok_or_else(|| anyhow::anyhow!("no process `{name}` in this grid"))?;
        let listens = service != "site-agent";
        if service == "local-scheduler" {
            let site = name.trim_start_matches("local-scheduler ");
            let i = (self.meta_config.0.sites.iter())
                .position(|s| s.name == site)
                .ok_or_else(|| anyhow::anyhow!("no site `{site}`"))?;
            args.extend(["--listen".to_owned(), self.endpoints[i].clone()]);
        }
        if service == "meta-scheduler" {
            // Its configuration again, on the address it had.
            let k = replica_of(name).unwrap_or_default();
            let (grid, http) = &self.meta_config;
            let http = http.as_deref().filter(|_| k == 0);
            let toml = grid.replica_toml(k, &self.metas[k], http, &self.dir, &self.endpoints);
            std::fs::write(&args[1], toml)?;
        }
        self.restarts += 1;
        let log = (self.dir.join("logs")).join(format!(
            "{}.{}.log",
            name.replace(' ', "-"),
            self.restarts
        ));
        spawn(&mut self.children, name, &service, &args, &log, listens)?;
        Ok(())
    }

    /// The address of `name` when it is a replica of the meta-scheduler (`meta-scheduler`,
    /// `meta-scheduler 2`, ...).
    pub fn replica_address(&self, name: &str) -> Option<&str> {
        let k = replica_of(name)?;
        self.metas.get(k).map(String::as_str)
    }

    /// The address `name` listens on: a replica of the meta-scheduler or a local scheduler
    /// (an agent listens on none).
    pub fn listening(&self, name: &str) -> Option<&str> {
        if let Some(a) = self.replica_address(name) {
            return Some(a);
        }
        let site = name.strip_prefix("local-scheduler ")?;
        let i = (self.meta_config.0.sites.iter()).position(|s| s.name == site)?;
        self.endpoints.get(i).map(String::as_str)
    }

    /// Sends `signal` to child `name` (SIGSTOP, SIGCONT, ...).
    pub fn signal(&self, name: &str, signal: nix::sys::signal::Signal) -> anyhow::Result<()> {
        let pid = self
            .pid(name)
            .ok_or_else(|| anyhow::anyhow!("no process `{name}` in this grid"))?;
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), signal)?;
        Ok(())
    }

    /// Kills site `i`'s local scheduler and agents (SIGKILL), for good: the grid loses the site.
    pub fn kill_site(&mut self, i: usize) -> anyhow::Result<()> {
        let site = &self.meta_config.0.sites[i];
        let mut names = vec![format!("local-scheduler {}", site.name)];
        names.extend(
            site.machines
                .iter()
                .map(|m| format!("site-agent {}", m.name)),
        );
        let (mut gone, mut kept) = (Vec::new(), Vec::new());
        for c in self.children.0.drain(..) {
            if names.contains(&c.0) {
                gone.push(c);
            } else {
                kept.push(c);
            }
        }
        self.children.0 = kept;
        for (_, mut c) in gone {
            c.kill()?;
            c.wait()?;
        }
        Ok(())
    }

    /// The replicas of the meta-scheduler that stepped down (exit code 75: a leader that could
    /// not renew its lease stops, to be started again as a follower), taken out of the grid's
    /// processes: their names.
    pub fn deposed(&mut self) -> anyhow::Result<Vec<String>> {
        let mut out = Vec::new();
        let mut k = 0;
        while k < self.children.0.len() {
            let (name, c) = &mut self.children.0[k];
            let stepped_down = name.starts_with("meta-scheduler")
                && c.try_wait()?.is_some_and(|st| st.code() == Some(75));
            if stepped_down {
                out.push(self.children.0.remove(k).0);
            } else {
                k += 1;
            }
        }
        Ok(out)
    }

    /// The first child that has exited, if any.
    pub fn exited(&mut self) -> anyhow::Result<Option<String>> {
        for (name, c) in &mut self.children.0 {
            if let Some(status) = c.try_wait()? {
                return Ok(Some(format!("{name} exited ({status})")));
            }
        }
        Ok(None)
    }
}

/// The replica (from 0) of the meta-scheduler named `name` (`meta-scheduler`, `meta-scheduler 2`);
/// `None` for another process.
fn replica_of(name: &str) -> Option<usize> {
    match name.strip_prefix("meta-scheduler")? {
        "" => Some(0),
        k => k.trim_start().parse::<usize>().ok()?.checked_sub(1),
    }
}

/// Starts the local schedulers, one agent per machine and the meta-scheduler of `grid` in `dir`.
pub fn launch(
    grid: &GridFile,
    dir: &Path,
    listen: &str,
    http: Option<&str>,
    time_scale: f64,
) -> anyhow::Result<Launched> {
    std::fs::create_dir_all(dir.join("logs"))?;
    let dir = std::fs::canonicalize(dir)?;
    let log = |n: &str| dir.join("logs").join(format!("{n}.log"));
    let mut children = Children(Vec::new());
    let mut recipes = std::collections::HashMap::new();
    let mut endpoints = Vec::new();
    for (i, s) in grid.sites.iter().enumerate() {
        let cfg = dir.join(format!("{}.toml", s.name));
        std::fs::write(&cfg, grid.local_toml(i, &dir))?;
        let name = format!("local-scheduler {}", s.name);
        let args = vec!["--config".into(), cfg.display().to_string()];
        let addr = spawn(
            &mut children,
            &name,
            "local-scheduler",
            &args,
            &log(&s.name),
            true,
        )?
        .unwrap_or_default();
        recipes.insert(name, ("local-scheduler".to_owned(), args));
        // A Slurm site's machines are Slurm's nodes: no agents.
        let agents = if s.slurm.is_some() {
            &[][..]
        } else {
            &s.machines[..]
        };
        for m in agents {
            let args: Vec<String> = [
                "--scheduler",
                &format!("http://{addr}"),
                "--machine",
                &m.name,
                "--processors",
                &m.processors.to_string(),
                "--benchmark",
                &m.benchmark.to_string(),
                "--time-scale",
                &time_scale.to_string(),
                "--work-dir",
                &dir.join("work").join(&m.name).display().to_string(),
            ]
            .map(str::to_owned)
            .to_vec();
            let name = format!("site-agent {}", m.name);
            spawn(
                &mut children,
                &name,
                "site-agent",
                &args,
                &log(&m.name),
                false,
            )?;
            recipes.insert(name, ("site-agent".to_owned(), args));
        }
        endpoints.push(addr);
    }
    let mut metas = Vec::new();
    for k in 0..grid.meta.replicas.max(1) as usize {
        let (name, file) = match k {
            0 => ("meta-scheduler".to_owned(), "meta".to_owned()),
            k => (
                format!("meta-scheduler {}", k + 1),
                format!("meta-{}", k + 1),
            ),
        };
        let cfg = dir.join(format!("{file}.toml"));
        // The first replica on the address asked for and with the HTTP endpoint; the others on
        // addresses of their own.
        let (listen, http) = match k {
            0 => (listen, http),
            _ => ("127.0.0.1:0", None),
        };
        std::fs::write(&cfg, grid.replica_toml(k, listen, http, &dir, &endpoints))?;
        let args = vec!["--config".into(), cfg.display().to_string()];
        let addr = spawn(
            &mut children,
            &name,
            "meta-scheduler",
            &args,
            &log(&file),
            true,
        )?;
        metas.push(addr.unwrap_or_default());
        recipes.insert(name, ("meta-scheduler".to_owned(), args));
    }
    Ok(Launched {
        metas,
        children,
        recipes,
        restarts: 0,
        meta_config: (grid.clone(), http.map(str::to_owned)),
        endpoints,
        dir,
    })
}

/// `gridctl up`.
pub async fn up(a: UpArgs) -> anyhow::Result<()> {
    let text = match &a.grid {
        Some(p) => std::fs::read_to_string(p)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", p.display()))?,
        None => grid_file::DEFAULT.to_owned(),
    };
    if a.print_grid {
        outln!("{}", text.trim_end_matches('\n'));
        return Ok(());
    }
    let grid = GridFile::parse(&text)?.with_host_memory();
    let http = (a.http != "none").then_some(a.http.as_str());
    let mut g = launch(&grid, &a.dir, &a.listen, http, a.time_scale)?;
    let (meta, dir) = (g.meta().to_owned(), g.dir.clone());
    let endpoints = g.endpoints.clone();
    outln!("gridsched grid up: meta-scheduler at http://{meta}");
    if let Some(h) = http {
        outln!("dashboard at http://{h}/ (metrics at http://{h}/metrics)");
    }
    for (s, ep) in grid.sites.iter().zip(&endpoints) {
        let procs: u32 = s.machines.iter().map(|m| m.processors).sum();
        let lic: Vec<String> = s
            .licences
            .iter()
            .map(|l| format!("{} x{}", l.name, l.copies))
            .collect();
        outln!(
            "  site {:<8} {:<13} {} machines, {procs} processors{}  (local scheduler {ep})",
            s.name,
            if s.slurm.is_some() {
                "slurm"
            } else {
                &s.policy
            },
            s.machines.len(),
            if lic.is_empty() {
                String::new()
            } else {
                format!(", licences {}", lic.join(", "))
            }
        );
        if let Some(users) = &s.users {
            let map: Vec<String> = users
                .iter()
                .map(|(u, a)| format!("{u} as {}", a.as_str().unwrap_or("?")))
                .collect();
            let root = nix::unistd::geteuid().is_root();
            outln!(
                "    users {}{}",
                map.join(", "),
                match root {
                    true => "",
                    false => " (the agents do not run as root: these jobs fail to start)",
                }
            );
        }
    }
    outln!("state, logs and job outputs in {}", dir.display());
    outln!("try:  gridctl submit -n 2 --estimate 60 --wait -- echo hello");
    outln!("Ctrl-C stops the grid.");
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(500));
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => return Ok(()),
            _ = term.recv() => return Ok(()),
            _ = tick.tick() => {
                if let Some(what) = g.exited()? {
                    anyhow::bail!("{what}; see the logs in {}", dir.join("logs").display());
                }
            }
        }
    }
}
