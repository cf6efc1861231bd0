//! Bounded fuzz runs of gridctl's file readers on seeded mutants ([`gridsched_core::fuzz`]): the
//! job file of `gridctl submit --file`, the workflow file and the grid description of `gridctl
//! up`. Each entry must return, never panic, whatever the bytes; a job or workflow the file
//! yields then goes through the meta-scheduler's door checks, which must not panic either. (The
//! grid file's entry lives beside its parser so that `fuzz/`'s `cargo fuzz` target can include
//! it; gridctl is a binary crate, so the job and workflow files are fuzzed here only.)

use crate::job_file::SubmitArgs;
use crate::up::grid_file::GridFile;
use gridsched_core::fuzz;
use gridsched_proto::SpecLimits;
use meta_scheduler::validate;

/// `data` as a job file, read as TOML and as JSON; each job spec it yields is checked at the
/// door. Returns whether either reading gave a spec.
pub fn job_file(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    let mut accepted = false;
    for json in [false, true] {
        let Ok(args) = SubmitArgs::from_file_text(text, json) else {
            continue;
        };
        assert!(args.file.is_none() && !args.wait, "not job file keys");
        if let Ok(spec) = args.spec(false) {
            let _ = validate::check(Some(&spec), &SpecLimits::default());
            accepted = true;
        }
    }
    accepted
}

/// `data` as a workflow file, read as TOML and as JSON; each workflow it yields is checked at the
/// door. Returns whether either reading gave a workflow.
pub fn workflow_file(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    let values = [
        toml::from_str::<toml::Value>(text).ok(),
        serde_json::from_str::<toml::Value>(text).ok(),
    ];
    let mut accepted = false;
    for value in values.into_iter().flatten() {
        if let Ok(spec) = crate::workflow::parse(value, &["n=2".into()], false) {
            let w = spec.workflow.as_ref().expect("a workflow");
            assert!(!w.nodes.is_empty(), "a workflow has nodes");
            let _ = validate::check_workflow(&spec, &SpecLimits::default());
            accepted = true;
        }
    }
    accepted
}

const JOB_FILES: &[&[u8]] = &[
    b"user = \"ann\"\nclass = \"gold\"\nowner_priority = 2\nprocessors = 4\nestimate = 600\n\
      deadline = \"+3600\"\nmem = \"4G\"\nlicences = [\"matlab\"]\ntoken = \"t1\"\n\
      reservation = \"r7\"\nurgent = \"high\"\nafter = \"afterok:12,afterany:13+60\"\n\
      name = \"nightly\"\narray = \"0-99%10\"\noutputs = [\"res/*.csv\"]\n\
      inputs = [\"https://data.example.invalid/genome.fa#sha256=abcd\"]\n\
      command = [\"sh\", \"-c\", \"echo hi\"]\n",
    b"processors = 1\nemulate = 30\ndeadline = \"2026-11-29T18:00\"\nmem = \"512\"\n",
    b"{\"processors\": 2, \"estimate\": 60, \"deadline\": \"1795785480\", \"class\": \"silver\", \
      \"command\": [\"true\"], \"inputs\": [\"file:///srv/x\"]}",
];

const JOB_WORDS: &[&str] = &[
    "processors = ",
    "estimate = ",
    "deadline = \"+",
    "deadline = \"",
    "mem = \"",
    "reservation = \"r",
    "urgent = \"",
    "array = \"",
    "after = \"",
    "inputs = [\"",
    "\"deadline\": \"+",
    "G\"",
    "T\"",
    " ago",
    "2026-11-29T08:00:00Z",
    "-9999-01-01",
    "9999-12-31T23:59:59Z",
];

const WORKFLOW_FILES: &[&[u8]] = &[
    b"name = \"demo\"\nuser = \"ann\"\n[vars]\nn = \"1\"\nmsg = \"hi\"\n[defaults]\nemulate = 2\n\
      processors = 2\n[[nodes]]\nname = \"a\"\ncommand = [\"sh\", \"-c\", \"echo ${msg} ${n} ${node} $${HOME}\"]\n\
      emulate = 0\n[[nodes]]\nname = \"b\"\nparents = [\"a\"]\nretries = 2\nretry_unless_exit = 3\n\
      abort_on_exit = 9\nvars = { msg = \"bye\" }\narray = \"0-${n}\"\n",
    b"{\"name\": \"j\", \"vars\": {\"n\": 2}, \"nodes\": [{\"name\": \"a\", \"command\": [\"echo\", \"${n}\"]}, \
      {\"name\": \"b\", \"parents\": [\"a\"], \"retries\": 1, \"emulate\": 5}]}",
];

const WORKFLOW_WORDS: &[&str] = &[
    "[[nodes]]\nname = \"",
    "parents = [\"",
    "retries = ",
    "${",
    "$${",
    "${n}",
    "${node}",
    "[vars]\n",
    "[defaults]\n",
    "deadline = \"+",
];

const GRID_WORDS: &[&str] = &[
    "[[sites]]\nname = \"",
    "machines = [{ name = \"m\", processors = ",
    "policy = \"",
    "fb-mod",
    "conservative",
    "dynp",
    "[meta]\n",
    "dispatch = \"",
    "min-completion",
    "multi-site",
    "wan_overhead_pct = ",
    "max_estimate_s = ",
    "benchmark = ",
    "memory_kb = ",
    "[[sites.licences]]\nname = \"",
    "copies = ",
    "urgent = { preempt_by = \"suspend\" }",
    "[sites.slurm]\nrest_url = \"http://127.0.0.1:6820\"\ntoken_file = \"/t\"\n",
    "\\u001b",
    "\\\\",
    "\\\"",
];

/// The grids of gridctl's integration tests.
const TEST_GRIDS: [&str; 4] = [
    include_str!("../tests/data/replay_grid.toml"),
    include_str!("../tests/data/reserve_grid.toml"),
    include_str!("../tests/data/split_grid.toml"),
    include_str!("../tests/data/urgent_lose_grid.toml"),
];

#[test]
fn the_seeds_are_read() {
    for g in TEST_GRIDS {
        assert!(GridFile::fuzz(g.as_bytes()), "{g}");
    }
    for s in JOB_FILES {
        assert!(job_file(s), "{}", s.escape_ascii());
    }
    for s in WORKFLOW_FILES {
        assert!(workflow_file(s), "{}", s.escape_ascii());
    }
    assert!(GridFile::fuzz(crate::up::grid_file::DEFAULT.as_bytes()));
}

#[test]
fn fuzz_the_job_file() {
    fuzz::run("job_file", JOB_FILES, JOB_WORDS, 100_000, job_file).assert_reaches_past_the_syntax();
}

#[test]
fn fuzz_the_workflow_file() {
    fuzz::run(
        "workflow_file",
        WORKFLOW_FILES,
        WORKFLOW_WORDS,
        60_000,
        workflow_file,
    )
    .assert_reaches_past_the_syntax();
}

#[test]
fn fuzz_the_grid_file() {
    let seeds: &[&[u8]] = &[
        crate::up::grid_file::DEFAULT.as_bytes(),
        TEST_GRIDS[0].as_bytes(),
        TEST_GRIDS[1].as_bytes(),
        TEST_GRIDS[2].as_bytes(),
        TEST_GRIDS[3].as_bytes(),
        b"[meta]\ndispatch = \"min-completion\"\nwan_overhead_pct = 10\nstart_claims = false\n\
          urgent = { default = \"high\", allowance = { alice = \"critical\" } }\n\
          submit_rate = { per_user = 2.0, burst = 5 }\n[meta.network]\n\
          submitters = { bandwidth = \"100 MB/s\", latency_ms = 20 }\n[[meta.network.links]]\n\
          from = \"a\"\nto = \"b\"\nbandwidth = \"10 MB/s\"\n\
          [[sites]]\nname = \"a\"\npolicy = \"conservative\"\nmax_estimate_s = 3600\n\
          urgent = { preempt_by = \"suspend\" }\nmachines = [{ name = \"m1\", processors = 4 }, \
          { name = \"m2\", processors = 4, memory_kb = 1024 }]\n\
          [[sites]]\nname = \"b\"\nmachines = [{ name = \"n1\", processors = 2, benchmark = 3 }]\n\
          licences = [{ name = \"matlab\", copies = 2 }]\n",
        b"[[sites]]\nname = \"hpc\"\nmachines = [{ name = \"localhost\", processors = 16 }]\n\
          [sites.slurm]\nrest_url = \"http://127.0.0.1:6820\"\ntoken_file = \"/t\"\n",
    ];
    fuzz::run("grid_file", seeds, GRID_WORDS, 20_000, GridFile::fuzz)
        .assert_reaches_past_the_syntax();
}
