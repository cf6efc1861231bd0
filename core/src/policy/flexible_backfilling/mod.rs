//! Flexible Backfilling and its baselines on a heterogeneous cluster with licences (spec
//! `two-level-grid-scheduler.md` D6: D6.1 classification, D6.2 scheduling, D6.3 the recommended
//! reservation/backfill procedure; D9.1 and D9.2 for the baselines; D12 #30, #38, #40, #41).
//!
//! One list scheduler over a [`ClusterState`], parameterised by
//! * the queue order — [`ClusterOrder::Priority`] (the FB priority `P(i) = Δ_AA + Δ_D + Δ_L + Δ_WM`,
//!   recomputed at every pass, i.e. at every submission and termination), arrival order, or
//!   earliest deadline first (no-deadline jobs last, in arrival order; D12 #30), or the
//!   meta-scheduler's priority ([`ClusterOrder::Meta`], D9.3 "MS Heuristics": higher MS priority
//!   first, then arrival, then job id; a job whose MS priority never arrived counts as 0);
//! * what happens to a job that cannot start now — [`Blocked::Stop`] (FCFS: the head blocks the
//!   queue), [`Blocked::Reserve`] (EASY-style backfilling with one reservation, BF_UNMOD or BF_MOD),
//!   [`Blocked::Skip`] (EDF as in D9.2: the job waits for the next step, the others go on).
//!
//! Every job is tried on the machines fastest first and goes to the first one where it fits now
//! (processors, one free copy of each pooled licence) and, under backfilling, where starting it
//! does not delay the reservation (the `delays` test of D6.3, including jobs backfilled earlier in
//! the same pass). The reservation is the earliest start over the eligible machines computed from
//! the running jobs' predicted ends (estimates scaled to their machines, D12 #41); ties go to the
//! faster machine. BF_UNMOD keeps the reserved job at the head until it starts; BF_MOD gives the
//! reservation to whoever has the highest priority at each pass. Priority ties go to the earlier
//! arrival, then the smaller job id. FB never preempts (D12 #40).
//!
//! Advance reservations ([`ClusterBook`]) hold one machine's processors and licence copies for a
//! fixed interval: a job starts only where it leaves them whole for its estimate, the reserved
//! start of backfilling goes around them, and the jobs submitted into one start inside it first.

#[cfg(test)]
mod tests;

use super::{
    AdvanceReservation, Decisions, Machines, Policy, Rejection, Reservation, ReservationKind, Start,
};
use crate::cluster::{ClusterBook, ClusterState};
use crate::heuristics::{
    HeuristicParams, LicenceD, RhoJobs, anti_aging, criticality, deadline_fb, licence_fb, wait_min,
};
use crate::model::{Job, JobId, LicenceId, MachineId, ReservationId, Time};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// The two reservation semantics of Flexible Backfilling (D6.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum FbVariant {
    /// The reserved job keeps its reservation and the head until it starts.
    #[default]
    Unmod,
    /// The reservation follows the highest-priority job at every pass.
    Mod,
}

/// The queue order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ClusterOrder {
    /// The Flexible Backfilling priority with these constants.
    Priority(HeuristicParams),
    /// Arrival at the local scheduler.
    Arrival,
    /// Earliest deadline first; jobs without a deadline last.
    Deadline,
    /// The priority the meta-scheduler attached to the job ([`Policy::meta_priority`]), highest
    /// first; the local scheduler computes no priority of its own (D9.3 "MS Heuristics").
    Meta,
}

/// What the pass does with a job that cannot start now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blocked {
    /// Stop the pass (FCFS).
    Stop,
    /// The first such job gets the reservation; later jobs may start only if they do not delay it.
    Reserve(FbVariant),
    /// Go on with the next job (EDF's "re-queued for the next step").
    Skip,
}

#[derive(Clone, Debug)]
struct Waiting {
    job: Job,
    arrived: Time,
    priority: f64,
    ms: u8,
}

#[derive(Clone, Debug)]
struct Res {
    job: JobId,
    slot: usize,
    start: Time,
    end: Time,
    procs: u32,
    pooled: Vec<LicenceId>,
}

/// A list scheduler for one heterogeneous cluster: Flexible Backfilling (BF_UNMOD, BF_MOD), EASY
/// (BF_FCFS), FCFS and EDF.
#[derive(Clone, Debug)]
pub struct FlexibleBackfilling {
    name: &'static str,
    state: ClusterState,
    order: ClusterOrder,
    blocked: Blocked,
    queue: Vec<Waiting>,
    running: FxHashMap<JobId, Job>,
    running_demand: Vec<u32>,
    offer: Vec<u32>,
    res: Option<Res>,
    /// Advance reservations.
    book: ClusterBook,
}

impl FlexibleBackfilling {
    /// A scheduler with the given order and blocking rule.
    pub fn new(
        name: &'static str,
        state: ClusterState,
        order: ClusterOrder,
        blocked: Blocked,
    ) -> FlexibleBackfilling {
        let nlic = state.licence_slots();
        let offer = (0..nlic)
            .map(|i| state.offer(LicenceId(i as u16)))
            .collect();
        FlexibleBackfilling {
            name,
            state,
            order,
            blocked,
            queue: Vec::new(),
            running: FxHashMap::default(),
            running_demand: vec![0; nlic],
            offer,
            res: None,
            book: ClusterBook::default(),
        }
    }

    /// Flexible Backfilling (`fb-unmod` / `fb-mod`) with the given constants.
    pub fn fb(state: ClusterState, variant: FbVariant, params: HeuristicParams) -> Self {
        let name = match variant {
            FbVariant::Unmod => "fb-unmod",
            FbVariant::Mod => "fb-mod",
        };
        Self::new(
            name,
            state,
            ClusterOrder::Priority(params),
            Blocked::Reserve(variant),
        )
    }

    /// EASY backfilling in arrival order adapted to machines and licences (the seed's BF_FCFS),
    /// named `easy` as in the policy registry.
    pub fn bf_fcfs(state: ClusterState) -> Self {
        Self::new(
            "easy",
            state,
            ClusterOrder::Arrival,
            Blocked::Reserve(FbVariant::Unmod),
        )
    }

    /// First come first served: the head blocks the queue.
    pub fn fcfs(state: ClusterState) -> Self {
        Self::new("fcfs", state, ClusterOrder::Arrival, Blocked::Stop)
    }

    /// Flexible Backfilling (BF_UNMOD reservation semantics) ordering its queue by the
    /// meta-scheduler's priority (`fb-meta`, D9.3 "MS Heuristics").
    pub fn fb_meta(state: ClusterState) -> Self {
        Self::new(
            "fb-meta",
            state,
            ClusterOrder::Meta,
            Blocked::Reserve(FbVariant::Unmod),
        )
    }

    /// Earliest deadline first, each job to the fastest machine where it fits, else it waits.
    pub fn edf(state: ClusterState) -> Self {
        Self::new("edf", state, ClusterOrder::Deadline, Blocked::Skip)
    }

    /// The cluster state.
    pub fn state(&self) -> &ClusterState {
        &self.state
    }

    /// The waiting jobs with the priority of the last pass, in queue order.
    pub fn priorities(&self) -> Vec<(JobId, f64)> {
        self.queue.iter().map(|w| (w.job.id, w.priority)).collect()
    }

    fn order_queue(&mut self, now: Time) {
        match self.order {
            ClusterOrder::Arrival => self.queue.sort_by_key(|w| (w.arrived, w.job.id)),
            ClusterOrder::Deadline => self.queue.sort_by_key(|w| {
                (
                    w.job.deadline.is_none(),
                    w.job.deadline.unwrap_or(Time::MAX),
                    w.arrived,
                    w.job.id,
                )
            }),
            ClusterOrder::Meta => {
                for w in &mut self.queue {
                    w.priority = f64::from(w.ms);
                }
                self.queue
                    .sort_by_key(|w| (std::cmp::Reverse(w.ms), w.arrived, w.job.id));
            }
            ClusterOrder::Priority(p) => {
                self.compute_priorities(now, &p);
                self.queue.sort_by(|a, b| {
                    b.priority
                        .total_cmp(&a.priority)
                        .then(a.arrived.cmp(&b.arrived))
                        .then(a.job.id.cmp(&b.job.id))
                });
            }
        }
    }

    fn compute_priorities(&mut self, now: Time, p: &HeuristicParams) {
        let mut demand = match p.rho_jobs {
            RhoJobs::QueuedAndRunning => self.running_demand.clone(),
            RhoJobs::Queued => vec![0; self.running_demand.len()],
        };
        let mut min_estimate = i64::MAX;
        for w in &self.queue {
            min_estimate = min_estimate.min(w.job.estimate);
            for l in &w.job.licences {
                if let Some(d) = demand.get_mut(l.index()) {
                    *d += 1;
                }
            }
        }
        let offer = &self.offer;
        let rho = criticality(&demand, |l| offer[l.index()]);
        let d_other = match p.licence_d {
            LicenceD::PerJobCritical => 0,
            LicenceD::GlobalCritical => rho.iter().filter(|r| **r > 1.0).count() as u32,
            LicenceD::Literal => rho
                .iter()
                .zip(&demand)
                .filter(|(r, d)| **r <= 1.0 && **d > 0)
                .count() as u32,
        };
        let curve = p.curve();
        for w in &mut self.queue {
            let j = &w.job;
            w.priority = anti_aging(now, w.arrived, p.age_factor)
                + deadline_fb(&curve, now, j.deadline, j.estimate)
                + licence_fb(&j.licences, &rho, p.licence_weight, p.licence_d, d_other)
                + wait_min(min_estimate, j.estimate, p.priority_boost);
        }
    }

    /// Whether starting `job` on `slot` now would delay the reservation `r` (D6.3).
    fn delays(&self, job: &Job, slot: usize, r: &Res, now: Time) -> bool {
        let end = now + self.state.duration_on(job, job.estimate, slot);
        if end <= r.start {
            return false;
        }
        let procs_ok = if slot != r.slot {
            true
        } else if self.state.space_sharing() {
            self.state
                .free_procs_at(slot, r.start)
                .saturating_sub(self.book.blocked(slot, r.start))
                .saturating_sub(job.procs)
                >= r.procs
        } else {
            false
        };
        if !procs_ok {
            return true;
        }
        let mine = self.state.pooled_licences(job, slot);
        mine.iter().filter(|l| r.pooled.contains(l)).any(|&l| {
            self.state
                .free_copies_at(l, r.start)
                .saturating_sub(self.book.copies(l, r.start))
                < 2
        })
    }

    /// The earliest reservation of `job` over the eligible machines, fastest first on ties.
    fn reserve(&self, job: &Job, now: Time) -> Option<Res> {
        let mut best: Option<(Time, usize)> = None;
        for &s in self.state.by_speed() {
            if let Some(t) = self.book.earliest_start(&self.state, job, s, now)
                && best.is_none_or(|(bt, _)| t < bt)
            {
                best = Some((t, s));
            }
        }
        best.map(|(start, slot)| Res {
            job: job.id,
            slot,
            start,
            end: start + self.state.duration_on(job, job.estimate, slot),
            procs: job.procs,
            pooled: self.state.pooled_licences(job, slot),
        })
    }

    /// The largest job (in processors) some machine could take now, to skip hopeless scans.
    fn widest_fit(&self) -> u32 {
        let ss = self.state.space_sharing();
        self.state
            .slots()
            .iter()
            .filter(|s| s.up && (ss || s.jobs.is_empty()))
            .map(|s| s.free)
            .max()
            .unwrap_or(0)
    }

    /// The waiting jobs of reservations that are over or cancelled join the general queue.
    fn release(&mut self, ids: &[ReservationId]) {
        for w in &mut self.queue {
            if w.job.reservation.is_some_and(|r| ids.contains(&r)) {
                w.job.reservation = None;
            }
        }
    }

    /// Starts the jobs inside reservations that fit now, in queue order.
    fn start_inside(&mut self, now: Time, starts: &mut Vec<Start>) {
        if self.book.is_empty() {
            return;
        }
        let mut i = 0;
        while i < self.queue.len() {
            let job = &self.queue[i].job;
            let Some(slot) = job
                .reservation
                .and_then(|_| self.book.start_inside(&self.state, now, job))
            else {
                i += 1;
                continue;
            };
            let end = now + self.state.duration_on(job, job.estimate, slot);
            let job = self.queue.remove(i).job;
            self.state
                .start(&job, slot, now, end)
                .expect("start_inside checked that it fits");
            self.book.note_start(&self.state, &job, slot, end);
            starts.push(Start::on(
                job.id,
                self.state.slots()[slot].machine.id,
                job.procs,
            ));
            self.note_start(job);
        }
    }

    fn note_start(&mut self, job: Job) {
        for l in &job.licences {
            if let Some(d) = self.running_demand.get_mut(l.index()) {
                *d += 1;
            }
        }
        self.running.insert(job.id, job);
    }
}

impl Policy for FlexibleBackfilling {
    fn describe(&self) -> String {
        match self.order {
            ClusterOrder::Priority(p) if p != HeuristicParams::default() => match p.preset_name() {
                Some(n) => format!("{} ({n})", self.name),
                None => format!(
                    "{} (max {}, min {}, k {}, age {}, W {}, boost {}, d {:?}, rho {:?})",
                    self.name,
                    p.max,
                    p.min,
                    p.k,
                    p.age_factor,
                    p.licence_weight,
                    p.priority_boost,
                    p.licence_d,
                    p.rho_jobs
                ),
            },
            _ => self.name.to_string(),
        }
    }

    fn submit(&mut self, now: Time, job: &Job) -> Result<(), Rejection> {
        if job.estimate <= 0 {
            return Err(Rejection::BadEstimate {
                job: job.id,
                estimate: job.estimate,
            });
        }
        if self.running.contains_key(&job.id) || self.queue.iter().any(|w| w.job.id == job.id) {
            return Err(Rejection::Duplicate(job.id));
        }
        if let Some(reason) = self.state.ineligibility(job) {
            return Err(Rejection::NoEligibleMachine {
                job: job.id,
                reason,
            });
        }
        self.book.check_job(&self.state, now, job)?;
        self.queue.push(Waiting {
            job: job.clone(),
            arrived: now,
            priority: 0.0,
            ms: 0,
        });
        Ok(())
    }

    fn meta_priority(&mut self, job: JobId, priority: u8) {
        if let Some(w) = self.queue.iter_mut().rev().find(|w| w.job.id == job) {
            w.ms = priority;
        }
    }

    fn meta_priorities(&mut self, jobs: &[(JobId, u8)]) {
        let new: rustc_hash::FxHashMap<JobId, u8> = jobs.iter().copied().collect();
        for w in &mut self.queue {
            if let Some(&p) = new.get(&w.job.id) {
                w.ms = p;
            }
        }
    }

    fn terminate(&mut self, _now: Time, job: JobId) {
        self.state.finish(job);
        self.book.note_end(job);
        if let Some(j) = self.running.remove(&job) {
            for l in &j.licences {
                if let Some(d) = self.running_demand.get_mut(l.index()) {
                    *d -= 1;
                }
            }
        }
    }

    fn overrun(&mut self, _now: Time, job: JobId, predicted_end: Time) {
        self.state.set_end(job, predicted_end);
        self.book.note_overrun(job, predicted_end);
    }

    fn cancel(&mut self, _now: Time, job: JobId) -> bool {
        let before = self.queue.len();
        self.queue.retain(|w| w.job.id != job);
        if self.res.as_ref().is_some_and(|r| r.job == job) {
            self.res = None;
        }
        self.queue.len() != before
    }

    fn schedule(&mut self, now: Time, out: &mut Decisions) {
        let starts = &mut out.starts;
        let over = self.book.pass(now);
        self.release(&over);
        if self.queue.is_empty() {
            self.res = None;
            return;
        }
        self.order_queue(now);
        self.start_inside(now, starts);
        if let (Blocked::Reserve(FbVariant::Unmod), Some(r)) = (self.blocked, &self.res)
            && let Some(pos) = self.queue.iter().position(|w| w.job.id == r.job)
        {
            let w = self.queue.remove(pos);
            self.queue.insert(0, w);
        }
        let mut res: Option<Res> = None;
        let mut started = vec![false; self.queue.len()];
        let mut widest = self.widest_fit();
        let guarded = !self.book.is_empty();
        for (i, done) in started.iter_mut().enumerate() {
            let job = &self.queue[i].job;
            if job.reservation.is_some() {
                continue; // it starts inside its reservation only
            }
            let slot = if job.procs > widest {
                None
            } else {
                self.state.by_speed().iter().copied().find(|&s| {
                    self.state.fits_now(job, s)
                        && (!guarded
                            || self.book.free_for(
                                &self.state,
                                job,
                                s,
                                now,
                                self.state.duration_on(job, job.estimate, s),
                            ))
                        && res.as_ref().is_none_or(|r| !self.delays(job, s, r, now))
                })
            };
            if let Some(s) = slot {
                let end = now + self.state.duration_on(job, job.estimate, s);
                self.state
                    .start(job, s, now, end)
                    .expect("fits_now was checked");
                starts.push(Start::on(
                    job.id,
                    self.state.slots()[s].machine.id,
                    job.procs,
                ));
                *done = true;
                let job = job.clone();
                self.note_start(job);
                widest = self.widest_fit();
                continue;
            }
            match self.blocked {
                Blocked::Stop => break,
                Blocked::Skip => {}
                Blocked::Reserve(_) => {
                    if res.is_none() {
                        res = self.reserve(job, now);
                    }
                }
            }
        }
        let mut it = started.iter();
        self.queue
            .retain(|_| !*it.next().expect("one flag per job"));
        self.res = res;
    }

    crate::cluster::reservation_methods!();

    fn waiting_len(&self) -> usize {
        self.queue.len()
    }

    fn running_len(&self) -> usize {
        self.running.len()
    }

    fn queue(&self) -> Vec<JobId> {
        self.queue.iter().map(|w| w.job.id).collect()
    }

    fn reservations(&self) -> Vec<Reservation> {
        self.res
            .iter()
            .map(|r| Reservation {
                job: r.job,
                start: r.start,
                end: r.end,
                procs: r.procs,
                machine: Some(self.state.slots()[r.slot].machine.id),
                kind: ReservationKind::Head,
            })
            .collect()
    }

    crate::policy::capabilities!(machines);
}

crate::cluster::cluster_booking!(FlexibleBackfilling);

impl Machines for FlexibleBackfilling {
    fn set_machine_available(&mut self, _now: Time, machine: MachineId, available: bool) {
        self.state.set_up(machine, available);
    }

    fn restore_running(
        &mut self,
        _now: Time,
        job: &Job,
        started: Time,
        machine: MachineId,
        _procs: u32,
    ) -> Result<(), Rejection> {
        self.state.restore(job, machine, started, |st, slot| {
            st.duration_on(job, job.estimate, slot)
        })?;
        if let Some(slot) = self.state.slot_of(machine) {
            let end = started + self.state.duration_on(job, job.estimate, slot);
            self.book.note_start(&self.state, job, slot, end);
        }
        self.note_start(job.clone());
        Ok(())
    }
}
