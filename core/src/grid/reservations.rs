//! The grid's advance reservations (Streit, thesis §3.2: a planning system takes fixed-time
//! requests; §6.3: the grid scheduler routes them to a site): the book the grid runner keeps of
//! them and the rules that route, confirm, take back and forget them, on the times the driver
//! gives.
//!
//! A request is checked here (a known site wide enough, an interval not in the past) and given
//! its grid-wide id from the counter the co-allocation holds share; the driver asks its site
//! ([`Effect::AskReservation`]) and answers with [`Input::ReservationAnswer`]. Confirmed, it is
//! held; refused, it is dropped; with the answer lost, it stays asked, and once it has been so for
//! [`GridSettings::reservation_answer_ms`] it is taken back at its site ([`Effect::TakeBack`],
//! asked again each second until [`Input::TakenBack`] says the site let it go), so that no
//! reservation holds processors nobody was told about. A cancellation takes a reservation back
//! the same way; one that ended [`KEEP_ENDED_S`] ago is forgotten.
//!
//! A job submitted into a reservation is admitted only if the reservation is confirmed, not
//! over, the job's owner's, wide enough, and long enough for the job's estimate at the reserved
//! machine's speed (D2.1, Eq. 3.9); it then goes to the reservation's site only.
//!
//! [`Effect::AskReservation`]: super::Effect::AskReservation
//! [`Effect::TakeBack`]: super::Effect::TakeBack
//! [`Input::ReservationAnswer`]: super::Input::ReservationAnswer
//! [`Input::TakenBack`]: super::Input::TakenBack
//! [`GridSettings::reservation_answer_ms`]: super::GridSettings::reservation_answer_ms

use super::admit::{Field, Kind, Refusal};
use super::{Effect, GridRunner};
use crate::model::{Job, ReservationId, Time, UserId, scale_duration};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Ended reservations stay in the book this long (seconds) before they are forgotten.
pub const KEEP_ENDED_S: i64 = 86_400;

/// A lost answer's take-back is asked again this often (milliseconds).
const ASK_BACK_EVERY_MS: u64 = 1_000;

/// A request for processors at a site over a fixed interval.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReservationRequest {
    /// The site, by name.
    pub site: String,
    /// Processors.
    pub procs: u32,
    /// Its start.
    pub start: Time,
    /// Its end.
    pub end: Time,
    /// Its owner; `None`: any user's jobs may run in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<UserId>,
}

/// Where a reservation of the book stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Standing {
    /// Asked of its site at monotonic milliseconds `at_ms` (`None`: before the driver
    /// restarted), not yet confirmed.
    Asked {
        /// When.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at_ms: Option<u64>,
    },
    /// Confirmed by its site, on a machine of benchmark score `speed` when it has one.
    Held {
        /// The reserved machine's score.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        speed: Option<u32>,
    },
}

/// A reservation in the grid's book.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reservation {
    /// Its id.
    pub id: ReservationId,
    /// Its site's index.
    pub site: usize,
    /// Processors.
    pub procs: u32,
    /// Its start.
    pub start: Time,
    /// Its end.
    pub end: Time,
    /// Its owner, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<UserId>,
    /// Where it stands.
    pub standing: Standing,
}

/// A site's answer to an [`Effect::AskReservation`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReservationAnswer {
    /// Held, on a machine of this benchmark score (if it has one).
    Held {
        /// The machine's score.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        speed: Option<u32>,
    },
    /// Refused by the site.
    Refused {
        /// The site's reason.
        why: String,
    },
    /// No answer came (the site or the link failed): the site may hold it or not.
    Lost,
}

/// The book: reservations by id, and the take-backs under way.
#[derive(Clone, Debug, Default)]
pub(super) struct Book {
    reservations: BTreeMap<ReservationId, Reservation>,
    /// Take-backs asked, with when (monotonic milliseconds).
    taking_back: BTreeMap<ReservationId, u64>,
}

impl Book {
    /// Whether job `job` may run in reservation `id` at `now`: its site if so.
    pub(super) fn admit(&self, now: Time, job: &Job, id: ReservationId) -> Result<usize, Refusal> {
        let refuse = |kind, why: String| Err(Refusal::new(Field::Reservation, kind, why));
        let Some(r) = self.reservations.get(&id) else {
            return refuse(Kind::NotFound, format!("reservation {id} is not known"));
        };
        let speed = match r.standing {
            Standing::Asked { .. } => {
                return refuse(
                    Kind::Precondition,
                    format!("reservation {id} has not been confirmed by its site"),
                );
            }
            Standing::Held { speed } => speed,
        };
        if r.end <= now {
            return refuse(
                Kind::Precondition,
                format!("reservation {id} ended at {}", r.end),
            );
        }
        if r.user.is_some_and(|u| u != job.user) {
            return refuse(
                Kind::Forbidden,
                format!("reservation {id} belongs to another user"),
            );
        }
        if job.procs > r.procs {
            return refuse(
                Kind::Precondition,
                format!(
                    "the job needs {} processors, reservation {id} holds {}",
                    job.procs, r.procs
                ),
            );
        }
        let earliest = now.max(r.start);
        // On the reserved machine a job with a benchmark score of its own takes its estimate
        // scaled by the two scores, as the site will plan it.
        let (needs, on) = match (job.benchmark, speed) {
            (Some(b), Some(s)) => {
                let there = scale_duration(job.estimate, b, s);
                (there, format!(" ({there} s on the reserved machine)"))
            }
            _ => (job.estimate, String::new()),
        };
        if earliest.saturating_add(needs) > r.end {
            return refuse(
                Kind::Precondition,
                format!(
                    "its estimate of {} s{on} cannot end by reservation {id}'s end at {} (it \
                     could start at {earliest} at the earliest)",
                    job.estimate, r.end
                ),
            );
        }
        Ok(r.site)
    }

    /// Enters reservation `r` (a co-allocation's committed hold).
    pub(super) fn insert(&mut self, r: Reservation) {
        self.reservations.insert(r.id, r);
    }

    /// Forgets reservation `id` (a co-allocation's hold let go).
    pub(super) fn remove(&mut self, id: ReservationId) {
        self.reservations.remove(&id);
        self.taking_back.remove(&id);
    }

    /// Reservation `id`.
    pub(super) fn get(&self, id: ReservationId) -> Option<&Reservation> {
        self.reservations.get(&id)
    }
}

impl GridRunner {
    /// A reservation request at `now`: refused, or given its id and asked of its site.
    pub(super) fn reserve(
        &mut self,
        now: Time,
        at_ms: u64,
        req: ReservationRequest,
        out: &mut Vec<Effect>,
    ) {
        let refused = |field, kind, why: String| Effect::ReservationRefused {
            refusal: Refusal::new(field, kind, why),
        };
        let Some(site) = self.placer.sites.iter().position(|s| s.name == req.site) else {
            let why = format!("unknown site `{}`", req.site);
            out.push(refused(Field::ReservationSite, Kind::NotFound, why));
            return;
        };
        let widest = self.placer.sites[site].caps.max_machine_procs;
        let refusal = if req.procs == 0 {
            Some((Field::ReservationProcs, "must be at least 1".to_string()))
        } else if req.procs > widest {
            let why = format!(
                "{} processors exceed what {} runs as one job ({widest})",
                req.procs, req.site
            );
            Some((Field::ReservationProcs, why))
        } else if req.end <= req.start {
            let why = format!("{} is not after start {}", req.end, req.start);
            Some((Field::ReservationEnd, why))
        } else {
            None
        };
        if let Some((field, why)) = refusal {
            out.push(refused(field, Kind::Invalid, why));
            return;
        }
        if req.start < now {
            let why = format!("{} is in the past (now is {now})", req.start);
            out.push(refused(Field::ReservationStart, Kind::Precondition, why));
            return;
        }
        self.last_reservation += 1;
        let r = Reservation {
            id: ReservationId(self.last_reservation),
            site,
            procs: req.procs,
            start: req.start,
            end: req.end,
            user: req.user,
            standing: Standing::Asked { at_ms: Some(at_ms) },
        };
        out.push(Effect::AskReservation {
            reservation: r.clone(),
        });
        self.reservations.reservations.insert(r.id, r);
    }

    /// Reservation `id`'s site answered (or did not).
    pub(super) fn reservation_answer(
        &mut self,
        id: ReservationId,
        answer: ReservationAnswer,
        out: &mut Vec<Effect>,
    ) {
        let Some(r) = self.reservations.reservations.get_mut(&id) else {
            return;
        };
        if !matches!(r.standing, Standing::Asked { .. }) {
            return;
        }
        match answer {
            ReservationAnswer::Held { speed } => {
                r.standing = Standing::Held { speed };
                out.push(Effect::ReservationHeld { reservation: id });
            }
            ReservationAnswer::Refused { why } => {
                self.reservations.reservations.remove(&id);
                out.push(Effect::ReservationDropped {
                    reservation: id,
                    why,
                });
            }
            // Taken back once its answer is overdue.
            ReservationAnswer::Lost => {}
        }
    }

    /// The user cancels reservation `id` at `now`: taken back at its site while it may still
    /// hold processors there, else forgotten at once.
    pub(super) fn cancel_reservation(
        &mut self,
        now: Time,
        at_ms: u64,
        id: ReservationId,
        out: &mut Vec<Effect>,
    ) {
        let Some(r) = self.reservations.get(id) else {
            return;
        };
        if r.end > now || matches!(r.standing, Standing::Asked { .. }) {
            let site = r.site;
            self.reservations.taking_back.insert(id, at_ms);
            out.push(Effect::TakeBack {
                reservation: id,
                site,
            });
        } else {
            self.reservations.reservations.remove(&id);
            out.push(Effect::ReservationDropped {
                reservation: id,
                why: "cancelled".into(),
            });
        }
    }

    /// Reservation `id`'s site let it go (`gone`), or could not be reached.
    pub(super) fn taken_back(&mut self, id: ReservationId, gone: bool, out: &mut Vec<Effect>) {
        if !gone {
            // A cancellation the site did not hear stands undone; a lost answer's take-back is
            // asked again.
            if let Some(r) = self.reservations.get(id)
                && matches!(r.standing, Standing::Held { .. })
            {
                self.reservations.taking_back.remove(&id);
            }
            return;
        }
        self.reservations.taking_back.remove(&id);
        if let Some(r) = self.reservations.reservations.remove(&id) {
            let why = match r.standing {
                Standing::Asked { .. } => "never confirmed",
                Standing::Held { .. } => "cancelled",
            };
            out.push(Effect::ReservationDropped {
                reservation: id,
                why: why.into(),
            });
        }
    }

    /// The time passes: asked reservations whose answer is overdue are taken back (again each
    /// second until the site lets go), and those ended [`KEEP_ENDED_S`] ago are forgotten.
    pub(super) fn reservations_tick(&mut self, now: Time, at_ms: u64, out: &mut Vec<Effect>) {
        let overdue = self.settings.reservation_answer_ms;
        let book = &mut self.reservations;
        let mut ended = Vec::new();
        for r in book.reservations.values_mut() {
            match &mut r.standing {
                Standing::Asked { at_ms: asked } => {
                    let asked = *asked.get_or_insert(at_ms);
                    let due = at_ms.saturating_sub(asked) >= overdue;
                    let again = book
                        .taking_back
                        .get(&r.id)
                        .is_none_or(|&t| at_ms.saturating_sub(t) >= ASK_BACK_EVERY_MS);
                    if due && again {
                        book.taking_back.insert(r.id, at_ms);
                        out.push(Effect::TakeBack {
                            reservation: r.id,
                            site: r.site,
                        });
                    }
                }
                Standing::Held { .. } => {
                    if r.end.saturating_add(KEEP_ENDED_S) <= now
                        && !book.taking_back.contains_key(&r.id)
                    {
                        ended.push(r.id);
                    }
                }
            }
        }
        for id in ended {
            book.reservations.remove(&id);
            out.push(Effect::ReservationDropped {
                reservation: id,
                why: "ended".into(),
            });
        }
    }

    /// Re-enters a reservation of the book after the driver restarted (one still asked is taken
    /// back once its answer is overdue, counted from the first tick).
    pub(super) fn restore_reservation(&mut self, mut r: Reservation) {
        if let Standing::Asked { at_ms } = &mut r.standing {
            *at_ms = None;
        }
        self.last_reservation = self.last_reservation.max(r.id.0);
        self.reservations.reservations.insert(r.id, r);
    }

    /// Reservation `id` of the grid's book.
    pub fn reservation(&self, id: ReservationId) -> Option<&Reservation> {
        self.reservations.get(id)
    }
}

#[cfg(test)]
mod tests;
