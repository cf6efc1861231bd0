use super::*;
use crate::swf::record::parse_record;

/// A record from the fields that matter: submit, run, allocated, requested procs, requested time.
fn rec(
    job: u64,
    submit: &str,
    run: &str,
    alloc: &str,
    req_procs: &str,
    req_time: &str,
) -> SwfRecord {
    let line = format!(
        "{job} {submit} -1 {run} {alloc} -1 -1 {req_procs} {req_time} -1 1 7 1 -1 -1 2 -1 -1"
    );
    parse_record(line.as_bytes(), "t.swf", job).unwrap()
}

fn norm(p: u32, options: NormalizeOptions) -> Normalizer {
    Normalizer::new(p, options).unwrap()
}

/// (submit, procs, estimate, actual) of the job, or None when dropped.
fn shape(n: &mut Normalizer, r: &SwfRecord) -> Option<(i64, u32, i64, i64)> {
    n.normalize(r)
        .unwrap()
        .map(|j| (j.submit, j.procs, j.estimate, j.runtime.unwrap()))
}

#[test]
fn pyss_normal_job() {
    let mut n = norm(100, NormalizeOptions::default());
    let j = n
        .normalize(&rec(5, "10", "100", "4", "4", "200"))
        .unwrap()
        .unwrap();
    assert_eq!(j.id.0, 5);
    assert_eq!(
        (j.submit, j.procs, j.estimate, j.runtime),
        (10, 4, 200, Some(100))
    );
    assert_eq!(j.user, UserId(7));
    assert_eq!(j.partition, Some(2));
    assert_eq!(j.memory_kb, None);
    assert!(j.validate().is_ok());
}

#[test]
fn pyss_problematic_jobs_become_one_second_jobs() {
    let mut n = norm(100, NormalizeOptions::default());
    // run time 0
    assert_eq!(
        shape(&mut n, &rec(1, "50", "0", "4", "4", "200")),
        Some((50, 4, 1, 1))
    );
    // run time -1
    assert_eq!(
        shape(&mut n, &rec(2, "50", "-1", "4", "4", "200")),
        Some((50, 4, 1, 1))
    );
    // allocated processors -1: processors = max(1, -1)
    assert_eq!(
        shape(&mut n, &rec(3, "50", "30", "-1", "4", "200")),
        Some((50, 1, 1, 1))
    );
    // negative submit: submit = max(submit, 1)
    assert_eq!(
        shape(&mut n, &rec(4, "-5", "30", "4", "4", "200")),
        Some((1, 4, 1, 1))
    );
    // submit 0 of a problematic job becomes 1
    assert_eq!(
        shape(&mut n, &rec(5, "0", "0", "4", "4", "200")),
        Some((1, 4, 1, 1))
    );
    // a problematic job wider than P is capped and counted
    assert_eq!(
        shape(&mut n, &rec(6, "9", "0", "400", "4", "200")),
        Some((9, 100, 1, 1))
    );
    let s = n.stats();
    assert_eq!(s.problematic, 6);
    assert_eq!(s.problematic_capped, 1);
    assert_eq!(s.capped, 1);
    assert_eq!((s.records, s.jobs, s.dropped()), (6, 6, 0));
}

#[test]
fn pyss_run_longer_than_request_is_killed_at_the_request() {
    let mut n = norm(100, NormalizeOptions::default());
    assert_eq!(
        shape(&mut n, &rec(1, "0", "500", "2", "2", "300")),
        Some((0, 2, 500, 300))
    );
}

#[test]
fn pyss_missing_request_runs_one_second() {
    let mut n = norm(100, NormalizeOptions::default());
    assert_eq!(
        shape(&mut n, &rec(1, "0", "500", "2", "2", "-1")),
        Some((0, 2, 500, 1))
    );
}

#[test]
fn pyss_float_run_time_is_truncated_after_min_max() {
    let mut n = norm(100, NormalizeOptions::default());
    assert_eq!(
        shape(&mut n, &rec(1, "0", "99.9", "2", "2", "200")),
        Some((0, 2, 200, 99))
    );
    // estimate = trunc(max(100.7, 150.9, 1)) = 150, actual = trunc(min(...)) = 100
    assert_eq!(
        shape(&mut n, &rec(2, "0", "150.9", "2", "2", "100.7")),
        Some((0, 2, 150, 100))
    );
    // 0.5 s is not problematic (run > 0): estimate = max(200, .5, 1), actual = max(.5, 1)
    assert_eq!(
        shape(&mut n, &rec(3, "0", "0.5", "2", "2", "200")),
        Some((0, 2, 200, 1))
    );
    assert_eq!(n.stats().problematic, 0);
}

#[test]
fn pyss_caps_at_p() {
    let mut n = norm(100, NormalizeOptions::default());
    assert_eq!(
        shape(&mut n, &rec(1, "0", "10", "128", "128", "20")),
        Some((0, 100, 20, 10))
    );
    assert_eq!(
        shape(&mut n, &rec(2, "0", "10", "100", "100", "20")),
        Some((0, 100, 20, 10))
    );
    assert_eq!(n.stats().capped, 1);
    assert_eq!(n.stats().problematic_capped, 0);
}

#[test]
fn attributes_user_partition_memory() {
    let mut n = norm(100, NormalizeOptions::default());
    let line = "9 0 -1 10 1 -1 -1 1 20 2048 1 -1 1 -1 -1 -1 -1 -1";
    let r = parse_record(line.as_bytes(), "t.swf", 3).unwrap();
    let j = n.normalize(&r).unwrap().unwrap();
    assert_eq!(j.user, UserId(0));
    assert_eq!(j.partition, None);
    assert_eq!(j.memory_kb, Some(2048));
    let line = "9 0 -1 10 1 -1 -1 1 20 -1 1 99999999999 1 -1 -1 -1 -1 -1";
    let r = parse_record(line.as_bytes(), "t.swf", 4).unwrap();
    let e = n.with_file_name("u.swf").normalize(&r).unwrap_err();
    assert_eq!(
        e.to_string(),
        "u.swf:4: field 12 (user id): 99999999999 does not fit in 32 bits"
    );
}

#[test]
fn streit_drops_and_clips() {
    let mut n = norm(100, NormalizeOptions::streit());
    assert_eq!(
        shape(&mut n, &rec(1, "100", "50", "4", "4", "60")),
        Some((100, 4, 60, 50))
    );
    // earlier than the previous kept job
    assert_eq!(shape(&mut n, &rec(2, "99", "50", "4", "4", "60")), None);
    // width 0 and width > P (even though wide_jobs = cap)
    assert_eq!(shape(&mut n, &rec(3, "100", "50", "0", "4", "60")), None);
    assert_eq!(shape(&mut n, &rec(4, "100", "50", "101", "4", "60")), None);
    // negative actual, negative estimate
    assert_eq!(shape(&mut n, &rec(5, "100", "-1", "4", "4", "60")), None);
    assert_eq!(shape(&mut n, &rec(6, "100", "50", "4", "4", "-1")), None);
    // actual := min(actual, estimate)
    assert_eq!(
        shape(&mut n, &rec(7, "101", "90", "4", "4", "60")),
        Some((101, 4, 60, 60))
    );
    // zero actual after truncation; zero estimate makes the actual zero too (ambiguity 26)
    assert_eq!(shape(&mut n, &rec(8, "102", "0.9", "4", "4", "60")), None);
    assert_eq!(shape(&mut n, &rec(9, "102", "50", "4", "4", "0")), None);
    // negative submit
    assert_eq!(shape(&mut n, &rec(10, "-3", "50", "4", "4", "60")), None);
    // an unsorted drop compares with the previous *kept* job (101), not job 10
    assert_eq!(
        shape(&mut n, &rec(11, "101", "5", "4", "4", "60")),
        Some((101, 4, 60, 5))
    );
    let s = *n.stats();
    assert_eq!(s.dropped_unsorted, 1);
    assert_eq!(s.dropped_width, 2);
    assert_eq!(s.dropped_negative_time, 2);
    assert_eq!(s.dropped_zero_runtime, 2);
    assert_eq!(s.dropped_negative_submit, 1);
    assert_eq!((s.records, s.jobs, s.dropped()), (11, 3, 8));
    assert_eq!(s.problematic, 0);
}

#[test]
fn knob_requested_procs() {
    let o = NormalizeOptions {
        procs_field: ProcsField::Requested,
        ..NormalizeOptions::default()
    };
    let mut n = norm(100, o);
    assert_eq!(
        shape(&mut n, &rec(1, "0", "10", "8", "6", "20")),
        Some((0, 6, 20, 10))
    );
    // field 8 <= 0: field 5
    assert_eq!(
        shape(&mut n, &rec(2, "0", "10", "8", "-1", "20")),
        Some((0, 8, 20, 10))
    );
    // allocated -1 but requested 16: a normal job under this knob
    assert_eq!(
        shape(&mut n, &rec(3, "0", "10", "-1", "16", "20")),
        Some((0, 16, 20, 10))
    );
    assert_eq!(n.stats().problematic, 0);
}

#[test]
fn knob_run_to_completion() {
    let o = NormalizeOptions {
        runtime_limit: RuntimeLimit::RunToCompletion,
        ..NormalizeOptions::default()
    };
    let mut n = norm(100, o);
    assert_eq!(
        shape(&mut n, &rec(1, "0", "500.7", "2", "2", "300")),
        Some((0, 2, 300, 500))
    );
    // no request: estimate = actual
    assert_eq!(
        shape(&mut n, &rec(2, "0", "500", "2", "2", "-1")),
        Some((0, 2, 500, 500))
    );
    // a tiny request still gives an estimate of at least 1
    assert_eq!(
        shape(&mut n, &rec(3, "0", "5", "2", "2", "0.5")),
        Some((0, 2, 1, 5))
    );
    // problematic jobs are unchanged by the knob
    assert_eq!(
        shape(&mut n, &rec(4, "3", "0", "2", "2", "300")),
        Some((3, 2, 1, 1))
    );
}

#[test]
fn knob_estimates() {
    let perfect = NormalizeOptions {
        estimates: Estimates::Perfect,
        ..NormalizeOptions::default()
    };
    let mut n = norm(100, perfect);
    assert_eq!(
        shape(&mut n, &rec(1, "0", "500.7", "2", "2", "300")),
        Some((0, 2, 500, 500))
    );
    let double = NormalizeOptions {
        estimates: Estimates::Multiple(1.5),
        ..NormalizeOptions::default()
    };
    let mut n = norm(100, double);
    assert_eq!(
        shape(&mut n, &rec(1, "0", "101", "2", "2", "300")),
        Some((0, 2, 152, 101))
    );
    let half = NormalizeOptions {
        estimates: Estimates::Multiple(0.5),
        ..NormalizeOptions::default()
    };
    let mut n = norm(100, half);
    // killed at the (shorter) estimate
    assert_eq!(
        shape(&mut n, &rec(1, "0", "101", "2", "2", "300")),
        Some((0, 2, 51, 51))
    );
    let half_rtc = NormalizeOptions {
        estimates: Estimates::Multiple(0.5),
        runtime_limit: RuntimeLimit::RunToCompletion,
        ..NormalizeOptions::default()
    };
    let mut n = norm(100, half_rtc);
    assert_eq!(
        shape(&mut n, &rec(1, "0", "101", "2", "2", "300")),
        Some((0, 2, 51, 101))
    );
    // streit + perfect: a negative request no longer matters
    let o = NormalizeOptions {
        estimates: Estimates::Perfect,
        ..NormalizeOptions::streit()
    };
    let mut n = norm(100, o);
    assert_eq!(
        shape(&mut n, &rec(1, "0", "70", "2", "2", "-1")),
        Some((0, 2, 70, 70))
    );
}

#[test]
fn knob_reject_wide_jobs() {
    let o = NormalizeOptions {
        wide_jobs: WideJobs::Reject,
        ..NormalizeOptions::default()
    };
    let mut n = norm(100, o);
    assert_eq!(shape(&mut n, &rec(1, "0", "10", "101", "101", "20")), None);
    assert_eq!(
        shape(&mut n, &rec(2, "0", "10", "100", "100", "20")),
        Some((0, 100, 20, 10))
    );
    assert_eq!(n.stats().dropped_wide, 1);
    assert_eq!(n.stats().capped, 0);
}

#[test]
fn knob_node_size() {
    let o = NormalizeOptions {
        node_size: 8,
        ..NormalizeOptions::default()
    };
    let mut n = norm(1152, o);
    assert_eq!(
        shape(&mut n, &rec(1, "0", "10", "1", "1", "20")),
        Some((0, 8, 20, 10))
    );
    assert_eq!(
        shape(&mut n, &rec(2, "0", "10", "16", "16", "20")),
        Some((0, 16, 20, 10))
    );
    assert_eq!(
        shape(&mut n, &rec(3, "0", "10", "17", "17", "20")),
        Some((0, 24, 20, 10))
    );
    assert_eq!(n.stats().node_rounded, 2);
    // rounding happens before capping
    let mut n = norm(
        100,
        NormalizeOptions {
            node_size: 8,
            ..NormalizeOptions::default()
        },
    );
    assert_eq!(
        shape(&mut n, &rec(1, "0", "10", "97", "97", "20")),
        Some((0, 100, 20, 10))
    );
    assert_eq!(n.stats().capped, 1);
}

#[test]
fn options_deserialize_and_validate() {
    let o: NormalizeOptions = serde_json::from_str(
        r#"{"mode":"streit","procs_field":"requested","runtime_limit":"run_to_completion",
            "estimates":{"multiple":2.0},"wide_jobs":"reject","node_size":8}"#,
    )
    .unwrap();
    assert_eq!(o.mode, NormalizeMode::Streit);
    assert_eq!(o.procs_field, ProcsField::Requested);
    assert_eq!(o.runtime_limit, RuntimeLimit::RunToCompletion);
    assert_eq!(o.estimates, Estimates::Multiple(2.0));
    assert_eq!(o.wide_jobs, WideJobs::Reject);
    assert_eq!(o.node_size, 8);
    let d: NormalizeOptions = serde_json::from_str("{}").unwrap();
    assert_eq!(d, NormalizeOptions::default());
    let p: NormalizeOptions = serde_json::from_str(r#"{"estimates":"perfect"}"#).unwrap();
    assert_eq!(p.estimates, Estimates::Perfect);
    let e = serde_json::from_str::<NormalizeOptions>(r#"{"mdoe":"pyss"}"#).unwrap_err();
    assert!(e.to_string().contains("unknown field `mdoe`"), "{e}");
    assert!(Normalizer::new(0, NormalizeOptions::default()).is_err());
    let bad = NormalizeOptions {
        estimates: Estimates::Multiple(-1.0),
        ..NormalizeOptions::default()
    };
    assert!(
        Normalizer::new(10, bad)
            .unwrap_err()
            .to_string()
            .contains("multiple")
    );
    let bad = NormalizeOptions {
        node_size: 0,
        ..NormalizeOptions::default()
    };
    assert!(bad.validate().is_err());
}

/// A record whose fields 17–18 name its preceding job and think time.
fn rec_after(job: u64, submit: &str, before: i64, think: i64) -> SwfRecord {
    let line = format!("{job} {submit} -1 100 4 -1 -1 4 200 -1 1 7 1 -1 -1 2 {before} {think}");
    parse_record(line.as_bytes(), "t.swf", job).unwrap()
}

#[test]
fn fields_17_and_18_become_a_dependency_only_when_asked() {
    let recs = [
        rec_after(1, "0", -1, -1),
        rec_after(2, "50", 1, 30),
        // Its preceding job was never read (before the stream's start).
        rec_after(3, "60", 99, 10),
        // A negative think time counts as none; a job named as its own predecessor is none.
        rec_after(4, "70", 2, -1),
        rec_after(5, "80", 5, 0),
    ];
    let mut off = norm(100, NormalizeOptions::default());
    for r in &recs {
        assert!(off.normalize(r).unwrap().unwrap().after.is_none());
    }
    let options = NormalizeOptions {
        dependencies: true,
        ..NormalizeOptions::default()
    };
    let mut on = norm(100, options);
    let after: Vec<Option<String>> = recs
        .iter()
        .map(|r| {
            let j = on.normalize(r).unwrap().unwrap();
            j.validate().unwrap();
            j.after.map(|d| d.to_string())
        })
        .collect();
    assert_eq!(
        after,
        [
            None,
            Some("afterany:1+30".into()),
            None,
            Some("afterany:2".into()),
            None
        ]
    );
    assert_eq!(on.stats().dependent, 2);
    // A dropped job is no predecessor (streit drops a job of zero run time).
    let mut streit = norm(
        100,
        NormalizeOptions {
            dependencies: true,
            ..NormalizeOptions::streit()
        },
    );
    let zero = parse_record(b"1 0 -1 0 4 -1 -1 4 200 -1 1 7 1 -1 -1 2 -1 -1", "t.swf", 1).unwrap();
    assert!(streit.normalize(&zero).unwrap().is_none());
    let j = streit
        .normalize(&rec_after(2, "50", 1, 30))
        .unwrap()
        .unwrap();
    assert!(j.after.is_none());
}
