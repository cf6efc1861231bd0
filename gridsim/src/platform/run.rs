//! The platform engine's event handlers: the grid runner's decisions carried out against the
//! clusters' runners (a job sent to its cluster, the holds and commits of a co-allocation, the
//! reservations let go), a cluster's scheduling pass (through its
//! [`ClusterRunner`](gridsched_core::runner::ClusterRunner)), the end of a job, time integration
//! of the usage levels, and the final report.

use super::{ClusterReport, Ev, Flight, PlatformError, PlatformRecord, PlatformReport, Sim};
use gridsched_core::dispatch::{ClusterLoad, Priority, UrgentLoad};
use gridsched_core::grid::{Cause, Effect as GridEffect, GridError, Input as GridInput};
use gridsched_core::model::{ClusterId, Ended, Job, JobId, Outcome, Time};
use gridsched_core::policy::AdvanceReservation;
use gridsched_core::runner::{Effect, Input, RunnerError};
use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::time::Instant;

impl Sim<'_, '_> {
    pub(super) fn push(&mut self, t: Time, ev: Ev) {
        self.seq += 1;
        self.events.push(Reverse((t, self.seq, ev)));
    }

    /// Whether job `id` is in the system (at the meta level, or at a cluster).
    pub(super) fn has(&self, id: JobId) -> bool {
        self.grid.contains(id) || self.runners.iter().any(|r| r.contains(id))
    }

    /// Job `job` left the grid with `outcome` at `at` (having started at `started`): kept for the
    /// jobs submitted later that wait for it.
    pub(super) fn left_grid(
        &mut self,
        job: JobId,
        outcome: Outcome,
        at: Time,
        started: Option<Time>,
    ) {
        let ended = Ended {
            outcome,
            at,
            started,
        };
        self.ended.insert(job, ended);
    }

    /// Job `job` is refused (by the grid or its site), for `why`.
    pub(super) fn reject(&mut self, job: JobId, why: String) {
        self.stats.rejected += 1;
        // It never ran: when does not matter to the jobs waiting for it.
        self.left_grid(job, Outcome::Refused, 0, None);
        if let Some(h) = self.hooks.refused.as_mut() {
            h(job, &why);
        }
        if self.stats.rejections.len() < 10 {
            self.stats.rejections.push(why);
        }
    }

    /// The sites' dynamic state, for the dispatchers that read it (brokers); one walk over the
    /// jobs in flight. A site's urgent jobs are listed as a live local scheduler reports them:
    /// the running ones by job id, then the waiting ones in the policy's queue order (head
    /// first), any other (suspended outside the queue) last by job id.
    fn site_loads(&self, t: Time) -> Vec<ClusterLoad> {
        self.levels
            .iter()
            .zip(&self.runners)
            .map(|(l, r)| {
                let mut load = ClusterLoad {
                    free_procs: l.total_procs - r.ledger().busy_procs(),
                    waiting_jobs: r.policy().waiting_len() as u64,
                    waiting_area: 0,
                    running_area: 0,
                    urgent: Vec::new(),
                };
                let mut running = Vec::new();
                let mut waiting = std::collections::BTreeMap::new();
                for (job, is_running) in r.jobs() {
                    let on = r.running_on(job.id).filter(|_| is_running);
                    match on {
                        None => load.waiting_area += job.requested_area(),
                        Some((_, since)) => {
                            let left = (job.estimate - (t - since)).max(0);
                            load.running_area += i128::from(job.procs) * i128::from(left);
                        }
                    }
                    if job.is_urgent() {
                        let u = UrgentLoad {
                            procs: job.procs,
                            end: on.and_then(|_| r.predicted_end(job.id)),
                            estimate: job.estimate,
                        };
                        match on {
                            Some(_) => running.push((job.id, u)),
                            None => {
                                waiting.insert(job.id, u);
                            }
                        }
                    }
                }
                running.sort_unstable_by_key(|x| x.0);
                load.urgent.extend(running.into_iter().map(|x| x.1));
                // The queue's order matters from two waiting urgent jobs on (listing the queue
                // costs a walk over it).
                if waiting.len() > 1 {
                    for id in r.policy().queue() {
                        if let Some(u) = waiting.remove(&id) {
                            load.urgent.push(u);
                        }
                    }
                }
                load.urgent.extend(waiting.into_values());
                load
            })
            .collect()
    }

    /// Gives the grid runner the sites' state when its strategy reads it (computing it walks
    /// every job), before a dispatch.
    pub(super) fn report_loads(&mut self, t: Time) {
        if self.grid.placer().reads_site_state() {
            let loads = self.site_loads(t);
            let mut none = Vec::new();
            let _ = self.grid.on(t, GridInput::Loads { loads }, &mut none);
        }
    }

    /// Feeds the grid runner `input` at `t` and carries out what it decides, depth first: an
    /// effect answered at once (a hold asked of a cluster's runner) has its answer fed back, and
    /// that answer's effects carried out, before the next effect.
    pub(super) fn feed<E>(
        &mut self,
        t: Time,
        input: GridInput,
        dirty: &mut [bool],
    ) -> Result<(), PlatformError<E>> {
        let mut out = Vec::new();
        self.grid.on(t, input, &mut out).map_err(|e| match e {
            GridError::DuplicateJob(id) => PlatformError::DuplicateJob(id),
            other => PlatformError::BadDecision {
                time: t,
                cluster: ClusterId(0),
                job: JobId(0),
                why: other.to_string(),
            },
        })?;
        for e in out {
            self.carry_out(t, e, dirty)?;
        }
        Ok(())
    }

    /// Carries out one effect of the grid runner.
    pub(super) fn carry_out<E>(
        &mut self,
        t: Time,
        effect: GridEffect,
        dirty: &mut [bool],
    ) -> Result<(), PlatformError<E>> {
        match effect {
            GridEffect::Place {
                job, site, cause, ..
            } => {
                if let Cause::Withdrawn { from } = cause {
                    self.withdraw(t, job, from);
                }
                let (j, priority) = self.grid.job(job).expect("a placed job is open");
                let j = j.clone();
                let cluster = ClusterId(site as u32);
                if let Some(s) = self.staging.as_mut()
                    && !j.stage_in.is_empty()
                    && !s.park(t, &j, priority, cluster)
                {
                    // It reaches the site's scheduler once its inputs are there.
                    self.next_drain();
                    return Ok(());
                }
                if let Err(e) = self.submit_to(t, j, priority, cluster, dirty) {
                    let why = e.to_string();
                    self.feed(t, GridInput::Refused { job, site, why }, dirty)?;
                }
            }
            GridEffect::Refuse { job, why, .. } => self.reject(job, why),
            GridEffect::Unmet { job, why } => {
                self.stats.unmet += 1;
                self.left_grid(job, Outcome::Refused, t, None);
                if let Some(h) = self.hooks.refused.as_mut() {
                    h(job, &why);
                }
            }
            GridEffect::Defer { job, until } => self.push(until, Ev::Retry { job }),
            GridEffect::Continue { job } => self.push(t, Ev::Retry { job }),
            GridEffect::Task { .. } => self.stats.tasks += 1,
            GridEffect::Node { .. } => self.stats.nodes += 1,
            GridEffect::Stop { job, .. } => self.push(t, Ev::Cancel { job }),
            GridEffect::WorkflowOver {
                workflow,
                outcome,
                done,
                ..
            } => {
                let submit = self.submitted_workflows.remove(&workflow).unwrap_or(t);
                self.stats.workflows.push(super::WorkflowRecord {
                    id: workflow,
                    submit,
                    end: t,
                    outcome,
                    done: done.len() as u32,
                });
            }
            GridEffect::ArrayOver {
                job,
                outcome,
                started,
            } => self.left_grid(job, outcome, t, started),
            GridEffect::AskReservation { reservation } => {
                if let Some(answer) = self.ask_reservation(t, &reservation, dirty) {
                    self.feed(t, answer, dirty)?;
                }
            }
            GridEffect::TakeBack { reservation, site } => {
                self.let_go(t, ClusterId(site as u32), reservation);
                let gone = GridInput::TakenBack {
                    reservation,
                    gone: !self.lost[site],
                };
                self.feed(t, gone, dirty)?;
            }
            // The book's forgetting of a reservation (a co-allocation's committed hold, one
            // refused, one ended) asks nothing of the sites.
            GridEffect::ReservationRefused { .. }
            | GridEffect::ReservationHeld { .. }
            | GridEffect::ReservationDropped { .. } => {}
            GridEffect::Hold {
                job,
                fragment,
                site,
                reservation,
                from,
                length,
                procs,
            } => {
                let ask = Input::ReserveEarliest {
                    reservation: AdvanceReservation::new(reservation.0, from, from + length, procs),
                };
                dirty[site] = true;
                let runner = &mut self.runners[site];
                let answer = if self.lost[site] {
                    Err("the site cannot be reached".to_owned())
                } else {
                    match runner.on(t, ask, &mut self.effects) {
                        Ok(()) => {
                            let held = runner.advance_reservations();
                            let start = held.iter().find(|a| a.id == reservation);
                            Ok(start.expect("an admitted reservation is held").start)
                        }
                        Err(e) => Err(e.to_string()),
                    }
                };
                let held = GridInput::Held {
                    job,
                    fragment,
                    site,
                    reservation,
                    answer,
                };
                self.feed(t, held, dirty)?;
            }
            GridEffect::LetGo {
                site, reservation, ..
            } => self.let_go(t, ClusterId(site as u32), reservation),
            // A runner's hold is already firm: every commit succeeds.
            GridEffect::Commit { job, fragment, .. } => {
                let answer = Ok(());
                let committed = GridInput::Committed {
                    job,
                    fragment,
                    answer,
                };
                self.feed(t, committed, dirty)?;
            }
            GridEffect::Send { job, fragments, .. } => {
                self.send_fragments(t, job, &fragments, dirty)?
            }
            GridEffect::GivenUp { job, retry_at, .. } => {
                self.stats.coallocations_given_up += 1;
                if let Some(at) = retry_at {
                    self.push(at, Ev::Retry { job });
                }
            }
            GridEffect::StartSplit {
                job,
                parts,
                overhead_pct,
            } => self.start_split(t, job, &parts, overhead_pct, dirty)?,
            GridEffect::Over { job, site } => self.split_over(t, job, ClusterId(site as u32)),
            GridEffect::Wait {
                job,
                cause: Cause::Withdrawn { from },
                ..
            } => self.withdraw(t, job, from),
            GridEffect::Recalculated { jobs } => {
                let mut by_site: BTreeMap<usize, Vec<(JobId, Priority)>> = BTreeMap::new();
                for (job, site, p) in jobs {
                    if let Some(site) = site.filter(|&s| !self.lost[s]) {
                        by_site.entry(site).or_default().push((job, p));
                    }
                }
                for (site, jobs) in by_site {
                    dirty[site] = true;
                    let input = Input::Reprioritize { jobs };
                    (self.runners[site].on(t, input, &mut self.effects))
                        .map_err(|e| PlatformError::Grid(e.to_string()))?;
                }
            }
            GridEffect::Classified { .. }
            | GridEffect::Blocked { .. }
            | GridEffect::Coallocating { .. }
            | GridEffect::Wait { .. }
            | GridEffect::Limited { .. }
            | GridEffect::Kill { .. }
            | GridEffect::SiteDown { .. }
            | GridEffect::SiteUp { .. } => {}
        }
        Ok(())
    }

    /// Schedules the next drain of the inputs' moves (the one in force).
    fn next_drain(&mut self) {
        let Some(s) = self.staging.as_mut() else {
            return;
        };
        let (generation, next) = s.schedule_drain();
        if let Some(at) = next {
            self.push(at, super::Ev::Drain { generation });
        }
    }

    /// Moves may have sent their last byte at `t`: their inputs are there after the links'
    /// latency.
    pub(super) fn drain(&mut self, t: Time, generation: u64) {
        let Some(s) = self.staging.as_mut() else {
            return;
        };
        if !s.current(generation) {
            return;
        }
        for (site, key, at) in s.drained(t) {
            self.push(at, super::Ev::Arrive { site, key });
        }
        self.next_drain();
    }

    /// Input `key` is at `site` at `t`: the jobs it was the last missing input of go to the
    /// site's scheduler.
    pub(super) fn arrive<E>(
        &mut self,
        t: Time,
        site: ClusterId,
        key: u32,
        dirty: &mut [bool],
    ) -> Result<(), PlatformError<E>> {
        let Some(s) = self.staging.as_mut() else {
            return Ok(());
        };
        for (job, parked) in s.arrived(t, site, key) {
            let Some((j, _)) = self.grid.job(job) else {
                continue;
            };
            let j = j.clone();
            if let Err(e) = self.submit_to(t, j, parked.priority, site, dirty) {
                let why = e.to_string();
                let site = site.index();
                self.feed(t, GridInput::Refused { job, site, why }, dirty)?;
            }
        }
        Ok(())
    }

    /// Submits `job` (a whole job or a fragment) to `cluster`'s runner and accounts it there.
    pub(super) fn submit_to(
        &mut self,
        t: Time,
        job: Job,
        priority: Priority,
        cluster: ClusterId,
        dirty: &mut [bool],
    ) -> Result<(), RunnerError> {
        let (id, procs, licences, area) = (
            job.id,
            job.procs,
            job.licences.len() as u64,
            f64::from(job.procs) * job.estimate as f64,
        );
        let submit = Input::Submit {
            job,
            priority: Some(priority),
        };
        self.runners[cluster.index()].on(t, submit, &mut self.effects)?;
        let l = &mut self.levels[cluster.index()];
        l.jobs += 1;
        l.req_procs += u64::from(procs);
        l.req_licences += licences;
        self.dispatched[cluster.index()] += 1;
        self.workload[cluster.index()] += area;
        dirty[cluster.index()] = true;
        self.flights
            .insert((id, cluster), Flight { generation: None });
        Ok(())
    }

    /// Handles an end event at cluster `c` (the grid runner is told): whether it was current
    /// (a stale one, from before a suspension, changes nothing).
    pub(super) fn end<E>(
        &mut self,
        t: Time,
        job: JobId,
        c: ClusterId,
        generation: u64,
        dirty: &mut [bool],
    ) -> Result<bool, PlatformError<E>> {
        let current = self.flights.get(&(job, c)).map(|f| f.generation);
        if current != Some(Some(generation)) || self.is_lost(c) {
            return Ok(false);
        }
        let (procs, licences, outcome) = self.runners[c.index()]
            .job(job)
            .map_or((0, 0, Outcome::Completed), |j| {
                (u64::from(j.procs), j.licences.len() as u64, outcome_of(j))
            });
        self.effects.clear();
        self.runners[c.index()]
            .on(t, Input::Ended { job }, &mut self.effects)
            .map_err(|e| bad_decision(c, e))?;
        let Some(Effect::Finished(done)) = self.effects.pop() else {
            unreachable!("an end gives its record");
        };
        self.flights.remove(&(job, c));
        let l = &mut self.levels[c.index()];
        l.jobs -= 1;
        l.req_procs -= procs;
        l.req_licences -= licences;
        if self.splits.contains_key(&job) {
            self.split_fragment_ended(t, job, c, &done, dirty)?;
            return Ok(true);
        }
        let rec = PlatformRecord {
            id: job,
            cluster: c,
            priority: done.priority.unwrap_or_default(),
            submit: done.submit,
            start: done.start,
            end: t,
            exec: done.exec,
            deadline: done.deadline,
            suspensions: done.suspensions,
            restarts: done.restarts,
            parts: Vec::new(),
        };
        self.job_stats[c.index()].add(rec.submit, rec.end, rec.exec, rec.deadline);
        self.record(&rec);
        self.left_grid(job, outcome, t, Some(rec.start));
        self.feed(
            t,
            GridInput::Ended {
                job,
                site: c.index(),
                outcome,
                exit: None,
            },
            dirty,
        )?;
        Ok(true)
    }

    /// A job is over: its record counts over the platform and goes to the hook.
    pub(super) fn record(&mut self, rec: &PlatformRecord) {
        self.platform_jobs
            .add(rec.submit, rec.end, rec.exec, rec.deadline);
        if let Some(h) = self.hooks.record.as_mut() {
            h(rec);
        }
    }

    /// One scheduling pass of `cluster` through its runner: suspensions first, then starts, all
    /// validated by the runner.
    pub(super) fn pass<E>(&mut self, t: Time, cluster: ClusterId) -> Result<(), PlatformError<E>> {
        let mut effects = std::mem::take(&mut self.effects);
        effects.clear();
        let clock = Instant::now();
        let res = self.runners[cluster.index()].on(t, Input::Pass, &mut effects);
        self.pass_time += clock.elapsed().as_secs_f64();
        self.stats.passes += 1;
        res.map_err(|e| bad_decision(cluster, e))?;
        for e in &effects {
            match *e {
                Effect::Suspend { job, .. } => {
                    if let Some(f) = self.flights.get_mut(&(job, cluster)) {
                        f.generation = None;
                    }
                    self.stats.suspensions += 1;
                }
                Effect::Kill { job, .. } => {
                    if let Some(f) = self.flights.get_mut(&(job, cluster)) {
                        f.generation = None;
                    }
                    self.stats.kills += 1;
                }
                Effect::Start(s) => {
                    self.seq += 1;
                    let generation = self.seq;
                    if let Some(f) = self.flights.get_mut(&(s.job, cluster)) {
                        f.generation = Some(generation);
                    }
                    // The job stays at its site now (the live site claims its start).
                    let claimed = GridInput::Claimed {
                        job: s.job,
                        site: cluster.index(),
                    };
                    // What it decides (the jobs that waited for this one to start) is carried
                    // out after the pass.
                    let _ = self.grid.on(t, claimed, &mut self.backlog);
                    self.stats.starts += 1;
                    self.push(
                        t + s.run,
                        Ev::End {
                            job: s.job,
                            cluster,
                            generation,
                        },
                    );
                }
                // Ends come at their predicted end in virtual time: no job runs past it.
                Effect::Dropped { job } => {
                    return Err(PlatformError::BadDecision {
                        time: t,
                        cluster,
                        job,
                        why: gridsched_core::runner::DROPPED.to_owned(),
                    });
                }
                Effect::Finished(_) | Effect::Overrun { .. } => {}
            }
        }
        let runner = &self.runners[cluster.index()];
        if let Some(h) = self.hooks.pass.as_mut() {
            h(t, cluster, &effects, runner);
        }
        self.effects = effects;
        if let Some(w) = runner.next_wakeup()
            && w > t
            && self.wakes.insert((w, cluster))
        {
            self.push(w, Ev::Wake { cluster });
        }
        Ok(())
    }

    /// Passes every cluster marked in `dirty` (and clears the marks), and again those the grid
    /// runner's decisions on the starts mark; a lost cluster passes no more.
    pub(super) fn pass_dirty<E>(
        &mut self,
        t: Time,
        dirty: &mut [bool],
    ) -> Result<(), PlatformError<E>> {
        loop {
            for (c, d) in dirty.iter_mut().enumerate() {
                if std::mem::take(d) && !self.lost[c] {
                    self.pass(t, ClusterId(c as u32))?;
                }
            }
            if self.backlog.is_empty() {
                return Ok(());
            }
            for e in std::mem::take(&mut self.backlog) {
                self.carry_out(t, e, dirty)?;
            }
        }
    }

    /// Accounts the interval `[from, to)` at the current levels.
    pub(super) fn integrate(&mut self, from: Time, to: Time) {
        for (l, r) in self.levels.iter_mut().zip(&self.runners) {
            l.busy_procs = r.ledger().busy_procs();
            l.used_copies = r.ledger().used_copies();
            l.active_machines = r.ledger().active_machines();
        }
        let mut total = super::Level::default();
        for (l, i) in self.levels.iter().zip(self.integrals.iter_mut()) {
            i.add(l, from, to);
            total.jobs += l.jobs;
            total.req_procs += l.req_procs;
            total.req_licences += l.req_licences;
            total.busy_procs += l.busy_procs;
            total.active_machines += l.active_machines;
            total.used_copies += l.used_copies;
            total.total_procs += l.total_procs;
            total.total_machines += l.total_machines;
            total.total_copies += l.total_copies;
        }
        self.platform_integral.add(&total, from, to);
    }

    /// The final report.
    pub(super) fn report(mut self) -> PlatformReport {
        let total_work: f64 = self.workload.iter().sum();
        let total_machines = self.platform.machines.len().max(1) as f64;
        let clusters = self
            .platform
            .clusters
            .iter()
            .enumerate()
            .map(|(i, c)| ClusterReport {
                name: c.name.clone(),
                dispatched: self.dispatched[i],
                workload_pct: if total_work > 0.0 {
                    100.0 * self.workload[i] / total_work
                } else {
                    0.0
                },
                optimal_pct: 100.0 * c.machines.len() as f64 / total_machines,
                jobs: self.job_stats[i].summary(),
                usage: self.integrals[i].usage(),
            })
            .collect();
        if let Some(s) = &self.staging {
            (self.stats.input_moves, self.stats.input_bytes) = (s.moves, s.bytes);
            self.stats.input_wait_s = s.waited;
        }
        self.stats.mean_pass_us = if self.stats.passes > 0 {
            1e6 * self.pass_time / self.stats.passes as f64
        } else {
            0.0
        };
        PlatformReport {
            jobs: self.platform_jobs.summary(),
            usage: self.platform_integral.usage(),
            clusters,
            stats: self.stats,
        }
    }
}

fn bad_decision<E>(cluster: ClusterId, e: RunnerError) -> PlatformError<E> {
    match e {
        RunnerError::BadDecision { time, job, why } => PlatformError::BadDecision {
            time,
            cluster,
            job,
            why,
        },
        other => PlatformError::BadDecision {
            time: 0,
            cluster,
            job: JobId(0),
            why: other.to_string(),
        },
    }
}

/// How a job ended, for the jobs that depend on it: failed when killed at its estimate (the
/// run it was given was longer), completed otherwise.
pub(super) fn outcome_of(job: &Job) -> Outcome {
    if job.runtime.is_some_and(|r| r > job.estimate) {
        Outcome::Failed
    } else {
        Outcome::Completed
    }
}
