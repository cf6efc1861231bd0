//! Advance reservations at the grid's entry point (Streit, thesis §3.2: a planning system takes
//! fixed-time requests; spec `self-tuning-and-multisite.md` §1.4). The meta-scheduler gives each
//! reservation its grid-wide id, writes it PENDING, asks its site's local scheduler to admit it
//! against its plan, and writes it HELD before answering; a refusal (the site names the first
//! conflicting interval) leaves nothing behind. When the answer is lost (the site or the link
//! failed), the PENDING reservation is taken back at its site by [`reconcile`] and forgotten, also
//! after a restart: so no reservation holds processors that nobody was told about.
//!
//! A job submitted into a reservation (`JobSpec.reservation`) is checked at the door (known,
//! confirmed, not over, wide and long enough, the reservation's owner) and dispatched to its site
//! only ([`crate::state::State::pinned`]).

use crate::service::{MetaService, internal, now};
use gridsched_core::model::scale_duration;
use gridsched_proto::convert::reservation_state;
use gridsched_proto::v1::{self, AdvanceReservationState as St};
use gridsched_security::Caller;
use std::time::Duration;
use tonic::{Code, Status};

/// Ended reservations stay listed this long (seconds) before they are forgotten.
pub const KEEP_ENDED_S: i64 = 86_400;

/// Why a job may not be submitted into reservation `id` at `now`: (code, message).
pub fn refuse_job(
    reservations: &std::collections::BTreeMap<u64, v1::AdvanceReservation>,
    spec: &v1::JobSpec,
    now: i64,
) -> Option<(Code, String)> {
    let id = spec.reservation?;
    let Some(r) = reservations.get(&id) else {
        return Some((Code::NotFound, format!("reservation r{id} is not known")));
    };
    if r.state == St::Pending as i32 {
        return Some((
            Code::FailedPrecondition,
            format!("reservation r{id} has not been confirmed by its site"),
        ));
    }
    if r.end_time <= now {
        return Some((
            Code::FailedPrecondition,
            format!("reservation r{id} ended at {}", r.end_time),
        ));
    }
    if !r.user.is_empty() && r.user != spec.user {
        return Some((
            Code::PermissionDenied,
            format!("reservation r{id} belongs to `{}`", r.user),
        ));
    }
    if spec.processors > r.processors {
        return Some((
            Code::FailedPrecondition,
            format!(
                "the job needs {} processors, reservation r{id} holds {}",
                spec.processors, r.processors
            ),
        ));
    }
    let earliest = now.max(r.start_time);
    // On the reserved machine a job with a benchmark score of its own takes its estimate scaled
    // by the two scores (D2.1, Eq. 3.9), as the site will plan it.
    let (needs, on) = match spec.benchmark {
        Some(b) if r.machine_benchmark > 0 => {
            let there = scale_duration(spec.estimate_s, b, r.machine_benchmark);
            (there, format!(" ({there} s on {})", r.machine))
        }
        _ => (spec.estimate_s, String::new()),
    };
    if earliest.saturating_add(needs) > r.end_time {
        return Some((
            Code::FailedPrecondition,
            format!(
                "its estimate of {} s{on} cannot end by reservation r{id}'s end at {} (it could start at {earliest} at the earliest)",
                spec.estimate_s, r.end_time
            ),
        ));
    }
    None
}

/// Whether `caller` may act on `r`.
fn may_act(caller: Option<&Caller>, r: &v1::AdvanceReservation) -> Result<(), Status> {
    match caller {
        Some(c) if !c.may_access(&r.user) => Err(Status::permission_denied(format!(
            "reservation r{} belongs to another user",
            r.id
        ))),
        _ => Ok(()),
    }
}

impl MetaService {
    /// Writes reservation `id` (or forgets it) with the id counter.
    fn save(&self, id: u64, r: Option<&v1::AdvanceReservation>) -> Result<(), Status> {
        let last = self.lock()?.last_reservation;
        self.inner
            .store()
            .save_reservation(id, r, last)
            .map_err(internal)
    }

    /// `Reserve`.
    pub(crate) async fn reserve(
        &self,
        caller: Option<&Caller>,
        req: v1::ReserveRequest,
    ) -> Result<v1::ReserveResponse, Status> {
        let Some(mut r) = req.reservation else {
            return Err(Status::invalid_argument("field `reservation`: required"));
        };
        if req.earliest || req.lease_ms > 0 {
            let field = if req.earliest { "earliest" } else { "lease_ms" };
            return Err(Status::invalid_argument(format!(
                "field `{field}`: only a site's local scheduler takes it (co-allocation); ask \
                 the meta-scheduler for a fixed interval"
            )));
        }
        if r.site.is_empty() {
            return Err(Status::invalid_argument(
                "field `reservation.site`: required",
            ));
        }
        if r.processors == 0 {
            return Err(Status::invalid_argument(
                "field `reservation.processors`: must be at least 1",
            ));
        }
        if r.end_time <= r.start_time {
            return Err(Status::invalid_argument(format!(
                "field `reservation.end_time`: {} is not after start_time {}",
                r.end_time, r.start_time
            )));
        }
        let t = now();
        if r.start_time < t {
            return Err(Status::failed_precondition(format!(
                "field `reservation.start_time`: {} is in the past (now is {t})",
                r.start_time
            )));
        }
        if let Some(c) = caller {
            if r.user.is_empty() {
                r.user.clone_from(&c.user);
            } else if !c.may_access(&r.user) {
                return Err(Status::permission_denied(format!(
                    "field `reservation.user`: `{}` is not the authenticated user `{}`",
                    r.user, c.user
                )));
            }
        }
        let (i, id) = {
            let mut st = self.lock()?;
            let i = st.site_index(&r.site).ok_or_else(|| {
                Status::not_found(format!(
                    "field `reservation.site`: unknown site `{}`",
                    r.site
                ))
            })?;
            st.last_reservation += 1;
            (i, st.last_reservation)
        };
        r.id = id;
        r.state = St::Pending as i32;
        r.created = t;
        r.jobs.clear();
        // Durably PENDING before the site hears of it: a crash from here on is repaired by
        // `reconcile`, which takes it back at the site.
        self.save(id, Some(&r))?;
        self.lock()?.reservations.insert(id, r.clone());
        let client = self.client(i);
        let answer = match client {
            Ok(mut c) => {
                let ask = v1::ReserveRequest {
                    reservation: Some(r.clone()),
                    ..Default::default()
                };
                self.call(c.reserve(ask)).await
            }
            Err(e) => Err(e),
        };
        match answer {
            Ok(a) => {
                // The machine the site chose for it.
                if let Some(held) = a.reservation {
                    r.machine = held.machine;
                    r.machine_benchmark = held.machine_benchmark;
                }
                r.state = St::Held as i32;
                self.save(id, Some(&r))?;
                self.lock()?.reservations.insert(id, r.clone());
                tracing::info!(
                    reservation = id,
                    site = r.site.as_str(),
                    start = r.start_time,
                    end = r.end_time,
                    processors = r.processors,
                    "advance reservation held"
                );
                r.state = reservation_state(&r, now()) as i32;
                Ok(v1::ReserveResponse {
                    reservation: Some(r),
                })
            }
            Err(e)
                if matches!(
                    e.code(),
                    Code::FailedPrecondition
                        | Code::InvalidArgument
                        | Code::AlreadyExists
                        | Code::NotFound
                        | Code::OutOfRange
                ) =>
            {
                // Refused: nothing remains of it.
                self.lock()?.reservations.remove(&id);
                self.save(id, None)?;
                Err(Status::new(
                    e.code(),
                    format!("refused by {}: {}", r.site, e.message()),
                ))
            }
            Err(e) => Err(Status::unavailable(format!(
                "{} did not confirm reservation r{id} ({}); it is being taken back, ask again",
                r.site,
                e.message()
            ))),
        }
    }

    /// `ListReservations`: the confirmed and pending reservations, with the jobs in them; those
    /// ended longer than [`KEEP_ENDED_S`] ago are forgotten on the way.
    pub(crate) fn list_reservations(
        &self,
        caller: Option<&Caller>,
        req: v1::ListReservationsRequest,
    ) -> Result<v1::ListReservationsResponse, Status> {
        let t = now();
        let old: Vec<u64> = {
            let st = self.lock()?;
            st.reservations
                .values()
                .filter(|r| forgotten(r, t))
                .map(|r| r.id)
                .collect()
        };
        for id in old {
            self.lock()?.reservations.remove(&id);
            self.save(id, None)?;
        }
        let st = self.lock()?;
        let mut out: Vec<v1::AdvanceReservation> = st
            .reservations
            .values()
            .filter(|r| req.site.is_empty() || r.site == req.site)
            .filter(|r| may_act(caller, r).is_ok())
            .map(|r| {
                let mut r = r.clone();
                r.state = reservation_state(&r, t) as i32;
                r.jobs = st
                    .jobs
                    .values()
                    .filter(|j| {
                        !j.state().is_terminal()
                            && j.spec.as_ref().and_then(|s| s.reservation) == Some(r.id)
                    })
                    .map(|j| j.id)
                    .collect();
                r
            })
            .collect();
        out.sort_by_key(|r| (r.start_time, r.id));
        Ok(v1::ListReservationsResponse { reservations: out })
    }

    /// `CancelReservation`: given up at its site first; forgotten here once the site has let it
    /// go (or never had it).
    pub(crate) async fn cancel_reservation(
        &self,
        caller: Option<&Caller>,
        req: v1::CancelReservationRequest,
    ) -> Result<v1::CancelReservationResponse, Status> {
        let (r, i) = {
            let st = self.lock()?;
            let r =
                st.reservations.get(&req.id).cloned().ok_or_else(|| {
                    Status::not_found(format!("reservation r{} not found", req.id))
                })?;
            let i = st
                .site_index(&r.site)
                .ok_or_else(|| internal(format!("reservation r{}: unknown site", r.id)))?;
            (r, i)
        };
        may_act(caller, &r)?;
        let t = now();
        if r.end_time > t || r.state == St::Pending as i32 {
            let mut c = self.client(i)?;
            let ask = v1::CancelReservationRequest {
                id: req.id,
                reason: req.reason.clone(),
            };
            match self.call(c.cancel_reservation(ask)).await {
                Ok(_) => {}
                Err(e) if e.code() == Code::NotFound => {}
                Err(e) => {
                    return Err(Status::unavailable(format!(
                        "{} could not be reached to cancel reservation r{}: {}",
                        r.site,
                        r.id,
                        e.message()
                    )));
                }
            }
        }
        self.lock()?.reservations.remove(&req.id);
        self.save(req.id, None)?;
        tracing::info!(reservation = req.id, "advance reservation cancelled");
        let mut shown = r;
        shown.state = reservation_state(&shown, t) as i32;
        Ok(v1::CancelReservationResponse {
            reservation: Some(shown),
        })
    }
}

/// Whether a reservation is forgotten at `t`: confirmed (a PENDING one waits for the reconciler)
/// and ended at least [`KEEP_ENDED_S`] ago.
fn forgotten(r: &v1::AdvanceReservation, t: i64) -> bool {
    r.state != St::Pending as i32 && r.end_time + KEEP_ENDED_S <= t
}

/// Takes back, at their sites, the PENDING reservations whose answer was lost (older than the
/// call timeout, or found at start), and forgets them once a site has let go of one.
pub async fn reconcile(svc: MetaService) {
    let timeout_s = (svc.inner.cfg.links.call_timeout_ms / 1000 + 1) as i64;
    loop {
        let t = now();
        let pending: Vec<(u64, String)> = match svc.lock() {
            Ok(st) => st
                .reservations
                .values()
                .filter(|r| r.state == St::Pending as i32 && r.created + timeout_s < t)
                .map(|r| (r.id, r.site.clone()))
                .collect(),
            Err(_) => return,
        };
        for (id, site) in pending {
            let Some(i) = svc.lock().ok().and_then(|st| st.site_index(&site)) else {
                continue;
            };
            let Ok(mut c) = svc.client(i) else { continue };
            let ask = v1::CancelReservationRequest {
                id,
                reason: "never confirmed".into(),
            };
            let gone = match svc.call(c.cancel_reservation(ask)).await {
                Ok(_) => true,
                Err(e) => e.code() == Code::NotFound,
            };
            if gone {
                if let Ok(mut st) = svc.lock() {
                    st.reservations.remove(&id);
                }
                if let Err(e) = svc.save(id, None) {
                    tracing::error!("{e}");
                }
                tracing::info!(reservation = id, "unconfirmed reservation taken back");
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ended_reservations_are_listed_for_a_day_then_forgotten() {
        let held = v1::AdvanceReservation {
            id: 1,
            start_time: 1_000,
            end_time: 2_000,
            processors: 1,
            state: St::Held as i32,
            ..Default::default()
        };
        assert!(!forgotten(&held, 1_500), "in force");
        assert!(
            !forgotten(&held, 2_000 + KEEP_ENDED_S - 1),
            "ended less than a day ago"
        );
        assert!(
            forgotten(&held, 2_000 + KEEP_ENDED_S),
            "a day after its end"
        );
        let pending = v1::AdvanceReservation {
            state: St::Pending as i32,
            ..held
        };
        assert!(
            !forgotten(&pending, 2_000 + 10 * KEEP_ENDED_S),
            "an unconfirmed one is the reconciler's"
        );
    }

    /// On a machine twice as fast as the one a job was measured on, its 150 s estimate takes
    /// 75 s: it fits a 100 s reservation there; on a machine half as fast (300 s) it does not,
    /// and the refusal says what it would take.
    #[test]
    fn a_job_into_a_reservation_is_checked_at_the_reserved_machines_speed() {
        let mut r = v1::AdvanceReservation {
            id: 4,
            start_time: 1_000,
            end_time: 1_100,
            processors: 2,
            state: St::Held as i32,
            machine: "fast".into(),
            machine_benchmark: 4,
            ..Default::default()
        };
        let spec = v1::JobSpec {
            processors: 2,
            estimate_s: 150,
            benchmark: Some(2),
            reservation: Some(4),
            ..Default::default()
        };
        let held = |r: &v1::AdvanceReservation| std::collections::BTreeMap::from([(4, r.clone())]);
        assert_eq!(refuse_job(&held(&r), &spec, 900), None);
        r.machine_benchmark = 1;
        r.machine = "slow".into();
        let (code, why) = refuse_job(&held(&r), &spec, 900).expect("too long there");
        assert_eq!(code, Code::FailedPrecondition);
        assert!(why.contains("150 s (300 s on slow)"), "{why}");
        let unscaled = v1::JobSpec {
            benchmark: None,
            ..spec
        };
        let (_, why) = refuse_job(&held(&r), &unscaled, 900).expect("150 s > 100 s");
        assert!(why.contains("estimate of 150 s cannot end"), "{why}");
    }
}
