//! Grid configurations and scheduler settings of the multi-site study (spec
//! `self-tuning-and-multisite.md` §6.2–§6.5, Tab. 7.1 and Tab. 7.5; §8 #14, #15, #18, #19).

use gridsched_core::dispatch::MultiSiteConfig;
use gridsched_workload::scale;
use serde::{Deserialize, Serialize};

/// The three scenarios of §6.2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    /// Each site schedules its own jobs (FCFS + EASY), no exchange.
    Local,
    /// One grid scheduler, BestFit machine selection, a job on one machine.
    JobSharing,
    /// As job sharing, but a job may span machines, its run time extended by (1 + p).
    MultiSite,
}

impl Scenario {
    /// Name used on command lines and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Scenario::Local => "local",
            Scenario::JobSharing => "job-sharing",
            Scenario::MultiSite => "multi-site",
        }
    }
}

pub use gridsched_core::dispatch::Fragments;

/// How wide jobs are split before a run (§6.6 workload modifications).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Modification {
    /// The scenario's own: 1 (site size) for local, 2 (largest machine) for job sharing, 4
    /// (unchanged, up to the grid's size) for multi-site.
    #[default]
    ScenarioDefault,
    /// Modification 2: split to the largest machine (the paper's job sharing vs multi-site
    /// comparison uses it for both).
    Largest,
    /// Modification 3: parts of at most 64 nodes (the `_max64` workloads).
    Max64,
}

/// The grid scheduler's settings.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GridConfig {
    /// Scenario.
    pub scenario: Scenario,
    /// WAN overhead p in percent: a multi-site job's estimate and run time are multiplied by
    /// (100 + p) / 100, rounded up (§8 #14).
    pub overhead_pct: u32,
    /// Only jobs wider than this may be split (0: any); jobs wider than the largest machine are
    /// exempt (§8 #19).
    pub lower_bound: u32,
    /// Fragment limit.
    pub fragments: Fragments,
    /// The adaptive wait-or-split rule (§6.4 step 5).
    pub adaptive: bool,
    /// How wide jobs are split first.
    pub modification: Modification,
    /// Our variant: at p = 0 the grid behaves as one machine of the summed size
    /// ([`MultiSiteConfig::pooled_at_zero`]).
    pub pooled_at_zero: bool,
}

impl Default for GridConfig {
    fn default() -> Self {
        GridConfig {
            scenario: Scenario::MultiSite,
            overhead_pct: 0,
            lower_bound: 0,
            fragments: Fragments::Unlimited,
            adaptive: false,
            modification: Modification::ScenarioDefault,
            pooled_at_zero: false,
        }
    }
}

impl GridConfig {
    /// The grid scheduler's multi-site settings.
    pub fn multi_site(&self) -> MultiSiteConfig {
        MultiSiteConfig {
            overhead_pct: self.overhead_pct,
            pairs: Vec::new(),
            lower_bound: self.lower_bound,
            fragments: self.fragments,
            adaptive: self.adaptive,
            pooled_at_zero: self.pooled_at_zero,
        }
    }

    /// The workload modification (§6.6) this configuration applies on machines of `sizes` before
    /// a run: modification 1 (the home site's machine) under local processing; under job sharing
    /// modification 2 (the largest machine), or parts of at most 64 nodes; under multi-site
    /// modification 4 (unchanged, but never wider than the whole grid), 2 or 3.
    pub fn split_modification(&self, sizes: &[u32]) -> scale::Modification {
        let total: u32 = sizes.iter().sum();
        let largest = sizes.iter().copied().max().unwrap_or(0);
        match (self.scenario, self.modification) {
            (Scenario::Local, _) => scale::Modification::LocalMachine,
            (Scenario::JobSharing, Modification::Max64) => {
                scale::Modification::MaxWidth(64.min(largest))
            }
            (Scenario::JobSharing, _) | (Scenario::MultiSite, Modification::Largest) => {
                scale::Modification::LargestMachine
            }
            (Scenario::MultiSite, Modification::ScenarioDefault) => {
                scale::Modification::MaxWidth(total)
            }
            (Scenario::MultiSite, Modification::Max64) => scale::Modification::MaxWidth(64),
        }
    }
}

/// A machine configuration of Tab. 7.1 (all total 512 nodes).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MachineConfig {
    /// Its name.
    pub name: &'static str,
    /// Node counts, one per site, in the table's order.
    pub sizes: Vec<u32>,
}

impl MachineConfig {
    /// The seven configurations of Tab. 7.1.
    pub fn presets() -> Vec<MachineConfig> {
        let rep = |n: usize, s: u32| std::iter::repeat_n(s, n);
        vec![
            MachineConfig {
                name: "m64",
                sizes: rep(4, 64).chain(rep(6, 32)).chain(rep(8, 8)).collect(),
            },
            MachineConfig {
                name: "m64-8",
                sizes: rep(8, 64).collect(),
            },
            MachineConfig {
                name: "m128",
                sizes: rep(4, 128).collect(),
            },
            MachineConfig {
                name: "m256",
                sizes: rep(2, 256).collect(),
            },
            MachineConfig {
                name: "m256-5",
                sizes: rep(1, 256).chain(rep(4, 64)).collect(),
            },
            MachineConfig {
                name: "m384",
                sizes: rep(1, 384).chain(rep(1, 64)).chain(rep(4, 16)).collect(),
            },
            MachineConfig {
                name: "m512",
                sizes: vec![512],
            },
        ]
    }

    /// A preset by name.
    pub fn preset(name: &str) -> Option<MachineConfig> {
        MachineConfig::presets()
            .into_iter()
            .find(|c| c.name == name)
    }

    /// The largest machine.
    pub fn largest(&self) -> u32 {
        self.sizes.iter().copied().max().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_7_1_configurations_total_512() {
        let p = MachineConfig::presets();
        assert_eq!(p.len(), 7);
        for c in &p {
            assert_eq!(c.sizes.iter().sum::<u32>(), 512, "{}", c.name);
        }
        let counts: Vec<usize> = p.iter().map(|c| c.sizes.len()).collect();
        assert_eq!(counts, vec![18, 8, 4, 2, 5, 6, 1]);
        assert_eq!(MachineConfig::preset("m384").unwrap().largest(), 384);
    }

    #[test]
    fn each_scenario_splits_with_its_modification() {
        use scale::Modification as M;
        let m384 = MachineConfig::preset("m384").unwrap().sizes;
        let g = |scenario, modification| {
            GridConfig {
                scenario,
                modification,
                ..Default::default()
            }
            .split_modification(&m384)
        };
        for m in [
            Modification::ScenarioDefault,
            Modification::Largest,
            Modification::Max64,
        ] {
            assert_eq!(g(Scenario::Local, m), M::LocalMachine);
        }
        assert_eq!(
            g(Scenario::JobSharing, Modification::ScenarioDefault),
            M::LargestMachine
        );
        assert_eq!(
            g(Scenario::JobSharing, Modification::Max64),
            M::MaxWidth(64)
        );
        assert_eq!(
            g(Scenario::MultiSite, Modification::ScenarioDefault),
            M::MaxWidth(512)
        );
        assert_eq!(
            g(Scenario::MultiSite, Modification::Largest),
            M::LargestMachine
        );
        let js = GridConfig {
            scenario: Scenario::JobSharing,
            modification: Modification::Max64,
            ..Default::default()
        };
        assert_eq!(js.split_modification(&[32, 16]), M::MaxWidth(32));
    }

    #[test]
    fn table_7_5_fragment_limits() {
        assert_eq!(Fragments::Limited.max_for(64), 1);
        assert_eq!(Fragments::Limited.max_for(100), 2);
        assert_eq!(Fragments::Limited.max_for(336), 8);
        assert_eq!(Fragments::Unlimited.max_for(3), 4);
        assert_eq!(Fragments::Unlimited.max_for(12), 16);
        assert_eq!(Fragments::Unlimited.max_for(500), 18);
    }
}
