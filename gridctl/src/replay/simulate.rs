//! The pure simulation of a replay: the grid description `gridctl up` starts, turned into the
//! simulator's platform through the services' own configuration code (each site's local
//! scheduler configuration gives its cluster and policy; the meta-scheduler's gives the grid
//! runner, built by the meta-scheduler's own `Decider` as a fresh live one builds it: classifier,
//! dispatch strategy, the sites' limits, co-allocation and site-down settings), then the scaled
//! jobs run through gridsim's platform engine, which drives that grid runner and the same cluster
//! runner as the live local schedulers (spec `two-level-grid-scheduler.md` D3–D4: classification
//! at submission, dispatch, one local policy per cluster; Streit, thesis §6.3: co-allocation).

use super::Outcome;
use super::reservations::Asked;
use crate::up::grid_file::GridFile;
use gridsched_core::grid::ReservationRequest;
use gridsched_core::model::{
    ClusterId, Job, JobId, LicenceId, LicenceType, MachineId, Platform, Site, SiteId,
};
use gridsched_core::policy::Policy;
use gridsched_core::runner::{ClusterRunner, Effect};
use gridsim::platform::{
    GridEvents, PlatformHooks, PlatformRecord, ReservationAsk, simulate_platform_with,
};
use meta_scheduler::MetaConfig;
use std::collections::HashMap;
use std::path::Path;

/// The grid as the simulator sees it.
pub struct SimGrid {
    /// All sites' clusters, in the grid file's order (cluster `i` = site `i`).
    pub platform: Platform,
    policies: Vec<Box<dyn Policy>>,
    meta: MetaConfig,
}

impl SimGrid {
    /// Builds the grid of `grid` from the configurations its services would be given.
    pub fn new(grid: &GridFile) -> anyhow::Result<SimGrid> {
        let dir = Path::new("/nonexistent");
        let mut platform = Platform::default();
        let mut configs = Vec::with_capacity(grid.sites.len());
        for (i, s) in grid.sites.iter().enumerate() {
            let cfg = local_scheduler::Config::from_toml(&grid.local_toml(i, dir))
                .map_err(|e| anyhow::anyhow!("site `{}`: {e:#}", s.name))?;
            add_cluster(&mut platform, &cfg.platform()?, i);
            configs.push(cfg);
        }
        platform.validate()?;
        let policies = configs
            .iter()
            .enumerate()
            .map(|(i, c)| {
                c.policy
                    .build(&platform, ClusterId(i as u32))
                    .map_err(|e| anyhow::anyhow!("site `{}`: policy: {e}", grid.sites[i].name))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let endpoints: Vec<String> = grid.sites.iter().map(|_| "127.0.0.1:1".into()).collect();
        let meta = MetaConfig::from_toml(&grid.meta_toml("127.0.0.1:0", None, dir, &endpoints))?;
        Ok(SimGrid {
            platform,
            policies,
            meta,
        })
    }

    /// After how long the meta-scheduler marks down a site it cannot reach (milliseconds).
    pub fn site_down_after_ms(&self) -> u64 {
        self.meta.links.site_down_after_ms
    }

    /// The id of licence `name` in the platform's catalogue.
    pub fn licence(&self, name: &str) -> Option<LicenceId> {
        self.platform.licence_by_name(name)
    }

    /// Runs `jobs` (their licences already in the platform's catalogue), losing site `s` at
    /// second `t` for each `(t, s)` of `lost`, and gives each job's outcome, in job order, and
    /// the refusals.
    pub fn run(
        self,
        jobs: Vec<Job>,
        lost: &[(i64, usize)],
        reservations: &[Asked],
    ) -> anyhow::Result<(Vec<Outcome>, Vec<String>)> {
        let n = jobs.len();
        let submits: Vec<i64> = jobs.iter().map(|j| j.submit).collect();
        let events = GridEvents {
            down_after_ms: self.meta.links.site_down_after_ms,
            lost: lost
                .iter()
                .map(|&(t, s)| (t, ClusterId(s as u32)))
                .collect(),
            reservations: reservations
                .iter()
                .map(|a| ReservationAsk {
                    at: a.at,
                    name: a.name,
                    request: ReservationRequest {
                        site: a.site_name.clone(),
                        procs: a.procs,
                        start: a.start,
                        end: a.end,
                        user: a.user,
                    },
                })
                .collect(),
            // The simulation stands for the live grid: its order within a second.
            live_order: true,
            cancels: Vec::new(),
            workflows: Vec::new(),
        };
        // The grid runner the live meta-scheduler builds from the same configuration.
        let (config, _) = meta_scheduler::decide::grid_config(&self.meta, 0);
        let mut records: Vec<PlatformRecord> = Vec::with_capacity(n);
        let mut record = |r: &PlatformRecord| records.push(r.clone());
        // Each job's first start at each site (a split job's fragments start apart when one of
        // their sites is lost).
        let mut started: HashMap<(u64, usize), i64> = HashMap::new();
        let mut pass = |t: i64, c: ClusterId, effects: &[Effect], _: &ClusterRunner| {
            for e in effects {
                if let Effect::Start(s) = e {
                    started.entry((s.job.0, c.index())).or_insert(t);
                }
            }
        };
        let mut refusals: Vec<(JobId, String)> = Vec::new();
        let mut refused = |job: JobId, why: &str| refusals.push((job, why.to_owned()));
        let hooks = PlatformHooks {
            record: Some(&mut record),
            pass: events.loses().then_some(&mut pass as _),
            refused: Some(&mut refused),
        };
        let report = simulate_platform_with(
            &self.platform,
            self.policies,
            config,
            jobs.into_iter().map(Ok::<_, std::convert::Infallible>),
            hooks,
            &events,
        )
        .map_err(|e| anyhow::anyhow!("simulation: {e}"))?;
        let mut out: Vec<Outcome> = (1..=n as u64).map(Outcome::refused).collect();
        for (job, why) in refusals {
            out[(job.0 - 1) as usize].note = why;
        }
        // What a lost site still held at the end: the jobs it ran, and those it kept (no other
        // site could take them). A job it started and finished before is recorded below.
        for &(job, site) in &report.stats.lost_jobs {
            let i = (job.0 - 1) as usize;
            let o = &mut out[i];
            o.site = Some(site.index());
            o.submit = Some(submits[i]);
            o.start = started.get(&(job.0, site.index())).copied();
            o.lost = true;
            o.note = format!(
                "lost with site {}",
                self.platform.clusters[site.index()].name
            );
        }
        for r in records {
            let o = &mut out[(r.id.0 - 1) as usize];
            o.site = Some(r.cluster.index());
            o.submit = Some(r.submit);
            o.start = Some(r.start);
            o.end = Some(r.end);
            o.completed = true;
            o.lost = false;
            o.note.clear();
        }
        Ok((out, report.stats.rejections))
    }
}

/// Appends the one cluster of a local scheduler's platform as cluster (and site) `i`, its
/// machines renumbered after those already there and its licences mapped by name into the grid's
/// catalogue, in order of first appearance (as the meta-scheduler numbers them).
fn add_cluster(grid: &mut Platform, local: &Platform, i: usize) {
    let cluster = ClusterId(i as u32);
    let base = grid.machines.len() as u32;
    let mut lic = |l: LicenceId| -> LicenceId {
        let name = &local.licences[usize::from(l.0)].name;
        match grid.licences.iter().position(|t| &t.name == name) {
            Some(p) => LicenceId(p as u16),
            None => {
                grid.licences.push(LicenceType { name: name.clone() });
                LicenceId((grid.licences.len() - 1) as u16)
            }
        }
    };
    let remap = |m: MachineId| MachineId(base + m.0);
    let mut c = local.clusters[0].clone();
    let machines: Vec<_> = local
        .machines
        .iter()
        .map(|m| {
            let mut m = m.clone();
            m.id = remap(m.id);
            m.cluster = cluster;
            m.node_locked = m.node_locked.iter().map(|&l| lic(l)).collect();
            m
        })
        .collect();
    for p in &mut c.pools {
        p.licence = lic(p.licence);
        p.machines = p.machines.iter().map(|&m| remap(m)).collect();
    }
    c.id = cluster;
    c.site = SiteId(i as u32);
    c.machines = c.machines.iter().map(|&m| remap(m)).collect();
    grid.sites.push(Site {
        id: SiteId(i as u32),
        name: local.sites[0].name.clone(),
        clusters: vec![cluster],
    });
    grid.machines.extend(machines);
    grid.clusters.push(c);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::up::grid_file::DEFAULT;

    #[test]
    fn the_default_grid_becomes_one_platform_in_site_order() {
        let g = SimGrid::new(&GridFile::parse(DEFAULT).unwrap()).unwrap();
        let p = &g.platform;
        let names: Vec<_> = p.clusters.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["alpha", "beta", "gamma", "delta"]);
        let procs: Vec<u32> = p.machines.iter().map(|m| m.procs).collect();
        assert_eq!(procs, [8, 8, 16, 4, 4, 4, 4, 16]);
        assert_eq!(p.clusters[1].machines, [MachineId(2), MachineId(3)]);
        // matlab is alpha's, then ansys is new at beta; beta's matlab pool is the same licence.
        assert_eq!(
            (g.licence("matlab"), g.licence("ansys")),
            (Some(LicenceId(0)), Some(LicenceId(1)))
        );
        let beta: Vec<_> = p.clusters[1]
            .pools
            .iter()
            .map(|x| (x.licence, x.copies, x.machines.clone()))
            .collect();
        assert_eq!(
            beta,
            [
                (LicenceId(1), 1, vec![MachineId(2), MachineId(3)]),
                (LicenceId(0), 1, vec![MachineId(2), MachineId(3)])
            ]
        );
        assert_eq!(g.policies.len(), 4);
        assert!(g.policies[1].describe().starts_with("fb-mod"));
        assert!(g.policies[3].takes_reservations(), "delta plans");
    }

    /// The simulation splits a job wider than every site as the live grid does (`gridctl up`'s
    /// grid: at 10 % over beta 16 + delta 16 + alpha 8, started together, its run 50 → 55 s) and
    /// refuses one wider than all of them together, as the live door does.
    #[test]
    fn a_wide_job_is_co_allocated_in_the_simulation_as_live() {
        let g = SimGrid::new(&GridFile::parse(DEFAULT).unwrap()).unwrap();
        let jobs = vec![Job::new(1, 0, 40, 100, 50), Job::new(2, 3, 50, 100, 50)];
        let (out, refusals) = g.run(jobs, &[], &[]).unwrap();
        let o = &out[0];
        assert!(o.completed, "{o:?} {refusals:?}");
        assert_eq!((o.site, o.start, o.end), (Some(1), Some(0), Some(55)));
        assert!(out[1].was_refused() || !out[1].completed, "{:?}", out[1]);
        assert_eq!(refusals.len(), 1, "{refusals:?}");
        assert!(refusals[0].contains("50 processors"), "{refusals:?}");
    }
}
