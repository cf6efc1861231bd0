//! What a grid runner is built from (Pasquali, thesis D3: the Meta-Scheduler knows each cluster's
//! static capabilities; Streit, thesis §6.4: the multi-site settings): the sites with their
//! capabilities and limits, how split jobs are co-allocated, how jobs get their priority, and the
//! whole as plain data for an input log's header.

use super::coallocate;
use crate::classify::{Classifier, ClassifierConfig, ClassifierError};
use crate::dispatch::{ClusterCaps, DispatchConfig, MultiSiteConfig, Network, Priority};
use crate::fairshare::{FairShareConfig, ShareError, UsageState};
use crate::model::{Duration, Job, MachineId, UserId};
use serde::{Deserialize, Serialize};

/// One site of the grid as the grid runner sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteSpec {
    /// Its name (for the explanations).
    pub name: String,
    /// Its static capabilities; its cluster id is its index.
    pub caps: ClusterCaps,
    /// The longest estimate it runs, when it limits them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_estimate: Option<Duration>,
    /// Its machines, when a job's inputs may be pinned to a machine (such a job goes only to the
    /// site holding it); `None`: inputs are not checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machines: Option<Vec<MachineId>>,
    /// Whether it stages jobs' inputs in (a Slurm-backed site does not yet): a job with inputs
    /// ([`Job::stage_in`]) goes only to sites that do.
    #[serde(default = "yes", skip_serializing_if = "is_yes")]
    pub stages: bool,
    /// The users whose jobs it runs, when it runs each job as a local account mapped from its
    /// owner and maps only these (no catch-all entry); `None`: every user's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users: Option<Vec<UserId>>,
    /// Whether it holds advance reservations (a Slurm-backed site does not): a job split over
    /// sites is co-allocated in reservations, so its fragments go only to sites that do.
    #[serde(default = "yes", skip_serializing_if = "is_yes")]
    pub reserves: bool,
}

impl SiteSpec {
    /// A site named `name` of these capabilities, as the simulator's grids have them: no
    /// estimate limit, machines not named, inputs staged.
    pub fn plain(name: impl Into<String>, caps: ClusterCaps) -> SiteSpec {
        SiteSpec {
            name: name.into(),
            caps,
            max_estimate: None,
            machines: None,
            stages: true,
            users: None,
            reserves: true,
        }
    }

    /// Whether the site runs jobs of `job`'s owner (it maps the owner to a local account, or
    /// runs every user's jobs).
    pub fn runs_user_of(&self, job: &Job) -> bool {
        self.users.as_ref().is_none_or(|u| u.contains(&job.user))
    }

    /// What `job` takes on the site's fastest machine: its estimate, scaled by its benchmark
    /// score over the machine's when it gives one (a site of unknown speed counts as score 1,
    /// the default).
    pub fn time_on(&self, job: &Job) -> Duration {
        match job.benchmark {
            Some(bm) => {
                crate::model::scale_duration(job.estimate, bm, self.caps.benchmark.unwrap_or(1))
            }
            None => job.estimate,
        }
    }

    /// Whether `job` keeps within the site's longest estimate there ([`time_on`](Self::time_on)).
    pub fn within_limit(&self, job: &Job) -> bool {
        self.max_estimate.is_none_or(|m| self.time_on(job) <= m)
    }
}

fn yes() -> bool {
    true
}

fn is_yes(b: &bool) -> bool {
    *b
}

/// How split jobs are co-allocated.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoallocationRules {
    /// The WAN overhead p (one value, or per pair of sites) and the adaptive rule.
    pub multi_site: MultiSiteConfig,
    /// Rounds of holds before a co-allocation is given up.
    pub rounds: u32,
    /// Seconds after which a given-up co-allocation's job is dispatched again.
    #[serde(default = "one")]
    pub retry_after: Duration,
    /// Co-allocations of one job in a row that a site refused before the job is refused.
    #[serde(default = "ten")]
    pub max_refused: u32,
}

fn one() -> Duration {
    1
}

fn ten() -> u32 {
    coallocate::MAX_REFUSED
}

impl CoallocationRules {
    /// Rules with the default retry delay (1 s) and refusal limit ([`coallocate::MAX_REFUSED`]).
    pub fn new(multi_site: MultiSiteConfig, rounds: u32) -> CoallocationRules {
        CoallocationRules {
            multi_site,
            rounds,
            retry_after: one(),
            max_refused: ten(),
        }
    }
}

/// The grid runner's settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GridSettings {
    /// How split jobs are co-allocated; `None`: a split is refused (one site per job).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coallocation: Option<CoallocationRules>,
    /// A split starts at once on its parts, without holds ([`Effect::StartSplit`]): the sites are
    /// bare machines whose occupancy the strategy tracks itself, as in the multi-site study
    /// (Streit, thesis §6). Takes precedence over `coallocation`, whose `multi_site` overhead
    /// still stretches the splits started at once.
    #[serde(default)]
    pub splits_at_once: bool,
    /// Explain every classification and dispatch (the live `explain`); off in simulations.
    #[serde(default)]
    pub explain: bool,
    /// A site whose link has been down this long is marked down; `None`: sites never go down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site_down_after_ms: Option<u64>,
    /// An advance reservation whose site has not answered for this long (milliseconds) is
    /// taken back there.
    #[serde(default)]
    pub reservation_answer_ms: u64,
    /// The grid's links (bandwidth and latency from the submitters and between sites): the
    /// strategies that estimate completion add the time to move a job's inputs
    /// ([`crate::dispatch::Transfers`]); `None`: data costs nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<Network>,
    /// The strategies ignore the transfers (the data-blind baseline); `explain` still shows them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub data_blind: bool,
    /// The grid's accounts and their shares: runs are charged to their owners as they end, and
    /// the classifier weighs the owner's factor ([`crate::classify::Weights::fairshare`]); a job
    /// whose owner has no account is refused. `None`: nobody is charged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fairshare: Option<FairShareConfig>,
}

/// Everything a grid runner is built from, as plain data (the header of an input log).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GridConfig {
    /// The sites, in cluster order.
    pub sites: Vec<SiteSpec>,
    /// The dispatch strategy.
    pub dispatch: DispatchConfig,
    /// The classifier; `None`: every job has priority 1 unless its submission gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classifier: Option<ClassifierConfig>,
    /// The settings.
    #[serde(default)]
    pub settings: GridSettings,
    /// The classifier's state to continue from (a driver restarted with its snapshot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classifier_state: Option<Vec<i64>>,
    /// The fair-share usage to continue from (a driver restarted with its snapshot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_state: Option<UsageState>,
}

/// A grid description that cannot be used, naming what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GridConfigError {
    /// The classifier's configuration.
    #[error(transparent)]
    Classifier(#[from] ClassifierError),
    /// The fair share's.
    #[error(transparent)]
    FairShare(#[from] ShareError),
}

/// How submitted jobs get their priority.
#[derive(Clone, Debug)]
pub enum Classify {
    /// Every job the same.
    Fixed(Priority),
    /// The two-level design's classifier (Pasquali, thesis §3.1.1, D4.1).
    By(Box<Classifier>),
    /// A rule of the driver's, from the job alone (tests, what-if studies).
    With(fn(&Job) -> Priority),
}
