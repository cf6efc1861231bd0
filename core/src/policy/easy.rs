//! EASY (aggressive) backfilling and its ordered variants (`reference-semantics.md` "EASY
//! backfilling as the reference does it"; `self-tuning-and-multisite.md` §2.2).
//!
//! A pass: (1) while the queue head fits in the processors free now, start it; (2) give the head
//! that does not fit a reservation at its earliest start `S` (the shadow time, from the predicted
//! ends of running jobs, including those started in step 1), and let every later job in queue
//! order start now if it fits in the processors free now and either ends by `S` or uses only the
//! processors the head will not need at `S` (the extra processors).
//!
//! The reference recomputes the head's placement for every candidate on a copy of its profile.
//! Because all running jobs started at or before now, the free processors never decrease over
//! time, so that check reduces exactly to the shadow-time / extra-processors rule with the extra
//! count decreased by every backfilled job still running at `S`; the queue's block summaries
//! then find each next candidate without scanning the queue.
//!
//! While its machine is down (`set_machine_available`) nothing starts. While advance reservations
//! are held, the pass decides on the availability profile instead ([`super::around`]).
//!
//! Variants ([`BackfillOptions`]): stale shadow, strict `<` at the shadow time, extra-processors
//! rule off (the seed's "conservative" wording), pass only on fitting submissions; queue order FCFS
//! (EASY), SJF or LJF.

use super::around::Around;
use super::fcfs::{check_job, restore_checks, restore_single};
use super::{
    AdvanceBooking, AdvanceReservation, BackfillOptions, Decisions, Machines, Policy, QueueOrder,
    Rejection, Reservation, ReservationKind, ReservationRefused, ShadowCmp, ShadowMode, Start,
    SubmitPass,
};
use crate::model::{Job, JobId, MachineId, ReservationId, Time};
use crate::structures::{OrderedQueue, QueueEntry, QueueKey, RunningSet};
use rustc_hash::FxHashMap;

/// EASY backfilling on one space-shared machine.
#[derive(Debug)]
pub struct Easy {
    machine: MachineId,
    capacity: u32,
    order: QueueOrder,
    opts: BackfillOptions,
    queue: OrderedQueue,
    keys: FxHashMap<JobId, QueueKey>,
    running: RunningSet,
    next_seq: u64,
    /// Stale mode: the head and the shadow time fixed when it first blocked.
    stale: Option<(JobId, Time)>,
    /// The head's reservation at the last pass, for inspection.
    head_reservation: Option<Reservation>,
    /// Whether something happened since the last pass that calls for one.
    pass_needed: bool,
    /// The machine is down: nothing starts until it is back.
    down: bool,
    /// Advance reservations and the jobs inside them.
    around: Around,
}

impl Easy {
    /// EASY with queue `order` for `machine` of `capacity` processors.
    pub fn new(
        machine: MachineId,
        capacity: u32,
        order: QueueOrder,
        opts: BackfillOptions,
    ) -> Easy {
        Easy {
            machine,
            capacity,
            order,
            opts,
            queue: OrderedQueue::new(),
            keys: FxHashMap::default(),
            running: RunningSet::new(),
            next_seq: 0,
            stale: None,
            head_reservation: None,
            pass_needed: false,
            down: false,
            around: Around::default(),
        }
    }

    /// The pass while advance reservations are held: the head starts while it fits in the
    /// availability profile for its whole estimate; the head that does not gets its slot at its
    /// earliest start there, and every later job in queue order starts if it fits in the profile
    /// beside that slot.
    fn schedule_around(&mut self, now: Time, starts: &mut Vec<Start>) {
        self.around.pass(now, self.machine, starts);
        let mut p = self.around.profile(now, self.capacity, &self.running);
        while let Some(&head) = self.queue.first() {
            if p.earliest(now, head.procs, head.estimate) != now {
                break;
            }
            p.reserve(now, now + head.estimate, head.procs);
            self.start(now, head, starts);
        }
        let Some(&head) = self.queue.first() else {
            self.head_reservation = None;
            self.stale = None;
            return;
        };
        let s = p.earliest(now, head.procs, head.estimate);
        p.reserve(s, s + head.estimate, head.procs);
        self.head_reservation = Some(Reservation {
            job: head.id,
            start: s,
            end: s + head.estimate,
            procs: head.procs,
            machine: Some(self.machine),
            kind: ReservationKind::Head,
        });
        // Decided against the profile alone, then started in queue order.
        let mut chosen: Vec<QueueEntry> = Vec::new();
        for &c in self.queue.iter().skip(1) {
            if p.earliest(now, c.procs, c.estimate) == now {
                p.reserve(now, now + c.estimate, c.procs);
                chosen.push(c);
            }
        }
        for c in chosen {
            self.start(now, c, starts);
        }
    }

    fn start(&mut self, now: Time, e: QueueEntry, starts: &mut Vec<Start>) {
        self.queue.remove(e.key);
        self.keys.remove(&e.id);
        self.running.insert(e.id, e.procs, now, e.estimate);
        starts.push(Start::on(e.id, self.machine, e.procs));
    }

    /// The head's shadow time and the processors free then beyond the head's need.
    fn shadow(&mut self, now: Time, head: &QueueEntry) -> (Time, u32) {
        let fresh = self
            .running
            .shadow(now, self.capacity, head.procs)
            .expect("jobs wider than the machine are rejected at submission");
        if self.opts.shadow == ShadowMode::Fresh {
            return fresh;
        }
        if let Some((id, s)) = self.stale
            && id == head.id
            && s > now
        {
            let free = self.running.free_at(s, self.capacity);
            if free >= head.procs {
                return (s, free - head.procs);
            }
        }
        self.stale = Some((head.id, fresh.0));
        fresh
    }
}

impl Policy for Easy {
    fn single_machine(&self) -> Option<(MachineId, u32)> {
        Some((self.machine, self.capacity))
    }

    fn describe(&self) -> String {
        let mut s = match self.order {
            QueueOrder::Fcfs => "easy".to_string(),
            o => format!("{o}-bf"),
        };
        let extra = self.opts.non_default();
        if !extra.is_empty() {
            s = format!("{s}({})", extra.join(","));
        }
        s
    }

    fn submit(&mut self, now: Time, job: &Job) -> Result<(), Rejection> {
        if job.reservation.is_some() {
            if self.around.holds(job.id) || self.keys.contains_key(&job.id) {
                return Err(Rejection::Duplicate(job.id));
            }
            self.pass_needed = true;
            return self.around.submit(now, job);
        }
        check_job(job, self.capacity)?;
        if self.keys.contains_key(&job.id) {
            return Err(Rejection::Duplicate(job.id));
        }
        let key = self.order.key(job.estimate, self.next_seq);
        self.next_seq += 1;
        self.queue.insert(QueueEntry {
            key,
            id: job.id,
            procs: job.procs,
            estimate: job.estimate,
        });
        self.keys.insert(job.id, key);
        if self.opts.submit_pass == SubmitPass::Always
            || job.procs <= self.running.free_at(now, self.capacity)
        {
            self.pass_needed = true;
        }
        Ok(())
    }

    fn terminate(&mut self, now: Time, job: JobId) {
        if self.around.remove(now, job) || self.running.remove(job).is_some() {
            self.pass_needed = true;
        }
    }

    fn overrun(&mut self, now: Time, job: JobId, predicted_end: Time) {
        if self.around.overrun(now, job, predicted_end)
            || self.running.set_end(job, predicted_end).is_some()
        {
            self.pass_needed = true;
        }
    }

    fn cancel(&mut self, now: Time, job: JobId) -> bool {
        if self.around.holds(job) {
            self.pass_needed = true;
            return self.around.remove(now, job);
        }
        let Some(key) = self.keys.remove(&job) else {
            return false;
        };
        self.queue.remove(key);
        if self.stale.is_some_and(|(id, _)| id == job) {
            self.stale = None;
        }
        self.pass_needed = true;
        true
    }

    fn schedule(&mut self, now: Time, out: &mut Decisions) {
        let starts = &mut out.starts;
        if self.down {
            return;
        }
        if self.around.active() {
            self.pass_needed = false;
            self.schedule_around(now, starts);
            return;
        }
        if self.opts.submit_pass == SubmitPass::IfFits && !self.pass_needed {
            return;
        }
        self.pass_needed = false;
        let mut free = self.running.free_at(now, self.capacity);

        // Step 1: start the head while it fits.
        while let Some(&head) = self.queue.first() {
            if head.procs > free {
                break;
            }
            free -= head.procs;
            self.start(now, head, starts);
        }
        let Some(&head) = self.queue.first() else {
            self.head_reservation = None;
            self.stale = None;
            return;
        };

        // Step 2: reserve for the head, backfill behind it.
        let (shadow, extra) = self.shadow(now, &head);
        self.head_reservation = Some(Reservation {
            job: head.id,
            start: shadow,
            end: shadow + head.estimate,
            procs: head.procs,
            machine: Some(self.machine),
            kind: ReservationKind::Head,
        });
        // A candidate "ends by the shadow" when its estimate is at most `limit`.
        let limit = match self.opts.shadow_cmp {
            ShadowCmp::AtOrBefore => shadow - now,
            ShadowCmp::Before => shadow - now - 1,
        };
        let mut extra = if self.opts.extra_procs { extra } else { 0 };
        let mut after = head.key;
        while free > 0 {
            let Some(c) = self.queue.find_fit(Some(after), free, limit, extra) else {
                break;
            };
            free -= c.procs;
            if c.estimate > limit {
                extra -= c.procs;
            }
            after = c.key;
            self.start(now, c, starts);
        }
    }

    fn waiting_len(&self) -> usize {
        self.queue.len() + self.around.waiting_inside()
    }

    fn running_len(&self) -> usize {
        self.running.len() + self.around.running_inside()
    }

    fn next_wakeup(&self) -> Option<Time> {
        if self.down {
            return None;
        }
        self.around.next_wakeup()
    }

    fn queue(&self) -> Vec<JobId> {
        self.queue.iter().map(|e| e.id).collect()
    }

    fn reservations(&self) -> Vec<Reservation> {
        let mut v: Vec<Reservation> = self
            .head_reservation
            .into_iter()
            .filter(|r| self.keys.contains_key(&r.job))
            .collect();
        v.extend(Reservation::planned_on(
            self.machine,
            self.around.planned().into_iter(),
        ));
        v
    }

    crate::policy::capabilities!(machines, booking);
}

impl Machines for Easy {
    fn set_machine_available(&mut self, _now: Time, machine: MachineId, available: bool) {
        if machine == self.machine && self.down == available {
            self.down = !available;
            self.pass_needed = true;
        }
    }

    fn restore_running(
        &mut self,
        now: Time,
        job: &Job,
        started: Time,
        machine: MachineId,
        procs: u32,
    ) -> Result<(), Rejection> {
        if job.reservation.is_some() {
            restore_checks(job, machine, self.machine, false)?;
            self.pass_needed = true;
            return self.around.restore_running(now, job, started, procs);
        }
        let me = (self.machine, self.capacity);
        restore_single(&mut self.running, me, job, started, machine, procs)?;
        self.pass_needed = true;
        Ok(())
    }
}

impl AdvanceBooking for Easy {
    fn admit_reservation(
        &mut self,
        now: Time,
        r: &AdvanceReservation,
    ) -> Result<(), ReservationRefused> {
        let head = self.queue.first().map(|h| (h.procs, h.estimate));
        self.around
            .admit(now, r, self.machine, self.capacity, &self.running, head)?;
        self.pass_needed = true;
        Ok(())
    }

    fn cancel_reservation(&mut self, now: Time, id: ReservationId) -> bool {
        let Some(waiting) = self.around.cancel(now, id, &mut self.running) else {
            return false;
        };
        for job in waiting {
            self.submit(now, &job)
                .expect("a job that fitted in the reservation fits the machine");
        }
        self.pass_needed = true;
        true
    }

    fn advance_reservations(&self) -> Vec<AdvanceReservation> {
        self.around.list()
    }
}
