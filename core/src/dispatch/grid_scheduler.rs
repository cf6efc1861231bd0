//! The central grid scheduler of the multi-site study as a dispatch strategy (Streit, thesis
//! §6.2–§6.4; spec `self-tuning-and-multisite.md` §8 #8, #14, #19–#21): one FCFS queue at the meta
//! level with EASY backfilling over the sites, BestFit site selection (**job sharing**), and,
//! where allowed, a job split over several sites at a WAN overhead (**multi-site**).
//!
//! [`Dispatcher::dispatch`] only queues a job ([`Placement::Hold`]), or refuses one that no idle
//! grid could run. [`Dispatcher::release`] is the pass: it walks the queue in arrival (job id)
//! order; until the first job that cannot start, every job starts on its most preferred
//! allocation; that job gets the reservation — its earliest start from the running jobs' estimated
//! ends, on one site or, where splitting is allowed, on the aggregate of sites taken in descending
//! order of free processors (§8 #21). Later jobs start only if they end by the reservation's
//! start or leave the reserved sites enough processors at that time.
//!
//! Allocation options (§6.3–§6.4), in preference order: the BestFit site (fewest processors left,
//! ties to the lowest id); then, under multi-site, a split over sites in descending order of free
//! processors (ties to the lowest id) — only if no single site has room, the width exceeds the
//! lower bound (or the largest site), the fragment limit allows it, and, for the adaptive
//! scheduler, the job would end earlier split (`now + (1 + p)·estimate`) than on the earliest
//! single site (ties wait). A split job's estimate is multiplied by `(100 + p) / 100`, rounded up
//! ([`MultiSiteConfig::stretch_over`]: p is the grid's, or the largest of the pairs of its sites
//! where the WAN configuration gives pairs their own); drivers stretch its run time the same way,
//! once. Our named variant [`MultiSiteConfig::pooled_at_zero`] makes the grid at p = 0 behave
//! as one machine of the summed size (a split may also backfill, and wins ties); it is off by
//! default, as the thesis has no such rule.
//!
//! The scheduler sees of each site its capacity for one job (its largest machine), whether it is
//! up and its licences, and keeps its own account of what it placed there (released jobs and their
//! estimated ends). A job may go to the sites that could run it when it was dispatched (up, with
//! its licences; a driver hides the others by marking them down for that call) and are up at the
//! pass; a driver dispatches a held job again when that set should grow (a site came back).

use super::{Dispatcher, GridState, Placement, Priority, Reason, Release};
use crate::model::{ClusterId, Duration, Job, JobId, Time};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// The maximal number of fragments of a multi-site job (Streit, thesis Tab. 7.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Fragments {
    /// Bounded only by the width and by 18 sites.
    #[default]
    Unlimited,
    /// Only the fragmentation a width needs (1 up to 64 processors, 2 up to 128, 8 above).
    Limited,
}

impl Fragments {
    /// The most fragments a job of `width` may have.
    pub fn max_for(self, width: u32) -> usize {
        let (limited, unlimited) = match width {
            0..=4 => (1, 4),
            5..=8 => (1, 8),
            9..=16 => (1, 16),
            17..=64 => (1, 18),
            65..=128 => (2, 18),
            _ => (8, 18),
        };
        match self {
            Fragments::Limited => limited,
            Fragments::Unlimited => unlimited,
        }
    }
}

/// The WAN overhead between two sites, where it differs from the grid's `overhead_pct`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairOverhead {
    /// The two sites (cluster indices, in either order).
    pub sites: [u32; 2],
    /// p between them, in percent.
    pub overhead_pct: u32,
}

/// The multi-site settings (§6.4, §8 #14, #19; Tab. 7.5).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MultiSiteConfig {
    /// WAN overhead p in percent: a split job's estimate and run time are multiplied by
    /// (100 + p) / 100, rounded up (§8 #14).
    pub overhead_pct: u32,
    /// Overheads of particular pairs of sites; a split takes the largest p among the pairs of
    /// its sites (a wide-area job runs at the pace of its slowest link).
    pub pairs: Vec<PairOverhead>,
    /// Only jobs wider than this may be split (0: any); jobs wider than the largest site are
    /// exempt (§8 #19).
    pub lower_bound: u32,
    /// Fragment limit.
    pub fragments: Fragments,
    /// The adaptive wait-or-split rule (§6.4 step 5).
    pub adaptive: bool,
    /// Our variant, off in the thesis's scheduler: at p = 0 (and not adaptive) a split is also
    /// the alternative of a backfill candidate whose single-site options would delay the
    /// reservation, and the reservation takes the split on a tie, so that the grid behaves as one
    /// machine of the summed size. As printed, a split is only the fallback when no single site
    /// has room, and a tie keeps the single site, at every p.
    pub pooled_at_zero: bool,
}

impl Default for MultiSiteConfig {
    fn default() -> Self {
        MultiSiteConfig {
            overhead_pct: 0,
            pairs: Vec::new(),
            lower_bound: 0,
            fragments: Fragments::Unlimited,
            adaptive: false,
            pooled_at_zero: false,
        }
    }
}

impl MultiSiteConfig {
    /// `d` multiplied by (100 + p) / 100, rounded up, with the grid's p.
    pub fn stretch(&self, d: Duration) -> Duration {
        stretch_by(d, self.overhead_pct)
    }

    /// p of a job split over `sites`: the largest among their pairs (the grid's `overhead_pct`
    /// for a pair not listed).
    pub fn overhead_over(&self, sites: impl Iterator<Item = u32> + Clone) -> u32 {
        let mut p = None;
        for a in sites.clone() {
            for b in sites.clone().filter(|&b| b > a) {
                let pair = self
                    .pairs
                    .iter()
                    .find(|q| q.sites == [a, b] || q.sites == [b, a])
                    .map_or(self.overhead_pct, |q| q.overhead_pct);
                p = Some(p.map_or(pair, |p: u32| p.max(pair)));
            }
        }
        p.unwrap_or(self.overhead_pct)
    }

    /// `d` of a job split over `sites`, multiplied by (100 + p) / 100 with their p, rounded up.
    pub fn stretch_over(&self, d: Duration, sites: impl Iterator<Item = u32> + Clone) -> Duration {
        stretch_by(d, self.overhead_over(sites))
    }
}

/// `d` multiplied by (100 + p) / 100, rounded up.
pub fn stretch_by(d: Duration, p: u32) -> Duration {
    (d * (100 + i64::from(p)) + 99) / 100
}

/// Where a placed job runs: (site, processors) per fragment.
type Alloc = Vec<(usize, u32)>;

#[derive(Clone, Debug)]
struct Reserved {
    start: Time,
    sites: Vec<usize>,
    width: u32,
}

/// A job waiting in the grid scheduler's queue.
#[derive(Clone, Debug)]
struct Waiting {
    id: JobId,
    width: u32,
    estimate: Duration,
    /// Per site: whether the job may run there; `None`: on every site (the common case, and a
    /// job restored before the grid was seen).
    allowed: Option<Vec<bool>>,
}

/// Marks in `usable` the sites up and `allowed` (every site up when `None`); `usable_is_up` says
/// `usable` already holds the sites up, which the common case then keeps.
fn mark_usable(
    usable: &mut Vec<bool>,
    usable_is_up: &mut bool,
    up: &[bool],
    allowed: Option<&[bool]>,
) {
    if allowed.is_none() && *usable_is_up {
        return;
    }
    *usable_is_up = allowed.is_none();
    usable.clear();
    usable.extend((0..up.len()).map(|m| up[m] && allowed.is_none_or(|a| a[m])));
}

/// What a pass needs of a waiting job.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    id: JobId,
    width: u32,
    estimate: Duration,
}

/// The grid scheduler: job sharing, or multi-site when `split` is set.
#[derive(Clone, Debug)]
pub struct GridScheduler {
    split: bool,
    cfg: MultiSiteConfig,
    /// Per site: its capacity for one job (its largest machine).
    sizes: Vec<u32>,
    /// Per site: whether it is up.
    up: Vec<bool>,
    /// Per site: processors not held by a job this scheduler placed there.
    free: Vec<u32>,
    /// The fragments of every job placed and not ended.
    running: FxHashMap<JobId, Alloc>,
    /// Per site: the fragments placed there, (job, processors, estimated end).
    on_site: Vec<Vec<(JobId, u32, Time)>>,
    /// Per site, for the job being considered: whether it may run there now.
    usable: Vec<bool>,
    /// Whether `usable` is `up` (marked for a job allowed everywhere, and `up` unchanged since).
    usable_is_up: bool,
    queue: Vec<Waiting>,
    /// Whether a release pass skips, without building its options, a held job that fits nowhere
    /// now (off only to test the pass against the plain one).
    skip_hopeless: bool,
}

impl GridScheduler {
    /// Job sharing (`split` false) or multi-site (`split` true) with `cfg`.
    pub fn new(split: bool, cfg: MultiSiteConfig) -> GridScheduler {
        GridScheduler {
            split,
            cfg,
            sizes: Vec::new(),
            up: Vec::new(),
            free: Vec::new(),
            running: FxHashMap::default(),
            on_site: Vec::new(),
            usable: Vec::new(),
            usable_is_up: false,
            queue: Vec::new(),
            skip_hopeless: true,
        }
    }

    /// Takes the sites' capacities and states from `grid` (a site seen for the first time is
    /// idle).
    fn sync(&mut self, grid: &GridState) {
        self.usable_is_up = false;
        for c in &grid.caps {
            let i = c.cluster.index();
            if i >= self.sizes.len() {
                self.sizes.resize(i + 1, 0);
                self.free.resize(i + 1, 0);
                self.up.resize(i + 1, false);
                self.on_site.resize(i + 1, Vec::new());
            }
            if self.sizes[i] != c.max_machine_procs {
                let held = self.sizes[i] - self.free[i];
                self.sizes[i] = c.max_machine_procs;
                self.free[i] = c.max_machine_procs.saturating_sub(held);
            }
            self.up[i] = c.up;
        }
    }

    /// The sites `job` may run on according to `grid` (up, with its licences).
    fn allowed(&self, grid: &GridState, job: &Job) -> Option<Vec<bool>> {
        let mut v = vec![false; self.sizes.len()];
        for c in &grid.caps {
            v[c.cluster.index()] = c.up && job.licences.iter().all(|l| c.licences.contains(l));
        }
        (!v.iter().all(|a| *a)).then_some(v)
    }

    fn sites(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.sizes.len()).filter(|&m| self.usable[m])
    }

    fn largest(&self) -> u32 {
        self.sites().map(|m| self.sizes[m]).max().unwrap_or(0)
    }

    fn free_at(&self, m: usize, t: Time) -> u32 {
        self.free[m]
            + self.on_site[m]
                .iter()
                .filter(|f| f.2 <= t)
                .map(|f| f.1)
                .sum::<u32>()
    }

    fn ends(&self, sites: impl Iterator<Item = usize>, now: Time) -> Vec<Time> {
        let mut v: Vec<Time> = sites
            .flat_map(|m| self.on_site[m].iter())
            .map(|f| f.2)
            .filter(|t| *t > now)
            .collect();
        v.push(now);
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The earliest time site `m` has `width` processors free (estimated ends).
    fn earliest_single(&self, m: usize, width: u32, now: Time) -> Option<Time> {
        if self.sizes[m] < width {
            return None;
        }
        self.ends(std::iter::once(m), now)
            .into_iter()
            .find(|&t| self.free_at(m, t) >= width)
    }

    /// Usable sites in descending order of `free` (ties to the lowest id) covering `width`.
    fn split_over(&self, free: &[u32], width: u32) -> Option<Alloc> {
        // Most held jobs fit nowhere, split or not: answered without sorting or allocating.
        if self.sites().map(|m| u64::from(free[m])).sum::<u64>() < u64::from(width) {
            return None;
        }
        let mut order: Vec<usize> = self.sites().filter(|&m| free[m] > 0).collect();
        order.sort_by_key(|&m| (std::cmp::Reverse(free[m]), m));
        let mut left = width;
        let mut parts = Vec::new();
        for m in order {
            if left == 0 {
                break;
            }
            let n = free[m].min(left);
            parts.push((m, n));
            left -= n;
        }
        (left == 0 && parts.len() <= self.cfg.fragments.max_for(width)).then_some(parts)
    }

    fn may_split(&self, width: u32) -> bool {
        self.split && (width > self.cfg.lower_bound || width > self.largest())
    }

    /// Whether the pooled variant applies: on, at p = 0, not adaptive.
    fn pooled(&self) -> bool {
        self.cfg.pooled_at_zero && self.cfg.overhead_pct == 0 && !self.cfg.adaptive
    }

    /// The earliest single-site start over every usable site: (time, site).
    fn best_single(&self, width: u32, now: Time) -> Option<(Time, usize)> {
        self.sites()
            .filter_map(|m| self.earliest_single(m, width, now).map(|t| (t, m)))
            .min()
    }

    /// The ways `w` could start now, most preferred first.
    fn options(&self, w: &Candidate, now: Time) -> Vec<Alloc> {
        let mut single: Vec<usize> = self.sites().filter(|&m| self.free[m] >= w.width).collect();
        single.sort_by_key(|&m| (self.free[m] - w.width, m));
        let mut v: Vec<Alloc> = single.into_iter().map(|m| vec![(m, w.width)]).collect();
        // A split is the fallback when no single site has room; in the pooled variant at p = 0,
        // also the alternative of a backfill candidate whose single-site options would all delay
        // the reservation.
        if self.may_split(w.width)
            && (v.is_empty() || self.pooled())
            && let Some(parts) = self.split_over(&self.free, w.width)
        {
            let worth = !self.cfg.adaptive
                || w.width > self.largest()
                || match self.best_single(w.width, now) {
                    None => true,
                    Some((t, _)) => {
                        let sites = parts.iter().map(|&(m, _)| m as u32);
                        now + self.cfg.stretch_over(w.estimate, sites) < t + w.estimate
                    }
                };
            if worth {
                v.push(parts);
            }
        }
        v
    }

    /// The reservation of a job that cannot start now.
    fn reserve(&self, w: &Candidate, now: Time) -> Option<Reserved> {
        let single = self.best_single(w.width, now);
        let multi = if self.may_split(w.width) && !(self.cfg.adaptive && single.is_some()) {
            let all: Vec<usize> = self.sites().collect();
            self.ends(all.iter().copied(), now)
                .into_iter()
                .find_map(|t| {
                    let mut f = vec![0; self.sizes.len()];
                    for &m in &all {
                        f[m] = self.free_at(m, t);
                    }
                    // The head may take any sites at that time: every usable site is reserved, and a
                    // backfill candidate must leave it enough processors in total (§8 #21; with a
                    // fragment limit this is best effort, as every reservation of the queuing model
                    // is).
                    self.split_over(&f, w.width).map(|_| (t, all.clone()))
                })
        } else {
            None
        };
        let res = |start, sites| Reserved {
            start,
            sites,
            width: w.width,
        };
        match (single, multi) {
            (Some((ts, m)), Some((tm, ms))) => {
                let prefer_multi = tm < ts || (tm == ts && self.pooled());
                Some(if prefer_multi {
                    res(tm, ms)
                } else {
                    res(ts, vec![m])
                })
            }
            (Some((t, m)), None) => Some(res(t, vec![m])),
            (None, Some((t, ms))) => Some(res(t, ms)),
            (None, None) => None,
        }
    }

    fn delays(&self, parts: &Alloc, est_end: Time, r: &Reserved) -> bool {
        if est_end <= r.start {
            return false;
        }
        let left: u32 = r
            .sites
            .iter()
            .map(|&m| {
                let taken: u32 = parts.iter().filter(|p| p.0 == m).map(|p| p.1).sum();
                self.free_at(m, r.start).saturating_sub(taken)
            })
            .sum();
        left < r.width
    }

    fn estimate_on(&self, parts: &Alloc, estimate: Duration) -> Duration {
        if parts.len() > 1 {
            self.cfg
                .stretch_over(estimate, parts.iter().map(|&(m, _)| m as u32))
        } else {
            estimate
        }
    }

    fn hold(&mut self, id: JobId, parts: Alloc, est_end: Time) {
        for &(m, n) in &parts {
            self.free[m] -= n;
            self.on_site[m].push((id, n, est_end));
        }
        self.running.insert(id, parts);
    }

    fn free_job(&mut self, id: JobId) {
        if let Some(parts) = self.running.remove(&id) {
            for (m, n) in parts {
                self.free[m] += n;
                self.on_site[m].retain(|f| f.0 != id);
            }
        }
    }

    fn enqueue(&mut self, w: Waiting) {
        let at = self.queue.partition_point(|q| q.id < w.id);
        if self.queue.get(at).is_some_and(|q| q.id == w.id) {
            self.queue[at] = w;
        } else {
            self.queue.insert(at, w);
        }
    }

    /// Whether an idle grid could run `w` (a single usable site, or an allowed split).
    fn runs_when_idle(&self, w: &Waiting) -> bool {
        self.sites().any(|m| self.sizes[m] >= w.width)
            || (self.may_split(w.width) && self.split_over(&self.sizes, w.width).is_some())
    }

    fn placement(parts: &Alloc) -> Placement {
        match parts.as_slice() {
            [(m, _)] => Placement::Cluster(ClusterId(*m as u32)),
            _ => Placement::Split(
                parts
                    .iter()
                    .map(|&(m, n)| super::Part {
                        cluster: ClusterId(m as u32),
                        procs: n,
                    })
                    .collect(),
            ),
        }
    }
}

impl Dispatcher for GridScheduler {
    fn compact(&mut self) {
        use crate::structures::Shrink;
        self.running.shrink_if_sparse();
    }

    fn splits(&self) -> bool {
        self.split
    }

    fn describe(&self) -> String {
        if !self.split {
            return "job-sharing".into();
        }
        let c = &self.cfg;
        let mut d = format!("multi-site (p = {} %", c.overhead_pct);
        if !c.pairs.is_empty() {
            d += &format!(", {} pairs apart", c.pairs.len());
        }
        if c.lower_bound > 0 {
            d += &format!(", lower bound {}", c.lower_bound);
        }
        if c.fragments == Fragments::Limited {
            d += ", limited fragments";
        }
        if c.adaptive {
            d += ", adaptive";
        }
        d + ")"
    }

    fn dispatch(
        &mut self,
        _now: Time,
        job: &Job,
        _priority: Priority,
        grid: &GridState,
    ) -> Placement {
        self.sync(grid);
        let w = Waiting {
            id: job.id,
            width: job.procs,
            estimate: job.estimate.max(1),
            allowed: self.allowed(grid, job),
        };
        mark_usable(
            &mut self.usable,
            &mut self.usable_is_up,
            &self.up,
            w.allowed.as_deref(),
        );
        if !self.runs_when_idle(&w) {
            let how = if self.split {
                "on one site or split within the fragment limit"
            } else {
                "on one site"
            };
            return Placement::Refuse(format!(
                "no site that is up offers {} processors {how} with licences {:?}",
                job.procs, job.licences
            ));
        }
        self.enqueue(w);
        Placement::Hold
    }

    fn release(&mut self, now: Time, grid: &GridState, out: &mut Vec<Release>) {
        self.sync(grid);
        let mut res: Option<Reserved> = None;
        // The most processors free at one up site, and at all of them: a job wider than the
        // first (and, when jobs split, than the second) can start nowhere now, which is most
        // held jobs once the head's reservation is made.
        let room = |s: &Self| {
            let up = (0..s.free.len()).filter(|&m| s.up[m]).map(|m| s.free[m]);
            up.fold((0, 0u64), |(most, all), f| {
                (most.max(f), all + u64::from(f))
            })
        };
        let (mut most, mut all) = room(self);
        let mut i = 0;
        while i < self.queue.len() {
            let w = Candidate {
                id: self.queue[i].id,
                width: self.queue[i].width,
                estimate: self.queue[i].estimate,
            };
            if self.skip_hopeless
                && res.is_some()
                && self.queue[i].allowed.is_none()
                && w.width > most
                && (!self.split || all < u64::from(w.width))
            {
                i += 1;
                continue;
            }
            mark_usable(
                &mut self.usable,
                &mut self.usable_is_up,
                &self.up,
                self.queue[i].allowed.as_deref(),
            );
            let chosen = self.options(&w, now).into_iter().find(|parts| match &res {
                None => true,
                Some(r) => !self.delays(parts, now + self.estimate_on(parts, w.estimate), r),
            });
            match chosen {
                Some(parts) => {
                    self.queue.remove(i);
                    let est_end = now + self.estimate_on(&parts, w.estimate);
                    let reason = match parts.as_slice() {
                        [(m, n)] => Reason::BestFit {
                            left: self.free[*m] - n,
                        },
                        _ => Reason::Split {
                            fragments: parts.len() as u32,
                            end: est_end,
                            single: self.best_single(w.width, now).map(|(t, _)| t + w.estimate),
                        },
                    };
                    out.push(Release {
                        job: w.id,
                        placement: Self::placement(&parts),
                        reason,
                    });
                    self.hold(w.id, parts, est_end);
                    (most, all) = room(self);
                }
                None => {
                    if res.is_none() {
                        res = self.reserve(&w, now);
                    }
                    i += 1;
                }
            }
        }
    }

    fn held(&self) -> usize {
        self.queue.len()
    }

    fn job_ended(&mut self, _now: Time, job: JobId, _cluster: ClusterId) {
        self.free_job(job);
    }

    fn job_returned(&mut self, _now: Time, job: JobId, _cluster: ClusterId) {
        self.free_job(job);
    }

    fn withdraw(&mut self, job: JobId) {
        self.queue.retain(|w| w.id != job);
    }

    fn restore(&mut self, job: &Job, _priority: Priority, placement: &Placement, since: Time) {
        let parts: Alloc = match placement {
            Placement::Hold => {
                return self.enqueue(Waiting {
                    id: job.id,
                    width: job.procs,
                    estimate: job.estimate.max(1),
                    allowed: None,
                });
            }
            Placement::Refuse(_) => return,
            Placement::Cluster(c) => vec![(c.index(), job.procs)],
            Placement::Split(p) => p.iter().map(|p| (p.cluster.index(), p.procs)).collect(),
        };
        let top = parts.iter().map(|p| p.0).max().unwrap_or(0);
        if top >= self.sizes.len() {
            // Sizes come with the first call that sees the grid; until then a site is empty.
            self.sizes.resize(top + 1, 0);
            self.free.resize(top + 1, 0);
            self.up.resize(top + 1, false);
            self.on_site.resize(top + 1, Vec::new());
        }
        let est_end = since + self.estimate_on(&parts, job.estimate.max(1));
        for &(m, n) in &parts {
            // Held before the capacity is known: counted against it when `sync` learns it.
            self.sizes[m] += n;
            self.free[m] += n;
        }
        self.hold(job.id, parts, est_end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::Part;
    use crate::model::LicenceId;

    fn grid(sizes: &[u32]) -> GridState {
        GridState::single_machines(sizes)
    }

    fn job(id: u64, procs: u32, est: i64) -> Job {
        Job::new(id, 0, procs, est, est)
    }

    fn multi(p: u32, adaptive: bool) -> GridScheduler {
        let cfg = MultiSiteConfig {
            overhead_pct: p,
            adaptive,
            ..Default::default()
        };
        GridScheduler::new(true, cfg)
    }

    /// Holds `jobs` at `now` and runs one pass: (job, placement) in the order released.
    fn pass(
        d: &mut GridScheduler,
        g: &GridState,
        now: Time,
        jobs: &[Job],
    ) -> Vec<(u64, Placement)> {
        for j in jobs {
            assert_eq!(d.dispatch(now, j, 1, g), Placement::Hold, "job {}", j.id);
        }
        let mut out = Vec::new();
        d.release(now, g, &mut out);
        out.into_iter().map(|r| (r.job.0, r.placement)).collect()
    }

    fn on(c: u32) -> Placement {
        Placement::Cluster(ClusterId(c))
    }

    fn split(parts: &[(u32, u32)]) -> Placement {
        Placement::Split(
            parts
                .iter()
                .map(|&(c, procs)| Part {
                    cluster: ClusterId(c),
                    procs,
                })
                .collect(),
        )
    }

    /// Fast against plain: the release pass that skips the held jobs fitting nowhere decides
    /// exactly what the pass building every job's options decides, over random streams of
    /// arrivals and ends, for job sharing and multi-site.
    #[test]
    fn skipping_the_hopeless_held_jobs_changes_no_decision() {
        let mut seed = 7u64;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        for round in 0..40 {
            let sizes: Vec<u32> = (0..2 + next(4)).map(|_| 4 + next(29) as u32).collect();
            let g = grid(&sizes);
            let split = round % 2 == 0;
            let mut fast = GridScheduler::new(split, MultiSiteConfig::default());
            let mut plain = fast.clone();
            plain.skip_hopeless = false;
            let total: u32 = sizes.iter().sum();
            let mut running: Vec<JobId> = Vec::new();
            for step in 0..60u64 {
                let now = step as Time * 10;
                let top = if split {
                    total
                } else {
                    *sizes.iter().max().unwrap()
                };
                let j = job(
                    step + 1,
                    1 + next(u64::from(top)) as u32,
                    5 + next(200) as i64,
                );
                let (a, b) = (
                    fast.dispatch(now, &j, 1, &g),
                    plain.dispatch(now, &j, 1, &g),
                );
                assert_eq!(a, b, "round {round} step {step}");
                if !running.is_empty() && next(3) == 0 {
                    let k = next(running.len() as u64) as usize;
                    let id = running.swap_remove(k);
                    fast.job_ended(now, id, ClusterId(0));
                    plain.job_ended(now, id, ClusterId(0));
                }
                let (mut x, mut y) = (Vec::new(), Vec::new());
                fast.release(now, &g, &mut x);
                plain.release(now, &g, &mut y);
                assert_eq!(x, y, "round {round} step {step}");
                running.extend(x.iter().map(|r| r.job));
            }
        }
    }

    #[test]
    fn a_job_no_site_holds_is_split_by_descending_free_and_its_estimate_stretched() {
        let g = grid(&[4, 4]);
        let mut d = multi(50, false);
        assert_eq!(
            pass(&mut d, &g, 0, &[job(1, 6, 100), job(2, 3, 50)]),
            [(1, split(&[(0, 4), (1, 2)]))]
        );
        assert_eq!(d.held(), 1);
        // Job 2 needs 3 of the 2 left; job 1's estimate is 150 s with the overhead: at 149 the
        // scheduler still counts it running, and the end notice frees it whatever the time.
        assert_eq!(pass(&mut d, &g, 149, &[]), []);
        d.job_ended(120, JobId(1), ClusterId(0));
        let mut out = Vec::new();
        d.release(120, &g, &mut out);
        assert_eq!(
            out,
            [Release {
                job: JobId(2),
                placement: on(0),
                reason: Reason::BestFit { left: 1 },
            }]
        );
        assert_eq!(d.held(), 0);
    }

    #[test]
    fn the_split_reason_compares_the_split_end_with_the_single_site_end() {
        let g = grid(&[8, 4, 4]);
        let mut d = multi(50, false);
        assert_eq!(pass(&mut d, &g, 0, &[job(1, 8, 100)]), [(1, on(0))]);
        d.dispatch(0, &job(2, 6, 100), 1, &g);
        let mut out = Vec::new();
        d.release(0, &g, &mut out);
        assert_eq!(out[0].placement, split(&[(1, 4), (2, 2)]));
        assert_eq!(
            out[0].reason,
            Reason::Split {
                fragments: 2,
                end: 150,
                single: Some(200),
            }
        );
        let name = |c: ClusterId| format!("s{}", c.0);
        assert_eq!(
            out[0].reason.text(&name),
            "split over 2 sites, planned end 150 with the overhead; on one site it would end at 200"
        );
    }

    /// A split takes the largest p among the pairs of its sites, the grid's p for a pair not
    /// listed: over sites 1 and 2 (p = 20 between them) a 100 s estimate becomes 120 s, over 0
    /// and 1 (p = 10 by default) 110 s.
    #[test]
    fn a_split_is_stretched_by_the_overhead_of_its_slowest_pair() {
        let cfg = MultiSiteConfig {
            overhead_pct: 10,
            pairs: vec![
                PairOverhead {
                    sites: [2, 1],
                    overhead_pct: 20,
                },
                PairOverhead {
                    sites: [0, 2],
                    overhead_pct: 5,
                },
            ],
            ..Default::default()
        };
        assert_eq!(cfg.overhead_over([0, 1, 2].into_iter()), 20);
        assert_eq!(cfg.overhead_over([0, 2].into_iter()), 5);
        assert_eq!(cfg.overhead_over([1].into_iter()), 10);
        let g = grid(&[8, 4, 4]);
        let mut d = GridScheduler::new(true, cfg);
        assert_eq!(pass(&mut d, &g, 0, &[job(1, 8, 100)]), [(1, on(0))]);
        d.dispatch(0, &job(2, 6, 100), 1, &g);
        let mut out = Vec::new();
        d.release(0, &g, &mut out);
        assert_eq!(out[0].placement, split(&[(1, 4), (2, 2)]));
        let Reason::Split { end, .. } = out[0].reason else {
            panic!("{:?}", out[0].reason)
        };
        assert_eq!(end, 120);
        // When job 1 ends, a 12-wide job splits over sites 0 and 1 (p = 10): 110 s.
        d.job_ended(120, JobId(1), ClusterId(0));
        d.job_ended(120, JobId(2), ClusterId(1));
        d.dispatch(120, &job(3, 12, 100), 1, &g);
        out.clear();
        d.release(120, &g, &mut out);
        assert_eq!(out[0].placement, split(&[(0, 8), (1, 4)]));
        let Reason::Split { end, .. } = out[0].reason else {
            panic!("{:?}", out[0].reason)
        };
        assert_eq!(end, 230);
    }

    #[test]
    fn the_adaptive_rule_waits_when_one_site_ends_the_job_earlier() {
        let g = grid(&[8, 4, 4]);
        let mut d = multi(50, true);
        assert_eq!(pass(&mut d, &g, 0, &[job(1, 8, 100)]), [(1, on(0))]);
        // 300 s: alone on site 0 from 100 it ends at 400, split now at 450 — it waits.
        assert_eq!(pass(&mut d, &g, 0, &[job(2, 6, 300)]), []);
        // 100 s: alone it ends at 200, split at 150 — it is split.
        assert_eq!(
            pass(&mut d, &g, 0, &[job(3, 6, 100)]),
            [(3, split(&[(1, 4), (2, 2)]))]
        );
        d.job_ended(100, JobId(1), ClusterId(0));
        assert_eq!(pass(&mut d, &g, 100, &[]), [(2, on(0))]);
    }

    #[test]
    fn easy_backfilling_never_delays_the_head_of_the_queue() {
        let g = grid(&[4]);
        let mut d = GridScheduler::new(false, MultiSiteConfig::default());
        assert_eq!(pass(&mut d, &g, 0, &[job(1, 2, 100)]), [(1, on(0))]);
        // Job 2 (4 wide) is reserved at 100. Job 3 would hold 2 of its 4 past 100; job 4 ends by
        // 100 and backfills.
        assert_eq!(
            pass(
                &mut d,
                &g,
                0,
                &[job(2, 4, 100), job(3, 2, 150), job(4, 2, 100)]
            ),
            [(4, on(0))]
        );
        d.job_ended(100, JobId(1), ClusterId(0));
        d.job_ended(100, JobId(4), ClusterId(0));
        assert_eq!(pass(&mut d, &g, 100, &[]), [(2, on(0))]);
        d.job_ended(200, JobId(2), ClusterId(0));
        assert_eq!(pass(&mut d, &g, 200, &[]), [(3, on(0))]);
    }

    #[test]
    fn job_sharing_takes_the_best_fit_and_never_splits() {
        let g = grid(&[8, 4, 6]);
        let mut d = GridScheduler::new(false, MultiSiteConfig::default());
        // 4 wide: site 1 is left with 0, the fewest.
        assert_eq!(pass(&mut d, &g, 0, &[job(1, 4, 10)]), [(1, on(1))]);
        // 5 wide: site 2 (1 left) before site 0 (3 left).
        assert_eq!(pass(&mut d, &g, 0, &[job(2, 5, 10)]), [(2, on(2))]);
        assert!(matches!(
            d.dispatch(0, &job(3, 9, 10), 1, &g),
            Placement::Refuse(why) if why.contains("9 processors on one site")
        ));
        assert_eq!(d.describe(), "job-sharing");
    }

    #[test]
    fn down_sites_and_missing_licences_are_no_option() {
        let mut g = grid(&[8, 8, 8]);
        g.caps[0].up = false;
        g.caps[2].licences = vec![LicenceId(3)];
        let mut d = multi(10, false);
        let mut lic = job(2, 4, 10);
        lic.licences = vec![LicenceId(3)];
        assert_eq!(
            pass(&mut d, &g, 0, &[job(1, 8, 10), lic]),
            [(1, on(1)), (2, on(2))]
        );
        // 12 wide with the licence: site 2 alone holds it, and 8 < 12.
        let mut wide = job(3, 12, 10);
        wide.licences = vec![LicenceId(3)];
        assert!(matches!(d.dispatch(0, &wide, 1, &g), Placement::Refuse(_)));
        // Site 0 up again: a 12-wide job without the licence is split over sites 0 and 2 (site 1
        // is busy, site 2 has 4 free: 8 + 4).
        g.caps[0].up = true;
        assert_eq!(
            pass(&mut d, &g, 0, &[job(4, 12, 10)]),
            [(4, split(&[(0, 8), (2, 4)]))]
        );
    }

    #[test]
    fn a_fragment_limit_refuses_what_it_can_never_split() {
        let g = grid(&[32; 6]);
        let cfg = MultiSiteConfig {
            fragments: Fragments::Limited,
            ..Default::default()
        };
        let mut d = GridScheduler::new(true, cfg);
        // 100 wide: at most 2 fragments of at most 32.
        assert!(matches!(
            d.dispatch(0, &job(1, 100, 10), 1, &g),
            Placement::Refuse(why) if why.contains("fragment limit")
        ));
        // 64 wide: 1 fragment allowed, no site of 64, yet wider than the largest site: exempt
        // from the lower bound but not from the limit.
        assert!(matches!(
            d.dispatch(0, &job(2, 64, 10), 1, &g),
            Placement::Refuse(_)
        ));
        // 60 wide: up to 18 fragments under the unlimited setting.
        let mut u = GridScheduler::new(true, MultiSiteConfig::default());
        assert_eq!(
            pass(&mut u, &g, 0, &[job(3, 60, 10)]),
            [(3, split(&[(0, 32), (1, 28)]))]
        );
    }

    #[test]
    fn a_withdrawn_job_leaves_the_queue() {
        let g = grid(&[4]);
        let mut d = multi(0, false);
        assert_eq!(
            pass(&mut d, &g, 0, &[job(1, 4, 10), job(2, 4, 10)]),
            [(1, on(0))]
        );
        d.withdraw(JobId(2));
        assert_eq!(d.held(), 0);
        d.job_ended(10, JobId(1), ClusterId(0));
        assert_eq!(pass(&mut d, &g, 10, &[]), []);
    }

    #[test]
    fn a_restored_scheduler_decides_as_the_live_one() {
        let g = grid(&[8, 4, 4]);
        let mut live = multi(20, false);
        let widths = [12, 3, 1, 9, 2, 4, 6, 1, 7, 2, 10, 3];
        let jobs: Vec<Job> = (1..=12)
            .map(|i| job(i, widths[i as usize - 1], 10 + 7 * i as i64))
            .collect();
        let mut placed = Vec::new();
        for (k, j) in jobs.iter().enumerate() {
            let now = 3 * k as Time;
            placed.extend(
                pass(&mut live, &g, now, std::slice::from_ref(j))
                    .into_iter()
                    .map(|p| (p, now)),
            );
        }
        assert!(
            placed
                .iter()
                .any(|((_, p), _)| matches!(p, Placement::Split(_)))
        );
        assert!(live.held() > 0, "some jobs still wait");
        // A restart: placements with their times, then the held jobs in any order.
        let mut restarted = multi(20, false);
        for ((id, p), since) in &placed {
            restarted.restore(&jobs[*id as usize - 1], 1, p, *since);
        }
        for j in jobs.iter().rev() {
            if !placed.iter().any(|((id, _), _)| *id == j.id.0) {
                restarted.restore(j, 1, &Placement::Hold, 0);
            }
        }
        assert_eq!(restarted.held(), live.held());
        // Every job ends at its estimated end: both give the same decisions until the queue
        // is empty, and those decisions depend on the estimated ends (the head's reservation).
        let est = |id: u64, p: &Placement| {
            let e = jobs[id as usize - 1].estimate;
            if matches!(p, Placement::Split(_)) {
                (e * 120 + 99) / 100
            } else {
                e
            }
        };
        let mut running: Vec<(Time, u64)> = placed
            .iter()
            .map(|((id, p), since)| (since + est(*id, p), *id))
            .collect();
        let mut passes = 0;
        while let Some(&(t, _)) = running.iter().min() {
            for &(_, id) in running.iter().filter(|r| r.0 == t) {
                live.job_ended(t, JobId(id), ClusterId(0));
                restarted.job_ended(t, JobId(id), ClusterId(0));
            }
            running.retain(|r| r.0 != t);
            let (mut a, mut b) = (Vec::new(), Vec::new());
            live.release(t, &g, &mut a);
            restarted.release(t, &g, &mut b);
            assert_eq!(a, b, "at {t}");
            running.extend(a.iter().map(|r| (t + est(r.job.0, &r.placement), r.job.0)));
            passes += 1;
        }
        assert_eq!((live.held(), restarted.held(), passes > 3), (0, 0, true));
    }
}
