//! The meta-scheduler's own bookkeeping of what it sent where (spec `two-level-grid-scheduler.md`
//! D4.2.1 Figure 12, D4.2.2 Figure 13, D4.2.4; D12 #9, #10): per cluster, the cumulative workload
//! `LoadArr_c[p]` and job count `CountArr_c[p]` of the jobs dispatched there with priority ≥ p and
//! not yet reported terminated. A job's workload is `estimate × processors` (D12 #9, configurable:
//! estimate only).

use super::Priority;
use crate::model::{ClusterId, Job, JobId};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// What counts as a job's workload in the Load array (D12 #9).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum LoadMeasure {
    /// `estimate × processors` (default).
    #[default]
    Area,
    /// `estimate` only.
    Estimate,
}

/// What the Ordering function counts (D12 #11): its data structure's cumulative count, or its
/// principle's count of the jobs of the same priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum OrderingCount {
    /// `CountArr_c[P]`: jobs of priority ≥ P (Figure 13; default).
    #[default]
    AtLeast,
    /// Jobs of priority exactly P.
    Equal,
}

/// One cluster's arrays, index `p` for priority `p` (index 0 unused).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ClusterArrays {
    /// The cluster.
    pub cluster: ClusterId,
    /// `LoadArr_c[p]`: workload of the jobs with priority ≥ p.
    pub load: Vec<i128>,
    /// `CountArr_c[p]`: number of jobs with priority ≥ p.
    pub count: Vec<u64>,
}

/// The arrays of every cluster and the jobs they account for.
#[derive(Clone, Debug, Default)]
pub struct PriorityArrays {
    max: Priority,
    measure: LoadMeasure,
    clusters: Vec<ClusterArrays>,
    jobs: FxHashMap<JobId, (ClusterId, Priority, i128)>,
}

impl PriorityArrays {
    /// Empty arrays for priorities `1..=max`.
    pub fn new(max: Priority, measure: LoadMeasure) -> PriorityArrays {
        PriorityArrays {
            max: max.max(1),
            measure,
            clusters: Vec::new(),
            jobs: FxHashMap::default(),
        }
    }

    /// Gives back the room a burst of jobs left ([`crate::structures::Shrink`]).
    pub fn compact(&mut self) {
        use crate::structures::Shrink;
        self.jobs.shrink_if_sparse();
    }

    fn ensure(&mut self, n: usize) {
        while self.clusters.len() < n {
            let id = ClusterId(self.clusters.len() as u32);
            let size = usize::from(self.max) + 1;
            self.clusters.push(ClusterArrays {
                cluster: id,
                load: vec![0; size],
                count: vec![0; size],
            });
        }
    }

    fn clamp(&self, p: Priority) -> usize {
        usize::from(p.clamp(1, self.max))
    }

    /// The workload of a job.
    pub fn workload(&self, job: &Job) -> i128 {
        match self.measure {
            LoadMeasure::Area => job.requested_area(),
            LoadMeasure::Estimate => i128::from(job.estimate),
        }
    }

    /// `LoadArr_c[p]`.
    pub fn load(&self, c: ClusterId, p: Priority) -> i128 {
        self.clusters
            .get(c.index())
            .map_or(0, |a| a.load[self.clamp(p)])
    }

    /// The number of jobs of priority exactly `p` (the Ordering principle's reading, D4.2.2):
    /// `CountArr_c[p] − CountArr_c[p + 1]`.
    pub fn count_equal(&self, c: ClusterId, p: Priority) -> u64 {
        let p = p.clamp(1, self.max);
        let above = if p == self.max {
            0
        } else {
            self.count(c, p + 1)
        };
        self.count(c, p) - above
    }

    /// `CountArr_c[p]`.
    pub fn count(&self, c: ClusterId, p: Priority) -> u64 {
        self.clusters
            .get(c.index())
            .map_or(0, |a| a.count[self.clamp(p)])
    }

    /// Records a dispatch.
    pub fn add(&mut self, job: &Job, p: Priority, c: ClusterId) {
        self.ensure(c.index() + 1);
        let w = self.workload(job);
        let top = self.clamp(p);
        let a = &mut self.clusters[c.index()];
        for q in 1..=top {
            a.load[q] += w;
            a.count[q] += 1;
        }
        self.jobs.insert(job.id, (c, top as Priority, w));
    }

    /// Removes a terminated (or returned) job; unknown jobs are ignored.
    pub fn remove(&mut self, job: JobId) {
        if let Some((c, p, w)) = self.jobs.remove(&job) {
            let a = &mut self.clusters[c.index()];
            for q in 1..=usize::from(p) {
                a.load[q] -= w;
                a.count[q] -= 1;
            }
        }
    }

    /// A snapshot of every cluster's arrays (for `sites` and `explain`).
    pub fn snapshot(&self, clusters: usize) -> Vec<ClusterArrays> {
        (0..clusters)
            .map(|i| {
                self.clusters
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| ClusterArrays {
                        cluster: ClusterId(i as u32),
                        load: vec![0; usize::from(self.max) + 1],
                        count: vec![0; usize::from(self.max) + 1],
                    })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figure_12_cumulative_arrays_and_maintenance() {
        let mut a = PriorityArrays::new(10, LoadMeasure::Estimate);
        let c = ClusterId(0);
        // Figure 12: 18 of workload at priorities > 4 and 7 at priority 4.
        let mut j1 = Job::new(1, 0, 1, 18, 18);
        let j2 = Job::new(2, 0, 1, 7, 7);
        a.add(&j1, 6, c);
        a.add(&j2, 4, c);
        assert_eq!(a.load(c, 5), 18);
        assert_eq!(a.load(c, 4), 25);
        for p in 1..=3 {
            assert_eq!(a.load(c, p), 25, "no job of priority {p}: same as 4");
        }
        assert_eq!((a.count(c, 4), a.count(c, 6), a.count(c, 7)), (2, 1, 0));
        // Exactly at a priority: one job at 4, one at 6, none at 5 or 10.
        let equal: Vec<u64> = [4, 5, 6, 10].map(|p| a.count_equal(c, p)).to_vec();
        assert_eq!(equal, vec![1, 0, 1, 0]);
        a.remove(JobId(1));
        assert_eq!((a.load(c, 4), a.load(c, 5), a.count(c, 1)), (7, 0, 1));
        a.remove(JobId(1));
        assert_eq!(a.load(c, 1), 7, "a second notice changes nothing");
        j1.procs = 4;
        let mut area = PriorityArrays::new(10, LoadMeasure::Area);
        area.add(&j1, 3, ClusterId(2));
        assert_eq!(area.load(ClusterId(2), 1), 72);
        assert_eq!(area.snapshot(3)[2].load[3], 72);
        assert_eq!(area.snapshot(3)[0].load[1], 0);
    }
}
