//! The meta-scheduler's Prometheus metrics: jobs not ended per priority and
//! state, dispatch decisions per site and strategy, whether each site is reachable and up, and the
//! co-allocations of split jobs (their outcomes, the holds let go, the fragments' start skew)
//! (gRPC request counts and latencies come from the shared layer of `gridsched-telemetry`).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Priority and state of live jobs.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct JobLabel {
    /// Classification priority.
    pub priority: u32,
    /// State, e.g. `QUEUED`.
    pub state: String,
}

/// A dispatch decision.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DispatchLabel {
    /// The chosen site.
    pub site: String,
    /// The strategy that chose it.
    pub strategy: String,
}

/// A site.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SiteLabel {
    /// The site.
    pub site: String,
}

/// The metrics.
#[derive(Clone, Debug)]
pub struct MetaMetrics {
    /// Jobs not ended, by priority and state.
    pub jobs: Family<JobLabel, Gauge>,
    /// Dispatch decisions.
    pub dispatches: Family<DispatchLabel, Counter>,
    /// 1 when the site's event stream is connected.
    pub reachable: Family<SiteLabel, Gauge>,
    /// 1 when the site is up for dispatch.
    pub up: Family<SiteLabel, Gauge>,
    /// Jobs accepted.
    pub accepted: Counter,
    /// Job arrays accepted.
    pub arrays: Counter,
    /// Tasks released by job arrays.
    pub array_tasks: Counter,
    /// Workflows accepted.
    pub workflows: Counter,
    /// Workflow nodes released (each run of a node).
    pub workflow_nodes: Counter,
    /// Start claims answered, by site and outcome (`granted`, `withdrawn`).
    pub claims: Family<ClaimLabel, Counter>,
    /// Jobs withdrawn from a down site before they started, by the site they left.
    pub withdrawn: Family<SiteLabel, Counter>,
    /// Co-allocations of split jobs, by outcome (`committed`, `given-up`).
    pub coallocations: Family<OutcomeLabel, Counter>,
    /// Tentative holds let go (moved to a later start, or given up).
    pub holds_released: Counter,
    /// Seconds between the first and the last fragment start of a split job.
    pub start_skew: Histogram,
    /// Jobs held in memory (not finished, or finished within their retention).
    pub in_memory: Gauge,
    /// Job events retained in memory for watchers.
    pub events_retained: Gauge,
    /// 1 while this meta-scheduler leads (always, without replicas), 0 while it follows.
    pub leader: Gauge,
    /// The epoch of the lease it leads with (0: a store without a lease, or following).
    pub epoch: Gauge,
    /// Uploaded inputs sent to a site (its cache lacked them), by site.
    pub input_pushes: Family<SiteLabel, Counter>,
    /// Bytes of uploaded inputs sent to a site, by site.
    pub input_push_bytes: Family<SiteLabel, Counter>,
    /// Bytes of workflow nodes' outputs moved from the site that wrote them to another.
    pub input_relay_bytes: Family<RelayLabel, Counter>,
}

/// A move between two sites.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RelayLabel {
    /// The site that held the bytes.
    pub from: String,
    /// The site that received them.
    pub to: String,
}

/// The outcome of a co-allocation.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabel {
    /// `committed` or `given-up`.
    pub outcome: String,
}

/// Labels of a start-claim answer.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClaimLabel {
    /// Site name.
    pub site: String,
    /// `granted` or `withdrawn`.
    pub outcome: String,
}

impl MetaMetrics {
    /// The metrics, registered in `r`.
    pub fn new(r: &mut Registry) -> MetaMetrics {
        let m = MetaMetrics {
            jobs: Family::default(),
            dispatches: Family::default(),
            reachable: Family::default(),
            up: Family::default(),
            accepted: Counter::default(),
            arrays: Counter::default(),
            array_tasks: Counter::default(),
            workflows: Counter::default(),
            workflow_nodes: Counter::default(),
            claims: Family::default(),
            withdrawn: Family::default(),
            coallocations: Family::default(),
            holds_released: Counter::default(),
            start_skew: Histogram::new([0.001, 0.01, 0.1, 1.0, 10.0]),
            in_memory: Gauge::default(),
            events_retained: Gauge::default(),
            leader: Gauge::default(),
            epoch: Gauge::default(),
            input_pushes: Family::default(),
            input_push_bytes: Family::default(),
            input_relay_bytes: Family::default(),
        };
        r.register(
            "gridsched_meta_jobs",
            "Jobs not ended, by priority and state (the meta-scheduler's queue)",
            m.jobs.clone(),
        );
        r.register(
            "gridsched_meta_dispatch_decisions",
            "Jobs dispatched, by site and strategy",
            m.dispatches.clone(),
        );
        r.register(
            "gridsched_meta_site_reachable",
            "1 when the site's event stream is connected",
            m.reachable.clone(),
        );
        r.register(
            "gridsched_meta_site_up",
            "1 when the site receives jobs",
            m.up.clone(),
        );
        r.register(
            "gridsched_meta_jobs_accepted",
            "Jobs accepted (acknowledged and durable)",
            m.accepted.clone(),
        );
        r.register(
            "gridsched_meta_arrays_accepted",
            "Job arrays accepted (each counted once among the jobs accepted)",
            m.arrays.clone(),
        );
        r.register(
            "gridsched_meta_array_tasks_released",
            "Tasks released by job arrays to be dispatched",
            m.array_tasks.clone(),
        );
        r.register(
            "gridsched_meta_workflows_accepted",
            "Workflows accepted (each counted once among the jobs accepted)",
            m.workflows.clone(),
        );
        r.register(
            "gridsched_meta_workflow_nodes_released",
            "Runs of workflow nodes released to be dispatched (a retry counts again)",
            m.workflow_nodes.clone(),
        );
        r.register(
            "gridsched_meta_start_claims",
            "Start claims of the sites answered, by site and outcome",
            m.claims.clone(),
        );
        r.register(
            "gridsched_meta_withdrawn_jobs",
            "Jobs withdrawn from a down site before they started and dispatched again",
            m.withdrawn.clone(),
        );
        r.register(
            "gridsched_meta_coallocations",
            "Co-allocations of jobs split over sites, by outcome",
            m.coallocations.clone(),
        );
        r.register(
            "gridsched_meta_holds_released",
            "Tentative holds of co-allocations let go (moved or given up)",
            m.holds_released.clone(),
        );
        r.register(
            "gridsched_meta_start_skew_seconds",
            "Seconds between the first and the last fragment start of a split job",
            m.start_skew.clone(),
        );
        r.register(
            "gridsched_meta_jobs_in_memory",
            "Jobs held in memory: not finished, or finished within their retention (the rest \
             are in the store only)",
            m.in_memory.clone(),
        );
        r.register(
            "gridsched_meta_events_retained",
            "Job events retained in memory for watchers that resume",
            m.events_retained.clone(),
        );
        r.register(
            "gridsched_meta_leader",
            "1 while this meta-scheduler leads (always, without replicas), 0 while it follows",
            m.leader.clone(),
        );
        r.register(
            "gridsched_meta_lease_epoch",
            "The epoch of the lease this replica leads with (0: no lease, or following)",
            m.epoch.clone(),
        );
        r.register(
            "gridsched_meta_input_pushes",
            "Uploaded job inputs sent to a site whose cache lacked them, by site",
            m.input_pushes.clone(),
        );
        r.register(
            "gridsched_meta_input_push_bytes",
            "Bytes of uploaded job inputs sent to sites, by site",
            m.input_push_bytes.clone(),
        );
        r.register(
            "gridsched_meta_input_relay_bytes",
            "Bytes of workflow nodes' outputs moved from the site that wrote them to another",
            m.input_relay_bytes.clone(),
        );
        m
    }
}
