//! Selecting and configuring a local policy by name, the same way in gridsim and in the services.
//! Every knob of `reference-semantics.md` ("Knobs other simulators choose differently") that
//! belongs to the policy lives here; the defaults are the reference mode.

use super::{Conservative, Easy, FbVariant, Fcfs, FlexibleBackfilling, Policy, QueueOrder};
use crate::cluster::{ClusterError, ClusterState};
use crate::convergent::{ConvergentScheduling, CsParams, MatchingKind};
use crate::heuristics::HeuristicParams;
use crate::model::{ClusterId, Machine, MachineId, Platform};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The classic policies.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "kebab-case")]
pub enum PolicyKind {
    /// First come first served, no backfilling.
    Fcfs,
    /// EASY (aggressive) backfilling in arrival order.
    #[default]
    Easy,
    /// Conservative backfilling: every waiting job holds a reservation.
    Conservative,
    /// EASY backfilling with the queue ordered shortest estimate first.
    SjfBf,
    /// EASY backfilling with the queue ordered longest estimate first.
    LjfBf,
    /// Flexible Backfilling, the reserved job keeps its reservation (D6.2 BF_UNMOD).
    FbUnmod,
    /// Flexible Backfilling, the reservation follows the highest priority (D6.2 BF_MOD).
    FbMod,
    /// Earliest deadline first on a heterogeneous cluster (D9.2 baseline).
    Edf,
    /// Convergent Scheduling, incremental matching, preemptive (D7.5).
    CsIP,
    /// Convergent Scheduling, incremental matching, non-preemptive.
    CsINp,
    /// Convergent Scheduling, non-incremental matching, preemptive.
    CsNiP,
    /// Convergent Scheduling, non-incremental matching, non-preemptive.
    CsNiNp,
    /// Flexible Backfilling ordering its queue by the meta-scheduler's priority (D9.3 "MS
    /// Heuristics").
    FbMeta,
}

impl PolicyKind {
    /// The classic single-machine kinds, in documentation order.
    pub const ALL: [PolicyKind; 5] = [
        PolicyKind::Fcfs,
        PolicyKind::Easy,
        PolicyKind::Conservative,
        PolicyKind::SjfBf,
        PolicyKind::LjfBf,
    ];

    /// The kinds that schedule a heterogeneous cluster with licences (`fcfs` and `easy` there are
    /// the seed's FCFS and BF_FCFS).
    pub const CLUSTER: [PolicyKind; 10] = [
        PolicyKind::Fcfs,
        PolicyKind::Easy,
        PolicyKind::FbUnmod,
        PolicyKind::FbMod,
        PolicyKind::Edf,
        PolicyKind::CsIP,
        PolicyKind::CsINp,
        PolicyKind::CsNiP,
        PolicyKind::CsNiNp,
        PolicyKind::FbMeta,
    ];

    /// Every kind, single-machine ones first, each once.
    pub fn every() -> Vec<PolicyKind> {
        let mut all = PolicyKind::ALL.to_vec();
        all.extend(
            PolicyKind::CLUSTER
                .iter()
                .filter(|k| !PolicyKind::ALL.contains(k)),
        );
        all
    }

    /// The names of `kinds`, comma-separated (for help texts and errors).
    pub fn names(kinds: &[PolicyKind]) -> String {
        kinds
            .iter()
            .map(|k| k.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Parses the name of a policy that schedules one space-shared machine (`gridsim run`).
    pub fn parse_single(s: &str) -> Result<PolicyKind, String> {
        PolicyKind::parse_among(
            s,
            &PolicyKind::ALL,
            "heterogeneous clusters (gridsim cluster)",
        )
    }

    /// Parses the name of a policy that schedules heterogeneous clusters (`gridsim cluster`).
    pub fn parse_cluster(s: &str) -> Result<PolicyKind, String> {
        PolicyKind::parse_among(
            s,
            &PolicyKind::CLUSTER,
            "one space-shared machine (gridsim run)",
        )
    }

    fn parse_among(s: &str, kinds: &[PolicyKind], other: &str) -> Result<PolicyKind, String> {
        let k: PolicyKind = s.parse().map_err(|e: PolicyConfigError| e.to_string())?;
        if kinds.contains(&k) {
            Ok(k)
        } else {
            Err(format!(
                "`{s}` schedules {other}; here one of: {}",
                PolicyKind::names(kinds)
            ))
        }
    }

    /// The name used on command lines and in configuration files.
    pub fn as_str(self) -> &'static str {
        match self {
            PolicyKind::Fcfs => "fcfs",
            PolicyKind::Easy => "easy",
            PolicyKind::Conservative => "conservative",
            PolicyKind::SjfBf => "sjf-bf",
            PolicyKind::LjfBf => "ljf-bf",
            PolicyKind::FbUnmod => "fb-unmod",
            PolicyKind::FbMod => "fb-mod",
            PolicyKind::Edf => "edf",
            PolicyKind::CsIP => "cs-i-p",
            PolicyKind::CsINp => "cs-i-np",
            PolicyKind::CsNiP => "cs-ni-p",
            PolicyKind::CsNiNp => "cs-ni-np",
            PolicyKind::FbMeta => "fb-meta",
        }
    }
}

impl fmt::Display for PolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PolicyKind {
    type Err = PolicyConfigError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PolicyKind::every()
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| PolicyConfigError::UnknownPolicy(s.to_string()))
    }
}

/// How the EASY head's reservation (shadow time) is maintained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ShadowMode {
    /// Recomputed at every pass from the predicted ends of running jobs (reference).
    #[default]
    Fresh,
    /// Computed once when the head first blocks and kept while it stays the head (and the time is
    /// still feasible); the extra processors are still counted from the current state.
    Stale,
}

/// When a backfill candidate counts as "ending before the shadow time".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ShadowCmp {
    /// `now + estimate <= shadow` (reference: the candidate's slot ends where the head's begins).
    #[default]
    AtOrBefore,
    /// `now + estimate < shadow`.
    Before,
}

/// Whether a submission triggers a scheduling pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum SubmitPass {
    /// Every submission runs a full pass (reference).
    #[default]
    Always,
    /// A submission runs a pass only when the new job fits in the processors free now (as some
    /// versions of the reference simulator do); terminations always run one.
    IfFits,
}

/// Options of the backfilling policies; the defaults are the reference mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BackfillOptions {
    /// Fresh or stale shadow time.
    pub shadow: ShadowMode,
    /// `<=` or `<` at the shadow time.
    pub shadow_cmp: ShadowCmp,
    /// Whether a candidate that does not end before the shadow time may still start when it only
    /// uses processors the head will not need (the "extra processors"). Off gives the seed's
    /// "conservative" variant of §2.2 (backfill only jobs ending before the shadow time).
    pub extra_procs: bool,
    /// Whether every submission runs a pass.
    pub submit_pass: SubmitPass,
}

impl Default for BackfillOptions {
    fn default() -> Self {
        BackfillOptions {
            shadow: ShadowMode::Fresh,
            shadow_cmp: ShadowCmp::AtOrBefore,
            extra_procs: true,
            submit_pass: SubmitPass::Always,
        }
    }
}

impl BackfillOptions {
    /// The options that differ from the reference, as `key=value` words.
    pub fn non_default(&self) -> Vec<String> {
        let d = BackfillOptions::default();
        let mut v = Vec::new();
        if self.shadow != d.shadow {
            v.push("shadow=stale".to_string());
        }
        if self.shadow_cmp != d.shadow_cmp {
            v.push("shadow-cmp=before".to_string());
        }
        if self.extra_procs != d.extra_procs {
            v.push("extra-procs=off".to_string());
        }
        if self.submit_pass != d.submit_pass {
            v.push("submit-pass=if-fits".to_string());
        }
        v
    }
}

/// A policy and its options, as written in a configuration file or on a command line.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct PolicyConfig {
    /// Which policy.
    pub policy: PolicyKind,
    /// Backfilling options of the classic single-machine policies (ignored by FCFS and
    /// conservative).
    #[serde(default)]
    pub backfill: BackfillOptions,
    /// Constants of the Flexible Backfilling heuristics (D6.4; default: the §4.1 set).
    #[serde(default)]
    pub heuristics: HeuristicParams,
    /// Constants of Convergent Scheduling (D7.5 defaults).
    #[serde(default)]
    pub cs: CsParams,
    /// Matching algorithm of Convergent Scheduling, overriding the variant's (mis, mfs, imfs).
    #[serde(default)]
    pub matching: Option<MatchingKind>,
}

/// A policy configuration that cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PolicyConfigError {
    /// The name is not a known policy.
    #[error(
        "unknown policy `{0}` (expected one of: {names})",
        names = PolicyKind::names(&PolicyKind::every())
    )]
    UnknownPolicy(String),
    /// The cluster does not exist.
    #[error("unknown cluster {0}")]
    UnknownCluster(ClusterId),
    /// The classic policies schedule one space-shared machine.
    #[error(
        "policy `{policy}` schedules one space-shared machine, but cluster `{cluster}` has {machines}"
    )]
    NotSingleMachine {
        /// The policy.
        policy: PolicyKind,
        /// The cluster.
        cluster: String,
        /// Its machine count.
        machines: usize,
    },
    /// The cluster description is inconsistent.
    #[error("cluster: {0}")]
    Cluster(#[from] ClusterError),
}

impl PolicyConfig {
    /// A configuration with the reference options.
    pub fn new(policy: PolicyKind) -> PolicyConfig {
        PolicyConfig {
            policy,
            backfill: BackfillOptions::default(),
            heuristics: HeuristicParams::default(),
            cs: CsParams::default(),
            matching: None,
        }
    }

    /// Whether the kind needs the heterogeneous cluster scheduler even on one machine.
    fn cluster_only(&self) -> bool {
        !matches!(
            self.policy,
            PolicyKind::Fcfs
                | PolicyKind::Easy
                | PolicyKind::Conservative
                | PolicyKind::SjfBf
                | PolicyKind::LjfBf
        )
    }

    /// Builds a cluster policy on `state` (the kinds of [`PolicyKind::CLUSTER`]).
    pub fn build_cluster(&self, state: ClusterState) -> Result<Box<dyn Policy>, PolicyConfigError> {
        Ok(match self.policy {
            PolicyKind::Fcfs => Box::new(FlexibleBackfilling::fcfs(state)),
            PolicyKind::Easy => Box::new(FlexibleBackfilling::bf_fcfs(state)),
            PolicyKind::FbUnmod => Box::new(FlexibleBackfilling::fb(
                state,
                FbVariant::Unmod,
                self.heuristics,
            )),
            PolicyKind::FbMod => Box::new(FlexibleBackfilling::fb(
                state,
                FbVariant::Mod,
                self.heuristics,
            )),
            PolicyKind::Edf => Box::new(FlexibleBackfilling::edf(state)),
            PolicyKind::FbMeta => Box::new(FlexibleBackfilling::fb_meta(state)),
            PolicyKind::CsIP | PolicyKind::CsINp | PolicyKind::CsNiP | PolicyKind::CsNiNp => {
                let incremental = matches!(self.policy, PolicyKind::CsIP | PolicyKind::CsINp);
                let preemptive = matches!(self.policy, PolicyKind::CsIP | PolicyKind::CsNiP);
                Box::new(ConvergentScheduling::new(
                    state,
                    incremental,
                    preemptive,
                    self.matching,
                    self.cs,
                ))
            }
            other => {
                return Err(PolicyConfigError::NotSingleMachine {
                    policy: other,
                    cluster: "(heterogeneous cluster)".into(),
                    machines: state.slots().len(),
                });
            }
        })
    }

    /// Builds the policy for a single machine of `procs` processors.
    pub fn build_single(&self, machine: MachineId, procs: u32) -> Box<dyn Policy> {
        if self.cluster_only() {
            let m = Machine::new(machine, "machine", procs.max(1), 1);
            let state = ClusterState::from_parts(vec![m], &[], true)
                .expect("one machine is a valid cluster");
            return self
                .build_cluster(state)
                .expect("cluster kinds build on any cluster");
        }
        match self.policy {
            PolicyKind::Fcfs => Box::new(Fcfs::new(machine, procs)),
            PolicyKind::Easy => {
                Box::new(Easy::new(machine, procs, QueueOrder::Fcfs, self.backfill))
            }
            PolicyKind::SjfBf => {
                Box::new(Easy::new(machine, procs, QueueOrder::Sjf, self.backfill))
            }
            PolicyKind::LjfBf => {
                Box::new(Easy::new(machine, procs, QueueOrder::Ljf, self.backfill))
            }
            PolicyKind::Conservative => Box::new(Conservative::new(machine, procs)),
            _ => unreachable!("cluster kinds are handled above"),
        }
    }

    /// Builds the policy for a cluster of the platform. A cluster of one space-shared machine
    /// without licence pools gets the classic (reference) implementation of `fcfs`, `easy`,
    /// `conservative`, `sjf-bf` and `ljf-bf`; any other cluster gets the heterogeneous scheduler
    /// for the kinds of [`PolicyKind::CLUSTER`].
    pub fn build(
        &self,
        platform: &Platform,
        cluster: ClusterId,
    ) -> Result<Box<dyn Policy>, PolicyConfigError> {
        let c = platform
            .cluster(cluster)
            .ok_or(PolicyConfigError::UnknownCluster(cluster))?;
        let classic = c.machines.len() == 1 && c.pools.is_empty() && c.space_sharing;
        if self.cluster_only() || (!classic && PolicyKind::CLUSTER.contains(&self.policy)) {
            return self.build_cluster(ClusterState::new(platform, cluster)?);
        }
        match c.machines.as_slice() {
            [m] if classic => {
                let procs = platform.machine(*m).map_or(0, |m| m.procs);
                Ok(self.build_single(*m, procs))
            }
            ms => Err(PolicyConfigError::NotSingleMachine {
                policy: self.policy,
                cluster: c.name.clone(),
                machines: ms.len(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in PolicyKind::ALL {
            assert_eq!(k.as_str().parse::<PolicyKind>().unwrap(), k);
        }
        let e = "hrrn".parse::<PolicyKind>().unwrap_err().to_string();
        assert!(e.contains("`hrrn`") && e.contains("conservative"), "{e}");
    }

    #[test]
    fn config_parses_from_json_and_rejects_unknown_keys() {
        let c: PolicyConfig = serde_json::from_str(
            r#"{"policy":"sjf-bf","backfill":{"shadow":"stale","extra_procs":false}}"#,
        )
        .unwrap();
        assert_eq!(c.policy, PolicyKind::SjfBf);
        assert_eq!(c.backfill.shadow, ShadowMode::Stale);
        assert!(!c.backfill.extra_procs);
        assert_eq!(
            c.backfill.non_default(),
            vec!["shadow=stale", "extra-procs=off"]
        );
        let e =
            serde_json::from_str::<PolicyConfig>(r#"{"policy":"easy","backfil":{}}"#).unwrap_err();
        assert!(e.to_string().contains("backfil"), "{e}");
    }

    #[test]
    fn build_requires_a_single_machine_cluster() {
        let p = Platform::single_machine(64);
        let pol = PolicyConfig::new(PolicyKind::Easy)
            .build(&p, ClusterId(0))
            .unwrap();
        assert_eq!(pol.waiting_len(), 0);
        assert!(matches!(
            PolicyConfig::new(PolicyKind::Easy).build(&p, ClusterId(3)),
            Err(PolicyConfigError::UnknownCluster(_))
        ));
    }

    #[test]
    fn cluster_kinds_build_on_heterogeneous_clusters() {
        use crate::model::{Cluster, Machine, SiteId};
        let mut p = Platform::single_machine(8);
        let mut m1 = Machine::new(MachineId(1), "m1", 4, 200);
        m1.cluster = ClusterId(0);
        p.machines.push(m1);
        p.clusters = vec![Cluster {
            id: ClusterId(0),
            name: "c".into(),
            site: SiteId(0),
            machines: vec![MachineId(0), MachineId(1)],
            pools: vec![],
            space_sharing: false,
        }];
        for k in PolicyKind::CLUSTER {
            let pol = PolicyConfig::new(k).build(&p, ClusterId(0)).unwrap();
            assert!(pol.describe().starts_with(match k {
                PolicyKind::Easy => "bf-fcfs",
                other => other.as_str(),
            }));
        }
        let e = PolicyConfig::new(PolicyKind::Conservative)
            .build(&p, ClusterId(0))
            .unwrap_err();
        assert!(e.to_string().contains("conservative"), "{e}");
        let c: PolicyConfig =
            serde_json::from_str(r#"{"policy":"fb-mod","heuristics":{"k":2.0,"age_factor":1.1}}"#)
                .unwrap();
        assert_eq!(c.heuristics, HeuristicParams::FB_4_3_2);
        assert_eq!("edf".parse::<PolicyKind>().unwrap(), PolicyKind::Edf);
        assert_eq!("fb-meta".parse::<PolicyKind>().unwrap(), PolicyKind::FbMeta);
    }

    #[test]
    fn names_and_errors_come_from_the_policy_table() {
        for k in PolicyKind::every() {
            assert_eq!(k.as_str().parse::<PolicyKind>().unwrap(), k);
        }
        assert_eq!(PolicyKind::every().len(), 13, "each kind once");
        let e = "nope".parse::<PolicyKind>().unwrap_err().to_string();
        assert!(
            e.ends_with(
                &format!("({})", PolicyKind::names(&PolicyKind::every()))
                    .replace('(', "(expected one of: ")
            ),
            "{e}"
        );
        assert_eq!(PolicyKind::parse_single("sjf-bf"), Ok(PolicyKind::SjfBf));
        let e = PolicyKind::parse_single("fb-mod").unwrap_err();
        assert!(
            e.contains("gridsim cluster")
                && e.ends_with("fcfs, easy, conservative, sjf-bf, ljf-bf"),
            "{e}"
        );
    }
}
