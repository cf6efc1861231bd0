//! Job arrays in the grid runner (Slurm's `--array` semantics, as its manual documents them): an
//! array is admitted and classified once, waits for its dependency like any job, then releases
//! its tasks in index order, each a job of its own (id `A + 1 + k`, the array's priority), with
//! at most `%N` of them dispatched and not ended at once. The array stays in the grid until its
//! last task has ended, and then leaves it with one outcome, which is what the jobs depending on
//! the array see.
//!
//! The grid's reading where Slurm is silent or differs: `%N` counts tasks sent to sites and not
//! ended (a task queued at a site counts, since the grid can no longer stop it from starting);
//! one input releases at most [`TASKS_PER_INPUT`] tasks and asks the driver to come back for the
//! rest ([`Effect::Defer`] to the same instant), so a 10,000-task array costs a submission little
//! and no input runs long.

use super::{At, Cause, Effect, GridRunner};
use crate::dispatch::Priority;
use crate::model::{ArraySpec, JobId, Outcome, Task, Time};
use rustc_hash::FxHashSet;
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
    /// Tasks that left the grid, to settle: the array and how.
    changes: VecDeque<(JobId, Outcome)>,
}

impl Book {
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
    /// Enters array `id` (already entered as a job, its spec taken from it).
    pub(super) fn enter_array(&mut self, id: JobId, spec: ArraySpec) {
        self.arrays.arrays.insert(id, Array::new(spec));
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
    /// [`Effect::Defer`] to `now` asks for the rest).
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
                out.push(Effect::Defer {
                    job: id,
                    until: now,
                });
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
            job.id = task;
            job.after = None;
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
        self.dispatch(now, id, Cause::Submitted, out);
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
        self.arrays.arrays.remove(&id);
        self.remove(id, Some(outcome));
        out.push(Effect::ArrayOver {
            job: id,
            outcome,
            started,
        });
    }

    /// Task `task` left the grid with `outcome` (noted while removing it; settled after the
    /// input).
    pub(super) fn task_left(&mut self, task: Task, outcome: Outcome) {
        self.arrays.changes.push_back((task.array, outcome));
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
        while let Some((id, outcome)) = self.arrays.changes.pop_front() {
            if let Some(a) = self.arrays.arrays.get_mut(&id) {
                a.out = a.out.saturating_sub(1);
                a.tally.add(outcome);
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
        a.skipped.clear();
        a.cancelled = true;
        a.next = a.spec.len();
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
        next: u32,
        done: &[(u32, Outcome)],
        started: Option<Time>,
    ) {
        let mut a = Array::new(spec);
        a.next = (next as usize).min(a.spec.len());
        a.first_start = started;
        for &(k, outcome) in done {
            a.tally.add(outcome);
            if k as usize >= a.next {
                a.skipped.insert(k as usize);
            }
        }
        a.going = true;
        self.arrays.arrays.insert(id, a);
        self.set_at(id, At::Array);
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
        let defer = Effect::Defer {
            job: JobId(1),
            until: 5,
        };
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
        assert_eq!(
            e,
            [Effect::Defer {
                job: JobId(1),
                until: 10
            }]
        );
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
