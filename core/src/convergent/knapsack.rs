//! Clustering and pre-matching of Convergent Scheduling (spec `two-level-grid-scheduler.md` D7.3;
//! D12 #21): among the jobs asking for critical licences (`rho > 1`), decide which may be matched
//! this round so that no licence is asked for by more jobs than it has copies — a multidimensional
//! 0-1 knapsack (capacities = copies, items = jobs, one unit of each licence an item uses).
//!
//! * [`clusters`]: jobs sharing a critical licence, transitively (connected components of the
//!   licence hypergraph).
//! * [`greedy`]: the seed's surrogate greedy: value `cbar_i` (mean of the job's positive matrix
//!   entries), weight `abar_i = Σ_{l ∈ Lc used by i} 1 / b_l`; discard the job with the smallest
//!   `cbar / abar` (ties: the later submission), recompute criticality, repeat until no licence is
//!   critical; then an optional re-admission pass, highest ratio first, of discarded jobs that now
//!   fit. Pinned items (running jobs of the non-preemptive variants) are never discarded.
//! * [`branch_and_bound`]: the exact optimum for small instances (depth-first, bound = value so far
//!   plus every remaining value), for comparison (Table 5).

/// A knapsack item: a job.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    /// Its value (`cbar`).
    pub value: f64,
    /// Licence indices it uses (one copy each).
    pub licences: Vec<usize>,
    /// Never discarded.
    pub pinned: bool,
    /// Submission order (a larger key is discarded first on ties).
    pub order: u64,
}

fn demand(items: &[Item], keep: &[bool], nlic: usize) -> Vec<u32> {
    let mut d = vec![0u32; nlic];
    for (it, k) in items.iter().zip(keep) {
        if *k {
            for &l in &it.licences {
                d[l] += 1;
            }
        }
    }
    d
}

/// Whether every licence's demand fits its capacity.
pub fn feasible(items: &[Item], keep: &[bool], caps: &[u32]) -> bool {
    demand(items, keep, caps.len())
        .iter()
        .zip(caps)
        .all(|(d, c)| d <= c)
}

/// The groups of items connected through licences that are critical for the whole item set.
pub fn clusters(items: &[Item], caps: &[u32]) -> Vec<Vec<usize>> {
    let all = vec![true; items.len()];
    let d = demand(items, &all, caps.len());
    let critical: Vec<bool> = d.iter().zip(caps).map(|(d, c)| d > c).collect();
    let mut parent: Vec<usize> = (0..caps.len()).collect();
    fn find(p: &mut [usize], x: usize) -> usize {
        let mut r = x;
        while p[r] != r {
            r = p[r];
        }
        let mut y = x;
        while p[y] != r {
            let n = p[y];
            p[y] = r;
            y = n;
        }
        r
    }
    for it in items {
        let crit: Vec<usize> = it
            .licences
            .iter()
            .copied()
            .filter(|&l| critical[l])
            .collect();
        for w in crit.windows(2) {
            let (a, b) = (find(&mut parent, w[0]), find(&mut parent, w[1]));
            parent[a] = b;
        }
    }
    let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
    for (i, it) in items.iter().enumerate() {
        if let Some(&l) = it.licences.iter().find(|&&l| critical[l]) {
            let root = find(&mut parent, l);
            match groups.iter_mut().find(|g| g.0 == root) {
                Some(g) => g.1.push(i),
                None => groups.push((root, vec![i])),
            }
        }
    }
    groups.into_iter().map(|g| g.1).collect()
}

/// The items that may be discarded while `critical` is the set of over-asked licences (kept,
/// unpinned, using one of them), ranked by `cbar / abar` ascending (ties: the later submission,
/// then the lower index); with that ratio.
#[cfg(test)]
fn ranked(items: &[Item], keep: &[bool], critical: &[bool], caps: &[u32]) -> Vec<(usize, f64)> {
    let mut v: Vec<(usize, f64)> = items
        .iter()
        .enumerate()
        .filter(|(i, it)| keep[*i] && !it.pinned && it.licences.iter().any(|&l| critical[l]))
        .map(|(i, it)| (i, ratio(it, critical, caps)))
        .collect();
    v.sort_by(|a, b| {
        a.1.total_cmp(&b.1)
            .then(items[b.0].order.cmp(&items[a.0].order))
            .then(a.0.cmp(&b.0))
    });
    v
}

/// `cbar / abar` of an item while `critical` is the set of over-asked licences.
fn ratio(it: &Item, critical: &[bool], caps: &[u32]) -> f64 {
    let abar: f64 = it
        .licences
        .iter()
        .filter(|&&l| critical[l])
        .map(|&l| 1.0 / f64::from(caps[l].max(1)))
        .sum();
    it.value / abar
}

/// A discard candidate in the greedy's heap: the smallest ratio first, then the later submission,
/// then the lower index; `stamp` tells a current entry from one its item's re-ranking replaced.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    ratio: f64,
    order: u64,
    index: usize,
    stamp: u32,
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}

impl Eq for Candidate {}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Candidate {
    /// Greater = discarded first (the heap is a max-heap).
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other
            .ratio
            .total_cmp(&self.ratio)
            .then(self.order.cmp(&other.order))
            .then(other.index.cmp(&self.index))
    }
}

/// The greedy pre-matching; returns which items are kept.
///
/// The job discarded next is always the candidate (kept, unpinned, asking for a critical licence)
/// of the smallest `cbar / abar`. Its ratio changes only when one of its licences stops being
/// critical (`abar` sums over critical licences), which happens at most once per licence; so the
/// candidates wait in a heap, and when a licence stops being critical only the items using it are
/// ranked again (their old entries go stale). The demand per licence is kept up to date on every
/// discard and re-admission. `O((n + Σ re-rankings) log n)`; the same discards, in the same
/// order, as re-ranking every candidate after each change (checked against that form in the tests).
pub fn greedy(items: &[Item], caps: &[u32], readmit: bool) -> Vec<bool> {
    let mut keep = vec![true; items.len()];
    let mut discarded: Vec<(usize, f64)> = Vec::new();
    let mut d = demand(items, &keep, caps.len());
    let mut critical: Vec<bool> = d.iter().zip(caps).map(|(d, c)| d > c).collect();
    if critical.iter().any(|c| *c) {
        let mut users: Vec<Vec<usize>> = vec![Vec::new(); caps.len()];
        let mut stamp = vec![0u32; items.len()];
        let mut heap = std::collections::BinaryHeap::new();
        for (i, it) in items.iter().enumerate() {
            if it.pinned {
                continue;
            }
            for &l in &it.licences {
                users[l].push(i);
            }
            if it.licences.iter().any(|&l| critical[l]) {
                heap.push(Candidate {
                    ratio: ratio(it, &critical, caps),
                    order: it.order,
                    index: i,
                    stamp: 0,
                });
            }
        }
        while let Some(c) = heap.pop() {
            let i = c.index;
            if !keep[i] || c.stamp != stamp[i] {
                continue;
            }
            keep[i] = false;
            discarded.push((i, c.ratio));
            let mut flipped = Vec::new();
            for &l in &items[i].licences {
                d[l] -= 1;
                if critical[l] && d[l] <= caps[l] {
                    critical[l] = false;
                    flipped.push(l);
                }
            }
            if !critical.iter().any(|c| *c) {
                break;
            }
            for l in flipped {
                for &j in &users[l] {
                    if !keep[j] {
                        continue;
                    }
                    stamp[j] += 1;
                    let it = &items[j];
                    if it.licences.iter().any(|&k| critical[k]) {
                        heap.push(Candidate {
                            ratio: ratio(it, &critical, caps),
                            order: it.order,
                            index: j,
                            stamp: stamp[j],
                        });
                    }
                }
            }
        }
    }
    // Re-admission only when the kept set fits (pinned items alone may not).
    if readmit && d.iter().zip(caps).all(|(d, c)| d <= c) {
        discarded.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        for (i, _) in discarded {
            let ls = &items[i].licences;
            for &l in ls {
                d[l] += 1;
            }
            if ls.iter().all(|&l| d[l] <= caps[l]) {
                keep[i] = true;
            } else {
                for &l in ls {
                    d[l] -= 1;
                }
            }
        }
    }
    keep
}

/// The optimum (maximum total value of kept items, pinned items always kept); `None` when the
/// pinned items alone do not fit. Depth-first with two bounds (remaining value; remaining licence
/// copies times the best value per copy); exact unless [`NODE_LIMIT`] nodes are explored, after
/// which it returns the best plan found.
pub fn branch_and_bound(items: &[Item], caps: &[u32]) -> Option<Vec<bool>> {
    branch_and_bound_proved(items, caps).map(|(plan, _)| plan)
}

/// [`branch_and_bound`], also saying whether the plan is proved optimal (the node limit was not
/// reached).
pub fn branch_and_bound_proved(items: &[Item], caps: &[u32]) -> Option<(Vec<bool>, bool)> {
    let mut keep: Vec<bool> = items.iter().map(|i| i.pinned).collect();
    if !feasible(items, &keep, caps) {
        return None;
    }
    let free: Vec<usize> = (0..items.len()).filter(|&i| !items[i].pinned).collect();
    let mut order = free;
    order.sort_by(|&a, &b| items[b].value.total_cmp(&items[a].value).then(a.cmp(&b)));
    let suffix: Vec<f64> = {
        let mut s = vec![0.0; order.len() + 1];
        for k in (0..order.len()).rev() {
            s[k] = s[k + 1] + items[order[k]].value.max(0.0);
        }
        s
    };
    // Licence-unit bound: the licensed items still to decide can add at most `rate` per licence
    // copy, and no licence more copies than it has free or is still asked for.
    let nlic = caps.len();
    let mut rest_demand = vec![vec![0u32; nlic]; order.len() + 1];
    let mut free_value = vec![0.0; order.len() + 1];
    let mut rate = vec![0.0f64; order.len() + 1];
    for k in (0..order.len()).rev() {
        let it = &items[order[k]];
        rest_demand[k] = rest_demand[k + 1].clone();
        free_value[k] = free_value[k + 1];
        rate[k] = rate[k + 1];
        if it.licences.is_empty() {
            free_value[k] += it.value.max(0.0);
        } else {
            for &l in &it.licences {
                rest_demand[k][l] += 1;
            }
            rate[k] = rate[k].max(it.value / it.licences.len() as f64);
        }
    }
    let used = demand(items, &keep, caps.len());
    let base: f64 = items.iter().filter(|i| i.pinned).map(|i| i.value).sum();
    let mut search = Search {
        order: &order,
        suffix: &suffix,
        rest_demand: &rest_demand,
        free_value: &free_value,
        rate: &rate,
        items,
        caps,
        used,
        best_val: f64::NEG_INFINITY,
        best: keep.clone(),
        nodes: 0,
    };
    search.dfs(0, base, &mut keep);
    let proved = search.nodes <= NODE_LIMIT;
    Some((search.best, proved))
}

/// The state of the depth-first search of [`branch_and_bound`].
struct Search<'a> {
    order: &'a [usize],
    suffix: &'a [f64],
    rest_demand: &'a [Vec<u32>],
    free_value: &'a [f64],
    rate: &'a [f64],
    items: &'a [Item],
    caps: &'a [u32],
    used: Vec<u32>,
    best_val: f64,
    best: Vec<bool>,
    nodes: u64,
}

/// Nodes explored before the search settles for its best plan so far (bounded run time).
pub const NODE_LIMIT: u64 = 2_000_000;

impl Search<'_> {
    fn bound(&self, k: usize) -> f64 {
        let units: u32 = (0..self.caps.len())
            .map(|l| {
                self.caps[l]
                    .saturating_sub(self.used[l])
                    .min(self.rest_demand[k][l])
            })
            .sum();
        self.suffix[k].min(self.free_value[k] + self.rate[k] * f64::from(units))
    }

    fn dfs(&mut self, k: usize, val: f64, keep: &mut [bool]) {
        self.nodes += 1;
        if val + self.bound(k) <= self.best_val + 1e-12
            || (self.nodes > NODE_LIMIT && self.best_val > f64::NEG_INFINITY)
        {
            return;
        }
        if k == self.order.len() {
            self.best_val = val;
            self.best.copy_from_slice(keep);
            return;
        }
        let i = self.order[k];
        let item = &self.items[i];
        if item.licences.iter().all(|&l| self.used[l] < self.caps[l]) {
            for &l in &item.licences {
                self.used[l] += 1;
            }
            keep[i] = true;
            self.dfs(k + 1, val + item.value, keep);
            keep[i] = false;
            for &l in &item.licences {
                self.used[l] -= 1;
            }
        }
        self.dfs(k + 1, val, keep);
    }
}

/// The total value of the kept items.
pub fn value(items: &[Item], keep: &[bool]) -> f64 {
    items
        .iter()
        .zip(keep)
        .filter(|(_, k)| **k)
        .map(|(i, _)| i.value)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn item(value: f64, lic: &[usize], order: u64) -> Item {
        Item {
            value,
            licences: lic.to_vec(),
            pinned: false,
            order,
        }
    }

    /// The next item to discard: the first of the ranking under the current critical set.
    fn victim(
        items: &[Item],
        keep: &[bool],
        critical: &[bool],
        caps: &[u32],
    ) -> Option<(usize, f64)> {
        ranked(items, keep, critical, caps).first().copied()
    }

    /// The greedy as the spec states it and as this module did before (the reference of the
    /// equivalence test): recount the demand and rescan every item per discard.
    fn greedy_reference(items: &[Item], caps: &[u32], readmit: bool) -> Vec<bool> {
        let mut keep = vec![true; items.len()];
        let mut discarded: Vec<(usize, f64)> = Vec::new();
        loop {
            let d = demand(items, &keep, caps.len());
            let critical: Vec<bool> = d.iter().zip(caps).map(|(d, c)| d > c).collect();
            if !critical.iter().any(|c| *c) {
                break;
            }
            let victim = victim(items, &keep, &critical, caps);
            match victim {
                Some((i, ratio)) => {
                    keep[i] = false;
                    discarded.push((i, ratio));
                }
                None => break,
            }
        }
        if readmit {
            discarded.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            for (i, _) in discarded {
                keep[i] = true;
                if !feasible(items, &keep, caps) {
                    keep[i] = false;
                }
            }
        }
        keep
    }

    #[test]
    fn incremental_greedy_equals_the_recounting_reference() {
        let mut rng = ChaCha8Rng::seed_from_u64(17);
        for round in 0..1_200 {
            // Half the instances with few distinct values and submission keys: ties in the ratio
            // and in the submission, down to the index.
            let tied = round % 2 == 1;
            let nlic = rng.random_range(1..6);
            let caps: Vec<u32> = (0..nlic).map(|_| rng.random_range(0..5)).collect();
            let items: Vec<Item> = (0..rng.random_range(0..25))
                .map(|k| Item {
                    value: f64::from(rng.random_range(1..if tied { 3 } else { 40u32 })),
                    licences: (0..nlic).filter(|_| rng.random_bool(0.4)).collect(),
                    pinned: rng.random_bool(0.1),
                    order: if tied {
                        rng.random_range(0..3)
                    } else {
                        rng.random_range(0..10) * 100 + k
                    },
                })
                .collect();
            for readmit in [false, true] {
                assert_eq!(
                    greedy(&items, &caps, readmit),
                    greedy_reference(&items, &caps, readmit),
                    "{items:?} {caps:?}"
                );
            }
        }
    }

    #[test]
    fn worked_greedy_example() {
        // Licence 0 has 1 copy, wanted by three jobs; licence 1 has 2 copies, wanted by jobs 2, 3.
        let items = vec![
            item(10.0, &[0], 0),
            item(4.0, &[0], 1),
            item(6.0, &[0, 1], 2),
            item(1.0, &[1], 3),
        ];
        let caps = [1, 2];
        assert_eq!(clusters(&items, &caps), vec![vec![0, 1, 2]]);
        // Only licence 0 is critical: ratios 10, 4, 6 -> discard 1, then 2; licence 0 fits.
        let keep = greedy(&items, &caps, false);
        assert_eq!(keep, vec![true, false, false, true]);
        assert!(feasible(&items, &keep, &caps));
        let opt = branch_and_bound(&items, &caps).unwrap();
        assert_eq!(value(&items, &opt), 11.0);
    }

    #[test]
    fn pinned_items_are_never_discarded() {
        let mut items = vec![item(1.0, &[0], 0), item(100.0, &[0], 1)];
        items[0].pinned = true;
        assert_eq!(greedy(&items, &[1], true), vec![true, false]);
        assert_eq!(branch_and_bound(&items, &[1]).unwrap(), vec![true, false]);
        let both = vec![
            Item {
                pinned: true,
                ..item(1.0, &[0], 0)
            },
            Item {
                pinned: true,
                ..item(1.0, &[0], 1)
            },
        ];
        assert!(branch_and_bound(&both, &[1]).is_none());
    }

    #[test]
    fn branch_and_bound_is_optimal_and_greedy_is_feasible_and_close() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let mut gap_sum = 0.0;
        let n_cases = 300;
        for _ in 0..n_cases {
            let nlic = rng.random_range(1..=4);
            let caps: Vec<u32> = (0..nlic).map(|_| rng.random_range(1..=3)).collect();
            let n = rng.random_range(1..=10);
            let items: Vec<Item> = (0..n)
                .map(|k| {
                    let lic: Vec<usize> = (0..nlic).filter(|_| rng.random_bool(0.5)).collect();
                    item(f64::from(rng.random_range(1..=50u32)), &lic, k)
                })
                .collect();
            let opt = branch_and_bound(&items, &caps).unwrap();
            assert!(feasible(&items, &opt, &caps));
            // Brute force over every subset.
            let mut best = 0.0f64;
            for mask in 0u32..(1 << n) {
                let keep: Vec<bool> = (0..n).map(|i| mask & (1 << i) != 0).collect();
                if feasible(&items, &keep, &caps) {
                    best = best.max(value(&items, &keep));
                }
            }
            assert!((value(&items, &opt) - best).abs() < 1e-9);
            for readmit in [false, true] {
                let g = greedy(&items, &caps, readmit);
                assert!(feasible(&items, &g, &caps));
                assert!(value(&items, &g) <= best + 1e-9);
            }
            if best > 0.0 {
                gap_sum += 1.0 - value(&items, &greedy(&items, &caps, true)) / best;
            }
        }
        let mean_gap = gap_sum / f64::from(n_cases);
        assert!(
            mean_gap < 0.10,
            "greedy within 10 % of the optimum on average: {mean_gap}"
        );
    }
}
