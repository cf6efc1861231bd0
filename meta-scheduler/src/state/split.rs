//! Jobs split over sites, at the meta level (Streit, thesis §6.3: a multi-site job runs as one
//! fragment per site, started together; the grid scheduler decides the split, §6.4): the records
//! of their fragments. The grid runner co-allocates them (`effects.rs` carries out its holds and
//! commits); once every site has committed, the job gets its fragments and is DISPATCHED, and each
//! fragment is sent to its site into its reservation. Each site's events move its fragment: the
//! job is QUEUED once every site has its fragment, RUNNING once every fragment runs (the start
//! skew is reported), and ends once every fragment has ended: COMPLETED when all completed, else
//! as its first fragment to end badly (a cancelled one only when none ended otherwise). Each
//! fragment's end goes to the runner, which lets its reservation go and has the others killed
//! when it ended badly; a job whose fragment failed runs again while it has requeues left
//! (`links.fragment_requeues`), dispatched anew by the runner.

use super::{Batch, FragmentKill, State, rank};
use gridsched_core::grid::Input;
use gridsched_core::model::JobId;
use gridsched_proto::v1::{self, JobState};

impl State {
    /// The sites of a split with their processors, e.g. `a (4) + b (2)`.
    pub(super) fn site_list(&self, parts: impl IntoIterator<Item = (usize, u32)>) -> String {
        let names: Vec<String> = parts
            .into_iter()
            .map(|(site, procs)| format!("{} ({procs})", self.sites[site].name))
            .collect();
        names.join(" + ")
    }

    /// Site `i` has fragment `id` of its job, of run `run` (its Enqueue answered). A fragment no
    /// longer wanted there — another fragment of its run ended badly, or its job ended or was
    /// requeued as a later run, while the Enqueue was on its way (a kill sent meanwhile found
    /// nothing to kill) — is killed.
    pub fn fragment_sent(&mut self, b: &mut Batch, i: usize, id: u64, run: u32, time: i64) {
        let name = self.sites[i].name.clone();
        let bad = |f: &v1::Fragment| f.state().is_terminal() && f.state() != JobState::Completed;
        let wanted = self.jobs.get(&id).is_some_and(|j| {
            !j.state().is_terminal()
                && j.requeues == run
                && !j.fragments.iter().any(bad)
                && j.fragments
                    .iter()
                    .any(|f| f.site == name && !f.state().is_terminal())
        });
        if !wanted {
            b.kill_fragments.push(FragmentKill {
                site: i,
                job: id,
                run,
                why: format!("run {run} of job {id} is no longer wanted here"),
            });
            return;
        }
        self.update(b, id, time, |j| {
            let f = j.fragments.iter_mut().find(|f| f.site == name)?;
            if f.state() != JobState::Dispatched {
                return None;
            }
            f.state = JobState::Queued.into();
            Some(all_queued(j).unwrap_or_else(|| format!("fragment queued at {name}")))
        });
    }

    /// An event of site `i` about its fragment of job `ev.job_id`.
    pub(super) fn apply_fragment(&mut self, b: &mut Batch, i: usize, ev: &v1::JobEvent) {
        let name = self.sites[i].name.clone();
        let new = ev.state();
        let mut ended = None;
        let mut skew = None;
        let mut requeued = false;
        let requeues = self.fragment_requeues;
        self.update(b, ev.job_id, ev.time, |j| {
            if j.state().is_terminal() {
                return None;
            }
            let k = j.fragments.iter().position(|f| f.site == name)?;
            let f = &mut j.fragments[k];
            let cur = f.state();
            match new {
                _ if cur.is_terminal() => return None,
                JobState::Queued if cur == JobState::Dispatched => {
                    f.state = JobState::Queued.into();
                    if let Some(all) = all_queued(j) {
                        return Some(all);
                    }
                }
                JobState::Running if cur != JobState::Running => {
                    f.state = JobState::Running.into();
                    f.machine.clone_from(&ev.machine);
                    f.start_time = Some(ev.time);
                }
                s if s.is_terminal() => {
                    ended = Some(s == JobState::Completed);
                    f.state = ev.state;
                    f.end_time = Some(ev.time);
                    f.exit_code = ev.exit_code;
                    f.reason.clone_from(&ev.detail);
                }
                _ => return None,
            }
            let n = j.fragments.len();
            let states: Vec<JobState> = j.fragments.iter().map(|f| f.state()).collect();
            if states.iter().all(|s| s.is_terminal()) {
                let first_bad = j
                    .fragments
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| f.state() != JobState::Completed)
                    // A fragment cancelled (by the user, or because another ended) explains
                    // the job's end only when none ended otherwise.
                    .min_by_key(|(r, f)| (f.state() == JobState::Cancelled, f.end_time, *r));
                match first_bad {
                    None => {
                        j.state = JobState::Completed.into();
                        j.exit_code = Some(0);
                        j.reason = format!("all {n} fragments completed");
                    }
                    // A fragment that failed (not one killed or cancelled): the job runs
                    // again, as a new run, while it has requeues left.
                    Some((r, f))
                        if matches!(f.state(), JobState::Failed | JobState::Lost)
                            && j.requeues < requeues =>
                    {
                        let why = format!("fragment {r} of {n} at {}: {}", f.site, f.reason);
                        requeued = true;
                        j.requeues += 1;
                        j.state = JobState::Accepted.into();
                        j.fragments.clear();
                        (j.start_time, j.dispatch_time, j.machine) = (None, None, None);
                        j.reason = format!("requeued after {why}");
                        return Some(format!(
                            "{}; back in the meta-level queue for run {} of at most {}",
                            j.reason,
                            j.requeues,
                            requeues + 1
                        ));
                    }
                    Some((r, f)) => {
                        j.state = f.state;
                        j.exit_code = f.exit_code;
                        j.reason = format!("fragment {r} of {n} at {}: {}", f.site, f.reason);
                    }
                }
                j.end_time = Some(ev.time);
                return Some(j.reason.clone());
            }
            if states.iter().all(|&s| s == JobState::Running) && j.state() != JobState::Running {
                let starts: Vec<i64> = j.fragments.iter().filter_map(|f| f.start_time).collect();
                let (first, last) = (starts.iter().min(), starts.iter().max());
                j.state = JobState::Running.into();
                j.start_time = last.copied();
                j.machine.clone_from(&j.fragments[0].machine);
                let s = last.zip(first).map_or(0, |(l, f)| l - f);
                skew = Some(s);
                return Some(format!("every fragment runs ({n} sites, start skew {s} s)"));
            }
            Some(format!("{name}: {}", ev.detail))
        });
        // The runner lets the fragment's reservation go, has the others killed when it ended
        // badly, and is done with the job after its last fragment.
        if let Some(ok) = ended {
            let input = Input::FragmentEnded {
                job: JobId(ev.job_id),
                site: i,
                ok,
                again: requeued,
            };
            self.drive(b, ev.time, input);
        }
        if requeued {
            self.requeue(b, ev.time, ev.job_id);
        }
        if let Some(s) = skew {
            self.metrics.start_skew.observe(s as f64);
        }
    }
}

/// When the last fragment of split job `j` reaches its site's queue, the job is QUEUED: the
/// event's detail.
fn all_queued(j: &mut v1::Job) -> Option<String> {
    let all = j.fragments.iter().all(|f| rank(f.state()) >= 2);
    (all && j.state() == JobState::Dispatched).then(|| {
        j.state = JobState::Queued.into();
        "every fragment queued at its site, inside its reservation".to_string()
    })
}

#[cfg(test)]
mod tests;
