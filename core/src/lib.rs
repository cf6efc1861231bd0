//! The scheduling core of gridsched.
//!
//! Everything in this crate is plain, synchronous and deterministic: no I/O, no async runtime, no
//! wall clock. The simulator (`gridsim`) drives it in virtual time and the live services drive it in
//! real time, through the same [`policy::Policy`] trait, so a decision made live equals the one the
//! simulator makes from the same state.
//!
//! * [`model`]: jobs, machines, clusters with licence pools, sites and the platform (spec
//!   `two-level-grid-scheduler.md` D2, `self-tuning-and-multisite.md` §1).
//! * [`policy`]: the policy interface and the classic local policies (FCFS, EASY and its variants,
//!   conservative backfilling, SJF/LJF-ordered backfilling; `reference-semantics.md`).
//! * [`classify`]: the meta-scheduler's classification of jobs into priorities (D4.1).
//! * [`cluster`]: the resource state of one heterogeneous cluster (machines, licence pools) shared
//!   by the cluster policies (`two-level-grid-scheduler.md` D2).
//! * [`heuristics`]: the local schedulers' heuristics and constants (D5, D6.4, D7.5).
//! * [`dispatch`]: the meta-scheduler's dispatch interface and strategies (spec
//!   `two-level-grid-scheduler.md` D4.2).
//! * [`metrics`]: per-job and aggregate metrics (`self-tuning-and-multisite.md` §3,
//!   `gang-urgent-scaling.md` A.4 and C.4).
//! * [`fairshare`]: accounts, decayed usage and fair-share factors (Slurm's classic and Fair Tree).
//! * [`grid`]: the grid runner that drives the meta-scheduler's decisions for both clocks
//!   (classification, dispatch, the meta-level queue, co-allocation, sites down and up).
//! * [`runner`]: the cluster runner that drives a policy for both clocks (submissions with the
//!   meta priority, passes, suspensions, overruns, machine changes, validation of every start).
//! * [`structures`]: the data structures the policies are built on (ordered queue with summaries,
//!   running set, availability profile).

pub mod classify;
pub mod cluster;
pub mod convergent;
pub mod dispatch;
pub mod fairshare;
#[doc(hidden)]
pub mod fuzz;
pub mod grid;
pub mod heuristics;
pub mod metrics;
pub mod model;
pub mod policy;
pub mod rerun;
pub mod runner;
pub mod structures;

pub use model::{Duration, Time};
