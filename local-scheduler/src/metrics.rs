//! The local scheduler's Prometheus metrics, refreshed by the driver on its
//! 100 ms tick and at each event: waiting jobs per meta-scheduler priority, running jobs, machines
//! online, licence copies in use, agent heartbeats, and the duration of every scheduling pass.

use gridsched_telemetry::Registry;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;

/// A priority label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PriorityLabel {
    /// The meta-scheduler's priority of the job.
    pub priority: u32,
}

/// A licence label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LicenceLabel {
    /// The licence.
    pub licence: String,
}

/// A machine label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct MachineLabel {
    /// The machine.
    pub machine: String,
}

/// How a running job was preempted.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PreemptionLabel {
    /// `suspend` (stopped, keeps its progress) or `kill` (requeued from scratch).
    pub kind: String,
}

/// One of the policy's own counters.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CounterLabel {
    /// Its name (`slices`, `context_switches`, dynP's `switches`, …).
    pub counter: String,
}

/// The metrics.
#[derive(Clone, Debug)]
pub struct LocalMetrics {
    /// Waiting jobs per priority.
    pub queued: Family<PriorityLabel, Gauge>,
    /// Running jobs.
    pub running: Gauge,
    /// Machines whose agent is online.
    pub machines_online: Gauge,
    /// Floating licence copies in use.
    pub licences_in_use: Family<LicenceLabel, Gauge>,
    /// Heartbeats received per machine.
    pub heartbeats: Family<MachineLabel, Counter>,
    /// Scheduling pass durations.
    pub pass_seconds: Histogram,
    /// Jobs started by the policy whose start claim the meta-scheduler has not granted yet.
    pub awaiting_claim: Gauge,
    /// Running jobs the policy preempted, by kind.
    pub preemptions: Family<PreemptionLabel, Counter>,
    /// Processor-seconds of work thrown away by kills of running jobs that run again from
    /// scratch (processors × time run).
    pub lost_work: Counter,
    /// Jobs stopped on their machine, keeping their progress.
    pub suspended: Gauge,
    /// The policy's own counters (a gang scheduler's slices and context switches, dynP's
    /// switches), as the policy reports them.
    pub policy: Family<CounterLabel, Gauge>,
}

impl LocalMetrics {
    /// The metrics, registered in `r`.
    pub fn new(r: &mut Registry) -> LocalMetrics {
        let m = LocalMetrics {
            queued: Family::default(),
            running: Gauge::default(),
            machines_online: Gauge::default(),
            licences_in_use: Family::default(),
            heartbeats: Family::default(),
            pass_seconds: Histogram::new(gridsched_telemetry::duration_buckets()),
            awaiting_claim: Gauge::default(),
            preemptions: Family::default(),
            lost_work: Counter::default(),
            suspended: Gauge::default(),
            policy: Family::default(),
        };
        r.register(
            "gridsched_local_queued_jobs",
            "Jobs waiting in the local queue, by meta-scheduler priority",
            m.queued.clone(),
        );
        r.register(
            "gridsched_local_running_jobs",
            "Jobs running",
            m.running.clone(),
        );
        r.register(
            "gridsched_local_machines_online",
            "Machines whose site agent is online",
            m.machines_online.clone(),
        );
        r.register(
            "gridsched_local_licence_copies_in_use",
            "Floating licence copies held by running jobs",
            m.licences_in_use.clone(),
        );
        r.register(
            "gridsched_local_agent_heartbeats",
            "Heartbeats received from site agents",
            m.heartbeats.clone(),
        );
        r.register(
            "gridsched_local_scheduling_pass_duration_seconds",
            "Duration of one scheduling pass of the local policy",
            m.pass_seconds.clone(),
        );
        r.register(
            "gridsched_local_jobs_awaiting_claim",
            "Jobs the policy started that wait for the meta-scheduler's start grant",
            m.awaiting_claim.clone(),
        );
        r.register(
            "gridsched_local_preemptions",
            "Running jobs the policy preempted: suspended (kind=suspend) or killed and requeued \
             (kind=kill)",
            m.preemptions.clone(),
        );
        r.register(
            "gridsched_local_lost_processor_seconds",
            "Processor-seconds of work lost by running jobs killed to run again from scratch",
            m.lost_work.clone(),
        );
        r.register(
            "gridsched_local_suspended_jobs",
            "Jobs stopped on their machine, keeping their progress",
            m.suspended.clone(),
        );
        r.register(
            "gridsched_local_policy_events",
            "The policy's own counters since the local scheduler started: a gang scheduler's \
             slices, context switches and migrations, dynP's policy switches",
            m.policy.clone(),
        );
        m
    }

    /// Counts one preemption of `kind` (`suspend` or `kill`).
    pub fn preempted(&self, kind: &str) {
        self.preemptions
            .get_or_create(&PreemptionLabel { kind: kind.into() })
            .inc();
    }
}

/// What the gauges show, as a site counts it.
#[derive(Debug, Default)]
pub struct Gauges {
    /// Waiting jobs per meta-scheduler priority.
    pub queued: std::collections::BTreeMap<u32, i64>,
    /// Running jobs.
    pub running: i64,
    /// Jobs whose start claim is asked and not granted yet.
    pub awaiting_claim: i64,
    /// Copies in use per licence.
    pub licences: Vec<(String, i64)>,
    /// Machines online.
    pub online: i64,
    /// Jobs suspended on their machine.
    pub suspended: i64,
    /// The policy's counters.
    pub policy: Vec<(String, u64)>,
}

impl LocalMetrics {
    /// Sets the gauges to `g`.
    pub fn show(&self, g: Gauges) {
        self.awaiting_claim.set(g.awaiting_claim);
        self.queued.clear();
        for (priority, n) in g.queued {
            self.queued
                .get_or_create(&PriorityLabel { priority })
                .set(n);
        }
        self.running.set(g.running);
        self.licences_in_use.clear();
        for (licence, n) in g.licences {
            self.licences_in_use
                .get_or_create(&LicenceLabel { licence })
                .set(n);
        }
        self.machines_online.set(g.online);
        self.suspended.set(g.suspended);
        for (counter, n) in g.policy {
            self.policy
                .get_or_create(&CounterLabel { counter })
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
    }
}
