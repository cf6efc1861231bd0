//! The simulated network of the grid's deterministic simulation: every message between the
//! client, the meta-scheduler and the sites, and what the network does to it (delay, loss,
//! duplication, a cut link).

use gridsched_core::dispatch::Priority;
use gridsched_core::model::{Job, JobId, Outcome, ReservationId, Time};

/// Where a message goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum To {
    Client,
    Meta,
    Site(usize),
}

/// What a site records about a job, in its event stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum SiteEvent {
    Started(JobId),
    Ended(JobId, Outcome),
    Withdrawn(JobId),
    Refused(JobId, String),
}

impl SiteEvent {
    pub(super) fn job(&self) -> JobId {
        match self {
            SiteEvent::Started(j)
            | SiteEvent::Ended(j, _)
            | SiteEvent::Withdrawn(j)
            | SiteEvent::Refused(j, _) => *j,
        }
    }
}

/// What a site did with a cancellation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SiteCancel {
    /// It was running: killed, it ends cancelled (its event follows).
    Killed,
    /// It was queued: it leaves.
    Dequeued,
    /// It had ended already.
    Ended,
    /// The site does not have it (withdrawn, or its Enqueue not there yet).
    NotHere,
}

/// A message.
#[derive(Clone, Debug)]
pub(super) enum Msg {
    /// Client → meta: a job, sent until acknowledged.
    Submit(Job),
    /// Meta → client.
    Ack(JobId),
    /// Client → meta: cancel the job, sent until answered done.
    Cancel(JobId),
    /// Meta → client: cancelled (or ended already), or not now (its site cannot be reached).
    Cancelled {
        job: JobId,
        done: bool,
    },
    /// Meta → site: cancel the job (answered with `CancelAnswer`).
    CancelJob {
        call: u64,
        job: JobId,
    },
    CancelAnswer {
        call: u64,
        answer: SiteCancel,
    },
    /// Meta → site: queue this job (a fragment carries its reservation); sent until
    /// acknowledged.
    Enqueue {
        job: Job,
        priority: Priority,
        claim: bool,
    },
    /// Site → meta: queued (or already there), when its event stream had `events` events.
    Enqueued {
        site: usize,
        job: JobId,
        events: u64,
    },
    /// Site → meta: the jobs its policy started that wait for their grant, and the unclaimed
    /// ones waiting.
    Claims {
        site: usize,
        start: Vec<JobId>,
        waiting: Vec<JobId>,
    },
    /// Meta → site.
    ClaimAnswer {
        granted: Vec<JobId>,
        withdrawn: Vec<JobId>,
    },
    /// Meta → site: a call of the co-allocation (answered with `HeldAnswer`).
    Hold {
        call: u64,
        reservation: ReservationId,
        from: Time,
        length: i64,
        procs: u32,
    },
    HeldAnswer {
        call: u64,
        answer: Result<Time, String>,
    },
    /// Meta → site (answered with `CommitAnswer`).
    Commit {
        call: u64,
        reservation: ReservationId,
    },
    /// Site → meta: committed, held from this start; or why not.
    CommitAnswer {
        call: u64,
        answer: Result<Time, String>,
    },
    /// Meta → site, once.
    LetGo(ReservationId),
    /// Meta → site, once: kill a fragment.
    Kill(JobId),
    /// Meta → site: the events from sequence `from` on.
    Pull {
        from: u64,
    },
    /// Site → meta: events, the first with sequence `first`.
    Events {
        site: usize,
        first: u64,
        events: Vec<SiteEvent>,
    },
}

/// The link a message travels (sites can be cut off from the meta-scheduler).
pub(super) fn link_of(from: To, to: To) -> Option<usize> {
    match (from, to) {
        (To::Site(s), _) | (_, To::Site(s)) => Some(s),
        _ => None,
    }
}
