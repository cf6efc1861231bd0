//! The platform engine's own resource accounting, independent of any policy's: every start a
//! policy decides is checked here against machine processors (one job per machine without space
//! sharing), licence suitability and pool copies (spec `two-level-grid-scheduler.md` D2.3 hard
//! constraint), so no schedule the engine reports can oversubscribe anything.

use gridsched_core::model::{ClusterId, Job, LicenceId, MachineId, Platform};
use std::collections::HashMap;

#[derive(Clone, Debug)]
struct MachineUse {
    cluster: ClusterId,
    procs: u32,
    free: u32,
    jobs: u32,
}

#[derive(Clone, Debug)]
struct PoolUse {
    copies: u32,
    in_use: u32,
    suitable: Vec<MachineId>,
}

/// What a started job holds, to release it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    /// Machine.
    pub machine: MachineId,
    /// Processors.
    pub procs: u32,
    /// Pool copies, by licence.
    pub pooled: Vec<LicenceId>,
}

/// Resource usage of the whole platform.
#[derive(Clone, Debug)]
pub struct Validator {
    machines: Vec<MachineUse>,
    space_sharing: Vec<bool>,
    pools: HashMap<(ClusterId, LicenceId), PoolUse>,
    node_locked: Vec<Vec<LicenceId>>,
}

impl Validator {
    /// An idle platform.
    pub fn new(platform: &Platform) -> Validator {
        let machines = platform
            .machines
            .iter()
            .map(|m| MachineUse {
                cluster: m.cluster,
                procs: m.procs,
                free: m.procs,
                jobs: 0,
            })
            .collect();
        let mut pools = HashMap::new();
        for c in &platform.clusters {
            for p in &c.pools {
                pools.insert(
                    (c.id, p.licence),
                    PoolUse {
                        copies: p.copies,
                        in_use: 0,
                        suitable: p.machines.clone(),
                    },
                );
            }
        }
        Validator {
            machines,
            space_sharing: platform.clusters.iter().map(|c| c.space_sharing).collect(),
            pools,
            node_locked: platform
                .machines
                .iter()
                .map(|m| m.node_locked.clone())
                .collect(),
        }
    }

    /// Takes the resources of `job` on `machine` of `cluster`, or says what is missing.
    pub fn acquire(
        &mut self,
        job: &Job,
        cluster: ClusterId,
        machine: MachineId,
        procs: u32,
    ) -> Result<Held, String> {
        let m = self
            .machines
            .get(machine.index())
            .ok_or_else(|| format!("unknown machine {machine}"))?;
        if m.cluster != cluster {
            return Err(format!("machine {machine} is not in cluster {cluster}"));
        }
        if procs != job.procs {
            return Err(format!("{procs} processors given, {} asked", job.procs));
        }
        if procs > m.free {
            return Err(format!("{procs} processors needed, {} free", m.free));
        }
        if !self.space_sharing[cluster.index()] && m.jobs > 0 {
            return Err("the machine already runs a job (no space sharing)".into());
        }
        let mut pooled = Vec::new();
        for &l in &job.licences {
            if self.node_locked[machine.index()].contains(&l) {
                continue;
            }
            let p = self
                .pools
                .get(&(cluster, l))
                .ok_or_else(|| format!("licence {l} cannot be activated on {machine}"))?;
            if !p.suitable.contains(&machine) {
                return Err(format!("licence {l} is not suitable on {machine}"));
            }
            if p.in_use >= p.copies {
                return Err(format!("licence {l}: all {} copies in use", p.copies));
            }
            pooled.push(l);
        }
        for l in &pooled {
            self.pools.get_mut(&(cluster, *l)).expect("checked").in_use += 1;
        }
        let m = &mut self.machines[machine.index()];
        m.free -= procs;
        m.jobs += 1;
        Ok(Held {
            machine,
            procs,
            pooled,
        })
    }

    /// Releases what a job held.
    pub fn release(&mut self, held: &Held) {
        let m = &mut self.machines[held.machine.index()];
        m.free += held.procs;
        m.jobs -= 1;
        let cluster = m.cluster;
        for l in &held.pooled {
            if let Some(p) = self.pools.get_mut(&(cluster, *l)) {
                p.in_use -= 1;
            }
        }
    }

    /// Checks every counter's bounds (used by tests after every pass).
    pub fn check(&self) -> Result<(), String> {
        for (i, m) in self.machines.iter().enumerate() {
            if m.free > m.procs {
                return Err(format!("machine m{i}: {} free of {}", m.free, m.procs));
            }
        }
        for ((c, l), p) in &self.pools {
            if p.in_use > p.copies {
                return Err(format!(
                    "cluster {c} licence {l}: {} > {}",
                    p.in_use, p.copies
                ));
            }
        }
        Ok(())
    }

    /// Whether a machine runs at least one job.
    pub fn active(&self, machine: usize) -> bool {
        self.machines[machine].jobs > 0
    }

    /// Copies of pooled licences in use in a cluster.
    pub fn copies_in_use(&self, cluster: ClusterId) -> u32 {
        self.pools
            .iter()
            .filter(|((c, _), _)| *c == cluster)
            .map(|(_, p)| p.in_use)
            .sum()
    }

    /// Running job count of the platform per machine (for tests).
    pub fn jobs_on(&self, machine: MachineId) -> u32 {
        self.machines[machine.index()].jobs
    }
}
