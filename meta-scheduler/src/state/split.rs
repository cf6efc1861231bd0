//! Jobs split over sites, at the meta level (Streit, thesis §6.3: a multi-site job runs as one
//! fragment per site, started together; the grid scheduler decides the split, §6.4): the state
//! side of their life. A release pass that splits a job starts its co-allocation (the job stays
//! ACCEPTED, without a site); once every site has committed its reservation the job gets its
//! fragments and is DISPATCHED, and each fragment is sent to its site into its reservation;
//! a co-allocation given up puts the job back in the meta-level queue. Each site's events move
//! its fragment: the job is QUEUED once every site has its fragment, RUNNING once every fragment
//! runs (the start skew is reported), and ends once every fragment has ended: COMPLETED when all
//! completed, else as its first fragment to end badly (a cancelled one only when none ended
//! otherwise), whose end also has the others killed; each ended fragment's reservation is let go.

use super::{Batch, FragmentKill, State, rank};
use crate::coallocate::Agreed;
use crate::decide::Split;
use gridsched_core::dispatch::Part;
use gridsched_core::model::ClusterId;
use gridsched_proto::v1::{self, JobState};

impl State {
    /// The fragments of a split job as the dispatcher's parts.
    pub(super) fn parts_of(&self, job: &v1::Job) -> Vec<Part> {
        job.fragments
            .iter()
            .filter_map(|f| {
                self.site_index(&f.site).map(|i| Part {
                    cluster: ClusterId(i as u32),
                    procs: f.processors,
                })
            })
            .collect()
    }

    fn site_list(&self, parts: &[Part]) -> String {
        let names: Vec<String> = parts
            .iter()
            .map(|p| format!("{} ({})", self.sites[p.cluster.index()].name, p.procs))
            .collect();
        names.join(" + ")
    }

    /// The release pass split job `id`: its co-allocation begins.
    pub(super) fn begin_split(
        &mut self,
        b: &mut Batch,
        id: u64,
        split: Split,
        dispatch: v1::DispatchExplanation,
        time: i64,
    ) {
        self.unplaced.remove(&id);
        self.decisions.entry(id).or_default().dispatch = Some(dispatch.clone());
        b.decisions.insert(id);
        let detail = format!(
            "co-allocating over {}, each fragment {} s with p = {} %: {}",
            self.site_list(&split.parts),
            split.length,
            split.overhead_pct,
            dispatch.decided_by
        );
        self.coallocating.insert(id, split);
        b.coallocate.push(id);
        self.update(b, id, time, |_| Some(detail));
    }

    /// Every site committed job `id`'s reservation: the job gets its fragments and is sent.
    /// False when the job ended meanwhile (cancelled): its reservations are to be let go.
    pub fn split_agreed(&mut self, b: &mut Batch, id: u64, agreed: &Agreed, time: i64) -> bool {
        let Some(split) = self.coallocating.remove(&id) else {
            return false;
        };
        if self.jobs.get(&id).is_none_or(|j| j.state().is_terminal()) {
            return false;
        }
        let fragments: Vec<v1::Fragment> = split
            .parts
            .iter()
            .zip(&agreed.reservations)
            .map(|(p, &(_, reservation))| v1::Fragment {
                site: self.sites[p.cluster.index()].name.clone(),
                processors: p.procs,
                reservation,
                state: JobState::Dispatched.into(),
                estimate_s: split.length,
                overhead_pct: split.overhead_pct,
                ..Default::default()
            })
            .collect();
        let detail = format!(
            "co-allocated over {} from {} ({} round{} of holds); fragments sent",
            self.site_list(&split.parts),
            agreed.start,
            agreed.rounds,
            if agreed.rounds == 1 { "" } else { "s" }
        );
        b.send_fragments.push(id);
        self.update(b, id, time, |j| {
            j.fragments = fragments;
            j.state = JobState::Dispatched.into();
            j.dispatch_time = Some(time);
            Some(detail)
        })
    }

    /// Job `id`'s co-allocation was given up (`why`): back in the meta-level queue.
    pub fn split_failed(&mut self, b: &mut Batch, id: u64, why: &str, time: i64) {
        let Some(split) = self.coallocating.remove(&id) else {
            return;
        };
        if self.jobs.get(&id).is_none_or(|j| j.state().is_terminal()) {
            return;
        }
        let first = split.parts.first().map_or(0, |p| p.cluster.index());
        self.plan_again(id, first, time);
        let detail = format!("co-allocation given up: {why}; back in the meta-level queue");
        self.update(b, id, time, |_| Some(detail));
    }

    /// Split job `id` (its first fragment at site `first`) goes back to the meta-level queue:
    /// the dispatcher forgets its split and holds it again, to be split anew by a release pass.
    fn plan_again(&mut self, id: u64, first: usize, time: i64) {
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        let spec = job.spec.clone().unwrap_or_default();
        let (priority, submit) = (job.priority, job.submit_time.unwrap_or(time));
        let only = self.pinned(job);
        self.decider.returned(time, id, first);
        if let Ok(model) = self.decider.job(&spec, id, submit) {
            self.decider
                .dispatch_within(time, &model, priority, None, only);
        }
        self.unplaced.insert(id);
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
        let mut kills = Vec::new();
        let mut ended = Vec::new();
        let mut skew = None;
        let mut requeued = None;
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
                    // Its reservation has served.
                    ended.push(f.reservation);
                    f.state = ev.state;
                    f.end_time = Some(ev.time);
                    f.exit_code = ev.exit_code;
                    f.reason.clone_from(&ev.detail);
                    if s != JobState::Completed {
                        for (m, other) in j.fragments.iter().enumerate() {
                            if m != k && !other.state().is_terminal() {
                                let why = format!("fragment {k} at {name} ended: {}", ev.detail);
                                kills.push((other.site.clone(), j.requeues, why));
                            }
                        }
                    }
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
                        requeued = Some(j.fragments[0].site.clone());
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
        if let Some(site) = requeued {
            let first = self.site_index(&site).unwrap_or(0);
            self.plan_again(ev.job_id, first, ev.time);
        }
        for (site, run, why) in kills {
            if let Some(s) = self.site_index(&site) {
                b.kill_fragments.push(FragmentKill {
                    site: s,
                    job: ev.job_id,
                    run,
                    why,
                });
            }
        }
        b.drop_reservations
            .extend(ended.into_iter().map(|r| (i, r)));
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
