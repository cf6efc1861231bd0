//! The platform engine: discrete-event simulation of heterogeneous clusters with licences, one
//! local policy per cluster, and (for two-level runs) a meta-scheduler that classifies and
//! dispatches every job (spec `two-level-grid-scheduler.md` D3, D8, D8.1; D12 #24, #41).
//!
//! Methodology of D8: at every instant, first the terminations, then the submissions (each job is
//! classified and dispatched at once, then queued at its cluster's local scheduler), then one
//! scheduling pass of every cluster that saw an event ("a new plan at every submission and
//! termination", batched per instant so that simultaneous events give one plan). A job runs on one
//! machine for its run time scaled by the benchmark ratio (`Nxtime`, rounded up), killed at its
//! scaled estimate. A policy may suspend running jobs ([`Decisions::suspensions`](gridsched_core::policy::Decisions)): the job keeps
//! the reference work it has done (rounded down, so it never gains progress) and resumes wherever
//! its policy starts it next. Each cluster's policy is driven by the core's
//! [`ClusterRunner`](gridsched_core::runner::ClusterRunner), the same code the live local scheduler
//! drives in real time: it validates every start against the cluster's own accounting, and a
//! schedule that would oversubscribe a machine or a licence pool stops the run with an error.
//!
//! The meta-scheduler's side — classification, dispatch, the meta-level queue and its release
//! passes, the co-allocation of a job the dispatcher splits over clusters
//! ([`Placement::Split`](gridsched_core::dispatch::Placement), when the run is given
//! [`SplitRules`]: see [`split`]) — is the core's [`GridRunner`], the code the live
//! meta-scheduler drives; this engine carries out its effects against the cluster runners.
//!
//! This engine is separate from [`crate::engine`], which reproduces the reference trace simulator's
//! exact event order on space-shared machines.

mod events;
mod metrics;
mod run;
pub mod split;
mod staging;

#[cfg(test)]
mod tests;

pub use events::{GridEvents, ReservationAsk, WorkflowSubmission};
pub use gridsched_core::grid::Classify;
pub use metrics::{JobStats, JobSummary, Level, Usage, UsageIntegral};
pub use split::SplitRules;

use gridsched_core::dispatch::{ClusterCaps, Dispatcher, Network, Priority};
use gridsched_core::grid::{GridConfig, GridRunner, GridSettings, Input as GridInput, SiteSpec};
use gridsched_core::model::{ClusterId, Duration, Job, JobId, Platform, Time};
use gridsched_core::policy::Policy;
use gridsched_core::runner::{ClusterRunner, Effect, RunnerConfig};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

/// Why a platform run stopped.
#[derive(Debug, thiserror::Error)]
pub enum PlatformError<E> {
    /// The workload stream failed.
    #[error(transparent)]
    Workload(E),
    /// Jobs must arrive in submission order.
    #[error("job {job} is submitted at {submit}, before the clock ({clock})")]
    Unsorted {
        /// The job.
        job: JobId,
        /// Its submission.
        submit: Time,
        /// The clock.
        clock: Time,
    },
    /// A job id is reused while the first job is in the system.
    #[error("job id {0} is submitted twice")]
    DuplicateJob(JobId),
    /// The number of policies is not the number of clusters.
    #[error("{policies} policies for {clusters} clusters")]
    PolicyCount {
        /// Policies given.
        policies: usize,
        /// Clusters of the platform.
        clusters: usize,
    },
    /// A policy's decision breaks a rule.
    #[error("at {time}: cluster {cluster}: job {job}: {why}")]
    BadDecision {
        /// When.
        time: Time,
        /// Which cluster's policy.
        cluster: ClusterId,
        /// The job.
        job: JobId,
        /// What is wrong.
        why: String,
    },
    /// The grid's configuration cannot make a grid runner for this platform.
    #[error("the grid's configuration: {0}")]
    Grid(String),
    /// Events ran out with jobs still waiting.
    #[error("at {time}: {waiting} jobs wait but nothing will ever start them")]
    Stalled {
        /// When.
        time: Time,
        /// Jobs left.
        waiting: usize,
    },
}

/// The outcome of one job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PlatformRecord {
    /// The job.
    pub id: JobId,
    /// Its cluster.
    pub cluster: ClusterId,
    /// Priority given by the meta-scheduler.
    pub priority: Priority,
    /// Submission.
    pub submit: Time,
    /// First start.
    pub start: Time,
    /// End.
    pub end: Time,
    /// Seconds spent running (over all its runs).
    pub exec: Duration,
    /// Deadline, if any.
    pub deadline: Option<Time>,
    /// Times it was suspended.
    pub suspensions: u32,
    /// Times it was killed (or requeued) and ran again from scratch.
    #[serde(skip_serializing_if = "is_zero_u32")]
    pub restarts: u32,
    /// A split job's fragments: cluster and processors (empty for a job run whole at `cluster`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<(ClusterId, u32)>,
}

fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

/// How one workflow of a run went.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WorkflowRecord {
    /// Its id.
    pub id: JobId,
    /// When it was submitted.
    pub submit: Time,
    /// When it ended (no node out, none left to release).
    pub end: Time,
    /// How.
    pub outcome: gridsched_core::model::Outcome,
    /// Its nodes completed.
    pub done: u32,
}

/// Counters of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PlatformStats {
    /// Jobs read.
    pub submitted: u64,
    /// Jobs refused by the meta-scheduler or a local scheduler.
    pub rejected: u64,
    /// The first rejection messages.
    pub rejections: Vec<String>,
    /// Starts (including resumptions).
    pub starts: u64,
    /// Suspensions.
    pub suspensions: u64,
    /// Kills of running jobs that then wait again (preemption by an urgent job).
    #[serde(skip_serializing_if = "is_zero")]
    pub kills: u64,
    /// Split jobs whose fragments were co-allocated.
    #[serde(skip_serializing_if = "is_zero")]
    pub coallocations: u64,
    /// Co-allocations given up (the job dispatched again a second later).
    #[serde(skip_serializing_if = "is_zero")]
    pub coallocations_given_up: u64,
    /// Jobs lost with their sites ([`GridEvents`]), by job id, with the site: running there, or
    /// kept there, when it was lost.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lost_jobs: Vec<(JobId, ClusterId)>,
    /// Advance reservations asked for at the grid ([`GridEvents`]) and held by their sites.
    #[serde(skip_serializing_if = "is_zero")]
    pub reservations_held: u64,
    /// Advance reservations refused, by the grid's checks or by their sites.
    #[serde(skip_serializing_if = "is_zero")]
    pub reservations_refused: u64,
    /// Jobs cancelled by their users ([`GridEvents::cancels`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub cancelled: u64,
    /// Jobs ended never started because their dependency could never be met.
    #[serde(skip_serializing_if = "is_zero")]
    pub unmet: u64,
    /// Tasks released by job arrays (each a job of its own from then on).
    #[serde(skip_serializing_if = "is_zero")]
    pub tasks: u64,
    /// Workflow nodes released (each run, retries included, a job of its own from then on).
    #[serde(skip_serializing_if = "is_zero")]
    pub nodes: u64,
    /// Inputs moved to sites over the grid's links (one move per input and site).
    #[serde(skip_serializing_if = "is_zero")]
    pub input_moves: u64,
    /// Bytes of those moves.
    #[serde(skip_serializing_if = "is_zero")]
    pub input_bytes: u64,
    /// Seconds the jobs waited at their sites for their inputs, summed.
    #[serde(skip_serializing_if = "is_zero")]
    pub input_wait_s: u64,
    /// The workflows ([`GridEvents::workflows`]) that ended, in the order they did.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub workflows: Vec<WorkflowRecord>,
    /// Scheduling passes.
    pub passes: u64,
    /// Mean wall-clock time of a pass, microseconds (not deterministic).
    pub mean_pass_us: f64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Figures of one cluster.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClusterReport {
    /// Cluster name.
    pub name: String,
    /// Jobs dispatched to it.
    pub dispatched: u64,
    /// Its share of the dispatched workload (estimate × processors), percent.
    pub workload_pct: f64,
    /// Its share of the platform's machines (the seed's "optimal" share), percent.
    pub optimal_pct: f64,
    /// Per-job figures.
    pub jobs: JobSummary,
    /// Usage figures.
    pub usage: Usage,
}

/// The outcome of a platform run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlatformReport {
    /// Per-job figures over the platform.
    pub jobs: JobSummary,
    /// Usage over the platform.
    pub usage: Usage,
    /// Per cluster.
    pub clusters: Vec<ClusterReport>,
    /// Counters.
    pub stats: PlatformStats,
}

/// Called after each pass with the time, the cluster, the pass's effects (starts, suspensions,
/// kills) and the cluster's runner: an observer of the run (the gang experiment measures its
/// loss of capacity by one).
pub type PlatformPassHook<'a> = &'a mut dyn FnMut(Time, ClusterId, &[Effect], &ClusterRunner);

/// Called with every job refused and why.
pub type PlatformRefusalHook<'a> = &'a mut dyn FnMut(JobId, &str);

/// Optional callbacks.
#[derive(Default)]
pub struct PlatformHooks<'a> {
    /// Every finished job.
    pub record: Option<&'a mut dyn FnMut(&PlatformRecord)>,
    /// After every pass.
    pub pass: Option<PlatformPassHook<'a>>,
    /// Every job refused (by the grid's admission or dispatch, or by its site), or ended never
    /// started (its dependency can never be met), with why.
    pub refused: Option<PlatformRefusalHook<'a>>,
}

impl std::fmt::Debug for PlatformHooks<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlatformHooks").finish_non_exhaustive()
    }
}

/// The meta-scheduler of a run: how each job gets its priority, the dispatch strategy, and how
/// split jobs are co-allocated. The engine builds the grid runner ([`GridRunner`]) from it, the
/// one the live meta-scheduler drives.
#[derive(Debug)]
pub struct Meta {
    /// Priority of a job at its submission.
    pub classify: Classify,
    /// Chooses the cluster.
    pub dispatcher: Box<dyn Dispatcher>,
    /// How split jobs are co-allocated; `None`: a split is refused (the engine runs one cluster
    /// per job).
    pub splits: Option<SplitRules>,
    /// The grid's links: the jobs' inputs ([`Job::stage_in`]) move over them before the jobs
    /// reach their sites, and the strategies that estimate completion count them unless blind;
    /// `None`: data costs nothing.
    pub links: Option<DataLinks>,
}

/// The grid's links in a run, and whether the strategies ignore them.
#[derive(Clone, Debug)]
pub struct DataLinks {
    /// The links, one per site in cluster order.
    pub network: Network,
    /// The strategies do not count the transfers (the data-blind baseline); they still take time.
    pub blind: bool,
}

/// The grid level of a run: a [`Meta`], from which the engine builds the grid runner over the
/// platform's clusters, or the plain configuration a live meta-scheduler builds its own runner
/// from ([`GridRunner::from_config`]: its sites' limits, its settings), one site per cluster in
/// order.
#[derive(Debug)]
pub enum Grid {
    /// Built over the platform.
    Meta(Meta),
    /// As a live meta-scheduler builds it.
    Config(Box<GridConfig>),
}

impl From<Meta> for Grid {
    fn from(m: Meta) -> Grid {
        Grid::Meta(m)
    }
}

impl From<GridConfig> for Grid {
    fn from(c: GridConfig) -> Grid {
        Grid::Config(Box::new(c))
    }
}

/// A dispatched job (or a split job's fragment) at its cluster, for the engine: the generation of
/// its current run (an end event of an earlier run, before a suspension, is stale).
#[derive(Clone, Copy, Debug)]
struct Flight {
    generation: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    End {
        job: JobId,
        cluster: ClusterId,
        generation: u64,
    },
    Wake {
        cluster: ClusterId,
    },
    /// A split job whose co-allocation was given up is dispatched again.
    Retry {
        job: JobId,
    },
    /// A site is lost ([`GridEvents`]).
    Lost {
        cluster: ClusterId,
    },
    /// The advance reservation request of this index in [`GridEvents::reservations`].
    Reserve {
        index: usize,
    },
    /// The grid runner is given the time (a lost site's down timeout has run out).
    Tick,
    /// A user cancels the job ([`GridEvents::cancels`]).
    Cancel {
        job: JobId,
    },
    /// The workflow of this index in [`GridEvents::workflows`] is submitted.
    Workflow {
        index: usize,
    },
    /// Moves of inputs may have sent their last byte (stale unless `generation` is current).
    Drain {
        generation: u64,
    },
    /// An input (interned key) is at a site.
    Arrive {
        site: ClusterId,
        key: u32,
    },
}

struct Sim<'p, 'h> {
    platform: &'p Platform,
    runners: Vec<ClusterRunner>,
    /// Keyed by job and cluster: a split job has a fragment at each of its clusters.
    flights: FxHashMap<(JobId, ClusterId), Flight>,
    /// The meta-scheduler's decisions: classification, dispatch, the meta-level queue,
    /// co-allocation.
    grid: GridRunner,
    /// Split jobs running as fragments.
    splits: FxHashMap<JobId, split::SplitJob>,
    events: BinaryHeap<Reverse<(Time, u64, Ev)>>,
    seq: u64,
    wakes: BTreeSet<(Time, ClusterId)>,
    /// The fair-share recalculation a tick is pushed for.
    recalc_tick: Option<Time>,
    levels: Vec<Level>,
    integrals: Vec<UsageIntegral>,
    platform_integral: UsageIntegral,
    job_stats: Vec<JobStats>,
    platform_jobs: JobStats,
    dispatched: Vec<u64>,
    workload: Vec<f64>,
    stats: PlatformStats,
    pass_time: f64,
    hooks: PlatformHooks<'h>,
    effects: Vec<Effect>,
    /// The grid runner's decisions on the starts of a pass, carried out after it.
    backlog: Vec<gridsched_core::grid::Effect>,
    /// Per cluster: lost ([`GridEvents`]).
    lost: Vec<bool>,
    /// The grid's ids of the reservations asked for, by the numbers jobs name them by.
    named: events::Named,
    /// How each job that left the grid ended, for the jobs submitted later that wait for it
    /// (the grid runner keeps only the jobs it has).
    ended: FxHashMap<JobId, gridsched_core::model::Ended>,
    /// The workflows submitted and not over, with their submission.
    submitted_workflows: FxHashMap<JobId, Time>,
    /// The moves of the jobs' inputs, where the grid describes its links.
    staging: Option<staging::Staging>,
}

/// Runs `jobs` over `platform`, one policy per cluster (in cluster order), dispatched by `grid`.
pub fn simulate_platform<I, E>(
    platform: &Platform,
    policies: Vec<Box<dyn Policy>>,
    grid: impl Into<Grid>,
    jobs: I,
    hooks: PlatformHooks<'_>,
) -> Result<PlatformReport, PlatformError<E>>
where
    I: IntoIterator<Item = Result<Job, E>>,
{
    let none = GridEvents::default();
    simulate_platform_with(platform, policies, grid, jobs, hooks, &none)
}

/// [`simulate_platform`] with `events` happening to the grid on the way: sites lost, advance
/// reservations asked for.
pub fn simulate_platform_with<I, E>(
    platform: &Platform,
    policies: Vec<Box<dyn Policy>>,
    grid: impl Into<Grid>,
    jobs: I,
    hooks: PlatformHooks<'_>,
    events: &GridEvents,
) -> Result<PlatformReport, PlatformError<E>>
where
    I: IntoIterator<Item = Result<Job, E>>,
{
    if policies.len() != platform.clusters.len() {
        return Err(PlatformError::PolicyCount {
            policies: policies.len(),
            clusters: platform.clusters.len(),
        });
    }
    let n = platform.clusters.len();
    let mut levels = vec![Level::default(); n];
    for (c, l) in platform.clusters.iter().zip(levels.iter_mut()) {
        for m in &c.machines {
            l.total_procs += u64::from(platform.machines[m.index()].procs);
            l.total_machines += 1;
        }
        l.total_copies = c.pools.iter().map(|p| u64::from(p.copies)).sum();
    }
    let runners = policies
        .into_iter()
        .enumerate()
        .map(|(c, p)| {
            let cluster = ClusterId(c as u32);
            ClusterRunner::new(platform, cluster, p, RunnerConfig::default()).map_err(|e| {
                PlatformError::BadDecision {
                    time: 0,
                    cluster,
                    job: JobId(0),
                    why: e.to_string(),
                }
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let grid = match grid.into() {
        Grid::Meta(meta) => {
            let mut caps = caps_of(platform);
            // A partition's jobs may span its nodes: the widest job it runs is its whole size.
            for (c, r) in caps.iter_mut().zip(&runners) {
                if r.is_partition() {
                    c.max_machine_procs = u32::try_from(c.total_procs).unwrap_or(u32::MAX);
                }
            }
            let sites = caps
                .into_iter()
                .zip(&platform.clusters)
                .map(|(caps, c)| SiteSpec::plain(c.name.clone(), caps))
                .collect();
            if let Some(l) = &meta.links {
                l.network.check(n).map_err(PlatformError::Grid)?;
            }
            let settings = GridSettings {
                coallocation: meta.splits,
                site_down_after_ms: events.loses().then_some(events.down_after_ms),
                data_blind: meta.links.as_ref().is_some_and(|l| l.blind),
                network: meta.links.map(|l| l.network),
                ..GridSettings::default()
            };
            GridRunner::new(sites, meta.dispatcher, meta.classify, settings)
        }
        Grid::Config(cfg) => {
            if cfg.sites.len() != n {
                return Err(PlatformError::Grid(format!(
                    "{} sites for {n} clusters",
                    cfg.sites.len()
                )));
            }
            if let Some(net) = &cfg.settings.network {
                net.check(n).map_err(PlatformError::Grid)?;
            }
            GridRunner::from_config(&cfg).map_err(|e| PlatformError::Grid(e.to_string()))?
        }
    };
    let mut sim = Sim {
        platform,
        runners,
        flights: FxHashMap::default(),
        grid,
        splits: FxHashMap::default(),
        events: BinaryHeap::new(),
        seq: 0,
        wakes: BTreeSet::new(),
        recalc_tick: None,
        levels,
        integrals: vec![UsageIntegral::default(); n],
        platform_integral: UsageIntegral::default(),
        job_stats: vec![JobStats::default(); n],
        platform_jobs: JobStats::default(),
        dispatched: vec![0; n],
        workload: vec![0.0; n],
        stats: PlatformStats::default(),
        pass_time: 0.0,
        hooks,
        effects: Vec::new(),
        backlog: Vec::new(),
        lost: vec![false; n],
        named: events::Named::default(),
        ended: FxHashMap::default(),
        submitted_workflows: FxHashMap::default(),
        staging: None,
    };
    sim.staging = (sim.grid.placer().grid().transfers.network())
        .cloned()
        .map(staging::Staging::new);
    for &(at, cluster) in &events.lost {
        if cluster.index() < n {
            sim.push(at, Ev::Lost { cluster });
        }
    }
    for (index, r) in events.reservations.iter().enumerate() {
        sim.push(r.at, Ev::Reserve { index });
    }
    for &(at, job) in &events.cancels {
        sim.push(at, Ev::Cancel { job });
    }
    for (index, w) in events.workflows.iter().enumerate() {
        sim.push(w.at, Ev::Workflow { index });
    }
    let mut jobs = jobs.into_iter();
    let mut next = jobs.next().transpose().map_err(PlatformError::Workload)?;
    let mut clock = Time::MIN;
    let mut dirty = vec![false; n];
    loop {
        let t_job = next.as_ref().map(|j| j.submit);
        let t_ev = sim.events.peek().map(|Reverse((t, _, _))| *t);
        let t = match (t_job, t_ev) {
            (None, None) => break,
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (Some(a), Some(b)) => a.min(b),
        };
        if t < clock {
            let j = next.as_ref().expect("only submissions lie in the past");
            return Err(PlatformError::Unsorted {
                job: j.id,
                submit: j.submit,
                clock,
            });
        }
        if clock != Time::MIN {
            sim.integrate(clock, t);
        } else if events.loses() {
            // The sites' links are open from the start.
            for site in 0..n {
                let at_ms = events::at_ms(t);
                let open = GridInput::Link {
                    site,
                    reachable: true,
                    at_ms,
                };
                sim.feed(t, open, &mut dirty)?;
            }
        }
        clock = t;
        if events.live_order {
            while next.as_ref().is_some_and(|j| j.submit == t) {
                let job = next.take().expect("peeked");
                submit(&mut sim, events, job, &mut dirty)?;
                next = jobs.next().transpose().map_err(PlatformError::Workload)?;
                sim.pass_dirty(t, &mut dirty)?;
            }
        }
        loop {
            if events.live_order {
                sim.pass_dirty(t, &mut dirty)?;
            }
            let Some(Reverse((te, _, ev))) = sim.events.peek().copied() else {
                break;
            };
            if te != t {
                break;
            }
            sim.events.pop();
            match ev {
                Ev::End {
                    job,
                    cluster,
                    generation,
                } => {
                    if sim.end(t, job, cluster, generation, &mut dirty)? {
                        dirty[cluster.index()] = true;
                    }
                }
                Ev::Retry { job } => {
                    sim.report_loads(t);
                    sim.feed(t, GridInput::Retry { job }, &mut dirty)?;
                }
                Ev::Wake { cluster } => {
                    // A wake-up the policy has since moved passes nothing (the live rule: a
                    // pass on a change, or when the runner's wake-up is due).
                    sim.wakes.remove(&(t, cluster));
                    let due = sim.runners[cluster.index()]
                        .next_wakeup()
                        .is_some_and(|w| w <= t);
                    dirty[cluster.index()] |= due;
                }
                Ev::Lost { cluster } => {
                    let closed = sim.lose(t, cluster, events.down_after_ms);
                    sim.feed(t, closed, &mut dirty)?;
                }
                Ev::Reserve { index } => sim.reserve(t, &events.reservations[index], &mut dirty)?,
                Ev::Cancel { job } => sim.cancel(t, job, &mut dirty)?,
                Ev::Workflow { index } => {
                    let w = &events.workflows[index];
                    sim.submitted_workflows.insert(w.id, t);
                    sim.report_loads(t);
                    let input = GridInput::SubmitWorkflow {
                        id: w.id,
                        workflow: Box::new(w.workflow.clone()),
                    };
                    sim.feed(t, input, &mut dirty)?;
                }
                Ev::Drain { generation } => sim.drain(t, generation),
                Ev::Arrive { site, key } => sim.arrive(t, site, key, &mut dirty)?,
                Ev::Tick => {
                    sim.report_loads(t);
                    let at_ms = events::at_ms(t);
                    sim.feed(t, GridInput::Tick { at_ms }, &mut dirty)?;
                }
            }
        }
        while next.as_ref().is_some_and(|j| j.submit == t) {
            let job = next.take().expect("peeked");
            submit(&mut sim, events, job, &mut dirty)?;
            next = jobs.next().transpose().map_err(PlatformError::Workload)?;
        }
        if sim.grid.held() > 0 {
            sim.feed(t, GridInput::Release, &mut dirty)?;
        }
        sim.pass_dirty(t, &mut dirty)?;
        // The grid runner recalculates the fair share at the tick of its period.
        if let Some(at) = sim.grid.next_recalc()
            && sim.recalc_tick != Some(at)
        {
            sim.recalc_tick = Some(at);
            sim.push(at.max(t), Ev::Tick);
        }
    }
    sim.stats.lost_jobs = sim.lost_jobs();
    let waiting = (sim.runners.iter().enumerate())
        .filter(|(c, _)| !sim.lost[*c])
        .map(|(_, r)| r.len())
        .sum::<usize>()
        + sim.grid.waiting();
    if waiting > 0 {
        return Err(PlatformError::Stalled {
            time: clock,
            waiting,
        });
    }
    Ok(sim.report())
}

/// A submission at its second: named into its reservation, then handed to the grid runner.
fn submit<E>(
    sim: &mut Sim<'_, '_>,
    events: &GridEvents,
    mut job: Job,
    dirty: &mut [bool],
) -> Result<(), PlatformError<E>> {
    let t = job.submit;
    sim.stats.submitted += 1;
    if sim.has(job.id) {
        return Err(PlatformError::DuplicateJob(job.id));
    }
    if !events.reservations.is_empty()
        && let Err(why) = sim.name_reservation(&mut job)
    {
        sim.reject(job.id, why);
        return Ok(());
    }
    // The jobs it waits for that have left the grid: their outcomes.
    for term in job.after.iter_mut().flat_map(|d| d.terms.iter_mut()) {
        if term.ended.is_none() {
            term.ended = sim.ended.get(&term.job).copied();
        }
    }
    sim.report_loads(t);
    let submit = GridInput::Submit {
        job,
        priority: None,
    };
    sim.feed(t, submit, dirty)
}

/// [`simulate_platform`] over an in-memory job list, without hooks.
pub fn simulate_jobs(
    platform: &Platform,
    policies: Vec<Box<dyn Policy>>,
    meta: Meta,
    jobs: Vec<Job>,
) -> Result<PlatformReport, PlatformError<std::convert::Infallible>> {
    simulate_platform(
        platform,
        policies,
        meta,
        jobs.into_iter().map(Ok),
        PlatformHooks::default(),
    )
}

/// The static capabilities of every cluster (D12 #12).
pub fn caps_of(platform: &Platform) -> Vec<ClusterCaps> {
    platform
        .clusters
        .iter()
        .map(|c| {
            let mut licences: Vec<_> = c.pools.iter().map(|p| p.licence).collect();
            for m in &c.machines {
                licences.extend(platform.machines[m.index()].node_locked.iter().copied());
            }
            licences.sort_unstable();
            licences.dedup();
            ClusterCaps {
                cluster: c.id,
                up: true,
                total_procs: c
                    .machines
                    .iter()
                    .map(|m| u64::from(platform.machines[m.index()].procs))
                    .sum(),
                max_machine_procs: c
                    .machines
                    .iter()
                    .map(|m| platform.machines[m.index()].procs)
                    .max()
                    .unwrap_or(0),
                licences,
                benchmark: c
                    .machines
                    .iter()
                    .map(|m| platform.machines[m.index()].benchmark)
                    .max(),
                max_memory_kb: ClusterCaps::memory_of(
                    c.machines
                        .iter()
                        .map(|m| platform.machines[m.index()].memory_kb),
                ),
            }
        })
        .collect()
}
