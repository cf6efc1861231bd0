//! The published figures the gang report stands beside ours: Table 1 of Zhang et al. (§6.6;
//! MPL 5, C = 0, unlimited Q) and the utilizations at the maximum acceptable slowdown of §6.3.

/// One row of Table 1: workload, then (ρ, s) of BGS, MBGS, GS, MGS and the two "% s better".
pub struct Table1Row {
    /// Workload k (run-time factor 1.0 + 0.1·k).
    pub workload: u32,
    /// BGS ρ and slowdown.
    pub bgs: (f64, f64),
    /// MBGS ρ and slowdown.
    pub mbgs: (f64, f64),
    /// BGS → MBGS, %.
    pub bgs_gain: f64,
    /// GS ρ and slowdown.
    pub gs: (f64, f64),
    /// MGS ρ and slowdown.
    pub mgs: (f64, f64),
    /// GS → MGS, %.
    pub gs_gain: f64,
}

const fn row(
    workload: u32,
    bgs: (f64, f64),
    mbgs: (f64, f64),
    bgs_gain: f64,
    gs: (f64, f64),
    mgs: (f64, f64),
    gs_gain: f64,
) -> Table1Row {
    Table1Row {
        workload,
        bgs,
        mbgs,
        bgs_gain,
        gs,
        mgs,
        gs_gain,
    }
}

/// Table 1 as printed.
pub const TABLE1: [Table1Row; 9] = [
    row(
        0,
        (0.55, 2.5),
        (0.55, 2.1),
        19.2,
        (0.55, 3.9),
        (0.55, 2.6),
        33.7,
    ),
    row(
        1,
        (0.61, 3.2),
        (0.61, 2.5),
        23.9,
        (0.61, 7.0),
        (0.61, 4.0),
        42.5,
    ),
    row(
        2,
        (0.66, 3.8),
        (0.66, 2.9),
        24.8,
        (0.66, 18.8),
        (0.66, 6.9),
        63.4,
    ),
    row(
        3,
        (0.72, 6.5),
        (0.72, 3.7),
        43.1,
        (0.72, 44.8),
        (0.72, 13.5),
        69.9,
    ),
    row(
        4,
        (0.77, 8.0),
        (0.77, 5.1),
        36.6,
        (0.78, 125.6),
        (0.77, 29.4),
        76.6,
    ),
    row(
        5,
        (0.83, 11.9),
        (0.83, 7.6),
        36.2,
        (0.83, 405.6),
        (0.83, 54.4),
        86.6,
    ),
    row(
        6,
        (0.89, 22.4),
        (0.88, 11.0),
        50.8,
        (0.86, 1738.0),
        (0.88, 134.2),
        92.3,
    ),
    row(
        7,
        (0.94, 34.9),
        (0.94, 20.9),
        40.2,
        (0.86, 4147.7),
        (0.94, 399.3),
        90.4,
    ),
    row(
        8,
        (0.96, 67.9),
        (0.98, 56.8),
        16.4,
        (0.86, 5941.5),
        (0.97, 1609.9),
        72.9,
    ),
];

/// §6.3: utilization reached at the maximum acceptable slowdown 20 (GS-5, BF, BGS-2, BGS-5).
pub const MAX_UTIL_AT_SLOWDOWN_20: [(&str, f64); 4] = [
    ("GS-5", 0.67),
    ("BF", 0.76),
    ("BGS-2", 0.82),
    ("BGS-5", 0.87),
];
