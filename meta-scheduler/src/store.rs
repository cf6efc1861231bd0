//! The durable job store of the meta-scheduler, on `redb`.
//!
//! Every accepted job and every state change is committed here before the client gets its
//! answer; a batch of submissions is one transaction. Jobs are stored as encoded `v1::Job`
//! messages keyed by id, next to the idempotency tokens and the id / event counters, so a
//! restarted meta-scheduler finds every acknowledged job as it was. Advance reservations are kept
//! the same way, written as PENDING before their site is asked (so that one a crash leaves
//! unconfirmed is found and taken back) and as HELD once it has admitted them.
//!
//! The store also holds the history the meta-scheduler no longer keeps in memory (see
//! [`crate::history`]): the ids of the jobs not finished (all a restart loads), the finished
//! jobs' indexes by user, site, cluster and state (for `list`), and the classifier's snapshot
//! (its window of deadline margins, written with the jobs it classified), so a restart costs the
//! live work, not the history.
//!
//! The layout has a schema version, kept in the counters table. Opening a store written by an
//! older build runs the migrations from its version to [`SCHEMA_VERSION`] in one transaction, in
//! order; a store written by a newer build is refused with an error naming both versions (the
//! service does not start rather than misread it). A store without a version was written before
//! versions were recorded, in the layout of version 1. Version 2 added the open-job set, the
//! finished jobs' indexes and the snapshots.

use crate::state::Decision;
use gridsched_proto::v1;
use prost::Message;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use serde::Deserialize;
use std::path::Path;

const JOBS: TableDefinition<u64, &[u8]> = TableDefinition::new("jobs");
const TOKENS: TableDefinition<&str, u64> = TableDefinition::new("tokens");
const COUNTERS: TableDefinition<&str, u64> = TableDefinition::new("counters");
const DECISIONS: TableDefinition<u64, &[u8]> = TableDefinition::new("decisions");
const SITE_SEQ: TableDefinition<&str, u64> = TableDefinition::new("site_sequences");
const RESERVATIONS: TableDefinition<u64, &[u8]> = TableDefinition::new("reservations");
/// The ids of the jobs not finished.
const OPEN: TableDefinition<u64, ()> = TableDefinition::new("open_jobs");
/// Finished jobs by (user, id).
const BY_USER: TableDefinition<(&str, u64), ()> = TableDefinition::new("finished_by_user");
/// Finished jobs by (site, id); a split job under each of its fragments' sites.
const BY_SITE: TableDefinition<(&str, u64), ()> = TableDefinition::new("finished_by_site");
/// Finished jobs by (cluster, id).
const BY_CLUSTER: TableDefinition<(&str, u64), ()> = TableDefinition::new("finished_by_cluster");
/// Finished jobs by (state, id).
const BY_STATE: TableDefinition<(i32, u64), ()> = TableDefinition::new("finished_by_state");
/// Snapshots by name: `classifier`, the Deadline heuristic's window (little-endian i64s).
const SNAPSHOTS: TableDefinition<&str, &[u8]> = TableDefinition::new("snapshots");

/// The `[store]` section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StoreConfig {
    /// The store's page cache, in MiB (redb's own default is a GiB, most of which a long
    /// history would fill and keep).
    pub cache_mib: usize,
    /// Every commit also saves the allocator's state, so that opening the store after a crash
    /// does not walk the whole file (a slower commit for a restart that does not grow with the
    /// history).
    pub quick_repair: bool,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            cache_mib: 16,
            quick_repair: true,
        }
    }
}

/// The version of the store's layout this build writes.
pub const SCHEMA_VERSION: u64 = 2;

/// A change of layout: from version `n` (its index + 1) to `n + 1`.
type Migration = fn(&redb::WriteTransaction) -> Result<(), StoreError>;

/// The migrations, in order: `MIGRATIONS[n - 1]` takes a store from version `n` to `n + 1`.
const MIGRATIONS: &[Migration] = &[index_history];

/// Version 1 → 2: the open-job set and the finished jobs' indexes, from every job.
fn index_history(tx: &redb::WriteTransaction) -> Result<(), StoreError> {
    let jobs = tx.open_table(JOBS).map_err(err)?;
    let mut ix = Indexes::open(tx)?;
    for row in jobs.iter().map_err(err)? {
        let (_, v) = row.map_err(err)?;
        ix.put(&v1::Job::decode(v.value()).map_err(err)?)?;
    }
    Ok(())
}

/// The tables that say which jobs are open and index the finished ones.
struct Indexes<'t> {
    open: redb::Table<'t, u64, ()>,
    by_user: redb::Table<'t, (&'static str, u64), ()>,
    by_site: redb::Table<'t, (&'static str, u64), ()>,
    by_cluster: redb::Table<'t, (&'static str, u64), ()>,
    by_state: redb::Table<'t, (i32, u64), ()>,
}

impl<'t> Indexes<'t> {
    fn open(tx: &'t redb::WriteTransaction) -> Result<Indexes<'t>, StoreError> {
        Ok(Indexes {
            open: tx.open_table(OPEN).map_err(err)?,
            by_user: tx.open_table(BY_USER).map_err(err)?,
            by_site: tx.open_table(BY_SITE).map_err(err)?,
            by_cluster: tx.open_table(BY_CLUSTER).map_err(err)?,
            by_state: tx.open_table(BY_STATE).map_err(err)?,
        })
    }

    /// Files `job` as it is now: open, or finished under its user, sites, cluster and state (a
    /// finished job never changes again).
    fn put(&mut self, job: &v1::Job) -> Result<(), StoreError> {
        if !job.state().is_terminal() {
            self.open.insert(job.id, ()).map_err(err)?;
            return Ok(());
        }
        self.open.remove(job.id).map_err(err)?;
        let user = job.spec.as_ref().map_or("", |s| s.user.as_str());
        self.by_user.insert((user, job.id), ()).map_err(err)?;
        for site in job.site.iter().chain(job.fragments.iter().map(|f| &f.site)) {
            self.by_site
                .insert((site.as_str(), job.id), ())
                .map_err(err)?;
        }
        if let Some(c) = &job.cluster {
            self.by_cluster
                .insert((c.as_str(), job.id), ())
                .map_err(err)?;
        }
        self.by_state.insert((job.state, job.id), ()).map_err(err)?;
        Ok(())
    }
}

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

/// What a restart needs, as loaded at start: the live work, not the history.
#[derive(Debug, Default)]
pub struct Loaded {
    /// The jobs not finished, by increasing id.
    pub jobs: Vec<v1::Job>,
    /// Last job id given.
    pub last_id: u64,
    /// Last event sequence given.
    pub last_sequence: u64,
    /// How each job of `jobs` was classified and dispatched.
    pub decisions: Vec<(u64, Decision)>,
    /// Per site name: the last local-scheduler event applied.
    pub site_seqs: Vec<(String, u64)>,
    /// The advance reservations, by id.
    pub reservations: Vec<v1::AdvanceReservation>,
    /// Last reservation id given.
    pub last_reservation: u64,
    /// The classifier's snapshot, if one was written.
    pub classifier: Option<Vec<i64>>,
}

/// The redb database.
#[derive(Debug)]
pub struct Store {
    db: Database,
    quick_repair: bool,
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
    /// The classifier's snapshot after the write (when it classified jobs).
    pub classifier: Option<Vec<i64>>,
}

/// A consistent view of the store (one read transaction): what a read of the history sees.
pub struct Reader(redb::ReadTransaction);

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reader")
    }
}

/// Finished jobs of one page of a list.
#[derive(Debug, Default)]
pub struct FinishedPage {
    /// The matching finished jobs, by increasing id.
    pub jobs: Vec<v1::Job>,
    /// Set when the look stopped at its budget: every id up to this one was looked at, none
    /// beyond.
    pub looked_to: Option<u64>,
}

fn decode_decision(bytes: &[u8]) -> Result<Decision, StoreError> {
    let e = v1::ExplainResponse::decode(bytes).map_err(err)?;
    Ok(Decision {
        priority: e.priority,
        dispatch: e.dispatch,
    })
}

impl Store {
    /// Opens (or creates) the store in `dir`.
    pub fn open(dir: &Path, cfg: &StoreConfig) -> Result<Store, StoreError> {
        std::fs::create_dir_all(dir).map_err(err)?;
        let path = dir.join("meta.redb");
        let db = redb::Builder::new()
            .set_cache_size(cfg.cache_mib.max(1) << 20)
            .create(&path)
            .map_err(|e| StoreError(format!("{}: {e}", path.display())))?;
        let mut tx = db.begin_write().map_err(err)?;
        tx.set_quick_repair(cfg.quick_repair);
        tx.open_table(JOBS).map_err(err)?;
        tx.open_table(TOKENS).map_err(err)?;
        tx.open_table(COUNTERS).map_err(err)?;
        tx.open_table(DECISIONS).map_err(err)?;
        tx.open_table(SITE_SEQ).map_err(err)?;
        tx.open_table(RESERVATIONS).map_err(err)?;
        tx.open_table(SNAPSHOTS).map_err(err)?;
        drop(Indexes::open(&tx)?);
        migrate(&tx, SCHEMA_VERSION, MIGRATIONS)
            .map_err(|e| StoreError(format!("{}: {}", path.display(), e.0)))?;
        tx.commit().map_err(err)?;
        Ok(Store {
            db,
            quick_repair: cfg.quick_repair,
        })
    }

    fn begin_write(&self) -> Result<redb::WriteTransaction, StoreError> {
        let mut tx = self.db.begin_write().map_err(err)?;
        tx.set_quick_repair(self.quick_repair);
        Ok(tx)
    }

    /// A consistent view for reads of the history.
    pub fn reader(&self) -> Result<Reader, StoreError> {
        self.db.begin_read().map(Reader).map_err(err)
    }

    /// Reads what a restart needs: the open jobs with their decisions, the counters, the
    /// sites' sequences, the reservations and the classifier's snapshot.
    pub fn load(&self) -> Result<Loaded, StoreError> {
        let tx = self.db.begin_read().map_err(err)?;
        let mut out = Loaded::default();
        let jobs = tx.open_table(JOBS).map_err(err)?;
        let decisions = tx.open_table(DECISIONS).map_err(err)?;
        for row in tx.open_table(OPEN).map_err(err)?.iter().map_err(err)? {
            let id = row.map_err(err)?.0.value();
            let Some(v) = jobs.get(id).map_err(err)? else {
                return Err(StoreError(format!(
                    "open job {id} is not in the jobs table"
                )));
            };
            out.jobs.push(v1::Job::decode(v.value()).map_err(err)?);
            if let Some(d) = decisions.get(id).map_err(err)? {
                out.decisions.push((id, decode_decision(d.value())?));
            }
        }
        let counters = tx.open_table(COUNTERS).map_err(err)?;
        let counter = |k: &str| -> Result<u64, StoreError> {
            Ok(counters.get(k).map_err(err)?.map_or(0, |v| v.value()))
        };
        out.last_id = counter("last_id")?;
        out.last_sequence = counter("last_sequence")?;
        out.last_reservation = counter("last_reservation")?;
        let seqs = tx.open_table(SITE_SEQ).map_err(err)?;
        for row in seqs.iter().map_err(err)? {
            let (k, v) = row.map_err(err)?;
            out.site_seqs.push((k.value().to_owned(), v.value()));
        }
        let reservations = tx.open_table(RESERVATIONS).map_err(err)?;
        for row in reservations.iter().map_err(err)? {
            let (_, v) = row.map_err(err)?;
            out.reservations
                .push(v1::AdvanceReservation::decode(v.value()).map_err(err)?);
        }
        let snapshots = tx.open_table(SNAPSHOTS).map_err(err)?;
        out.classifier = snapshots.get("classifier").map_err(err)?.map(|v| {
            v.value()
                .chunks_exact(8)
                .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect()
        });
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
        let tx = self.begin_write()?;
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
        let tx = self.begin_write()?;
        {
            let mut jobs = tx.open_table(JOBS).map_err(err)?;
            let mut ix = Indexes::open(&tx)?;
            let mut buf = Vec::new();
            for j in &w.jobs {
                buf.clear();
                j.encode(&mut buf).map_err(err)?;
                jobs.insert(j.id, buf.as_slice()).map_err(err)?;
                ix.put(j)?;
            }
            if let Some(margins) = &w.classifier {
                let bytes: Vec<u8> = margins.iter().flat_map(|m| m.to_le_bytes()).collect();
                tx.open_table(SNAPSHOTS)
                    .map_err(err)?
                    .insert("classifier", bytes.as_slice())
                    .map_err(err)?;
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

mod reader;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Filter;

    fn job(id: u64, state: v1::JobState, user: &str, site: &str) -> v1::Job {
        v1::Job {
            id,
            state: state.into(),
            spec: Some(v1::JobSpec {
                user: user.into(),
                ..Default::default()
            }),
            site: Some(site.into()),
            cluster: Some(site.into()),
            ..Default::default()
        }
    }

    /// A restart loads the open jobs and their decisions only, and the snapshot; the finished
    /// ones, their decisions and every token stay readable in the store.
    #[test]
    fn a_restart_loads_the_open_jobs_and_the_history_stays_readable() {
        use v1::JobState::*;
        let dir = tempfile::tempdir().unwrap();
        let running = job(7, Running, "ann", "alpha");
        let mut done = job(8, Queued, "ann", "alpha");
        {
            let s = Store::open(dir.path(), &StoreConfig::default()).unwrap();
            let d = Decision::default();
            s.commit(&Write {
                jobs: vec![&running, &done],
                tokens: vec![("ann\0t".into(), 8)],
                last_id: 8,
                last_sequence: 3,
                decisions: vec![(7, &d), (8, &d)],
                site_seqs: vec![("alpha", 42)],
                classifier: Some(vec![5, -3, 1 << 40]),
            })
            .unwrap();
            done.state = Completed.into();
            s.commit(&Write {
                jobs: vec![&done],
                last_id: 8,
                last_sequence: 4,
                ..Default::default()
            })
            .unwrap();
        }
        let s = Store::open(dir.path(), &StoreConfig::default()).unwrap();
        let l = s.load().unwrap();
        assert_eq!(l.jobs, vec![running]);
        assert_eq!(l.decisions.len(), 1);
        assert_eq!((l.last_id, l.last_sequence), (8, 4));
        assert_eq!(l.site_seqs, vec![("alpha".to_string(), 42)]);
        assert_eq!(l.classifier, Some(vec![5, -3, 1 << 40]));
        let r = s.reader().unwrap();
        assert_eq!(r.job(8).unwrap(), Some(done));
        assert_eq!(r.token("ann\0t").unwrap(), Some(8));
        assert!(r.decision(8).unwrap().is_some());
        assert_eq!(r.job(9).unwrap(), None);
    }

    /// The finished jobs of a page, through each index, past the token, up to the wanted
    /// count; a look that reaches its budget says how far it looked.
    #[test]
    fn finished_jobs_are_found_through_their_indexes() {
        use v1::JobState::*;
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(dir.path(), &StoreConfig::default()).unwrap();
        let jobs: Vec<v1::Job> = (1..=40)
            .map(|id| {
                let state = [Completed, Failed, Cancelled, Running][id as usize % 4];
                let user = if id % 3 == 0 { "bob" } else { "ann" };
                let site = if id % 5 == 0 { "beta" } else { "alpha" };
                let mut j = job(id, state, user, site);
                if id == 21 {
                    // A split job is found under each fragment's site.
                    j.site = None;
                    j.cluster = None;
                    j.fragments = ["alpha", "gamma"]
                        .map(|site| v1::Fragment {
                            site: site.into(),
                            ..Default::default()
                        })
                        .to_vec();
                }
                j
            })
            .collect();
        s.commit(&Write {
            jobs: jobs.iter().collect(),
            last_id: 40,
            ..Default::default()
        })
        .unwrap();
        let r = s.reader().unwrap();
        let none = Filter {
            states: &[],
            user: None,
            site: None,
            cluster: None,
        };
        let ids = |f: Filter<'_>, after: u64, want: usize, budget: usize| {
            let p = r.finished(&f, after, want, budget).unwrap();
            let naive: Vec<u64> = jobs
                .iter()
                .filter(|j| j.id > after && j.state().is_terminal() && f.matches(j))
                .map(|j| j.id)
                .take(want)
                .collect();
            let got: Vec<u64> = p.jobs.iter().map(|j| j.id).collect();
            if p.looked_to.is_none() {
                assert_eq!(got, naive, "against a scan of every job");
            }
            (got, p.looked_to)
        };
        // Every finished job (the states' index, merged), running ones left out.
        assert_eq!(ids(none, 0, 5, 100), (vec![1, 2, 4, 5, 6], None));
        assert_eq!(ids(none, 9, 3, 100), (vec![10, 12, 13], None));
        let failed = [Failed as i32];
        assert_eq!(
            ids(
                Filter {
                    states: &failed,
                    ..none
                },
                0,
                3,
                100
            ),
            (vec![1, 5, 9], None)
        );
        let running = [Running as i32];
        assert_eq!(
            ids(
                Filter {
                    states: &running,
                    ..none
                },
                0,
                3,
                100
            ),
            (vec![], None)
        );
        let bob = Filter {
            user: Some("bob"),
            ..none
        };
        assert_eq!(ids(bob, 0, 4, 100), (vec![6, 9, 12, 18], None));
        assert_eq!(
            ids(
                Filter {
                    site: Some("gamma"),
                    ..none
                },
                0,
                9,
                100
            ),
            (vec![21], None)
        );
        assert_eq!(
            ids(
                Filter {
                    site: Some("beta"),
                    ..none
                },
                0,
                9,
                100
            ),
            (vec![5, 10, 20, 25, 30, 40], None)
        );
        assert_eq!(
            ids(
                Filter {
                    cluster: Some("alpha"),
                    user: Some("bob"),
                    ..none
                },
                0,
                2,
                100
            ),
            (vec![6, 9], None)
        );
        // bob's failed jobs: 9, 21 and 33; a budget of 3 looks at his 6, 9 and 12 only.
        let bob_failed = Filter {
            states: &failed,
            ..bob
        };
        assert_eq!(ids(bob_failed, 0, 5, 3), (vec![9], Some(17)));
        assert_eq!(ids(bob_failed, 17, 5, 100), (vec![21, 33], None));
    }

    /// A store of version 1 (every job in one table, no indexes) opened by this build: the
    /// migration files its open jobs and indexes its finished ones.
    #[test]
    fn a_version_1_store_is_indexed_when_opened() {
        use v1::JobState::*;
        let dir = tempfile::tempdir().unwrap();
        let jobs = [
            job(1, Completed, "ann", "alpha"),
            job(2, Queued, "ann", "alpha"),
            job(3, Failed, "bob", "beta"),
        ];
        Store::open(dir.path(), &StoreConfig::default())
            .unwrap()
            .commit(&Write {
                jobs: jobs.iter().collect(),
                last_id: 3,
                ..Default::default()
            })
            .unwrap();
        {
            let db = Database::create(dir.path().join("meta.redb")).unwrap();
            let tx = db.begin_write().unwrap();
            tx.delete_table(OPEN).unwrap();
            tx.delete_table(BY_USER).unwrap();
            tx.delete_table(BY_SITE).unwrap();
            tx.delete_table(BY_CLUSTER).unwrap();
            tx.delete_table(BY_STATE).unwrap();
            tx.commit().unwrap();
        }
        set_version(dir.path(), None);
        let s = Store::open(dir.path(), &StoreConfig::default()).unwrap();
        assert_eq!(s.load().unwrap().jobs, vec![jobs[1].clone()]);
        let all = Filter {
            states: &[],
            user: None,
            site: None,
            cluster: None,
        };
        let r = s.reader().unwrap();
        let found = |f: Filter<'_>| {
            let p = r.finished(&f, 0, 10, 100).unwrap();
            p.jobs.iter().map(|j| j.id).collect::<Vec<_>>()
        };
        assert_eq!(found(all), vec![1, 3]);
        assert_eq!(
            found(Filter {
                user: Some("bob"),
                ..all
            }),
            vec![3]
        );
        drop((r, s));
        assert_eq!(version(dir.path()), Some(SCHEMA_VERSION));
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
        Store::open(dir.path(), &StoreConfig::default())
            .unwrap()
            .commit(&Write {
                jobs: vec![&job],
                last_id: 3,
                ..Default::default()
            })
            .unwrap();
        assert_eq!(version(dir.path()), Some(SCHEMA_VERSION));
        set_version(dir.path(), None);
        let l = Store::open(dir.path(), &StoreConfig::default())
            .unwrap()
            .load()
            .unwrap();
        assert_eq!(l.jobs, vec![job]);
        assert_eq!(version(dir.path()), Some(SCHEMA_VERSION));
        set_version(dir.path(), Some(SCHEMA_VERSION + 1));
        let e = Store::open(dir.path(), &StoreConfig::default())
            .unwrap_err()
            .to_string();
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
        drop(Store::open(dir.path(), &StoreConfig::default()).unwrap());
        set_version(dir.path(), Some(1));
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
