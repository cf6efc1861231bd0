//! Arbitrary bytes as a JSON Lines job file (`gridsched_workload::fuzz::jsonl`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    gridsched_workload::fuzz::jsonl(data);
});
