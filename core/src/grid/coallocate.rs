//! Co-allocation of a split job at the grid level (Streit, thesis §6.3: the fragments of a
//! multi-site job start together; §6.4 step 5: in adaptive mode the split must end before the
//! best single-site end): the runner carries the core's two-phase protocol ([`CoAllocation`]) for
//! each job being split, gives its holds their reservation ids, and turns each step into effects —
//! holds asked of every fragment's site, the holds that must move let go first, the commits, and
//! the fragments sent into their committed reservations. A given-up co-allocation lets every hold
//! go and is dispatched again [`CoallocationRules::retry_after`](super::CoallocationRules)
//! seconds later, so a live meta-scheduler and the simulator retry alike; after
//! [`MAX_REFUSED`] co-allocations in a row that a site refused (a site whose policy takes no
//! reservations, say), the job is refused instead of being tried forever; a hold that failed
//! because its site's link is down (as the driver reported it) counts as no refusal, so a site
//! lost for a while costs the job retries, not its place in the grid. An answer that comes
//! after its co-allocation was given up (or to a hold since replaced) has its hold let go.

use super::{At, Effect, Fragment, GridRunner, cluster};
use crate::dispatch::{CoAllocation, CoAllocationStep as Step, Part, Reason, stretch_by};
use crate::model::{JobId, ReservationId, Time};

/// Co-allocations of one job in a row that a site refused before the job is refused.
pub const MAX_REFUSED: u32 = 10;

/// How a co-allocation's holds failed, from least to most: a refusal outweighs an unreachable
/// site.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
enum Failure {
    /// No hold refused (the rounds ran out, or the adaptive rule chose one site).
    #[default]
    None,
    /// A hold failed at a site whose link is known to be down: no refusal of the job's, and no
    /// success either (the site may come back, or be marked down and left out).
    Unreachable,
    /// A site refused a hold.
    Refused,
}

/// One job's co-allocation under way.
#[derive(Clone, Debug)]
pub(super) struct Coalloc {
    c: CoAllocation,
    /// Per fragment: the reservation of its current hold (asked or answered).
    ids: Vec<Option<ReservationId>>,
    /// The worst answer a hold got.
    failed: Failure,
    /// The WAN overhead p, percent.
    overhead_pct: u32,
}

impl Coalloc {
    /// The site of the first fragment.
    pub(super) fn first(&self) -> usize {
        self.c.parts().first().map_or(0, |p| p.cluster.index())
    }

    /// Lets every hold go, answered or still asked.
    pub(super) fn let_go_all(&self, job: JobId, out: &mut Vec<Effect>) {
        for (i, id) in self.ids.iter().enumerate() {
            if let Some(reservation) = *id {
                out.push(Effect::LetGo {
                    job,
                    site: self.c.parts()[i].cluster.index(),
                    reservation,
                });
            }
        }
    }
}

impl GridRunner {
    /// The strategy split open job `id` into `parts`: its co-allocation begins.
    pub(super) fn co_allocate(
        &mut self,
        now: Time,
        id: JobId,
        parts: Vec<Part>,
        reason: Option<&Reason>,
        explanation: Option<super::Explanation>,
        out: &mut Vec<Effect>,
    ) {
        let first = parts.first().map_or(0, |p| p.cluster.index());
        // The WAN overhead p of the sites spanned (none without co-allocation rules).
        let overhead_pct = (self.settings.coallocation.as_ref()).map_or(0, |r| {
            r.multi_site
                .overhead_over(parts.iter().map(|p| p.cluster.0))
        });
        if self.settings.splits_at_once && !parts.is_empty() {
            let sites = parts.iter().map(|p| p.cluster.index()).collect();
            self.set_at(id, At::SplitAtOnce(sites));
            self.began(now, id);
            out.push(Effect::StartSplit {
                job: id,
                parts,
                overhead_pct,
            });
            return;
        }
        let Some(rules) = self.settings.coallocation.clone() else {
            self.placer.dispatcher.job_returned(now, id, cluster(first));
            self.refuse(
                id,
                format!(
                    "job {id}: the platform engine does not co-allocate a job over several \
                     clusters"
                ),
                out,
            );
            return;
        };
        if parts.is_empty() {
            self.placer.dispatcher.job_returned(now, id, cluster(first));
            self.refuse(id, format!("job {id}: split into no fragment"), out);
            return;
        }
        if let Some(p) = parts
            .iter()
            .find(|p| p.cluster.index() >= self.placer.sites.len())
        {
            self.placer.dispatcher.job_returned(now, id, cluster(first));
            let why = format!("job {id}: split onto unknown cluster {}", p.cluster);
            self.refuse(id, why, out);
            return;
        }
        let length = stretch_by(self.jobs[&id].job.estimate, overhead_pct);
        let single_end = match reason {
            Some(Reason::Split { single, .. }) if rules.multi_site.adaptive => *single,
            _ => None,
        };
        let n = parts.len();
        out.push(Effect::Coallocating {
            job: id,
            parts: parts.clone(),
            length,
            overhead_pct,
            explanation,
        });
        let mut c = CoAllocation::new(parts, length, rules.rounds, single_end);
        let step = c.start(now);
        self.set_at(
            id,
            At::Coallocating(Box::new(Coalloc {
                c,
                ids: vec![None; n],
                failed: Failure::None,
                overhead_pct,
            })),
        );
        self.step(now, id, step, out);
    }

    fn coalloc(&mut self, id: JobId) -> Option<&mut Coalloc> {
        match &mut self.jobs.get_mut(&id)?.at {
            At::Coallocating(c) => Some(c),
            _ => None,
        }
    }

    /// Carries out a step of job `id`'s protocol.
    fn step(&mut self, now: Time, id: JobId, step: Step, out: &mut Vec<Effect>) {
        match step {
            Step::Wait => {}
            Step::Hold { fragments, from } => {
                let mut next = self.last_reservation;
                let c = self.coalloc(id).expect("co-allocating");
                for i in fragments {
                    let p = c.c.parts()[i];
                    if let Some(old) = c.ids[i].take() {
                        out.push(Effect::LetGo {
                            job: id,
                            site: p.cluster.index(),
                            reservation: old,
                        });
                    }
                    next += 1;
                    c.ids[i] = Some(ReservationId(next));
                    out.push(Effect::Hold {
                        job: id,
                        fragment: i,
                        site: p.cluster.index(),
                        reservation: ReservationId(next),
                        from,
                        length: c.c.held_for(),
                        procs: p.procs,
                    });
                }
                self.last_reservation = next;
            }
            Step::Commit { start } => {
                let c = self.coalloc(id).expect("co-allocating");
                for (i, p) in c.c.parts().iter().enumerate() {
                    out.push(Effect::Commit {
                        job: id,
                        fragment: i,
                        site: p.cluster.index(),
                        reservation: c.ids[i].expect("a committed fragment holds"),
                        start,
                        length: c.c.held_for(),
                        procs: p.procs,
                    });
                }
            }
            Step::Send { start } => {
                let Some(At::Coallocating(c)) = self.jobs.get(&id).map(|o| o.at.clone()) else {
                    return;
                };
                let fragments: Vec<Fragment> =
                    c.c.parts()
                        .iter()
                        .zip(&c.ids)
                        .map(|(p, r)| Fragment {
                            site: p.cluster.index(),
                            procs: p.procs,
                            reservation: r.expect("a committed fragment holds"),
                            length: c.c.length(),
                            overhead_pct: c.overhead_pct,
                        })
                        .collect();
                self.refused_in_a_row.remove(&id);
                // Its committed holds are its owner's reservations in the grid's book while its
                // fragments run (each leaves with its fragment's end, all with a cancellation).
                let user = self.jobs.get(&id).map(|o| o.job.user);
                for f in &fragments {
                    self.reservations.insert(super::Reservation {
                        id: f.reservation,
                        site: f.site,
                        procs: f.procs,
                        start,
                        end: start.saturating_add(c.c.held_for()),
                        user,
                        standing: super::Standing::Held { speed: None },
                    });
                }
                let at = fragments
                    .iter()
                    .map(|f| (f.site, f.reservation, false))
                    .collect();
                self.set_at(id, At::Split(at));
                self.began(now, id);
                out.push(Effect::Send {
                    job: id,
                    start,
                    rounds: c.c.rounds(),
                    fragments,
                });
            }
            Step::Abort { why } => {
                let Some(At::Coallocating(c)) = self.jobs.get(&id).map(|o| o.at.clone()) else {
                    return;
                };
                // The holds answered are let go now; those still asked when their answer comes.
                for (i, _) in c.c.holds() {
                    if let Some(reservation) = c.ids[i] {
                        out.push(Effect::LetGo {
                            job: id,
                            site: c.c.parts()[i].cluster.index(),
                            reservation,
                        });
                    }
                }
                self.placer
                    .dispatcher
                    .job_returned(now, id, cluster(c.first()));
                let max = self
                    .settings
                    .coallocation
                    .as_ref()
                    .map_or(MAX_REFUSED, |r| r.max_refused);
                let n = self.refused_in_a_row.entry(id).or_default();
                *n = match c.failed {
                    Failure::Refused => *n + 1,
                    Failure::Unreachable => *n,
                    Failure::None => 0,
                };
                if *n >= max {
                    out.push(Effect::GivenUp {
                        job: id,
                        why: why.clone(),
                        retry_at: None,
                    });
                    let why =
                        format!("job {id}: co-allocation refused {max} times in a row: {why}");
                    self.refuse(id, why, out);
                    return;
                }
                let after = self
                    .settings
                    .coallocation
                    .as_ref()
                    .map_or(1, |r| r.retry_after);
                self.set_at(id, At::Retrying);
                out.push(Effect::GivenUp {
                    job: id,
                    why,
                    retry_at: Some(now + after.max(1)),
                });
            }
        }
    }

    /// A site answered a hold.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn held_answer(
        &mut self,
        now: Time,
        id: JobId,
        fragment: usize,
        site: usize,
        reservation: ReservationId,
        answer: Result<Time, String>,
        out: &mut Vec<Effect>,
    ) {
        let current = self
            .coalloc(id)
            .is_some_and(|c| c.ids.get(fragment) == Some(&Some(reservation)));
        if !current {
            // Given up, cancelled or replaced meanwhile: a hold made is let go.
            if answer.is_ok() {
                out.push(Effect::LetGo {
                    job: id,
                    site,
                    reservation,
                });
            }
            return;
        }
        let cut = self.links.cut(site);
        let name = self.placer.sites[site].name.clone();
        let c = self.coalloc(id).expect("co-allocating");
        let step = match answer {
            Ok(start) => c.c.held(fragment, start),
            Err(why) => {
                c.ids[fragment] = None;
                let f = if cut {
                    Failure::Unreachable
                } else {
                    Failure::Refused
                };
                c.failed = c.failed.max(f);
                c.c.refused(fragment, &name, &why)
            }
        };
        self.step(now, id, step, out);
    }

    /// A site answered a commit.
    pub(super) fn committed(
        &mut self,
        now: Time,
        id: JobId,
        fragment: usize,
        answer: Result<(), String>,
        out: &mut Vec<Effect>,
    ) {
        let sites = &self.placer.sites;
        let Some(At::Coallocating(c)) = self.jobs.get_mut(&id).map(|j| &mut j.at) else {
            return;
        };
        let step = match answer {
            Ok(()) => c.c.committed(fragment),
            Err(why) => {
                let site = (c.c.parts().get(fragment)).map(|p| p.cluster.index());
                let name = site.and_then(|i| sites.get(i)).map_or("?", |s| &s.name);
                c.c.refused(fragment, name, &format!("commit: {why}"))
            }
        };
        self.step(now, id, step, out);
    }
}
