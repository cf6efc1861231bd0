//! An ordered queue of waiting jobs kept as a list of small sorted blocks, each with a summary
//! (smallest processor count, smallest estimate). Finding the first job after a given position
//! that fits a shape ("at most `p` processors and (estimate at most `e` or at most `q`
//! processors)") skips every block whose summary rules it out, so an EASY backfill scan costs
//! about `len / BLOCK + BLOCK` steps instead of `len`. Insertion and removal cost `O(BLOCK + len /
//! BLOCK)` at worst and `O(1)` amortised for the common append at the tail.

use crate::model::{Duration, JobId};

/// Target block size; a block is split when it reaches twice this size.
const BLOCK: usize = 64;

/// Position of a job in the queue order: `primary` first, then `seq` (arrival sequence).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QueueKey {
    /// Policy-specific primary key (0 for FCFS, the estimate for SJF, minus the estimate for LJF).
    pub primary: i64,
    /// Arrival sequence number, unique per job.
    pub seq: u64,
}

/// A waiting job as the queue stores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueEntry {
    /// Its position in the order.
    pub key: QueueKey,
    /// The job.
    pub id: JobId,
    /// Processors it needs.
    pub procs: u32,
    /// Its estimate.
    pub estimate: Duration,
}

#[derive(Clone, Debug, Default)]
struct Block {
    items: Vec<QueueEntry>,
    min_procs: u32,
    min_estimate: Duration,
}

impl Block {
    fn refresh(&mut self) {
        self.min_procs = self.items.iter().map(|e| e.procs).min().unwrap_or(u32::MAX);
        self.min_estimate = self
            .items
            .iter()
            .map(|e| e.estimate)
            .min()
            .unwrap_or(Duration::MAX);
    }

    fn absorb(&mut self, e: &QueueEntry) {
        self.min_procs = self.min_procs.min(e.procs);
        self.min_estimate = self.min_estimate.min(e.estimate);
    }

    fn last_key(&self) -> QueueKey {
        self.items.last().expect("blocks are never empty").key
    }
}

/// Waiting jobs in key order; see the module documentation.
#[derive(Clone, Debug, Default)]
pub struct OrderedQueue {
    blocks: Vec<Block>,
    len: usize,
}

impl OrderedQueue {
    /// An empty queue.
    pub fn new() -> OrderedQueue {
        OrderedQueue::default()
    }

    /// Number of jobs.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the queue is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first job in order.
    pub fn first(&self) -> Option<&QueueEntry> {
        self.blocks.first().and_then(|b| b.items.first())
    }

    /// Inserts a job; its key must not be in the queue already.
    pub fn insert(&mut self, e: QueueEntry) {
        self.len += 1;
        // Fast path: append after the last key.
        let bi = match self.blocks.last() {
            None => {
                self.blocks.push(Block {
                    items: vec![e],
                    min_procs: e.procs,
                    min_estimate: e.estimate,
                });
                return;
            }
            Some(last) if last.last_key() < e.key => self.blocks.len() - 1,
            Some(_) => self
                .blocks
                .partition_point(|b| b.last_key() < e.key)
                .min(self.blocks.len() - 1),
        };
        let block = &mut self.blocks[bi];
        let pos = block.items.partition_point(|x| x.key < e.key);
        debug_assert!(
            block.items.get(pos).is_none_or(|x| x.key != e.key),
            "duplicate queue key"
        );
        block.items.insert(pos, e);
        block.absorb(&e);
        if block.items.len() >= 2 * BLOCK {
            let tail = block.items.split_off(BLOCK);
            block.refresh();
            let mut nb = Block {
                items: tail,
                ..Block::default()
            };
            nb.refresh();
            self.blocks.insert(bi + 1, nb);
        }
    }

    /// Removes the job with `key`, returning it.
    pub fn remove(&mut self, key: QueueKey) -> Option<QueueEntry> {
        let bi = self.blocks.partition_point(|b| b.last_key() < key);
        let block = self.blocks.get_mut(bi)?;
        let pos = block.items.partition_point(|x| x.key < key);
        if block.items.get(pos).is_none_or(|x| x.key != key) {
            return None;
        }
        let e = block.items.remove(pos);
        self.len -= 1;
        if block.items.is_empty() {
            self.blocks.remove(bi);
        } else if e.procs == block.min_procs || e.estimate == block.min_estimate {
            block.refresh();
        }
        Some(e)
    }

    /// Removes and returns the first job.
    pub fn pop_first(&mut self) -> Option<QueueEntry> {
        let key = self.first()?.key;
        self.remove(key)
    }

    /// All jobs in order.
    pub fn iter(&self) -> impl Iterator<Item = &QueueEntry> {
        self.blocks.iter().flat_map(|b| b.items.iter())
    }

    /// The first job strictly after `after` (from the start when `None`) that needs at most
    /// `max_procs` processors and either has an estimate of at most `max_estimate` or needs at
    /// most `any_estimate_procs` processors.
    pub fn find_fit(
        &self,
        after: Option<QueueKey>,
        max_procs: u32,
        max_estimate: Duration,
        any_estimate_procs: u32,
    ) -> Option<QueueEntry> {
        let start_block = match after {
            None => 0,
            Some(k) => self.blocks.partition_point(|b| b.last_key() <= k),
        };
        let small = any_estimate_procs.min(max_procs);
        for b in &self.blocks[start_block..] {
            if b.min_procs > max_procs || (b.min_estimate > max_estimate && b.min_procs > small) {
                continue;
            }
            let from = match after {
                Some(k) => b.items.partition_point(|x| x.key <= k),
                None => 0,
            };
            if let Some(e) = b.items[from..]
                .iter()
                .find(|e| e.procs <= max_procs && (e.estimate <= max_estimate || e.procs <= small))
            {
                return Some(*e);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn entry(primary: i64, seq: u64, procs: u32, estimate: Duration) -> QueueEntry {
        QueueEntry {
            key: QueueKey { primary, seq },
            id: JobId(seq),
            procs,
            estimate,
        }
    }

    /// The obvious linear scan the queue must agree with.
    fn naive_fit(
        v: &[QueueEntry],
        after: Option<QueueKey>,
        p: u32,
        e: Duration,
        q: u32,
    ) -> Option<QueueEntry> {
        v.iter()
            .filter(|x| after.is_none_or(|k| x.key > k))
            .find(|x| x.procs <= p && (x.estimate <= e || x.procs <= q))
            .copied()
    }

    #[test]
    fn keeps_order_and_finds_fits() {
        let mut q = OrderedQueue::new();
        for s in 0..300u64 {
            q.insert(entry(
                (s % 7) as i64,
                s,
                (s % 13) as u32 + 1,
                (s * 37 % 1000) as i64 + 1,
            ));
        }
        assert_eq!(q.len(), 300);
        let keys: Vec<_> = q.iter().map(|e| e.key).collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        let first = *q.first().unwrap();
        assert_eq!(q.pop_first(), Some(first));
        assert!(q.remove(first.key).is_none(), "already removed");
        assert_eq!(q.len(), 299);
    }

    proptest! {
        #[test]
        fn agrees_with_a_sorted_vector(
            ops in prop::collection::vec((0u8..4, 0i64..5, 1u32..20, 1i64..50, 0usize..400), 1..400),
            p in 1u32..20, e in 1i64..50, small in 0u32..20,
        ) {
            let mut q = OrderedQueue::new();
            let mut model: Vec<QueueEntry> = Vec::new();
            let mut seq = 0u64;
            for (op, primary, procs, est, pick) in ops {
                match op {
                    0 | 1 => {
                        let x = entry(primary, seq, procs, est);
                        seq += 1;
                        q.insert(x);
                        let pos = model.partition_point(|m| m.key < x.key);
                        model.insert(pos, x);
                    }
                    2 if !model.is_empty() => {
                        let victim = model.remove(pick % model.len());
                        prop_assert_eq!(q.remove(victim.key), Some(victim));
                    }
                    _ => {
                        let after = if model.is_empty() { None } else { Some(model[pick % model.len()].key) };
                        prop_assert_eq!(q.find_fit(after, p, e, small), naive_fit(&model, after, p, e, small));
                        prop_assert_eq!(q.find_fit(None, p, e, small), naive_fit(&model, None, p, e, small));
                    }
                }
                prop_assert_eq!(q.len(), model.len());
                prop_assert_eq!(q.first().copied(), model.first().copied());
            }
            let all: Vec<_> = q.iter().copied().collect();
            prop_assert_eq!(all, model);
        }
    }
}
