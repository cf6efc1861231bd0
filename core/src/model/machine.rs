//! A machine: a space-shared computer of some processors and a benchmark score, possibly with
//! node-locked licences (spec `two-level-grid-scheduler.md` D2.2).

use super::{ClusterId, LicenceId, MachineId};
use serde::{Deserialize, Serialize};

/// One machine (an SMP node or a whole parallel computer) of a cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    /// Index in the platform's machine list.
    pub id: MachineId,
    /// The cluster the machine belongs to.
    #[serde(default)]
    pub cluster: ClusterId,
    /// Human-readable, unique within the platform.
    pub name: String,
    /// Number of processors.
    pub procs: u32,
    /// Computational power on the scale of [`super::Job::benchmark`].
    pub benchmark: u32,
    /// Memory in KiB, if the platform models it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_kb: Option<u64>,
    /// Licences permanently bound to this machine (node-locked, D2.3).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_locked: Vec<LicenceId>,
}

impl Machine {
    /// A machine without memory limit or node-locked licences.
    pub fn new(id: MachineId, name: &str, procs: u32, benchmark: u32) -> Machine {
        Machine {
            id,
            cluster: ClusterId(0),
            name: name.to_string(),
            procs,
            benchmark,
            memory_kb: None,
            node_locked: Vec::new(),
        }
    }

    /// Whether `licence` is node-locked on this machine.
    pub fn has_node_locked(&self, licence: LicenceId) -> bool {
        self.node_locked.contains(&licence)
    }
}
