//! `gridctl bench --against slurm`: the same streams, in one run on this machine, through (a) a
//! native site of the Slurm node's CPUs (one agent), (b) a Slurm-backed site over the host's
//! Slurm, both through the meta-scheduler, and (c) plain `sbatch` on that Slurm: submissions per
//! second one job per request (the same number of concurrent clients or `sbatch` processes) and
//! batched (1,000 per `SubmitBatch`; one job array for `sbatch`), the latency from submission to
//! the job's process running (read from the job's own clock, `date +%s%N`), and the makespan of N
//! one-second jobs against the ideal `ceil(N / CPUs)` seconds. Slurm's scheduler settings are
//! printed with the figures.

use crate::bench::{
    BenchArgs, clocked, now_ns, pct, printed_start, run_one, submit_batched, submit_unary,
    wait_all_ended, wait_ready,
};
use crate::out::outln;
use crate::up::grid_file::GridFile;
use gridsched_proto::v1::{self, meta_scheduler_client::MetaSchedulerClient};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// What one of the three ways measured.
#[derive(Debug, Default)]
struct Figures {
    /// Jobs per second, one per request.
    single: f64,
    /// Jobs per second, batched.
    batched: f64,
    /// Submit → start latencies, ms.
    latency: Vec<f64>,
    /// Seconds from the first submission to the last end of the N one-second jobs.
    makespan: f64,
}

/// The Slurm commands, pointed at `conf`.
fn slurm(conf: &Path, program: &str) -> Command {
    let mut c = Command::new(program);
    c.env("SLURM_CONF", conf);
    c
}

pub(crate) fn output(mut c: Command) -> anyhow::Result<String> {
    let out = c.output()?;
    anyhow::ensure!(
        out.status.success(),
        "{c:?}: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Jobs of any user in Slurm's queue.
fn queued(conf: &Path) -> anyhow::Result<usize> {
    let mut c = slurm(conf, "squeue");
    c.args(["-h", "-r", "-o", "%i"]);
    Ok(output(c)?.lines().count())
}

async fn wait_slurm_idle(conf: &Path) -> anyhow::Result<()> {
    while queued(conf)? > 0 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// `gridctl bench --against slurm`.
pub async fn against_slurm(a: &BenchArgs) -> anyhow::Result<()> {
    let conf = a.slurm_conf.clone();
    let cpus = a.slurm_cpus;
    let n = a.slurm_jobs;
    let mut show = slurm(&conf, "scontrol");
    show.args(["show", "config"]);
    let config = output(show)?;
    let setting = |k: &str| {
        config
            .lines()
            .find(|l| l.starts_with(k))
            .map_or(String::new(), |l| {
                l.split('=')
                    .skip(1)
                    .collect::<Vec<_>>()
                    .join("=")
                    .trim()
                    .to_string()
            })
    };
    outln!(
        "Slurm {} at {} ({} CPUs): SchedulerParameters={}, SchedulerType={}, SelectType={}",
        setting("SLURM_VERSION"),
        a.slurm_rest,
        cpus,
        setting("SchedulerParameters"),
        setting("SchedulerType"),
        setting("SelectType")
    );
    anyhow::ensure!(
        queued(&conf)? == 0,
        "Slurm has jobs queued or running: the benchmark needs it idle"
    );
    let tmp = tempfile::tempdir()?;
    let dir = a.dir.clone().unwrap_or_else(|| tmp.path().to_owned());
    std::fs::create_dir_all(&dir)?;
    let dir = std::fs::canonicalize(&dir)?;
    let mut token = slurm(&conf, "scontrol");
    token.args(["token", "lifespan=86400"]);
    let token_file = dir.join("slurm.jwt");
    std::fs::write(&token_file, output(token)?.trim())?;

    let native = format!(
        "[meta]\ndispatch = \"round-robin\"\n[[sites]]\nname = \"native\"\npolicy = \"easy\"\n\
         machines = [{{ name = \"n1\", processors = {cpus} }}]\n"
    );
    let backed = format!(
        "[meta]\ndispatch = \"round-robin\"\n[[sites]]\nname = \"hpc\"\n\
         machines = [{{ name = \"localhost\", processors = {cpus} }}]\n[sites.slurm]\n\
         rest_url = {:?}\ntoken_file = {:?}\npoll_ms = {}\n",
        a.slurm_rest,
        token_file.display().to_string(),
        a.slurm_poll_ms
    );
    let mut all = Vec::new();
    for (label, text, out_dir) in [("native", native, "n1"), ("slurm-backed", backed, "hpc")] {
        let g = GridFile::parse(&text)?;
        let f = through_grid(a, &g, &dir.join(label), out_dir, n).await?;
        wait_slurm_idle(&conf).await?;
        all.push(f);
    }
    all.push(plain_sbatch(a, &conf, &dir.join("sbatch"), n).await?);

    let ideal = n.div_ceil(cpus as usize) as f64;
    outln!("\n| measure | native site | Slurm-backed site | plain sbatch |\n|---|---|---|---|");
    let cells = |f: &dyn Fn(&mut Figures) -> String, all: &mut [Figures]| {
        all.iter_mut().map(f).collect::<Vec<_>>().join(" | ")
    };
    outln!(
        "| submissions, one job per request, {} clients (jobs/s) | {} |",
        a.clients,
        cells(&|f| format!("{:.0}", f.single), &mut all)
    );
    outln!(
        "| submissions, batched (jobs/s) | {} |",
        cells(&|f| format!("{:.0}", f.batched), &mut all)
    );
    outln!(
        "| submit → start, p50 / p99 ({} samples) | {} |",
        a.slurm_samples,
        cells(
            &|f| {
                let (p50, p99) = (pct(&mut f.latency, 0.5), pct(&mut f.latency, 0.99));
                format!("{p50:.1} / {p99:.1} ms")
            },
            &mut all
        )
    );
    outln!(
        "| {n} × 1 s on {cpus} CPUs (ideal {ideal:.0} s) | {} |",
        cells(
            &|f| format!(
                "{:.1} s (+{:.1} %)",
                f.makespan,
                (f.makespan / ideal - 1.0) * 100.0
            ),
            &mut all
        )
    );
    let native_p50 = pct(&mut all[0].latency, 0.5);
    let (nat, backed, plain) = (&all[0], all[1].makespan, &all[2]);
    outln!(
        "\ngoals: native makespan within 2 % of the ideal: {:+.1} %; native p50 under 5 ms: {native_p50:.2} ms; \
         native single-submission rate at least 20 x sbatch's: {:.0} x; Slurm-backed overhead over plain Slurm at most 10 %: {:+.1} %",
        (nat.makespan / ideal - 1.0) * 100.0,
        nat.single / plain.single,
        (backed / plain.makespan - 1.0) * 100.0
    );
    Ok(())
}

/// The streams through a grid of one site, started here.
async fn through_grid(
    a: &BenchArgs,
    g: &GridFile,
    dir: &Path,
    out_dir: &str,
    n: usize,
) -> anyhow::Result<Figures> {
    let mut grid = crate::up::launch(g, dir, "127.0.0.1:0", None, 1.0)?;
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", grid.meta()))?
        .connect()
        .await?;
    let mut c = MetaSchedulerClient::new(channel);
    wait_ready(&mut c, 1).await?;
    let site = &g.sites[0].name;
    let mut f = Figures::default();
    for _ in 0..a.slurm_samples {
        let t0 = now_ns();
        let job = run_one(&mut c, clocked(1)).await?;
        anyhow::ensure!(
            job.state() == v1::JobState::Completed,
            "a latency job ended {:?}: {}",
            job.state(),
            job.reason
        );
        let started = printed_start(&grid.dir, out_dir, job.id)?;
        f.latency.push(started.saturating_sub(t0) as f64 / 1e6);
    }
    let (p50, p99) = (pct(&mut f.latency, 0.5), pct(&mut f.latency, 0.99));
    outln!("{site}: submit -> start p50 {p50:.2} ms, p99 {p99:.2} ms");

    f.single = submit_unary(&mut c, a.slurm_single, a.clients).await?;
    outln!("{site}: {:.0} single submissions/s", f.single);

    let t = Instant::now();
    let last = submit_batched(&mut c, n, 1000, 1).await?;
    f.batched = n as f64 / t.elapsed().as_secs_f64();
    wait_all_ended(&mut c, last).await?;
    f.makespan = t.elapsed().as_secs_f64();
    outln!(
        "{site}: {:.0} batched submissions/s; {n} x 1 s in {:.1} s",
        f.batched,
        f.makespan
    );
    if let Some(what) = grid.exited()? {
        anyhow::bail!("{what} during the benchmark");
    }
    Ok(f)
}

/// The streams through plain `sbatch`.
async fn plain_sbatch(a: &BenchArgs, conf: &Path, dir: &Path, n: usize) -> anyhow::Result<Figures> {
    std::fs::create_dir_all(dir)?;
    let sbatch = |args: &[&str]| -> anyhow::Result<String> {
        let mut c = slurm(conf, "sbatch");
        c.arg("--parsable").args(args);
        Ok(output(c)?.trim().to_string())
    };
    let mut f = Figures::default();
    for i in 0..a.slurm_samples {
        let out: PathBuf = dir.join(format!("latency-{i}.out"));
        let out_arg = format!("--output={}", out.display());
        let t0 = now_ns();
        sbatch(&[&out_arg, "--wrap", "date +%s%N"])?;
        let until = Instant::now() + Duration::from_secs(60);
        let started: u128 = loop {
            if let Ok(text) = std::fs::read_to_string(&out)
                && let Ok(ns) = text.trim().parse()
            {
                break ns;
            }
            anyhow::ensure!(
                Instant::now() < until,
                "an sbatch job did not start in 60 s"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        f.latency.push(started.saturating_sub(t0) as f64 / 1e6);
    }
    wait_slurm_idle(conf).await?;
    let (p50, p99) = (pct(&mut f.latency, 0.5), pct(&mut f.latency, 0.99));
    outln!("sbatch: submit -> start p50 {p50:.2} ms, p99 {p99:.2} ms");

    let k = a.slurm_single;
    let per = k.div_ceil(a.clients.max(1));
    let t = Instant::now();
    let mut procs = Vec::new();
    for _ in 0..a.clients.max(1) {
        let conf = conf.to_path_buf();
        procs.push(std::thread::spawn(move || -> anyhow::Result<()> {
            for _ in 0..per {
                let mut c = slurm(&conf, "sbatch");
                c.args(["--parsable", "--output=/dev/null", "--wrap", "true"]);
                output(c)?;
            }
            Ok(())
        }));
    }
    for p in procs {
        p.join()
            .map_err(|_| anyhow::anyhow!("an sbatch client panicked"))??;
    }
    f.single = (per * a.clients.max(1)) as f64 / t.elapsed().as_secs_f64();
    wait_slurm_idle(conf).await?;
    outln!("sbatch: {:.0} single submissions/s", f.single);

    let t = Instant::now();
    let array = format!("--array=1-{n}");
    sbatch(&[&array, "--output=/dev/null", "--wrap", "sleep 1"])?;
    f.batched = n as f64 / t.elapsed().as_secs_f64();
    while queued(conf)? > 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    f.makespan = t.elapsed().as_secs_f64();
    outln!(
        "sbatch: an array of {n} submitted at {:.0} jobs/s; {n} x 1 s in {:.1} s",
        f.batched,
        f.makespan
    );
    Ok(f)
}
