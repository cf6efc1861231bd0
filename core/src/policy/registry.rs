//! The one table of local policies: each kind's name (command lines, configuration files, result
//! tables), one line of help, and how it is built on one space-shared machine and on a
//! heterogeneous cluster with licences. Names, parsing, the error listing the valid names, help
//! texts and the lists of kinds all derive from [`POLICIES`]; adding a policy is its own module plus
//! a variant and a line here (spec `reference-semantics.md` for the classic policies,
//! `two-level-grid-scheduler.md` D6–D7, D9.2–D9.3 and D10.2 for the cluster ones).

use super::{Conservative, Easy, FbVariant, Fcfs, FlexibleBackfilling, Policy, PolicyConfig};
use super::{Gang, GangKind, PlanOrder, Planning, PolicyConfigError, QueueOrder, ScheduleBased};
use crate::cluster::ClusterState;
use crate::convergent::ConvergentScheduling;
use crate::model::MachineId;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A local policy, by name (the variants' kebab-case names are those of [`POLICIES`]).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "kebab-case")]
pub enum PolicyKind {
    /// See [`POLICIES`].
    Fcfs,
    /// See [`POLICIES`].
    #[default]
    Easy,
    /// See [`POLICIES`].
    Conservative,
    /// See [`POLICIES`].
    FirstFit,
    /// See [`POLICIES`].
    SjfBf,
    /// See [`POLICIES`].
    LjfBf,
    /// See [`POLICIES`].
    FbUnmod,
    /// See [`POLICIES`].
    FbMod,
    /// See [`POLICIES`].
    Edf,
    /// See [`POLICIES`].
    CsIP,
    /// See [`POLICIES`].
    CsINp,
    /// See [`POLICIES`].
    CsNiP,
    /// See [`POLICIES`].
    CsNiNp,
    /// See [`POLICIES`].
    FbMeta,
    /// See [`POLICIES`].
    PlanningFcfs,
    /// See [`POLICIES`].
    PlanningSjf,
    /// See [`POLICIES`].
    PlanningLjf,
    /// See [`POLICIES`].
    Dynp,
    /// See [`POLICIES`].
    EgEdf,
    /// See [`POLICIES`].
    EgEdfTabu,
    /// See [`POLICIES`].
    EgEdfNow,
    /// See [`POLICIES`].
    EgEdfTabuNow,
    /// See [`POLICIES`].
    Gs,
    /// See [`POLICIES`].
    Bgs,
    /// See [`POLICIES`].
    Mgs,
    /// See [`POLICIES`].
    Mbgs,
    /// See [`POLICIES`].
    BgsAdaptive,
}

/// A table of policy options in [`PolicyConfig`], by its configuration key (`[policy.gang]` in a
/// configuration file, `--set gang.mpl=3` on gridsim's command line).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OptionTable {
    /// `backfill`: the classic backfilling policies' knobs ([`super::BackfillOptions`]).
    Backfill,
    /// `heuristics`: the Flexible Backfilling constants ([`crate::heuristics::HeuristicParams`]).
    Heuristics,
    /// `cs`: the Convergent Scheduling constants ([`crate::convergent::CsParams`]).
    Cs,
    /// `matching`: Convergent Scheduling's matching algorithm.
    Matching,
    /// `planning`: the planning policies' options ([`super::PlanningOptions`]).
    Planning,
    /// `dynp`: dynP's self-tuning ([`super::DynpOptions`]).
    Dynp,
    /// `gang`: the gang schedulers' options ([`super::GangOptions`]).
    Gang,
}

impl OptionTable {
    /// Every table, in [`PolicyConfig`]'s order.
    pub const ALL: [OptionTable; 7] = [
        OptionTable::Backfill,
        OptionTable::Heuristics,
        OptionTable::Cs,
        OptionTable::Matching,
        OptionTable::Planning,
        OptionTable::Dynp,
        OptionTable::Gang,
    ];

    /// Its configuration key.
    pub fn key(self) -> &'static str {
        match self {
            OptionTable::Backfill => "backfill",
            OptionTable::Heuristics => "heuristics",
            OptionTable::Cs => "cs",
            OptionTable::Matching => "matching",
            OptionTable::Planning => "planning",
            OptionTable::Dynp => "dynp",
            OptionTable::Gang => "gang",
        }
    }

    /// The kinds that read this table.
    pub fn kinds(self) -> Vec<PolicyKind> {
        POLICIES
            .iter()
            .filter(|e| e.options.contains(&self))
            .map(|e| e.kind)
            .collect()
    }
}

/// Builds the classic implementation on one machine of the given processors.
pub type BuildSingle = fn(&PolicyConfig, MachineId, u32) -> Box<dyn Policy>;
/// Builds the policy on a heterogeneous cluster.
pub type BuildCluster = fn(&PolicyConfig, ClusterState) -> Box<dyn Policy>;

/// One row of the table.
#[derive(Debug)]
pub struct PolicyEntry {
    /// The kind.
    pub kind: PolicyKind,
    /// Its name.
    pub name: &'static str,
    /// One line of help.
    pub help: &'static str,
    /// The option tables of [`PolicyConfig`] it reads (besides `partition` and `urgent`, which
    /// every kind takes); any other table set away from its defaults is refused.
    pub options: &'static [OptionTable],
    /// Its classic implementation on one space-shared machine (`gridsim run`), if it has one.
    pub single: Option<BuildSingle>,
    /// Its implementation on a heterogeneous cluster with licences (`gridsim cluster`, the live
    /// local scheduler), if it has one.
    pub cluster: Option<BuildCluster>,
}

/// Every local policy, in documentation order: the classic single-machine ones first.
pub static POLICIES: [PolicyEntry; 27] = [
    PolicyEntry {
        kind: PolicyKind::Fcfs,
        name: "fcfs",
        help: "first come first served, no backfilling (cluster: the seed's FCFS)",
        options: &[],
        single: Some(|_, m, p| Box::new(Fcfs::new(m, p))),
        cluster: Some(|_, s| Box::new(FlexibleBackfilling::fcfs(s))),
    },
    PolicyEntry {
        kind: PolicyKind::Easy,
        name: "easy",
        help: "EASY (aggressive) backfilling in arrival order (cluster: BF_FCFS)",
        options: &[OptionTable::Backfill],
        single: Some(|c, m, p| Box::new(Easy::new(m, p, QueueOrder::Fcfs, c.backfill))),
        cluster: Some(|_, s| Box::new(FlexibleBackfilling::bf_fcfs(s))),
    },
    PolicyEntry {
        kind: PolicyKind::Conservative,
        name: "conservative",
        help: "conservative backfilling: every waiting job holds a reservation",
        options: &[],
        single: Some(|_, m, p| Box::new(Conservative::new(m, p))),
        cluster: None,
    },
    PolicyEntry {
        kind: PolicyKind::FirstFit,
        name: "first-fit",
        help: "arrival order, every job that fits starts, no reservation (Kurowski et al.'s FCFS)",
        options: &[],
        single: Some(|_, m, p| Box::new(Fcfs::first_fit(m, p))),
        cluster: None,
    },
    PolicyEntry {
        kind: PolicyKind::SjfBf,
        name: "sjf-bf",
        help: "EASY backfilling, queue ordered shortest estimate first",
        options: &[OptionTable::Backfill],
        single: Some(|c, m, p| Box::new(Easy::new(m, p, QueueOrder::Sjf, c.backfill))),
        cluster: None,
    },
    PolicyEntry {
        kind: PolicyKind::LjfBf,
        name: "ljf-bf",
        help: "EASY backfilling, queue ordered longest estimate first",
        options: &[OptionTable::Backfill],
        single: Some(|c, m, p| Box::new(Easy::new(m, p, QueueOrder::Ljf, c.backfill))),
        cluster: None,
    },
    PolicyEntry {
        kind: PolicyKind::FbUnmod,
        name: "fb-unmod",
        help: "Flexible Backfilling, the reserved job keeps its reservation (BF_UNMOD)",
        options: &[OptionTable::Heuristics],
        single: None,
        cluster: Some(|c, s| Box::new(FlexibleBackfilling::fb(s, FbVariant::Unmod, c.heuristics))),
    },
    PolicyEntry {
        kind: PolicyKind::FbMod,
        name: "fb-mod",
        help: "Flexible Backfilling, the reservation follows the highest priority (BF_MOD)",
        options: &[OptionTable::Heuristics],
        single: None,
        cluster: Some(|c, s| Box::new(FlexibleBackfilling::fb(s, FbVariant::Mod, c.heuristics))),
    },
    PolicyEntry {
        kind: PolicyKind::Edf,
        name: "edf",
        help: "earliest deadline first on a heterogeneous cluster",
        options: &[],
        single: None,
        cluster: Some(|_, s| Box::new(FlexibleBackfilling::edf(s))),
    },
    PolicyEntry {
        kind: PolicyKind::CsIP,
        name: "cs-i-p",
        help: "Convergent Scheduling, incremental matching, preemptive",
        options: &[OptionTable::Cs, OptionTable::Matching],
        single: None,
        cluster: Some(|c, s| Box::new(ConvergentScheduling::new(s, true, true, c.matching, c.cs))),
    },
    PolicyEntry {
        kind: PolicyKind::CsINp,
        name: "cs-i-np",
        help: "Convergent Scheduling, incremental matching, non-preemptive",
        options: &[OptionTable::Cs, OptionTable::Matching],
        single: None,
        cluster: Some(|c, s| Box::new(ConvergentScheduling::new(s, true, false, c.matching, c.cs))),
    },
    PolicyEntry {
        kind: PolicyKind::CsNiP,
        name: "cs-ni-p",
        help: "Convergent Scheduling, non-incremental matching, preemptive",
        options: &[OptionTable::Cs, OptionTable::Matching],
        single: None,
        cluster: Some(|c, s| Box::new(ConvergentScheduling::new(s, false, true, c.matching, c.cs))),
    },
    PolicyEntry {
        kind: PolicyKind::CsNiNp,
        name: "cs-ni-np",
        help: "Convergent Scheduling, non-incremental matching, non-preemptive",
        options: &[OptionTable::Cs, OptionTable::Matching],
        single: None,
        cluster: Some(|c, s| {
            Box::new(ConvergentScheduling::new(s, false, false, c.matching, c.cs))
        }),
    },
    PolicyEntry {
        kind: PolicyKind::FbMeta,
        name: "fb-meta",
        help: "Flexible Backfilling ordered by the meta-scheduler's priority",
        options: &[],
        single: None,
        cluster: Some(|_, s| Box::new(FlexibleBackfilling::fb_meta(s))),
    },
    PolicyEntry {
        kind: PolicyKind::PlanningFcfs,
        name: "planning-fcfs",
        help: "planning-based (CCS): a full plan in arrival order, backfilling implicit",
        options: &[OptionTable::Planning],
        single: Some(|c, m, p| Box::new(Planning::new(m, p, PlanOrder::Fcfs, c.planning))),
        cluster: None,
    },
    PolicyEntry {
        kind: PolicyKind::PlanningSjf,
        name: "planning-sjf",
        help: "planning-based, shortest estimate first",
        options: &[OptionTable::Planning],
        single: Some(|c, m, p| Box::new(Planning::new(m, p, PlanOrder::Sjf, c.planning))),
        cluster: None,
    },
    PolicyEntry {
        kind: PolicyKind::PlanningLjf,
        name: "planning-ljf",
        help: "planning-based, longest estimate first",
        options: &[OptionTable::Planning],
        single: Some(|c, m, p| Box::new(Planning::new(m, p, PlanOrder::Ljf, c.planning))),
        cluster: None,
    },
    PolicyEntry {
        kind: PolicyKind::Dynp,
        name: "dynp",
        help: "self-tuning dynP: the best-rated plan of FCFS, SJF and LJF at every event",
        options: &[OptionTable::Planning, OptionTable::Dynp],
        single: Some(|c, m, p| Box::new(Planning::dynp(m, p, c.planning, c.dynp))),
        cluster: None,
    },
    PolicyEntry {
        kind: PolicyKind::EgEdf,
        name: "eg-edf",
        help: "schedule-based: every job planned on a machine, earliest gap or EDF insertion (EG-EDF)",
        options: &[],
        single: None,
        cluster: Some(|_, s| Box::new(ScheduleBased::eg_edf(s))),
    },
    PolicyEntry {
        kind: PolicyKind::EgEdfTabu,
        name: "eg-edf-tabu",
        help: "EG-EDF improved by Tabu search at every event (moves delayed waiting jobs to gaps)",
        options: &[],
        single: None,
        cluster: Some(|_, s| Box::new(ScheduleBased::eg_edf_tabu(s))),
    },
    PolicyEntry {
        kind: PolicyKind::EgEdfNow,
        name: "eg-edf-now",
        help: "EG-EDF, our reading of a gap: CPUs free now count (a job can start at once)",
        options: &[],
        single: None,
        cluster: Some(|_, s| Box::new(ScheduleBased::eg_edf_now(s))),
    },
    PolicyEntry {
        kind: PolicyKind::EgEdfTabuNow,
        name: "eg-edf-tabu-now",
        help: "EG-EDF + Tabu search, our reading of a gap (as eg-edf-now)",
        options: &[],
        single: None,
        cluster: Some(|_, s| Box::new(ScheduleBased::eg_edf_tabu_now(s))),
    },
    PolicyEntry {
        kind: PolicyKind::Gs,
        name: "gs",
        help: "gang scheduling on one machine: Ousterhout matrix of MPL time slices (Zhang et al.)",
        options: &[OptionTable::Gang],
        single: None,
        cluster: Some(|c, s| Box::new(Gang::on_cluster(&s, GangKind::GS, c.gang))),
    },
    PolicyEntry {
        kind: PolicyKind::Bgs,
        name: "bgs",
        help: "backfilling gang scheduling: conservative backfilling in every row of the matrix",
        options: &[OptionTable::Gang],
        single: None,
        cluster: Some(|c, s| Box::new(Gang::on_cluster(&s, GangKind::BGS, c.gang))),
    },
    PolicyEntry {
        kind: PolicyKind::Mgs,
        name: "mgs",
        help: "gang scheduling with migration (checkpoint/restart) to compact and fill the matrix",
        options: &[OptionTable::Gang],
        single: None,
        cluster: Some(|c, s| Box::new(Gang::on_cluster(&s, GangKind::MGS, c.gang))),
    },
    PolicyEntry {
        kind: PolicyKind::Mbgs,
        name: "mbgs",
        help: "backfilling gang scheduling with migration",
        options: &[OptionTable::Gang],
        single: None,
        cluster: Some(|c, s| Box::new(Gang::on_cluster(&s, GangKind::MBGS, c.gang))),
    },
    PolicyEntry {
        kind: PolicyKind::BgsAdaptive,
        name: "bgs-adaptive",
        help: "ours: BGS while the recent utilization is at most gang.rho_critical, BF above it",
        options: &[OptionTable::Gang],
        single: None,
        cluster: Some(|c, s| Box::new(Gang::on_cluster(&s, GangKind::ADAPTIVE, c.gang))),
    },
];

impl PolicyKind {
    /// The kind's row of [`POLICIES`].
    pub fn entry(self) -> &'static PolicyEntry {
        POLICIES
            .iter()
            .find(|e| e.kind == self)
            .expect("every kind has its row")
    }

    /// The kinds with a classic single-machine implementation, in table order.
    pub fn single_machine() -> Vec<PolicyKind> {
        POLICIES
            .iter()
            .filter(|e| e.single.is_some())
            .map(|e| e.kind)
            .collect()
    }

    /// The kinds that schedule a heterogeneous cluster with licences, in table order.
    pub fn cluster() -> Vec<PolicyKind> {
        POLICIES
            .iter()
            .filter(|e| e.cluster.is_some())
            .map(|e| e.kind)
            .collect()
    }

    /// Every kind, in table order.
    pub fn every() -> Vec<PolicyKind> {
        POLICIES.iter().map(|e| e.kind).collect()
    }

    /// The names of `kinds`, comma-separated (for help texts and errors).
    pub fn names(kinds: &[PolicyKind]) -> String {
        kinds
            .iter()
            .map(|k| k.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// One line per kind of `kinds`: its name and help (for long help texts).
    pub fn help_lines(kinds: &[PolicyKind]) -> String {
        kinds
            .iter()
            .map(|k| format!("{:<13} {}", k.as_str(), k.entry().help))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Parses the name of a policy that schedules one space-shared machine (`gridsim run`).
    pub fn parse_single(s: &str) -> Result<PolicyKind, String> {
        PolicyKind::parse_among(
            s,
            &PolicyKind::single_machine(),
            "heterogeneous clusters (gridsim cluster)",
        )
    }

    /// Parses the name of a policy that schedules heterogeneous clusters (`gridsim cluster`).
    pub fn parse_cluster(s: &str) -> Result<PolicyKind, String> {
        PolicyKind::parse_among(
            s,
            &PolicyKind::cluster(),
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

    /// Whether the kind is one of the gang schedulers, which time-share the one machine of a
    /// cluster ([`GangOptions`](super::GangOptions)).
    pub fn is_gang(self) -> bool {
        matches!(
            self,
            PolicyKind::Gs
                | PolicyKind::Bgs
                | PolicyKind::Mgs
                | PolicyKind::Mbgs
                | PolicyKind::BgsAdaptive
        )
    }

    /// Whether the kind reads an option table.
    pub fn takes(self, table: OptionTable) -> bool {
        self.entry().options.contains(&table)
    }

    /// The name used on command lines and in configuration files.
    pub fn as_str(self) -> &'static str {
        self.entry().name
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
        POLICIES
            .iter()
            .find(|e| e.name == s)
            .map(|e| e.kind)
            .ok_or_else(|| PolicyConfigError::UnknownPolicy(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_each_kind_once_with_its_serde_name() {
        let every = PolicyKind::every();
        assert_eq!(every.len(), POLICIES.len());
        for (i, e) in POLICIES.iter().enumerate() {
            assert_eq!(
                every.iter().filter(|&&k| k == e.kind).count(),
                1,
                "{}",
                e.name
            );
            let serde_name = serde_json::to_string(&e.kind).unwrap();
            assert_eq!(serde_name, format!("\"{}\"", e.name), "row {i}");
            assert!(e.single.is_some() || e.cluster.is_some(), "{}", e.name);
        }
        assert_eq!(
            PolicyKind::names(&PolicyKind::single_machine()),
            "fcfs, easy, conservative, first-fit, sjf-bf, ljf-bf, planning-fcfs, planning-sjf, \
             planning-ljf, dynp"
        );
        assert_eq!(
            PolicyKind::names(&PolicyKind::cluster()),
            "fcfs, easy, fb-unmod, fb-mod, edf, cs-i-p, cs-i-np, cs-ni-p, cs-ni-np, fb-meta, eg-edf, \
             eg-edf-tabu, eg-edf-now, eg-edf-tabu-now, gs, bgs, mgs, mbgs, bgs-adaptive"
        );
        let help = PolicyKind::help_lines(&[PolicyKind::Edf]);
        assert_eq!(
            help,
            "edf           earliest deadline first on a heterogeneous cluster"
        );
    }
}
