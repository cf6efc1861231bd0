//! An availability profile: the free processors of one machine as a step function of time,
//! with running jobs and reservations subtracted over their `[start, end)` intervals. Planning
//! policies (conservative backfilling) place each waiting job at the earliest instant from which
//! enough processors stay free for its whole estimate.
//!
//! Stored as the ordered changes `(time, change of the free count at that instant)` in a
//! double-ended array: a placement walks contiguous memory from `now` until it finds a window
//! (the dominant cost, once per waiting job per early end), a reservation or a release is a
//! binary search and a shift of the shorter side, and the past is dropped from the front. Changes
//! in the past are folded into a base value. Measured against the same changes in a `BTreeMap`
//! (`O(log n)` updates, pointer-chasing walks) and a treap with per-subtree running-sum bounds
//! (jumping over blocked intervals in `O(log n)` each): both slower on every shared trace and at
//! the higher loads of the benchmarks (docs/performance.md), because placements jump over many
//! short blocked intervals and the walk dominates.

use crate::model::{Duration, Time};
use std::collections::VecDeque;

/// Free processors over time.
#[derive(Clone, Debug)]
pub struct Profile {
    capacity: i64,
    /// Free processors before the first change.
    base: i64,
    /// `(instant, change of the free count from that instant on)`, instants increasing, changes
    /// never zero.
    changes: VecDeque<(Time, i64)>,
}

impl Profile {
    /// A machine of `capacity` processors, all free at all times.
    pub fn new(capacity: u32) -> Profile {
        Profile {
            capacity: i64::from(capacity),
            base: i64::from(capacity),
            changes: VecDeque::new(),
        }
    }

    /// Index of the first change after `t`.
    fn after(&self, t: Time) -> usize {
        self.changes.partition_point(|&(c, _)| c <= t)
    }

    /// Free processors at instant `t` (negative when over-committed after an overrun).
    pub fn free_at(&self, t: Time) -> i64 {
        self.at(t).1
    }

    /// The index of the first change after `t` and the free count at `t`.
    fn at(&self, t: Time) -> (usize, i64) {
        let i = self.after(t);
        let before: i64 = self.changes.range(..i).map(|&(_, d)| d).sum();
        (i, self.base + before)
    }

    /// The earliest `s >= now` such that at least `procs` processors are free throughout
    /// `[s, s + duration)`.
    pub fn earliest(&self, now: Time, procs: u32, duration: Duration) -> Time {
        let need = i64::from(procs).min(self.capacity);
        let (i, mut free) = self.at(now);
        let mut candidate = (free >= need).then_some(now);
        for &(t, d) in self.changes.range(i..) {
            if let Some(c) = candidate
                && t - c >= duration
            {
                return c;
            }
            free += d;
            if free < need {
                candidate = None;
            } else if candidate.is_none() {
                candidate = Some(t);
            }
        }
        candidate.expect("after the last change the whole machine is free")
    }

    /// The earliest `s` in `[now, start_limit)` such that at least `procs` processors are free
    /// throughout `[s, min(s + duration, cut))`, if there is one. A waiting job holding the slot
    /// `[cut, cut + duration)` in a profile that is nowhere over-committed can move to `s`
    /// exactly when this finds it (with `start_limit <= cut`): from `cut` on, its own processors
    /// make room for it, so it need not be taken out of the profile to ask.
    pub fn earliest_within(
        &self,
        now: Time,
        procs: u32,
        duration: Duration,
        start_limit: Time,
        cut: Time,
    ) -> Option<Time> {
        let need = i64::from(procs).min(self.capacity);
        let (i, mut free) = self.at(now);
        let mut candidate = (free >= need).then_some(now);
        for &(t, d) in self.changes.range(i..) {
            match candidate {
                Some(c) if c >= start_limit => return None,
                Some(c) if t - c >= duration || t >= cut => return Some(c),
                None if t >= start_limit => return None,
                _ => {}
            }
            free += d;
            if free < need {
                candidate = None;
            } else if candidate.is_none() {
                candidate = Some(t);
            }
        }
        candidate.filter(|&c| c < start_limit)
    }

    /// The first stretch of `[from, to)` where fewer than `procs` processors are free, as
    /// `(start, end, lowest free count on it)`, if there is one (an advance reservation's
    /// conflict).
    pub fn shortfall(&self, from: Time, to: Time, procs: u32) -> Option<(Time, Time, i64)> {
        let need = i64::from(procs);
        let mut free = self.free_at(from);
        let mut short = (free < need).then_some((from, free));
        let (i, j) = (
            self.after(from),
            self.changes.partition_point(|&(c, _)| c < to),
        );
        for &(t, d) in self.changes.range(i..j.max(i)) {
            free += d;
            match short {
                Some((s, low)) if free >= need => return Some((s, t, low)),
                Some((s, low)) => short = Some((s, low.min(free))),
                None if free < need => short = Some((t, free)),
                None => {}
            }
        }
        short.map(|(s, low)| (s, to, low))
    }

    /// Like [`Profile::earliest`], for a caller that knows the free count never decreases on
    /// `[now, rising_until)` (only running jobs end there): a job that fits at `now` and ends by
    /// `rising_until` is placed at `now` without walking the profile.
    pub fn earliest_rising(
        &self,
        now: Time,
        procs: u32,
        duration: Duration,
        rising_until: Time,
    ) -> Time {
        if now.saturating_add(duration) <= rising_until && self.free_at(now) >= i64::from(procs) {
            return now;
        }
        self.earliest(now, procs, duration)
    }

    /// Subtracts `procs` over `[start, end)`.
    pub fn reserve(&mut self, start: Time, end: Time, procs: u32) {
        self.add(start, end, -i64::from(procs));
    }

    /// Gives back `procs` over `[start, end)`.
    pub fn release(&mut self, start: Time, end: Time, procs: u32) {
        self.add(start, end, i64::from(procs));
    }

    fn change(&mut self, t: Time, delta: i64) {
        match self.changes.binary_search_by_key(&t, |&(c, _)| c) {
            Ok(i) => {
                self.changes[i].1 += delta;
                if self.changes[i].1 == 0 {
                    self.changes.remove(i);
                }
            }
            Err(i) => self.changes.insert(i, (t, delta)),
        }
    }

    fn add(&mut self, start: Time, end: Time, delta: i64) {
        if start >= end || delta == 0 {
            return;
        }
        self.change(start, delta);
        self.change(end, -delta);
    }

    /// Folds the changes before `now` into the base value (their past no longer matters).
    pub fn forget_before(&mut self, now: Time) {
        while let Some(&(t, d)) = self.changes.front() {
            if t >= now {
                break;
            }
            self.base += d;
            self.changes.pop_front();
        }
    }

    /// Number of stored changes (for tests and statistics).
    pub fn breakpoints(&self) -> usize {
        self.changes.len()
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
        assert_eq!(p.breakpoints(), 0, "back to a flat profile");
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
            let free = |t: i64| grid.get(t as usize).copied().unwrap_or(i64::from(cap));
            let expected = (now..).find(|&s| (s..s + dur).all(|t| free(t) >= i64::from(procs))).unwrap();
            prop_assert_eq!(p.earliest(now, procs, dur), expected);
            let cut = now + dur / 2 + 3;
            let early = now + dur / 4 + 1;
            let fits = |s: i64, end: i64| (s..end).all(|t| free(t) >= i64::from(procs));
            let within = (now..early).find(|&s| fits(s, (s + dur).min(cut)));
            prop_assert_eq!(p.earliest_within(now, procs, dur, early, cut), within);
            let short = (now..cut).find(|&t| free(t) < i64::from(procs)).map(|s| {
                let e = (s..cut).find(|&t| free(t) >= i64::from(procs)).unwrap_or(cut);
                (s, e, (s..e).map(free).min().unwrap())
            });
            prop_assert_eq!(p.shortfall(now, cut, procs), short);
            p.forget_before(now);
            prop_assert_eq!(p.earliest(now, procs, dur), expected);
            // Rising up to the first reservation start after now: the shortcut agrees.
            let rising = res.iter().map(|r| r.0).filter(|&s| s > now).min().unwrap_or(Time::MAX);
            prop_assert_eq!(p.earliest_rising(now, procs, dur, rising), expected);
        }
    }
}
