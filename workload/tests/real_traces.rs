//! Reads the shared Parallel Workloads Archive traces (see `shared/traces/PROVENANCE.md`) from
//! `$GRIDSCHED_TRACES` (default: `../shared/traces` beside the workspace root, see `traces::dir`).
//! A missing trace skips the test, except under `CI=true`, where it fails.

use gridsched_workload::{JobSource, NormalizeOptions, SwfReader, traces};
use std::path::PathBuf;
use std::time::Instant;

/// The path of a trace, or `None` (after saying so) when it is absent outside CI.
fn trace(name: &str) -> Option<PathBuf> {
    traces::for_test(name)
}

#[test]
fn kth_header_and_all_jobs_in_reference_mode() {
    let Some(path) = trace("KTH-SP2-1996-2.1-cln.swf.gz") else {
        return;
    };
    let mut source = JobSource::open_swf(&path, None, NormalizeOptions::default()).unwrap();
    let header = source.header().unwrap();
    assert_eq!(header.max_procs(), Some(100));
    assert_eq!(header.max_nodes(), Some(100));
    assert_eq!(header.version(), Some("2.2"));
    assert_eq!(header.acknowledge(), Some("Lars Malinowsky"));
    assert_eq!(header.unix_start_time(), Some(843480031));
    assert_eq!(source.normalized_procs(), Some(100));
    let jobs: Vec<_> = source.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(jobs.len(), 27_992);
    let stats = source.normalize_stats().unwrap();
    assert_eq!(stats.records, 27_992);
    assert_eq!(stats.jobs, 27_992);
    assert_eq!(stats.problematic, 0);
    assert_eq!(stats.capped, 0);
    // First line: `15 599850 192180 3477 4 -1 -1 4 53940 -1 1 12 12 -1 -1 -1 -1 -1`.
    let first = &jobs[0];
    assert_eq!(first.id.0, 15);
    assert_eq!(
        (first.submit, first.procs, first.estimate, first.runtime),
        (599_850, 4, 53_940, Some(3_477))
    );
    assert_eq!(first.user.0, 12);
    assert!(jobs.iter().all(|j| j.validate().is_ok() && j.procs <= 100));
    let p = source.progress().unwrap();
    assert_eq!(p.total(), Some(404_417));
    assert_eq!(p.consumed(), 404_417);
}

/// Times decompression + parsing of the large traces and prints the normalizer counters of all
/// five at P = MaxProcs (CEA-Curie: 80,640). Run with
/// `cargo test --release -p gridsched-workload --test real_traces -- --ignored --nocapture`.
#[test]
#[ignore = "timing report; run in release with --nocapture"]
fn parse_times_and_counters() {
    for (name, procs) in [
        ("KTH-SP2-1996-2.1-cln.swf.gz", None),
        ("HPC2N-2002-2.1-cln.swf.gz", None),
        ("SDSC-BLUE-2000-4.2-cln.swf.gz", None),
        ("LCG-2005-1.swf.gz", None),
        ("CEA-Curie-2011-2.1-cln-b2.swf.gz", Some(80_640)),
    ] {
        let Some(path) = trace(name) else {
            continue;
        };
        let mut best = f64::INFINITY;
        let mut records = 0;
        for _ in 0..5 {
            let start = Instant::now();
            let reader = SwfReader::open(&path).unwrap();
            let mut n = 0u64;
            for r in reader {
                r.unwrap();
                n += 1;
            }
            best = best.min(start.elapsed().as_secs_f64());
            records = n;
        }
        let mut best_jobs = f64::INFINITY;
        let mut jobs = 0;
        for _ in 0..5 {
            let start = Instant::now();
            let source = JobSource::open_swf(&path, procs, NormalizeOptions::default()).unwrap();
            jobs = source.map(Result::unwrap).count();
            best_jobs = best_jobs.min(start.elapsed().as_secs_f64());
        }
        let mut source = JobSource::open_swf(&path, procs, NormalizeOptions::default()).unwrap();
        source.by_ref().for_each(|j| drop(j.unwrap()));
        let mut streit = JobSource::open_swf(&path, procs, NormalizeOptions::streit()).unwrap();
        let streit_jobs = streit.by_ref().map(Result::unwrap).count();
        println!(
            "{name}: {records} records, parse {:.1} ms, to jobs {:.1} ms (best of 5), {jobs} jobs, P = {}",
            best * 1e3,
            best_jobs * 1e3,
            source.normalized_procs().unwrap_or(0)
        );
        println!("    pyss:   {:?}", source.normalize_stats().unwrap());
        println!(
            "    streit: {streit_jobs} jobs, {:?}",
            streit.normalize_stats().unwrap()
        );
    }
}
