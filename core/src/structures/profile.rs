//! An availability profile: the free processors of one machine as a step function of time,
//! with running jobs and reservations subtracted over their `[start, end)` intervals. Planning
//! policies (conservative backfilling, the planning-based CCS model and dynP of Streit, thesis
//! §3.2 and §4.3) place each waiting job at the earliest instant from which enough processors
//! stay free for its whole estimate.
//!
//! Stored as two parallel arrays: the instants at which the free count changes, and the free
//! count from each instant on. A placement is the dominant cost (once per waiting job per early
//! end, three plans per decision under dynP); it scans the free counts for the first one below
//! the job's width, sixteen at a time (the compiler turns the block test into vector
//! comparisons), stopping at the window's end, and reserves at the indices it found. A
//! reservation or a release finds its start from a hint (placements start at `now`) and its end
//! by galloping from the start, inserts two instants at most and adds over the counts in between;
//! instants that no longer change the count are dropped, so the profile stays as short as the
//! ordered changes it stands for. The past is folded into the count before the first instant, in
//! batches. Measured against the same changes kept as deltas in a double-ended array (a walk
//! summing the deltas), in a `BTreeMap`, and in a treap with per-subtree running-sum bounds: all
//! three slower (docs/performance.md).

use crate::model::{Duration, Time};

/// Processors beyond this are treated as this many: the free counts are 32-bit so that sixteen
/// are compared at once, and over-commitment (overrunning jobs) stays far from overflow.
const MAX_CAPACITY: u32 = 1 << 28;

/// How many free counts one block test compares.
const BLOCK: usize = 16;

/// Free processors over time.
#[derive(Clone, Debug)]
pub struct Profile {
    capacity: i32,
    /// Free processors before the first stored instant.
    first: i32,
    /// Instants at which the free count changes, increasing.
    times: Vec<Time>,
    /// `free[k]`: free processors on `[times[k], times[k + 1])` (the last one: from then on),
    /// never equal to the count before it.
    free: Vec<i32>,
    /// How many first instants were before the last [`Profile::forget_before`] and are kept
    /// until enough of them can be dropped at once (a hint for searches from `now`).
    past: usize,
}

/// Forgotten instants are dropped when at least this many, and a quarter of all, are past.
const FORGET_BATCH: usize = 16;

/// The first index `k >= from` with `pred(free[k])` or `times[k] >= until`, or the length.
#[inline]
fn first_where(
    times: &[Time],
    free: &[i32],
    from: usize,
    until: Time,
    pred: impl Fn(i32) -> bool,
) -> usize {
    let mut k = from;
    while let Some(block) = free.get(k..k + BLOCK) {
        if times[k + BLOCK - 1] >= until || block.iter().fold(false, |any, &x| any | pred(x)) {
            break;
        }
        k += BLOCK;
    }
    while k < free.len() && !pred(free[k]) && times[k] < until {
        k += 1;
    }
    k
}

fn procs_of(procs: u32) -> i32 {
    procs.min(MAX_CAPACITY) as i32
}

impl Profile {
    /// A machine of `capacity` processors, all free at all times.
    pub fn new(capacity: u32) -> Profile {
        let capacity = procs_of(capacity);
        Profile {
            capacity,
            first: capacity,
            times: Vec::new(),
            free: Vec::new(),
            past: 0,
        }
    }

    /// A machine of `capacity` processors whose running jobs hold, from `now` on, what `ends`
    /// gives back at each of their predicted ends (instants after `now`, increasing): the
    /// profile that reserving each from `now` to its end would give, built in one pass.
    pub fn running_until(
        capacity: u32,
        now: Time,
        ends: impl Iterator<Item = (Time, u64)>,
    ) -> Profile {
        let mut p = Profile::new(capacity);
        let held = |procs: u64| procs.min(u64::from(MAX_CAPACITY)) as i32;
        for (end, procs) in ends.filter(|&(end, procs)| end > now && procs > 0) {
            debug_assert!(p.times.last().is_none_or(|&t| t < end));
            p.times.push(end);
            p.free.push(held(procs));
        }
        // `free` holds each end's processors; the counts are their sums from the end back.
        let mut given_back = 0i32;
        for f in p.free.iter_mut().rev() {
            given_back = given_back.saturating_add(*f);
            *f += p.capacity.saturating_sub(given_back);
        }
        if given_back > 0 {
            p.times.insert(0, now);
            p.free.insert(0, p.capacity.saturating_sub(given_back));
        }
        p
    }

    /// Index of the first instant after `t`.
    fn after(&self, t: Time) -> usize {
        let h = self.past.min(self.times.len());
        if h > 0 && self.times[h - 1] > t {
            return self.times.partition_point(|&c| c <= t);
        }
        // Placements search from `now`, which is at the front once the past is forgotten.
        let head = (self.times.len() - h).min(2);
        match self.times[h..h + head].iter().position(|&c| c > t) {
            Some(k) => h + k,
            None => h + head + self.times[h + head..].partition_point(|&c| c <= t),
        }
    }

    /// The free count on `[times[k - 1], times[k])`.
    fn before(&self, k: usize) -> i32 {
        k.checked_sub(1).map_or(self.first, |j| self.free[j])
    }

    /// Free processors at instant `t` (negative when over-committed after an overrun).
    pub fn free_at(&self, t: Time) -> i64 {
        i64::from(self.before(self.after(t)))
    }

    /// The earliest `s >= now` such that at least `procs` processors are free throughout
    /// `[s, s + duration)`.
    pub fn earliest(&self, now: Time, procs: u32, duration: Duration) -> Time {
        self.window(now, procs, duration).0
    }

    /// The earliest window of [`Profile::earliest`]: its start, the index of the first instant
    /// at or after its start, and the index of the first instant at or after its end (the
    /// length when there is none).
    fn window(&self, now: Time, procs: u32, duration: Duration) -> (Time, usize, usize) {
        let (times, free) = (&self.times[..], &self.free[..]);
        let need = procs_of(procs).min(self.capacity);
        let i = self.after(now);
        let (mut c, mut s, mut k) = if self.before(i) >= need {
            let s = if i > 0 && self.times[i - 1] == now {
                i - 1
            } else {
                i
            };
            (now, s, i)
        } else {
            let g = first_where(times, free, i, Time::MAX, |f| f >= need);
            (times[g], g, g + 1)
        };
        loop {
            // `c` holds up to the first count below `need` from `k` on, if that comes before
            // the window's end: every instant before `b` is inside the window.
            let end = c.saturating_add(duration);
            let b = first_where(times, free, k, end, |f| f < need);
            if b == free.len() || times[b] >= end {
                return (c, s, b);
            }
            let g = first_where(times, free, b + 1, Time::MAX, |f| f >= need);
            (c, s, k) = (times[g], g, g + 1);
        }
    }

    /// Places up to `count` alike jobs (each `procs` processors for `duration`) at the earliest
    /// window of [`Profile::earliest`]: as many as the window holds side by side, at least one.
    /// Returns the start and how many were placed. Placing them one by one would give each the
    /// same start: a later one cannot start earlier (its window would have been the first
    /// one's), and it starts there while the window still holds it.
    pub fn place_alike(
        &mut self,
        now: Time,
        procs: u32,
        duration: Duration,
        count: u32,
    ) -> (Time, u32) {
        let (start, s, b) = self.window(now, procs, duration);
        let width = procs_of(procs);
        if width == 0 || duration <= 0 {
            return (start, count.max(1));
        }
        let end = start + duration;
        // `b` is the first instant at or after the window's end.
        let e = b + self.point_near(start, s);
        self.point_near(end, e);
        let low = self.free[s..e].iter().copied().fold(i32::MAX, i32::min);
        let placed = u32::try_from(low / width)
            .unwrap_or(1)
            .clamp(1, count.max(1));
        let delta = -(width * placed as i32);
        for f in &mut self.free[s..e] {
            *f += delta;
        }
        self.settle(e);
        self.settle(s);
        (start, placed)
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
        let need = procs_of(procs).min(self.capacity);
        let (times, free) = (&self.times[..], &self.free[..]);
        let len = free.len();
        let i = self.after(now);
        let (mut c, mut k) = if self.before(i) >= need {
            (now, i)
        } else {
            let g = first_where(times, free, i, start_limit, |f| f >= need);
            (*times.get(g)?, g + 1)
        };
        loop {
            if c >= start_limit {
                return None;
            }
            let until = c.saturating_add(duration).min(cut);
            let b = first_where(times, free, k, until, |f| f < need);
            if b == len || times[b] >= until {
                return Some(c);
            }
            let g = first_where(times, free, b + 1, start_limit, |f| f >= need);
            (c, k) = (*times.get(g)?, g + 1);
        }
    }

    /// The first stretch of `[from, to)` where fewer than `procs` processors are free, as
    /// `(start, end, lowest free count on it)`, if there is one (an advance reservation's
    /// conflict).
    pub fn shortfall(&self, from: Time, to: Time, procs: u32) -> Option<(Time, Time, i64)> {
        let need = i64::from(procs);
        let i = self.after(from);
        let j = self.times.partition_point(|&c| c < to).max(i);
        let mut short = None;
        let at = std::iter::once((from, self.before(i)));
        let steps = self.times[i..j]
            .iter()
            .copied()
            .zip(self.free[i..j].iter().copied());
        for (t, f) in at.chain(steps) {
            let f = i64::from(f);
            match short {
                Some((s, low)) if f >= need => return Some((s, t, low)),
                Some((s, low)) => short = Some((s, f.min(low))),
                None if f < need => short = Some((t, f)),
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
        self.add(start, end, -procs_of(procs));
    }

    /// Gives back `procs` over `[start, end)`.
    pub fn release(&mut self, start: Time, end: Time, procs: u32) {
        self.add(start, end, procs_of(procs));
    }

    /// The index of instant `t`, inserted (with the count that held there) if absent.
    fn point(&mut self, t: Time) -> usize {
        let k = self.after(t.saturating_sub(1));
        self.point_near(t, k);
        k
    }

    /// [`Profile::point`] for an instant known to be at or after the instant at `from`:
    /// galloping from there (an interval's end is most often a few instants after its start).
    fn point_from(&mut self, t: Time, from: usize) -> usize {
        let len = self.times.len();
        let mut step = 1;
        while from + step < len && self.times[from + step] < t {
            step *= 2;
        }
        let lo = (from + step / 2).min(len);
        let k = lo + self.times[lo..(from + step).min(len)].partition_point(|&c| c < t);
        self.point_near(t, k);
        k
    }

    /// Makes instant `t` a point, given `k`, the index of the first instant at or after it;
    /// returns whether it was inserted (1) or there already (0).
    fn point_near(&mut self, t: Time, k: usize) -> usize {
        debug_assert_eq!(k, self.times.partition_point(|&c| c < t));
        if self.times.get(k) == Some(&t) {
            return 0;
        }
        let f = self.before(k);
        self.times.insert(k, t);
        self.free.insert(k, f);
        1
    }

    /// Drops the point at `k` if it no longer changes the count.
    fn settle(&mut self, k: usize) {
        if k < self.free.len() && self.free[k] == self.before(k) {
            self.times.remove(k);
            self.free.remove(k);
        }
    }

    fn add(&mut self, start: Time, end: Time, delta: i32) {
        if start >= end || delta == 0 {
            return;
        }
        let s = self.point(start);
        let e = self.point_from(end, s);
        for f in &mut self.free[s..e] {
            *f += delta;
        }
        self.settle(e);
        self.settle(s);
    }

    /// Forgets the instants before `now` (their past no longer matters): they are folded into
    /// the count before the first in batches ([`FORGET_BATCH`]), so that a pass that forgets a
    /// few does not shift the whole profile.
    pub fn forget_before(&mut self, now: Time) {
        let k = self.after(now.saturating_sub(1));
        if k >= FORGET_BATCH && 4 * k >= self.times.len() {
            self.first = self.free[k - 1];
            self.times.drain(..k);
            self.free.drain(..k);
            self.past = 0;
        } else {
            self.past = k;
        }
    }

    /// Number of stored changes, the forgotten past aside (for tests and statistics).
    pub fn breakpoints(&self) -> usize {
        self.times.len() - self.past.min(self.times.len())
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
        fn running_until_equals_reserving_each_end(
            ends in prop::collection::btree_map(1i64..500, 1u64..40, 0..20),
            now in 0i64..100,
        ) {
            let built = Profile::running_until(64, now, ends.iter().map(|(&e, &p)| (e, p)));
            let mut reserved = Profile::new(64);
            for (&e, &p) in ends.range(now + 1..) {
                reserved.reserve(now, e, p as u32);
            }
            prop_assert_eq!((&built.times, &built.free), (&reserved.times, &reserved.free));
        }

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
            let (mut placed, mut reserved) = (p.clone(), p.clone());
            prop_assert_eq!(placed.place_alike(now, procs, dur, 1), (expected, 1));
            reserved.reserve(expected, expected + dur, procs);
            prop_assert_eq!((&placed.times, &placed.free), (&reserved.times, &reserved.free));
            // Alike jobs placed together land where one-by-one placement puts them.
            let (mut together, mut one_by_one) = (p.clone(), p.clone());
            let mut left = 5;
            while left > 0 {
                let (t, n) = together.place_alike(now, procs, dur, left);
                for _ in 0..n {
                    prop_assert_eq!(one_by_one.place_alike(now, procs, dur, 1), (t, 1));
                }
                left -= n;
            }
            prop_assert_eq!((&together.times, &together.free), (&one_by_one.times, &one_by_one.free));
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
