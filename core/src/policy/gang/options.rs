//! The options of the gang schedulers (Zhang et al., §5–§6; defaults of spec A.15 and G-A13):
//! multiprogramming level, time slice, context-switch overhead, migration cost and per-slice task
//! budget, continuous or discrete invocation, and the phase set of the phase-variant figures.

use super::super::PolicyConfigError;
use crate::model::Duration;
use serde::{Deserialize, Serialize};

/// When the matrix is recomputed (§5.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Invocation {
    /// At every arrival and termination, cutting the current slice (G-A7(b)), and at slice ends.
    #[default]
    Continuous,
    /// Only at slice boundaries, multiples of the slice from t = 0 (G-A18).
    Discrete,
}

/// Which phases recompute the matrix (Figs. 11, 12 and 23).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Phases {
    /// CleanMatrix, CompactMatrix, Schedule, FillMatrix (and the migration phases of MGS/MBGS).
    #[default]
    All,
    /// CleanMatrix, Schedule, FillMatrix.
    CleanScheduleFill,
    /// Schedule, FillMatrix.
    ScheduleFill,
    /// GS + FillMatrix-2 only (Fig. 23 variant 2): no CollapseMatrix-2 / Schedule-2.
    Fill2Only,
}

/// Options of `gs`, `bgs`, `mgs`, `mbgs` and `bgs-adaptive`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GangOptions {
    /// Multiprogramming level: rows of the matrix (1 = space sharing), 1 to 64.
    pub mpl: u32,
    /// Time slice T, seconds.
    pub slice: Duration,
    /// Context-switch overhead C in percent of the slice: a job that did not run in the
    /// preceding slice makes no progress for the first C·T seconds of its slice (G-A7(c)).
    pub context_switch_pct: u32,
    /// Migration cost C, seconds (checkpoint C/2 + restart C/2; §6.4, G-A12).
    pub migration_cost: Duration,
    /// Q: the most tasks migrated in one time slice; `None` = unlimited, 0 = no migration.
    pub migration_tasks: Option<u32>,
    /// Continuous or discrete invocation.
    pub invocation: Invocation,
    /// The phases used.
    pub phases: Phases,
    /// ρ_critical of `bgs-adaptive` (ours, after §6.3's adaptive idea): it schedules as BGS while
    /// the utilization over the last [`LOAD_WINDOW_SLICES`] slices is at most this, as BF above
    /// it. In (0, 1]; 1 never switches.
    pub rho_critical: f64,
}

/// The sliding window of `bgs-adaptive`'s load measure, in time slices (1,000 s at T = 200 s).
pub const LOAD_WINDOW_SLICES: i64 = 5;

impl Default for GangOptions {
    fn default() -> Self {
        GangOptions {
            mpl: 5,
            slice: 200,
            context_switch_pct: 0,
            migration_cost: 0,
            migration_tasks: None,
            invocation: Invocation::Continuous,
            phases: Phases::All,
            rho_critical: 1.0,
        }
    }
}

impl GangOptions {
    /// Refuses values the schedulers cannot run with, naming the key.
    pub fn check(&self) -> Result<(), PolicyConfigError> {
        let bad = |key, why: String| Err(PolicyConfigError::BadOption { key, why });
        if !(1..=64).contains(&self.mpl) {
            return bad(
                "gang.mpl",
                format!(
                    "{} rows: the multiprogramming level must be 1 to 64",
                    self.mpl
                ),
            );
        }
        if self.slice < 1 {
            return bad(
                "gang.slice",
                format!(
                    "{} s: the time slice must be at least one second",
                    self.slice
                ),
            );
        }
        if self.context_switch_pct >= 100 {
            return bad(
                "gang.context_switch_pct",
                format!(
                    "{} %: the context switch must be shorter than the slice",
                    self.context_switch_pct
                ),
            );
        }
        if self.migration_cost < 0 {
            return bad(
                "gang.migration_cost",
                format!(
                    "{} s: a migration cannot cost less than nothing",
                    self.migration_cost
                ),
            );
        }
        if !(self.rho_critical > 0.0 && self.rho_critical <= 1.0) {
            return bad(
                "gang.rho_critical",
                format!(
                    "{}: the critical utilization must be in (0, 1]",
                    self.rho_critical
                ),
            );
        }
        Ok(())
    }

    /// The context switch, seconds: C·T rounded down.
    pub fn switch_seconds(&self) -> Duration {
        self.slice * Duration::from(self.context_switch_pct) / 100
    }

    /// The options that differ from the defaults, as `key=value` words.
    pub fn non_default(&self) -> Vec<String> {
        let d = GangOptions::default();
        let mut v = Vec::new();
        if self.mpl != d.mpl {
            v.push(format!("mpl={}", self.mpl));
        }
        if self.slice != d.slice {
            v.push(format!("slice={}", self.slice));
        }
        if self.context_switch_pct != d.context_switch_pct {
            v.push(format!("cs={}%", self.context_switch_pct));
        }
        if self.migration_cost != d.migration_cost {
            v.push(format!("c={}", self.migration_cost));
        }
        if let Some(q) = self.migration_tasks {
            v.push(format!("q={q}"));
        }
        if self.invocation != d.invocation {
            v.push("discrete".into());
        }
        if self.phases != d.phases {
            v.push(format!("phases={:?}", self.phases).to_lowercase());
        }
        if self.rho_critical != d.rho_critical {
            v.push(format!("rho_critical={}", self.rho_critical));
        }
        v
    }
}
