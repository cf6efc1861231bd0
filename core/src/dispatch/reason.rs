//! Why a dispatch strategy chose its cluster, as data rather than text to be parsed: the live
//! meta-scheduler's `explain` prints it (spec `two-level-grid-scheduler.md` D4.2.1–D4.2.4 for Load
//! and Ordering, `gang-urgent-scaling.md` B.4 for the brokers).

use super::Priority;
use crate::model::{ClusterId, Time};

/// What a strategy compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    /// `LoadArr_c[p]`: workload dispatched at priority ≥ p and not reported ended.
    Load,
    /// `CountArr_c[p]`: jobs dispatched at priority ≥ p and not reported ended.
    Count,
    /// Count, among the clusters within epsilon of the least Load.
    CountAmongLeastLoad,
    /// Waiting jobs reported by the site.
    Waiting,
    /// Free processors left once the job starts.
    FreeLeft,
    /// Estimated completion time.
    Completion,
}

impl Measure {
    fn name(self) -> &'static str {
        match self {
            Measure::Load => "Load",
            Measure::Count | Measure::CountAmongLeastLoad => "Count",
            Measure::Waiting => "waiting jobs",
            Measure::FreeLeft => "free processors left",
            Measure::Completion => "estimated completion at",
        }
    }
}

/// Why the last dispatch went where it went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// The next cluster in turn that can run the job.
    Turn,
    /// The first cluster (lowest id) with no unfinished job of priority `priority` or higher:
    /// Load's idle cluster (D4.2.1).
    Idle {
        /// The job's priority.
        priority: Priority,
    },
    /// The grid scheduler's BestFit site: enough processors free now, and `left` processors left
    /// once the job starts, the fewest of all such sites.
    BestFit {
        /// Processors left free.
        left: u32,
    },
    /// The grid scheduler split the job over `fragments` sites, with its estimated end `end`
    /// (the overhead included) against `single`, the earliest estimated end on one site, if
    /// any site could ever run it alone.
    Split {
        /// Sites of the job.
        fragments: u32,
        /// Estimated end of the split job.
        end: Time,
        /// Earliest estimated end on one site.
        single: Option<Time>,
    },
    /// Wider than every site (the widest runs `widest` processors): split over `fragments`
    /// sites, to start together where the driver co-allocates them.
    Wide {
        /// Sites of the job.
        fragments: u32,
        /// The widest job one site runs.
        widest: u32,
    },
    /// An urgent job sent to the preferred site, which can run it now: `free` processors there
    /// are neither held nor reserved by urgent jobs (Kurowski et al. §4, resource priority).
    Preferred {
        /// Processors not held by urgent jobs at the preferred site.
        free: u32,
    },
    /// An urgent job consolidated on the dedicated site (Kurowski et al. §4, LB with
    /// consolidation).
    Consolidated,
    /// The least `measure`.
    Least {
        /// What was compared.
        measure: Measure,
        /// The job's priority, for the measures indexed by it.
        priority: Option<Priority>,
        /// The chosen cluster's value.
        value: i128,
        /// The best of the other clusters compared, and its value.
        next: Option<(ClusterId, i128)>,
        /// How many clusters were compared.
        among: u32,
        /// How many had the chosen value (more than one: a seeded random draw among them).
        tied: u32,
    },
}

impl Reason {
    /// The reason in words, naming clusters with `name`: e.g. `Load 960 at priority 1, least of
    /// 3; next: alpha 1200`.
    pub fn text(&self, name: &dyn Fn(ClusterId) -> String) -> String {
        match *self {
            Reason::Turn => "next in turn".into(),
            Reason::Idle { priority } => format!("idle: Load 0 at priority {priority}"),
            Reason::BestFit { left } => {
                format!("best fit: {left} processors left free, the fewest of the sites with room")
            }
            Reason::Split {
                fragments,
                end,
                single,
            } => {
                let alone = single.map_or("no site could run it alone".into(), |t| {
                    format!("on one site it would end at {t}")
                });
                format!(
                    "split over {fragments} sites, planned end {end} with the overhead; {alone}"
                )
            }
            Reason::Wide { fragments, widest } => format!(
                "wider than every site (the widest runs {widest} processors): split over \
                 {fragments} sites, co-allocated to start together"
            ),
            Reason::Preferred { free } => format!(
                "urgent: the preferred site can run it now ({free} processors not held by urgent jobs)"
            ),
            Reason::Consolidated => "urgent: consolidated on the dedicated site".into(),
            Reason::Least {
                measure,
                priority,
                value,
                next,
                among,
                tied,
            } => {
                let at = priority.map_or(String::new(), |p| format!(" at priority {p}"));
                let of = match measure {
                    Measure::CountAmongLeastLoad => format!("the {among} of least Load"),
                    _ => format!("{among}"),
                };
                let mut t = format!("{} {value}{at}, least of {of}", measure.name());
                if tied > 1 {
                    t += &format!(", drawn among {tied} equal");
                }
                if let Some((c, v)) = next {
                    t += &format!("; next: {} {v}", name(c));
                }
                t
            }
        }
    }

    /// The least of `values` (cluster, value) when `chosen` was picked: the reason, with the
    /// best of the others as `next` and the number of clusters with the chosen value.
    pub fn least(
        measure: Measure,
        priority: Option<Priority>,
        chosen: ClusterId,
        values: impl Iterator<Item = (ClusterId, i128)>,
    ) -> Reason {
        let (mut value, mut next, mut among, mut tied) = (0, None::<(ClusterId, i128)>, 0, 0);
        let mut others = Vec::new();
        for (c, v) in values {
            among += 1;
            if c == chosen {
                value = v;
            } else {
                others.push((c, v));
            }
        }
        for &(c, v) in &others {
            if next.is_none_or(|(_, b)| v < b) {
                next = Some((c, v));
            }
        }
        tied += 1 + others.iter().filter(|&&(_, v)| v == value).count() as u32;
        Reason::Least {
            measure,
            priority,
            value,
            next,
            among,
            tied,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_read_as_the_strategies_decided() {
        let names = |c: ClusterId| ["alpha", "beta", "gamma"][c.index()].to_string();
        let r = Reason::least(
            Measure::Load,
            Some(1),
            ClusterId(1),
            [
                (ClusterId(0), 1200),
                (ClusterId(1), 960),
                (ClusterId(2), 4000),
            ]
            .into_iter(),
        );
        assert_eq!(
            r.text(&names),
            "Load 960 at priority 1, least of 3; next: alpha 1200"
        );
        let r = Reason::least(
            Measure::CountAmongLeastLoad,
            Some(2),
            ClusterId(2),
            [(ClusterId(0), 3), (ClusterId(2), 3)].into_iter(),
        );
        assert_eq!(
            r.text(&names),
            "Count 3 at priority 2, least of the 2 of least Load, drawn among 2 equal; next: alpha 3"
        );
        assert_eq!(
            Reason::Idle { priority: 4 }.text(&names),
            "idle: Load 0 at priority 4"
        );
        let r = Reason::least(
            Measure::Waiting,
            None,
            ClusterId(0),
            [(ClusterId(0), 0)].into_iter(),
        );
        assert_eq!(r.text(&names), "waiting jobs 0, least of 1");
    }
}
