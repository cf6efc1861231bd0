//! The central grid scheduler of the multi-site study: one FCFS queue with EASY backfilling over
//! several machines, BestFit machine selection, and multi-site starts (spec
//! `self-tuning-and-multisite.md` §6.2–§6.4; §8 #8, #14, #19–#21).
//!
//! A pass walks the queue in arrival order. Until the first job that cannot start, every job starts
//! (its allocation chosen by [`Grid::options`]); that job gets the reservation — its earliest start
//! from the running jobs' estimated ends, on one machine or, where splitting is allowed, on the
//! aggregate of machines taken in descending order of free nodes (§8 #21). Later jobs start only if
//! they end by the reservation's start or leave the reserved machines enough nodes at that time.
//!
//! Allocation options (§6.3–§6.4), in preference order: the BestFit machine (fewest nodes left,
//! ties to the lowest index); then, in the multi-site scenario, a split over machines in
//! descending order of free nodes (ties to the lowest index) — only if no single machine has room,
//! the width exceeds the lower bound (or the largest machine), the fragment limit allows it, and,
//! for the adaptive scheduler, the job would end earlier split (`now + (1 + p)·estimate`) than on
//! the earliest single machine (ties wait). A split job's estimate and run time are multiplied by
//! `(100 + p) / 100`, rounded up, exactly once.

use super::config::{GridConfig, Scenario};
use gridsched_core::model::{Duration, Time};

/// A job as the grid scheduler sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GJob {
    /// Index into the workload.
    pub idx: usize,
    /// Nodes.
    pub width: u32,
    /// Estimate.
    pub estimate: Duration,
    /// Actual run time (at most the estimate).
    pub run: Duration,
}

/// Where a job runs: (machine, nodes) per fragment.
pub type Alloc = Vec<(usize, u32)>;

#[derive(Clone, Debug)]
struct Running {
    parts: Alloc,
    est_end: Time,
}

#[derive(Clone, Debug)]
struct Res {
    start: Time,
    machines: Vec<usize>,
    width: u32,
}

/// A start decided by a pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Started {
    /// The job.
    pub job: GJob,
    /// Its fragments.
    pub parts: Alloc,
    /// Its actual end.
    pub end: Time,
}

/// The grid scheduler's state.
#[derive(Clone, Debug)]
pub struct Grid {
    cfg: GridConfig,
    sizes: Vec<u32>,
    free: Vec<u32>,
    largest: u32,
    running: Vec<Option<Running>>,
    on_machine: Vec<Vec<usize>>,
    queue: Vec<GJob>,
}

impl Grid {
    /// An idle grid of machines of the given sizes.
    pub fn new(sizes: &[u32], cfg: GridConfig) -> Grid {
        Grid {
            cfg,
            sizes: sizes.to_vec(),
            free: sizes.to_vec(),
            largest: sizes.iter().copied().max().unwrap_or(0),
            running: Vec::new(),
            on_machine: vec![Vec::new(); sizes.len()],
            queue: Vec::new(),
        }
    }

    /// Queues a job.
    pub fn submit(&mut self, job: GJob) {
        self.queue.push(job);
    }

    /// Jobs waiting.
    pub fn waiting(&self) -> usize {
        self.queue.len()
    }

    /// Frees what a finished job held.
    pub fn finish(&mut self, idx: usize) {
        if let Some(r) = self.running.get_mut(idx).and_then(Option::take) {
            for (m, n) in r.parts {
                self.free[m] += n;
                self.on_machine[m].retain(|j| *j != idx);
            }
        }
    }

    /// Multiplies by (100 + p) / 100, rounded up.
    pub fn stretch(&self, d: Duration) -> Duration {
        let p = i64::from(self.cfg.overhead_pct);
        (d * (100 + p) + 99) / 100
    }

    fn free_at(&self, m: usize, t: Time) -> u32 {
        self.free[m]
            + self.on_machine[m]
                .iter()
                .filter_map(|j| self.running[*j].as_ref())
                .filter(|r| r.est_end <= t)
                .map(|r| {
                    r.parts
                        .iter()
                        .filter(|p| p.0 == m)
                        .map(|p| p.1)
                        .sum::<u32>()
                })
                .sum::<u32>()
    }

    fn ends(&self, machines: impl Iterator<Item = usize>, now: Time) -> Vec<Time> {
        let mut v: Vec<Time> = machines
            .flat_map(|m| self.on_machine[m].iter())
            .filter_map(|j| self.running[*j].as_ref())
            .map(|r| r.est_end)
            .filter(|t| *t > now)
            .collect();
        v.push(now);
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The earliest time machine `m` has `width` nodes free (estimated ends).
    fn earliest_single(&self, m: usize, width: u32, now: Time) -> Option<Time> {
        if self.sizes[m] < width {
            return None;
        }
        self.ends(std::iter::once(m), now)
            .into_iter()
            .find(|&t| self.free_at(m, t) >= width)
    }

    /// Machines in descending order of `free` (ties to the lowest index) covering `width`.
    fn split(&self, free: &[u32], width: u32) -> Option<Alloc> {
        let mut order: Vec<usize> = (0..free.len()).filter(|&m| free[m] > 0).collect();
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
        self.cfg.scenario == Scenario::MultiSite
            && (width > self.cfg.lower_bound || width > self.largest)
    }

    /// The earliest single-machine start over every machine: (time, machine).
    fn best_single(&self, width: u32, now: Time) -> Option<(Time, usize)> {
        (0..self.sizes.len())
            .filter_map(|m| self.earliest_single(m, width, now).map(|t| (t, m)))
            .min()
    }

    /// The ways `job` could start now, most preferred first.
    fn options(&self, job: &GJob, now: Time) -> Vec<Alloc> {
        let mut single: Vec<usize> = (0..self.sizes.len())
            .filter(|&m| self.free[m] >= job.width)
            .collect();
        single.sort_by_key(|&m| (self.free[m] - job.width, m));
        let mut v: Vec<Alloc> = single.into_iter().map(|m| vec![(m, job.width)]).collect();
        // A split is the fallback when no single machine has room, and — for a backfill candidate
        // whose single-machine options would all delay the reservation — the alternative that
        // may not (with p = 0 the grid then behaves exactly like one machine of the summed size).
        if self.may_split(job.width)
            && (v.is_empty() || (self.cfg.overhead_pct == 0 && !self.cfg.adaptive))
            && let Some(parts) = self.split(&self.free, job.width)
        {
            let worth = !self.cfg.adaptive
                || job.width > self.largest
                || match self.best_single(job.width, now) {
                    None => true,
                    Some((t, _)) => now + self.stretch(job.estimate) < t + job.estimate,
                };
            if worth {
                v.push(parts);
            }
        }
        v
    }

    /// The reservation of a job that cannot start now.
    fn reserve(&self, job: &GJob, now: Time) -> Option<Res> {
        let single = self.best_single(job.width, now);
        let multi = if self.may_split(job.width) && !(self.cfg.adaptive && single.is_some()) {
            let all = 0..self.sizes.len();
            self.ends(all, now).into_iter().find_map(|t| {
                let f: Vec<u32> = (0..self.sizes.len()).map(|m| self.free_at(m, t)).collect();
                // The head may take any machines at that time: the whole grid is reserved, and a
                // backfill candidate must leave it enough nodes in total (§8 #21; with a fragment
                // limit this is best effort, as every reservation of the queuing model is).
                self.split(&f, job.width)
                    .map(|_| (t, (0..self.sizes.len()).collect::<Vec<_>>()))
            })
        } else {
            None
        };
        let res = |start, machines| Res {
            start,
            machines,
            width: job.width,
        };
        match (single, multi) {
            (Some((ts, m)), Some((tm, ms))) => {
                let prefer_multi = tm < ts || (tm == ts && self.cfg.overhead_pct == 0);
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

    fn delays(&self, parts: &Alloc, est_end: Time, r: &Res) -> bool {
        if est_end <= r.start {
            return false;
        }
        let left: u32 = r
            .machines
            .iter()
            .map(|&m| {
                let taken: u32 = parts.iter().filter(|p| p.0 == m).map(|p| p.1).sum();
                self.free_at(m, r.start).saturating_sub(taken)
            })
            .sum();
        left < r.width
    }

    fn start(&mut self, job: GJob, parts: Alloc, now: Time, out: &mut Vec<Started>) {
        let multi = parts.len() > 1;
        let (est, run) = if multi {
            (self.stretch(job.estimate), self.stretch(job.run))
        } else {
            (job.estimate, job.run)
        };
        for &(m, n) in &parts {
            self.free[m] -= n;
            self.on_machine[m].push(job.idx);
        }
        if self.running.len() <= job.idx {
            self.running.resize(job.idx + 1, None);
        }
        self.running[job.idx] = Some(Running {
            parts: parts.clone(),
            est_end: now + est,
        });
        out.push(Started {
            job,
            parts,
            end: now + run,
        });
    }

    /// One scheduling pass at `now`; appends the starts to `out`.
    pub fn schedule(&mut self, now: Time, out: &mut Vec<Started>) {
        let mut res: Option<Res> = None;
        let mut i = 0;
        while i < self.queue.len() {
            let job = self.queue[i];
            let chosen = self
                .options(&job, now)
                .into_iter()
                .find(|parts| match &res {
                    None => true,
                    Some(r) => {
                        let est = if parts.len() > 1 {
                            self.stretch(job.estimate)
                        } else {
                            job.estimate
                        };
                        !self.delays(parts, now + est, r)
                    }
                });
            match chosen {
                Some(parts) => {
                    self.queue.remove(i);
                    self.start(job, parts, now, out);
                }
                None => {
                    if res.is_none() {
                        res = self.reserve(&job, now);
                    }
                    i += 1;
                }
            }
        }
    }
}
