//! Memory given back after a burst: a map or queue that grew for a burst of jobs keeps its
//! capacity after the jobs leave it (Rust's collections never shrink by themselves), so a
//! service that once held 200,000 jobs would hold their room for good. [`Shrink::shrink_if_sparse`]
//! halves the waste once a collection is less than a quarter full: each shrink costs a copy of
//! what is left, paid for by the three quarters that left since it grew.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{BuildHasher, Hash};

/// Below this capacity a collection is left as it is (the room is small, and a queue that
/// breathes around a few hundred entries should not reallocate at each breath).
const FLOOR: usize = 1024;

/// Whether a collection of `capacity` holding `len` should shrink, and to what.
fn target(len: usize, capacity: usize) -> Option<usize> {
    (capacity > FLOOR && len < capacity / 4).then(|| (len * 2).max(FLOOR / 2))
}

/// A collection that can give its spare room back.
pub trait Shrink {
    /// Shrinks to twice the entries held when less than a quarter of the capacity is used.
    fn shrink_if_sparse(&mut self);
}

impl<K: Eq + Hash, V, S: BuildHasher> Shrink for HashMap<K, V, S> {
    fn shrink_if_sparse(&mut self) {
        if let Some(to) = target(self.len(), self.capacity()) {
            self.shrink_to(to);
        }
    }
}

impl<T: Eq + Hash, S: BuildHasher> Shrink for HashSet<T, S> {
    fn shrink_if_sparse(&mut self) {
        if let Some(to) = target(self.len(), self.capacity()) {
            self.shrink_to(to);
        }
    }
}

impl<T> Shrink for VecDeque<T> {
    fn shrink_if_sparse(&mut self) {
        if let Some(to) = target(self.len(), self.capacity()) {
            self.shrink_to(to);
        }
    }
}

impl<T> Shrink for Vec<T> {
    fn shrink_if_sparse(&mut self) {
        if let Some(to) = target(self.len(), self.capacity()) {
            self.shrink_to(to);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A map that held 100,000 entries and keeps 10 gives its room back; one still a third full,
    /// or small, keeps it.
    #[test]
    fn a_map_emptied_after_a_burst_gives_its_room_back() {
        let mut m: HashMap<u64, [u8; 64]> = (0..100_000).map(|i| (i, [0; 64])).collect();
        let grown = m.capacity();
        m.retain(|&k, _| k >= 60_000);
        let before = m.capacity();
        m.shrink_if_sparse();
        assert_eq!(m.capacity(), before, "40 % full: kept");
        m.retain(|&k, _| k >= 99_990);
        m.shrink_if_sparse();
        assert!(
            m.capacity() < 2 * FLOOR,
            "{} of {grown} after the burst",
            m.capacity()
        );
        assert_eq!(m.len(), 10);
        assert!((99_990..100_000).all(|k| m.contains_key(&k)));

        let mut q: VecDeque<u64> = (0..FLOOR as u64).collect();
        q.truncate(1);
        q.shrink_if_sparse();
        assert!(q.capacity() >= FLOOR, "small: kept");
        let mut v: Vec<u32> = (0..50_000).collect();
        v.truncate(3);
        v.shrink_if_sparse();
        assert!(v.capacity() <= FLOOR, "{}", v.capacity());
        assert_eq!(v, [0, 1, 2]);
    }
}
