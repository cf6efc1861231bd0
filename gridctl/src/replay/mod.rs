//! `gridctl replay`: a slice of a workload trace replayed on a live grid as emulated jobs, each
//! submitted at its scaled submission time, then compared with the pure simulation of the same
//! scaled jobs on the same grid description (the decision code is shared, so what differs is
//! what real time alone changes: latencies, whole-second clocks, passes at message times).
//!
//! The grid at `--endpoint` is expected to run the grid description given with `--grid` (the
//! embedded default of `gridctl up` otherwise), fresh, with its agents at time scale 1.

pub mod report;
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
    /// Write every job's live and simulated outcome to this file (JSON Lines).
    #[arg(long)]
    pub records: Option<PathBuf>,
    /// Stop waiting for the live jobs this many seconds after the last submission (default: one
    /// minute plus twice the simulated makespan).
    #[arg(long)]
    pub timeout_s: Option<u64>,
    /// Only simulate (no grid is contacted): the figures a live replay would be compared with.
    #[arg(long)]
    pub dry_run: bool,
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
    live_id: Option<u64>,
    live: &'a Outcome,
    simulated: &'a Outcome,
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
}

fn prepare(a: &ReplayArgs) -> anyhow::Result<Prepared> {
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
    let simulated = simulate(&grid, &slice)?;
    Ok(Prepared {
        path,
        slice,
        grid,
        simulated,
    })
}

/// `gridctl replay --dry-run`: the simulated figures only.
pub fn dry_run(a: &ReplayArgs, json: bool) -> anyhow::Result<()> {
    let p = prepare(a)?;
    let side = report::Side::of(&p.simulated, a.time_scale);
    if json {
        outln!("{}", serde_json::to_string(&side)?);
    } else {
        outln!(
            "{} jobs of {} (after {}) at time scale {}, simulated: {} completed, {} refused, mean \
             wait {:.1} s, mean bounded slowdown {:.3}, makespan {:.1} s (trace seconds)",
            p.slice.jobs.len(),
            p.path.display(),
            a.skip,
            a.time_scale,
            side.completed,
            side.refused,
            side.mean_wait_s,
            side.mean_bsld,
            side.makespan_s
        );
    }
    Ok(())
}

/// Runs `gridctl replay`; the exit code is 1 when some live job did not end in time.
pub async fn replay(
    a: ReplayArgs,
    c: &mut Client,
    authenticated: bool,
    json: bool,
) -> anyhow::Result<std::process::ExitCode> {
    let Prepared {
        path,
        slice,
        grid,
        simulated,
    } = prepare(&a)?;
    let live = live(&a, &grid, &slice, &simulated, c, authenticated).await?;
    let report = Report::new(
        path.display().to_string(),
        a.skip,
        a.time_scale,
        &live.outcomes,
        &simulated,
        live.lag_s,
    );
    if let Some(p) = &a.records {
        let mut out = String::new();
        for (i, (l, s)) in live.outcomes.iter().zip(&simulated).enumerate() {
            let line = RecordLine {
                trace_id: slice.trace_ids[i].0,
                live_id: live.ids[i],
                live: l,
                simulated: s,
            };
            out.push_str(&serde_json::to_string(&line)?);
            out.push('\n');
        }
        std::fs::write(p, out).map_err(|e| anyhow::anyhow!("--records {}: {e}", p.display()))?;
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
fn simulate(grid: &GridFile, slice: &Slice) -> anyhow::Result<Vec<Outcome>> {
    let sim = SimGrid::new(grid)?;
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
    let (mut outcomes, _) = sim.run(jobs)?;
    for id in unknown {
        outcomes[(id - 1) as usize].note = "needs a licence the grid does not have".into();
    }
    Ok(outcomes)
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

async fn live(
    a: &ReplayArgs,
    grid: &GridFile,
    slice: &Slice,
    simulated: &[Outcome],
    c: &mut Client,
    authenticated: bool,
) -> anyhow::Result<Live> {
    let n = slice.jobs.len();
    let site_of = |name: &str| grid.sites.iter().position(|s| s.name == name);
    // Start on a whole second (the grid's clocks are in whole seconds), at least 1 s from now.
    let now = unix_now();
    let t0 = now.as_secs() as i64 + 2;
    let base = Instant::now() + (Duration::from_secs(t0 as u64) - now);
    let mut outcomes: Vec<Outcome> = (1..=n as u64).map(Outcome::refused).collect();
    let mut ids = vec![None; n];
    let mut lag = 0.0;
    let mut accepted = 0usize;
    for (i, j) in slice.jobs.iter().enumerate() {
        tokio::time::sleep_until((base + Duration::from_secs(j.submit as u64)).into()).await;
        let spec = v1::JobSpec {
            user: if authenticated {
                String::new()
            } else {
                format!("u{}", j.user.0)
            },
            user_class: v1::UserClass::from(j.user_class).into(),
            owner_priority: u32::from(j.owner_priority),
            processors: j.procs,
            memory_kb: j.memory_kb,
            estimate_s: j.estimate,
            deadline: j.deadline.map(|d| t0 + d),
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
            Err(s)
                if matches!(
                    s.code(),
                    tonic::Code::InvalidArgument | tonic::Code::FailedPrecondition
                ) =>
            {
                outcomes[i].note = s.message().to_owned();
            }
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
            if !job.state().is_terminal() {
                still.push(i);
                continue;
            }
            let o = &mut outcomes[i];
            // A split job: its first fragment's site (as the simulation records it).
            let first_fragment = job.fragments.first().map(|f| f.site.as_str());
            o.site = job.site.as_deref().or(first_fragment).and_then(site_of);
            o.submit = job.submit_time.map(|t| t - t0);
            o.start = job.start_time.map(|t| t - t0);
            o.end = job.end_time.map(|t| t - t0);
            o.completed = job.state() == v1::JobState::Completed;
            o.note = if o.completed {
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
    for &i in &open {
        outcomes[i].submit = Some(slice.jobs[i].submit);
        outcomes[i].note = "had not ended when the wait ran out".into();
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
