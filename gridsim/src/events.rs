//! The simulator's event queue (`reference-semantics.md` "Event order"): events are ordered by
//! (time, kind, creation counter). At one instant the kinds run in the order overrun notice,
//! submission, termination, start, wake-up (a policy's planned start). A start decided by a pass
//! takes effect on the machine at its start event, after every termination of the same instant:
//! a policy may count a job's processors as free at its predicted end before its termination is
//! handled. Submissions are not stored here: they are pulled from the workload stream in order,
//! so memory holds only the jobs in flight.

use gridsched_core::model::{JobId, Time};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What happens at an event, in the order events of one instant are handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EventKind {
    /// A running job reached its predicted end and keeps running (run-to-completion mode only).
    Overrun,
    /// A job is submitted.
    Submit,
    /// A running job ends.
    Termination,
    /// A job a pass started takes its processors.
    Start,
    /// A policy asked to be called at this time.
    Wake,
}

/// One scheduled event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Event {
    /// When.
    pub time: Time,
    /// What (orders events of one instant).
    pub kind: EventKind,
    /// Creation counter (orders events of one instant and kind).
    pub seq: u64,
    /// The job concerned (unused for wake-ups).
    pub job: JobId,
}

/// A min-heap of events keyed by (time, kind, creation counter).
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<Event>>,
    next_seq: u64,
}

impl EventQueue {
    /// An empty queue.
    pub fn new() -> EventQueue {
        EventQueue::default()
    }

    /// Schedules an event; its creation counter is the next one.
    pub fn push(&mut self, time: Time, kind: EventKind, job: JobId) {
        self.heap.push(Reverse(Event {
            time,
            kind,
            seq: self.next_seq,
            job,
        }));
        self.next_seq += 1;
    }

    /// The next event without removing it.
    pub fn peek(&self) -> Option<&Event> {
        self.heap.peek().map(|r| &r.0)
    }

    /// Removes and returns the next event.
    pub fn pop(&mut self) -> Option<Event> {
        self.heap.pop().map(|r| r.0)
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether no event is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_time_then_kind_then_creation() {
        let mut q = EventQueue::new();
        q.push(10, EventKind::Wake, JobId(1));
        q.push(10, EventKind::Termination, JobId(2));
        q.push(5, EventKind::Termination, JobId(3));
        q.push(10, EventKind::Termination, JobId(4));
        q.push(10, EventKind::Overrun, JobId(5));
        q.push(10, EventKind::Start, JobId(6));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|e| e.job.0).collect();
        assert_eq!(order, vec![3, 5, 2, 4, 6, 1]);
    }
}
