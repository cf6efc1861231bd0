//! A partition of alike nodes seen as one pool of processors, and the mapping of a start onto
//! nodes (the way batch systems give a parallel job its hosts; the multi-node jobs of a site in
//! the two-level design, spec `two-level-grid-scheduler.md` D4.2.5, and the fragments of a
//! multi-site job, Streit, thesis §6.3).
//!
//! A policy that sees the partition as one machine decides only how many processors a job takes;
//! [`NodePool::place`] chooses which nodes: the **fewest nodes** that can hold the job, and among
//! those the ones the job **packs** best (each next node the one with the fewest free processors
//! that still lets the rest fit on the nodes left; ties to the lowest index), so that whole free
//! nodes stay free for wide jobs. The parts are listed in node order; the first is the head node
//! (rank 0).

use crate::model::{JobId, MachineId};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// One node's share of a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodePart {
    /// The node.
    pub node: MachineId,
    /// Processors the job takes there.
    pub procs: u32,
}

/// Free processors per node of a partition, and what each running job holds.
#[derive(Clone, Debug, Default)]
pub struct NodePool {
    nodes: Vec<MachineId>,
    free: Vec<u32>,
    held: FxHashMap<JobId, Vec<(usize, u32)>>,
}

impl NodePool {
    /// A pool of idle nodes, each with `procs` processors.
    pub fn new(nodes: &[(MachineId, u32)]) -> NodePool {
        NodePool {
            nodes: nodes.iter().map(|n| n.0).collect(),
            free: nodes.iter().map(|n| n.1).collect(),
            held: FxHashMap::default(),
        }
    }

    /// Processors free on every node together.
    pub fn free(&self) -> u64 {
        self.free.iter().map(|&f| u64::from(f)).sum()
    }

    /// Places `job` on `procs` processors: its parts in node order (the head first), or `None`
    /// when the pool has fewer free processors (nothing changes then).
    pub fn place(&mut self, job: JobId, procs: u32) -> Option<Vec<NodePart>> {
        if procs == 0 || self.free() < u64::from(procs) || self.held.contains_key(&job) {
            return None;
        }
        // The fewest nodes: the k largest free counts reach `procs`.
        let mut by_free: Vec<u32> = self.free.clone();
        by_free.sort_unstable_by(|a, b| b.cmp(a));
        let mut k = 0;
        let mut sum = 0u64;
        while sum < u64::from(procs) {
            sum += u64::from(by_free[k]);
            k += 1;
        }
        let mut taken = vec![false; self.free.len()];
        let mut parts: Vec<(usize, u32)> = Vec::with_capacity(k);
        let mut need = procs;
        for slot in (1..=k).rev() {
            // Largest free counts among the nodes not taken, for the `slot - 1` parts after this:
            // without node n they are the `slot - 1` largest, or, when n is among them, those
            // but n and the next.
            let mut rest: Vec<u32> = (0..self.free.len())
                .filter(|&n| !taken[n])
                .map(|n| self.free[n])
                .collect();
            rest.sort_unstable_by(|a, b| b.cmp(a));
            let top = |m: usize| rest.iter().take(m).map(|&f| u64::from(f)).sum::<u64>();
            let (top_before, top_with) = (top(slot - 1), top(slot));
            let others = |f: u32| match slot {
                1 => 0,
                _ if f >= rest[slot - 2] => top_with - u64::from(f),
                _ => top_before,
            };
            let n = (0..self.free.len())
                .filter(|&n| !taken[n] && self.free[n] > 0)
                .filter(|&n| u64::from(self.free[n]) + others(self.free[n]) >= u64::from(need))
                .min_by_key(|&n| (self.free[n], n))
                .expect("the k largest reach the need");
            let p = self.free[n].min(need);
            taken[n] = true;
            parts.push((n, p));
            need -= p;
            if need == 0 {
                break;
            }
        }
        parts.sort_unstable();
        for &(n, p) in &parts {
            self.free[n] -= p;
        }
        let out = parts
            .iter()
            .map(|&(n, p)| NodePart {
                node: self.nodes[n],
                procs: p,
            })
            .collect();
        self.held.insert(job, parts);
        Some(out)
    }

    /// Holds `parts` for `job` as they are (a running job re-entered after a restart); `false`,
    /// changing nothing, when a node is not the pool's, has fewer processors free, or the job
    /// already holds some.
    pub fn hold(&mut self, job: JobId, parts: &[NodePart]) -> bool {
        if self.held.contains_key(&job) {
            return false;
        }
        let mut want = vec![0u32; self.free.len()];
        for p in parts {
            let Some(n) = self.nodes.iter().position(|&m| m == p.node) else {
                return false;
            };
            want[n] += p.procs;
        }
        if want.iter().zip(&self.free).any(|(w, f)| w > f) {
            return false;
        }
        let mut held = Vec::new();
        for (n, w) in want.into_iter().enumerate().filter(|x| x.1 > 0) {
            self.free[n] -= w;
            held.push((n, w));
        }
        self.held.insert(job, held);
        true
    }

    /// The parts `job` holds, in node order.
    pub fn parts(&self, job: JobId) -> Option<Vec<NodePart>> {
        Some(
            self.held
                .get(&job)?
                .iter()
                .map(|&(n, p)| NodePart {
                    node: self.nodes[n],
                    procs: p,
                })
                .collect(),
        )
    }

    /// Gives back what `job` holds; its parts, if it held any.
    pub fn release(&mut self, job: JobId) -> Option<Vec<NodePart>> {
        let parts = self.held.remove(&job)?;
        for &(n, p) in &parts {
            self.free[n] += p;
        }
        Some(
            parts
                .into_iter()
                .map(|(n, p)| NodePart {
                    node: self.nodes[n],
                    procs: p,
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pool(free: &[u32]) -> NodePool {
        let nodes: Vec<(MachineId, u32)> = free
            .iter()
            .enumerate()
            .map(|(i, &f)| (MachineId(i as u32), f))
            .collect();
        NodePool::new(&nodes)
    }

    fn parts(p: &[NodePart]) -> Vec<(u32, u32)> {
        p.iter().map(|x| (x.node.0, x.procs)).collect()
    }

    #[test]
    fn a_job_takes_the_fewest_nodes_and_packs_them() {
        let mut p = pool(&[4, 4, 4, 4]);
        // 6 processors: two nodes, the first full and 2 of the second.
        assert_eq!(parts(&p.place(JobId(1), 6).unwrap()), [(0, 4), (1, 2)]);
        // 2 processors fit the 2 left on node 1 exactly: whole nodes stay whole.
        assert_eq!(parts(&p.place(JobId(2), 2).unwrap()), [(1, 2)]);
        // 3: one node, the fullest that holds it (all have 4): the lowest.
        assert_eq!(parts(&p.place(JobId(3), 3).unwrap()), [(2, 3)]);
        // 5: nodes 2 (1 free) and 3 (4 free) — two nodes, 1 + 4.
        assert_eq!(parts(&p.place(JobId(4), 5).unwrap()), [(2, 1), (3, 4)]);
        assert_eq!(p.free(), 0);
        assert_eq!(p.place(JobId(5), 1), None);
        assert_eq!(parts(&p.release(JobId(1)).unwrap()), [(0, 4), (1, 2)]);
        assert_eq!(p.free(), 6);
        assert_eq!(p.release(JobId(1)), None);
        // A restored job holds its parts as they were.
        let back = [
            NodePart {
                node: MachineId(1),
                procs: 2,
            },
            NodePart {
                node: MachineId(0),
                procs: 3,
            },
        ];
        assert!(p.hold(JobId(7), &back));
        assert_eq!(parts(&p.parts(JobId(7)).unwrap()), [(0, 3), (1, 2)]);
        assert_eq!(p.free(), 1);
        assert!(!p.hold(
            JobId(8),
            &[NodePart {
                node: MachineId(0),
                procs: 2
            }]
        ));
        assert!(!p.hold(
            JobId(8),
            &[NodePart {
                node: MachineId(9),
                procs: 1
            }]
        ));
        assert_eq!(p.free(), 1);
    }

    #[test]
    fn packing_keeps_the_largest_free_node_for_later() {
        // Free 1, 3, 4: a 4-wide job could take node 2 alone (fewest nodes: 1) and does; a
        // 3-wide one takes node 1 (3 free), not the 4.
        let mut p = pool(&[1, 3, 4]);
        assert_eq!(parts(&p.place(JobId(1), 3).unwrap()), [(1, 3)]);
        assert_eq!(parts(&p.place(JobId(2), 4).unwrap()), [(2, 4)]);
        // Free 2, 2, 5 and a 6-wide job: two nodes, one of them the 5 (2 + 2 is short): first the
        // fullest node that allows it, filled (node 0, 2), then the 5 takes the 4 left.
        let mut q = pool(&[2, 2, 5]);
        assert_eq!(parts(&q.place(JobId(1), 6).unwrap()), [(0, 2), (2, 4)]);
    }

    proptest! {
        #[test]
        fn placements_are_minimal_exact_and_within_the_free_counts(
            free in proptest::collection::vec(0u32..9, 1..12),
            asks in proptest::collection::vec(1u32..30, 1..20),
        ) {
            let mut p = pool(&free);
            let mut left = free.clone();
            for (i, &ask) in asks.iter().enumerate() {
                let before = p.free();
                match p.place(JobId(i as u64), ask) {
                    None => prop_assert!(before < u64::from(ask)),
                    Some(parts) => {
                        prop_assert_eq!(parts.iter().map(|x| x.procs).sum::<u32>(), ask);
                        // The fewest nodes any placement could use.
                        let mut sorted = left.clone();
                        sorted.sort_unstable_by(|a, b| b.cmp(a));
                        let mut k = 0;
                        let mut s = 0;
                        while s < ask {
                            s += sorted[k];
                            k += 1;
                        }
                        prop_assert_eq!(parts.len(), k);
                        for w in parts.windows(2) {
                            prop_assert!(w[0].node < w[1].node);
                        }
                        for x in &parts {
                            let n = x.node.0 as usize;
                            prop_assert!(x.procs >= 1 && x.procs <= left[n]);
                            left[n] -= x.procs;
                        }
                    }
                }
                // Release every third job placed.
                if i % 3 == 2
                    && let Some(back) = p.release(JobId(i as u64 - 1))
                {
                    for x in back {
                        left[x.node.0 as usize] += x.procs;
                    }
                }
                prop_assert_eq!(p.free(), left.iter().map(|&f| u64::from(f)).sum::<u64>());
            }
        }
    }
}
