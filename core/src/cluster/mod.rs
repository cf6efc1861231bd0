//! The state of one heterogeneous cluster, shared by every local policy that schedules machines
//! and licences (spec `two-level-grid-scheduler.md` D2.2–D2.4, D6.2 "Minimal Requirements", D12
//! #15, #24, #26).
//!
//! A cluster is a set of machines (processors, benchmark score, node-locked licences) and floating
//! licence pools (at most `copies` activations at once, each on one of the pool's suitable
//! machines). A job runs on one machine and holds one copy of each licence it needs for its whole
//! run, except a licence node-locked on that machine, which is a machine attribute and consumes no
//! pool copy. With space sharing several jobs share a machine's processors; without it a machine
//! runs one job at a time (the seed's single-cluster experiments).
//!
//! Machines are addressed by their position in the cluster (`usize`, "slot"); [`ClusterState::
//! by_speed`] lists them fastest first (benchmark descending, then platform id ascending — the
//! documented tie-break). Every running job carries its predicted end so that policies can compute
//! when resources free up ([`ClusterState::earliest_start`]).
//!
//! Memory is a consumable of each machine whose memory is known (spec reading: the publications
//! model none): a job's `memory_kb` is held on its machine for its run, beside its processors,
//! and a job asking for more than a machine has can never run there.

mod accounting;
mod eligibility;
mod reservations;

pub use accounting::{Alloc, ClusterError};
use eligibility::Eligibility;
pub use reservations::ClusterBook;
pub(crate) use reservations::{cluster_booking, reservation_methods};

use crate::model::{
    ClusterId, Duration, Job, JobId, LicenceId, LicencePool, Machine, MachineId, Platform, Time,
};
use rustc_hash::FxHashMap;

/// One machine of the cluster and what is in use on it.
#[derive(Clone, Debug)]
pub struct Slot {
    /// The machine.
    pub machine: Machine,
    /// Processors not in use.
    pub free: u32,
    /// Memory not in use, KiB (`None`: the machine's memory is not known, and not checked).
    pub free_memory_kb: Option<u64>,
    /// Jobs running on it.
    pub jobs: Vec<JobId>,
    /// Whether it accepts new work.
    pub up: bool,
}

/// A floating licence pool and its copies in use.
#[derive(Clone, Debug)]
pub struct Pool {
    /// The licence.
    pub licence: LicenceId,
    /// Copies that may be active at once.
    pub copies: u32,
    /// Copies active now.
    pub in_use: u32,
    /// Per slot: whether a copy can be activated on that machine.
    pub suitable: Vec<bool>,
    /// Running jobs holding a copy.
    pub holders: Vec<JobId>,
}

/// The resource state of one cluster.
#[derive(Clone, Debug)]
pub struct ClusterState {
    slots: Vec<Slot>,
    by_speed: Vec<usize>,
    slot_of: FxHashMap<MachineId, usize>,
    /// Indexed by licence index; `None` when the cluster has no pool of that licence.
    pools: Vec<Option<Pool>>,
    space_sharing: bool,
    running: FxHashMap<JobId, Alloc>,
    /// Minimal Requirements as bit sets, fixed with the machines and pools.
    eligibility: Eligibility,
}

/// How a job would get a licence on a machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    NodeLocked,
    Pool,
}

impl ClusterState {
    /// The state of `cluster` of `platform`, everything idle and up.
    pub fn new(platform: &Platform, cluster: ClusterId) -> Result<ClusterState, ClusterError> {
        let c = platform
            .cluster(cluster)
            .ok_or(ClusterError::UnknownCluster(cluster))?;
        let machines = c
            .machines
            .iter()
            .map(|m| {
                platform
                    .machine(*m)
                    .cloned()
                    .ok_or(ClusterError::UnknownMachine(*m))
            })
            .collect::<Result<Vec<_>, _>>()?;
        ClusterState::from_parts(machines, &c.pools, c.space_sharing)
    }

    /// A cluster of `machines` with floating `pools`.
    pub fn from_parts(
        machines: Vec<Machine>,
        pools: &[LicencePool],
        space_sharing: bool,
    ) -> Result<ClusterState, ClusterError> {
        if machines.is_empty() {
            return Err(ClusterError::NoMachine);
        }
        let mut slot_of = FxHashMap::with_capacity_and_hasher(machines.len(), Default::default());
        for (i, m) in machines.iter().enumerate() {
            if slot_of.insert(m.id, i).is_some() {
                return Err(ClusterError::DuplicateMachine(m.id));
            }
        }
        let nlic = pools
            .iter()
            .map(|p| p.licence.index() + 1)
            .max()
            .unwrap_or(0);
        let mut pool_vec: Vec<Option<Pool>> = vec![None; nlic];
        for p in pools {
            let mut suitable = vec![false; machines.len()];
            for m in &p.machines {
                let s = *slot_of.get(m).ok_or(ClusterError::UnknownMachine(*m))?;
                suitable[s] = true;
            }
            let entry = &mut pool_vec[p.licence.index()];
            if entry.is_some() {
                return Err(ClusterError::DuplicatePool(p.licence));
            }
            *entry = Some(Pool {
                licence: p.licence,
                copies: p.copies,
                in_use: 0,
                suitable,
                holders: Vec::new(),
            });
        }
        let mut by_speed: Vec<usize> = (0..machines.len()).collect();
        by_speed.sort_by_key(|&i| (std::cmp::Reverse(machines[i].benchmark), machines[i].id));
        let slots = machines
            .into_iter()
            .map(|m| Slot {
                free: m.procs,
                free_memory_kb: m.memory_kb,
                machine: m,
                jobs: Vec::new(),
                up: true,
            })
            .collect();
        let mut state = ClusterState {
            slots,
            by_speed,
            slot_of,
            pools: pool_vec,
            space_sharing,
            running: FxHashMap::default(),
            eligibility: Eligibility::default(),
        };
        state.eligibility = Eligibility::new(&state);
        Ok(state)
    }

    /// The slots where `job` can ever run, ascending, into `out` (the slots
    /// [`can_ever_run`](Self::can_ever_run) accepts, from bit sets built once per cluster).
    pub fn eligible_slots(&self, job: &Job, out: &mut Vec<usize>) {
        self.eligibility.slots_for(job, out);
    }

    /// The machines, by slot.
    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// Slots fastest first (benchmark descending, then machine id).
    pub fn by_speed(&self) -> &[usize] {
        &self.by_speed
    }

    /// The slot of a machine of this cluster.
    pub fn slot_of(&self, machine: MachineId) -> Option<usize> {
        self.slot_of.get(&machine).copied()
    }

    /// The pool of a licence, if the cluster has one.
    pub fn pool(&self, licence: LicenceId) -> Option<&Pool> {
        self.pools.get(licence.index()).and_then(Option::as_ref)
    }

    /// All pools.
    pub fn pools(&self) -> impl Iterator<Item = &Pool> {
        self.pools.iter().flatten()
    }

    /// Whether several jobs may share a machine.
    pub fn space_sharing(&self) -> bool {
        self.space_sharing
    }

    /// The running jobs and their allocations.
    pub fn running(&self) -> &FxHashMap<JobId, Alloc> {
        &self.running
    }

    /// Total processors of the machines that are up.
    pub fn total_procs(&self) -> u64 {
        self.slots
            .iter()
            .filter(|s| s.up)
            .map(|s| u64::from(s.machine.procs))
            .sum()
    }

    /// One more than the largest licence index the cluster knows (pools and node-locked).
    pub fn licence_slots(&self) -> usize {
        self.pools()
            .map(|p| p.licence.index() + 1)
            .chain(
                self.slots
                    .iter()
                    .flat_map(|s| s.machine.node_locked.iter().map(|l| l.index() + 1)),
            )
            .max()
            .unwrap_or(0)
    }

    /// Re-accounts a job found running on `machine` since `started` (a driver's restart), predicted
    /// to run `duration(slot)`; returns its slot.
    pub fn restore(
        &mut self,
        job: &Job,
        machine: MachineId,
        started: Time,
        duration: impl Fn(&ClusterState, usize) -> Duration,
    ) -> Result<usize, ClusterError> {
        let slot = self
            .slot_of(machine)
            .ok_or(ClusterError::UnknownMachine(machine))?;
        let end = started + duration(self, slot);
        self.start(job, slot, started, end)?;
        Ok(slot)
    }

    /// How many copies of `licence` can be active at once on this cluster: the pool's copies plus
    /// one per machine where the licence is node-locked (the "offer" of D2.4).
    pub fn offer(&self, licence: LicenceId) -> u32 {
        let pooled = self.pool(licence).map_or(0, |p| p.copies);
        let locked = self
            .slots
            .iter()
            .filter(|s| s.machine.has_node_locked(licence))
            .count() as u32;
        pooled + locked
    }

    fn source(&self, licence: LicenceId, slot: usize) -> Option<Source> {
        if self.slots[slot].machine.has_node_locked(licence) {
            return Some(Source::NodeLocked);
        }
        match self.pool(licence) {
            // A pool without copies can activate nothing (else a job would wait forever).
            Some(p) if p.suitable[slot] && p.copies > 0 => Some(Source::Pool),
            _ => None,
        }
    }

    /// How `licence` is had on `slot`: `Some(false)` node-locked there (no pool copy), `Some(true)`
    /// one copy of a suitable pool, `None` it cannot be activated there.
    pub fn takes_copy(&self, licence: LicenceId, slot: usize) -> Option<bool> {
        self.source(licence, slot).map(|s| s == Source::Pool)
    }

    /// Predicted ends of the jobs running on `slot` or holding a copy of one of `pooled`.
    pub fn ends_touching(&self, slot: usize, pooled: &[LicenceId]) -> Vec<Time> {
        let mut ends: Vec<Time> = self.slots[slot]
            .jobs
            .iter()
            .filter_map(|j| self.running.get(j))
            .map(|a| a.end)
            .collect();
        for &l in pooled {
            if let Some(p) = self.pool(l) {
                ends.extend(
                    p.holders
                        .iter()
                        .filter_map(|j| self.running.get(j))
                        .map(|a| a.end),
                );
            }
        }
        ends
    }

    /// Minimal Requirements ignoring what is in use: the machine has the processors and every
    /// licence of the job can be activated there (node-locked or a suitable pool).
    pub fn can_ever_run(&self, job: &Job, slot: usize) -> bool {
        let s = &self.slots[slot];
        job.procs <= s.machine.procs
            && memory_fits(job, s.machine.memory_kb)
            && job.licences.iter().all(|&l| self.source(l, slot).is_some())
    }

    /// Why no machine of the cluster can ever run `job`, or `None` when one can.
    pub fn ineligibility(&self, job: &Job) -> Option<String> {
        if (0..self.slots.len()).any(|s| self.can_ever_run(job, s)) {
            return None;
        }
        let widest = self
            .slots
            .iter()
            .map(|s| s.machine.procs)
            .max()
            .unwrap_or(0);
        if job.procs > widest {
            return Some(format!(
                "procs: {} processors asked, the largest machine has {widest} (this policy runs \
                 a job on one machine; the FCFS, backfilling and planning policies run a job over \
                 several machines of a partition of alike machines)",
                job.procs
            ));
        }
        if let Some(need) = job.memory_kb
            && !self
                .slots
                .iter()
                .any(|s| memory_fits(job, s.machine.memory_kb))
        {
            let most = self.slots.iter().filter_map(|s| s.machine.memory_kb).max();
            return Some(format!(
                "memory_kb: {need} KiB asked, the largest machine has {} KiB",
                most.unwrap_or(0)
            ));
        }
        for &l in &job.licences {
            if !(0..self.slots.len()).any(|s| self.source(l, s).is_some()) {
                return Some(format!(
                    "licence {l}: no machine of the cluster can activate it"
                ));
            }
        }
        Some("no machine has both the processors and every licence".to_string())
    }

    /// Whether `job` can start on `slot` now: the machine is up, has the processors free (without
    /// space sharing: runs nothing) and every pooled licence has a free copy.
    pub fn fits_now(&self, job: &Job, slot: usize) -> bool {
        let s = &self.slots[slot];
        if !s.up
            || job.procs > s.free
            || !memory_fits(job, s.free_memory_kb)
            || (!self.space_sharing && !s.jobs.is_empty())
        {
            return false;
        }
        job.licences.iter().all(|&l| match self.source(l, slot) {
            Some(Source::NodeLocked) => true,
            Some(Source::Pool) => self.pool(l).is_some_and(|p| p.in_use < p.copies),
            None => false,
        })
    }

    /// The job's run time on `slot` for a duration `d` measured on its reference machine (D12 #24).
    pub fn duration_on(&self, job: &Job, d: Duration, slot: usize) -> Duration {
        job.duration_on(d, &self.slots[slot].machine)
    }

    /// Processors of `slot` free at `t` if running jobs end at their predicted ends.
    pub fn free_procs_at(&self, slot: usize, t: Time) -> u32 {
        let s = &self.slots[slot];
        s.free
            + s.jobs
                .iter()
                .filter_map(|j| self.running.get(j))
                .filter(|a| a.end <= t)
                .map(|a| a.procs)
                .sum::<u32>()
    }

    /// Memory of `slot` free at `t` if running jobs end at their predicted ends (`None`: not
    /// known).
    pub fn free_memory_at(&self, slot: usize, t: Time) -> Option<u64> {
        let s = &self.slots[slot];
        let ending: u64 = (s.jobs.iter())
            .filter_map(|j| self.running.get(j))
            .filter(|a| a.end <= t)
            .map(|a| a.memory_kb)
            .sum();
        s.free_memory_kb.map(|free| free + ending)
    }

    /// Whether `slot` runs no job at `t` (predicted ends).
    pub fn idle_at(&self, slot: usize, t: Time) -> bool {
        self.slots[slot]
            .jobs
            .iter()
            .filter_map(|j| self.running.get(j))
            .all(|a| a.end <= t)
    }

    /// Free copies of a pooled licence at `t` (predicted ends); `u32::MAX` when there is no pool.
    pub fn free_copies_at(&self, licence: LicenceId, t: Time) -> u32 {
        match self.pool(licence) {
            None => u32::MAX,
            Some(p) => {
                let ending = p
                    .holders
                    .iter()
                    .filter_map(|j| self.running.get(j))
                    .filter(|a| a.end <= t)
                    .count() as u32;
                p.copies.saturating_sub(p.in_use) + ending
            }
        }
    }

    /// The earliest time ≥ `now` at which `job` could start on `slot` if running jobs end at their
    /// predicted ends and nothing else starts; `None` when it never can (machine down or not
    /// eligible).
    pub fn earliest_start(&self, job: &Job, slot: usize, now: Time) -> Option<Time> {
        if !self.slots[slot].up || !self.can_ever_run(job, slot) {
            return None;
        }
        let pooled: Vec<LicenceId> = job
            .licences
            .iter()
            .copied()
            .filter(|&l| self.source(l, slot) == Some(Source::Pool))
            .collect();
        // Candidate instants: now and every predicted end of a job on the machine or holding one
        // of the pooled licences.
        let mut times = self.ends_touching(slot, &pooled);
        times.push(now);
        times.retain(|&t| t >= now);
        times.sort_unstable();
        times.dedup();
        times.into_iter().find(|&t| {
            let procs_ok = if self.space_sharing {
                self.free_procs_at(slot, t) >= job.procs
            } else {
                self.idle_at(slot, t)
            };
            procs_ok
                && memory_fits(job, self.free_memory_at(slot, t))
                && pooled.iter().all(|&l| self.free_copies_at(l, t) >= 1)
        })
    }

    /// The pooled licences `job` takes on `slot` (its licences that are not node-locked there).
    pub fn pooled_licences(&self, job: &Job, slot: usize) -> Vec<LicenceId> {
        job.licences
            .iter()
            .copied()
            .filter(|&l| self.source(l, slot) == Some(Source::Pool))
            .collect()
    }

    /// Marks a machine up or down; unknown machines are ignored.
    pub fn set_up(&mut self, machine: MachineId, up: bool) {
        if let Some(s) = self.slot_of(machine) {
            self.slots[s].up = up;
        }
    }
}

/// Whether `job`'s memory fits in `available` KiB (`None`: not known, so it fits).
fn memory_fits(job: &Job, available: Option<u64>) -> bool {
    match (job.memory_kb, available) {
        (Some(need), Some(have)) => need <= have,
        _ => true,
    }
}
