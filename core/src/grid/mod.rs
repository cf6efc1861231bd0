//! The grid runner: the meta-scheduler's whole decision sequence, shared by both clocks, the grid
//! level's twin of the cluster runner ([`crate::runner`]). gridsim drives it in virtual time and
//! the live meta-scheduler in real time; both feed it the same [`Input`]s with the time they happen
//! at and carry out the same [`Effect`]s, so a grid decision made live is the one the simulator
//! makes from the same inputs. Nothing in it reads a clock or does I/O.
//!
//! What it owns (Pasquali, thesis §3.1 and D4: the Meta-Scheduler classifies every job into a
//! priority and dispatches it to a cluster; Streit, thesis §6.3–§6.4: the grid scheduler may hold
//! jobs in its own queue and split a job over several sites, whose fragments start together):
//!
//! * **admission** of what needs the grid's state: a job that is invalid, or that no site can
//!   ever run, is refused with a typed reason;
//! * **classification** ([`Classify`]) and **dispatch** by the strategy of the registry, with the
//!   sites a job may not go to hidden from it (a site's estimate limit, the machines of its
//!   inputs, its advance reservation's site, the site it is being withdrawn from);
//! * the **meta-level queue** of strategies that hold jobs, and its release passes;
//! * **co-allocation** of split jobs: the two-phase protocol of [`CoAllocation`] (holds at each
//!   site's earliest start, commit, send), the reservation ids of its holds, a given-up
//!   co-allocation dispatched again after [`CoallocationRules::retry_after`], and a job refused
//!   after [`CoallocationRules::max_refused`] co-allocations in a row refused by a site;
//! * **sites going down and up**, decided here from the time the driver gives: a site whose link
//!   has been down for [`GridSettings::site_down_after_ms`] receives no new job, and the jobs it
//!   has not started (not yet [`Input::Claimed`]) are dispatched again elsewhere;
//! * **dependencies** ([`crate::model::Dependency`], Slurm's semantics): a job waits in the grid
//!   until the jobs it names have started or ended as it asks, and leaves never started when they
//!   cannot;
//! * **job arrays** ([`crate::model::ArraySpec`], Slurm's `--array`): an array is admitted and
//!   classified once, then releases its tasks, each a job of its own, at most `%N` out at once;
//! * **workflows** ([`crate::model::Workflow`], HTCondor DAGMan's semantics): admitted whole,
//!   each node released as a job once its parents completed, with retries, an abort condition
//!   and the rescue of what completed;
//! * the strategy's **bookkeeping of ends**: a job (or a split job's last fragment) reported
//!   ended, a job a site refused or that came back.
//!
//! Ordering. Effects come out in the order decided. A driver that answers an effect at once (the
//! simulator asks its cluster runners for holds in the same instant) feeds the answer back before
//! carrying out the next effect of the same batch, depth first, so that one job's co-allocation
//! completes before the next job of a release pass goes to its site.

mod admit;
mod arrays;
mod coallocate;
mod config;
mod depend;
pub mod dependency_cases;
mod ends;
mod io;
mod links;
mod place;
pub mod replay;
mod reservations;
mod restore;
#[cfg(test)]
mod share_cases;
#[cfg(test)]
pub(crate) mod tests;
#[cfg(test)]
mod transfer_cases;
mod workflows;

pub use admit::{Field, Kind, Refusal};
pub use arrays::{ArrayStatus, TASKS_PER_INPUT, Tally};
pub use coallocate::MAX_REFUSED;
pub use config::{
    Classify, CoallocationRules, GridConfig, GridConfigError, GridSettings, SiteSpec,
};
pub use io::{Cause, Effect, Fragment, GridError, Input, Restored};
pub use links::SiteLinks;
pub use place::{Candidate, Decision, Explanation, Placer};
pub use reservations::{
    KEEP_ENDED_S, Reservation, ReservationAnswer, ReservationRequest, Standing,
};
pub use workflows::{NodeState, WorkflowStatus};

use crate::classify::{Classification, Classifier};
use crate::dispatch::{Dispatcher, Priority, Transfers};
use crate::fairshare::{ShareStanding, Shares, UsageState};
use crate::model::{ClusterId, Job, JobId, Outcome, ReservationId, Time};
use coallocate::Coalloc;
use rustc_hash::{FxHashMap, FxHashSet};

/// Where an open job is.
#[derive(Clone, Debug)]
enum At {
    /// Waiting for a site that is up to take it.
    Unplaced,
    /// In the strategy's own queue.
    Held,
    /// Its co-allocation was given up; dispatched again on [`Input::Retry`].
    Retrying,
    /// Sent to a site; `claimed` once it may no longer be withdrawn from there.
    Site { site: usize, claimed: bool },
    /// Its co-allocation is under way.
    Coallocating(Box<Coalloc>),
    /// Running split: its fragments (site, reservation, ended).
    Split(Vec<(usize, ReservationId, bool)>),
    /// Started split at once on these sites ([`GridSettings::splits_at_once`]).
    SplitAtOnce(Vec<usize>),
    /// Waiting for its dependency.
    Blocked,
    /// Its dependency is met; dispatched on [`Input::Retry`] when its delay has passed.
    Deferred,
    /// An array releasing its tasks.
    Array,
    /// Held by a running limit of its owner's association (fair share's `max_jobs`,
    /// `max_procs`); dispatched once the limit lets it go.
    Limited,
}

impl At {
    /// Waiting at the meta level.
    fn waits(&self) -> bool {
        matches!(
            self,
            At::Unplaced | At::Held | At::Retrying | At::Blocked | At::Deferred | At::Limited
        )
    }

    /// Whether the job has begun running (as far as the grid knows: claimed at its site, or
    /// its fragments sent into their reservations).
    fn started(&self) -> bool {
        match self {
            At::Site { claimed, .. } => *claimed,
            At::Split(_) | At::SplitAtOnce(_) => true,
            _ => false,
        }
    }
}

/// A job in the grid.
#[derive(Clone, Debug)]
struct Open {
    job: Job,
    priority: Priority,
    only: Option<usize>,
    at: At,
    /// When its run began (claimed at its site, or its fragments sent): charged to its owner's
    /// fair share from then to its end.
    began: Option<Time>,
    /// Counted against its owner's running limits (past them at a dispatch, until it leaves).
    out: bool,
    /// Its heuristics, to weigh again with its owner's factor at each fair-share
    /// recalculation while it waits (`None`: its priority stays).
    classified: Option<Classification>,
    /// The last recalculation that charged its run so far (its end charges the rest).
    charged_to: Option<Time>,
}

impl Open {
    /// Where the part of its run, begun at `began`, not yet charged starts (the last
    /// recalculation, or its beginning).
    fn uncharged_from(&self, began: Time) -> Time {
        self.charged_to.map_or(began, |c| c.max(began))
    }
}

/// The grid runner.
#[derive(Debug)]
pub struct GridRunner {
    /// The strategy and what it sees of the grid.
    placer: Placer,
    classify: Classify,
    settings: GridSettings,
    /// The open jobs (hashed: a sorted map shifts its large entries at every removal; the
    /// passes that need id order sort).
    jobs: FxHashMap<JobId, Open>,
    refused_in_a_row: FxHashMap<JobId, u32>,
    last_reservation: u64,
    links: SiteLinks,
    /// The grid's advance reservations.
    reservations: reservations::Book,
    /// The jobs waiting for others.
    deps: depend::Book,
    /// Split jobs a fragment of which ended badly.
    failed_fragments: FxHashSet<JobId>,
    /// The arrays releasing their tasks.
    arrays: arrays::Book,
    /// The workflows releasing their nodes.
    workflows: workflows::Book,
    /// The fair-share book, when the grid keeps one.
    shares: Option<Shares>,
    /// The jobs held by a running limit, by id.
    limited: std::collections::BTreeSet<JobId>,
    /// A job counted against a running limit left since the held ones were last looked at.
    limit_freed: bool,
    /// The next fair-share recalculation ([`crate::fairshare::FairShareConfig::recalc_period`]).
    next_recalc: Option<Time>,
}

impl GridRunner {
    /// A runner over `sites` (site `i` is cluster `ClusterId(i)` of the dispatcher).
    pub fn new(
        sites: Vec<SiteSpec>,
        dispatcher: Box<dyn Dispatcher>,
        classify: Classify,
        settings: GridSettings,
    ) -> GridRunner {
        let links = SiteLinks::new(sites.len(), settings.site_down_after_ms);
        // Checked by the drivers at their door ([`GridRunner::from_config`]).
        let shares = settings.fairshare.clone().and_then(|c| Shares::new(c).ok());
        let mut placer = Placer::new(sites, dispatcher);
        // The drivers check the network against the sites at their door (Network::check).
        let network = (settings.network.clone()).filter(|n| n.check(placer.sites.len()).is_ok());
        placer.grid.transfers = Transfers::new(network, settings.data_blind);
        GridRunner {
            placer,
            classify,
            settings,
            jobs: FxHashMap::default(),
            refused_in_a_row: FxHashMap::default(),
            last_reservation: 0,
            links,
            reservations: reservations::Book::default(),
            deps: depend::Book::default(),
            failed_fragments: FxHashSet::default(),
            arrays: arrays::Book::default(),
            workflows: workflows::Book::default(),
            shares,
            limited: std::collections::BTreeSet::new(),
            limit_freed: false,
            next_recalc: None,
        }
    }

    /// A runner built from plain data (the strategy and classifier by their registry names).
    pub fn from_config(cfg: &GridConfig) -> Result<GridRunner, GridConfigError> {
        let classify = match cfg.classifier {
            Some(c) => Classify::By(Box::new(Classifier::new(c)?)),
            None => Classify::Fixed(1),
        };
        if let Some(f) = &cfg.settings.fairshare {
            Shares::new(f.clone())?;
        }
        let mut runner = GridRunner::new(
            cfg.sites.clone(),
            cfg.dispatch.build(),
            classify,
            cfg.settings.clone(),
        );
        if let Some(s) = &cfg.classifier_state {
            runner.restore_classifier(s);
        }
        if let (Some(u), Some(shares)) = (&cfg.usage_state, runner.shares.as_mut()) {
            shares.restore(u.clone());
        }
        Ok(runner)
    }

    /// Handles `input` at `now`, appending what to do to `out`.
    pub fn on(&mut self, now: Time, input: Input, out: &mut Vec<Effect>) -> Result<(), GridError> {
        // A budget cleared by the reset period may let held jobs go.
        if self.shares.as_mut().is_some_and(|s| s.reset_if_due(now)) {
            self.limit_freed = true;
        }
        if self.next_recalc.is_none() {
            self.next_recalc = (self.shares.as_ref())
                .map(Shares::recalc_period)
                .filter(|&p| p > 0)
                .map(|p| now + p);
        }
        self.handle(now, input, out)?;
        self.settle(now, out);
        Ok(())
    }

    fn handle(&mut self, now: Time, input: Input, out: &mut Vec<Effect>) -> Result<(), GridError> {
        let site_ok = |s: usize| {
            if s < self.placer.sites.len() {
                Ok(())
            } else {
                Err(GridError::UnknownSite(s))
            }
        };
        match input {
            Input::Submit { job, priority } => {
                if self.jobs.contains_key(&job.id)
                    || self.arrays.owns(job.id)
                    || self.workflows.owns(job.id)
                {
                    return Err(GridError::DuplicateJob(job.id));
                }
                self.submit(now, job, priority, out);
            }
            Input::RestoreFollowed { array, spec, done } => {
                self.restore_followed(array, spec, &done);
            }
            Input::SubmitWorkflow { id, workflow } => {
                if self.jobs.contains_key(&id) || self.workflows.owns(id) {
                    return Err(GridError::DuplicateJob(id));
                }
                self.submit_workflow(now, id, *workflow, out);
            }
            Input::RestoreWorkflow {
                id,
                workflow,
                nodes,
                stopping,
            } => {
                if self.jobs.contains_key(&id) || self.workflows.owns(id) {
                    return Err(GridError::DuplicateJob(id));
                }
                self.restore_workflow(now, id, *workflow, nodes, stopping, out);
            }
            Input::Restore { job, priority, at } => {
                match &at {
                    Restored::Waiting | Restored::Array { .. } => {}
                    Restored::Site { site, .. } => site_ok(*site)?,
                    Restored::Split { fragments, .. } => {
                        for f in fragments {
                            site_ok(f.0.cluster.index())?;
                        }
                    }
                }
                if self.jobs.contains_key(&job.id) {
                    return Err(GridError::DuplicateJob(job.id));
                }
                let only = self.reserved_site(&job);
                self.restore(now, job, priority, only, at, out);
            }
            Input::Requeue { job, priority } => {
                if self.jobs.contains_key(&job.id) {
                    return Err(GridError::DuplicateJob(job.id));
                }
                let only = self.reserved_site(&job);
                self.requeue(now, job, priority, only, out);
            }
            Input::Cancel { job } => self.cancel(now, job, out),
            Input::Claimed { job, site } => {
                site_ok(site)?;
                if let Some(Open {
                    at: At::Site { site: s, claimed },
                    ..
                }) = self.jobs.get_mut(&job)
                    && *s == site
                {
                    *claimed = true;
                    self.began(now, job);
                }
            }
            Input::Ended {
                job,
                site,
                outcome,
                exit,
            } => {
                site_ok(site)?;
                self.workflows.exit(job, site, exit);
                match self.jobs.get(&job).map(|o| &o.at) {
                    Some(At::Site { site: s, .. }) if *s == site => {
                        self.run_ended(now, job, Some(outcome));
                        self.placer.dispatcher.job_ended(now, job, cluster(site));
                    }
                    Some(At::SplitAtOnce(sites)) if sites.contains(&site) => {
                        let first = sites[0];
                        self.run_ended(now, job, Some(outcome));
                        self.placer.dispatcher.job_ended(now, job, cluster(first));
                    }
                    _ => {}
                }
            }
            Input::FragmentEnded {
                job,
                site,
                ok,
                again,
            } => {
                site_ok(site)?;
                self.fragment_ended(now, job, site, ok, again, out);
            }
            Input::Outputs { job, files } => self.workflows.wrote(job, files),
            Input::Refused { job, site, why } => {
                site_ok(site)?;
                self.refused(now, job, site, why, out);
            }
            Input::Loads { loads } => {
                for (i, load) in loads.into_iter().enumerate() {
                    self.placer.set_load(i, load);
                }
            }
            Input::Load { site, load } => {
                site_ok(site)?;
                self.placer.set_load(site, load);
            }
            Input::Link {
                site,
                reachable,
                at_ms,
            } => {
                site_ok(site)?;
                self.link(now, site, reachable, at_ms, out);
            }
            Input::Held {
                job,
                fragment,
                site,
                reservation,
                answer,
            } => {
                site_ok(site)?;
                self.held_answer(now, job, fragment, site, reservation, answer, out);
            }
            Input::Committed {
                job,
                fragment,
                answer,
            } => self.committed(now, job, fragment, answer, out),
            Input::Retry { job } => match self.jobs.get(&job).map(|o| &o.at) {
                Some(At::Retrying) => self.dispatch(now, job, Cause::Retried, out),
                Some(At::Deferred) => {
                    self.set_at(job, At::Unplaced);
                    self.dispatch(now, job, Cause::Dependency, out);
                }
                Some(At::Array) => self.release_tasks(now, job, out),
                Some(_) => {}
                None => {
                    self.workflow_retry(now, job, out);
                }
            },
            Input::Release => self.release(now, out),
            Input::Reservations { last } => self.set_last_reservation(last),
            Input::Reserve { request, at_ms } => self.reserve(now, at_ms, request, out),
            Input::ReservationAnswer {
                reservation,
                answer,
            } => self.reservation_answer(reservation, answer, out),
            Input::CancelReservation { reservation, at_ms } => {
                self.cancel_reservation(now, at_ms, reservation, out);
            }
            Input::TakenBack { reservation, gone } => self.taken_back(reservation, gone, out),
            Input::RestoreReservation { reservation } => {
                site_ok(reservation.site)?;
                self.restore_reservation(reservation);
            }
            Input::Tick { at_ms } => {
                // A budget refilled by decay may let a held job go without any job ending.
                self.limit_freed |= self.shares.as_ref().is_some_and(|s| s.refills());
                self.tick(now, at_ms, out);
                self.reservations_tick(now, at_ms, out);
                self.recalc(now, out);
            }
        }
        Ok(())
    }

    /// Admits, classifies and dispatches a new job.
    fn submit(
        &mut self,
        now: Time,
        mut job: Job,
        priority: Option<Priority>,
        out: &mut Vec<Effect>,
    ) {
        let only = match self.admit(now, &job) {
            Ok(only) => only,
            Err(refusal) => {
                out.push(Effect::Refuse {
                    job: job.id,
                    why: format!("job {}: {refusal}", job.id),
                    refusal: Some(refusal),
                });
                return;
            }
        };
        let id = job.id;
        let mut classified = None;
        let priority = match priority {
            Some(p) => p,
            None => {
                let (p, explained) = match &mut self.classify {
                    Classify::Fixed(p) => (*p, None),
                    Classify::With(f) => (f(&job), None),
                    Classify::By(c) => {
                        let weighed = c.config().weights.fairshare > 0.0;
                        let fairshare = (self.shares.as_mut().filter(|_| weighed))
                            .and_then(|s| s.standing(job.user, now))
                            .map(|s| s.factor);
                        let e = c.classify_with(&job, fairshare);
                        classified = Some(e);
                        (e.priority, self.settings.explain.then_some(e))
                    }
                };
                if self.settings.explain {
                    out.push(Effect::Classified {
                        job: id,
                        priority: p,
                        explained,
                    });
                }
                p
            }
        };
        let array = job.array.take();
        let corr = match array {
            Some(_) => arrays::take_corr(&mut job),
            None => Vec::new(),
        };
        self.enter(job, priority, only, At::Unplaced);
        if self.recalculates()
            && let Some(o) = self.jobs.get_mut(&id)
        {
            o.classified = classified;
        }
        if let Some(spec) = array {
            self.enter_array(id, *spec, corr);
        }
        self.enter_dependency(now, id, Cause::Submitted, out);
    }

    /// Job `id` began running at `now` (claimed at its site, or its fragments sent).
    fn began(&mut self, now: Time, id: JobId) {
        if let Some(o) = self.jobs.get_mut(&id) {
            o.began.get_or_insert(now);
        }
        self.deps.started(id);
        if let Some(t) = self.jobs.get(&id).and_then(|o| o.job.task) {
            self.task_began(now, t.array);
        }
    }

    /// A release pass of the strategy's queue.
    fn release(&mut self, now: Time, out: &mut Vec<Effect>) {
        if self.placer.held() == 0 {
            return;
        }
        let mut released = Vec::new();
        self.placer.release(now, &mut released);
        for r in released {
            let held = self
                .jobs
                .get(&r.job)
                .is_some_and(|o| matches!(o.at, At::Held));
            if !held {
                // Not ours (a driver restored the strategy apart): forgotten.
                self.placer.dispatcher.job_returned(now, r.job, cluster(0));
                continue;
            }
            match r.placement {
                crate::dispatch::Placement::Cluster(c) if c.index() < self.placer.sites.len() => {
                    if let Some(o) = self.jobs.get(&r.job) {
                        self.placer.grid.transfers.placed(&o.job, c, now);
                    }
                    let explanation = self
                        .settings
                        .explain
                        .then(|| self.placer.released(now, Some(c.index()), &r.reason));
                    self.set_at(
                        r.job,
                        At::Site {
                            site: c.index(),
                            claimed: false,
                        },
                    );
                    out.push(Effect::Place {
                        job: r.job,
                        site: c.index(),
                        cause: Cause::Released,
                        explanation,
                    });
                }
                crate::dispatch::Placement::Split(parts) => {
                    let explanation = self
                        .settings
                        .explain
                        .then(|| self.placer.released(now, None, &r.reason));
                    self.co_allocate(now, r.job, parts, Some(&r.reason), explanation, out);
                }
                other => {
                    self.placer.dispatcher.job_returned(now, r.job, cluster(0));
                    self.refuse(r.job, format!("job {}: released as {other:?}", r.job), out);
                }
            }
        }
    }

    /// A job enters the grid (or comes back to it) at `at`.
    fn enter(&mut self, job: Job, priority: Priority, only: Option<usize>, at: At) {
        let open = Open {
            job,
            priority,
            only,
            at,
            began: None,
            out: false,
            classified: None,
            charged_to: None,
        };
        if let Some(s) = self.shares.as_mut() {
            s.count_in_grid(open.job.user, 1);
        }
        self.jobs.insert(open.job.id, open);
    }

    /// Sets where an open job is.
    fn set_at(&mut self, id: JobId, at: At) {
        if let Some(o) = self.jobs.get_mut(&id) {
            o.at = at;
        }
    }

    /// The job leaves the grid, refused.
    fn refuse(&mut self, id: JobId, why: String, out: &mut Vec<Effect>) {
        self.remove(id, Some(Outcome::Refused));
        out.push(Effect::Refuse {
            job: id,
            why,
            refusal: None,
        });
    }

    /// The site of the advance reservation `job` runs in, when the grid has it.
    fn reserved_site(&self, job: &Job) -> Option<usize> {
        self.reservations.get(job.reservation?).map(|r| r.site)
    }

    /// Removes an open job: it left the grid with `outcome` (its dependants are told), or,
    /// `None`, it will come back ([`Input::Requeue`]).
    fn remove(&mut self, id: JobId, outcome: Option<Outcome>) -> Option<Open> {
        self.refused_in_a_row.remove(&id);
        self.failed_fragments.remove(&id);
        let open = self.jobs.remove(&id)?;
        if let Some(s) = self.shares.as_mut() {
            s.count_in_grid(open.job.user, -1);
            if open.out {
                s.count_out(open.job.user, open.job.procs, open.job.estimate, -1);
                self.limit_freed = true;
            }
        }
        self.limited.remove(&id);
        if matches!(open.at, At::Blocked) {
            self.deps.forget(id);
        }
        if let Some(o) = outcome {
            self.deps.left(id, o);
            if let Some(t) = open.job.task {
                self.task_left(t, o);
            }
            self.workflows.left(id, o);
        }
        Some(open)
    }

    /// Removes job `id` whose run ended (or was cancelled) at `now` ([`GridRunner::remove`]),
    /// charging the run, when it began, to its owner's fair share.
    fn run_ended(&mut self, now: Time, id: JobId, outcome: Option<Outcome>) -> Option<Open> {
        let o = self.remove(id, outcome)?;
        if let (Some(shares), Some(began)) = (self.shares.as_mut(), o.began) {
            let j = &o.job;
            shares.charge(
                j.user,
                j.procs,
                &j.licences,
                now - o.uncharged_from(began),
                now,
            );
        }
        Some(o)
    }

    /// Whether waiting jobs' priorities are weighed again with their owners' fair-share factors
    /// every recalculation period.
    fn recalculates(&self) -> bool {
        let weighed = self
            .classifier()
            .is_some_and(|c| c.config().weights.fairshare > 0.0);
        weighed && (self.shares.as_ref()).is_some_and(|s| s.recalc_period() > 0)
    }

    /// The heuristics of a job classified before a restart or a requeue, when they can be had
    /// again ([`Classifier::without_deadline`]).
    fn classified_again(&mut self, id: JobId) {
        if !self.recalculates() {
            return;
        }
        let Some(c) = self.classifier() else { return };
        let again = self.jobs.get(&id).and_then(|o| c.without_deadline(&o.job));
        if let Some(o) = self.jobs.get_mut(&id) {
            o.classified = again;
        }
    }

    /// The fair-share recalculation, once a period (Slurm's `PriorityCalcPeriod`): every running
    /// job is charged what it used since the last one, then every job that has not started (at
    /// the meta level or queued at its site) has its priority weighed again with its owner's
    /// factor now. Jobs are visited in id order (the charges are sums of floating-point numbers).
    fn recalc(&mut self, now: Time, out: &mut Vec<Effect>) {
        if self.next_recalc.is_none_or(|t| now < t) {
            return;
        }
        let Some(shares) = self.shares.as_mut() else {
            return;
        };
        self.next_recalc = Some(now + shares.recalc_period());
        let mut ids: Vec<JobId> = self.jobs.keys().copied().collect();
        ids.sort_unstable();
        for id in &ids {
            let Some(o) = self.jobs.get_mut(id) else {
                continue;
            };
            let Some(began) = o.began else { continue };
            let from = o.uncharged_from(began);
            let j = &o.job;
            shares.charge(j.user, j.procs, &j.licences, now - from, now);
            o.charged_to = Some(now);
        }
        shares.charged_to(now);
        let mut weighed = Vec::new();
        if let Classify::By(c) = &self.classify {
            for id in ids {
                let Some(o) = self.jobs.get_mut(&id) else {
                    continue;
                };
                let site = match o.at {
                    At::Site {
                        site,
                        claimed: false,
                    } => Some(site),
                    ref at if at.waits() => None,
                    _ => continue,
                };
                let Some(before) = o.classified else { continue };
                let factor = shares.standing(o.job.user, now).map(|s| s.factor);
                let after = c.reweigh(&before, factor);
                o.classified = Some(after);
                o.priority = after.priority;
                weighed.push((id, site, after.priority));
            }
        }
        out.push(Effect::Recalculated { jobs: weighed });
    }

    /// Gives back the room a burst of jobs left in the runner's maps once they have left
    /// ([`crate::structures::Shrink`]); decides nothing. The services call it after their
    /// sweeps, so that memory follows the live work.
    pub fn compact(&mut self) {
        use crate::structures::Shrink;
        self.jobs.shrink_if_sparse();
        self.refused_in_a_row.shrink_if_sparse();
        self.failed_fragments.shrink_if_sparse();
        self.deps.shrink();
        self.arrays.shrink();
        self.workflows.shrink();
        self.placer.dispatcher.compact();
    }

    /// When the next fair-share recalculation is due, while jobs are in the grid (a driver in
    /// virtual time gives the runner an [`Input::Tick`] then).
    pub fn next_recalc(&self) -> Option<Time> {
        self.next_recalc.filter(|_| !self.jobs.is_empty())
    }

    /// Whether job `id` is in the grid (waiting at the meta level, co-allocating, or at a site
    /// and not reported ended).
    pub fn contains(&self, id: JobId) -> bool {
        self.jobs.contains_key(&id)
    }

    /// An open job and its priority.
    pub fn job(&self, id: JobId) -> Option<(&Job, Priority)> {
        self.jobs.get(&id).map(|o| (&o.job, o.priority))
    }

    /// Jobs waiting at the meta level: for a site, in the strategy's queue, or for a retry.
    pub fn waiting(&self) -> usize {
        self.jobs.values().filter(|o| o.at.waits()).count()
    }

    /// Whether job `id` waits at the meta level: for a site, in the strategy's queue, or for a
    /// retry.
    pub fn waits(&self, id: JobId) -> bool {
        self.jobs.get(&id).is_some_and(|o| o.at.waits())
    }

    /// The strategy and what it sees of the grid (its holds, its description, the sites, which
    /// are up, whether it reads their load, its Load / Count arrays).
    pub fn placer(&self) -> &Placer {
        &self.placer
    }

    /// How many jobs the strategy holds at the meta level.
    pub fn held(&self) -> usize {
        self.placer.held()
    }

    /// The classifier's state, to write with the jobs it classified (empty without one).
    pub fn classifier_snapshot(&self) -> Vec<i64> {
        match &self.classify {
            Classify::By(c) => c.snapshot(),
            Classify::Fixed(_) | Classify::With(_) => Vec::new(),
        }
    }

    /// The classifier, when jobs are classified by one.
    pub fn classifier(&self) -> Option<&Classifier> {
        match &self.classify {
            Classify::By(c) => Some(c),
            Classify::Fixed(_) | Classify::With(_) => None,
        }
    }

    /// The classifier, to feed it jobs classified before a restart.
    pub fn classifier_mut(&mut self) -> Option<&mut Classifier> {
        match &mut self.classify {
            Classify::By(c) => Some(c),
            Classify::Fixed(_) | Classify::With(_) => None,
        }
    }

    /// Continues classifying from a snapshot.
    pub fn restore_classifier(&mut self, snapshot: &[i64]) {
        if let Classify::By(c) = &mut self.classify {
            c.restore(snapshot);
        }
    }

    /// The fair-share book's usage, to continue from after a restart
    /// ([`GridConfig::usage_state`]); `None` when the grid keeps no fair share.
    pub fn usage_state(&self) -> Option<&UsageState> {
        self.shares.as_ref().map(Shares::state)
    }

    /// Continues the fair share from a usage state ([`usage_state`](Self::usage_state)); nothing
    /// when the grid keeps no fair share.
    pub fn restore_usage(&mut self, state: UsageState) {
        if let Some(s) = self.shares.as_mut() {
            s.restore(state);
        }
    }

    /// User `user`'s fair-share standing at `now`, when the grid keeps a fair share and the
    /// user has an account.
    pub fn standing(&mut self, user: crate::model::UserId, now: Time) -> Option<ShareStanding> {
        self.shares.as_mut()?.standing(user, now)
    }

    /// The last reservation id given to a hold.
    pub fn last_reservation(&self) -> u64 {
        self.last_reservation
    }

    /// Continues reservation ids after `last` (ids shared with the grid's advance reservations).
    pub fn set_last_reservation(&mut self, last: u64) {
        self.last_reservation = self.last_reservation.max(last);
    }
}

/// The dispatcher's cluster of site `i`.
fn cluster(i: usize) -> ClusterId {
    ClusterId(i as u32)
}
