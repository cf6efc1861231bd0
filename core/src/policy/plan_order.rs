//! The orders of a planning policy (Streit, thesis §3.2: FCFS, SJF and LJF with "front"
//! selection), the three a self-tuning dynP scheduler chooses from (thesis §4).

use serde::{Deserialize, Serialize};

/// The order of a planning policy (thesis §3.2: FCFS, SJF, LJF with "front" selection).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "lowercase")]
pub enum PlanOrder {
    /// Arrival order.
    #[default]
    Fcfs,
    /// Shortest estimate first, ties by arrival.
    Sjf,
    /// Longest estimate first, ties by arrival.
    Ljf,
}

impl PlanOrder {
    /// The three orders dynP chooses from, in the deciders' tie order.
    pub const ALL: [PlanOrder; 3] = [PlanOrder::Fcfs, PlanOrder::Sjf, PlanOrder::Ljf];

    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            PlanOrder::Fcfs => "fcfs",
            PlanOrder::Sjf => "sjf",
            PlanOrder::Ljf => "ljf",
        }
    }

    /// Its position in [`PlanOrder::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

impl std::str::FromStr for PlanOrder {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        PlanOrder::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| format!("unknown order `{s}` (expected one of: fcfs, sjf, ljf)"))
    }
}
