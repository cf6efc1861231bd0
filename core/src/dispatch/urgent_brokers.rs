//! The grid-broker policies for urgent jobs of Kurowski, Oleksiak, Piątek & Węglarz ("Impact of
//! urgent computing on resource management policies, schedules and resources utilization", §4;
//! spec `gang-urgent-scaling.md` B.4, G-B4, G-B5). Typical jobs always go by load balancing (the
//! site with the fewest waiting jobs, ties to the lowest id: the `least-loaded` broker); urgent
//! jobs go:
//!
//! * **lb-consolidation**: always to the dedicated site ([`super::DispatchConfig::preferred`]);
//! * **resource-priority**: to the preferred site if it can run the job now, else by load
//!   balancing;
//! * **mct-preferred** (the paper's "resource priority with MCT and LB"): to the preferred site if
//!   it can run the job now, else to the site of the earliest completion of the job under the
//!   sites' urgent policy, ties to the lowest id.
//!
//! A site *can run an urgent job now* when its processors neither held nor reserved by urgent
//! jobs cover the job (G-B4: typical jobs count as available, since they are preemptible). The
//! completion at a site is [`urgent_start`] plus the job's estimate (G-B5): the site's urgent jobs
//! are served in arrival order, each starting once the processors not held by urgent jobs cover
//! it. Plain load balancing for both classes is `least-loaded`; a preferred site that cannot run
//! the job at all (too small, down, a licence it lacks) is passed over.

use super::brokers::load_of;
use super::{Broker, BrokerKind, Dispatcher, GridState, Measure, Placement};
use super::{Priority, Reason, UrgentLoad, refuse};
use crate::model::{ClusterId, Job, JobId, Time};

/// Which urgent broker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UrgentBrokerKind {
    /// Urgent jobs to the dedicated site.
    Consolidation,
    /// Urgent jobs to the preferred site when it can run them now, else load balancing.
    ResourcePriority,
    /// Urgent jobs to the preferred site when it can run them now, else the earliest completion.
    MinCompletion,
}

/// An urgent-aware broker.
#[derive(Clone, Debug)]
pub struct UrgentBroker {
    kind: UrgentBrokerKind,
    preferred: ClusterId,
    lb: Broker,
    last: Option<Reason>,
}

impl UrgentBroker {
    /// A broker of `kind` whose preferred (dedicated) site is `preferred`.
    pub fn new(kind: UrgentBrokerKind, preferred: ClusterId) -> UrgentBroker {
        UrgentBroker {
            kind,
            preferred,
            lb: Broker::new(BrokerKind::LeastLoaded),
            last: None,
        }
    }
}

/// The earliest instant from `now` at which an urgent job of `procs` processors starts on a site
/// of `total` processors with the urgent jobs `urgent` (running ones until their predicted ends;
/// waiting ones served first, in order, for their estimates): the urgent jobs never preempt one
/// another, and typical jobs do not count (they are preempted). `None` when it never fits.
pub fn urgent_start(total: u32, urgent: &[UrgentLoad], now: Time, procs: u32) -> Option<Time> {
    if procs > total {
        return None;
    }
    // (end, procs) of the urgent jobs holding processors, as the queue is served.
    let mut held: Vec<(Time, u32)> = urgent
        .iter()
        .filter_map(|u| u.end.map(|e| (e.max(now), u.procs)))
        .collect();
    let mut busy: u32 = held.iter().map(|h| h.1).sum();
    let mut t = now;
    let waiting = urgent.iter().filter(|u| u.end.is_none());
    for need in waiting
        .map(|u| (u.procs.min(total), u.estimate.max(1)))
        .chain(std::iter::once((procs, 0)))
    {
        held.sort_unstable();
        while total - busy.min(total) < need.0 {
            let (end, p) = held.remove(0);
            busy -= p;
            t = t.max(end);
        }
        if need.1 == 0 {
            return Some(t);
        }
        held.push((t + need.1, need.0));
        busy += need.0;
    }
    unreachable!("the job itself ends the walk")
}

impl Dispatcher for UrgentBroker {
    fn describe(&self) -> String {
        let name = match self.kind {
            UrgentBrokerKind::Consolidation => "lb-consolidation",
            UrgentBrokerKind::ResourcePriority => "resource-priority",
            UrgentBrokerKind::MinCompletion => "mct-preferred",
        };
        format!("{name} (preferred {})", self.preferred)
    }

    fn dispatch(&mut self, now: Time, job: &Job, p: Priority, grid: &GridState) -> Placement {
        self.last = None;
        if !job.is_urgent() {
            let placed = self.lb.dispatch(now, job, p, grid);
            self.last = self.lb.last_reason();
            return placed;
        }
        let eligible: Vec<ClusterId> = grid.eligible(job).collect();
        if eligible.is_empty() {
            return refuse(job);
        }
        let total = |c: ClusterId| grid.caps[c.index()].total_procs.min(u64::from(u32::MAX)) as u32;
        let not_urgent = |c: ClusterId| {
            let held: u32 = load_of(grid, c).urgent.iter().map(|u| u.procs).sum();
            total(c).saturating_sub(held)
        };
        let preferred = eligible.contains(&self.preferred).then_some(self.preferred);
        if let Some(c) = preferred {
            let free = not_urgent(c);
            if self.kind == UrgentBrokerKind::Consolidation {
                self.last = Some(Reason::Consolidated);
                return Placement::Cluster(c);
            }
            if free >= job.procs {
                self.last = Some(Reason::Preferred { free });
                return Placement::Cluster(c);
            }
        }
        match self.kind {
            UrgentBrokerKind::MinCompletion => {
                let completion = |c: ClusterId| {
                    let l = load_of(grid, c);
                    urgent_start(total(c), &l.urgent, now, job.procs)
                        .map(|s| i128::from(s + job.estimate))
                };
                let scored: Vec<(ClusterId, i128)> = eligible
                    .iter()
                    .filter_map(|&c| Some((c, completion(c)?)))
                    .collect();
                let Some(&(chosen, _)) = scored.iter().min_by_key(|&&(c, v)| (v, c)) else {
                    return refuse(job);
                };
                self.last = Some(Reason::least(
                    Measure::Completion,
                    None,
                    chosen,
                    scored.into_iter(),
                ));
                Placement::Cluster(chosen)
            }
            _ => {
                let placed = self.lb.dispatch(now, job, p, grid);
                self.last = self.lb.last_reason();
                placed
            }
        }
    }

    fn last_reason(&self) -> Option<Reason> {
        self.last
    }

    fn job_ended(&mut self, _now: Time, _job: JobId, _cluster: ClusterId) {}

    fn reads_site_state(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::ClusterLoad;
    use crate::model::Urgency;

    fn grid(sizes: &[u32], urgent: Vec<Vec<UrgentLoad>>, waiting: &[u64]) -> GridState {
        let mut g = GridState::single_machines(sizes);
        g.load = Some(
            urgent
                .into_iter()
                .zip(waiting)
                .map(|(u, &w)| ClusterLoad {
                    waiting_jobs: w,
                    urgent: u,
                    ..ClusterLoad::default()
                })
                .collect(),
        );
        g
    }

    fn running(procs: u32, end: Time) -> UrgentLoad {
        UrgentLoad {
            procs,
            end: Some(end),
            estimate: 0,
        }
    }

    fn queued(procs: u32, estimate: i64) -> UrgentLoad {
        UrgentLoad {
            procs,
            end: None,
            estimate,
        }
    }

    fn urgent_job(procs: u32, estimate: i64) -> Job {
        let mut j = Job::new(1, 0, procs, estimate, estimate);
        j.urgency = Some(Urgency::Critical);
        j
    }

    #[test]
    fn the_urgent_start_serves_the_site_s_urgent_queue_first() {
        // 64 processors: urgent jobs of 40 running until 100 and of 20 until 50.
        let u = [running(40, 100), running(20, 50)];
        assert_eq!(urgent_start(64, &u, 0, 4), Some(0));
        assert_eq!(urgent_start(64, &u, 0, 10), Some(50));
        assert_eq!(urgent_start(64, &u, 0, 30), Some(100));
        // A waiting urgent job of 30 for 200 s goes first: 24 free at 50 do not cover it, so it
        // starts at 100 and holds 30 until 300; a job of 30 fits beside it at 100, one of 40
        // waits for its end.
        let u = [running(40, 100), running(20, 50), queued(30, 200)];
        assert_eq!(urgent_start(64, &u, 0, 30), Some(100));
        assert_eq!(urgent_start(64, &u, 0, 40), Some(300));
        assert_eq!(urgent_start(64, &u, 0, 65), None);
    }

    #[test]
    fn typical_jobs_go_by_load_balancing_under_every_kind() {
        let g = grid(&[64, 64], vec![vec![], vec![]], &[3, 1]);
        for kind in [
            UrgentBrokerKind::Consolidation,
            UrgentBrokerKind::ResourcePriority,
            UrgentBrokerKind::MinCompletion,
        ] {
            let mut b = UrgentBroker::new(kind, ClusterId(0));
            let job = Job::new(1, 0, 8, 100, 100);
            assert_eq!(b.dispatch(0, &job, 1, &g), Placement::Cluster(ClusterId(1)));
        }
    }

    #[test]
    fn urgent_jobs_follow_each_kind() {
        // The preferred site 0 has 40 of its 64 processors held by an urgent job until 500; site
        // 1 has more waiting jobs, site 2 an urgent job of 60 until 100.
        let g = grid(
            &[64, 64, 64],
            vec![vec![running(40, 500)], vec![], vec![running(60, 100)]],
            &[0, 5, 2],
        );
        let small = urgent_job(16, 100);
        let big = urgent_job(32, 100);
        let mut cons = UrgentBroker::new(UrgentBrokerKind::Consolidation, ClusterId(0));
        assert_eq!(
            cons.dispatch(0, &big, 1, &g),
            Placement::Cluster(ClusterId(0))
        );
        assert_eq!(cons.last_reason(), Some(Reason::Consolidated));
        let mut rp = UrgentBroker::new(UrgentBrokerKind::ResourcePriority, ClusterId(0));
        assert_eq!(
            rp.dispatch(0, &small, 1, &g),
            Placement::Cluster(ClusterId(0))
        );
        assert_eq!(rp.last_reason(), Some(Reason::Preferred { free: 24 }));
        // 32 > 24: load balancing, the fewest waiting jobs: site 0 itself (0 waiting).
        assert_eq!(
            rp.dispatch(0, &big, 1, &g),
            Placement::Cluster(ClusterId(0))
        );
        let mut mct = UrgentBroker::new(UrgentBrokerKind::MinCompletion, ClusterId(0));
        // 32 > 24: the earliest completion: site 1 now (0 + 100), not site 0 (500 + 100) nor
        // site 2 (100 + 100).
        assert_eq!(
            mct.dispatch(0, &big, 1, &g),
            Placement::Cluster(ClusterId(1))
        );
        let r = mct.last_reason().unwrap().text(&|c| format!("s{}", c.0));
        assert!(r.contains("estimated completion at 100"), "{r}");
    }

    #[test]
    fn a_preferred_site_that_cannot_run_the_job_is_passed_over() {
        let g = grid(&[16, 64], vec![vec![], vec![]], &[0, 4]);
        let big = urgent_job(32, 100);
        let mut cons = UrgentBroker::new(UrgentBrokerKind::Consolidation, ClusterId(0));
        assert_eq!(
            cons.dispatch(0, &big, 1, &g),
            Placement::Cluster(ClusterId(1))
        );
        let wide = urgent_job(65, 100);
        assert!(matches!(
            cons.dispatch(0, &wide, 1, &g),
            Placement::Refuse(_)
        ));
    }
}
