//! Every integration test of the crate, one module per file, linked as one test binary: the
//! workspace's test build links one binary per crate's tests instead of one per file.

mod cli;
mod cluster_cli;
mod experiments;
mod invariants;
mod trace_cli;
