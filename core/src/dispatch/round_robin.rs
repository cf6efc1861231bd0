//! Round robin over the clusters that can run a job: the simplest dispatch strategy, a baseline
//! and the live grid's default until a configuration names another.

use super::{Dispatcher, GridState, Placement, Priority, Reason, refuse};
use crate::model::{ClusterId, Job, JobId, Time};

/// Sends each job to the next eligible cluster after the previous choice, in id order.
#[derive(Clone, Debug, Default)]
pub struct RoundRobin {
    next: u32,
}

impl RoundRobin {
    /// A round robin starting at cluster 0.
    pub fn new() -> RoundRobin {
        RoundRobin::default()
    }
}

impl Dispatcher for RoundRobin {
    fn describe(&self) -> String {
        "round-robin".into()
    }

    fn dispatch(&mut self, _now: Time, job: &Job, _p: Priority, grid: &GridState) -> Placement {
        let n = grid.caps.len() as u32;
        for k in 0..n {
            let c = ClusterId((self.next + k) % n);
            if grid.caps[c.index()].can_run(job) {
                self.next = (c.0 + 1) % n;
                return Placement::Cluster(c);
            }
        }
        refuse(job)
    }

    fn last_reason(&self) -> Option<Reason> {
        Some(Reason::Turn)
    }

    fn job_ended(&mut self, _now: Time, _job: JobId, _cluster: ClusterId) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::ClusterCaps;
    use crate::model::LicenceId;

    fn caps(id: u32, procs: u32, lic: &[u16]) -> ClusterCaps {
        ClusterCaps {
            cluster: ClusterId(id),
            up: true,
            total_procs: u64::from(procs) * 4,
            max_machine_procs: procs,
            licences: lic.iter().map(|&l| LicenceId(l)).collect(),
            benchmark: None,
            max_memory_kb: None,
        }
    }

    #[test]
    fn rotates_over_eligible_clusters_and_refuses_the_impossible() {
        let grid = GridState {
            caps: vec![caps(0, 8, &[]), caps(1, 16, &[1]), caps(2, 8, &[1])],
            load: None,
            ..Default::default()
        };
        let mut rr = RoundRobin::new();
        let small = Job::new(1, 0, 4, 10, 10);
        let picks: Vec<_> = (0..4).map(|_| rr.dispatch(0, &small, 1, &grid)).collect();
        assert_eq!(
            picks,
            [0, 1, 2, 0].map(|c| Placement::Cluster(ClusterId(c)))
        );
        let mut lic = Job::new(2, 0, 4, 10, 10);
        lic.licences = vec![LicenceId(1)];
        assert_eq!(
            rr.dispatch(0, &lic, 1, &grid),
            Placement::Cluster(ClusterId(1))
        );
        assert_eq!(
            rr.dispatch(0, &lic, 1, &grid),
            Placement::Cluster(ClusterId(2))
        );
        let wide = Job::new(3, 0, 32, 10, 10);
        assert!(matches!(
            rr.dispatch(0, &wide, 1, &grid),
            Placement::Refuse(_)
        ));
    }
}
