//! Worked examples of the accounting records and rollups.

use super::*;
use v1::JobState::*;

/// A job of `user` on `procs` processors with the `licences`, submitted at `submit`, run on
/// alpha/m1 from `start` to `end`.
fn ran(id: u64, user: &str, procs: u32, licences: &[&str], times: (i64, i64, i64)) -> v1::Job {
    let (submit, start, end) = times;
    v1::Job {
        id,
        state: Completed.into(),
        spec: Some(v1::JobSpec {
            user: user.into(),
            processors: procs,
            licences: licences.iter().map(|l| (*l).to_owned()).collect(),
            user_class: v1::UserClass::Gold.into(),
            ..Default::default()
        }),
        priority: 7,
        site: Some("alpha".into()),
        machine: Some("m1".into()),
        submit_time: Some(submit),
        start_time: Some(start),
        end_time: Some(end),
        exit_code: Some(0),
        ..Default::default()
    }
}

fn accounts() -> Accounts {
    use gridsched_core::fairshare::{Assoc, FairShareConfig, Kind};
    Accounts::new(Some(&FairShareConfig {
        accounts: vec![
            Assoc {
                name: "physics".into(),
                shares: 1,
                ..Default::default()
            },
            Assoc {
                name: "ann".into(),
                kind: Kind::User,
                parent: Some("physics".into()),
                shares: 1,
                ..Default::default()
            },
        ],
        algorithm: Default::default(),
        half_life: 0,
        dampening: 1.0,
        recalc_period: 0,
        reset_period: gridsched_core::fairshare::ResetPeriod::None,
    }))
}

fn at(
    rollups: &BTreeMap<RollKey, Sums>,
    by: v1::UsageBy,
    grain: i64,
    bucket: i64,
    key: &str,
) -> Sums {
    rollups
        .get(&(by as i32, grain, bucket, key.to_owned()))
        .copied()
        .unwrap_or_default()
}

/// A run from 1600 to 9000 on 4 processors with one licence: 29,600 processor-seconds, split
/// 8,000 / 14,400 / 7,200 over the hours 0, 1 and 2; the job counted in the hour it ended.
#[test]
fn a_run_is_charged_to_the_hours_it_ran_in() {
    let r = record(
        &ran(5, "ann", 4, &["matlab"], (1000, 1600, 9000)),
        &accounts(),
    )
    .unwrap();
    assert_eq!(
        (
            r.account.as_str(),
            r.wait_s,
            r.wall_s,
            r.processor_seconds,
            r.licence_seconds
        ),
        ("physics", 600, 7400, 29_600, 7_400)
    );
    assert_eq!(r.parts.len(), 1);
    assert_eq!(
        (r.parts[0].site.as_str(), r.parts[0].machine.as_str()),
        ("alpha", "m1")
    );
    let u = rollups([&r]);
    use v1::UsageBy::*;
    let proc = |b| at(&u, User, HOUR, b, "ann").proc_s;
    assert_eq!(
        (proc(0), proc(3600), proc(7200), proc(10_800)),
        (8_000, 14_400, 7_200, 0)
    );
    assert_eq!(at(&u, User, HOUR, 3600, "ann").licence_s, 3_600);
    let ended = at(&u, User, HOUR, 7200, "ann");
    assert_eq!((ended.jobs, ended.wall_s, ended.wait_s), (1, 7400, 600));
    assert_eq!(at(&u, User, HOUR, 0, "ann").jobs, 0);
    let day = Sums {
        jobs: 1,
        proc_s: 29_600,
        licence_s: 7_400,
        wall_s: 7_400,
        wait_s: 600,
    };
    for (by, key) in [
        (User, "ann"),
        (Account, "physics"),
        (Site, "alpha"),
        (Machine, "alpha/m1"),
        (Class, "gold"),
    ] {
        assert_eq!(at(&u, by, DAY, 0, key), day, "{by:?}");
    }
}

/// A split job: each fragment charged at its site and machine, the job counted once per site,
/// its licences once.
#[test]
fn a_split_job_is_charged_at_each_site() {
    let mut j = ran(9, "bob", 6, &["abaqus"], (0, 100, 200));
    j.site = None;
    j.machine = None;
    j.fragments = vec![
        v1::Fragment {
            site: "alpha".into(),
            processors: 4,
            machine: Some("a1".into()),
            start_time: Some(100),
            end_time: Some(200),
            ..Default::default()
        },
        v1::Fragment {
            site: "beta".into(),
            processors: 2,
            machine: Some("b1".into()),
            start_time: Some(100),
            end_time: Some(200),
            ..Default::default()
        },
    ];
    let r = record(&j, &accounts()).unwrap();
    assert_eq!(
        (r.processor_seconds, r.licence_seconds, r.account.as_str()),
        (600, 100, "")
    );
    let u = rollups([&r]);
    use v1::UsageBy::*;
    assert_eq!(at(&u, Site, HOUR, 0, "alpha").proc_s, 400);
    assert_eq!(at(&u, Site, HOUR, 0, "beta").proc_s, 200);
    assert_eq!(at(&u, Site, HOUR, 0, "beta").jobs, 1);
    assert_eq!(at(&u, Machine, HOUR, 0, "beta/b1").proc_s, 200);
    let user = at(&u, User, HOUR, 0, "bob");
    assert_eq!((user.jobs, user.proc_s, user.licence_s), (1, 600, 100));
}

/// A job cancelled before it started has a record (its wait runs to its end) and uses
/// nothing; an array and a running job have none.
#[test]
fn only_a_finished_job_has_a_record_and_only_a_run_uses() {
    let mut j = ran(3, "ann", 2, &[], (50, 0, 80));
    j.start_time = None;
    j.state = Cancelled.into();
    let r = record(&j, &accounts()).unwrap();
    assert!(r.parts.is_empty());
    assert_eq!(
        (r.wait_s, r.wall_s, r.processor_seconds, r.start_time),
        (30, 0, 0, None)
    );
    assert!(rollups([&r]).is_empty());
    let mut running = ran(4, "ann", 2, &[], (0, 10, 20));
    running.state = Running.into();
    assert!(record(&running, &accounts()).is_none());
    let mut array = ran(5, "ann", 2, &[], (0, 10, 20));
    array.spec.as_mut().unwrap().array = Some("0-9".into());
    assert!(record(&array, &accounts()).is_none());
}

/// A period's buckets: the whole days as days, the hours at its edges as hours.
#[test]
fn a_period_is_summed_from_whole_days_and_the_hours_at_its_edges() {
    assert_eq!(
        spans(5 * HOUR, 2 * DAY + 3 * HOUR),
        vec![
            (HOUR, 5 * HOUR, DAY),
            (DAY, DAY, 2 * DAY),
            (HOUR, 2 * DAY, 2 * DAY + 3 * HOUR)
        ]
    );
    assert_eq!(spans(DAY, 3 * DAY), vec![(DAY, DAY, 3 * DAY)]);
    assert_eq!(spans(HOUR, 5 * HOUR), vec![(HOUR, HOUR, 5 * HOUR)]);
    assert_eq!(spans(5 * HOUR, 5 * HOUR), vec![]);
    assert_eq!(hours(3_599, 3_601), (0, 7_200));
    // Summing the spans of any period equals summing its hours one by one.
    let r = record(
        &ran(1, "ann", 3, &[], (0, 1_000, 3 * DAY + 500)),
        &accounts(),
    )
    .unwrap();
    let u = rollups([&r]);
    for (since, until) in [(0, 4 * DAY), (2 * HOUR, 2 * DAY + 7 * HOUR), (DAY, 2 * DAY)] {
        let by_spans: u64 = spans(since, until)
            .iter()
            .flat_map(|&(g, a, b)| (a..b).step_by(g as usize).map(move |t| (g, t)))
            .map(|(g, t)| at(&u, v1::UsageBy::User, g, t, "ann").proc_s)
            .sum();
        let by_hours: u64 = (since..until)
            .step_by(HOUR as usize)
            .map(|t| at(&u, v1::UsageBy::User, HOUR, t, "ann").proc_s)
            .sum();
        assert_eq!(by_spans, by_hours, "{since}..{until}");
    }
}

#[test]
fn sums_survive_their_bytes() {
    let s = Sums {
        jobs: 1,
        proc_s: u64::MAX,
        licence_s: 3,
        wall_s: 4,
        wait_s: 5,
    };
    assert_eq!(Sums::from_bytes(&s.to_bytes()), s);
}
