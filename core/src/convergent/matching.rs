//! The matching phase of Convergent Scheduling (spec `two-level-grid-scheduler.md` D7.4; D12 #22):
//! choose job–machine pairs, one job per machine and one machine per job, only where the
//! preference `p[i][m] > 0`, maximising first the number of pairs and then their total preference.
//!
//! * [`mis`]: the greedy Maximum Iterative Search — the largest remaining entry whose job and
//!   machine are both free, repeatedly (ties: lower job row, then lower machine).
//! * [`mfs`]: Maximum Flow Search, exact: a Hungarian algorithm (Kuhn, Naval Research Logistics
//!   Quarterly 2, 1955; shortest augmenting paths with potentials as in Tomizawa, Networks 1,
//!   1971, `O(r²·c)` over the smaller side `r`, after keeping only each machine's best
//!   `|machines|` jobs) on weights `p + BIG` where `BIG` exceeds any possible total, so that
//!   cardinality comes first and weight second — the reading the spec's implementation note
//!   recommends. Its inner scan is branch-free, written with explicit vectors (eight doubles at a
//!   time where the processor has AVX-512, four with AVX2, chosen at run time) and repeats the
//!   textbook dense form's
//!   floating-point operations exactly, so ties fall as they did before (see `assign`; the tests
//!   compare it, pair for pair, with that form kept verbatim, at every vector width).
//! * [`imfs`]: the incremental variant: the previous plan's pairs that are still valid are
//!   inherited, except where an unmatched job values that machine more, where the held job values
//!   a machine left free more (repeated while machines are released), or where two held jobs gain
//!   by exchanging their machines (the short alternating paths and cycles of the seed's IMFS);
//!   the exact algorithm then matches only the released and remaining machines and jobs. Its cost
//!   falls with the number of machines that change between two events; it is an approximation of
//!   [`mfs`] (longer exchange cycles are not searched).

/// A dense preference matrix: `rows` jobs × `cols` machines, row-major; entries ≤ 0 are not arcs.
#[derive(Clone, Debug, PartialEq)]
pub struct Matrix {
    /// Jobs.
    pub rows: usize,
    /// Machines.
    pub cols: usize,
    /// `p[i * cols + m]`.
    pub p: Vec<f64>,
}

impl Matrix {
    /// A zero matrix.
    pub fn zeros(rows: usize, cols: usize) -> Matrix {
        Matrix {
            rows,
            cols,
            p: vec![0.0; rows * cols],
        }
    }

    /// Entry (job `i`, machine `m`).
    pub fn at(&self, i: usize, m: usize) -> f64 {
        self.p[i * self.cols + m]
    }

    /// Mutable entry.
    pub fn at_mut(&mut self, i: usize, m: usize) -> &mut f64 {
        &mut self.p[i * self.cols + m]
    }
}

/// A matching: `job_of[m]` = the row matched to machine `m`.
pub type Assignment = Vec<Option<usize>>;

/// (number of pairs, total preference) of an assignment.
pub fn score(p: &Matrix, a: &Assignment) -> (usize, f64) {
    let mut n = 0;
    let mut w = 0.0;
    for (m, j) in a.iter().enumerate() {
        if let Some(i) = j {
            n += 1;
            w += p.at(*i, m);
        }
    }
    (n, w)
}

/// Each machine's `k` best jobs among `jobs` (preference descending, then lower row): the arcs
/// a matching needs when only `k` machines take part.
///
/// Why it is enough, for MFS: take an optimal matching with the most pairs inside these lists and
/// suppose machine `m` holds a job `i` outside its list. The list has `k` jobs and at most `k − 1`
/// of them are held by the other machines, so one, `j`, is free; `j` instead of `i` on `m` keeps
/// the cardinality and does not lower the weight (`p[j][m] ≥ p[i][m]`), a matching as good with
/// one more pair inside the lists — a contradiction. For MIS the greedy result is the same arc
/// for arc: when the greedy reaches `(i, m)` with `m` free, every arc of `m`'s list came earlier
/// and was skipped because its job was taken, i.e. `k` jobs taken by at most `k − 1` machines.
fn top_arcs(p: &Matrix, machines: &[usize], jobs: &[usize], k: usize) -> Vec<Vec<usize>> {
    machines
        .iter()
        .map(|&m| {
            let mut arcs: Vec<usize> = jobs.iter().copied().filter(|&i| p.at(i, m) > 0.0).collect();
            if arcs.len() > k {
                let by_rank =
                    |a: &usize, b: &usize| p.at(*b, m).total_cmp(&p.at(*a, m)).then(a.cmp(b));
                arcs.select_nth_unstable_by(k - 1, by_rank);
                arcs.truncate(k);
            }
            arcs
        })
        .collect()
}

/// The greedy MIS.
pub fn mis(p: &Matrix) -> Assignment {
    let machines: Vec<usize> = (0..p.cols).collect();
    let jobs: Vec<usize> = (0..p.rows).collect();
    let mut arcs: Vec<(f64, usize, usize)> = top_arcs(p, &machines, &jobs, p.cols)
        .into_iter()
        .enumerate()
        .flat_map(|(m, is)| is.into_iter().map(move |i| (p.at(i, m), i, m)))
        .collect();
    // (job, machine) pairs are distinct, so an unstable sort gives the one order.
    arcs.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then((a.1, a.2).cmp(&(b.1, b.2))));
    let mut job_of = vec![None; p.cols];
    let mut used = vec![false; p.rows];
    for (_, i, m) in arcs {
        if !used[i] && job_of[m].is_none() {
            used[i] = true;
            job_of[m] = Some(i);
        }
    }
    job_of
}

/// The exact matching of `machines` to `jobs`, written into an assignment.
type Matcher = fn(&Matrix, &[usize], &[usize], &mut Assignment);

/// The exact MFS.
pub fn mfs(p: &Matrix) -> Assignment {
    mfs_with(p, hungarian)
}

fn mfs_with(p: &Matrix, exact: Matcher) -> Assignment {
    let machines: Vec<usize> = (0..p.cols).collect();
    let jobs: Vec<usize> = (0..p.rows).collect();
    let mut out = vec![None; p.cols];
    exact(p, &machines, &jobs, &mut out);
    out
}

/// IMFS from the `previous` assignment (rows of the same matrix; pairs no longer arcs are dropped).
pub fn imfs(p: &Matrix, previous: &Assignment) -> Assignment {
    imfs_with(p, previous, hungarian)
}

fn imfs_with(p: &Matrix, previous: &Assignment, exact: Matcher) -> Assignment {
    let mut out = vec![None; p.cols];
    let mut job_taken = vec![false; p.rows];
    // Inherit valid pairs first, then release those some other job values more.
    for (m, j) in previous.iter().enumerate().take(p.cols) {
        if let Some(i) = *j
            && i < p.rows
            && !job_taken[i]
            && p.at(i, m) > 0.0
        {
            out[m] = Some(i);
            job_taken[i] = true;
        }
    }
    for (m, slot) in out.iter_mut().enumerate() {
        if let Some(i) = *slot {
            let mine = p.at(i, m);
            let contested = (0..p.rows).any(|k| !job_taken[k] && p.at(k, m) > mine);
            if contested {
                *slot = None;
                job_taken[i] = false;
            }
        }
    }
    // An inherited job that values a machine left free more than its own moves (the one-arc
    // even paths of the seed's IMFS, e.g. a job going to a faster machine that just freed).
    // A machine released this way is free for the next pass, until nothing moves.
    let mut free: Vec<usize> = (0..p.cols).filter(|&m| out[m].is_none()).collect();
    loop {
        let mut released = Vec::new();
        for (m, slot) in out.iter_mut().enumerate() {
            if let Some(i) = *slot {
                let mine = p.at(i, m);
                if free.iter().any(|&f| p.at(i, f) > mine) {
                    *slot = None;
                    job_taken[i] = false;
                    released.push(m);
                }
            }
        }
        if released.is_empty() {
            break;
        }
        free = released;
    }
    // Two inherited pairs that gain by exchanging their machines (the two-arc even cycles) are
    // both released.
    let held: Vec<(usize, usize)> = (0..p.cols).filter_map(|m| out[m].map(|i| (m, i))).collect();
    let mut release = vec![false; p.cols];
    for (a, &(m, i)) in held.iter().enumerate() {
        for &(m2, k) in &held[a + 1..] {
            let (x, y) = (p.at(k, m), p.at(i, m2));
            if x > 0.0 && y > 0.0 && x + y > p.at(i, m) + p.at(k, m2) {
                release[m] = true;
                release[m2] = true;
            }
        }
    }
    for m in 0..p.cols {
        if release[m]
            && let Some(i) = out[m].take()
        {
            job_taken[i] = false;
        }
    }
    let machines: Vec<usize> = (0..p.cols).filter(|&m| out[m].is_none()).collect();
    let jobs: Vec<usize> = (0..p.rows).filter(|&i| !job_taken[i]).collect();
    exact(p, &machines, &jobs, &mut out);
    out
}

/// Maximum-cardinality, then maximum-weight assignment of `machines` to `jobs` (sub-matrix),
/// written into `out`.
fn hungarian(p: &Matrix, machines: &[usize], jobs: &[usize], out: &mut Assignment) {
    let rows = |i: usize| &p.p[i * p.cols..(i + 1) * p.cols];
    // Every machine of the matrix takes part (the first plan): its rows can be read whole.
    let all_machines =
        machines.len() == p.cols && machines.iter().enumerate().all(|(k, &m)| k == m);
    // Each machine's arcs among the jobs, counted along the matrix's rows (whole rows when every
    // machine takes part: one vectorised pass).
    let mut arcs = vec![0usize; p.cols];
    for &i in jobs {
        let row = rows(i);
        if all_machines {
            for (a, &x) in arcs.iter_mut().zip(row) {
                *a += usize::from(x > 0.0);
            }
        } else {
            for &m in machines {
                arcs[m] += usize::from(row[m] > 0.0);
            }
        }
    }
    // Only machines and jobs with at least one arc between them take part.
    let machines: Vec<usize> = machines.iter().copied().filter(|&m| arcs[m] > 0).collect();
    // Only the jobs in some machine's best `|machines|` can be needed (see `top_arcs`): with many
    // more jobs than machines this shrinks the columns the Hungarian scans at every step. A
    // machine with no more arcs than that keeps them all; only the others select.
    let k = machines.len();
    let (few, many): (Vec<usize>, Vec<usize>) = machines.iter().partition(|&&m| arcs[m] <= k);
    let mut wanted = vec![false; p.rows];
    for &i in jobs {
        let row = rows(i);
        wanted[i] = few.iter().any(|&m| row[m] > 0.0);
    }
    for list in top_arcs(p, &many, jobs, k) {
        for i in list {
            wanted[i] = true;
        }
    }
    let jobs: Vec<usize> = jobs.iter().copied().filter(|&i| wanted[i]).collect();
    let (machines, jobs) = (machines.as_slice(), jobs.as_slice());
    if machines.is_empty() || jobs.is_empty() {
        return;
    }
    // The largest entry (the maximum of the same values in any order: `f64::max` passes over NaN
    // and only the sign of a zero could depend on the order, which no positive maximum has). When
    // every machine took part, the machines left out have no arc (entries ≤ 0 or NaN) and cannot
    // raise it, so the whole rows are read, eight running maxima at a time.
    let max_p = if all_machines {
        jobs.iter()
            .map(|&i| {
                let mut acc = [0.0f64; 8];
                let mut chunks = rows(i).chunks_exact(8);
                for chunk in &mut chunks {
                    for (a, &x) in acc.iter_mut().zip(chunk) {
                        *a = a.max(x);
                    }
                }
                chunks
                    .remainder()
                    .iter()
                    .chain(&acc)
                    .fold(0.0f64, |a, &x| a.max(x))
            })
            .fold(0.0f64, f64::max)
    } else {
        jobs.iter()
            .flat_map(|&i| {
                let row = rows(i);
                machines.iter().map(move |&m| row[m])
            })
            .fold(0.0f64, f64::max)
    };
    let big = max_p * (machines.len().min(jobs.len()) as f64 + 1.0) + 1.0;
    // The assignment runs over the smaller side as rows (its cost grows with rows² × columns).
    // A column without an arc costs 0 and such pairs are dropped below, so no dummy column is
    // needed: every row taking a distinct column at cost 0 or −(p + BIG), the cheapest
    // assignment is a best matching plus zero-cost fillers, and columns ≥ rows leaves enough
    // columns for the fillers.
    let weight = |v: f64| -> f64 { if v > 0.0 { -(v + big) } else { 0.0 } };
    let by_machine = machines.len() <= jobs.len();
    let (r, c) = if by_machine {
        (machines.len(), jobs.len())
    } else {
        (jobs.len(), machines.len())
    };
    // The costs, row-major over the assignment's rows: by jobs, a copy of the matrix's rows; by
    // machines, its transpose, eight jobs at a time (whole cache lines written).
    let mut cost = vec![0.0; r * c];
    if by_machine {
        for (b, block) in jobs.chunks(8).enumerate() {
            let src: Vec<&[f64]> = block.iter().map(|&i| rows(i)).collect();
            for (mi, &m) in machines.iter().enumerate() {
                let dst = &mut cost[mi * c + b * 8..mi * c + b * 8 + block.len()];
                for (d, row) in dst.iter_mut().zip(&src) {
                    *d = weight(row[m]);
                }
            }
        }
    } else {
        for (ji, &i) in jobs.iter().enumerate() {
            let row = rows(i);
            for (d, &m) in cost[ji * c..(ji + 1) * c].iter_mut().zip(machines) {
                *d = weight(row[m]);
            }
        }
    }
    for (a, b) in assign(r, c, &cost) {
        let (m, i) = if by_machine {
            (machines[a], jobs[b])
        } else {
            (machines[b], jobs[a])
        };
        if p.at(i, m) > 0.0 {
            out[m] = Some(i);
        }
    }
}

/// No column / no row.
const NONE: usize = usize::MAX;

/// One step of a row's search, as the scan saw it.
#[derive(Clone, Copy, Debug)]
struct Step {
    /// The row scanned.
    row: usize,
    /// Its potential then.
    u: f64,
    /// The column whose owner it is (`NONE`: the search's own row).
    from: usize,
    /// The amount the slacks were lowered by before the scan.
    lowered: f64,
}

/// A minimum-cost assignment of every row to a distinct column (`r ≤ c`, costs row-major):
/// shortest augmenting paths with potentials, one row at a time (Kuhn, Naval Research Logistics
/// Quarterly 2, 1955; the `O(r² · c)` form of Tomizawa, Networks 1, 1971, and of Jonker &
/// Volgenant, Computing 38, 1987, without their initialisation heuristics).
///
/// It performs, value for value, the floating-point operations of the textbook dense form (each
/// step relaxes every free column from the newly reached row, takes the lowest-numbered column of
/// least slack, then moves every potential and every slack by that amount), so that ties fall as
/// they always did; only the work is organised differently:
///
/// * the slacks of the free columns are lowered by a step's amount at the start of the next
///   step, in the same pass as the relaxation, instead of in a pass of their own; when that
///   amount is zero (most steps, as the search walks along tight arcs: 85 % of the
///   69,000 of the first 1,000 × 800 plan) the subtraction, which would return every value
///   unchanged but for the sign of a zero, is left out, and so are the potentials' moves by
///   that zero (the sign of a zero changes no comparison — `−0.0 == +0.0` — and no non-zero
///   result, so no decision);
/// * the same pass keeps, per lane, the least slack and the first column holding it, so the
///   lowest-numbered column of least slack needs no second pass; it keeps four such running
///   minima, one per vector of each group of four, so that a vector's comparison and selection
///   need not wait for the previous vector's, and takes the least of the four at the end (the
///   lower slack, the lower column among equals: the same column);
/// * the potentials of the reached rows and columns move through a list of the reached columns
///   rather than a scan of all of them;
/// * a reached column's slack is NaN, which fails every comparison, so the pass has no test of
///   whether a column is reached; "`cur` if `cur < slack`, else `slack`" is a comparison and a
///   selection, so the pass has no branch at all;
/// * the pass is written with `pulp`'s vectors and the whole search is compiled once per vector
///   width, the widest the processor has chosen at run time (x86-64 with AVX-512: eight doubles
///   at a time; with AVX2: four; otherwise `pulp`'s portable form): the same IEEE 754
///   subtractions and ordered comparisons, lane by lane, and no fused multiply-add can appear (there is no multiplication, and Rust never
///   contracts operations);
/// * the pass does not record from which column a slack last improved: the search records its
///   steps, and the few columns of the augmenting path replay them to find it (the same
///   operations on the same values, so the same answer);
/// * the costs are one dense row-major array.
///
/// Returns the (row, column) pairs.
fn assign(r: usize, c: usize, cost: &[f64]) -> Vec<(usize, usize)> {
    pulp::Arch::new().dispatch(Assign { r, c, cost })
}

/// An [`assign`] call for `pulp` to compile at each vector width and run at the widest present
/// (a closure would not be inlined into those variants, so it would keep the baseline width).
#[derive(Debug)]
struct Assign<'a> {
    r: usize,
    c: usize,
    cost: &'a [f64],
}

impl pulp::WithSimd for Assign<'_> {
    type Output = Vec<(usize, usize)>;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, simd: S) -> Self::Output {
        assign_in(simd, self.r, self.c, self.cost)
    }
}

/// [`assign`]'s body at the vector width of `simd`.
#[inline(always)]
fn assign_in<S: pulp::Simd>(simd: S, r: usize, c: usize, cost: &[f64]) -> Vec<(usize, usize)> {
    debug_assert!(r <= c && cost.len() == r * c);
    let inf = f64::INFINITY;
    let mut u = vec![0.0; r];
    let mut v = vec![0.0; c];
    let mut owner = vec![NONE; c];
    let mut minv = vec![inf; c];
    // The step at which a column was reached (the `k`-th column reached is reached by step `k`).
    let mut reached_at = vec![NONE; c];
    // Reached columns of the current row in the order reached, their rows, the potentials of
    // both as the search moves them; the steps.
    let mut reached: Vec<usize> = Vec::with_capacity(c);
    let mut reached_rows: Vec<usize> = Vec::with_capacity(c);
    let mut ru: Vec<f64> = Vec::with_capacity(c);
    let mut rv: Vec<f64> = Vec::with_capacity(c);
    let mut steps: Vec<Step> = Vec::with_capacity(c);
    for row in 0..r {
        minv.fill(inf);
        for &j in &reached {
            reached_at[j] = NONE;
        }
        reached.clear();
        reached_rows.clear();
        ru.clear();
        rv.clear();
        steps.clear();
        let mut step = Step {
            row,
            u: u[row],
            from: NONE,
            lowered: 0.0,
        };
        let last = loop {
            steps.push(step);
            let crow = &cost[step.row * c..(step.row + 1) * c];
            let (best, j1) = relax(simd, &mut minv, crow, &v, step.u, step.lowered);
            // The lowest-numbered free column of least slack (only an infinite least slack, which
            // finite costs never give, leaves it to the search below).
            let j1 = if j1 == NONE {
                minv.iter()
                    .position(|&m| m == best)
                    .expect("a free column remains while rows ≤ columns")
            } else {
                j1
            };
            let delta = minv[j1];
            if delta != 0.0 {
                u[row] += delta;
                for (ur, vr) in ru.iter_mut().zip(rv.iter_mut()) {
                    *ur += delta;
                    *vr -= delta;
                }
            }
            if owner[j1] == NONE {
                break j1;
            }
            reached_at[j1] = steps.len() - 1;
            reached.push(j1);
            reached_rows.push(owner[j1]);
            ru.push(u[owner[j1]]);
            rv.push(v[j1]);
            minv[j1] = f64::NAN;
            step = Step {
                row: owner[j1],
                u: u[owner[j1]],
                from: j1,
                lowered: delta,
            };
        };

        // Augment along the way back to the row: each column's predecessor is the column of the
        // last step that strictly lowered its slack, found by replaying the steps up to the one
        // that reached it.
        let mut j = last;
        loop {
            // Reached columns have their potential of the search still (written back below).
            let upto = if j == last {
                steps.len() - 1
            } else {
                reached_at[j]
            };
            let vj = v[j];
            let mut m = inf;
            let mut prev = NONE;
            for s in &steps[..=upto] {
                m -= s.lowered;
                let cur = cost[s.row * c + j] - s.u - vj;
                if cur < m {
                    m = cur;
                    prev = s.from;
                }
            }
            if prev == NONE {
                owner[j] = row;
                break;
            }
            owner[j] = owner[prev];
            j = prev;
        }
        // The potentials of the reached columns and their rows, moved in their own arrays (the
        // rows are read before the augmentation changed the owners).
        for (k, &j) in reached.iter().enumerate() {
            u[reached_rows[k]] = ru[k];
            v[j] = rv[k];
        }
    }
    (0..c)
        .filter(|&col| owner[col] != NONE)
        .map(|col| (owner[col], col))
        .collect()
}

/// One step's pass over the columns: every slack lowered by the previous step's amount
/// `lowered`, then relaxed from the row reached (costs `crow`, potential `ui`); returns the least
/// slack and the first column holding it (`NONE` when the least slack is infinite or every
/// column is reached). Written with `pulp`'s vectors, whose comparisons are IEEE 754's ordered
/// "less than" (false with NaN) and whose selections are bit for bit, so each lane computes what
/// "`m - lowered`, then `cur` if `cur < m` else `m`" computes on one column.
#[inline(always)]
fn relax<S: pulp::Simd>(
    simd: S,
    minv: &mut [f64],
    crow: &[f64],
    v: &[f64],
    ui: f64,
    lowered: f64,
) -> (f64, usize) {
    use pulp::bytemuck::{cast_slice, cast_slice_mut};
    let inf = f64::INFINITY;
    let (mh, mt) = S::as_mut_simd_f64s(minv);
    let (ch, ct) = S::as_simd_f64s(crow);
    let (vh, vt) = S::as_simd_f64s(v);
    let whole = mh.len() * S::F64_LANES;
    let uis = simd.splat_f64s(ui);
    let by = simd.splat_f64s(lowered);
    let mut ids = simd.splat_u64s(0);
    for (k, x) in cast_slice_mut::<S::u64s, u64>(std::slice::from_mut(&mut ids))
        .iter_mut()
        .enumerate()
    {
        *x = k as u64;
    }
    let next = simd.splat_u64s(S::F64_LANES as u64);
    // One vector of columns: lowered (when `LOWER`), relaxed, stored, and folded into the running
    // minimum `acc` and its columns `at`. `x - +0.0` and `x - −0.0` differ from `x` at most in
    // the sign of a zero, which no comparison sees and no later non-zero result keeps, so both
    // zeros are left out.
    #[inline(always)]
    fn one<S: pulp::Simd, const LOWER: bool>(
        simd: S,
        m: &mut S::f64s,
        (cc, vv): (S::f64s, S::f64s),
        (uis, by): (S::f64s, S::f64s),
        (acc, at, ids): (&mut S::f64s, &mut S::u64s, S::u64s),
    ) {
        let low = if LOWER { simd.sub_f64s(*m, by) } else { *m };
        let cur = simd.sub_f64s(simd.sub_f64s(cc, uis), vv);
        let x = simd.select_f64s(simd.less_than_f64s(cur, low), cur, low);
        *m = x;
        let less = simd.less_than_f64s(x, *acc);
        *acc = simd.select_f64s(less, x, *acc);
        *at = simd.select_u64s(less, ids, *at);
    }
    // The least of two (slack, column) vectors, lane by lane: the lower slack, the lower column
    // among equal slacks (no lane holds NaN).
    #[inline(always)]
    fn least<S: pulp::Simd>(
        simd: S,
        (a, t): (S::f64s, S::u64s),
        (b, u): (S::f64s, S::u64s),
    ) -> (S::f64s, S::u64s) {
        let take = simd.or_m64s(
            simd.less_than_f64s(b, a),
            simd.and_m64s(simd.equal_f64s(b, a), simd.less_than_u64s(u, t)),
        );
        (simd.select_f64s(take, b, a), simd.select_u64s(take, u, t))
    }
    // Four vectors at a time, each into its own running minimum (so that one vector's comparison
    // and selection need not wait for the previous one's); the vectors left over into the first
    // (each minimum still sees its columns in increasing order); then the least of the four.
    #[inline(always)]
    fn pass<S: pulp::Simd, const LOWER: bool>(
        simd: S,
        mh: &mut [S::f64s],
        ch: &[S::f64s],
        vh: &[S::f64s],
        k: (S::f64s, S::f64s),
        (mut ids, next): (S::u64s, S::u64s),
    ) -> (S::f64s, S::u64s) {
        let inf = simd.splat_f64s(f64::INFINITY);
        let none = simd.splat_u64s(NONE as u64);
        let (mut a0, mut a1, mut a2, mut a3) = (inf, inf, inf, inf);
        let (mut t0, mut t1, mut t2, mut t3) = (none, none, none, none);
        let mut ms = mh.chunks_exact_mut(4);
        let mut cs = ch.chunks_exact(4);
        let mut vs = vh.chunks_exact(4);
        for ((m, c), v) in (&mut ms).zip(&mut cs).zip(&mut vs) {
            let ids1 = simd.add_u64s(ids, next);
            let ids2 = simd.add_u64s(ids1, next);
            let ids3 = simd.add_u64s(ids2, next);
            one::<S, LOWER>(simd, &mut m[0], (c[0], v[0]), k, (&mut a0, &mut t0, ids));
            one::<S, LOWER>(simd, &mut m[1], (c[1], v[1]), k, (&mut a1, &mut t1, ids1));
            one::<S, LOWER>(simd, &mut m[2], (c[2], v[2]), k, (&mut a2, &mut t2, ids2));
            one::<S, LOWER>(simd, &mut m[3], (c[3], v[3]), k, (&mut a3, &mut t3, ids3));
            ids = simd.add_u64s(ids3, next);
        }
        let rest = ms
            .into_remainder()
            .iter_mut()
            .zip(cs.remainder())
            .zip(vs.remainder());
        for ((m, &c), &v) in rest {
            one::<S, LOWER>(simd, m, (c, v), k, (&mut a0, &mut t0, ids));
            ids = simd.add_u64s(ids, next);
        }
        least(
            simd,
            least(simd, (a0, t0), (a1, t1)),
            least(simd, (a2, t2), (a3, t3)),
        )
    }
    let (acc, at) = if lowered == 0.0 {
        pass::<S, false>(simd, mh, ch, vh, (uis, by), (ids, next))
    } else {
        pass::<S, true>(simd, mh, ch, vh, (uis, by), (ids, next))
    };
    // Each lane holds its first column of least slack; the least over the lanes, the lowest
    // column among equals, then the columns past the last whole vector (higher-numbered, so only
    // a strictly lower slack replaces it).
    let mut best = inf;
    let mut j1 = NONE;
    let accs: &[f64] = cast_slice(std::slice::from_ref(&acc));
    let ats: &[u64] = cast_slice(std::slice::from_ref(&at));
    for (&a, &j) in accs.iter().zip(ats) {
        let j = j as usize;
        if a < best || (a == best && j < j1) {
            best = a;
            j1 = j;
        }
    }
    for (k, ((m, &cc), &vv)) in mt.iter_mut().zip(ct).zip(vt).enumerate() {
        let low = *m - lowered;
        let cur = cc - ui - vv;
        let x = if cur < low { cur } else { low };
        *m = x;
        if x < best {
            best = x;
            j1 = whole + k;
        }
    }
    (best, j1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn brute(p: &Matrix) -> (usize, f64) {
        fn rec(
            p: &Matrix,
            m: usize,
            used: &mut Vec<bool>,
            acc: (usize, f64),
            best: &mut (usize, f64),
        ) {
            if m == p.cols {
                if acc.0 > best.0 || (acc.0 == best.0 && acc.1 > best.1 + 1e-9) {
                    *best = acc;
                }
                return;
            }
            rec(p, m + 1, used, acc, best);
            for i in 0..p.rows {
                if !used[i] && p.at(i, m) > 0.0 {
                    used[i] = true;
                    rec(p, m + 1, used, (acc.0 + 1, acc.1 + p.at(i, m)), best);
                    used[i] = false;
                }
            }
        }
        let mut best = (0, 0.0);
        rec(p, 0, &mut vec![false; p.rows], (0, 0.0), &mut best);
        best
    }

    fn random(rng: &mut ChaCha8Rng) -> Matrix {
        let rows = rng.random_range(1..=6);
        let cols = rng.random_range(1..=5);
        let mut m = Matrix::zeros(rows, cols);
        for x in &mut m.p {
            if rng.random_bool(0.6) {
                *x = f64::from(rng.random_range(1..=20u32));
            }
        }
        m
    }

    fn valid(p: &Matrix, a: &Assignment) {
        let mut seen = vec![false; p.rows];
        for (m, j) in a.iter().enumerate() {
            if let Some(i) = j {
                assert!(p.at(*i, m) > 0.0, "pairs only on arcs");
                assert!(!seen[*i], "one machine per job");
                seen[*i] = true;
            }
        }
    }

    #[test]
    fn mfs_is_optimal_against_brute_force() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for _ in 0..500 {
            let p = random(&mut rng);
            let a = mfs(&p);
            valid(&p, &a);
            let (n, w) = score(&p, &a);
            let (bn, bw) = brute(&p);
            assert_eq!(n, bn, "maximum cardinality on {p:?}");
            assert!((w - bw).abs() < 1e-6, "maximum weight {w} vs {bw} on {p:?}");
        }
    }

    #[test]
    fn mis_and_imfs_are_valid_and_never_beat_mfs() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let mut imfs_optimal = 0;
        for _ in 0..500 {
            let p = random(&mut rng);
            let best = score(&p, &mfs(&p));
            let g = mis(&p);
            valid(&p, &g);
            let s = score(&p, &g);
            assert!(s.0 <= best.0 && (s.0 < best.0 || s.1 <= best.1 + 1e-9));
            // IMFS from a random earlier plan (the MIS one).
            let a = imfs(&p, &g);
            valid(&p, &a);
            let s = score(&p, &a);
            assert!(s.0 <= best.0);
            if s.0 == best.0 && (s.1 - best.1).abs() < 1e-9 {
                imfs_optimal += 1;
            }
            // From the optimal plan IMFS keeps it.
            assert_eq!(score(&p, &imfs(&p, &mfs(&p))).0, best.0);
        }
        assert!(
            imfs_optimal > 300,
            "IMFS is usually optimal: {imfs_optimal}/500"
        );
    }

    /// The greedy over every arc, without the per-machine lists.
    fn naive_mis(p: &Matrix) -> Assignment {
        let mut arcs: Vec<(usize, usize)> = (0..p.rows)
            .flat_map(|i| (0..p.cols).map(move |m| (i, m)))
            .filter(|&(i, m)| p.at(i, m) > 0.0)
            .collect();
        arcs.sort_by(|a, b| p.at(b.0, b.1).total_cmp(&p.at(a.0, a.1)).then(a.cmp(b)));
        let mut job_of = vec![None; p.cols];
        let mut used = vec![false; p.rows];
        for (i, m) in arcs {
            if !used[i] && job_of[m].is_none() {
                used[i] = true;
                job_of[m] = Some(i);
            }
        }
        job_of
    }

    #[test]
    fn many_more_jobs_than_machines_keep_the_optimum_and_the_greedy() {
        // Rows far beyond the columns, few distinct values (many ties): the per-machine lists of
        // the best |machines| jobs must change neither MFS's optimum nor MIS's pairs.
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for _ in 0..400 {
            let rows = rng.random_range(5..=14);
            let cols = rng.random_range(1..=4);
            let mut p = Matrix::zeros(rows, cols);
            for x in &mut p.p {
                if rng.random_bool(0.5) {
                    *x = f64::from(rng.random_range(1..=4u32));
                }
            }
            assert_eq!(mis(&p), naive_mis(&p), "MIS on {p:?}");
            let a = mfs(&p);
            valid(&p, &a);
            let (n, w) = score(&p, &a);
            let (bn, bw) = brute(&p);
            assert_eq!(n, bn, "cardinality on {p:?}");
            assert!((w - bw).abs() < 1e-9, "weight {w} vs {bw} on {p:?}");
            let i = imfs(&p, &a);
            valid(&p, &i);
            assert_eq!(score(&p, &i).0, bn);
        }
    }

    #[test]
    fn imfs_moves_a_held_job_to_a_freed_machine_it_prefers() {
        // Job 0 held machine 0 (worth 1); machine 1 is free and worth 5 to it.
        let mut p = Matrix::zeros(1, 2);
        *p.at_mut(0, 0) = 1.0;
        *p.at_mut(0, 1) = 5.0;
        assert_eq!(imfs(&p, &vec![Some(0), None]), vec![None, Some(0)]);
        // A chain: job 1 leaves machine 1 for the free machine 2, then job 0 takes machine 1.
        let mut p = Matrix::zeros(2, 3);
        *p.at_mut(0, 0) = 1.0;
        *p.at_mut(0, 1) = 5.0;
        *p.at_mut(1, 1) = 1.0;
        *p.at_mut(1, 2) = 5.0;
        assert_eq!(
            imfs(&p, &vec![Some(0), Some(1), None]),
            vec![None, Some(0), Some(1)]
        );
    }

    #[test]
    fn imfs_exchanges_two_held_jobs_that_gain_by_it() {
        // No free machine and no unmatched job: only the exchange improves (2 → 10).
        let mut p = Matrix::zeros(2, 2);
        *p.at_mut(0, 0) = 1.0;
        *p.at_mut(0, 1) = 5.0;
        *p.at_mut(1, 0) = 5.0;
        *p.at_mut(1, 1) = 1.0;
        assert_eq!(imfs(&p, &vec![Some(0), Some(1)]), vec![Some(1), Some(0)]);
        // Held pairs that would lose by exchanging stay (no recomputation).
        assert_eq!(imfs(&p, &vec![Some(1), Some(0)]), vec![Some(1), Some(0)]);
    }

    // The exact matching as it was written before this module's [`assign`], kept verbatim as the
    // reference of the differential tests.

    /// Maximum-cardinality, then maximum-weight assignment of `machines` to `jobs` (sub-matrix),
    /// written into `out`.
    fn reference_hungarian(p: &Matrix, machines: &[usize], jobs: &[usize], out: &mut Assignment) {
        // Only machines and jobs with at least one arc between them take part.
        let machines: Vec<usize> = machines
            .iter()
            .copied()
            .filter(|&m| jobs.iter().any(|&i| p.at(i, m) > 0.0))
            .collect();
        // Only the jobs in some machine's best `|machines|` can be needed (see `top_arcs`): with many
        // more jobs than machines this shrinks the columns the Hungarian scans at every step.
        let mut wanted = vec![false; p.rows];
        for arcs in top_arcs(p, &machines, jobs, machines.len()) {
            for i in arcs {
                wanted[i] = true;
            }
        }
        let jobs: Vec<usize> = jobs.iter().copied().filter(|&i| wanted[i]).collect();
        let (machines, jobs) = (machines.as_slice(), jobs.as_slice());
        if machines.is_empty() || jobs.is_empty() {
            return;
        }
        let max_p = machines
            .iter()
            .flat_map(|&m| jobs.iter().map(move |&i| p.at(i, m)))
            .fold(0.0f64, f64::max);
        let big = max_p * (machines.len().min(jobs.len()) as f64 + 1.0) + 1.0;
        // The assignment runs over the smaller side as rows (its cost grows with rows² × columns).
        // A column without an arc costs 0 and such pairs are dropped below, so no dummy column is
        // needed: every row taking a distinct column at cost 0 or −(p + BIG), the cheapest
        // assignment is a best matching plus zero-cost fillers, and columns ≥ rows leaves enough
        // columns for the fillers.
        let weight = |m: usize, i: usize| -> f64 {
            let v = p.at(jobs[i], machines[m]);
            if v > 0.0 { -(v + big) } else { 0.0 }
        };
        let pairs: Vec<(usize, usize)> = if machines.len() <= jobs.len() {
            reference_assign_by(machines.len(), jobs.len(), weight)
        } else {
            reference_assign_by(jobs.len(), machines.len(), |i, m| weight(m, i))
                .into_iter()
                .map(|(i, m)| (m, i))
                .collect()
        };
        for (m, i) in pairs {
            let (m, i) = (machines[m], jobs[i]);
            if p.at(i, m) > 0.0 {
                out[m] = Some(i);
            }
        }
    }

    /// A minimum-cost assignment of every row to a distinct column (`r ≤ c`): shortest augmenting
    /// paths with potentials (the classic `O(r² · c)` Hungarian, 1-based with a virtual column 0).
    /// Returns the (row, column) pairs.
    fn reference_assign_by(
        r: usize,
        c: usize,
        cost: impl Fn(usize, usize) -> f64,
    ) -> Vec<(usize, usize)> {
        debug_assert!(r <= c);
        let inf = f64::INFINITY;
        let mut u = vec![0.0; r + 1];
        let mut v = vec![0.0; c + 1];
        let mut owner = vec![0usize; c + 1];
        let mut way = vec![0usize; c + 1];
        let mut minv = vec![inf; c + 1];
        let mut used = vec![false; c + 1];
        for row in 1..=r {
            owner[0] = row;
            let mut j0 = 0usize;
            minv.fill(inf);
            used.fill(false);
            loop {
                used[j0] = true;
                let i0 = owner[j0];
                let mut delta = inf;
                let mut j1 = 0usize;
                for j in 1..=c {
                    if !used[j] {
                        let cur = cost(i0 - 1, j - 1) - u[i0] - v[j];
                        if cur < minv[j] {
                            minv[j] = cur;
                            way[j] = j0;
                        }
                        if minv[j] < delta {
                            delta = minv[j];
                            j1 = j;
                        }
                    }
                }
                for j in 0..=c {
                    if used[j] {
                        u[owner[j]] += delta;
                        v[j] -= delta;
                    } else {
                        minv[j] -= delta;
                    }
                }
                j0 = j1;
                if owner[j0] == 0 {
                    break;
                }
            }
            loop {
                let j1 = way[j0];
                owner[j0] = owner[j1];
                j0 = j1;
                if j0 == 0 {
                    break;
                }
            }
        }
        (1..=c)
            .filter(|&col| owner[col] > 0)
            .map(|col| (owner[col] - 1, col - 1))
            .collect()
    }

    fn reference_assign(r: usize, c: usize, costs: &[f64]) -> Vec<(usize, usize)> {
        reference_assign_by(r, c, |i, j| costs[i * c + j])
    }

    /// A random cost matrix shaped like the matching's: `0` (no arc) or `−(p + BIG)`; `p` drawn
    /// from few integers (many ties), or reals, or columns repeating earlier ones (alike machines).
    fn random_costs(rng: &mut ChaCha8Rng, r: usize, c: usize) -> Vec<f64> {
        let kind = rng.random_range(0..3);
        let density = rng.random_range(0.1..=1.0);
        let mut p = vec![0.0; r * c];
        for j in 0..c {
            let copy = (kind == 2 && j > 0 && rng.random_bool(0.5)).then(|| rng.random_range(0..j));
            for i in 0..r {
                p[i * c + j] = match copy {
                    Some(k) => p[i * c + k],
                    None if rng.random_bool(density) => match kind {
                        0 => f64::from(rng.random_range(1..=3u32)),
                        _ => rng.random_range(1e-9..30.0),
                    },
                    None => 0.0,
                };
            }
        }
        let big = p.iter().copied().fold(0.0f64, f64::max) * (r as f64 + 1.0) + 1.0;
        p.iter()
            .map(|&x| if x > 0.0 { -(x + big) } else { 0.0 })
            .collect()
    }

    #[test]
    fn the_assignment_is_the_reference_pair_for_pair() {
        // Shapes around the eight-column blocks, square and wide, with ties, zeros and alike
        // columns: the pairs must be the very ones of the textbook form.
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for t in 0..3_000 {
            let big = t % 10 == 0;
            let r = rng.random_range(1..=if big { 60 } else { 12 });
            let c = r + rng.random_range(0..=if big { 40 } else { 10 });
            let cost = random_costs(&mut rng, r, c);
            assert_eq!(
                assign(r, c, &cost),
                reference_assign(r, c, &cost),
                "{r} x {c}: {cost:?}"
            );
        }
    }

    /// The shapes of preference matrices the differential properties draw: `(kind, density)`
    /// per matrix, then each entry from a seed; kinds: 0 few integers (many ties), 1 reals, 2 every
    /// arc the same weight, 3 columns and rows repeating earlier ones (alike machines and jobs).
    /// Whole rows and columns are emptied at random (jobs and machines without an arc).
    fn drawn_matrix(rows: usize, cols: usize, kind: u8, density: f64, seed: u64) -> Matrix {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut p = Matrix::zeros(rows, cols);
        for m in 0..cols {
            let copy = (kind == 3 && m > 0 && rng.random_bool(0.5)).then(|| rng.random_range(0..m));
            for i in 0..rows {
                *p.at_mut(i, m) = match copy {
                    Some(k) => p.at(i, k),
                    None if rng.random_bool(density) => match kind {
                        0 | 3 => f64::from(rng.random_range(1..=3u32)),
                        1 => rng.random_range(1e-9..30.0),
                        _ => 1.0,
                    },
                    None => 0.0,
                };
            }
        }
        if kind == 3 {
            for i in 1..rows {
                if rng.random_bool(0.3) {
                    let k = rng.random_range(0..i);
                    for m in 0..cols {
                        *p.at_mut(i, m) = p.at(k, m);
                    }
                }
            }
        }
        for i in 0..rows {
            if rng.random_bool(0.1) {
                (0..cols).for_each(|m| *p.at_mut(i, m) = 0.0);
            }
        }
        for m in 0..cols {
            if rng.random_bool(0.1) {
                (0..rows).for_each(|i| *p.at_mut(i, m) = 0.0);
            }
        }
        p
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// The assignment, dispatched (AVX-512 or AVX2 where present), with AVX2 and portable,
        /// against the textbook form, on costs shaped like the matching's (`0`, also `−0.0`, or
        /// `−(p + BIG)`), square and wide, around the eight-column blocks.
        #[test]
        fn the_assignment_is_the_textbook_form_on_drawn_costs(
            r in 1usize..=24,
            extra in 0usize..=20,
            kind in 0u8..4,
            density in 0.0f64..=1.0,
            negative_zeros in any::<bool>(),
            seed in any::<u64>(),
        ) {
            let c = r + extra;
            let p = drawn_matrix(r, c, kind, density, seed);
            let big = p.p.iter().copied().fold(0.0f64, f64::max) * (r as f64 + 1.0) + 1.0;
            let zero = if negative_zeros { -0.0 } else { 0.0 };
            let cost: Vec<f64> =
                p.p.iter().map(|&x| if x > 0.0 { -(x + big) } else { zero }).collect();
            let expected = reference_assign(r, c, &cost);
            prop_assert_eq!(assign(r, c, &cost), expected.clone());
            prop_assert_eq!(assign_in(pulp::Scalar::new(), r, c, &cost), expected.clone());
            #[cfg(target_arch = "x86_64")]
            {
                use pulp::Simd;
                if let Some(simd) = pulp::x86::V3::try_new() {
                    let pairs = Simd::vectorize(simd, Assign { r, c, cost: &cost });
                    prop_assert_eq!(pairs, expected);
                }
            }
        }

        /// MFS and IMFS against the plans of the textbook form, with more jobs than machines and
        /// more machines than jobs, ties, every weight equal, and jobs or machines without arcs.
        #[test]
        fn mfs_and_imfs_are_the_reference_plans_on_drawn_matrices(
            rows in 1usize..=20,
            cols in 1usize..=20,
            kind in 0u8..4,
            density in 0.0f64..=1.0,
            seed in any::<u64>(),
        ) {
            let p = drawn_matrix(rows, cols, kind, density, seed);
            let a = mfs(&p);
            prop_assert_eq!(&a, &mfs_with(&p, reference_hungarian));
            let mut shuffled = mis(&p);
            shuffled.rotate_left(seed as usize % cols);
            for prev in [a, mis(&p), shuffled, vec![None; cols]] {
                prop_assert_eq!(
                    imfs(&p, &prev),
                    imfs_with(&p, &prev, reference_hungarian)
                );
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]

        /// Larger shapes, past several blocks of four eight-lane vectors and with a remainder of
        /// whole vectors and of single columns: the assignment at every width, then MFS and IMFS,
        /// against the textbook form, with ties and many zero (non-arc) entries.
        #[test]
        fn larger_plans_are_the_textbook_form_at_every_width(
            rows in 1usize..=72,
            cols in 1usize..=72,
            kind in 0u8..4,
            density in prop_oneof![0.0f64..=0.2, 0.2f64..=1.0],
            seed in any::<u64>(),
        ) {
            let p = drawn_matrix(rows, cols, kind, density, seed);
            let (r, c) = (rows.min(cols), rows.max(cols));
            let big = p.p.iter().copied().fold(0.0f64, f64::max) * (r as f64 + 1.0) + 1.0;
            let cost: Vec<f64> = (0..r)
                .flat_map(|a| (0..c).map(move |b| if rows <= cols { (a, b) } else { (b, a) }))
                .map(|(i, m)| p.at(i, m))
                .map(|x| if x > 0.0 { -(x + big) } else { 0.0 })
                .collect();
            let expected = reference_assign(r, c, &cost);
            prop_assert_eq!(assign(r, c, &cost), expected.clone());
            prop_assert_eq!(assign_in(pulp::Scalar::new(), r, c, &cost), expected.clone());
            #[cfg(target_arch = "x86_64")]
            {
                use pulp::Simd;
                if let Some(simd) = pulp::x86::V3::try_new() {
                    let pairs = Simd::vectorize(simd, Assign { r, c, cost: &cost });
                    prop_assert_eq!(pairs, expected);
                }
            }
            let a = mfs(&p);
            prop_assert_eq!(&a, &mfs_with(&p, reference_hungarian));
            let mut shuffled = mis(&p);
            shuffled.rotate_left(seed as usize % cols);
            for prev in [a, mis(&p), shuffled, vec![None; cols]] {
                prop_assert_eq!(
                    imfs(&p, &prev),
                    imfs_with(&p, &prev, reference_hungarian)
                );
            }
        }
    }

    /// A preference matrix with alike machines (repeated columns), few distinct values or reals,
    /// and zeros.
    fn random_matrix(rng: &mut ChaCha8Rng) -> Matrix {
        let rows = rng.random_range(1..=30);
        let cols = rng.random_range(1..=30);
        let reals = rng.random_bool(0.5);
        let density = rng.random_range(0.2..=1.0);
        let mut p = Matrix::zeros(rows, cols);
        for m in 0..cols {
            let copy = (m > 0 && rng.random_bool(0.4)).then(|| rng.random_range(0..m));
            for i in 0..rows {
                *p.at_mut(i, m) = match copy {
                    Some(k) => p.at(i, k),
                    None if rng.random_bool(density) => {
                        if reals {
                            rng.random_range(1e-9..20.0)
                        } else {
                            f64::from(rng.random_range(1..=4u32))
                        }
                    }
                    None => 0.0,
                };
            }
        }
        p
    }

    #[test]
    fn mfs_and_imfs_are_the_reference_plans() {
        let mut rng = ChaCha8Rng::seed_from_u64(6);
        for _ in 0..1_500 {
            let p = random_matrix(&mut rng);
            let a = mfs(&p);
            assert_eq!(a, mfs_with(&p, reference_hungarian), "MFS on {p:?}");
            // IMFS from the exact plan, from the greedy one and from a shuffled one.
            let mut shuffled = mis(&p);
            shuffled.rotate_left(rng.random_range(0..p.cols));
            for prev in [a, mis(&p), shuffled] {
                assert_eq!(
                    imfs(&p, &prev),
                    imfs_with(&p, &prev, reference_hungarian),
                    "IMFS on {p:?} from {prev:?}"
                );
            }
        }
    }

    #[test]
    fn a_worked_example() {
        // Job 0 likes both machines, job 1 only machine 0: cardinality forces 0->m1, 1->m0,
        // although MIS takes the largest entry (0, m0) first and leaves job 1 out.
        let mut p = Matrix::zeros(2, 2);
        *p.at_mut(0, 0) = 10.0;
        *p.at_mut(0, 1) = 9.0;
        *p.at_mut(1, 0) = 1.0;
        assert_eq!(mfs(&p), vec![Some(1), Some(0)]);
        assert_eq!(mis(&p), vec![Some(0), None]);
        assert_eq!(score(&p, &mfs(&p)), (2, 10.0));
    }
}
