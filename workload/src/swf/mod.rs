//! The Standard Workload Format (SWF v2.2) of the Parallel Workloads Archive: header, streaming
//! record reader and the normalization of records into jobs (`reference-semantics.md`,
//! `self-tuning-and-multisite.md` §5.3).

pub mod header;
pub mod normalize;
pub mod reader;
pub mod record;
mod scan;

pub use header::{Preemption, SwfHeader};
pub use normalize::{
    Estimates, NormalizeMode, NormalizeOptions, NormalizeStats, Normalizer, ProcsField,
    RuntimeLimit, WideJobs,
};
pub use reader::SwfReader;
pub use record::{SwfRecord, parse_record};
