//! Data a job reads that must be at its site before it starts: the grid-level inputs a site
//! stages in (the two-level design's Convergent Scheduling computes a job's input transfer time
//! inside a cluster, Pasquali, thesis D7.2; this is the same idea between sites). Each input is
//! named by a key (a content digest live, a dataset name in a workload): inputs of the same key
//! are the same bytes, and a site that holds them never moves them again.

use super::ClusterId;
use serde::{Deserialize, Serialize};

/// One input a job stages in at its site.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataIn {
    /// What it is: equal keys are equal bytes (live, the SHA-256 of an upload or the URL).
    pub key: String,
    /// Its size in bytes (0 when not known: it then costs only the link's latency).
    pub bytes: u64,
    /// The sites that hold a copy when the job is submitted; none: it comes from the submitters'
    /// side (an upload kept by the meta-scheduler, a URL's server).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub at: Vec<ClusterId>,
}

impl DataIn {
    /// An input of `bytes` bytes named `key`, from the submitters' side.
    pub fn new(key: impl Into<String>, bytes: u64) -> DataIn {
        DataIn {
            key: key.into(),
            bytes,
            at: Vec::new(),
        }
    }
}

/// A file a job writes that the jobs after it read: a workflow node's declared output, by name,
/// with its expected size (0 when not known).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataOut {
    /// Its name (a path in the job's working directory).
    pub name: String,
    /// Its expected size in bytes.
    #[serde(default)]
    pub bytes: u64,
}
