//! An advance reservation admitted at the earliest instant it fits (Streit, thesis §3.2: a
//! planning system answers a reservation request from its plan; §6.3: the sites of a multi-site
//! job each give the earliest start they can hold for its fragment, the common start being the
//! latest of them).
//!
//! The request keeps its length and is tried from its start (or `now`, if later) on: at that
//! instant, then at each end of a running job and of a reservation, and at the end of each
//! conflicting stretch the policy names. Refusals other than a conflict or a machine without
//! room are final; after [`MAX_TRIES`] tries the last conflict is. The live local scheduler and
//! the simulator both come here through [`Input::ReserveEarliest`](super::Input), so both admit
//! a co-allocation's hold at the same instant from the same plan.

use super::{ClusterRunner, RunnerError};
use crate::model::Time;
use crate::policy::{AdvanceReservation, ReservationRefused};
use std::collections::BTreeSet;

/// Instants tried before the last conflict is the answer.
pub const MAX_TRIES: usize = 1024;

impl ClusterRunner {
    /// Admits `reservation` at the first instant from `max(start, now)` on where the policy takes
    /// it, keeping its length.
    pub(super) fn reserve_earliest(
        &mut self,
        now: Time,
        mut reservation: AdvanceReservation,
    ) -> Result<(), RunnerError> {
        let length = reservation.end - reservation.start;
        let from = reservation.start.max(now);
        let mut at: BTreeSet<Time> = BTreeSet::from([from]);
        let running: Vec<_> = self
            .jobs()
            .filter(|(_, running)| *running)
            .map(|(j, _)| j.id)
            .collect();
        at.extend(running.iter().filter_map(|&j| self.predicted_end(j)));
        at.extend(self.advance_reservations().iter().map(|a| a.end));
        let mut last = None;
        for _ in 0..MAX_TRIES {
            let Some(t) = at.range(from..).next().copied() else {
                break;
            };
            at.remove(&t);
            (reservation.start, reservation.end) = (t, t + length);
            match self.policy.admit_reservation(now, &reservation) {
                Ok(()) => return Ok(()),
                Err(ReservationRefused::Conflict { to, .. }) => {
                    at.insert(to.max(t + 1));
                    last = Some(ReservationRefused::Conflict {
                        id: reservation.id,
                        from: t,
                        to,
                        free: 0,
                        procs: reservation.procs,
                    });
                }
                Err(e @ ReservationRefused::Unfit { .. }) => {
                    at.insert(t + 1);
                    last = Some(e);
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(last.expect("tried at least once").into())
    }
}
