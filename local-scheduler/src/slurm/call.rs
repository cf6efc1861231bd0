//! What a Slurm-backed site asks of Slurm and what Slurm answers: the calls its decisions make,
//! carried out by the edge ([`super::edge`]) over Slurm's REST API, and their answers, which come
//! back to the site's driver as messages.

use super::mapping::{SlurmJob, SlurmLicence, SlurmNode, Submission};
use super::rest::CallError;
use gridsched_core::Time;

/// A call to Slurm the site decided, for the edge to make.
#[derive(Clone, Debug, PartialEq)]
pub enum Call {
    /// Submit run `run` of grid job `job`.
    Submit {
        /// The grid job.
        job: u64,
        /// Its run.
        run: u32,
        /// What to submit.
        submission: Submission,
    },
    /// Release held Slurm job `slurm` (grid job `job`).
    Release {
        /// The grid job.
        job: u64,
        /// Its Slurm id.
        slurm: u32,
    },
    /// Cancel Slurm job `slurm`.
    Cancel {
        /// Its Slurm id.
        slurm: u32,
    },
    /// Read the jobs (all, or `None` back if none changed since `since`), nodes and licences.
    Poll {
        /// Unix seconds.
        since: Option<Time>,
    },
}

/// What Slurm answered to a [`Call`].
#[derive(Debug)]
pub enum Done {
    /// To a submission: the Slurm id.
    Submitted {
        /// The grid job.
        job: u64,
        /// Its run.
        run: u32,
        /// Slurm's id, or why not.
        result: Result<u32, CallError>,
    },
    /// To a release.
    Released {
        /// The grid job.
        job: u64,
        /// Done, or why not.
        result: Result<(), CallError>,
    },
    /// To a cancellation.
    Cancelled {
        /// The Slurm job.
        slurm: u32,
        /// Done, or why not.
        result: Result<(), CallError>,
    },
    /// To a poll.
    Polled(Result<Snapshot, CallError>),
}

/// One read of the cluster.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// Every job Slurm retains; `None`: none changed since the poll's `since`.
    pub jobs: Option<Vec<SlurmJob>>,
    /// The nodes.
    pub nodes: Vec<SlurmNode>,
    /// The licence pools.
    pub licences: Vec<SlurmLicence>,
}
