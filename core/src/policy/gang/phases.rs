//! The four phases that recompute the Ousterhout matrix at every scheduling event (Zhang et al.,
//! §5.2 and §6.1): CleanMatrix (drop every replica), CompactMatrix (move jobs from less populated
//! into more populated rows, on the same columns, as far as the clock rule allows), Schedule
//! (place waiting jobs in FCFS order, best-fit row, stopping at the first that does not fit) and
//! FillMatrix (replicate placed jobs into rows where their columns are free). §6.4 calls the first
//! two ClearMatrix and CollapseMatrix; these are the same phases.

use super::matrix::Matrix;
use crate::model::JobId;

/// The position of the cycle at an event, for the clock rule (§6.1, Fig. 10; our operational
/// reading G-A10): rows are visited in index order, skipping rows that do not exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clock {
    /// The row executing now.
    pub cur: usize,
    /// Number of rows (MPL).
    pub mpl: usize,
}

impl Clock {
    /// How many steps after the current row `r` comes (0 = the current row).
    pub fn off(&self, r: usize) -> usize {
        (r + self.mpl - self.cur) % self.mpl
    }

    /// Whether a job may move to row `to`: a job running now may go anywhere; a job that last ran
    /// at row `last` (or has never run and has home `last`) only to rows activated no later than
    /// `last` comes again, so it runs again within one cycle.
    pub fn legal(&self, to: usize, last: usize, running_now: bool) -> bool {
        let limit = if running_now {
            self.mpl
        } else {
            self.off(last)
        };
        self.off(to) <= limit
    }
}

/// CleanMatrix: removes every occurrence of every job outside its home row.
pub fn clean(m: &mut Matrix) {
    let replicas: Vec<(JobId, usize)> = m
        .jobs()
        .iter()
        .flat_map(|(&id, p)| {
            (0..m.mpl())
                .filter(move |&r| r != p.home && p.rows & (1 << r) != 0)
                .map(move |r| (id, r))
        })
        .collect();
    for (id, r) in replicas {
        m.unreplicate(id, r);
    }
}

/// In which order CompactMatrix looks at the jobs of a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobOrder {
    /// By the time they entered the matrix (GS, BGS; §6.1).
    Start,
    /// Fewest processors first (the migration variants; §6.4).
    Smallest,
}

/// The rows that exist, from least to most populated (ties by index), as G-A9 fixes them at the
/// start of the phase.
pub fn rows_by_population(m: &Matrix) -> Vec<usize> {
    let mut rows: Vec<usize> = (0..m.mpl()).filter(|&r| m.live(r)).collect();
    rows.sort_by_key(|&r| (m.used(r), r));
    rows
}

/// The jobs whose home is row `r`, in `order`.
pub fn jobs_of(m: &Matrix, r: usize, order: JobOrder) -> Vec<JobId> {
    let mut v = m.homed_in(r);
    match order {
        JobOrder::Start => v.sort_by_key(|id| m.get(*id).expect("placed").placed),
        JobOrder::Smallest => v.sort_by_key(|id| {
            let p = m.get(*id).expect("placed");
            (p.cols.len(), p.placed)
        }),
    }
    v
}

/// CompactMatrix (after CleanMatrix, so every job is in its home row only): for each source row
/// from least to most populated, for each destination from most to least populated (skipping
/// itself and rows less populated than the source), every job of the source whose columns are
/// free in the destination, for which `clock_ok(job, destination, home)` holds (the clock rule)
/// and `allowed` holds (BGS: no reservation of the destination is violated), moves there.
/// Returns the jobs moved, in order.
pub fn compact(
    m: &mut Matrix,
    order: JobOrder,
    clock_ok: &dyn Fn(JobId, usize, usize) -> bool,
    allowed: &mut dyn FnMut(&Matrix, JobId, usize) -> bool,
) -> Vec<JobId> {
    let mut moved = Vec::new();
    let sources = rows_by_population(m);
    for &i in &sources {
        let mut dests = rows_by_population(m);
        dests.reverse();
        for j in dests {
            if j == i || !m.live(i) || m.used(j) < m.used(i) {
                continue;
            }
            for id in jobs_of(m, i, order) {
                let p = m.get(id).expect("placed");
                let fits = m.fits(j, &p.cols);
                if fits && clock_ok(id, j, p.home) && allowed(m, id, j) {
                    m.rehome(id, j);
                    moved.push(id);
                }
            }
        }
    }
    moved
}

/// The row a job of `procs` processors goes to: among rows (existing or not) with that many free
/// columns, the one with the fewest (best fit, §6.1), ties to the lowest index.
pub fn best_fit(m: &Matrix, procs: u32, ok: &dyn Fn(usize) -> bool) -> Option<usize> {
    (0..m.mpl())
        .filter(|&r| m.free(r) >= procs && ok(r))
        .min_by_key(|&r| (m.free(r), r))
}

/// Schedule of plain gang scheduling: the waiting jobs `(id, procs)` in FCFS order are placed, each
/// in its best-fit row on the lowest free columns, until one does not fit (no backfilling).
/// Returns the jobs placed. The queue is read lazily, so a pass costs the jobs placed plus one,
/// not the queue's length.
pub fn schedule_fcfs(
    m: &mut Matrix,
    queue: impl IntoIterator<Item = (JobId, u32)>,
    now: crate::model::Time,
) -> Vec<JobId> {
    let mut placed = Vec::new();
    for (id, procs) in queue {
        let Some(r) = best_fit(m, procs, &|_| true) else {
            break;
        };
        let cols = m.lowest_free(r, procs).expect("the row has that many free");
        m.place(id, r, cols, now);
        placed.push(id);
    }
    placed
}

/// FillMatrix: passes over the placed jobs in order of entering the matrix, giving each at most
/// one new replica per pass in the first existing row where its columns are free, until a pass
/// changes nothing. Returns the replicas made as (job, row).
pub fn fill(m: &mut Matrix) -> Vec<(JobId, usize)> {
    let mut made = Vec::new();
    let mut order: Vec<JobId> = m.jobs().keys().copied().collect();
    order.sort_by_key(|id| m.get(*id).expect("placed").placed);
    loop {
        let mut changed = false;
        for &id in &order {
            let p = m.get(id).expect("placed");
            let row =
                (0..m.mpl()).find(|&r| m.live(r) && p.rows & (1 << r) == 0 && m.fits(r, &p.cols));
            if let Some(r) = row {
                m.replicate(id, r);
                made.push((id, r));
                changed = true;
            }
        }
        if !changed {
            return made;
        }
    }
}
