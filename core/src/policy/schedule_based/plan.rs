//! One machine's schedule for the schedule-based scheduler: its running jobs as a fixed base, the
//! waiting jobs planned on it with their starts, the availability profile of both, and the
//! figures the EG-EDF weight reads (makespan, jobs ending within their deadline) — Klusáček &
//! Rudová, as reported in the thesis §5.2.1 (spec `two-level-grid-scheduler.md` D10.2).
//!
//! Planned jobs are kept by planned start (ties: earlier arrival). Three ways to place jobs:
//! * [`MachinePlan::gap`] + [`MachinePlan::insert`]: the job takes the earliest start from which
//!   its processors stay free for its whole run *given every job of the machine*, so nobody else
//!   moves; it is a gap only when the whole run lies inside the machine's schedule (it ends by
//!   the makespan) — the idle tail after the last job is not a gap, an idle machine has none;
//!   in our reading ([`GapReading::Present`]) also when it starts now (the processors free now,
//!   until the next planned start or for good), so an idle machine has one from now;
//! * [`MachinePlan::layout`] with a prefix kept: the Earliest Deadline First insertion (the jobs
//!   before the insertion point keep their starts, the new job and the jobs after it are placed
//!   again, in that order, each at its earliest start);
//! * [`MachinePlan::compact`]: every planned job placed again in planned-start order, each at its
//!   earliest start from `now`. With running jobs ending no later than predicted this never delays
//!   a job (each job's old slot stays free: the jobs placed before it started no later and end no
//!   later than before), so it re-anchors the plan after an early end; after an overrun it shifts
//!   the jobs that must move.

use super::GapReading;
use crate::model::{Duration, JobId, Time};
use crate::structures::Profile;

/// A waiting job's place in a machine's schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Planned {
    /// The job.
    pub job: JobId,
    /// Arrival rank at the policy (ties on the planned start).
    pub seq: u64,
    /// Processors it holds there (the whole machine without space sharing).
    pub width: u32,
    /// Its run time on this machine (estimate scaled by the machine's speed).
    pub dur: Duration,
    /// Planned start.
    pub start: Time,
    /// Its deadline, if any.
    pub deadline: Option<Time>,
}

impl Planned {
    /// Planned end.
    pub fn end(&self) -> Time {
        self.start + self.dur
    }

    /// Has a deadline and is planned to end by it.
    pub fn met(&self) -> bool {
        self.deadline.is_some_and(|d| self.end() <= d)
    }

    /// Has a deadline and is planned to end after it (a delayed job).
    pub fn late(&self) -> bool {
        self.deadline.is_some_and(|d| self.end() > d)
    }
}

/// What the running jobs of a machine hold: set when the plan is rebuilt, extended at each start.
#[derive(Clone, Debug)]
pub(super) struct Base {
    /// Free processors with only the running jobs (to their predicted ends).
    pub profile: Profile,
    /// The latest predicted end of a running job (0 when none runs).
    pub makespan: Time,
    /// Running jobs with a deadline predicted to end by it.
    pub nondelayed: u32,
}

/// One machine's schedule.
#[derive(Clone, Debug)]
pub(super) struct MachinePlan {
    /// The running jobs.
    pub base: Base,
    /// Waiting jobs planned here, by (start, seq).
    pub jobs: Vec<Planned>,
    /// Free processors with the running and the planned jobs.
    pub profile: Profile,
    /// Expected completion of the last job (running or planned) here; 0 when there is none.
    pub makespan: Time,
    /// Jobs (running or planned) with a deadline expected to end by it.
    pub nondelayed: u32,
    /// Planned jobs expected to end after their deadline.
    pub delayed: u32,
}

impl MachinePlan {
    /// A machine of `capacity` processors running nothing.
    pub fn idle(capacity: u32) -> MachinePlan {
        let base = Base {
            profile: Profile::new(capacity),
            makespan: 0,
            nondelayed: 0,
        };
        MachinePlan {
            profile: base.profile.clone(),
            base,
            jobs: Vec::new(),
            makespan: 0,
            nondelayed: 0,
            delayed: 0,
        }
    }

    /// Recomputes makespan and deadline counts from the base and the planned jobs.
    pub fn count(&mut self) {
        self.makespan = self
            .jobs
            .iter()
            .map(Planned::end)
            .fold(self.base.makespan, Time::max);
        self.nondelayed =
            self.base.nondelayed + self.jobs.iter().filter(|p| p.met()).count() as u32;
        self.delayed = self.jobs.iter().filter(|p| p.late()).count() as u32;
    }

    /// The earliest gap able to host a job of `width` processors for `dur`: the earliest start
    /// `t ≥ now` from which the processors stay free for the whole run, if the run ends by the
    /// machine's makespan (as printed), or — [`GapReading::Present`] — also if `t = now`: the
    /// processors free now, which stay free until the next planned start (for good when nothing
    /// is planned), are a gap, whatever the makespan. A later start would end later still, so
    /// the earliest decides.
    pub fn gap(&self, now: Time, width: u32, dur: Duration, reading: GapReading) -> Option<Time> {
        let t = self.profile.earliest(now, width, dur);
        let present = reading == GapReading::Present && t == now;
        (present || t + dur <= self.makespan).then_some(t)
    }

    /// Adds `p` at its start, which must be free for it (a gap found by [`MachinePlan::gap`]).
    pub fn insert(&mut self, p: Planned) {
        self.profile.reserve(p.start, p.end(), p.width);
        let at = self
            .jobs
            .partition_point(|q| (q.start, q.seq) < (p.start, p.seq));
        self.jobs.insert(at, p);
        self.count();
    }

    /// The machine with `keep` planned as they are, then `place` placed in order, each at its
    /// earliest start from `now` (a new machine plan; `self` is unchanged).
    pub fn layout<'a>(
        &self,
        now: Time,
        keep: &[Planned],
        place: impl IntoIterator<Item = &'a Planned>,
    ) -> MachinePlan {
        let mut profile = self.base.profile.clone();
        let mut jobs = Vec::with_capacity(self.jobs.len() + 1);
        for p in keep {
            profile.reserve(p.start, p.end(), p.width);
            jobs.push(p.clone());
        }
        for p in place {
            let start = profile.earliest(now, p.width, p.dur);
            profile.reserve(start, start + p.dur, p.width);
            jobs.push(Planned { start, ..p.clone() });
        }
        jobs.sort_by_key(|p| (p.start, p.seq));
        let mut out = MachinePlan {
            base: self.base.clone(),
            jobs,
            profile,
            makespan: 0,
            nondelayed: 0,
            delayed: 0,
        };
        out.count();
        out
    }

    /// Where the Earliest Deadline First insertion puts a job with `deadline` among the planned
    /// jobs (in planned-start order): before the first job with a later deadline; jobs without
    /// a deadline count as the latest, and equal deadlines keep arrival order.
    pub fn edf_position(&self, deadline: Option<Time>) -> usize {
        let key = |d: Option<Time>| d.unwrap_or(Time::MAX);
        self.jobs
            .iter()
            .position(|q| key(q.deadline) > key(deadline))
            .unwrap_or(self.jobs.len())
    }

    /// The plan with `p` inserted in EDF order (see [`MachinePlan::edf_position`]).
    pub fn with_edf(&self, now: Time, p: &Planned) -> MachinePlan {
        let at = self.edf_position(p.deadline);
        self.layout(
            now,
            &self.jobs[..at],
            std::iter::once(p).chain(&self.jobs[at..]),
        )
    }

    /// Every planned job placed again in planned-start order from `now`.
    pub fn compact(&self, now: Time) -> MachinePlan {
        self.layout(now, &[], &self.jobs)
    }

    /// The plan without `job`, compacted from `now`.
    pub fn without(&self, now: Time, job: JobId) -> MachinePlan {
        self.layout(now, &[], self.jobs.iter().filter(|p| p.job != job))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AS_PRINTED: GapReading = GapReading::AsPrinted;
    const PRESENT: GapReading = GapReading::Present;

    fn planned(
        job: u64,
        width: u32,
        dur: Duration,
        start: Time,
        deadline: Option<Time>,
    ) -> Planned {
        Planned {
            job: JobId(job),
            seq: job,
            width,
            dur,
            start,
            deadline,
        }
    }

    /// A 4-processor machine running 2 processors until 100.
    fn busy() -> MachinePlan {
        let mut m = MachinePlan::idle(4);
        m.base.profile.reserve(0, 100, 2);
        m.base.makespan = 100;
        m.profile = m.base.profile.clone();
        m.count();
        m
    }

    #[test]
    fn a_gap_lies_inside_the_schedule_and_an_idle_machine_has_none() {
        assert_eq!(MachinePlan::idle(4).gap(0, 1, 10, AS_PRINTED), None);
        let m = busy();
        assert_eq!(
            m.gap(0, 2, 100, AS_PRINTED),
            Some(0),
            "2 free until the makespan"
        );
        assert_eq!(
            m.gap(0, 2, 101, AS_PRINTED),
            None,
            "would run past the makespan: the tail"
        );
        assert_eq!(
            m.gap(0, 3, 10, AS_PRINTED),
            None,
            "3 processors only from 100 = makespan"
        );
        let m = m.layout(0, &[], &[planned(1, 4, 50, 0, None)]);
        assert_eq!(m.jobs[0].start, 100);
        assert_eq!(m.makespan, 150);
        assert_eq!(m.gap(0, 3, 60, AS_PRINTED), None, "100..150 is taken");
        assert_eq!(m.gap(0, 2, 60, AS_PRINTED), Some(0), "0..60 has 2 free");
        assert_eq!(
            m.gap(10, 2, 100, AS_PRINTED),
            None,
            "2 free only until 100, then none"
        );
    }

    /// Ours: the processors free now form a gap until the next planned start (for good when
    /// nothing is planned); the as-printed gaps stay, and a later start (the tail after the
    /// running jobs, or after a planned one) still has to end by the makespan.
    #[test]
    fn in_our_reading_the_processors_free_now_are_a_gap() {
        assert_eq!(
            MachinePlan::idle(4).gap(5, 1, 10, PRESENT),
            Some(5),
            "idle: now"
        );
        let m = busy();
        assert_eq!(
            m.gap(0, 2, 101, PRESENT),
            Some(0),
            "beside the running job, past 100"
        );
        assert_eq!(
            m.gap(0, 3, 10, PRESENT),
            None,
            "3 free only from 100: not the present"
        );
        // A 2-wide job planned at 100..150: the next planned start is 100, the makespan 150.
        let m = m.layout(0, &[planned(1, 2, 50, 100, None)], &[]);
        assert_eq!((m.jobs[0].start, m.makespan), (100, 150));
        assert_eq!(m.gap(0, 2, 200, AS_PRINTED), None, "ends past the makespan");
        assert_eq!(
            m.gap(0, 2, 200, PRESENT),
            Some(0),
            "2 free now, and beside job 1"
        );
        assert_eq!(m.gap(30, 2, 200, PRESENT), Some(30));
        assert_eq!(m.gap(0, 3, 10, PRESENT), None, "3 free only from 150");
        // A 4-wide job planned at 100 on an idle machine: a job that fits now but would need
        // its processors after 100 is not in the present gap.
        let m = MachinePlan::idle(4).layout(0, &[planned(2, 4, 50, 100, None)], &[]);
        assert_eq!(
            m.gap(0, 2, 100, PRESENT),
            Some(0),
            "ends by the next planned start"
        );
        assert_eq!(
            m.gap(0, 2, 200, PRESENT),
            None,
            "only from 150, past the makespan"
        );
    }

    #[test]
    fn edf_insertion_keeps_the_prefix_and_pushes_the_rest() {
        let m = busy().layout(
            0,
            &[],
            &[
                planned(1, 4, 100, 0, Some(300)),
                planned(2, 4, 100, 0, Some(900)),
            ],
        );
        assert_eq!(
            m.jobs
                .iter()
                .map(|p| (p.job.0, p.start))
                .collect::<Vec<_>>(),
            vec![(1, 100), (2, 200)]
        );
        assert_eq!(m.edf_position(Some(400)), 1);
        assert_eq!(m.edf_position(None), 2);
        assert_eq!(m.edf_position(Some(300)), 1, "after an equal deadline");
        let n = m.with_edf(0, &planned(3, 4, 100, 0, Some(400)));
        assert_eq!(
            n.jobs
                .iter()
                .map(|p| (p.job.0, p.start))
                .collect::<Vec<_>>(),
            vec![(1, 100), (3, 200), (2, 300)]
        );
        assert_eq!((n.makespan, n.nondelayed, n.delayed), (400, 3, 0));
        let tight = m.with_edf(0, &planned(4, 4, 100, 0, Some(250)));
        assert_eq!(tight.jobs[0].job.0, 4, "before job 1 (deadline 300)");
        assert_eq!((tight.jobs[1].start, tight.delayed), (200, 0));
        assert_eq!(m.jobs.len(), 2, "tentative: the plan itself is unchanged");
    }

    #[test]
    fn compaction_moves_jobs_earlier_after_an_early_end() {
        let m = busy().layout(0, &[], &[planned(1, 4, 50, 0, Some(140))]);
        assert_eq!((m.jobs[0].start, m.delayed), (100, 1));
        let mut early = m.clone();
        early.base = MachinePlan::idle(4).base;
        let c = early.compact(30);
        assert_eq!((c.jobs[0].start, c.delayed, c.nondelayed), (30, 0, 1));
        assert!(m.without(0, JobId(1)).jobs.is_empty());
    }
}
