//! Every integration test of the crate, one module per file, linked as one test binary: the
//! workspace's test build links one binary per crate's tests instead of one per file.

mod bench_history;
mod compose;
mod compose_replicas;
mod pipes_and_pages;
mod replay;
mod replay_grid;
mod up;
