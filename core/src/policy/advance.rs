//! Advance reservations: processors held for a fixed interval ahead of time (Streit, thesis §3.2:
//! a planning system can accept fixed-time requests because every job already has a planned
//! start; spec `self-tuning-and-multisite.md` §1.4).
//!
//! A request is admitted iff its processors are free for its whole interval in the current plan
//! (running jobs until their estimated ends, the planned starts of the waiting jobs, the
//! reservations already held); otherwise it is refused with the first conflicting stretch named.
//! Once admitted it is a fixed block of the availability profile that every later placement
//! goes around. [`Book`] keeps the admitted reservations of one machine for the planning
//! policies (conservative backfilling, the planning policies and dynP).

use crate::model::{ReservationId, Time};
use crate::structures::Profile;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A fixed-time request for processors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdvanceReservation {
    /// Unique within the site.
    pub id: ReservationId,
    /// First instant held.
    pub start: Time,
    /// First instant no longer held.
    pub end: Time,
    /// Processors held.
    pub procs: u32,
}

/// Why a reservation is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReservationRefused {
    /// The policy has no plan to reserve in.
    #[error(
        "the {policy} policy does not take advance reservations (planning policies do: conservative, planning-fcfs, planning-sjf, planning-ljf, dynp)"
    )]
    Unsupported {
        /// The policy's description.
        policy: String,
    },
    /// The interval is empty or the processor count zero.
    #[error("reservation {id} is empty: [{start}, {end}) for {procs} processors")]
    Empty {
        /// The request.
        id: ReservationId,
        /// Its start.
        start: Time,
        /// Its end.
        end: Time,
        /// Its processors.
        procs: u32,
    },
    /// It starts before now.
    #[error("reservation {id} starts at {start}, in the past (now is {now})")]
    InPast {
        /// The request.
        id: ReservationId,
        /// Its start.
        start: Time,
        /// The current time.
        now: Time,
    },
    /// It asks for more processors than the machine has.
    #[error("reservation {id} asks for {procs} processors but the machine has {capacity}")]
    TooWide {
        /// The request.
        id: ReservationId,
        /// Processors asked for.
        procs: u32,
        /// The machine's processors.
        capacity: u32,
    },
    /// A reservation with this identifier is held already.
    #[error("reservation {0} exists already")]
    Duplicate(ReservationId),
    /// Too few processors are free somewhere in the interval.
    #[error(
        "reservation {id} conflicts with the plan on [{from}, {to}): {free} processors free there, {procs} asked"
    )]
    Conflict {
        /// The request.
        id: ReservationId,
        /// First instant of the first conflicting stretch.
        from: Time,
        /// End of that stretch.
        to: Time,
        /// The fewest processors free on it.
        free: i64,
        /// Processors asked for.
        procs: u32,
    },
}

/// The admitted reservations of one machine.
#[derive(Clone, Debug, Default)]
pub struct Book {
    held: BTreeMap<ReservationId, AdvanceReservation>,
}

impl Book {
    /// Admits `r` if `profile` (the current plan of a machine of `capacity` processors, from
    /// `now`) has its processors free for its whole interval; the caller then blocks them.
    pub fn admit(
        &mut self,
        now: Time,
        r: &AdvanceReservation,
        capacity: u32,
        profile: &Profile,
    ) -> Result<(), ReservationRefused> {
        let id = r.id;
        if r.end <= r.start || r.procs == 0 {
            return Err(ReservationRefused::Empty {
                id,
                start: r.start,
                end: r.end,
                procs: r.procs,
            });
        }
        if r.start < now {
            return Err(ReservationRefused::InPast {
                id,
                start: r.start,
                now,
            });
        }
        if r.procs > capacity {
            return Err(ReservationRefused::TooWide {
                id,
                procs: r.procs,
                capacity,
            });
        }
        if self.held.contains_key(&id) {
            return Err(ReservationRefused::Duplicate(id));
        }
        if let Some((from, to, free)) = profile.shortfall(r.start, r.end, r.procs) {
            return Err(ReservationRefused::Conflict {
                id,
                from,
                to,
                free,
                procs: r.procs,
            });
        }
        self.held.insert(id, *r);
        Ok(())
    }

    /// Takes a reservation out.
    pub fn cancel(&mut self, id: ReservationId) -> Option<AdvanceReservation> {
        self.held.remove(&id)
    }

    /// Takes out the reservations that ended by `now`.
    pub fn expire(&mut self, now: Time) -> Vec<AdvanceReservation> {
        let ended: Vec<ReservationId> = self
            .held
            .values()
            .filter(|r| r.end <= now)
            .map(|r| r.id)
            .collect();
        ended.iter().filter_map(|id| self.held.remove(id)).collect()
    }

    /// The reservations held, by identifier.
    pub fn list(&self) -> Vec<AdvanceReservation> {
        self.held.values().copied().collect()
    }

    /// The first start of a reservation after `now`.
    pub fn next_start_after(&self, now: Time) -> Option<Time> {
        self.held
            .values()
            .map(|r| r.start)
            .filter(|&s| s > now)
            .min()
    }

    /// Blocks every reservation still running or ahead at `now` in `profile`.
    pub fn block_in(&self, profile: &mut Profile, now: Time) {
        for r in self.held.values().filter(|r| r.end > now) {
            profile.reserve(r.start.max(now), r.end, r.procs);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Job, JobId, MachineId};
    use crate::policy::test_util::{planned, starts};
    use crate::policy::{PolicyConfig, PolicyKind};
    use rand::{RngExt, SeedableRng};

    fn res(id: u64, start: Time, end: Time, procs: u32) -> AdvanceReservation {
        AdvanceReservation {
            id: ReservationId(id),
            start,
            end,
            procs,
        }
    }

    const PLANNING: [PolicyKind; 5] = [
        PolicyKind::Conservative,
        PolicyKind::PlanningFcfs,
        PolicyKind::PlanningSjf,
        PolicyKind::PlanningLjf,
        PolicyKind::Dynp,
    ];

    /// Ten processors; job 1 holds all of them until 100, job 2 (6) is planned at 100 until 150.
    /// A reservation of 5 on [120, 200) collides with job 2 on [120, 150) and is refused with
    /// that stretch named; on [150, 200) it is admitted, and job 3 (8 for 30 s), which would
    /// have fitted at 150, is planned at 200 instead. When job 1 ends early at 50, job 2 moves
    /// to 50 and job 3 to 100: it ends at 130, before the reservation. (Every policy that plans
    /// job 2 before job 3; SJF plans job 3 first, and the random test below covers it.)
    #[test]
    fn a_reservation_is_refused_on_a_conflict_and_planned_around_once_admitted() {
        let kinds = [
            PolicyKind::Conservative,
            PolicyKind::PlanningFcfs,
            PolicyKind::PlanningLjf,
        ];
        for kind in kinds {
            let mut p = PolicyConfig::new(kind).build_single(MachineId(0), 10);
            let p = p.as_mut();
            p.submit(0, &Job::new(1, 0, 10, 100, 50)).unwrap();
            assert_eq!(starts(p, 0), [1]);
            p.submit(1, &Job::new(2, 1, 6, 50, 50)).unwrap();
            assert!(starts(p, 1).is_empty());
            let e = p.admit_reservation(1, &res(7, 120, 200, 5)).unwrap_err();
            assert_eq!(
                e.to_string(),
                "reservation r7 conflicts with the plan on [120, 150): 4 processors free there, 5 asked",
                "{kind:?}"
            );
            assert!(p.advance_reservations().is_empty(), "nothing half-made");
            p.admit_reservation(1, &res(7, 150, 200, 5)).unwrap();
            assert_eq!(p.advance_reservations(), [res(7, 150, 200, 5)]);
            p.submit(2, &Job::new(3, 2, 8, 30, 30)).unwrap();
            assert!(starts(p, 2).is_empty());
            assert_eq!(planned(p), [(2, 100), (3, 200)], "{kind:?}");
            p.terminate(50, JobId(1));
            assert_eq!(starts(p, 50), [2], "{kind:?}");
            assert_eq!(planned(p), [(3, 100)], "{kind:?}");
            assert!(p.cancel_reservation(60, ReservationId(7)));
            assert!(!p.cancel_reservation(60, ReservationId(7)), "gone");
            assert!(p.advance_reservations().is_empty());
        }
    }

    #[test]
    fn bad_requests_are_refused_at_the_door() {
        for kind in PLANNING {
            let mut p = PolicyConfig::new(kind).build_single(MachineId(0), 10);
            let cases = [
                (
                    res(1, 50, 150, 2),
                    "reservation r1 starts at 50, in the past (now is 100)",
                ),
                (
                    res(2, 200, 300, 11),
                    "reservation r2 asks for 11 processors but the machine has 10",
                ),
                (
                    res(3, 200, 200, 1),
                    "reservation r3 is empty: [200, 200) for 1 processors",
                ),
                (
                    res(4, 200, 300, 0),
                    "reservation r4 is empty: [200, 300) for 0 processors",
                ),
            ];
            for (r, want) in cases {
                let e = p.admit_reservation(100, &r).unwrap_err().to_string();
                assert_eq!(e, want, "{kind:?}");
            }
            p.admit_reservation(100, &res(5, 200, 300, 4)).unwrap();
            let e = p.admit_reservation(100, &res(5, 400, 500, 4)).unwrap_err();
            assert_eq!(e.to_string(), "reservation r5 exists already");
            let e = p.admit_reservation(100, &res(6, 250, 260, 7)).unwrap_err();
            assert_eq!(
                e.to_string(),
                "reservation r6 conflicts with the plan on [250, 260): 6 processors free there, 7 asked"
            );
        }
        let mut easy = PolicyConfig::new(PolicyKind::Easy).build_single(MachineId(0), 10);
        let e = easy.admit_reservation(0, &res(1, 10, 20, 1)).unwrap_err();
        assert!(matches!(e, ReservationRefused::Unsupported { .. }), "{e}");
    }

    /// Random jobs (ending early, some cancelled) and random reservation requests on every
    /// planning policy: at every second the running jobs and the reservations in force never
    /// hold more than the machine, every admitted reservation stays held until it ends or is
    /// cancelled, some are refused, and every job runs.
    #[test]
    fn running_jobs_and_reservations_never_exceed_the_machine() {
        let mut totals = (0, 0);
        for (n, kind) in PLANNING.iter().cycle().take(15).enumerate() {
            let seed = n as u64;
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let cap = 12u32;
            let mut p = PolicyConfig::new(*kind).build_single(MachineId(0), cap);
            let mut running: Vec<(Time, u64, u32)> = Vec::new();
            let mut runs = std::collections::HashMap::new();
            let mut held: Vec<AdvanceReservation> = Vec::new();
            let (mut admitted, mut refused, mut jobs, mut started) = (0, 0, 0u64, 0);
            for now in 0..8_000i64 {
                running.retain(|&(end, id, _)| {
                    if end == now {
                        p.terminate(now, JobId(id));
                    }
                    end != now
                });
                held.retain(|r| r.end > now);
                if now < 2_500 && rng.random_bool(0.025) {
                    jobs += 1;
                    let estimate = rng.random_range(1..200);
                    let procs = rng.random_range(1..=cap);
                    let run = rng.random_range(1..=estimate);
                    p.submit(now, &Job::new(jobs, now, procs, estimate, run))
                        .unwrap();
                    runs.insert(jobs, (run, procs));
                }
                if now < 2_500 && rng.random_bool(0.01) {
                    let start = now + rng.random_range(0..1_500);
                    let length = rng.random_range(1..150);
                    let r = res(
                        now as u64,
                        start,
                        start + length,
                        rng.random_range(1..=cap / 2),
                    );
                    match p.admit_reservation(now, &r) {
                        Ok(()) => {
                            admitted += 1;
                            held.push(r);
                        }
                        Err(ReservationRefused::Conflict { .. }) => refused += 1,
                        Err(e) => panic!("{kind:?}: {e}"),
                    }
                }
                if rng.random_bool(0.002) && !held.is_empty() {
                    let r = held.swap_remove(rng.random_range(0..held.len()));
                    assert!(p.cancel_reservation(now, r.id), "{kind:?}: {} held", r.id);
                }
                for id in starts(p.as_mut(), now) {
                    let (run, procs) = runs[&id];
                    running.push((now + run, id, procs));
                    started += 1;
                }
                let busy: u32 = running.iter().map(|r| r.2).sum();
                let reserved: u32 = held
                    .iter()
                    .filter(|r| r.start <= now && now < r.end)
                    .map(|r| r.procs)
                    .sum();
                assert!(
                    busy + reserved <= cap,
                    "{kind:?} seed {seed} at {now}: {busy} busy + {reserved} reserved"
                );
                let mut listed = p.advance_reservations();
                listed.retain(|r| r.end > now);
                let mut want = held.clone();
                want.sort_by_key(|r| r.id);
                assert_eq!(listed, want, "{kind:?} seed {seed} at {now}");
            }
            assert_eq!(started, jobs, "{kind:?} seed {seed}: every job ran");
            assert!(admitted > 0, "{kind:?} seed {seed}: none admitted");
            totals = (totals.0 + admitted, totals.1 + refused);
        }
        assert!(
            totals.0 > 100 && totals.1 > 20,
            "admitted / refused: {totals:?}"
        );
    }
}
