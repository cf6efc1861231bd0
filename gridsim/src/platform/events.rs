//! What happens to the grid besides its job stream, in a platform run: sites lost, and advance
//! reservations asked for at the grid's entry point.
//!
//! **Sites lost**, a what-if of operators: a site's services die at a given time and never come
//! back. The grid runner sees the site's link close at that time and, by the rule the live
//! meta-scheduler applies, marks the site down once the link has stayed closed for
//! `down_after_ms` (Pasquali, thesis D3: the meta-scheduler dispatches only to the clusters it can
//! reach). The jobs the site had not started are then dispatched again elsewhere (or stay with it
//! when no other site can take them); the jobs it was running are lost with it, as a live grid
//! loses the jobs of a site whose scheduler and agents were killed. A lost site does nothing more:
//! no pass, no end, every hold or reservation asked of it unanswered.
//!
//! **Advance reservations** (Streit, thesis §3.2: fixed-time requests to a planning system) go to
//! the grid runner as the live meta-scheduler's `Reserve` does: it checks a request, gives its id
//! and asks its site, here answered at once by the site's cluster runner, whose policy admits or
//! refuses it; a job names its reservation by the request's own number, which the engine turns
//! into the grid's id (a job naming a request the grid did not hold is refused).
//!
//! **Cancellations**: a user cancels a job at a given second, wherever it is (waiting at the
//! meta level, queued or running at its cluster), as the live `Cancel` does; the jobs that
//! depend on it hear how it ended (cancelled before or after it began running).

use super::{Ev, PlatformError, Sim};
use gridsched_core::grid::{
    Effect as GridEffect, Input as GridInput, ReservationAnswer, ReservationRequest, Standing,
};
use gridsched_core::model::{ClusterId, Job, JobId, Outcome, ReservationId, Time, Workflow};
use gridsched_core::policy::AdvanceReservation;
use gridsched_core::runner::Input;

/// What happens to the grid during a run besides its job stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GridEvents {
    /// How long the grid runner waits, after a site's link closed, before it marks the site down
    /// (the live meta-scheduler's `links.site_down_after_ms`).
    pub down_after_ms: u64,
    /// Each lost site (cluster) and the second it is lost at.
    pub lost: Vec<(Time, ClusterId)>,
    /// Advance reservations asked for, in order of time.
    pub reservations: Vec<ReservationAsk>,
    /// Order each second as the live services see it: the second's submissions first, then its
    /// other events (a live job's end comes the fraction of a second after its start's, later
    /// than the whole-second submissions), each followed by a pass of the clusters it changed (a
    /// live local scheduler passes on every message), instead of every event, then every
    /// submission, then one pass per cluster.
    pub live_order: bool,
    /// Jobs cancelled by their users, with the second (after that second's submissions).
    pub cancels: Vec<(Time, JobId)>,
    /// Workflows submitted (each node released as a job once its parents completed).
    pub workflows: Vec<WorkflowSubmission>,
}

/// One workflow submitted at the grid's entry point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkflowSubmission {
    /// When (with that second's other events, before its job submissions).
    pub at: Time,
    /// Its id (its nodes take the ids after it: none may be a job's of the stream).
    pub id: JobId,
    /// It.
    pub workflow: Workflow,
}

/// One advance reservation asked for at the grid's entry point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReservationAsk {
    /// When it is asked for (before the submissions of that second).
    pub at: Time,
    /// The number jobs name it by (`Job::reservation`).
    pub name: u64,
    /// The request.
    pub request: ReservationRequest,
}

impl GridEvents {
    /// Whether the run loses any site.
    pub fn loses(&self) -> bool {
        !self.lost.is_empty()
    }
}

impl Sim<'_, '_> {
    /// The user cancels `job` at `t`: it leaves its cluster's runner (if it is at one) and the
    /// grid runner hears of it. A split job is not cancelled (its fragments run on).
    pub(super) fn cancel<E>(
        &mut self,
        t: Time,
        job: JobId,
        dirty: &mut [bool],
    ) -> Result<(), PlatformError<E>> {
        if self.splits.contains_key(&job) {
            return Ok(());
        }
        let at = (0..self.runners.len())
            .map(|c| ClusterId(c as u32))
            .find(|&c| self.flights.contains_key(&(job, c)));
        if let Some(p) = self.staging.as_mut().and_then(|s| s.forget(job)) {
            // Waiting at its site for its inputs: it never reached the site's scheduler.
            self.stats.cancelled += 1;
            let outcome = Outcome::Cancelled { started: false };
            self.left_grid(job, outcome, t, None);
            let site = p.site.index();
            let ended = GridInput::Ended {
                job,
                site,
                outcome,
                exit: None,
            };
            return self.feed(t, ended, dirty);
        }
        let Some(c) = at else {
            if self.grid.contains(job) {
                self.stats.cancelled += 1;
                let before = Outcome::Cancelled { started: false };
                self.left_grid(job, before, t, None);
            }
            return self.feed(t, GridInput::Cancel { job }, dirty);
        };
        let flight = self.flights.remove(&(job, c)).expect("found");
        self.leave_cluster(t, job, c.index());
        self.stats.cancelled += 1;
        dirty[c.index()] = true;
        let started = flight.generation.is_some();
        self.left_grid(job, Outcome::Cancelled { started }, t, None);
        let ended = GridInput::Ended {
            job,
            site: c.index(),
            outcome: Outcome::Cancelled { started },
            exit: None,
        };
        self.feed(t, ended, dirty)
    }

    /// Whether `cluster` has been lost.
    pub(super) fn is_lost(&self, cluster: ClusterId) -> bool {
        self.lost.get(cluster.index()).copied().unwrap_or(false)
    }

    /// `cluster` is lost at `t`: its link closes now, and the grid runner is given the time again
    /// when the site-down timeout has run out.
    pub(super) fn lose(&mut self, t: Time, cluster: ClusterId, down_after_ms: u64) -> GridInput {
        self.lost[cluster.index()] = true;
        let seconds = i64::try_from(down_after_ms.div_ceil(1000)).unwrap_or(i64::MAX / 2);
        self.push(t.saturating_add(seconds), Ev::Tick);
        GridInput::Link {
            site: cluster.index(),
            reachable: false,
            at_ms: at_ms(t),
        }
    }

    /// Job `job`, queued at lost site `from`, was taken from it by the grid runner: it leaves
    /// that cluster's runner.
    pub(super) fn withdraw(&mut self, t: Time, job: JobId, from: usize) {
        if let Some(s) = self.staging.as_mut() {
            s.forget(job);
        }
        if self
            .flights
            .remove(&(job, ClusterId(from as u32)))
            .is_none()
        {
            return;
        }
        self.leave_cluster(t, job, from);
    }

    /// `job` leaves cluster `c`'s runner (waiting or running there), and its accounting.
    fn leave_cluster(&mut self, t: Time, job: JobId, c: usize) {
        let runner = &mut self.runners[c];
        let (procs, licences) = runner
            .job(job)
            .map_or((0, 0), |j| (u64::from(j.procs), j.licences.len() as u64));
        let mut none = Vec::new();
        if runner.on(t, Input::Cancel { job }, &mut none).is_ok() {
            let l = &mut self.levels[c];
            l.jobs -= 1;
            l.req_procs -= procs;
            l.req_licences -= licences;
        }
    }

    /// The jobs lost with their sites: those still at a lost cluster when the run ends (running
    /// there, or kept there when no other site could take them), by job id.
    pub(super) fn lost_jobs(&self) -> Vec<(JobId, ClusterId)> {
        let mut out: Vec<(JobId, ClusterId)> = (self.runners.iter().enumerate())
            .filter(|(c, _)| self.lost[*c])
            .flat_map(|(c, r)| r.jobs().map(move |(j, _)| (j.id, ClusterId(c as u32))))
            .collect();
        out.sort_unstable();
        out
    }
}

/// The monotonic milliseconds the grid runner is given at second `t` of a run.
pub(super) fn at_ms(t: Time) -> u64 {
    u64::try_from(t).unwrap_or(0).saturating_mul(1000)
}

impl Sim<'_, '_> {
    /// Reservation request `ask` reaches the grid runner at `t`; the reservation it asks of its
    /// site is named `ask.name`.
    pub(super) fn reserve<E>(
        &mut self,
        t: Time,
        ask: &ReservationAsk,
        dirty: &mut [bool],
    ) -> Result<(), PlatformError<E>> {
        let input = GridInput::Reserve {
            request: ask.request.clone(),
            at_ms: at_ms(t),
        };
        let mut out = Vec::new();
        self.grid
            .on(t, input, &mut out)
            .map_err(|e| PlatformError::BadDecision {
                time: t,
                cluster: ClusterId(0),
                job: JobId(0),
                why: e.to_string(),
            })?;
        for e in out {
            match &e {
                GridEffect::AskReservation { reservation } => {
                    self.named.insert(ask.name, (reservation.id, false));
                }
                GridEffect::ReservationRefused { .. } => self.stats.reservations_refused += 1,
                _ => {}
            }
            self.carry_out(t, e, dirty)?;
        }
        // Held when its site's answer confirmed it (fed back at once, above).
        if let Some(named) = self.named.get_mut(&ask.name) {
            named.1 = self
                .grid
                .reservation(named.0)
                .is_some_and(|r| matches!(r.standing, Standing::Held { .. }));
        }
        Ok(())
    }

    /// The site of reservation `r` is asked to hold it: its cluster runner's policy admits it
    /// (the answer gives the reserved machine's score) or refuses it; a lost site never answers.
    pub(super) fn ask_reservation(
        &mut self,
        t: Time,
        r: &gridsched_core::grid::Reservation,
        dirty: &mut [bool],
    ) -> Option<GridInput> {
        if self.lost[r.site] {
            return None;
        }
        dirty[r.site] = true;
        let ask = Input::Reserve {
            reservation: AdvanceReservation::new(r.id.0, r.start, r.end, r.procs),
        };
        let runner = &mut self.runners[r.site];
        let answer = match runner.on(t, ask, &mut self.effects) {
            Ok(()) => {
                self.stats.reservations_held += 1;
                let held = runner.advance_reservations();
                let machine = held.iter().find(|a| a.id == r.id).and_then(|a| a.machine);
                let speed = machine.map(|m| self.platform.machines[m.index()].benchmark);
                ReservationAnswer::Held { speed }
            }
            Err(e) => {
                self.stats.reservations_refused += 1;
                let site = &self.platform.clusters[r.site].name;
                ReservationAnswer::Refused {
                    why: format!("refused by {site}: {e}"),
                }
            }
        };
        Some(GridInput::ReservationAnswer {
            reservation: r.id,
            answer,
        })
    }

    /// Job `job` names the reservation its driver asked for by number: it gets the grid's id of
    /// that reservation; `Err` with the reason when the grid does not hold one by that number.
    pub(super) fn name_reservation(&self, job: &mut Job) -> Result<(), String> {
        let Some(name) = job.reservation else {
            return Ok(());
        };
        match self.named.get(&name.0) {
            Some(&(id, true)) => {
                job.reservation = Some(id);
                Ok(())
            }
            _ => Err(format!("reservation {} was not held by the grid", name.0)),
        }
    }
}

/// The grid's ids of the reservations asked for, by the number jobs name them by, with whether
/// their sites hold them.
pub(super) type Named = rustc_hash::FxHashMap<u64, (ReservationId, bool)>;
