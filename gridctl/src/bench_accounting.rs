//! `gridctl bench --accounting N`: the accounting reports over a history of N finished jobs.
//! The records of a synthetic year (seeded ChaCha8: 200 users in 20 accounts, 4 sites of 8 machines,
//! runs of a minute to a day, 1 to 64 processors) are written into the meta-scheduler's store
//! through its own commit path (its rollups with them) before the grid starts; then `Usage` and
//! `History` are timed through the running meta-scheduler's API.

use crate::bench::pct;
use crate::out::outln;
use gridsched_proto::v1::{self, meta_scheduler_client::MetaSchedulerClient};
use meta_scheduler::store::{BackendKind, Store, StoreConfig, Write};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::Instant;
use tonic::transport::Channel;

/// The synthetic history's first second (2025-01-01 00:00 UTC) and its length (a year).
const YEAR_START: i64 = 1_735_689_600;
const YEAR: i64 = 365 * 86_400;

/// The benchmark's seeded generator.
type Mix = ChaCha8Rng;

/// Uniform in `0..n`.
fn below(rng: &mut Mix, n: u64) -> u64 {
    rng.random_range(0..n)
}

/// Record `k` of `n`, ending in order over the year.
fn record(k: u64, n: u64, rng: &mut Mix) -> v1::UsageRecord {
    let user = below(rng, 200);
    let site = below(rng, 4);
    let procs = 1u32 << below(rng, 7);
    // A minute to a day, most of them short.
    let wall = 60 * (1 + below(rng, 24 * 60) * below(rng, 1_000) / 1_000) as i64;
    let end = YEAR_START + (k as i64 * YEAR) / n as i64;
    let start = end - wall;
    let wait = below(rng, 3_600) as i64;
    let state = if below(rng, 10) == 0 {
        v1::JobState::Failed
    } else {
        v1::JobState::Completed
    };
    v1::UsageRecord {
        job: k + 1,
        user: format!("u{user:03}"),
        account: format!("acct{:02}", user % 20),
        user_class: v1::UserClass::Regular.into(),
        priority: 1 + below(rng, 10) as u32,
        state: state.into(),
        processors: procs,
        parts: vec![v1::UsagePart {
            site: format!("site{site}"),
            machine: format!("m{}", below(rng, 8)),
            processors: procs,
            start_time: start,
            end_time: end,
        }],
        submit_time: start - wait,
        start_time: Some(start),
        end_time: end,
        wait_s: wait,
        wall_s: wall,
        processor_seconds: u64::from(procs) * wall as u64,
        exit_code: Some(0),
        ..Default::default()
    }
}

/// Writes `n` records into the store the grid's meta-scheduler will open (`dir/meta-state`, or
/// the PostgreSQL database `postgres`), in transactions of 10,000.
pub fn fill(n: usize, dir: &std::path::Path, postgres: Option<&str>) -> anyhow::Result<()> {
    let cfg = match postgres {
        Some(url) => StoreConfig {
            backend: BackendKind::Postgres,
            url: Some(url.to_owned()),
            ..StoreConfig::default()
        },
        None => StoreConfig::default(),
    };
    let store = Store::open(&dir.join("meta-state"), &cfg)?;
    let t = Instant::now();
    let mut rng = Mix::seed_from_u64(42);
    let mut k = 0u64;
    while k < n as u64 {
        let upto = (k + 10_000).min(n as u64);
        let records = (k..upto).map(|i| record(i, n as u64, &mut rng)).collect();
        store.commit(&Write {
            records,
            ..Write::default()
        })?;
        k = upto;
    }
    outln!(
        "{n} accounting records of a synthetic year (200 users, 20 accounts, 4 sites) written into the {} store in {:.1} s (rollups included)",
        if postgres.is_some() {
            "PostgreSQL"
        } else {
            "embedded"
        },
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Times `Usage` and `History` over the filled store, `samples` calls of each kind.
pub async fn measure(c: &mut MetaSchedulerClient<Channel>, samples: usize) -> anyhow::Result<()> {
    let mut rng = Mix::seed_from_u64(7);
    let mut time = async |c: &mut MetaSchedulerClient<Channel>,
                          f: &mut dyn FnMut(&mut Mix) -> Call|
           -> anyhow::Result<(Vec<f64>, usize)> {
        let mut lat = Vec::with_capacity(samples);
        let mut rows = 0;
        for _ in 0..samples {
            let call = f(&mut rng);
            let t = Instant::now();
            rows += match call {
                Call::Usage(r) => c.usage(r).await?.into_inner().rows.len(),
                Call::History(r) => c.history(r).await?.into_inner().records.len(),
            };
            lat.push(t.elapsed().as_secs_f64() * 1e3);
        }
        Ok((lat, rows / samples.max(1)))
    };
    // A period of a day to the whole year, at any hour.
    let period = |rng: &mut Mix| {
        let len = 86_400 * (1 + below(rng, 365) as i64);
        let since = YEAR_START + below(rng, (YEAR - len + 1) as u64) as i64;
        (since, since + len)
    };
    let kinds: [(&str, Box<Sampler>); 6] = [
        (
            "usage --by user, a day to a year",
            Box::new(move |r: &mut Mix| usage(v1::UsageBy::User, period(r))),
        ),
        (
            "usage --by account, a day to a year",
            Box::new(move |r: &mut Mix| usage(v1::UsageBy::Account, period(r))),
        ),
        (
            "usage --by machine, the whole year",
            Box::new(move |_: &mut Mix| {
                usage(v1::UsageBy::Machine, (YEAR_START, YEAR_START + YEAR))
            }),
        ),
        (
            "history, 100 jobs from any time",
            Box::new(move |r: &mut Mix| history(period(r), None, None, None)),
        ),
        (
            "history --user, 100 jobs of the period",
            Box::new(move |r: &mut Mix| {
                let u = format!("u{:03}", below(r, 200));
                history((YEAR_START, YEAR_START + YEAR), Some(u), None, None)
            }),
        ),
        (
            "history --account --state failed, 100 jobs",
            Box::new(move |r: &mut Mix| {
                let a = format!("acct{:02}", below(r, 20));
                history(
                    (YEAR_START, YEAR_START + YEAR),
                    None,
                    Some(a),
                    Some(v1::JobState::Failed),
                )
            }),
        ),
    ];
    for (name, mut f) in kinds {
        let (mut lat, rows) = time(c, &mut *f).await?;
        outln!(
            "{name}: {samples} calls, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({rows} rows a call on average)",
            pct(&mut lat, 0.5),
            pct(&mut lat, 0.99),
            pct(&mut lat, 1.0)
        );
    }
    Ok(())
}

/// Draws the next call of a kind.
type Sampler = dyn FnMut(&mut Mix) -> Call;

/// A call to time.
enum Call {
    Usage(v1::UsageRequest),
    History(v1::HistoryRequest),
}

fn usage(by: v1::UsageBy, (since, until): (i64, i64)) -> Call {
    Call::Usage(v1::UsageRequest {
        by: by.into(),
        since: Some(since),
        until: Some(until),
    })
}

fn history(
    (since, until): (i64, i64),
    user: Option<String>,
    account: Option<String>,
    state: Option<v1::JobState>,
) -> Call {
    Call::History(v1::HistoryRequest {
        since: Some(since),
        until: Some(until),
        user,
        account,
        states: state.map(i32::from).into_iter().collect(),
        limit: 100,
        ..Default::default()
    })
}
