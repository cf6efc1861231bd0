//! Random heterogeneous clusters (space sharing on/off, floating pools, node-locked licences, a
//! machine outage) and random workloads through every list scheduler of a cluster (`fb-unmod`,
//! `fb-mod`, `fb-meta`, `easy` = BF_FCFS, `fcfs`, `edf`; spec `two-level-grid-scheduler.md`
//! D2.2–D2.3, D6.2–D6.3, D9.2) and the schedule-based `eg-edf` and `eg-edf-tabu` (D10.2, also
//! in our reading of a gap: `eg-edf-now`, `eg-edf-tabu-now`), driven
//! by a small event loop of this file (which also calls a policy back at its planned starts). An independent
//! validator — its own counters, not `ClusterState` — checks every start: the machine is up, its
//! processors and each pool's copies are never oversubscribed, a machine without space sharing runs
//! one job, a licence is only used where it can be activated (node-locked there or a pool suitable
//! for that machine). On top: every accepted job ends, a job is rejected iff no machine can ever
//! run it, the reserved job of BF_UNMOD (also `fb-meta`) and BF_FCFS never starts later than its
//! first reservation (run time == estimate, no outage), EDF leaves no job waiting while a machine
//! that fits it is free, FCFS starts jobs in arrival order.

use gridsched_core::cluster::ClusterState;
use gridsched_core::model::{Job, JobId, LicenceId, LicencePool, Machine, MachineId, Time};
use gridsched_core::policy::{Decisions, Policy, PolicyConfig, Start};
use proptest::prelude::*;
use std::collections::{BTreeMap, HashMap};

/// The generated platform: machines (procs, benchmark, node-locked licences), pools, sharing.
#[derive(Clone, Debug)]
struct Setup {
    machines: Vec<Machine>,
    pools: Vec<LicencePool>,
    space_sharing: bool,
    /// A machine (index modulo the machine count) down from the first time to the second.
    outage: Option<(usize, Time, Time)>,
}

fn setup() -> impl Strategy<Value = Setup> {
    let machine = (
        1u32..=8,
        prop::sample::select(vec![50u32, 100, 150, 300]),
        0u8..8,
    );
    let pool = (0u32..=2, 0u8..64);
    (
        prop::collection::vec(machine, 1..=5),
        prop::collection::vec(prop::option::of(pool), 3),
        any::<bool>(),
        prop::option::of((0usize..5, 0i64..150, 1i64..150)),
    )
        .prop_map(|(ms, pools, space_sharing, outage)| {
            let machines = ms
                .iter()
                .enumerate()
                .map(|(i, &(procs, bm, locked))| {
                    let mut m = Machine::new(MachineId(i as u32), &format!("m{i}"), procs, bm);
                    m.node_locked = (0..3u16)
                        .filter(|l| locked & (1 << l) != 0)
                        .map(LicenceId)
                        .collect();
                    m
                })
                .collect::<Vec<_>>();
            let pools = pools
                .iter()
                .enumerate()
                .filter_map(|(l, p)| {
                    let (copies, mask) = (*p)?;
                    Some(LicencePool {
                        licence: LicenceId(l as u16),
                        copies,
                        machines: (0..machines.len())
                            .filter(|i| mask & (1 << i) != 0)
                            .map(|i| MachineId(i as u32))
                            .collect(),
                    })
                })
                .collect();
            let outage = outage.map(|(m, down, len)| (m % machines.len(), down, down + len));
            Setup {
                machines,
                pools,
                space_sharing,
                outage,
            }
        })
}

fn workload() -> impl Strategy<Value = Vec<Job>> {
    let job = (
        0i64..150,
        1u32..=8,
        1i64..80,
        0u8..8,
        prop::option::of(0i64..400),
        prop::option::of(prop::sample::select(vec![50u32, 100, 300])),
    );
    prop::collection::vec(job, 1..30).prop_map(|v| {
        let mut jobs: Vec<Job> = v
            .into_iter()
            .map(|(submit, procs, est, lic, slack, bm)| {
                let mut j = Job::new(0, submit, procs, est, est);
                j.licences = (0..3u16)
                    .filter(|l| lic & (1 << l) != 0)
                    .map(LicenceId)
                    .collect();
                j.deadline = slack.map(|s| submit + s);
                j.benchmark = bm;
                j
            })
            .collect();
        jobs.sort_by_key(|j| j.submit);
        for (i, j) in jobs.iter_mut().enumerate() {
            j.id = JobId(i as u64);
        }
        jobs
    })
}

/// The validator's own view of the cluster: processors and jobs per machine, copies per pool.
struct Validator<'a> {
    setup: &'a Setup,
    used: Vec<u32>,
    jobs_on: Vec<u32>,
    up: Vec<bool>,
    copies: HashMap<LicenceId, u32>,
    /// Per running job: machine index and the pools it draws from.
    holds: HashMap<JobId, (usize, Vec<LicenceId>)>,
}

impl<'a> Validator<'a> {
    fn new(setup: &'a Setup) -> Self {
        let n = setup.machines.len();
        Validator {
            setup,
            used: vec![0; n],
            jobs_on: vec![0; n],
            up: vec![true; n],
            copies: HashMap::new(),
            holds: HashMap::new(),
        }
    }

    fn pool(&self, l: LicenceId) -> Option<&LicencePool> {
        self.setup.pools.iter().find(|p| p.licence == l)
    }

    /// The pools `job` draws from on machine `m`, or why a licence cannot be activated there.
    fn sources(&self, job: &Job, m: usize) -> Result<Vec<LicenceId>, String> {
        let machine = &self.setup.machines[m];
        let mut pooled = Vec::new();
        for &l in &job.licences {
            if machine.node_locked.contains(&l) {
                continue;
            }
            match self.pool(l) {
                Some(p) if p.machines.contains(&machine.id) => pooled.push(l),
                _ => return Err(format!("licence {l} cannot be activated on m{m}")),
            }
        }
        Ok(pooled)
    }

    fn can_ever_run(&self, job: &Job, m: usize) -> bool {
        job.procs <= self.setup.machines[m].procs
            && self.sources(job, m).is_ok_and(|pooled| {
                pooled
                    .iter()
                    .all(|&l| self.pool(l).is_some_and(|p| p.copies > 0))
            })
    }

    fn fits_now(&self, job: &Job, m: usize) -> bool {
        let free = self.setup.machines[m].procs - self.used[m];
        if !self.up[m] || job.procs > free || (!self.setup.space_sharing && self.jobs_on[m] > 0) {
            return false;
        }
        self.sources(job, m).is_ok_and(|pooled| {
            pooled.iter().all(|&l| {
                self.copies.get(&l).copied().unwrap_or(0) < self.pool(l).map_or(0, |p| p.copies)
            })
        })
    }

    fn start(&mut self, job: &Job, s: &Start) -> Result<usize, String> {
        let m = self
            .setup
            .machines
            .iter()
            .position(|x| x.id == s.machine)
            .ok_or_else(|| format!("{} started on unknown machine {}", job.id, s.machine))?;
        if s.procs != job.procs {
            return Err(format!("{} asked {} got {}", job.id, job.procs, s.procs));
        }
        if !self.fits_now(job, m) {
            return Err(format!(
                "{} does not fit on m{m}: up {}, used {}/{}, jobs {}, copies {:?}, sources {:?}",
                job.id,
                self.up[m],
                self.used[m],
                self.setup.machines[m].procs,
                self.jobs_on[m],
                self.copies,
                self.sources(job, m)
            ));
        }
        let pooled = self.sources(job, m)?;
        for &l in &pooled {
            *self.copies.entry(l).or_default() += 1;
        }
        self.used[m] += job.procs;
        self.jobs_on[m] += 1;
        self.holds.insert(job.id, (m, pooled));
        Ok(m)
    }

    fn end(&mut self, job: &Job) {
        let (m, pooled) = self.holds.remove(&job.id).expect("ends a running job");
        self.used[m] -= job.procs;
        self.jobs_on[m] -= 1;
        for l in pooled {
            *self.copies.get_mut(&l).expect("held") -= 1;
        }
    }
}

/// What a run produced: start time and machine index of every job, in start order.
struct Run {
    starts: Vec<(JobId, Time, usize)>,
}

fn policy(name: &str, setup: &Setup) -> Box<dyn Policy> {
    let cfg: PolicyConfig = serde_json::from_str(&format!(r#"{{"policy":"{name}"}}"#)).unwrap();
    let state = ClusterState::from_parts(setup.machines.clone(), &setup.pools, setup.space_sharing)
        .unwrap();
    cfg.build_cluster(state).unwrap()
}

/// Runs `jobs` through policy `name` (one scheduling pass per instant, after that instant's ends
/// and submissions), validating every start and the policy-specific properties.
fn run(name: &str, setup: &Setup, jobs: &[Job]) -> Result<Run, TestCaseError> {
    let mut p = policy(name, setup);
    let mut v = Validator::new(setup);
    let by_id: HashMap<JobId, &Job> = jobs.iter().map(|j| (j.id, j)).collect();
    let mut ends: BTreeMap<Time, Vec<JobId>> = BTreeMap::new();
    let mut first_res: HashMap<JobId, Time> = HashMap::new();
    let mut accepted = 0usize;
    let mut finished = 0usize;
    let mut out = Run { starts: Vec::new() };
    let mut next_submit = 0usize;
    let mut buf = Decisions::default();
    let mut last = Time::MIN;
    loop {
        let t_sub = jobs.get(next_submit).map(|j| j.submit);
        let t_end = ends.keys().next().copied();
        let t_wake = p.next_wakeup().filter(|&w| w > last);
        // The outage's instants count only while work remains.
        let t_out = setup
            .outage
            .into_iter()
            .flat_map(|(_, d, u)| [d, u])
            .filter(|&t| t > last && (t_sub.is_some() || t_end.is_some() || p.waiting_len() > 0))
            .min();
        let now = match [t_sub, t_end, t_out, t_wake].into_iter().flatten().min() {
            None => break,
            Some(t) => t,
        };
        last = now;
        if let Some((m, down, up)) = setup.outage
            && (now == down || now == up)
        {
            // At `down == up` the machine stays up (an empty outage).
            v.up[m] = now != down || down == up;
            p.set_machine_available(now, setup.machines[m].id, v.up[m]);
        }
        for id in ends.remove(&now).unwrap_or_default() {
            v.end(by_id[&id]);
            p.terminate(now, id);
            finished += 1;
        }
        while next_submit < jobs.len() && jobs[next_submit].submit == now {
            let j = &jobs[next_submit];
            let eligible = (0..setup.machines.len()).any(|m| v.can_ever_run(j, m));
            let r = p.submit(now, j);
            prop_assert_eq!(r.is_ok(), eligible, "{}: submit {:?} gave {:?}", name, j, r);
            accepted += usize::from(r.is_ok());
            next_submit += 1;
        }
        buf.clear();
        p.schedule(now, &mut buf);
        prop_assert!(
            buf.suspensions.is_empty() && buf.kills.is_empty(),
            "{name} never preempts"
        );
        for s in &buf.starts {
            let j = by_id[&s.job];
            prop_assert!(j.submit <= now);
            if let Some(&r) = first_res.get(&s.job) {
                prop_assert!(
                    now <= r,
                    "{}: {} reserved for {} started at {}",
                    name,
                    s.job,
                    r,
                    now
                );
            }
            let m = v
                .start(j, s)
                .map_err(|e| TestCaseError::fail(format!("{name} at {now}: {e}")))?;
            let run = j.duration_on(j.runtime.expect("set"), &setup.machines[m]);
            ends.entry(now + run.max(0)).or_default().push(j.id);
            out.starts.push((j.id, now, m));
        }
        // An outage may legitimately push a reservation back.
        if matches!(name, "fb-unmod" | "fb-meta" | "easy") && setup.outage.is_none() {
            for r in p.reservations() {
                first_res.entry(r.job).or_insert(r.start);
            }
        }
        if name == "edf" {
            for id in p.queue() {
                let j = by_id[&id];
                let free = (0..setup.machines.len()).find(|&m| v.fits_now(j, m));
                prop_assert!(free.is_none(), "edf at {now}: {id} waits, m{free:?} fits");
            }
        }
    }
    prop_assert_eq!(p.waiting_len(), 0, "{} stalled with waiting jobs", name);
    prop_assert_eq!(p.running_len(), 0);
    prop_assert_eq!(finished, accepted, "{}: every accepted job ends", name);
    Ok(out)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(160))]

    #[test]
    fn every_cluster_policy_respects_machines_and_licences(s in setup(), jobs in workload()) {
        for name in [
            "fb-unmod", "fb-mod", "fb-meta", "easy", "fcfs", "edf", "eg-edf", "eg-edf-tabu",
            "eg-edf-now", "eg-edf-tabu-now",
        ] {
            let r = run(name, &s, &jobs)?;
            if name == "fcfs" {
                // Arrival order = (submit, id) here; a start list in that order.
                let keys: Vec<(Time, JobId)> =
                    r.starts.iter().map(|(id, _, _)| (jobs[id.0 as usize].submit, *id)).collect();
                prop_assert!(keys.windows(2).all(|w| w[0] < w[1]), "fcfs order {keys:?}");
            }
        }
    }
}

/// A pool with no copy can activate nothing: a job whose only way to its licence is such a pool is
/// not eligible (it would wait forever).
#[test]
fn a_pool_without_copies_makes_nothing_eligible() {
    let s = Setup {
        machines: vec![Machine::new(MachineId(0), "m0", 4, 100)],
        pools: vec![LicencePool {
            licence: LicenceId(0),
            copies: 0,
            machines: vec![MachineId(0)],
        }],
        space_sharing: true,
        outage: None,
    };
    let mut j = Job::new(0, 0, 1, 10, 10);
    j.licences = vec![LicenceId(0)];
    for name in [
        "fb-unmod",
        "fb-mod",
        "easy",
        "fcfs",
        "edf",
        "eg-edf",
        "eg-edf-tabu",
        "eg-edf-now",
        "eg-edf-tabu-now",
    ] {
        assert!(policy(name, &s).submit(0, &j).is_err(), "{name}");
    }
}
