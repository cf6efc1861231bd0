//! Split jobs in the platform engine: the fragments of a job the dispatcher splits over clusters
//! start together (Streit, thesis §6.3). The grid runner co-allocates them
//! ([`gridsched_core::grid`], the protocol the live meta-scheduler runs over its links); here
//! each hold it asks is answered at once by the fragment's cluster runner
//! ([`Input::ReserveEarliest`](gridsched_core::runner::Input), the local scheduler's own
//! search), for the stretched estimate plus
//! [`SEND_GRACE_S`](gridsched_core::dispatch::SEND_GRACE_S), exactly the intervals the live
//! meta-scheduler asks for; a runner holds a reservation from its admission, so the commit phase
//! always succeeds. Each fragment is then submitted into its reservation with the job's
//! processors at that cluster, the estimate and run time multiplied by (1 + p), p the WAN
//! overhead of its clusters. A fragment's end lets its reservation go; the job ends with its last
//! fragment and is recorded once, at its first fragment's cluster (each cluster's own figures
//! count the fragment it ran). A co-allocation given up (a refusal, too many rounds, or the
//! adaptive rule preferring one site) lets every hold go and the job is dispatched again one
//! second later; after ten co-allocations in a row refused by a cluster (one whose policy takes
//! no reservations, say), the job is refused instead of being tried forever — both the grid
//! runner's rules.

use super::{PlatformError, PlatformRecord, Sim};
use gridsched_core::dispatch::{Part, Priority, stretch_by};
use gridsched_core::grid::Input as GridInput;
use gridsched_core::grid::{CoallocationRules, Fragment};
use gridsched_core::model::{ClusterId, Duration, Job, JobId, Outcome, ReservationId, Time};
use gridsched_core::runner::{Finished, Input};

/// How the engine co-allocates split jobs: the live meta-scheduler's `[dispatch.multi_site]`
/// (the WAN overhead and the adaptive rule) and `links.coallocation_rounds`.
pub type SplitRules = CoallocationRules;

/// A split job whose fragments are at their clusters, for its record.
#[derive(Clone, Debug)]
pub(super) struct SplitJob {
    job: Job,
    priority: Priority,
    /// Fragments not ended yet.
    left: usize,
    /// The earliest fragment start, the longest run and the suspensions so far.
    start: Option<Time>,
    exec: Duration,
    suspensions: u32,
    /// Its fragments: cluster and processors.
    parts: Vec<(ClusterId, u32)>,
    /// Started at once without holds ([`GridEffect::StartSplit`](gridsched_core::grid::Effect)):
    /// the grid runner hears of its end once, from its first fragment's cluster, when the last
    /// fragment ends.
    at_once: bool,
}

impl SplitJob {
    fn new(job: Job, priority: Priority, parts: Vec<(ClusterId, u32)>, at_once: bool) -> SplitJob {
        SplitJob {
            job,
            priority,
            left: parts.len(),
            start: None,
            exec: 0,
            suspensions: 0,
            parts,
            at_once,
        }
    }
}

impl Sim<'_, '_> {
    /// Every site committed split job `job`'s holds: its fragments go into their reservations.
    pub(super) fn send_fragments<E>(
        &mut self,
        t: Time,
        job: JobId,
        fragments: &[Fragment],
        dirty: &mut [bool],
    ) -> Result<(), PlatformError<E>> {
        self.stats.coallocations += 1;
        let (whole, priority) = self.grid.job(job).expect("a co-allocated job is open");
        let whole = whole.clone();
        for f in fragments {
            let fragment = Job {
                procs: f.procs,
                estimate: f.length,
                runtime: whole.runtime.map(|r| stretch_by(r, f.overhead_pct)),
                reservation: Some(f.reservation),
                inputs: Vec::new(),
                stage_in: Vec::new(),
                ..whole.clone()
            };
            let cluster = ClusterId(f.site as u32);
            // The reservation was admitted for this very fragment: a refusal breaks a rule.
            self.submit_to(t, fragment, priority, cluster, dirty)
                .map_err(|e| PlatformError::BadDecision {
                    time: t,
                    cluster,
                    job,
                    why: format!("fragment refused inside its reservation: {e}"),
                })?;
        }
        let parts = fragments
            .iter()
            .map(|f| (ClusterId(f.site as u32), f.procs))
            .collect();
        self.splits
            .insert(job, SplitJob::new(whole, priority, parts, false));
        Ok(())
    }

    /// The grid runner starts split job `job` at once on `parts` (the multi-site study's grid
    /// scheduler, which tracks each site's occupancy itself, Streit, thesis §6): each fragment is
    /// submitted to its cluster, its run time and estimate stretched by the overhead p of the
    /// sites it spans, as the runner gives it.
    pub(super) fn start_split<E>(
        &mut self,
        t: Time,
        job: JobId,
        parts: &[Part],
        overhead_pct: u32,
        dirty: &mut [bool],
    ) -> Result<(), PlatformError<E>> {
        let (whole, priority) = self.grid.job(job).expect("a split job is open");
        let whole = whole.clone();
        let estimate = stretch_by(whole.estimate, overhead_pct);
        let runtime = (whole.runtime).map(|r| stretch_by(r.clamp(0, whole.estimate), overhead_pct));
        for p in parts {
            let fragment = Job {
                procs: p.procs,
                estimate,
                runtime,
                inputs: Vec::new(),
                stage_in: Vec::new(),
                ..whole.clone()
            };
            self.submit_to(t, fragment, priority, p.cluster, dirty)
                .map_err(|e| PlatformError::BadDecision {
                    time: t,
                    cluster: p.cluster,
                    job,
                    why: format!("fragment refused where the grid started it: {e}"),
                })?;
        }
        let parts = parts.iter().map(|p| (p.cluster, p.procs)).collect();
        self.splits
            .insert(job, SplitJob::new(whole, priority, parts, true));
        Ok(())
    }

    /// A fragment of split job `job` ended at cluster `c`: the grid runner hears of it (of a
    /// split started at once, only of its last fragment's end, as the job's end).
    pub(super) fn split_fragment_ended<E>(
        &mut self,
        t: Time,
        job: JobId,
        c: ClusterId,
        done: &Finished,
        dirty: &mut [bool],
    ) -> Result<(), PlatformError<E>> {
        self.fragment_ended(t, job, c, done);
        let s = &self.splits[&job];
        let input = match (s.at_once, s.left) {
            (false, _) => GridInput::FragmentEnded {
                job,
                site: c.index(),
                ok: true,
                again: false,
            },
            (true, 0) => {
                let first = s.parts[0].0;
                self.split_over(t, job, first);
                GridInput::Ended {
                    job,
                    site: first.index(),
                    outcome: Outcome::Completed,
                    exit: None,
                }
            }
            (true, _) => return Ok(()),
        };
        self.feed(t, input, dirty)
    }

    /// Lets reservation `id` go at `cluster` (a hold that must move, or one that has served).
    pub(super) fn let_go(&mut self, t: Time, cluster: ClusterId, id: ReservationId) {
        let input = Input::CancelReservation { id };
        // Already gone when the runner's pass expired it at its end.
        let _ = self.runners[cluster.index()].on(t, input, &mut self.effects);
    }

    /// Fragment `done` of split job `job` ended at cluster `c`: its figures count there and in
    /// the job's.
    pub(super) fn fragment_ended(&mut self, t: Time, job: JobId, c: ClusterId, done: &Finished) {
        let s = self.splits.get_mut(&job).expect("a split job");
        s.left -= 1;
        s.start = Some(s.start.map_or(done.start, |x| x.min(done.start)));
        s.exec = s.exec.max(done.exec);
        s.suspensions += done.suspensions;
        self.job_stats[c.index()].add(done.submit, t, done.exec, done.deadline);
    }

    /// The last fragment of split job `job` ended at `t`: its record, at its first fragment's
    /// cluster.
    pub(super) fn split_over(&mut self, t: Time, job: JobId, first: ClusterId) {
        let Some(s) = self.splits.remove(&job) else {
            return;
        };
        debug_assert_eq!(s.left, 0);
        self.left_grid(job, Outcome::Completed, t, s.start);
        let rec = PlatformRecord {
            id: job,
            cluster: first,
            priority: s.priority,
            submit: s.job.submit,
            start: s.start.unwrap_or(t),
            end: t,
            exec: s.exec,
            deadline: s.job.deadline,
            suspensions: s.suspensions,
            restarts: 0,
            parts: s.parts,
        };
        self.record(&rec);
    }
}
