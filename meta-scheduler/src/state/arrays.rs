//! Job arrays on the meta-scheduler's records (Slurm's `--array`; the release of tasks and the
//! `%N` limit are the grid runner's): an array is one record, written once at its submission;
//! each task the runner releases becomes a record of its own (the array's spec, its index in
//! GRIDSCHED_ARRAY_INDEX), written in the commit that dispatches it; the array's record counts
//! how its tasks ended and takes the state of the whole.

use super::{Batch, State, outcome_of};
use gridsched_core::grid::Restored;
use gridsched_core::model::{ArraySpec, JobId, Task};
use gridsched_proto::v1::{self, JobState};

/// The environment variable holding a task's array id.
pub const ARRAY_ID_VAR: &str = "GRIDSCHED_ARRAY_ID";
/// The environment variable holding a task's index.
pub const ARRAY_INDEX_VAR: &str = "GRIDSCHED_ARRAY_INDEX";

/// The array spec of a record (none for a job that is not an array).
pub fn spec_of(job: &v1::Job) -> Option<ArraySpec> {
    let text = job.spec.as_ref()?.array.as_deref()?;
    text.parse::<ArraySpec>().ok()
}

/// The progress of array `a` before any task is released.
pub fn fresh_progress(a: &ArraySpec) -> v1::ArrayProgress {
    v1::ArrayProgress {
        tasks: a.len() as u32,
        limit: a.limit,
        ..Default::default()
    }
}

impl State {
    /// The runner released task `index` of `array` as job `id`: its record.
    pub(super) fn add_task(&mut self, b: &mut Batch, time: i64, array: u64, id: u64, index: u32) {
        let Some(a) = self.jobs.get(&array) else {
            return;
        };
        let job = task_record(a, id, index, time, self.start_claims);
        self.jobs.insert(id, job);
        b.jobs.insert(id);
        self.metrics.array_tasks.inc();
    }

    /// Every task of array `id` has ended (or will never be released): the array ends, FAILED
    /// when a task failed, COMPLETED when every task completed, CANCELLED otherwise.
    pub(super) fn array_over(&mut self, b: &mut Batch, time: i64, id: u64) {
        self.update(b, id, time, |j| {
            if j.state().is_terminal() {
                return None;
            }
            let p = j.array.unwrap_or_default();
            let state = if p.failed > 0 {
                JobState::Failed
            } else if p.completed == p.tasks {
                JobState::Completed
            } else {
                JobState::Cancelled
            };
            j.state = state.into();
            j.end_time = Some(time);
            let never = p.tasks.saturating_sub(p.completed + p.failed + p.cancelled);
            let mut said = format!(
                "{} tasks: {} completed, {} failed, {} cancelled",
                p.tasks, p.completed, p.failed, p.cancelled
            );
            if never > 0 {
                said.push_str(&format!(", {never} never released"));
            }
            j.reason.clone_from(&said);
            Some(said)
        });
    }

    /// The tasks of array `id` not ended (by id), when `id` is an array not ended.
    pub(crate) fn open_tasks(&self, id: u64) -> Option<Vec<u64>> {
        let a = self.jobs.get(&id)?;
        let spec = spec_of(a)?;
        if a.state().is_terminal() {
            return None;
        }
        let last = spec.last_id(JobId(id)).0;
        Some(
            self.jobs
                .range(id + 1..=last)
                .filter(|(_, t)| !t.state().is_terminal())
                .map(|(&t, _)| t)
                .collect(),
        )
    }

    /// Task of `array` changed to `state` (from a live state when `was_live`): the array counts
    /// its end, and runs from its first task's start.
    pub(super) fn task_changed(
        &mut self,
        b: &mut Batch,
        array: u64,
        was_live: bool,
        state: JobState,
        started: Option<i64>,
        time: i64,
    ) {
        let Some(a) = self.jobs.get_mut(&array) else {
            return;
        };
        let mut changed = false;
        if was_live && state.is_terminal() {
            let p = a.array.get_or_insert_default();
            match state {
                JobState::Completed => p.completed += 1,
                JobState::Cancelled => p.cancelled += 1,
                _ => p.failed += 1,
            }
            changed = true;
        }
        let begins = a.state() == JobState::Accepted && started.is_some();
        if changed && !begins {
            b.jobs.insert(array);
        }
        if begins {
            let at = started.unwrap_or(time);
            self.update(b, array, time, |j| {
                j.state = JobState::Running.into();
                j.start_time = Some(at);
                Some("its first task started".into())
            });
        }
    }

    /// Where array `id`'s tasks stand: its stored counts of ended tasks, its tasks in memory for
    /// the others.
    pub(crate) fn progress(&self, id: u64, p: &mut v1::ArrayProgress) {
        let (mut queued, mut running) = (0, 0);
        if p.tasks == 0 {
            return;
        }
        let last = id + u64::from(p.tasks);
        for (_, t) in self.jobs.range(id + 1..=last) {
            match t.state() {
                JobState::Running | JobState::Suspended => running += 1,
                s if !s.is_terminal() => queued += 1,
                _ => {}
            }
        }
        p.queued = queued;
        p.running = running;
        let ended = p.completed + p.failed + p.cancelled;
        p.pending = p.tasks.saturating_sub(ended + queued + running);
    }

    /// Task `id`, not yet released by its array, is cancelled: it gets its record, CANCELLED,
    /// and the runner never releases it. Its record, when it is such a task.
    pub(crate) fn cancel_unreleased(
        &mut self,
        b: &mut Batch,
        id: u64,
        time: i64,
        reason: &str,
    ) -> Option<v1::Job> {
        let task = self.decider.runner().unreleased(JobId(id))?;
        let array = self.jobs.get(&task.array.0)?;
        let job = task_record(array, id, task.index, time, self.start_claims);
        self.jobs.insert(id, job);
        self.drive(
            b,
            time,
            gridsched_core::grid::Input::Cancel { job: JobId(id) },
        );
        self.update(b, id, time, |j| {
            j.state = JobState::Cancelled.into();
            j.end_time = Some(time);
            j.reason = reason.to_string();
            Some(reason.to_string())
        });
        self.jobs.get(&id).cloned()
    }

    /// A task not yet released, as a client sees it (no record exists before its release).
    pub(crate) fn unreleased_view(&self, id: u64) -> Option<v1::Job> {
        let task = self.decider.runner().unreleased(JobId(id))?;
        let array = self.jobs.get(&task.array.0)?;
        let mut job = task_record(
            array,
            id,
            task.index,
            array.submit_time.unwrap_or_default(),
            false,
        );
        job.reason = format!("waits in array {}: {}", task.array, self.release_wait(task));
        Some(job)
    }

    /// Why the array of unreleased `task` has not released it yet.
    pub(crate) fn release_wait(&self, task: Task) -> String {
        let runner = self.decider.runner();
        match runner.array(task.array) {
            _ if runner.waits(task.array) => "the array waits for its dependency".into(),
            Some(s) if s.limit.is_some_and(|n| s.out >= n) => format!(
                "{} of its tasks out, its limit (%{})",
                s.out,
                s.limit.unwrap_or_default()
            ),
            _ => "earlier indices first".into(),
        }
    }

    /// The arrays open array `model` follows (`aftercorr`) that ended before the restart: how
    /// their tasks ended, from their records (through `find`), for the runner to keep.
    pub(super) fn followed_restored(
        &self,
        model: &gridsched_core::model::Job,
        find: &impl Fn(u64) -> Option<v1::Job>,
    ) -> Vec<gridsched_core::grid::Input> {
        let Some(dep) = model.after.as_deref().filter(|_| model.array.is_some()) else {
            return Vec::new();
        };
        let corr = gridsched_core::model::Condition::Corr;
        dep.terms
            .iter()
            .filter(|t| t.on == corr)
            .filter_map(|t| {
                let a = find(t.job.0).filter(|a| a.state().is_terminal())?;
                let spec = spec_of(&a)?;
                let done = (0..spec.len())
                    .filter_map(|k| {
                        let task = find(ArraySpec::task_id(t.job, k).0)?;
                        task.state()
                            .is_terminal()
                            .then(|| (k as u32, outcome_of(&task)))
                    })
                    .collect();
                Some(gridsched_core::grid::Input::RestoreFollowed {
                    array: t.job,
                    spec,
                    done,
                })
            })
            .collect()
    }

    /// Where array record `job` stood, for its restore: how far its tasks were released and how
    /// the released ones that ended ended (their records, through `find`).
    pub(super) fn array_restored(
        &self,
        job: &v1::Job,
        spec: &ArraySpec,
        find: &impl Fn(u64) -> Option<v1::Job>,
    ) -> Restored {
        let mut next = 0;
        let mut done = Vec::new();
        for k in 0..spec.len() {
            let id = ArraySpec::task_id(JobId(job.id), k).0;
            let Some(t) = find(id) else {
                continue;
            };
            next = k as u32 + 1;
            if t.state().is_terminal() {
                done.push((k as u32, outcome_of(&t)));
            }
        }
        Restored::Array {
            next,
            done,
            // Its record took its first task's start.
            started: job.start_time,
        }
    }
}

/// The record of task `index` (id `id`) of `array`: the array's spec without `array`, its
/// dependency (met before the task's release; an `aftercorr` term is the runner's to give the
/// task) nor its client token, its index and array id in the command's environment.
fn task_record(array: &v1::Job, id: u64, index: u32, time: i64, claims: bool) -> v1::Job {
    let mut spec = array.spec.clone().unwrap_or_default();
    spec.array = None;
    spec.after = None;
    spec.client_token = None;
    if let Some(c) = spec.command.as_mut() {
        c.env.insert(ARRAY_ID_VAR.into(), array.id.to_string());
        c.env.insert(ARRAY_INDEX_VAR.into(), index.to_string());
    }
    v1::Job {
        id,
        spec: Some(spec),
        state: JobState::Accepted.into(),
        priority: array.priority,
        submit_time: Some(time),
        start_claims: claims,
        array_id: Some(array.id),
        array_index: Some(index),
        ..Default::default()
    }
}

/// The model task of a record, when it is a task.
pub(super) fn task_of(job: &v1::Job) -> Option<Task> {
    Some(Task {
        array: JobId(job.array_id?),
        index: job.array_index?,
    })
}
