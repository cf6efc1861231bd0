//! dynP's candidate plans built from scratch (Streit, thesis §4.2–4.3): the plans of several
//! orders over the same waiting jobs and the same running jobs and reservations, each placed as a
//! planning policy of that order would place it from scratch.
//!
//! Where two orders put alike jobs (the same width and estimate) in the same first positions, as
//! in bursts of submissions, their plans agree there position by position: a placement depends
//! only on what was placed before it and on the job's width and estimate. Such a shared prefix is
//! placed once; the later plan copies its starts and goes on from a copy of the profile at the
//! point where the orders part. Without `user-cap` rules only (what each user holds would have to
//! be copied too).

use super::{Plan, Planning, PlanningOptions, Slot};
use crate::model::Time;
use crate::policy::user_caps::UserUse;
use crate::structures::Profile;

/// What a planning policy needs to place jobs, beyond the jobs.
pub(super) struct Setting<'a> {
    pub base: &'a Profile,
    pub users: &'a UserUse,
    pub now: Time,
    pub options: &'a PlanningOptions,
    pub capacity: u32,
}

/// Builds the plans whose profiles must be built again (their slots hold the waiting jobs in
/// their orders) from `setting.base`.
pub(super) fn rebuild(plans: &mut [Plan], setting: &Setting) {
    let fresh: Vec<usize> = (0..plans.len())
        .filter(|&k| plans[k].rebuild && !plans[k].slots.is_empty())
        .collect();
    // Each plan's source: the plan built before it that it shares the longest prefix with, and
    // the prefix's length.
    let mut source: Vec<Option<(usize, usize)>> = vec![None; plans.len()];
    if !setting.options.rules.has_user_caps() {
        for (n, &k) in fresh.iter().enumerate() {
            for &j in &fresh[..n] {
                let shared = alike_prefix(&plans[j].slots, &plans[k].slots);
                if shared > 0 && source[k].is_none_or(|(_, best)| shared > best) {
                    source[k] = Some((j, shared));
                }
            }
        }
    }
    // (plan, position, its profile with the slots before the position placed)
    let mut copies: Vec<(usize, usize, Profile)> = Vec::new();
    for &k in &fresh {
        let (mut profile, mut at) = match source[k] {
            Some((j, shared)) => {
                let (_, _, copy) = copies
                    .iter()
                    .find(|&&(p, at, _)| (p, at) == (j, shared))
                    .expect("a copy is kept where a later plan parts");
                // Sources come first (`j < k`).
                let (done, rest) = plans.split_at_mut(k);
                let (from, to) = (&done[j], &mut rest[0]);
                for (s, t) in to.slots.iter_mut().zip(&from.slots[..shared]) {
                    s.start = t.start;
                }
                (copy.clone(), shared)
            }
            None => (setting.base.clone(), 0),
        };
        let plan = &mut plans[k];
        let mut cuts: Vec<usize> = source
            .iter()
            .filter_map(|s| s.filter(|&(j, _)| j == k).map(|(_, shared)| shared))
            .collect();
        cuts.push(plan.slots.len());
        cuts.sort_unstable();
        cuts.dedup();
        let mut users = setting.users.clone();
        for cut in cuts {
            let cut = cut.max(at);
            let prev = at
                .checked_sub(1)
                .and_then(|i| plan.slots[i].start)
                .unwrap_or(setting.now);
            Planning::place(
                &mut profile,
                &mut users,
                &mut plan.slots[at..cut],
                setting.now,
                setting.options,
                setting.capacity,
                prev,
            );
            at = cut;
            if source.contains(&Some((k, cut))) {
                copies.push((k, cut, profile.clone()));
            }
        }
        plan.profile = profile;
        (plan.dirty_from, plan.rebuild) = (None, false);
        plan.note_next_planned();
    }
}

/// How many first positions of `a` and `b` hold alike jobs.
fn alike_prefix(a: &[Slot], b: &[Slot]) -> usize {
    a.iter()
        .zip(b)
        .take_while(|(x, y)| (x.job.procs, x.job.estimate) == (y.job.procs, y.job.estimate))
        .count()
}
