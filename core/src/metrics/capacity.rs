//! Loss of capacity (`self-tuning-and-multisite.md` Eq. 3.7, `gang-urgent-scaling.md` A.4 Eq. 2):
//! processor-seconds left idle while some job was waiting, divided by the machine's capacity over
//! the schedule's span. The driver reports the machine state after each event time; zero-length
//! intervals contribute nothing, so several events at one instant need only the last state.

use crate::model::Time;

/// Integrates idle-while-waiting processor time.
#[derive(Clone, Debug, Default)]
pub struct CapacityTracker {
    last: Option<(Time, u64, bool)>,
    idle_while_waiting: i128,
    idle: i128,
}

impl CapacityTracker {
    /// A tracker with nothing observed.
    pub fn new() -> CapacityTracker {
        CapacityTracker::default()
    }

    /// The state from `t` on: `free` processors idle, `waiting` whether a job is queued. Calls must
    /// come in non-decreasing time order.
    pub fn observe(&mut self, t: Time, free: u64, waiting: bool) {
        if let Some((t0, f0, w0)) = self.last {
            let dt = i128::from((t - t0).max(0));
            self.idle += i128::from(f0) * dt;
            if w0 {
                self.idle_while_waiting += i128::from(f0) * dt;
            }
        }
        self.last = Some((t, free, waiting));
    }

    /// Processor-seconds idle while a job was waiting (the numerator of LOC).
    pub fn idle_while_waiting(&self) -> i128 {
        self.idle_while_waiting
    }

    /// Processor-seconds idle in total since the first observation.
    pub fn idle(&self) -> i128 {
        self.idle
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integrates_only_while_jobs_wait() {
        let mut c = CapacityTracker::new();
        c.observe(0, 10, false); // idle, nobody waits: no loss
        c.observe(5, 4, true); // 4 idle while waiting for 10 s
        c.observe(15, 4, true);
        c.observe(15, 0, true); // same instant: only the last state counts
        c.observe(20, 2, false);
        c.observe(30, 2, false);
        assert_eq!(c.idle_while_waiting(), 40);
        assert_eq!(c.idle(), 50 + 40 + 20);
    }
}
