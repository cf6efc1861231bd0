//! The urgency of a job: ordinary ("typical") jobs have none; an urgent job carries one of the
//! three levels of SPRUCE's urgency tokens (critical = red, high = orange, important = yellow), and
//! a user may submit urgent jobs only up to the level of their allowance (Kurowski, Oleksiak,
//! Piątek & Węglarz, "Impact of urgent computing on resource management policies, schedules and
//! resources utilization", §2 and §4; spec `gang-urgent-scaling.md` B.2, B.9).
//!
//! The paper's experiments use one level, "critical"; the levels order the urgent jobs among
//! themselves (a higher level first, then arrival), and every urgent job outranks every typical
//! one.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// An urgency level, lowest first (so `Critical` is the greatest).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Urgency {
    /// Yellow: important.
    Important,
    /// Orange: high.
    High,
    /// Red: critical (the level of the paper's experiments).
    Critical,
}

impl Urgency {
    /// Every level, lowest first.
    pub const ALL: [Urgency; 3] = [Urgency::Important, Urgency::High, Urgency::Critical];

    /// The name in files, flags and the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Urgency::Important => "important",
            Urgency::High => "high",
            Urgency::Critical => "critical",
        }
    }
}

impl fmt::Display for Urgency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Urgency {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Urgency::ALL
            .into_iter()
            .find(|u| u.as_str() == s)
            .ok_or_else(|| {
                format!("unknown urgency `{s}` (expected one of: important, high, critical)")
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_order_and_names_round_trip() {
        assert!(Urgency::Critical > Urgency::High && Urgency::High > Urgency::Important);
        for u in Urgency::ALL {
            assert_eq!(u.as_str().parse::<Urgency>(), Ok(u));
            let json = serde_json::to_string(&u).unwrap();
            assert_eq!(json, format!("\"{u}\""));
        }
        assert!("red".parse::<Urgency>().unwrap_err().contains("critical"));
    }
}
