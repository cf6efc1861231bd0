//! An availability profile: the free processors of one machine as a step function of time,
//! with running jobs and reservations subtracted over their `[start, end)` intervals. Planning
//! policies (conservative backfilling) place each waiting job at the earliest instant from which
//! enough processors stay free for its whole estimate.
//!
//! Stored as ordered breakpoints `time -> free from then on`; a placement walks the breakpoints
//! from `now` and a reservation touches only the breakpoints inside its interval.

use crate::model::{Duration, Time};
use std::collections::BTreeMap;

/// Free processors over time.
#[derive(Clone, Debug)]
pub struct Profile {
    capacity: i64,
    /// Breakpoint -> free processors from that instant until the next breakpoint. The first key
    /// is `Time::MIN` and the last value is always the full capacity.
    steps: BTreeMap<Time, i64>,
}

impl Profile {
    /// A machine of `capacity` processors, all free at all times.
    pub fn new(capacity: u32) -> Profile {
        let mut steps = BTreeMap::new();
        steps.insert(Time::MIN, i64::from(capacity));
        Profile {
            capacity: i64::from(capacity),
            steps,
        }
    }

    /// Free processors at instant `t` (negative when over-committed after an overrun).
    pub fn free_at(&self, t: Time) -> i64 {
        *self.steps.range(..=t).next_back().expect("Time::MIN key").1
    }

    /// The earliest `s >= now` such that at least `procs` processors are free throughout
    /// `[s, s + duration)`.
    pub fn earliest(&self, now: Time, procs: u32, duration: Duration) -> Time {
        let need = i64::from(procs).min(self.capacity);
        let first = self.steps.range(..=now).next_back().map(|(k, v)| (*k, *v));
        let mut candidate: Option<Time> = None;
        let mut segs = first
            .into_iter()
            .chain(self.steps.range(now + 1..).map(|(k, v)| (*k, *v)))
            .peekable();
        while let Some((t, free)) = segs.next() {
            let seg_start = t.max(now);
            if free >= need {
                let c = *candidate.get_or_insert(seg_start);
                match segs.peek() {
                    Some(&(next, _)) if next - c < duration => continue,
                    _ => return c,
                }
            } else {
                candidate = None;
            }
        }
        unreachable!("the last step always has the full capacity free")
    }

    /// Subtracts `procs` over `[start, end)`.
    pub fn reserve(&mut self, start: Time, end: Time, procs: u32) {
        self.add(start, end, -i64::from(procs));
    }

    /// Gives back `procs` over `[start, end)`.
    pub fn release(&mut self, start: Time, end: Time, procs: u32) {
        self.add(start, end, i64::from(procs));
    }

    fn split(&mut self, t: Time) {
        if !self.steps.contains_key(&t) {
            let v = self.free_at(t);
            self.steps.insert(t, v);
        }
    }

    fn add(&mut self, start: Time, end: Time, delta: i64) {
        if start >= end || delta == 0 {
            return;
        }
        self.split(start);
        self.split(end);
        for (_, v) in self.steps.range_mut(start..end) {
            *v += delta;
        }
        self.merge_at(end);
        self.merge_at(start);
    }

    /// Removes the breakpoint at `t` when it does not change the value.
    fn merge_at(&mut self, t: Time) {
        if t == Time::MIN {
            return;
        }
        if let Some(&v) = self.steps.get(&t)
            && self
                .steps
                .range(..t)
                .next_back()
                .is_some_and(|(_, pv)| *pv == v)
        {
            self.steps.remove(&t);
        }
    }

    /// Forgets breakpoints before `now` (their past no longer matters).
    pub fn forget_before(&mut self, now: Time) {
        let v = self.free_at(now);
        let keep = self.steps.split_off(&now);
        self.steps = keep;
        self.steps.insert(Time::MIN, v);
        self.merge_at(now);
    }

    /// Number of breakpoints (for tests and statistics).
    pub fn breakpoints(&self) -> usize {
        self.steps.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn places_jobs_at_the_earliest_hole() {
        let mut p = Profile::new(10);
        p.reserve(0, 100, 8); // 2 free until 100
        p.reserve(100, 150, 4); // 6 free on [100,150)
        assert_eq!(p.earliest(0, 2, 1000), 0);
        assert_eq!(p.earliest(0, 3, 10), 100);
        assert_eq!(p.earliest(0, 7, 10), 150);
        assert_eq!(p.earliest(120, 6, 30), 120);
        assert_eq!(p.earliest(120, 6, 31), 120, "after 150 all 10 are free");
        p.reserve(160, 170, 10);
        assert_eq!(
            p.earliest(120, 6, 45),
            170,
            "the full-machine slot at 160 breaks the window"
        );
        assert_eq!(p.free_at(165), 0);
        p.release(160, 170, 10);
        p.release(100, 150, 4);
        p.release(0, 100, 8);
        assert_eq!(p.breakpoints(), 1, "merged back to a flat profile");
    }

    proptest! {
        #[test]
        fn earliest_matches_a_per_second_model(
            res in prop::collection::vec((0i64..60, 1i64..30, 1u32..6), 0..12),
            now in 0i64..50, procs in 1u32..6, dur in 1i64..25,
        ) {
            let cap = 6u32;
            let mut p = Profile::new(cap);
            let mut grid = vec![i64::from(cap); 200];
            for (s, len, w) in &res {
                p.reserve(*s, s + len, *w);
                for t in *s..s + len { grid[t as usize] -= i64::from(*w); }
            }
            for (t, &g) in grid.iter().enumerate() {
                prop_assert_eq!(p.free_at(t as i64), g);
            }
            let expected = (now..).find(|&s| (s..s + dur).all(|t| grid.get(t as usize).copied().unwrap_or(i64::from(cap)) >= i64::from(procs))).unwrap();
            prop_assert_eq!(p.earliest(now, procs, dur), expected);
            p.forget_before(now);
            prop_assert_eq!(p.earliest(now, procs, dur), expected);
        }
    }
}
