//! Per-user limits of a planning system (Streit, thesis §3.1.2: "per-project/per-user limits
//! that virtually shrink the machine"; spec `self-tuning-and-multisite.md` §1.4): the processors
//! each user holds over time in the plan being built — running jobs until their predicted ends,
//! placed jobs over their planned slots — and the earliest start at which a new job keeps its
//! user at or under the `user-cap` rules' thresholds for its whole estimate.

use super::rules::PlanningRules;
use crate::model::{Duration, Time, UserId};
use std::collections::{BTreeMap, HashMap};

/// Processors held per user as step functions of time.
#[derive(Clone, Debug, Default)]
pub struct UserUse {
    /// User -> instant -> change of the processors held from that instant on.
    changes: HashMap<UserId, BTreeMap<Time, i64>>,
}

impl UserUse {
    /// Adds `procs` of `user` over `[start, end)`.
    pub fn hold(&mut self, user: UserId, start: Time, end: Time, procs: u32) {
        if start >= end {
            return;
        }
        let c = self.changes.entry(user).or_default();
        *c.entry(start).or_insert(0) += i64::from(procs);
        *c.entry(end).or_insert(0) -= i64::from(procs);
    }

    fn held_at(&self, user: UserId, t: Time) -> i64 {
        self.changes
            .get(&user)
            .map_or(0, |c| c.range(..=t).map(|(_, d)| d).sum())
    }

    fn next_change(&self, user: UserId, t: Time) -> Option<Time> {
        self.changes
            .get(&user)
            .and_then(|c| c.range(t + 1..).next().map(|(&t, _)| t))
    }

    /// The earliest `s >= from` at which `procs` more processors of `user` for `estimate` stay
    /// within the caps of `rules` on a machine of `capacity` throughout `[s, s + estimate)`, or
    /// `None` if there is none before `limit`.
    ///
    /// A violation at instant `v` rules out every start up to `v` (the job would cover `v`) and
    /// every start before the next change of the user's holding or of the caps after `v` (the
    /// state there is the same), so the search moves to that change.
    #[allow(clippy::too_many_arguments)]
    pub fn earliest(
        &self,
        rules: &PlanningRules,
        capacity: u32,
        from: Time,
        user: UserId,
        procs: u32,
        estimate: Duration,
        limit: Time,
    ) -> Option<Time> {
        let need = i64::from(procs);
        let next = |t: Time| {
            let a = self.next_change(user, t);
            let b = rules.next_user_cap_edge(t);
            match (a, b) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
        };
        // What the user holds is carried along the walk: between `p` and `next(p)` it changes
        // only at `next(p)` itself.
        let changes = self.changes.get(&user);
        let change_at = |t: Time| changes.and_then(|c| c.get(&t)).copied().unwrap_or(0);
        let (mut s, mut held_s) = (from, self.held_at(user, from));
        'search: while s <= limit {
            let (mut p, mut held) = (s, held_s);
            loop {
                if let Some(cap) = rules.user_cap_at(p, capacity)
                    && held + need > cap
                {
                    s = next(p)?;
                    held_s = held + change_at(s);
                    continue 'search;
                }
                match next(p) {
                    Some(n) if n < s + estimate.max(1) => {
                        held += change_at(n);
                        p = n;
                    }
                    _ => return Some(s),
                }
            }
        }
        None
    }
}

/// Whether a job of `procs` processors for `estimate` can ever be placed under `rules` on an
/// empty machine of `capacity` from `now`: the start rules and its user's cap must agree on an
/// instant. Windows recur weekly, so looking three weeks ahead decides it.
pub fn admits(
    rules: &PlanningRules,
    now: Time,
    procs: u32,
    estimate: Duration,
    capacity: u32,
) -> bool {
    let limit = now + 21 * 86_400;
    let empty = UserUse::default();
    let mut t = now;
    while t <= limit {
        let Some(s) = rules.next_start(t, procs, estimate, capacity) else {
            return false;
        };
        if !rules.has_user_caps() {
            return true;
        }
        match empty.earliest(rules, capacity, s, UserId(0), procs, estimate, limit) {
            Some(u) if u == s => return true,
            Some(u) => t = u,
            None => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::rules::tests::{MON, rules};
    const H: Time = 3600;

    /// `user-cap 50% mon-fri 06-20` on 100 processors: user 1 holds 40 until 12:00 from 10:00.
    #[test]
    fn the_cap_holds_for_the_whole_estimate_inside_the_window() {
        let r = rules(&["user-cap 50% mon-fri 06-20"]);
        let mut u = UserUse::default();
        u.hold(UserId(1), MON + 10 * H, MON + 12 * H, 40);
        let ten = MON + 10 * H;
        let far = MON + 30 * 86_400;
        // 10 more fit beside the 40; 20 more wait for 12:00.
        assert_eq!(u.earliest(&r, 100, ten, UserId(1), 10, H, far), Some(ten));
        assert_eq!(
            u.earliest(&r, 100, ten, UserId(1), 20, H, far),
            Some(MON + 12 * H)
        );
        // Another user is not held back.
        assert_eq!(u.earliest(&r, 100, ten, UserId(2), 50, H, far), Some(ten));
        // Wider than the cap: after 20:00, and only if it ends by 06:00 the next day.
        assert_eq!(
            u.earliest(&r, 100, ten, UserId(2), 60, 10 * H, far),
            Some(MON + 20 * H)
        );
        // Eleven hours do not fit in a weekday night: Friday 20:00 into the weekend.
        assert_eq!(
            u.earliest(&r, 100, ten, UserId(2), 60, 11 * H, far),
            Some(MON + 4 * 86_400 + 20 * H)
        );
        // Before the window opens at 06:00 a job may start if it ends by then.
        let four = MON + 4 * H;
        assert_eq!(
            u.earliest(&r, 100, four, UserId(2), 60, 2 * H, far),
            Some(four)
        );
        assert_eq!(
            u.earliest(&r, 100, four, UserId(2), 60, 3 * H, far),
            Some(MON + 20 * H)
        );
    }

    /// The walk that carries the user's holding along equals checking every candidate start
    /// (the request's earliest instant, the user's changes, the caps' edges) at every instant
    /// where the holding or the cap changes, with the holding summed afresh each time.
    #[test]
    fn the_earliest_start_equals_checking_every_candidate() {
        use rand::{RngExt, SeedableRng};
        let r = rules(&["user-cap 50% mon-fri 06-20", "user-cap 30 sat-sun 00-24"]);
        let far = MON + 21 * 86_400;
        let edges = |from: Time, to: Time| {
            let mut v = Vec::new();
            let mut t = from;
            while let Some(e) = r.next_user_cap_edge(t).filter(|&e| e < to) {
                v.push(e);
                t = e;
            }
            v
        };
        for seed in 0..200u64 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let mut u = UserUse::default();
            for _ in 0..rng.random_range(1..12) {
                let start = MON + rng.random_range(0..7 * 24) * H;
                let len = rng.random_range(1..30) * H;
                u.hold(UserId(1), start, start + len, rng.random_range(1..40));
            }
            let from = MON + rng.random_range(0..5 * 24 * 60) * 60;
            let (procs, estimate) = (rng.random_range(1..45), rng.random_range(1..40) * H / 2);
            let mut candidates: Vec<Time> = u.changes[&UserId(1)]
                .keys()
                .copied()
                .chain(edges(from, far))
                .filter(|&t| t > from && t <= far)
                .collect();
            candidates.push(from);
            candidates.sort_unstable();
            candidates.dedup();
            let fits = |s: Time| {
                let inside = u.changes[&UserId(1)]
                    .keys()
                    .copied()
                    .chain(edges(s, s + estimate));
                std::iter::once(s)
                    .chain(inside.filter(|&t| t > s && t < s + estimate))
                    .all(|p| {
                        r.user_cap_at(p, 100)
                            .is_none_or(|cap| u.held_at(UserId(1), p) + i64::from(procs) <= cap)
                    })
            };
            let expected = candidates.into_iter().find(|&s| fits(s));
            assert_eq!(
                u.earliest(&r, 100, from, UserId(1), procs, estimate, far),
                expected,
                "seed {seed}"
            );
        }
    }

    #[test]
    fn a_job_wider_than_an_all_week_cap_is_never_admitted() {
        let r = rules(&["user-cap 32 all 00-24"]);
        assert!(admits(&r, MON, 32, H, 100));
        assert!(!admits(&r, MON, 33, H, 100));
        // A weekday cap leaves the weekend: two days fit, three do not.
        let r = rules(&["user-cap 32 mon-fri 00-24"]);
        assert!(admits(&r, MON, 33, 2 * 86_400, 100));
        assert!(!admits(&r, MON, 33, 2 * 86_400 + 1, 100));
    }
}
