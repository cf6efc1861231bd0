//! The Convergent Scheduling local policy: at every pass, the matrix of the queued and running
//! jobs, the licence pre-matching, the matching, then the plan is applied — matched queued jobs
//! start, and running jobs that lost their machine are suspended keeping their progress (spec
//! `two-level-grid-scheduler.md` D7, D7.5; D12 #20, #21, #23).
//!
//! Variants: `cs-i-p` (IMFS, Δ = 8), `cs-i-np` (IMFS, Δ = 800), `cs-ni-p` (MFS, Δ = 8),
//! `cs-ni-np` (MFS, Δ = 800); the matching algorithm can be overridden (MIS, MFS, IMFS). As the
//! thesis simulates them (§4.2), the non-preemptive variants differ from the preemptive ones only
//! by the Overhead-minimization bonus Δ = 800 on a running job's own machine: a running job the
//! matching still moves is suspended, and counted. Ours, as an option (`pin`, D7.2 #6): running
//! jobs of the non-preemptive variants pinned to their machines (never discarded by the
//! pre-matching, never moved). With space sharing the matching is repeated in rounds over the
//! machines' remaining processors until no job fits (D12 #23); running jobs are then always
//! pinned.
//!
//! Advance reservations ([`ClusterBook`]) hold one machine's processors and licence copies for a
//! fixed interval: a queued job is matched only where it leaves them whole for its run, the jobs
//! submitted into a reservation start inside it before the matching, and are never preempted.

use super::imfs_tree::imfs_tree;
use super::knapsack::{Item, greedy};
use super::matching::{Assignment, imfs, mfs, mis};
use super::matrix::{CsParams, RowJob, build, nxtime, rho};
use crate::cluster::{ClusterBook, ClusterState};
use crate::model::{Job, JobId, LicenceId, MachineId, ReservationId, Time};
use crate::policy::{
    AdvanceReservation, Decisions, Machines, Policy, Rejection, Reservation, Start,
};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// The licences of a job that have a pool of limited copies (`caps` below `u32::MAX`).
fn pooled<'a>(job: &'a Job, caps: &'a [u32]) -> impl Iterator<Item = usize> + 'a {
    job.licences
        .iter()
        .map(|l| l.index())
        .filter(|&l| l < caps.len() && caps[l] != u32::MAX)
}

/// The matching algorithm (D7.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MatchingKind {
    /// Greedy.
    Mis,
    /// Exact.
    Mfs,
    /// Incremental, as the thesis describes it: augmenting along the longest-path tree from the
    /// previous round's matching (the default of the `i` variants, [`imfs_tree`]).
    Imfs,
    /// Ours: the previous plan's uncontested pairs kept, short exchanges taken, the rest matched
    /// exactly ([`imfs`](super::matching::imfs)).
    ImfsWarm,
}

impl MatchingKind {
    /// Its configuration name.
    pub fn name(self) -> &'static str {
        match self {
            MatchingKind::Mis => "mis",
            MatchingKind::Mfs => "mfs",
            MatchingKind::Imfs => "imfs",
            MatchingKind::ImfsWarm => "imfs-warm",
        }
    }
}

#[derive(Clone, Debug)]
struct Entry {
    job: Job,
    /// The slots where the job can ever run (static: processors and licence suitability).
    eligible: Vec<usize>,
    arrived: Time,
    progress: f64,
    last_slot: Option<usize>,
    running: Option<(usize, Time)>,
}

/// A Convergent Scheduling policy.
#[derive(Clone, Debug)]
pub struct ConvergentScheduling {
    name: String,
    state: ClusterState,
    params: CsParams,
    /// Running jobs keep their machines (a non-preemptive variant with `params.pin`).
    pin: bool,
    matching: MatchingKind,
    jobs: Vec<Entry>,
    index: FxHashMap<JobId, usize>,
    previous: FxHashMap<JobId, usize>,
    nlic: usize,
    /// Advance reservations.
    book: ClusterBook,
}

impl ConvergentScheduling {
    /// A policy of the given variant; `params.overhead` defaults to 8 (preemptive) or 800;
    /// `params.pin` pins the running jobs of a non-preemptive variant.
    pub fn new(
        state: ClusterState,
        incremental: bool,
        preemptive: bool,
        matching: Option<MatchingKind>,
        mut params: CsParams,
    ) -> ConvergentScheduling {
        params
            .overhead
            .get_or_insert(if preemptive { 8.0 } else { 800.0 });
        let matching = matching.unwrap_or(if incremental {
            MatchingKind::Imfs
        } else {
            MatchingKind::Mfs
        });
        let pin = !preemptive && params.pin;
        let name = format!(
            "cs-{}-{}{}{}",
            if incremental { "i" } else { "ni" },
            if preemptive { "p" } else { "np" },
            match (incremental, matching) {
                (true, MatchingKind::Imfs) | (false, MatchingKind::Mfs) => String::new(),
                (_, m) => format!(" ({} matching)", m.name()),
            },
            if pin { " (pinned)" } else { "" }
        );
        let nlic = state.licence_slots();
        ConvergentScheduling {
            name,
            state,
            params,
            pin,
            matching,
            jobs: Vec::new(),
            index: FxHashMap::default(),
            previous: FxHashMap::default(),
            nlic,
            book: ClusterBook::default(),
        }
    }

    /// The cluster state.
    pub fn state(&self) -> &ClusterState {
        &self.state
    }

    /// A known job's progress (fraction executed) and the slot of its partial results, if any.
    pub fn progress(&self, job: JobId) -> Option<(f64, Option<usize>)> {
        self.index
            .get(&job)
            .map(|&i| (self.jobs[i].progress, self.jobs[i].last_slot))
    }

    fn reindex(&mut self) {
        self.index = self
            .jobs
            .iter()
            .enumerate()
            .map(|(i, e)| (e.job.id, i))
            .collect();
    }

    fn remaining(&self, e: &Entry, slot: usize) -> i64 {
        let r = RowJob {
            job: &e.job,
            arrived: e.arrived,
            progress: e.progress,
            running_on: None,
            results_on: None,
            eligible: None,
        };
        (nxtime(&self.state, &r, slot).ceil() as i64).max(1)
    }

    /// A job's fraction executed at `now`: what it had when last suspended plus, while it runs,
    /// the work done since it (re)started on its machine (the estimate scaled by the benchmark
    /// ratio, Eq. 3.9). Always below 1 while the job is known.
    fn progress_at(&self, e: &Entry, now: Time) -> f64 {
        match e.running {
            None => e.progress,
            Some((slot, since)) => {
                let bm = f64::from(self.state.slots()[slot].machine.benchmark.max(1));
                let done = match e.job.benchmark {
                    None => (now - since).max(0) as f64,
                    Some(b) => (now - since).max(0) as f64 * bm / f64::from(b.max(1)),
                };
                (e.progress + done / e.job.estimate.max(1) as f64).min(0.999_999)
            }
        }
    }

    /// Whether a job outside every reservation may start on `slot` now for its remaining run,
    /// leaving the reservations whole.
    fn outside_fits(&self, e: &Entry, slot: usize, now: Time) -> bool {
        self.book.is_empty()
            || self
                .book
                .free_for(&self.state, &e.job, slot, now, self.remaining(e, slot))
    }

    /// The waiting jobs of reservations that are over or cancelled join the general queue.
    fn release(&mut self, ids: &[ReservationId]) {
        for e in &mut self.jobs {
            if e.running.is_none() && e.job.reservation.is_some_and(|r| ids.contains(&r)) {
                e.job.reservation = None;
            }
        }
    }

    /// Starts the waiting jobs inside reservations that fit now, in arrival order.
    fn start_inside(&mut self, now: Time, starts: &mut Vec<Start>) {
        if self.book.is_empty() {
            return;
        }
        for i in 0..self.jobs.len() {
            let e = &self.jobs[i];
            if e.running.is_some() || e.job.reservation.is_none() {
                continue;
            }
            let Some(slot) = self.book.start_inside(&self.state, now, &e.job) else {
                continue;
            };
            let end = now + self.remaining(e, slot);
            let job = e.job.clone();
            if self.state.start(&job, slot, now, end).is_ok() {
                self.book.note_start(&self.state, &job, slot, end);
                self.jobs[i].running = Some((slot, now));
                starts.push(Start::on(
                    job.id,
                    self.state.slots()[slot].machine.id,
                    job.procs,
                ));
            }
        }
    }

    fn suspend(&mut self, i: usize, now: Time, suspensions: &mut Vec<JobId>) {
        let progress = self.progress_at(&self.jobs[i], now);
        let e = &mut self.jobs[i];
        if let Some((slot, _)) = e.running.take() {
            e.progress = progress;
            e.last_slot = Some(slot);
            self.state.finish(e.job.id);
            self.book.note_end(e.job.id);
            suspensions.push(e.job.id);
        }
    }

    /// One matching round over the current jobs; returns the assignment and the row → job index map.
    fn plan(&self, now: Time, pin_running: bool) -> (Assignment, Vec<usize>) {
        let order: Vec<usize> = (0..self.jobs.len()).collect();
        let rows: Vec<RowJob<'_>> = order
            .iter()
            .map(|&i| {
                let e = &self.jobs[i];
                // A running job is scored on what it still has to do now (Nxtime of its
                // remaining part), so the Deadline, Wait and Overhead terms see its real state.
                RowJob {
                    job: &e.job,
                    arrived: e.arrived,
                    progress: self.progress_at(e, now),
                    running_on: e.running.map(|r| r.0),
                    results_on: e.last_slot,
                    eligible: Some(&e.eligible),
                }
            })
            .collect();
        let rh = rho(&self.state, &rows, self.nlic);
        let mut p = build(&self.state, &rows, now, &self.params, &rh);
        let ss = self.state.space_sharing();
        // Pinned running jobs keep their machine: no other row may take it (without space
        // sharing), and they are not matched again.
        for (i, r) in rows.iter().enumerate() {
            if let Some(m) = r.running_on
                && pin_running
            {
                for k in 0..p.cols {
                    *p.at_mut(i, k) = 0.0;
                }
                if !ss {
                    for k in 0..p.rows {
                        *p.at_mut(k, m) = 0.0;
                    }
                }
            }
        }
        // Queued jobs only where they fit now (processors; whole machine without space sharing,
        // unless its runner may be preempted).
        let idle: Vec<bool> = self
            .state
            .slots()
            .iter()
            .map(|s| s.jobs.is_empty() || !pin_running)
            .collect();
        let no_book = self.book.is_empty();
        for (i, r) in rows.iter().enumerate() {
            if r.running_on.is_some() {
                continue;
            }
            // A queued row's entries are positive only on its eligible machines.
            let e = &self.jobs[order[i]];
            let row = &mut p.p[i * p.cols..(i + 1) * p.cols];
            for &m in &e.eligible {
                let x = &mut row[m];
                let fits = if ss {
                    self.state.slots()[m].free >= r.job.procs
                } else {
                    idle[m]
                };
                if !fits || !(no_book || self.outside_fits(e, m, now)) {
                    *x = 0.0;
                }
            }
        }
        // Jobs of reservations start inside them only, and are never moved once there.
        for (i, r) in rows.iter().enumerate() {
            if r.job.reservation.is_some() {
                for m in 0..p.cols {
                    *p.at_mut(i, m) = 0.0;
                }
            }
        }
        // Pre-matching: licence copies (critical licences only).
        let caps: Vec<u32> = (0..self.nlic)
            .map(|l| {
                self.state
                    .pool(LicenceId(l as u16))
                    .map_or(u32::MAX, |pl| pl.copies)
            })
            .collect();
        // Only the jobs asking for an over-asked licence take part (their value `cbar` is read
        // by the greedy, every other item is kept as it is): with no licence over-asked the
        // pre-matching keeps every job and is skipped.
        let mut demand = vec![0u32; caps.len()];
        for r in &rows {
            pooled(r.job, &caps).for_each(|l| demand[l] += 1);
        }
        let over: Vec<bool> = demand.iter().zip(&caps).map(|(d, c)| d > c).collect();
        if over.iter().any(|o| *o) {
            let items: Vec<Item> = rows
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let licences: Vec<usize> = pooled(r.job, &caps).collect();
                    let value = if licences.iter().any(|&l| over[l]) {
                        // The mean of the row's positive entries, summed in column order: they
                        // lie on its eligible machines and the one it runs on.
                        let row = &p.p[i * p.cols..(i + 1) * p.cols];
                        let eligible = &self.jobs[order[i]].eligible;
                        let extra = r.running_on.filter(|m| eligible.binary_search(m).is_err());
                        let (mut sum, mut n) = (0.0f64, 0usize);
                        let mut add = |m: usize| {
                            if row[m] > 0.0 {
                                sum += row[m];
                                n += 1;
                            }
                        };
                        match extra {
                            None => eligible.iter().for_each(|&m| add(m)),
                            Some(x) => {
                                let at = eligible.partition_point(|&m| m < x);
                                eligible[..at].iter().for_each(|&m| add(m));
                                add(x);
                                eligible[at..].iter().for_each(|&m| add(m));
                            }
                        }
                        if n == 0 { 0.0 } else { sum / n as f64 }
                    } else {
                        0.0
                    };
                    Item {
                        value,
                        licences,
                        pinned: r.running_on.is_some() && pin_running,
                        order: r.arrived.max(0) as u64 * 1_000_000 + (r.job.id.0 % 1_000_000),
                    }
                })
                .collect();
            let keep = greedy(&items, &caps, true);
            for (i, k) in keep.iter().enumerate() {
                if !k {
                    p.p[i * p.cols..(i + 1) * p.cols].fill(0.0);
                }
            }
        }
        let a = match self.matching {
            MatchingKind::Mis => mis(&p),
            MatchingKind::Mfs => mfs(&p),
            MatchingKind::Imfs | MatchingKind::ImfsWarm => {
                let mut prev: Assignment = vec![None; p.cols];
                for (row, &i) in order.iter().enumerate() {
                    if let Some(&m) = self.previous.get(&self.jobs[i].job.id)
                        && m < p.cols
                        && prev[m].is_none()
                    {
                        prev[m] = Some(row);
                    }
                }
                match self.matching {
                    MatchingKind::Imfs => imfs_tree(&p, &prev),
                    _ => imfs(&p, &prev),
                }
            }
        };
        (a, order)
    }

    fn apply(&mut self, now: Time, a: &Assignment, order: &[usize], out: &mut Decisions) -> usize {
        let mut target: FxHashMap<usize, usize> = FxHashMap::default();
        for (m, row) in a.iter().enumerate() {
            if let Some(r) = row {
                target.insert(order[*r], m);
            }
        }
        // Suspensions first: running jobs not matched to their own machine (unless pinned).
        if !self.pin && !self.state.space_sharing() {
            for i in 0..self.jobs.len() {
                if let Some((slot, _)) = self.jobs[i].running
                    && target.get(&i) != Some(&slot)
                    && self.jobs[i].job.reservation.is_none()
                {
                    self.suspend(i, now, &mut out.suspensions);
                }
            }
        }
        let mut started = 0;
        let mut pairs: Vec<(usize, usize)> = target.into_iter().collect();
        pairs.sort_unstable_by_key(|&(i, m)| (m, i));
        for (i, m) in pairs {
            if self.jobs[i].running.is_some() {
                continue;
            }
            if !self.state.fits_now(&self.jobs[i].job, m)
                || !self.outside_fits(&self.jobs[i], m, now)
            {
                continue;
            }
            let end = now + self.remaining(&self.jobs[i], m);
            let job = self.jobs[i].job.clone();
            if self.state.start(&job, m, now, end).is_ok() {
                self.jobs[i].running = Some((m, now));
                out.starts.push(Start::on(
                    job.id,
                    self.state.slots()[m].machine.id,
                    job.procs,
                ));
                started += 1;
            }
        }
        self.previous = self
            .jobs
            .iter()
            .filter_map(|e| e.running.map(|(m, _)| (e.job.id, m)))
            .collect();
        started
    }
}

impl Policy for ConvergentScheduling {
    fn describe(&self) -> String {
        self.name.clone()
    }

    fn submit(&mut self, now: Time, job: &Job) -> Result<(), Rejection> {
        if job.estimate <= 0 {
            return Err(Rejection::BadEstimate {
                job: job.id,
                estimate: job.estimate,
            });
        }
        if self.index.contains_key(&job.id) {
            return Err(Rejection::Duplicate(job.id));
        }
        if let Some(reason) = self.state.ineligibility(job) {
            return Err(Rejection::NoEligibleMachine {
                job: job.id,
                reason,
            });
        }
        self.book.check_job(&self.state, now, job)?;
        let mut eligible = Vec::new();
        self.state.eligible_slots(job, &mut eligible);
        self.index.insert(job.id, self.jobs.len());
        self.jobs.push(Entry {
            job: job.clone(),
            eligible,
            arrived: now,
            progress: 0.0,
            last_slot: None,
            running: None,
        });
        Ok(())
    }

    fn terminate(&mut self, _now: Time, job: JobId) {
        if let Some(&i) = self.index.get(&job)
            && self.jobs[i].running.is_some()
        {
            self.state.finish(job);
            self.book.note_end(job);
            self.jobs.remove(i);
            self.previous.remove(&job);
            self.reindex();
        }
    }

    fn overrun(&mut self, _now: Time, job: JobId, predicted_end: Time) {
        self.state.set_end(job, predicted_end);
        self.book.note_overrun(job, predicted_end);
    }

    fn cancel(&mut self, _now: Time, job: JobId) -> bool {
        match self.index.get(&job) {
            Some(&i) if self.jobs[i].running.is_none() => {
                self.jobs.remove(i);
                self.reindex();
                true
            }
            _ => false,
        }
    }

    fn schedule(&mut self, now: Time, out: &mut Decisions) {
        let over = self.book.pass(now);
        self.release(&over);
        self.start_inside(now, &mut out.starts);
        if !self.jobs.iter().any(|e| e.running.is_none()) {
            return;
        }
        let pin = self.pin || self.state.space_sharing();
        let rounds = if self.state.space_sharing() { 16 } else { 1 };
        for _ in 0..rounds {
            let (a, order) = self.plan(now, pin);
            if self.apply(now, &a, &order, out) == 0 {
                break;
            }
        }
    }

    crate::cluster::reservation_methods!();

    fn waiting_len(&self) -> usize {
        self.jobs.iter().filter(|e| e.running.is_none()).count()
    }

    fn running_len(&self) -> usize {
        self.jobs.iter().filter(|e| e.running.is_some()).count()
    }

    fn queue(&self) -> Vec<JobId> {
        self.jobs
            .iter()
            .filter(|e| e.running.is_none())
            .map(|e| e.job.id)
            .collect()
    }

    fn reservations(&self) -> Vec<Reservation> {
        Vec::new()
    }

    crate::policy::capabilities!(machines);
}

crate::cluster::cluster_booking!(ConvergentScheduling);

impl Machines for ConvergentScheduling {
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
        let mut eligible = Vec::new();
        self.state.eligible_slots(job, &mut eligible);
        let mut entry = Entry {
            job: job.clone(),
            eligible,
            arrived: started,
            progress: 0.0,
            last_slot: None,
            running: None,
        };
        let probe = entry.clone();
        let slot = self.state.restore(job, machine, started, |st, slot| {
            let r = RowJob {
                job: &probe.job,
                arrived: probe.arrived,
                progress: 0.0,
                running_on: None,
                results_on: None,
                eligible: None,
            };
            (nxtime(st, &r, slot).ceil() as i64).max(1)
        })?;
        entry.running = Some((slot, started));
        let end = started + self.remaining(&entry, slot);
        self.book.note_start(&self.state, job, slot, end);
        self.index.insert(job.id, self.jobs.len());
        self.jobs.push(entry);
        Ok(())
    }
}
