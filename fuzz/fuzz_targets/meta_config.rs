//! Arbitrary bytes as the meta-scheduler's configuration file (`meta_scheduler::fuzz::config`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    meta_scheduler::fuzz::config(data);
});
