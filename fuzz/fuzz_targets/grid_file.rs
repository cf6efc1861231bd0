//! Arbitrary bytes as the grid description of `gridctl up` (`GridFile::fuzz`). gridctl is a
//! binary crate, so its grid file module is compiled here from its source; it uses no other
//! module of gridctl.
#![no_main]

#[path = "../../gridctl/src/up/grid_file.rs"]
#[allow(dead_code)]
mod grid_file;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    grid_file::GridFile::fuzz(data);
});
