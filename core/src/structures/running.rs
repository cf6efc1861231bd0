//! The running jobs of one machine with their predicted ends (start + estimate, or a later time
//! once a job overruns), aggregated by end time so that the free processors at any future instant
//! and the EASY shadow time come from one ordered walk.
//!
//! Semantics follow `reference-semantics.md`: a job occupies its processors over
//! `[start, predicted_end)`, so at its predicted end its processors count as free even before its
//! termination is reported (the reference frees a job's slot at its estimated end and only the
//! unused tail of a job that ends early at its termination event).

use crate::model::{Duration, JobId, Time};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// One running job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunEntry {
    /// Processors it occupies.
    pub procs: u32,
    /// When it started.
    pub start: Time,
    /// When the policy expects it to end.
    pub end: Time,
}

/// Running jobs and their predicted ends.
#[derive(Clone, Debug, Default)]
pub struct RunningSet {
    jobs: FxHashMap<JobId, RunEntry>,
    /// Predicted end -> processors released then.
    ends: BTreeMap<Time, u64>,
    busy: u64,
}

impl RunningSet {
    /// An empty set.
    pub fn new() -> RunningSet {
        RunningSet::default()
    }

    /// Number of running jobs.
    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    /// Whether no job runs.
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Processors of all running jobs.
    pub fn busy(&self) -> u64 {
        self.busy
    }

    /// The predicted ends after `t` and the processors each releases, in time order.
    pub fn ends_after(&self, t: Time) -> impl Iterator<Item = (Time, u64)> + '_ {
        self.ends.range(t + 1..).map(|(&e, &p)| (e, p))
    }

    /// A running job.
    pub fn get(&self, id: JobId) -> Option<&RunEntry> {
        self.jobs.get(&id)
    }

    /// Records a start.
    pub fn insert(&mut self, id: JobId, procs: u32, start: Time, estimate: Duration) {
        let e = RunEntry {
            procs,
            start,
            end: start + estimate,
        };
        if let Some(old) = self.jobs.insert(id, e) {
            self.unindex(old);
        }
        *self.ends.entry(e.end).or_insert(0) += u64::from(procs);
        self.busy += u64::from(procs);
    }

    /// Removes a job (its termination); returns what it was.
    pub fn remove(&mut self, id: JobId) -> Option<RunEntry> {
        let e = self.jobs.remove(&id)?;
        self.unindex(e);
        Some(e)
    }

    /// Moves a job's predicted end (an overrun).
    pub fn set_end(&mut self, id: JobId, end: Time) -> Option<RunEntry> {
        let old = *self.jobs.get(&id)?;
        self.unindex(old);
        let new = RunEntry { end, ..old };
        self.jobs.insert(id, new);
        *self.ends.entry(end).or_insert(0) += u64::from(new.procs);
        self.busy += u64::from(new.procs);
        Some(old)
    }

    fn unindex(&mut self, e: RunEntry) {
        if let Some(v) = self.ends.get_mut(&e.end) {
            *v -= u64::from(e.procs);
            if *v == 0 {
                self.ends.remove(&e.end);
            }
        }
        self.busy -= u64::from(e.procs);
    }

    /// Processors free at instant `t` on a machine of `capacity`: those not held by a job whose
    /// predicted end is after `t`.
    pub fn free_at(&self, t: Time, capacity: u32) -> u32 {
        let released: u64 = self.ends.range(..=t).map(|(_, p)| *p).sum();
        let held = self.busy - released;
        u64::from(capacity).saturating_sub(held) as u32
    }

    /// The earliest instant `s >= now` at which `need` processors are free, and how many
    /// processors are free at `s` beyond `need` (the EASY shadow time and extra processors).
    /// `None` when `need` exceeds the capacity.
    pub fn shadow(&self, now: Time, capacity: u32, need: u32) -> Option<(Time, u32)> {
        let mut avail = self.free_at(now, capacity);
        if avail >= need {
            return Some((now, avail - need));
        }
        for (&t, &p) in self.ends.range(now + 1..) {
            avail = avail.saturating_add(p as u32).min(capacity);
            if avail >= need {
                return Some((t, avail - need));
            }
        }
        None
    }

    /// All running jobs, ordered by job id (for inspection; not used on hot paths).
    pub fn iter_sorted(&self) -> Vec<(JobId, RunEntry)> {
        let mut v: Vec<_> = self.jobs.iter().map(|(k, v)| (*k, *v)).collect();
        v.sort_by_key(|(k, _)| *k);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_and_shadow_follow_predicted_ends() {
        let mut r = RunningSet::new();
        r.insert(JobId(1), 4, 0, 100); // ends 100
        r.insert(JobId(2), 3, 10, 40); // ends 50
        r.insert(JobId(3), 2, 20, 30); // ends 50
        assert_eq!(r.busy(), 9);
        assert_eq!(r.free_at(20, 10), 1);
        assert_eq!(r.free_at(50, 10), 6, "jobs ending at 50 are free at 50");
        // need 5: at 50 both jobs ending there release together -> 6 free, extra 1
        assert_eq!(r.shadow(20, 10, 5), Some((50, 1)));
        assert_eq!(r.shadow(20, 10, 1), Some((20, 0)));
        assert_eq!(r.shadow(20, 10, 11), None);
        r.set_end(JobId(2), 120);
        assert_eq!(r.shadow(20, 10, 5), Some((100, 2)));
        assert_eq!(r.remove(JobId(1)).map(|e| e.procs), Some(4));
        assert_eq!(r.free_at(20, 10), 5);
        assert!(r.remove(JobId(1)).is_none());
        assert_eq!(r.len(), 2);
    }
}
