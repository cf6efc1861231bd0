//! Minimal Requirements as bit sets (spec `two-level-grid-scheduler.md` D2.3; the `M_Aff_i` of
//! D7.1): for each licence, the machines where a copy can be activated (node-locked there, or a
//! suitable pool with copies), one bit per slot. A job's eligible machines are then the AND of its
//! licences' sets, filtered by processors: `O(L · M / 64)` words per job instead of a licence
//! lookup per (job, machine) pair, which the Convergent Scheduling matrix does for every queued
//! job at every event. Built once with the [`ClusterState`] (machines and pools do not change).

use super::ClusterState;
use crate::model::Job;

/// The licence sets of one cluster state (machines up or down alike: `can_ever_run` semantics).
#[derive(Clone, Debug, Default)]
pub(super) struct Eligibility {
    words: usize,
    slots: usize,
    /// Per licence index, the slots where it can be activated.
    by_licence: Vec<Vec<u64>>,
    procs: Vec<u32>,
    /// Per slot, its machine's memory (KiB), when known.
    memory: Vec<Option<u64>>,
}

impl Eligibility {
    /// The sets of `state`'s machines and licences.
    pub(super) fn new(state: &ClusterState) -> Eligibility {
        let slots = state.slots.len();
        let words = slots.div_ceil(64);
        let nlic = state.licence_slots();
        let by_licence = (0..nlic)
            .map(|l| {
                let mut set = vec![0u64; words];
                let licence = crate::model::LicenceId(l as u16);
                for s in 0..slots {
                    if state.source(licence, s).is_some() {
                        set[s / 64] |= 1 << (s % 64);
                    }
                }
                set
            })
            .collect();
        Eligibility {
            words,
            slots,
            by_licence,
            procs: state.slots.iter().map(|s| s.machine.procs).collect(),
            memory: state.slots.iter().map(|s| s.machine.memory_kb).collect(),
        }
    }

    /// The slots where `job` can ever run (processors, memory and every licence), ascending: the same as
    /// filtering every slot by [`ClusterState::can_ever_run`]. No allocation: each word is the AND
    /// of the job's licence sets.
    pub(super) fn slots_for(&self, job: &Job, out: &mut Vec<usize>) {
        out.clear();
        if job
            .licences
            .iter()
            .any(|l| l.index() >= self.by_licence.len())
        {
            return;
        }
        for w in 0..self.words {
            let mut b = job
                .licences
                .iter()
                .fold(u64::MAX, |acc, l| acc & self.by_licence[l.index()][w]);
            while b != 0 {
                let s = w * 64 + b.trailing_zeros() as usize;
                b &= b - 1;
                if s < self.slots
                    && job.procs <= self.procs[s]
                    && super::memory_fits(job, self.memory[s])
                {
                    out.push(s);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{LicenceId, LicencePool, Machine, MachineId};
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn the_sets_agree_with_can_ever_run() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for _ in 0..60 {
            let n = rng.random_range(1..150u32);
            let nlic = rng.random_range(0..6u16);
            let machines: Vec<Machine> = (0..n)
                .map(|i| {
                    let procs = rng.random_range(1..9);
                    let mut m = Machine::new(MachineId(i), "m", procs, 100);
                    m.memory_kb = rng.random_bool(0.5).then(|| rng.random_range(1..5) * 1000);
                    m.node_locked = (0..nlic)
                        .filter(|_| rng.random_bool(0.1))
                        .map(LicenceId)
                        .collect();
                    m
                })
                .collect();
            let mut pools: Vec<LicencePool> = Vec::new();
            for l in 0..nlic {
                if rng.random_bool(0.8) {
                    pools.push(LicencePool {
                        licence: LicenceId(l),
                        copies: rng.random_range(0..4),
                        machines: (0..n)
                            .filter(|_| rng.random_bool(0.5))
                            .map(MachineId)
                            .collect(),
                    });
                }
            }
            let state = ClusterState::from_parts(machines, &pools, false).unwrap();
            let mut out = Vec::new();
            for k in 0..40 {
                let procs = rng.random_range(1..10);
                let mut job = Job::new(k, 0, procs, 10, 10);
                job.memory_kb = rng.random_bool(0.5).then(|| rng.random_range(1..5) * 1000);
                // Sometimes a licence the cluster does not know.
                job.licences = (0..nlic + 1)
                    .filter(|_| rng.random_bool(0.3))
                    .map(LicenceId)
                    .collect();
                state.eligible_slots(&job, &mut out);
                let want: Vec<usize> = (0..n as usize)
                    .filter(|&s| state.can_ever_run(&job, s))
                    .collect();
                assert_eq!(out, want, "job {job:?}");
            }
        }
    }
}
