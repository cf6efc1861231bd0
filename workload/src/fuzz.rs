//! Fuzz entries of the workload readers: arbitrary bytes as an SWF trace and as a JSON Lines job
//! file. Each must return, never panic, whatever the bytes; what a reader accepts must also hold
//! up (an SWF record prints and parses back to itself, its normalized jobs are valid jobs within
//! the machine; a JSON Lines job is valid and writes and reads back to itself). The unit tests
//! below run them on seeded mutants ([`gridsched_core::fuzz`]); `fuzz/` runs them under
//! `cargo fuzz`.

use crate::jsonl::{JsonlReader, JsonlWriter};
use crate::swf::{
    Estimates, NormalizeMode, NormalizeOptions, Normalizer, ProcsField, RuntimeLimit, SwfReader,
    SwfRecord, WideJobs, parse_record,
};

/// The normalizer settings an SWF input is run through: the default, Streit's, and every knob
/// turned.
fn normalizers(procs: u32) -> Vec<Normalizer> {
    let knobs = NormalizeOptions {
        mode: NormalizeMode::Pyss,
        procs_field: ProcsField::Requested,
        runtime_limit: RuntimeLimit::RunToCompletion,
        estimates: Estimates::Multiple(2.5),
        wide_jobs: WideJobs::Reject,
        node_size: 8,
        dependencies: true,
    };
    let streit_knobs = NormalizeOptions {
        mode: NormalizeMode::Streit,
        estimates: Estimates::Perfect,
        ..knobs
    };
    [
        NormalizeOptions::default(),
        NormalizeOptions::streit(),
        knobs,
        streit_knobs,
    ]
    .into_iter()
    .map(|o| Normalizer::new(procs, o).expect("valid options"))
    .collect()
}

/// The 18 fields of `r` as an SWF line.
fn print_record(r: &SwfRecord) -> String {
    format!(
        "{} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {}",
        r.job_number,
        r.submit_time,
        r.wait_time,
        r.run_time,
        r.allocated_procs,
        r.average_cpu_time,
        r.used_memory_kb,
        r.requested_procs,
        r.requested_time,
        r.requested_memory_kb,
        r.status,
        r.user_id,
        r.group_id,
        r.executable,
        r.queue,
        r.partition,
        r.preceding_job,
        r.think_time
    )
}

/// `data` as an SWF file: its header read and queried, every record printed and parsed back, and
/// normalized for a machine of the header's size (or 64 processors) under four rule sets. Returns
/// whether some record was read.
pub fn swf(data: &[u8]) -> bool {
    let mut reader = SwfReader::from_reader(data, "fuzz.swf");
    let h = reader.header();
    let _ = (h.version(), h.max_procs(), h.max_nodes(), h.information());
    let procs = h
        .max_procs()
        .or(h.max_nodes())
        .map_or(64, |p| p.clamp(1, 1 << 20));
    let procs = u32::try_from(procs).expect("clamped");
    let mut normalizers = normalizers(procs);
    let mut accepted = false;
    for rec in reader.by_ref() {
        let Ok(rec) = rec else { continue };
        accepted = true;
        let printed = print_record(&rec);
        let again = parse_record(printed.as_bytes(), "printed", rec.line)
            .unwrap_or_else(|e| panic!("{printed:?} does not parse back: {e}"));
        assert_eq!(again, rec, "{printed:?}");
        for n in &mut normalizers {
            let Ok(Some(job)) = n.normalize(&rec) else {
                continue;
            };
            job.validate()
                .unwrap_or_else(|e| panic!("{:?}: invalid job {job:?}: {e}", n.options()));
            assert!(job.procs <= procs, "{job:?} wider than {procs}");
            assert!(job.runtime.is_some_and(|r| r >= 1), "{job:?}");
        }
    }
    accepted
}

/// `data` as a JSON Lines job file: every job read is valid, and written and read back it is the
/// same job. Returns whether some job was read.
pub fn jsonl(data: &[u8]) -> bool {
    let mut reader = JsonlReader::from_reader(data, "fuzz.jsonl");
    let jobs: Vec<_> = reader.by_ref().filter_map(Result::ok).collect();
    let names = reader.licence_names().to_vec();
    let mut w = JsonlWriter::new(Vec::new(), names.clone());
    for job in &jobs {
        job.validate()
            .unwrap_or_else(|e| panic!("invalid job {job:?}: {e}"));
        w.write_job(job)
            .expect("every licence of a job read has a name");
    }
    let written = w.into_inner();
    let again = JsonlReader::from_reader(&written[..], "written")
        .with_licence_names(&names)
        .expect("distinct names");
    let again: Vec<_> = again
        .map(|j| j.unwrap_or_else(|e| panic!("{}: {e}", String::from_utf8_lossy(&written))))
        .collect();
    assert_eq!(again, jobs, "{}", String::from_utf8_lossy(&written));
    !jobs.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use gridsched_core::fuzz;

    /// Hand-written SWF: a header, typical lines, the edge cases of the format.
    const SWF_SEEDS: &[&[u8]] = &[
        b"; Version: 2.2\n; Computer: IBM SP2\n; MaxJobs: 3\n; MaxProcs: 100\n; MaxNodes: 100\n\
          ; Information: http://example.invalid/\n;              more text\n;\n\
          1 0 5 100 4 -1 -1 4 200 -1 1 3 1 -1 -1 -1 -1 -1\n\
          2 10 5 100.5 4 12.5 -1 4 200 -1 1 3 1 -1 -1 1 1 30\n",
        b"   15   599850 192180   3477.9    4  12.5  -1    4  53940   -1  1  12  13  14 15 16 17 18\r\n",
        b"1 -0.5 0 10 4.7 -1 -1 4 +20 -1 1 1 1 -1 -1 -1 -1 1e2\n\
          2 0 0 0 0 -1 -1 0 -1 -1 0 -1 -1 -1 -1 -1 -1 -1\n\
          3 5 0 1e3 300 -1 -1 300 10 2048 5 7 1 -1 -1 2 2 -5\n",
        b"; MaxProcs: 8\n4 1 0 10 16 -1 -1 9 10 -1 1 1 1 -1 -1 -1 3 0\n\t\n; c\n",
    ];

    const SWF_WORDS: &[&str] = &[
        "; MaxProcs: ",
        "; MaxNodes: ",
        "; Version: 2.2",
        "-1 ",
        "1e3",
    ];

    /// Hand-written JSON Lines: every key of the format, comments, a dependency and an array.
    const JSONL_SEEDS: &[&[u8]] = &[
        b"# jobs\n{\"id\":1,\"submit\":0,\"procs\":4,\"estimate\":3600,\"runtime\":1800}\n\n\
          {\"id\":2,\"submit\":60,\"procs\":1,\"estimate\":600,\"user\":7,\"class\":\"gold\",\
          \"owner_priority\":3,\"deadline\":7200,\"licences\":[\"matlab\",\"fluent\"],\
          \"memory_kb\":2048,\"inputs\":[{\"machine\":3,\"size\":500},{\"size\":100}],\
          \"benchmark\":250,\"partition\":4,\"reservation\":9,\"urgency\":\"high\"}\n",
        b"{\"id\":3,\"submit\":61,\"procs\":2,\"estimate\":10,\"after\":\"afterok:1,afterany:2+60,singleton\",\"name\":\"nightly\"}\n\
          {\"id\":10,\"submit\":62,\"procs\":1,\"estimate\":10,\"array\":\"0-15:4%2\"}\n",
        b"{\"id\":5,\"submit\":0,\"procs\":1,\"estimate\":5,\"stage_in\":[{\"key\":\"genome\",\"bytes\":1000,\"at\":[0,2]}],\"class\":\"silver\",\"urgency\":\"critical\"}\n",
    ];

    const JSONL_WORDS: &[&str] = &[
        "\"id\":",
        "\"procs\":",
        "\"estimate\":",
        "\"deadline\":",
        "\"after\":\"afterok:",
        "\"array\":\"0-",
        "\"licences\":[",
        "\"stage_in\":[",
        "%",
        "?",
        "afternotok:",
        "aftercorr:",
        "singleton",
    ];

    #[test]
    fn the_seeds_are_read() {
        for s in SWF_SEEDS {
            assert!(swf(s), "{}", s.escape_ascii());
        }
        for s in JSONL_SEEDS {
            assert!(jsonl(s), "{}", s.escape_ascii());
        }
    }

    #[test]
    fn fuzz_the_swf_reader() {
        fuzz::run("swf", SWF_SEEDS, SWF_WORDS, 100_000, swf).assert_reaches_past_the_syntax();
    }

    #[test]
    fn fuzz_the_jsonl_reader() {
        fuzz::run("jsonl", JSONL_SEEDS, JSONL_WORDS, 50_000, jsonl)
            .assert_reaches_past_the_syntax();
    }
}
