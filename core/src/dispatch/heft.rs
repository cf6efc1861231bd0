//! **HEFT**, the Heterogeneous Earliest Finish Time list scheduler of Topcuoglu, Hariri and Wu
//! (2002, "Performance-effective and low-complexity task scheduling for heterogeneous
//! computing", IEEE TPDS 13(3)): the upward rank of §3 orders the tasks of a DAG, and the
//! algorithm of §4.1 maps each, highest rank first, to the processor giving its earliest finish
//! time, an idle slot between tasks already scheduled there counting (the insertion-based
//! policy).
//!
//! * **Upward rank** (§3): `rank(n) = w̄(n) + max over the children c of (c̄(n, c) + rank(c))`,
//!   an exit node's rank its `w̄`. `w̄(n)` is the mean of the node's computation costs over the
//!   sites that can run it, each cost its expected time to compute there ([`super::etc`]: the
//!   estimate scaled from the job's benchmark to the site's fastest machine's), in whole seconds
//!   rounded down; a node no site can run costs its estimate. The communication cost `c̄` of an
//!   edge is the mean over the grid's links of moving what the parent declares it writes
//!   ([`mean_comm`]: `L̄ + data / B̄`, §3), zero where the grid describes no links or the parent
//!   declares no outputs; the child then reads them at its site
//!   ([`crate::model::Node::outputs`]). The
//!   ranks of a workflow are computed when it enters the grid
//!   ([`Dispatcher::workflow_admitted`]) over the sites as they are then, and forgotten when it
//!   leaves ([`Dispatcher::workflow_over`]).
//! * **Ready nodes, in rank order** (the grid's reading of §4.1 for a grid that releases a node
//!   only once its parents completed, rather than mapping the whole DAG ahead): the strategy
//!   holds every job it is given ([`Placement::Hold`]) and maps the held jobs in its next release
//!   pass, highest rank first (ties: the lower job id); the tasks of an array node take their
//!   node's rank. A job that is not a workflow's node has no rank: it is ranked 0 and, like every job, goes to its earliest finish, as `min-completion`
//!   would place it.
//! * **A site's processor timeline** (the grid's reading: the paper's processors run one task at a
//!   time, a site runs many jobs on its `total_procs` processors): the strategy's own record of
//!   what it placed at each site and was not yet reported ended, each job an interval
//!   `[start, finish)` of its processors as planned when placed, plus the site's polled backlog
//!   that the record does not explain as a block of all the site's processors from now, spread as
//!   the batch-mapping heuristics spread it (`⌈area / processors⌉` seconds). The backlog not
//!   explained is `waiting area + running area` as polled minus what the site reports of the
//!   recorded jobs still ahead, in the site's units ([`super::ClusterLoad`]: processors × the
//!   estimate as given, less the time run for a running job — taken as running from its planned
//!   start once that is past), when positive. A recorded interval that should already have ended
//!   counts no more: what is left of that job is in the polled backlog.
//! * **Earliest finish with insertion**: on that timeline a job of `p` processors and ETC `d` at
//!   the site starts at the first instant `t ≥ now` from which `p` processors are free for `d`
//!   seconds, before intervals planned later if it fits in the gap (§4.1's insertion); it
//!   finishes at `t + d`. The job goes to the site of the earliest finish (ties: the lower site
//!   id), and its interval enters that site's record for the next jobs of the pass and for later
//!   passes. Where the grid describes its links, a job's inputs must reach the site first
//!   ([`super::Transfers`]): its earliest start there is searched from `now + transfer`, HEFT's
//!   data-ready time.
//!
//! The placement is what the meta level expects; the site's local policy decides the real start.
//! Integer seconds throughout; no randomness.

use super::brokers::load_of;
use super::{Dispatcher, GridState, Measure, Placement, Priority, Reason, Release, etc, refuse};
use crate::model::{ClusterId, Job, JobId, Time, Workflow};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// The mean computation cost `w̄` of `job` over the sites that can run it (its estimate when
/// none can), rounded down.
pub fn mean_cost(job: &Job, grid: &GridState) -> i128 {
    let (mut sum, mut n) = (0i128, 0i128);
    for c in grid.eligible(job) {
        sum += etc(job, &grid.caps[c.index()]);
        n += 1;
    }
    match n {
        0 => i128::from(job.estimate),
        _ => sum / n,
    }
}

/// The upward rank of every node of `wf` (by position); an edge's communication cost is
/// [`mean_comm`] of what the parent writes.
pub fn upward_ranks(wf: &Workflow, grid: &GridState) -> Vec<i128> {
    // Children before their parents.
    let mut rank = vec![0i128; wf.len()];
    for &k in wf.order().iter().rev() {
        let node = &wf.nodes()[k];
        let comm = mean_comm(node.outputs.iter().map(|o| o.bytes).sum(), grid);
        let below = (wf.children(k).iter())
            .map(|&c| comm + rank[c as usize])
            .max()
            .unwrap_or(0);
        rank[k] = mean_cost(&node.job, grid) + below;
    }
    rank
}

/// The mean communication cost `c̄` of `bytes` passed from a node to a child (Topcuoglu et al.
/// §3: `L̄ + data / B̄`, the mean latency and the mean bandwidth over the links between sites),
/// whole seconds rounded up; 0 where the grid describes no links, has one site, or nothing
/// passes.
pub fn mean_comm(bytes: u64, grid: &GridState) -> i128 {
    let Some(net) = grid.transfers.network() else {
        return 0;
    };
    let n = net.sites();
    if bytes == 0 || n < 2 {
        return 0;
    }
    let pairs = (0..n).flat_map(|a| (0..n).filter(move |&b| b != a).map(move |b| (a, b)));
    let (mut latency_ms, mut rate, mut count) = (0u128, 0u128, 0u128);
    for (a, b) in pairs {
        let l = net.between[a][b];
        latency_ms += u128::from(l.latency_ms);
        rate += u128::from(l.bytes_per_s.max(1));
        count += 1;
    }
    // (L̄ + bytes / B̄) in ms: (Σlatency + bytes · 1000 · count² / Σrate) / count.
    let ms = (latency_ms + (u128::from(bytes) * 1000 * count * count).div_ceil(rate)) / count;
    i128::try_from(ms.div_ceil(1000)).unwrap_or(i128::MAX)
}

/// A job placed at a site, as planned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Planned {
    site: usize,
    start: i128,
    finish: i128,
    procs: u32,
    /// Its estimate as given (the unit of the sites' polled areas).
    estimate: i128,
}

impl Planned {
    /// The area the site reports of it at `now`: processors × estimate, less what it ran when
    /// taken as running from its planned start.
    fn reported(&self, now: i128) -> i128 {
        let ran = (now - self.start).max(0);
        i128::from(self.procs) * (self.estimate - ran).max(0)
    }
}

/// One site's timeline in a release pass: its processors and the changes of their use, sorted by
/// time (`+p` at an interval's start, `-p` at its finish).
#[derive(Clone, Debug, Default)]
struct Timeline {
    procs: i64,
    changes: Vec<(i128, i64)>,
}

impl Timeline {
    /// `procs` processors in use over `[start, finish)`.
    fn add(&mut self, start: i128, finish: i128, procs: i64) {
        if finish <= start || procs <= 0 {
            return;
        }
        for (t, d) in [(start, procs), (finish, -procs)] {
            let at = self.changes.partition_point(|&(u, _)| u <= t);
            self.changes.insert(at, (t, d));
        }
    }

    /// The first instant from `from` on at which `procs` processors are free for `d` seconds.
    fn earliest_start(&self, from: i128, procs: i64, d: i128) -> i128 {
        let procs = procs.min(self.procs);
        let (mut used, mut cand, mut i) = (0i64, from, 0usize);
        loop {
            // The use `used` holds until the next change.
            let next = self.changes.get(i).map_or(i128::MAX, |c| c.0);
            if next > cand {
                if used + procs > self.procs {
                    cand = next;
                } else if next == i128::MAX || next - cand >= d {
                    return cand;
                }
            }
            if i >= self.changes.len() {
                return cand;
            }
            while i < self.changes.len() && self.changes[i].0 == next {
                used += self.changes[i].1;
                i += 1;
            }
        }
    }
}

/// The HEFT strategy.
#[derive(Clone, Debug, Default)]
pub struct Heft {
    /// The upward rank of every run of every node of the workflows in the grid, by job id.
    ranks: FxHashMap<JobId, i128>,
    /// Each workflow's node run ids, to forget them with it.
    flows: FxHashMap<JobId, Vec<JobId>>,
    /// The jobs held for the next pass, by id.
    held: BTreeMap<JobId, Job>,
    /// The jobs placed and not reported ended, by id.
    planned: BTreeMap<JobId, Planned>,
}

impl Heft {
    /// A strategy with nothing ranked, held or planned.
    pub fn new() -> Heft {
        Heft::default()
    }

    /// The rank of job `id` (0 when it is not a node of a workflow in the grid).
    pub fn rank(&self, id: JobId) -> i128 {
        self.ranks.get(&id).copied().unwrap_or(0)
    }

    /// The rank of `job`: its own, or, for a task of an array node, its node's.
    fn rank_of(&self, job: &Job) -> i128 {
        match (self.ranks.get(&job.id), job.task) {
            (Some(&r), _) => r,
            (None, Some(t)) => self.rank(t.array),
            (None, None) => 0,
        }
    }

    /// Every site's timeline at `now`: the recorded intervals still ahead, and the polled backlog
    /// they do not explain as a block of the whole site from `now`.
    fn timelines(&self, now: Time, grid: &GridState) -> Vec<Timeline> {
        let now = i128::from(now);
        let mut lines: Vec<Timeline> = (grid.caps.iter())
            .map(|c| Timeline {
                procs: i64::try_from(c.total_procs.max(1)).unwrap_or(i64::MAX),
                changes: Vec::new(),
            })
            .collect();
        let mut ahead = vec![0i128; lines.len()];
        for p in self.planned.values() {
            let Some(line) = lines.get_mut(p.site) else {
                continue;
            };
            if p.finish > now {
                let start = p.start.max(now);
                line.changes.push((start, i64::from(p.procs)));
                line.changes.push((p.finish, -i64::from(p.procs)));
                ahead[p.site] += p.reported(now);
            }
        }
        for (i, line) in lines.iter_mut().enumerate() {
            line.changes.sort_unstable();
            let l = load_of(grid, ClusterId(i as u32));
            let foreign = (l.waiting_area + l.running_area - ahead[i]).max(0);
            let total = i128::from(line.procs);
            line.add(now, now + (foreign + total - 1) / total, line.procs);
        }
        lines
    }
}

impl Dispatcher for Heft {
    fn compact(&mut self) {
        use crate::structures::Shrink;
        self.ranks.shrink_if_sparse();
        self.flows.shrink_if_sparse();
    }

    fn describe(&self) -> String {
        "heft".into()
    }

    fn dispatch(&mut self, _now: Time, job: &Job, _p: Priority, grid: &GridState) -> Placement {
        if grid.eligible(job).next().is_none() {
            return refuse(job);
        }
        self.held.insert(job.id, job.clone());
        Placement::Hold
    }

    fn release(&mut self, now: Time, grid: &GridState, out: &mut Vec<Release>) {
        if self.held.is_empty() {
            return;
        }
        let mut lines = self.timelines(now, grid);
        let mut order: Vec<Job> = std::mem::take(&mut self.held).into_values().collect();
        // Highest rank first; `order` is in id order and the sort is stable.
        order.sort_by_key(|j| std::cmp::Reverse(self.rank_of(j)));
        let now_s = now;
        let now = i128::from(now);
        let mut pass = super::Pass::default();
        for job in order {
            let options: Vec<(ClusterId, i128, i128)> = grid
                .eligible(&job)
                .filter(|c| c.index() < lines.len())
                .map(|c| {
                    let d = etc(&job, &grid.caps[c.index()]).max(0);
                    let data =
                        now + i128::from(grid.transfers.counted_besides(&job, c, now_s, &pass));
                    let start = lines[c.index()].earliest_start(data, i64::from(job.procs), d);
                    (c, start, start + d)
                })
                .collect();
            let Some(&(site, start, finish)) = options.iter().min_by_key(|o| (o.2, o.0)) else {
                out.push(super::refused_release(&job));
                continue;
            };
            lines[site.index()].add(start, finish, i64::from(job.procs));
            pass.placed(&grid.transfers, &job, site, now_s);
            self.planned.insert(
                job.id,
                Planned {
                    site: site.index(),
                    start,
                    finish,
                    procs: job.procs,
                    estimate: i128::from(job.estimate),
                },
            );
            out.push(Release {
                job: job.id,
                placement: Placement::Cluster(site),
                reason: Reason::least(
                    Measure::Completion,
                    None,
                    site,
                    options.iter().map(|o| (o.0, o.2)),
                ),
            });
        }
    }

    fn held(&self) -> usize {
        self.held.len()
    }

    fn withdraw(&mut self, job: JobId) {
        self.held.remove(&job);
        self.planned.remove(&job);
    }

    fn job_ended(&mut self, _now: Time, job: JobId, _cluster: ClusterId) {
        self.planned.remove(&job);
    }

    fn job_returned(&mut self, _now: Time, job: JobId, _cluster: ClusterId) {
        self.planned.remove(&job);
    }

    fn restore(&mut self, job: &Job, _p: Priority, placement: &Placement, since: Time) {
        match placement {
            Placement::Hold => {
                self.held.insert(job.id, job.clone());
            }
            // Its interval as it was planned cannot be known again: from its placement, for
            // its estimate.
            Placement::Cluster(c) => {
                let start = i128::from(since);
                self.planned.insert(
                    job.id,
                    Planned {
                        site: c.index(),
                        start,
                        finish: start + i128::from(job.estimate.max(0)),
                        procs: job.procs,
                        estimate: i128::from(job.estimate),
                    },
                );
            }
            _ => {}
        }
    }

    fn reads_site_state(&self) -> bool {
        true
    }

    fn workflow_admitted(&mut self, _now: Time, id: JobId, wf: &Workflow, grid: &GridState) {
        let ranks = upward_ranks(wf, grid);
        let mut ids = Vec::new();
        for (k, node) in wf.nodes().iter().enumerate() {
            for attempt in 1..=node.retries.saturating_add(1) {
                let run = wf.node_id(id, k, attempt);
                self.ranks.insert(run, ranks[k]);
                ids.push(run);
            }
        }
        self.flows.insert(id, ids);
    }

    fn workflow_over(&mut self, id: JobId) {
        for run in self.flows.remove(&id).unwrap_or_default() {
            self.ranks.remove(&run);
        }
    }
}

#[cfg(test)]
mod tests;
