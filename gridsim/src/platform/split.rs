//! Split jobs in the platform engine: the fragments of a job the dispatcher splits over clusters
//! start together (Streit, thesis §6.3), co-allocated by the core's protocol
//! ([`CoAllocation`]) the way the live meta-scheduler carries it out over its links — here
//! against the clusters' runners, in the same instant.
//!
//! Each round asks the fragments' runners for a hold at their earliest start
//! ([`Input::ReserveEarliest`], the local scheduler's own search) for the stretched estimate
//! plus [`SEND_GRACE_S`](gridsched_core::dispatch::SEND_GRACE_S), exactly the intervals the live
//! meta-scheduler asks for; a runner holds a reservation from its admission, so the commit phase
//! always succeeds. Each fragment is then submitted into its reservation with the job's
//! processors at that cluster, the estimate and run time multiplied by (1 + p), p the WAN
//! overhead of its clusters ([`MultiSiteConfig::overhead_over`]). A fragment's end lets its
//! reservation go; the job ends with its last fragment and is recorded once, at its first
//! fragment's cluster (each cluster's own figures count the fragment it ran). A co-allocation
//! given up (a refusal, too many rounds, or the adaptive rule preferring one site) lets every
//! hold go and dispatches the job again one second later, as the live meta-scheduler does after
//! its pause; after [`MAX_REFUSED`] co-allocations in a row refused by a cluster (one whose policy
//! takes no reservations, say), the job is refused instead of being tried forever.

use super::{Ev, Meta, PlatformRecord, Sim};
use gridsched_core::dispatch::{
    CoAllocation, CoAllocationStep as Step, MultiSiteConfig, Part, Priority, Reason, stretch_by,
};
use gridsched_core::model::{ClusterId, Duration, Job, JobId, ReservationId, Time};
use gridsched_core::policy::AdvanceReservation;
use gridsched_core::runner::{Finished, Input};

/// Co-allocations of one job in a row that a cluster refused before the job is refused.
pub const MAX_REFUSED: u32 = 10;

/// How the engine co-allocates split jobs: the live meta-scheduler's `[dispatch.multi_site]`
/// (the WAN overhead and the adaptive rule) and `links.coallocation_rounds`.
#[derive(Clone, Debug)]
pub struct SplitRules {
    /// The WAN overhead p (one value, or per pair of clusters) and the adaptive rule.
    pub multi_site: MultiSiteConfig,
    /// Rounds of holds before a co-allocation is given up.
    pub rounds: u32,
}

/// A split job whose fragments are at their clusters.
#[derive(Clone, Debug)]
pub(super) struct SplitJob {
    job: Job,
    priority: Priority,
    /// Per fragment: its cluster and its reservation there.
    reservations: Vec<(ClusterId, ReservationId)>,
    /// Fragments not ended yet.
    left: usize,
    /// The earliest fragment start, the longest run and the suspensions so far.
    start: Option<Time>,
    exec: Duration,
    suspensions: u32,
}

impl Sim<'_, '_> {
    /// Co-allocates `parts` of `job` at `t` and sends its fragments into their reservations; or,
    /// given up, lets every hold go and dispatches the job again at `t + 1`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn co_allocate(
        &mut self,
        t: Time,
        job: Job,
        priority: Priority,
        parts: Vec<Part>,
        reason: Option<&Reason>,
        meta: &mut Meta<'_>,
        dirty: &mut [bool],
    ) {
        let first = parts.first().map_or(ClusterId(0), |p| p.cluster);
        let Some(rules) = meta.splits.clone() else {
            meta.dispatcher.job_returned(t, job.id, first);
            self.reject(Self::no_split(job.id));
            return;
        };
        if parts.is_empty() {
            meta.dispatcher.job_returned(t, job.id, first);
            self.reject(format!("job {}: split into no fragment", job.id));
            return;
        }
        if let Some(p) = parts
            .iter()
            .find(|p| p.cluster.index() >= self.runners.len())
        {
            meta.dispatcher.job_returned(t, job.id, first);
            self.reject(format!(
                "job {}: split onto unknown cluster {}",
                job.id, p.cluster
            ));
            return;
        }
        let sites = parts.iter().map(|p| p.cluster.0);
        let p = rules.multi_site.overhead_over(sites.clone());
        let length = stretch_by(job.estimate, p);
        let single_end = match reason {
            Some(Reason::Split { single, .. }) if rules.multi_site.adaptive => *single,
            _ => None,
        };
        let mut c = CoAllocation::new(parts, length, rules.rounds, single_end);
        let mut ids: Vec<Option<ReservationId>> = vec![None; c.parts().len()];
        let mut refused = false;
        let mut step = c.start(t);
        loop {
            step = match step {
                Step::Hold { fragments, from } => {
                    let mut next = Step::Wait;
                    for i in fragments {
                        let cluster = c.parts()[i].cluster;
                        if let Some(old) = ids[i].take() {
                            self.let_go(t, cluster, old);
                        }
                        self.last_reservation += 1;
                        let id = ReservationId(self.last_reservation);
                        let ask = Input::ReserveEarliest {
                            reservation: AdvanceReservation {
                                id,
                                start: from,
                                end: from + c.held_for(),
                                procs: c.parts()[i].procs,
                                ..AdvanceReservation::default()
                            },
                        };
                        dirty[cluster.index()] = true;
                        let runner = &mut self.runners[cluster.index()];
                        let s = match runner.on(t, ask, &mut self.effects) {
                            Ok(()) => {
                                ids[i] = Some(id);
                                let held = runner.advance_reservations();
                                let start = held.iter().find(|a| a.id == id).map(|a| a.start);
                                c.held(i, start.expect("an admitted reservation is held"))
                            }
                            Err(e) => {
                                refused = true;
                                c.refused(i, &e.to_string())
                            }
                        };
                        if !matches!(next, Step::Abort { .. }) && s != Step::Wait {
                            next = s;
                        }
                    }
                    next
                }
                // A runner's hold is already firm: every commit succeeds.
                Step::Commit { .. } => {
                    let mut next = Step::Wait;
                    for i in 0..c.parts().len() {
                        let s = c.committed(i);
                        if s != Step::Wait {
                            next = s;
                        }
                    }
                    next
                }
                Step::Send { .. } => break,
                Step::Abort { why } => {
                    for (i, id) in ids.iter().enumerate() {
                        if let Some(id) = *id {
                            self.let_go(t, c.parts()[i].cluster, id);
                        }
                    }
                    meta.dispatcher.job_returned(t, job.id, first);
                    self.stats.coallocations_given_up += 1;
                    let n = self.refused_in_a_row.entry(job.id).or_default();
                    *n = if refused { *n + 1 } else { 0 };
                    if *n >= MAX_REFUSED {
                        self.refused_in_a_row.remove(&job.id);
                        self.reject(format!(
                            "job {}: co-allocation refused {MAX_REFUSED} times in a row: {why}",
                            job.id
                        ));
                        return;
                    }
                    self.push(t + 1, Ev::Retry { job: job.id });
                    self.retrying.insert(job.id, (job, priority));
                    return;
                }
                Step::Wait => unreachable!("every answer is in at once"),
            };
        }
        self.stats.coallocations += 1;
        self.refused_in_a_row.remove(&job.id);
        let mut split = SplitJob {
            job: job.clone(),
            priority,
            reservations: Vec::with_capacity(ids.len()),
            left: 0,
            start: None,
            exec: 0,
            suspensions: 0,
        };
        for (part, id) in c.parts().iter().zip(ids) {
            let id = id.expect("a committed fragment holds its reservation");
            let fragment = Job {
                procs: part.procs,
                estimate: length,
                runtime: job.runtime.map(|r| stretch_by(r, p)),
                reservation: Some(id),
                inputs: Vec::new(),
                ..job.clone()
            };
            split.reservations.push((part.cluster, id));
            match self.submit_to(t, fragment, priority, part.cluster, dirty) {
                Ok(()) => split.left += 1,
                Err(e) => {
                    // Never seen: the reservation was admitted for this very fragment.
                    self.reject(format!("job {}: fragment at {}: {e}", job.id, part.cluster));
                }
            }
        }
        if split.left == 0 {
            meta.dispatcher.job_returned(t, job.id, first);
            return;
        }
        self.splits.insert(job.id, split);
    }

    /// Lets reservation `id` go at `cluster` (a hold that must move, or one that has served).
    fn let_go(&mut self, t: Time, cluster: ClusterId, id: ReservationId) {
        let input = Input::CancelReservation { id };
        // Already gone when the runner's pass expired it at its end.
        let _ = self.runners[cluster.index()].on(t, input, &mut self.effects);
    }

    /// Fragment `done` of split job `job` ended at cluster `c` at `t`: its reservation is let go;
    /// after the last one, the job's record. The cluster to report the job's end from, once over.
    pub(super) fn fragment_ended(
        &mut self,
        t: Time,
        job: JobId,
        c: ClusterId,
        done: &Finished,
    ) -> Option<ClusterId> {
        let s = self.splits.get_mut(&job).expect("a split job");
        s.left -= 1;
        s.start = Some(s.start.map_or(done.start, |x| x.min(done.start)));
        s.exec = s.exec.max(done.exec);
        s.suspensions += done.suspensions;
        let reservation = s.reservations.iter().find(|(k, _)| *k == c).map(|r| r.1);
        self.job_stats[c.index()].add(done.submit, t, done.exec, done.deadline);
        if let Some(r) = reservation {
            self.let_go(t, c, r);
        }
        if self.splits[&job].left > 0 {
            return None;
        }
        let s = self.splits.remove(&job).expect("a split job");
        let first = s.reservations[0].0;
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
        };
        self.record(&rec);
        Some(first)
    }
}
