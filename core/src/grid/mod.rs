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
//! * the strategy's **bookkeeping of ends**: a job (or a split job's last fragment) reported
//!   ended, a job a site refused or that came back.
//!
//! Ordering. Effects come out in the order decided. A driver that answers an effect at once (the
//! simulator asks its cluster runners for holds in the same instant) feeds the answer back before
//! carrying out the next effect of the same batch, depth first, so that one job's co-allocation
//! completes before the next job of a release pass goes to its site.

mod coallocate;
mod links;
mod place;
#[cfg(test)]
mod tests;

pub use coallocate::MAX_REFUSED;
pub use links::SiteLinks;
pub use place::{Candidate, Decision, Explanation, Placer};

use crate::classify::{Classification, Classifier, ClassifierConfig, ClassifierError};
use crate::dispatch::{
    ClusterArrays, ClusterCaps, ClusterLoad, DispatchConfig, Dispatcher, MultiSiteConfig, Part,
    Priority,
};
use crate::model::{ClusterId, Duration, Job, JobId, MachineId, ReservationId, Time};
use coallocate::Coalloc;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// One site of the grid as the grid runner sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteSpec {
    /// Its name (for the explanations).
    pub name: String,
    /// Its static capabilities; its cluster id is its index.
    pub caps: ClusterCaps,
    /// The longest estimate it runs, when it limits them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_estimate: Option<Duration>,
    /// Its machines, when a job's inputs may be pinned to a machine (such a job goes only to the
    /// site holding it); `None`: inputs are not checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machines: Option<Vec<MachineId>>,
}

/// How split jobs are co-allocated.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoallocationRules {
    /// The WAN overhead p (one value, or per pair of sites) and the adaptive rule.
    pub multi_site: MultiSiteConfig,
    /// Rounds of holds before a co-allocation is given up.
    pub rounds: u32,
    /// Seconds after which a given-up co-allocation's job is dispatched again.
    #[serde(default = "one")]
    pub retry_after: Duration,
    /// Co-allocations of one job in a row that a site refused before the job is refused.
    #[serde(default = "ten")]
    pub max_refused: u32,
}

fn one() -> Duration {
    1
}

fn ten() -> u32 {
    coallocate::MAX_REFUSED
}

impl CoallocationRules {
    /// Rules with the default retry delay (1 s) and refusal limit ([`coallocate::MAX_REFUSED`]).
    pub fn new(multi_site: MultiSiteConfig, rounds: u32) -> CoallocationRules {
        CoallocationRules {
            multi_site,
            rounds,
            retry_after: one(),
            max_refused: ten(),
        }
    }
}

/// The grid runner's settings.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GridSettings {
    /// How split jobs are co-allocated; `None`: a split is refused (one site per job).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coallocation: Option<CoallocationRules>,
    /// A split starts at once on its parts, without holds ([`Effect::StartSplit`]): the sites are
    /// bare machines whose occupancy the strategy tracks itself, as in the multi-site study
    /// (Streit, thesis §6). Takes precedence over `coallocation`.
    #[serde(default)]
    pub splits_at_once: bool,
    /// Explain every classification and dispatch (the live `explain`); off in simulations.
    #[serde(default)]
    pub explain: bool,
    /// A site whose link has been down this long is marked down; `None`: sites never go down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site_down_after_ms: Option<u64>,
}

/// Everything a grid runner is built from, as plain data (the header of an input log).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GridConfig {
    /// The sites, in cluster order.
    pub sites: Vec<SiteSpec>,
    /// The dispatch strategy.
    pub dispatch: DispatchConfig,
    /// The classifier; `None`: every job has priority 1 unless its submission gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classifier: Option<ClassifierConfig>,
    /// The settings.
    #[serde(default)]
    pub settings: GridSettings,
}

/// How submitted jobs get their priority.
#[derive(Clone, Debug)]
pub enum Classify {
    /// Every job the same.
    Fixed(Priority),
    /// The two-level design's classifier (Pasquali, thesis §3.1.1, D4.1).
    By(Box<Classifier>),
    /// A rule of the driver's, from the job alone (tests, what-if studies).
    With(fn(&Job) -> Priority),
}

/// Why a job goes to the site it goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cause {
    /// Dispatched at its submission.
    Submitted,
    /// Placed by a release pass of the meta-level queue.
    Released,
    /// Dispatched again after waiting for a site.
    Waited,
    /// Dispatched again after its co-allocation was given up.
    Retried,
    /// Taken from a site that went down before it started there.
    Withdrawn {
        /// The site it left.
        from: usize,
    },
}

/// What happens to the grid, with the time it happens at.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Input {
    /// A job enters the grid: classified (unless `priority` is given) and dispatched.
    Submit {
        /// The job.
        job: Job,
        /// Its priority, when already known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        priority: Option<Priority>,
        /// The only site it may go to (its advance reservation's).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        only: Option<usize>,
    },
    /// The user cancelled the job.
    Cancel {
        /// The job.
        job: JobId,
    },
    /// The job started at `site` (or was granted its start there): it stays there.
    Claimed {
        /// The job.
        job: JobId,
        /// The site.
        site: usize,
    },
    /// The job, run whole at `site`, ended there.
    Ended {
        /// The job.
        job: JobId,
        /// The site.
        site: usize,
    },
    /// The fragment of split job `job` at `site` ended; `ok` when it completed.
    FragmentEnded {
        /// The job.
        job: JobId,
        /// The site.
        site: usize,
        /// Whether it completed.
        ok: bool,
    },
    /// `site` refused the job (or its fragment) it was sent: it cannot run it there.
    Refused {
        /// The job.
        job: JobId,
        /// The site.
        site: usize,
        /// The site's reason.
        why: String,
    },
    /// The dynamic state of every site, for the strategies that read it.
    Loads {
        /// Per site.
        loads: Vec<ClusterLoad>,
    },
    /// The dynamic state of one site.
    Load {
        /// The site.
        site: usize,
        /// Its state.
        load: ClusterLoad,
    },
    /// The link to `site` is up or down, at monotonic milliseconds `at_ms`.
    Link {
        /// The site.
        site: usize,
        /// Whether it is reachable.
        reachable: bool,
        /// Monotonic milliseconds.
        at_ms: u64,
    },
    /// The answer to an [`Effect::Hold`]: the start the site holds, or why not.
    Held {
        /// The job.
        job: JobId,
        /// The fragment.
        fragment: usize,
        /// Its site.
        site: usize,
        /// The hold's reservation.
        reservation: ReservationId,
        /// The start held, or the refusal.
        answer: Result<Time, String>,
    },
    /// The answer to an [`Effect::Commit`].
    Committed {
        /// The job.
        job: JobId,
        /// The fragment.
        fragment: usize,
        /// Committed, or why not.
        answer: Result<(), String>,
    },
    /// The retry an [`Effect::GivenUp`] asked for is due.
    Retry {
        /// The job.
        job: JobId,
    },
    /// A release pass of the meta-level queue (drivers send it after each instant's ends and
    /// submissions while [`GridRunner::held`] is not zero).
    Release,
    /// The time passes (monotonic milliseconds): sites whose link stayed down long enough go
    /// down, and the jobs waiting for a site are dispatched again.
    Tick {
        /// Monotonic milliseconds.
        at_ms: u64,
    },
}

/// One fragment of a co-allocated job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fragment {
    /// Its site.
    pub site: usize,
    /// Its processors.
    pub procs: u32,
    /// Its committed reservation there.
    pub reservation: ReservationId,
    /// Its estimate, stretched by the WAN overhead.
    pub length: Duration,
    /// The WAN overhead p applied, percent.
    pub overhead_pct: u32,
}

/// What the driver carries out.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "effect", rename_all = "kebab-case")]
pub enum Effect {
    /// The job was classified (with the details when explaining).
    Classified {
        /// The job.
        job: JobId,
        /// Its priority.
        priority: Priority,
        /// How it was reached.
        #[serde(skip_serializing_if = "Option::is_none")]
        explained: Option<Classification>,
    },
    /// Send the job to `site`.
    Place {
        /// The job.
        job: JobId,
        /// The site.
        site: usize,
        /// Why now.
        cause: Cause,
        /// Why there (when explaining).
        #[serde(skip_serializing_if = "Option::is_none")]
        explanation: Option<Explanation>,
    },
    /// The job waits at the meta level: in the strategy's queue (`held`), or for a site that is
    /// up to take it.
    Wait {
        /// The job.
        job: JobId,
        /// In the strategy's queue.
        held: bool,
        /// Why it waits now.
        cause: Cause,
        /// The dispatch decision (when explaining).
        #[serde(skip_serializing_if = "Option::is_none")]
        explanation: Option<Explanation>,
    },
    /// The job can never run: it leaves the grid.
    Refuse {
        /// The job.
        job: JobId,
        /// Why.
        why: String,
    },
    /// Ask `site` for a tentative hold of `procs` processors for `length` seconds at its
    /// earliest start from `from` on, as reservation `reservation`.
    Hold {
        /// The job.
        job: JobId,
        /// The fragment.
        fragment: usize,
        /// Its site.
        site: usize,
        /// The reservation id.
        reservation: ReservationId,
        /// The earliest acceptable start.
        from: Time,
        /// Seconds held.
        length: Duration,
        /// Processors.
        procs: u32,
    },
    /// Let a hold or a reservation go at `site`.
    LetGo {
        /// The job.
        job: JobId,
        /// The site.
        site: usize,
        /// The reservation.
        reservation: ReservationId,
    },
    /// Commit a hold: the fragment starts at `start`.
    Commit {
        /// The job.
        job: JobId,
        /// The fragment.
        fragment: usize,
        /// Its site.
        site: usize,
        /// The reservation.
        reservation: ReservationId,
        /// The common start.
        start: Time,
    },
    /// Every site committed: send the fragments into their reservations.
    Send {
        /// The job.
        job: JobId,
        /// The common start.
        start: Time,
        /// Rounds of holds it took.
        rounds: u32,
        /// The fragments.
        fragments: Vec<Fragment>,
    },
    /// The co-allocation was given up; the job is dispatched again at `retry_at` (the driver
    /// sends [`Input::Retry`] then), or, `None`, refused ([`Effect::Refuse`] follows).
    GivenUp {
        /// The job.
        job: JobId,
        /// Why.
        why: String,
        /// When to retry.
        retry_at: Option<Time>,
    },
    /// Start split job `job` at once on `parts` ([`GridSettings::splits_at_once`]); it ends with
    /// one [`Input::Ended`] from any of its sites.
    StartSplit {
        /// The job.
        job: JobId,
        /// Its parts.
        parts: Vec<Part>,
    },
    /// Kill the fragment of split job `job` at `site` (another fragment ended badly).
    Kill {
        /// The job.
        job: JobId,
        /// The site.
        site: usize,
        /// Why.
        why: String,
    },
    /// The last fragment of split job `job` ended: the job is over (reported from `site`, its
    /// first fragment's).
    Over {
        /// The job.
        job: JobId,
        /// Its first fragment's site.
        site: usize,
    },
    /// `site` is marked down: it receives no new job.
    SiteDown {
        /// The site.
        site: usize,
    },
    /// `site` is up again.
    SiteUp {
        /// The site.
        site: usize,
    },
}

/// A driver's mistake the runner refuses (nothing is changed).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GridError {
    /// A job id reused while the first job is in the grid.
    #[error("job id {0} is submitted twice")]
    DuplicateJob(JobId),
    /// A site index out of range.
    #[error("site {0} is not a site of the grid")]
    UnknownSite(usize),
}

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
}

/// A job in the grid.
#[derive(Clone, Debug)]
struct Open {
    job: Job,
    priority: Priority,
    only: Option<usize>,
    at: At,
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
    jobs: HashMap<JobId, Open>,
    /// Jobs waiting for a site (a subset of `jobs`), for the redispatch passes.
    unplaced: usize,
    refused_in_a_row: HashMap<JobId, u32>,
    last_reservation: u64,
    links: SiteLinks,
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
        GridRunner {
            placer: Placer::new(sites, dispatcher),
            classify,
            settings,
            jobs: HashMap::new(),
            unplaced: 0,
            refused_in_a_row: HashMap::new(),
            last_reservation: 0,
            links,
        }
    }

    /// A runner built from plain data (the strategy and classifier by their registry names).
    pub fn from_config(cfg: &GridConfig) -> Result<GridRunner, ClassifierError> {
        let classify = match cfg.classifier {
            Some(c) => Classify::By(Box::new(Classifier::new(c)?)),
            None => Classify::Fixed(1),
        };
        Ok(GridRunner::new(
            cfg.sites.clone(),
            cfg.dispatch.build(),
            classify,
            cfg.settings.clone(),
        ))
    }

    /// Handles `input` at `now`, appending what to do to `out`.
    pub fn on(&mut self, now: Time, input: Input, out: &mut Vec<Effect>) -> Result<(), GridError> {
        let site_ok = |s: usize| {
            if s < self.placer.sites.len() {
                Ok(())
            } else {
                Err(GridError::UnknownSite(s))
            }
        };
        match input {
            Input::Submit {
                job,
                priority,
                only,
            } => {
                if let Some(s) = only {
                    site_ok(s)?;
                }
                if self.jobs.contains_key(&job.id) {
                    return Err(GridError::DuplicateJob(job.id));
                }
                self.submit(now, job, priority, only, out);
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
                }
            }
            Input::Ended { job, site } => {
                site_ok(site)?;
                match self.jobs.get(&job).map(|o| &o.at) {
                    Some(At::Site { site: s, .. }) if *s == site => {
                        self.jobs.remove(&job);
                        self.placer.dispatcher.job_ended(now, job, cluster(site));
                    }
                    Some(At::SplitAtOnce(sites)) if sites.contains(&site) => {
                        let first = sites[0];
                        self.jobs.remove(&job);
                        self.placer.dispatcher.job_ended(now, job, cluster(first));
                    }
                    _ => {}
                }
            }
            Input::FragmentEnded { job, site, ok } => {
                site_ok(site)?;
                self.fragment_ended(now, job, site, ok, out);
            }
            Input::Refused { job, site, why } => {
                site_ok(site)?;
                self.refused(now, job, site, why, out);
            }
            Input::Loads { loads } => {
                if let Some(l) = self.placer.grid.load.as_mut() {
                    for (i, load) in loads.into_iter().enumerate().take(l.len()) {
                        l[i] = load;
                    }
                }
            }
            Input::Load { site, load } => {
                site_ok(site)?;
                if let Some(l) = self.placer.grid.load.as_mut() {
                    l[site] = load;
                }
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
            Input::Retry { job } => {
                if let Some(open) = self.jobs.get(&job)
                    && matches!(open.at, At::Retrying)
                {
                    self.dispatch(now, job, Cause::Retried, out);
                }
            }
            Input::Release => self.release(now, out),
            Input::Tick { at_ms } => self.tick(now, at_ms, out),
        }
        Ok(())
    }

    /// Admits, classifies and dispatches a new job.
    fn submit(
        &mut self,
        now: Time,
        job: Job,
        priority: Option<Priority>,
        only: Option<usize>,
        out: &mut Vec<Effect>,
    ) {
        if let Err(e) = job.validate() {
            out.push(Effect::Refuse {
                job: job.id,
                why: format!("job {}: {e}", job.id),
            });
            return;
        }
        let id = job.id;
        let priority = match priority {
            Some(p) => p,
            None => {
                let (p, explained) = match &mut self.classify {
                    Classify::Fixed(p) => (*p, None),
                    Classify::With(f) => (f(&job), None),
                    Classify::By(c) if self.settings.explain => {
                        let e = c.classify_explained(&job);
                        (e.priority, Some(e))
                    }
                    Classify::By(c) => (c.classify(&job), None),
                };
                if self.settings.explain || explained.is_some() {
                    out.push(Effect::Classified {
                        job: id,
                        priority: p,
                        explained,
                    });
                }
                p
            }
        };
        self.jobs.insert(
            id,
            Open {
                job,
                priority,
                only,
                at: At::Unplaced,
            },
        );
        self.unplaced += 1;
        self.dispatch(now, id, Cause::Submitted, out);
    }

    /// A release pass of the strategy's queue.
    fn release(&mut self, now: Time, out: &mut Vec<Effect>) {
        if self.placer.dispatcher.held() == 0 {
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
                    let explanation = self
                        .settings
                        .explain
                        .then(|| self.placer.released(now, c.index(), &r.reason));
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
                    self.co_allocate(now, r.job, parts, Some(&r.reason), out);
                }
                other => {
                    self.placer.dispatcher.job_returned(now, r.job, cluster(0));
                    self.refuse(r.job, format!("job {}: released as {other:?}", r.job), out);
                }
            }
        }
    }

    /// Sets where an open job is, keeping the count of unplaced jobs.
    fn set_at(&mut self, id: JobId, at: At) {
        if let Some(o) = self.jobs.get_mut(&id) {
            let was = matches!(o.at, At::Unplaced);
            let is = matches!(at, At::Unplaced);
            o.at = at;
            match (was, is) {
                (true, false) => self.unplaced -= 1,
                (false, true) => self.unplaced += 1,
                _ => {}
            }
        }
    }

    /// The job leaves the grid, refused.
    fn refuse(&mut self, id: JobId, why: String, out: &mut Vec<Effect>) {
        if let Some(o) = self.jobs.remove(&id)
            && matches!(o.at, At::Unplaced)
        {
            self.unplaced -= 1;
        }
        self.refused_in_a_row.remove(&id);
        out.push(Effect::Refuse { job: id, why });
    }

    /// Removes an open job (it left the grid).
    fn remove(&mut self, id: JobId) -> Option<Open> {
        let o = self.jobs.remove(&id)?;
        if matches!(o.at, At::Unplaced) {
            self.unplaced -= 1;
        }
        self.refused_in_a_row.remove(&id);
        Some(o)
    }

    /// The user cancelled job `id`: the strategy forgets it; a co-allocation under way lets its
    /// holds go, and a split job's fragments their reservations.
    fn cancel(&mut self, now: Time, id: JobId, out: &mut Vec<Effect>) {
        let Some(o) = self.remove(id) else {
            return;
        };
        match o.at {
            At::Unplaced | At::Retrying => {}
            At::Held => self.placer.dispatcher.withdraw(id),
            At::Site { site, .. } => self.placer.dispatcher.job_ended(now, id, cluster(site)),
            At::SplitAtOnce(sites) => self.placer.dispatcher.job_ended(now, id, cluster(sites[0])),
            At::Coallocating(c) => {
                let first = c.first();
                c.let_go_all(id, out);
                self.placer.dispatcher.job_returned(now, id, cluster(first));
            }
            At::Split(fragments) => {
                let first = fragments.first().map_or(0, |f| f.0);
                for &(site, reservation, ended) in &fragments {
                    if !ended {
                        out.push(Effect::LetGo {
                            job: id,
                            site,
                            reservation,
                        });
                    }
                }
                self.placer.dispatcher.job_ended(now, id, cluster(first));
            }
        }
    }

    /// `site` refused job `id` (or its fragment).
    fn refused(&mut self, now: Time, id: JobId, site: usize, why: String, out: &mut Vec<Effect>) {
        let Some(o) = self.jobs.get_mut(&id) else {
            return;
        };
        match &mut o.at {
            At::Site { site: s, .. } if *s == site => {
                self.remove(id);
                self.placer.dispatcher.job_returned(now, id, cluster(site));
                out.push(Effect::Refuse { job: id, why });
            }
            At::Split(fragments) => {
                for f in fragments.iter_mut().filter(|f| f.0 == site) {
                    f.2 = true;
                }
                if fragments.iter().all(|f| f.2) {
                    let first = fragments.first().map_or(0, |f| f.0);
                    self.remove(id);
                    self.placer.dispatcher.job_returned(now, id, cluster(first));
                    out.push(Effect::Refuse { job: id, why });
                }
            }
            _ => {}
        }
    }

    /// Fragment of split job `id` at `site` ended: its reservation is let go; one that ended
    /// badly has the others killed; after the last, the job is over.
    fn fragment_ended(
        &mut self,
        now: Time,
        id: JobId,
        site: usize,
        ok: bool,
        out: &mut Vec<Effect>,
    ) {
        let Some(Open {
            at: At::Split(fragments),
            ..
        }) = self.jobs.get_mut(&id)
        else {
            return;
        };
        let Some(k) = fragments.iter().position(|f| f.0 == site && !f.2) else {
            return;
        };
        fragments[k].2 = true;
        out.push(Effect::LetGo {
            job: id,
            site,
            reservation: fragments[k].1,
        });
        if !ok {
            for f in fragments.iter().filter(|f| !f.2) {
                out.push(Effect::Kill {
                    job: id,
                    site: f.0,
                    why: format!("fragment {k} at site {site} ended badly"),
                });
            }
        }
        if fragments.iter().all(|f| f.2) {
            let first = fragments[0].0;
            self.remove(id);
            self.placer.dispatcher.job_ended(now, id, cluster(first));
            out.push(Effect::Over {
                job: id,
                site: first,
            });
        }
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
        self.jobs
            .values()
            .filter(|o| matches!(o.at, At::Unplaced | At::Held | At::Retrying))
            .count()
    }

    /// How many jobs the strategy holds at the meta level.
    pub fn held(&self) -> usize {
        self.placer.dispatcher.held()
    }

    /// The strategy's description, e.g. `load-ordering`.
    pub fn describe(&self) -> &str {
        &self.placer.describe
    }

    /// Whether the strategy reads the sites' dynamic state ([`Input::Loads`]).
    pub fn reads_site_state(&self) -> bool {
        self.placer.grid.load.is_some()
    }

    /// Whether site `i` is up.
    pub fn is_up(&self, i: usize) -> bool {
        self.placer.grid.caps.get(i).is_some_and(|c| c.up)
    }

    /// The sites.
    pub fn sites(&self) -> &[SiteSpec] {
        &self.placer.sites
    }

    /// The Load / Count arrays of every site (index `p` for priority `p`).
    pub fn arrays(&self) -> Vec<ClusterArrays> {
        self.placer.dispatcher.arrays(self.placer.sites.len())
    }

    /// The classifier's state, to write with the jobs it classified (empty without one).
    pub fn classifier_snapshot(&self) -> Vec<i64> {
        match &self.classify {
            Classify::By(c) => c.snapshot(),
            Classify::Fixed(_) | Classify::With(_) => Vec::new(),
        }
    }

    /// Continues classifying from a snapshot.
    pub fn restore_classifier(&mut self, snapshot: &[i64]) {
        if let Classify::By(c) = &mut self.classify {
            c.restore(snapshot);
        }
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
