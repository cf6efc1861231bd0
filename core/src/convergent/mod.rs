//! Convergent Scheduling (spec `two-level-grid-scheduler.md` D7): a job–machine preference matrix
//! built by seven heuristics ([`matrix`]), a licence pre-matching by knapsack ([`knapsack`]) and a
//! bipartite matching ([`matching`]; the thesis' incremental IMFS in [`imfs_tree`]), recomputed at
//! every event by the policy ([`policy`]).

pub mod imfs_tree;
pub mod knapsack;
pub mod matching;
pub mod matrix;
pub mod policy;
#[cfg(test)]
mod tests;

pub use matrix::{CsParams, LateMachines, WaitScope};
pub use policy::{ConvergentScheduling, MatchingKind};
