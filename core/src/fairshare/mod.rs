//! Sharing a grid among its users: the account tree that promises each user and account a share
//! of the grid, the usage each one consumed (decayed with a half-life), and the fair-share
//! factors computed from them, as Slurm's priority/multifactor plugin documents them (its
//! "Classic Fairshare Algorithm" and "Fair Tree Fairshare Algorithm" pages).
//!
//! * [`Tree`]: accounts and users with their raw shares (Slurm's associations), checked at the
//!   door: an unknown parent, a name given twice, a user with children, no share at all.
//! * [`Usage`]: processor-seconds charged to each user, decayed continuously so that usage left
//!   alone halves every half-life (Slurm's `PriorityDecayHalfLife`). Spec reading: Slurm applies
//!   its decay factor once per `PriorityCalcPeriod`; here it is applied exactly at each read,
//!   `2^(-elapsed / half_life)`, which is the limit of a short period.
//! * [`classic`]: normalized shares through the tree, effective usage
//!   `U_E = U_A + (U_E,parent − U_A) · S_child / S_siblings`, and the factor `F = 2^(−U_E / S / d)`
//!   with the dampening factor `d`.
//! * [`fair_tree`]: the level fair share `LF = S / U` among siblings, the tree sorted by it and
//!   walked depth first, each user's factor its rank over the number of users (ties as Slurm
//!   documents them).
//!
//! * [`dominant`]: a dominant-resource share over processors and licences (a spec reading in
//!   the family of Armada's and Kueue's).
//! * [`Shares`]: the grid runner's book of all this, charged as runs end.
//!
//! Everything is plain and deterministic: integer seconds in, `f64` factors out; siblings are
//! visited in the order the tree gives them.

mod classic_fs;
mod dominant_fs;
mod fair_tree_fs;
mod shares;
mod tree;
mod usage;

pub use classic_fs::classic;
pub use dominant_fs::dominant;
pub use fair_tree_fs::fair_tree;
pub use shares::{
    Algorithm, CALC_PERIOD, FairShareConfig, LimitHit, ResetPeriod, ShareError, ShareStanding,
    Shares, UsageState, WEEK,
};
pub use tree::{Assoc, Kind, Tree, TreeError};
pub use usage::Usage;

#[cfg(test)]
mod tests;
