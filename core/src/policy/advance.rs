//! Advance reservations: processors held for a fixed interval ahead of time (Streit, thesis §3.2:
//! a planning system can accept fixed-time requests because every job already has a planned
//! start; spec `self-tuning-and-multisite.md` §1.4).
//!
//! A request is admitted iff its processors are free for its whole interval in the current plan
//! (running jobs until their estimated ends, the planned starts of the waiting jobs, the
//! reservations already held); otherwise it is refused with the first conflicting stretch named.
//! Once admitted it is a fixed block of the availability profile that every later placement
//! goes around. A job may be submitted into a reservation: it is then planned inside it only, on
//! its processors, and must end by its end (or it is refused at submission); an early end inside
//! lets the jobs after it move up. A cancelled reservation's jobs join the general queue.
//! [`Book`] keeps the admitted reservations of one machine and their jobs for the planning
//! policies (conservative backfilling, the planning policies and dynP).

use super::{Rejection, Start};
use crate::model::{Duration, Job, JobId, LicenceId, MachineId, ReservationId, Time};
use crate::structures::{Profile, RunningSet};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A fixed-time request for processors (and, on a heterogeneous cluster, one machine's
/// processors and licence copies).
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AdvanceReservation {
    /// Unique within the site.
    pub id: ReservationId,
    /// First instant held.
    pub start: Time,
    /// First instant no longer held.
    pub end: Time,
    /// Processors held.
    pub procs: u32,
    /// The machine holding them: asked for, or chosen at admission (fastest first where it
    /// fits); `None` in a request leaves the choice to the policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<MachineId>,
    /// Licences held, one copy per entry (a licence node-locked on the machine takes no pool
    /// copy); the jobs inside may use these only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub licences: Vec<LicenceId>,
}

impl AdvanceReservation {
    /// `procs` processors over `[start, end)`, anywhere on the site, no licences.
    pub fn new(id: u64, start: Time, end: Time, procs: u32) -> AdvanceReservation {
        AdvanceReservation {
            id: ReservationId(id),
            start,
            end,
            procs,
            ..AdvanceReservation::default()
        }
    }
}

/// Why a reservation is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReservationRefused {
    /// The policy has no plan to reserve in.
    #[error("the {policy} policy does not take advance reservations")]
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
    /// The machine or licences asked for cannot be held here (unknown machine, a licence the
    /// machine cannot activate), or no machine of the cluster can hold it for its interval.
    #[error("reservation {id}: {why}")]
    Unfit {
        /// The request.
        id: ReservationId,
        /// What is wrong, machine by machine where several were tried.
        why: String,
    },
}

/// A job submitted into a reservation.
#[derive(Clone, Debug)]
struct Inside {
    job: Job,
    /// Planned start, or actual start once running.
    start: Time,
    /// Predicted end: start + estimate, later after an overrun.
    end: Time,
    running: bool,
}

/// One admitted reservation with the jobs submitted into it.
#[derive(Clone, Debug)]
struct Held {
    r: AdvanceReservation,
    /// The reservation's own processors over time, with its jobs' slots taken out.
    profile: Profile,
    /// Its jobs in arrival order.
    jobs: Vec<Inside>,
}

impl Held {
    /// Earliest start of `job` inside, if it can end by the reservation's end.
    fn place(&self, now: Time, job: &Job) -> Result<Time, String> {
        let r = &self.r;
        if job.procs > r.procs {
            return Err(format!(
                "it needs {} processors, the reservation holds {}",
                job.procs, r.procs
            ));
        }
        let from = now.max(r.start);
        let t = self.profile.earliest(from, job.procs, job.estimate);
        if t + job.estimate > r.end {
            return Err(format!(
                "its estimate of {} s does not end by the reservation's end at {} (earliest start inside: {t})",
                job.estimate, r.end
            ));
        }
        Ok(t)
    }

    /// After an early end inside, the waiting jobs move up in arrival order.
    fn compress(&mut self, now: Time) {
        for i in 0..self.jobs.len() {
            let j = &self.jobs[i];
            if j.running || j.start <= now {
                continue;
            }
            let (procs, estimate, old) = (j.job.procs, j.job.estimate, j.start);
            self.profile.release(old, old + estimate, procs);
            let t = self
                .profile
                .earliest(now.max(self.r.start), procs, estimate);
            self.profile.reserve(t, t + estimate, procs);
            self.jobs[i].start = t;
            self.jobs[i].end = t + estimate;
        }
    }
}

/// What a cancelled reservation held: its jobs go back to the policy's general queue.
#[derive(Debug, Default)]
pub struct Released {
    /// The reservation.
    pub reservation: Option<AdvanceReservation>,
    /// Its waiting jobs, to be submitted again without it.
    pub waiting: Vec<Job>,
    /// Its running jobs as (job, processors, predicted end), to be held on the machine itself.
    pub running: Vec<(JobId, u32, Time)>,
}

/// The checks every policy makes first: a non-empty interval and processor count, not in the
/// past.
pub fn check_request(now: Time, r: &AdvanceReservation) -> Result<(), ReservationRefused> {
    if r.end <= r.start || r.procs == 0 {
        return Err(ReservationRefused::Empty {
            id: r.id,
            start: r.start,
            end: r.end,
            procs: r.procs,
        });
    }
    if r.start < now {
        return Err(ReservationRefused::InPast {
            id: r.id,
            start: r.start,
            now,
        });
    }
    Ok(())
}

/// The refusal of a job naming reservation `id`, which is not held.
fn not_held(job: &Job, id: ReservationId) -> Rejection {
    Rejection::ReservationNotHeld {
        job: job.id,
        reservation: id,
    }
}

/// The admitted reservations of one machine and the jobs submitted into them.
#[derive(Clone, Debug, Default)]
pub struct Book {
    held: BTreeMap<ReservationId, Held>,
    of_job: FxHashMap<JobId, ReservationId>,
}

impl Book {
    /// Admits `r` on `machine` if `profile` (the current plan of a machine of `capacity`
    /// processors, from `now`) has its processors free for its whole interval; the caller then
    /// blocks them. The admitted reservation names `machine`.
    pub fn admit(
        &mut self,
        now: Time,
        r: &AdvanceReservation,
        machine: MachineId,
        capacity: u32,
        profile: &Profile,
    ) -> Result<(), ReservationRefused> {
        let id = r.id;
        check_request(now, r)?;
        if let Some(m) = r.machine.filter(|&m| m != machine) {
            return Err(ReservationRefused::Unfit {
                id,
                why: format!("machine {m} is not part of this site (its machine is {machine})"),
            });
        }
        if let Some(l) = r.licences.first() {
            return Err(ReservationRefused::Unfit {
                id,
                why: format!("licence {l}: this site has no licences"),
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
        let mut r = r.clone();
        r.machine = Some(machine);
        self.held.insert(
            id,
            Held {
                profile: Profile::new(r.procs),
                r,
                jobs: Vec::new(),
            },
        );
        Ok(())
    }

    /// Takes a reservation out, with the jobs it held.
    pub fn cancel(&mut self, id: ReservationId) -> Released {
        let Some(h) = self.held.remove(&id) else {
            return Released::default();
        };
        let mut out = Released {
            reservation: Some(h.r),
            ..Released::default()
        };
        for j in h.jobs {
            self.of_job.remove(&j.job.id);
            if j.running {
                out.running.push((j.job.id, j.job.procs, j.end));
            } else {
                let mut job = j.job;
                job.reservation = None;
                out.waiting.push(job);
            }
        }
        out
    }

    /// Takes out the reservations that ended by `now` and hold no job.
    pub fn expire(&mut self, now: Time) -> Vec<AdvanceReservation> {
        let ended: Vec<ReservationId> = self
            .held
            .values()
            .filter(|h| h.r.end <= now && h.jobs.is_empty())
            .map(|h| h.r.id)
            .collect();
        ended
            .iter()
            .filter_map(|id| self.held.remove(id))
            .map(|h| h.r)
            .collect()
    }

    /// Whether no reservation is held.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// The reservations held, by identifier.
    pub fn list(&self) -> Vec<AdvanceReservation> {
        self.held.values().map(|h| h.r.clone()).collect()
    }

    /// The first start of a reservation after `now`.
    pub fn next_start_after(&self, now: Time) -> Option<Time> {
        self.held
            .values()
            .map(|h| h.r.start)
            .filter(|&s| s > now)
            .min()
    }

    /// A machine of `capacity` from `now`: the running jobs until their predicted ends, then
    /// every reservation (see [`Book::block_in`]). The base every placement starts from.
    pub fn availability(&self, now: Time, capacity: u32, running: &RunningSet) -> Profile {
        let mut p = Profile::running_until(capacity, now, running.ends_after(now));
        self.block_in(&mut p, now);
        p
    }

    /// Blocks every reservation still running or ahead at `now` in `profile`, and the part of
    /// any job inside that overran past its reservation's end.
    pub fn block_in(&self, profile: &mut Profile, now: Time) {
        for h in self.held.values() {
            if h.r.end > now {
                profile.reserve(h.r.start.max(now), h.r.end, h.r.procs);
            }
            for j in h.jobs.iter().filter(|j| j.running && j.end > h.r.end) {
                profile.reserve(h.r.end.max(now), j.end, j.job.procs);
            }
        }
    }

    /// Takes `job`, which names a reservation, into it at its earliest start inside.
    pub fn submit(&mut self, now: Time, job: &Job) -> Result<(), Rejection> {
        let id = job.reservation.expect("a job with a reservation");
        let refuse = |why: String| Rejection::Reservation {
            job: job.id,
            reservation: id,
            why,
        };
        if self.of_job.contains_key(&job.id) {
            return Err(Rejection::Duplicate(job.id));
        }
        if job.estimate < 1 {
            return Err(Rejection::BadEstimate {
                job: job.id,
                estimate: job.estimate,
            });
        }
        let h = self.held.get_mut(&id).ok_or_else(|| not_held(job, id))?;
        let t = h.place(now, job).map_err(refuse)?;
        h.profile.reserve(t, t + job.estimate, job.procs);
        h.jobs.push(Inside {
            job: job.clone(),
            start: t,
            end: t + job.estimate,
            running: false,
        });
        self.of_job.insert(job.id, id);
        Ok(())
    }

    /// After a restart of the service: `job`, submitted into its reservation, has been running
    /// since `started` on `procs` processors. Returns the stretch past the reservation's end that
    /// the machine must hold for it when its predicted end lies beyond (as after an overrun).
    pub fn restore_running(
        &mut self,
        now: Time,
        job: &Job,
        started: Time,
        procs: u32,
    ) -> Result<Option<(Time, Time, u32)>, Rejection> {
        let id = job.reservation.expect("a job with a reservation");
        if self.of_job.contains_key(&job.id) {
            return Err(Rejection::Duplicate(job.id));
        }
        let h = self.held.get_mut(&id).ok_or_else(|| not_held(job, id))?;
        let end = (started + job.estimate.max(1)).max(now + 1);
        h.profile.reserve(now, end, procs);
        h.jobs.push(Inside {
            job: job.clone(),
            start: started,
            end,
            running: true,
        });
        self.of_job.insert(job.id, id);
        let from = h.r.end.max(now);
        Ok((end > from).then_some((from, end, procs)))
    }

    /// Whether `job` is inside a reservation.
    pub fn holds(&self, job: JobId) -> bool {
        self.of_job.contains_key(&job)
    }

    /// Starts the jobs inside whose planned start has come, on `machine`.
    pub fn start_due(&mut self, now: Time, machine: MachineId, starts: &mut Vec<Start>) {
        for h in self.held.values_mut() {
            for i in 0..h.jobs.len() {
                let j = &h.jobs[i];
                if j.running || j.start > now {
                    continue;
                }
                let (procs, estimate, old) = (j.job.procs, j.job.estimate, j.start);
                if old < now {
                    // Woken late: the slot moves to the actual start.
                    h.profile.release(old, old + estimate, procs);
                    h.profile.reserve(now, now + estimate, procs);
                }
                let j = &mut h.jobs[i];
                (j.start, j.end, j.running) = (now, now + estimate, true);
                starts.push(Start::on(j.job.id, machine, procs));
            }
        }
    }

    /// The first planned start of a waiting job inside.
    pub fn next_due(&self) -> Option<Time> {
        self.held
            .values()
            .flat_map(|h| h.jobs.iter().filter(|j| !j.running).map(|j| j.start))
            .min()
    }

    /// A job inside ended (or a waiting one left): its slot is freed and the jobs after it
    /// move up. `None` if the job is not inside a reservation; otherwise the stretch past the
    /// reservation's end the machine held for it after an overrun, now free, if any.
    pub fn remove(&mut self, now: Time, job: JobId) -> Option<Option<(Time, Time, u32)>> {
        let id = self.of_job.remove(&job)?;
        let h = self.held.get_mut(&id).expect("a job's reservation is held");
        let i = h
            .jobs
            .iter()
            .position(|j| j.job.id == job)
            .expect("indexed");
        let j = h.jobs.remove(i);
        let from = if j.running { now } else { j.start };
        if j.end > from {
            h.profile.release(from, j.end, j.job.procs);
        }
        h.compress(now);
        let past = h.r.end.max(now);
        Some((j.running && j.end > past).then_some((past, j.end, j.job.procs)))
    }

    /// A job inside is still running at its predicted end: it now ends at `predicted_end`.
    /// Returns the stretch past the reservation's end that the machine must now hold for it.
    pub fn overrun(
        &mut self,
        now: Time,
        job: JobId,
        predicted_end: Time,
    ) -> Option<(Time, Time, u32)> {
        let id = *self.of_job.get(&job)?;
        let h = self.held.get_mut(&id)?;
        let r_end = h.r.end;
        let j = h.jobs.iter_mut().find(|j| j.job.id == job)?;
        let old = j.end;
        h.profile.reserve(old.max(now), predicted_end, j.job.procs);
        j.end = predicted_end;
        let from = old.max(r_end).max(now);
        (predicted_end > from).then_some((from, predicted_end, j.job.procs))
    }

    /// Waiting and running jobs inside reservations.
    pub fn counts(&self) -> (usize, usize) {
        let all = self.of_job.len();
        let running = self
            .held
            .values()
            .flat_map(|h| h.jobs.iter())
            .filter(|j| j.running)
            .count();
        (all - running, running)
    }

    /// The waiting jobs inside, with their planned starts, as (job, start, estimate, processors).
    pub fn planned(&self) -> Vec<(JobId, Time, Duration, u32)> {
        self.held
            .values()
            .flat_map(|h| h.jobs.iter().filter(|j| !j.running))
            .map(|j| (j.job.id, j.start, j.job.estimate, j.job.procs))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Job, JobId, MachineId};
    use crate::policy::test_util::{planned, starts};
    use crate::policy::{PolicyConfig, PolicyKind, Rejection};
    use rand::{RngExt, SeedableRng};

    fn res(id: u64, start: Time, end: Time, procs: u32) -> AdvanceReservation {
        AdvanceReservation::new(id, start, end, procs)
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
            let on_m0 = AdvanceReservation {
                machine: Some(MachineId(0)),
                ..res(7, 150, 200, 5)
            };
            assert_eq!(p.advance_reservations(), [on_m0], "it names the machine");
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

    fn into(r: u64, mut job: Job) -> Job {
        job.reservation = Some(ReservationId(r));
        job
    }

    /// Ten processors, job 1 on all of them until 100, reservation r1 of 4 on [100, 200). Job 2
    /// (4 for 50 s) goes into it at 100 and job 3 (4 for 50 s) after it at 150; job 3 for 60 s
    /// would end past 200 and a job of 5 does not fit 4: both refused, naming why. Job 6 (6 for
    /// 100 s, no reservation) runs beside it from 100. Job 2 ends early at 120: job 3 moves up to
    /// 120. The reservation is given up while job 3 runs: it keeps running, now on the machine's
    /// own processors, and job 7 (4, no reservation) waits for it.
    #[test]
    fn jobs_run_inside_their_reservation_only() {
        for kind in PLANNING {
            let mut p = PolicyConfig::new(kind).build_single(MachineId(0), 10);
            let p = p.as_mut();
            p.submit(0, &Job::new(1, 0, 10, 100, 100)).unwrap();
            assert_eq!(starts(p, 0), [1]);
            p.admit_reservation(0, &res(1, 100, 200, 4)).unwrap();
            p.submit(1, &into(1, Job::new(2, 1, 4, 50, 20))).unwrap();
            p.submit(1, &into(1, Job::new(3, 1, 4, 50, 50))).unwrap();
            let e = p
                .submit(1, &into(1, Job::new(4, 1, 4, 60, 60)))
                .unwrap_err();
            assert_eq!(
                e.to_string(),
                "job 4 cannot run in reservation r1: its estimate of 60 s does not end by the reservation's end at 200 (earliest start inside: 200)"
            );
            let e = p
                .submit(1, &into(1, Job::new(5, 1, 5, 10, 10)))
                .unwrap_err();
            assert_eq!(
                e.to_string(),
                "job 5 cannot run in reservation r1: it needs 5 processors, the reservation holds 4"
            );
            let e = p
                .submit(1, &into(9, Job::new(5, 1, 1, 10, 10)))
                .unwrap_err();
            assert_eq!(
                e.to_string(),
                "job 5 cannot run in reservation r9: no such reservation is held (unknown, cancelled or ended)"
            );
            p.submit(2, &Job::new(6, 2, 6, 100, 100)).unwrap();
            assert!(starts(p, 2).is_empty());
            assert_eq!(planned(p), [(2, 100), (6, 100), (3, 150)], "{kind:?}");
            assert_eq!((p.waiting_len(), p.running_len()), (3, 1));
            p.terminate(100, JobId(1));
            let mut s = starts(p, 100);
            s.sort();
            assert_eq!(s, [2, 6], "{kind:?}");
            p.terminate(120, JobId(2));
            assert_eq!(p.next_wakeup(), Some(120), "{kind:?}: job 3 moved up");
            assert_eq!(starts(p, 120), [3], "{kind:?}");
            assert!(p.cancel_reservation(130, ReservationId(1)));
            p.submit(130, &Job::new(7, 130, 4, 10, 10)).unwrap();
            assert!(
                starts(p, 130).is_empty(),
                "{kind:?}: jobs 3 and 6 hold all 10"
            );
            p.terminate(170, JobId(3));
            assert_eq!(starts(p, 170), [7], "{kind:?}");
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
        for kind in PLANNING {
            let mut p = PolicyConfig::new(kind).build_single(MachineId(0), 10);
            let elsewhere = AdvanceReservation {
                machine: Some(MachineId(3)),
                ..res(1, 10, 20, 1)
            };
            let e = p.admit_reservation(0, &elsewhere).unwrap_err();
            assert_eq!(
                e.to_string(),
                "reservation r1: machine m3 is not part of this site (its machine is m0)"
            );
            let licensed = AdvanceReservation {
                licences: vec![crate::model::LicenceId(2)],
                ..res(1, 10, 20, 1)
            };
            let e = p.admit_reservation(0, &licensed).unwrap_err();
            assert_eq!(
                e.to_string(),
                "reservation r1: licence lic2: this site has no licences"
            );
            assert!(p.advance_reservations().is_empty(), "{kind:?}");
        }
    }

    /// Random jobs (ending early), random reservation requests, and jobs submitted into the
    /// reservations held, on every planning policy: at every second the running jobs outside
    /// reservations and the reservations in force never hold more than the machine, the jobs
    /// inside a reservation run only while it is in force and on at most its processors, every
    /// admitted reservation stays held until it ends or is cancelled (its jobs then queue like
    /// any other), some requests and some jobs are refused, and every accepted job runs.
    #[test]
    fn running_jobs_and_reservations_never_exceed_the_machine() {
        let mut totals = (0, 0, 0, 0);
        // The planning policies, and the queue-based ones that check every start against the
        // reservations.
        let kinds: Vec<PolicyKind> = PLANNING
            .into_iter()
            .chain([PolicyKind::Fcfs, PolicyKind::Easy, PolicyKind::SjfBf])
            .collect();
        for (n, kind) in kinds.iter().cycle().take(24).enumerate() {
            let seed = n as u64;
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let cap = 12u32;
            let mut p = PolicyConfig::new(*kind).build_single(MachineId(0), cap);
            let mut running: Vec<(Time, u64, u32)> = Vec::new();
            let mut runs = std::collections::HashMap::new();
            let mut held: Vec<AdvanceReservation> = Vec::new();
            let mut inside: std::collections::HashMap<u64, ReservationId> = Default::default();
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
                            held.push(AdvanceReservation {
                                machine: Some(MachineId(0)),
                                ..r
                            });
                        }
                        Err(ReservationRefused::Conflict { .. }) => refused += 1,
                        Err(e) => panic!("{kind:?}: {e}"),
                    }
                }
                if rng.random_bool(0.03) && !held.is_empty() {
                    let r = held[rng.random_range(0..held.len())].clone();
                    let left = r.end - now.max(r.start);
                    let estimate = rng.random_range(1..=left + 20);
                    let run = rng.random_range(1..=estimate);
                    let mut job =
                        Job::new(jobs + 1, now, rng.random_range(1..=r.procs), estimate, run);
                    job.reservation = Some(r.id);
                    match p.submit(now, &job) {
                        Ok(()) => {
                            jobs += 1;
                            runs.insert(jobs, (run, job.procs));
                            inside.insert(jobs, r.id);
                            totals.2 += 1;
                        }
                        Err(
                            Rejection::Reservation { .. } | Rejection::ReservationNotHeld { .. },
                        ) => totals.3 += 1,
                        Err(e) => panic!("{kind:?}: {e}"),
                    }
                }
                if rng.random_bool(0.002) && !held.is_empty() {
                    let r = held.swap_remove(rng.random_range(0..held.len()));
                    assert!(p.cancel_reservation(now, r.id), "{kind:?}: {} held", r.id);
                    inside.retain(|_, id| *id != r.id);
                }
                for id in starts(p.as_mut(), now) {
                    let (run, procs) = runs[&id];
                    running.push((now + run, id, procs));
                    started += 1;
                }
                let in_force = |id: &ReservationId| {
                    held.iter()
                        .find(|r| r.id == *id && r.start <= now && now < r.end)
                };
                let mut busy = 0;
                let mut busy_inside: std::collections::HashMap<ReservationId, u32> =
                    Default::default();
                for &(_, id, procs) in &running {
                    match inside.get(&id) {
                        Some(r) => {
                            assert!(
                                in_force(r).is_some(),
                                "{kind:?} seed {seed} at {now}: job {id} runs outside {r}"
                            );
                            *busy_inside.entry(*r).or_default() += procs;
                        }
                        None => busy += procs,
                    }
                }
                for (r, b) in &busy_inside {
                    let procs = in_force(r).unwrap().procs;
                    assert!(
                        *b <= procs,
                        "{kind:?} seed {seed} at {now}: {b} busy in {r} of {procs}"
                    );
                }
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
            (totals.0, totals.1) = (totals.0 + admitted, totals.1 + refused);
        }
        assert!(
            totals.0 > 100 && totals.1 > 20 && totals.2 > 100 && totals.3 > 20,
            "reservations admitted / refused, jobs inside accepted / refused: {totals:?}"
        );
    }
}
