//! Urgent jobs on a local scheduler: a layer over any policy of one space-shared machine that
//! serves urgent jobs before typical ones and may preempt running typical jobs to start them
//! (Kurowski, Oleksiak, Piątek & Węglarz, "Impact of urgent computing on resource management
//! policies, schedules and resources utilization", §4; spec `gang-urgent-scaling.md` B.2, B.3,
//! G-B2, G-B3, G-B16).
//!
//! The layer keeps the urgent jobs in a queue of its own (a higher [`Urgency`] first, then
//! arrival) and hands the typical ones to the policy below it, which never sees an urgent job
//! as such: a running urgent job is, to it, a job already running on the machine
//! ([`Machines::restore_running`](super::Machines::restore_running)) until its end, so every
//! policy plans around it unchanged. At each pass, before the policy's own:
//!
//! 1. the head urgent job starts if the processors free now suffice; otherwise, under a
//!    preemptive mode, if the processors not held by urgent jobs suffice, running typical jobs
//!    are preempted one by one in [`VictimOrder`] until they do, and it starts (urgent jobs are
//!    never preempted); otherwise it waits, and so do the urgent jobs behind it;
//! 2. preempted typical jobs are killed and go back to the tail of the queue, from scratch
//!    (as printed, assumption 4 of §4; G-B16), or, ours, suspended and queued again with their
//!    progress ([`PreemptBy::Suspend`], resumed where they ran);
//! 3. while an urgent job waits under [`UrgentMode::NextToRun`] or
//!    [`UrgentMode::PreemptWithReservation`], the processors free now, up to its size, are held
//!    for it (its advance reservation, G-B3): the policy below sees them taken until the urgent
//!    job's expected start plus its estimate, so typical jobs may only backfill around them.
//!
//! The modes are the paper's three local policies: next-to-run (head of the queue, no
//! preemption), preemption, and preemption with advance reservation (the one the paper
//! evaluates, the default here).

use super::{AdvanceBooking, Decisions, Machines, Policy, Rejection, Reservation, Start};
use crate::model::{Job, JobId, MachineId, Time, Urgency};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::BTreeMap;

/// How the local scheduler serves urgent jobs (§4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UrgentMode {
    /// The urgent job goes to the head of the queue; nothing is preempted.
    NextToRun,
    /// Running typical jobs are preempted to free enough processors.
    Preempt,
    /// As `Preempt`, and a waiting urgent job holds the processors it will need (its advance
    /// reservation): the policy the paper evaluates.
    #[default]
    PreemptWithReservation,
}

impl UrgentMode {
    /// The name in files and flags.
    pub fn as_str(self) -> &'static str {
        match self {
            UrgentMode::NextToRun => "next-to-run",
            UrgentMode::Preempt => "preempt",
            UrgentMode::PreemptWithReservation => "preempt-with-reservation",
        }
    }

    fn preempts(self) -> bool {
        self != UrgentMode::NextToRun
    }

    fn holds(self) -> bool {
        self != UrgentMode::Preempt
    }
}

/// What happens to a preempted typical job.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PreemptBy {
    /// Killed and resubmitted, from scratch (as printed).
    #[default]
    Kill,
    /// Suspended and queued again with its progress (ours: what a site that can stop a process
    /// should do).
    Suspend,
}

/// Which running typical jobs are preempted first (G-B2; the paper does not say).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VictimOrder {
    /// The most recently started first (least work lost), ties the larger first.
    #[default]
    LatestStart,
    /// The largest first (fewest victims), ties the most recently started first.
    Fewest,
    /// The least processor-seconds done first, ties the larger first.
    LeastLost,
}

/// The urgent layer's settings (`[policy.urgent]` of a local scheduler).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UrgentOptions {
    /// The local urgent policy.
    pub mode: UrgentMode,
    /// What preemption does to a typical job.
    pub preempt_by: PreemptBy,
    /// The order victims are chosen in.
    pub victims: VictimOrder,
}

#[derive(Clone, Debug)]
struct Waiting {
    job: Job,
    seq: u64,
}

#[derive(Clone, Copy, Debug)]
struct Running {
    procs: u32,
    end: Time,
}

#[derive(Clone, Copy, Debug)]
struct TypicalRun {
    since: Time,
    procs: u32,
}

/// The urgent layer over one space-shared machine's policy.
#[derive(Debug)]
pub struct UrgentLayer {
    inner: Box<dyn Policy>,
    opts: UrgentOptions,
    machine: MachineId,
    capacity: u32,
    /// Urgent jobs waiting, in service order (higher urgency first, then arrival).
    waiting: Vec<Waiting>,
    urgent: BTreeMap<JobId, Running>,
    urgent_busy: u32,
    /// Typical jobs the policy below started and that still run.
    typical: BTreeMap<JobId, TypicalRun>,
    typical_busy: u32,
    /// Every typical job in the cluster (to resubmit a preempted one).
    jobs: FxHashMap<JobId, Job>,
    /// The processors held for the head urgent job while it waits (under the policy below, a
    /// running job with the urgent job's id).
    hold: Option<u32>,
    /// Whether the machine is up: while it is down, no urgent job starts, preempts or holds.
    up: bool,
    seq: u64,
    preemptions: u64,
    urgent_started: u64,
    scratch: Decisions,
}

impl UrgentLayer {
    /// The layer over `inner`, which must schedule one space-shared machine
    /// ([`Policy::single_machine`]); otherwise `inner` is given back.
    pub fn new(
        inner: Box<dyn Policy>,
        opts: UrgentOptions,
    ) -> Result<UrgentLayer, Box<dyn Policy>> {
        let Some((machine, capacity)) = inner.single_machine() else {
            return Err(inner);
        };
        Ok(UrgentLayer {
            inner,
            opts,
            machine,
            capacity,
            waiting: Vec::new(),
            urgent: BTreeMap::new(),
            urgent_busy: 0,
            typical: BTreeMap::new(),
            typical_busy: 0,
            jobs: FxHashMap::default(),
            hold: None,
            up: true,
            seq: 0,
            preemptions: 0,
            urgent_started: 0,
            scratch: Decisions::default(),
        })
    }

    fn free(&self) -> u32 {
        let taken = self.urgent_busy + self.typical_busy + self.hold.unwrap_or(0);
        self.capacity.saturating_sub(taken)
    }

    /// The urgent job as the policy below sees it: running on `procs` processors until `end`.
    fn phantom(job: &Job, procs: u32, now: Time, end: Time) -> Job {
        let mut j = Job::new(job.id.0, now, procs, (end - now).max(1), (end - now).max(1));
        j.user = job.user;
        j
    }

    /// The earliest instant at which the processors not held by urgent jobs reach `procs`, by
    /// the running urgent jobs' predicted ends.
    fn urgent_room_at(&self, now: Time, procs: u32) -> Time {
        let mut ends: Vec<(Time, u32)> = self.urgent.values().map(|r| (r.end, r.procs)).collect();
        ends.sort_unstable();
        let mut busy = self.urgent_busy;
        let mut t = now;
        for (end, p) in ends {
            if self.capacity - busy >= procs {
                break;
            }
            busy -= p;
            t = t.max(end);
        }
        t
    }

    /// Victims among the running typical jobs, in the configured order.
    fn victims(&self, now: Time) -> Vec<JobId> {
        let mut v: Vec<(JobId, TypicalRun)> = self.typical.iter().map(|(&j, &r)| (j, r)).collect();
        match self.opts.victims {
            VictimOrder::LatestStart => {
                v.sort_by_key(|&(j, r)| (Reverse(r.since), Reverse(r.procs), j));
            }
            VictimOrder::Fewest => v.sort_by_key(|&(j, r)| (Reverse(r.procs), Reverse(r.since), j)),
            VictimOrder::LeastLost => {
                v.sort_by_key(|&(j, r)| (i64::from(r.procs) * (now - r.since), Reverse(r.procs), j))
            }
        }
        v.into_iter().map(|(j, _)| j).collect()
    }

    fn start_urgent(&mut self, now: Time, w: Waiting, starts: &mut Vec<Start>) {
        let end = now + w.job.estimate.max(1);
        let ph = Self::phantom(&w.job, w.job.procs, now, end);
        self.inner
            .restore_running(now, &ph, now, self.machine, w.job.procs)
            .expect("the layer only starts an urgent job on processors free below");
        self.urgent.insert(
            w.job.id,
            Running {
                procs: w.job.procs,
                end,
            },
        );
        self.urgent_busy += w.job.procs;
        self.urgent_started += 1;
        starts.push(Start::on(w.job.id, self.machine, w.job.procs));
    }

    /// Step 1 and 2 of a pass: the urgent jobs that can start now, with their victims.
    fn serve_urgent(&mut self, now: Time, out: &mut Decisions) {
        let mut preempted = Vec::new();
        while let Some(head) = self.waiting.first().filter(|_| self.up) {
            let need = head.job.procs;
            if need > self.free() {
                if !self.opts.mode.preempts() || need > self.capacity - self.urgent_busy {
                    break;
                }
                for v in self.victims(now) {
                    if self.free() >= need {
                        break;
                    }
                    let r = self.typical.remove(&v).expect("listed");
                    self.typical_busy -= r.procs;
                    self.inner.terminate(now, v);
                    match self.opts.preempt_by {
                        PreemptBy::Kill => out.kills.push(v),
                        PreemptBy::Suspend => out.suspensions.push(v),
                    }
                    self.preemptions += 1;
                    preempted.push(v);
                }
            }
            let w = self.waiting.remove(0);
            self.start_urgent(now, w, &mut out.starts);
        }
        // Back to the tail of the queue, among themselves in their order of arrival.
        preempted.sort_by_key(|v| (self.jobs.get(v).map(|j| j.submit), *v));
        for v in preempted {
            let job = self.jobs.get(&v).expect("typical jobs are kept").clone();
            self.inner
                .submit(now, &job)
                .expect("a job the policy accepted once is accepted again");
        }
    }

    /// Step 3: hold the processors free now for the waiting head (its advance reservation).
    fn hold_for_head(&mut self, now: Time) {
        if !self.opts.mode.holds() {
            return;
        }
        let Some(head) = self.waiting.first().filter(|_| self.up) else {
            return;
        };
        let procs = head.job.procs.min(self.free());
        if procs == 0 {
            return;
        }
        let from = self.urgent_room_at(now, head.job.procs);
        let end = from + head.job.estimate.max(1);
        let ph = Self::phantom(&head.job, procs, now, end);
        self.inner
            .restore_running(now, &ph, now, self.machine, procs)
            .expect("the hold takes processors free below");
        self.hold = Some(procs);
    }

    fn release_hold(&mut self, now: Time) {
        if self.hold.take().is_some() {
            let head = self
                .waiting
                .first()
                .expect("a hold is for the waiting head")
                .job
                .id;
            self.inner.terminate(now, head);
        }
    }
}

impl Policy for UrgentLayer {
    fn describe(&self) -> String {
        let mut s = format!(
            "{} + urgent {}",
            self.inner.describe(),
            self.opts.mode.as_str()
        );
        if self.opts.preempt_by == PreemptBy::Suspend {
            s.push_str(" (suspend)");
        }
        s
    }

    fn submit(&mut self, now: Time, job: &Job) -> Result<(), Rejection> {
        if job.urgency.is_none() {
            self.inner.submit(now, job)?;
            self.jobs.insert(job.id, job.clone());
            return Ok(());
        }
        super::fcfs::check_job(job, self.capacity)?;
        if self.urgent.contains_key(&job.id) || self.waiting.iter().any(|w| w.job.id == job.id) {
            return Err(Rejection::Duplicate(job.id));
        }
        if job.reservation.is_some() {
            return Err(Rejection::NoEligibleMachine {
                job: job.id,
                reason: "an urgent job brings its own reservation and cannot run in another".into(),
            });
        }
        self.release_hold(now);
        self.seq += 1;
        let level = |w: &Waiting| Reverse(w.job.urgency.unwrap_or(Urgency::Critical));
        let new = Waiting {
            job: job.clone(),
            seq: self.seq,
        };
        let at = self
            .waiting
            .partition_point(|w| (level(w), w.seq) <= (level(&new), new.seq));
        self.waiting.insert(at, new);
        self.hold_for_head(now);
        Ok(())
    }

    fn terminate(&mut self, now: Time, job: JobId) {
        if let Some(r) = self.urgent.remove(&job) {
            self.urgent_busy -= r.procs;
            self.inner.terminate(now, job);
            return;
        }
        if let Some(r) = self.typical.remove(&job) {
            self.typical_busy -= r.procs;
        }
        self.jobs.remove(&job);
        self.inner.terminate(now, job);
    }

    fn overrun(&mut self, now: Time, job: JobId, predicted_end: Time) {
        if let Some(r) = self.urgent.get_mut(&job) {
            r.end = predicted_end;
        }
        self.inner.overrun(now, job, predicted_end);
    }

    fn cancel(&mut self, now: Time, job: JobId) -> bool {
        if let Some(i) = self.waiting.iter().position(|w| w.job.id == job) {
            if i == 0 {
                self.release_hold(now);
            }
            self.waiting.remove(i);
            if i == 0 {
                self.hold_for_head(now);
            }
            return true;
        }
        let gone = self.inner.cancel(now, job);
        if gone {
            self.jobs.remove(&job);
        }
        gone
    }

    fn schedule(&mut self, now: Time, out: &mut Decisions) {
        self.release_hold(now);
        self.serve_urgent(now, out);
        self.hold_for_head(now);
        let mut below = std::mem::take(&mut self.scratch);
        below.clear();
        self.inner.schedule(now, &mut below);
        for s in &below.starts {
            self.typical.insert(
                s.job,
                TypicalRun {
                    since: now,
                    procs: s.procs,
                },
            );
            self.typical_busy += s.procs;
        }
        // The layer's own preemptions are in `out` already; the policy below's follow.
        out.starts.extend_from_slice(&below.starts);
        out.suspensions.append(&mut below.suspensions);
        out.kills.append(&mut below.kills);
        self.scratch = below;
    }

    fn next_wakeup(&self) -> Option<Time> {
        self.inner.next_wakeup()
    }

    fn meta_priority(&mut self, job: JobId, priority: u8) {
        if !self.urgent.contains_key(&job) && !self.waiting.iter().any(|w| w.job.id == job) {
            self.inner.meta_priority(job, priority);
        }
    }

    fn single_machine(&self) -> Option<(MachineId, u32)> {
        Some((self.machine, self.capacity))
    }

    fn counters(&self) -> Vec<(String, u64)> {
        let mut c = self.inner.counters();
        c.push(("urgent-started".into(), self.urgent_started));
        c.push(("preemptions".into(), self.preemptions));
        c
    }

    fn waiting_len(&self) -> usize {
        self.waiting.len() + self.inner.waiting_len()
    }

    fn running_len(&self) -> usize {
        self.inner.running_len() - usize::from(self.hold.is_some())
    }

    fn queue(&self) -> Vec<JobId> {
        let mut q: Vec<JobId> = self.waiting.iter().map(|w| w.job.id).collect();
        q.extend(self.inner.queue());
        q
    }

    fn reservations(&self) -> Vec<Reservation> {
        let head = self.hold.and(self.waiting.first().map(|w| w.job.id));
        self.inner
            .reservations()
            .into_iter()
            .filter(|r| Some(r.job) != head)
            .collect()
    }

    crate::policy::capabilities!(machines);

    fn booking(&self) -> Option<&dyn AdvanceBooking> {
        self.inner.booking()
    }

    fn booking_mut(&mut self) -> Option<&mut dyn AdvanceBooking> {
        self.inner.booking_mut()
    }
}

impl Machines for UrgentLayer {
    fn set_machine_available(&mut self, now: Time, machine: MachineId, available: bool) {
        if machine == self.machine && available != self.up {
            self.release_hold(now);
            self.up = available;
            self.inner.set_machine_available(now, machine, available);
            self.hold_for_head(now);
            return;
        }
        self.inner.set_machine_available(now, machine, available);
    }

    fn restore_running(
        &mut self,
        now: Time,
        job: &Job,
        started: Time,
        machine: MachineId,
        procs: u32,
    ) -> Result<(), Rejection> {
        self.release_hold(now);
        let res = if job.urgency.is_some() {
            let end = started + job.estimate.max(1);
            let ph = Self::phantom(job, procs, started, end);
            self.inner
                .restore_running(now, &ph, started, machine, procs)
                .map(|()| {
                    self.urgent.insert(job.id, Running { procs, end });
                    self.urgent_busy += procs;
                })
        } else {
            self.inner
                .restore_running(now, job, started, machine, procs)
                .map(|()| {
                    self.typical.insert(
                        job.id,
                        TypicalRun {
                            since: started,
                            procs,
                        },
                    );
                    self.typical_busy += procs;
                    self.jobs.insert(job.id, job.clone());
                })
        };
        self.hold_for_head(now);
        res
    }
}

#[cfg(test)]
mod tests;
