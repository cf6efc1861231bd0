//! Every integration test of the crate, one module per file, linked as one test binary: the
//! workspace's test build links one binary per crate's tests instead of one per file.

mod coallocate;
mod history;
mod live;
mod postgres_outage;
