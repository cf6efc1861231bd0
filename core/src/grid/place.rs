//! Dispatching one job at the grid level (Pasquali, thesis §3.1.2, D4.2: the Meta-Scheduler sends
//! each classified job to one cluster by its dispatch strategy): the sites a job may not go to are
//! hidden from the strategy (a site's estimate limit, the machines of its inputs, its advance
//! reservation's site, the site it is being withdrawn from), the strategy decides, and the outcome
//! becomes the job's place — a site, the strategy's queue, a co-allocation, a wait for a site
//! that is up, or a refusal. With [`GridSettings::explain`](super::GridSettings) each decision
//! comes with its [`Explanation`]: every candidate site, its Load / Count at the job's priority,
//! and why it was or was not chosen.

use super::{At, Cause, Effect, GridRunner, SiteSpec, cluster};
use crate::dispatch::{
    ClusterArrays, ClusterCaps, ClusterLoad, Dispatcher, Estimate, GridState, Part, Placement,
    Priority, Reason, Transfers,
};
use crate::model::{ClusterId, Job, JobId, Time};
use serde::{Deserialize, Serialize};

/// The dispatch strategy and what it may see of the grid: the sites with their capabilities and
/// limits, which are up, and their polled load. Both the grid runner and the live
/// meta-scheduler's restore and explain paths ask it where a job goes.
#[derive(Debug)]
pub struct Placer {
    pub(super) sites: Vec<SiteSpec>,
    /// Whether any site limits estimates or pins inputs (else nothing is ever hidden).
    filters: bool,
    pub(super) grid: GridState,
    pub(super) dispatcher: Box<dyn Dispatcher>,
    pub(super) describe: String,
}

/// Why a dispatch went where it went, for people (`explain`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Explanation {
    /// When.
    pub time: Time,
    /// The site chosen, if any.
    pub site: Option<usize>,
    /// The strategy and its reason, or why the job waits.
    pub decided_by: String,
    /// Every site, in order (empty for a release pass, which decides over its own queue).
    pub candidates: Vec<Candidate>,
}

/// One site at a dispatch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Candidate {
    /// The site.
    pub site: usize,
    /// Its Load at the job's priority, before the decision.
    pub load: i128,
    /// Its Count at the job's priority, before the decision.
    pub count: u64,
    /// Whether it could take the job.
    pub feasible: bool,
    /// Why not, or why it was not chosen (empty for the site chosen).
    pub note: String,
    /// What moving the job's inputs there takes (nothing where the site holds them), where the
    /// grid describes its links and the job has inputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transfer: Option<Estimate>,
}

/// What a dispatch decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// To this site.
    Site(usize),
    /// Into the strategy's own queue.
    Held,
    /// Split over sites (at a dispatch; strategies split in their release passes).
    Split(Vec<Part>, Option<Reason>),
    /// No site that is up (and shown) can take it now; `last` when every site was up and
    /// shown, so that no site ever will.
    Waits {
        /// The strategy's reason.
        why: String,
        /// No site ever will.
        last: bool,
    },
    /// The strategy broke a rule (a cluster that is not a site).
    Refused(String),
}

impl Placer {
    /// The strategy `dispatcher` over `sites` (site `i` is cluster `ClusterId(i)`).
    pub fn new(sites: Vec<SiteSpec>, dispatcher: Box<dyn Dispatcher>) -> Placer {
        let reads = dispatcher.reads_site_state();
        let caps: Vec<ClusterCaps> = sites.iter().map(|s| s.caps.clone()).collect();
        let n = caps.len();
        Placer {
            filters: (sites.iter()).any(|s| {
                s.max_estimate.is_some()
                    || s.machines.is_some()
                    || !s.stages
                    || s.users.is_some()
                    || !s.reserves
            }),
            sites,
            grid: GridState {
                load: reads.then(|| vec![ClusterLoad::default(); n]),
                caps,
                transfers: Transfers::default(),
            },
            describe: dispatcher.describe(),
            dispatcher,
        }
    }

    /// The strategy.
    pub fn dispatcher(&mut self) -> &mut dyn Dispatcher {
        self.dispatcher.as_mut()
    }

    /// What the strategy sees of the grid.
    pub fn grid(&self) -> &GridState {
        &self.grid
    }

    /// How many jobs the strategy holds at the meta level.
    pub fn held(&self) -> usize {
        self.dispatcher.held()
    }

    /// The strategy's release pass over the jobs it holds.
    pub fn release(&mut self, now: Time, out: &mut Vec<crate::dispatch::Release>) {
        self.dispatcher.release(now, &self.grid, out);
    }

    /// The sites.
    pub fn sites(&self) -> &[SiteSpec] {
        &self.sites
    }

    /// The strategy's description, e.g. `load-ordering`.
    pub fn describe(&self) -> &str {
        &self.describe
    }

    /// Whether the strategy reads the sites' dynamic state.
    pub fn reads_site_state(&self) -> bool {
        self.grid.load.is_some()
    }

    /// Marks site `i` up or down; whether it changed.
    pub fn set_up(&mut self, i: usize, up: bool) -> bool {
        std::mem::replace(&mut self.grid.caps[i].up, up) != up
    }

    /// Whether site `i` is up.
    pub fn is_up(&self, i: usize) -> bool {
        self.grid.caps.get(i).is_some_and(|c| c.up)
    }

    /// Records the polled state of site `i` (for the strategies that read it).
    pub fn set_load(&mut self, i: usize, load: ClusterLoad) {
        if let Some(l) = self.grid.load.as_mut().and_then(|v| v.get_mut(i)) {
            *l = load;
        }
    }

    /// The Load / Count arrays of every site.
    pub fn arrays(&self) -> Vec<ClusterArrays> {
        self.dispatcher.arrays(self.sites.len())
    }

    /// Whether the strategy splits jobs wider than every site over several sites.
    pub fn splits(&self) -> bool {
        self.dispatcher.splits()
    }

    /// Whether `site` takes `job` on what the strategies do not know: its estimate (scaled by its
    /// benchmark score) is within the site's limit, its inputs are on the site's machines, the
    /// site stages the data it reads, and it runs its owner's jobs.
    pub fn takes(&self, site: usize, job: &Job) -> bool {
        let s = &self.sites[site];
        s.runs_user_of(job)
            && (s.stages || job.stage_in.is_empty())
            && s.within_limit(job)
            && s.machines.as_ref().is_none_or(|ms| {
                job.inputs
                    .iter()
                    .all(|i| i.machine.is_none_or(|m| ms.contains(&m)))
            })
    }

    /// Whether `job` is split if the strategy splits: no site runs it as one job. Its fragments
    /// are co-allocated in advance reservations.
    pub fn split(&self, job: &Job) -> bool {
        self.splits()
            && (0..self.sites.len()).all(|i| job.procs > self.grid.caps[i].max_machine_procs)
    }

    /// Whether `site`'s static capabilities fit `job` (processors as one job, every licence),
    /// up or not.
    pub fn fits(&self, site: usize, job: &Job) -> bool {
        let c = &self.grid.caps[site];
        job.procs <= c.max_machine_procs && job.licences.iter().all(|l| c.licences.contains(l))
    }

    /// Whether `site` could ever run `job` (processors, licences, estimate limit, inputs), up or
    /// not.
    pub fn can_ever_run(&self, site: usize, job: &Job) -> bool {
        self.fits(site, job) && self.takes(site, job)
    }

    /// Asks the strategy where `job` of priority `p` goes at `now`: only to site `only` when
    /// given, never to `exclude`, nor to a site whose limits it breaks; with the explanation
    /// when `explain`.
    pub fn decide(
        &mut self,
        now: Time,
        job: &Job,
        p: Priority,
        only: Option<usize>,
        exclude: Option<usize>,
        explain: bool,
    ) -> (Decision, Option<Explanation>) {
        let id = job.id;
        let n = self.sites.len();
        let before = if explain {
            self.dispatcher.arrays(n)
        } else {
            Vec::new()
        };
        let elsewhere = |i: usize| only.is_some_and(|o| o != i);
        let mut hidden: Vec<(usize, bool)> = Vec::new();
        if self.filters || exclude.is_some() || only.is_some() {
            let split = self.split(job);
            for i in 0..n {
                if exclude == Some(i)
                    || elsewhere(i)
                    || !self.takes(i, job)
                    || (split && !self.sites[i].reserves)
                {
                    hidden.push((i, std::mem::replace(&mut self.grid.caps[i].up, false)));
                }
            }
        }
        let placement = self.dispatcher.dispatch(now, job, p, &self.grid);
        for &(i, up) in &hidden {
            self.grid.caps[i].up = up;
        }
        let all_shown_up = hidden.is_empty() && self.grid.caps.iter().all(|c| c.up);
        let reason = self.dispatcher.last_reason();
        let decision = match placement {
            Placement::Cluster(c) if c.index() < n => Decision::Site(c.index()),
            Placement::Cluster(c) => {
                Decision::Refused(format!("job {id}: dispatched to unknown cluster {c}"))
            }
            Placement::Hold => Decision::Held,
            Placement::Split(parts) => Decision::Split(parts, reason),
            Placement::Refuse(why) => Decision::Waits {
                why,
                last: all_shown_up,
            },
        };
        let explanation = explain.then(|| {
            let why = Why {
                decision: &decision,
                reason: reason.as_ref(),
                before: &before,
            };
            self.explain(now, job, p, only, exclude, why)
        });
        (decision, explanation)
    }

    fn explain(
        &self,
        now: Time,
        job: &Job,
        p: Priority,
        only: Option<usize>,
        exclude: Option<usize>,
        why: Why<'_>,
    ) -> Explanation {
        let Why {
            decision,
            reason,
            before,
        } = why;
        let pi = usize::from(p);
        let chosen = match decision {
            Decision::Site(i) => Some(*i),
            _ => None,
        };
        let candidates = self
            .grid
            .caps
            .iter()
            .enumerate()
            .map(|(i, caps)| {
                let (load, count) = before.get(i).map_or((0, 0), |a| {
                    (
                        a.load.get(pi).copied().unwrap_or(0),
                        a.count.get(pi).copied().unwrap_or(0),
                    )
                });
                let elsewhere = only.is_some_and(|o| o != i);
                let limit = (self.sites[i].max_estimate)
                    .filter(|_| !self.sites[i].within_limit(job))
                    .map(|m| (self.sites[i].time_on(job), m));
                let takes = self.takes(i, job);
                let fits = caps.can_run(job) && takes;
                let note = if elsewhere {
                    "the job's advance reservation is at another site".into()
                } else if exclude == Some(i) {
                    "refused the job or went down".into()
                } else if !caps.up {
                    "site down".into()
                } else if let Some((takes, m)) = limit {
                    format!("takes {takes} s there, above the site's limit of {m} s")
                } else if !self.sites[i].runs_user_of(job) {
                    "maps no local account to the job's owner".into()
                } else if self.split(job) && !self.sites[i].reserves {
                    "holds no advance reservations (the job is split over sites, its fragments \
                     co-allocated in reservations)"
                        .into()
                } else if !self.sites[i].stages && !job.stage_in.is_empty() {
                    "does not stage inputs in (the job has some)".into()
                } else if !takes {
                    "does not hold the machines of the job's inputs".into()
                } else if !fits {
                    "cannot run the job (processors or licences)".into()
                } else if chosen == Some(i) {
                    String::new()
                } else {
                    "not chosen by the strategy".into()
                };
                let data = self.grid.transfers.network().is_some() && !job.stage_in.is_empty();
                let transfer =
                    (data && fits).then(|| self.grid.transfers.estimate(job, cluster(i), now));
                Candidate {
                    site: i,
                    load,
                    count,
                    feasible: fits && exclude != Some(i) && !elsewhere,
                    note,
                    transfer,
                }
            })
            .collect();
        let name = |c: ClusterId| self.sites[c.index()].name.clone();
        let decided_by = match (decision, reason) {
            (Decision::Site(_), Some(why)) => format!("{} ({})", self.describe, why.text(&name)),
            (Decision::Site(_), None) => self.describe.clone(),
            (Decision::Waits { why, .. }, _) | (Decision::Refused(why), _) => {
                format!("waiting: {why}")
            }
            (Decision::Held, _) => format!(
                "{}: held in the meta-level queue until its processors are free at a site",
                self.describe
            ),
            (Decision::Split(_, why), _) => match why {
                Some(why) => format!("{} ({})", self.describe, why.text(&name)),
                None => self.describe.clone(),
            },
        };
        Explanation {
            time: now,
            site: chosen,
            decided_by,
            candidates,
        }
    }

    /// The explanation of a release pass's placement on `site`.
    pub fn released(&self, now: Time, site: Option<usize>, reason: &Reason) -> Explanation {
        let name = |c: ClusterId| self.sites[c.index()].name.clone();
        Explanation {
            time: now,
            site,
            decided_by: format!("{} ({})", self.describe, reason.text(&name)),
            candidates: Vec::new(),
        }
    }
}

/// What an explanation explains.
struct Why<'a> {
    decision: &'a Decision,
    reason: Option<&'a Reason>,
    before: &'a [ClusterArrays],
}

impl GridRunner {
    /// Asks the placer where open job `id` goes at `now`, `exclude` hidden.
    pub(super) fn decide(
        &mut self,
        now: Time,
        id: JobId,
        exclude: Option<usize>,
    ) -> (Decision, Option<Explanation>) {
        let open = &self.jobs[&id];
        let explain = self.settings.explain;
        self.placer
            .decide(now, &open.job, open.priority, open.only, exclude, explain)
    }

    /// Carries out a decision that sends job `id` somewhere (a site, the strategy's queue, a
    /// co-allocation); gives back a decision that leaves it where it is.
    fn carry_out(
        &mut self,
        now: Time,
        id: JobId,
        decision: Decision,
        explanation: Option<Explanation>,
        cause: Cause,
        out: &mut Vec<Effect>,
    ) -> Option<(Decision, Option<Explanation>)> {
        match decision {
            Decision::Site(site) => {
                let job = &self.jobs[&id].job;
                self.placer.grid.transfers.placed(job, cluster(site), now);
                let claimed = false;
                self.set_at(id, At::Site { site, claimed });
                out.push(Effect::Place {
                    job: id,
                    site,
                    cause,
                    explanation,
                });
            }
            Decision::Held => {
                self.set_at(id, At::Held);
                out.push(Effect::Wait {
                    job: id,
                    held: true,
                    cause,
                    explanation,
                });
            }
            Decision::Split(parts, reason) => {
                self.co_allocate(now, id, parts, reason.as_ref(), explanation, out);
            }
            other => return Some((other, explanation)),
        }
        None
    }

    /// Dispatches open job `id` (waiting at the meta level) and carries out the decision.
    pub(super) fn dispatch(&mut self, now: Time, id: JobId, cause: Cause, out: &mut Vec<Effect>) {
        if self.is_array(id) {
            return self.start_array(now, id, out);
        }
        if let Err(why) = self.count_out(now, id) {
            self.set_at(id, At::Limited);
            self.limited.insert(id);
            out.push(Effect::Limited { job: id, why });
            return;
        }
        let (decision, explanation) = self.decide(now, id, None);
        let Some((left, explanation)) = self.carry_out(now, id, decision, explanation, cause, out)
        else {
            return;
        };
        match left {
            Decision::Waits { why, last: true } => self.refuse(id, format!("job {id}: {why}"), out),
            Decision::Waits { .. } => {
                let was = matches!(self.jobs[&id].at, At::Unplaced);
                self.set_at(id, At::Unplaced);
                // A job still waiting says so once, not at every pass.
                if !was || cause == Cause::Submitted {
                    out.push(Effect::Wait {
                        job: id,
                        held: false,
                        cause,
                        explanation,
                    });
                }
            }
            Decision::Refused(why) => self.refuse(id, why, out),
            _ => unreachable!("carried out"),
        }
    }

    /// Counts job `id` against its owner's running limits, once (it stays counted until it
    /// leaves the grid); or the limit that holds it.
    fn count_out(&mut self, now: Time, id: JobId) -> Result<(), String> {
        let (Some(shares), Some(o)) = (self.shares.as_mut(), self.jobs.get_mut(&id)) else {
            return Ok(());
        };
        if o.out || !shares.limits_running() {
            return Ok(());
        }
        let j = &o.job;
        shares
            .may_run(j.user, j.procs, j.estimate, now)
            .map_err(|hit| format!("held by the {hit}"))?;
        shares.count_out(j.user, j.procs, j.estimate, 1);
        o.out = true;
        Ok(())
    }

    /// Dispatches the jobs held by a running limit that it now lets go, in id order.
    pub(super) fn release_limited(&mut self, now: Time, out: &mut Vec<Effect>) {
        let held: Vec<JobId> = self.limited.iter().copied().collect();
        for id in held {
            let fits = match (self.shares.as_ref(), self.jobs.get(&id)) {
                (Some(s), Some(o)) => s
                    .may_run(o.job.user, o.job.procs, o.job.estimate, now)
                    .is_ok(),
                _ => false,
            };
            if fits {
                self.limited.remove(&id);
                self.set_at(id, At::Unplaced);
                self.dispatch(now, id, Cause::Released, out);
            }
        }
    }

    /// Dispatches again the jobs waiting for a site and, when `down` is given (that site went
    /// down), the jobs of `down` that have not started there; in id order. A job no other site
    /// can take stays with its down site, unless the strategy holds it in its queue.
    pub(super) fn redispatch(&mut self, now: Time, down: Option<usize>, out: &mut Vec<Effect>) {
        self.redispatch_also(now, down, false, out);
    }

    /// [`GridRunner::redispatch`], and with `held` the jobs in the strategy's queue too (a site
    /// came back: they were held when it could not be seen, and are held again with it in view).
    pub(super) fn redispatch_also(
        &mut self,
        now: Time,
        down: Option<usize>,
        held: bool,
        out: &mut Vec<Effect>,
    ) {
        let mut ids: Vec<(JobId, Option<usize>)> = self
            .jobs
            .iter()
            .filter_map(|(&id, o)| match o.at {
                At::Unplaced => Some((id, None)),
                At::Held if held => Some((id, None)),
                At::Site {
                    site,
                    claimed: false,
                } if Some(site) == down => Some((id, Some(site))),
                _ => None,
            })
            .collect();
        ids.sort_unstable();
        for (id, from) in ids {
            let Some(from) = from else {
                self.dispatch(now, id, Cause::Waited, out);
                continue;
            };
            self.placer.dispatcher.job_returned(now, id, cluster(from));
            let (decision, explanation) = self.decide(now, id, Some(from));
            let cause = Cause::Withdrawn { from };
            if self
                .carry_out(now, id, decision, explanation, cause, out)
                .is_some()
            {
                // Nowhere else: it stays with its down site, and counts there again.
                let o = &self.jobs[&id];
                let back = Placement::Cluster(cluster(from));
                self.placer
                    .dispatcher
                    .restore(&o.job, o.priority, &back, now);
            }
        }
    }
}
