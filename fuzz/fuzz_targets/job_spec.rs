//! Arbitrary bytes as a `JobSpec` at the meta-scheduler's gRPC door
//! (`meta_scheduler::fuzz::job_spec`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    meta_scheduler::fuzz::job_spec(data);
});
