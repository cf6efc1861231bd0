//! Migration in the Ousterhout matrix (Zhang et al., §6.4): moving a job A into a row p that has
//! at least |A| free columns, by checkpoint/restart. Option 1 moves the jobs S(A) that occupy A's
//! columns in row p to other free columns of p and puts A there on its own columns; option 2 puts A
//! on free columns of p (new columns for A). A migration costs C seconds per job (checkpoint C/2,
//! restart C/2); the wasted processor-seconds are eq. (4) for option 1, (C/2)·|A| + C·Σ|J|, and
//! eq. (5) for option 2, C·|A| + (C/2)·Σ|J|. As delays (G-A12): option 1 stops A for C/2 and each
//! J for C; option 2 stops A for C and each J for C/2. Feasibility (G-A14): option 1 needs every J
//! in row p only, option 2 needs A in one row only. Q bounds the tasks that change columns in one
//! slice (|J| for moved blockers, |A| in option 2).
//!
//! CollapseMatrix-2 is CompactMatrix with migration allowed (the cheaper option); FillMatrix-2 is
//! FillMatrix that may move blockers aside (option 1 only), provided they are in no other row.

use super::matrix::{Cols, Matrix};
use super::phases::{JobOrder, jobs_of, rows_by_population};
use crate::model::{Duration, JobId};

/// One migration: the tasks that changed columns and, per job involved, its delay and whether it
/// changed columns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Migrated {
    /// Tasks that changed columns (counted against Q).
    pub tasks: u32,
    /// (job, delay in seconds, changed columns).
    pub delays: Vec<(JobId, Duration, bool)>,
}

/// Which option a migration used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Option_ {
    /// Move the blockers aside, A keeps its columns.
    MoveBlockers,
    /// Move A to free columns.
    MoveJob,
}

/// The jobs of row `p` that occupy some of `cols`.
pub fn blockers(m: &Matrix, p: usize, cols: &Cols) -> Vec<JobId> {
    m.in_row(p)
        .into_iter()
        .filter(|&id| m.get(id).expect("placed").cols.overlaps(cols))
        .collect()
}

/// Eq. (4): processor-seconds wasted by option 1.
pub fn cost_option1(cost: Duration, a: u32, blockers: u32) -> Duration {
    cost / 2 * Duration::from(a) + cost * Duration::from(blockers)
}

/// Eq. (5): processor-seconds wasted by option 2.
pub fn cost_option2(cost: Duration, a: u32, blockers: u32) -> Duration {
    cost * Duration::from(a) + cost / 2 * Duration::from(blockers)
}

/// New columns in row `p` for the blockers of `cols` (outside `cols`), if they fit: (job, columns).
fn plan_blockers(m: &Matrix, p: usize, cols: &Cols, bl: &[JobId]) -> Option<Vec<(JobId, Cols)>> {
    let mut trial = m.clone();
    // Free the blockers' columns, then give each the lowest columns outside `cols`.
    let mut widths = Vec::new();
    for &j in bl {
        let w = trial.get(j).expect("placed").cols.len();
        trial.remove(j);
        widths.push((j, w));
    }
    let mut out = Vec::new();
    for (j, w) in widths {
        let c = trial.lowest_free_avoiding(p, w, cols)?;
        trial.place(j, p, c.clone(), 0);
        out.push((j, c));
    }
    Some(out)
}

/// Whether every job of `bl` occupies row `p` only.
fn only_in(m: &Matrix, p: usize, bl: &[JobId]) -> bool {
    bl.iter().all(|&j| m.get(j).expect("placed").rows == 1 << p)
}

/// Option 1: moves the blockers of A's columns in row `p` aside (their plan) and returns the
/// migration record; A itself is not moved here.
fn apply_option1(
    m: &mut Matrix,
    p: usize,
    a: JobId,
    plan: Vec<(JobId, Cols)>,
    cost: Duration,
) -> Migrated {
    let mut tasks = 0;
    let mut delays = vec![(a, cost / 2, false)];
    for (j, c) in &plan {
        tasks += c.len();
        delays.push((*j, cost, true));
    }
    m.recolumn_in_row(p, plan);
    Migrated { tasks, delays }
}

/// CollapseMatrix-2: the CompactMatrix loop (sources least populated first, destinations most
/// populated first, jobs smallest first) where a job may also go to other columns of the
/// destination, by the cheaper of options 1 and 2, within `budget` tasks, the clock rule
/// (`clock_ok(job, to, home)`) and `allowed` (BGS reservations). Returns the migrations made.
pub fn collapse(
    m: &mut Matrix,
    mut budget: u32,
    cost: Duration,
    clock_ok: &dyn Fn(JobId, usize, usize) -> bool,
    allowed: &dyn Fn(&Matrix, JobId, usize) -> bool,
) -> Vec<Migrated> {
    let mut out = Vec::new();
    for i in rows_by_population(m) {
        let mut dests = rows_by_population(m);
        dests.reverse();
        for p in dests {
            if p == i || !m.live(i) || m.used(p) < m.used(i) {
                continue;
            }
            for a in jobs_of(m, i, JobOrder::Smallest) {
                let pa = m.get(a).expect("placed").clone();
                let w = pa.cols.len();
                if m.free(p) < w || !clock_ok(a, p, pa.home) || !allowed(m, a, p) {
                    continue;
                }
                if m.fits(p, &pa.cols) {
                    m.rehome(a, p);
                    continue;
                }
                let bl = blockers(m, p, &pa.cols);
                let bl_tasks: u32 = bl
                    .iter()
                    .map(|&j| m.get(j).expect("placed").cols.len())
                    .sum();
                let opt1 = (only_in(m, p, &bl) && bl_tasks <= budget)
                    .then(|| plan_blockers(m, p, &pa.cols, &bl))
                    .flatten();
                let opt2 = (pa.rows == 1 << pa.home && w <= budget)
                    .then(|| m.lowest_free(p, w))
                    .flatten();
                let c1 = cost_option1(cost, w, bl_tasks);
                let c2 = cost_option2(cost, w, bl_tasks);
                let choice = match (opt1, opt2) {
                    (Some(plan), Some(_)) if c1 <= c2 => {
                        Some((Option_::MoveBlockers, Some(plan), None))
                    }
                    (_, Some(cols)) => Some((Option_::MoveJob, None, Some(cols))),
                    (Some(plan), None) => Some((Option_::MoveBlockers, Some(plan), None)),
                    (None, None) => None,
                };
                match choice {
                    Some((Option_::MoveBlockers, Some(plan), _)) => {
                        let mv = apply_option1(m, p, a, plan, cost);
                        m.rehome(a, p);
                        budget -= mv.tasks;
                        out.push(mv);
                    }
                    Some((Option_::MoveJob, _, Some(cols))) => {
                        m.recolumn(a, p, cols);
                        let mut delays = vec![(a, cost, true)];
                        delays.extend(bl.iter().map(|&j| (j, cost / 2, false)));
                        budget -= w;
                        out.push(Migrated { tasks: w, delays });
                    }
                    _ => {}
                }
            }
        }
    }
    out
}

/// FillMatrix-2: passes over the placed jobs in order of entering the matrix; a job gets a replica
/// in the first existing row it is not in that has enough free columns, its blockers there being
/// moved aside (option 1) when they occupy that row only and the budget allows, until a pass
/// changes nothing. Returns the migrations made.
pub fn fill(m: &mut Matrix, mut budget: u32, cost: Duration) -> Vec<Migrated> {
    let mut out = Vec::new();
    let mut order: Vec<JobId> = m.jobs().keys().copied().collect();
    order.sort_by_key(|id| m.get(*id).expect("placed").placed);
    loop {
        let mut changed = false;
        for &a in &order {
            let Some(pa) = m.get(a).cloned() else {
                continue;
            };
            let w = pa.cols.len();
            for p in 0..m.mpl() {
                if !m.live(p) || pa.rows & (1 << p) != 0 || m.free(p) < w {
                    continue;
                }
                if m.fits(p, &pa.cols) {
                    m.replicate(a, p);
                    changed = true;
                    break;
                }
                let bl = blockers(m, p, &pa.cols);
                let tasks: u32 = bl
                    .iter()
                    .map(|&j| m.get(j).expect("placed").cols.len())
                    .sum();
                if tasks > budget || !only_in(m, p, &bl) {
                    continue;
                }
                let Some(plan) = plan_blockers(m, p, &pa.cols, &bl) else {
                    continue;
                };
                let mut mv = apply_option1(m, p, a, plan, cost);
                // A is replicated, not moved: only the blockers stop.
                mv.delays.retain(|d| d.0 != a);
                m.replicate(a, p);
                budget -= mv.tasks;
                out.push(mv);
                changed = true;
                break;
            }
        }
        if !changed {
            return out;
        }
    }
}
