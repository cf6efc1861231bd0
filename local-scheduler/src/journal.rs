//! A local scheduler's job journal, whoever runs its jobs (its own policy and agents, or a batch
//! system such as Slurm): the event log with its sequence numbers, the live feed that follows it
//! (the JobEvents stream of the MS–LS protocol, spec `two-level-grid-scheduler.md` D3), the jobs
//! that ended here (a run is never taken twice), the meta-scheduler's newest lease epoch, and the
//! changes not committed yet. Every change reaches the durable store in one commit before what
//! depends on it is acknowledged or sent. With a store, memory holds only the newest events and
//! ends (`events_in_memory`); older ones are read from the store when asked for.

use crate::store::{End, Store, StoreError, StoredJob};
use gridsched_core::Time;
use gridsched_proto::v1::{self, JobState};
use std::collections::{BTreeMap, HashMap, VecDeque};
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

/// Where a new event log's sequence numbers start, for a log begun at `unix_secs`: after
/// `unix_secs × 10⁶`. A site whose state was wiped, or a site without a state directory started
/// again, then numbers its events after every one its earlier life sent (unless that life sent
/// more than a million a second), and a meta-scheduler that follows it from the last sequence it
/// applied misses none of them (numbered from 1, they would all have been at or below that
/// sequence, and skipped).
pub fn log_base(unix_secs: Time) -> u64 {
    u64::try_from(unix_secs).unwrap_or(0) * 1_000_000
}

/// A backlog of events plus the live feed that follows it without a gap.
pub type EventFeed = (Vec<v1::JobEvent>, broadcast::Receiver<v1::JobEvent>);

/// The journal.
#[derive(Debug)]
pub struct Journal {
    cluster: String,
    store: Option<Store>,
    /// The newest events in sequence order: every one without a store; with one, at most
    /// `window` committed ones and those not committed yet (older ones are read from the store).
    events: VecDeque<v1::JobEvent>,
    last_sequence: u64,
    window: usize,
    live: broadcast::Sender<v1::JobEvent>,
    /// The newest event committed, and so sent to the live feed and served in backlogs.
    published: u64,
    unsaved: Vec<v1::JobEvent>,
    /// Job records for the next commit (`None`: the job ended, its record goes).
    dirty: BTreeMap<u64, Option<StoredJob>>,
    /// Ends known in memory, by job: how and which run (`None`: known not to have ended, its end
    /// withdrawn or forgotten). Without a store, every end; with one, the newest `window` and
    /// those not committed yet; the store knows the others.
    ended: HashMap<u64, Option<End>>,
    /// With a store: the jobs of `ended` in the order they came, to forget the oldest.
    ended_order: VecDeque<u64>,
    /// The highest job id that has ended here: a job above it never has, and the door does not
    /// ask the store about it (every new job is such a job).
    max_ended: u64,
    /// Tests: how many times the store was asked for an end.
    #[cfg(test)]
    store_reads: std::cell::Cell<u32>,
    /// Changes to the ended jobs not committed yet, in order.
    unsaved_ends: Vec<(u64, Option<End>)>,
    /// The newest lease epoch of the meta-scheduler that has called (0: none).
    epoch: u64,
}

impl Journal {
    /// The journal of `cluster`, durable in `state_dir` when given: the newest `window` events
    /// and their jobs' ends recovered, and the stored records of the jobs that had not ended. A
    /// log without events (new, or not durable) numbers its first event `base + 1`
    /// ([`log_base`]).
    pub fn open(
        cluster: &str,
        state_dir: Option<&Path>,
        window: usize,
        base: u64,
    ) -> anyhow::Result<(Journal, Vec<StoredJob>)> {
        let store = match state_dir {
            Some(d) => Some(Store::open(d).map_err(|e| anyhow::anyhow!("state store: {e}"))?),
            None => None,
        };
        let mut j = Journal {
            cluster: cluster.to_string(),
            store,
            events: VecDeque::new(),
            last_sequence: base,
            window: window.max(1),
            live: broadcast::channel(1 << 16).0,
            published: base,
            unsaved: Vec::new(),
            dirty: BTreeMap::new(),
            ended: HashMap::new(),
            ended_order: VecDeque::new(),
            max_ended: 0,
            #[cfg(test)]
            store_reads: Default::default(),
            unsaved_ends: Vec::new(),
            epoch: 0,
        };
        let Some(store) = &j.store else {
            return Ok((j, Vec::new()));
        };
        let mut loaded = store.load(j.window).map_err(|e| anyhow::anyhow!("{e}"))?;
        for (id, end) in loaded.ended {
            j.ended.insert(id, Some(end));
            j.ended_order.push_back(id);
        }
        j.max_ended = loaded.max_ended;
        j.events = loaded.events.into();
        if loaded.last_sequence > 0 {
            j.last_sequence = loaded.last_sequence;
            j.published = loaded.last_sequence;
        }
        j.epoch = loaded.epoch;
        (loaded.jobs).sort_by_key(|j| j.request.as_ref().map_or(0, |r| r.job_id));
        Ok((j, loaded.jobs))
    }

    /// The durable store, if any.
    pub fn store(&self) -> Option<&Store> {
        self.store.as_ref()
    }

    /// The events kept in memory, in sequence order.
    pub fn events(&self) -> impl Iterator<Item = &v1::JobEvent> {
        self.events.iter()
    }

    /// The sequence number of the newest event (0: none yet).
    pub fn last_sequence(&self) -> u64 {
        self.last_sequence
    }

    /// Appends `ev` (its sequence and cluster filled in here) to the log, with its job's record
    /// to commit (`None` when the job has ended); subscribers get it once it is committed. A
    /// terminal event counts the run as ended here, unless the job was withdrawn
    /// (`ev.withdrawn`).
    pub fn append(&mut self, mut ev: v1::JobEvent, record: Option<StoredJob>) {
        self.last_sequence += 1;
        ev.sequence = self.last_sequence;
        ev.cluster = Some(self.cluster.clone());
        if let Some(end) = crate::store::end_of(&ev) {
            self.set_end(ev.job_id, end);
        }
        self.dirty.insert(ev.job_id, record);
        self.events.push_back(ev.clone());
        self.unsaved.push(ev);
    }

    /// Sends the events just made durable to the live feed: a subscriber never sees an event that
    /// a crash could take back (its sequence number would be given to another event after the
    /// restart, and a meta-scheduler that had seen it would skip that one).
    fn publish(&mut self) {
        for ev in self.unsaved.drain(..) {
            self.published = ev.sequence;
            let _ = self.live.send(ev);
        }
    }

    /// Records job `id`'s end (`None`: it no longer counts), to be committed.
    fn set_end(&mut self, id: u64, end: Option<End>) {
        if end.is_some() {
            self.max_ended = self.max_ended.max(id);
        }
        if self.store.is_none() {
            match end {
                Some(end) => self.ended.insert(id, Some(end)),
                None => self.ended.remove(&id),
            };
            return;
        }
        self.ended.insert(id, end);
        self.ended_order.push_back(id);
        self.unsaved_ends.push((id, end));
    }

    /// How job `id`'s run ended here, if it did.
    fn end_of(&self, id: u64) -> Result<Option<(JobState, u32)>, Status> {
        let end = match (self.ended.get(&id), &self.store) {
            (Some(&known), _) => known,
            (None, Some(store)) if id <= self.max_ended => {
                #[cfg(test)]
                self.store_reads.set(self.store_reads.get() + 1);
                (store.ended(id)).map_err(|e| Status::internal(format!("state store: {e}")))?
            }
            _ => None,
        };
        Ok(end.map(|(st, run)| (JobState::try_from(st).unwrap_or(JobState::Unspecified), run)))
    }

    /// Job `id`'s record changed without an event.
    pub fn save(&mut self, id: u64, record: Option<StoredJob>) {
        self.dirty.insert(id, record);
    }

    /// Commits the events, job records and ends since the last commit, in one transaction, then
    /// forgets from memory the events and ends beyond the window (the store has them). On
    /// failure nothing is committed and everything stays to be written with the next commit.
    pub fn commit(&mut self) -> Result<(), StoreError> {
        let Some(store) = &self.store else {
            self.publish();
            self.dirty.clear();
            return Ok(());
        };
        if self.unsaved.is_empty() && self.dirty.is_empty() && self.unsaved_ends.is_empty() {
            return Ok(());
        }
        let jobs: Vec<_> = std::mem::take(&mut self.dirty).into_iter().collect();
        if let Err(e) = store.commit(&self.unsaved, &jobs, &self.unsaved_ends) {
            for (id, record) in jobs {
                self.dirty.entry(id).or_insert(record);
            }
            return Err(e);
        }
        self.publish();
        self.unsaved_ends.clear();
        while self.events.len() > self.window {
            self.events.pop_front();
        }
        while self.ended.len() > self.window || self.ended_order.len() > 2 * self.window {
            let Some(id) = self.ended_order.pop_front() else {
                break;
            };
            self.ended.remove(&id);
        }
        Ok(())
    }

    /// The newest lease epoch of the meta-scheduler that has called (0: none), as stored.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Records that a meta-scheduler of lease epoch `epoch` has called: durable before the call
    /// is served, so that a deposed leader stays deposed over a restart.
    pub fn save_epoch(&mut self, epoch: u64) -> Result<(), StoreError> {
        if epoch <= self.epoch {
            return Ok(());
        }
        if let Some(store) = &self.store {
            store.save_epoch(epoch)?;
        }
        self.epoch = epoch;
        Ok(())
    }

    /// The committed events from sequence `from` on (none when `None`) and the live feed after
    /// them: the older ones read from the store. Events not committed yet reach the feed when
    /// they are.
    pub fn feed(&self, from: Option<u64>) -> Result<EventFeed, Status> {
        let rx = self.live.subscribe();
        let Some(from) = from else {
            return Ok((Vec::new(), rx));
        };
        let first = self
            .events
            .front()
            .map_or(self.last_sequence + 1, |e| e.sequence);
        let mut backlog = Vec::new();
        if from < first
            && let Some(store) = &self.store
        {
            backlog = (store.events(from, first))
                .map_err(|e| Status::internal(format!("state store: {e}")))?;
        }
        let i = self.events.partition_point(|e| e.sequence < from);
        let end = self
            .events
            .partition_point(|e| e.sequence <= self.published);
        backlog.extend(self.events.range(i..end.max(i)).cloned());
        Ok((backlog, rx))
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
        let ended_run = self.end_of(r.job_id)?.map(|(_, run)| run);
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
        self.set_end(id, None);
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
        match self.end_of(r.job_id)? {
            Some((_, run)) if r.run.is_some_and(|asked| asked != run) => {
                Err(Journal::other_run(r, run))
            }
            Some((st, _)) => Ok(v1::CancelResponse { state: st as i32 }),
            None => Err(Status::not_found(format!("job {} not found", r.job_id))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(job_id: u64, run: u32) -> v1::JobEvent {
        v1::JobEvent {
            job_id,
            run,
            state: JobState::Completed as i32,
            ..Default::default()
        }
    }

    fn enqueue(job_id: u64, run: u32) -> v1::EnqueueRequest {
        v1::EnqueueRequest {
            job_id,
            run,
            spec: Some(v1::JobSpec::default()),
            ..Default::default()
        }
    }

    fn sequences(events: &[v1::JobEvent]) -> Vec<u64> {
        events.iter().map(|e| e.sequence).collect()
    }

    /// With a store, memory keeps the newest events and ends only; a feed from an older sequence
    /// and the door's check of an old job read the store, before and after a restart.
    #[test]
    fn a_bounded_journal_reads_older_events_and_ends_from_its_store() {
        let dir = tempfile::tempdir().unwrap();
        let (mut j, _) = Journal::open("c", Some(dir.path()), 3, 0).unwrap();
        for id in 1..=10 {
            j.append(ended(id, 0), None);
        }
        j.commit().unwrap();
        assert_eq!(j.events().count(), 3);
        assert!(j.ended.len() <= 3, "{} ends in memory", j.ended.len());
        assert_eq!(
            sequences(&j.feed(Some(2)).unwrap().0),
            (2..=10).collect::<Vec<_>>()
        );
        assert_eq!(sequences(&j.feed(Some(9)).unwrap().0), [9, 10]);
        let old = j.check_enqueue(&enqueue(1, 0), false, 100).unwrap_err();
        assert_eq!(old.code(), tonic::Code::AlreadyExists, "{old:?}");
        j.check_enqueue(&enqueue(1, 1), false, 100).unwrap();
        let cancel = v1::CancelRequest {
            job_id: 2,
            ..Default::default()
        };
        assert_eq!(
            j.cancel_ended(&cancel).unwrap().state,
            JobState::Completed as i32
        );
        // A later run of job 1 is here: its old end no longer counts, before the commit too.
        j.forget_end(1);
        j.check_enqueue(&enqueue(1, 0), false, 100).unwrap();
        j.commit().unwrap();
        drop(j);

        let (j, _) = Journal::open("c", Some(dir.path()), 3, 0).unwrap();
        assert_eq!(j.last_sequence(), 10);
        assert_eq!(
            sequences(&j.events().cloned().collect::<Vec<_>>()),
            [8, 9, 10]
        );
        assert_eq!(
            sequences(&j.feed(Some(1)).unwrap().0),
            (1..=10).collect::<Vec<_>>()
        );
        j.check_enqueue(&enqueue(1, 0), false, 100).unwrap();
        let old = j.check_enqueue(&enqueue(2, 0), false, 100).unwrap_err();
        assert_eq!(old.code(), tonic::Code::AlreadyExists, "{old:?}");
    }

    /// Without a store nothing is forgotten: memory is all there is.
    #[test]
    fn a_journal_without_a_store_keeps_every_event() {
        let (mut j, _) = Journal::open("c", None, 3, 0).unwrap();
        for id in 1..=10 {
            j.append(ended(id, 0), None);
        }
        j.commit().unwrap();
        assert_eq!(j.events().count(), 10);
        let old = j.check_enqueue(&enqueue(1, 0), false, 100).unwrap_err();
        assert_eq!(old.code(), tonic::Code::AlreadyExists, "{old:?}");
        j.forget_end(1);
        j.check_enqueue(&enqueue(1, 0), false, 100).unwrap();
    }

    /// The door asks the store only about a job that may have ended here: never for a new job
    /// (above every id that ended), whose Enqueue is the common case; and without a store the
    /// ends keep no order to trim.
    #[test]
    fn a_new_job_is_checked_without_reading_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let (mut j, _) = Journal::open("c", Some(dir.path()), 2, 0).unwrap();
        for id in 1..=10 {
            j.append(ended(id, 0), None);
        }
        j.commit().unwrap();
        drop(j);
        let (j, _) = Journal::open("c", Some(dir.path()), 2, 0).unwrap();
        j.check_enqueue(&enqueue(11, 0), false, 100).unwrap();
        assert_eq!(j.store_reads.get(), 0);
        let old = j.check_enqueue(&enqueue(3, 0), false, 100).unwrap_err();
        assert_eq!(old.code(), tonic::Code::AlreadyExists, "{old:?}");
        assert_eq!(j.store_reads.get(), 1);

        let (mut j, _) = Journal::open("c", None, 2, 0).unwrap();
        for id in 1..=10 {
            j.append(ended(id, 0), None);
        }
        j.commit().unwrap();
        assert!(j.ended_order.is_empty());
        assert_eq!(j.ended.len(), 10);
    }

    /// A commit that fails keeps its events, records and ends for the next one.
    #[test]
    fn a_failed_commit_is_written_by_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let (mut j, _) = Journal::open("c", Some(dir.path()), 2, 0).unwrap();
        let fail = |j: &Journal, on: bool| {
            let s = j.store().unwrap();
            s.fail_commits
                .store(on, std::sync::atomic::Ordering::Relaxed);
        };
        fail(&j, true);
        for id in 1..=4 {
            j.append(ended(id, 0), None);
        }
        assert!(j.commit().is_err());
        assert_eq!(
            j.events().count(),
            4,
            "nothing forgotten before it is stored"
        );
        fail(&j, false);
        j.append(ended(5, 0), None);
        j.commit().unwrap();
        drop(j);
        let (j, _) = Journal::open("c", Some(dir.path()), 2, 0).unwrap();
        assert_eq!(sequences(&j.feed(Some(1)).unwrap().0), [1, 2, 3, 4, 5]);
        let old = j.check_enqueue(&enqueue(3, 0), false, 100).unwrap_err();
        assert_eq!(old.code(), tonic::Code::AlreadyExists, "{old:?}");
    }

    /// A new log numbers its events after its base; a durable one keeps its numbering over a
    /// restart whatever base it is given; a wiped one (or one without a store) started later
    /// numbers its events after every event of its earlier life, so a follower asking from the
    /// last sequence it applied gets them.
    #[test]
    fn a_new_log_numbers_its_events_after_every_earlier_one() {
        let dir = tempfile::tempdir().unwrap();
        let (mut j, _) = Journal::open("c", Some(dir.path()), 8, log_base(1_000)).unwrap();
        j.append(ended(1, 0), None);
        j.commit().unwrap();
        assert_eq!(j.last_sequence(), 1_000_000_001);
        drop(j);
        let (mut j, _) = Journal::open("c", Some(dir.path()), 8, log_base(2_000)).unwrap();
        j.append(ended(2, 0), None);
        j.commit().unwrap();
        assert_eq!(
            j.last_sequence(),
            1_000_000_002,
            "a durable log keeps its numbering"
        );
        drop(j);
        // Its state wiped, the site starts again later: a follower at 1_000_000_002 gets job 3.
        let wiped = tempfile::tempdir().unwrap();
        let (mut j, _) = Journal::open("c", Some(wiped.path()), 8, log_base(3_000)).unwrap();
        j.append(ended(3, 0), None);
        j.commit().unwrap();
        let backlog = j.feed(Some(1_000_000_003)).unwrap().0;
        assert_eq!(sequences(&backlog), [3_000_000_001]);
        assert_eq!(log_base(-5), 0);
    }

    /// An event reaches subscribers only once committed: one a crash takes back (its sequence
    /// given to another event after the restart) is seen by no one, live or in a backlog.
    #[test]
    fn subscribers_see_only_committed_events() {
        let dir = tempfile::tempdir().unwrap();
        let (mut j, _) = Journal::open("c", Some(dir.path()), 8, 0).unwrap();
        j.append(ended(1, 0), None);
        j.commit().unwrap();
        let (_, mut live) = j.feed(None).unwrap();
        j.append(ended(2, 0), None);
        assert_eq!(sequences(&j.feed(Some(1)).unwrap().0), [1]);
        assert!(live.try_recv().is_err(), "an uncommitted event was sent");
        drop(j);

        // The crash took event 2 back: its sequence now names job 3's end, the one a
        // subscriber from sequence 2 gets.
        let (mut j, _) = Journal::open("c", Some(dir.path()), 8, 0).unwrap();
        let (_, mut live) = j.feed(None).unwrap();
        j.append(ended(3, 0), None);
        assert_eq!(sequences(&j.feed(Some(1)).unwrap().0), [1]);
        j.commit().unwrap();
        let ev = live.try_recv().unwrap();
        assert_eq!((ev.sequence, ev.job_id), (2, 3));
        let backlog = j.feed(Some(2)).unwrap().0;
        assert_eq!((backlog.len(), backlog[0].job_id), (1, 3));

        // Without a store, committing publishes too.
        let (mut j, _) = Journal::open("c", None, 8, 0).unwrap();
        let (_, mut live) = j.feed(None).unwrap();
        j.append(ended(1, 0), None);
        assert!(live.try_recv().is_err());
        assert!(j.feed(Some(1)).unwrap().0.is_empty());
        j.commit().unwrap();
        assert_eq!(live.try_recv().unwrap().sequence, 1);
    }

    /// The newest lease epoch is kept over a restart; an older one never replaces it.
    #[test]
    fn the_newest_epoch_survives_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let (mut j, _) = Journal::open("c", Some(dir.path()), 2, 0).unwrap();
        assert_eq!(j.epoch(), 0);
        j.save_epoch(5).unwrap();
        j.save_epoch(3).unwrap();
        assert_eq!(j.epoch(), 5);
        drop(j);
        let (j, _) = Journal::open("c", Some(dir.path()), 2, 0).unwrap();
        assert_eq!(j.epoch(), 5);
    }
}
