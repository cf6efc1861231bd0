//! The Ousterhout matrix of gang scheduling (Zhang et al., §5.1): MPL rows (time slices, each a
//! virtual machine) × one column per processor of the cluster's machine. Every job in the matrix
//! has one home row and possibly replicas in other rows, always on the same set of columns; a row
//! exists (takes part in the cycle) only while a job has it as home (spec G-A7(a)).
//!
//! Columns are kept as bit sets, so "are these columns free in that row" is a few word operations.

use crate::model::{JobId, Time};
use std::collections::BTreeMap;

/// A set of columns (processors), as bits.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Cols {
    words: Vec<u64>,
}

impl Cols {
    /// The empty set over `n` columns.
    pub fn empty(n: u32) -> Cols {
        Cols {
            words: vec![0; n.div_ceil(64) as usize],
        }
    }

    /// The set of the given columns.
    pub fn of(n: u32, cols: &[u32]) -> Cols {
        let mut c = Cols::empty(n);
        for &i in cols {
            c.insert(i);
        }
        c
    }

    /// Adds column `i`.
    pub fn insert(&mut self, i: u32) {
        self.words[(i / 64) as usize] |= 1 << (i % 64);
    }

    /// Whether column `i` is in the set.
    pub fn contains(&self, i: u32) -> bool {
        self.words[(i / 64) as usize] & (1 << (i % 64)) != 0
    }

    /// Whether the two sets share a column.
    pub fn overlaps(&self, o: &Cols) -> bool {
        self.words.iter().zip(&o.words).any(|(a, b)| a & b != 0)
    }

    /// Number of columns.
    pub fn len(&self) -> u32 {
        self.words.iter().map(|w| w.count_ones()).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    fn union_with(&mut self, o: &Cols) {
        for (a, b) in self.words.iter_mut().zip(&o.words) {
            *a |= b;
        }
    }

    fn remove_all(&mut self, o: &Cols) {
        for (a, b) in self.words.iter_mut().zip(&o.words) {
            *a &= !b;
        }
    }

    /// The columns, ascending.
    pub fn list(&self) -> Vec<u32> {
        let mut v = Vec::new();
        for (k, &w) in self.words.iter().enumerate() {
            let mut w = w;
            while w != 0 {
                let b = w.trailing_zeros();
                v.push(k as u32 * 64 + b);
                w &= w - 1;
            }
        }
        v
    }
}

/// A job placed in the matrix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placed {
    /// Its columns (the same in every row it occupies).
    pub cols: Cols,
    /// Its home row.
    pub home: usize,
    /// The rows it occupies (home and replicas), as bits.
    pub rows: u64,
    /// When it entered the matrix (the "starting time" that orders FillMatrix), then its id.
    pub placed: (Time, JobId),
}

/// The matrix: rows of occupied columns and the jobs placed in it.
#[derive(Clone, Debug)]
pub struct Matrix {
    n: u32,
    occupied: Vec<Cols>,
    /// Jobs whose home is each row.
    homes: Vec<u32>,
    jobs: BTreeMap<JobId, Placed>,
}

impl Matrix {
    /// An empty matrix of `mpl` rows over `n` columns.
    pub fn new(mpl: usize, n: u32) -> Matrix {
        Matrix {
            n,
            occupied: vec![Cols::empty(n); mpl],
            homes: vec![0; mpl],
            jobs: BTreeMap::new(),
        }
    }

    /// Columns.
    pub fn width(&self) -> u32 {
        self.n
    }

    /// Rows (the MPL).
    pub fn mpl(&self) -> usize {
        self.occupied.len()
    }

    /// The jobs placed, by id.
    pub fn jobs(&self) -> &BTreeMap<JobId, Placed> {
        &self.jobs
    }

    /// A placed job.
    pub fn get(&self, id: JobId) -> Option<&Placed> {
        self.jobs.get(&id)
    }

    /// Whether row `r` exists: some job has it as home.
    pub fn live(&self, r: usize) -> bool {
        self.homes[r] > 0
    }

    /// Occupied columns of row `r` (its population, G-A9).
    pub fn used(&self, r: usize) -> u32 {
        self.occupied[r].len()
    }

    /// Free columns of row `r`.
    pub fn free(&self, r: usize) -> u32 {
        self.n - self.used(r)
    }

    /// Whether every column of `cols` is free in row `r`.
    pub fn fits(&self, r: usize, cols: &Cols) -> bool {
        !self.occupied[r].overlaps(cols)
    }

    /// The occupied columns of row `r`.
    pub fn occupied(&self, r: usize) -> &Cols {
        &self.occupied[r]
    }

    /// The `k` lowest-indexed free columns of row `r` (G-A8), if it has that many.
    pub fn lowest_free(&self, r: usize, k: u32) -> Option<Cols> {
        self.lowest_free_avoiding(r, k, &Cols::empty(self.n))
    }

    /// The `k` lowest-indexed columns free in row `r` and not in `avoid`.
    pub fn lowest_free_avoiding(&self, r: usize, k: u32, avoid: &Cols) -> Option<Cols> {
        let mut c = Cols::empty(self.n);
        let mut got = 0;
        for i in 0..self.n {
            if got == k {
                break;
            }
            if !self.occupied[r].contains(i) && !avoid.contains(i) {
                c.insert(i);
                got += 1;
            }
        }
        (got == k).then_some(c)
    }

    /// The jobs occupying row `r` (home or replica), by id.
    pub fn in_row(&self, r: usize) -> Vec<JobId> {
        self.jobs
            .iter()
            .filter(|(_, p)| p.rows & (1 << r) != 0)
            .map(|(&id, _)| id)
            .collect()
    }

    /// The jobs whose home is row `r`, by id.
    pub fn homed_in(&self, r: usize) -> Vec<JobId> {
        self.jobs
            .iter()
            .filter(|(_, p)| p.home == r)
            .map(|(&id, _)| id)
            .collect()
    }

    /// Places a new job with home `r` on `cols` (which must be free there).
    pub fn place(&mut self, id: JobId, r: usize, cols: Cols, now: Time) {
        debug_assert!(self.fits(r, &cols));
        self.occupied[r].union_with(&cols);
        self.homes[r] += 1;
        self.jobs.insert(
            id,
            Placed {
                cols,
                home: r,
                rows: 1 << r,
                placed: (now, id),
            },
        );
    }

    /// Adds a replica of a placed job in row `r` (its columns must be free there).
    pub fn replicate(&mut self, id: JobId, r: usize) {
        let p = self.jobs.get_mut(&id).expect("placed");
        debug_assert!(!self.occupied[r].overlaps(&p.cols));
        self.occupied[r].union_with(&p.cols);
        p.rows |= 1 << r;
    }

    /// Removes a job's occurrence in row `r` (not its home row).
    pub fn unreplicate(&mut self, id: JobId, r: usize) {
        let p = self.jobs.get_mut(&id).expect("placed");
        debug_assert!(p.home != r && p.rows & (1 << r) != 0);
        self.occupied[r].remove_all(&p.cols);
        p.rows &= !(1 << r);
    }

    /// Moves a job occurring only in its home row to row `to`, on the same columns.
    pub fn rehome(&mut self, id: JobId, to: usize) {
        let p = self.jobs.get_mut(&id).expect("placed");
        let from = p.home;
        debug_assert_eq!(p.rows, 1 << from);
        self.occupied[from].remove_all(&p.cols);
        self.occupied[to].union_with(&p.cols);
        self.homes[from] -= 1;
        self.homes[to] += 1;
        p.home = to;
        p.rows = 1 << to;
    }

    /// Gives a job occurring in one row only new columns (and possibly a new home), a migration.
    pub fn recolumn(&mut self, id: JobId, to: usize, cols: Cols) {
        let p = self.jobs.get_mut(&id).expect("placed");
        let from = p.home;
        debug_assert_eq!(p.rows, 1 << from);
        self.occupied[from].remove_all(&p.cols);
        debug_assert!(!self.occupied[to].overlaps(&cols));
        self.occupied[to].union_with(&cols);
        self.homes[from] -= 1;
        self.homes[to] += 1;
        p.home = to;
        p.rows = 1 << to;
        p.cols = cols;
    }

    /// Gives jobs that occupy row `row` only new columns in that row, all at once (option 1 of a
    /// migration moves blockers aside; their new columns may be the ones another vacates).
    pub fn recolumn_in_row(&mut self, row: usize, moves: Vec<(JobId, Cols)>) {
        for (id, _) in &moves {
            let p = &self.jobs[id];
            debug_assert_eq!(p.rows, 1 << row);
            let old = p.cols.clone();
            self.occupied[row].remove_all(&old);
        }
        for (id, c) in moves {
            debug_assert!(!self.occupied[row].overlaps(&c));
            self.occupied[row].union_with(&c);
            self.jobs.get_mut(&id).expect("placed").cols = c;
        }
    }

    /// Removes a job from every row (it ended).
    pub fn remove(&mut self, id: JobId) -> Option<Placed> {
        let p = self.jobs.remove(&id)?;
        for r in 0..self.mpl() {
            if p.rows & (1 << r) != 0 {
                self.occupied[r].remove_all(&p.cols);
            }
        }
        self.homes[p.home] -= 1;
        Some(p)
    }

    /// Checks the matrix's own invariants: in every row the jobs present occupy disjoint columns
    /// and exactly the row's occupied set, every job occupies its home row, and the home counts
    /// are those of the jobs. The policy asserts it after every recomputation in debug builds.
    pub fn check(&self) -> Result<(), String> {
        let mut homes = vec![0u32; self.mpl()];
        for (id, p) in &self.jobs {
            if p.rows & (1 << p.home) == 0 {
                return Err(format!("job {id} is not in its home row {}", p.home));
            }
            homes[p.home] += 1;
        }
        if homes != self.homes {
            return Err(format!("home counts {:?}, jobs say {homes:?}", self.homes));
        }
        for r in 0..self.mpl() {
            let mut seen = Cols::empty(self.n);
            for (id, p) in self.jobs.iter().filter(|(_, p)| p.rows & (1 << r) != 0) {
                if seen.overlaps(&p.cols) {
                    return Err(format!("job {id} overlaps another job in row {r}"));
                }
                seen.union_with(&p.cols);
            }
            if seen != self.occupied[r] {
                return Err(format!("row {r}: occupied columns differ from its jobs'"));
            }
        }
        Ok(())
    }

    /// The matrix as text, one line per row, `.` for a free column and the job id's last digit
    /// otherwise (for tests and debugging).
    pub fn render(&self) -> Vec<String> {
        (0..self.mpl())
            .map(|r| {
                (0..self.n)
                    .map(|c| {
                        self.jobs
                            .iter()
                            .find(|(_, p)| p.rows & (1 << r) != 0 && p.cols.contains(c))
                            .map_or('.', |(id, _)| {
                                char::from_digit((id.0 % 10) as u32, 10).expect("a digit")
                            })
                    })
                    .collect()
            })
            .collect()
    }
}
