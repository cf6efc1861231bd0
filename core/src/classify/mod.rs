//! The meta-scheduler's classification phase: one priority in `1..=max` per job, computed once at
//! submission from the job's attributes only (spec `two-level-grid-scheduler.md` D4.1; D12 #1–#8,
//! #32).
//!
//! Three heuristics — [`deadline`] (margin against the recent mean margin), [`licence`] (number of
//! licence types asked for) and [`user`] (class and owner priority) — each give a contribution in
//! `0..=max`; the priority is their weighted mean, rounded half up and clamped to `[1, max]`
//! (D4.1.4, D12 #2). A weight of 0 switches a heuristic off. Every parameter lives in
//! [`ClassifierConfig`], with the recommended defaults. With `adh` set the Deadline heuristic is
//! the self-optimizing one of the thesis §5.1 ([`adh`]).

pub mod adh;
pub mod deadline;
pub mod licence;
pub mod user;

pub use adh::{Adh, AdhConfig};
pub use deadline::{DeadlineDetail, DeadlineHeuristic, Infeasible};
pub use licence::licence_priority;
pub use user::{UserValues, user_priority};

use crate::dispatch::Priority;
use crate::model::Job;
use serde::{Deserialize, Serialize};

/// The weights of the three heuristics.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Weights {
    /// Deadline heuristic.
    pub deadline: f64,
    /// Licence heuristic.
    pub licence: f64,
    /// User heuristic.
    pub user: f64,
    /// The owner's fair-share factor `F` (contribution `F · max`), when the grid keeps one
    /// ([`crate::fairshare::Shares`]); default 0, the two-level design's three heuristics alone.
    /// A job whose owner has no factor has it left out of the mean (the others' weights count).
    pub fairshare: f64,
}

impl Weights {
    /// The owner's fair-share factor alone (weight 1, the three heuristics 0).
    pub fn fairshare_only() -> Weights {
        Weights {
            deadline: 0.0,
            licence: 0.0,
            user: 0.0,
            fairshare: 1.0,
        }
    }
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            deadline: 1.0,
            licence: 1.0,
            user: 1.0,
            fairshare: 0.0,
        }
    }
}

/// Every parameter of the classification.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClassifierConfig {
    /// Highest priority (`max`, default 10).
    pub max: u8,
    /// Jobs in the Deadline heuristic's window (default 100, D12 #3).
    pub window: usize,
    /// Weights of the heuristics (default 1, 1, 1).
    pub weights: Weights,
    /// Licence types of the grid's catalogue, `|L|` (0: every job gets Licence priority 1).
    pub licence_types: usize,
    /// Values of the user classes (default Gold 7, Silver 4, Regular 1).
    pub user_values: UserValues,
    /// Negative margins: top interval (default) or lowest.
    pub infeasible: Infeasible,
    /// The self-optimizing Deadline heuristic (ADH, thesis §5.1) with these parameters; absent:
    /// the static heuristic (default).
    pub adh: Option<AdhConfig>,
}

impl Default for ClassifierConfig {
    fn default() -> Self {
        ClassifierConfig {
            max: 10,
            window: 100,
            weights: Weights::default(),
            licence_types: 0,
            user_values: UserValues::default(),
            infeasible: Infeasible::Highest,
            adh: None,
        }
    }
}

/// A configuration that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClassifierError {
    /// `max` is 0.
    #[error("classifier key `max`: must be at least 1")]
    Max,
    /// `window` is 0.
    #[error("classifier key `window`: must be at least 1")]
    Window,
    /// A weight is negative or not finite, or all are 0.
    #[error("classifier key `weights`: {0}")]
    Weights(&'static str),
    /// A key of `adh` (named in the message).
    #[error("classifier key `{0}`")]
    Adh(String),
}

impl ClassifierConfig {
    /// Checks the values, naming the wrong key.
    pub fn validate(&self) -> Result<(), ClassifierError> {
        if self.max == 0 {
            return Err(ClassifierError::Max);
        }
        if self.window == 0 {
            return Err(ClassifierError::Window);
        }
        let w = [
            self.weights.deadline,
            self.weights.licence,
            self.weights.user,
            self.weights.fairshare,
        ];
        if w.iter().any(|x| !x.is_finite() || *x < 0.0) {
            return Err(ClassifierError::Weights("must be finite and non-negative"));
        }
        if w.iter().sum::<f64>() <= 0.0 {
            return Err(ClassifierError::Weights("at least one must be positive"));
        }
        if let Some(p) = self.adh.as_ref().and_then(AdhConfig::problem) {
            return Err(ClassifierError::Adh(p));
        }
        Ok(())
    }
}

/// How a priority was reached (the live meta-scheduler's `explain`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Classification {
    /// The priority.
    pub priority: Priority,
    /// Deadline heuristic.
    pub deadline: DeadlineDetail,
    /// Licence heuristic.
    pub licence: u8,
    /// User heuristic.
    pub user: u8,
    /// The owner's fair-share factor, when weighed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fairshare: Option<f64>,
}

/// The classifier: a deterministic state machine over the stream of submitted jobs.
#[derive(Clone, Debug)]
pub struct Classifier {
    cfg: ClassifierConfig,
    deadline: DeadlineHeuristic,
}

impl Classifier {
    /// A classifier with the given (validated) configuration.
    pub fn new(cfg: ClassifierConfig) -> Result<Classifier, ClassifierError> {
        cfg.validate()?;
        let deadline = DeadlineHeuristic::new(cfg.max, cfg.window, cfg.infeasible);
        Ok(Classifier {
            deadline: match cfg.adh {
                Some(adh) => deadline.with_adh(adh),
                None => deadline,
            },
            cfg,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ClassifierConfig {
        &self.cfg
    }

    /// Classifies the next submitted job, with the details.
    pub fn classify_explained(&mut self, job: &Job) -> Classification {
        self.classify_with(job, None)
    }

    /// Classifies the next submitted job whose owner's fair-share factor is `fairshare` (in
    /// `0..=1`; `None`: the owner has none, or the grid keeps no fair share), with the details.
    /// The factor enters like a fourth heuristic of contribution `F · max`, weighed as the
    /// multifactor plugin weighs its factors (Slurm's priority/multifactor); the weighted mean is
    /// rounded half up as the others' (D4.1.4).
    pub fn classify_with(&mut self, job: &Job, fairshare: Option<f64>) -> Classification {
        let max = self.cfg.max;
        let deadline = self.deadline.evaluate(job);
        let licence = licence_priority(job.licences.len(), self.cfg.licence_types, max);
        let user = user_priority(job, &self.cfg.user_values).min(max);
        let c = Classification {
            priority: 1,
            deadline,
            licence,
            user,
            fairshare: None,
        };
        self.reweigh(&c, fairshare)
    }

    /// `c` with its owner's fair-share factor now `fairshare` (the three heuristics as they
    /// were at submission): the priority recomputed the way [`classify_with`](Self::classify_with)
    /// computes it. Nothing in the classifier's state changes: the grid runner re-reads a waiting
    /// job's factor every recalculation period (Slurm's `PriorityCalcPeriod`).
    pub fn reweigh(&self, c: &Classification, fairshare: Option<f64>) -> Classification {
        let max = self.cfg.max;
        let w = &self.cfg.weights;
        let fs = fairshare
            .filter(|_| w.fairshare > 0.0)
            .map(|f| f.clamp(0.0, 1.0));
        let (fs_sum, fs_w) = fs.map_or((0.0, 0.0), |f| {
            (w.fairshare * f * f64::from(max), w.fairshare)
        });
        let weights = w.deadline + w.licence + w.user + fs_w;
        let mean = if weights > 0.0 {
            (w.deadline * f64::from(c.deadline.value)
                + w.licence * f64::from(c.licence)
                + w.user * f64::from(c.user)
                + fs_sum)
                / weights
        } else {
            // Only the fair share is weighed and the owner has none.
            1.0
        };
        let priority = ((mean + 0.5).floor() as i64).clamp(1, i64::from(max)) as Priority;
        Classification {
            priority,
            fairshare: fs,
            ..*c
        }
    }

    /// The heuristics of `job` that depend on it alone (Licence, User), the Deadline
    /// heuristic's contribution 0, for a job classified before a restart or a requeue: `None`
    /// when the Deadline heuristic is weighed (its value came from the window of that time).
    pub fn without_deadline(&self, job: &Job) -> Option<Classification> {
        if self.cfg.weights.deadline > 0.0 {
            return None;
        }
        let max = self.cfg.max;
        Some(Classification {
            priority: 1,
            deadline: DeadlineDetail {
                margin: None,
                mean_margin: None,
                interval: 0,
                value: 0,
                base: 2.0,
            },
            licence: licence_priority(job.licences.len(), self.cfg.licence_types, max),
            user: user_priority(job, &self.cfg.user_values).min(max),
            fairshare: None,
        })
    }

    /// Classifies the next submitted job.
    pub fn classify(&mut self, job: &Job) -> Priority {
        self.classify_explained(job).priority
    }

    /// The Deadline heuristic (its window, and ADH's state when it adapts).
    pub fn deadline(&self) -> &DeadlineHeuristic {
        &self.deadline
    }

    /// How many of the latest jobs with a deadline the classifier's state depends on: its window,
    /// or ADH's record when longer.
    pub fn memory(&self) -> usize {
        self.cfg.window.max(self.cfg.adh.map_or(0, |a| a.history))
    }

    /// The classifier's state: the Deadline heuristic's window of margins, oldest first (the
    /// other heuristics remember nothing); with ADH, then [`ADH_MARK`] and ADH's state
    /// ([`Adh::snapshot`]).
    pub fn snapshot(&self) -> Vec<i64> {
        let mut v = self.deadline.window();
        if let Some(adh) = self.deadline.adh() {
            v.push(ADH_MARK);
            v.extend(adh.snapshot());
        }
        v
    }

    /// Continues from a [`snapshot`](Self::snapshot): classifies the next jobs as the classifier
    /// that took it would. A snapshot without ADH's part leaves ADH at its initial state; ADH's
    /// part is ignored by a static classifier.
    pub fn restore(&mut self, snapshot: &[i64]) {
        let (margins, adh) = match snapshot.iter().position(|&w| w == ADH_MARK) {
            Some(i) => (&snapshot[..i], Some(&snapshot[i + 1..])),
            None => (snapshot, None),
        };
        self.deadline.restore_window(margins);
        if let (Some(words), Some(state)) = (adh, self.deadline.adh_mut()) {
            state.restore(words);
        }
    }
}

/// Separates the margins from ADH's state in a [`Classifier::snapshot`] (no margin is `i64::MIN`:
/// deadlines, estimates and submissions are validated times).
pub const ADH_MARK: i64 = i64::MIN;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{LicenceId, UserClass};

    #[test]
    fn weighted_mean_rounded_half_up_and_clamped() {
        let cfg = ClassifierConfig {
            licence_types: 20,
            ..Default::default()
        };
        let mut c = Classifier::new(cfg).unwrap();
        let mut j = Job::new(1, 0, 1, 1_000, 1_000);
        j.deadline = Some(1_100);
        j.licences = (0..5).map(LicenceId).collect();
        j.user_class = UserClass::Silver;
        j.owner_priority = 1;
        // Deadline 4 (first job: own margin, R = 0.1), licence 3, user 5: mean 4.
        let e = c.classify_explained(&j);
        assert_eq!(
            (e.deadline.value, e.licence, e.user, e.priority),
            (4, 3, 5, 4)
        );
        // Only the user heuristic: Gold + 3 = 10.
        let mut only_user = Classifier::new(ClassifierConfig {
            weights: Weights {
                deadline: 0.0,
                licence: 0.0,
                user: 1.0,
                fairshare: 0.0,
            },
            ..Default::default()
        })
        .unwrap();
        j.user_class = UserClass::Gold;
        j.owner_priority = 3;
        assert_eq!(only_user.classify(&j), 10);
        // No deadline, no licence, Regular: (0 + 1 + 1) / 3 = 0.67 -> 1.
        let mut c = Classifier::new(ClassifierConfig::default()).unwrap();
        let plain = Job::new(2, 0, 1, 100, 100);
        assert_eq!(c.classify(&plain), 1);
        // Half up: licence 1 and user 2 (Regular + 1) average 1.5 -> 2.
        let mut halves = Classifier::new(ClassifierConfig {
            weights: Weights {
                deadline: 0.0,
                licence: 1.0,
                user: 1.0,
                fairshare: 0.0,
            },
            ..Default::default()
        })
        .unwrap();
        let mut one = Job::new(3, 0, 1, 100, 100);
        one.owner_priority = 1;
        assert_eq!(halves.classify(&one), 2);
    }

    /// The fair-share factor enters as a fourth contribution `F · max`; an owner without one
    /// leaves it out of the mean, and a weight of 0 (the default) ignores it.
    #[test]
    fn the_fair_share_factor_is_a_weighed_fourth_contribution() {
        let weights = Weights {
            fairshare: 1.0,
            ..Weights::default()
        };
        let mut c = Classifier::new(ClassifierConfig {
            weights,
            ..Default::default()
        })
        .unwrap();
        let plain = Job::new(1, 0, 1, 100, 100);
        // Deadline 0, licence 1, user 1, fair share 0.5 · 10: 7 / 4 = 1.75 -> 2.
        let e = c.classify_with(&plain, Some(0.5));
        assert_eq!((e.priority, e.fairshare), (2, Some(0.5)));
        // No factor: (0 + 1 + 1) / 3 -> 1.
        assert_eq!(c.classify_with(&plain, None).priority, 1);
        // Weight 0: the factor is not shown, and changes nothing.
        let mut d = Classifier::new(ClassifierConfig::default()).unwrap();
        let e = d.classify_with(&plain, Some(1.0));
        assert_eq!((e.priority, e.fairshare), (1, None));
    }

    #[test]
    fn bad_configurations_name_the_key() {
        let bad = ClassifierConfig {
            max: 0,
            ..Default::default()
        };
        assert!(
            Classifier::new(bad)
                .unwrap_err()
                .to_string()
                .contains("`max`")
        );
        let bad = ClassifierConfig {
            weights: Weights {
                deadline: 0.0,
                licence: 0.0,
                user: 0.0,
                fairshare: 0.0,
            },
            ..Default::default()
        };
        assert!(
            Classifier::new(bad)
                .unwrap_err()
                .to_string()
                .contains("`weights`")
        );
        let e = serde_json::from_str::<ClassifierConfig>(r#"{"windw": 5}"#).unwrap_err();
        assert!(e.to_string().contains("windw"), "{e}");
        let c: ClassifierConfig = serde_json::from_str(r#"{"window": 5, "max": 4}"#).unwrap();
        assert_eq!((c.window, c.max, c.weights.user), (5, 4, 1.0));
    }

    /// A classifier restored from another's snapshot classifies the next jobs exactly as the
    /// other does, though it never saw the jobs before; a longer snapshot keeps its newest
    /// margins.
    #[test]
    fn a_restored_snapshot_classifies_as_the_original() {
        let cfg = ClassifierConfig {
            window: 3,
            ..Default::default()
        };
        let job = |i: i64, slack: i64| {
            let mut j = Job::new(i as u64, i * 10, 1, 100, 100);
            j.deadline = Some(i * 10 + 100 + slack);
            j
        };
        let mut a = Classifier::new(cfg).unwrap();
        for (i, slack) in [(1, 5_000), (2, 10), (3, 900), (4, 40), (5, 7)] {
            a.classify(&job(i, slack));
        }
        assert_eq!(a.snapshot(), vec![900, 40, 7]);
        let mut b = Classifier::new(cfg).unwrap();
        b.restore(&[5_000, 10, 900, 40, 7]);
        assert_eq!(b.snapshot(), vec![900, 40, 7]);
        let mut fresh = Classifier::new(cfg).unwrap();
        let mut differs = false;
        for (i, slack) in [(6, 30), (7, 2_000), (8, 1), (9, 300)] {
            let (pa, pb) = (a.classify(&job(i, slack)), b.classify(&job(i, slack)));
            assert_eq!(pa, pb, "job {i}");
            differs |= fresh.classify(&job(i, slack)) != pa;
        }
        // The snapshot matters: without it the same jobs are classified otherwise.
        assert!(differs);
    }

    /// ADH's state travels in the snapshot: a restored adaptive classifier goes on with the same
    /// base and record; a static classifier ignores that part, and an adaptive one restored from
    /// a static snapshot starts ADH afresh.
    #[test]
    fn adh_state_is_part_of_the_snapshot() {
        let cfg = ClassifierConfig {
            window: 5,
            adh: Some(AdhConfig {
                history: 2,
                ..AdhConfig::default()
            }),
            ..Default::default()
        };
        let job = |i: i64, slack: i64| {
            let mut j = Job::new(i as u64, i * 10, 1, 100, 100);
            j.deadline = Some(i * 10 + 100 + slack);
            j
        };
        let mut a = Classifier::new(cfg).unwrap();
        // Margins far below the mean: top levels pile up, ADH raises its base.
        for (i, slack) in [(1, 5_000), (2, 1), (3, 2), (4, 3), (5, 1), (6, 2)] {
            a.classify(&job(i, slack));
        }
        let base = a.deadline().base();
        assert!(base > 2.0, "{base}");
        assert_eq!(a.memory(), 5);
        let snap = a.snapshot();
        let mut b = Classifier::new(cfg).unwrap();
        b.restore(&snap);
        assert_eq!(b.snapshot(), snap);
        for (i, slack) in [(7, 2), (8, 900), (9, 1)] {
            let (ea, eb) = (
                a.classify_explained(&job(i, slack)),
                b.classify_explained(&job(i, slack)),
            );
            assert_eq!(ea, eb, "job {i}");
        }
        let mut plain = Classifier::new(ClassifierConfig {
            window: 5,
            ..Default::default()
        })
        .unwrap();
        plain.restore(&snap);
        assert_eq!(plain.snapshot(), snap[..5].to_vec());
        let mut fresh = Classifier::new(cfg).unwrap();
        fresh.restore(&plain.snapshot());
        assert_eq!(fresh.deadline().base(), 2.0);
        assert_eq!(fresh.snapshot()[..5], plain.snapshot()[..]);
        let bad = ClassifierConfig {
            adh: Some(AdhConfig {
                delta: 0.0,
                ..AdhConfig::default()
            }),
            ..Default::default()
        };
        let e = Classifier::new(bad).unwrap_err().to_string();
        assert!(e.contains("adh.delta"), "{e}");
        let c: ClassifierConfig = serde_json::from_str(r#"{"adh": {"history": 50}}"#).unwrap();
        assert_eq!(c.adh.unwrap().history, 50);
        let e = serde_json::from_str::<ClassifierConfig>(r#"{"adh": {"histroy": 5}}"#).unwrap_err();
        assert!(e.to_string().contains("histroy"), "{e}");
    }
}
