//! The PostgreSQL store (`[store] backend = "postgres"`): the same state as the embedded store,
//! in a database whose state outlives the meta-scheduler's machine and that several
//! meta-schedulers can share.
//!
//! One connection, owned by a thread of its own (the synchronous client must not run inside the
//! service's async runtime): each call hands it a task and waits for the answer. A connection that
//! broke is opened again on the next call. Every write is one transaction. The layout is created
//! (or migrated) at open under an advisory lock, so that replicas starting together do it once;
//! its version is kept in `gridsched_schema`.
//!
//! Jobs are one table (the encoded job, whether it is open, and the columns the history is
//! filtered on: state, owner, cluster) with partial indexes over the finished jobs, plus the
//! finished jobs' sites (a split job's fragments each name one). Idempotency keys hold a NUL
//! between user and token, so they are stored as bytes.
//!
//! Version 3 added the lease of the replicas ([`lease`]); writes of a fenced store check its
//! epoch first, holding the lease's row shared, so a takeover waits for the writes in flight and
//! every later write of the replica it deposed fails.

use super::{
    Backend, FinishedPage, History, Loaded, Reader, RecordFilter, RecordPage, StoreError, Write,
    decode_decision, err, newer,
};
use crate::accounting::{self, Accounts, Sums};
use crate::explain::Decision;
use crate::history::Filter;
use gridsched_proto::v1;
use postgres::types::ToSql;
use postgres::{Client, NoTls};
use prost::Message;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Duration;

mod lease;

/// The version of the layout this build writes.
pub const VERSION: u64 = 4;

/// The layout of version 2, created in an empty database.
const LAYOUT_2: &str = "
CREATE TABLE jobs (
    id BIGINT PRIMARY KEY,
    body BYTEA NOT NULL,
    open BOOLEAN NOT NULL,
    state INTEGER NOT NULL,
    owner TEXT NOT NULL,
    cluster TEXT
);
CREATE INDEX jobs_open ON jobs (id) WHERE open;
CREATE INDEX jobs_finished_by_owner ON jobs (owner, id) WHERE NOT open;
CREATE INDEX jobs_finished_by_state ON jobs (state, id) WHERE NOT open;
CREATE INDEX jobs_finished_by_cluster ON jobs (cluster, id) WHERE NOT open;
CREATE TABLE job_sites (site TEXT NOT NULL, id BIGINT NOT NULL, PRIMARY KEY (site, id));
CREATE TABLE tokens (key BYTEA PRIMARY KEY, id BIGINT NOT NULL);
CREATE TABLE counters (name TEXT PRIMARY KEY, value BIGINT NOT NULL);
CREATE TABLE decisions (id BIGINT PRIMARY KEY, body BYTEA NOT NULL);
CREATE TABLE site_sequences (site TEXT PRIMARY KEY, seq BIGINT NOT NULL);
CREATE TABLE reservations (id BIGINT PRIMARY KEY, body BYTEA NOT NULL);
CREATE TABLE snapshots (name TEXT PRIMARY KEY, body BYTEA NOT NULL);
";

/// Migrations from a version (the index + 2) to the next.
const MIGRATIONS: &[&str] = &[
    // 2 → 3: the replicas' lease.
    "CREATE TABLE gridsched_lease (
        name TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        address TEXT NOT NULL,
        epoch BIGINT NOT NULL,
        expires TIMESTAMPTZ NOT NULL
    );",
    // 3 → 4: the accounting records and their rollups (the finished jobs' records are written
    // at open, see `account_history`).
    "CREATE TABLE usage_records (
        id BIGINT PRIMARY KEY,
        end_time BIGINT NOT NULL,
        owner TEXT NOT NULL,
        account TEXT NOT NULL,
        state INTEGER NOT NULL,
        body BYTEA NOT NULL
    );
    CREATE INDEX usage_records_by_end ON usage_records (end_time, id);
    CREATE INDEX usage_records_by_owner ON usage_records (owner, end_time, id);
    CREATE INDEX usage_records_by_account ON usage_records (account, end_time, id);
    CREATE TABLE usage_rollups (
        by_what INTEGER NOT NULL,
        grain BIGINT NOT NULL,
        bucket BIGINT NOT NULL,
        key TEXT NOT NULL,
        jobs BIGINT NOT NULL,
        proc_s BIGINT NOT NULL,
        licence_s BIGINT NOT NULL,
        wall_s BIGINT NOT NULL,
        wait_s BIGINT NOT NULL,
        PRIMARY KEY (by_what, grain, bucket, key)
    );",
];

/// Keeps the records not kept yet and adds those to the rollups, in `tx`.
fn keep_records(
    tx: &mut postgres::Transaction<'_>,
    records: &[v1::UsageRecord],
) -> Result<(), postgres::Error> {
    if records.is_empty() {
        return Ok(());
    }
    let ids: Vec<i64> = records.iter().map(|r| r.job as i64).collect();
    let ends: Vec<i64> = records.iter().map(|r| r.end_time).collect();
    let owners: Vec<&str> = records.iter().map(|r| r.user.as_str()).collect();
    let accounts: Vec<&str> = records.iter().map(|r| r.account.as_str()).collect();
    let states: Vec<i32> = records.iter().map(|r| r.state).collect();
    let bodies: Vec<Vec<u8>> = records.iter().map(Message::encode_to_vec).collect();
    let kept: std::collections::HashSet<i64> = tx
        .query(
            "INSERT INTO usage_records (id, end_time, owner, account, state, body) \
             SELECT * FROM UNNEST($1::BIGINT[], $2::BIGINT[], $3::TEXT[], $4::TEXT[], \
             $5::INTEGER[], $6::BYTEA[]) ON CONFLICT (id) DO NOTHING RETURNING id",
            &[&ids, &ends, &owners, &accounts, &states, &bodies],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let rollups = accounting::rollups(records.iter().filter(|r| kept.contains(&(r.job as i64))));
    if rollups.is_empty() {
        return Ok(());
    }
    let mut cols: (Vec<i32>, Vec<i64>, Vec<i64>, Vec<String>) = Default::default();
    let mut sums: [Vec<i64>; 5] = Default::default();
    for ((by, grain, bucket, key), s) in rollups {
        cols.0.push(by);
        cols.1.push(grain);
        cols.2.push(bucket);
        cols.3.push(key);
        for (v, x) in sums
            .iter_mut()
            .zip([s.jobs, s.proc_s, s.licence_s, s.wall_s, s.wait_s])
        {
            v.push(x as i64);
        }
    }
    tx.execute(
        "INSERT INTO usage_rollups (by_what, grain, bucket, key, jobs, proc_s, licence_s, \
         wall_s, wait_s) SELECT * FROM UNNEST($1::INTEGER[], $2::BIGINT[], $3::BIGINT[], \
         $4::TEXT[], $5::BIGINT[], $6::BIGINT[], $7::BIGINT[], $8::BIGINT[], $9::BIGINT[]) \
         ON CONFLICT (by_what, grain, bucket, key) DO UPDATE SET \
         jobs = usage_rollups.jobs + EXCLUDED.jobs, \
         proc_s = usage_rollups.proc_s + EXCLUDED.proc_s, \
         licence_s = usage_rollups.licence_s + EXCLUDED.licence_s, \
         wall_s = usage_rollups.wall_s + EXCLUDED.wall_s, \
         wait_s = usage_rollups.wait_s + EXCLUDED.wait_s",
        &[
            &cols.0, &cols.1, &cols.2, &cols.3, &sums[0], &sums[1], &sums[2], &sums[3], &sums[4],
        ],
    )?;
    Ok(())
}

/// The accounting records of the finished jobs of a store written before version 4 (without
/// accounts: the tree is not the store's), a thousand jobs at a time.
fn account_history(tx: &mut postgres::Transaction<'_>) -> Result<(), postgres::Error> {
    let none = Accounts::default();
    let mut after = 0i64;
    loop {
        let rows: Vec<(i64, Vec<u8>)> = tx
            .query(
                "SELECT id, body FROM jobs WHERE NOT open AND id > $1 ORDER BY id LIMIT 1000",
                &[&after],
            )?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        let Some(last) = rows.last() else {
            return Ok(());
        };
        after = last.0;
        let records: Vec<v1::UsageRecord> = rows
            .iter()
            .filter_map(|(_, b)| v1::Job::decode(b.as_slice()).ok())
            .filter_map(|j| accounting::record(&j, &none))
            .collect();
        keep_records(tx, &records)?;
    }
}

/// Key of the advisory lock held while the layout is created or migrated.
const LAYOUT_LOCK: i64 = 0x6772_6964_7363_6864;

/// A call on the connection, or on why there is none.
type Task = Box<dyn FnOnce(&mut Result<Client, String>) + Send>;

/// The connection's thread, reached through its task queue.
#[derive(Debug)]
struct Link {
    tasks: mpsc::Sender<Task>,
    /// The URL without its password, for errors.
    shown: String,
}

impl Link {
    /// Connects to the server of `config` on a thread of its own; the connection is opened
    /// again before the next call when it broke.
    fn open(config: postgres::Config, shown: String) -> Result<Link, StoreError> {
        let (tasks, rx) = mpsc::channel::<Task>();
        let (ready_tx, ready) = mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name("postgres".into())
            .spawn(move || {
                let mut conn = match config.connect(NoTls) {
                    Ok(c) => {
                        let _ = ready_tx.send(Ok(()));
                        Ok(c)
                    }
                    Err(e) => {
                        // Not reached (refused, cut off, no such host) rather than refused by
                        // the server (credentials, database).
                        let _ = ready_tx.send(Err((e.as_db_error().is_none(), said(&e))));
                        return;
                    }
                };
                for task in rx {
                    if conn.as_ref().is_ok_and(Client::is_closed) || conn.is_err() {
                        conn = config.connect(NoTls).map_err(|e| said(&e));
                    }
                    task(&mut conn);
                }
            })
            .map_err(err)?;
        ready
            .recv()
            .map_err(|_| {
                StoreError::Failed("the PostgreSQL connection's thread has stopped".into())
            })?
            .map_err(|(unreached, e)| {
                let m = format!("PostgreSQL at {shown}: {e}");
                match unreached {
                    true => StoreError::Unavailable(m),
                    false => StoreError::Failed(m),
                }
            })?;
        Ok(Link { tasks, shown })
    }

    /// Runs `f` on the connection (opened again first if it broke) and returns its answer.
    fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Client) -> Result<R, postgres::Error> + Send + 'static,
    ) -> Result<R, StoreError> {
        self.call_within(f, None)
    }

    /// Like [`Link::call`], giving up (UNAVAILABLE) when the answer has not come `within` this
    /// long; the call itself may still complete on the connection's thread.
    fn call_within<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Client) -> Result<R, postgres::Error> + Send + 'static,
        within: Option<Duration>,
    ) -> Result<R, StoreError> {
        let (tx, rx) = mpsc::sync_channel(1);
        let shown = self.shown.clone();
        let task: Task = Box::new(move |conn| {
            let answer = match conn {
                Err(why) => Err(StoreError::Unavailable(format!(
                    "PostgreSQL at {shown}: {why}"
                ))),
                Ok(c) => f(c).map_err(|e| {
                    let m = format!("PostgreSQL at {shown}: {}", said(&e));
                    // The server went away (or was never reached): the call may be retried.
                    if c.is_closed() || e.as_db_error().is_none() {
                        StoreError::Unavailable(m)
                    } else {
                        StoreError::Failed(m)
                    }
                }),
            };
            let _ = tx.send(answer);
        });
        self.tasks.send(task).map_err(|_| {
            StoreError::Failed("the PostgreSQL connection's thread has stopped".into())
        })?;
        let stopped =
            || StoreError::Failed("the PostgreSQL connection's thread has stopped".into());
        match within {
            None => rx.recv().map_err(|_| stopped())?,
            Some(d) => match rx.recv_timeout(d) {
                Ok(answer) => answer,
                Err(mpsc::RecvTimeoutError::Timeout) => Err(StoreError::Unavailable(format!(
                    "PostgreSQL at {}: no answer within {} ms",
                    self.shown,
                    d.as_millis()
                ))),
                Err(mpsc::RecvTimeoutError::Disconnected) => Err(stopped()),
            },
        }
    }
}

/// A PostgreSQL database holding the meta-scheduler's state.
#[derive(Debug)]
pub struct Postgres {
    link: Arc<Link>,
    /// How to connect again (the lease's own connection).
    config: postgres::Config,
    /// The epoch every write checks (0: not fenced, the store has one user).
    fence: Arc<AtomicU64>,
}

/// What the server said, where it said something (the client's own text is only "db error").
fn said(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(d) => format!("{}: {}", d.severity(), d.message()),
        None => e.to_string(),
    }
}

/// `url` with its password masked.
fn shown(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let creds = &url[s + 3..at];
            match creds.find(':') {
                Some(c) => format!("{}{}:***{}", &url[..s + 3], &creds[..c], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

impl Postgres {
    /// Connects to `url`, then creates or migrates the layout. A wrong URL, wrong credentials or
    /// an unreachable server is an error naming the URL (password masked).
    pub fn open(url: &str) -> Result<Postgres, StoreError> {
        let shown = shown(url);
        let mut config: postgres::Config = url
            .parse()
            .map_err(|e| StoreError::Failed(format!("key `store.url`: `{shown}`: {e}")))?;
        // A server that does not answer (cut off, not refusing) is given up after this long,
        // instead of the system's TCP timeout of minutes.
        // A server cut off (not refusing: packets vanish) fails a call within about 5 s instead
        // of the system's TCP timeouts of minutes: unacknowledged data for 5 s, or an idle
        // connection whose keepalives go unanswered.
        config
            .connect_timeout(Duration::from_secs(5))
            .tcp_user_timeout(Duration::from_secs(5))
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(2))
            .keepalives_interval(Duration::from_secs(1))
            .keepalives_retries(3);
        // A transaction left open by a replica that froze (it holds the lease's row shared) is
        // ended by the server, so that the replica taking over is not kept waiting.
        let options = format!(
            "{} -c idle_in_transaction_session_timeout=2000",
            config.get_options().unwrap_or_default()
        );
        config.options(options.trim());
        let link = Arc::new(Link::open(config.clone(), shown)?);
        let found = link.call(|c| {
            let mut tx = c.transaction()?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LAYOUT_LOCK])?;
            tx.batch_execute(
                "CREATE TABLE IF NOT EXISTS gridsched_schema (version BIGINT NOT NULL)",
            )?;
            let found: Option<i64> = tx
                .query_opt("SELECT version FROM gridsched_schema", &[])?
                .map(|r| r.get(0));
            let found = found.map_or(0, |v| v as u64);
            if found > VERSION {
                return Ok(Some(found));
            }
            if found == 0 {
                tx.batch_execute(LAYOUT_2)?;
                tx.execute("INSERT INTO gridsched_schema VALUES (2)", &[])?;
            }
            for version in found.max(2)..VERSION {
                tx.batch_execute(MIGRATIONS[(version - 2) as usize])?;
                tx.execute(
                    "UPDATE gridsched_schema SET version = $1",
                    &[&(version as i64 + 1)],
                )?;
                if version == 3 {
                    account_history(&mut tx)?;
                }
            }
            tx.commit()?;
            Ok(None)
        })?;
        if let Some(found) = found {
            return Err(StoreError::Failed(format!(
                "PostgreSQL at {}: {}",
                link.shown,
                newer(found, VERSION).message()
            )));
        }
        Ok(Postgres {
            link,
            config,
            fence: Arc::new(AtomicU64::new(0)),
        })
    }
}

/// Whether a job is open, and the columns of a finished one.
fn columns(job: &v1::Job) -> (bool, String, Option<String>) {
    (
        !job.state().is_terminal(),
        job.spec.as_ref().map_or(String::new(), |s| s.user.clone()),
        job.cluster.clone(),
    )
}

fn decode_job(bytes: &[u8]) -> Result<v1::Job, StoreError> {
    v1::Job::decode(bytes).map_err(err)
}

impl Backend for Postgres {
    fn load(&self) -> Result<Loaded, StoreError> {
        type Rows = (Vec<(i64, Vec<u8>, Option<Vec<u8>>)>, Vec<(String, i64)>);
        let (jobs, counters, seqs, reservations, snapshot) = self.link.call(|c| {
            let mut tx = c
                .build_transaction()
                .isolation_level(postgres::IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()?;
            let jobs: Rows = (
                tx.query(
                    "SELECT j.id, j.body, d.body FROM jobs j LEFT JOIN decisions d ON d.id = j.id \
                     WHERE j.open ORDER BY j.id",
                    &[],
                )?
                .iter()
                .map(|r| (r.get(0), r.get(1), r.get(2)))
                .collect(),
                tx.query("SELECT name, value FROM counters", &[])?
                    .iter()
                    .map(|r| (r.get(0), r.get(1)))
                    .collect(),
            );
            let seqs: Vec<(String, i64)> = tx
                .query("SELECT site, seq FROM site_sequences ORDER BY site", &[])?
                .iter()
                .map(|r| (r.get(0), r.get(1)))
                .collect();
            let reservations: Vec<Vec<u8>> = tx
                .query("SELECT body FROM reservations ORDER BY id", &[])?
                .iter()
                .map(|r| r.get(0))
                .collect();
            let snapshot: Option<Vec<u8>> = tx
                .query_opt("SELECT body FROM snapshots WHERE name = 'classifier'", &[])?
                .map(|r| r.get(0));
            let usage: Option<Vec<u8>> = tx
                .query_opt("SELECT body FROM snapshots WHERE name = 'usage'", &[])?
                .map(|r| r.get(0));
            tx.commit()?;
            Ok((jobs.0, jobs.1, seqs, reservations, (snapshot, usage)))
        })?;
        let mut out = Loaded::default();
        for (id, body, decision) in jobs {
            out.jobs.push(decode_job(&body)?);
            if let Some(d) = decision {
                out.decisions.push((id as u64, decode_decision(&d)?));
            }
        }
        for (name, value) in counters {
            let v = value as u64;
            match name.as_str() {
                "last_id" => out.last_id = v,
                "last_sequence" => out.last_sequence = v,
                "last_reservation" => out.last_reservation = v,
                _ => {}
            }
        }
        out.site_seqs = seqs.into_iter().map(|(s, v)| (s, v as u64)).collect();
        for r in reservations {
            out.reservations
                .push(v1::AdvanceReservation::decode(r.as_slice()).map_err(err)?);
        }
        let (snapshot, usage) = snapshot;
        out.usage = usage;
        out.classifier = snapshot.map(|b| {
            b.chunks_exact(8)
                .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect()
        });
        Ok(out)
    }

    fn commit(&self, w: &Write<'_>) -> Result<(), StoreError> {
        let (mut ids, mut bodies, mut opens, mut states, mut owners, mut clusters) =
            (vec![], vec![], vec![], vec![], vec![], vec![]);
        let (mut site_names, mut site_ids) = (vec![], vec![]);
        for j in &w.jobs {
            let (open, owner, cluster) = columns(j);
            ids.push(j.id as i64);
            bodies.push(j.encode_to_vec());
            opens.push(open);
            states.push(j.state);
            owners.push(owner);
            clusters.push(cluster);
            if !open {
                for site in j.site.iter().chain(j.fragments.iter().map(|f| &f.site)) {
                    site_names.push(site.clone());
                    site_ids.push(j.id as i64);
                }
            }
        }
        let tokens: (Vec<Vec<u8>>, Vec<i64>) = w
            .tokens
            .iter()
            .map(|(k, id)| (k.as_bytes().to_vec(), *id as i64))
            .unzip();
        let decisions: (Vec<i64>, Vec<Vec<u8>>) = w
            .decisions
            .iter()
            .map(|(id, d)| {
                let e = v1::ExplainResponse {
                    priority: d.priority.clone(),
                    dispatch: d.dispatch.clone(),
                    ..Default::default()
                };
                (*id as i64, e.encode_to_vec())
            })
            .unzip();
        let seqs: (Vec<String>, Vec<i64>) = w
            .site_seqs
            .iter()
            .map(|(s, v)| ((*s).to_owned(), *v as i64))
            .unzip();
        let snapshot: Option<Vec<u8>> = w
            .classifier
            .as_ref()
            .map(|m| m.iter().flat_map(|x| x.to_le_bytes()).collect());
        let usage = w.usage.clone();
        let records = w.records.clone();
        let counters = [
            ("last_id".to_owned(), w.last_id as i64),
            ("last_sequence".to_owned(), w.last_sequence as i64),
        ];
        let epoch = self.fence.load(Ordering::SeqCst);
        let written = self.link.call(move |c| {
            let mut tx = c.transaction()?;
            if !fenced(&mut tx, epoch)? {
                return Ok(false);
            }
            if !ids.is_empty() {
                tx.execute(
                    "INSERT INTO jobs (id, body, open, state, owner, cluster) \
                     SELECT * FROM UNNEST($1::BIGINT[], $2::BYTEA[], $3::BOOLEAN[], \
                     $4::INTEGER[], $5::TEXT[], $6::TEXT[]) \
                     ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body, open = EXCLUDED.open, \
                     state = EXCLUDED.state, owner = EXCLUDED.owner, cluster = EXCLUDED.cluster",
                    &[&ids, &bodies, &opens, &states, &owners, &clusters],
                )?;
            }
            if !site_ids.is_empty() {
                tx.execute(
                    "INSERT INTO job_sites (site, id) SELECT * FROM UNNEST($1::TEXT[], \
                     $2::BIGINT[]) ON CONFLICT DO NOTHING",
                    &[&site_names, &site_ids],
                )?;
            }
            // Pairs of arrays, one row per element; a token never changes, the others are
            // overwritten.
            let pairs: [(&str, &(dyn ToSql + Sync), &(dyn ToSql + Sync), bool); 3] = [
                (
                    "INSERT INTO tokens (key, id) SELECT * FROM UNNEST($1::BYTEA[], $2::BIGINT[]) \
                     ON CONFLICT DO NOTHING",
                    &tokens.0,
                    &tokens.1,
                    tokens.0.is_empty(),
                ),
                (
                    "INSERT INTO decisions (id, body) SELECT * FROM UNNEST($1::BIGINT[], \
                     $2::BYTEA[]) ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body",
                    &decisions.0,
                    &decisions.1,
                    decisions.0.is_empty(),
                ),
                (
                    "INSERT INTO site_sequences (site, seq) SELECT * FROM UNNEST($1::TEXT[], \
                     $2::BIGINT[]) ON CONFLICT (site) DO UPDATE SET seq = EXCLUDED.seq",
                    &seqs.0,
                    &seqs.1,
                    seqs.0.is_empty(),
                ),
            ];
            for (sql, a, b, empty) in pairs {
                if !empty {
                    tx.execute(sql, &[a, b])?;
                }
            }
            for (name, value) in &counters {
                upsert_counter(&mut tx, name, *value)?;
            }
            for (name, body) in [("classifier", &snapshot), ("usage", &usage)] {
                if let Some(body) = body {
                    tx.execute(
                        "INSERT INTO snapshots (name, body) VALUES ($1, $2) \
                         ON CONFLICT (name) DO UPDATE SET body = EXCLUDED.body",
                        &[&name, body],
                    )?;
                }
            }
            keep_records(&mut tx, &records)?;
            tx.commit()?;
            Ok(true)
        })?;
        self.written(written, epoch)
    }

    fn save_reservation(
        &self,
        id: u64,
        r: Option<&v1::AdvanceReservation>,
        last_reservation: u64,
    ) -> Result<(), StoreError> {
        let body = r.map(Message::encode_to_vec);
        let epoch = self.fence.load(Ordering::SeqCst);
        let written = self.link.call(move |c| {
            let mut tx = c.transaction()?;
            if !fenced(&mut tx, epoch)? {
                return Ok(false);
            }
            match &body {
                Some(b) => tx.execute(
                    "INSERT INTO reservations (id, body) VALUES ($1, $2) \
                     ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body",
                    &[&(id as i64), b],
                )?,
                None => tx.execute("DELETE FROM reservations WHERE id = $1", &[&(id as i64)])?,
            };
            upsert_counter(&mut tx, "last_reservation", last_reservation as i64)?;
            tx.commit()?;
            Ok(true)
        })?;
        self.written(written, epoch)
    }

    fn reader(&self) -> Result<Reader, StoreError> {
        Ok(Reader(Box::new(View {
            link: self.link.clone(),
        })))
    }

    fn leadership(&self) -> Result<Option<Arc<dyn super::Leadership>>, StoreError> {
        let link = Link::open(self.config.clone(), self.link.shown.clone())?;
        Ok(Some(Arc::new(lease::Lease::new(link))))
    }

    fn fence(&self, epoch: u64) {
        self.fence.store(epoch, Ordering::SeqCst);
    }

    fn epoch(&self) -> u64 {
        self.fence.load(Ordering::SeqCst)
    }
}

impl Postgres {
    /// The outcome of a write that checked the fence of `epoch`.
    fn written(&self, written: bool, epoch: u64) -> Result<(), StoreError> {
        if written {
            Ok(())
        } else {
            Err(StoreError::Deposed(format!(
                "epoch {epoch} no longer holds the lease of PostgreSQL at {}: nothing written",
                self.link.shown
            )))
        }
    }
}

/// Whether `epoch` (0: a store not fenced) still holds the lease, read in `tx` with the lease's
/// row held shared until `tx` ends: a takeover waits for this write, and every write after it
/// sees the new epoch.
fn fenced(tx: &mut postgres::Transaction<'_>, epoch: u64) -> Result<bool, postgres::Error> {
    if epoch == 0 {
        return Ok(true);
    }
    let held: Option<i64> = tx
        .query_opt(
            "SELECT epoch FROM gridsched_lease WHERE name = 'meta' FOR SHARE",
            &[],
        )?
        .map(|r| r.get(0));
    Ok(held == Some(epoch as i64))
}

fn upsert_counter(
    tx: &mut postgres::Transaction<'_>,
    name: &str,
    value: i64,
) -> Result<(), postgres::Error> {
    tx.execute(
        "INSERT INTO counters (name, value) VALUES ($1, $2) \
         ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
        &[&name, &value],
    )?;
    Ok(())
}

/// Reads of the history, each one statement.
struct View {
    link: Arc<Link>,
}

impl View {
    fn one(&self, sql: &'static str, id: i64) -> Result<Option<Vec<u8>>, StoreError> {
        self.link
            .call(move |c| Ok(c.query_opt(sql, &[&id])?.map(|r| r.get(0))))
    }
}

impl History for View {
    fn job(&self, id: u64) -> Result<Option<v1::Job>, StoreError> {
        self.one("SELECT body FROM jobs WHERE id = $1", id as i64)?
            .map(|b| decode_job(&b))
            .transpose()
    }

    fn decision(&self, id: u64) -> Result<Option<Decision>, StoreError> {
        self.one("SELECT body FROM decisions WHERE id = $1", id as i64)?
            .map(|b| decode_decision(&b))
            .transpose()
    }

    fn token(&self, key: &str) -> Result<Option<u64>, StoreError> {
        let key = key.as_bytes().to_vec();
        self.link.call(move |c| {
            Ok(
                c.query_opt("SELECT id FROM tokens WHERE key = $1", &[&key])?
                    .map(|r| r.get::<_, i64>(0) as u64),
            )
        })
    }

    /// One query over the partial indexes of the finished jobs; the database bounds its own
    /// work, so the page is never cut short (`budget` is not used).
    fn finished(
        &self,
        f: &Filter<'_>,
        after: u64,
        want: usize,
        _budget: usize,
    ) -> Result<FinishedPage, StoreError> {
        let states = f.finished_states();
        if states.is_empty() || want == 0 {
            return Ok(FinishedPage::default());
        }
        let mut sql =
            String::from("SELECT body FROM jobs j WHERE NOT open AND id > $1 AND state = ANY($2)");
        let mut params: Vec<Box<dyn ToSql + Sync + Send>> = vec![
            Box::new(after.min(i64::MAX as u64) as i64),
            Box::new(states),
        ];
        for (column, value) in [("owner", f.user), ("cluster", f.cluster)] {
            if let Some(v) = value {
                params.push(Box::new(v.to_owned()));
                sql += &format!(" AND {column} = ${}", params.len());
            }
        }
        if let Some(site) = f.site {
            params.push(Box::new(site.to_owned()));
            sql += &format!(
                " AND EXISTS (SELECT 1 FROM job_sites s WHERE s.site = ${} AND s.id = j.id)",
                params.len()
            );
        }
        params.push(Box::new(want as i64));
        sql += &format!(" ORDER BY id LIMIT ${}", params.len());
        let bodies: Vec<Vec<u8>> = self.link.call(move |c| {
            let refs: Vec<&(dyn ToSql + Sync)> = params
                .iter()
                .map(|p| p.as_ref() as &(dyn ToSql + Sync))
                .collect();
            Ok(c.query(&sql, &refs)?.iter().map(|r| r.get(0)).collect())
        })?;
        let mut page = FinishedPage::default();
        for b in bodies {
            let job = decode_job(&b)?;
            if f.matches(&job) {
                page.jobs.push(job);
            }
        }
        Ok(page)
    }

    fn newest_first(&self, f: &mut dyn FnMut(v1::Job) -> bool) -> Result<(), StoreError> {
        let mut below = i64::MAX;
        loop {
            let rows: Vec<(i64, Vec<u8>)> = self.link.call(move |c| {
                Ok(c.query(
                    "SELECT id, body FROM jobs WHERE id < $1 ORDER BY id DESC LIMIT 1000",
                    &[&below],
                )?
                .iter()
                .map(|r| (r.get(0), r.get(1)))
                .collect())
            })?;
            if rows.is_empty() {
                return Ok(());
            }
            for (id, body) in rows {
                below = id;
                if !f(decode_job(&body)?) {
                    return Ok(());
                }
            }
        }
    }

    /// One query per span over the rollups' primary key, summed by the database.
    fn usage(&self, by: i32, spans: &[(i64, i64, i64)]) -> Result<Vec<(String, Sums)>, StoreError> {
        let spans = spans.to_vec();
        let rows: Vec<(String, [i64; 5])> = self.link.call(move |c| {
            let mut out = Vec::new();
            for (grain, from, to) in spans {
                for r in c.query(
                    "SELECT key, SUM(jobs)::BIGINT, SUM(proc_s)::BIGINT, SUM(licence_s)::BIGINT, \
                     SUM(wall_s)::BIGINT, SUM(wait_s)::BIGINT FROM usage_rollups \
                     WHERE by_what = $1 AND grain = $2 AND bucket >= $3 AND bucket < $4 \
                     GROUP BY key",
                    &[&by, &grain, &from, &to],
                )? {
                    out.push((r.get(0), [r.get(1), r.get(2), r.get(3), r.get(4), r.get(5)]));
                }
            }
            Ok(out)
        })?;
        let mut out: std::collections::BTreeMap<String, Sums> = Default::default();
        for (key, v) in rows {
            out.entry(key).or_default().add(&Sums {
                jobs: v[0] as u64,
                proc_s: v[1] as u64,
                licence_s: v[2] as u64,
                wall_s: v[3] as u64,
                wait_s: v[4] as u64,
            });
        }
        Ok(out.into_iter().collect())
    }

    /// One query over the user's, the account's or the end times' index, the states filtered
    /// by the database too; with a site to filter on, at most `budget` candidates, the site
    /// checked on them.
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
        let from = (from.0, from.1.min(i64::MAX as u64) as i64);
        let budget = if f.site.is_some() { budget } else { want };
        let mut sql = String::from(
            "SELECT end_time, id, body FROM usage_records WHERE (end_time, id) >= ($1, $2) \
             AND end_time < $3",
        );
        let mut params: Vec<Box<dyn ToSql + Sync + Send>> =
            vec![Box::new(from.0), Box::new(from.1), Box::new(f.until)];
        for (column, value) in [("owner", f.user), ("account", f.account)] {
            if let Some(v) = value {
                params.push(Box::new(v.to_owned()));
                sql += &format!(" AND {column} = ${}", params.len());
            }
        }
        if !f.states.is_empty() {
            params.push(Box::new(f.states.to_vec()));
            sql += &format!(" AND state = ANY(${})", params.len());
        }
        params.push(Box::new(budget as i64));
        sql += &format!(" ORDER BY end_time, id LIMIT ${}", params.len());
        let rows: Vec<(i64, i64, Vec<u8>)> = self.link.call(move |c| {
            let refs: Vec<&(dyn ToSql + Sync)> = params
                .iter()
                .map(|p| p.as_ref() as &(dyn ToSql + Sync))
                .collect();
            Ok(c.query(&sql, &refs)?
                .iter()
                .map(|r| (r.get(0), r.get(1), r.get(2)))
                .collect())
        })?;
        let candidates = rows.into_iter().map(|(end, id, body)| {
            let r = v1::UsageRecord::decode(body.as_slice()).map_err(err)?;
            Ok(((end, id as u64), Some(r)))
        });
        RecordPage::of(candidates, f, want, budget)
    }
}

/// The administrator's URL of the PostgreSQL server the tests use (`GRIDSCHED_TEST_POSTGRES`,
/// which `.ci/run` sets after `scripts/postgres.sh`): `None` with a note when it is not set,
/// except under `CI=true`, where its absence is a failure.
pub fn test_server() -> Option<String> {
    match std::env::var("GRIDSCHED_TEST_POSTGRES") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var("CI").is_ok_and(|v| v == "true") => panic!(
            "GRIDSCHED_TEST_POSTGRES is not set: .ci/run starts PostgreSQL with \
             scripts/postgres.sh and sets it"
        ),
        _ => {
            eprintln!("SKIPPED: GRIDSCHED_TEST_POSTGRES not set: PostgreSQL is not tested");
            None
        }
    }
}

/// A database of its own on a PostgreSQL server, created empty and dropped (with its
/// connections) when this is dropped: for tests and failure drills.
#[derive(Debug)]
pub struct ScratchDatabase {
    admin: String,
    name: String,
    /// Its URL: the administrator's, naming this database.
    pub url: String,
}

impl ScratchDatabase {
    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Creates one through `admin`, the URL of a role that may create databases.
    pub fn create(admin: &str) -> Result<ScratchDatabase, StoreError> {
        // The synchronous client runs a runtime of its own: off any async runtime's thread.
        let admin = admin.to_owned();
        std::thread::spawn(move || Self::create_here(&admin))
            .join()
            .map_err(|_| StoreError::Failed("creating the scratch database panicked".into()))?
    }

    fn create_here(admin: &str) -> Result<ScratchDatabase, StoreError> {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("gridsched_scratch_{}_{n}", std::process::id());
        let fail = |e: postgres::Error| {
            StoreError::Failed(format!("PostgreSQL at {}: {}", shown(admin), said(&e)))
        };
        let mut c = Client::connect(admin, NoTls).map_err(fail)?;
        c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .map_err(fail)?;
        c.batch_execute(&format!("CREATE DATABASE {name}"))
            .map_err(fail)?;
        Ok(ScratchDatabase {
            url: with_dbname(admin, &name),
            admin: admin.to_owned(),
            name,
        })
    }
}

impl Drop for ScratchDatabase {
    fn drop(&mut self) {
        let (admin, name) = (self.admin.clone(), self.name.clone());
        let _ = std::thread::spawn(move || {
            if let Ok(mut c) = Client::connect(&admin, NoTls) {
                let _ = c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
            }
        })
        .join();
    }
}

/// `url` naming database `db` instead of its own.
fn with_dbname(url: &str, db: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let base = match base[scheme_end..].find('/') {
        Some(slash) => &base[..scheme_end + slash],
        None => base,
    };
    match query {
        Some(q) => format!("{base}/{db}?{q}"),
        None => format!("{base}/{db}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::{every, finished_and_open};

    #[test]
    fn urls_are_shown_without_their_password_and_renamed() {
        assert_eq!(
            shown("postgres://ann:secret@db:5432/grid"),
            "postgres://ann:***@db:5432/grid"
        );
        assert_eq!(shown("postgres://db/grid"), "postgres://db/grid");
        assert_eq!(
            with_dbname("postgres://a:b@h:1/x?sslmode=disable", "y"),
            "postgres://a:b@h:1/y?sslmode=disable"
        );
        assert_eq!(with_dbname("postgres://h", "y"), "postgres://h/y");
    }

    /// A malformed URL names the key; wrong credentials and a layout from a newer build are
    /// refused at open, naming the server (password masked) and the versions; a server not
    /// reached is unavailable.
    #[test]
    fn bad_urls_credentials_and_newer_layouts_are_refused_at_open() {
        let e = Postgres::open("postgres://a:b@h:notaport/x").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("store: key `store.url`: `postgres://a:***@h:notaport/x`"),
            "{e}"
        );
        // No server there: unavailable (its supervisor may try again), not refused.
        let e = Postgres::open("postgres://a:b@127.0.0.1:1/x").unwrap_err();
        assert!(
            matches!(&e, StoreError::Unavailable(m) if m.contains("a:***@127.0.0.1:1")),
            "{e}"
        );
        let Some(admin) = test_server() else {
            return;
        };
        let db = ScratchDatabase::create(&admin).unwrap();
        let wrong = db
            .url
            .replacen("gridsched:gridsched@", "gridsched:wrong@", 1);
        assert_ne!(
            wrong, db.url,
            "the test server's URL carries gridsched's password"
        );
        let e = Postgres::open(&wrong).unwrap_err().to_string();
        assert!(
            e.contains("gridsched:***@") && e.contains("password authentication failed"),
            "{e}"
        );
        drop(Postgres::open(&db.url).unwrap());
        let mut c = Client::connect(&db.url, NoTls).unwrap();
        c.batch_execute(&format!(
            "UPDATE gridsched_schema SET version = {}",
            VERSION + 1
        ))
        .unwrap();
        let e = Postgres::open(&db.url).unwrap_err().to_string();
        assert!(
            e.contains(&format!(
                "schema version {}, newer than this build's {VERSION}",
                VERSION + 1
            )),
            "{e}"
        );
    }

    /// A store of version 3 (before accounting) opened by this build: every finished job it
    /// holds gets its record and its rollups.
    #[test]
    fn a_version_3_store_gets_the_records_of_its_finished_jobs() {
        let Some(admin) = test_server() else {
            return;
        };
        let db = ScratchDatabase::create(&admin).unwrap();
        let (done, open) = finished_and_open();
        Postgres::open(&db.url)
            .unwrap()
            .commit(&Write {
                jobs: vec![&done, &open],
                last_id: 2,
                ..Default::default()
            })
            .unwrap();
        let mut c = Client::connect(&db.url, NoTls).unwrap();
        c.batch_execute(
            "DROP TABLE usage_records; DROP TABLE usage_rollups; \
             UPDATE gridsched_schema SET version = 3",
        )
        .unwrap();
        let s = Postgres::open(&db.url).unwrap();
        let page = s
            .reader()
            .unwrap()
            .records(&every(), (i64::MIN, 0), 10, 100)
            .unwrap();
        assert_eq!(
            page.records.iter().map(|r| r.job).collect::<Vec<_>>(),
            vec![1]
        );
        let usage = s
            .reader()
            .unwrap()
            .usage(v1::UsageBy::User as i32, &[(3_600, 0, 7_200)])
            .unwrap();
        assert_eq!(usage.len(), 1);
        assert_eq!((usage[0].0.as_str(), usage[0].1.proc_s), ("ann", 2 * 50));
    }

    /// One replica leads at a time; the lease runs out by the database's clock; a takeover gives
    /// the next epoch, after which every write of the deposed replica fails and leaves nothing;
    /// a replica restarted under its own name takes the lease back at once; a released lease is
    /// taken at once.
    #[test]
    fn the_lease_goes_to_one_replica_at_a_time_and_fences_the_deposed_ones_writes() {
        use crate::store::{Leader, Store, StoreConfig, Write};
        let Some(admin) = test_server() else {
            return;
        };
        let db = ScratchDatabase::create(&admin).unwrap();
        let cfg = StoreConfig {
            backend: crate::store::BackendKind::Postgres,
            url: Some(db.url.clone()),
            ..StoreConfig::default()
        };
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (
            Store::open(dir.path(), &cfg).unwrap(),
            Store::open(dir.path(), &cfg).unwrap(),
        );
        let (la, lb) = (
            a.leadership().unwrap().unwrap(),
            b.leadership().unwrap().unwrap(),
        );
        assert_eq!(la.leader().unwrap(), None);
        let ea = la.try_lead("a", "http://a:1", 60_000).unwrap().unwrap();
        a.fence(ea);
        assert_eq!(lb.try_lead("b", "http://b:1", 60_000).unwrap(), None);
        assert_eq!(
            lb.leader().unwrap(),
            Some(Leader {
                holder: "a".into(),
                address: "http://a:1".into(),
                epoch: 1,
                expired: false
            })
        );
        let job = |id: u64| v1::Job {
            id,
            ..Default::default()
        };
        let (j1, j2, j3) = (job(1), job(2), job(3));
        let put = |s: &Store, j: &v1::Job| {
            s.commit(&Write {
                jobs: vec![j],
                last_id: j.id,
                ..Default::default()
            })
        };
        put(&a, &j1).unwrap();
        // The lease runs out; B takes it with the next epoch.
        assert!(la.renew(ea, 50, Duration::from_secs(5)).unwrap());
        std::thread::sleep(Duration::from_millis(150));
        assert!(lb.leader().unwrap().unwrap().expired);
        let eb = lb.try_lead("b", "http://b:1", 60_000).unwrap().unwrap();
        assert_eq!(eb, ea + 1);
        b.fence(eb);
        // A is deposed: its writes fail and leave nothing; it cannot renew.
        let e = put(&a, &j3).unwrap_err();
        assert!(
            matches!(e, StoreError::Deposed(_)) && e.to_string().contains("epoch 1 no longer"),
            "{e}"
        );
        let e = a.save_reservation(1, None, 1).unwrap_err();
        assert!(matches!(e, StoreError::Deposed(_)), "{e}");
        assert!(!la.renew(ea, 60_000, Duration::from_secs(5)).unwrap());
        put(&b, &j2).unwrap();
        let loaded = b.load().unwrap();
        assert_eq!(
            loaded.jobs.iter().map(|j| j.id).collect::<Vec<_>>(),
            vec![1, 2]
        );
        assert_eq!((loaded.last_id, loaded.last_reservation), (2, 0));
        // B restarted under its own name takes the lease back at once, fencing its old life.
        assert_eq!(lb.try_lead("b", "http://b:1", 60_000).unwrap(), Some(3));
        assert!(matches!(put(&b, &j2), Err(StoreError::Deposed(_))));
        b.fence(3);
        put(&b, &j2).unwrap();
        // A lease let go is taken at once.
        assert_eq!(la.try_lead("a", "http://a:1", 60_000).unwrap(), None);
        lb.release(3).unwrap();
        assert_eq!(la.try_lead("a", "http://a:1", 60_000).unwrap(), Some(4));
        // A store that is not fenced (one meta-scheduler, no replicas) writes without a lease.
        let solo = Store::open(dir.path(), &cfg).unwrap();
        put(&solo, &j3).unwrap();
    }
}
