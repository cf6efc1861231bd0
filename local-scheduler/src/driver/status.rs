//! What a local scheduler shows of itself: the `Status` answer
//! (queue in the policy's order, running jobs with a multi-node job's parts, reservations,
//! licence pools, machines with what each job takes there) and the
//! Prometheus gauges refreshed on every tick. A held job (started by the policy, its start claim
//! not granted yet) is shown running with `awaiting_claim` and counts as waiting in the gauges.

use super::{Driver, JobRec};
use gridsched_core::Time;
use gridsched_core::model::{Job, JobId, MachineId};
use gridsched_proto::v1::{self, JobState};
use std::collections::BTreeMap;

impl Driver {
    /// Refreshes the gauges from the current state.
    pub(super) fn refresh_metrics(&self) {
        let Some((m, _)) = &self.metrics else { return };
        let mut queued: BTreeMap<u32, i64> = BTreeMap::new();
        let (mut running, mut held, mut suspended) = (0, 0, 0);
        let mut licences: BTreeMap<&str, i64> = BTreeMap::new();
        for r in self.jobs.values() {
            match r.state {
                JobState::Queued => *queued.entry(r.req.priority).or_default() += 1,
                JobState::Running => running += 1,
                JobState::Suspended => suspended += 1,
                _ => {}
            }
            held += i64::from(r.held.is_some());
            if r.state == JobState::Running || r.held.is_some() {
                for l in r.req.spec.iter().flat_map(|s| &s.licences) {
                    *licences.entry(l.as_str()).or_default() += 1;
                }
            }
        }
        let online = self.agents.iter().filter(|a| a.is_some()).count() as i64;
        m.show(crate::metrics::Gauges {
            queued,
            running,
            awaiting_claim: held,
            licences: self
                .cfg
                .licences
                .iter()
                .map(|pool| {
                    let n = licences.get(pool.name.as_str()).copied().unwrap_or(0);
                    (pool.name.clone(), n)
                })
                .collect(),
            online,
            suspended,
            policy: self.runner.policy().counters(),
        });
    }

    pub(super) fn status(&self, now: Time) -> v1::StatusResponse {
        let name = |m: MachineId| self.names.machine_name(m).unwrap_or("?").to_string();
        let lic_names = |j: &Job| -> Vec<String> {
            j.licences
                .iter()
                .filter_map(|l| self.names.licence_name(*l).map(str::to_string))
                .collect()
        };
        let urgency = |j: &Job| j.urgency.map_or(0, |u| v1::Urgency::from(u) as i32);
        // The policy's queue, then the jobs whose inputs are being staged in (not yet in it).
        let mut staging: Vec<&JobRec> = self.jobs.values().filter(|r| r.staging).collect();
        staging.sort_by_key(|r| r.req.job_id);
        let queue = self
            .runner
            .policy()
            .queue()
            .into_iter()
            .filter_map(|id| self.jobs.get(&id.0))
            .chain(staging)
            .map(|r| v1::QueuedJob {
                job_id: r.req.job_id,
                user: r
                    .req
                    .spec
                    .as_ref()
                    .map(|s| s.user.clone())
                    .unwrap_or_default(),
                processors: r.job.procs,
                estimate_s: r.job.estimate,
                priority: r.req.priority,
                enqueue_time: r.job.submit,
                licences: lic_names(&r.job),
                deadline: r.job.deadline,
                pending_reason: None,
                expected_start: None,
                urgency: urgency(&r.job),
                staging: r.staging.then(|| self.staging_progress(r)),
            })
            .collect();
        let mut running: Vec<v1::RunningJob> = self
            .jobs
            .values()
            .filter(|r| r.state == JobState::Running || r.held.is_some())
            .map(|r| v1::RunningJob {
                job_id: r.req.job_id,
                machine: r
                    .machine
                    .or(r.held.as_ref().map(|h| h.orders[0].0))
                    .map(name)
                    .unwrap_or_default(),
                processors: r.job.procs,
                start_time: r.start.or(r.held.as_ref().map(|h| h.since)).unwrap_or(0),
                predicted_end: match &r.held {
                    Some(h) => h.since + h.orders[0].1.wall_time_limit_s.unwrap_or(0),
                    None => self.runner.predicted_end(JobId(r.req.job_id)).unwrap_or(0),
                },
                kill_time: None,
                licences: lic_names(&r.job),
                awaiting_claim: r.held.is_some(),
                urgency: urgency(&r.job),
                estimate_s: Some(r.job.estimate),
                nodes: match &r.held {
                    Some(h) if h.orders.len() > 1 => h
                        .orders
                        .iter()
                        .map(|(m, o)| v1::NodeShare {
                            machine: name(*m),
                            processors: o.processors,
                            ended: false,
                        })
                        .collect(),
                    _ => r
                        .parts
                        .iter()
                        .map(|p| v1::NodeShare {
                            machine: name(p.node),
                            processors: p.procs,
                            ended: p.end.is_some(),
                        })
                        .collect(),
                },
            })
            .collect();
        running.sort_by_key(|r| r.job_id);
        let machines: Vec<v1::MachineInfo> = self
            .platform
            .machines
            .iter()
            .map(|m| {
                // What each running job takes here: all of it, or its part on this node (its
                // processors' share of the job's memory).
                let memory = |id: u64, procs: u32, of: u32| {
                    let kb = self
                        .jobs
                        .get(&id)
                        .and_then(|r| r.job.memory_kb)
                        .unwrap_or(0);
                    (u128::from(kb) * u128::from(procs) / u128::from(of.max(1))) as u64
                };
                let jobs: Vec<(u64, u32, u64)> = running
                    .iter()
                    .filter_map(|r| match r.nodes.is_empty() {
                        true => (r.machine == m.name)
                            .then(|| (r.job_id, r.processors, memory(r.job_id, 1, 1))),
                        false => r.nodes.iter().find(|n| n.machine == m.name).map(|n| {
                            let all = r.nodes.iter().map(|n| n.processors).sum();
                            (r.job_id, n.processors, memory(r.job_id, n.processors, all))
                        }),
                    })
                    .collect();
                let agent = self.agents[m.id.index()]
                    .as_ref()
                    .filter(|a| !a.placeholder);
                v1::MachineInfo {
                    name: m.name.clone(),
                    processors: m.procs,
                    benchmark: m.benchmark,
                    memory_kb: m.memory_kb,
                    node_locked_licences: m
                        .node_locked
                        .iter()
                        .filter_map(|l| self.names.licence_name(*l).map(str::to_string))
                        .collect(),
                    online: agent.is_some(),
                    agent_account: agent.map(|a| a.account.clone()).unwrap_or_default(),
                    separates_users: agent.is_some_and(|a| a.separates_users),
                    busy_processors: jobs.iter().map(|j| j.1).sum(),
                    busy_memory_kb: jobs.iter().map(|j| j.2).sum(),
                    running_jobs: jobs.iter().map(|j| j.0).collect(),
                }
            })
            .collect();
        let licence_pools = self.platform.clusters[0]
            .pools
            .iter()
            .map(|p| {
                let lname = self
                    .names
                    .licence_name(p.licence)
                    .unwrap_or("?")
                    .to_string();
                let holds = |placed: bool| {
                    self.jobs
                        .values()
                        .filter(|r| {
                            let on = r.state == JobState::Running || r.held.is_some();
                            on == placed && r.job.licences.contains(&p.licence)
                        })
                        .count() as u32
                };
                v1::LicencePoolState {
                    licence: lname,
                    copies: p.copies,
                    in_use: holds(true),
                    machines: p.machines.iter().map(|m| name(*m)).collect(),
                    requested_by_waiting: holds(false),
                }
            })
            .collect();
        let reservations = self
            .runner
            .policy()
            .reservations()
            .iter()
            .filter_map(|r| gridsched_proto::reservation_to_proto(r, &self.names).ok())
            .collect();
        v1::StatusResponse {
            cluster: self.cfg.cluster.clone(),
            site: self.cfg.site.clone(),
            policy: self.runner.policy().describe(),
            time: now,
            queue,
            running,
            reservations,
            licence_pools,
            next_wakeup: self.runner.next_wakeup(),
            advance_reservations: self.advance_reservations(now),
            users: self.cfg.users.describe(
                machines
                    .iter()
                    .filter(|m| m.online)
                    .map(|m| (m.name.as_str(), m.agent_account.as_str(), m.separates_users)),
            ),
            machines,
        }
    }
}
