//! The gRPC API of gridsched (protobuf package `gridsched.v1`) and its conversions to the core
//! model.
//!
//! * [`v1`]: the messages and the generated clients and servers of the three services:
//!   `MetaScheduler` (the grid's entry point, `meta.proto`), `LocalScheduler` (one per cluster,
//!   also serving its machines' site agents, `local.proto`), with the shared job (`job.proto`) and
//!   cluster-state (`cluster.proto`) messages. The `.proto` sources are in this crate's `proto/`
//!   directory and are compiled by the pure-Rust `protox`, so no `protoc` is needed.
//! * [`convert`]: model ↔ message conversions, validating what comes from the wire.
//! * [`FILE_DESCRIPTOR_SET`]: the encoded descriptors of all the files, for gRPC reflection.
//! * [`limits`]: how big a submitted job may be ([`SpecLimits`]), the meta-scheduler's door check.
//! * [`standard`]: the standard health and reflection services every gridsched server offers.
//! * [`blobs`], [`intake`]: the content-addressed store of staged inputs, and the receiving of a
//!   stream of a blob's chunks into it.

pub mod blobs;
pub mod convert;
pub mod intake;
pub mod limits;
pub mod output;
pub mod standard;

pub use convert::{
    ConvertError, NameTable, UnnamedId, job_from_spec, reservation_to_proto, spec_from_job,
    urgency_from,
};
pub use limits::SpecLimits;

/// The generated messages, clients (`*_client`) and servers (`*_server`) of `gridsched.v1`.
#[allow(
    missing_docs,
    missing_debug_implementations,
    clippy::all,
    clippy::pedantic,
    clippy::nursery,
    rustdoc::all
)]
pub mod v1 {
    tonic::include_proto!("gridsched.v1");
}

/// The encoded `google.protobuf.FileDescriptorSet` of every `gridsched.v1` file (with source
/// comments), e.g. for `tonic-reflection`.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/gridsched_descriptor.bin"));

impl v1::JobState {
    /// Whether the job has ended: completed, failed, cancelled, killed or lost.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            v1::JobState::Completed
                | v1::JobState::Failed
                | v1::JobState::Cancelled
                | v1::JobState::Killed
                | v1::JobState::Lost
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn descriptor_set_holds_all_files_and_services() {
        let fds = prost_types::FileDescriptorSet::decode(FILE_DESCRIPTOR_SET).unwrap();
        let files: Vec<&str> = fds.file.iter().map(|f| f.name()).collect();
        for f in [
            "gridsched/v1/job.proto",
            "gridsched/v1/cluster.proto",
            "gridsched/v1/meta.proto",
            "gridsched/v1/local.proto",
        ] {
            assert!(files.contains(&f), "{f} missing from {files:?}");
        }
        let services: Vec<&str> = fds
            .file
            .iter()
            .flat_map(|f| f.service.iter().map(|s| s.name()))
            .collect();
        assert_eq!(services, ["LocalScheduler", "MetaScheduler"]);
        assert!(fds.file.iter().all(|f| f.source_code_info.is_some()));
    }

    #[test]
    fn terminal_states() {
        assert!(v1::JobState::Lost.is_terminal());
        assert!(v1::JobState::Killed.is_terminal());
        assert!(!v1::JobState::Running.is_terminal());
        assert!(!v1::JobState::Unspecified.is_terminal());
    }
}
