//! Metrics of a schedule: per-job quantities and streaming aggregates (spec
//! `self-tuning-and-multisite.md` §3 Eq. 3.1–3.8, §3.4 Eq. 7.1–7.2; `gang-urgent-scaling.md` A.4
//! bounded slowdown and loss of capacity, C.4 AWRT/AWWT weighted by resource consumption;
//! `reference-semantics.md` "Metrics").
//!
//! Everything is computed from [`JobRecord`]s as jobs end, plus the machine-state samples of
//! [`CapacityTracker`] for the loss of capacity, so memory does not grow with the workload.

pub mod breakdown;
mod capacity;
mod gang_capacity;
mod record;
mod summary;

pub use capacity::CapacityTracker;
pub use gang_capacity::GangCapacityTracker;
pub use record::{BSLD_THRESHOLD_S, JobRecord};
pub use summary::{Summary, SummaryBuilder};
