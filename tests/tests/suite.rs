//! Every integration test of the crate, one module per file, linked as one test binary: the
//! workspace's test build links one binary per crate's tests instead of one per file.

mod admission;
mod dashboard;
mod golden_kth;
mod knobs;
mod live_commit_faults;
mod live_gang;
mod live_grid;
mod live_job_sharing;
mod live_local;
mod live_multi_node;
mod live_multi_site;
mod live_multi_site_differential;
mod live_replay;
mod live_replicas;
mod live_reservations;
mod live_slurm;
mod live_split_faults;
mod live_urgent;
mod secure_grid;
mod standard_services;
