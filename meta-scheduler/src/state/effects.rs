//! What the grid runner decides, carried out on the meta-scheduler's records (Pasquali, thesis
//! D3–D4: the Meta-Scheduler's classification and dispatch; Streit, thesis §6.3: co-allocation):
//! the state feeds the runner each thing that happens ([`State::drive`]) and turns each
//! [`Effect`] into what a person and a site see — a job's priority, site and event, its place in
//! a site's outbox, the calls a co-allocation makes, the fragments to send or kill, a retry to
//! schedule. Nothing here decides: where a job goes, when a site is down, which holds to ask for,
//! all come from the runner, which the simulator drives alike.

use super::{Batch, FragmentKill, SiteCall, State};
use gridsched_core::dispatch::ClusterLoad;
use gridsched_core::grid::{Cause, Effect, Explanation, Input};
use gridsched_core::model::JobId;
use gridsched_proto::v1::{self, JobState};

impl State {
    /// Feeds the runner `input` at `time`: its effects, not yet carried out.
    pub(crate) fn decide(&mut self, time: i64, input: Input) -> Vec<Effect> {
        self.decider.on(time, input)
    }

    /// Feeds the runner `input` at `time` and carries out what it decides.
    pub fn drive(&mut self, b: &mut Batch, time: i64, input: Input) {
        b.charged |= matches!(
            input,
            Input::Ended { .. } | Input::FragmentEnded { .. } | Input::Cancel { .. }
        );
        let effects = self.decide(time, input);
        self.carry_out(b, time, effects);
    }

    /// A release pass of the strategy's meta-level queue when it holds jobs (after every change:
    /// a submission, an end, a site up or down, a cancellation).
    pub fn settle(&mut self, b: &mut Batch, time: i64) {
        if self.decider.held() > 0 {
            self.drive(b, time, Input::Release);
        }
    }

    /// Site `i`'s event stream opened or closed at monotonic milliseconds `at_ms`.
    pub fn link(&mut self, b: &mut Batch, i: usize, reachable: bool, at_ms: u64, time: i64) {
        self.reachable[i] = reachable;
        if reachable {
            b.wake.insert(i);
        }
        let input = Input::Link {
            site: i,
            reachable,
            at_ms,
        };
        self.drive(b, time, input);
    }

    /// The time passes (monotonic milliseconds): sites without a link long enough go down, and
    /// the jobs waiting for a site are dispatched again.
    pub fn tick(&mut self, b: &mut Batch, at_ms: u64, time: i64) {
        self.drive(b, time, Input::Tick { at_ms });
    }

    /// Site `i`'s polled load, for the strategies that read it.
    pub fn load(&mut self, i: usize, load: ClusterLoad, time: i64) {
        let input = Input::Load { site: i, load };
        self.drive(&mut Batch::default(), time, input);
    }

    /// Carries out the runner's effects, in order.
    pub(crate) fn carry_out(&mut self, b: &mut Batch, time: i64, effects: Vec<Effect>) {
        for e in effects {
            self.effect(b, time, e);
        }
    }

    fn effect(&mut self, b: &mut Batch, time: i64, e: Effect) {
        match e {
            Effect::Classified {
                job,
                priority,
                explained,
            } => {
                if let Some(j) = self.jobs.get_mut(&job.0) {
                    j.priority = u32::from(priority);
                }
                if let Some(c) = explained {
                    let shown = self.decider.priority_shown(&c);
                    self.decisions.entry(job.0).or_default().priority = Some(shown);
                    b.decisions.insert(job.0);
                }
            }
            Effect::Place {
                job,
                site,
                cause,
                explanation,
            } => self.place(b, time, job.0, site, cause, explanation),
            Effect::Wait {
                job,
                held,
                cause,
                explanation,
            } => self.wait(b, time, job.0, held, cause, explanation),
            Effect::Refuse { job, why, .. } => {
                self.end_unstarted(b, time, job.0, JobState::Failed, why);
            }
            Effect::Coallocating {
                job,
                parts,
                length,
                overhead_pct,
                explanation,
            } => {
                let id = job.0;
                let list = self.site_list(parts.iter().map(|p| (p.cluster.index(), p.procs)));
                let decided_by = self.record_dispatch(b, id, explanation);
                // Its explanation names every site of the split.
                if let Some(d) = self
                    .decisions
                    .get_mut(&id)
                    .and_then(|d| d.dispatch.as_mut())
                {
                    let names: Vec<&str> = parts
                        .iter()
                        .map(|p| self.sites[p.cluster.index()].name.as_str())
                        .collect();
                    d.cluster = names.join("+");
                }
                let detail = format!(
                    "co-allocating over {list}, each fragment {length} s with p = \
                     {overhead_pct} %: {decided_by}"
                );
                self.update(b, id, time, |_| Some(detail));
            }
            Effect::Hold {
                job,
                fragment,
                site,
                reservation,
                from,
                length,
                procs,
            } => b.calls.push(SiteCall::Hold {
                job: job.0,
                fragment,
                site,
                reservation: reservation.0,
                from,
                length,
                procs,
                user: self.user_of(job.0),
            }),
            Effect::Commit {
                job,
                fragment,
                site,
                reservation,
                start,
                length,
                procs,
            } => b.calls.push(SiteCall::Commit {
                job: job.0,
                fragment,
                site,
                reservation: reservation.0,
                start,
                length,
                procs,
                user: self.user_of(job.0),
            }),
            Effect::LetGo {
                site, reservation, ..
            } => b.calls.push(SiteCall::LetGo {
                site,
                reservation: reservation.0,
            }),
            Effect::Send {
                job,
                start,
                rounds,
                fragments,
            } => self.split_agreed(b, time, job.0, start, rounds, &fragments),
            Effect::Blocked { job, waits, cause } => {
                let Some(j) = self.jobs.get_mut(&job.0) else {
                    return;
                };
                j.reason = format!("waits for {waits}");
                let detail = match cause {
                    Cause::Submitted => {
                        format!("accepted with priority {}; {}", j.priority, j.reason)
                    }
                    _ => j.reason.clone(),
                };
                let j = j.clone();
                b.jobs.insert(job.0);
                self.event(b, &j, time, detail);
            }
            Effect::Continue { job } => b.retries.push((job.0, time)),
            Effect::Limited { job, why } => {
                let detail = format!("accepted; {why}");
                b.jobs.insert(job.0);
                self.update(b, job.0, time, |j| {
                    j.reason.clone_from(&why);
                    Some(detail)
                });
            }
            Effect::Defer { job, until } => {
                b.retries.push((job.0, until));
                let detail = format!(
                    "dependency met; dispatched when its delay ends, in {} s",
                    until - time
                );
                self.update(b, job.0, time, |j| {
                    j.reason.clone_from(&detail);
                    Some(detail)
                });
            }
            Effect::Unmet { job, why } => {
                self.end_unstarted(b, time, job.0, JobState::Cancelled, why);
            }
            Effect::GivenUp { job, why, retry_at } => {
                let id = job.0;
                self.count_coallocation("given-up");
                let then = match retry_at {
                    Some(t) => {
                        b.retries.push((id, t));
                        format!("; dispatched again at {t}")
                    }
                    None => String::new(),
                };
                let detail = format!("co-allocation given up: {why}{then}");
                self.update(b, id, time, |_| Some(detail));
            }
            Effect::Kill { job, site, why } => {
                let run = self.jobs.get(&job.0).map_or(0, |j| j.requeues);
                b.kill_fragments.push(FragmentKill {
                    site,
                    job: job.0,
                    run,
                    why,
                });
            }
            Effect::TakeBack { reservation, site } => b.take_back.push((reservation.0, site)),
            Effect::Recalculated { jobs } => {
                // The running jobs were charged so far: the usage is written with the batch.
                b.charged = true;
                for (job, site, p) in jobs {
                    let Some(j) = self.jobs.get_mut(&job.0) else {
                        continue;
                    };
                    if j.priority != u32::from(p) {
                        j.priority = u32::from(p);
                        b.jobs.insert(job.0);
                    }
                    // One still in the site's outbox goes with its new priority.
                    if let Some(i) = site.filter(|&i| !self.outbox[i].contains(&job.0)) {
                        b.reprioritize.entry(i).or_default().push(v1::JobPriority {
                            job_id: job.0,
                            priority: u32::from(p),
                        });
                    }
                }
            }
            Effect::ReservationDropped { reservation, why } => {
                if self.reservations.remove(&reservation.0).is_some() {
                    tracing::info!(
                        reservation = reservation.0,
                        why,
                        "advance reservation forgotten"
                    );
                    b.dropped_reservations.push(reservation.0);
                }
            }
            // Answered by the call that asked (`reservations.rs`).
            Effect::AskReservation { .. }
            | Effect::ReservationHeld { .. }
            | Effect::ReservationRefused { .. } => {}
            Effect::SiteDown { site } => {
                tracing::warn!(site = %self.sites[site].name, "site is down");
            }
            Effect::SiteUp { site } => {
                tracing::info!(site = %self.sites[site].name, "site is up");
            }
            // The fragments' own events end a split job; its end was recorded with the last.
            Effect::Over { .. } => {}
            Effect::Task { array, job, index } => self.add_task(b, time, array.0, job.0, index),
            Effect::ArrayOver { job, .. } => self.array_over(b, time, job.0),
            Effect::Node {
                workflow,
                job,
                node,
                attempt,
            } => self.add_node(b, time, workflow.0, job.0, node, attempt),
            Effect::Stop { job, why } => self.stop_node(b, time, job.0, why),
            Effect::WorkflowOver {
                workflow,
                outcome,
                why,
                ..
            } => self.workflow_over(b, time, workflow.0, outcome, why),
            Effect::StartSplit { job, .. } => {
                tracing::error!(
                    job = job.0,
                    "a split started without co-allocation: ignored"
                );
            }
        }
    }

    /// The user of job `id`.
    fn user_of(&self, id: u64) -> String {
        self.jobs
            .get(&id)
            .and_then(|j| j.spec.as_ref())
            .map(|s| s.user.clone())
            .unwrap_or_default()
    }

    /// Counts a co-allocation's outcome.
    pub(super) fn count_coallocation(&self, outcome: &str) {
        let label = crate::metrics::OutcomeLabel {
            outcome: outcome.into(),
        };
        self.metrics.coallocations.get_or_create(&label).inc();
    }

    /// Counts a job withdrawn from site `i`.
    fn count_withdrawn(&self, i: usize) {
        let label = crate::metrics::SiteLabel {
            site: self.sites[i].name.clone(),
        };
        self.metrics.withdrawn.get_or_create(&label).inc();
    }

    /// Records the explanation of job `id`'s latest dispatch decision: its `decided_by`.
    fn record_dispatch(
        &mut self,
        b: &mut Batch,
        id: u64,
        explanation: Option<Explanation>,
    ) -> String {
        let Some(x) = explanation else {
            return String::new();
        };
        let shown = self.decider.shown(x);
        let decided_by = shown.decided_by.clone();
        self.decisions.entry(id).or_default().dispatch = Some(shown);
        b.decisions.insert(id);
        decided_by
    }

    /// Job `id` leaves site `from`'s outbox and in-flight set (withdrawn from it).
    fn leave(&mut self, id: u64, from: usize) {
        self.outbox[from].remove(&id);
        self.in_flight[from].remove(&id);
    }

    /// The runner sends job `id` to `site`.
    fn place(
        &mut self,
        b: &mut Batch,
        time: i64,
        id: u64,
        site: usize,
        cause: Cause,
        explanation: Option<Explanation>,
    ) {
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        // Withdrawn from the site its cancellation was asked of (unanswered): it goes nowhere
        // else, and the runner forgets it.
        if let Some(why) = job.cancel_requested.clone() {
            if let Cause::Withdrawn { from } = cause {
                self.leave(id, from);
            }
            self.drive(b, time, Input::Cancel { job: JobId(id) });
            self.end_unstarted(b, time, id, JobState::Cancelled, why);
            return;
        }
        self.count_dispatch(site);
        let decided_by = self.record_dispatch(b, id, explanation);
        let name = self.sites[site].name.clone();
        self.outbox[site].insert(id);
        b.wake.insert(site);
        let detail = match cause {
            Cause::Submitted => {
                let p = self.jobs[&id].priority;
                format!("accepted with priority {p} for {name}")
            }
            Cause::Released => format!("released to {name}: {decided_by}"),
            Cause::Waited | Cause::Restored => format!("dispatched to {name}"),
            Cause::Retried => format!("dispatched again to {name}"),
            Cause::Requeued => format!("run dispatched again to {name}"),
            Cause::Dependency => format!("dependency met: dispatched to {name}"),
            Cause::Withdrawn { from } => {
                self.leave(id, from);
                self.count_withdrawn(from);
                format!(
                    "{} is down: withdrawn before it started there, dispatched again to {name}",
                    self.sites[from].name
                )
            }
        };
        let (claims, reachable) = (self.start_claims, self.reachable[site]);
        if cause == Cause::Submitted {
            // A new job for a reachable site is sent at once: recorded as DISPATCHED in this very
            // commit, which saves a second one before the Enqueue.
            let job = self.jobs.get_mut(&id).expect("present");
            job.site = Some(name.clone());
            job.cluster = Some(name);
            if reachable {
                job.state = JobState::Dispatched.into();
                job.dispatch_time = Some(time);
            }
            let job = job.clone();
            b.jobs.insert(id);
            self.event(b, &job, time, detail);
            return;
        }
        self.update(b, id, time, |j| {
            j.site = Some(name.clone());
            j.cluster = Some(name);
            j.state = JobState::Accepted.into();
            j.dispatch_time = None;
            j.start_claims = claims;
            if cause == Cause::Dependency {
                // What it waited for is over.
                j.reason.clear();
            }
            Some(detail)
        });
    }

    /// Job `id` leaves the grid never started, in `state`, for `why` (unless it has ended).
    fn end_unstarted(&mut self, b: &mut Batch, time: i64, id: u64, state: JobState, why: String) {
        self.update(b, id, time, |j| {
            (!j.state().is_terminal()).then(|| {
                j.state = state.into();
                j.end_time = Some(time);
                j.reason.clone_from(&why);
                why
            })
        });
    }

    /// The runner keeps job `id` at the meta level: in the strategy's queue (`held`) or waiting
    /// for a site that is up.
    fn wait(
        &mut self,
        b: &mut Batch,
        time: i64,
        id: u64,
        held: bool,
        cause: Cause,
        explanation: Option<Explanation>,
    ) {
        if !self.jobs.contains_key(&id) {
            return;
        }
        let decided_by = self.record_dispatch(b, id, explanation);
        match cause {
            Cause::Submitted => {
                let job = self.jobs[&id].clone();
                let detail = format!(
                    "accepted with priority {}; waiting for a site ({decided_by})",
                    job.priority
                );
                b.jobs.insert(id);
                self.event(b, &job, time, detail);
            }
            Cause::Withdrawn { from } => {
                self.leave(id, from);
                self.count_withdrawn(from);
                let down = self.sites[from].name.clone();
                let place = if held {
                    "held in the meta-level queue"
                } else {
                    "waiting for a site"
                };
                self.update(b, id, time, |j| {
                    j.site = None;
                    j.cluster = None;
                    j.state = JobState::Accepted.into();
                    j.dispatch_time = None;
                    Some(format!(
                        "{down} is down: withdrawn before it started there, {place}"
                    ))
                });
            }
            // Back in the queue after a co-allocation or a run: said when it was given up.
            Cause::Retried
            | Cause::Requeued
            | Cause::Dependency
            | Cause::Waited
            | Cause::Released
            | Cause::Restored => {}
        }
    }

    /// Every site committed job `id`'s co-allocation: the job gets its fragments and is sent.
    fn split_agreed(
        &mut self,
        b: &mut Batch,
        time: i64,
        id: u64,
        start: i64,
        rounds: u32,
        fragments: &[gridsched_core::grid::Fragment],
    ) {
        self.count_coallocation("committed");
        let shown: Vec<v1::Fragment> = fragments
            .iter()
            .map(|f| v1::Fragment {
                site: self.sites[f.site].name.clone(),
                processors: f.procs,
                reservation: f.reservation.0,
                state: JobState::Dispatched.into(),
                estimate_s: f.length,
                overhead_pct: f.overhead_pct,
                ..Default::default()
            })
            .collect();
        let detail = format!(
            "co-allocated over {} from {start} ({rounds} round{} of holds); fragments sent",
            self.site_list(fragments.iter().map(|f| (f.site, f.procs))),
            if rounds == 1 { "" } else { "s" }
        );
        b.held.extend(fragments.iter().map(|f| f.reservation.0));
        b.send_fragments.push(id);
        self.update(b, id, time, |j| {
            j.fragments = shown;
            j.state = JobState::Dispatched.into();
            j.dispatch_time = Some(time);
            Some(detail)
        });
    }

    /// A job of the runner's whose run failed goes back to it, as a new run.
    pub(super) fn requeue(&mut self, b: &mut Batch, time: i64, id: u64) {
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        let spec = job.spec.clone().unwrap_or_default();
        let (priority, submit) = (job.priority, job.submit_time.unwrap_or(time));
        let Ok(model) = self.decider.job(&spec, id, submit) else {
            return;
        };
        let input = Input::Requeue {
            job: model,
            priority: super::core_priority(priority),
        };
        self.drive(b, time, input);
    }

    /// Whether the runner has job `id`.
    pub fn in_runner(&self, id: u64) -> bool {
        self.decider.runner().contains(JobId(id))
    }

    /// Whether job `id` waits at the meta level (for a site, in the strategy's queue, or for a
    /// retry of its co-allocation), as the runner has it.
    pub fn waits(&self, id: u64) -> bool {
        self.decider.runner().waits(JobId(id))
    }
}
