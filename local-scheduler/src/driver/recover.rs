//! What a restarted local scheduler rebuilds from its store: the advance reservations still
//! ahead or in force (admitted again first, [`Driver::recover_reservations`]), the ended jobs from the event log (a
//! job dropped as withdrawn does not count as ended, so the meta-scheduler may send it again), the
//! waiting jobs back in the runner's queue with their start claims and meta priorities, and the
//! running ones restored on their machines (a multi-node job on its nodes, with its parts' ends,
//! [`Input::Restore`]), which wait for their agents to
//! re-register, or requeued when the policy cannot restore them. A job that was suspended starts
//! again from scratch: its stopped process is killed when its agent reports it.

use super::parts::Part;
use super::{Agent, Driver, JobRec, Now};
use crate::store::StoredJob;
use gridsched_core::model::{JobId, MachineId};
use gridsched_core::runner::{Input, NodePart};
use gridsched_proto::job_from_spec;
use gridsched_proto::v1::JobState;

impl Driver {
    /// Rebuilds the jobs from the store, if there is one.
    pub(super) fn recover(&mut self, now: Now, jobs: Vec<StoredJob>) -> anyhow::Result<()> {
        let mono = now.mono_ms;
        let now = now.secs;
        if self.journal.store().is_none() {
            return Ok(());
        }
        // Reservations first: the jobs inside them find them, and they fit an empty plan.
        self.recover_reservations(now)?;
        for sj in jobs {
            let Some(req) = sj.request.clone() else {
                continue;
            };
            let Some(spec) = &req.spec else { continue };
            let job = job_from_spec(spec, JobId(req.job_id), now, &mut self.names)
                .map_err(|e| anyhow::anyhow!("stored job {}: {e}", req.job_id))?;
            let id = req.job_id;
            let priority = req.priority.min(u32::from(u8::MAX)) as u8;
            let mut rec = JobRec::queued(req, job);
            rec.claimed = sj.claimed;
            if sj.staging {
                // Its inputs are fetched again (what the cache holds is found there).
                rec.staging = true;
                self.jobs.insert(id, rec);
                self.to_stage.push(id);
                continue;
            }
            let running = sj.state == JobState::Running as i32;
            let mut why = String::from("its machine or start time was not recorded");
            let restored = match (running, sj.machine, sj.start_time) {
                (true, Some(m), Some(t)) => {
                    let m = MachineId(m);
                    // The machines running the job are expected back (their agents re-register
                    // and re-report), so they count as available; a lost-agent timeout takes them
                    // offline again if an agent does not return.
                    rec.parts = sj.parts.iter().map(Part::restored).collect();
                    for n in nodes_of(&rec, m) {
                        self.note(
                            now,
                            Input::Machine {
                                machine: n,
                                up: true,
                            },
                        );
                    }
                    let restore = Input::Restore {
                        job: rec.job.clone(),
                        priority: Some(priority),
                        machine: m,
                        started: t,
                        nodes: rec
                            .parts
                            .iter()
                            .map(|p| NodePart {
                                node: p.node,
                                procs: p.procs,
                            })
                            .collect(),
                    };
                    match self.feed(now, restore).1 {
                        Ok(()) => Some((m, t)),
                        Err(e) => {
                            why = e.to_string();
                            None
                        }
                    }
                }
                _ => None,
            };
            match restored {
                Some((m, t)) => {
                    rec.state = JobState::Running;
                    rec.machine = Some(m);
                    rec.start = Some(t);
                    rec.reported_running = true;
                    for n in nodes_of(&rec, m) {
                        self.agents[n.index()] = Some(Agent {
                            id: String::new(),
                            last_seen: mono,
                            orders: None,
                            placeholder: true,
                            account: String::new(),
                            separates_users: false,
                        });
                    }
                    self.jobs.insert(id, rec);
                }
                None => {
                    rec.parts.clear();
                    let submit = Input::Submit {
                        job: rec.job.clone(),
                        priority: Some(priority),
                    };
                    if let (_, Err(e)) = self.feed(now, submit) {
                        // E.g. its reservation is over: it ends here, with the reason, instead
                        // of keeping the service from starting.
                        tracing::warn!(job = id, "not queued again after a restart: {e}");
                        self.jobs.insert(id, rec);
                        let detail = format!("could not be queued again after a restart: {e}");
                        self.emit(id, JobState::Failed, now, &detail, None);
                        continue;
                    }
                    self.jobs.insert(id, rec);
                    if running {
                        tracing::warn!(job = id, "requeued after a restart: {why}");
                        let detail = format!("requeued after a restart: {why}");
                        self.emit(id, JobState::Queued, now, &detail, None);
                    } else if sj.state == JobState::Suspended as i32 {
                        // Its stopped process is not followed over a restart: a run from scratch.
                        let detail = "requeued after a restart: it was suspended; it starts again \
                                      from scratch";
                        self.emit(id, JobState::Queued, now, detail, None);
                    }
                }
            }
        }
        self.flush().map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(())
    }
}

/// The machines a restored job runs on: its parts' nodes, or its one machine `m`.
fn nodes_of(rec: &JobRec, m: MachineId) -> Vec<MachineId> {
    match rec.parts.is_empty() {
        true => vec![m],
        false => rec.parts.iter().map(|p| p.node).collect(),
    }
}
