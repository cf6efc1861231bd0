//! Durable state of a local scheduler in an embedded `redb` database: the jobs not yet ended
//! (their Enqueue request, state, machine and start) and the event log, keyed by sequence number
//! for JobEvents resumption; a granted start claim and a multi-node job's parts are kept with its
//! job; the jobs that ended here (how, and which run: a run is never taken twice); the advance
//! reservations held; and the newest lease epoch of the meta-scheduler that has called (a
//! deposed leader stays deposed over a restart). Every change is committed before it is
//! acknowledged. The service keeps only the newest events and ends in memory and reads older ones
//! here.

use gridsched_proto::v1;
use prost::Message;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use std::path::Path;

const JOBS: TableDefinition<u64, &[u8]> = TableDefinition::new("jobs");
const EVENTS: TableDefinition<u64, &[u8]> = TableDefinition::new("events");
const RESERVATIONS: TableDefinition<u64, &[u8]> = TableDefinition::new("reservations");
/// Job id → how its run ended (`v1::JobState`) and which run.
const ENDED: TableDefinition<u64, (i32, u32)> = TableDefinition::new("ended");
/// Single values: [`LAYOUT`] and [`EPOCH`].
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
/// The store's layout: 1 = the ended jobs have their own table (an older store has them only in
/// its events, and gets the table when first opened).
const LAYOUT: &str = "layout";
/// The newest lease epoch of the meta-scheduler that has called.
const EPOCH: &str = "epoch";

/// The store's page cache: the site reads little back (a restart, an old event or end), and
/// redb's default (a GiB) would hold the pages of every event written.
const CACHE_BYTES: usize = 16 << 20;

/// How a run ended here: its state (`v1::JobState`) and run.
pub type End = (i32, u32);

/// What [`Store::load`] recovers.
#[derive(Debug, Default)]
pub struct Loaded {
    /// The jobs not ended.
    pub jobs: Vec<StoredJob>,
    /// The newest events, at most the number asked, in sequence order.
    pub events: Vec<v1::JobEvent>,
    /// The sequence of the newest event (0: none).
    pub last_sequence: u64,
    /// The ends of the jobs of those events, by job.
    pub ended: Vec<(u64, End)>,
    /// The highest job id that has ended here (0: none).
    pub max_ended: u64,
    /// The newest lease epoch that has called (0: none).
    pub epoch: u64,
}

/// The end an event records, when it records one: a terminal state that was not a withdrawal
/// (`Some(None)`: the job was withdrawn unstarted, and may be sent here again).
pub fn end_of(e: &v1::JobEvent) -> Option<Option<End>> {
    if e.withdrawn {
        return Some(None);
    }
    let st = v1::JobState::try_from(e.state).unwrap_or(v1::JobState::Unspecified);
    st.is_terminal().then_some(Some((e.state, e.run)))
}

/// A job of the local scheduler as stored.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StoredJob {
    /// The Enqueue request that brought it.
    #[prost(message, optional, tag = "1")]
    pub request: Option<v1::EnqueueRequest>,
    /// Its state (`v1::JobState`).
    #[prost(int32, tag = "2")]
    pub state: i32,
    /// Machine it runs on.
    #[prost(uint32, optional, tag = "3")]
    pub machine: Option<u32>,
    /// When it started.
    #[prost(int64, optional, tag = "4")]
    pub start_time: Option<i64>,
    /// The meta-scheduler granted its start claim.
    #[prost(bool, tag = "5")]
    pub claimed: bool,
    /// A running multi-node job's parts in rank order (empty: one machine, `machine`).
    #[prost(message, repeated, tag = "6")]
    pub parts: Vec<StoredPart>,
    /// At a Slurm-backed site: its Slurm job id, once submitted.
    #[prost(uint32, optional, tag = "7")]
    pub slurm_id: Option<u32>,
    /// Its inputs were being staged in (it was not in the runner's queue yet).
    #[prost(bool, tag = "8")]
    pub staging: bool,
}

/// One part of a running multi-node job as stored: a part that has ended stays ended after a
/// restart (its agent no longer reports it).
#[derive(Clone, PartialEq, prost::Message)]
pub struct StoredPart {
    /// Its node.
    #[prost(uint32, tag = "1")]
    pub node: u32,
    /// Processors it takes there.
    #[prost(uint32, tag = "2")]
    pub procs: u32,
    /// How it ended (`v1::JobState`), 0 while it runs.
    #[prost(int32, tag = "3")]
    pub ended: i32,
    /// Why, when it has ended.
    #[prost(string, tag = "4")]
    pub detail: String,
    /// Its exit code, when it exited.
    #[prost(int32, optional, tag = "5")]
    pub exit_code: Option<i32>,
    /// The order in which it ended among the job's parts (1 = first).
    #[prost(uint32, tag = "6")]
    pub order: u32,
    /// Its node was lost (its agent stopped or came back without it).
    #[prost(bool, tag = "7")]
    pub lost: bool,
}

/// Writes job changes (`None` = the job ended: removed) into the open jobs table.
fn put_jobs(
    t: &mut redb::Table<'_, u64, &[u8]>,
    jobs: &[(u64, Option<StoredJob>)],
) -> Result<(), StoreError> {
    for (id, j) in jobs {
        match j {
            Some(j) => {
                t.insert(*id, j.encode_to_vec().as_slice())?;
            }
            None => {
                t.remove(*id)?;
            }
        }
    }
    Ok(())
}

/// The database.
#[derive(Debug)]
pub struct Store {
    db: Database,
    /// Tests: every commit fails while set.
    #[cfg(test)]
    pub(crate) fail_commits: std::sync::atomic::AtomicBool,
}

/// A store failure.
pub type StoreError = Box<dyn std::error::Error + Send + Sync>;

impl Store {
    /// Opens (or creates) `dir/state.redb`.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        std::fs::create_dir_all(dir)?;
        let db = redb::Builder::new()
            .set_cache_size(CACHE_BYTES)
            .create(dir.join("state.redb"))?;
        let w = db.begin_write()?;
        w.open_table(JOBS)?;
        w.open_table(EVENTS)?;
        w.open_table(RESERVATIONS)?;
        w.open_table(ENDED)?;
        let layout = w.open_table(META)?.get(LAYOUT)?.map(|v| v.value());
        if layout.is_none() {
            // An older store: its ended jobs are read once from its events.
            let mut ended = w.open_table(ENDED)?;
            let events = w.open_table(EVENTS)?;
            for kv in events.iter()? {
                let (_, v) = kv?;
                let e = v1::JobEvent::decode(v.value())?;
                match end_of(&e) {
                    Some(Some(end)) => {
                        ended.insert(e.job_id, end)?;
                    }
                    Some(None) => {
                        ended.remove(e.job_id)?;
                    }
                    None => {}
                }
            }
            drop((ended, events));
            w.open_table(META)?.insert(LAYOUT, 1)?;
        }
        w.commit()?;
        Ok(Store {
            db,
            #[cfg(test)]
            fail_commits: Default::default(),
        })
    }

    /// Writes events and job changes in one transaction (`None` = the job ended: removed), with
    /// the changes to the ended jobs in order (`None`: the job's end no longer counts).
    pub fn commit(
        &self,
        events: &[v1::JobEvent],
        jobs: &[(u64, Option<StoredJob>)],
        ends: &[(u64, Option<End>)],
    ) -> Result<(), StoreError> {
        #[cfg(test)]
        if self.fail_commits.load(std::sync::atomic::Ordering::Relaxed) {
            return Err("commit failed (test)".into());
        }
        let w = self.db.begin_write()?;
        {
            let mut t = w.open_table(EVENTS)?;
            for e in events {
                t.insert(e.sequence, e.encode_to_vec().as_slice())?;
            }
            put_jobs(&mut w.open_table(JOBS)?, jobs)?;
            let mut t = w.open_table(ENDED)?;
            for &(id, end) in ends {
                match end {
                    Some(end) => t.insert(id, end)?,
                    None => t.remove(id)?,
                };
            }
        }
        w.commit()?;
        Ok(())
    }

    /// How job `id`'s run ended here, if it did.
    pub fn ended(&self, id: u64) -> Result<Option<End>, StoreError> {
        let r = self.db.begin_read()?;
        Ok(r.open_table(ENDED)?.get(id)?.map(|v| v.value()))
    }

    /// The events of sequences `from..to`, in order.
    pub fn events(&self, from: u64, to: u64) -> Result<Vec<v1::JobEvent>, StoreError> {
        let r = self.db.begin_read()?;
        let mut out = Vec::new();
        for kv in r.open_table(EVENTS)?.range(from..to)? {
            let (_, v) = kv?;
            out.push(v1::JobEvent::decode(v.value())?);
        }
        Ok(out)
    }

    /// Records `epoch` as the newest lease epoch that has called (an older one is kept).
    pub fn save_epoch(&self, epoch: u64) -> Result<(), StoreError> {
        #[cfg(test)]
        if self.fail_commits.load(std::sync::atomic::Ordering::Relaxed) {
            return Err("commit failed (test)".into());
        }
        let w = self.db.begin_write()?;
        {
            let mut t = w.open_table(META)?;
            let old = t.get(EPOCH)?.map_or(0, |v| v.value());
            t.insert(EPOCH, old.max(epoch))?;
        }
        w.commit()?;
        Ok(())
    }

    /// Records an advance reservation (`Some`) or forgets it (`None`), with job changes (a
    /// cancelled reservation's jobs no longer name it), in one transaction.
    pub fn save_reservation(
        &self,
        id: u64,
        r: Option<&v1::AdvanceReservation>,
        jobs: &[(u64, Option<StoredJob>)],
    ) -> Result<(), StoreError> {
        #[cfg(test)]
        if self.fail_commits.load(std::sync::atomic::Ordering::Relaxed) {
            return Err("commit failed (test)".into());
        }
        let w = self.db.begin_write()?;
        {
            let mut t = w.open_table(RESERVATIONS)?;
            match r {
                Some(r) => {
                    t.insert(id, r.encode_to_vec().as_slice())?;
                }
                None => {
                    t.remove(id)?;
                }
            }
            put_jobs(&mut w.open_table(JOBS)?, jobs)?;
        }
        w.commit()?;
        Ok(())
    }

    /// The advance reservations stored, by id.
    pub fn load_reservations(&self) -> Result<Vec<v1::AdvanceReservation>, StoreError> {
        let r = self.db.begin_read()?;
        let mut out = Vec::new();
        for kv in r.open_table(RESERVATIONS)?.iter()? {
            let (_, v) = kv?;
            out.push(v1::AdvanceReservation::decode(v.value())?);
        }
        Ok(out)
    }

    /// What a restart needs: the jobs not ended, the newest `window` events with the ends of
    /// their jobs, and the newest epoch.
    pub fn load(&self, window: usize) -> Result<Loaded, StoreError> {
        let r = self.db.begin_read()?;
        let mut out = Loaded::default();
        for kv in r.open_table(JOBS)?.iter()? {
            let (_, v) = kv?;
            out.jobs.push(StoredJob::decode(v.value())?);
        }
        for kv in r.open_table(EVENTS)?.iter()?.rev().take(window) {
            let (_, v) = kv?;
            out.events.push(v1::JobEvent::decode(v.value())?);
        }
        out.events.reverse();
        out.last_sequence = out.events.last().map_or(0, |e| e.sequence);
        let ended = r.open_table(ENDED)?;
        out.max_ended = ended.last()?.map_or(0, |(k, _)| k.value());
        let mut seen = std::collections::HashSet::new();
        for e in &out.events {
            if seen.insert(e.job_id)
                && let Some(end) = ended.get(e.job_id)?
            {
                out.ended.push((e.job_id, end.value()));
            }
        }
        out.epoch = (r.open_table(META)?.get(EPOCH)?).map_or(0, |v| v.value());
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store written before the ended jobs had their own table gets it from its events when
    /// first opened: an end counts, a withdrawal takes it back.
    #[test]
    fn an_older_store_gets_its_ended_jobs_from_its_events() {
        let dir = tempfile::tempdir().unwrap();
        {
            let db = Database::create(dir.path().join("state.redb")).unwrap();
            let w = db.begin_write().unwrap();
            {
                let mut t = w.open_table(EVENTS).unwrap();
                let ev = |sequence, job_id, state: v1::JobState, withdrawn| v1::JobEvent {
                    sequence,
                    job_id,
                    run: 2,
                    state: state as i32,
                    withdrawn,
                    ..Default::default()
                };
                for e in [
                    ev(1, 1, v1::JobState::Queued, false),
                    ev(2, 1, v1::JobState::Failed, false),
                    ev(3, 2, v1::JobState::Cancelled, true),
                    ev(4, 3, v1::JobState::Completed, false),
                    ev(5, 3, v1::JobState::Cancelled, true),
                ] {
                    t.insert(e.sequence, e.encode_to_vec().as_slice()).unwrap();
                }
            }
            w.commit().unwrap();
        }
        let s = Store::open(dir.path()).unwrap();
        assert_eq!(s.ended(1).unwrap(), Some((v1::JobState::Failed as i32, 2)));
        assert_eq!(s.ended(2).unwrap(), None);
        assert_eq!(s.ended(3).unwrap(), None);
        let loaded = s.load(2).unwrap();
        assert_eq!(loaded.last_sequence, 5);
        assert_eq!(loaded.events.len(), 2);
    }
}
