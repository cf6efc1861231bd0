//! The store's behaviour, the same for every backend: each test runs against the embedded
//! store and against PostgreSQL (a database of its own on the server that
//! `GRIDSCHED_TEST_POSTGRES` names, an administrator's URL; `.ci/run` starts one with
//! `scripts/postgres.sh`, and under `CI=true` its absence is a failure).

use super::*;
use crate::history::Filter;

/// Where a test's store lives.
pub(crate) struct Place {
    dir: tempfile::TempDir,
    cfg: StoreConfig,
    /// For PostgreSQL: the test's own database.
    pg: Option<postgres::ScratchDatabase>,
}

impl Place {
    pub(crate) fn open_result(&self) -> Result<Store, StoreError> {
        Store::open(self.dir.path(), &self.cfg)
    }

    pub(crate) fn open(&self) -> Store {
        self.open_result()
            .unwrap_or_else(|e| panic!("{}: {e}", self.name()))
    }

    pub(crate) fn name(&self) -> &'static str {
        if self.pg.is_some() {
            "postgres"
        } else {
            "embedded"
        }
    }
}

/// A fresh place in each backend: a temporary directory, and a new database.
pub(crate) fn places() -> Vec<Place> {
    let mut out = vec![Place {
        dir: tempfile::tempdir().unwrap(),
        cfg: StoreConfig::default(),
        pg: None,
    }];
    if let Some(admin) = postgres::test_server() {
        let db = postgres::ScratchDatabase::create(&admin).unwrap();
        out.push(Place {
            dir: tempfile::tempdir().unwrap(),
            cfg: StoreConfig {
                backend: BackendKind::Postgres,
                url: Some(db.url.clone()),
                ..StoreConfig::default()
            },
            pg: Some(db),
        });
    }
    out
}

/// Job `id` of `user`, at `site` (and cluster), in `state`.
pub(crate) fn job(id: u64, state: v1::JobState, user: &str, site: &str) -> v1::Job {
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

/// A job that ran from 100 to 150 on 2 processors (id 1, ann's) and one still queued (id 2),
/// as a store older than accounting holds them.
pub(crate) fn finished_and_open() -> (v1::Job, v1::Job) {
    let mut done = job(1, v1::JobState::Completed, "ann", "alpha");
    done.spec.as_mut().unwrap().processors = 2;
    done.submit_time = Some(90);
    done.start_time = Some(100);
    done.end_time = Some(150);
    (done, job(2, v1::JobState::Queued, "ann", "alpha"))
}

/// A history filter that lets every record through.
pub(crate) fn every() -> RecordFilter<'static> {
    RecordFilter {
        since: i64::MIN,
        until: i64::MAX,
        user: None,
        account: None,
        site: None,
        states: &[],
    }
}

/// A restart loads the open jobs and their decisions only, and the snapshot; the finished
/// ones, their decisions and every token stay readable in the store.
#[test]
fn a_restart_loads_the_open_jobs_and_the_history_stays_readable() {
    for place in places() {
        restart_loads_open_jobs(&place);
    }
}

fn restart_loads_open_jobs(place: &Place) {
    eprintln!("backend: {}", place.name());
    use v1::JobState::*;
    let running = job(7, Running, "ann", "alpha");
    let mut done = job(8, Queued, "ann", "alpha");
    {
        let s = place.open_result().unwrap();
        let d = Decision::default();
        s.commit(&Write {
            jobs: vec![&running, &done],
            tokens: vec![("ann\0t".into(), 8)],
            last_id: 8,
            last_sequence: 3,
            decisions: vec![(7, &d), (8, &d)],
            site_seqs: vec![("alpha", 42)],
            classifier: Some(vec![5, -3, 1 << 40]),
            usage: Some(b"{\"procs\": 1}".to_vec()),
            records: vec![],
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
    let s = place.open_result().unwrap();
    let l = s.load().unwrap();
    assert_eq!(l.jobs, vec![running]);
    assert_eq!(l.decisions.len(), 1);
    assert_eq!((l.last_id, l.last_sequence), (8, 4));
    assert_eq!(l.site_seqs, vec![("alpha".to_string(), 42)]);
    assert_eq!(l.classifier, Some(vec![5, -3, 1 << 40]));
    // The fair-share usage, kept by a later write that charged nothing.
    assert_eq!(l.usage.as_deref(), Some(&b"{\"procs\": 1}"[..]));
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
    for place in places() {
        finished_through_indexes(&place);
    }
}

fn finished_through_indexes(place: &Place) {
    eprintln!("backend: {}", place.name());
    use v1::JobState::*;
    let s = place.open();
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
        tasks: true,
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
    // bob's failed jobs: 9, 21 and 33; the embedded store with a budget of 3 looks at his 6, 9
    // and 12 only (PostgreSQL bounds its own work and answers in full).
    let bob_failed = Filter {
        states: &failed,
        ..bob
    };
    if place.pg.is_none() {
        assert_eq!(ids(bob_failed, 0, 5, 3), (vec![9], Some(17)));
    } else {
        assert_eq!(ids(bob_failed, 0, 5, 3), (vec![9, 21, 33], None));
    }
    assert_eq!(ids(bob_failed, 17, 5, 100), (vec![21, 33], None));
}

/// Accounting in each backend: a record is kept once however often its job is written, the
/// rollups sum the records, and a history page walks them by end time through its token,
/// equal to a scan of every record.
#[test]
fn accounting_records_are_kept_once_summed_and_paged() {
    for place in places() {
        accounting_kept_once(&place);
    }
}

fn accounting_kept_once(place: &Place) {
    use crate::accounting::{self, Accounts, DAY, HOUR};
    eprintln!("backend: {}", place.name());
    use v1::JobState::*;
    let s = place.open();
    let jobs: Vec<v1::Job> = (1..=60u64)
        .map(|id| {
            let state = [Completed, Failed, Cancelled][id as usize % 3];
            let user = ["ann", "bob", "cy"][id as usize % 3 / 2 + id as usize % 2];
            let mut j = job(id, state, user, if id % 4 == 0 { "beta" } else { "alpha" });
            let spec = j.spec.as_mut().unwrap();
            spec.processors = 1 + (id % 5) as u32;
            let start = id as i64 * 1_000;
            j.submit_time = Some(start - 100);
            j.start_time = Some(start);
            // Every end time twice: the ids break the ties.
            j.end_time = Some(start + 2_000 + (id as i64 % 2) * 1_000);
            j.machine = Some("m1".into());
            j
        })
        .collect();
    let accounts = Accounts::default();
    let records: Vec<v1::UsageRecord> = jobs
        .iter()
        .filter_map(|j| accounting::record(j, &accounts))
        .collect();
    let write = |js: &[v1::Job], rs: Vec<v1::UsageRecord>| {
        s.commit(&Write {
            jobs: js.iter().collect(),
            last_id: 60,
            records: rs,
            ..Default::default()
        })
        .unwrap();
    };
    write(&jobs[..30], records[..30].to_vec());
    // The same jobs again (a finished job written twice), then the rest.
    write(&jobs[..40], records[..40].to_vec());
    write(&jobs[40..], records[40..].to_vec());
    let r = s.reader().unwrap();
    // Usage by user over the whole period equals the records' sums, each counted once.
    let all = accounting::spans(0, 2 * DAY);
    let got = r.usage(v1::UsageBy::User as i32, &all).unwrap();
    let mut naive: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
    for rec in &records {
        let e = naive.entry(rec.user.clone()).or_default();
        e.0 += 1;
        e.1 += rec.processor_seconds;
    }
    let got_sums: std::collections::BTreeMap<String, (u64, u64)> = got
        .iter()
        .map(|(k, s)| (k.clone(), (s.jobs, s.proc_s)))
        .collect();
    assert_eq!(got_sums, naive);
    // One hour: only the seconds run in it.
    let hour = r
        .usage(v1::UsageBy::Site as i32, &accounting::spans(HOUR, 2 * HOUR))
        .unwrap();
    let in_hour = |site: &str| -> u64 {
        records
            .iter()
            .flat_map(|rec| &rec.parts)
            .filter(|p| p.site == site)
            .map(|p| {
                let (a, b) = (p.start_time.max(HOUR), p.end_time.min(2 * HOUR));
                u64::from(p.processors) * (b - a).max(0) as u64
            })
            .sum()
    };
    let hour: Vec<(String, u64)> = hour.into_iter().map(|(k, s)| (k, s.proc_s)).collect();
    assert_eq!(
        hour,
        vec![
            ("alpha".to_owned(), in_hour("alpha")),
            ("beta".to_owned(), in_hour("beta"))
        ]
    );
    // History pages, through each index, against a scan.
    let failed = [Failed as i32];
    let filters = [
        RecordFilter {
            since: 10_000,
            until: 50_000,
            user: None,
            account: None,
            site: None,
            states: &[],
        },
        RecordFilter {
            since: 0,
            until: i64::MAX,
            user: Some("bob"),
            account: None,
            site: Some("alpha"),
            states: &[],
        },
        RecordFilter {
            since: 0,
            until: i64::MAX,
            user: None,
            account: Some(""),
            site: None,
            states: &failed,
        },
    ];
    for f in filters {
        let naive: Vec<u64> = {
            let mut v: Vec<&v1::UsageRecord> = records.iter().filter(|x| f.matches(x)).collect();
            v.sort_by_key(|x| (x.end_time, x.job));
            v.iter().map(|x| x.job).collect()
        };
        assert!(!naive.is_empty());
        // Pages of 4, with a budget of 7 candidates: tokens go on where a page stopped.
        let mut after = (i64::MIN, 0);
        let mut got = Vec::new();
        for _ in 0..100 {
            let p = r.records(&f, after, 4, 7).unwrap();
            got.extend(p.records.iter().map(|x| x.job));
            after = match (p.records.len(), p.looked_to) {
                (4, _) => {
                    let l = p.records.last().unwrap();
                    (l.end_time, l.job)
                }
                (_, Some(to)) => to,
                (_, None) => break,
            };
        }
        assert_eq!(got, naive, "{f:?}");
    }
}
