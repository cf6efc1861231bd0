//! The usage charged to each user, decayed with a half-life (Slurm's `PriorityDecayHalfLife`):
//! usage left alone halves every half-life, so recent use weighs more than old.

use crate::model::Time;
use std::collections::BTreeMap;

/// Decayed processor-seconds per user, and in all.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Usage {
    half_life: Time,
    /// Per user: the decayed usage as of a time.
    users: BTreeMap<String, (f64, Time)>,
    /// The grid's whole decayed usage as of a time.
    total: (f64, Time),
}

impl Usage {
    /// No usage yet, decaying with `half_life` seconds (0: no decay).
    pub fn new(half_life: Time) -> Usage {
        Usage {
            half_life,
            users: BTreeMap::new(),
            total: (0.0, 0),
        }
    }

    fn decayed(&self, (v, at): (f64, Time), now: Time) -> f64 {
        if self.half_life <= 0 || now <= at {
            return v;
        }
        v * (-((now - at) as f64) / self.half_life as f64).exp2()
    }

    /// Charges `amount` (processor-seconds) to `user` at `now`.
    pub fn charge(&mut self, user: &str, amount: f64, now: Time) {
        let held = self.users.get(user).copied().unwrap_or((0.0, now));
        let v = (self.decayed(held, now) + amount, now.max(held.1));
        match self.users.get_mut(user) {
            Some(h) => *h = v,
            None => {
                self.users.insert(user.to_owned(), v);
            }
        }
        let t = self.decayed(self.total, now) + amount;
        self.total = (t, now.max(self.total.1));
    }

    /// `user`'s decayed usage at `now`.
    pub fn of(&self, user: &str, now: Time) -> f64 {
        self.users.get(user).map_or(0.0, |&h| self.decayed(h, now))
    }

    /// The grid's decayed usage at `now` (Slurm's `R_H`).
    pub fn total(&self, now: Time) -> f64 {
        self.decayed(self.total, now)
    }

    /// `user`'s normalized usage at `now`: its decayed usage over the grid's (0 when the grid
    /// used nothing).
    pub fn normalized(&self, user: &str, now: Time) -> f64 {
        match self.total(now) {
            t if t > 0.0 => self.of(user, now) / t,
            _ => 0.0,
        }
    }
}
