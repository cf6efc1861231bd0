//! Arbitrary bytes as an SWF trace (`gridsched_workload::fuzz::swf`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    gridsched_workload::fuzz::swf(data);
});
