//! Selecting and configuring a local policy by name, the same way in gridsim and in the services.
//! Every knob of `reference-semantics.md` ("Knobs other simulators choose differently") that
//! belongs to the policy lives here; the defaults are the reference mode.

use super::registry::OptionTable;
use super::{
    DynpOptions, GangOptions, PlanningOptions, Policy, PolicyKind, UrgentLayer, UrgentOptions,
};
use crate::cluster::{ClusterError, ClusterState};
use crate::convergent::{CsParams, MatchingKind};
use crate::heuristics::HeuristicParams;
use crate::model::{ClusterId, Machine, MachineId, Platform};
use serde::{Deserialize, Serialize};

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
    /// Matching algorithm of Convergent Scheduling, overriding the variant's (mis, mfs, imfs,
    /// imfs-warm).
    #[serde(default)]
    pub matching: Option<MatchingKind>,
    /// Options of the planning policies and dynP.
    #[serde(default)]
    pub planning: PlanningOptions,
    /// Options of dynP's self-tuning.
    #[serde(default)]
    pub dynp: DynpOptions,
    /// Options of the gang schedulers (`gs`, `bgs`, `mgs`, `mbgs`, `bgs-adaptive`).
    #[serde(default)]
    pub gang: GangOptions,
    /// On a partition of alike nodes ([`Platform::alike_nodes`]), run a policy that has a classic
    /// implementation (the FCFS / backfilling / planning family) over the nodes as one pool of
    /// processors, a job spanning nodes where it needs them (multi-node jobs); `false` keeps
    /// one machine per job (the heterogeneous cluster's scheduler, as on any other cluster).
    #[serde(default = "yes")]
    pub partition: bool,
    /// How urgent jobs are served on top of the policy (Kurowski et al. §4); `None`: urgent jobs
    /// are queued like any other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub urgent: Option<UrgentOptions>,
}

fn yes() -> bool {
    true
}

/// The tables a kind reads, for messages.
fn takes(kind: PolicyKind) -> String {
    let t = kind.entry().options;
    if t.is_empty() {
        "none".into()
    } else {
        t.iter().map(|t| t.key()).collect::<Vec<_>>().join(", ")
    }
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
    /// An urgent layer over a policy that does not run one space-shared machine.
    #[error(
        "urgent: the {0} policy on cluster `{1}` does not run one space-shared machine, which the urgent layer needs"
    )]
    UrgentNeedsOneMachine(PolicyKind, String),
    /// Options set in a table the chosen policy does not read.
    #[error(
        "{key}: the {policy} policy takes no `{key}` options (only {read_by} do); {policy} takes {takes}",
        key = .table.key(),
        read_by = PolicyKind::names(&.table.kinds()),
        takes = takes(*.policy),
    )]
    ForeignOptions {
        /// The table set.
        table: OptionTable,
        /// The policy chosen.
        policy: PolicyKind,
    },
    /// A `KEY=VALUE` assignment that does not fit the options.
    #[error("{key}: {why}")]
    BadAssignment {
        /// The key as given.
        key: String,
        /// What is wrong.
        why: String,
    },
    /// An option has a value the policy cannot run with.
    #[error("{key}: {why}")]
    BadOption {
        /// The configuration key, e.g. `gang.mpl`.
        key: &'static str,
        /// What is wrong.
        why: String,
    },
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
            planning: PlanningOptions::default(),
            dynp: DynpOptions::default(),
            gang: GangOptions::default(),
            partition: true,
            urgent: None,
        }
    }

    /// Refuses options the chosen policy would ignore: a table its registry row does not list
    /// ([`PolicyEntry::options`](super::PolicyEntry)) set away from its defaults.
    pub fn check(&self) -> Result<(), PolicyConfigError> {
        let takes = self.policy.entry().options;
        if let Some(&table) = OptionTable::ALL
            .iter()
            .find(|t| !takes.contains(t) && self.is_set(**t))
        {
            return Err(PolicyConfigError::ForeignOptions {
                table,
                policy: self.policy,
            });
        }
        if self.policy.is_gang() {
            self.gang.check()?;
        }
        Ok(())
    }

    /// Whether a table differs from its defaults.
    fn is_set(&self, table: OptionTable) -> bool {
        match table {
            OptionTable::Backfill => self.backfill != BackfillOptions::default(),
            OptionTable::Heuristics => self.heuristics != HeuristicParams::default(),
            OptionTable::Cs => self.cs != CsParams::default(),
            OptionTable::Matching => self.matching.is_some(),
            OptionTable::Planning => self.planning != PlanningOptions::default(),
            OptionTable::Dynp => self.dynp != DynpOptions::default(),
            OptionTable::Gang => self.gang != GangOptions::default(),
        }
    }

    /// Sets one option from a `KEY=VALUE` assignment, the key a dotted path of the configuration
    /// file's keys (`gang.mpl=3`, `backfill.shadow=stale`, `planning.backfilling=false`,
    /// `policy=sjf-bf`): the value is read as JSON where it parses as JSON, as a string
    /// otherwise. Errors name the key; the result is not checked against the policy
    /// ([`PolicyConfig::check`] does that).
    pub fn set(&mut self, assignment: &str) -> Result<(), PolicyConfigError> {
        let bad = |key: &str, why: String| PolicyConfigError::BadAssignment {
            key: key.to_string(),
            why,
        };
        let (key, text) = assignment
            .split_once('=')
            .ok_or_else(|| bad(assignment, "expected KEY=VALUE".into()))?;
        let key = key.trim();
        let value: serde_json::Value = serde_json::from_str(text.trim())
            .unwrap_or_else(|_| serde_json::Value::String(text.trim().to_string()));
        let mut doc = serde_json::to_value(*self).map_err(|e| bad(key, e.to_string()))?;
        // Every top-level key, the optional tables' too (absent from `doc` while unset).
        let every = PolicyConfig {
            urgent: Some(UrgentOptions::default()),
            ..*self
        };
        let known = serde_json::to_value(every).map_err(|e| bad(key, e.to_string()))?;
        let mut at = &mut doc;
        let parts: Vec<&str> = key.split('.').collect();
        if known.get(parts[0]).is_none() {
            let keys = PolicyConfig::keys(self.policy).join(", ");
            return Err(bad(key, format!("unknown key (expected one of: {keys})")));
        }
        for (i, part) in parts.iter().enumerate() {
            let serde_json::Value::Object(map) = at else {
                return Err(bad(
                    key,
                    format!("`{}` takes a value, not keys", parts[..i].join(".")),
                ));
            };
            at = map
                .entry(part.to_string())
                .or_insert_with(|| serde_json::Value::Object(Default::default()));
        }
        *at = value;
        *self = serde_json::from_value(doc).map_err(|e| bad(key, e.to_string()))?;
        Ok(())
    }

    /// The keys [`PolicyConfig::set`] takes for a kind, as dotted paths of the tables it reads
    /// (and `partition`); derived from the options' types.
    pub fn keys(kind: PolicyKind) -> Vec<String> {
        fn leaves(prefix: &str, v: &serde_json::Value, out: &mut Vec<String>) {
            match v {
                serde_json::Value::Object(m) if !m.is_empty() => {
                    for (k, v) in m {
                        leaves(&format!("{prefix}.{k}"), v, out);
                    }
                }
                _ => out.push(prefix.to_string()),
            }
        }
        let doc = serde_json::to_value(PolicyConfig::new(kind)).unwrap_or_default();
        let mut out = Vec::new();
        for t in kind.entry().options {
            if let Some(v) = doc.get(t.key()) {
                leaves(t.key(), v, &mut out);
            }
        }
        out.push("partition".into());
        out
    }

    /// Builds a cluster policy on `state` (the kinds of [`PolicyKind::cluster`]).
    pub fn build_cluster(&self, state: ClusterState) -> Result<Box<dyn Policy>, PolicyConfigError> {
        if self.policy.is_gang() {
            self.gang.check()?;
            if state.slots().len() != 1 {
                return Err(PolicyConfigError::NotSingleMachine {
                    policy: self.policy,
                    cluster: "(gang scheduling needs one machine)".into(),
                    machines: state.slots().len(),
                });
            }
        }
        match self.policy.entry().cluster {
            Some(build) => Ok(build(self, state)),
            None => Err(PolicyConfigError::NotSingleMachine {
                policy: self.policy,
                cluster: "(heterogeneous cluster)".into(),
                machines: state.slots().len(),
            }),
        }
    }

    /// Builds the policy for a single machine of `procs` processors: its classic implementation,
    /// or its cluster one on a cluster of that one machine.
    pub fn build_single(&self, machine: MachineId, procs: u32) -> Box<dyn Policy> {
        if let Some(build) = self.policy.entry().single {
            return build(self, machine, procs);
        }
        let m = Machine::new(machine, "machine", procs.max(1), 1);
        let state =
            ClusterState::from_parts(vec![m], &[], true).expect("one machine is a valid cluster");
        self.build_cluster(state)
            .expect("a kind without a single-machine implementation has a cluster one")
    }

    /// Builds the policy for a cluster of the platform. A cluster of one space-shared machine
    /// without licence pools gets the classic (reference) implementation of the kinds that have
    /// one (`fcfs`, `easy`, `conservative`, `sjf-bf`, `ljf-bf`, the planning policies and dynP),
    /// and so does a partition of alike nodes (with [`PolicyConfig::partition`]), seen as one
    /// machine of their summed processors; any other cluster gets the heterogeneous scheduler of
    /// the kinds of [`PolicyKind::cluster`].
    ///
    /// With [`PolicyConfig::urgent`], the policy is wrapped in an [`UrgentLayer`], which needs
    /// a policy of one space-shared machine (or of a partition run as one pool).
    pub fn build(
        &self,
        platform: &Platform,
        cluster: ClusterId,
    ) -> Result<Box<dyn Policy>, PolicyConfigError> {
        let policy = self.build_plain(platform, cluster)?;
        let Some(opts) = self.urgent else {
            return Ok(policy);
        };
        UrgentLayer::new(policy, opts).map_or_else(
            |_| {
                Err(PolicyConfigError::UrgentNeedsOneMachine(
                    self.policy,
                    platform
                        .cluster(cluster)
                        .map_or_else(String::new, |c| c.name.clone()),
                ))
            },
            |l| Ok(Box::new(l) as Box<dyn Policy>),
        )
    }

    fn build_plain(
        &self,
        platform: &Platform,
        cluster: ClusterId,
    ) -> Result<Box<dyn Policy>, PolicyConfigError> {
        self.check()?;
        let c = platform
            .cluster(cluster)
            .ok_or(PolicyConfigError::UnknownCluster(cluster))?;
        let classic = c.machines.len() == 1 && c.pools.is_empty() && c.space_sharing;
        let entry = self.policy.entry();
        if self.partition
            && entry.single.is_some()
            && let Some(nodes) = platform.alike_nodes(cluster)
        {
            let procs = nodes.iter().map(|n| n.1).sum();
            return Ok(self.build_single(nodes[0].0, procs));
        }
        if entry.single.is_none() || (!classic && entry.cluster.is_some()) {
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
        for k in PolicyKind::single_machine() {
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
        for k in PolicyKind::cluster() {
            if k.is_gang() {
                let e = PolicyConfig::new(k).build(&p, ClusterId(0)).unwrap_err();
                assert!(e.to_string().contains("has 2"), "{e}");
                continue;
            }
            let pol = PolicyConfig::new(k).build(&p, ClusterId(0)).unwrap();
            // One name per policy: the registry's, everywhere.
            assert!(pol.describe().starts_with(k.as_str()), "{}", pol.describe());
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
    fn options_of_a_table_the_policy_does_not_read_are_refused_naming_both() {
        let mut c = PolicyConfig::new(PolicyKind::Easy);
        c.gang.mpl = 3;
        assert_eq!(
            c.check().unwrap_err().to_string(),
            "gang: the easy policy takes no `gang` options (only gs, bgs, mgs, mbgs, bgs-adaptive \
             do); easy takes backfill"
        );
        let mut c = PolicyConfig::new(PolicyKind::Fcfs);
        c.planning.backfilling = false;
        assert_eq!(
            c.check().unwrap_err().to_string(),
            "planning: the fcfs policy takes no `planning` options (only planning-fcfs, \
             planning-sjf, planning-ljf, dynp do); fcfs takes none"
        );
        // Every kind builds with the defaults of every table, and with its own tables set.
        for k in PolicyKind::every() {
            let mut c = PolicyConfig::new(k);
            c.check().unwrap();
            for key in PolicyConfig::keys(k) {
                assert!(
                    key == "partition"
                        || k.entry().options.iter().any(|t| key.starts_with(t.key())),
                    "{k}: {key}"
                );
            }
            if k.takes(OptionTable::Dynp) {
                c.set("dynp.slack_pct=5").unwrap();
                c.check().unwrap();
            }
        }
    }

    #[test]
    fn assignments_follow_the_configuration_keys() {
        let mut c = PolicyConfig::new(PolicyKind::Gs);
        c.set("gang.mpl=3").unwrap();
        c.set("gang.invocation=discrete").unwrap();
        assert_eq!(c.gang.mpl, 3);
        assert_eq!(c.gang.invocation, crate::policy::gang::Invocation::Discrete);
        c.set("policy=bgs").unwrap();
        assert_eq!(c.policy, PolicyKind::Bgs);
        let e = c.set("gang.mpll=3").unwrap_err().to_string();
        assert!(e.starts_with("gang.mpll: unknown field `mpll`"), "{e}");
        let e = c.set("gnag.mpl=3").unwrap_err().to_string();
        assert!(
            e.starts_with("gnag.mpl: unknown key (expected one of: gang.")
                && e.ends_with("partition)"),
            "{e}"
        );
        let e = c.set("gang.mpl=many").unwrap_err().to_string();
        assert!(
            e.starts_with("gang.mpl: invalid type: string \"many\""),
            "{e}"
        );
        let e = c.set("gang.mpl").unwrap_err().to_string();
        assert_eq!(e, "gang.mpl: expected KEY=VALUE");
        let e = c.set("gang.mpl.x=1").unwrap_err().to_string();
        assert_eq!(e, "gang.mpl.x: `gang.mpl` takes a value, not keys");
        let mut e = PolicyConfig::new(PolicyKind::SjfBf);
        e.set("backfill.shadow=stale").unwrap();
        e.set("backfill.extra_procs=false").unwrap();
        assert_eq!(
            e.backfill.non_default(),
            vec!["shadow=stale", "extra-procs=off"]
        );
        assert_eq!(
            PolicyConfig::keys(PolicyKind::SjfBf),
            vec![
                "backfill.extra_procs",
                "backfill.shadow",
                "backfill.shadow_cmp",
                "backfill.submit_pass",
                "partition"
            ]
        );
    }

    #[test]
    fn names_and_errors_come_from_the_policy_table() {
        for k in PolicyKind::every() {
            assert_eq!(k.as_str().parse::<PolicyKind>().unwrap(), k);
        }
        assert_eq!(PolicyKind::every().len(), 27, "each kind once");
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
                && e.ends_with("ljf-bf, planning-fcfs, planning-sjf, planning-ljf, dynp"),
            "{e}"
        );
    }
}
