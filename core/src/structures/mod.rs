//! Data structures the policies are built on, chosen for their cost as the queue and the machine
//! grow: an ordered queue that finds the first job fitting a shape without scanning the whole
//! queue, the running set with its predicted ends, and an availability profile (a step function
//! of free processors over time) for planning policies; and the rule by which the services'
//! maps give their room back after a burst.

mod ordered_queue;
mod profile;
mod running;
mod shrink;

pub use ordered_queue::{OrderedQueue, QueueEntry, QueueKey};
pub use profile::Profile;
pub use running::{RunEntry, RunningSet};
pub use shrink::Shrink;
