//! Jobs that come back to the grid runner (Pasquali, thesis D3: the Meta-Scheduler keeps every
//! job until its cluster reports it ended): a job re-entered after its driver restarted, where it
//! stood, with the strategy's bookkeeping rebuilt as if it had decided it; and a job whose run
//! failed, dispatched anew as a new run.

use super::{At, Cause, Effect, GridRunner, Restored, cluster};
use crate::dispatch::{Placement, Priority};
use crate::model::{Job, Time};

impl GridRunner {
    /// Re-enters `job` where it stood before the driver restarted. A waiting job with a
    /// dependency goes through it again (its predecessors that have ended carry their outcome):
    /// it waits, or goes on as at a submission.
    pub(super) fn restore(
        &mut self,
        now: Time,
        job: Job,
        priority: Priority,
        only: Option<usize>,
        at: Restored,
        out: &mut Vec<Effect>,
    ) {
        let mut job = job;
        if let Some(t) = job.task {
            self.task_back(t);
            job.after = self.task_dependency(t);
        }
        if let Some(spec) = job.array.take() {
            let id = job.id;
            let corr = super::arrays::take_corr(&mut job);
            self.enter(job, priority, only, At::Unplaced);
            return match at {
                Restored::Array {
                    next,
                    done,
                    started,
                } if next > 0 || !done.is_empty() => {
                    self.restore_array(id, *spec, corr, next, &done, started);
                    // Called back once everything is restored.
                    out.push(Effect::Continue { job: id });
                }
                // Not begun: it goes on as at its submission (through its dependency).
                _ => {
                    self.enter_array(id, *spec, corr);
                    self.enter_dependency(now, id, Cause::Restored, out);
                }
            };
        }
        if matches!(at, Restored::Waiting | Restored::Array { .. }) && job.after.is_some() {
            let id = job.id;
            self.enter(job, priority, only, At::Unplaced);
            self.classified_again(id);
            return self.enter_dependency(now, id, Cause::Restored, out);
        }
        let began = match &at {
            Restored::Site {
                claimed: true,
                since,
                ..
            }
            | Restored::Split { since, .. } => Some(*since),
            _ => None,
        };
        let at = match at {
            Restored::Waiting | Restored::Array { .. } => {
                let before = self.placer.held();
                self.placer
                    .dispatcher
                    .restore(&job, priority, &Placement::Hold, job.submit);
                if self.placer.held() > before {
                    // Held again with the sites it may go to, as at a dispatch.
                    let _ = self
                        .placer
                        .decide(job.submit, &job, priority, only, None, false);
                    At::Held
                } else {
                    At::Unplaced
                }
            }
            Restored::Site {
                site,
                claimed,
                since,
            } => {
                let placed = Placement::Cluster(cluster(site));
                self.placer
                    .dispatcher
                    .restore(&job, priority, &placed, since);
                // Its inputs were moved there before the restart (the grid's estimates from now on).
                self.placer
                    .grid
                    .transfers
                    .arrived(&job, cluster(site), since);
                At::Site { site, claimed }
            }
            Restored::Split { fragments, since } => {
                let parts = fragments.iter().map(|f| f.0).collect();
                self.placer
                    .dispatcher
                    .restore(&job, priority, &Placement::Split(parts), since);
                At::Split(
                    fragments
                        .iter()
                        .map(|(p, r, ended)| (p.cluster.index(), *r, *ended))
                        .collect(),
                )
            }
        };
        let id = job.id;
        // Past its running limits before the restart: counted again.
        let out = matches!(at, At::Site { .. } | At::Split(_) | At::Held);
        self.enter(job, priority, only, at);
        self.classified_again(id);
        let charged_to = self.shares.as_ref().and_then(|s| s.state().charged_to);
        if let Some(o) = self.jobs.get_mut(&id) {
            o.began = began;
            // Its run up to the last recalculation was charged before the restart.
            o.charged_to = charged_to;
            o.out = out;
            if out && let Some(s) = self.shares.as_mut() {
                s.count_out(o.job.user, o.job.procs, o.job.estimate, 1);
            }
        }
    }

    /// Dispatches anew `job`, whose run failed.
    pub(super) fn requeue(
        &mut self,
        now: Time,
        job: Job,
        priority: Priority,
        only: Option<usize>,
        out: &mut Vec<Effect>,
    ) {
        let id = job.id;
        self.enter(job, priority, only, At::Unplaced);
        self.classified_again(id);
        self.dispatch(now, id, Cause::Requeued, out);
    }
}
