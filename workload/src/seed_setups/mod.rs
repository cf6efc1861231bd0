//! The synthetic set-ups of the two-level scheduler's experiments (spec
//! `two-level-grid-scheduler.md` D8 generator semantics, D9.1 Table 1, D9.2 Table 4 and the MKP
//! set-up, D9.3/D9.4 Tables 6/7; ambiguities D12 #25–#27, #37).
//!
//! A [`SetupParams`] holds the uniform ranges of one table; [`SetupParams::platform`] draws the
//! machines and licence pools, [`SetupParams::jobs`] the job stream for one mean inter-arrival time.
//! Both are seeded and deterministic: the same parameters and seed give the same platform and
//! jobs bit for bit (ChaCha8, uniforms made from the raw 64-bit outputs, so nothing depends on
//! `rand`'s distribution code; separate streams for the platform and the jobs).
//!
//! Readings adopted (D12):
//! * every range is uniform and inclusive; times are integer ticks (#37);
//! * licence needs: each (job, licence type) pair is needed with probability `licence_need` (#25;
//!   the per-job reading is [`LicenceNeeds::PerJob`]);
//! * licence suitability: each (licence, machine) pair is suitable with probability
//!   `licence_suitability`; a licence suitable nowhere in a cluster is made suitable on one machine
//!   drawn at random, so that every pool exists;
//! * licence copies per cluster: `max(1, round(r × #suitable machines))`, `r` uniform in the ratio
//!   range, one draw per (cluster, licence) (#26);
//! * `deadline = submit + estimate + margin` for all but a `no_deadline` share of the jobs (30 % in
//!   every set-up, including §4.1, #27);
//! * inter-arrival times are exponential with mean `Ta` (Ta = 0: all jobs at time 0); submit times
//!   are the integer part of the running sum;
//! * a drawn job that no machine of the platform could ever run (processors and licences
//!   together) is drawn again (at most 100 times, then its licences are dropped), so every job of a
//!   stream is runnable — the seed's simulator "processes all jobs".

mod draw;
#[cfg(test)]
mod tests;

use draw::Uniform;
use gridsched_core::model::{
    Cluster, ClusterId, InputRef, Job, JobId, LicenceId, LicencePool, LicenceType, Machine,
    MachineId, Platform, Site, SiteId,
};
use serde::{Deserialize, Serialize};

/// An inclusive range.
pub type Range<T> = (T, T);

/// How licence needs are drawn (D12 #25).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum LicenceNeeds {
    /// Each (job, licence type) with probability `licence_need` (recommended).
    #[default]
    PerLicence,
    /// A job needs one licence type (uniform) with probability `licence_need`.
    PerJob,
}

/// The generation ranges of one set-up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetupParams {
    /// Short name (`table1`, ...).
    pub name: String,
    /// Machines per cluster.
    pub clusters: Vec<u32>,
    /// Whether machines are space-shared.
    pub space_sharing: bool,
    /// Licence types.
    pub licences: u16,
    /// Jobs per stream.
    pub jobs: u64,
    /// Mean inter-arrival times of the streams.
    pub inter_arrivals: Vec<f64>,
    /// Job estimate (exact run time on the job's benchmark machine).
    pub estimate: Range<i64>,
    /// Job benchmark score.
    pub job_benchmark: Range<u32>,
    /// Machine benchmark score.
    pub machine_benchmark: Range<u32>,
    /// Deadline margin.
    pub margin: Range<i64>,
    /// Job processors.
    pub job_cpus: Range<u32>,
    /// Machine processors.
    pub machine_cpus: Range<u32>,
    /// Input data size, when the set-up has one (CS).
    pub input: Option<Range<u64>>,
    /// Probability of a licence need.
    pub licence_need: f64,
    /// How needs are drawn.
    #[serde(default)]
    pub licence_needs: LicenceNeeds,
    /// Range of the copies-to-suitable-machines ratio.
    pub licence_ratio: Range<f64>,
    /// Probability that a licence is suitable on a machine.
    pub licence_suitability: f64,
    /// Share of jobs without deadline.
    pub no_deadline: f64,
}

impl SetupParams {
    /// §4.1 Flexible Backfilling (D9.1, Table 1): 100 machines, 20 licences, 1,000 jobs,
    /// Ta ∈ {4, 6, 12, 24, 48}, one job per machine.
    pub fn table1() -> SetupParams {
        SetupParams {
            name: "table1".into(),
            clusters: vec![100],
            space_sharing: false,
            licences: 20,
            jobs: 1_000,
            inter_arrivals: vec![4.0, 6.0, 12.0, 24.0, 48.0],
            estimate: (500, 3_000),
            job_benchmark: (100, 500),
            machine_benchmark: (100, 500),
            margin: (30, 250),
            job_cpus: (1, 8),
            machine_cpus: (1, 8),
            input: None,
            licence_need: 0.30,
            licence_needs: LicenceNeeds::PerLicence,
            licence_ratio: (0.50, 0.70),
            licence_suitability: 0.90,
            no_deadline: 0.30,
        }
    }

    /// §4.2 Convergent Scheduling (D9.2, Table 4): 150 machines, 20 licences, 1,500 jobs,
    /// Ta ∈ {4, 6, 8, 10, 12, 16, 20}, one job per machine.
    pub fn table4() -> SetupParams {
        SetupParams {
            name: "table4".into(),
            clusters: vec![150],
            jobs: 1_500,
            inter_arrivals: vec![4.0, 6.0, 8.0, 10.0, 12.0, 16.0, 20.0],
            job_benchmark: (200, 600),
            machine_benchmark: (200, 600),
            margin: (25, 150),
            input: Some((100, 800)),
            licence_need: 0.20,
            licence_ratio: (0.55, 0.65),
            ..SetupParams::table1()
        }
    }

    /// §4.2 MKP evaluation (D9.2): 100 machines, 40 licences, 1,000 jobs, Ta = 10, the given
    /// licence ratio range (the seed sweeps [40–45] … [55–60] %).
    pub fn mkp(ratio: Range<f64>) -> SetupParams {
        SetupParams {
            name: "mkp".into(),
            clusters: vec![100],
            licences: 40,
            jobs: 1_000,
            inter_arrivals: vec![10.0],
            licence_ratio: ratio,
            ..SetupParams::table4()
        }
    }

    /// §4.3 two-level (D9.3/D9.4, Tables 6/7): 4 clusters of 120/60/30/15 machines, space
    /// sharing, 20 licences, 5,000 jobs, Ta ∈ {0, 5, 10, 15}.
    pub fn table6() -> SetupParams {
        SetupParams {
            name: "table6".into(),
            clusters: vec![120, 60, 30, 15],
            space_sharing: true,
            licences: 20,
            jobs: 5_000,
            inter_arrivals: vec![0.0, 5.0, 10.0, 15.0],
            estimate: (8_000, 10_000),
            job_benchmark: (100, 500),
            machine_benchmark: (100, 500),
            margin: (1_500, 5_500),
            job_cpus: (1, 8),
            machine_cpus: (4, 32),
            input: None,
            licence_need: 0.30,
            licence_needs: LicenceNeeds::PerLicence,
            licence_ratio: (0.50, 0.70),
            licence_suitability: 1.0,
            no_deadline: 0.30,
        }
    }

    /// A preset by name: `table1`, `table4`, `mkp` (ratio 40–45 %), `table6`.
    pub fn preset(name: &str) -> Option<SetupParams> {
        Some(match name {
            "table1" => SetupParams::table1(),
            "table4" => SetupParams::table4(),
            "mkp" => SetupParams::mkp((0.40, 0.45)),
            "table6" => SetupParams::table6(),
            _ => return None,
        })
    }

    /// Draws the platform (stream 0 of `seed`): one site, one cluster per entry of `clusters`.
    pub fn platform(&self, seed: u64) -> Platform {
        let mut u = Uniform::new(seed, 0);
        let mut p = Platform {
            licences: (0..self.licences)
                .map(|i| LicenceType {
                    name: format!("lic{i:02}"),
                })
                .collect(),
            ..Platform::default()
        };
        for (ci, &count) in self.clusters.iter().enumerate() {
            let cid = ClusterId(ci as u32);
            let first = p.machines.len() as u32;
            for k in 0..count {
                let mut m = Machine::new(
                    MachineId(first + k),
                    &format!("c{ci}-m{k:03}"),
                    u.int(self.machine_cpus.0.into(), self.machine_cpus.1.into()) as u32,
                    u.int(
                        self.machine_benchmark.0.into(),
                        self.machine_benchmark.1.into(),
                    ) as u32,
                );
                m.cluster = cid;
                p.machines.push(m);
            }
            let ids: Vec<MachineId> = (first..first + count).map(MachineId).collect();
            let mut pools = Vec::new();
            for l in 0..self.licences {
                let mut suitable: Vec<MachineId> = ids
                    .iter()
                    .copied()
                    .filter(|_| u.chance(self.licence_suitability))
                    .collect();
                if suitable.is_empty() && !ids.is_empty() {
                    suitable.push(ids[u.int(0, ids.len() as i64 - 1) as usize]);
                }
                let r = u.real(self.licence_ratio.0, self.licence_ratio.1);
                let copies = ((r * suitable.len() as f64).round() as u32).max(1);
                pools.push(LicencePool {
                    licence: LicenceId(l),
                    copies,
                    machines: suitable,
                });
            }
            p.clusters.push(Cluster {
                id: cid,
                name: format!("cluster{}", ci + 1),
                site: SiteId(0),
                machines: ids,
                pools,
                space_sharing: self.space_sharing,
            });
        }
        p.sites.push(Site {
            id: SiteId(0),
            name: "site".into(),
            clusters: (0..self.clusters.len() as u32).map(ClusterId).collect(),
        });
        p
    }

    /// Draws the job stream for mean inter-arrival time `ta` (stream 1 of `seed`), every job
    /// runnable on some machine of `platform`.
    pub fn jobs(&self, platform: &Platform, ta: f64, seed: u64) -> Vec<Job> {
        let mut u = Uniform::new(seed, 1);
        let mut clock = 0.0f64;
        let mut out = Vec::with_capacity(self.jobs as usize);
        for i in 0..self.jobs {
            if i > 0 && ta > 0.0 {
                clock += u.exponential(ta);
            }
            let submit = clock.floor() as i64;
            let mut job = self.draw_job(&mut u, i + 1, submit);
            let mut tries = 0;
            while !runnable(platform, &job) {
                tries += 1;
                if tries > 100 {
                    job.licences.clear();
                    if !runnable(platform, &job) {
                        job.procs = 1;
                    }
                    break;
                }
                job = self.draw_job(&mut u, i + 1, submit);
            }
            out.push(job);
        }
        out
    }

    fn draw_job(&self, u: &mut Uniform, id: u64, submit: i64) -> Job {
        let estimate = u.int(self.estimate.0, self.estimate.1);
        let mut job = Job::new(id, submit, 1, estimate, estimate);
        job.id = JobId(id);
        job.procs = u.int(self.job_cpus.0.into(), self.job_cpus.1.into()) as u32;
        job.benchmark =
            Some(u.int(self.job_benchmark.0.into(), self.job_benchmark.1.into()) as u32);
        let margin = u.int(self.margin.0, self.margin.1);
        if !u.chance(self.no_deadline) {
            job.deadline = Some(submit + estimate + margin);
        }
        job.licences = match self.licence_needs {
            LicenceNeeds::PerLicence => (0..self.licences)
                .filter(|_| u.chance(self.licence_need))
                .map(LicenceId)
                .collect(),
            LicenceNeeds::PerJob => {
                let l = u.int(0, i64::from(self.licences) - 1) as u16;
                if u.chance(self.licence_need) && self.licences > 0 {
                    vec![LicenceId(l)]
                } else {
                    Vec::new()
                }
            }
        };
        if let Some((lo, hi)) = self.input {
            job.inputs = vec![InputRef {
                machine: None,
                size: u.int(lo as i64, hi as i64) as u64,
            }];
        }
        job
    }
}

/// Whether some machine of the platform has the processors and can activate every licence.
pub fn runnable(platform: &Platform, job: &Job) -> bool {
    platform.clusters.iter().any(|c| {
        c.machines.iter().any(|&m| {
            let machine = &platform.machines[m.index()];
            machine.procs >= job.procs
                && job.licences.iter().all(|l| {
                    machine.has_node_locked(*l)
                        || c.pools
                            .iter()
                            .any(|p| p.licence == *l && p.machines.contains(&m))
                })
        })
    })
}
