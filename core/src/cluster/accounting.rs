//! Starting and ending jobs on a [`ClusterState`]: processor and licence-copy accounting that
//! refuses any oversubscription (spec `two-level-grid-scheduler.md` D2.3 hard constraint).

use super::{ClusterState, Source};
use crate::model::{ClusterId, Job, JobId, LicenceId, MachineId, Time};

/// What a running job holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Alloc {
    /// Its machine (slot).
    pub slot: usize,
    /// Processors it occupies.
    pub procs: u32,
    /// Pool copies it holds.
    pub pooled: Vec<LicenceId>,
    /// Memory it holds on the machine, KiB (0 where the machine's memory is not known).
    pub memory_kb: u64,
    /// When it started.
    pub start: Time,
    /// Its predicted end.
    pub end: Time,
}

/// A request the cluster state refuses.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClusterError {
    /// The platform has no such cluster.
    #[error("unknown cluster {0}")]
    UnknownCluster(ClusterId),
    /// A machine id that is not part of the platform or cluster.
    #[error("unknown machine {0}")]
    UnknownMachine(MachineId),
    /// A cluster without machines.
    #[error("a cluster needs at least one machine")]
    NoMachine,
    /// A machine listed twice.
    #[error("machine {0} is listed twice")]
    DuplicateMachine(MachineId),
    /// Two pools of one licence.
    #[error("licence {0} has two pools")]
    DuplicatePool(LicenceId),
    /// The job is already running.
    #[error("job {0} is already running")]
    AlreadyRunning(JobId),
    /// Starting the job would oversubscribe a resource or break Minimal Requirements.
    #[error("job {job} cannot start on {machine}: {why}")]
    DoesNotFit {
        /// The job.
        job: JobId,
        /// The machine.
        machine: MachineId,
        /// The resource that is missing.
        why: String,
    },
}

impl ClusterState {
    /// Starts `job` on `slot` at `start`, predicted to end at `end`. Fails, changing nothing, when
    /// the job does not fit there now.
    pub fn start(
        &mut self,
        job: &Job,
        slot: usize,
        start: Time,
        end: Time,
    ) -> Result<(), ClusterError> {
        if self.running.contains_key(&job.id) {
            return Err(ClusterError::AlreadyRunning(job.id));
        }
        let machine = self.slots[slot].machine.id;
        if !self.fits_now(job, slot) {
            let s = &self.slots[slot];
            let why = if !s.up {
                "the machine is down".to_string()
            } else if !self.can_ever_run(job, slot) {
                "Minimal Requirements not met".to_string()
            } else if job.procs > s.free || (!self.space_sharing && !s.jobs.is_empty()) {
                format!("{} processors asked, {} free", job.procs, s.free)
            } else if !super::memory_fits(job, s.free_memory_kb) {
                format!(
                    "{} KiB of memory asked, {} KiB free",
                    job.memory_kb.unwrap_or(0),
                    s.free_memory_kb.unwrap_or(0)
                )
            } else {
                "no free licence copy".to_string()
            };
            return Err(ClusterError::DoesNotFit {
                job: job.id,
                machine,
                why,
            });
        }
        let mut pooled = Vec::new();
        for &l in &job.licences {
            if self.source(l, slot) == Some(Source::Pool) {
                let p = self.pools[l.index()]
                    .as_mut()
                    .expect("pool checked by fits_now");
                p.in_use += 1;
                p.holders.push(job.id);
                pooled.push(l);
            }
        }
        let s = &mut self.slots[slot];
        s.free -= job.procs;
        let memory_kb = match &mut s.free_memory_kb {
            Some(free) => {
                let m = job.memory_kb.unwrap_or(0);
                *free -= m;
                m
            }
            None => 0,
        };
        s.jobs.push(job.id);
        self.running.insert(
            job.id,
            Alloc {
                slot,
                procs: job.procs,
                pooled,
                memory_kb,
                start,
                end,
            },
        );
        Ok(())
    }

    /// Ends (or suspends) a running job, releasing what it holds; `None` when it is not running.
    pub fn finish(&mut self, job: JobId) -> Option<Alloc> {
        let a = self.running.remove(&job)?;
        let s = &mut self.slots[a.slot];
        s.free += a.procs;
        if let Some(free) = &mut s.free_memory_kb {
            *free += a.memory_kb;
        }
        s.jobs.retain(|j| *j != job);
        for l in &a.pooled {
            if let Some(p) = self.pools[l.index()].as_mut() {
                p.in_use -= 1;
                p.holders.retain(|j| *j != job);
            }
        }
        Some(a)
    }

    /// Moves a running job's predicted end (an overrun notice); unknown jobs are ignored.
    pub fn set_end(&mut self, job: JobId, end: Time) {
        if let Some(a) = self.running.get_mut(&job) {
            a.end = end;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{LicencePool, Machine};

    fn cluster(space_sharing: bool) -> ClusterState {
        let mut machines = vec![
            Machine::new(MachineId(0), "slow", 4, 100),
            Machine::new(MachineId(1), "fast", 8, 300),
            Machine::new(MachineId(2), "mid", 8, 200),
        ];
        machines[0].node_locked = vec![LicenceId(1)];
        let pools = [LicencePool {
            licence: LicenceId(0),
            copies: 1,
            machines: vec![MachineId(1), MachineId(2)],
        }];
        ClusterState::from_parts(machines, &pools, space_sharing).unwrap()
    }

    fn job(id: u64, procs: u32, lic: &[u16]) -> Job {
        let mut j = Job::new(id, 0, procs, 100, 100);
        j.licences = lic.iter().map(|&l| LicenceId(l)).collect();
        j
    }

    #[test]
    fn machines_are_ordered_fastest_first() {
        assert_eq!(cluster(true).by_speed(), &[1, 2, 0]);
    }

    #[test]
    fn minimal_requirements_and_licence_sources() {
        let c = cluster(true);
        let j = job(1, 2, &[0]);
        assert!(!c.can_ever_run(&j, 0), "pool not suitable on slow");
        assert!(c.can_ever_run(&j, 1) && c.can_ever_run(&j, 2));
        let nl = job(2, 2, &[1]);
        assert!(c.can_ever_run(&nl, 0) && !c.can_ever_run(&nl, 1));
        assert_eq!(c.offer(LicenceId(0)), 1);
        assert_eq!(c.offer(LicenceId(1)), 1);
        let wide = job(3, 9, &[]);
        let why = c.ineligibility(&wide).unwrap();
        assert!(
            why.starts_with("procs") && why.contains("runs a job on one machine"),
            "{why}"
        );
        let unknown = job(4, 1, &[7]);
        assert!(c.ineligibility(&unknown).unwrap().contains("licence lic7"));
        assert_eq!(c.ineligibility(&j), None);
    }

    #[test]
    fn licence_copies_are_never_oversubscribed() {
        let mut c = cluster(true);
        c.start(&job(1, 2, &[0]), 1, 0, 50).unwrap();
        let e = c.start(&job(2, 2, &[0]), 2, 0, 50).unwrap_err();
        assert!(e.to_string().contains("licence"), "{e}");
        assert_eq!(c.free_copies_at(LicenceId(0), 49), 0);
        assert_eq!(c.free_copies_at(LicenceId(0), 50), 1);
        assert_eq!(c.earliest_start(&job(2, 2, &[0]), 2, 0), Some(50));
        c.finish(JobId(1)).unwrap();
        c.start(&job(2, 2, &[0]), 2, 50, 90).unwrap();
        assert_eq!(c.pool(LicenceId(0)).unwrap().in_use, 1);
    }

    /// Memory is a consumable of its machine: two jobs whose memory together exceeds it do not
    /// run there at once, and one asking for more than any machine has can never run.
    #[test]
    fn memory_is_held_on_its_machine() {
        let mut c = cluster(true);
        let mut machines: Vec<Machine> = c.slots().iter().map(|s| s.machine.clone()).collect();
        machines[1].memory_kb = Some(1000);
        c = ClusterState::from_parts(machines, &[], true).unwrap();
        let with = |id, kb| {
            let mut j = job(id, 1, &[]);
            j.memory_kb = Some(kb);
            j
        };
        c.start(&with(1, 600), 1, 0, 50).unwrap();
        assert!(!c.fits_now(&with(2, 500), 1));
        assert!(c.fits_now(&with(2, 400), 1));
        assert!(
            c.fits_now(&with(2, 5000), 2),
            "memory not known there: not checked"
        );
        assert_eq!(c.free_memory_at(1, 49), Some(400));
        assert_eq!(c.earliest_start(&with(2, 500), 1, 0), Some(50));
        let e = c.start(&with(2, 500), 1, 0, 50).unwrap_err();
        assert!(
            e.to_string()
                .contains("500 KiB of memory asked, 400 KiB free"),
            "{e}"
        );
        assert!(!c.can_ever_run(&with(3, 1001), 1));
        c.finish(JobId(1)).unwrap();
        assert_eq!(c.slots()[1].free_memory_kb, Some(1000));
        let mut all: Vec<Machine> = c.slots().iter().map(|s| s.machine.clone()).collect();
        for m in &mut all {
            m.memory_kb = Some(1000);
        }
        let c = ClusterState::from_parts(all, &[], true).unwrap();
        let why = c.ineligibility(&with(4, 2000)).unwrap();
        assert_eq!(
            why,
            "memory_kb: 2000 KiB asked, the largest machine has 1000 KiB"
        );
    }

    #[test]
    fn processors_with_and_without_space_sharing() {
        let mut c = cluster(true);
        c.start(&job(1, 6, &[]), 1, 0, 10).unwrap();
        assert!(c.fits_now(&job(2, 2, &[]), 1));
        assert!(!c.fits_now(&job(3, 3, &[]), 1));
        assert_eq!(c.free_procs_at(1, 10), 8);
        assert_eq!(c.earliest_start(&job(3, 3, &[]), 1, 0), Some(10));

        let mut x = cluster(false);
        x.start(&job(1, 1, &[]), 1, 0, 10).unwrap();
        assert!(!x.fits_now(&job(2, 1, &[]), 1), "one job per machine");
        assert_eq!(x.earliest_start(&job(2, 1, &[]), 1, 3), Some(10));
        assert!(x.start(&job(2, 1, &[]), 1, 0, 10).is_err());
        let a = x.finish(JobId(1)).unwrap();
        assert_eq!((a.slot, a.procs), (1, 1));
        assert!(x.finish(JobId(1)).is_none());
    }

    #[test]
    fn down_machines_take_no_work() {
        let mut c = cluster(true);
        c.set_up(MachineId(1), false);
        assert!(!c.fits_now(&job(1, 1, &[]), 1));
        assert_eq!(c.earliest_start(&job(1, 1, &[]), 1, 0), None);
        assert_eq!(c.total_procs(), 12);
    }
}
