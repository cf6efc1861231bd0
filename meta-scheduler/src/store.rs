//! The durable state of the meta-scheduler, behind one interface with two backends: the
//! embedded store (a redb file, the default: [`embedded`]) and PostgreSQL ([`postgres`]), whose
//! state outlives the machine and several meta-schedulers can share.
//!
//! Every accepted job and every state change is committed before the client gets its answer; a
//! batch of submissions is one transaction. Jobs are stored as encoded `v1::Job` messages by id,
//! next to the idempotency tokens, the id / event / reservation counters, how each job was
//! decided, the last event applied from each site and the advance reservations (written PENDING
//! before their site is asked, HELD once it has admitted them). The store also holds the history
//! the meta-scheduler no longer keeps in memory (see [`crate::history`]): which jobs are not
//! finished (all a restart loads), the finished ones indexed by user, site, cluster and state
//! (for `list`), the accounting records and their rollups (see [`crate::accounting`]), and the
//! classifier's snapshot (its window of deadline margins, written with the
//! jobs it classified), so a restart costs the live work, not the history.
//!
//! Each backend records the version of its layout ([`SCHEMA_VERSION`] for the embedded store,
//! [`postgres::VERSION`] for PostgreSQL) and migrates an older one at open, in one transaction; a
//! layout from a newer build is refused, naming both versions.
//!
//! A store that several meta-schedulers share (PostgreSQL) also offers [`Leadership`]: a lease
//! with an epoch that one replica holds at a time; once a replica leads, its store is *fenced*
//! with the epoch ([`Store::fence`]), and every write checks it in its own transaction, so a
//! replica that lost the lease cannot write (see [`crate::replica`]).

pub mod embedded;
pub mod postgres;

use crate::explain::Decision;
use crate::history::Filter;
use gridsched_proto::v1;
use prost::Message;
use serde::Deserialize;
use std::path::Path;

/// The version of the embedded store's layout this build writes (version 2 added the open-job
/// set, the finished jobs' indexes and the snapshots; version 3 the accounting records and
/// rollups).
pub const SCHEMA_VERSION: u64 = 3;

/// The `[store]` section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StoreConfig {
    /// Where the state lives: `embedded` (a redb file in `state_dir`) or `postgres` (a
    /// PostgreSQL database at `url`, which several meta-schedulers may share).
    pub backend: BackendKind,
    /// The PostgreSQL connection URL (`postgres://user:password@host:port/database`), for
    /// `backend = "postgres"`.
    pub url: Option<String>,
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
            backend: BackendKind::Embedded,
            url: None,
            cache_mib: 16,
            quick_repair: true,
        }
    }
}

/// The kinds of store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// redb, in the state directory.
    Embedded,
    /// PostgreSQL.
    Postgres,
}

/// A store failure: reported to clients as INTERNAL, or as UNAVAILABLE when the store cannot
/// be reached (a database server down or cut off: the call may be retried).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store failed.
    #[error("store: {0}")]
    Failed(String),
    /// The store cannot be reached now.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// The write was refused: another replica leads now (its epoch is newer than this one's).
    #[error("not the leader: {0}")]
    Deposed(String),
}

impl StoreError {
    /// What it says, without the prefix.
    pub fn message(&self) -> &str {
        match self {
            StoreError::Failed(m) | StoreError::Unavailable(m) | StoreError::Deposed(m) => m,
        }
    }
}

impl From<StoreError> for tonic::Status {
    fn from(e: StoreError) -> tonic::Status {
        match e {
            StoreError::Unavailable(_) | StoreError::Deposed(_) => {
                tonic::Status::unavailable(e.to_string())
            }
            StoreError::Failed(_) => tonic::Status::internal(e.to_string()),
        }
    }
}

pub(crate) fn err(e: impl std::fmt::Display) -> StoreError {
    StoreError::Failed(e.to_string())
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
    /// The fair-share usage (JSON of the grid runner's usage state), if one was written.
    pub usage: Option<Vec<u8>>,
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
    /// The fair-share usage after the write (when a run was charged), as JSON.
    pub usage: Option<Vec<u8>>,
    /// The accounting records of the jobs that finished: a record is kept once (the first
    /// given for its job), and adds to the rollups then.
    pub records: Vec<v1::UsageRecord>,
}

/// The filter of a history page: jobs that ended in `[since, until)`, of a user, an account, a
/// site, in some states.
#[derive(Debug, Clone, Copy)]
pub struct RecordFilter<'a> {
    /// Ended at or after this time.
    pub since: i64,
    /// Ended before this time.
    pub until: i64,
    /// Only this user's.
    pub user: Option<&'a str>,
    /// Only this account's.
    pub account: Option<&'a str>,
    /// Only those that ran (a part) at this site.
    pub site: Option<&'a str>,
    /// Only these states (`v1::JobState` values); empty = any.
    pub states: &'a [i32],
}

impl RecordFilter<'_> {
    /// Whether `r` passes.
    pub fn matches(&self, r: &v1::UsageRecord) -> bool {
        (self.since..self.until).contains(&r.end_time)
            && self.user.is_none_or(|u| r.user == u)
            && self.account.is_none_or(|a| r.account == a)
            && self
                .site
                .is_none_or(|s| r.parts.iter().any(|p| p.site == s))
            && (self.states.is_empty() || self.states.contains(&r.state))
    }

    /// The first (end, id) a page past `after` looks at: just past `after`, or the period's
    /// start when `after` lies before it.
    pub fn first_key(&self, after: (i64, u64)) -> (i64, u64) {
        if after.0 >= self.since {
            (after.0, after.1.saturating_add(1))
        } else {
            (self.since, 0)
        }
    }
}

/// Records of one page of a history.
#[derive(Debug, Default)]
pub struct RecordPage {
    /// The matching records, by end time then job id.
    pub records: Vec<v1::UsageRecord>,
    /// Set when the look stopped at its budget: every record up to this (end, id) was looked
    /// at, none beyond.
    pub looked_to: Option<(i64, u64)>,
}

impl RecordPage {
    /// The page of the `candidates` (each key, with its record where there is one) in key
    /// order: the first `want` that `f` lets through, looking at no more than `budget`.
    pub fn of(
        candidates: impl Iterator<Item = Result<((i64, u64), Option<v1::UsageRecord>), StoreError>>,
        f: &RecordFilter<'_>,
        want: usize,
        budget: usize,
    ) -> Result<RecordPage, StoreError> {
        let mut page = RecordPage::default();
        let (mut looked, mut last) = (0, None);
        for c in candidates {
            if looked == budget {
                break;
            }
            let (key, record) = c?;
            looked += 1;
            last = Some(key);
            if let Some(r) = record.filter(|r| f.matches(r)) {
                page.records.push(r);
                if page.records.len() == want {
                    return Ok(page);
                }
            }
        }
        if looked == budget {
            page.looked_to = last;
        }
        Ok(page)
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

pub(crate) fn decode_decision(bytes: &[u8]) -> Result<Decision, StoreError> {
    let e = v1::ExplainResponse::decode(bytes).map_err(err)?;
    Ok(Decision {
        priority: e.priority,
        dispatch: e.dispatch,
    })
}

/// A message of a newer layout (`found`) than this build's (`ours`).
pub(crate) fn newer(found: u64, ours: u64) -> StoreError {
    StoreError::Failed(format!(
        "schema version {found}, newer than this build's {ours}: run the gridsched \
         that wrote it (or a newer one), or move the state away"
    ))
}

/// Who leads the replicas sharing a store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leader {
    /// The leading replica's name.
    pub holder: String,
    /// The address its clients reach it at.
    pub address: String,
    /// Its epoch: one more at every change of leader.
    pub epoch: u64,
    /// Whether its lease has run out (by the database's clock): another replica may take it.
    pub expired: bool,
}

/// The lease of a store shared by replicas. Every call is one short transaction on a connection
/// of its own (so that renewing never waits behind the data's writes); the lease's times are the
/// database's clock, so replicas' clocks need not agree.
pub trait Leadership: Send + Sync + std::fmt::Debug {
    /// Takes the lease for `holder` (reached at `address`) for `ttl_ms` when it is free, run
    /// out or already `holder`'s: the new epoch, or `None` while another replica holds it.
    fn try_lead(&self, holder: &str, address: &str, ttl_ms: u64)
    -> Result<Option<u64>, StoreError>;
    /// Extends the lease of `epoch` by `ttl_ms` from now; false when `epoch` no longer holds it;
    /// UNAVAILABLE when the answer has not come `within` this long.
    fn renew(
        &self,
        epoch: u64,
        ttl_ms: u64,
        within: std::time::Duration,
    ) -> Result<bool, StoreError>;
    /// Lets the lease of `epoch` run out now (a replica stopping), so another takes over at once.
    fn release(&self, epoch: u64) -> Result<(), StoreError>;
    /// The replica that leads (or led last), if any ever did.
    fn leader(&self) -> Result<Option<Leader>, StoreError>;
}

/// What a store does: load what a restart needs, commit changes, keep reservations and open
/// views of the history.
pub trait Backend: Send + Sync + std::fmt::Debug {
    /// What a restart needs: the open jobs with their decisions, the counters, the sites'
    /// sequences, the reservations and the classifier's snapshot.
    fn load(&self) -> Result<Loaded, StoreError>;
    /// Commits one write durably, in one transaction.
    fn commit(&self, w: &Write<'_>) -> Result<(), StoreError>;
    /// Records an advance reservation (`Some`) or forgets it (`None`), with the last
    /// reservation id given, in one transaction.
    fn save_reservation(
        &self,
        id: u64,
        r: Option<&v1::AdvanceReservation>,
        last_reservation: u64,
    ) -> Result<(), StoreError>;
    /// A view of the history.
    fn reader(&self) -> Result<Reader, StoreError>;
    /// The lease of a store replicas may share (`None`: the store has one user, nothing to
    /// lead).
    fn leadership(&self) -> Result<Option<std::sync::Arc<dyn Leadership>>, StoreError> {
        Ok(None)
    }
    /// From now on, every write checks that `epoch` still holds the lease, in its own
    /// transaction, and fails with [`StoreError::Deposed`] when it does not.
    fn fence(&self, _epoch: u64) {}
    /// The epoch its writes are fenced with (0: not fenced).
    fn epoch(&self) -> u64 {
        0
    }
}

/// Reads of the history: one job, its decision, a token's job, the finished jobs of a list
/// page, and the jobs newest first (to rebuild the classifier of a store written before it kept
/// a snapshot).
pub trait History: Send {
    /// Job `id`, if stored.
    fn job(&self, id: u64) -> Result<Option<v1::Job>, StoreError>;
    /// How job `id` was classified and dispatched, if recorded.
    fn decision(&self, id: u64) -> Result<Option<Decision>, StoreError>;
    /// The job an idempotency key (`user \0 token`) was given to.
    fn token(&self, key: &str) -> Result<Option<u64>, StoreError>;
    /// The first `want` finished jobs past id `after` that `f` lets through, in id order,
    /// looking at no more than `budget` candidates where the backend walks an index itself.
    fn finished(
        &self,
        f: &Filter<'_>,
        after: u64,
        want: usize,
        budget: usize,
    ) -> Result<FinishedPage, StoreError>;
    /// Calls `f` with the stored jobs, newest first, until it answers false.
    fn newest_first(&self, f: &mut dyn FnMut(v1::Job) -> bool) -> Result<(), StoreError>;
    /// The rollups of `by` (a `v1::UsageBy` value) over the buckets of `spans` (see
    /// [`crate::accounting::spans`]), summed per key, by key.
    fn usage(
        &self,
        by: i32,
        spans: &[(i64, i64, i64)],
    ) -> Result<Vec<(String, crate::accounting::Sums)>, StoreError>;
    /// The first `want` records past `(end, id)` `after` that `f` lets through, by end then id,
    /// looking at no more than `budget` candidates of the index the filter names (the user's,
    /// the account's, else the end times').
    fn records(
        &self,
        f: &RecordFilter<'_>,
        after: (i64, u64),
        want: usize,
        budget: usize,
    ) -> Result<RecordPage, StoreError>;
}

/// A view of the history (for the embedded store, one consistent read transaction).
pub struct Reader(Box<dyn History>);

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reader")
    }
}

impl std::ops::Deref for Reader {
    type Target = dyn History;

    fn deref(&self) -> &(dyn History + 'static) {
        self.0.as_ref()
    }
}

/// The meta-scheduler's store, of the configured backend.
#[derive(Debug)]
pub struct Store(Box<dyn Backend>);

impl Store {
    /// Opens (or creates) the configured store: the embedded one in `dir`, or the PostgreSQL
    /// database of `cfg.url`.
    pub fn open(dir: &Path, cfg: &StoreConfig) -> Result<Store, StoreError> {
        Ok(Store(match cfg.backend {
            BackendKind::Embedded => Box::new(embedded::Embedded::open(dir, cfg)?),
            BackendKind::Postgres => {
                let url = cfg.url.as_deref().ok_or_else(|| {
                    StoreError::Failed("key `store.url`: needed with backend = \"postgres\"".into())
                })?;
                Box::new(postgres::Postgres::open(url)?)
            }
        }))
    }

    /// What a restart needs.
    pub fn load(&self) -> Result<Loaded, StoreError> {
        self.0.load()
    }

    /// Commits one write durably.
    pub fn commit(&self, w: &Write<'_>) -> Result<(), StoreError> {
        self.0.commit(w)
    }

    /// Records or forgets an advance reservation.
    pub fn save_reservation(
        &self,
        id: u64,
        r: Option<&v1::AdvanceReservation>,
        last_reservation: u64,
    ) -> Result<(), StoreError> {
        self.0.save_reservation(id, r, last_reservation)
    }

    /// A view of the history.
    pub fn reader(&self) -> Result<Reader, StoreError> {
        self.0.reader()
    }

    /// The lease, for a store replicas may share.
    pub fn leadership(&self) -> Result<Option<std::sync::Arc<dyn Leadership>>, StoreError> {
        self.0.leadership()
    }

    /// Fences every later write with `epoch` (see [`Backend::fence`]).
    pub fn fence(&self, epoch: u64) {
        self.0.fence(epoch);
    }

    /// The epoch its writes are fenced with (0: not fenced).
    pub fn epoch(&self) -> u64 {
        self.0.epoch()
    }
}

#[cfg(test)]
mod tests;
