use super::*;
use crate::input::DynBufRead;
use crate::shrink::ShrinkExt;
use flate2::Compression;
use flate2::write::GzEncoder;
use std::io::{Cursor, Write};

const SWF: &str = "\
; Version: 2.2
; MaxNodes: 16
; MaxProcs: 64
;
1 0 5 100 4 -1 -1 4 200 -1 1 3 1 -1 -1 -1 -1 -1
2 10 5 100 x4 -1 -1 4 200 -1 1 3 1 -1 -1 -1 -1 -1
3 20 5 100 4 -1 -1 4 200 -1 1 3 1 -1 -1 -1 -1
4 30 5 0 4 -1 -1 4 200 -1 1 3 1 -1 -1 -1 -1 -1
5 40 5 100 128 -1 -1 4 200 -1 1 3 1 -1 -1 -1 -1 -1
";

fn swf_source(text: &str) -> JobSource {
    let input: DynBufRead = Box::new(Cursor::new(text.as_bytes().to_vec()));
    let reader = SwfReader::from_reader(input, "t.swf");
    let procs = reader.header().machine_procs_hint().unwrap();
    JobSource::from_swf(
        reader,
        Normalizer::new(procs, NormalizeOptions::default()).unwrap(),
    )
}

#[test]
fn first_bad_line_ends_the_stream_by_default() {
    let mut s = swf_source(SWF);
    assert_eq!(s.machine_procs_hint(), Some(64));
    assert_eq!(s.header().unwrap().max_nodes(), Some(16));
    assert_eq!(s.next().unwrap().unwrap().id.0, 1);
    let e = s.next().unwrap().unwrap_err();
    assert_eq!(
        e.to_string(),
        "t.swf:6: field 5 (allocated processors): expected a number, found \"x4\""
    );
    assert!(s.next().is_none());
    assert_eq!(s.skipped(), 0);
}

#[test]
fn skipping_bad_lines_counts_them() {
    let mut s = swf_source(SWF).skip_bad_lines(true);
    let jobs: Vec<Job> = s.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(
        jobs.iter().map(|j| j.id.0).collect::<Vec<_>>(),
        vec![1, 4, 5]
    );
    assert_eq!(s.skipped(), 2);
    let msgs: Vec<String> = s.skipped_errors().iter().map(|e| e.to_string()).collect();
    assert_eq!(msgs.len(), 2);
    assert!(msgs[0].starts_with("t.swf:6: field 5"));
    assert_eq!(msgs[1], "t.swf:7: expected 18 fields, found 17");
    let st = s.normalize_stats().unwrap();
    assert_eq!(
        (st.records, st.jobs, st.problematic, st.capped),
        (3, 3, 1, 1)
    );
    assert_eq!(jobs[2].procs, 64);
}

#[test]
fn many_bad_lines_keep_only_the_first_errors() {
    let mut text = String::new();
    for i in 1..=25 {
        text.push_str(&format!("{i} 0 0 1 1\n"));
    }
    text.push_str("26 0 5 100 4 -1 -1 4 200 -1 1 3 1 -1 -1 -1 -1 -1\n");
    let input: DynBufRead = Box::new(Cursor::new(text.into_bytes()));
    let reader = SwfReader::from_reader(input, "m.swf");
    let mut s = JobSource::from_swf(
        reader,
        Normalizer::new(8, NormalizeOptions::default()).unwrap(),
    )
    .skip_bad_lines(true);
    assert_eq!(s.by_ref().filter_map(Result::ok).count(), 1);
    assert_eq!(s.skipped(), 25);
    assert_eq!(s.skipped_errors().len(), KEPT_ERRORS);
    assert_eq!(s.skipped_errors()[3].line(), Some(4));
}

fn write_gzip(path: &Path, data: &[u8]) {
    let mut enc = GzEncoder::new(std::fs::File::create(path).unwrap(), Compression::default());
    enc.write_all(data).unwrap();
    enc.finish().unwrap();
}

#[test]
fn gzip_and_plain_files_give_identical_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("trace.swf");
    // A misleading name: gzip is detected by content.
    let gz = dir.path().join("trace.txt");
    let good: String = SWF
        .lines()
        .filter(|l| !l.contains("x4"))
        .collect::<Vec<_>>()
        .join("\n");
    let good = good.replace("-1 -1 -1 -1\n4 30", "-1 -1 -1 -1 -1\n4 30");
    std::fs::write(&plain, &good).unwrap();
    write_gzip(&gz, good.as_bytes());
    let a = JobSource::open_swf(&plain, None, NormalizeOptions::default()).unwrap();
    let mut b = JobSource::open_swf(&gz, None, NormalizeOptions::default()).unwrap();
    assert_eq!(a.header(), b.header());
    let ja: Vec<Job> = a.collect::<Result<_, _>>().unwrap();
    let jb: Vec<Job> = b.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(ja.len(), 4);
    assert_eq!(ja, jb);
    let p = b.progress().unwrap();
    assert_eq!(p.total(), Some(std::fs::metadata(&gz).unwrap().len()));
    assert_eq!(p.consumed(), p.total().unwrap());
    assert_eq!(p.fraction(), Some(1.0));
}

#[test]
fn truncated_gzip_is_a_gzip_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.swf.gz");
    let mut text = String::from("; MaxProcs: 8\n");
    for i in 1..=5000 {
        text.push_str(&format!(
            "{i} {i} 0 10 1 -1 -1 1 20 -1 1 1 1 -1 -1 -1 -1 -1\n"
        ));
    }
    let mut enc = GzEncoder::new(Vec::new(), Compression::default());
    enc.write_all(text.as_bytes()).unwrap();
    let gz = enc.finish().unwrap();
    std::fs::write(&path, &gz[..gz.len() / 2]).unwrap();
    let s = JobSource::open_swf(&path, None, NormalizeOptions::default())
        .unwrap()
        .skip_bad_lines(true);
    let results: Vec<_> = s.collect();
    let err = results.last().unwrap().as_ref().unwrap_err();
    assert!(matches!(err, WorkloadError::Gzip { .. }), "{err:?}");
    assert!(err.to_string().contains("cut.swf.gz:"), "{err}");
    assert!(results[..results.len() - 1].iter().all(Result::is_ok));
}

#[test]
fn open_recognises_the_format() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("jobs.data");
    write_gzip(
        &j,
        b"\n  # jobs\n{\"id\":1,\"submit\":0,\"procs\":2,\"estimate\":5,\"licences\":[\"x\"]}\n",
    );
    let mut s = JobSource::open(&j, None, NormalizeOptions::default()).unwrap();
    assert_eq!(s.format(), Some(InputFormat::Jsonl));
    assert_eq!(s.machine_procs_hint(), None);
    assert_eq!(s.next().unwrap().unwrap().procs, 2);
    assert_eq!(s.licence_names(), ["x"]);
    assert!(s.header().is_none() && s.normalize_stats().is_none());
    let w = dir.path().join("t.swf");
    std::fs::write(&w, SWF).unwrap();
    let s = JobSource::open(&w, Some(10), NormalizeOptions::default()).unwrap();
    assert_eq!(s.format(), Some(InputFormat::Swf));
    assert_eq!(s.normalized_procs(), Some(10));
    assert_eq!(s.machine_procs_hint(), Some(64));
    let n = dir.path().join("noheader.swf");
    std::fs::write(&n, "1 0 5 100 4 -1 -1 4 200 -1 1 3 1 -1 -1 -1 -1 -1\n").unwrap();
    let e = JobSource::open(&n, None, NormalizeOptions::default()).unwrap_err();
    assert!(
        e.to_string()
            .contains("noheader.swf: the SWF header gives no machine size")
    );
    let e = JobSource::open(
        dir.path().join("missing.swf"),
        None,
        NormalizeOptions::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("missing.swf"));
}

#[test]
fn synthetic_source_and_shrink_adapter() {
    let params = SyntheticParams {
        jobs: 50,
        procs: 32,
        ..SyntheticParams::default()
    };
    let s = JobSource::synthetic(params).unwrap();
    assert_eq!(s.machine_procs_hint(), Some(32));
    assert_eq!(s.format(), None);
    assert!(s.progress().is_none());
    let plain: Vec<Job> = s.collect::<Result<_, _>>().unwrap();
    let shrunk: Vec<Job> = JobSource::synthetic(params)
        .unwrap()
        .shrink(0.5)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(plain.len(), 50);
    for (a, b) in plain.iter().zip(&shrunk) {
        assert_eq!(b.submit, a.submit / 2);
        assert_eq!(
            (a.procs, a.estimate, a.runtime),
            (b.procs, b.estimate, b.runtime)
        );
    }
}
