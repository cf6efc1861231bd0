//! IMFS as the thesis describes it (thesis §3.2.2, as specified in `two-level-grid-scheduler.md`
//! D7.4; objective order D12 #22): start from the previous round's matching, grow a *longest path
//! tree* over the residual graph and augment along its best path, repeatedly, until no path
//! improves the matching. [`super::matching::imfs`] is our other incremental matcher (inherit,
//! repair short exchanges, then exact matching on the rest); this one follows the seed's
//! description. From an empty previous matching it is the seed's MFS built by augmenting.
//!
//! **The residual graph.** Jobs (rows) and machines (columns); an arc exists only where
//! `p[i][m] > 0`. An unmatched pair gives a forward arc job → machine of cost `+p`, a matched pair
//! a backward arc machine → job of cost `−p` (the inherited arcs "reversed with negated weight").
//!
//! **A path** starts at a free job and alternates forward and backward arcs. It is *odd* when it
//! ends at a free machine (flipping it adds one pair) and *even* when it ends at a job (flipping
//! it frees that job: an exchange that keeps the number of pairs and changes the weight by the
//! path's cost). The seed also roots the tree at "all unmatched nodes": the paths from a free
//! machine (a held job moves onto it, its machine passes to another held job, …, the last
//! machine is left free) are even paths too, searched here as paths from a *released* held
//! machine to a free machine.
//!
//! **The loop.** Compute the tree; if an odd path exists, flip the one of largest cost; otherwise
//! flip the even path of largest cost if that cost is positive; otherwise stop. Odd paths come
//! first, so the cardinality is maximised first, then the weight (D12 #22).
//!
//! Readings adopted where the seed is silent:
//!
//! * **Inherited pairs**: a pair of `previous` whose machine or job is out of range, whose entry
//!   is no longer an arc (`p ≤ 0`, or NaN), or whose job is already held by a lower machine, is
//!   dropped before anything else. The others are kept as they are (not re-optimised): only the
//!   paths below can change them.
//! * **The longest path tree** is computed from all roots at once (a super-source). A free job
//!   has no incoming arc, so the roots enter as each machine's best free job (largest `p`, then
//!   lower row); a matched job's label is its machine's label minus its entry, so the search
//!   runs over the machines only, along arcs machine `u` → machine `v` of cost
//!   `p[k][v] − p[k][u]` (`k` the job `u` holds). A label rises only by more than a tolerance
//!   (`1e-9 ×` the largest entry), so floating-point noise cannot make it creep. Two ways to
//!   grow the same tree:
//!   - *label correcting*, Bellman–Ford style: round by round, only from the machines whose
//!     label rose in the previous round, machines in increasing index within a round, each label
//!     used as soon as it rises; at most `cols` rounds. Always used for the first search, after a
//!     path from a released machine, and whenever the other way gives up;
//!   - *label setting* (Dijkstra with potentials): once a search has converged, its labels are
//!     potentials under which no arc of the next residual graph gains (flipping a longest path
//!     from a free job keeps them so — the successive shortest paths argument), and each machine
//!     is scanned once, the one of largest label minus potential first (ties: lower index). If a
//!     scan would raise a machine already scanned, the potentials were not feasible: the search
//!     is redone by label correcting. As in the Hungarian algorithm it stops as soon as no
//!     machine left to scan can raise a free machine's label (a sink behind the free machines,
//!     whose key is then above every key left), and the potentials move by the capped keys.
//!     Both ways end with the same labels on the free machines (the longest path labels; with
//!     label correcting, on every machine); only the parent chosen among equal labels may
//!     differ, deterministically. Label setting is used after the first converged search, as
//!     long as only paths from free jobs are flipped.
//! * **Positive cycles**: the inherited pairs are not optimal, so the residual graph may hold
//!   cycles of positive cost (exchanges among held jobs), along which labels would rise forever.
//!   A label is never raised through a machine's own descendant (label correcting walks up the
//!   parent chain before each rise; label setting gives up, since a machine's ancestors are all
//!   scanned), so the tree stays a tree and every path read from it is simple; and the rounds
//!   are bounded by the number of machines (a simple path visits each machine once, so without
//!   positive cycles the labels are exact by then; with one, the labels reached by then are
//!   taken). Such a cycle is not itself flipped (it is not a path from an unmatched node); its
//!   jobs can still move along paths.
//! * **Which path**: odd first: the free machine of largest label, ties to the lower machine
//!   index (within a label, the root is the machine's best free job: lower row on ties). Then
//!   even: first the paths from a free job, the one of largest cost (ties: the lower machine
//!   the dropped job leaves); only when none has a positive cost, the paths from a free
//!   machine, the one of largest cost (ties: the lower free machine) — so the second tree is
//!   grown only at the end of the exchanges from free jobs. An even path's cost must exceed the
//!   tolerance (a zero-gain exchange is not made) and is recomputed along the path before it
//!   is taken.
//! * **Termination**: each odd path adds a pair (at most `min(rows, cols)` of them); each even
//!   path raises the weight by more than the tolerance. Even paths are additionally capped at
//!   `rows + cols` per call (a bound on the work; not reached in the tests).
//!
//! Properties (tested below): the result is a matching on arcs only; its cardinality is maximum
//! (Berge: a matching is maximum iff no augmenting path exists, and every machine reachable from
//! a free job receives a label within the bounded rounds, so an odd path is found whenever one
//! exists); with an empty `previous` it is also of maximum weight (successive longest augmenting
//! paths keep the matching of maximum weight for its size, so there is no positive cycle and the
//! labels are exact) — the MFS optimum up to ties and the tolerance; from a `previous` matching
//! it is an approximation (the inherited pairs are not re-optimised), whose weight is never below
//! that of the valid inherited pairs when the cardinality is unchanged.
//!
//! Cost: a label-setting search scans each held machine at most once (`O(held × cols)`); a
//! label-correcting one `O(rounds × held × cols)`, `cols` rounds at worst and a few in practice.
//! From an empty start it takes one search per pair, so `O(cols² × min(rows, cols))` plus one
//! pass over the matrix; from the previous plan, one search per pair that changes. The best
//! free job of each machine is kept across searches: a machine's candidates are its `cols + 1`
//! best jobs (at most `cols` jobs are held, so one of them is free), selected from its column
//! the first time its best free job is taken.

use super::matching::{Assignment, Matrix};

/// No job / no machine.
const NONE: usize = usize::MAX;

/// How a machine was reached in the tree.
#[derive(Clone, Copy, Debug, PartialEq)]
enum From {
    /// Not reached.
    Unreached,
    /// Root: this free job takes the machine.
    Job(usize),
    /// Root: the machine is released (its job moves on) — the paths from free machines.
    Released,
    /// The job held by that machine moves here.
    Machine(usize),
}

/// The matching being improved and the tree.
struct Tree<'a> {
    p: &'a Matrix,
    tol: f64,
    job_of: Vec<usize>,
    mach_of: Vec<usize>,
    /// Each machine's best free job (`NONE`: no free job has an arc to it).
    best: Vec<usize>,
    /// Each machine's `cols + 1` best jobs, best first (built on first need), and the position
    /// before which all are held.
    lists: Vec<Option<Vec<usize>>>,
    cursor: Vec<usize>,
    label: Vec<f64>,
    from: Vec<From>,
    frontier: Vec<usize>,
    next: Vec<usize>,
    /// Label setting: each machine's position among those to scan.
    at_in: Vec<usize>,
    queued: Vec<bool>,
    /// Potentials: the labels of the last converged search from the free jobs.
    pi: Vec<f64>,
    /// Whether `pi` may order the next search (no path from a released machine flipped since).
    pi_valid: bool,
    settled: Vec<bool>,
    /// Whether label setting may be tried.
    setting_allowed: bool,
}

/// The thesis' IMFS from `previous` (see the module documentation); with an empty `previous`, MFS
/// built by augmenting along longest paths. Returns `job_of[m]` for every machine of `p`.
pub fn imfs_tree(p: &Matrix, previous: &Assignment) -> Assignment {
    imfs_tree_with(p, previous, true)
}

/// [`imfs_tree`], with label setting allowed or not (every search label correcting).
fn imfs_tree_with(p: &Matrix, previous: &Assignment, setting: bool) -> Assignment {
    let (rows, cols) = (p.rows, p.cols);
    let mut job_of = vec![NONE; cols];
    let mut mach_of = vec![NONE; rows];
    for (m, j) in previous.iter().enumerate().take(cols) {
        if let Some(i) = *j
            && i < rows
            && mach_of[i] == NONE
            && p.at(i, m) > 0.0
        {
            job_of[m] = i;
            mach_of[i] = m;
        }
    }
    let max_p = p.p.iter().fold(0.0f64, |a, &v| if v > a { v } else { a });
    if max_p > 0.0 {
        let mut t = Tree::new(p, 1e-9 * max_p, job_of, mach_of);
        t.setting_allowed = setting;
        t.run();
        job_of = t.job_of;
    }
    job_of
        .into_iter()
        .map(|i| if i == NONE { None } else { Some(i) })
        .collect()
}

impl<'a> Tree<'a> {
    fn new(p: &'a Matrix, tol: f64, job_of: Vec<usize>, mach_of: Vec<usize>) -> Tree<'a> {
        let cols = p.cols;
        // Each machine's best free job, over the rows in order (strict `>`: lower row on ties).
        let mut best = vec![NONE; cols];
        let mut best_p = vec![0.0f64; cols];
        for (i, row) in p.p.chunks_exact(cols.max(1)).enumerate().take(p.rows) {
            if mach_of[i] != NONE {
                continue;
            }
            for (m, &v) in row.iter().enumerate() {
                if v > best_p[m] {
                    best_p[m] = v;
                    best[m] = i;
                }
            }
        }
        Tree {
            p,
            tol,
            job_of,
            mach_of,
            best,
            lists: vec![None; cols],
            cursor: vec![0; cols],
            label: vec![f64::NEG_INFINITY; cols],
            from: vec![From::Unreached; cols],
            frontier: Vec::with_capacity(cols),
            next: Vec::with_capacity(cols),
            at_in: vec![NONE; cols],
            queued: vec![false; cols],
            pi: vec![0.0; cols],
            pi_valid: false,
            settled: vec![false; cols],
            setting_allowed: true,
        }
    }

    fn row(&self, i: usize) -> &'a [f64] {
        let p = self.p;
        &p.p[i * p.cols..(i + 1) * p.cols]
    }

    /// Odd paths while any; then even paths of positive cost, at most `rows + cols`.
    fn run(&mut self) {
        let cols = self.p.cols;
        let mut evens = 0;
        loop {
            self.search_free_jobs();
            let mut odd = NONE;
            for m in 0..cols {
                if self.job_of[m] == NONE
                    && self.from[m] != From::Unreached
                    && (odd == NONE || self.label[m] > self.label[odd])
                {
                    odd = m;
                }
            }
            if odd != NONE {
                self.flip(odd);
                continue;
            }
            if evens >= self.p.rows + cols {
                break;
            }
            // Even paths from a free job: ending at a held job, which is dropped.
            let mut pick: Option<(f64, usize)> = None;
            for m in 0..cols {
                let e = self.job_of[m];
                if e != NONE && self.from[m] != From::Unreached {
                    let gain = self.label[m] - self.row(e)[m];
                    if pick.is_none_or(|(g, _)| gain > g) {
                        pick = Some((gain, m));
                    }
                }
            }
            if let Some((_, end)) = pick.filter(|&(g, _)| g > self.tol) {
                if self.gain(end) <= self.tol {
                    break;
                }
                let e = self.job_of[end];
                self.mach_of[e] = NONE;
                self.job_of[end] = NONE;
                self.flip(end);
                self.freed(e);
                evens += 1;
                continue;
            }
            // None: even paths from a free machine (a released held machine to a free machine).
            self.search(true);
            self.pi_valid = false;
            let mut other: Option<(f64, usize)> = None;
            for m in 0..cols {
                if self.job_of[m] == NONE
                    && self.from[m] != From::Unreached
                    && other.is_none_or(|(g, _)| self.label[m] > g)
                {
                    other = Some((self.label[m], m));
                }
            }
            let Some((_, end)) = other.filter(|&(g, _)| g > self.tol) else {
                break;
            };
            if self.gain(end) <= self.tol {
                break;
            }
            self.flip(end);
            evens += 1;
        }
    }

    /// The longest path tree from the free jobs: label-setting in the order of the potentials
    /// when they are valid and nothing contradicts them, else label-correcting. Either way the
    /// labels end as a fixpoint of every arc from a reached machine (within the tolerance), when
    /// the correcting search converges within its rounds; then they become the potentials.
    fn search_free_jobs(&mut self) {
        let converged = (self.setting_allowed && self.pi_valid && self.setting()) || {
            let converged = self.search(false);
            if converged {
                for m in 0..self.p.cols {
                    if self.from[m] != From::Unreached {
                        self.pi[m] = self.label[m];
                    }
                }
            }
            converged
        };
        self.pi_valid = converged;
    }

    /// The tree from the free jobs as Dijkstra's algorithm with potentials grows it: each held
    /// machine is scanned once, the one of largest label minus potential first (ties: lower
    /// index). Exact when the potentials are feasible (after flipping a longest path from a free
    /// job, the previous labels are — the successive shortest paths argument); if a scan would
    /// raise a machine already scanned, they are not, and it returns false (the caller falls
    /// back to label correcting). As in the Hungarian algorithm it stops once the best free
    /// machine's key (label minus the largest potential of a free machine: a sink behind every
    /// free machine) is above every machine left to scan — no scan can raise a free machine's
    /// label any more — and then moves the potentials by the capped keys (each reached machine's
    /// potential plus the larger of its key and the sink's, so a scanned machine's becomes its
    /// label; an unreached machine's moves by the sink's key), which stay feasible.
    /// On success the potentials are updated.
    fn setting(&mut self) -> bool {
        let cols = self.p.cols;
        self.frontier.clear();
        // The sink's potential, and its label: the best free machine's.
        let mut pi_t = f64::NEG_INFINITY;
        let mut label_t = f64::NEG_INFINITY;
        for m in 0..cols {
            self.settled[m] = false;
            if self.best[m] != NONE {
                self.label[m] = self.row(self.best[m])[m];
                self.from[m] = From::Job(self.best[m]);
                if self.job_of[m] != NONE {
                    self.frontier.push(m);
                }
            } else {
                self.label[m] = f64::NEG_INFINITY;
                self.from[m] = From::Unreached;
            }
            if self.job_of[m] == NONE {
                pi_t = pi_t.max(self.pi[m]);
                label_t = label_t.max(self.label[m]);
            }
        }
        // The keys of the machines to scan, beside them.
        let mut keys: Vec<f64> = (self.frontier.iter())
            .map(|&m| self.label[m] - self.pi[m])
            .collect();
        for (a, &m) in self.frontier.iter().enumerate() {
            self.queued[m] = true;
            self.at_in[m] = a;
        }
        let mut hits: Vec<(usize, f64)> = Vec::new();
        let mut early = false;
        while !self.frontier.is_empty() {
            let mut at = 0;
            let mut key = keys[0];
            for (a, &k) in keys.iter().enumerate().skip(1) {
                if k > key || (k == key && self.frontier[a] < self.frontier[at]) {
                    at = a;
                    key = k;
                }
            }
            if label_t - pi_t > key {
                early = true;
                break;
            }
            let u = self.frontier.swap_remove(at);
            keys.swap_remove(at);
            if let Some(&moved) = self.frontier.get(at) {
                self.at_in[moved] = at;
            }
            self.queued[u] = false;
            self.settled[u] = true;
            let row = self.row(self.job_of[u]);
            let base = self.label[u] - row[u];
            // The scan only reads; the few rises are applied after it.
            hits.clear();
            let tol = self.tol;
            for (v, (&w, &l)) in row.iter().zip(&self.label).enumerate() {
                if w > 0.0 && base + w > l + tol && v != u {
                    hits.push((v, base + w));
                }
            }
            for &(v, cand) in &hits {
                if self.settled[v] {
                    for &m in &self.frontier {
                        self.queued[m] = false;
                    }
                    return false;
                }
                self.label[v] = cand;
                self.from[v] = From::Machine(u);
                if self.job_of[v] == NONE {
                    label_t = label_t.max(cand);
                } else if self.queued[v] {
                    keys[self.at_in[v]] = cand - self.pi[v];
                } else {
                    self.queued[v] = true;
                    self.at_in[v] = self.frontier.len();
                    self.frontier.push(v);
                    keys.push(cand - self.pi[v]);
                }
            }
        }
        for &m in &self.frontier {
            self.queued[m] = false;
        }
        for m in 0..cols {
            if early {
                // Scanned machines' keys are at least the sink's; a free machine's may be too.
                let key = if self.from[m] == From::Unreached {
                    f64::NEG_INFINITY
                } else {
                    self.label[m] - self.pi[m]
                };
                self.pi[m] += key.max(label_t - pi_t);
            } else if self.from[m] != From::Unreached {
                self.pi[m] = self.label[m];
            }
        }
        true
    }

    /// The longest path tree by label correcting: from the free jobs (`released = false`) or
    /// from every held machine released (`released = true`). Returns whether the labels
    /// converged within the rounds.
    fn search(&mut self, released: bool) -> bool {
        let cols = self.p.cols;
        self.frontier.clear();
        for m in 0..cols {
            let held = self.job_of[m] != NONE;
            let (label, from) = if released {
                if held {
                    (0.0, From::Released)
                } else {
                    (f64::NEG_INFINITY, From::Unreached)
                }
            } else if self.best[m] != NONE {
                (self.row(self.best[m])[m], From::Job(self.best[m]))
            } else {
                (f64::NEG_INFINITY, From::Unreached)
            };
            self.label[m] = label;
            self.from[m] = from;
            if held && from != From::Unreached {
                self.frontier.push(m);
            }
        }
        for _ in 0..cols {
            if self.frontier.is_empty() {
                break;
            }
            self.next.clear();
            for f in 0..self.frontier.len() {
                let u = self.frontier[f];
                let k = self.job_of[u];
                let row = self.row(k);
                let base = self.label[u] - row[u];
                for (v, &w) in row.iter().enumerate() {
                    // `w > 0` is false for NaN, as for non-arcs; u → u is k's own (matched) arc.
                    let arc = w > 0.0;
                    if !arc || v == u {
                        continue;
                    }
                    let cand = base + w;
                    if cand > self.label[v] + self.tol && !self.descends(u, v) {
                        self.label[v] = cand;
                        self.from[v] = From::Machine(u);
                        if self.job_of[v] != NONE && !self.queued[v] {
                            self.queued[v] = true;
                            self.next.push(v);
                        }
                    }
                }
            }
            for &v in &self.next {
                self.queued[v] = false;
            }
            self.next.sort_unstable();
            std::mem::swap(&mut self.frontier, &mut self.next);
        }
        self.frontier.is_empty()
    }

    /// Whether `u` is `v` or lies below `v` in the tree (then `v` may not hang below `u`).
    fn descends(&self, mut u: usize, v: usize) -> bool {
        loop {
            if u == v {
                return true;
            }
            match self.from[u] {
                From::Machine(x) => u = x,
                _ => return false,
            }
        }
    }

    /// The cost of the tree's path to `end` (recomputed from the entries).
    fn gain(&self, end: usize) -> f64 {
        let mut g = 0.0;
        let mut cur = end;
        if self.from[end] != From::Unreached && self.job_of[end] != NONE {
            g -= self.row(self.job_of[end])[end];
        }
        loop {
            match self.from[cur] {
                From::Job(i) => return g + self.row(i)[cur],
                From::Machine(u) => {
                    let k = self.job_of[u];
                    g += self.row(k)[cur] - self.row(k)[u];
                    cur = u;
                }
                From::Released | From::Unreached => return g,
            }
        }
    }

    /// Flips the tree's path ending at machine `end`, which is free (its job, if any, already
    /// dropped); then updates the best free jobs.
    fn flip(&mut self, end: usize) {
        let mut cur = end;
        let mut root = NONE;
        loop {
            match self.from[cur] {
                From::Job(i) => {
                    self.job_of[cur] = i;
                    self.mach_of[i] = cur;
                    root = i;
                    break;
                }
                From::Machine(u) => {
                    let k = self.job_of[u];
                    self.job_of[cur] = k;
                    self.mach_of[k] = cur;
                    cur = u;
                }
                From::Released => {
                    self.job_of[cur] = NONE;
                    break;
                }
                From::Unreached => unreachable!("a path is read from reached machines"),
            }
        }
        if root != NONE {
            for m in 0..self.p.cols {
                if self.best[m] == root {
                    self.best[m] = self.best_free(m);
                }
            }
        }
    }

    /// Job `e` became free: it may be some machine's best free job.
    fn freed(&mut self, e: usize) {
        self.cursor.fill(0);
        let row = self.row(e);
        for (m, &v) in row.iter().enumerate() {
            if v > 0.0 {
                let b = self.best[m];
                if b == NONE || v > self.row(b)[m] || (v == self.row(b)[m] && e < b) {
                    self.best[m] = e;
                }
            }
        }
    }

    /// Machine `m`'s best free job, from its list of best jobs.
    fn best_free(&mut self, m: usize) -> usize {
        if self.lists[m].is_none() {
            let p = self.p;
            let k = p.cols + 1;
            let by_rank = |a: &usize, b: &usize| p.at(*b, m).total_cmp(&p.at(*a, m)).then(a.cmp(b));
            let mut list: Vec<usize> = (0..p.rows).filter(|&i| p.at(i, m) > 0.0).collect();
            if list.len() > k {
                list.select_nth_unstable_by(k - 1, by_rank);
                list.truncate(k);
            }
            list.sort_unstable_by(by_rank);
            self.lists[m] = Some(list);
        }
        let list = self.lists[m].as_deref().unwrap_or_default();
        let mut at = self.cursor[m];
        while at < list.len() && self.mach_of[list[at]] != NONE {
            at += 1;
        }
        self.cursor[m] = at;
        list.get(at).copied().unwrap_or(NONE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convergent::matching::{mfs, mis, score};
    use proptest::prelude::*;

    fn matrix(rows: &[&[f64]]) -> Matrix {
        let mut p = Matrix::zeros(rows.len(), rows.first().map_or(0, |r| r.len()));
        for (i, r) in rows.iter().enumerate() {
            for (m, &v) in r.iter().enumerate() {
                *p.at_mut(i, m) = v;
            }
        }
        p
    }

    /// A matching on arcs only, one entry per machine, each job at most once.
    fn valid(p: &Matrix, a: &Assignment) -> Result<(), String> {
        if a.len() != p.cols {
            return Err(format!("{} entries for {} machines", a.len(), p.cols));
        }
        let mut used = vec![false; p.rows];
        for (m, j) in a.iter().enumerate() {
            if let Some(i) = *j {
                let arc = i < p.rows && p.at(i, m) > 0.0;
                if !arc || used[i] {
                    return Err(format!("bad pair ({i}, {m}) in {a:?}"));
                }
                used[i] = true;
            }
        }
        Ok(())
    }

    /// The pairs of `previous` that are inherited (the module's dropping rule).
    fn inherited(p: &Matrix, previous: &Assignment) -> Assignment {
        let mut used = vec![false; p.rows];
        (0..p.cols)
            .map(|m| match previous.get(m).copied().flatten() {
                Some(i) if i < p.rows && !used[i] && p.at(i, m) > 0.0 => {
                    used[i] = true;
                    Some(i)
                }
                _ => None,
            })
            .collect()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-7 * (1.0 + a.abs().max(b.abs()))
    }

    #[test]
    fn an_odd_path_of_three_arcs() {
        // Jobs 0 and 2 hold machines 0 and 2; job 1 values only machine 0, job 0 also machine 1.
        // The odd path job 1 → m0 → job 0 → m1 (three arcs) adds a pair: 1 on m0, 0 moves to m1.
        let p = matrix(&[&[5.0, 4.0, 0.0], &[3.0, 0.0, 0.0], &[0.0, 0.0, 1.0]]);
        let prev = vec![Some(0), None, Some(2)];
        let want = vec![Some(1), Some(0), Some(2)];
        assert_eq!(imfs_tree(&p, &prev), want);
        // From nothing, MFS by augmenting: 0 → m0 (5), then the same odd path (3 − 5 + 4 = 2),
        // then 2 → m2.
        assert_eq!(imfs_tree(&p, &vec![None; 3]), want);
        assert_eq!(score(&p, &want), score(&p, &mfs(&p)));
        // The greedy MIS takes (0, m0) and leaves job 1 out.
        assert_eq!(score(&p, &mis(&p)).0, 2);
    }

    #[test]
    fn an_even_path_exchange_raises_the_weight() {
        // Both machines held (weight 1 + 2); free job 2 values machine 0 at 6, job 0 machine 1
        // at 5. No odd path (no free machine); the even paths 2 → m0 → job 0 → m1 → job 1
        // (6 − 1 + 5 − 2 = 8) and 2 → m0 → job 0 (5) start at the free job: the longer is taken.
        let p = matrix(&[&[1.0, 5.0], &[0.0, 2.0], &[6.0, 0.0]]);
        let prev = vec![Some(0), Some(1)];
        let got = imfs_tree(&p, &prev);
        assert_eq!(got, vec![Some(2), Some(0)]);
        assert_eq!(score(&p, &got), (2, 11.0));
        assert_eq!(score(&p, &got), score(&p, &mfs(&p)));
        // An exchange that would lose weight is not made.
        let p = matrix(&[&[5.0], &[1.0]]);
        assert_eq!(imfs_tree(&p, &vec![Some(0)]), vec![Some(0)]);
        // Nor one that gains nothing (a tie keeps the inherited pair).
        let p = matrix(&[&[2.0], &[2.0]]);
        assert_eq!(imfs_tree(&p, &vec![Some(1)]), vec![Some(1)]);
    }

    #[test]
    fn an_even_path_from_a_free_machine() {
        // No free job: job 0 holds machine 0 (1) and values the free machine 1 at 5.
        let p = matrix(&[&[1.0, 5.0]]);
        assert_eq!(imfs_tree(&p, &vec![Some(0), None]), vec![None, Some(0)]);
        // A chain: job 1 leaves machine 1 for the free machine 2, then job 0 takes machine 1.
        let p = matrix(&[&[1.0, 5.0, 0.0], &[0.0, 1.0, 5.0]]);
        assert_eq!(
            imfs_tree(&p, &vec![Some(0), Some(1), None]),
            vec![None, Some(0), Some(1)]
        );
    }

    #[test]
    fn a_positive_cycle_among_held_jobs_is_not_searched() {
        // Jobs 0 and 1 would gain by exchanging their machines (2 → 10), but no path from an
        // unmatched node reaches that cycle: the inherited pairs stay (our `imfs` exchanges them).
        let p = matrix(&[&[1.0, 5.0], &[5.0, 1.0]]);
        assert_eq!(
            imfs_tree(&p, &vec![Some(0), Some(1)]),
            vec![Some(0), Some(1)]
        );
        // With a free job the cycle is in the residual graph; the paths still end well: job 2
        // takes a machine only if it gains.
        let p = matrix(&[&[1.0, 5.0], &[5.0, 1.0], &[0.5, 0.5]]);
        let got = imfs_tree(&p, &vec![Some(0), Some(1)]);
        valid(&p, &got).unwrap();
        assert!(score(&p, &got).1 >= 2.0);
    }

    #[test]
    fn inherited_pairs_that_are_no_longer_arcs_are_dropped() {
        // Job 0 held machine 0, whose entry is now 0: the pair is dropped, job 1 takes machine 0
        // and job 0 machine 1. Job 7 and the entry past the last machine do not exist.
        let p = matrix(&[&[0.0, 3.0, 0.0], &[2.0, 0.0, 0.0]]);
        let prev = vec![Some(0), None, Some(7), Some(1)];
        assert_eq!(imfs_tree(&p, &prev), vec![Some(1), Some(0), None]);
        // A negative entry is not an arc either; a job held twice keeps its lower machine.
        let p = matrix(&[&[-1.0, 3.0], &[1.0, 1.0]]);
        assert_eq!(imfs_tree(&p, &vec![Some(0), None]), vec![Some(1), Some(0)]);
        let p = matrix(&[&[3.0, 3.0]]);
        assert_eq!(imfs_tree(&p, &vec![Some(0), Some(0)]), vec![Some(0), None]);
        // Empty shapes.
        assert_eq!(imfs_tree(&Matrix::zeros(0, 2), &vec![]), vec![None, None]);
        assert_eq!(imfs_tree(&Matrix::zeros(2, 0), &vec![Some(0)]), vec![]);
    }

    /// A drawn matrix: few integer values (many ties) or reals, with non-arcs (0, negative).
    fn drawn(rows: usize, cols: usize, cells: &[u8], reals: bool) -> Matrix {
        let mut p = Matrix::zeros(rows, cols);
        for (k, x) in p.p.iter_mut().enumerate() {
            let c = cells[k % cells.len()].wrapping_add((k / cells.len()) as u8);
            *x = match c % 8 {
                0 | 1 => 0.0,
                2 => -1.0,
                v if reals => f64::from(c) * 0.37 + f64::from(v),
                v => f64::from(v - 2),
            };
        }
        p
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(600))]

        /// (a) a matching on arcs; (b) maximum cardinality from any start, and MFS's weight from
        /// an empty one; (c) never below the valid inherited pairs' weight at equal cardinality;
        /// (d) deterministic.
        #[test]
        fn matching_properties_on_drawn_matrices(
            rows in 0usize..=8,
            cols in 0usize..=8,
            cells in prop::collection::vec(any::<u8>(), 1..=64),
            reals in any::<bool>(),
            prev in prop::collection::vec(prop::option::of(0usize..10), 0..=10),
        ) {
            let p = drawn(rows, cols, &cells, reals);
            let (bn, bw) = score(&p, &mfs(&p));
            let empty = imfs_tree(&p, &vec![None; cols]);
            prop_assert!(valid(&p, &empty).is_ok(), "{:?}", valid(&p, &empty));
            let (n, w) = score(&p, &empty);
            prop_assert_eq!(n, bn);
            prop_assert!(close(w, bw), "weight {} vs MFS {} on {:?}", w, bw, p);
            for start in [prev.clone(), mis(&p), mfs(&p)] {
                let got = imfs_tree(&p, &start);
                prop_assert!(valid(&p, &got).is_ok(), "{:?}", valid(&p, &got));
                let (n, w) = score(&p, &got);
                prop_assert_eq!(n, bn, "cardinality from {:?} on {:?}", start, p);
                let (hn, hw) = score(&p, &inherited(&p, &start));
                if hn == n {
                    prop_assert!(w >= hw - 1e-9 * (1.0 + hw.abs()), "{} < {}", w, hw);
                }
                prop_assert_eq!(imfs_tree(&p, &start), got);
            }
            // From MFS's own plan nothing improves the weight.
            let again = imfs_tree(&p, &mfs(&p));
            prop_assert!(close(score(&p, &again).1, bw));
            // Label correcting alone reaches MFS too (label setting only orders the same search;
            // from a previous plan the two may break ties differently, so differ in weight).
            let b = imfs_tree_with(&p, &vec![None; cols], false);
            prop_assert!(valid(&p, &b).is_ok());
            prop_assert!(score(&p, &b).0 == bn && close(score(&p, &b).1, bw));
        }
    }

    #[test]
    fn mfs_weight_from_an_empty_start_on_larger_matrices() {
        // Wider and taller than the property's, more jobs than machines as in the policy.
        for (rows, cols, seed) in [(60, 15, 1u8), (15, 40, 2), (40, 40, 3), (120, 30, 4)] {
            for reals in [false, true] {
                let cells: Vec<u8> = (0..97u32)
                    .map(|k| (k.wrapping_mul(2_654_435_761) >> 13) as u8 ^ seed)
                    .collect();
                let p = drawn(rows, cols, &cells, reals);
                let (bn, bw) = score(&p, &mfs(&p));
                for setting in [true, false] {
                    let got = imfs_tree_with(&p, &vec![None; cols], setting);
                    valid(&p, &got).unwrap();
                    let (n, w) = score(&p, &got);
                    assert_eq!(n, bn);
                    assert!(close(w, bw), "{rows}x{cols}: {w} vs {bw}");
                }
            }
        }
    }
}
