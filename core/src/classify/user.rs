//! The meta-scheduler's User heuristic (spec `two-level-grid-scheduler.md` D4.1.3; D12 #8): the
//! value of the user's class (Gold > Silver > Regular, defaults 7, 4, 1) plus the owner priority
//! the user gave the job (0..=3).

use crate::model::{Job, UserClass};
use serde::{Deserialize, Serialize};

/// The value of each user class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UserValues {
    /// Gold.
    pub gold: u8,
    /// Silver.
    pub silver: u8,
    /// Regular.
    pub regular: u8,
}

impl Default for UserValues {
    fn default() -> Self {
        UserValues {
            gold: 7,
            silver: 4,
            regular: 1,
        }
    }
}

/// `class value + owner priority`.
pub fn user_priority(job: &Job, values: &UserValues) -> u8 {
    let class = match job.user_class {
        UserClass::Gold => values.gold,
        UserClass::Silver => values.silver,
        UserClass::Regular => values.regular,
    };
    class.saturating_add(job.owner_priority)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_plus_owner_priority() {
        let v = UserValues::default();
        let mut j = Job::new(1, 0, 1, 10, 10);
        assert_eq!(user_priority(&j, &v), 1);
        j.user_class = UserClass::Gold;
        j.owner_priority = 3;
        assert_eq!(user_priority(&j, &v), 10);
        j.user_class = UserClass::Silver;
        j.owner_priority = 2;
        assert_eq!(user_priority(&j, &v), 6);
    }
}
