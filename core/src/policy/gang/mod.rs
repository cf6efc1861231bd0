//! Gang scheduling on one machine (Zhang, Franke, Moreira & Sivasubramaniam, §5–§6): plain gang
//! scheduling (GS), backfilling gang scheduling (BGS), and both with migration (MGS, MBGS).
//!
//! The machine's processors are the columns of an Ousterhout matrix of MPL rows ([`matrix`]); the
//! rows take turns, one time slice each, and only the jobs of the executing row run. At every slice
//! boundary — and with continuous invocation at every arrival and termination too, the current row
//! then continuing for the rest of its slice with its new contents (G-A7(b)) — the matrix is
//! recomputed by the phases of [`phases`] (with [`backfill`] as the Schedule phase of BGS and the
//! phases of [`migration`] for MGS/MBGS), and the policy answers with suspensions (jobs of the row
//! leaving execution) and starts (jobs of the row entering it; the runner resumes a suspended job
//! on the same machine). Rows exist only while some job has them as home (G-A7(a)), so the cycle
//! visits only non-empty rows; with MPL = 1 the policy is space sharing.
//!
//! A job that did not run in the immediately preceding slice (a resumption, not a first start)
//! holds its processors without progress for the context switch C·T (G-A7(c)), and a migrated job
//! for its migration delay (G-A12), both as [`Start::setup`] of its next run. The policy counts each
//! job's progress the way the runner does (integer seconds, setup excluded), so its predicted ends
//! (BGS: now + MPL × remaining estimate) match what the runner will do.

pub mod backfill;
pub mod matrix;
pub mod migration;
mod options;
pub mod phases;
#[cfg(test)]
mod tests;

pub use options::{GangOptions, Invocation, LOAD_WINDOW_SLICES, Phases};

use super::{Decisions, Policy, Rejection, Reservation, ReservationKind, Start};
use crate::cluster::ClusterState;
use crate::model::{Duration, Job, JobId, MachineId, Time};
use backfill::RowReservation;
use matrix::Matrix;
use phases::{Clock, JobOrder};
use rustc_hash::FxHashMap;
use std::collections::{BTreeSet, VecDeque};

/// Which of the four schedulers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GangKind {
    /// Conservative backfilling per row (BGS, MBGS).
    pub backfill: bool,
    /// Migration phases (MGS, MBGS).
    pub migrate: bool,
    /// BGS that schedules as BF while the recent load is above ρ_critical (`bgs-adaptive`).
    pub adaptive: bool,
}

impl GangKind {
    /// Plain gang scheduling (§6.1).
    pub const GS: GangKind = GangKind {
        backfill: false,
        migrate: false,
        adaptive: false,
    };
    /// Backfilling gang scheduling (§6.2).
    pub const BGS: GangKind = GangKind {
        backfill: true,
        migrate: false,
        adaptive: false,
    };
    /// Migration gang scheduling (§6.4).
    pub const MGS: GangKind = GangKind {
        backfill: false,
        migrate: true,
        adaptive: false,
    };
    /// Migration backfilling gang scheduling (§6.5).
    pub const MBGS: GangKind = GangKind {
        backfill: true,
        migrate: true,
        adaptive: false,
    };

    /// Ours, after the adaptive idea of §6.3 (Zhang et al.): BGS at low load, BF at high load.
    /// The load is the utilization of the last [`LOAD_WINDOW_SLICES`] slices ([`LoadWindow`]);
    /// above `rho_critical` the Schedule phase places jobs in row 0 only, with BF's run times
    /// (estimates, not MPL × estimates), so once the other rows drain the machine is space-shared
    /// under conservative backfilling; at or below it the scheduler is BGS.
    pub const ADAPTIVE: GangKind = GangKind {
        backfill: true,
        migrate: false,
        adaptive: true,
    };

    /// Its name.
    pub fn name(self) -> &'static str {
        if self.adaptive {
            return "bgs-adaptive";
        }
        match (self.backfill, self.migrate) {
            (false, false) => "gs",
            (true, false) => "bgs",
            (false, true) => "mgs",
            (true, true) => "mbgs",
        }
    }
}

/// One job known to the policy.
#[derive(Clone, Debug)]
struct GJob {
    procs: u32,
    estimate: Duration,
    submit: Time,
    /// Reference work done in earlier runs (setup excluded).
    done: Duration,
    /// The current run: its start and setup seconds.
    run: Option<(Time, Duration)>,
    /// Whether it has run before (a later start is a context switch into it).
    ran_before: bool,
    /// The row of its most recent execution (for the clock rule).
    last_row: Option<usize>,
    /// Migration delay to charge at its next run (G-A12).
    pending: Duration,
}

impl GJob {
    fn done_at(&self, now: Time) -> Duration {
        self.done
            + self
                .run
                .map_or(0, |(since, setup)| (now - since - setup).max(0))
    }
}

/// BGS's predicted end of a placed job at `now`: now + MPL × its remaining estimate, at least one
/// second of it (G-A11).
fn predicted_end(jobs: &FxHashMap<JobId, GJob>, mpl: usize, now: Time, id: JobId) -> Time {
    let j = &jobs[&id];
    now + mpl as Duration * (j.estimate - j.done_at(now)).max(1)
}

/// The load measure of `bgs-adaptive`: the utilization of the machine over the last `window`
/// seconds, i.e. the processor-seconds held by running jobs (context switches and migration
/// delays included: they hold processors) in `[now − window, now)` over `window × processors`.
/// Before `window` seconds have passed the missing time counts as idle.
#[derive(Clone, Debug)]
pub struct LoadWindow {
    window: Duration,
    procs: u32,
    /// Intervals `[from, to)` with the processors held throughout, oldest first.
    held: VecDeque<(Time, Time, u32)>,
}

impl LoadWindow {
    /// A window of `window` seconds over `procs` processors.
    pub fn new(window: Duration, procs: u32) -> LoadWindow {
        LoadWindow {
            window: window.max(1),
            procs,
            held: VecDeque::new(),
        }
    }

    /// Records that `procs` processors were held over `[from, to)`.
    pub fn record(&mut self, from: Time, to: Time, procs: u32) {
        if to > from && procs > 0 {
            self.held.push_back((from, to, procs));
        }
    }

    /// The utilization over `[now − window, now)`, forgetting older intervals.
    pub fn utilization(&mut self, now: Time) -> f64 {
        let start = now - self.window;
        while self.held.front().is_some_and(|&(_, to, _)| to <= start) {
            self.held.pop_front();
        }
        let area: i64 = self
            .held
            .iter()
            .map(|&(from, to, p)| (to.min(now) - from.max(start)).max(0) * i64::from(p))
            .sum();
        area as f64 / (self.window as f64 * f64::from(self.procs))
    }
}

/// Counters of the policy's own decisions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GangCounters {
    /// Slices begun.
    pub slices: u64,
    /// Context switches into jobs (resumptions charged C·T).
    pub switches: u64,
    /// Jobs migrated (changed columns).
    pub migrations: u64,
    /// Tasks migrated.
    pub migrated_tasks: u64,
    /// Jobs moved between rows without migration (CompactMatrix).
    pub compactions: u64,
    /// Passes `bgs-adaptive` made in BF mode.
    pub bf_passes: u64,
}

/// The gang scheduler.
#[derive(Debug)]
pub struct Gang {
    kind: GangKind,
    opts: GangOptions,
    machine: MachineId,
    matrix: Matrix,
    jobs: FxHashMap<JobId, GJob>,
    /// Waiting jobs (not in the matrix) by (submission, id): FCFS.
    queue: BTreeSet<(Time, JobId)>,
    /// Jobs executing now.
    running: BTreeSet<JobId>,
    /// The executing row and the end of its slice.
    cur: Option<usize>,
    slice_end: Time,
    /// The last pass.
    now: Time,
    reservations: Vec<RowReservation>,
    /// Tasks migrated in the current slice (Q budget, G-A12).
    migrated_in_slice: u32,
    counters: GangCounters,
    /// `bgs-adaptive`: the recent load and whether this pass schedules as BF.
    load: LoadWindow,
    bf_mode: bool,
    /// Processors held by the running jobs at the end of the last pass.
    held: u32,
}

impl Gang {
    /// A gang scheduler of `kind` over machine `machine` of `procs` processors.
    pub fn new(kind: GangKind, machine: MachineId, procs: u32, opts: GangOptions) -> Gang {
        Gang {
            kind,
            opts,
            machine,
            matrix: Matrix::new(opts.mpl.clamp(1, 64) as usize, procs),
            jobs: FxHashMap::default(),
            queue: BTreeSet::new(),
            running: BTreeSet::new(),
            cur: None,
            slice_end: 0,
            now: 0,
            reservations: Vec::new(),
            migrated_in_slice: 0,
            counters: GangCounters::default(),
            load: LoadWindow::new(LOAD_WINDOW_SLICES * opts.slice, procs),
            bf_mode: false,
            held: 0,
        }
    }

    /// On the (single) machine of a cluster.
    pub fn on_cluster(state: &ClusterState, kind: GangKind, opts: GangOptions) -> Gang {
        let m = &state.slots()[0].machine;
        Gang::new(kind, m.id, m.procs, opts)
    }

    /// The matrix.
    pub fn matrix(&self) -> &Matrix {
        &self.matrix
    }

    /// The executing row.
    pub fn current_row(&self) -> Option<usize> {
        self.cur
    }

    /// The decision counters.
    pub fn gang_counters(&self) -> GangCounters {
        self.counters
    }

    fn mpl(&self) -> usize {
        self.matrix.mpl()
    }

    /// The factor from estimates to run times in BGS's plans: MPL, or 1 in BF mode.
    fn stretch(&self) -> usize {
        if self.bf_mode { 1 } else { self.mpl() }
    }

    /// The rows the Schedule phase may place jobs in: every row, or row 0 in BF mode.
    fn schedule_rows(&self) -> usize {
        if self.bf_mode { 1 } else { self.mpl() }
    }

    /// The next existing row after `from` in cycle order (`from` itself last).
    fn next_live(&self, from: usize) -> Option<usize> {
        let n = self.mpl();
        (1..=n)
            .map(|k| (from + k) % n)
            .find(|&r| self.matrix.live(r))
    }

    /// The first existing row from `from` on in cycle order (`from` itself first).
    fn live_from(&self, from: usize) -> Option<usize> {
        let n = self.mpl();
        (0..n)
            .map(|k| (from + k) % n)
            .find(|&r| self.matrix.live(r))
    }

    fn boundary_of_discrete(&self, now: Time) -> bool {
        now % self.opts.slice == 0
    }

    /// Recomputes the matrix at `now` (`boundary`: a new slice begins).
    fn recompute(&mut self, now: Time, boundary: bool) {
        let phases = self.opts.phases;
        let clock = Clock {
            cur: self.cur.unwrap_or(0),
            mpl: self.mpl(),
        };
        if !matches!(phases, Phases::ScheduleFill) {
            phases::clean(&mut self.matrix);
        }
        let order = if self.kind.migrate {
            JobOrder::Smallest
        } else {
            JobOrder::Start
        };
        if matches!(phases, Phases::All | Phases::Fill2Only) && self.cur.is_some() {
            let moved = {
                let jobs = &self.jobs;
                let running = &self.running;
                let clock_ok = |id: JobId, to: usize, home: usize| {
                    let last = jobs[&id].last_row.unwrap_or(home);
                    clock.legal(to, last, !boundary && running.contains(&id))
                };
                let reservations = &self.reservations;
                let backfill = self.kind.backfill;
                let mpl = self.stretch();
                let pred = |id: JobId| predicted_end(jobs, mpl, now, id);
                let mut allowed = |m: &Matrix, id: JobId, to: usize| {
                    !backfill
                        || backfill::respects_reservations(m, id, to, now, &pred, reservations)
                };
                phases::compact(&mut self.matrix, order, &clock_ok, &mut allowed)
            };
            self.counters.compactions += moved.len() as u64;
        }
        // Schedule (Schedule-1 of MGS), then CollapseMatrix-2 and Schedule-2 in the holes
        // migration made (§6.4's phase order).
        self.schedule_phase(now);
        if self.kind.migrate && phases == Phases::All && self.cur.is_some() {
            self.collapse_with_migration(now, clock, boundary);
            self.schedule_phase(now);
        }
        phases::fill(&mut self.matrix);
        if self.kind.migrate && self.budget() > 0 {
            self.fill_with_migration();
        }
        debug_assert_eq!(self.matrix.check(), Ok(()));
    }

    /// Tasks that may still migrate in this slice.
    fn budget(&self) -> u32 {
        match self.opts.migration_tasks {
            None => u32::MAX,
            Some(q) => q.saturating_sub(self.migrated_in_slice),
        }
    }

    fn collapse_with_migration(&mut self, now: Time, clock: Clock, boundary: bool) {
        let jobs = &self.jobs;
        let running = &self.running;
        let clock_ok = |id: JobId, to: usize, home: usize| {
            let last = jobs[&id].last_row.unwrap_or(home);
            clock.legal(to, last, !boundary && running.contains(&id))
        };
        let backfill = self.kind.backfill;
        let reservations = &self.reservations;
        let mpl = self.matrix.mpl();
        let pred = |id: JobId| predicted_end(jobs, mpl, now, id);
        let allowed = |m: &Matrix, id: JobId, to: usize| {
            !backfill || backfill::respects_reservations(m, id, to, now, &pred, reservations)
        };
        let budget = self.budget();
        let moves = migration::collapse(
            &mut self.matrix,
            budget,
            self.opts.migration_cost,
            &clock_ok,
            &allowed,
        );
        self.charge(&moves);
    }

    fn fill_with_migration(&mut self) {
        let budget = self.budget();
        let moves = migration::fill(&mut self.matrix, budget, self.opts.migration_cost);
        self.charge(&moves);
    }

    /// Charges the delays of migrations (G-A12) and counts them against the slice's budget.
    fn charge(&mut self, moves: &[migration::Migrated]) {
        for mv in moves {
            self.migrated_in_slice += mv.tasks;
            self.counters.migrated_tasks += u64::from(mv.tasks);
            for &(id, delay, moved) in &mv.delays {
                if moved {
                    self.counters.migrations += 1;
                }
                if let Some(j) = self.jobs.get_mut(&id) {
                    j.pending += delay;
                }
            }
        }
    }

    fn schedule_phase(&mut self, now: Time) {
        if self.queue.is_empty() {
            return;
        }
        let placed = if self.kind.backfill {
            let mpl = self.stretch() as Duration;
            let rows = self.schedule_rows();
            let q: Vec<(JobId, u32, Duration)> = self
                .queue
                .iter()
                .map(|&(_, id)| {
                    let j = &self.jobs[&id];
                    (id, j.procs, mpl * j.estimate)
                })
                .collect();
            let jobs = &self.jobs;
            let pred = |id: JobId| predicted_end(jobs, mpl as usize, now, id);
            let (placed, res) = backfill::schedule_backfill(&mut self.matrix, &q, rows, now, &pred);
            self.reservations = res;
            placed
        } else {
            let jobs = &self.jobs;
            let q = self.queue.iter().map(|&(_, id)| (id, jobs[&id].procs));
            phases::schedule_fcfs(&mut self.matrix, q, now)
        };
        for id in placed {
            let s = self.jobs[&id].submit;
            self.queue.remove(&(s, id));
        }
    }

    /// Brings execution in line with the executing row: suspends the jobs leaving, starts the
    /// jobs entering (and restarts a running job with a migration delay due).
    fn execute(&mut self, now: Time, out: &mut Decisions) {
        let desired: BTreeSet<JobId> = self
            .cur
            .map(|r| self.matrix.in_row(r).into_iter().collect())
            .unwrap_or_default();
        let was_running = self.running.clone();
        let leaving: Vec<JobId> = self
            .running
            .iter()
            .filter(|id| !desired.contains(id) || self.jobs[id].pending > 0)
            .copied()
            .collect();
        for id in leaving {
            let j = self.jobs.get_mut(&id).expect("running jobs are known");
            j.done = j.done_at(now);
            j.run = None;
            self.running.remove(&id);
            out.suspensions.push(id);
        }
        let switch = self.opts.switch_seconds();
        for &id in &desired {
            let j = self.jobs.get_mut(&id).expect("placed jobs are known");
            j.last_row = self.cur;
            if self.running.contains(&id) {
                continue;
            }
            let mut setup = std::mem::take(&mut j.pending);
            // A context switch into a job that did not run just before (a migrated job restarted
            // in place pays only its migration delay).
            if j.ran_before && switch > 0 && !was_running.contains(&id) {
                setup += switch;
                self.counters.switches += 1;
            }
            j.ran_before = true;
            j.run = Some((now, setup));
            self.running.insert(id);
            let mut s = Start::on(id, self.machine, j.procs);
            s.setup = setup;
            out.starts.push(s);
        }
    }

    /// `bgs-adaptive`: the processors the running jobs hold until the next pass.
    fn note_held(&mut self) {
        if self.kind.adaptive {
            self.held = self.running.iter().map(|id| self.jobs[id].procs).sum();
        }
    }

    fn begin_slice(&mut self, now: Time) {
        self.slice_end = now + self.opts.slice;
        self.migrated_in_slice = 0;
        self.counters.slices += 1;
    }
}

impl Policy for Gang {
    fn describe(&self) -> String {
        let mut d = self.kind.name().to_string();
        for w in self.opts.non_default() {
            d.push(' ');
            d.push_str(&w);
        }
        d
    }

    fn submit(&mut self, _now: Time, job: &Job) -> Result<(), Rejection> {
        if job.procs > self.matrix.width() || job.procs == 0 {
            return Err(Rejection::TooWide {
                job: job.id,
                procs: job.procs,
                max: self.matrix.width(),
            });
        }
        if job.estimate <= 0 {
            return Err(Rejection::BadEstimate {
                job: job.id,
                estimate: job.estimate,
            });
        }
        if self.jobs.contains_key(&job.id) {
            return Err(Rejection::Duplicate(job.id));
        }
        self.jobs.insert(
            job.id,
            GJob {
                procs: job.procs,
                estimate: job.estimate,
                submit: job.submit,
                done: 0,
                run: None,
                ran_before: false,
                last_row: None,
                pending: 0,
            },
        );
        self.queue.insert((job.submit, job.id));
        Ok(())
    }

    fn terminate(&mut self, _now: Time, job: JobId) {
        if let Some(j) = self.jobs.remove(&job) {
            self.queue.remove(&(j.submit, job));
        }
        self.matrix.remove(job);
        self.running.remove(&job);
        self.reservations.retain(|r| r.job != job);
    }

    fn overrun(&mut self, _now: Time, _job: JobId, _predicted_end: Time) {}

    fn cancel(&mut self, _now: Time, job: JobId) -> bool {
        let Some(j) = self.jobs.get(&job) else {
            return false;
        };
        if !self.queue.remove(&(j.submit, job)) {
            return false;
        }
        self.jobs.remove(&job);
        self.reservations.retain(|r| r.job != job);
        true
    }

    fn schedule(&mut self, now: Time, out: &mut Decisions) {
        if self.kind.adaptive {
            // The processors held since the last pass, then the mode of this pass.
            self.load.record(self.now, now, self.held);
            self.bf_mode = self.load.utilization(now) > self.opts.rho_critical;
            self.counters.bf_passes += u64::from(self.bf_mode);
        }
        self.now = now;
        let discrete = self.opts.invocation == Invocation::Discrete;
        let boundary = match self.cur {
            Some(_) => now >= self.slice_end,
            None => !discrete || self.boundary_of_discrete(now),
        };
        if discrete && !boundary {
            self.note_held();
            return;
        }
        let mut began = false;
        if boundary && let Some(prev) = self.cur {
            self.cur = self.next_live(prev);
            self.begin_slice(now);
            began = true;
        }
        self.recompute(now, boundary);
        let before = self.cur;
        self.cur = self.live_from(self.cur.unwrap_or(0));
        // A fresh slice when the matrix was empty, or when the executing row emptied mid-slice.
        if self.cur.is_some() && !began && before != self.cur {
            self.begin_slice(now);
        }
        self.execute(now, out);
        self.note_held();
    }

    fn next_wakeup(&self) -> Option<Time> {
        match self.cur {
            Some(_) => Some(self.slice_end),
            None if !self.queue.is_empty() => {
                Some((self.now.div_euclid(self.opts.slice) + 1) * self.opts.slice)
            }
            None => None,
        }
    }

    fn counters(&self) -> Vec<(String, u64)> {
        let c = self.counters;
        vec![
            ("slices".into(), c.slices),
            ("context_switches".into(), c.switches),
            ("migrations".into(), c.migrations),
            ("migrated_tasks".into(), c.migrated_tasks),
            ("compactions".into(), c.compactions),
            ("bf_passes".into(), c.bf_passes),
        ]
    }

    fn waiting_len(&self) -> usize {
        self.queue.len()
    }

    fn running_len(&self) -> usize {
        self.running.len()
    }

    fn queue(&self) -> Vec<JobId> {
        self.queue.iter().map(|&(_, id)| id).collect()
    }

    fn reservations(&self) -> Vec<Reservation> {
        let mut v: Vec<Reservation> = self
            .reservations
            .iter()
            .map(|r| Reservation {
                job: r.job,
                start: r.start,
                end: r.end,
                procs: r.procs,
                machine: Some(self.machine),
                kind: ReservationKind::Planned,
            })
            .collect();
        v.sort_by_key(|r| (r.start, r.job));
        v
    }
}
