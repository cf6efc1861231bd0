//! Classification and dispatch of the live meta-scheduler (spec
//! `two-level-grid-scheduler.md` D4.1–D4.2): the core's [`Classifier`] and [`Dispatcher`], built
//! from the configuration by the same names as in `gridsim`, fed the same calls the simulator
//! makes (classify at submission, dispatch, termination notices), so a decision taken live is the
//! one the simulator takes from the same state.
//!
//! Site index `i` of the configuration is cluster `ClusterId(i)` of the core. A site is `up` until
//! its local scheduler has been unreachable for `links.site_down_after_ms`; a down site receives
//! no job. Strategies that read the sites' state (best-fit, least-loaded, min-completion) see the
//! last polled [`ClusterLoad`] of each site.
//!
//! A strategy with a queue at the meta level (`job-sharing`) holds a job at dispatch and places it
//! in a release pass ([`Decider::release`]), which the state runs after every change
//! ([`crate::state::State::settle`]).
//!
//! After a restart the classifier is rebuilt by classifying the stored jobs again in id order (its
//! Deadline window is a function of that sequence) and the dispatcher's bookkeeping by
//! [`Dispatcher::restore`] of every live placement and held job; only the random tie-break stream
//! restarts from the seed (mixed with the number of jobs already accepted, so it does not repeat
//! itself).

use crate::config::MetaConfig;
use gridsched_core::classify::{Classifier, ClassifierError};
use gridsched_core::dispatch::{
    ClusterArrays, ClusterCaps, ClusterLoad, MultiSiteConfig, Part, Placement, Priority, Reason,
    UrgentLoad,
};
use gridsched_core::grid::{Decision, Explanation, Placer, SiteSpec};
use gridsched_core::model::{ClusterId, Job, JobId, LicenceId, MachineId};
use gridsched_proto::v1;
use gridsched_proto::{ConvertError, NameTable, job_from_spec};

/// Where a release pass sends a job held at the meta level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Site `i`.
    Site(usize),
    /// Split over sites (cluster = site index), to be co-allocated.
    Split(Split),
}

/// A job the grid scheduler splits over sites: what its co-allocation needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    /// Its fragments.
    pub parts: Vec<Part>,
    /// The estimate of every fragment, stretched by the WAN overhead of its sites.
    pub length: i64,
    /// The WAN overhead p applied, in percent.
    pub overhead_pct: u32,
    /// In adaptive mode: the best single-site planned end (the split must end before it).
    pub single_end: Option<i64>,
}

/// The classifier, and the dispatch strategy with what it may see of the grid (the core's
/// [`Placer`], the grid runner's own).
#[derive(Debug)]
pub struct Decider {
    names: NameTable,
    classifier: Classifier,
    placer: Placer,
    /// The last dispatch left the job in the strategy's own queue ([`Placement::Hold`]).
    held_last: bool,
    /// The multi-site settings (the WAN overhead of a split).
    multi_site: MultiSiteConfig,
    /// The estimates of the jobs held at the meta level, for the length of a split's fragments.
    estimates: std::collections::HashMap<u64, i64>,
}

impl Decider {
    /// Builds the decision makers of a (completed) configuration, for a meta-scheduler that has
    /// already accepted `accepted_before` jobs (0 on a fresh start).
    pub fn new(cfg: &MetaConfig, accepted_before: u64) -> Result<Decider, ClassifierError> {
        let mut names = NameTable::new();
        let mut sites = Vec::with_capacity(cfg.sites.len());
        for (i, s) in cfg.sites.iter().enumerate() {
            let machines: Vec<MachineId> = s
                .machines
                .iter()
                .map(|m| names.add_machine(&m.name))
                .collect();
            let licences: Vec<LicenceId> =
                s.licences.iter().map(|l| names.add_licence(l)).collect();
            sites.push(SiteSpec {
                name: s.name.clone(),
                caps: ClusterCaps {
                    cluster: ClusterId(i as u32),
                    up: true,
                    total_procs: s.machines.iter().map(|m| u64::from(m.processors)).sum(),
                    max_machine_procs: s.widest_job(),
                    licences,
                },
                max_estimate: Some(s.max_estimate(cfg.limits.max_estimate_s)),
                machines: Some(machines),
            });
        }
        let mut dispatch = cfg.dispatch.clone();
        dispatch.max_priority = cfg.classifier.max;
        dispatch.seed = dispatch
            .seed
            .wrapping_add(accepted_before.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        Ok(Decider {
            classifier: Classifier::new(cfg.classifier)?,
            placer: Placer::new(sites, dispatch.build()),
            names,
            held_last: false,
            multi_site: cfg.dispatch.multi_site.clone(),
            estimates: std::collections::HashMap::new(),
        })
    }

    /// The strategy's description, e.g. `load-ordering`.
    pub fn describe(&self) -> &str {
        self.placer.describe()
    }

    /// Whether the strategy reads the sites' dynamic state (then the links poll it).
    pub fn reads_site_state(&self) -> bool {
        self.placer.reads_site_state()
    }

    /// The model job of a submitted spec.
    pub fn job(&mut self, spec: &v1::JobSpec, id: u64, submit: i64) -> Result<Job, ConvertError> {
        job_from_spec(spec, JobId(id), submit, &mut self.names)
    }

    /// Classifies the next submitted job (D4.1): its priority and how it was reached.
    pub fn classify(&mut self, job: &Job) -> v1::PriorityExplanation {
        let c = self.classifier.classify_explained(job);
        let w = self.classifier.config().weights;
        let part = |heuristic: &str, value: u8, weight: f64| v1::PriorityContribution {
            heuristic: heuristic.into(),
            value: f64::from(value),
            weight,
        };
        v1::PriorityExplanation {
            priority: u32::from(c.priority),
            contributions: vec![
                part("deadline", c.deadline.value, w.deadline),
                part("licence", c.licence, w.licence),
                part("user", c.user, w.user),
            ],
        }
    }

    /// The classifier's state, to write with the jobs it classified.
    pub fn classifier_snapshot(&self) -> Vec<i64> {
        self.classifier.snapshot()
    }

    /// Continues classifying from a snapshot.
    pub fn restore_classifier(&mut self, snapshot: &[i64]) {
        self.classifier.restore(snapshot);
    }

    /// How many of the latest jobs with a deadline the classifier's state depends on (its
    /// window, or ADH's record when longer).
    pub fn classifier_window(&self) -> usize {
        self.classifier.memory()
    }

    /// Chooses the site of a classified job at `now` (D4.2): the site index, or `None` when no
    /// site that is up can run it now (the job waits for one), with the explanation.
    pub fn dispatch(
        &mut self,
        now: i64,
        job: &Job,
        priority: u32,
        exclude: Option<usize>,
    ) -> (Option<usize>, v1::DispatchExplanation) {
        self.dispatch_within(now, job, priority, exclude, None)
    }

    /// [`Decider::dispatch`] among site `only` alone when it is given (a job submitted into an
    /// advance reservation goes to the reservation's site, or waits for it). The sites that
    /// cannot take the job for what the strategies do not know (their estimate limit, the
    /// machines of its inputs) are hidden from the strategy, as in the grid runner.
    pub fn dispatch_within(
        &mut self,
        now: i64,
        job: &Job,
        priority: u32,
        exclude: Option<usize>,
        only: Option<usize>,
    ) -> (Option<usize>, v1::DispatchExplanation) {
        let p = priority.min(u32::from(Priority::MAX)) as Priority;
        let (decision, explained) = self.placer.decide(now, job, p, only, exclude, true);
        self.held_last = decision == Decision::Held;
        if self.held_last {
            self.estimates.insert(job.id.0, job.estimate.max(1));
        }
        let x = explained.expect("asked to explain");
        let chosen = match decision {
            Decision::Site(i) => Some(i),
            _ => None,
        };
        (chosen, self.shown(x))
    }

    /// An explanation as the API shows it.
    fn shown(&self, x: Explanation) -> v1::DispatchExplanation {
        let name = |i: usize| self.placer.sites()[i].name.clone();
        v1::DispatchExplanation {
            time: x.time,
            cluster: x.site.map(name).unwrap_or_default(),
            decided_by: x.decided_by,
            candidates: x
                .candidates
                .into_iter()
                .map(|c| v1::DispatchCandidate {
                    cluster: name(c.site),
                    load: u64::try_from(c.load).unwrap_or(0),
                    count: u32::try_from(c.count).unwrap_or(u32::MAX),
                    feasible: c.feasible,
                    note: c.note,
                })
                .collect(),
        }
    }

    /// Whether the last dispatch left its job in the strategy's queue at the meta level (it has
    /// no site until a release pass places it).
    pub fn held_last(&self) -> bool {
        self.held_last
    }

    /// How many jobs the strategy holds at the meta level.
    pub fn held(&self) -> usize {
        self.placer.held()
    }

    /// A release pass at `now` of the jobs the strategy holds: (job, site, explanation) of those
    /// it places now, in its order.
    pub fn release(&mut self, now: i64) -> Vec<(u64, Target, v1::DispatchExplanation)> {
        let mut out = Vec::new();
        self.placer.release(now, &mut out);
        let mut placed = Vec::with_capacity(out.len());
        for r in out {
            let estimate = self.estimates.remove(&r.job.0).unwrap_or(1);
            let name = |c: ClusterId| self.placer.sites()[c.index()].name.clone();
            let (target, cluster) = match r.placement {
                Placement::Cluster(c) => (Target::Site(c.index()), name(c)),
                Placement::Split(parts) => {
                    let sites = parts.iter().map(|p| p.cluster.0);
                    let overhead_pct = self.multi_site.overhead_over(sites.clone());
                    let single_end = match (&r.reason, self.multi_site.adaptive) {
                        (Reason::Split { single, .. }, true) => *single,
                        _ => None,
                    };
                    let names: Vec<String> = parts.iter().map(|p| name(p.cluster)).collect();
                    let split = Split {
                        length: self.multi_site.stretch_over(estimate, sites),
                        overhead_pct,
                        single_end,
                        parts,
                    };
                    (Target::Split(split), names.join("+"))
                }
                other => {
                    tracing::error!(job = r.job.0, "release placed nothing: {other:?}");
                    self.placer
                        .dispatcher()
                        .job_returned(now, r.job, ClusterId(0));
                    continue;
                }
            };
            let explanation = v1::DispatchExplanation {
                time: now,
                cluster,
                decided_by: format!("{} ({})", self.placer.describe(), r.reason.text(&name)),
                candidates: Vec::new(),
            };
            placed.push((r.job.0, target, explanation));
        }
        placed
    }

    /// Re-enters a split placement decided before a restart, from `since`.
    pub fn restore_split(&mut self, job: &Job, priority: u32, parts: Vec<Part>, since: i64) {
        let p = priority.min(u32::from(Priority::MAX)) as Priority;
        self.placer
            .dispatcher()
            .restore(job, p, &Placement::Split(parts), since);
    }

    /// A job the strategy holds left the grid (cancelled).
    pub fn withdraw(&mut self, job: u64) {
        self.estimates.remove(&job);
        self.placer.dispatcher().withdraw(JobId(job));
    }

    /// Re-enters a job waiting at the meta level before a restart (`only`: the site of its
    /// advance reservation). A strategy that holds jobs takes it back into its queue, with the
    /// sites it may go to as at a dispatch (estimate limits, inputs, reservation); for the others
    /// it waits as before, to be dispatched again.
    pub fn restore_held(&mut self, job: &Job, priority: u32, only: Option<usize>) {
        let p = priority.min(u32::from(Priority::MAX)) as Priority;
        let before = self.placer.held();
        self.placer
            .dispatcher()
            .restore(job, p, &Placement::Hold, job.submit);
        if self.placer.held() > before {
            self.dispatch_within(job.submit, job, priority, None, only);
        }
    }

    /// The local scheduler of `site` reported `job` terminated.
    pub fn ended(&mut self, now: i64, job: u64, site: usize) {
        self.placer
            .dispatcher()
            .job_ended(now, JobId(job), ClusterId(site as u32));
    }

    /// `job` left `site` before starting (to be dispatched again).
    pub fn returned(&mut self, now: i64, job: u64, site: usize) {
        self.placer
            .dispatcher()
            .job_returned(now, JobId(job), ClusterId(site as u32));
    }

    /// Re-enters a placement on `site` decided before a restart, at `since` (when the job started
    /// or was sent, as far as the state knows).
    pub fn restore(&mut self, job: &Job, priority: u32, site: usize, since: i64) {
        let p = priority.min(u32::from(Priority::MAX)) as Priority;
        self.placer.dispatcher().restore(
            job,
            p,
            &Placement::Cluster(ClusterId(site as u32)),
            since,
        );
    }

    /// Marks a site up or down; returns whether it changed.
    pub fn set_up(&mut self, site: usize, up: bool) -> bool {
        self.placer.set_up(site, up)
    }

    /// Whether a site is up.
    pub fn is_up(&self, site: usize) -> bool {
        self.placer.is_up(site)
    }

    /// Whether `site` could run `job` at all (processors, licences, estimate limit, inputs), up
    /// or not.
    pub fn can_ever_run(&self, site: usize, job: &Job) -> bool {
        self.placer.can_ever_run(site, job)
    }

    /// Records the polled state of a site (for the strategies that read it).
    pub fn set_load(&mut self, site: usize, load: ClusterLoad) {
        self.placer.set_load(site, load);
    }

    /// The Load / Count arrays of every site (index `p` for priority `p`).
    pub fn arrays(&self) -> Vec<ClusterArrays> {
        self.placer.arrays()
    }
}

/// The dynamic state of a cluster as the brokers read it, from its local scheduler's status.
///
/// Its urgent jobs (any urgency other than UNSPECIFIED, a level this build does not know
/// included) are those of the simulator's site loads: every running one (a held one, awaiting
/// its start claim, included: it holds its processors) until its predicted end, then every waiting
/// one, without an end. Running ones come in the status's order (job id), waiting ones in the
/// site's queue order, head first, the order in which the site will serve them
/// ([`urgent_start`](gridsched_core::dispatch::urgent_start) serves waiting ones in
/// order; the order of running ones does not matter to it). A running job's estimate is the one
/// the site reports, else its planned run (predicted end − start) from a site too old to report
/// it.
pub fn load_of(status: &v1::StatusResponse) -> ClusterLoad {
    let now = status.time;
    let area = |p: u32, s: i64| i128::from(p) * i128::from(s.max(0));
    let urgent = |u: i32| u != v1::Urgency::Unspecified as i32;
    let running = status.running.iter().filter(|r| urgent(r.urgency));
    let queued = status.queue.iter().filter(|q| urgent(q.urgency));
    ClusterLoad {
        free_procs: status
            .machines
            .iter()
            .filter(|m| m.online)
            .map(|m| u64::from(m.processors.saturating_sub(m.busy_processors)))
            .sum(),
        waiting_jobs: status.queue.len() as u64,
        waiting_area: status
            .queue
            .iter()
            .map(|q| area(q.processors, q.estimate_s))
            .sum(),
        running_area: status
            .running
            .iter()
            .map(|r| area(r.processors, r.predicted_end - now))
            .sum(),
        urgent: running
            .map(|r| UrgentLoad {
                procs: r.processors,
                end: Some(r.predicted_end),
                estimate: r
                    .estimate_s
                    .unwrap_or(r.predicted_end - r.start_time)
                    .max(0),
            })
            .chain(queued.map(|q| UrgentLoad {
                procs: q.processors,
                end: None,
                estimate: q.estimate_s,
            }))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(strategy: &str) -> MetaConfig {
        MetaConfig::from_toml(&format!(
            "[dispatch]\nstrategy = \"{strategy}\"\n\
             [[sites]]\nname = \"a\"\nlicences = [\"matlab\"]\nmachines = [{{ name = \"a1\", processors = 8 }}]\n\
             [[sites]]\nname = \"b\"\nmachines = [{{ name = \"b1\", processors = 16 }}]\n"
        ))
        .unwrap()
    }

    fn spec(procs: u32, licences: &[&str]) -> v1::JobSpec {
        v1::JobSpec {
            user: "u".into(),
            processors: procs,
            estimate_s: 100,
            licences: licences.iter().map(|l| l.to_string()).collect(),
            emulate_runtime_s: Some(1),
            ..Default::default()
        }
    }

    #[test]
    fn load_ordering_fills_idle_sites_then_follows_terminations() {
        let mut d = Decider::new(&cfg("load-ordering"), 0).unwrap();
        let place = |d: &mut Decider, id: u64, s: v1::JobSpec| {
            let job = d.job(&s, id, 0).unwrap();
            let p = d.classify(&job).priority;
            (d.dispatch(0, &job, p, None), p)
        };
        // Both idle: the first site (lowest id).
        let ((s1, e1), p1) = place(&mut d, 1, spec(4, &[]));
        assert_eq!(
            (s1, e1.decided_by.as_str(), e1.cluster.as_str()),
            (
                Some(0),
                format!("load-ordering (idle: Load 0 at priority {p1})").as_str(),
                "a"
            )
        );
        // Site a is busy at that priority, b idle.
        let ((s2, _), p2) = place(&mut d, 2, spec(4, &[]));
        assert_eq!((s2, p2), (Some(1), p1));
        // Only a has matlab.
        let ((s3, e3), _) = place(&mut d, 3, spec(1, &["matlab"]));
        assert_eq!(s3, Some(0));
        assert!(!e3.candidates[1].feasible);
        // Wider than a's machine: only b.
        let ((s4, e4), _) = place(&mut d, 4, spec(12, &[]));
        assert_eq!(s4, Some(1));
        // b is busy at priority 1 (job 2) and the only site that can run the job.
        assert_eq!(
            e4.decided_by,
            "load-ordering (Count 1 at priority 1, least of the 1 of least Load)"
        );
        let a = d.arrays();
        assert_eq!((a[0].count[1], a[1].count[1]), (2, 2));
        d.ended(10, 1, 0);
        assert_eq!(d.arrays()[0].count[1], 1);
        // A down site receives nothing; excluding the only other one leaves the job waiting.
        assert!(d.set_up(1, false));
        let ((s5, e5), _) = place(&mut d, 5, spec(12, &[]));
        assert_eq!(s5, None);
        assert!(e5.decided_by.starts_with("waiting"), "{}", e5.decided_by);
        let job = d.job(&spec(1, &[]), 6, 0).unwrap();
        assert_eq!(d.dispatch(0, &job, 1, Some(0)).0, None);
    }

    #[test]
    fn a_site_with_a_shorter_limit_is_not_a_candidate() {
        let text = "[[sites]]\nname = \"a\"\nmax_estimate_s = 100\n\
                    machines = [{ name = \"a1\", processors = 8 }]\n\
                    [[sites]]\nname = \"b\"\nmachines = [{ name = \"b1\", processors = 8 }]\n";
        let mut d = Decider::new(&MetaConfig::from_toml(text).unwrap(), 0).unwrap();
        let long = v1::JobSpec {
            estimate_s: 101,
            ..spec(1, &[])
        };
        for id in 1..=3 {
            // Site a is idle and first, yet never chosen for a job longer than its limit.
            let job = d.job(&long, id, 0).unwrap();
            let (site, e) = d.dispatch(0, &job, 1, None);
            assert_eq!(site, Some(1));
            assert!(!e.candidates[0].feasible);
            assert!(
                e.candidates[0].note.contains("100 s"),
                "{}",
                e.candidates[0].note
            );
            assert!(!d.can_ever_run(0, &job) && d.can_ever_run(1, &job));
        }
        assert!(d.is_up(0), "the site's own state is left as it was");
        let short = d.job(&spec(1, &[]), 4, 0).unwrap();
        assert_eq!(short.estimate, 100);
        assert_eq!(d.dispatch(0, &short, 1, None).0, Some(0));
        // With its only site excluded, the long job waits.
        let job = d.job(&long, 5, 0).unwrap();
        assert_eq!(d.dispatch(0, &job, 1, Some(1)).0, None);
        // A job whose input is on b1 goes to b, however idle a is.
        let on_b1 = v1::JobSpec {
            inputs: vec![v1::InputRef {
                machine: Some("b1".into()),
                size: 1,
            }],
            ..spec(1, &[])
        };
        let job = d.job(&on_b1, 6, 0).unwrap();
        let (site, e) = d.dispatch(0, &job, 1, None);
        assert_eq!(site, Some(1));
        assert!(
            e.candidates[0].note.contains("inputs"),
            "{}",
            e.candidates[0].note
        );
    }

    #[test]
    fn a_held_job_restored_after_a_restart_keeps_to_the_sites_that_take_it() {
        let text = "[dispatch]\nstrategy = \"job-sharing\"\n\
                    [[sites]]\nname = \"a\"\nmax_estimate_s = 100\n\
                    machines = [{ name = \"a1\", processors = 4 }]\n\
                    [[sites]]\nname = \"b\"\nmachines = [{ name = \"b1\", processors = 8 }]\n";
        let mut d = Decider::new(&MetaConfig::from_toml(text).unwrap(), 0).unwrap();
        // Site a is the best fit for 4 processors, but its limit is 100 s.
        let long = v1::JobSpec {
            estimate_s: 200,
            ..spec(4, &[])
        };
        let job = d.job(&long, 1, 0).unwrap();
        d.restore_held(&job, 1, None);
        assert_eq!(d.held(), 1);
        let placed: Vec<(u64, Target)> = d.release(0).into_iter().map(|p| (p.0, p.1)).collect();
        assert_eq!(placed, [(1, Target::Site(1))]);
        // A strategy without a queue holds nothing: the job waits to be dispatched again.
        let mut lo = Decider::new(&cfg("load-ordering"), 0).unwrap();
        let job = lo.job(&spec(1, &[]), 1, 0).unwrap();
        lo.restore_held(&job, 1, None);
        assert_eq!(lo.held(), 0);
        assert_eq!(lo.arrays()[0].count[1], 0);
    }

    #[test]
    fn restore_gives_back_the_arrays() {
        let mut live = Decider::new(&cfg("load-ordering"), 0).unwrap();
        let mut restarted = Decider::new(&cfg("load-ordering"), 0).unwrap();
        for id in 1..=5 {
            let s = spec(id as u32, &[]);
            let job = live.job(&s, id, 0).unwrap();
            let p = live.classify(&job).priority;
            let (site, _) = live.dispatch(0, &job, p, None);
            let j2 = restarted.job(&s, id, 0).unwrap();
            assert_eq!(restarted.classify(&j2).priority, p);
            restarted.restore(&j2, p, site.unwrap(), 0);
        }
        assert_eq!(live.arrays(), restarted.arrays());
    }

    #[test]
    fn brokers_read_the_polled_load() {
        let mut d = Decider::new(&cfg("least-loaded"), 0).unwrap();
        assert!(d.reads_site_state());
        d.set_load(
            0,
            ClusterLoad {
                waiting_jobs: 5,
                ..Default::default()
            },
        );
        let job = d.job(&spec(1, &[]), 1, 0).unwrap();
        assert_eq!(d.dispatch(0, &job, 1, None).0, Some(1));
        d.set_load(
            1,
            ClusterLoad {
                waiting_jobs: 9,
                ..Default::default()
            },
        );
        assert_eq!(d.dispatch(0, &job, 1, None).0, Some(0));
    }

    /// Site a's status at 100: a critical job of 6 processors running from 40 until 250 (its
    /// estimate 200 on the reference machine), a typical one of 2 running, then, waiting, a
    /// typical job and a high one of 1 processor for 300 s.
    fn urgent_status(urgent: bool) -> v1::StatusResponse {
        let level = |u: v1::Urgency| if urgent { u as i32 } else { 0 };
        v1::StatusResponse {
            time: 100,
            running: vec![
                v1::RunningJob {
                    job_id: 1,
                    processors: 6,
                    start_time: 40,
                    predicted_end: 250,
                    urgency: level(v1::Urgency::Critical),
                    estimate_s: Some(200),
                    ..Default::default()
                },
                v1::RunningJob {
                    job_id: 2,
                    processors: 2,
                    start_time: 50,
                    predicted_end: 150,
                    ..Default::default()
                },
            ],
            queue: vec![
                v1::QueuedJob {
                    job_id: 3,
                    processors: 8,
                    estimate_s: 50,
                    ..Default::default()
                },
                v1::QueuedJob {
                    job_id: 4,
                    processors: 1,
                    estimate_s: 300,
                    urgency: level(v1::Urgency::High),
                    ..Default::default()
                },
            ],
            ..Default::default()
        }
    }

    #[test]
    fn the_polled_load_carries_the_site_s_urgent_jobs() {
        let load = load_of(&urgent_status(true));
        assert_eq!(
            load.urgent,
            [
                UrgentLoad {
                    procs: 6,
                    end: Some(250),
                    estimate: 200,
                },
                UrgentLoad {
                    procs: 1,
                    end: None,
                    estimate: 300,
                },
            ]
        );
        assert_eq!(load.waiting_jobs, 2);
        assert!(load_of(&urgent_status(false)).urgent.is_empty());
        // A site too old to report a running job's estimate: its planned run stands for it.
        let mut old = urgent_status(true);
        old.running[0].estimate_s = None;
        assert_eq!(load_of(&old).urgent[0].estimate, 210);
    }

    #[test]
    fn resource_priority_reads_the_polled_urgent_load() {
        let text = "[dispatch]\nstrategy = \"resource-priority\"\npreferred = 0\n\
                    [[sites]]\nname = \"a\"\nmachines = [{ name = \"a1\", processors = 8 }]\n\
                    [[sites]]\nname = \"b\"\nmachines = [{ name = \"b1\", processors = 16 }]\n";
        let mut d = Decider::new(&MetaConfig::from_toml(text).unwrap(), 0).unwrap();
        assert!(d.reads_site_state());
        let urgent = v1::JobSpec {
            urgency: v1::Urgency::Critical as i32,
            ..spec(4, &[])
        };
        let job = d.job(&urgent, 10, 100).unwrap();
        assert!(job.is_urgent());
        // Site a, the preferred one, is busy with typical jobs only: they are preemptible, so
        // the urgent job goes there, however many jobs wait at a.
        d.set_load(0, load_of(&urgent_status(false)));
        let (site, e) = d.dispatch(100, &job, 1, None);
        assert_eq!(site, Some(0));
        assert!(
            e.decided_by.contains("preferred site can run it now (8 "),
            "{}",
            e.decided_by
        );
        // The same jobs, two of them urgent: 7 of a's 8 processors are held by urgent jobs, too
        // few for 4, so the job goes by load balancing, to b (no job waits there, 2 at a).
        d.set_load(0, load_of(&urgent_status(true)));
        let (site, e) = d.dispatch(100, &job, 1, None);
        assert_eq!(site, Some(1), "{}", e.decided_by);
        assert!(
            e.decided_by
                .ends_with("(waiting jobs 0, least of 2; next: a 2)"),
            "{}",
            e.decided_by
        );
        // A typical job goes by load balancing whatever the urgent load.
        let typical = d.job(&spec(4, &[]), 11, 100).unwrap();
        assert_eq!(d.dispatch(100, &typical, 1, None).0, Some(1));
    }
}
