//! Queue orders of the classic policies (spec `self-tuning-and-multisite.md` §2.1, §2.4): FCFS by
//! arrival, SJF by estimate ascending, LJF by estimate descending; ties broken by arrival order
//! (which also breaks ties between equal submission times by submission sequence).

use crate::model::Duration;
use crate::structures::QueueKey;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The order in which a policy considers waiting jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum QueueOrder {
    /// First come, first served: arrival order.
    #[default]
    Fcfs,
    /// Shortest estimate first, then arrival.
    Sjf,
    /// Longest estimate first, then arrival.
    Ljf,
}

impl QueueOrder {
    /// The sort key of the `seq`-th arrival with estimate `estimate`.
    pub fn key(self, estimate: Duration, seq: u64) -> QueueKey {
        let primary = match self {
            QueueOrder::Fcfs => 0,
            QueueOrder::Sjf => estimate,
            QueueOrder::Ljf => -estimate,
        };
        QueueKey { primary, seq }
    }
}

impl fmt::Display for QueueOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            QueueOrder::Fcfs => "fcfs",
            QueueOrder::Sjf => "sjf",
            QueueOrder::Ljf => "ljf",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_order_as_documented() {
        let a = (100, 0); // long, early
        let b = (10, 1); // short, late
        let c = (10, 2); // short, later
        let sorted = |o: QueueOrder| {
            let mut v = [a, b, c];
            v.sort_by_key(|&(e, s)| o.key(e, s));
            v
        };
        assert_eq!(sorted(QueueOrder::Fcfs), [a, b, c]);
        assert_eq!(sorted(QueueOrder::Sjf), [b, c, a]);
        assert_eq!(sorted(QueueOrder::Ljf), [a, b, c]);
    }
}
