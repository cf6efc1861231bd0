//! What comes back from the sites for a job the grid runner placed (Pasquali, thesis D3: the
//! terminations are the only upward notices the Meta-Scheduler's strategies see): a cancellation,
//! a site's refusal, a split job's fragments ending (its reservations let go, the others killed
//! when one ends badly, the job over with the last).

use super::{At, Effect, GridRunner, Open, cluster};
use crate::model::{JobId, Outcome, Time};

impl GridRunner {
    /// The user cancelled job `id`: the strategy forgets it; a co-allocation under way lets its
    /// holds go, and a split job's fragments their reservations.
    pub(super) fn cancel(&mut self, now: Time, id: JobId, out: &mut Vec<Effect>) {
        if !self.jobs.contains_key(&id) {
            if !self.cancel_workflow(id, out) {
                self.cancel_unreleased(id, out);
            }
            return;
        }
        if self.cancel_array(id, out) {
            return;
        }
        let started = self.jobs.get(&id).is_some_and(|o| o.at.started());
        let Some(o) = self.run_ended(now, id, Some(Outcome::Cancelled { started })) else {
            return;
        };
        match o.at {
            At::Unplaced | At::Retrying | At::Blocked | At::Deferred | At::Array | At::Limited => {}
            At::Held => self.placer.dispatcher.withdraw(id),
            At::Site { site, .. } => self.placer.dispatcher.job_ended(now, id, cluster(site)),
            At::SplitAtOnce(sites) => self.placer.dispatcher.job_ended(now, id, cluster(sites[0])),
            At::Coallocating(c) => {
                let first = c.first();
                c.let_go_all(id, out);
                self.placer.dispatcher.job_returned(now, id, cluster(first));
            }
            At::Split(fragments) => {
                let first = fragments.first().map_or(0, |f| f.0);
                for &(site, reservation, ended) in &fragments {
                    if !ended {
                        self.reservations.remove(reservation);
                        out.push(Effect::LetGo {
                            job: id,
                            site,
                            reservation,
                        });
                    }
                }
                self.placer.dispatcher.job_ended(now, id, cluster(first));
            }
        }
    }

    /// `site` refused job `id` (or its fragment).
    pub(super) fn refused(
        &mut self,
        now: Time,
        id: JobId,
        site: usize,
        why: String,
        out: &mut Vec<Effect>,
    ) {
        let Some(o) = self.jobs.get_mut(&id) else {
            return;
        };
        match &mut o.at {
            At::Site { site: s, .. } if *s == site => {
                self.remove(id, Some(Outcome::Refused));
                self.placer.dispatcher.job_returned(now, id, cluster(site));
                out.push(Effect::Refuse {
                    job: id,
                    why,
                    refusal: None,
                });
            }
            // A fragment its site refused cannot start with the others: the job fails as if it
            // had failed there (the others are killed), instead of ending as completed by
            // the fragments that ran alone.
            At::Split(_) => self.fragment_ended(now, id, site, false, false, out),
            _ => {}
        }
    }

    /// Fragment of split job `id` at `site` ended: its reservation is let go; one that ended
    /// badly has the others killed; after the last, the job is over (completed when no fragment
    /// ended badly, failed otherwise, or, `again`, to be requeued by the driver: its dependants
    /// wait for its next run).
    pub(super) fn fragment_ended(
        &mut self,
        now: Time,
        id: JobId,
        site: usize,
        ok: bool,
        again: bool,
        out: &mut Vec<Effect>,
    ) {
        let Some(Open {
            at: At::Split(fragments),
            ..
        }) = self.jobs.get_mut(&id)
        else {
            return;
        };
        let Some(k) = fragments.iter().position(|f| f.0 == site && !f.2) else {
            return;
        };
        if !ok {
            self.failed_fragments.insert(id);
        }
        fragments[k].2 = true;
        let reservation = fragments[k].1;
        out.push(Effect::LetGo {
            job: id,
            site,
            reservation,
        });
        if !ok {
            for f in fragments.iter().filter(|f| !f.2) {
                out.push(Effect::Kill {
                    job: id,
                    site: f.0,
                    why: format!("fragment {k} at site {site} ended badly"),
                });
            }
        }
        let over = fragments.iter().all(|f| f.2).then(|| fragments[0].0);
        self.reservations.remove(reservation);
        if let Some(first) = over {
            let failed = self.failed_fragments.remove(&id);
            let outcome = match (again, failed) {
                (true, _) => None,
                (false, false) => Some(Outcome::Completed),
                (false, true) => Some(Outcome::Failed),
            };
            self.run_ended(now, id, outcome);
            self.placer.dispatcher.job_ended(now, id, cluster(first));
            out.push(Effect::Over {
                job: id,
                site: first,
            });
        }
    }
}
