//! The grid runner's jobs that wait for other jobs ([`Dependency`], Slurm's `--dependency`
//! semantics): each waiting job's terms, met when the job it names starts or leaves the grid in
//! the right way, never met when it leaves otherwise; the singleton jobs of each name and user,
//! run one at a time in submission order. A job whose dependency is met is dispatched (at once,
//! or at the time its delays give); one whose dependency can never be met leaves the grid as
//! never started, and so satisfies nothing of the jobs that wait for it in turn.
//!
//! Changes are noted as they happen ([`Book::started`], [`Book::left`]) and settled in the order
//! noted once the runner's input is handled ([`GridRunner::settle`]), so a chain of jobs that can
//! never run is ended without recursion.

use super::{At, Cause, Effect, GridRunner};
use crate::model::{Condition, Dependency, Ended, JobId, Outcome, Time, UserId};
use crate::structures::Shrink;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

/// Where one term stands.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Term {
    Pending,
    /// Met, the job free to go from this time on.
    Met(Time),
    /// Never to be met: what the job named did.
    Never(Outcome),
}

impl Term {
    /// Term `t` once its job has left the grid as `ended` says.
    fn of(t: &crate::model::Term, ended: Ended) -> Term {
        match ended.met_at(t.on) {
            Some(at) => Term::Met(at + t.delay),
            None => Term::Never(ended.outcome),
        }
    }
}

/// A job waiting for its dependency.
#[derive(Clone, Debug)]
struct Waiting {
    dep: Dependency,
    terms: Vec<Term>,
}

/// What a waiting job's dependency comes to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Still waiting.
    Waits,
    /// Met: the job may go from this time on.
    Ready(Time),
    /// Never met: why, in words.
    Never(String),
}

/// A change to settle.
#[derive(Clone, Copy, Debug)]
enum Change {
    Started(JobId),
    Left(JobId, Outcome),
}

/// The waiting jobs, who waits for whom, and the singleton queues.
#[derive(Debug, Default)]
pub(super) struct Book {
    waiting: FxHashMap<JobId, Waiting>,
    /// Per job waited for: the jobs waiting for it (stale entries are skipped).
    watchers: FxHashMap<JobId, Vec<JobId>>,
    /// Per user and name: its singleton jobs in the grid, in submission order.
    singletons: FxHashMap<(UserId, String), VecDeque<JobId>>,
    /// Per singleton job in the grid: its queue's key.
    single: FxHashMap<JobId, (UserId, String)>,
    /// Changes not yet settled, in the order they happened.
    changes: VecDeque<Change>,
}

impl Book {
    /// Whether nothing waits and no singleton is in the grid (then nothing needs noting).
    fn idle(&self) -> bool {
        self.watchers.is_empty() && self.single.is_empty()
    }

    /// Gives back the room a burst left ([`Shrink`]).
    pub(super) fn shrink(&mut self) {
        self.waiting.shrink_if_sparse();
        self.watchers.shrink_if_sparse();
        self.singletons.shrink_if_sparse();
        self.single.shrink_if_sparse();
        self.changes.shrink_if_sparse();
    }

    /// Notes that job `id` began running.
    pub(super) fn started(&mut self, id: JobId) {
        if self.watchers.contains_key(&id) {
            self.changes.push_back(Change::Started(id));
        }
    }

    /// Notes that job `id` left the grid with `outcome`.
    pub(super) fn left(&mut self, id: JobId, outcome: Outcome) {
        if !self.idle() {
            self.changes.push_back(Change::Left(id, outcome));
        }
    }

    /// How many jobs wait for their dependency.
    pub(super) fn len(&self) -> usize {
        self.waiting.len()
    }

    /// Whether job `id` waits for its dependency.
    #[cfg(test)]
    fn waits(&self, id: JobId) -> bool {
        self.waiting.contains_key(&id)
    }

    /// Enters job `id` of `user` with its dependency; `open` tells whether a job is in the grid
    /// and whether it has started. A term on a job neither in the grid nor with its `ended`
    /// outcome given is pending (a restored job's predecessor may come back after it).
    fn enter(
        &mut self,
        now: Time,
        id: JobId,
        user: UserId,
        dep: &Dependency,
        open: impl Fn(JobId) -> Option<bool>,
    ) -> Verdict {
        if let Some(name) = &dep.singleton {
            let key = (user, name.clone());
            self.singletons
                .entry(key.clone())
                .or_default()
                .push_back(id);
            self.single.insert(id, key);
        }
        let terms = dep
            .terms
            .iter()
            .map(|t| match (t.ended, open(t.job)) {
                (Some(e), _) => Term::of(t, e),
                (None, Some(true)) if t.on == Condition::Start => Term::Met(now + t.delay),
                _ => Term::Pending,
            })
            .collect::<Vec<_>>();
        for (t, _) in dep
            .terms
            .iter()
            .zip(&terms)
            .filter(|(_, s)| **s == Term::Pending)
        {
            let w = self.watchers.entry(t.job).or_default();
            if w.last() != Some(&id) {
                w.push(id);
            }
        }
        let w = Waiting {
            dep: dep.clone(),
            terms,
        };
        let v = self.verdict(id, &w);
        if v == Verdict::Waits {
            self.waiting.insert(id, w);
        } else {
            self.forget_watches(id, &w.dep);
        }
        v
    }

    /// Job `id` no longer waits (it left the grid, or went on).
    pub(super) fn forget(&mut self, id: JobId) {
        if let Some(w) = self.waiting.remove(&id) {
            self.forget_watches(id, &w.dep);
        }
    }

    fn forget_watches(&mut self, id: JobId, dep: &Dependency) {
        for t in &dep.terms {
            if let Some(w) = self.watchers.get_mut(&t.job) {
                w.retain(|&j| j != id);
                if w.is_empty() {
                    self.watchers.remove(&t.job);
                }
            }
        }
    }

    /// Whether singleton job `id` is first of its name and user (or no singleton).
    fn first_of_its_name(&self, id: JobId) -> bool {
        self.single
            .get(&id)
            .and_then(|k| self.singletons.get(k))
            .is_none_or(|q| q.front() == Some(&id))
    }

    fn verdict(&self, id: JobId, w: &Waiting) -> Verdict {
        let nevers = (w.dep.terms.iter().zip(&w.terms)).filter_map(|(t, s)| match s {
            Term::Never(o) => Some((t, o)),
            _ => None,
        });
        let met = w.terms.iter().filter_map(|t| match t {
            Term::Met(at) => Some(*at),
            _ => None,
        });
        let never = |which: Vec<(&crate::model::Term, &Outcome)>| {
            let said: Vec<String> = which
                .iter()
                .map(|(t, o)| format!("job {} {o} ({})", t.job, t.on.as_str()))
                .collect();
            Verdict::Never(format!("dependency never satisfied: {}", said.join(", ")))
        };
        let ready = if w.dep.any && !w.terms.is_empty() {
            let first = met.min();
            if first.is_none() && w.terms.iter().all(|t| matches!(t, Term::Never(..))) {
                return never(nevers.collect());
            }
            first
        } else {
            let nevers: Vec<_> = nevers.collect();
            if !nevers.is_empty() {
                return never(nevers);
            }
            let all = w.terms.iter().all(|t| matches!(t, Term::Met(_)));
            all.then(|| met.max().unwrap_or(Time::MIN))
        };
        match ready {
            Some(at) if self.first_of_its_name(id) => Verdict::Ready(at),
            _ => Verdict::Waits,
        }
    }

    /// Settles one change: the verdicts of the jobs it concerns, in id order (a job still
    /// waiting only when what it waits for changed).
    fn settle_one(&mut self, now: Time, change: Change) -> Vec<(JobId, Verdict)> {
        let (id, outcome) = match change {
            Change::Started(id) => (id, None),
            Change::Left(id, o) => (id, Some(o)),
        };
        let mut concerned: Vec<JobId> = self.watchers.get(&id).cloned().unwrap_or_default();
        let mut now_first = None;
        if outcome.is_some() {
            self.watchers.remove(&id);
            if let Some(key) = self.single.remove(&id)
                && let Some(q) = self.singletons.get_mut(&key)
            {
                let was_first = q.front() == Some(&id);
                q.retain(|&j| j != id);
                if q.is_empty() {
                    self.singletons.remove(&key);
                } else if was_first {
                    now_first = q.front().copied();
                    concerned.extend(now_first);
                }
            }
        }
        concerned.sort_unstable();
        concerned.dedup();
        let mut out = Vec::new();
        for j in concerned {
            let Some(mut w) = self.waiting.remove(&j) else {
                continue;
            };
            let before = w.terms.clone();
            for (t, state) in w.dep.terms.iter().zip(w.terms.iter_mut()) {
                if t.job != id || *state != Term::Pending {
                    continue;
                }
                match outcome {
                    None if t.on == Condition::Start => *state = Term::Met(now + t.delay),
                    None => {}
                    Some(outcome) => {
                        // A pending `after` term's job never started: its end stands.
                        let ended = Ended {
                            outcome,
                            at: now,
                            started: None,
                        };
                        *state = Term::of(t, ended);
                    }
                }
            }
            let v = self.verdict(j, &w);
            let changed = w.terms != before || now_first == Some(j);
            if v == Verdict::Waits {
                self.waiting.insert(j, w);
            } else {
                self.forget_watches(j, &w.dep);
            }
            // A job still waiting, for less than before, says what is left.
            if v != Verdict::Waits || changed {
                out.push((j, v));
            }
        }
        out
    }
}

impl GridRunner {
    /// Admission's check of a dependency: every job it names is in the grid, or its outcome is
    /// given.
    pub(super) fn known_predecessors(&self, dep: &Dependency) -> Result<(), JobId> {
        match dep
            .terms
            .iter()
            .find(|t| t.ended.is_none() && !self.jobs.contains_key(&t.job))
        {
            Some(t) => Err(t.job),
            None => Ok(()),
        }
    }

    /// Job `id` (already entered, submitted or restored as `cause` says) goes through its
    /// dependency: dispatched when met, waits ([`Effect::Blocked`]) or leaves the grid never
    /// started ([`Effect::Unmet`]).
    pub(super) fn enter_dependency(
        &mut self,
        now: Time,
        id: JobId,
        cause: Cause,
        out: &mut Vec<Effect>,
    ) {
        let Some(open) = self.jobs.get(&id) else {
            return;
        };
        let Some(dep) = open.job.after.as_deref() else {
            return self.dispatch(now, id, cause, out);
        };
        let user = open.job.user;
        let jobs = &self.jobs;
        let started = |j: JobId| jobs.get(&j).map(|o| o.at.started());
        let v = self.deps.enter(now, id, user, dep, started);
        self.go_on(now, id, v, cause, out);
    }

    /// A waiting job's verdict carried out.
    fn go_on(&mut self, now: Time, id: JobId, v: Verdict, cause: Cause, out: &mut Vec<Effect>) {
        match v {
            Verdict::Waits => {
                self.set_at(id, At::Blocked);
                let waits = self.waits_for(id);
                out.push(Effect::Blocked {
                    job: id,
                    waits,
                    cause,
                });
            }
            Verdict::Ready(at) if at > now => {
                self.set_at(id, At::Deferred);
                out.push(Effect::Defer { job: id, until: at });
            }
            Verdict::Ready(_) => {
                self.set_at(id, At::Unplaced);
                self.dispatch(now, id, cause, out);
            }
            Verdict::Never(why) => {
                self.remove(id, Some(Outcome::Refused));
                out.push(Effect::Unmet { job: id, why });
            }
        }
    }

    /// Settles the changes noted while an input was handled, in order, until none is left.
    /// The tasks that left are settled too (their arrays release more, or end).
    pub(super) fn settle(&mut self, now: Time, out: &mut Vec<Effect>) {
        loop {
            if let Some(change) = self.deps.changes.pop_front() {
                for (job, v) in self.deps.settle_one(now, change) {
                    if self.jobs.contains_key(&job) {
                        self.go_on(now, job, v, Cause::Dependency, out);
                    }
                }
            } else if self.arrays.pending() {
                self.settle_arrays(now, out);
            } else if self.workflows.pending() {
                self.settle_workflows(now, out);
            } else if std::mem::take(&mut self.limit_freed) && !self.limited.is_empty() {
                self.release_limited(now, out);
            } else {
                break;
            }
        }
    }

    /// The terms job `id` still waits for: each job and its condition (empty when it does not
    /// wait for its dependency).
    pub fn waiting_on(&self, id: JobId) -> Vec<(JobId, Condition)> {
        let Some(w) = self.deps.waiting.get(&id) else {
            return Vec::new();
        };
        (w.dep.terms.iter().zip(&w.terms))
            .filter(|(_, s)| **s == Term::Pending)
            .map(|(t, _)| (t.job, t.on))
            .collect()
    }

    /// The singleton name of job `id` when earlier jobs of that name and user keep it waiting.
    pub fn singleton_behind(&self, id: JobId) -> Option<&str> {
        let w = self.deps.waiting.get(&id)?;
        let name = w.dep.singleton.as_deref()?;
        (!self.deps.first_of_its_name(id)).then_some(name)
    }

    /// What job `id` waits for, in words: "job 12 (afterok), job 13 (after)".
    pub fn waits_for(&self, id: JobId) -> String {
        let Some(w) = self.deps.waiting.get(&id) else {
            return String::new();
        };
        let mut said: Vec<String> = (self.waiting_on(id).into_iter())
            .map(|(j, on)| format!("job {j} ({})", on.as_str()))
            .collect();
        if let Some(name) = self.singleton_behind(id) {
            said.push(format!("the earlier `{name}` jobs of its user (singleton)"));
        }
        let sep = if w.dep.any { " or " } else { ", " };
        said.join(sep)
    }

    /// How many jobs wait for their dependency.
    pub fn blocked(&self) -> usize {
        self.deps.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::DispatchKind;
    use crate::grid::tests::{on, runner};
    use crate::grid::{GridSettings, Input};
    use crate::model::{Job, Term as Wanted};

    fn dep(text: &str) -> Dependency {
        Dependency::parse(text, Some("n")).unwrap()
    }

    fn after(id: u64, text: &str) -> Input {
        let mut job = Job::new(id, 0, 1, 100, 100);
        job.after = Some(Box::new(dep(text)));
        Input::Submit {
            job,
            priority: None,
        }
    }

    #[test]
    fn a_chain_that_can_never_run_ends_whole_and_says_why() {
        let mut r = runner(DispatchKind::LoadOrdering, &[8], GridSettings::default());
        let plain = Input::Submit {
            job: Job::new(1, 0, 1, 100, 100),
            priority: None,
        };
        on(&mut r, 0, plain);
        for id in 2..=4 {
            let e = on(&mut r, 0, after(id, &format!("afterok:{}", id - 1)));
            let waits = format!("job {} (afterok)", id - 1);
            assert_eq!(
                e,
                [Effect::Blocked {
                    job: JobId(id),
                    waits,
                    cause: Cause::Submitted,
                }]
            );
        }
        assert_eq!((r.blocked(), r.waiting()), (3, 3));
        on(
            &mut r,
            5,
            Input::Claimed {
                job: JobId(1),
                site: 0,
            },
        );
        let failed = Input::Ended {
            job: JobId(1),
            site: 0,
            outcome: Outcome::Failed,
            exit: None,
        };
        let unmet = |id: u64, before: u64, what: &str| Effect::Unmet {
            job: JobId(id),
            why: format!("dependency never satisfied: job {before} {what} (afterok)"),
        };
        assert_eq!(
            on(&mut r, 50, failed),
            [
                unmet(2, 1, "failed"),
                unmet(3, 2, "never ran"),
                unmet(4, 3, "never ran")
            ]
        );
        assert_eq!((r.blocked(), r.waiting()), (0, 0));
    }

    /// Each time part of a dependency is met, the job says what is left; a start that meets
    /// nothing (an `afterok` term) says nothing.
    #[test]
    fn a_job_waiting_for_two_says_what_is_left_when_one_is_done() {
        let mut r = runner(DispatchKind::LoadOrdering, &[8], GridSettings::default());
        for id in 1..=2 {
            let plain = Input::Submit {
                job: Job::new(id, 0, 1, 100, 100),
                priority: None,
            };
            on(&mut r, 0, plain);
        }
        on(&mut r, 0, after(3, "afterok:1,afterok:2"));
        assert_eq!(r.waits_for(JobId(3)), "job 1 (afterok), job 2 (afterok)");
        assert!(
            on(
                &mut r,
                1,
                Input::Claimed {
                    job: JobId(1),
                    site: 0
                }
            )
            .is_empty()
        );
        let ended = |id: u64| Input::Ended {
            job: JobId(id),
            site: 0,
            outcome: Outcome::Completed,
            exit: None,
        };
        let left = Effect::Blocked {
            job: JobId(3),
            waits: "job 2 (afterok)".into(),
            cause: Cause::Dependency,
        };
        assert_eq!(on(&mut r, 50, ended(1)), [left]);
        let e = on(&mut r, 60, ended(2));
        assert!(
            matches!(e.as_slice(), [Effect::Place { job: JobId(3), .. }]),
            "{e:?}"
        );
    }

    #[test]
    fn a_delayed_term_defers_the_job_until_its_time() {
        let mut r = runner(DispatchKind::LoadOrdering, &[8], GridSettings::default());
        let plain = Input::Submit {
            job: Job::new(1, 0, 1, 100, 100),
            priority: None,
        };
        on(&mut r, 0, plain);
        on(&mut r, 0, after(2, "afterany:1+30"));
        assert_eq!(r.waits_for(JobId(2)), "job 1 (afterany)");
        let ended = Input::Ended {
            job: JobId(1),
            site: 0,
            outcome: Outcome::Completed,
            exit: None,
        };
        let e = on(&mut r, 100, ended);
        assert_eq!(
            e,
            [Effect::Defer {
                job: JobId(2),
                until: 130
            }]
        );
        assert!(r.waits(JobId(2)));
        let e = on(&mut r, 130, Input::Retry { job: JobId(2) });
        assert!(
            matches!(
                e.as_slice(),
                [Effect::Place {
                    job: JobId(2),
                    cause: Cause::Dependency,
                    ..
                }]
            ),
            "{e:?}"
        );
    }

    #[test]
    fn a_cancelled_waiting_job_frees_its_singleton_name() {
        let mut r = runner(DispatchKind::LoadOrdering, &[8], GridSettings::default());
        for id in 1..=3 {
            on(&mut r, 0, after(id, "singleton"));
        }
        assert_eq!(r.blocked(), 2);
        assert_eq!(
            r.waits_for(JobId(3)),
            "the earlier `n` jobs of its user (singleton)"
        );
        // Job 2 cancelled while it waits: job 3 is next after job 1.
        on(&mut r, 1, Input::Cancel { job: JobId(2) });
        assert_eq!(r.blocked(), 1);
        let ended = Input::Ended {
            job: JobId(1),
            site: 0,
            outcome: Outcome::Completed,
            exit: None,
        };
        let e = on(&mut r, 9, ended);
        assert!(
            matches!(e.as_slice(), [Effect::Place { job: JobId(3), .. }]),
            "{e:?}"
        );
        assert_eq!(r.blocked(), 0);
    }

    #[test]
    fn a_term_on_a_running_job_of_after_is_met_at_once() {
        let mut b = Book::default();
        let v = b.enter(10, JobId(5), UserId(1), &dep("after:1+30"), |_| Some(true));
        assert_eq!(v, Verdict::Ready(40));
        assert!(!b.waits(JobId(5)));
        let v = b.enter(10, JobId(6), UserId(1), &dep("afterok:1"), |_| Some(true));
        assert_eq!(v, Verdict::Waits);
        assert!(b.waits(JobId(6)));
        b.left(JobId(1), Outcome::Completed);
        let change = b.changes.pop_front().unwrap();
        assert_eq!(
            b.settle_one(50, change),
            vec![(JobId(6), Verdict::Ready(50))]
        );
        assert!(b.idle() && b.len() == 0);
    }

    #[test]
    fn an_ended_outcome_given_at_submission_resolves_its_term() {
        let mut b = Book::default();
        let mut d = dep("afterok:1");
        let failed = Ended {
            outcome: Outcome::Failed,
            at: 0,
            started: None,
        };
        d.terms[0] = Wanted {
            ended: Some(failed),
            ..d.terms[0].clone()
        };
        let v = b.enter(0, JobId(2), UserId(0), &d, |_| None);
        assert_eq!(
            v,
            Verdict::Never("dependency never satisfied: job 1 failed (afterok)".into())
        );
        assert!(b.idle());
    }
}
