//! The per-cluster metrics of the two-level experiments (spec `two-level-grid-scheduler.md` D8.1:
//! workload share, deadline misses, slowdown and usage per cluster; D9.3–D9.4): their CSV
//! columns, and their lookup in a summary.

use super::Summary;

/// Clusters of the set-up.
pub const CLUSTERS: usize = 4;

/// Per-cluster metric names, as `[[c1, c2, c3, c4]; 8]`, in CSV order.
pub const PER_CLUSTER: [[&str; CLUSTERS]; 8] = [
    ["share_c1", "share_c2", "share_c3", "share_c4"],
    ["optimal_c1", "optimal_c2", "optimal_c3", "optimal_c4"],
    ["missed_c1", "missed_c2", "missed_c3", "missed_c4"],
    ["missed_n_c1", "missed_n_c2", "missed_n_c3", "missed_n_c4"],
    ["slowdown_c1", "slowdown_c2", "slowdown_c3", "slowdown_c4"],
    ["proc_c1", "proc_c2", "proc_c3", "proc_c4"],
    ["lic_c1", "lic_c2", "lic_c3", "lic_c4"],
    ["capacity_c1", "capacity_c2", "capacity_c3", "capacity_c4"],
];

/// Index of each per-cluster metric in [`PER_CLUSTER`].
pub const SHARE: usize = 0;
/// Optimal share.
pub const OPTIMAL: usize = 1;
/// % deadline misses.
pub const MISSED: usize = 2;
/// Number of deadline misses.
pub const MISSED_N: usize = 3;
/// Slowdown of no-deadline jobs.
pub const SLOWDOWN: usize = 4;
/// Processor usage.
pub const PROC: usize = 5;
/// Licence usage.
pub const LIC: usize = 6;
/// Share of the platform's processors × benchmark ([`super::shares`]).
pub const CAPACITY: usize = 7;

/// The mean per-cluster values of metric `k` for a configuration and Ta (NaN when absent).
pub fn per_cluster(s: &Summary, alg: &str, ta: f64, k: usize) -> [f64; CLUSTERS] {
    PER_CLUSTER[k].map(|m| s.get(alg, "", ta, m).unwrap_or(f64::NAN))
}
