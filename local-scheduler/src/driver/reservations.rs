//! Advance reservations at a local scheduler (Streit, thesis §3.2: fixed-time requests admitted
//! against the plan of a planning system): `Reserve` and `CancelReservation` handed to the
//! runner, the admitted ones kept durably before they are acknowledged, re-admitted first when
//! the service restarts (so that its jobs find them), and forgotten once over.
//!
//! The two phases of a co-allocation over sites (Streit, thesis §6.3, multi-site jobs started
//! together): a Reserve with `earliest` admits the reservation at the first instant from its start
//! on where it fits (the core runner's search, which the simulator shares: tried at that start,
//! then at each end of a running job or a reservation and at each end of a conflicting stretch
//! the policy names), and one with `lease_ms` holds it
//! tentatively, not stored, until `CommitReservation` stores it for good; an uncommitted hold
//! lapses with its lease (and with a restart).
//!
//! Refusals name what is wrong: a field out of range is INVALID_ARGUMENT naming it; a start in
//! the past, more processors than the machine, a policy without a plan or a conflict with the
//! plan (the first conflicting interval named by the core) are FAILED_PRECONDITION. A refused
//! request leaves nothing behind: the runner refused it before anything was stored.

use super::{Driver, Now};
use gridsched_core::Time;
use gridsched_core::model::ReservationId;
use gridsched_core::policy::{AdvanceReservation, ReservationRefused};
use gridsched_core::runner::{Input, RunnerError};
use gridsched_proto::convert::NameTable;
use gridsched_proto::v1::{self, AdvanceReservationState as St};
use tonic::Status;

/// The core's request for a reservation, the machine and licences resolved by name (unknown
/// names are INVALID_ARGUMENT naming the field).
fn core_request(
    r: &v1::AdvanceReservation,
    names: &NameTable,
) -> Result<AdvanceReservation, Status> {
    let machine = match r.machine.as_str() {
        "" => None,
        m => Some(names.machine_id(m).ok_or_else(|| {
            Status::invalid_argument(format!(
                "reservation.machine: no machine `{m}` at this site"
            ))
        })?),
    };
    let licences = r
        .licences
        .iter()
        .enumerate()
        .map(|(i, l)| {
            names.licence_id(l).ok_or_else(|| {
                Status::invalid_argument(format!(
                    "reservation.licences[{i}]: no licence `{l}` at this site"
                ))
            })
        })
        .collect::<Result<Vec<_>, Status>>()?;
    Ok(AdvanceReservation {
        id: ReservationId(r.id),
        start: r.start_time,
        end: r.end_time,
        procs: r.processors,
        machine,
        licences,
    })
}

fn refusal(e: RunnerError, names: &NameTable) -> Status {
    let text = named(&e.to_string(), names);
    match e {
        RunnerError::Reservation(ReservationRefused::Empty { .. }) => {
            Status::invalid_argument(format!("reservation: {text}"))
        }
        RunnerError::Reservation(ReservationRefused::Duplicate(_)) => Status::already_exists(text),
        _ => Status::failed_precondition(text),
    }
}

/// The core's text with its machine (`m3`) and licence (`lic2`) identifiers replaced by the
/// site's names for them.
fn named(text: &str, names: &NameTable) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        let name = if let Some(n) = word.strip_prefix("lic").and_then(|n| n.parse::<u16>().ok()) {
            names.licence_name(gridsched_core::model::LicenceId(n))
        } else if let Some(n) = word.strip_prefix('m').and_then(|n| n.parse::<u32>().ok()) {
            names.machine_name(gridsched_core::model::MachineId(n))
        } else {
            None
        };
        out.push_str(name.unwrap_or(word));
        word.clear();
    };
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

impl Driver {
    /// `Reserve`: checks the request, has the runner admit it, stores it, answers.
    pub(super) fn reserve(
        &mut self,
        req: v1::ReserveRequest,
        now: Now,
    ) -> Result<v1::ReserveResponse, Status> {
        let mono = now.mono_ms;
        let now = now.secs;
        let Some(mut r) = req.reservation else {
            return Err(Status::invalid_argument("reservation: required"));
        };
        if r.id == 0 {
            return Err(Status::invalid_argument("reservation.id: must be positive"));
        }
        if r.processors == 0 {
            return Err(Status::invalid_argument(
                "reservation.processors: must be at least 1",
            ));
        }
        if r.end_time <= r.start_time {
            return Err(Status::invalid_argument(format!(
                "reservation.end_time: {} is not after start_time {}",
                r.end_time, r.start_time
            )));
        }
        if let Some(old) = self.reservations.get(&r.id) {
            let length = |r: &v1::AdvanceReservation| r.end_time - r.start_time;
            let same = (length(old), old.processors, &old.licences)
                == (length(&r), r.processors, &r.licences)
                && (r.machine.is_empty() || r.machine == old.machine)
                && match req.earliest {
                    true => old.start_time >= r.start_time,
                    false => old.start_time == r.start_time,
                };
            if same {
                // A retry of a request already admitted.
                return Ok(v1::ReserveResponse {
                    reservation: Some(self.shown(old, now)),
                });
            }
            return Err(Status::already_exists(format!(
                "reservation r{} exists already with another interval or width",
                r.id
            )));
        }
        let reservation = core_request(&r, &self.names)?;
        let admitted = match req.earliest {
            true => self.feed(now, Input::ReserveEarliest { reservation }).1,
            false => self.feed(now, Input::Reserve { reservation }).1,
        };
        if let Err(e) = admitted {
            return Err(refusal(e, &self.names));
        }
        // The machine the policy chose, and its speed (for the meta-scheduler's door check of
        // the jobs sent into the reservation).
        if let Some(m) = self
            .runner
            .advance_reservations()
            .iter()
            .find(|a| a.id.0 == r.id)
            .and_then(|a| a.machine)
            .and_then(|m| self.platform.machines.get(m.index()))
        {
            r.machine = m.name.clone();
            r.machine_benchmark = m.benchmark;
        }
        if let Some(a) = self
            .runner
            .advance_reservations()
            .iter()
            .find(|a| a.id.0 == r.id)
        {
            (r.start_time, r.end_time) = (a.start, a.end);
        }
        r.site = self.cfg.site.clone();
        r.created = now;
        r.jobs.clear();
        r.state = St::Held as i32;
        r.tentative = req.lease_ms > 0;
        if r.tentative {
            // Held until committed, in memory only: a restart lets it go like a lapsed lease.
            self.leases.insert(r.id, mono + u64::from(req.lease_ms));
        } else if let Some(store) = self.journal.store()
            && let Err(e) = store.save_reservation(r.id, Some(&r), &[])
        {
            // Not durable: taken back, so that nothing unacknowledged holds processors.
            self.note(
                now,
                Input::CancelReservation {
                    id: ReservationId(r.id),
                },
            );
            return Err(super::internal(e));
        }
        tracing::info!(
            reservation = r.id,
            start = r.start_time,
            end = r.end_time,
            processors = r.processors,
            tentative = r.tentative,
            "advance reservation admitted"
        );
        self.reservations.insert(r.id, r.clone());
        self.pass(now);
        Ok(v1::ReserveResponse {
            reservation: Some(self.shown(&r, now)),
        })
    }

    /// `CancelReservation`: the runner gives it up (its waiting jobs join the general queue, its
    /// running ones run on, no longer inside it), then the store forgets it.
    pub(super) fn cancel_reservation(
        &mut self,
        req: v1::CancelReservationRequest,
        now: Now,
    ) -> Result<v1::CancelReservationResponse, Status> {
        let now = now.secs;
        let Some(r) = self.reservations.get(&req.id).cloned() else {
            return Err(Status::not_found(format!(
                "reservation r{} is not held here",
                req.id
            )));
        };
        let shown = self.shown(&r, now);
        let held = self
            .runner
            .advance_reservations()
            .iter()
            .any(|a| a.id.0 == req.id);
        if held {
            let input = Input::CancelReservation {
                id: ReservationId(req.id),
            };
            if let (_, Err(e)) = self.feed(now, input) {
                return Err(Status::internal(e.to_string()));
            }
        }
        // Its jobs no longer name it, here and in the store.
        let mut changed = Vec::new();
        for (id, rec) in &mut self.jobs {
            if rec.job.reservation == Some(ReservationId(req.id)) {
                rec.job.reservation = None;
                if let Some(s) = rec.req.spec.as_mut() {
                    s.reservation = None;
                }
                changed.push((*id, Some(Self::stored(rec))));
            }
        }
        self.reservations.remove(&req.id);
        self.leases.remove(&req.id);
        if let Some(store) = self.journal.store()
            && let Err(e) = store.save_reservation(req.id, None, &changed)
        {
            // The runner has let it go: the store follows with the next flush of these jobs, and
            // a restart drops a stored reservation the runner would no longer hold.
            for (id, j) in changed {
                self.journal.save(id, j);
            }
            tracing::error!("state store: {e}");
        }
        tracing::info!(
            reservation = req.id,
            reason = req.reason.as_str(),
            "advance reservation cancelled"
        );
        self.pass(now);
        Ok(v1::CancelReservationResponse {
            reservation: Some(shown),
        })
    }

    /// `CommitReservation`: a tentative reservation is stored and held for good.
    pub(super) fn commit_reservation(
        &mut self,
        req: v1::CommitReservationRequest,
        now: Now,
    ) -> Result<v1::CommitReservationResponse, Status> {
        let now = now.secs;
        let Some(mut r) = self.reservations.get(&req.id).cloned() else {
            return Err(Status::not_found(format!(
                "reservation r{} is not held here (its lease lapsed, or the site restarted)",
                req.id
            )));
        };
        if let Some(&lease) = self.leases.get(&req.id) {
            r.tentative = false;
            if let Some(store) = self.journal.store() {
                store
                    .save_reservation(r.id, Some(&r), &[])
                    .map_err(super::internal)?;
            }
            self.leases.remove(&req.id);
            tracing::info!(reservation = r.id, lease, "advance reservation committed");
            self.reservations.insert(r.id, r.clone());
        }
        Ok(v1::CommitReservationResponse {
            reservation: Some(self.shown(&r, now)),
        })
    }

    /// Gives up the tentative reservations whose lease has lapsed by `now`.
    pub(super) fn lapse_leases(&mut self, now: Now) {
        let lapsed: Vec<u64> = self
            .leases
            .iter()
            .filter(|&(_, &until)| until <= now.mono_ms)
            .map(|(&id, _)| id)
            .collect();
        for id in lapsed {
            let req = v1::CancelReservationRequest {
                id,
                reason: "its lease lapsed before it was committed".into(),
            };
            if let Err(e) = self.cancel_reservation(req, now) {
                tracing::warn!(reservation = id, "lapsed lease: {e}");
            }
        }
    }

    /// A reservation as shown: its state at `now` and the jobs inside it.
    pub(super) fn shown(&self, r: &v1::AdvanceReservation, now: Time) -> v1::AdvanceReservation {
        let mut r = r.clone();
        r.state = gridsched_proto::convert::reservation_state(&r, now) as i32;
        let mut jobs: Vec<u64> = self
            .jobs
            .iter()
            .filter(|(_, rec)| rec.job.reservation == Some(ReservationId(r.id)))
            .map(|(id, _)| *id)
            .collect();
        jobs.sort_unstable();
        r.jobs = jobs;
        r
    }

    /// The reservations held, by start then id.
    pub(super) fn advance_reservations(&self, now: Time) -> Vec<v1::AdvanceReservation> {
        let mut out: Vec<_> = self
            .reservations
            .values()
            .map(|r| self.shown(r, now))
            .collect();
        out.sort_by_key(|r| (r.start_time, r.id));
        out
    }

    /// Forgets the reservations that are over and that the runner no longer holds.
    pub(super) fn expire_reservations(&mut self, now: Time) {
        let held: Vec<u64> = self
            .runner
            .advance_reservations()
            .iter()
            .map(|a| a.id.0)
            .collect();
        let over: Vec<u64> = self
            .reservations
            .values()
            .filter(|r| r.end_time <= now && !held.contains(&r.id))
            .map(|r| r.id)
            .collect();
        for id in over {
            if let Some(store) = self.journal.store()
                && let Err(e) = store.save_reservation(id, None, &[])
            {
                tracing::error!("state store: {e}");
                return;
            }
            self.reservations.remove(&id);
            tracing::info!(reservation = id, "advance reservation over");
        }
    }

    /// After a restart: the stored reservations still ahead or in force, admitted again before
    /// any job is restored or queued (the plan is empty then, so they fit as they did).
    pub(super) fn recover_reservations(&mut self, now: Time) -> anyhow::Result<()> {
        let Some(store) = self.journal.store() else {
            return Ok(());
        };
        let stored = store
            .load_reservations()
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        for r in stored {
            let over = r.end_time <= now;
            // The part still ahead, on the machine it was admitted on.
            let request = core_request(&r, &self.names).map(|mut a| {
                a.start = a.start.max(now);
                a
            });
            let refused = !over
                && match request.map(|reservation| self.feed(now, Input::Reserve { reservation })) {
                    Ok((_, Ok(()))) => false,
                    Err(e) => {
                        tracing::warn!(reservation = r.id, "not admitted again: {e}");
                        true
                    }
                    Ok((_, Err(e))) => {
                        tracing::warn!(reservation = r.id, "not admitted again: {e}");
                        true
                    }
                };
            if over || refused {
                if let Some(store) = self.journal.store() {
                    store
                        .save_reservation(r.id, None, &[])
                        .map_err(|e| anyhow::anyhow!("{e}"))?;
                }
                continue;
            }
            self.reservations.insert(r.id, r);
        }
        Ok(())
    }
}
