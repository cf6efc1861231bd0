//! Durable state of a local scheduler in an embedded `redb` database: the jobs not yet ended
//! (their Enqueue request, state, machine and start) and the event log, keyed by sequence number
//! for JobEvents resumption; a granted start claim and a multi-node job's parts are kept with its
//! job; and the advance reservations held. Every change is committed before it is acknowledged.

use gridsched_proto::v1;
use prost::Message;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use std::path::Path;

const JOBS: TableDefinition<u64, &[u8]> = TableDefinition::new("jobs");
const EVENTS: TableDefinition<u64, &[u8]> = TableDefinition::new("events");
const RESERVATIONS: TableDefinition<u64, &[u8]> = TableDefinition::new("reservations");

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
        let db = Database::create(dir.join("state.redb"))?;
        let w = db.begin_write()?;
        w.open_table(JOBS)?;
        w.open_table(EVENTS)?;
        w.open_table(RESERVATIONS)?;
        w.commit()?;
        Ok(Store {
            db,
            #[cfg(test)]
            fail_commits: Default::default(),
        })
    }

    /// Writes events and job changes in one transaction (`None` = the job ended: removed).
    pub fn commit(
        &self,
        events: &[v1::JobEvent],
        jobs: &[(u64, Option<StoredJob>)],
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

    /// Everything stored: the jobs not ended and the event log in sequence order.
    pub fn load(&self) -> Result<(Vec<StoredJob>, Vec<v1::JobEvent>), StoreError> {
        let r = self.db.begin_read()?;
        let mut jobs = Vec::new();
        for kv in r.open_table(JOBS)?.iter()? {
            let (_, v) = kv?;
            jobs.push(StoredJob::decode(v.value())?);
        }
        let mut events = Vec::new();
        for kv in r.open_table(EVENTS)?.iter()? {
            let (_, v) = kv?;
            events.push(v1::JobEvent::decode(v.value())?);
        }
        Ok((jobs, events))
    }
}
