//! The embedded store: a redb file, `state_dir/meta.redb`, fsynced at every commit (the
//! default backend of [`super::Store`]).
//!
//! Tables: the jobs by id, the tokens, the counters (with the schema version), the decisions,
//! the sites' sequences, the reservations, the snapshots; the ids of the open jobs; and the
//! finished jobs' indexes, keyed (user, id), (site, id), (cluster, id) and (state, id), which a
//! list page walks in id order from its token, merging the states' ranges. A store without a
//! version was written before versions were recorded, in the layout of version 1 (every job in
//! one table); opening it indexes every job once.

use super::{
    Backend, FinishedPage, History, Loaded, Reader, RecordFilter, RecordPage, SCHEMA_VERSION,
    StoreConfig, StoreError, Write, decode_decision, err, newer,
};
use crate::accounting::{self, Accounts, Sums};
use crate::explain::Decision;
use crate::history::Filter;
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

/// Accounting records (encoded `v1::UsageRecord`) by job id.
const RECORDS: TableDefinition<u64, &[u8]> = TableDefinition::new("usage_records");
/// Records by (end, id).
const REC_BY_END: TableDefinition<(i64, u64), ()> = TableDefinition::new("usage_by_end");
/// Records by (user, end, id).
const REC_BY_USER: TableDefinition<(&str, i64, u64), ()> = TableDefinition::new("usage_by_user");
/// Records by (account, end, id).
const REC_BY_ACCOUNT: TableDefinition<(&str, i64, u64), ()> =
    TableDefinition::new("usage_by_account");
/// Rollups by (by, grain, bucket, key): [`Sums::to_bytes`].
const ROLLUPS: TableDefinition<(i32, i64, i64, &str), &[u8]> =
    TableDefinition::new("usage_rollups");

/// A change of layout: from version `n` (its index + 1) to `n + 1`.
type Migration = fn(&redb::WriteTransaction) -> Result<(), StoreError>;

/// The migrations, in order: `MIGRATIONS[n - 1]` takes a store from version `n` to `n + 1`.
const MIGRATIONS: &[Migration] = &[index_history, account_history];

/// Version 2 → 3: an accounting record for every finished job (without accounts: the tree is
/// not the store's), with its rollups.
fn account_history(tx: &redb::WriteTransaction) -> Result<(), StoreError> {
    let jobs = tx.open_table(JOBS).map_err(err)?;
    let none = Accounts::default();
    let mut records = Vec::new();
    for row in jobs.iter().map_err(err)? {
        let (_, v) = row.map_err(err)?;
        if let Some(r) = accounting::record(&v1::Job::decode(v.value()).map_err(err)?, &none) {
            records.push(r);
        }
    }
    keep_records(tx, &records)
}

/// Keeps the records not kept yet, with their indexes, and adds those to the rollups.
fn keep_records(
    tx: &redb::WriteTransaction,
    records: &[v1::UsageRecord],
) -> Result<(), StoreError> {
    if records.is_empty() {
        return Ok(());
    }
    let mut t = tx.open_table(RECORDS).map_err(err)?;
    let mut by_end = tx.open_table(REC_BY_END).map_err(err)?;
    let mut by_user = tx.open_table(REC_BY_USER).map_err(err)?;
    let mut by_account = tx.open_table(REC_BY_ACCOUNT).map_err(err)?;
    let mut new = Vec::with_capacity(records.len());
    for r in records {
        if t.get(r.job).map_err(err)?.is_some() {
            continue;
        }
        t.insert(r.job, r.encode_to_vec().as_slice()).map_err(err)?;
        by_end.insert((r.end_time, r.job), ()).map_err(err)?;
        by_user
            .insert((r.user.as_str(), r.end_time, r.job), ())
            .map_err(err)?;
        by_account
            .insert((r.account.as_str(), r.end_time, r.job), ())
            .map_err(err)?;
        new.push(r);
    }
    let mut rollups = tx.open_table(ROLLUPS).map_err(err)?;
    for ((by, grain, bucket, key), add) in accounting::rollups(new) {
        let k = (by, grain, bucket, key.as_str());
        let mut sums = rollups
            .get(k)
            .map_err(err)?
            .map_or_else(Sums::default, |v| Sums::from_bytes(v.value()));
        sums.add(&add);
        rollups.insert(k, sums.to_bytes().as_slice()).map_err(err)?;
    }
    Ok(())
}

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
        return Err(newer(found, target));
    }
    for version in found..target {
        let step = usize::try_from(version - 1)
            .ok()
            .and_then(|k| migrations.get(k))
            .ok_or_else(|| {
                StoreError::Failed(format!("no migration from schema version {version}"))
            })?;
        step(tx)?;
    }
    tx.open_table(COUNTERS)
        .map_err(err)?
        .insert("schema_version", target)
        .map_err(err)?;
    Ok(())
}

/// The redb database.
#[derive(Debug)]
pub struct Embedded {
    db: Database,
    quick_repair: bool,
}

impl Embedded {
    /// Opens (or creates) the store `dir/meta.redb`.
    pub fn open(dir: &Path, cfg: &StoreConfig) -> Result<Embedded, StoreError> {
        std::fs::create_dir_all(dir).map_err(err)?;
        let path = dir.join("meta.redb");
        let db = redb::Builder::new()
            .set_cache_size(cfg.cache_mib.max(1) << 20)
            .create(&path)
            .map_err(|e| StoreError::Failed(format!("{}: {e}", path.display())))?;
        let mut tx = db.begin_write().map_err(err)?;
        tx.set_quick_repair(cfg.quick_repair);
        tx.open_table(JOBS).map_err(err)?;
        tx.open_table(TOKENS).map_err(err)?;
        tx.open_table(COUNTERS).map_err(err)?;
        tx.open_table(DECISIONS).map_err(err)?;
        tx.open_table(SITE_SEQ).map_err(err)?;
        tx.open_table(RESERVATIONS).map_err(err)?;
        tx.open_table(SNAPSHOTS).map_err(err)?;
        tx.open_table(RECORDS).map_err(err)?;
        tx.open_table(REC_BY_END).map_err(err)?;
        tx.open_table(REC_BY_USER).map_err(err)?;
        tx.open_table(REC_BY_ACCOUNT).map_err(err)?;
        tx.open_table(ROLLUPS).map_err(err)?;
        drop(Indexes::open(&tx)?);
        migrate(&tx, SCHEMA_VERSION, MIGRATIONS)
            .map_err(|e| StoreError::Failed(format!("{}: {}", path.display(), e.message())))?;
        tx.commit().map_err(err)?;
        Ok(Embedded {
            db,
            quick_repair: cfg.quick_repair,
        })
    }

    fn begin_write(&self) -> Result<redb::WriteTransaction, StoreError> {
        let mut tx = self.db.begin_write().map_err(err)?;
        tx.set_quick_repair(self.quick_repair);
        Ok(tx)
    }
}

impl Backend for Embedded {
    /// A consistent view for reads of the history.
    fn reader(&self) -> Result<Reader, StoreError> {
        let tx = self.db.begin_read().map_err(err)?;
        Ok(Reader(Box::new(View(tx))))
    }

    /// Reads what a restart needs: the open jobs with their decisions, the counters, the
    /// sites' sequences, the reservations and the classifier's snapshot.
    fn load(&self) -> Result<Loaded, StoreError> {
        let tx = self.db.begin_read().map_err(err)?;
        let mut out = Loaded::default();
        let jobs = tx.open_table(JOBS).map_err(err)?;
        let decisions = tx.open_table(DECISIONS).map_err(err)?;
        for row in tx.open_table(OPEN).map_err(err)?.iter().map_err(err)? {
            let id = row.map_err(err)?.0.value();
            let Some(v) = jobs.get(id).map_err(err)? else {
                return Err(StoreError::Failed(format!(
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
        out.usage = snapshots
            .get("usage")
            .map_err(err)?
            .map(|v| v.value().to_vec());
        Ok(out)
    }

    /// Records an advance reservation (`Some`) or forgets it (`None`), with the last reservation
    /// id given, in one transaction.
    fn save_reservation(
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
    fn commit(&self, w: &Write<'_>) -> Result<(), StoreError> {
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
            if let Some(usage) = &w.usage {
                tx.open_table(SNAPSHOTS)
                    .map_err(err)?
                    .insert("usage", usage.as_slice())
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
        keep_records(&tx, &w.records)?;
        tx.commit().map_err(err)
    }
}
/// Ids ascending from one index range, or an error.
type Ids<'a> = Box<dyn Iterator<Item = Result<u64, StoreError>> + 'a>;

/// One read transaction of the embedded store.
struct View(redb::ReadTransaction);

impl History for View {
    /// Job `id`, if the store has it.
    fn job(&self, id: u64) -> Result<Option<v1::Job>, StoreError> {
        let t = self.0.open_table(JOBS).map_err(err)?;
        t.get(id)
            .map_err(err)?
            .map(|v| v1::Job::decode(v.value()).map_err(err))
            .transpose()
    }

    /// How job `id` was classified and dispatched, if recorded.
    fn decision(&self, id: u64) -> Result<Option<Decision>, StoreError> {
        let t = self.0.open_table(DECISIONS).map_err(err)?;
        t.get(id)
            .map_err(err)?
            .map(|v| decode_decision(v.value()))
            .transpose()
    }

    /// The job an idempotency key (`user \0 token`) was given to.
    fn token(&self, key: &str) -> Result<Option<u64>, StoreError> {
        let t = self.0.open_table(TOKENS).map_err(err)?;
        Ok(t.get(key).map_err(err)?.map(|v| v.value()))
    }

    /// The first `want` finished jobs past id `after` that `f` lets through, looking at no more
    /// than `budget` candidates of the most selective index the filter names (user, site,
    /// cluster, else the states').
    fn finished(
        &self,
        f: &Filter<'_>,
        after: u64,
        want: usize,
        budget: usize,
    ) -> Result<FinishedPage, StoreError> {
        let states = f.finished_states();
        let mut page = FinishedPage::default();
        if states.is_empty() || want == 0 {
            return Ok(page);
        }
        let from = after.saturating_add(1);
        let by_name =
            |table: TableDefinition<(&str, u64), ()>, name: &str| -> Result<Ids<'_>, StoreError> {
                let t = self.0.open_table(table).map_err(err)?;
                let range = t.range((name, from)..=(name, u64::MAX)).map_err(err)?;
                Ok(Box::new(
                    range.map(|r| r.map(|(k, _)| k.value().1).map_err(err)),
                ))
            };
        let mut sources: Vec<Ids<'_>> = Vec::new();
        if let Some(u) = f.user {
            sources.push(by_name(BY_USER, u)?);
        } else if let Some(s) = f.site {
            sources.push(by_name(BY_SITE, s)?);
        } else if let Some(c) = f.cluster {
            sources.push(by_name(BY_CLUSTER, c)?);
        } else {
            let t = self.0.open_table(BY_STATE).map_err(err)?;
            for s in states {
                let range = t.range((s, from)..=(s, u64::MAX)).map_err(err)?;
                sources.push(Box::new(
                    range.map(|r| r.map(|(k, _)| k.value().1).map_err(err)),
                ));
            }
        }
        let jobs = self.0.open_table(JOBS).map_err(err)?;
        let mut heads: Vec<Option<u64>> = Vec::with_capacity(sources.len());
        for s in &mut sources {
            heads.push(s.next().transpose()?);
        }
        let mut looked = 0;
        let mut last = None;
        // Merges the ascending sources: the least head next, each id once.
        while let Some(id) = heads.iter().flatten().min().copied() {
            for (k, h) in heads.iter_mut().enumerate() {
                if *h == Some(id) {
                    *h = sources[k].next().transpose()?;
                }
            }
            if last == Some(id) {
                continue;
            }
            last = Some(id);
            if looked == budget {
                page.looked_to = Some(id - 1);
                break;
            }
            looked += 1;
            let Some(v) = jobs.get(id).map_err(err)? else {
                continue;
            };
            let job = v1::Job::decode(v.value()).map_err(err)?;
            if f.matches(&job) {
                page.jobs.push(job);
                if page.jobs.len() == want {
                    break;
                }
            }
        }
        Ok(page)
    }

    /// Calls `f` with the stored jobs, newest first, until it answers false.
    fn newest_first(&self, f: &mut dyn FnMut(v1::Job) -> bool) -> Result<(), StoreError> {
        let t = self.0.open_table(JOBS).map_err(err)?;
        for row in t.iter().map_err(err)?.rev() {
            let (_, v) = row.map_err(err)?;
            if !f(v1::Job::decode(v.value()).map_err(err)?) {
                break;
            }
        }
        Ok(())
    }

    /// The rollups of `by` over `spans`, summed per key.
    fn usage(&self, by: i32, spans: &[(i64, i64, i64)]) -> Result<Vec<(String, Sums)>, StoreError> {
        let t = self.0.open_table(ROLLUPS).map_err(err)?;
        let mut out: std::collections::BTreeMap<String, Sums> = Default::default();
        for &(grain, from, to) in spans {
            for row in t
                .range((by, grain, from, "")..(by, grain, to, ""))
                .map_err(err)?
            {
                let (k, v) = row.map_err(err)?;
                let key = k.value().3;
                let add = Sums::from_bytes(v.value());
                match out.get_mut(key) {
                    Some(s) => s.add(&add),
                    None => {
                        out.insert(key.to_owned(), add);
                    }
                }
            }
        }
        Ok(out.into_iter().collect())
    }

    /// The records of a history page, from the user's or the account's index when the filter
    /// names one, else from the end times'.
    fn records(
        &self,
        f: &RecordFilter<'_>,
        after: (i64, u64),
        want: usize,
        budget: usize,
    ) -> Result<RecordPage, StoreError> {
        if want == 0 || f.until <= f.since {
            return Ok(RecordPage::default());
        }
        let from = f.first_key(after);
        let keys: Box<dyn Iterator<Item = Result<(i64, u64), StoreError>> + '_> =
            match (f.user, f.account) {
                (Some(name), _) | (None, Some(name)) => {
                    let table = if f.user.is_some() {
                        REC_BY_USER
                    } else {
                        REC_BY_ACCOUNT
                    };
                    let t = self.0.open_table(table).map_err(err)?;
                    let range = t
                        .range((name, from.0, from.1)..(name, f.until, 0))
                        .map_err(err)?;
                    Box::new(range.map(|r| {
                        r.map(|(k, _)| {
                            let (_, end, id) = k.value();
                            (end, id)
                        })
                        .map_err(err)
                    }))
                }
                (None, None) => {
                    let t = self.0.open_table(REC_BY_END).map_err(err)?;
                    let range = t.range(from..(f.until, 0)).map_err(err)?;
                    Box::new(range.map(|r| r.map(|(k, _)| k.value()).map_err(err)))
                }
            };
        let records = self.0.open_table(RECORDS).map_err(err)?;
        let candidates = keys.map(|key| {
            let key = key?;
            let record = records
                .get(key.1)
                .map_err(err)?
                .map(|v| v1::UsageRecord::decode(v.value()).map_err(err))
                .transpose()?;
            Ok((key, record))
        });
        RecordPage::of(candidates, f, want, budget)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::job;

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
        Embedded::open(dir.path(), &StoreConfig::default())
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
        let s = Embedded::open(dir.path(), &StoreConfig::default()).unwrap();
        assert_eq!(s.load().unwrap().jobs, vec![jobs[1].clone()]);
        let all = Filter {
            states: &[],
            user: None,
            site: None,
            cluster: None,
            tasks: true,
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

    /// A store of version 2 (before accounting) opened by this build: every finished job it
    /// holds gets its record and its rollups.
    #[test]
    fn a_version_2_store_gets_the_records_of_its_finished_jobs() {
        use crate::store::tests::{every, finished_and_open};
        let dir = tempfile::tempdir().unwrap();
        let (done, open) = finished_and_open();
        Embedded::open(dir.path(), &StoreConfig::default())
            .unwrap()
            .commit(&Write {
                jobs: vec![&done, &open],
                last_id: 2,
                ..Default::default()
            })
            .unwrap();
        // Written without its record, as a build before accounting wrote it.
        set_version(dir.path(), Some(2));
        let s = Embedded::open(dir.path(), &StoreConfig::default()).unwrap();
        let r = s.reader().unwrap();
        let page = r.records(&every(), (i64::MIN, 0), 10, 100).unwrap();
        assert_eq!(
            page.records.iter().map(|r| r.job).collect::<Vec<_>>(),
            vec![1]
        );
        let usage = r
            .usage(v1::UsageBy::User as i32, &[(3_600, 0, 7_200)])
            .unwrap();
        assert_eq!(usage.len(), 1);
        assert_eq!((usage[0].0.as_str(), usage[0].1.proc_s), ("ann", 2 * 50));
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
        Embedded::open(dir.path(), &StoreConfig::default())
            .unwrap()
            .commit(&Write {
                jobs: vec![&job],
                last_id: 3,
                ..Default::default()
            })
            .unwrap();
        assert_eq!(version(dir.path()), Some(SCHEMA_VERSION));
        set_version(dir.path(), None);
        let l = Embedded::open(dir.path(), &StoreConfig::default())
            .unwrap()
            .load()
            .unwrap();
        assert_eq!(l.jobs, vec![job]);
        assert_eq!(version(dir.path()), Some(SCHEMA_VERSION));
        set_version(dir.path(), Some(SCHEMA_VERSION + 1));
        let e = Embedded::open(dir.path(), &StoreConfig::default())
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            format!(
                "store: {}: schema version {}, newer than this build's {}: run the gridsched \
                 that wrote it (or a newer one), or move the state away",
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
        drop(Embedded::open(dir.path(), &StoreConfig::default()).unwrap());
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
