//! The platform engine's event handlers: dispatch at submission, start and suspension at a pass,
//! end of a job, time integration of the usage levels, and the final report.

use super::{ClusterReport, Ev, Flight, Meta, PlatformError, PlatformRecord, PlatformReport, Sim};
use gridsched_core::dispatch::{ClusterLoad, GridState, Placement, Priority};
use gridsched_core::model::{ClusterId, Job, JobId, Time};
use gridsched_core::policy::Policy;
use std::cmp::Reverse;
use std::time::Instant;

impl Sim<'_, '_> {
    fn push(&mut self, t: Time, ev: Ev) {
        self.seq += 1;
        self.events.push(Reverse((t, self.seq, ev)));
    }

    fn reject(&mut self, why: String) {
        self.stats.rejected += 1;
        if self.stats.rejections.len() < 10 {
            self.stats.rejections.push(why);
        }
    }

    /// The sites' dynamic state, for the dispatchers that read it (brokers); one walk over the
    /// jobs in flight.
    fn site_loads(&self, t: Time, policies: &[Box<dyn Policy>]) -> Vec<ClusterLoad> {
        let mut load: Vec<ClusterLoad> = self
            .levels
            .iter()
            .zip(policies)
            .map(|(l, p)| ClusterLoad {
                free_procs: l.total_procs - l.busy_procs,
                waiting_jobs: p.waiting_len() as u64,
                waiting_area: 0,
                running_area: 0,
            })
            .collect();
        for f in self.flights.values() {
            let l = &mut load[f.cluster.index()];
            match &f.running {
                None => l.waiting_area += f.job.requested_area(),
                Some((since, _, _)) => {
                    let left = (f.job.estimate - (t - since)).max(0);
                    l.running_area += i128::from(f.job.procs) * i128::from(left);
                }
            }
        }
        load
    }

    /// Classifies (unless `priority` is known from an earlier hold) and dispatches a job.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn dispatch(
        &mut self,
        t: Time,
        job: Job,
        priority: Option<Priority>,
        grid: &mut GridState,
        policies: &mut [Box<dyn Policy>],
        meta: &mut Meta<'_>,
        dirty: &mut [bool],
    ) {
        if let Err(e) = job.validate() {
            self.reject(format!("job {}: {e}", job.id));
            return;
        }
        let priority = priority.unwrap_or_else(|| (meta.classify)(t, &job));
        // Only strategies that may see the sites get their state (computing it walks every job).
        grid.load = meta
            .dispatcher
            .reads_site_state()
            .then(|| self.site_loads(t, policies));
        let cluster = match meta.dispatcher.dispatch(t, &job, priority, grid) {
            Placement::Cluster(c) if c.index() < policies.len() => c,
            Placement::Cluster(c) => {
                self.reject(format!("job {}: dispatched to unknown cluster {c}", job.id));
                return;
            }
            Placement::Hold => {
                self.held.push(job.id);
                self.held_jobs.insert(job.id, (job, priority));
                return;
            }
            Placement::Split(_) => {
                self.reject(format!(
                    "job {}: multi-site splitting is not supported by the platform engine",
                    job.id
                ));
                return;
            }
            Placement::Refuse(why) => {
                self.reject(format!("job {}: {why}", job.id));
                return;
            }
        };
        if let Err(e) = policies[cluster.index()].submit(t, &job) {
            meta.dispatcher.job_returned(t, job.id, cluster);
            self.reject(e.to_string());
            return;
        }
        policies[cluster.index()].meta_priority(job.id, priority);
        let l = &mut self.levels[cluster.index()];
        l.jobs += 1;
        l.req_procs += u64::from(job.procs);
        l.req_licences += job.licences.len() as u64;
        self.dispatched[cluster.index()] += 1;
        self.workload[cluster.index()] += f64::from(job.procs) * job.estimate as f64;
        dirty[cluster.index()] = true;
        let remaining = job.runtime.unwrap_or(job.estimate).clamp(0, job.estimate);
        self.flights.insert(
            job.id,
            Flight {
                job,
                cluster,
                priority,
                remaining,
                running: None,
                first_start: None,
                exec: 0,
                suspensions: 0,
            },
        );
    }

    /// Stops a running job at `t`, releasing its resources and keeping its progress; returns
    /// whether the job was running.
    fn stop(&mut self, t: Time, job: JobId) -> bool {
        let Some(f) = self.flights.get_mut(&job) else {
            return false;
        };
        let Some((since, held, _)) = f.running.take() else {
            return false;
        };
        let ran = t - since;
        f.exec += ran;
        let bm_m = self.platform.machines[held.machine.index()].benchmark;
        let done = match f.job.benchmark {
            None => ran,
            Some(bm_ref) => (i128::from(ran) * i128::from(bm_m) / i128::from(bm_ref.max(1))) as i64,
        };
        f.remaining = (f.remaining - done).max(0);
        self.validator.release(&held);
        let l = &mut self.levels[f.cluster.index()];
        l.busy_procs -= u64::from(held.procs);
        l.used_copies -= held.pooled.len() as u64;
        if !self.validator.active(held.machine.index()) {
            l.active_machines -= 1;
        }
        true
    }

    /// Handles an end event; returns the job's cluster when the event was current.
    pub(super) fn end(&mut self, t: Time, job: JobId, generation: u64) -> Option<ClusterId> {
        let current = self
            .flights
            .get(&job)
            .and_then(|f| f.running.as_ref())
            .is_some_and(|(_, _, g)| *g == generation);
        if !current {
            return None;
        }
        self.stop(t, job);
        let f = self.flights.remove(&job).expect("current job is in flight");
        let l = &mut self.levels[f.cluster.index()];
        l.jobs -= 1;
        l.req_procs -= u64::from(f.job.procs);
        l.req_licences -= f.job.licences.len() as u64;
        let rec = PlatformRecord {
            id: job,
            cluster: f.cluster,
            priority: f.priority,
            submit: f.job.submit,
            start: f.first_start.unwrap_or(t),
            end: t,
            exec: f.exec,
            deadline: f.job.deadline,
            suspensions: f.suspensions,
        };
        self.job_stats[f.cluster.index()].add(rec.submit, rec.end, rec.exec, rec.deadline);
        self.platform_jobs
            .add(rec.submit, rec.end, rec.exec, rec.deadline);
        if let Some(h) = self.hooks.record.as_mut() {
            h(&rec);
        }
        Some(f.cluster)
    }

    /// One scheduling pass of `cluster`: suspensions first, then starts, all validated.
    pub(super) fn pass<E>(
        &mut self,
        t: Time,
        cluster: ClusterId,
        policy: &mut dyn Policy,
    ) -> Result<(), PlatformError<E>> {
        let mut starts = Vec::new();
        let clock = Instant::now();
        policy.schedule(t, &mut starts);
        let mut suspended = Vec::new();
        policy.take_suspensions(&mut suspended);
        self.pass_time += clock.elapsed().as_secs_f64();
        self.stats.passes += 1;
        let bad = |job, why: String| PlatformError::BadDecision {
            time: t,
            cluster,
            job,
            why,
        };
        for job in suspended {
            let ok = self.flights.get(&job).is_some_and(|f| f.cluster == cluster);
            if !ok || !self.stop(t, job) {
                return Err(bad(job, "suspended but not running on this cluster".into()));
            }
            let f = self.flights.get_mut(&job).expect("checked");
            f.suspensions += 1;
            self.stats.suspensions += 1;
        }
        for s in &starts {
            let f = self
                .flights
                .get(&s.job)
                .ok_or_else(|| bad(s.job, "started but not waiting".into()))?;
            if f.cluster != cluster || f.running.is_some() {
                return Err(bad(s.job, "started but not waiting on this cluster".into()));
            }
            let held = self
                .validator
                .acquire(&f.job, cluster, s.machine, s.procs)
                .map_err(|why| bad(s.job, why))?;
            let machine = &self.platform.machines[s.machine.index()];
            let run = f.job.duration_on(f.remaining, machine);
            let l = &mut self.levels[cluster.index()];
            l.busy_procs += u64::from(held.procs);
            l.used_copies += held.pooled.len() as u64;
            if self.validator.jobs_on(s.machine) == 1 {
                l.active_machines += 1;
            }
            self.seq += 1;
            let generation = self.seq;
            let f = self.flights.get_mut(&s.job).expect("checked");
            f.running = Some((t, held, generation));
            f.first_start.get_or_insert(t);
            self.stats.starts += 1;
            self.push(
                t + run,
                Ev::End {
                    job: s.job,
                    generation,
                },
            );
        }
        if let Some(h) = self.hooks.pass.as_mut() {
            h(t, cluster, &starts, policy);
        }
        if let Some(w) = policy.next_wakeup()
            && w > t
            && self.wakes.insert((w, cluster))
        {
            self.push(w, Ev::Wake { cluster });
        }
        Ok(())
    }

    /// Accounts the interval `[from, to)` at the current levels.
    pub(super) fn integrate(&mut self, from: Time, to: Time) {
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
