//! The discrete-event simulation loop (`reference-semantics.md` "Event order";
//! `self-tuning-and-multisite.md` §7.1): a virtual clock, submissions pulled in order from the
//! workload stream, terminations, overrun notices and policy wake-ups in an [`EventQueue`], and a
//! scheduling pass of the [`Policy`] after every event (reference) or once per instant (batched).
//!
//! The engine is also the validating machine: every start a policy decides is checked, at its
//! start event, against the machine's free processors, so no schedule it reports can
//! oversubscribe a machine; a policy that leaves jobs waiting forever is reported as stalled. It
//! holds only the jobs in flight.

use crate::events::{EventKind, EventQueue};
use gridsched_core::metrics::{CapacityTracker, JobRecord, Summary, SummaryBuilder};
use gridsched_core::model::{Duration, Job, JobId, MachineId, Time, UserId};
use gridsched_core::policy::{AdvanceReservation, Decisions, Policy, Start};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::BTreeSet;

/// When the engine asks the policy for a scheduling pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Batching {
    /// After every event (reference).
    #[default]
    PerEvent,
    /// Once after all events of one instant.
    PerTimestamp,
}

/// Engine knobs; the defaults are the reference mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct EngineOptions {
    /// When passes run.
    pub batching: Batching,
    /// End a job at its estimate if it would run longer (reference); otherwise let it run to its
    /// actual end and notify the policy when it overruns.
    pub kill_at_estimate: bool,
    /// How far an overrunning job's predicted end moves each time it is reached; `None` = by one
    /// more estimate.
    pub overrun_extension: Option<Duration>,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            batching: Batching::PerEvent,
            kill_at_estimate: true,
            overrun_extension: None,
        }
    }
}

/// Counters of one run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RunStats {
    /// Jobs read from the workload.
    pub submitted: u64,
    /// Jobs the policy refused (e.g. wider than the machine).
    pub rejected: u64,
    /// Advance reservations admitted.
    pub reservations_admitted: u64,
    /// Advance reservations refused.
    pub reservations_refused: u64,
    /// The first ten refusals of reservations, as messages.
    pub reservation_refusals: Vec<String>,
    /// Jobs started.
    pub started: u64,
    /// Jobs finished.
    pub finished: u64,
    /// Overrun notices sent to the policy.
    pub overruns: u64,
    /// Events handled (submissions, terminations, overruns, wake-ups).
    pub events: u64,
    /// Scheduling passes run.
    pub passes: u64,
    /// Longest waiting queue seen.
    pub max_waiting: usize,
    /// Time-averaged waiting queue length.
    pub mean_waiting: f64,
    /// Average queue length seen by an arriving job (a backlog indicator, §3.6).
    pub mean_waiting_at_submit: f64,
    /// The first few rejection messages.
    pub rejections: Vec<String>,
}

/// The outcome of a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunReport {
    /// Aggregate metrics over the jobs that ran.
    pub summary: Summary,
    /// Engine counters.
    pub stats: RunStats,
}

/// Why a run stopped.
#[derive(Debug, thiserror::Error)]
pub enum SimError<E> {
    /// The workload stream failed.
    #[error(transparent)]
    Workload(E),
    /// Jobs must arrive in non-decreasing submission order.
    #[error(
        "job {job} is submitted at {submit}, before the simulation clock ({clock}): sort the workload by submit time"
    )]
    Unsorted {
        /// The job.
        job: JobId,
        /// Its submit time.
        submit: Time,
        /// The clock.
        clock: Time,
    },
    /// Two jobs in flight share an id.
    #[error("job id {0} is submitted while a job with the same id is still in the system")]
    DuplicateJob(JobId),
    /// A job waits for other jobs, which only the platform engine's grid runner decides.
    #[error(
        "job {0} waits for other jobs (`after`), which a single-machine replay does not model: \
         run the workload through the platform engine (`gridsim cluster --workload`)"
    )]
    Dependency(JobId),
    /// A job is an array of tasks, which only the platform engine's grid runner releases.
    #[error(
        "job {0} is an array of tasks (`array`), which a single-machine replay does not model: \
         run the workload through the platform engine (`gridsim cluster --workload`)"
    )]
    Array(JobId),
    /// A policy started a job on a machine without enough free processors.
    #[error(
        "at {time}: policy started job {job} on {machine} needing {need} processors, only {free} free"
    )]
    Oversubscribed {
        /// When.
        time: Time,
        /// The job.
        job: JobId,
        /// The machine.
        machine: MachineId,
        /// Processors needed.
        need: u32,
        /// Processors free.
        free: u64,
    },
    /// A policy started a job that is not waiting, or with the wrong width.
    #[error("at {time}: policy started job {job}, which {why}")]
    BadStart {
        /// When.
        time: Time,
        /// The job.
        job: JobId,
        /// What is wrong.
        why: &'static str,
    },
    /// Events ran out while jobs were still waiting.
    #[error(
        "at {time}: no event left but {waiting} jobs still wait (the policy never starts them)"
    )]
    Stalled {
        /// When.
        time: Time,
        /// Jobs left waiting.
        waiting: usize,
    },
}

/// Called after every pass with its time, its starts and the policy.
pub type PassHook<'a> = &'a mut dyn FnMut(Time, &[Start], &dyn Policy);

/// Callbacks a caller can attach to a run.
#[derive(Default)]
pub struct Hooks<'a> {
    /// Called for every finished job, in end order.
    pub record: Option<&'a mut dyn FnMut(&JobRecord)>,
    /// Called after every pass with its starts and the policy (for invariant checks).
    pub pass: Option<PassHook<'a>>,
    /// Called every 4,096 submissions with the number submitted so far.
    pub progress: Option<&'a mut dyn FnMut(u64)>,
    /// Advance reservations asked for during the run, by request time: each is handed to the
    /// policy at its time, before the submissions of that instant.
    pub reservations: &'a [ReservationRequest],
}

/// An advance reservation asked for at `at`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReservationRequest {
    /// When it is asked for.
    pub at: Time,
    /// The request.
    #[serde(flatten)]
    pub reservation: AdvanceReservation,
}

impl std::fmt::Debug for Hooks<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooks")
            .field("record", &self.record.is_some())
            .field("pass", &self.pass.is_some())
            .field("progress", &self.progress.is_some())
            .field("reservations", &self.reservations.len())
            .finish()
    }
}

#[derive(Clone, Copy, Debug)]
struct InFlight {
    user: UserId,
    submit: Time,
    procs: u32,
    estimate: Duration,
    run: Duration,
    start: Option<(Time, MachineId)>,
}

/// Runs `jobs` through `policy` on machines of the given processor counts (indexed by
/// [`MachineId`]).
pub fn simulate<I, E>(
    policy: &mut dyn Policy,
    capacities: &[u32],
    jobs: I,
    opts: &EngineOptions,
    mut hooks: Hooks<'_>,
) -> Result<RunReport, SimError<E>>
where
    I: IntoIterator<Item = Result<Job, E>>,
{
    let mut jobs = jobs.into_iter();
    let mut next_job = jobs.next().transpose().map_err(SimError::Workload)?;
    let mut events = EventQueue::new();
    let mut inflight: FxHashMap<JobId, InFlight> = FxHashMap::default();
    let mut free: Vec<u64> = capacities.iter().map(|&c| u64::from(c)).collect();
    let total: u64 = free.iter().sum();
    let mut wakes: BTreeSet<Time> = BTreeSet::new();
    let mut decided = Decisions::default();
    let mut summary = SummaryBuilder::new();
    let mut capacity = CapacityTracker::new();
    let mut stats = RunStats::default();
    let mut clock = Time::MIN;
    let mut first_time: Option<Time> = None;
    let mut queue_integral: f64 = 0.0;
    let mut queue_at_submit: u64 = 0;
    let mut pass_pending = false;
    let mut requests = hooks.reservations.iter().peekable();

    loop {
        let next = match (&next_job, events.peek()) {
            (None, None) => None,
            (Some(j), None) => Some((j.submit, true)),
            (None, Some(e)) => Some((e.time, false)),
            (Some(j), Some(e)) => Some(if (j.submit, EventKind::Submit) < (e.time, e.kind) {
                (j.submit, true)
            } else {
                (e.time, false)
            }),
        };
        if let Some(req) = requests.next_if(|r| {
            r.at >= clock && !(pass_pending && r.at > clock) && next.is_none_or(|(t, _)| r.at <= t)
        }) {
            match policy.admit_reservation(req.at, &req.reservation) {
                Ok(()) => stats.reservations_admitted += 1,
                Err(e) => {
                    stats.reservations_refused += 1;
                    if stats.reservation_refusals.len() < 10 {
                        stats.reservation_refusals.push(e.to_string());
                    }
                }
            }
            continue;
        }
        if pass_pending && next.is_none_or(|(t, _)| t > clock) {
            pass_pending = false;
            run_pass(
                policy,
                clock,
                &mut decided,
                &mut inflight,
                &free,
                &mut events,
                &mut wakes,
                &mut stats,
                &mut hooks,
            )?;
            continue;
        }
        let Some((t, is_submit)) = next else { break };
        if t < clock {
            let j = next_job
                .as_ref()
                .expect("only submissions can lie in the past");
            return Err(SimError::Unsorted {
                job: j.id,
                submit: j.submit,
                clock,
            });
        }
        if t > clock {
            let waiting = policy.waiting_len();
            if first_time.is_some() {
                capacity.observe(clock, free.iter().sum(), waiting > 0);
                queue_integral += waiting as f64 * (t - clock) as f64;
            } else {
                first_time = Some(t);
            }
            clock = t;
        }
        stats.events += 1;
        if is_submit {
            let job = next_job.take().expect("peeked");
            if inflight.contains_key(&job.id) {
                return Err(SimError::DuplicateJob(job.id));
            }
            if job.after.is_some() {
                return Err(SimError::Dependency(job.id));
            }
            if job.array.is_some() {
                return Err(SimError::Array(job.id));
            }
            stats.submitted += 1;
            let waiting = policy.waiting_len();
            queue_at_submit += waiting as u64;
            let submitted = gridsched_core::policy::check_reservation(&*policy, &job)
                .and_then(|()| policy.submit(clock, &job));
            match submitted {
                Ok(()) => {
                    let actual = job.runtime.unwrap_or(job.estimate).max(0);
                    let run = if opts.kill_at_estimate {
                        actual.min(job.estimate)
                    } else {
                        actual
                    };
                    inflight.insert(
                        job.id,
                        InFlight {
                            user: job.user,
                            submit: job.submit,
                            procs: job.procs,
                            estimate: job.estimate,
                            run,
                            start: None,
                        },
                    );
                    stats.max_waiting = stats.max_waiting.max(waiting + 1);
                }
                Err(rejection) => {
                    stats.rejected += 1;
                    if stats.rejections.len() < 10 {
                        stats.rejections.push(rejection.to_string());
                    }
                }
            }
            if stats.submitted % 4096 == 0
                && let Some(p) = hooks.progress.as_mut()
            {
                p(stats.submitted);
            }
            next_job = jobs.next().transpose().map_err(SimError::Workload)?;
        } else {
            let ev = events.pop().expect("peeked");
            match ev.kind {
                EventKind::Termination => {
                    let f = inflight
                        .remove(&ev.job)
                        .expect("terminating job is in flight");
                    let (start, machine) = f.start.expect("terminating job has started");
                    free[machine.index()] += u64::from(f.procs);
                    let rec = JobRecord {
                        id: ev.job,
                        user: f.user,
                        submit: f.submit,
                        start,
                        end: clock,
                        procs: f.procs,
                        estimate: f.estimate,
                    };
                    summary.add(&rec);
                    if let Some(r) = hooks.record.as_mut() {
                        r(&rec);
                    }
                    stats.finished += 1;
                    policy.terminate(clock, ev.job);
                }
                EventKind::Overrun => {
                    let f = inflight.get(&ev.job).expect("overrunning job is in flight");
                    let (start, _) = f.start.expect("overrunning job has started");
                    let rule = gridsched_core::runner::OverrunRule {
                        extension: opts.overrun_extension,
                    };
                    let predicted = rule.next_end(clock, f.estimate);
                    stats.overruns += 1;
                    policy.overrun(clock, ev.job, predicted);
                    if start + f.run > predicted {
                        events.push(predicted, EventKind::Overrun, ev.job);
                    }
                    // An overrun only takes capacity away, so no job can start because of it; and
                    // a pass now could count processors of another job overrunning at this same
                    // instant, not yet notified, as free. The next event's pass sees them all.
                    continue;
                }
                EventKind::Start => {
                    let f = inflight
                        .get_mut(&ev.job)
                        .expect("starting job is in flight");
                    let (_, machine) = f.start.expect("starting job has a start");
                    let slot = &mut free[machine.index()];
                    if u64::from(f.procs) > *slot {
                        return Err(SimError::Oversubscribed {
                            time: clock,
                            job: ev.job,
                            machine,
                            need: f.procs,
                            free: *slot,
                        });
                    }
                    *slot -= u64::from(f.procs);
                    stats.started += 1;
                    events.push(clock + f.run, EventKind::Termination, ev.job);
                    if !opts.kill_at_estimate && f.run > f.estimate {
                        events.push(clock + f.estimate, EventKind::Overrun, ev.job);
                    }
                    // A start changes nothing the policy does not already know.
                    continue;
                }
                EventKind::Wake => {
                    wakes.remove(&clock);
                }
                EventKind::Submit => unreachable!("submissions are not queued"),
            }
        }
        match opts.batching {
            Batching::PerEvent => run_pass(
                policy,
                clock,
                &mut decided,
                &mut inflight,
                &free,
                &mut events,
                &mut wakes,
                &mut stats,
                &mut hooks,
            )?,
            Batching::PerTimestamp => pass_pending = true,
        }
    }

    if policy.waiting_len() > 0 || !inflight.is_empty() {
        return Err(SimError::Stalled {
            time: clock,
            waiting: policy.waiting_len().max(inflight.len()),
        });
    }
    capacity.observe(clock, free.iter().sum(), false);
    let span = first_time.map_or(0, |f| clock - f);
    stats.mean_waiting = if span > 0 {
        queue_integral / span as f64
    } else {
        0.0
    };
    stats.mean_waiting_at_submit = if stats.submitted > 0 {
        queue_at_submit as f64 / stats.submitted as f64
    } else {
        0.0
    };
    Ok(RunReport {
        summary: summary.finish(total, Some(&capacity)),
        stats,
    })
}

#[allow(clippy::too_many_arguments)]
fn run_pass<E>(
    policy: &mut dyn Policy,
    now: Time,
    decided: &mut Decisions,
    inflight: &mut FxHashMap<JobId, InFlight>,
    free: &[u64],
    events: &mut EventQueue,
    wakes: &mut BTreeSet<Time>,
    stats: &mut RunStats,
    hooks: &mut Hooks<'_>,
) -> Result<(), SimError<E>> {
    decided.clear();
    policy.schedule(now, decided);
    stats.passes += 1;
    if let Some(&job) = decided.suspensions.first().or(decided.kills.first()) {
        return Err(SimError::BadStart {
            time: now,
            job,
            why: "is preempted, which this engine (space-shared machines, run to completion) does not model",
        });
    }
    for s in decided.starts.iter() {
        let bad = |why| SimError::BadStart {
            time: now,
            job: s.job,
            why,
        };
        let f = inflight
            .get_mut(&s.job)
            .ok_or_else(|| bad("is not waiting"))?;
        if f.start.is_some() {
            return Err(bad("is already running"));
        }
        if s.procs != f.procs {
            return Err(bad(
                "gets a different number of processors than it asked for",
            ));
        }
        if s.machine.index() >= free.len() {
            return Err(bad("is placed on an unknown machine"));
        }
        f.start = Some((now, s.machine));
        events.push(now, EventKind::Start, s.job);
    }
    if let Some(h) = hooks.pass.as_mut() {
        h(now, &decided.starts, &*policy);
    }
    if let Some(w) = policy.next_wakeup()
        && w > now
        && wakes.insert(w)
    {
        events.push(w, EventKind::Wake, JobId(0));
    }
    Ok(())
}
