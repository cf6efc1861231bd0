//! Backfilling gang scheduling, BGS (Zhang et al., §6.2): every row of the matrix is a virtual
//! machine and a conservative-backfilling target. A job's run time under gang scheduling is taken
//! as MPL × its estimate (the worst case: it runs in its home row only), so a running job's
//! predicted end is now + MPL × (estimate − work done) (G-A11). Waiting jobs are taken in FCFS
//! order: one that fits some row now without delaying that row's reservations starts there (best
//! fit); any other gets a reservation in the row where it could start earliest. Reservations are
//! rebuilt from scratch at every event (G-A6) and counted per row, not per column (G-A11).

use super::matrix::Matrix;
use crate::model::{Duration, JobId, Time};

/// The free columns of one row over future time: a step function from `now` on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowProfile {
    /// (from, free): `free` columns from `from` to the next step (the last step lasts forever).
    steps: Vec<(Time, i64)>,
}

impl RowProfile {
    /// The profile of a row of `n` columns at `now` whose jobs end at the given (end, procs).
    pub fn new(now: Time, n: u32, ends: &[(Time, u32)]) -> RowProfile {
        let mut free = i64::from(n) - ends.iter().map(|&(_, p)| i64::from(p)).sum::<i64>();
        let mut ends: Vec<(Time, u32)> = ends.iter().map(|&(e, p)| (e.max(now), p)).collect();
        ends.sort_unstable();
        let mut steps = vec![(now, free)];
        for (e, p) in ends {
            free += i64::from(p);
            match steps.last_mut() {
                Some(last) if last.0 == e => last.1 = free,
                _ => steps.push((e, free)),
            }
        }
        RowProfile { steps }
    }

    /// The fewest free columns over `[from, to)`.
    pub fn min_free(&self, from: Time, to: Time) -> i64 {
        // The step in force at `from` (or the first), then every step starting before `to`.
        let first = self
            .steps
            .partition_point(|s| s.0 <= from)
            .saturating_sub(1);
        self.steps[first..]
            .iter()
            .take_while(|s| s.0 < to)
            .map(|s| s.1)
            .min()
            .unwrap_or(i64::MAX)
    }

    /// The earliest instant from the profile's start on at which `procs` columns are free for
    /// `dur` seconds. One forward scan: a step with too few columns rules out every candidate
    /// start at or before it whose window reaches it, so the next candidate is the step after.
    pub fn earliest(&self, procs: u32, dur: Duration) -> Time {
        self.earliest_before(procs, dur, Time::MAX)
            .expect("the last step has every column free")
    }

    /// [`RowProfile::earliest`] if it is before `bound`; the scan stops at the first candidate
    /// start at or after `bound` (candidates only grow).
    pub fn earliest_before(&self, procs: u32, dur: Duration, bound: Time) -> Option<Time> {
        let need = i64::from(procs);
        let dur = dur.max(1);
        let mut i = 0;
        'candidates: while i < self.steps.len() {
            let t = self.steps[i].0;
            if t >= bound {
                return None;
            }
            let mut j = i;
            while j < self.steps.len() && self.steps[j].0 < t + dur {
                if self.steps[j].1 < need {
                    i = j + 1;
                    continue 'candidates;
                }
                j += 1;
            }
            return Some(t);
        }
        None
    }

    /// Takes `procs` columns over `[from, from + dur)`.
    pub fn take(&mut self, from: Time, dur: Duration, procs: u32) {
        let to = from + dur.max(1);
        let mut at = [0; 2];
        for (i, t) in [from, to].into_iter().enumerate() {
            at[i] = match self.steps.binary_search_by_key(&t, |s| s.0) {
                Ok(k) => k,
                Err(k) => {
                    let prev = self.steps[k - 1].1;
                    self.steps.insert(k, (t, prev));
                    k
                }
            };
        }
        for s in &mut self.steps[at[0]..at[1]] {
            s.1 -= i64::from(procs);
        }
    }
}

/// A waiting job's reservation in one row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowReservation {
    /// The job.
    pub job: JobId,
    /// The row.
    pub row: usize,
    /// Reserved start.
    pub start: Time,
    /// Reserved end (start + MPL × estimate).
    pub end: Time,
    /// Processors.
    pub procs: u32,
}

/// The profile of row `r` at `now`: its jobs until their predicted ends, and `reservations` of
/// that row.
pub fn row_profile(
    m: &Matrix,
    r: usize,
    now: Time,
    predicted_end: &dyn Fn(JobId) -> Time,
    reservations: &[RowReservation],
) -> RowProfile {
    let ends: Vec<(Time, u32)> = m
        .in_row(r)
        .into_iter()
        .map(|id| (predicted_end(id), m.get(id).expect("placed").cols.len()))
        .collect();
    let mut p = RowProfile::new(now, m.width(), &ends);
    for res in reservations.iter().filter(|x| x.row == r) {
        if res.end > now {
            let from = res.start.max(now);
            p.take(from, res.end - from, res.procs);
        }
    }
    p
}

/// Whether placed job `id` may move into row `to` at `now` without taking columns that row's
/// jobs or `reservations` hold before its predicted end (BGS's condition (3) of CompactMatrix).
pub fn respects_reservations(
    m: &Matrix,
    id: JobId,
    to: usize,
    now: Time,
    predicted_end: &dyn Fn(JobId) -> Time,
    reservations: &[RowReservation],
) -> bool {
    let until = predicted_end(id);
    let need = i64::from(m.get(id).expect("placed").cols.len());
    let ok = least_free_until(m, to, now, until, predicted_end, reservations) >= need;
    debug_assert_eq!(
        ok,
        row_profile(m, to, now, predicted_end, reservations).min_free(now, until) >= need
    );
    ok
}

/// The fewest free columns of row `to` over `[now, until)` given its jobs' predicted ends and
/// `reservations`: the minimum of [`row_profile`] over that window, swept from the profile's
/// changes instead of building it.
fn least_free_until(
    m: &Matrix,
    to: usize,
    now: Time,
    until: Time,
    predicted_end: &dyn Fn(JobId) -> Time,
    reservations: &[RowReservation],
) -> i64 {
    // The same step function as the profile: jobs until their ends, reservations over
    // [max(start, now), end).
    let mut free = i64::from(m.width());
    let mut changes: Vec<(Time, i64)> = Vec::new();
    for j in m.in_row(to) {
        let procs = i64::from(m.get(j).expect("placed").cols.len());
        free -= procs;
        changes.push((predicted_end(j).max(now), procs));
    }
    for res in reservations.iter().filter(|x| x.row == to && x.end > now) {
        let procs = i64::from(res.procs);
        changes.push((res.start.max(now), -procs));
        changes.push((res.end, procs));
    }
    changes.sort_unstable_by_key(|c| c.0);
    let (mut min, mut at) = (i64::MAX, now);
    for (t, delta) in changes {
        if t > at {
            // The step [at, t) holds `free`; at < until here.
            min = min.min(free);
            if t >= until {
                return min;
            }
            at = t;
        }
        free += delta;
    }
    min.min(free)
}

/// The Schedule phase of BGS at `now` over the waiting jobs `(id, procs, MPL × estimate)` in FCFS
/// order, after CleanMatrix and CompactMatrix (each row holds its home jobs only), in rows
/// `0..rows`. Returns the jobs placed now and the reservations of the others.
pub fn schedule_backfill(
    m: &mut Matrix,
    queue: &[(JobId, u32, Duration)],
    rows: usize,
    now: Time,
    predicted_end: &dyn Fn(JobId) -> Time,
) -> (Vec<JobId>, Vec<RowReservation>) {
    let mut profiles: Vec<RowProfile> = (0..rows.min(m.mpl()))
        .map(|r| row_profile(m, r, now, predicted_end, &[]))
        .collect();
    let mut placed = Vec::new();
    let mut reserved = Vec::new();
    for &(id, procs, dur) in queue {
        let now_row = (0..profiles.len())
            .filter(|&r| {
                m.free(r) >= procs
                    && profiles[r].min_free(now, now + dur.max(1)) >= i64::from(procs)
            })
            .min_by_key(|&r| (m.free(r), r));
        if let Some(r) = now_row {
            let cols = m.lowest_free(r, procs).expect("the row has that many free");
            m.place(id, r, cols, now);
            profiles[r].take(now, dur, procs);
            placed.push(id);
            continue;
        }
        // The earliest (start, row): a later row must start strictly earlier to win.
        let mut best: Option<(Time, usize)> = None;
        for (r, p) in profiles.iter().enumerate() {
            let bound = best.map_or(Time::MAX, |b| b.0);
            if let Some(t) = p.earliest_before(procs, dur, bound) {
                best = Some((t, r));
            }
        }
        let (start, row) = best.expect("the last step of a row has every column free");
        profiles[row].take(start, dur, procs);
        reserved.push(RowReservation {
            job: id,
            row,
            start,
            end: start + dur.max(1),
            procs,
        });
    }
    (placed, reserved)
}
