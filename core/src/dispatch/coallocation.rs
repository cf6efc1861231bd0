//! Co-allocation of a multi-site job: one common start for its fragments at every chosen site,
//! held in two phases (the fragments of a multi-site job start together, Streit, thesis §6.3; the
//! start each site can give is its earliest planned start for the fragment, §3.2).
//!
//! The protocol is plain, deterministic state: no clock, no I/O. The meta-scheduler's shell carries
//! out each [`Step`] over the sites' links and feeds the answers back.
//!
//! 1. **Hold.** Every fragment's site is asked for a tentative reservation of the fragment's
//!    processors for the job's stretched estimate, at its earliest start from `from` on (first
//!    round: now), with a lease.
//! 2. Once every answer of a round is in: when every site holds the same start `T`, **commit** at
//!    every site. Otherwise `T` is the latest start held, and the sites holding an earlier one let
//!    it go and are asked again from `T` (the next round). Each site's earliest start is monotone
//!    in `from`, so the rounds climb to the earliest start every site can give, the least common
//!    fixed point (a property test checks it against a search over every instant). After
//!    `max_rounds` rounds without agreement, or at any refusal, **abort**: every hold is let go and
//!    the job is planned again.
//! 3. In adaptive mode, the agreed split must end (`T` + the stretched estimate) before the best
//!    single-site planned end, else the job waits for that site instead (abort with the reason;
//!    §6.4 step 5).
//! 4. When every site has committed, the fragments are **sent** into their reservations, all
//!    starting at `T`. A commit refused (lease lapsed, site restarted or down) aborts, the
//!    committed reservations being let go too.

use super::Part;
use crate::model::{Duration, Time};

/// Seconds a fragment's reservation is held beyond its stretched estimate. The fragments are sent
/// after the commit, and a site admits a job into a reservation only if its estimate ends by the
/// reservation's end counted from the second it arrives: a send that crosses a second boundary
/// after the common start must still fit (seen live: 2 of 300 split jobs refused without it).
/// The simulator holds the same intervals, so that both plan around the same reservations.
pub const SEND_GRACE_S: Duration = 2;

/// What the shell does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Ask the sites of these fragments (indices into the parts) for a tentative hold at their
    /// earliest start from `from` on, after letting their current hold go, if any.
    Hold {
        /// The fragments to ask.
        fragments: Vec<usize>,
        /// The earliest acceptable start.
        from: Time,
    },
    /// Wait for the answers still out.
    Wait,
    /// Commit every fragment's hold: all start at `start`.
    Commit {
        /// The common start.
        start: Time,
    },
    /// Every reservation is committed: send the fragments into them.
    Send {
        /// The common start.
        start: Time,
    },
    /// Let every hold go ([`CoAllocation::holds`]); the job is planned again.
    Abort {
        /// Why, for `explain`.
        why: String,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Holding,
    Committing(Time),
    Done,
}

/// One job's co-allocation in progress.
#[derive(Clone, Debug)]
pub struct CoAllocation {
    parts: Vec<Part>,
    length: Duration,
    max_rounds: u32,
    /// The best single-site planned end, in adaptive mode.
    single_end: Option<Time>,
    round: u32,
    phase: Phase,
    /// The start each fragment's site holds, once answered.
    held: Vec<Option<Time>>,
    /// Asked and not answered yet.
    asked: Vec<bool>,
    committed: Vec<bool>,
}

impl CoAllocation {
    /// A co-allocation of `parts` for `length` seconds (the stretched estimate), giving up after
    /// `max_rounds` rounds; `single_end` is the best single-site planned end when the adaptive
    /// rule applies.
    pub fn new(
        parts: Vec<Part>,
        length: Duration,
        max_rounds: u32,
        single_end: Option<Time>,
    ) -> CoAllocation {
        let n = parts.len();
        CoAllocation {
            parts,
            length,
            max_rounds: max_rounds.max(1),
            single_end,
            round: 0,
            phase: Phase::Holding,
            held: vec![None; n],
            asked: vec![false; n],
            committed: vec![false; n],
        }
    }

    /// The fragments.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// How long each fragment's reservation lasts.
    pub fn length(&self) -> Duration {
        self.length
    }

    /// How long each fragment's reservation is held: the stretched estimate and
    /// [`SEND_GRACE_S`].
    pub fn held_for(&self) -> Duration {
        self.length + SEND_GRACE_S
    }

    /// Rounds of holds asked so far.
    pub fn rounds(&self) -> u32 {
        self.round
    }

    /// The first round at `now`: every site is asked.
    pub fn start(&mut self, now: Time) -> Step {
        self.ask((0..self.parts.len()).collect(), now)
    }

    fn ask(&mut self, fragments: Vec<usize>, from: Time) -> Step {
        self.round += 1;
        for &i in &fragments {
            self.held[i] = None;
            self.asked[i] = true;
        }
        Step::Hold { fragments, from }
    }

    /// Fragment `i`'s site holds it from `start` on.
    pub fn held(&mut self, i: usize, start: Time) -> Step {
        if self.phase != Phase::Holding || !self.asked[i] {
            return Step::Wait;
        }
        self.asked[i] = false;
        self.held[i] = Some(start);
        if self.asked.iter().any(|&a| a) {
            return Step::Wait;
        }
        let latest = self.held.iter().flatten().copied().max().expect("all held");
        let early: Vec<usize> = (0..self.parts.len())
            .filter(|&j| self.held[j] != Some(latest))
            .collect();
        if !early.is_empty() {
            if self.round >= self.max_rounds {
                self.phase = Phase::Done;
                return Step::Abort {
                    why: format!(
                        "no common start after {} rounds (the sites' earliest starts keep moving; \
                         latest {latest})",
                        self.round
                    ),
                };
            }
            return self.ask(early, latest);
        }
        let end = latest + self.length;
        if let Some(single) = self.single_end
            && single <= end
        {
            self.phase = Phase::Done;
            return Step::Abort {
                why: format!(
                    "adaptive: the split would end at {end} with the overhead; one site ends it at \
                     {single}"
                ),
            };
        }
        self.phase = Phase::Committing(latest);
        Step::Commit { start: latest }
    }

    /// Fragment `i`'s site, named `site`, refused to hold it (or could not be reached).
    pub fn refused(&mut self, i: usize, site: &str, why: &str) -> Step {
        if self.phase == Phase::Done {
            return Step::Wait;
        }
        self.phase = Phase::Done;
        self.asked[i] = false;
        Step::Abort {
            why: format!("fragment {i} at {site}: {why}"),
        }
    }

    /// Fragment `i`'s site committed its hold.
    pub fn committed(&mut self, i: usize) -> Step {
        let Phase::Committing(start) = self.phase else {
            return Step::Wait;
        };
        self.committed[i] = true;
        if self.committed.iter().all(|&c| c) {
            self.phase = Phase::Done;
            return Step::Send { start };
        }
        Step::Wait
    }

    /// The holds to let go after an abort: (fragment, start held), committed or not.
    pub fn holds(&self) -> Vec<(usize, Time)> {
        self.held
            .iter()
            .enumerate()
            .filter_map(|(i, h)| h.map(|t| (i, t)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ClusterId;
    use proptest::prelude::*;

    fn parts(n: u32) -> Vec<Part> {
        (0..n)
            .map(|c| Part {
                cluster: ClusterId(c),
                procs: 4,
            })
            .collect()
    }

    #[test]
    fn equal_answers_commit_at_once_and_send_when_all_committed() {
        let mut c = CoAllocation::new(parts(2), 110, 5, None);
        assert_eq!(
            c.start(100),
            Step::Hold {
                fragments: vec![0, 1],
                from: 100
            }
        );
        assert_eq!(c.held(1, 100), Step::Wait);
        assert_eq!(c.held(0, 100), Step::Commit { start: 100 });
        assert_eq!(c.committed(0), Step::Wait);
        assert_eq!(c.committed(1), Step::Send { start: 100 });
        assert_eq!(c.rounds(), 1);
    }

    #[test]
    fn early_sites_are_asked_again_from_the_latest_start() {
        let mut c = CoAllocation::new(parts(3), 50, 5, None);
        c.start(0);
        c.held(0, 10);
        c.held(1, 30);
        assert_eq!(
            c.held(2, 30),
            Step::Hold {
                fragments: vec![0],
                from: 30
            }
        );
        // Site 0 can give 40 only: sites 1 and 2 climb to 40.
        assert_eq!(
            c.held(0, 40),
            Step::Hold {
                fragments: vec![1, 2],
                from: 40
            }
        );
        c.held(1, 40);
        assert_eq!(c.held(2, 40), Step::Commit { start: 40 });
        assert_eq!(c.rounds(), 3);
    }

    #[test]
    fn refusals_rounds_and_the_adaptive_rule_abort_with_the_holds_to_let_go() {
        let mut c = CoAllocation::new(parts(2), 50, 5, None);
        c.start(0);
        c.held(0, 10);
        let Step::Abort { why } = c.refused(1, "beta", "too wide") else {
            panic!()
        };
        assert_eq!(why, "fragment 1 at beta: too wide");
        assert_eq!(c.holds(), [(0, 10)]);
        assert_eq!(c.held(1, 10), Step::Wait, "over");

        let mut c = CoAllocation::new(parts(2), 50, 2, None);
        c.start(0);
        c.held(0, 10);
        assert!(matches!(c.held(1, 20), Step::Hold { .. }));
        // Two rounds without agreement: site 0 now gives 30, site 1 holds 20.
        let Step::Abort { why } = c.held(0, 30) else {
            panic!()
        };
        assert!(why.starts_with("no common start after 2 rounds"), "{why}");
        assert_eq!(c.holds(), [(0, 30), (1, 20)]);

        // Adaptive: the split ends at 10 + 50 = 60; one site ends the job at 60: it waits.
        let mut c = CoAllocation::new(parts(2), 50, 5, Some(60));
        c.start(0);
        c.held(0, 10);
        let Step::Abort { why } = c.held(1, 10) else {
            panic!()
        };
        assert!(
            why.starts_with("adaptive: the split would end at 60"),
            "{why}"
        );
        let mut c = CoAllocation::new(parts(2), 50, 5, Some(61));
        c.start(0);
        c.held(0, 10);
        assert_eq!(c.held(1, 10), Step::Commit { start: 10 });
    }

    /// A site whose processors are free from some instants on for the fragment's length: its
    /// earliest start from `t` is the first free instant at or after `t` (monotone in `t`).
    fn earliest(free: &[Time], t: Time) -> Time {
        free.iter()
            .copied()
            .find(|&f| f >= t)
            .unwrap_or(Time::MAX / 4)
    }

    proptest! {
        /// The rounds reach the earliest instant every site can give, found by searching every
        /// instant (and nothing is sent before every site committed).
        #[test]
        fn the_rounds_reach_the_earliest_common_start(
            sites in prop::collection::vec(prop::collection::btree_set(0i64..60, 1..8), 2..5),
        ) {
            let free: Vec<Vec<Time>> = sites.iter().map(|s| s.iter().copied().collect()).collect();
            let naive = (0..60).find(|&t| free.iter().all(|f| f.contains(&t)));
            let mut c = CoAllocation::new(parts(free.len() as u32), 10, 1_000, None);
            let mut step = c.start(0);
            let result = loop {
                match step {
                    Step::Hold { fragments, from } => {
                        let mut last = Step::Wait;
                        for i in fragments {
                            last = c.held(i, earliest(&free[i], from));
                        }
                        step = last;
                    }
                    Step::Commit { start } => {
                        for i in 0..free.len() {
                            step = c.committed(i);
                            if i + 1 < free.len() {
                                prop_assert_eq!(&step, &Step::Wait);
                            }
                        }
                        prop_assert_eq!(&step, &Step::Send { start });
                        break Some(start);
                    }
                    Step::Abort { .. } => break None,
                    Step::Wait | Step::Send { .. } => unreachable!("{step:?}"),
                }
            };
            match naive {
                Some(t) => prop_assert_eq!(result, Some(t)),
                // No common instant in the window: the rounds climb past it.
                None => prop_assert!(result.is_none_or(|t| t >= 60)),
            }
        }
    }
}
