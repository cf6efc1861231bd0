//! Clusters, floating licence pools, sites and the platform that holds them (spec
//! `two-level-grid-scheduler.md` D2.2–D2.3, `self-tuning-and-multisite.md` §6.1).

use super::{ClusterId, LicenceId, Machine, MachineId, SiteId};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// A software licence type of the platform's catalogue.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LicenceType {
    /// Unique name, e.g. `matlab`.
    pub name: String,
}

/// A floating licence pool of a cluster: at most `copies` activations at any instant, each on one
/// of `machines` (the machines where the licence can be activated, D2.3).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LicencePool {
    /// The licence type.
    pub licence: LicenceId,
    /// Copies that can be active at the same time.
    pub copies: u32,
    /// Machines of the cluster on which a copy can be activated.
    pub machines: Vec<MachineId>,
}

/// A set of machines at one site, managed by one local scheduler.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cluster {
    /// Index in the platform's cluster list.
    pub id: ClusterId,
    /// Unique name.
    pub name: String,
    /// The site hosting the cluster.
    pub site: SiteId,
    /// Its machines.
    pub machines: Vec<MachineId>,
    /// Its floating licence pools.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pools: Vec<LicencePool>,
    /// Whether several jobs may share one machine's processors (space sharing); when false a
    /// machine runs one job at a time (the seed's single-cluster experiments).
    #[serde(default = "default_true")]
    pub space_sharing: bool,
}

fn default_true() -> bool {
    true
}

/// A site (an administrative domain) hosting one or more clusters.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Site {
    /// Index in the platform's site list.
    pub id: SiteId,
    /// Unique name.
    pub name: String,
    /// Its clusters.
    pub clusters: Vec<ClusterId>,
}

/// The whole grid: licence catalogue, machines, clusters, sites.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Platform {
    /// Licence catalogue; a [`LicenceId`] indexes it.
    #[serde(default)]
    pub licences: Vec<LicenceType>,
    /// All machines; a [`MachineId`] indexes it.
    pub machines: Vec<Machine>,
    /// All clusters; a [`ClusterId`] indexes it.
    pub clusters: Vec<Cluster>,
    /// All sites; a [`SiteId`] indexes it.
    pub sites: Vec<Site>,
}

/// An inconsistency in a platform description.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlatformError {
    /// An id does not match its position in its list.
    #[error("{kind} `{name}` has id {id} but sits at position {pos}")]
    IdMismatch {
        /// machine, cluster or site.
        kind: &'static str,
        /// Its name.
        name: String,
        /// The id it carries.
        id: u32,
        /// Its position.
        pos: usize,
    },
    /// Two entities of a kind share a name.
    #[error("duplicate {kind} name `{name}`")]
    DuplicateName {
        /// machine, cluster, site or licence.
        kind: &'static str,
        /// The repeated name.
        name: String,
    },
    /// A reference points nowhere.
    #[error("{owner}: unknown {kind} {id}")]
    UnknownRef {
        /// Who holds the reference.
        owner: String,
        /// What kind of entity is referenced.
        kind: &'static str,
        /// The dangling id.
        id: u32,
    },
    /// A machine with no processors or a zero benchmark score.
    #[error("machine `{0}`: {1}")]
    BadMachine(String, &'static str),
    /// A machine listed by a cluster does not name that cluster, or a pool machine is elsewhere.
    #[error("cluster `{cluster}`: machine `{machine}` belongs to another cluster")]
    ForeignMachine {
        /// The cluster.
        cluster: String,
        /// The machine.
        machine: String,
    },
    /// A licence pool with no copies.
    #[error("cluster `{cluster}`: licence pool `{licence}` has no copies")]
    EmptyPool {
        /// The cluster.
        cluster: String,
        /// The licence.
        licence: String,
    },
    /// The platform has no machine.
    #[error("the platform has no machine")]
    Empty,
}

impl Platform {
    /// One site, one cluster, one space-shared machine of `procs` processors (benchmark 1): the
    /// platform of a classic single-machine trace replay.
    pub fn single_machine(procs: u32) -> Platform {
        let mut m = Machine::new(MachineId(0), "machine", procs, 1);
        m.cluster = ClusterId(0);
        Platform {
            licences: Vec::new(),
            machines: vec![m],
            clusters: vec![Cluster {
                id: ClusterId(0),
                name: "cluster".into(),
                site: SiteId(0),
                machines: vec![MachineId(0)],
                pools: Vec::new(),
                space_sharing: true,
            }],
            sites: vec![Site {
                id: SiteId(0),
                name: "site".into(),
                clusters: vec![ClusterId(0)],
            }],
        }
    }

    /// One site, cluster and space-shared machine (benchmark 1) per `(name, processors)`, all
    /// three named alike: the grid of one-machine sites of the multi-site and broker studies.
    pub fn single_machine_sites<'a>(sites: impl IntoIterator<Item = (&'a str, u32)>) -> Platform {
        let mut p = Platform::default();
        for (i, (name, procs)) in sites.into_iter().enumerate() {
            let id = i as u32;
            let mut m = Machine::new(MachineId(id), name, procs, 1);
            m.cluster = ClusterId(id);
            p.machines.push(m);
            p.clusters.push(Cluster {
                id: ClusterId(id),
                name: name.into(),
                site: SiteId(id),
                machines: vec![MachineId(id)],
                pools: Vec::new(),
                space_sharing: true,
            });
            p.sites.push(Site {
                id: SiteId(id),
                name: name.into(),
                clusters: vec![ClusterId(id)],
            });
        }
        p
    }

    /// Total processors of all machines.
    pub fn total_procs(&self) -> u64 {
        self.machines.iter().map(|m| u64::from(m.procs)).sum()
    }

    /// The largest machine's processor count.
    pub fn max_machine_procs(&self) -> u32 {
        self.machines.iter().map(|m| m.procs).max().unwrap_or(0)
    }

    /// A machine by id.
    pub fn machine(&self, id: MachineId) -> Option<&Machine> {
        self.machines.get(id.index())
    }

    /// A cluster by id.
    pub fn cluster(&self, id: ClusterId) -> Option<&Cluster> {
        self.clusters.get(id.index())
    }

    /// The nodes of cluster `id` with their processors when it is a partition of alike nodes: at
    /// least two machines, space-shared, without licence pools, every machine with the same
    /// processors, benchmark, memory and node-locked licences. Such a cluster can run a job over
    /// several of its nodes (a multi-node job).
    pub fn alike_nodes(&self, id: ClusterId) -> Option<Vec<(MachineId, u32)>> {
        let c = self.cluster(id)?;
        if c.machines.len() < 2 || !c.space_sharing || !c.pools.is_empty() {
            return None;
        }
        let ms: Vec<&Machine> = c
            .machines
            .iter()
            .map(|&m| self.machine(m))
            .collect::<Option<_>>()?;
        let first = ms[0];
        let alike = |m: &&Machine| {
            m.procs == first.procs
                && m.benchmark == first.benchmark
                && m.memory_kb == first.memory_kb
                && m.node_locked == first.node_locked
        };
        ms.iter()
            .all(alike)
            .then(|| ms.iter().map(|m| (m.id, m.procs)).collect())
    }

    /// The licence id of a licence name.
    pub fn licence_by_name(&self, name: &str) -> Option<LicenceId> {
        self.licences
            .iter()
            .position(|l| l.name == name)
            .map(|i| LicenceId(i as u16))
    }

    /// Checks ids, names and references; returns the first inconsistency found.
    pub fn validate(&self) -> Result<(), PlatformError> {
        if self.machines.is_empty() {
            return Err(PlatformError::Empty);
        }
        unique_names("licence", self.licences.iter().map(|l| l.name.as_str()))?;
        unique_names("machine", self.machines.iter().map(|m| m.name.as_str()))?;
        unique_names("cluster", self.clusters.iter().map(|c| c.name.as_str()))?;
        unique_names("site", self.sites.iter().map(|s| s.name.as_str()))?;
        let nlic = self.licences.len();
        for (pos, m) in self.machines.iter().enumerate() {
            check_id("machine", &m.name, m.id.0, pos)?;
            if m.procs == 0 {
                return Err(PlatformError::BadMachine(m.name.clone(), "no processors"));
            }
            if m.benchmark == 0 {
                return Err(PlatformError::BadMachine(
                    m.name.clone(),
                    "benchmark score must be positive",
                ));
            }
            if m.cluster.index() >= self.clusters.len() {
                return Err(unknown(
                    format!("machine `{}`", m.name),
                    "cluster",
                    m.cluster.0,
                ));
            }
            for l in &m.node_locked {
                if l.index() >= nlic {
                    return Err(unknown(
                        format!("machine `{}`", m.name),
                        "licence",
                        u32::from(l.0),
                    ));
                }
            }
        }
        for (pos, c) in self.clusters.iter().enumerate() {
            check_id("cluster", &c.name, c.id.0, pos)?;
            if c.site.0 as usize >= self.sites.len() {
                return Err(unknown(format!("cluster `{}`", c.name), "site", c.site.0));
            }
            let own = |mid: MachineId| -> Result<&Machine, PlatformError> {
                let m = self
                    .machine(mid)
                    .ok_or_else(|| unknown(format!("cluster `{}`", c.name), "machine", mid.0))?;
                if m.cluster != c.id {
                    return Err(PlatformError::ForeignMachine {
                        cluster: c.name.clone(),
                        machine: m.name.clone(),
                    });
                }
                Ok(m)
            };
            for &mid in &c.machines {
                own(mid)?;
            }
            for p in &c.pools {
                let lname = self
                    .licences
                    .get(p.licence.index())
                    .ok_or_else(|| {
                        unknown(
                            format!("cluster `{}`", c.name),
                            "licence",
                            u32::from(p.licence.0),
                        )
                    })?
                    .name
                    .clone();
                if p.copies == 0 {
                    return Err(PlatformError::EmptyPool {
                        cluster: c.name.clone(),
                        licence: lname,
                    });
                }
                for &mid in &p.machines {
                    own(mid)?;
                }
            }
        }
        for (pos, s) in self.sites.iter().enumerate() {
            check_id("site", &s.name, s.id.0, pos)?;
            for cid in &s.clusters {
                if cid.index() >= self.clusters.len() {
                    return Err(unknown(format!("site `{}`", s.name), "cluster", cid.0));
                }
            }
        }
        Ok(())
    }
}

fn unknown(owner: String, kind: &'static str, id: u32) -> PlatformError {
    PlatformError::UnknownRef { owner, kind, id }
}

fn check_id(kind: &'static str, name: &str, id: u32, pos: usize) -> Result<(), PlatformError> {
    if id as usize != pos {
        return Err(PlatformError::IdMismatch {
            kind,
            name: name.to_string(),
            id,
            pos,
        });
    }
    Ok(())
}

fn unique_names<'a>(
    kind: &'static str,
    names: impl Iterator<Item = &'a str>,
) -> Result<(), PlatformError> {
    let mut seen = HashSet::new();
    for n in names {
        if !seen.insert(n) {
            return Err(PlatformError::DuplicateName {
                kind,
                name: n.to_string(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_cluster_platform() -> Platform {
        let mut p = Platform::single_machine(8);
        p.licences.push(LicenceType {
            name: "matlab".into(),
        });
        let mut m1 = Machine::new(MachineId(1), "b1", 16, 300);
        m1.cluster = ClusterId(1);
        m1.node_locked.push(LicenceId(0));
        p.machines.push(m1);
        p.clusters.push(Cluster {
            id: ClusterId(1),
            name: "b".into(),
            site: SiteId(0),
            machines: vec![MachineId(1)],
            pools: vec![LicencePool {
                licence: LicenceId(0),
                copies: 2,
                machines: vec![MachineId(1)],
            }],
            space_sharing: false,
        });
        p.sites[0].clusters.push(ClusterId(1));
        p
    }

    #[test]
    fn single_machine_is_valid() {
        let p = Platform::single_machine(100);
        p.validate().unwrap();
        assert_eq!(p.total_procs(), 100);
        assert_eq!(p.max_machine_procs(), 100);
    }

    #[test]
    fn validation_finds_each_kind_of_error() {
        let p = two_cluster_platform();
        p.validate().unwrap();
        assert_eq!(p.licence_by_name("matlab"), Some(LicenceId(0)));

        let mut bad = p.clone();
        bad.clusters[1].pools[0].copies = 0;
        assert!(matches!(
            bad.validate(),
            Err(PlatformError::EmptyPool { .. })
        ));

        let mut bad = p.clone();
        bad.clusters[1].pools[0].machines.push(MachineId(0));
        assert!(matches!(
            bad.validate(),
            Err(PlatformError::ForeignMachine { .. })
        ));

        let mut bad = p.clone();
        bad.machines[1].name = "machine".into();
        assert!(matches!(
            bad.validate(),
            Err(PlatformError::DuplicateName {
                kind: "machine",
                ..
            })
        ));

        let mut bad = p.clone();
        bad.machines[1].node_locked.push(LicenceId(7));
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains("unknown licence 7"), "{e}");

        let mut bad = p.clone();
        bad.machines[0].procs = 0;
        assert!(matches!(bad.validate(), Err(PlatformError::BadMachine(..))));

        let mut bad = p;
        bad.machines[1].id = MachineId(5);
        assert!(matches!(
            bad.validate(),
            Err(PlatformError::IdMismatch { .. })
        ));
    }

    #[test]
    fn platform_round_trips_through_json() {
        let p = two_cluster_platform();
        let s = serde_json::to_string(&p).unwrap();
        let back: Platform = serde_json::from_str(&s).unwrap();
        assert_eq!(back, p);
    }
}
