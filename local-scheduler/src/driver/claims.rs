//! The local scheduler's side of the start-claim protocol: a job the
//! meta-scheduler enqueued with `claim_before_start` starts only once the meta-scheduler has
//! durably granted it, so that while it waits here unclaimed it can be withdrawn and run at another
//! site when this one is unreachable, and never runs twice.
//!
//! When the policy starts such a job it is *held*: the policy counts its machine and licences as
//! taken, its claim is sent on the StartClaims link (batched per scheduling pass), and the agent's
//! start order waits for the grant. When the link opens, every held job is asked for again and
//! every unclaimed waiting job is listed, so the ones withdrawn while the site was unreachable are
//! dropped at once. A withdrawn job leaves with a CANCELLED event marked `withdrawn` and does not
//! count as ended here: the meta-scheduler may send it again later. A granted claim is stored with
//! the job and survives a restart.

use super::Driver;
use gridsched_core::Time;
use gridsched_core::model::JobId;
use gridsched_core::runner::Input;
use gridsched_proto::v1::{self, JobState};
use tokio::sync::mpsc;

/// The detail of the event of a withdrawn job.
pub const WITHDRAWN: &str = "withdrawn by the meta-scheduler (dispatched to another site)";

impl Driver {
    /// The meta-scheduler opened the link (replacing any previous one): asks again for every held
    /// job and lists the unclaimed waiting ones.
    pub(super) fn open_claims(&mut self) -> mpsc::UnboundedReceiver<v1::ClaimRequest> {
        let mut start = Vec::new();
        let mut waiting = Vec::new();
        for (id, r) in &self.jobs {
            if r.held.is_some() {
                start.push(*id);
            } else if r.req.claim_before_start && !r.claimed && r.state == JobState::Queued {
                waiting.push(*id);
            }
        }
        self.to_claim.clear();
        self.claim_link.open(start, waiting)
    }

    /// Sends the claims of the jobs held since the last call, if the link is open; otherwise they
    /// are sent when it opens.
    pub(super) fn send_claims(&mut self) {
        let mut start = std::mem::take(&mut self.to_claim);
        start.retain(|id| self.jobs.get(id).is_some_and(|r| r.held.is_some()));
        self.claim_link.ask(start);
    }

    /// Applies the meta-scheduler's answer: granted jobs get their start order, withdrawn ones
    /// are dropped.
    pub(super) fn claim_answer(&mut self, a: v1::ClaimAnswer, now: Time) {
        for id in a.granted {
            let Some(rec) = self.jobs.get_mut(&id) else {
                continue;
            };
            rec.claimed = true;
            match rec.held.take() {
                Some(h) => self.launch(now, h.orders, h.launch),
                None => {
                    self.journal.save(id, Some(Self::stored(rec)));
                }
            }
        }
        let mut dropped = false;
        for id in a.withdrawn {
            dropped |= self.withdraw(now, id);
        }
        if let Err(e) = self.flush() {
            tracing::error!("{e}");
        }
        if dropped {
            self.pass(now);
        }
    }

    /// Drops job `id`, withdrawn by the meta-scheduler; false if it is not here or has a claim.
    fn withdraw(&mut self, now: Time, id: u64) -> bool {
        let Some(rec) = self.jobs.get(&id) else {
            return false;
        };
        if rec.claimed || rec.state != JobState::Queued {
            tracing::warn!(job = id, "withdrawal of a claimed job ignored");
            return false;
        }
        self.release(now, id);
        self.record(id, JobState::Cancelled, now, WITHDRAWN, None, true);
        true
    }

    /// Puts a held job back in the runner's queue (its machine went away before the grant).
    pub(super) fn unhold(&mut self, now: Time, id: u64) {
        let Some(rec) = self.jobs.get_mut(&id) else {
            return;
        };
        if rec.held.take().is_none() {
            return;
        }
        let (_, res) = self.feed(now, Input::Requeue { job: JobId(id) });
        if let Err(e) = res {
            let why = format!("its machine went offline and it cannot wait again: {e}");
            self.emit(id, JobState::Failed, now, &why, None);
        }
    }
}
