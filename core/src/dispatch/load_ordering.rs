//! The seed's dispatch functions (spec `two-level-grid-scheduler.md` D4.2.1–D4.2.4; D12 #9–#12):
//! **Load** — an idle cluster (no dispatched-and-unfinished job of priority ≥ P), else the minimum
//! `LoadArr_c[P]`; **Ordering** — the minimum `CountArr_c[P]`; and their combination: Load picks an
//! idle cluster if there is one, otherwise the clusters within `epsilon` of the minimum load, among
//! which Ordering chooses; remaining ties are broken by a seeded random draw.
//!
//! They see only their own dispatch bookkeeping and the termination notices (and the static
//! capabilities, to leave out clusters that can never run the job, D12 #12) — never the sites'
//! dynamic state. "The first found cluster" of the Load function is the lowest cluster id.

use super::arrays::{ClusterArrays, LoadMeasure, OrderingCount, PriorityArrays};
use super::{Dispatcher, GridState, Measure, Placement, Priority, Reason, refuse};
use crate::model::{ClusterId, Job, JobId, Time};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Which of the seed's functions decide.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Function {
    /// Load only (ties: random).
    Load,
    /// Ordering only (ties: random).
    Ordering,
    /// Load, then Ordering among the near-minimum clusters (recommended default).
    LoadThenOrdering,
}

/// The Load / Ordering dispatcher.
#[derive(Clone, Debug)]
pub struct LoadOrdering {
    function: Function,
    epsilon: f64,
    arrays: PriorityArrays,
    rng: ChaCha8Rng,
    counting: OrderingCount,
    last: Option<Reason>,
}

impl LoadOrdering {
    /// A dispatcher with priorities `1..=max`, the given function, tolerance `epsilon` (relative to
    /// the minimum load: within `min · (1 + epsilon)`), workload measure and seed.
    pub fn new(
        function: Function,
        max: Priority,
        epsilon: f64,
        measure: LoadMeasure,
        seed: u64,
    ) -> LoadOrdering {
        LoadOrdering {
            function,
            epsilon: epsilon.max(0.0),
            arrays: PriorityArrays::new(max, measure),
            rng: ChaCha8Rng::seed_from_u64(seed),
            counting: OrderingCount::AtLeast,
            last: None,
        }
    }

    /// The same dispatcher with Ordering counting as `counting` says (D12 #11).
    pub fn counting(mut self, counting: OrderingCount) -> LoadOrdering {
        self.counting = counting;
        self
    }

    fn pick(&mut self, set: &[ClusterId]) -> ClusterId {
        if set.len() == 1 {
            return set[0];
        }
        let i = (self.rng.next_u64() % set.len() as u64) as usize;
        set[i]
    }

    fn min_by<F: Fn(ClusterId) -> f64>(set: &[ClusterId], f: F, eps: f64) -> Vec<ClusterId> {
        let m = set.iter().map(|&c| f(c)).fold(f64::INFINITY, f64::min);
        let bound = if m > 0.0 { m * (1.0 + eps) } else { m };
        set.iter().copied().filter(|&c| f(c) <= bound).collect()
    }
}

impl Dispatcher for LoadOrdering {
    fn compact(&mut self) {
        self.arrays.compact();
    }

    fn describe(&self) -> String {
        let mut d = match self.function {
            Function::Load => "load".to_string(),
            Function::Ordering => "ordering".into(),
            Function::LoadThenOrdering if self.epsilon == 0.0 => "load-ordering".into(),
            Function::LoadThenOrdering => format!("load-ordering (epsilon {})", self.epsilon),
        };
        if self.counting == OrderingCount::Equal && self.function != Function::Load {
            d += " [count = P]";
        }
        d
    }

    fn dispatch(&mut self, _now: Time, job: &Job, p: Priority, grid: &GridState) -> Placement {
        self.last = None;
        let eligible: Vec<ClusterId> = grid.eligible(job).collect();
        if eligible.is_empty() {
            return refuse(job);
        }
        let arrays = &self.arrays;
        let equal = self.counting == OrderingCount::Equal;
        let count_of = |c: ClusterId| match equal {
            true => arrays.count_equal(c, p),
            false => arrays.count(c, p),
        };
        let load = |c: ClusterId| arrays.load(c, p) as f64;
        let count = |c: ClusterId| count_of(c) as f64;
        let values = |set: &[ClusterId], m: Measure| -> Vec<(ClusterId, i128)> {
            set.iter()
                .map(|&c| {
                    let v = match m {
                        Measure::Load => arrays.load(c, p),
                        _ => i128::from(count_of(c)),
                    };
                    (c, v)
                })
                .collect()
        };
        let (chosen, compared, measure) = match self.function {
            Function::Ordering => {
                let set = Self::min_by(&eligible, count, 0.0);
                let compared = values(&eligible, Measure::Count);
                (self.pick(&set), compared, Some(Measure::Count))
            }
            Function::Load | Function::LoadThenOrdering => {
                if let Some(&idle) = eligible.iter().find(|&&c| arrays.load(c, p) == 0) {
                    (idle, Vec::new(), None)
                } else {
                    let near = Self::min_by(&eligible, load, self.epsilon);
                    let (set, compared, measure) = if self.function == Function::LoadThenOrdering {
                        let compared = values(&near, Measure::CountAmongLeastLoad);
                        let set = Self::min_by(&near, count, 0.0);
                        (set, compared, Measure::CountAmongLeastLoad)
                    } else {
                        let compared = values(&eligible, Measure::Load);
                        (Self::min_by(&near, load, 0.0), compared, Measure::Load)
                    };
                    (self.pick(&set), compared, Some(measure))
                }
            }
        };
        self.last = Some(match measure {
            None => Reason::Idle { priority: p },
            Some(m) => Reason::least(m, Some(p), chosen, compared.into_iter()),
        });
        self.arrays.add(job, p, chosen);
        Placement::Cluster(chosen)
    }

    fn last_reason(&self) -> Option<Reason> {
        self.last
    }

    fn job_ended(&mut self, _now: Time, job: JobId, _cluster: ClusterId) {
        self.arrays.remove(job);
    }

    fn job_returned(&mut self, _now: Time, job: JobId, _cluster: ClusterId) {
        self.arrays.remove(job);
    }

    fn restore(&mut self, job: &Job, priority: Priority, placement: &Placement, _since: Time) {
        if let Placement::Cluster(cluster) = placement {
            self.arrays.add(job, priority, *cluster);
        }
    }

    fn arrays(&self, clusters: usize) -> Vec<ClusterArrays> {
        self.arrays.snapshot(clusters)
    }
}
