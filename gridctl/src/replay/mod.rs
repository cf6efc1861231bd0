//! `gridctl replay`: a slice of a workload trace replayed on a live grid as emulated jobs, each
//! submitted at its scaled submission time, then compared with the pure simulation of the same
//! scaled jobs on the same grid description (the decision code is shared, so what differs is
//! what real time alone changes: latencies, whole-second clocks, passes at message times).
//!
//! The grid at `--endpoint` is expected to run the grid description given with `--grid` (the
//! embedded default of `gridctl up` otherwise), fresh, with its agents at time scale 1.

pub mod report;
pub mod reservations;
pub mod simulate;
pub mod slice;

use crate::Client;
use crate::out::outln;
use crate::up::grid_file::{DEFAULT, GridFile};
use gridsched_core::model::Job;
use gridsched_proto::v1;
use report::Report;
use serde::Serialize;
use simulate::SimGrid;
use slice::{Slice, TimeScale};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Options of `gridctl replay`.
#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// The trace (SWF, plain or gzip, or JSON Lines): a path, or a file name or prefix in the
    /// traces directory (`$GRIDSCHED_TRACES`).
    #[arg(long)]
    pub trace: String,
    /// Jobs of the trace skipped before the slice.
    #[arg(long, default_value_t = 0)]
    pub skip: usize,
    /// Jobs in the slice.
    #[arg(long, default_value_t = 100)]
    pub jobs: usize,
    /// Factor applied to the trace's submission times, run times, estimates and deadlines, as a
    /// decimal or a fraction: 0.01 (or 1/100) replays a day in 864 s.
    #[arg(long, default_value = "1")]
    pub time_scale: TimeScale,
    /// The grid description the grid at `--endpoint` runs (as given to `gridctl up --grid`);
    /// default: the embedded grid. The simulation runs on it.
    #[arg(long)]
    pub grid: Option<PathBuf>,
    /// Skip unreadable trace lines (they are counted) instead of stopping at the first.
    #[arg(long)]
    pub skip_bad_lines: bool,
    /// Write every job's live and simulated outcome to this file (JSON Lines; the simulated one
    /// alone with `--dry-run`).
    #[arg(long)]
    pub records: Option<PathBuf>,
    /// Stop waiting for the live jobs this many seconds after the last submission (default: one
    /// minute plus twice the simulated makespan).
    #[arg(long)]
    pub timeout_s: Option<u64>,
    /// Only simulate (no grid is contacted): the figures a live replay would be compared with.
    #[arg(long)]
    pub dry_run: bool,
    /// Start the grid description (`--grid`, or the embedded one) in a temporary directory for
    /// this replay, and stop it at the end, instead of replaying on the grid at `--endpoint`.
    #[arg(long)]
    pub up: bool,
    /// Lose a site at a replay second, as `SITE@SECONDS` (repeatable): its local scheduler and
    /// agents are killed then and never come back (with `--up`; simulated alone with
    /// `--dry-run`). The meta-scheduler marks it down after `links.site_down_after_ms` and sends
    /// the jobs it had not started elsewhere; the jobs it was running are lost with it.
    #[arg(long, value_name = "SITE@SECONDS")]
    pub lose: Vec<SiteLoss>,
    /// Advance reservations to ask the grid for during the replay: JSON Lines of
    /// `{"at": T, "id": N, "site": S, "start": T1, "end": T2, "procs": P}` (optional `"user":
    /// U`) in trace seconds, scaled as the jobs; a job runs in one with `"reservation": N`.
    #[arg(long, value_name = "FILE")]
    pub reservations: Option<PathBuf>,
}

/// One `--lose SITE@SECONDS`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteLoss {
    /// The site's name.
    pub site: String,
    /// The replay second it is lost at.
    pub at: i64,
}

impl std::str::FromStr for SiteLoss {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("`{s}`: SITE@SECONDS, such as beta@40");
        let (site, at) = s.split_once('@').ok_or_else(bad)?;
        let at: u32 = at.parse().map_err(|_| bad())?;
        if site.is_empty() {
            return Err(bad());
        }
        Ok(SiteLoss {
            site: site.to_owned(),
            at: i64::from(at),
        })
    }
}

/// What became of one job of the slice, times in replay seconds from the replay's start.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Outcome {
    /// The job's number in the slice, from 1.
    pub job: u64,
    /// The index of its site in the grid description.
    pub site: Option<usize>,
    /// When it was accepted (absent: refused).
    pub submit: Option<i64>,
    /// When it first started.
    pub start: Option<i64>,
    /// When it ended.
    pub end: Option<i64>,
    /// Whether it ran to completion.
    pub completed: bool,
    /// Whether it was lost with its site (`--lose`): it was running there, or kept there.
    pub lost: bool,
    /// Why it was refused, or how it ended when not completed.
    pub note: String,
}

impl Outcome {
    /// Job `job`, refused at submission.
    pub fn refused(job: u64) -> Outcome {
        Outcome {
            job,
            note: "refused".into(),
            ..Outcome::default()
        }
    }

    /// Whether the job was refused at submission.
    pub fn was_refused(&self) -> bool {
        self.submit.is_none()
    }

    /// Submission, start and end, when all are known.
    pub fn times(&self) -> Option<(i64, i64, i64)> {
        Some((self.submit?, self.start?, self.end?))
    }
}

/// One line of `--records`.
#[derive(Serialize)]
struct RecordLine<'a> {
    trace_id: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    live_id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    live: Option<&'a Outcome>,
    simulated: &'a Outcome,
}

/// Whether a status code is the grid's refusal of a request (rather than a failure to answer).
fn refusal(code: tonic::Code) -> bool {
    use tonic::Code::*;
    matches!(
        code,
        InvalidArgument | FailedPrecondition | NotFound | PermissionDenied | OutOfRange
    )
}

/// Writes `--records`: each job's simulated outcome, and its live one when there is a live side.
fn write_records(
    path: &std::path::Path,
    slice: &Slice,
    simulated: &[Outcome],
    live: Option<&Live>,
) -> anyhow::Result<()> {
    let mut out = String::new();
    for (i, s) in simulated.iter().enumerate() {
        let line = RecordLine {
            trace_id: slice.trace_ids[i].0,
            live_id: live.and_then(|l| l.ids[i]),
            live: live.map(|l| &l.outcomes[i]),
            simulated: s,
        };
        out.push_str(&serde_json::to_string(&line)?);
        out.push('\n');
    }
    std::fs::write(path, out).map_err(|e| anyhow::anyhow!("--records {}: {e}", path.display()))
}

fn unix_now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// The slice, the grid and the simulated outcomes of a replay.
struct Prepared {
    path: PathBuf,
    slice: Slice,
    grid: GridFile,
    simulated: Vec<Outcome>,
    /// The sites lost (`--lose`): replay second, site index.
    lost: Vec<(i64, usize)>,
    /// After how long the meta-scheduler marks down a site it cannot reach.
    down_after_ms: u64,
    /// The advance reservations asked for (`--reservations`).
    reservations: Vec<reservations::Asked>,
}

/// The options that contradict each other, found before any grid is contacted.
pub fn check_args(a: &ReplayArgs) -> anyhow::Result<()> {
    if !a.lose.is_empty() && !a.up && !a.dry_run {
        anyhow::bail!(
            "--lose kills a site's processes: it needs --up (the replay starts the grid itself) \
             or --dry-run (simulated only)"
        );
    }
    Ok(())
}

fn prepare(a: &ReplayArgs) -> anyhow::Result<Prepared> {
    check_args(a)?;
    let dir = gridsched_workload::traces::dir();
    let path = gridsched_workload::traces::resolve(&a.trace, &dir).map_err(anyhow::Error::msg)?;
    if a.jobs == 0 {
        anyhow::bail!("--jobs: at least one job");
    }
    let slice = slice::read(&path, a.skip, a.jobs, a.time_scale, a.skip_bad_lines)?;
    let text = match &a.grid {
        Some(p) => std::fs::read_to_string(p)
            .map_err(|e| anyhow::anyhow!("--grid {}: {e}", p.display()))?,
        None => DEFAULT.to_owned(),
    };
    let grid = GridFile::parse(&text)?;
    let lost = a
        .lose
        .iter()
        .map(|l| match grid.site_index(&l.site) {
            Some(i) => Ok((l.at, i)),
            None => {
                let names = grid.site_names().join(", ");
                anyhow::bail!(
                    "--lose {}@{}: no site `{}` (sites: {names})",
                    l.site,
                    l.at,
                    l.site
                )
            }
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let reservations = match &a.reservations {
        Some(p) => reservations::read(p, slice.origin, a.time_scale, &grid.site_names())?,
        None => Vec::new(),
    };
    let (simulated, down_after_ms) = simulate(&grid, &slice, &lost, &reservations)?;
    Ok(Prepared {
        path,
        slice,
        grid,
        simulated,
        lost,
        down_after_ms,
        reservations,
    })
}

/// `gridctl replay` that contacts no grid at `--endpoint`: `--dry-run`, or `--up`.
pub async fn without_endpoint(a: ReplayArgs, json: bool) -> anyhow::Result<ExitCode> {
    check_args(&a)?;
    if a.dry_run {
        dry_run(&a, json)?;
        Ok(ExitCode::SUCCESS)
    } else {
        replay_up(a, json).await
    }
}

/// `gridctl replay --dry-run`: the simulated figures only.
fn dry_run(a: &ReplayArgs, json: bool) -> anyhow::Result<()> {
    let p = prepare(a)?;
    if let Some(r) = &a.records {
        write_records(r, &p.slice, &p.simulated, None)?;
    }
    let side = report::Side::of(&p.simulated, a.time_scale);
    if json {
        outln!("{}", serde_json::to_string(&side)?);
    } else {
        outln!(
            "{} jobs of {} (after {}) at time scale {}, simulated: {} completed, {} refused{}, \
             mean wait {:.1} s, mean bounded slowdown {:.3}, makespan {:.1} s (trace seconds)",
            p.slice.jobs.len(),
            p.path.display(),
            a.skip,
            a.time_scale,
            side.completed,
            side.refused,
            if side.lost > 0 {
                format!(", {} lost with their site", side.lost)
            } else {
                String::new()
            },
            side.mean_wait_s,
            side.mean_bsld,
            side.makespan_s
        );
    }
    Ok(())
}

/// Runs `gridctl replay` on the grid `c` is connected to; the exit code is 1 when some live job
/// did not end in time.
pub async fn replay(
    a: ReplayArgs,
    c: &mut Client,
    authenticated: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let p = prepare(&a)?;
    let live = live(&a, &p, c, authenticated, None).await?;
    conclude(&a, &p, &live, json)
}

/// `gridctl replay --up`: the grid description is started for the replay in a temporary
/// directory (kept, and named, when the replay fails), the sites of `--lose` are lost on the way,
/// and the grid stops at the end.
async fn replay_up(a: ReplayArgs, json: bool) -> anyhow::Result<ExitCode> {
    let p = prepare(&a)?;
    let dir = tempfile::tempdir()?;
    let launched = crate::up::launch(&p.grid, dir.path(), "127.0.0.1:0", None, 1.0)?;
    let conn = crate::Conn {
        endpoint: format!("http://{}", launched.meta()),
        failover_wait: 10,
        token: None,
        token_file: None,
        ca: None,
    };
    let mut c = crate::connect(&conn).await?;
    let launched = std::sync::Arc::new(std::sync::Mutex::new(launched));
    let live = live(&a, &p, &mut c, false, Some(launched)).await;
    let code = live.and_then(|live| conclude(&a, &p, &live, json));
    if !matches!(&code, Ok(c) if *c == ExitCode::SUCCESS) {
        eprintln!(
            "gridctl replay: the grid's logs are kept in {}",
            dir.keep().join("logs").display()
        );
    }
    code
}

/// The report and records of a replay whose live side ran.
fn conclude(a: &ReplayArgs, p: &Prepared, live: &Live, json: bool) -> anyhow::Result<ExitCode> {
    let Prepared {
        path,
        slice,
        simulated,
        ..
    } = p;
    let report = Report::new(
        path.display().to_string(),
        a.skip,
        a.time_scale,
        &live.outcomes,
        simulated,
        live.lag_s,
    );
    if let Some(p) = &a.records {
        write_records(p, slice, simulated, Some(live))?;
    }
    if json {
        outln!("{}", serde_json::to_string(&report)?);
    } else {
        let n = report.jobs;
        outln!(
            "{n} jobs of {} (after {}) at time scale {}; times in trace seconds",
            report.trace,
            report.skip,
            report.time_scale
        );
        outln!("{}", report.table());
        outln!(
            "same site: {}/{n}; started within 1 replay second at the same site: {}/{n}; mean \
             submission lag: {:.3} s",
            report.same_site,
            report.same_start,
            report.mean_submit_lag_s
        );
    }
    Ok(if live.unfinished == 0 {
        0.into()
    } else {
        eprintln!(
            "gridctl replay: {} jobs had not ended when the wait ran out",
            live.unfinished
        );
        1.into()
    })
}

/// The simulated outcomes of the slice's jobs; a job needing a licence the grid does not know is
/// refused, as the meta-scheduler refuses it.
fn simulate(
    grid: &GridFile,
    slice: &Slice,
    lost: &[(i64, usize)],
    reservations: &[reservations::Asked],
) -> anyhow::Result<(Vec<Outcome>, u64)> {
    let sim = SimGrid::new(grid)?;
    let down_after_ms = sim.site_down_after_ms();
    let mut unknown = Vec::new();
    let mut jobs: Vec<Job> = Vec::with_capacity(slice.jobs.len());
    for j in &slice.jobs {
        let names = licence_names(slice, j)?;
        match names
            .iter()
            .map(|n| sim.licence(n))
            .collect::<Option<Vec<_>>>()
        {
            Some(ls) => {
                let mut j = j.clone();
                j.licences = ls;
                jobs.push(j);
            }
            None => unknown.push(j.id.0),
        }
    }
    let (mut outcomes, _) = sim.run(jobs, lost, reservations)?;
    for id in unknown {
        outcomes[(id - 1) as usize].note = "needs a licence the grid does not have".into();
    }
    Ok((outcomes, down_after_ms))
}

fn licence_names(slice: &Slice, j: &Job) -> anyhow::Result<Vec<String>> {
    j.licences
        .iter()
        .map(|l| {
            slice
                .licence_names
                .get(usize::from(l.0))
                .cloned()
                .ok_or_else(|| anyhow::anyhow!("trace job {}: licence {} has no name", j.id, l.0))
        })
        .collect()
}

/// The live side of a replay.
struct Live {
    outcomes: Vec<Outcome>,
    ids: Vec<Option<u64>>,
    lag_s: f64,
    unfinished: usize,
}

/// A grid started by the replay (`--up`), whose sites `--lose` kills.
type Started = std::sync::Arc<std::sync::Mutex<crate::up::Launched>>;

async fn live(
    a: &ReplayArgs,
    p: &Prepared,
    c: &mut Client,
    authenticated: bool,
    started: Option<Started>,
) -> anyhow::Result<Live> {
    let Prepared {
        slice,
        grid,
        simulated,
        lost,
        down_after_ms,
        reservations,
        ..
    } = p;
    let n = slice.jobs.len();
    let site_of = |name: &str| grid.site_index(name);
    // Start on a whole second (the grid's clocks are in whole seconds), at least 1 s from now.
    let now = unix_now();
    let t0 = now.as_secs() as i64 + 2;
    let base = Instant::now() + (Duration::from_secs(t0 as u64) - now);
    // Each lost site's processes are killed at its second.
    let mut killers = Vec::new();
    if let Some(g) = &started {
        for &(at, site) in lost {
            let g = g.clone();
            let when = base + Duration::from_secs(u64::try_from(at).unwrap_or(0));
            killers.push(tokio::spawn(async move {
                tokio::time::sleep_until(when.into()).await;
                if let Ok(mut g) = g.lock()
                    && let Err(e) = g.kill_site(site)
                {
                    eprintln!("gridctl replay: cannot kill site {site}: {e}");
                }
            }));
        }
    }
    // A job still at a lost site once the meta-scheduler has had the time to mark it down (and
    // to send elsewhere what it had not started) is lost with it.
    let settled = |site: usize| {
        let grace = down_after_ms.div_ceil(1000) + 3;
        lost.iter().any(|&(at, s)| {
            s == site
                && Instant::now()
                    >= base + Duration::from_secs(u64::try_from(at).unwrap_or(0) + grace)
        })
    };
    let mut outcomes: Vec<Outcome> = (1..=n as u64).map(Outcome::refused).collect();
    let mut ids = vec![None; n];
    let mut lag = 0.0;
    let mut accepted = 0usize;
    let user = |u: u32| {
        if authenticated {
            String::new()
        } else {
            format!("u{u}")
        }
    };
    // The reservations asked for, and the jobs submitted, in time order (a second's
    // reservations before its jobs).
    let mut steps: Vec<(i64, bool, usize)> = (reservations.iter().enumerate())
        .map(|(k, r)| (r.at, false, k))
        .chain(
            slice
                .jobs
                .iter()
                .enumerate()
                .map(|(i, j)| (j.submit, true, i)),
        )
        .collect();
    steps.sort_unstable();
    // The grid's id of each reservation it holds, by the number jobs name it by.
    let mut held: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
    for (at, is_job, k) in steps {
        tokio::time::sleep_until((base + Duration::from_secs(at as u64)).into()).await;
        if !is_job {
            let r = &reservations[k];
            let ask = v1::ReserveRequest {
                reservation: Some(v1::AdvanceReservation {
                    site: r.site_name.clone(),
                    start_time: t0 + r.start,
                    end_time: t0 + r.end,
                    processors: r.procs,
                    user: r.user.map_or(String::new(), |u| user(u.0)),
                    ..Default::default()
                }),
                ..Default::default()
            };
            match c.reserve(ask).await {
                Ok(a) => {
                    if let Some(got) = a.into_inner().reservation {
                        held.insert(r.name, got.id);
                    }
                }
                Err(s) if refusal(s.code()) => {}
                Err(s) => return Err(s.into()),
            }
            continue;
        }
        let (i, j) = (k, &slice.jobs[k]);
        let reservation = match j.reservation.map(|r| held.get(&r.0).ok_or(r.0)) {
            None => None,
            Some(Ok(&id)) => Some(id),
            Some(Err(name)) => {
                outcomes[i].note = format!("reservation {name} was not held by the grid");
                continue;
            }
        };
        let spec = v1::JobSpec {
            user: user(j.user.0),
            user_class: v1::UserClass::from(j.user_class).into(),
            owner_priority: u32::from(j.owner_priority),
            processors: j.procs,
            memory_kb: j.memory_kb,
            estimate_s: j.estimate,
            deadline: j.deadline.map(|d| t0 + d),
            urgency: j.urgency.map_or(0, |u| v1::Urgency::from(u) as i32),
            reservation,
            licences: licence_names(slice, j)?,
            benchmark: j.benchmark,
            emulate_runtime_s: j.runtime,
            ..Default::default()
        };
        match c.submit(v1::SubmitRequest { spec: Some(spec) }).await {
            Ok(r) => {
                let id = r.into_inner().job_id;
                ids[i] = Some(id);
                accepted += 1;
                lag += (Instant::now().saturating_duration_since(base)).as_secs_f64()
                    - j.submit as f64;
            }
            Err(s) if refusal(s.code()) => outcomes[i].note = s.message().to_owned(),
            Err(s) => return Err(s.into()),
        }
    }
    let makespan = simulated.iter().filter_map(|o| o.end).max().unwrap_or(0);
    let wait = a
        .timeout_s
        .unwrap_or(60 + 2 * u64::try_from(makespan).unwrap_or(0));
    let give_up = Instant::now() + Duration::from_secs(wait);
    let mut open: Vec<usize> = (0..n).filter(|&i| ids[i].is_some()).collect();
    while !open.is_empty() && Instant::now() < give_up {
        let mut still = Vec::with_capacity(open.len());
        for i in open {
            let id = ids[i].expect("open jobs were accepted");
            let job = c
                .get_job(v1::GetJobRequest { job_id: id })
                .await?
                .into_inner()
                .job
                .unwrap_or_default();
            // A split job: its first fragment's site (as the simulation records it).
            let first_fragment = job.fragments.first().map(|f| f.site.as_str());
            let site = job.site.as_deref().or(first_fragment).and_then(site_of);
            let lost_there = !job.state().is_terminal() && site.is_some_and(settled);
            let o = &mut outcomes[i];
            // As far as known: an unfinished job keeps these if the wait runs out.
            o.site = site;
            o.submit = job.submit_time.map(|t| t - t0);
            o.start = job.start_time.map(|t| t - t0);
            if !job.state().is_terminal() && !lost_there {
                still.push(i);
                continue;
            }
            o.end = job.end_time.map(|t| t - t0);
            o.completed = job.state() == v1::JobState::Completed;
            o.lost = lost_there;
            o.note = if lost_there {
                let name = site.map_or("?", |s| grid.sites[s].name.as_str());
                format!("lost with site {name}")
            } else if o.completed {
                String::new()
            } else {
                format!("{}: {}", job.state().as_str_name(), job.reason)
            };
        }
        open = still;
        if !open.is_empty() {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    for k in killers {
        k.abort();
    }
    for &i in &open {
        let o = &mut outcomes[i];
        o.submit.get_or_insert(slice.jobs[i].submit);
        o.note = "had not ended when the wait ran out".into();
    }
    Ok(Live {
        outcomes,
        ids,
        lag_s: if accepted > 0 {
            lag / accepted as f64
        } else {
            0.0
        },
        unfinished: open.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_site_loss_reads_as_site_at_whole_seconds() {
        let l: SiteLoss = "beta@40".parse().unwrap();
        assert_eq!(
            l,
            SiteLoss {
                site: "beta".into(),
                at: 40
            }
        );
        for bad in ["beta", "@4", "beta@-1", "beta@1.5", "beta@"] {
            let e = bad.parse::<SiteLoss>().unwrap_err();
            assert!(e.contains("SITE@SECONDS, such as beta@40"), "{bad}: {e}");
        }
    }

    /// `--lose` needs a grid the replay starts, or none; an unknown site is named with the grid's.
    #[test]
    fn a_loss_needs_up_or_dry_run_and_a_known_site() {
        let args = |extra: &[&str]| {
            #[derive(clap::Parser)]
            struct A {
                #[command(flatten)]
                r: ReplayArgs,
            }
            let base = ["x", "--trace", "/nonexistent.swf"];
            <A as clap::Parser>::parse_from(base.iter().chain(extra)).r
        };
        let e = check_args(&args(&["--lose", "alpha@3"])).unwrap_err();
        assert!(e.to_string().contains("needs --up"), "{e}");
        check_args(&args(&["--lose", "alpha@3", "--up"])).unwrap();
        check_args(&args(&["--lose", "alpha@3", "--dry-run"])).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("j.jsonl");
        std::fs::write(
            &trace,
            "{\"id\":1,\"submit\":0,\"procs\":1,\"estimate\":5}\n",
        )
        .unwrap();
        let mut a = args(&["--lose", "zeta@3", "--dry-run"]);
        a.trace = trace.display().to_string();
        let e = prepare(&a).err().unwrap().to_string();
        assert_eq!(
            e,
            "--lose zeta@3: no site `zeta` (sites: alpha, beta, gamma, delta)"
        );
    }
}
