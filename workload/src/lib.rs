//! Workload input for gridsched: where the jobs of a simulation or a live test come from.
//!
//! * [`swf`]: Standard Workload Format traces, plain or gzip (detected by content), streamed
//!   with one reused line buffer; the header; and the normalization of records into jobs, with
//!   the reference (`pyss`) rules of `reference-semantics.md` as the default and Streit's
//!   pre-processing (`self-tuning-and-multisite.md` §5.3) as an option.
//! * [`jsonl`]: the native JSON Lines format (reader and writer), which carries what SWF cannot
//!   (classes, deadlines, licences, input data, benchmark scores).
//! * [`synthetic`]: a seeded, deterministic, streaming synthetic workload (§5.4 arrivals).
//! * [`seed_setups`]: the synthetic platforms and job streams of the two-level scheduler's
//!   experiments (Tables 1, 4, 6/7 and the MKP set-up).
//! * [`source`]: [`JobSource`], one iterator over any of the above, with the bad-line policy.
//! * [`scale`]: Ernemann's trace scaling to a larger machine (Part C) and the wide-job
//!   splitting of the grid workloads (§6.6, modifications 1–4).
//! * [`shrink`]: the shrinking factor of §5.5 as an iterator adapter.
//! * [`hyper_erlang`], [`size_class_model`], [`overestimation`]: the per-size-class Hyper-Erlang
//!   workload model and the Ω / Φ run-time estimate models of Zhang et al. (§2.1–§2.2).
//! * [`traces`]: finding the shared traces (`GRIDSCHED_TRACES`) by path, name or prefix.
//! * [`error`]: [`WorkloadError`], which always names the file, line and field.
//!
//! ```no_run
//! use gridsched_workload::{JobSource, NormalizeOptions};
//! # fn main() -> Result<(), gridsched_workload::WorkloadError> {
//! let mut source = JobSource::open("KTH-SP2-1996-2.1-cln.swf.gz", None, NormalizeOptions::default())?
//!     .skip_bad_lines(true);
//! let procs = source.normalized_procs();
//! for job in source.by_ref() {
//!     let job = job?;
//!     // ...
//! #   let _ = (job, procs);
//! }
//! println!("skipped {} lines", source.skipped());
//! # Ok(())
//! # }
//! ```

pub mod data_heavy;
pub mod error;
#[doc(hidden)]
pub mod fuzz;
pub mod hyper_erlang;
pub mod input;
pub mod jsonl;
pub mod overestimation;
mod prefetch;
pub mod scale;
pub mod seed_setups;
pub mod shrink;
pub mod size_class_model;
pub mod source;
pub mod swf;
pub mod synthetic;
pub mod traces;

pub use error::WorkloadError;
pub use input::Progress;
pub use jsonl::{JsonlReader, JsonlWriter};
pub use shrink::{Shrink, ShrinkExt};
pub use source::{InputFormat, JobSource};
pub use swf::{
    Estimates, NormalizeMode, NormalizeOptions, NormalizeStats, Normalizer, ProcsField,
    RuntimeLimit, SwfHeader, SwfReader, SwfRecord, WideJobs,
};
pub use synthetic::{SyntheticGenerator, SyntheticParams};
