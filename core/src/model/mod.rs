//! The resource and workload model: jobs, machines, clusters with floating licence pools, sites and
//! the platform (spec `two-level-grid-scheduler.md` D1–D2, `self-tuning-and-multisite.md` §1.1).
//!
//! Time is integer seconds everywhere ([`Time`] for instants, [`Duration`] for lengths).

mod array;
mod data;
mod dependency;
mod ids;
mod job;
mod machine;
mod name;
mod platform;
mod urgency;
pub(crate) mod workflow;

pub use array::{ArrayError, ArraySpec, MAX_INDEX, Task};
pub use data::{DataIn, DataOut};
pub use dependency::{Condition, Dependency, DependencyError, Ended, Outcome, Term};
pub use ids::{ClusterId, JobId, LicenceId, MachineId, ReservationId, SiteId, UserId};
pub use job::{InputRef, Job, JobError, UserClass, scale_duration};
pub use machine::Machine;
pub use name::{MAX_NAME, check_name};
pub use platform::{Cluster, LicencePool, LicenceType, Platform, PlatformError, Site};
pub use urgency::Urgency;
pub use workflow::{MAX_NODES, MAX_RETRIES, Node, Workflow, WorkflowError, WorkflowText};

/// An instant, in integer seconds since the epoch of the workload (a trace's start, or the Unix
/// epoch for a live grid).
pub type Time = i64;

/// A length of time in integer seconds.
pub type Duration = i64;
