//! The runner's own resource accounting of one cluster, independent of any policy's: every start a
//! policy decides is checked here against the machine (it must be up and belong to the cluster),
//! its processors (one job per machine without space sharing), licence suitability and pool copies
//! (Pasquali, thesis §3.2: a licence is a hard constraint; spec `two-level-grid-scheduler.md`
//! D2.3) and its memory, so no schedule a runner hands out can oversubscribe anything.
//!
//! Memory (spec reading: the publications model none): a job's `memory_kb` is its memory in all;
//! on several nodes each part holds its processors' share, `memory_kb × part / procs` KiB rounded
//! down (memory per processor, as Slurm's `--mem-per-cpu`). A machine whose memory is not known
//! is not checked.

use super::NodePart;
use crate::model::{ClusterId, Job, LicenceId, Machine, MachineId, Platform};
use rustc_hash::FxHashMap;

#[derive(Clone, Debug)]
struct MachineUse {
    machine: Machine,
    free: u32,
    /// Memory not held, KiB (`None`: the machine's memory is not known).
    free_memory_kb: Option<u64>,
    jobs: u32,
    up: bool,
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
    /// Memory, KiB (0 on a machine whose memory is not known).
    pub memory_kb: u64,
}

/// The memory a part of `procs` of `job`'s processors holds: its share of the job's memory.
fn memory_share(job: &Job, procs: u32) -> u64 {
    match job.memory_kb {
        Some(m) if job.procs > 0 => {
            (u128::from(m) * u128::from(procs) / u128::from(job.procs)) as u64
        }
        _ => 0,
    }
}

/// Resource usage of one cluster.
#[derive(Clone, Debug)]
pub struct Ledger {
    cluster: ClusterId,
    /// The cluster's machines, by their position in `slot_of`.
    machines: Vec<MachineUse>,
    slot_of: FxHashMap<MachineId, usize>,
    space_sharing: bool,
    pools: FxHashMap<LicenceId, PoolUse>,
    busy_procs: u64,
    used_copies: u64,
    active_machines: u64,
}

impl Ledger {
    /// Cluster `cluster` of `platform`, idle, every machine up; `None` for an unknown cluster.
    pub fn new(platform: &Platform, cluster: ClusterId) -> Option<Ledger> {
        let c = platform.cluster(cluster)?;
        let mut machines = Vec::with_capacity(c.machines.len());
        let mut slot_of = FxHashMap::with_capacity_and_hasher(c.machines.len(), Default::default());
        for &m in &c.machines {
            let machine = platform.machine(m)?.clone();
            slot_of.insert(m, machines.len());
            machines.push(MachineUse {
                free: machine.procs,
                free_memory_kb: machine.memory_kb,
                machine,
                jobs: 0,
                up: true,
            });
        }
        let pools = c
            .pools
            .iter()
            .map(|p| {
                (
                    p.licence,
                    PoolUse {
                        copies: p.copies,
                        in_use: 0,
                        suitable: p.machines.clone(),
                    },
                )
            })
            .collect();
        Some(Ledger {
            cluster,
            machines,
            slot_of,
            space_sharing: c.space_sharing,
            pools,
            busy_procs: 0,
            used_copies: 0,
            active_machines: 0,
        })
    }

    /// The cluster.
    pub fn cluster(&self) -> ClusterId {
        self.cluster
    }

    /// A machine of the cluster.
    pub fn machine(&self, machine: MachineId) -> Option<&Machine> {
        self.slot_of
            .get(&machine)
            .map(|&s| &self.machines[s].machine)
    }

    /// The cluster's machines.
    pub fn machines(&self) -> impl Iterator<Item = &Machine> {
        self.machines.iter().map(|m| &m.machine)
    }

    /// Marks a machine up (it may receive starts) or down; false for a machine of another cluster.
    pub fn set_up(&mut self, machine: MachineId, up: bool) -> bool {
        match self.slot_of.get(&machine) {
            Some(&s) => {
                self.machines[s].up = up;
                true
            }
            None => false,
        }
    }

    /// Takes the resources of `job` on `machine`, or says what is missing.
    pub fn acquire(&mut self, job: &Job, machine: MachineId, procs: u32) -> Result<Held, String> {
        let s = *self
            .slot_of
            .get(&machine)
            .ok_or_else(|| format!("machine {machine} is not in cluster {}", self.cluster))?;
        if !self.machines[s].up {
            return Err(format!("machine {machine} is down"));
        }
        if procs != job.procs {
            return Err(format!("{procs} processors given, {} asked", job.procs));
        }
        self.take(job, s, procs)
    }

    /// Takes the resources of a multi-node `job` on its `parts` (all of them, or nothing and what
    /// is missing). Every part needs the job's licences on its node (a partition of alike nodes
    /// has node-locked licences only).
    pub fn acquire_parts(&mut self, job: &Job, parts: &[NodePart]) -> Result<Vec<Held>, String> {
        let total: u32 = parts.iter().map(|p| p.procs).sum();
        if total != job.procs {
            return Err(format!("{total} processors given, {} asked", job.procs));
        }
        let mut held = Vec::with_capacity(parts.len());
        for p in parts {
            let taken = self
                .slot_of
                .get(&p.node)
                .copied()
                .ok_or_else(|| format!("machine {} is not in cluster {}", p.node, self.cluster))
                .and_then(|s| self.take(job, s, p.procs));
            match taken {
                Ok(h) => held.push(h),
                Err(why) => {
                    for h in &held {
                        self.release(h);
                    }
                    return Err(why);
                }
            }
        }
        Ok(held)
    }

    fn take(&mut self, job: &Job, s: usize, procs: u32) -> Result<Held, String> {
        let m = &self.machines[s];
        let machine = m.machine.id;
        if !m.up {
            return Err(format!("machine {machine} is down"));
        }
        if procs > m.free {
            return Err(format!("{procs} processors needed, {} free", m.free));
        }
        if !self.space_sharing && m.jobs > 0 {
            return Err("the machine already runs a job (no space sharing)".into());
        }
        let memory_kb = match m.free_memory_kb {
            Some(free) => {
                let share = memory_share(job, procs);
                if share > free {
                    return Err(format!("{share} KiB of memory needed, {free} KiB free"));
                }
                share
            }
            None => 0,
        };
        let mut pooled = Vec::new();
        for &l in &job.licences {
            if m.machine.node_locked.contains(&l) {
                continue;
            }
            let p = self
                .pools
                .get(&l)
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
            self.pools.get_mut(l).expect("checked").in_use += 1;
        }
        let m = &mut self.machines[s];
        m.free -= procs;
        if let Some(free) = &mut m.free_memory_kb {
            *free -= memory_kb;
        }
        m.jobs += 1;
        if m.jobs == 1 {
            self.active_machines += 1;
        }
        self.busy_procs += u64::from(procs);
        self.used_copies += pooled.len() as u64;
        Ok(Held {
            machine,
            procs,
            pooled,
            memory_kb,
        })
    }

    /// Releases what a job held.
    pub fn release(&mut self, held: &Held) {
        let Some(&s) = self.slot_of.get(&held.machine) else {
            return;
        };
        let m = &mut self.machines[s];
        m.free += held.procs;
        if let Some(free) = &mut m.free_memory_kb {
            *free += held.memory_kb;
        }
        m.jobs -= 1;
        if m.jobs == 0 {
            self.active_machines -= 1;
        }
        self.busy_procs -= u64::from(held.procs);
        for l in &held.pooled {
            if let Some(p) = self.pools.get_mut(l) {
                p.in_use -= 1;
                self.used_copies -= 1;
            }
        }
    }

    /// Checks every counter's bounds.
    pub fn check(&self) -> Result<(), String> {
        for m in &self.machines {
            if m.free > m.machine.procs {
                return Err(format!(
                    "machine {}: {} free of {}",
                    m.machine.id, m.free, m.machine.procs
                ));
            }
            if m.free_memory_kb > m.machine.memory_kb {
                return Err(format!(
                    "machine {}: {:?} KiB of memory free of {:?}",
                    m.machine.id, m.free_memory_kb, m.machine.memory_kb
                ));
            }
        }
        for (l, p) in &self.pools {
            if p.in_use > p.copies {
                return Err(format!("licence {l}: {} > {}", p.in_use, p.copies));
            }
        }
        Ok(())
    }

    /// Jobs running on a machine (0 for a machine of another cluster).
    pub fn jobs_on(&self, machine: MachineId) -> u32 {
        self.slot_of
            .get(&machine)
            .map_or(0, |&s| self.machines[s].jobs)
    }

    /// Processors in use.
    pub fn busy_procs(&self) -> u64 {
        self.busy_procs
    }

    /// Pool copies in use.
    pub fn used_copies(&self) -> u64 {
        self.used_copies
    }

    /// Machines running at least one job.
    pub fn active_machines(&self) -> u64 {
        self.active_machines
    }
}
