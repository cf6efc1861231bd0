//! Jobs wider than every site, split over sites under any single-site strategy (ours; the split
//! and its WAN overhead as in Streit, thesis §6.4, spec `self-tuning-and-multisite.md` §8 #14,
//! #21).
//!
//! The two-level strategies (Load / Ordering, the brokers) place a job on one cluster; a job wider
//! than the widest cluster could never run. [`WideSplit`] wraps such a strategy: every job that
//! some cluster can run alone goes to the wrapped strategy unchanged; a job no single cluster can
//! run, but the clusters that are up and hold its licences can run together, is held at the meta
//! level and placed in the next [`Dispatcher::release`] pass as a [`Placement::Split`]: fragments
//! over those clusters in descending order of the widest job each runs (ties to the lowest id),
//! each as wide as its cluster allows, until the job's width is covered — the fewest fragments.
//! When it starts is not the dispatcher's business: the driver co-allocates the fragments at the
//! clusters' common earliest start (the live meta-scheduler with reservations at the sites). The
//! fragments' estimates grow by the WAN overhead of [`super::MultiSiteConfig`] like the grid
//! scheduler's splits. A split job is outside the wrapped strategy's bookkeeping (Load, Ordering
//! count only single-site jobs).

use super::{Dispatcher, GridState, Part, Placement, Priority, Reason, Release};
use crate::model::{ClusterId, Job, JobId, LicenceId, Time};
use rustc_hash::FxHashSet;
use std::collections::BTreeMap;

/// A single-site strategy that also splits jobs wider than every site.
#[derive(Debug)]
pub struct WideSplit {
    inner: Box<dyn Dispatcher>,
    /// Wide jobs waiting for the release pass: width, licences, and the clusters they may go to
    /// (those up and able to take them at their dispatch).
    held: BTreeMap<JobId, Wide>,
    /// Wide jobs placed as splits, until they end or come back.
    split: FxHashSet<JobId>,
    /// The last dispatch held a wide job.
    last_wide: bool,
}

#[derive(Debug, Clone)]
struct Wide {
    width: u32,
    licences: Vec<LicenceId>,
    allowed: Vec<ClusterId>,
}

impl WideSplit {
    /// Wraps `inner`.
    pub fn new(inner: Box<dyn Dispatcher>) -> WideSplit {
        WideSplit {
            inner,
            held: BTreeMap::new(),
            split: FxHashSet::default(),
            last_wide: false,
        }
    }

    /// The fragments of a job of `width` over the clusters of `grid` in `allowed` that are up
    /// and hold `licences`: widest first, ties to the lowest id; `None` when they are too few.
    fn fragments(
        grid: &GridState,
        width: u32,
        licences: &[LicenceId],
        allowed: &[ClusterId],
    ) -> Option<Vec<Part>> {
        let mut sites: Vec<(u32, ClusterId)> = grid
            .caps
            .iter()
            .filter(|c| {
                c.up && allowed.contains(&c.cluster)
                    && licences.iter().all(|l| c.licences.contains(l))
                    && c.max_machine_procs > 0
            })
            .map(|c| (c.max_machine_procs, c.cluster))
            .collect();
        sites.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut left = width;
        let mut parts = Vec::new();
        for (cap, cluster) in sites {
            if left == 0 {
                break;
            }
            let procs = cap.min(left);
            parts.push(Part { cluster, procs });
            left -= procs;
        }
        (left == 0).then_some(parts)
    }
}

impl Dispatcher for WideSplit {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn splits(&self) -> bool {
        true
    }

    fn dispatch(
        &mut self,
        now: Time,
        job: &Job,
        priority: Priority,
        grid: &GridState,
    ) -> Placement {
        let widest = grid
            .caps
            .iter()
            .filter(|c| job.licences.iter().all(|l| c.licences.contains(l)))
            .map(|c| c.max_machine_procs)
            .max()
            .unwrap_or(0);
        self.last_wide = false;
        if job.procs <= widest {
            return self.inner.dispatch(now, job, priority, grid);
        }
        let allowed: Vec<ClusterId> = grid
            .caps
            .iter()
            .filter(|c| c.up)
            .map(|c| c.cluster)
            .collect();
        if Self::fragments(grid, job.procs, &job.licences, &allowed).is_none() {
            return Placement::Refuse(format!(
                "{} processors exceed the sites that are up with licences {:?} together",
                job.procs, job.licences
            ));
        }
        self.last_wide = true;
        self.held.insert(
            job.id,
            Wide {
                width: job.procs,
                licences: job.licences.clone(),
                allowed,
            },
        );
        Placement::Hold
    }

    fn last_reason(&self) -> Option<Reason> {
        match self.last_wide {
            true => None,
            false => self.inner.last_reason(),
        }
    }

    fn release(&mut self, now: Time, grid: &GridState, out: &mut Vec<Release>) {
        self.inner.release(now, grid, out);
        let widest = grid
            .caps
            .iter()
            .map(|c| c.max_machine_procs)
            .max()
            .unwrap_or(0);
        let mut placed = Vec::new();
        for (&id, w) in &self.held {
            if let Some(parts) = Self::fragments(grid, w.width, &w.licences, &w.allowed) {
                let reason = Reason::Wide {
                    fragments: parts.len() as u32,
                    widest,
                };
                out.push(Release {
                    job: id,
                    placement: Placement::Split(parts),
                    reason,
                });
                placed.push(id);
            }
        }
        for id in placed {
            self.held.remove(&id);
            self.split.insert(id);
        }
    }

    fn held(&self) -> usize {
        self.inner.held() + self.held.len()
    }

    fn withdraw(&mut self, job: JobId) {
        if self.held.remove(&job).is_none() {
            self.inner.withdraw(job);
        }
    }

    fn job_ended(&mut self, now: Time, job: JobId, cluster: ClusterId) {
        if !self.split.remove(&job) {
            self.inner.job_ended(now, job, cluster);
        }
    }

    fn job_returned(&mut self, now: Time, job: JobId, cluster: ClusterId) {
        if !self.split.remove(&job) {
            self.inner.job_returned(now, job, cluster);
        }
    }

    fn restore(&mut self, job: &Job, priority: Priority, placement: &Placement, since: Time) {
        match placement {
            Placement::Split(_) => {
                self.split.insert(job.id);
            }
            // A held job whose width no longer fits any site is taken back by the driver's
            // dispatch that follows a restore (with the sites it may go to).
            _ => self.inner.restore(job, priority, placement, since),
        }
    }

    fn reads_site_state(&self) -> bool {
        self.inner.reads_site_state()
    }

    fn arrays(&self, clusters: usize) -> Vec<super::ClusterArrays> {
        self.inner.arrays(clusters)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::{DispatchConfig, DispatchKind};

    fn job(id: u64, procs: u32) -> Job {
        Job::new(id, 0, procs, 100, 100)
    }

    fn wrapped() -> Box<dyn Dispatcher> {
        let mut c = DispatchConfig::new(DispatchKind::LoadOrdering);
        c.split_wide = true;
        c.build()
    }

    #[test]
    fn a_job_one_site_can_run_goes_to_the_wrapped_strategy() {
        let grid = GridState::single_machines(&[8, 16, 4]);
        let mut plain = DispatchConfig::new(DispatchKind::LoadOrdering).build();
        let mut wide = wrapped();
        for id in 1..=20 {
            let j = job(id, 1 + (id as u32 * 5) % 16);
            assert_eq!(
                wide.dispatch(0, &j, 1, &grid),
                plain.dispatch(0, &j, 1, &grid)
            );
            assert_eq!(wide.last_reason(), plain.last_reason());
        }
        assert_eq!(wide.held(), 0);
        assert_eq!(wide.arrays(3), plain.arrays(3));
    }

    #[test]
    fn a_wide_job_is_held_then_split_widest_sites_first() {
        let mut grid = GridState::single_machines(&[8, 16, 4, 16]);
        let mut d = wrapped();
        assert_eq!(d.dispatch(0, &job(1, 40), 1, &grid), Placement::Hold);
        assert_eq!(d.last_reason(), None);
        assert_eq!(d.held(), 1);
        let mut out = Vec::new();
        d.release(0, &grid, &mut out);
        let part = |c: u32, procs: u32| Part {
            cluster: ClusterId(c),
            procs,
        };
        // 16 + 16 (ties to the lower id) + 8: three fragments, the fewest.
        assert_eq!(
            out,
            vec![Release {
                job: JobId(1),
                placement: Placement::Split(vec![part(1, 16), part(3, 16), part(0, 8)]),
                reason: Reason::Wide {
                    fragments: 3,
                    widest: 16
                },
            }]
        );
        assert_eq!(d.held(), 0);
        // Its end is not the wrapped strategy's: a single-site job's bookkeeping is untouched.
        d.job_ended(50, JobId(1), ClusterId(1));
        // Wider than all sites that are up together: refused (it waits for a site).
        grid.caps[1].up = false;
        assert!(matches!(
            d.dispatch(0, &job(2, 40), 1, &grid),
            Placement::Refuse(why) if why.contains("40 processors exceed")
        ));
        // Held while its sites are up, kept while one of them is down at the pass.
        grid.caps[1].up = true;
        assert_eq!(d.dispatch(0, &job(3, 40), 1, &grid), Placement::Hold);
        grid.caps[3].up = false;
        d.release(1, &grid, &mut out);
        assert_eq!(out.len(), 1);
        d.withdraw(JobId(3));
        assert_eq!(d.held(), 0);
    }
}
