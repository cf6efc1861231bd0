//! The batch-mode mapping heuristics for bags of independent tasks compared by Braun et al.
//! (2001, "A comparison of eleven static heuristics for mapping a class of independent tasks onto
//! heterogeneous distributed computing systems", JPDC 61(6)): **Min-Min**, **Max-Min** and
//! **Sufferage**. Each holds the jobs it is given at the meta level and maps the whole batch in
//! its next release pass (the jobs of one instant: a job array's released tasks, say), one job at
//! a time, from the expected completion time of every job on every site:
//!
//! * Min-Min: of the jobs' best completion times, the smallest goes first, to its best site;
//! * Max-Min: the largest goes first;
//! * Sufferage: the job that would lose most if denied its best site (second-best completion time
//!   minus best) goes first; a job only one site can run suffers without bound.
//!
//! The grid's readings where the paper's machines differ from sites (labelled so in the docs):
//! a site is a pool of `total_procs` processors, ready for a job once its backlog (waiting and
//! running area, as polled) is spread over them, `ready = now + area / processors`; a job mapped
//! there adds its own area (`procs × ETC`) to it. The expected time to compute (ETC) of a job at a
//! site is its estimate scaled from its benchmark to the site's fastest machine's (as
//! [`crate::model::Job::duration_on`]), its estimate when either is unknown. Where the grid
//! describes its links, the time to move a job's inputs there is added
//! ([`super::Transfers`]): its completion there is `ready + transfer + ETC`. Ties go to
//! the lower job id, then the lower site id.

use super::brokers::load_of;
use super::{
    ClusterCaps, Dispatcher, GridState, Measure, Placement, Priority, Reason, Release, refuse,
};
use crate::model::{ClusterId, Job, JobId, Time, scale_duration};

/// Which heuristic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Heuristic {
    /// The smallest best completion time first.
    MinMin,
    /// The largest best completion time first.
    MaxMin,
    /// The largest sufferage first.
    Sufferage,
}

/// A batch-mode mapper.
#[derive(Clone, Debug)]
pub struct BatchMapper {
    heuristic: Heuristic,
    /// The jobs held for the next pass, by id.
    held: std::collections::BTreeMap<JobId, Job>,
}

impl BatchMapper {
    /// A mapper by `heuristic`.
    pub fn new(heuristic: Heuristic) -> BatchMapper {
        BatchMapper {
            heuristic,
            held: Default::default(),
        }
    }
}

/// The expected time to compute `job` at the site of `caps`.
pub fn etc(job: &Job, caps: &ClusterCaps) -> i128 {
    let d = match (job.benchmark, caps.benchmark) {
        (Some(from), Some(to)) => scale_duration(job.estimate, from, to),
        _ => job.estimate,
    };
    i128::from(d)
}

/// One job's completion times: its best site and time, and the second best time.
struct Best {
    site: ClusterId,
    time: i128,
    second: Option<i128>,
    compared: Vec<(ClusterId, i128)>,
}

impl Dispatcher for BatchMapper {
    fn describe(&self) -> String {
        match self.heuristic {
            Heuristic::MinMin => "min-min",
            Heuristic::MaxMin => "max-min",
            Heuristic::Sufferage => "sufferage",
        }
        .into()
    }

    fn dispatch(&mut self, _now: Time, job: &Job, _p: Priority, grid: &GridState) -> Placement {
        if grid.eligible(job).next().is_none() {
            return refuse(job);
        }
        self.held.insert(job.id, job.clone());
        Placement::Hold
    }

    fn release(&mut self, now: Time, grid: &GridState, out: &mut Vec<Release>) {
        let mut ready: Vec<i128> = (grid.caps.iter())
            .map(|c| {
                let l = load_of(grid, c.cluster);
                let total = i128::from(c.total_procs.max(1));
                i128::from(now) + (l.waiting_area + l.running_area) / total
            })
            .collect();
        let mut left: Vec<Job> = std::mem::take(&mut self.held).into_values().collect();
        let mut pass = super::Pass::default();
        while !left.is_empty() {
            let bests: Vec<Option<Best>> = left
                .iter()
                .map(|job| {
                    let mut compared: Vec<(ClusterId, i128)> = grid
                        .eligible(job)
                        .map(|c| {
                            let data = grid.transfers.counted_besides(job, c, now, &pass);
                            let at = ready[c.index()] + i128::from(data);
                            (c, at + etc(job, &grid.caps[c.index()]))
                        })
                        .collect();
                    compared.sort_by_key(|&(c, t)| (t, c));
                    let (site, time) = *compared.first()?;
                    let second = compared.get(1).map(|x| x.1);
                    compared.sort_by_key(|x| x.0);
                    Some(Best {
                        site,
                        time,
                        second,
                        compared,
                    })
                })
                .collect();
            // The job that goes first (the lower id on a tie: `left` is in id order).
            let key = |b: &Best| -> i128 {
                match self.heuristic {
                    Heuristic::MinMin => -b.time,
                    Heuristic::MaxMin => b.time,
                    Heuristic::Sufferage => b.second.map_or(i128::MAX, |s| s - b.time),
                }
            };
            let mut first: Option<(usize, i128)> = None;
            for (k, b) in bests.iter().enumerate() {
                let Some(b) = b else {
                    // No site can run it any more (gone down): refused at once.
                    first = Some((k, i128::MAX));
                    break;
                };
                if first.is_none_or(|(_, best)| key(b) > best) {
                    first = Some((k, key(b)));
                }
            }
            let (k, _) = first.expect("a job left");
            let job = left.remove(k);
            let Some(b) = bests.into_iter().nth(k).flatten() else {
                out.push(super::refused_release(&job));
                continue;
            };
            let caps = &grid.caps[b.site.index()];
            let area = i128::from(job.procs) * etc(&job, caps);
            let total = i128::from(caps.total_procs.max(1));
            ready[b.site.index()] += (area + total - 1) / total;
            pass.placed(&grid.transfers, &job, b.site, now);
            out.push(Release {
                job: job.id,
                placement: Placement::Cluster(b.site),
                reason: Reason::least(Measure::Completion, None, b.site, b.compared.into_iter()),
            });
        }
    }

    fn held(&self) -> usize {
        self.held.len()
    }

    fn withdraw(&mut self, job: JobId) {
        self.held.remove(&job);
    }

    fn job_ended(&mut self, _now: Time, _job: JobId, _cluster: ClusterId) {}

    fn restore(&mut self, job: &Job, _p: Priority, placement: &Placement, _since: Time) {
        if matches!(placement, Placement::Hold) {
            self.held.insert(job.id, job.clone());
        }
    }

    fn reads_site_state(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::ClusterLoad;

    /// Two one-processor sites, the second twice as fast; three jobs of 10, 40 and 20 s on the
    /// reference machine (benchmark 100). By hand (ETC at s0: 10, 40, 20; at s1: 5, 20, 10):
    ///
    /// * Min-Min: best times 5, 20, 10 → job 1 to s1 (s1 ready 5); then job 2: 40 / 25, job 3:
    ///   20 / 15 → job 3 to s1 (15); then job 2: 40 / 35 → s1. Makespan 35.
    /// * Max-Min: 5, 20, 10 → job 2 to s1 (20); job 1: 10 / 25, job 3: 20 / 30 → job 3 to s0
    ///   (20); job 1: 30 / 25 → s1. Makespan 25.
    /// * Sufferage: sufferages 5, 20, 10 → job 2 to s1 (20); job 1: 10 / 25 (15), job 3: 20 / 30
    ///   (10) → job 1 to s0 (10); job 3: 30 / 30 → s0, the lower site. Makespan 30.
    #[test]
    fn the_three_heuristics_map_a_worked_example_as_computed_by_hand() {
        let mut grid = GridState::single_machines(&[1, 1]);
        grid.caps[0].benchmark = Some(100);
        grid.caps[1].benchmark = Some(200);
        grid.load = Some(vec![Default::default(); 2]);
        let jobs: Vec<Job> = [(1, 10), (2, 40), (3, 20)]
            .into_iter()
            .map(|(id, e)| {
                let mut j = Job::new(id, 0, 1, e, e);
                j.benchmark = Some(100);
                j
            })
            .collect();
        let map = |h: Heuristic| {
            let mut m = BatchMapper::new(h);
            for j in &jobs {
                assert_eq!(m.dispatch(0, j, 1, &grid), Placement::Hold);
            }
            assert_eq!(m.held(), 3);
            let mut out = Vec::new();
            m.release(0, &grid, &mut out);
            assert_eq!(m.held(), 0);
            out.iter()
                .map(|r| match r.placement {
                    Placement::Cluster(c) => (r.job.0, c.0),
                    ref other => panic!("{other:?}"),
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(map(Heuristic::MinMin), [(1, 1), (3, 1), (2, 1)]);
        assert_eq!(map(Heuristic::MaxMin), [(2, 1), (3, 0), (1, 1)]);
        assert_eq!(map(Heuristic::Sufferage), [(2, 1), (1, 0), (3, 0)]);
    }

    /// A site's polled backlog delays it: 8 processors with 800 processor-seconds waiting are
    /// ready 100 s from now; a job only one site can run goes first under Sufferage.
    #[test]
    fn backlogs_and_the_only_site_count() {
        let mut grid = GridState::single_machines(&[8, 8]);
        let busy = ClusterLoad {
            waiting_area: 800,
            ..ClusterLoad::default()
        };
        grid.load = Some(vec![busy, Default::default()]);
        let mut m = BatchMapper::new(Heuristic::MinMin);
        let a = Job::new(1, 0, 1, 50, 50);
        m.dispatch(0, &a, 1, &grid);
        let mut out = Vec::new();
        m.release(1000, &grid, &mut out);
        assert_eq!(out[0].placement, Placement::Cluster(ClusterId(1)));
        // Site 1 cannot run the 9-processor job... neither can site 0: refused at the door.
        let wide = Job::new(2, 0, 9, 50, 50);
        assert!(matches!(
            m.dispatch(0, &wide, 1, &grid),
            Placement::Refuse(_)
        ));
        grid.caps[0].max_machine_procs = 16;
        grid.caps[0].total_procs = 16;
        let mut s = BatchMapper::new(Heuristic::Sufferage);
        s.dispatch(0, &Job::new(3, 0, 1, 10, 10), 1, &grid);
        s.dispatch(0, &wide, 1, &grid);
        let mut out = Vec::new();
        s.release(0, &grid, &mut out);
        let order: Vec<u64> = out.iter().map(|r| r.job.0).collect();
        assert_eq!(order, [2, 3]);
    }
}
