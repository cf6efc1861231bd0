//! The self-tuning dynP scheduler's decision step (Streit, thesis §4.3–4.5): the three plans of
//! FCFS, SJF and LJF are rated by a self-tuning metric over the waiting jobs (planned start plus
//! estimate), and a decider picks the policy whose plan becomes the active one.
//!
//! * Metrics (§4.3, Tab. 5.5): ART, ARTwA, ARTwW (default), makespan, SLD, SLDwW, ppSLD₆₀, all
//!   minimized; running jobs are the same in every plan and are left out, except from makespan.
//! * Deciders (§4.4, Tab. 4.3): simple (ties: FCFS before SJF before LJF, the old policy
//!   ignored), advanced (default: stay with the old policy when it is among the best), and
//!   preferred (one policy left only for a strictly better one and taken back as soon as it is at
//!   least equal; by default it must also be no worse than the third policy, the literal reading
//!   compares it with the active policy only).
//! * Options (§4.5): full self-tuning (a decision at every submission and every early end) or
//!   half (submissions only); slackness, the old policy's value virtually improved by a
//!   percentage before deciding.
//!
//! Every decision is counted by its case of Tab. 4.3 and by the switch it makes. Rows 5, 7 and 9
//! of the table repeat the conditions of rows 4b, 2 and 3 (one strict best, the other two tied)
//! and are counted there; the thesis' counts (Tab. 5.3) record 0, 0 and 1 decisions for them.

use super::plan_order::PlanOrder;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a plan is rated by (§4.3; smaller is better).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum TuningMetric {
    /// Average response time.
    Art,
    /// Average response time weighted by area (processors × estimate).
    Artwa,
    /// Average response time weighted by width (default, the thesis' best).
    #[default]
    Artww,
    /// The plan's last estimated end, running jobs included.
    Makespan,
    /// Average slowdown (response over estimate).
    Sld,
    /// Average slowdown weighted by width.
    Sldww,
    /// Average per-processor slowdown bounded at 60 s.
    Ppsld60,
}

/// Which decider picks the policy (§4.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum DeciderKind {
    /// The first best in the order FCFS, SJF, LJF.
    Simple,
    /// Stays with the old policy when it is among the best (default).
    #[default]
    Advanced,
    /// Prefers `preferred`.
    Preferred,
}

/// When decisions are made (§4.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Tuning {
    /// At every submission and every early end (default).
    #[default]
    Full,
    /// At submissions only.
    Half,
}

/// The options of dynP; the defaults are the thesis' recommended setting (§4.3: ARTwW, advanced
/// decider, full self-tuning, no slackness).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DynpOptions {
    /// The self-tuning metric.
    pub metric: TuningMetric,
    /// The decider.
    pub decider: DeciderKind,
    /// The preferred policy of the preferred decider.
    pub preferred: PlanOrder,
    /// The preferred decider's literal reading: back to the preferred policy as soon as it is at
    /// least equal to the active one, even when the third is strictly better.
    pub preferred_literal: bool,
    /// Full or half self-tuning.
    pub tuning: Tuning,
    /// Slackness in percent (0 = none).
    pub slack_pct: f64,
}

impl Default for DynpOptions {
    fn default() -> Self {
        DynpOptions {
            metric: TuningMetric::Artww,
            decider: DeciderKind::Advanced,
            preferred: PlanOrder::Sjf,
            preferred_literal: false,
            tuning: Tuning::Full,
            slack_pct: 0.0,
        }
    }
}

impl DynpOptions {
    /// The policy dynP starts with (spec ambiguity 10: FCFS, or the preferred one).
    pub fn initial(&self) -> PlanOrder {
        match self.decider {
            DeciderKind::Preferred => self.preferred,
            _ => PlanOrder::Fcfs,
        }
    }

    /// The options that differ from the defaults, as `key=value` words.
    pub fn non_default(&self) -> Vec<String> {
        let d = DynpOptions::default();
        let mut v = Vec::new();
        if self.metric != d.metric {
            v.push(format!("metric={}", self.metric.as_str()));
        }
        if self.decider != d.decider {
            v.push(format!("decider={}", self.decider.as_str()));
        }
        if self.decider == DeciderKind::Preferred {
            v.push(format!("preferred={}", self.preferred.as_str()));
            if self.preferred_literal {
                v.push("preferred-literal".into());
            }
        }
        if self.tuning != d.tuning {
            v.push("tuning=half".into());
        }
        if self.slack_pct != 0.0 {
            v.push(format!("slack={}%", self.slack_pct));
        }
        v
    }

    /// Checks the values a configuration file may get wrong, naming the key.
    pub fn check(&self) -> Result<(), String> {
        if !(0.0..100.0).contains(&self.slack_pct) {
            return Err(format!(
                "dynp.slack_pct must be in [0, 100), not {}",
                self.slack_pct
            ));
        }
        Ok(())
    }
}

impl TuningMetric {
    /// Every metric, in the order of the thesis' Tab. 5.5.
    pub const ALL: [TuningMetric; 7] = [
        TuningMetric::Art,
        TuningMetric::Artwa,
        TuningMetric::Artww,
        TuningMetric::Makespan,
        TuningMetric::Sld,
        TuningMetric::Sldww,
        TuningMetric::Ppsld60,
    ];

    /// Whether the metric is an exact integer sum (or a maximum), whose value does not depend on
    /// the order the jobs are summed in.
    pub fn exact(self) -> bool {
        matches!(
            self,
            TuningMetric::Art | TuningMetric::Artwa | TuningMetric::Artww | TuningMetric::Makespan
        )
    }

    /// Its name in configuration files.
    pub fn as_str(self) -> &'static str {
        match self {
            TuningMetric::Art => "art",
            TuningMetric::Artwa => "artwa",
            TuningMetric::Artww => "artww",
            TuningMetric::Makespan => "makespan",
            TuningMetric::Sld => "sld",
            TuningMetric::Sldww => "sldww",
            TuningMetric::Ppsld60 => "ppsld60",
        }
    }
}

impl std::str::FromStr for TuningMetric {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        TuningMetric::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = TuningMetric::ALL.iter().map(|m| m.as_str()).collect();
                format!(
                    "unknown metric `{s}` (expected one of: {})",
                    names.join(", ")
                )
            })
    }
}

impl std::str::FromStr for DeciderKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        [
            DeciderKind::Simple,
            DeciderKind::Advanced,
            DeciderKind::Preferred,
        ]
        .into_iter()
        .find(|d| d.as_str() == s)
        .ok_or_else(|| {
            format!("unknown decider `{s}` (expected one of: simple, advanced, preferred)")
        })
    }
}

impl DeciderKind {
    /// Its name in configuration files.
    pub fn as_str(self) -> &'static str {
        match self {
            DeciderKind::Simple => "simple",
            DeciderKind::Advanced => "advanced",
            DeciderKind::Preferred => "preferred",
        }
    }
}

/// One waiting job as a plan sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlannedJob {
    /// Submission time.
    pub submit: i64,
    /// Processors.
    pub procs: u32,
    /// Estimated run time.
    pub estimate: i64,
    /// Planned start.
    pub start: i64,
}

/// The value of a plan under `metric`: `jobs` are the waiting jobs in a fixed order (the same
/// for every candidate plan, so that equal plans get bit-equal values; the exact metrics,
/// [`TuningMetric::exact`], need no order), `running_end` the last estimated end of the running
/// jobs (makespan only). An empty plan is worth 0.
pub fn rate<I>(metric: TuningMetric, jobs: I, running_end: i64) -> f64
where
    I: IntoIterator<Item = PlannedJob>,
    I::IntoIter: Clone,
{
    let jobs = jobs.into_iter();
    let m = jobs.clone().count();
    if m == 0 {
        return if metric == TuningMetric::Makespan {
            running_end as f64
        } else {
            0.0
        };
    }
    let m = m as f64;
    let response = |j: &PlannedJob| (j.start + j.estimate - j.submit) as i128;
    // Exact integer sums where the metric allows, so that ties are exact.
    let weighted = |w: fn(&PlannedJob) -> i128| {
        let (num, den) = jobs.clone().fold((0i128, 0i128), |(n, d), j| {
            (n + w(&j) * response(&j), d + w(&j))
        });
        num as f64 / den.max(1) as f64
    };
    match metric {
        TuningMetric::Art => jobs.map(|j| response(&j)).sum::<i128>() as f64 / m,
        TuningMetric::Artww => weighted(|j| j.procs as i128),
        TuningMetric::Artwa => weighted(|j| j.procs as i128 * j.estimate.max(1) as i128),
        TuningMetric::Makespan => jobs
            .map(|j| j.start + j.estimate)
            .max()
            .unwrap_or(0)
            .max(running_end) as f64,
        TuningMetric::Sld => {
            jobs.map(|j| response(&j) as f64 / j.estimate.max(1) as f64)
                .sum::<f64>()
                / m
        }
        TuningMetric::Sldww => {
            let w: f64 = jobs.clone().map(|j| f64::from(j.procs)).sum();
            jobs.map(|j| f64::from(j.procs) * response(&j) as f64 / j.estimate.max(1) as f64)
                .sum::<f64>()
                / w
        }
        TuningMetric::Ppsld60 => {
            jobs.map(|j| {
                let d = f64::from(j.procs) * j.estimate.max(60) as f64;
                (response(&j) as f64 / d).max(1.0)
            })
            .sum::<f64>()
                / m
        }
    }
}

/// The values of the three plans.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Ratings {
    /// FCFS's plan.
    pub fcfs: f64,
    /// SJF's plan.
    pub sjf: f64,
    /// LJF's plan.
    pub ljf: f64,
}

impl Ratings {
    /// The value of `p`'s plan.
    pub fn of(&self, p: PlanOrder) -> f64 {
        match p {
            PlanOrder::Fcfs => self.fcfs,
            PlanOrder::Sjf => self.sjf,
            PlanOrder::Ljf => self.ljf,
        }
    }

    /// Sets the value of `p`'s plan.
    pub fn set(&mut self, p: PlanOrder, v: f64) {
        match p {
            PlanOrder::Fcfs => self.fcfs = v,
            PlanOrder::Sjf => self.sjf = v,
            PlanOrder::Ljf => self.ljf = v,
        }
    }
}

/// The case of Tab. 4.3 that `r` and `old` fall in.
pub fn case(r: &Ratings, old: PlanOrder) -> &'static str {
    let (f, s, l) = (r.fcfs, r.sjf, r.ljf);
    let by_old = |a: &'static str, b: &'static str, c: &'static str| match old {
        PlanOrder::Fcfs => a,
        PlanOrder::Sjf => b,
        PlanOrder::Ljf => c,
    };
    if f == s && s == l {
        "1"
    } else if s < f && s < l {
        "2"
    } else if f < s && f < l {
        "3"
    } else if l < f && l < s {
        if f < s {
            "4a"
        } else if f == s {
            "4b"
        } else {
            "4c"
        }
    } else if f == s {
        by_old("6a", "6b", "6c") // F = S < L
    } else if f == l {
        by_old("8a", "8b", "8c") // F = L < S
    } else {
        by_old("10a", "10b", "10c") // S = L < F
    }
}

/// The simple decider (Example 4.1).
pub fn simple(r: &Ratings) -> PlanOrder {
    if r.sjf <= r.ljf {
        if r.fcfs <= r.sjf {
            PlanOrder::Fcfs
        } else {
            PlanOrder::Sjf
        }
    } else if r.fcfs <= r.ljf {
        PlanOrder::Fcfs
    } else {
        PlanOrder::Ljf
    }
}

/// The advanced decider among `candidates` (Tab. 4.3's "correct decision"): the single best;
/// on a tie the old policy when it is among the best, else FCFS before SJF before LJF.
fn advanced_among(r: &Ratings, old: PlanOrder, candidates: &[PlanOrder]) -> PlanOrder {
    let best = candidates
        .iter()
        .map(|&p| r.of(p))
        .fold(f64::INFINITY, f64::min);
    let tied: Vec<PlanOrder> = candidates
        .iter()
        .copied()
        .filter(|&p| r.of(p) == best)
        .collect();
    if tied.contains(&old) {
        return old;
    }
    tied.into_iter().min().expect("some candidate is the best")
}

/// The advanced decider.
pub fn advanced(r: &Ratings, old: PlanOrder) -> PlanOrder {
    advanced_among(r, old, &PlanOrder::ALL)
}

/// The preferred decider with preferred policy `p` (§4.4; `literal`: spec ambiguity 12).
pub fn preferred(r: &Ratings, old: PlanOrder, p: PlanOrder, literal: bool) -> PlanOrder {
    let others: Vec<PlanOrder> = PlanOrder::ALL.into_iter().filter(|&q| q != p).collect();
    let best_other = others
        .iter()
        .map(|&q| r.of(q))
        .fold(f64::INFINITY, f64::min);
    if old == p {
        if r.of(p) <= best_other {
            p
        } else {
            advanced_among(r, old, &others)
        }
    } else {
        let rival = if literal { r.of(old) } else { best_other };
        if r.of(p) <= rival {
            p
        } else {
            advanced(r, old)
        }
    }
}

/// The decision step with its counters: what dynP adds to a planning policy.
#[derive(Clone, Debug)]
pub struct SelfTuning {
    /// The options.
    pub options: DynpOptions,
    /// Decisions per case of Tab. 4.3.
    cases: BTreeMap<&'static str, u64>,
    /// Decisions that switched to each policy (index = [`PlanOrder::index`]).
    switches: [u64; 3],
    /// Decisions that kept the policy.
    kept: u64,
    /// Jobs started under each policy.
    started: [u64; 3],
}

impl SelfTuning {
    /// A decision step with `options`.
    pub fn new(options: DynpOptions) -> SelfTuning {
        SelfTuning {
            options,
            cases: BTreeMap::new(),
            switches: [0; 3],
            kept: 0,
            started: [0; 3],
        }
    }

    /// Decides between the rated plans, given the active policy `old`, and counts the decision.
    pub fn decide(&mut self, mut r: Ratings, old: PlanOrder) -> PlanOrder {
        let slack = self.options.slack_pct / 100.0;
        if slack > 0.0 {
            r.set(old, r.of(old) * (1.0 - slack));
        }
        *self.cases.entry(case(&r, old)).or_insert(0) += 1;
        let new = match self.options.decider {
            DeciderKind::Simple => simple(&r),
            DeciderKind::Advanced => advanced(&r, old),
            DeciderKind::Preferred => preferred(
                &r,
                old,
                self.options.preferred,
                self.options.preferred_literal,
            ),
        };
        if new == old {
            self.kept += 1;
        } else {
            self.switches[new.index()] += 1;
        }
        new
    }

    /// A job started under `p`.
    pub fn started_under(&mut self, p: PlanOrder) {
        self.started[p.index()] += 1;
    }

    /// The counters, named: `case-<c>`, `switch-to-<policy>`, `no-switch`, `started-<policy>`.
    pub fn counters(&self) -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> = self
            .cases
            .iter()
            .map(|(c, n)| (format!("case-{c}"), *n))
            .collect();
        for p in PlanOrder::ALL {
            v.push((
                format!("switch-to-{}", p.as_str()),
                self.switches[p.index()],
            ));
        }
        v.push(("no-switch".into(), self.kept));
        for p in PlanOrder::ALL {
            v.push((format!("started-{}", p.as_str()), self.started[p.index()]));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use PlanOrder::{Fcfs as F, Ljf as L, Sjf as S};

    fn r(f: f64, s: f64, l: f64) -> Ratings {
        Ratings {
            fcfs: f,
            sjf: s,
            ljf: l,
        }
    }

    /// Every row of Tab. 4.3: the case, the simple decider's and the advanced decider's choice.
    #[test]
    fn table_4_3_row_by_row() {
        let rows: [(Ratings, PlanOrder, &str, PlanOrder, PlanOrder); 19] = [
            (r(1., 1., 1.), S, "1", F, S),
            (r(1., 1., 1.), L, "1", F, L),
            (r(2., 1., 3.), F, "2", S, S),
            (r(1., 2., 3.), L, "3", F, F),
            (r(2., 3., 1.), F, "4a", L, L),
            (r(2., 2., 1.), F, "4b", L, L),
            (r(3., 2., 1.), S, "4c", L, L),
            (r(1., 1., 2.), F, "6a", F, F),
            (r(1., 1., 2.), S, "6b", F, S),
            (r(1., 1., 2.), L, "6c", F, F),
            (r(2., 1., 2.), L, "2", S, S), // row 7's condition
            (r(1., 2., 1.), F, "8a", F, F),
            (r(1., 2., 1.), S, "8b", F, F),
            (r(1., 2., 1.), L, "8c", F, L),
            (r(1., 2., 2.), S, "3", F, F), // row 9's condition
            (r(2., 1., 1.), F, "10a", S, S),
            (r(2., 1., 1.), S, "10b", S, S),
            (r(2., 1., 1.), L, "10c", S, L),
            (r(1., 1., 1.), F, "1", F, F),
        ];
        for (i, (v, old, c, simple_choice, advanced_choice)) in rows.into_iter().enumerate() {
            assert_eq!(case(&v, old), c, "row {i}");
            assert_eq!(simple(&v), simple_choice, "row {i} simple");
            assert_eq!(advanced(&v, old), advanced_choice, "row {i} advanced");
        }
    }

    #[test]
    fn the_preferred_decider_leaves_only_for_better_and_returns_at_equal() {
        // SJF preferred and active: kept on a tie, left for a strictly better FCFS.
        assert_eq!(preferred(&r(2., 2., 3.), S, S, false), S);
        assert_eq!(preferred(&r(1., 2., 3.), S, S, false), F);
        // FCFS active: back to SJF as soon as SJF is at least equal to it ...
        assert_eq!(preferred(&r(2., 2., 3.), F, S, false), S);
        // ... unless LJF is strictly better than both (the literal reading goes back anyway).
        assert_eq!(preferred(&r(2., 2., 1.), F, S, false), L);
        assert_eq!(preferred(&r(2., 2., 1.), F, S, true), S);
        // Left for the better of the two others; a tie between them follows the advanced rule.
        assert_eq!(preferred(&r(1., 2., 1.), S, S, false), F);
    }

    #[test]
    fn slackness_makes_the_old_policy_win_unless_beaten_by_the_margin() {
        let mut t = SelfTuning::new(DynpOptions {
            slack_pct: 4.0,
            ..DynpOptions::default()
        });
        // SJF 3 % better than the active FCFS: not enough with 4 % slack.
        assert_eq!(t.decide(r(100., 97., 120.), F), F);
        // 5 % better: switch.
        assert_eq!(t.decide(r(100., 95., 120.), F), S);
        // With slack an exact tie no longer happens: the advanced decider acts as the simple one.
        assert_eq!(t.decide(r(100., 100., 100.), L), L);
        let c: BTreeMap<String, u64> = t.counters().into_iter().collect();
        assert_eq!(c["case-3"], 1, "{c:?}");
        assert_eq!(c["case-2"], 1);
        assert_eq!(c["case-4b"], 1, "L virtually improved below F = S");
        assert_eq!((c["switch-to-sjf"], c["no-switch"]), (1, 2));
    }

    #[test]
    fn ratings_of_a_small_plan() {
        let jobs = [
            PlannedJob {
                submit: 0,
                procs: 4,
                estimate: 100,
                start: 10,
            },
            PlannedJob {
                submit: 5,
                procs: 1,
                estimate: 20,
                start: 110,
            },
        ];
        // Responses 110 and 125.
        assert_eq!(rate(TuningMetric::Art, jobs, 0), 117.5);
        assert_eq!(rate(TuningMetric::Artww, jobs, 0), (4. * 110. + 125.) / 5.);
        assert_eq!(
            rate(TuningMetric::Artwa, jobs, 0),
            (400. * 110. + 20. * 125.) / 420.
        );
        assert_eq!(rate(TuningMetric::Makespan, jobs, 500), 500.);
        assert_eq!(rate(TuningMetric::Makespan, jobs, 0), 130.);
        assert_eq!(rate(TuningMetric::Sld, jobs, 0), (1.1 + 6.25) / 2.);
        assert_eq!(
            rate(TuningMetric::Ppsld60, jobs, 0),
            (1.0f64.max(110. / 400.) + 125. / 60.) / 2.
        );
        assert_eq!(rate(TuningMetric::Artww, [], 7), 0.0);
    }
}
