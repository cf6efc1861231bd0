//! The algorithms of `gridsim experiment cs` and its two readings of the CS variants (spec
//! `two-level-grid-scheduler.md` D9.2; readings D12 #17, #18, #31): the names its runs, report
//! and findings share.

use super::Summary;
use gridsched_core::policy::PolicyKind;

/// The algorithms, as (report name, policy kind).
pub const ALGORITHMS: [(&str, PolicyKind); 8] = [
    ("CS_i_p", PolicyKind::CsIP),
    ("CS_i_np", PolicyKind::CsINp),
    ("CS_ni_p", PolicyKind::CsNiP),
    ("CS_ni_np", PolicyKind::CsNiNp),
    ("BF-easy", PolicyKind::Easy),
    ("FB_UNMOD", PolicyKind::FbUnmod),
    ("FB_MOD", PolicyKind::FbMod),
    ("EDF", PolicyKind::Edf),
];

/// The Convergent Scheduling variants (the first four algorithms).
pub const CS: [&str; 4] = ["CS_i_p", "CS_i_np", "CS_ni_p", "CS_ni_np"];

/// The baselines.
pub const BASELINES: [&str; 4] = ["BF-easy", "FB_UNMOD", "FB_MOD", "EDF"];

/// The run variant of our readings (the CS variants only; as printed is the empty variant).
pub const OURS: &str = "ours";

/// A reading of the CS variants: the run variant that holds it and its name in the report.
#[derive(Clone, Copy, Debug)]
pub struct Reading {
    /// The run variant of the CS algorithms (the baselines always have the empty one).
    pub variant: &'static str,
    /// Column name.
    pub name: &'static str,
}

/// As printed, then ours.
pub const READINGS: [Reading; 2] = [
    Reading {
        variant: "",
        name: "as printed",
    },
    Reading {
        variant: OURS,
        name: "ours",
    },
];

impl Reading {
    /// The mean of `metric` for `alg` at `ta` in this reading (a baseline: its only run).
    pub fn get(&self, s: &Summary, alg: &str, ta: f64, metric: &str) -> f64 {
        let variant = if CS.contains(&alg) { self.variant } else { "" };
        s.get(alg, variant, ta, metric).unwrap_or(f64::NAN)
    }
}
