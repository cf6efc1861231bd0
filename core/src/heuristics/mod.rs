//! The local schedulers' shared heuristics — Anti-Aging, Deadline, Licence, Wait Minimization — and
//! their constants (spec `two-level-grid-scheduler.md` D5, D6.1, D6.4, D7.5, D13; ambiguities D12
//! #14–#16, #31).
//!
//! Each heuristic is a small pure function of numbers; [`HeuristicParams`] holds every constant
//! with a named preset per experiment of the seed. Flexible Backfilling sums the four terms into a
//! job's priority ([`crate::policy::FlexibleBackfilling`]).

mod anti_aging;
mod deadline;
mod licence;
mod wait_min;

pub use anti_aging::anti_aging;
pub use deadline::{DeadlineCurve, deadline_fb};
pub use licence::{LicenceD, RhoJobs, criticality, licence_fb};
pub use wait_min::wait_min;

use serde::{Deserialize, Serialize};

/// The constants of the local heuristics. The defaults are the seed's §4.1 Flexible Backfilling
/// set (D6.4 row 1).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HeuristicParams {
    /// Deadline score when the job is comfortably early (`MIN`).
    pub min: f64,
    /// Deadline score at the deadline (`MAX`).
    pub max: f64,
    /// Administrator over-estimation factor `k`: urgency starts at `Deadline − k·Estimated`.
    pub k: f64,
    /// Anti-Aging weight per second of waiting.
    pub age_factor: f64,
    /// Licence weight `W`.
    pub licence_weight: f64,
    /// Wait Minimization `priority_boost_value`.
    pub priority_boost: f64,
    /// Which `d` multiplies the critical licences' criticality.
    pub licence_d: LicenceD,
    /// Which jobs count as licence demand in `rho`.
    pub rho_jobs: RhoJobs,
}

impl Default for HeuristicParams {
    fn default() -> Self {
        HeuristicParams::FB_4_1
    }
}

impl HeuristicParams {
    /// §4.1 single cluster (D6.4 row 1): MAX 20, MIN 0.1, k 1.4, age 0.01, W 1, boost 2.
    pub const FB_4_1: HeuristicParams = HeuristicParams {
        min: 0.1,
        max: 20.0,
        k: 1.4,
        age_factor: 0.01,
        licence_weight: 1.0,
        priority_boost: 2.0,
        licence_d: LicenceD::PerJobCritical,
        rho_jobs: RhoJobs::QueuedAndRunning,
    };
    /// §4.3.1 MS+FB "LS heuristics" (D6.4 row 2): k = 2.
    pub const FB_4_3_1: HeuristicParams = HeuristicParams {
        k: 2.0,
        ..HeuristicParams::FB_4_1
    };
    /// §4.3.2 MS+FB comparison (D6.4 row 3): k = 2, age 1.1.
    pub const FB_4_3_2: HeuristicParams = HeuristicParams {
        k: 2.0,
        age_factor: 1.1,
        ..HeuristicParams::FB_4_1
    };
    /// The Convergent Scheduling constants (D7.5), which FB uses in §4.2 (D12 #31): MAX 10,
    /// MIN 0.1, k 1.3, age 0.02, LI → W 2.5, W → boost 4.0.
    pub const CS: HeuristicParams = HeuristicParams {
        min: 0.1,
        max: 10.0,
        k: 1.3,
        age_factor: 0.02,
        licence_weight: 2.5,
        priority_boost: 4.0,
        licence_d: LicenceD::PerJobCritical,
        rho_jobs: RhoJobs::QueuedAndRunning,
    };

    /// A preset by name: `fb-4.1`, `fb-4.3.1`, `fb-4.3.2`, `cs`.
    pub fn preset(name: &str) -> Option<HeuristicParams> {
        Some(match name {
            "fb-4.1" => HeuristicParams::FB_4_1,
            "fb-4.3.1" => HeuristicParams::FB_4_3_1,
            "fb-4.3.2" => HeuristicParams::FB_4_3_2,
            "cs" => HeuristicParams::CS,
            _ => return None,
        })
    }

    /// The name of the preset these constants equal, if any.
    pub fn preset_name(&self) -> Option<&'static str> {
        ["fb-4.1", "fb-4.3.1", "fb-4.3.2", "cs"]
            .into_iter()
            .find(|n| HeuristicParams::preset(n).as_ref() == Some(self))
    }

    /// The deadline curve of these constants.
    pub fn curve(&self) -> DeadlineCurve {
        DeadlineCurve {
            min: self.min,
            max: self.max,
            k: self.k,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_hold_the_seed_constants() {
        let p = HeuristicParams::preset("fb-4.3.2").unwrap();
        assert_eq!((p.max, p.min, p.k, p.age_factor), (20.0, 0.1, 2.0, 1.1));
        assert_eq!(HeuristicParams::default(), HeuristicParams::FB_4_1);
        assert_eq!(HeuristicParams::CS.priority_boost, 4.0);
        assert!(HeuristicParams::preset("fb-9").is_none());
    }

    #[test]
    fn params_parse_partially_and_reject_unknown_keys() {
        let p: HeuristicParams = serde_json::from_str(r#"{"k": 2.0}"#).unwrap();
        assert_eq!(p.k, 2.0);
        assert_eq!(p.max, 20.0);
        let e = serde_json::from_str::<HeuristicParams>(r#"{"kk": 2.0}"#).unwrap_err();
        assert!(e.to_string().contains("kk"), "{e}");
    }
}
