//! A local scheduler's job journal, whoever runs its jobs (its own policy and agents, or a batch
//! system such as Slurm): the event log with its sequence numbers, the live feed that follows it
//! (the JobEvents stream of the MS–LS protocol, spec `two-level-grid-scheduler.md` D3), the jobs
//! that ended here (a run is never taken twice), and the changes not committed yet. Every change
//! reaches the durable store in one commit before what depends on it is acknowledged or sent.

use crate::store::{Store, StoreError, StoredJob};
use gridsched_core::Time;
use gridsched_proto::v1::{self, JobState};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use tokio::sync::{broadcast, oneshot};
use tonic::Status;

/// One Enqueue request and where its answer goes.
pub type Enqueue = (
    v1::EnqueueRequest,
    oneshot::Sender<Result<v1::EnqueueResponse, Status>>,
);

/// An admitted Enqueue request: its job, the sequence of its QUEUED event, where its answer goes.
pub type Admitted = (
    u64,
    u64,
    oneshot::Sender<Result<v1::EnqueueResponse, Status>>,
);

/// How a site admits one Enqueue request: its job and the sequence of its QUEUED event.
pub type Admit<S> = fn(&mut S, v1::EnqueueRequest, Time) -> Result<(u64, u64), Status>;

/// The group commit of Enqueue requests that arrived together, for either kind of site: each is
/// admitted by `admit` (a refusal is answered at once), the admitted ones are committed together
/// by `commit`; when that fails each is taken back by `undo` and answered with the error, so that
/// nothing acknowledged can be lost and nothing unacknowledged runs. Returns the admitted ones,
/// durable now, for the caller to schedule and then [`answer`].
pub fn group_commit<S>(
    site: &mut S,
    group: Vec<Enqueue>,
    now: Time,
    admit: Admit<S>,
    commit: fn(&mut S) -> Result<(), Status>,
    undo: fn(&mut S, u64, Time),
) -> Vec<Admitted> {
    let mut admitted = Vec::with_capacity(group.len());
    for (r, tx) in group {
        match admit(site, r, now) {
            Ok((id, seq)) => admitted.push((id, seq, tx)),
            Err(e) => {
                let _ = tx.send(Err(e));
            }
        }
    }
    if admitted.is_empty() {
        return admitted;
    }
    if let Err(e) = commit(site) {
        for (id, _, tx) in admitted {
            undo(site, id, now);
            let _ = tx.send(Err(e.clone()));
        }
        return Vec::new();
    }
    admitted
}

/// Answers the admitted requests, each with its job's state (`state_of`).
pub fn answer(admitted: Vec<Admitted>, state_of: impl Fn(u64) -> JobState) {
    for (id, seq, tx) in admitted {
        let _ = tx.send(Ok(v1::EnqueueResponse {
            state: state_of(id) as i32,
            sequence: seq,
        }));
    }
}

/// A backlog of events plus the live feed that follows it without a gap.
pub type EventFeed = (Vec<v1::JobEvent>, broadcast::Receiver<v1::JobEvent>);

/// The journal.
#[derive(Debug)]
pub struct Journal {
    cluster: String,
    store: Option<Store>,
    events: Vec<v1::JobEvent>,
    live: broadcast::Sender<v1::JobEvent>,
    unsaved: Vec<v1::JobEvent>,
    /// Job records for the next commit (`None`: the job ended, its record goes).
    dirty: BTreeMap<u64, Option<StoredJob>>,
    /// Jobs that ended here: how, and which run.
    ended: HashMap<u64, (JobState, u32)>,
}

impl Journal {
    /// The journal of `cluster`, durable in `state_dir` when given: the event log and ended jobs
    /// recovered, and the stored records of the jobs that had not ended.
    pub fn open(
        cluster: &str,
        state_dir: Option<&Path>,
    ) -> anyhow::Result<(Journal, Vec<StoredJob>)> {
        let store = match state_dir {
            Some(d) => Some(Store::open(d).map_err(|e| anyhow::anyhow!("state store: {e}"))?),
            None => None,
        };
        let mut j = Journal {
            cluster: cluster.to_string(),
            store,
            events: Vec::new(),
            live: broadcast::channel(1 << 16).0,
            unsaved: Vec::new(),
            dirty: BTreeMap::new(),
            ended: HashMap::new(),
        };
        let Some(store) = &j.store else {
            return Ok((j, Vec::new()));
        };
        let (mut jobs, events) = store.load().map_err(|e| anyhow::anyhow!("{e}"))?;
        for e in &events {
            let st = JobState::try_from(e.state).unwrap_or(JobState::Unspecified);
            if e.withdrawn {
                // Dropped unstarted: the meta-scheduler may send it here again.
                j.ended.remove(&e.job_id);
            } else if st.is_terminal() {
                j.ended.insert(e.job_id, (st, e.run));
            }
        }
        j.events = events;
        jobs.sort_by_key(|j| j.request.as_ref().map_or(0, |r| r.job_id));
        Ok((j, jobs))
    }

    /// The durable store, if any.
    pub fn store(&self) -> Option<&Store> {
        self.store.as_ref()
    }

    /// The event log, in sequence order.
    pub fn events(&self) -> &[v1::JobEvent] {
        &self.events
    }

    /// The sequence number of the newest event (0: none yet).
    pub fn last_sequence(&self) -> u64 {
        self.events.last().map_or(0, |e| e.sequence)
    }

    /// Appends `ev` (its sequence and cluster filled in here) to the log and the live feed, with
    /// its job's record to commit (`None` when the job has ended). A terminal event counts the
    /// run as ended here, unless the job was withdrawn (`ev.withdrawn`).
    pub fn append(&mut self, mut ev: v1::JobEvent, record: Option<StoredJob>) {
        ev.sequence = self.last_sequence() + 1;
        ev.cluster = Some(self.cluster.clone());
        let state = ev.state();
        if state.is_terminal() && !ev.withdrawn {
            self.ended.insert(ev.job_id, (state, ev.run));
        }
        self.dirty.insert(ev.job_id, record);
        self.events.push(ev.clone());
        self.unsaved.push(ev.clone());
        let _ = self.live.send(ev);
    }

    /// Job `id`'s record changed without an event.
    pub fn save(&mut self, id: u64, record: Option<StoredJob>) {
        self.dirty.insert(id, record);
    }

    /// Commits the events and job records since the last commit, in one transaction. On failure
    /// they are not committed: the caller marks again what must still be written.
    pub fn commit(&mut self) -> Result<(), StoreError> {
        let events = std::mem::take(&mut self.unsaved);
        let jobs: Vec<_> = std::mem::take(&mut self.dirty).into_iter().collect();
        match &self.store {
            Some(s) if !events.is_empty() || !jobs.is_empty() => s.commit(&events, &jobs),
            _ => Ok(()),
        }
    }

    /// The events from sequence `from` on (none when `None`) and the live feed after them.
    pub fn feed(&self, from: Option<u64>) -> EventFeed {
        let rx = self.live.subscribe();
        let backlog = match from {
            None => Vec::new(),
            Some(s) => {
                let i = self.events.partition_point(|e| e.sequence < s);
                self.events[i..].to_vec()
            }
        };
        (backlog, rx)
    }

    /// Ends every live feed (their streams close; a new subscriber gets a new feed).
    pub fn close_feeds(&mut self) {
        self.live = broadcast::channel(1 << 16).0;
    }

    /// Checks an Enqueue request at the door: its id and spec, its estimate against the cluster's
    /// limit, and that this run is neither here (`open`) nor ended here.
    pub fn check_enqueue(
        &self,
        r: &v1::EnqueueRequest,
        open: bool,
        max_estimate_s: i64,
    ) -> Result<(), Status> {
        if r.job_id == 0 {
            return Err(Status::invalid_argument("job_id: must be positive"));
        }
        let Some(spec) = &r.spec else {
            return Err(Status::invalid_argument("spec: required"));
        };
        if spec.estimate_s > max_estimate_s {
            return Err(Status::invalid_argument(format!(
                "spec.estimate_s: {} s is more than this cluster's limit of {max_estimate_s} s",
                spec.estimate_s
            )));
        }
        let ended_run = self.ended.get(&r.job_id).map(|&(_, run)| run);
        if open || ended_run.is_some_and(|run| run >= r.run) {
            return Err(Status::already_exists(format!(
                "job {} already enqueued (run {})",
                r.job_id, r.run
            )));
        }
        Ok(())
    }

    /// A later run of job `id` is here: its earlier end no longer counts.
    pub fn forget_end(&mut self, id: u64) {
        self.ended.remove(&id);
    }

    /// NOT_FOUND for a cancellation naming another run than the `held` one.
    pub fn other_run(r: &v1::CancelRequest, held: u32) -> Status {
        Status::not_found(format!(
            "job {} run {} not found (this site has run {held})",
            r.job_id,
            r.run.unwrap_or_default()
        ))
    }

    /// The answer to a cancellation of a job that is not open here: its end, or NOT_FOUND.
    pub fn cancel_ended(&self, r: &v1::CancelRequest) -> Result<v1::CancelResponse, Status> {
        match self.ended.get(&r.job_id) {
            Some((_, run)) if r.run.is_some_and(|asked| asked != *run) => {
                Err(Journal::other_run(r, *run))
            }
            Some((st, _)) => Ok(v1::CancelResponse { state: *st as i32 }),
            None => Err(Status::not_found(format!("job {} not found", r.job_id))),
        }
    }
}
