//! The durable job store of the meta-scheduler, on `redb`.
//!
//! Every accepted job and every state change is committed here before the client gets its
//! answer; a batch of submissions is one transaction. Jobs are stored as encoded `v1::Job`
//! messages keyed by id, next to the idempotency tokens and the id / event counters, so a
//! restarted meta-scheduler finds every acknowledged job as it was. Advance reservations are kept
//! the same way, written as PENDING before their site is asked (so that one a crash leaves
//! unconfirmed is found and taken back) and as HELD once it has admitted them.
//!
//! The layout has a schema version, kept in the counters table. Opening a store written by an
//! older build runs the migrations from its version to [`SCHEMA_VERSION`] in one transaction, in
//! order; a store written by a newer build is refused with an error naming both versions (the
//! service does not start rather than misread it). A store without a version was written before
//! versions were recorded, in the layout of version 1.

use crate::state::Decision;
use gridsched_proto::v1;
use prost::Message;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use std::path::Path;

const JOBS: TableDefinition<u64, &[u8]> = TableDefinition::new("jobs");
const TOKENS: TableDefinition<&str, u64> = TableDefinition::new("tokens");
const COUNTERS: TableDefinition<&str, u64> = TableDefinition::new("counters");
const DECISIONS: TableDefinition<u64, &[u8]> = TableDefinition::new("decisions");
const SITE_SEQ: TableDefinition<&str, u64> = TableDefinition::new("site_sequences");
const RESERVATIONS: TableDefinition<u64, &[u8]> = TableDefinition::new("reservations");

/// The version of the store's layout this build writes.
pub const SCHEMA_VERSION: u64 = 1;

/// A change of layout: from version `n` (its index + 1) to `n + 1`.
type Migration = fn(&redb::WriteTransaction) -> Result<(), StoreError>;

/// The migrations, in order: `MIGRATIONS[n - 1]` takes a store from version `n` to `n + 1`.
const MIGRATIONS: &[Migration] = &[];

/// Brings the store of `tx` to `target` with `migrations` (as [`MIGRATIONS`]): its version, or
/// 1 for a store written before versions were recorded (or a new one).
fn migrate(
    tx: &redb::WriteTransaction,
    target: u64,
    migrations: &[Migration],
) -> Result<(), StoreError> {
    let found = tx
        .open_table(COUNTERS)
        .map_err(err)?
        .get("schema_version")
        .map_err(err)?
        .map_or(1, |v| v.value());
    if found > target {
        return Err(StoreError(format!(
            "schema version {found}, newer than this build's {target}: run the gridsched that \
             wrote it (or a newer one), or move the state directory away"
        )));
    }
    for version in found..target {
        let step = usize::try_from(version - 1)
            .ok()
            .and_then(|k| migrations.get(k))
            .ok_or_else(|| StoreError(format!("no migration from schema version {version}")))?;
        step(tx)?;
    }
    tx.open_table(COUNTERS)
        .map_err(err)?
        .insert("schema_version", target)
        .map_err(err)?;
    Ok(())
}

/// A store failure, reported to clients as INTERNAL.
#[derive(Debug, thiserror::Error)]
#[error("store: {0}")]
pub struct StoreError(String);

fn err(e: impl std::fmt::Display) -> StoreError {
    StoreError(e.to_string())
}

/// Everything the store holds, as loaded at start.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Every job, by increasing id.
    pub jobs: Vec<v1::Job>,
    /// `(user \0 token, job id)` pairs.
    pub tokens: Vec<(String, u64)>,
    /// Last job id given.
    pub last_id: u64,
    /// Last event sequence given.
    pub last_sequence: u64,
    /// How each job was classified and dispatched.
    pub decisions: Vec<(u64, Decision)>,
    /// Per site name: the last local-scheduler event applied.
    pub site_seqs: Vec<(String, u64)>,
    /// The advance reservations, by id.
    pub reservations: Vec<v1::AdvanceReservation>,
    /// Last reservation id given.
    pub last_reservation: u64,
}

/// The redb database.
#[derive(Debug)]
pub struct Store {
    db: Database,
}

/// One write: jobs to put, tokens to record and the counters after it.
#[derive(Debug, Default)]
pub struct Write<'a> {
    /// Jobs to insert or overwrite.
    pub jobs: Vec<&'a v1::Job>,
    /// Tokens to record.
    pub tokens: Vec<(String, u64)>,
    /// Last job id given, after the write.
    pub last_id: u64,
    /// Last event sequence given, after the write.
    pub last_sequence: u64,
    /// Decisions to record.
    pub decisions: Vec<(u64, &'a Decision)>,
    /// Per site name: the last local-scheduler event applied.
    pub site_seqs: Vec<(&'a str, u64)>,
}

impl Store {
    /// Opens (or creates) the store in `dir`.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        std::fs::create_dir_all(dir).map_err(err)?;
        let db = Database::create(dir.join("meta.redb")).map_err(err)?;
        let tx = db.begin_write().map_err(err)?;
        tx.open_table(JOBS).map_err(err)?;
        tx.open_table(TOKENS).map_err(err)?;
        tx.open_table(COUNTERS).map_err(err)?;
        tx.open_table(DECISIONS).map_err(err)?;
        tx.open_table(SITE_SEQ).map_err(err)?;
        tx.open_table(RESERVATIONS).map_err(err)?;
        let path = dir.join("meta.redb");
        migrate(&tx, SCHEMA_VERSION, MIGRATIONS)
            .map_err(|e| StoreError(format!("{}: {}", path.display(), e.0)))?;
        tx.commit().map_err(err)?;
        Ok(Store { db })
    }

    /// Reads everything.
    pub fn load(&self) -> Result<Loaded, StoreError> {
        let tx = self.db.begin_read().map_err(err)?;
        let mut out = Loaded::default();
        let jobs = tx.open_table(JOBS).map_err(err)?;
        for row in jobs.iter().map_err(err)? {
            let (_, v) = row.map_err(err)?;
            out.jobs.push(v1::Job::decode(v.value()).map_err(err)?);
        }
        let tokens = tx.open_table(TOKENS).map_err(err)?;
        for row in tokens.iter().map_err(err)? {
            let (k, v) = row.map_err(err)?;
            out.tokens.push((k.value().to_owned(), v.value()));
        }
        let counters = tx.open_table(COUNTERS).map_err(err)?;
        out.last_id = counters
            .get("last_id")
            .map_err(err)?
            .map_or(0, |v| v.value());
        out.last_sequence = counters
            .get("last_sequence")
            .map_err(err)?
            .map_or(0, |v| v.value());
        let decisions = tx.open_table(DECISIONS).map_err(err)?;
        for row in decisions.iter().map_err(err)? {
            let (k, v) = row.map_err(err)?;
            let e = v1::ExplainResponse::decode(v.value()).map_err(err)?;
            out.decisions.push((
                k.value(),
                Decision {
                    priority: e.priority,
                    dispatch: e.dispatch,
                },
            ));
        }
        let seqs = tx.open_table(SITE_SEQ).map_err(err)?;
        for row in seqs.iter().map_err(err)? {
            let (k, v) = row.map_err(err)?;
            out.site_seqs.push((k.value().to_owned(), v.value()));
        }
        out.last_reservation = counters
            .get("last_reservation")
            .map_err(err)?
            .map_or(0, |v| v.value());
        let reservations = tx.open_table(RESERVATIONS).map_err(err)?;
        for row in reservations.iter().map_err(err)? {
            let (_, v) = row.map_err(err)?;
            out.reservations
                .push(v1::AdvanceReservation::decode(v.value()).map_err(err)?);
        }
        Ok(out)
    }

    /// Records an advance reservation (`Some`) or forgets it (`None`), with the last reservation
    /// id given, in one transaction.
    pub fn save_reservation(
        &self,
        id: u64,
        r: Option<&v1::AdvanceReservation>,
        last_reservation: u64,
    ) -> Result<(), StoreError> {
        let tx = self.db.begin_write().map_err(err)?;
        {
            let mut t = tx.open_table(RESERVATIONS).map_err(err)?;
            match r {
                Some(r) => {
                    t.insert(id, r.encode_to_vec().as_slice()).map_err(err)?;
                }
                None => {
                    t.remove(id).map_err(err)?;
                }
            }
            let mut counters = tx.open_table(COUNTERS).map_err(err)?;
            counters
                .insert("last_reservation", last_reservation)
                .map_err(err)?;
        }
        tx.commit().map_err(err)
    }

    /// Commits one write durably (one transaction, fsynced).
    pub fn commit(&self, w: &Write<'_>) -> Result<(), StoreError> {
        let tx = self.db.begin_write().map_err(err)?;
        {
            let mut jobs = tx.open_table(JOBS).map_err(err)?;
            let mut buf = Vec::new();
            for j in &w.jobs {
                buf.clear();
                j.encode(&mut buf).map_err(err)?;
                jobs.insert(j.id, buf.as_slice()).map_err(err)?;
            }
            let mut tokens = tx.open_table(TOKENS).map_err(err)?;
            for (k, id) in &w.tokens {
                tokens.insert(k.as_str(), *id).map_err(err)?;
            }
            let mut counters = tx.open_table(COUNTERS).map_err(err)?;
            counters.insert("last_id", w.last_id).map_err(err)?;
            counters
                .insert("last_sequence", w.last_sequence)
                .map_err(err)?;
            let mut decisions = tx.open_table(DECISIONS).map_err(err)?;
            for (id, d) in &w.decisions {
                buf.clear();
                v1::ExplainResponse {
                    priority: d.priority.clone(),
                    dispatch: d.dispatch.clone(),
                    ..Default::default()
                }
                .encode(&mut buf)
                .map_err(err)?;
                decisions.insert(*id, buf.as_slice()).map_err(err)?;
            }
            let mut seqs = tx.open_table(SITE_SEQ).map_err(err)?;
            for (site, seq) in &w.site_seqs {
                seqs.insert(*site, *seq).map_err(err)?;
            }
        }
        tx.commit().map_err(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn committed_jobs_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let job = v1::Job {
            id: 7,
            state: v1::JobState::Accepted.into(),
            ..Default::default()
        };
        {
            let s = Store::open(dir.path()).unwrap();
            s.commit(&Write {
                jobs: vec![&job],
                tokens: vec![("u\0t".into(), 7)],
                last_id: 7,
                last_sequence: 3,
                decisions: vec![(7, &Decision::default())],
                site_seqs: vec![("alpha", 42)],
            })
            .unwrap();
        }
        let s = Store::open(dir.path()).unwrap();
        let l = s.load().unwrap();
        assert_eq!(l.jobs, vec![job]);
        assert_eq!(l.tokens, vec![("u\0t".to_string(), 7)]);
        assert_eq!((l.last_id, l.last_sequence), (7, 3));
        assert_eq!(l.site_seqs, vec![("alpha".to_string(), 42)]);
        assert_eq!(l.decisions.len(), 1);
    }

    fn version(dir: &Path) -> Option<u64> {
        let db = Database::create(dir.join("meta.redb")).unwrap();
        let tx = db.begin_read().unwrap();
        let counters = tx.open_table(COUNTERS).unwrap();
        counters.get("schema_version").unwrap().map(|v| v.value())
    }

    fn set_version(dir: &Path, v: Option<u64>) {
        let db = Database::create(dir.join("meta.redb")).unwrap();
        let tx = db.begin_write().unwrap();
        {
            let mut counters = tx.open_table(COUNTERS).unwrap();
            match v {
                Some(v) => counters.insert("schema_version", v).unwrap(),
                None => counters.remove("schema_version").unwrap(),
            };
        }
        tx.commit().unwrap();
    }

    /// A new store records this build's version; one written before versions were recorded is
    /// read as version 1 and keeps its jobs; one from a newer build is refused, naming both
    /// versions, and left as it was.
    #[test]
    fn the_schema_version_is_recorded_and_a_newer_store_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let job = v1::Job {
            id: 3,
            ..Default::default()
        };
        Store::open(dir.path())
            .unwrap()
            .commit(&Write {
                jobs: vec![&job],
                last_id: 3,
                ..Default::default()
            })
            .unwrap();
        assert_eq!(version(dir.path()), Some(SCHEMA_VERSION));
        set_version(dir.path(), None);
        let l = Store::open(dir.path()).unwrap().load().unwrap();
        assert_eq!(l.jobs, vec![job]);
        assert_eq!(version(dir.path()), Some(SCHEMA_VERSION));
        set_version(dir.path(), Some(SCHEMA_VERSION + 1));
        let e = Store::open(dir.path()).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "store: {}: schema version {}, newer than this build's {}: run the gridsched \
                 that wrote it (or a newer one), or move the state directory away",
                dir.path().join("meta.redb").display(),
                SCHEMA_VERSION + 1,
                SCHEMA_VERSION
            )
        );
        assert_eq!(version(dir.path()), Some(SCHEMA_VERSION + 1));
    }

    /// Migrations run in order from the store's version to the target, in the open's
    /// transaction; a version without its migration is an error.
    #[test]
    fn migrations_run_in_order_up_to_the_target() {
        fn to_2(tx: &redb::WriteTransaction) -> Result<(), StoreError> {
            let mut c = tx.open_table(COUNTERS).map_err(err)?;
            c.insert("steps", 1).map_err(err)?;
            Ok(())
        }
        fn to_3(tx: &redb::WriteTransaction) -> Result<(), StoreError> {
            let mut c = tx.open_table(COUNTERS).map_err(err)?;
            let steps = c.get("steps").map_err(err)?.map_or(0, |v| v.value());
            c.insert("steps", steps * 10 + 2).map_err(err)?;
            Ok(())
        }
        let dir = tempfile::tempdir().unwrap();
        drop(Store::open(dir.path()).unwrap());
        let db = Database::create(dir.path().join("meta.redb")).unwrap();
        let tx = db.begin_write().unwrap();
        migrate(&tx, 3, &[to_2, to_3]).unwrap();
        tx.commit().unwrap();
        let tx = db.begin_read().unwrap();
        let c = tx.open_table(COUNTERS).unwrap();
        let read = |k: &str| c.get(k).unwrap().map(|v| v.value());
        assert_eq!((read("steps"), read("schema_version")), (Some(12), Some(3)));
        let tx = db.begin_write().unwrap();
        let e = migrate(&tx, 5, &[to_2, to_3]).unwrap_err();
        assert_eq!(e.to_string(), "store: no migration from schema version 3");
    }
}
