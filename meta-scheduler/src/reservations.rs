//! Advance reservations at the grid's entry point, the shell's side (Streit, thesis §3.2: a
//! planning system takes fixed-time requests; spec `self-tuning-and-multisite.md` §1.4). The grid
//! runner decides (a request's checks and id, when an unanswered one is taken back, when one is
//! forgotten, which jobs may run in one: `gridsched_core::grid`'s reservation book); this file
//! carries it out: the request's PENDING record written before its site hears of it, the call to
//! the site, HELD written before the answer, the take-backs, and the listing.
//!
//! A reservation whose site's answer is lost (the site or the link failed) stays PENDING and is
//! taken back at its site once overdue, also after a restart: so no reservation holds processors
//! that nobody was told about.

use crate::service::{MetaService, internal, now};
use gridsched_core::grid::{Effect, Input, ReservationAnswer, ReservationRequest};
use gridsched_core::model::ReservationId;
use gridsched_proto::convert::reservation_state;
use gridsched_proto::v1::{self, AdvanceReservationState as St};
use gridsched_security::Caller;
use tonic::{Code, Status};

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
        let last = self.lock()?.last_reservation();
        self.inner
            .store()
            .save_reservation(id, r, last)
            .map_err(internal)
    }

    /// Forgets in the store the reservations the grid forgot.
    pub(crate) fn forget_reservations(&self, ids: &[u64]) {
        for &id in ids {
            if let Err(e) = self.save(id, None) {
                tracing::error!(reservation = id, "state store: {}", e.message());
            }
        }
    }

    /// Feeds the runner a reservation input and carries out what it decides: the effects.
    fn reservation_input(&self, input: Input) -> Result<Vec<Effect>, Status> {
        self.mutate(|st, b, t| {
            let effects = st.decide(t, input);
            let seen = effects.clone();
            st.carry_out(b, t, effects);
            Ok(seen)
        })
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
        let user = (!r.user.is_empty()).then(|| self.lock().map(|mut st| st.user_id(&r.user)));
        let request = ReservationRequest {
            site: r.site.clone(),
            procs: r.processors,
            start: r.start_time,
            end: r.end_time,
            user: user.transpose()?,
        };
        let at_ms = self.at_ms();
        let asked = self
            .reservation_input(Input::Reserve { request, at_ms })?
            .into_iter()
            .find_map(|e| match e {
                Effect::AskReservation { reservation } => Some(Ok(reservation)),
                Effect::ReservationRefused { refusal } => {
                    Some(Err(crate::decide::refusal_status(&refusal)))
                }
                _ => None,
            })
            .unwrap_or_else(|| Err(internal("the grid neither asked nor refused")))?;
        let id = asked.id.0;
        r.id = id;
        r.state = St::Pending as i32;
        r.created = now();
        r.jobs.clear();
        // Durably PENDING before the site hears of it: should the answer be lost from here on,
        // the grid takes it back at the site.
        self.save(id, Some(&r))?;
        self.lock()?.reservations.insert(id, r.clone());
        let answer = match self.client(asked.site) {
            Ok(mut c) => {
                let ask = v1::ReserveRequest {
                    reservation: Some(r.clone()),
                    ..Default::default()
                };
                self.call(c.reserve(ask)).await
            }
            Err(e) => Err(e),
        };
        let (told, refused) = match &answer {
            Ok(a) => {
                // The machine the site chose for it.
                if let Some(held) = &a.reservation {
                    r.machine.clone_from(&held.machine);
                    r.machine_benchmark = held.machine_benchmark;
                }
                let speed = (r.machine_benchmark > 0).then_some(r.machine_benchmark);
                (ReservationAnswer::Held { speed }, None)
            }
            Err(e) if refused_by_site(e.code()) => {
                let why = format!("refused by {}: {}", r.site, e.message());
                (
                    ReservationAnswer::Refused { why: why.clone() },
                    Some((e.code(), why)),
                )
            }
            Err(_) => (ReservationAnswer::Lost, None),
        };
        let input = Input::ReservationAnswer {
            reservation: ReservationId(id),
            answer: told,
        };
        let effects = self.reservation_input(input)?;
        if effects
            .iter()
            .any(|e| matches!(e, Effect::ReservationHeld { .. }))
        {
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
            return Ok(v1::ReserveResponse {
                reservation: Some(r),
            });
        }
        match (refused, answer) {
            // Refused: nothing remains of it.
            (Some((code, why)), _) => Err(Status::new(code, why)),
            (None, Err(e)) => Err(Status::unavailable(format!(
                "{} did not confirm reservation r{id} ({}); it is being taken back, ask again",
                r.site,
                e.message()
            ))),
            (None, Ok(_)) => Err(internal(format!(
                "reservation r{id} was held by {} but not by the grid",
                r.site
            ))),
        }
    }

    /// `ListReservations`: the confirmed and pending reservations, with the jobs in them.
    pub(crate) fn list_reservations(
        &self,
        caller: Option<&Caller>,
        req: v1::ListReservationsRequest,
    ) -> Result<v1::ListReservationsResponse, Status> {
        let t = now();
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

    /// `CancelReservation`: the grid takes it back at its site (or forgets at once one that is
    /// over); forgotten here once the site has let it go (or never had it).
    pub(crate) async fn cancel_reservation(
        &self,
        caller: Option<&Caller>,
        req: v1::CancelReservationRequest,
    ) -> Result<v1::CancelReservationResponse, Status> {
        let r = self
            .lock()?
            .reservations
            .get(&req.id)
            .cloned()
            .ok_or_else(|| Status::not_found(format!("reservation r{} not found", req.id)))?;
        may_act(caller, &r)?;
        let t = now();
        let id = ReservationId(req.id);
        let input = Input::CancelReservation {
            reservation: id,
            at_ms: self.at_ms(),
        };
        let effects = self.reservation_input(input)?;
        // In the grid's book: taken back at its site, or forgotten at once (it is over). Not in
        // it (a co-allocation's hold not yet committed everywhere): let go and forgotten here.
        let in_book = !effects.is_empty();
        let site = match effects.iter().find_map(|e| match e {
            Effect::TakeBack { site, .. } => Some(*site),
            _ => None,
        }) {
            Some(i) => Some(i),
            None if in_book => None,
            None => self.lock()?.site_index(&r.site),
        };
        if let Some(i) = site {
            let gone = self.let_go_at(i, req.id, &req.reason).await;
            if in_book {
                let input = Input::TakenBack {
                    reservation: id,
                    gone: gone.is_ok(),
                };
                self.reservation_input(input)?;
            }
            if let Err(e) = gone {
                return Err(Status::unavailable(format!(
                    "{} could not be reached to cancel reservation r{}: {e}",
                    r.site, r.id
                )));
            }
            if !in_book {
                self.lock()?.reservations.remove(&req.id);
                self.save(req.id, None)?;
            }
        }
        tracing::info!(reservation = req.id, "advance reservation cancelled");
        let mut shown = r;
        shown.state = reservation_state(&shown, t) as i32;
        Ok(v1::CancelReservationResponse {
            reservation: Some(shown),
        })
    }

    /// Asks site `i` to let reservation `id` go: done (or it never had it), or why not.
    async fn let_go_at(&self, i: usize, id: u64, reason: &str) -> Result<(), String> {
        let mut c = self.client(i).map_err(|e| e.message().to_string())?;
        let ask = v1::CancelReservationRequest {
            id,
            reason: reason.to_string(),
        };
        match self.call(c.cancel_reservation(ask)).await {
            Ok(_) => Ok(()),
            Err(e) if e.code() == Code::NotFound => Ok(()),
            Err(e) => Err(e.message().to_string()),
        }
    }

    /// Takes reservation `id` back at site `i`, as the grid decided (its answer was lost), and
    /// tells the grid how it went.
    pub(crate) async fn take_back(self, id: u64, i: usize) {
        let gone = self.let_go_at(i, id, "never confirmed").await.is_ok();
        let input = Input::TakenBack {
            reservation: ReservationId(id),
            gone,
        };
        match self.reservation_input(input) {
            Ok(e) if !e.is_empty() => {
                tracing::info!(reservation = id, "unconfirmed reservation taken back");
            }
            Ok(_) => {}
            Err(e) => tracing::error!(reservation = id, "{}", e.message()),
        }
    }
}

/// Whether a site's answer to a reservation is a refusal (else the answer is lost: the site may
/// hold it or not).
fn refused_by_site(code: Code) -> bool {
    matches!(
        code,
        Code::FailedPrecondition
            | Code::InvalidArgument
            | Code::AlreadyExists
            | Code::NotFound
            | Code::OutOfRange
    )
}
