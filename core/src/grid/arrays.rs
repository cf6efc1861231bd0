//! Job arrays in the grid runner (Slurm's `--array` semantics, as its manual documents them): an
//! array is admitted and classified once, waits for its dependency like any job, then releases
//! its tasks in index order, each a job of its own (id `A + 1 + k`, the array's priority), with
//! at most `%N` of them dispatched and not ended at once. The array stays in the grid until its
//! last task has ended, and then leaves it with one outcome, which is what the jobs depending on
//! the array see.
//!
//! `aftercorr:A` (Slurm's, for an array on an array): the array releases its tasks as it would,
//! and each task waits for the task of A with the same index to complete (a dependency of its own,
//! on that task's id); one that failed, was cancelled or never ran leaves the task never started.
//! A keeps how each of its tasks ended while an array follows it, past its own end.
//!
//! The grid's reading where Slurm is silent or differs: `%N` counts tasks sent to sites and not
//! ended (a task queued at a site counts, since the grid can no longer stop it from starting);
//! one input releases at most [`TASKS_PER_INPUT`] tasks and asks the driver to come back for the
//! rest ([`Effect::Continue`]), so a 10,000-task array costs a submission little
//! and no input runs long.

use super::admit::{Field, Kind, Refusal};
use super::{At, Cause, Effect, GridRunner};
use crate::dispatch::Priority;
use crate::model::{
    ArraySpec, Condition, Dependency, Ended, Job, JobId, Outcome, Task, Term, Time,
};
use crate::structures::Shrink;
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::{BTreeMap, VecDeque};

/// The most tasks one input releases.
pub const TASKS_PER_INPUT: usize = 256;

/// How an array's ended tasks ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Completed.
    pub completed: u32,
    /// Failed, or cancelled while running.
    pub failed: u32,
    /// Cancelled before they ran, refused, or never released.
    pub never_ran: u32,
}

impl Tally {
    fn add(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Completed => self.completed += 1,
            Outcome::Failed | Outcome::Cancelled { started: true } => self.failed += 1,
            Outcome::Cancelled { started: false } | Outcome::Refused => self.never_ran += 1,
        }
    }
}

/// One array in the grid.
#[derive(Clone, Debug)]
struct Array {
    spec: ArraySpec,
    /// The position of the next task to release.
    next: usize,
    /// Positions at or after `next` cancelled before their release.
    skipped: FxHashSet<usize>,
    /// Tasks released and not ended.
    out: u32,
    tally: Tally,
    first_start: Option<Time>,
    /// Cancelled as a whole: releases no more.
    cancelled: bool,
    /// Its tasks may be released (its dependency is met).
    going: bool,
    /// The arrays it follows task by task (`aftercorr`).
    corr: Vec<JobId>,
    /// How many arrays in the grid follow it (`aftercorr`).
    followers: u32,
    /// How its ended tasks ended, by position.
    ended: FxHashMap<u32, Ended>,
}

/// An array that ended while arrays follow it: its indices and how its tasks ended.
#[derive(Clone, Debug)]
struct Kept {
    spec: ArraySpec,
    ended: FxHashMap<u32, Ended>,
    followers: u32,
}

impl Array {
    fn new(spec: ArraySpec) -> Array {
        Array {
            spec,
            next: 0,
            skipped: FxHashSet::default(),
            out: 0,
            tally: Tally::default(),
            first_start: None,
            cancelled: false,
            going: false,
            corr: Vec::new(),
            followers: 0,
            ended: FxHashMap::default(),
        }
    }

    /// Whether every task has ended or will never be released.
    fn over(&self) -> bool {
        self.out == 0 && (self.cancelled || self.next >= self.spec.len())
    }

    fn outcome(&self) -> Outcome {
        if self.tally.failed > 0 {
            Outcome::Failed
        } else if self.tally.never_ran > 0 {
            Outcome::Cancelled {
                started: self.first_start.is_some(),
            }
        } else {
            Outcome::Completed
        }
    }

    /// Whether it may release another task now.
    fn may_release(&self) -> bool {
        self.going
            && !self.cancelled
            && self.next < self.spec.len()
            && self.spec.limit.is_none_or(|n| self.out < n)
    }
}

/// Takes the `aftercorr` terms out of array `job`'s dependency (the array's tasks wait on them,
/// not the array): the arrays it follows.
pub(super) fn take_corr(job: &mut Job) -> Vec<JobId> {
    let Some(dep) = job.after.as_deref_mut() else {
        return Vec::new();
    };
    let corr = (dep.terms.iter())
        .filter(|t| t.on == Condition::Corr)
        .map(|t| t.job)
        .collect();
    dep.terms.retain(|t| t.on != Condition::Corr);
    if dep.is_empty() {
        job.after = None;
    }
    corr
}

/// What an array is doing, for the drivers' views.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArrayStatus {
    /// Tasks.
    pub tasks: u32,
    /// Positions passed so far: tasks released, skipped, or given up with the array's
    /// cancellation.
    pub released: u32,
    /// Released and not ended.
    pub out: u32,
    /// How the ended ones ended.
    pub tally: Tally,
    /// `%N`.
    pub limit: Option<u32>,
}

/// The arrays in the grid, by id (ordered: a task's array is the one before its id).
#[derive(Debug, Default)]
pub(super) struct Book {
    arrays: BTreeMap<JobId, Array>,
    /// Tasks that left the grid, to settle: the array, the task's index and how.
    changes: VecDeque<(JobId, u32, Outcome)>,
    /// Arrays that ended while others follow them (`aftercorr`).
    kept: FxHashMap<JobId, Kept>,
}

impl Book {
    /// Gives back the room a burst left ([`Shrink`]).
    pub(super) fn shrink(&mut self) {
        self.changes.shrink_if_sparse();
        self.kept.shrink_if_sparse();
    }

    /// The array task `id` would belong to, and its position.
    fn owner(&self, id: JobId) -> Option<(JobId, usize)> {
        let (&a, array) = self.arrays.range(..id).next_back()?;
        let k = (id.0 - a.0 - 1) as usize;
        (k < array.spec.len()).then_some((a, k))
    }

    /// Whether `id` is the id of a task of an array in the grid.
    pub(super) fn owns(&self, id: JobId) -> bool {
        self.owner(id).is_some()
    }

    pub(super) fn pending(&self) -> bool {
        !self.changes.is_empty()
    }
}

impl GridRunner {
    /// Enters array `id` (already entered as a job, its spec taken from it), following the
    /// arrays of `corr` task by task.
    pub(super) fn enter_array(&mut self, id: JobId, spec: ArraySpec, corr: Vec<JobId>) {
        for a in &corr {
            if let Some(x) = self.arrays.arrays.get_mut(a) {
                x.followers += 1;
            } else if let Some(k) = self.arrays.kept.get_mut(a) {
                k.followers += 1;
            }
        }
        let mut array = Array::new(spec);
        array.corr = corr;
        self.arrays.arrays.insert(id, array);
    }

    /// Whether `dep` may be `job`'s as far as `aftercorr` goes: only an array follows, arrays in
    /// the grid, each of its indices one of theirs.
    pub(super) fn admit_corr(&self, job: &Job, dep: &Dependency) -> Result<(), Refusal> {
        let invalid = |why: String| Refusal::new(Field::After, Kind::Invalid, why);
        for t in dep.terms.iter().filter(|t| t.on == Condition::Corr) {
            let Some(mine) = &job.array else {
                return Err(invalid(
                    "`aftercorr` is for an array: this job is not one".into(),
                ));
            };
            let theirs = match (self.arrays.arrays.get(&t.job), self.arrays.kept.get(&t.job)) {
                (Some(a), _) => &a.spec,
                (None, Some(k)) => &k.spec,
                (None, None) => {
                    return Err(Refusal::new(
                        Field::After,
                        Kind::Precondition,
                        format!(
                            "job {} is not an array in the grid (`aftercorr` follows the tasks \
                             of an array that has not ended)",
                            t.job
                        ),
                    ));
                }
            };
            if let Some(&i) = mine
                .indices()
                .iter()
                .find(|&&i| theirs.position(i).is_none())
            {
                return Err(invalid(format!(
                    "index {i} of this array has no task in array {}",
                    t.job
                )));
            }
        }
        Ok(())
    }

    /// The dependency of task `index` of an array following `corr`: on each one's task of that
    /// index, with how it ended when it has.
    fn corr_dependency(&self, corr: &[JobId], index: u32) -> Option<Box<Dependency>> {
        if corr.is_empty() {
            return None;
        }
        let terms = corr
            .iter()
            .filter_map(|&a| {
                let open = self.arrays.arrays.get(&a);
                let (spec, ended) = match (open, self.arrays.kept.get(&a)) {
                    (Some(x), _) => (&x.spec, &x.ended),
                    (None, Some(k)) => (&k.spec, &k.ended),
                    (None, None) => return None,
                };
                let k = spec.position(index)?;
                let job = ArraySpec::task_id(a, k);
                // A task that will never be released (its array ended, or gave it up) never
                // ran.
                let given_up = open.is_none_or(|x| x.cancelled || x.skipped.contains(&k))
                    && !self.jobs.contains_key(&job);
                let never = Ended {
                    outcome: Outcome::Cancelled { started: false },
                    at: 0,
                    started: None,
                };
                let ended = match ended.get(&(k as u32)) {
                    Some(e) => Some(*e),
                    None => given_up.then_some(never),
                };
                Some(Term {
                    on: Condition::Corr,
                    job,
                    delay: 0,
                    ended,
                })
            })
            .collect();
        Some(Box::new(Dependency {
            terms,
            any: false,
            singleton: None,
        }))
    }

    /// Whether `id` is an array in the grid.
    pub(super) fn is_array(&self, id: JobId) -> bool {
        self.arrays.arrays.contains_key(&id)
    }

    /// Array `id` may go (its dependency is met, or it has none): it releases its tasks.
    pub(super) fn start_array(&mut self, now: Time, id: JobId, out: &mut Vec<Effect>) {
        self.set_at(id, At::Array);
        if let Some(a) = self.arrays.arrays.get_mut(&id) {
            a.going = true;
        }
        self.release_tasks(now, id, out);
    }

    /// Releases the tasks array `id` may release now (at most [`TASKS_PER_INPUT`]; a
    /// [`Effect::Continue`] asks for the rest).
    pub(super) fn release_tasks(&mut self, now: Time, id: JobId, out: &mut Vec<Effect>) {
        let mut released = 0;
        loop {
            let Some(a) = self.arrays.arrays.get_mut(&id) else {
                return;
            };
            if !a.may_release() {
                break;
            }
            if released == TASKS_PER_INPUT {
                out.push(Effect::Continue { job: id });
                break;
            }
            let k = a.next;
            a.next += 1;
            if a.skipped.remove(&k) {
                continue;
            }
            a.out += 1;
            let index = a.spec.index(k).expect("a position of the array");
            let task = ArraySpec::task_id(id, k);
            let Some(o) = self.jobs.get(&id) else {
                return;
            };
            let (mut job, priority, only) = (o.job.clone(), o.priority, o.only);
            let corr = std::mem::take(&mut self.arrays.arrays.get_mut(&id).expect("open").corr);
            job.id = task;
            job.after = self.corr_dependency(&corr, index);
            self.arrays.arrays.get_mut(&id).expect("open").corr = corr;
            job.task = Some(Task { array: id, index });
            released += 1;
            self.release_task(now, job, priority, only, out);
        }
        self.end_array_if_over(id, out);
    }

    fn release_task(
        &mut self,
        now: Time,
        job: crate::model::Job,
        priority: Priority,
        only: Option<usize>,
        out: &mut Vec<Effect>,
    ) {
        let (id, task) = (job.id, job.task.expect("a task"));
        self.enter(job, priority, only, At::Unplaced);
        out.push(Effect::Task {
            array: task.array,
            job: id,
            index: task.index,
        });
        // Through its `aftercorr` term, if it has one.
        self.enter_dependency(now, id, Cause::Submitted, out);
    }

    /// The array leaves the grid once every task is over.
    fn end_array_if_over(&mut self, id: JobId, out: &mut Vec<Effect>) {
        let Some(a) = self.arrays.arrays.get(&id) else {
            return;
        };
        if !a.over() || !a.going && !a.cancelled {
            return;
        }
        let (outcome, started) = (a.outcome(), a.first_start);
        let a = self.arrays.arrays.remove(&id).expect("just seen");
        for f in &a.corr {
            self.unfollow(*f);
        }
        if a.followers > 0 {
            let kept = Kept {
                spec: a.spec,
                ended: a.ended,
                followers: a.followers,
            };
            self.arrays.kept.insert(id, kept);
        }
        self.remove(id, Some(outcome));
        out.push(Effect::ArrayOver {
            job: id,
            outcome,
            started,
        });
    }

    /// Array `a` has one follower fewer (it ended); kept for none, it is forgotten.
    fn unfollow(&mut self, a: JobId) {
        if let Some(x) = self.arrays.arrays.get_mut(&a) {
            x.followers = x.followers.saturating_sub(1);
        } else if let Some(k) = self.arrays.kept.get_mut(&a) {
            k.followers = k.followers.saturating_sub(1);
            if k.followers == 0 {
                self.arrays.kept.remove(&a);
            }
        }
    }

    /// Task `task` left the grid with `outcome` (noted while removing it; settled after the
    /// input).
    pub(super) fn task_left(&mut self, task: Task, outcome: Outcome) {
        self.arrays
            .changes
            .push_back((task.array, task.index, outcome));
    }

    /// The tasks of array `id` at positions `ks`, never to be released: the tasks following
    /// them (`aftercorr`) hear that they never ran.
    fn never_released(&mut self, id: JobId, ks: impl Iterator<Item = usize>) {
        if self.arrays.arrays.get(&id).is_none_or(|a| a.followers == 0) {
            return;
        }
        for k in ks {
            let task = ArraySpec::task_id(id, k);
            self.deps.left(task, Outcome::Cancelled { started: false });
        }
    }

    /// A task of array `array` began running at `now`: the array's first start is its start.
    pub(super) fn task_began(&mut self, now: Time, array: JobId) {
        if let Some(a) = self.arrays.arrays.get_mut(&array)
            && a.first_start.is_none()
        {
            a.first_start = Some(now);
            self.deps.started(array);
        }
    }

    /// Settles the tasks that left: their arrays release more, or are over.
    pub(super) fn settle_arrays(&mut self, now: Time, out: &mut Vec<Effect>) {
        while let Some((id, index, outcome)) = self.arrays.changes.pop_front() {
            if let Some(a) = self.arrays.arrays.get_mut(&id) {
                a.out = a.out.saturating_sub(1);
                a.tally.add(outcome);
                if let Some(k) = a.spec.position(index) {
                    let ended = Ended {
                        outcome,
                        at: now,
                        started: None,
                    };
                    a.ended.insert(k as u32, ended);
                }
                self.release_tasks(now, id, out);
            }
        }
    }

    /// The user cancelled array `id` as a whole: it releases no more tasks, and leaves the grid
    /// once those out have ended (the driver cancels them). Whether `id` is an array.
    pub(super) fn cancel_array(&mut self, id: JobId, out: &mut Vec<Effect>) -> bool {
        let Some(a) = self.arrays.arrays.get_mut(&id) else {
            return false;
        };
        // Its tasks not yet released will never be (all of them, while it waits for its
        // dependency).
        let skipped = a.skipped.iter().filter(|&&k| k >= a.next).count();
        a.tally.never_ran += (a.spec.len() - a.next - skipped) as u32;
        let (from, to) = (a.next, a.spec.len());
        let given_up: Vec<usize> = (from..to).filter(|k| !a.skipped.contains(k)).collect();
        a.skipped.clear();
        a.cancelled = true;
        a.next = a.spec.len();
        self.never_released(id, given_up.into_iter());
        let a = self.arrays.arrays.get_mut(&id).expect("just seen");
        if !a.going {
            if matches!(self.jobs.get(&id).map(|o| &o.at), Some(At::Blocked)) {
                self.deps.forget(id);
            }
            self.set_at(id, At::Array);
        }
        self.end_array_if_over(id, out);
        true
    }

    /// The user cancelled task `id`, not yet released by its array: it never will be. Whether
    /// `id` is such a task.
    pub(super) fn cancel_unreleased(&mut self, id: JobId, out: &mut Vec<Effect>) -> bool {
        let Some((array, k)) = self.arrays.owner(id) else {
            return false;
        };
        let a = self.arrays.arrays.get_mut(&array).expect("its owner");
        if k < a.next || a.cancelled || !a.skipped.insert(k) {
            return false;
        }
        a.tally.never_ran += 1;
        self.never_released(array, std::iter::once(k));
        let a = self.arrays.arrays.get_mut(&array).expect("its owner");
        if a.skipped.len() == a.spec.len() - a.next {
            // Every task left was skipped: nothing more to release.
            a.next = a.spec.len();
            a.skipped.clear();
        }
        self.end_array_if_over(array, out);
        true
    }

    /// Re-enters array `id` as its driver had it ([`super::Restored::Array`]): released up to
    /// position `next`, with its ended tasks `done`; its open tasks come back after it
    /// ([`GridRunner::task_back`]), and it releases nothing before the driver's next
    /// [`Input::Retry`](super::Input::Retry).
    pub(super) fn restore_array(
        &mut self,
        id: JobId,
        spec: ArraySpec,
        corr: Vec<JobId>,
        next: u32,
        done: &[(u32, Outcome)],
        started: Option<Time>,
    ) {
        self.enter_array(id, spec, corr);
        let a = self.arrays.arrays.get_mut(&id).expect("entered");
        a.next = (next as usize).min(a.spec.len());
        a.first_start = started;
        for &(k, outcome) in done {
            a.tally.add(outcome);
            // When it ended is gone: long enough ago for a task following it.
            let ended = Ended {
                outcome,
                at: 0,
                started: None,
            };
            a.ended.insert(k, ended);
            if k as usize >= a.next {
                a.skipped.insert(k as usize);
            }
        }
        a.going = true;
        self.set_at(id, At::Array);
    }

    /// Array `id`, ended before the driver restarted, is followed by an array to be restored:
    /// kept with how its tasks ended ([`Input::RestoreFollowed`](super::Input::RestoreFollowed)).
    pub(super) fn restore_followed(&mut self, id: JobId, spec: ArraySpec, done: &[(u32, Outcome)]) {
        if self.arrays.arrays.contains_key(&id) {
            return;
        }
        let ended = done
            .iter()
            .map(|&(k, outcome)| {
                let e = Ended {
                    outcome,
                    at: 0,
                    started: None,
                };
                (k, e)
            })
            .collect();
        let kept = Kept {
            spec,
            ended,
            followers: 0,
        };
        self.arrays.kept.entry(id).or_insert(kept);
    }

    /// The dependency of task `task` restored: its `aftercorr` terms, from its array's (the
    /// array's own dependency was met before the task was released).
    pub(super) fn task_dependency(&self, task: Task) -> Option<Box<Dependency>> {
        let corr = &self.arrays.arrays.get(&task.array)?.corr;
        self.corr_dependency(corr, task.index)
    }

    /// A task of an array came back after its driver restarted: it is out again.
    pub(super) fn task_back(&mut self, task: Task) {
        if let Some(a) = self.arrays.arrays.get_mut(&task.array) {
            a.out += 1;
            if let Some(k) = a.spec.position(task.index) {
                a.next = a.next.max(k + 1);
                let next = a.next;
                a.skipped.retain(|&s| s >= next);
            }
        }
    }

    /// What array `id` is doing, while it is in the grid.
    pub fn array(&self, id: JobId) -> Option<ArrayStatus> {
        let a = self.arrays.arrays.get(&id)?;
        Some(ArrayStatus {
            tasks: a.spec.len() as u32,
            released: a.next as u32,
            out: a.out,
            tally: a.tally,
            limit: a.spec.limit,
        })
    }

    /// The array of a task not yet released, and its index (`None` for any other id).
    pub fn unreleased(&self, id: JobId) -> Option<Task> {
        let (array, k) = self.arrays.owner(id)?;
        let a = &self.arrays.arrays[&array];
        (k >= a.next && !a.skipped.contains(&k)).then(|| Task {
            array,
            index: a.spec.index(k).expect("a position"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::DispatchKind;
    use crate::grid::tests::{on, runner};
    use crate::grid::{GridSettings, Input, Restored};
    use crate::model::{Dependency, Job};

    fn array(id: u64, text: &str) -> Job {
        let mut job = Job::new(id, 0, 1, 100, 100);
        job.array = Some(Box::new(ArraySpec::parse(text, 100_000).unwrap()));
        job
    }

    fn submit(job: Job) -> Input {
        Input::Submit {
            job,
            priority: None,
        }
    }

    /// The tasks released by `effects`: (id, index), each followed by its placement.
    fn tasks(effects: &[Effect]) -> Vec<(u64, u32)> {
        let mut got = Vec::new();
        for (i, e) in effects.iter().enumerate() {
            if let Effect::Task { job, index, .. } = e {
                assert!(
                    matches!(effects.get(i + 1), Some(Effect::Place { job: j, .. }) if j == job),
                    "{effects:?}"
                );
                got.push((job.0, *index));
            }
        }
        got
    }

    fn ended(job: u64, outcome: Outcome) -> Input {
        Input::Ended {
            job: JobId(job),
            site: 0,
            outcome,
            exit: None,
        }
    }

    /// `%3` keeps three tasks out; each end releases the next index; every index runs once and
    /// the array leaves the grid with the last.
    #[test]
    fn an_array_runs_each_index_once_with_at_most_n_out() {
        let mut r = runner(DispatchKind::LoadOrdering, &[8], GridSettings::default());
        let e = on(&mut r, 0, submit(array(10, "0-9:2,20%3")));
        assert_eq!(tasks(&e), [(11, 0), (12, 2), (13, 4)]);
        let mut seen: Vec<u32> = vec![0, 2, 4];
        let mut open: Vec<u64> = vec![11, 12, 13];
        let mut t = 1;
        while let Some(job) = open.first().copied() {
            open.remove(0);
            on(
                &mut r,
                t,
                Input::Claimed {
                    job: JobId(job),
                    site: 0,
                },
            );
            let e = on(&mut r, t + 1, ended(job, Outcome::Completed));
            for (id, index) in tasks(&e) {
                seen.push(index);
                open.push(id);
            }
            let status = r.array(JobId(10));
            assert!(status.is_none_or(|s| s.out <= 3), "{status:?}");
            if open.is_empty() {
                assert_eq!(
                    e.last(),
                    Some(&Effect::ArrayOver {
                        job: JobId(10),
                        outcome: Outcome::Completed,
                        started: Some(1),
                    })
                );
            }
            t += 2;
        }
        assert_eq!(seen, [0, 2, 4, 6, 8, 20]);
        assert!(!r.contains(JobId(10)));
    }

    /// One input releases at most 256 tasks and asks to be called back at once for the rest.
    #[test]
    fn a_large_array_is_released_in_steps() {
        let mut r = runner(DispatchKind::LoadOrdering, &[8], GridSettings::default());
        let e = on(&mut r, 5, submit(array(1, "0-599")));
        assert_eq!(tasks(&e).len(), TASKS_PER_INPUT);
        let defer = Effect::Continue { job: JobId(1) };
        assert_eq!(e.last(), Some(&defer));
        let e = on(&mut r, 5, Input::Retry { job: JobId(1) });
        assert_eq!(tasks(&e).len(), TASKS_PER_INPUT);
        assert_eq!(e.last(), Some(&defer));
        let e = on(&mut r, 5, Input::Retry { job: JobId(1) });
        assert_eq!(tasks(&e).len(), 600 - 2 * TASKS_PER_INPUT);
        assert_eq!(tasks(&e).last(), Some(&(601, 599)));
        let s = r.array(JobId(1)).unwrap();
        assert_eq!((s.tasks, s.released, s.out), (600, 600, 600));
    }

    /// Cancelled as a whole, an array releases nothing more and leaves once its tasks out have
    /// ended; a task cancelled before its release is never released.
    #[test]
    fn cancelling_an_array_or_an_unreleased_task() {
        let mut r = runner(DispatchKind::LoadOrdering, &[8], GridSettings::default());
        let e = on(&mut r, 0, submit(array(1, "0-5%2")));
        assert_eq!(tasks(&e), [(2, 0), (3, 1)]);
        // Task 4 (index 2) is skipped.
        assert_eq!(
            r.unreleased(JobId(4)),
            Some(Task {
                array: JobId(1),
                index: 2
            })
        );
        assert!(on(&mut r, 1, Input::Cancel { job: JobId(4) }).is_empty());
        assert_eq!(r.unreleased(JobId(4)), None);
        on(
            &mut r,
            1,
            Input::Claimed {
                job: JobId(2),
                site: 0,
            },
        );
        let e = on(&mut r, 2, ended(2, Outcome::Completed));
        assert_eq!(tasks(&e), [(5, 3)]);
        assert!(on(&mut r, 3, Input::Cancel { job: JobId(1) }).is_empty());
        assert_eq!(r.unreleased(JobId(6)), None, "nothing left to release");
        let s = r.array(JobId(1)).unwrap();
        assert_eq!((s.out, s.tally.completed, s.tally.never_ran), (2, 1, 3));
        assert!(on(&mut r, 4, ended(3, Outcome::Cancelled { started: false })).is_empty());
        let e = on(&mut r, 5, ended(5, Outcome::Cancelled { started: true }));
        let over = Effect::ArrayOver {
            job: JobId(1),
            outcome: Outcome::Failed,
            started: Some(1),
        };
        assert_eq!(e, [over]);
    }

    /// A job after an array waits for its every task; an array after a job releases nothing
    /// before it.
    #[test]
    fn dependencies_on_and_of_an_array() {
        let mut r = runner(DispatchKind::LoadOrdering, &[8], GridSettings::default());
        on(&mut r, 0, submit(Job::new(1, 0, 1, 100, 100)));
        let mut a = array(2, "0-1");
        a.after = Some(Box::new(Dependency::parse("afterok:1", None).unwrap()));
        let e = on(&mut r, 0, submit(a));
        assert!(matches!(e.as_slice(), [Effect::Blocked { .. }]), "{e:?}");
        let mut after = Job::new(9, 0, 1, 100, 100);
        after.after = Some(Box::new(Dependency::parse("afterany:2", None).unwrap()));
        on(&mut r, 0, submit(after));
        on(
            &mut r,
            1,
            Input::Claimed {
                job: JobId(1),
                site: 0,
            },
        );
        let e = on(&mut r, 2, ended(1, Outcome::Completed));
        assert_eq!(tasks(&e), [(3, 0), (4, 1)]);
        on(
            &mut r,
            3,
            Input::Claimed {
                job: JobId(3),
                site: 0,
            },
        );
        assert!(r.waits(JobId(9)));
        on(&mut r, 4, ended(3, Outcome::Failed));
        let e = on(&mut r, 5, ended(4, Outcome::Completed));
        assert!(
            matches!(
                e.as_slice(),
                [
                    Effect::ArrayOver {
                        outcome: Outcome::Failed,
                        ..
                    },
                    Effect::Place { job: JobId(9), .. }
                ]
            ),
            "{e:?}"
        );
    }

    /// Restored after its driver restarted, an array releases nothing before its open tasks are
    /// back (it asks to be called back), then keeps to its `%N` with them.
    #[test]
    fn a_restored_array_keeps_its_limit_with_its_tasks_back() {
        let mut r = runner(DispatchKind::LoadOrdering, &[8], GridSettings::default());
        let mut a = array(1, "0-5%2");
        let at = Restored::Array {
            next: 3,
            done: vec![(0, Outcome::Completed)],
            started: Some(0),
        };
        let e = on(
            &mut r,
            10,
            Input::Restore {
                job: a.clone(),
                priority: 1,
                at,
            },
        );
        assert_eq!(e, [Effect::Continue { job: JobId(1) }]);
        a.array = None;
        for (id, index) in [(3, 1), (4, 2)] {
            let mut t = a.clone();
            t.id = JobId(id);
            t.task = Some(Task {
                array: JobId(1),
                index,
            });
            let at = Restored::Site {
                site: 0,
                claimed: true,
                since: 5,
            };
            assert!(
                on(
                    &mut r,
                    10,
                    Input::Restore {
                        job: t,
                        priority: 1,
                        at
                    }
                )
                .is_empty()
            );
        }
        assert!(tasks(&on(&mut r, 10, Input::Retry { job: JobId(1) })).is_empty());
        let e = on(&mut r, 11, ended(3, Outcome::Completed));
        assert_eq!(tasks(&e), [(5, 3)]);
    }

    /// `aftercorr`: each task waits for the task of the same index of the array it follows; a
    /// failed one leaves its follower never started; a follower submitted later finds the ended
    /// ones; an array that is not followable is refused at the door.
    #[test]
    fn aftercorr_follows_task_by_task() {
        let mut r = runner(DispatchKind::LoadOrdering, &[8], GridSettings::default());
        // A = 1: tasks 2..=5 for indices 0..=3; B = 10: tasks 11..=13 for indices 1..=3.
        on(&mut r, 0, submit(array(1, "0-3")));
        let mut b = array(10, "1-3");
        b.after = Some(Box::new(Dependency::parse("aftercorr:1", None).unwrap()));
        let e = on(&mut r, 0, submit(b));
        let blocked: Vec<(u64, String)> = e
            .iter()
            .filter_map(|e| match e {
                Effect::Blocked { job, waits, .. } => Some((job.0, waits.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(
            blocked,
            [
                (11, "job 3 (aftercorr)".into()),
                (12, "job 4 (aftercorr)".into()),
                (13, "job 5 (aftercorr)".into())
            ]
        );
        let claim = |r: &mut GridRunner, t: i64, job: u64| {
            on(
                r,
                t,
                Input::Claimed {
                    job: JobId(job),
                    site: 0,
                },
            )
        };
        claim(&mut r, 1, 3);
        let e = on(&mut r, 2, ended(3, Outcome::Completed));
        assert!(
            matches!(e.as_slice(), [Effect::Place { job: JobId(11), .. }]),
            "{e:?}"
        );
        claim(&mut r, 2, 4);
        let e = on(&mut r, 3, ended(4, Outcome::Failed));
        assert!(
            matches!(e.as_slice(), [Effect::Unmet { job: JobId(12), why }]
                if why == "dependency never satisfied: job 4 failed (aftercorr)"),
            "{e:?}"
        );
        // Submitted later, a follower of index 1 finds it completed.
        let mut c = array(20, "1");
        c.after = Some(Box::new(Dependency::parse("aftercorr:1", None).unwrap()));
        let e = on(&mut r, 4, submit(c));
        assert!(
            matches!(
                e.as_slice(),
                [Effect::Task { .. }, Effect::Place { job: JobId(21), .. }]
            ),
            "{e:?}"
        );
        // A is cancelled with index 3 running and index 0 waiting: 13 waits for 5 to end.
        assert!(on(&mut r, 5, Input::Cancel { job: JobId(1) }).is_empty());
        let e = on(&mut r, 6, ended(5, Outcome::Cancelled { started: false }));
        assert!(
            e.iter()
                .any(|e| matches!(e, Effect::Unmet { job: JobId(13), .. })),
            "{e:?}"
        );
        // Not followable.
        let refused = |r: &mut GridRunner, job: Job| match on(r, 7, submit(job)).first() {
            Some(Effect::Refuse { why, .. }) => why.clone(),
            e => panic!("{e:?}"),
        };
        let mut lone = Job::new(30, 0, 1, 100, 100);
        lone.after = Some(Box::new(Dependency::parse("aftercorr:20", None).unwrap()));
        assert_eq!(
            refused(&mut r, lone),
            "job 30: `aftercorr` is for an array: this job is not one"
        );
        let mut wide = array(40, "0-9");
        wide.after = Some(Box::new(Dependency::parse("aftercorr:20", None).unwrap()));
        assert_eq!(
            refused(&mut r, wide),
            "job 40: index 0 of this array has no task in array 20"
        );
        let mut gone = array(60, "0");
        gone.after = Some(Box::new(Dependency::parse("aftercorr:2", None).unwrap()));
        assert!(refused(&mut r, gone).contains("job 2 is not an array in the grid"));
    }

    #[test]
    fn task_ids_are_the_array_s() {
        let mut r = runner(DispatchKind::LoadOrdering, &[8], GridSettings::default());
        on(&mut r, 0, submit(Job::new(5, 0, 1, 100, 100)));
        let e = on(&mut r, 0, submit(array(3, "0-3%1")));
        let Some(Effect::Refuse {
            refusal: Some(refusal),
            ..
        }) = e.first()
        else {
            panic!("{e:?}");
        };
        assert_eq!(refusal.field, crate::grid::Field::Array);
        assert_eq!(
            refusal.to_string(),
            "its tasks take the ids 4 to 7, and job 5 has one"
        );
        on(&mut r, 0, submit(array(10, "0-3%1")));
        let mut out = Vec::new();
        let twice = r.on(0, submit(Job::new(12, 0, 1, 100, 100)), &mut out);
        assert_eq!(twice, Err(crate::grid::GridError::DuplicateJob(JobId(12))));
    }
}
