//! Classification and dispatch of the live meta-scheduler (spec
//! `two-level-grid-scheduler.md` D4.1–D4.2): the core's grid runner ([`GridRunner`]), built from
//! the configuration by the same names as in `gridsim`, fed the inputs the simulator feeds it
//! (submissions, ends, site links and loads, the answers of the sites to holds and commits), so
//! that a decision taken live is the one the simulator takes from the same inputs. This module
//! is the shell's side of that boundary: the names of machines and licences, the jobs of the API
//! as the core's, and the runner's explanations as the API shows them.
//!
//! Site index `i` of the configuration is cluster `ClusterId(i)` of the core.
//!
//! After a restart the classifier continues from its stored snapshot (or is rebuilt by
//! classifying the newest stored jobs again, for a store that has none) and the runner's
//! bookkeeping is rebuilt by restoring every open job where it stood; only the random tie-break
//! stream restarts from the seed (mixed with the number of jobs already accepted, so it does not
//! repeat itself).

use crate::config::MetaConfig;
use gridsched_core::classify::Classification;
use gridsched_core::dispatch::{ClusterArrays, ClusterCaps, ClusterLoad, UrgentLoad};
use gridsched_core::fairshare::Kind as AssocKind;
use gridsched_core::grid::{
    CoallocationRules, Effect, Explanation, Field, GridConfig, GridConfigError, GridRunner,
    GridSettings, Input, Kind, Refusal, Reservation, SiteSpec, Standing,
};
use gridsched_core::model::{
    ClusterId, Job, JobId, LicenceId, MachineId, ReservationId, Time, UserId,
};
use gridsched_proto::v1;
use gridsched_proto::{ConvertError, NameTable, job_from_spec};

/// The grid runner and what the shell needs to talk to it.
#[derive(Debug)]
pub struct Decider {
    names: NameTable,
    runner: GridRunner,
    config: GridConfig,
    /// The input log being recorded, one JSON line per record.
    log: Option<crate::gridlog::GridLog>,
    /// A tick has been logged since the log began.
    ticked: bool,
}

/// The plain data the grid runner of a (completed) meta-scheduler configuration is built from,
/// for a meta-scheduler that has already accepted `accepted_before` jobs (0 on a fresh start),
/// and the table of the machine and licence names it numbers. `gridctl replay` simulates with the
/// same.
pub fn grid_config(cfg: &MetaConfig, accepted_before: u64) -> (GridConfig, NameTable) {
    let mut names = NameTable::new();
    let mut sites = Vec::with_capacity(cfg.sites.len());
    for (i, s) in cfg.sites.iter().enumerate() {
        let machines: Vec<MachineId> = s
            .machines
            .iter()
            .map(|m| names.add_machine(&m.name))
            .collect();
        let licences: Vec<LicenceId> = s.licences.iter().map(|l| names.add_licence(l)).collect();
        sites.push(SiteSpec {
            name: s.name.clone(),
            caps: ClusterCaps {
                cluster: ClusterId(i as u32),
                up: true,
                total_procs: s.machines.iter().map(|m| u64::from(m.processors)).sum(),
                max_machine_procs: s.widest_job(),
                licences,
                benchmark: s.machines.iter().map(|m| m.benchmark).max(),
                max_memory_kb: ClusterCaps::memory_of(s.machines.iter().map(|m| m.memory_kb)),
            },
            max_estimate: Some(s.max_estimate(cfg.limits.max_estimate_s)),
            machines: Some(machines),
            stages: s.stages_inputs,
            users: None,
            reserves: s.holds_reservations,
        });
    }
    let mut dispatch = cfg.dispatch.clone();
    dispatch.max_priority = cfg.classifier.max;
    dispatch.seed = dispatch
        .seed
        .wrapping_add(accepted_before.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let links = &cfg.links;
    let site_names: Vec<&str> = cfg.sites.iter().map(|s| s.name.as_str()).collect();
    let mut config = GridConfig {
        sites,
        dispatch,
        classifier: Some(cfg.classifier),
        settings: GridSettings {
            coallocation: Some(CoallocationRules {
                retry_after: i64::try_from(links.retry_ms.div_ceil(1000).max(1)).unwrap_or(1),
                ..CoallocationRules::new(cfg.dispatch.multi_site.clone(), links.coallocation_rounds)
            }),
            splits_at_once: false,
            explain: true,
            site_down_after_ms: Some(links.site_down_after_ms),
            // An unanswered reservation is overdue once its call has timed out.
            reservation_answer_ms: (links.call_timeout_ms / 1000 + 1) * 1000,
            // Checked at the door (MetaConfig::check).
            network: cfg
                .network
                .as_ref()
                .and_then(|n| n.resolve(&site_names).ok()),
            data_blind: cfg.network.as_ref().is_some_and(|n| n.data_blind),
            fairshare: cfg.fairshare.clone().map(|mut f| {
                // The users' ids are the names' ids in the jobs (interned first, in order).
                for a in &mut f.accounts {
                    a.id = (a.kind == AssocKind::User).then(|| names.intern_user(&a.name).0);
                }
                f
            }),
        },
        classifier_state: None,
        usage_state: None,
    };
    // The users the sites run, interned after the fair-share accounts (whose ids are the first).
    for (site, s) in config.sites.iter_mut().zip(&cfg.sites) {
        site.users = (s.users.as_ref()).map(|u| u.iter().map(|n| names.intern_user(n)).collect());
    }
    (config, names)
}

impl Decider {
    /// Builds the grid runner of a (completed) configuration, for a meta-scheduler that has
    /// already accepted `accepted_before` jobs (0 on a fresh start).
    pub fn new(cfg: &MetaConfig, accepted_before: u64) -> Result<Decider, GridConfigError> {
        let (config, names) = grid_config(cfg, accepted_before);
        Ok(Decider {
            runner: GridRunner::from_config(&config)?,
            config,
            names,
            log: None,
            ticked: false,
        })
    }

    /// The plain data the runner was built from (an input log's header).
    pub fn config(&self) -> &GridConfig {
        &self.config
    }

    /// Records every input from now on into `log` (its header written first).
    pub fn record(&mut self, mut log: crate::gridlog::GridLog) {
        let mut header = self.config.clone();
        header.classifier_state = Some(self.runner.classifier_snapshot());
        header.usage_state = self.runner.usage_state().cloned();
        log.header(&header);
        self.log = Some(log);
    }

    /// Feeds the runner `input` at `now`: what to carry out. A driver's mistake the runner
    /// refuses (a site out of range, a job entered twice) is logged and changes nothing.
    pub fn on(&mut self, now: Time, input: Input) -> Vec<Effect> {
        let mut out = Vec::new();
        let logged = self.log.as_ref().map(|_| input.clone());
        if let Err(e) = self.runner.on(now, input, &mut out) {
            tracing::error!("grid runner: {e}");
            return out;
        }
        // A tick that decided nothing, with no job waiting at the meta level (a strategy may
        // draw from its random stream even when it places nothing), changed nothing either, once
        // a first one has started timing the links never reported: not logged (the monitor
        // ticks 5 times a second).
        let idle = matches!(logged, Some(Input::Tick { .. }))
            && out.is_empty()
            && self.ticked
            && self.runner.waiting() == 0;
        if let (Some(log), Some(input)) = (self.log.as_mut(), logged)
            && !idle
        {
            self.ticked |= matches!(input, Input::Tick { .. });
            log.input(now, input, &out);
        }
        out
    }

    /// The runner (what it holds, its strategy and what that sees).
    pub fn runner(&self) -> &GridRunner {
        &self.runner
    }

    /// Gives back the room a burst left in the runner's maps ([`GridRunner::compact`]).
    pub fn compact(&mut self) {
        self.runner.compact();
    }

    /// The strategy's description, e.g. `load-ordering`.
    pub fn describe(&self) -> &str {
        self.runner.placer().describe()
    }

    /// Whether the strategy reads the sites' dynamic state (then the links poll it).
    pub fn reads_site_state(&self) -> bool {
        self.runner.placer().reads_site_state()
    }

    /// The model job of a submitted spec.
    pub fn job(&mut self, spec: &v1::JobSpec, id: u64, submit: i64) -> Result<Job, ConvertError> {
        job_from_spec(spec, JobId(id), submit, &mut self.names)
    }

    /// The id of user `name`, as the core's jobs and reservations carry it.
    pub fn user_id(&mut self, name: &str) -> UserId {
        self.names.intern_user(name)
    }

    /// A stored reservation at site `site` as the runner's book holds it (PENDING: asked and
    /// unanswered; HELD: confirmed).
    pub fn reservation(&mut self, r: &v1::AdvanceReservation, site: usize) -> Option<Reservation> {
        let standing = match v1::AdvanceReservationState::try_from(r.state).ok()? {
            v1::AdvanceReservationState::Pending => Standing::Asked { at_ms: None },
            _ => Standing::Held {
                speed: (r.machine_benchmark > 0).then_some(r.machine_benchmark),
            },
        };
        Some(Reservation {
            id: ReservationId(r.id),
            site,
            procs: r.processors,
            start: r.start_time,
            end: r.end_time,
            user: (!r.user.is_empty()).then(|| self.user_id(&r.user)),
            standing,
        })
    }

    /// The grid's admission of a submitted spec at `now` (after [`crate::validate::check`]):
    /// its job as the core has it, or the refusal as the API gives it (the field the conversion
    /// or the runner blames).
    pub fn admit(
        &mut self,
        spec: &v1::JobSpec,
        id: u64,
        now: Time,
    ) -> Result<Job, v1::SubmitError> {
        let job = self.job(spec, id, now).map_err(|e| v1::SubmitError {
            code: tonic::Code::InvalidArgument as i32,
            field: Some(e.field().to_owned()),
            message: format!("field `{}`: {}", e.field(), e.reason()),
        })?;
        match self.runner.admit(now, &job) {
            Ok(_) => Ok(job),
            Err(r) => Err(rejection(&r.why, Some(&r))),
        }
    }

    /// A classification as the API shows it (D4.1): the priority and how it was reached.
    pub fn priority_shown(&self, c: &Classification) -> v1::PriorityExplanation {
        let cfg = self.runner.classifier().map(|k| *k.config());
        let w = cfg.map(|c| c.weights).unwrap_or_default();
        let part = |heuristic: &str, value: f64, weight: f64| v1::PriorityContribution {
            heuristic: heuristic.into(),
            value,
            weight,
        };
        let mut contributions = vec![
            part("deadline", f64::from(c.deadline.value), w.deadline),
            part("licence", f64::from(c.licence), w.licence),
            part("user", f64::from(c.user), w.user),
        ];
        if let (Some(f), Some(cfg)) = (c.fairshare, cfg) {
            // The owner's factor F, contributing F · max.
            contributions.push(part("fairshare", f * f64::from(cfg.max), w.fairshare));
        }
        v1::PriorityExplanation {
            priority: u32::from(c.priority),
            contributions,
        }
    }

    /// Classifies a job stored before a restart again, to rebuild the classifier's window (for
    /// a store written before it kept the classifier's snapshot).
    pub fn classify_again(&mut self, job: &Job) {
        if let Some(c) = self.runner.classifier_mut() {
            c.classify(job);
        }
    }

    /// The fair-share usage (JSON), to write with the runs charged; `None` when the grid keeps
    /// no fair share.
    pub fn usage_snapshot(&self) -> Option<Vec<u8>> {
        let u = self.runner.usage_state()?;
        Some(serde_json::to_vec(u).expect("usage serializes"))
    }

    /// Continues the fair share from a [`usage_snapshot`](Self::usage_snapshot).
    pub fn restore_usage(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        let u = serde_json::from_slice(bytes)
            .map_err(|e| anyhow::anyhow!("the store's fair-share usage: {e}"))?;
        self.runner.restore_usage(u);
        Ok(())
    }

    /// The classifier's state, to write with the jobs it classified.
    pub fn classifier_snapshot(&self) -> Vec<i64> {
        self.runner.classifier_snapshot()
    }

    /// Continues classifying from a snapshot.
    pub fn restore_classifier(&mut self, snapshot: &[i64]) {
        self.runner.restore_classifier(snapshot);
    }

    /// How many of the latest jobs with a deadline the classifier's state depends on (its
    /// window, or ADH's record when longer).
    pub fn classifier_window(&self) -> usize {
        self.runner.classifier().map_or(0, |c| c.memory())
    }

    /// An explanation as the API shows it.
    pub fn shown(&self, x: Explanation) -> v1::DispatchExplanation {
        let name = |i: usize| self.runner.placer().sites()[i].name.clone();
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
                    transfer_s: c.transfer.map(|t| t.seconds),
                    transfer_bytes: c.transfer.map_or(0, |t| t.bytes),
                })
                .collect(),
        }
    }

    /// How many jobs the strategy holds at the meta level.
    pub fn held(&self) -> usize {
        self.runner.held()
    }

    /// Whether a site is up.
    pub fn is_up(&self, site: usize) -> bool {
        self.runner.placer().is_up(site)
    }

    /// Whether `site` could run `job` at all (processors, licences, estimate limit, inputs), up
    /// or not.
    pub fn can_ever_run(&self, site: usize, job: &Job) -> bool {
        self.runner.placer().can_ever_run(site, job)
    }

    /// The Load / Count arrays of every site (index `p` for priority `p`).
    pub fn arrays(&self) -> Vec<ClusterArrays> {
        self.runner.placer().arrays()
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

/// The `JobSpec` (or `ReserveRequest`) field a refusal of the runner blames, as the API names
/// it.
fn field_name(field: Field) -> String {
    match field {
        Field::Procs => "processors".into(),
        Field::Estimate => "estimate_s".into(),
        Field::Runtime => "emulate_runtime_s".into(),
        Field::Submit => "spec".into(),
        Field::OwnerPriority => "owner_priority".into(),
        Field::Deadline => "deadline".into(),
        Field::Licences => "licences".into(),
        Field::Licence(i) => format!("licences[{i}]"),
        Field::Inputs => "inputs".into(),
        Field::StageIn => "stage_in".into(),
        Field::Benchmark => "benchmark".into(),
        Field::Memory => "memory_kb".into(),
        Field::After => "after".into(),
        Field::User => "user".into(),
        Field::Array => "array".into(),
        Field::Reservation => "reservation".into(),
        Field::ReservationSite => "reservation.site".into(),
        Field::ReservationProcs => "reservation.processors".into(),
        Field::ReservationStart => "reservation.start_time".into(),
        Field::ReservationEnd => "reservation.end_time".into(),
    }
}

/// The status code of a refusal's kind.
fn code(kind: Kind) -> tonic::Code {
    match kind {
        Kind::Invalid => tonic::Code::InvalidArgument,
        Kind::NotFound => tonic::Code::NotFound,
        Kind::Precondition => tonic::Code::FailedPrecondition,
        Kind::Forbidden => tonic::Code::PermissionDenied,
        Kind::Exhausted => tonic::Code::ResourceExhausted,
    }
}

/// A refusal's message as the API gives it: the field, then why.
fn message(refusal: &Refusal) -> String {
    format!("field `{}`: {}", field_name(refusal.field), refusal.why)
}

/// A refusal of the runner (of a submission, or of a reservation) as a status.
pub fn refusal_status(refusal: &Refusal) -> tonic::Status {
    tonic::Status::new(code(refusal.kind), message(refusal))
}

/// A job the runner refused at its submission, as the API gives it: the field and the status
/// code of the runner's refusal at admission, or FAILED_PRECONDITION with the runner's reason
/// (refused later by its dispatch: no site could take it).
pub fn rejection(why: &str, refusal: Option<&Refusal>) -> v1::SubmitError {
    match refusal {
        Some(r) => v1::SubmitError {
            code: code(r.kind) as i32,
            field: Some(field_name(r.field)),
            message: message(r),
        },
        None => v1::SubmitError {
            code: tonic::Code::FailedPrecondition as i32,
            field: None,
            message: why.to_string(),
        },
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

    /// Submits job `id` at `now` through the runner: the site it goes to (or none), the
    /// explanation as the API shows it, and its priority.
    fn place(
        d: &mut Decider,
        id: u64,
        s: &v1::JobSpec,
        now: i64,
    ) -> (Option<usize>, v1::DispatchExplanation, u8) {
        let job = d.job(s, id, now).unwrap();
        let submit = Input::Submit {
            job,
            priority: None,
        };
        let (mut site, mut shown, mut priority) = (None, None, 0);
        for e in d.on(now, submit) {
            match e {
                Effect::Classified { priority: p, .. } => priority = p,
                Effect::Place {
                    site: s,
                    explanation,
                    ..
                } => {
                    site = Some(s);
                    shown = explanation;
                }
                Effect::Wait { explanation, .. } => shown = explanation,
                other => panic!("{other:?}"),
            }
        }
        (site, d.shown(shown.expect("explained")), priority)
    }

    /// Site `i`'s link closes at 0 and stays closed past the timeout: it is down.
    fn down(d: &mut Decider, i: usize) {
        let link = Input::Link {
            site: i,
            reachable: false,
            at_ms: 0,
        };
        d.on(0, link);
        let effects = d.on(0, Input::Tick { at_ms: 3_000 });
        assert!(
            effects.contains(&Effect::SiteDown { site: i }),
            "{effects:?}"
        );
    }

    #[test]
    fn load_ordering_fills_idle_sites_then_follows_terminations() {
        let mut d = Decider::new(&cfg("load-ordering"), 0).unwrap();
        // Both idle: the first site (lowest id).
        let (s1, e1, p1) = place(&mut d, 1, &spec(4, &[]), 0);
        assert_eq!(
            (s1, e1.decided_by.as_str(), e1.cluster.as_str()),
            (
                Some(0),
                format!("load-ordering (idle: Load 0 at priority {p1})").as_str(),
                "a"
            )
        );
        // Site a is busy at that priority, b idle.
        let (s2, _, p2) = place(&mut d, 2, &spec(4, &[]), 0);
        assert_eq!((s2, p2), (Some(1), p1));
        // Only a has matlab.
        let (s3, e3, _) = place(&mut d, 3, &spec(1, &["matlab"]), 0);
        assert_eq!(s3, Some(0));
        assert!(!e3.candidates[1].feasible);
        // Wider than a's machine: only b.
        let (s4, e4, _) = place(&mut d, 4, &spec(12, &[]), 0);
        assert_eq!(s4, Some(1));
        // b is busy at priority 1 (job 2) and the only site that can run the job.
        assert_eq!(
            e4.decided_by,
            "load-ordering (Count 1 at priority 1, least of the 1 of least Load)"
        );
        let a = d.arrays();
        assert_eq!((a[0].count[1], a[1].count[1]), (2, 2));
        d.on(
            10,
            Input::Ended {
                job: JobId(1),
                site: 0,
                outcome: gridsched_core::model::Outcome::Completed,
                exit: None,
            },
        );
        assert_eq!(d.arrays()[0].count[1], 1);
        // A down site receives nothing: the job waits for it.
        down(&mut d, 1);
        let (s5, e5, _) = place(&mut d, 5, &spec(12, &[]), 0);
        assert_eq!(s5, None);
        assert!(e5.decided_by.starts_with("waiting"), "{}", e5.decided_by);
    }

    /// A site's `users` reach the runner under the same ids as the jobs' owners: a job goes
    /// only to the sites that run its owner's jobs, and one no site runs is refused.
    #[test]
    fn a_site_runs_only_the_users_it_names() {
        let text = "[[sites]]\nname = \"a\"\nusers = [\"alice\"]\n\
                    machines = [{ name = \"a1\", processors = 8 }]\n\
                    [[sites]]\nname = \"b\"\nusers = [\"alice\", \"bob\"]\n\
                    machines = [{ name = \"b1\", processors = 8 }]\n";
        let mut d = Decider::new(&MetaConfig::from_toml(text).unwrap(), 0).unwrap();
        let of = |user: &str| v1::JobSpec {
            user: user.into(),
            ..spec(1, &[])
        };
        // Site a is idle and first, yet never chosen for bob's jobs.
        for id in 1..=3 {
            let (site, e, _) = place(&mut d, id, &of("bob"), 0);
            assert_eq!(site, Some(1));
            assert_eq!(
                e.candidates[0].note,
                "maps no local account to the job's owner"
            );
        }
        assert_eq!(place(&mut d, 4, &of("alice"), 0).0, Some(0));
        let carol = d.job(&of("carol"), 5, 0).unwrap();
        assert!(!d.can_ever_run(0, &carol) && !d.can_ever_run(1, &carol));
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
            let (site, e, _) = place(&mut d, id, &long, 0);
            assert_eq!(site, Some(1));
            assert!(!e.candidates[0].feasible);
            assert!(
                e.candidates[0].note.contains("100 s"),
                "{}",
                e.candidates[0].note
            );
            let job = d.job(&long, id, 0).unwrap();
            assert!(!d.can_ever_run(0, &job) && d.can_ever_run(1, &job));
        }
        assert!(d.is_up(0), "the site's own state is left as it was");
        let short = d.job(&spec(1, &[]), 4, 0).unwrap();
        assert_eq!(short.estimate, 100);
        assert_eq!(place(&mut d, 4, &spec(1, &[]), 0).0, Some(0));
        // With its only site down, the long job waits.
        down(&mut d, 1);
        assert_eq!(place(&mut d, 5, &long, 0).0, None);
        // A job whose input is on b1 goes to b, however idle a is.
        let on_b1 = v1::JobSpec {
            inputs: vec![v1::InputRef {
                machine: Some("b1".into()),
                size: 1,
            }],
            ..spec(1, &[])
        };
        let mut d = Decider::new(&MetaConfig::from_toml(text).unwrap(), 0).unwrap();
        let (site, e, _) = place(&mut d, 6, &on_b1, 0);
        assert_eq!(site, Some(1));
        assert!(
            e.candidates[0].note.contains("inputs"),
            "{}",
            e.candidates[0].note
        );
    }

    #[test]
    fn a_network_makes_min_completion_count_the_inputs_and_explain_them_per_site() {
        let sites = "[[sites]]\nname = \"a\"\nmachines = [{ name = \"a1\", processors = 8 }]\n\
                     [[sites]]\nname = \"b\"\nmachines = [{ name = \"b1\", processors = 8 }]\n";
        let net = "[network]\nsubmitters = { bandwidth = \"100 MB/s\" }\n\
                   between = { bandwidth = \"1 GB/s\" }\n\
                   [[network.links]]\nfrom = \"submitters\"\nto = \"a\"\nbandwidth = \"1 MB/s\"\n";
        let text = format!("[dispatch]\nstrategy = \"min-completion\"\n{net}{sites}");
        let mut d = Decider::new(&MetaConfig::from_toml(&text).unwrap(), 0).unwrap();
        let reading = v1::JobSpec {
            stage_in: vec![v1::StagedInput {
                name: "in.dat".into(),
                sha256: "ab".repeat(32),
                size: 50_000_000,
                ..Default::default()
            }],
            ..spec(1, &[])
        };
        // 50 s to a, half a second (a second) to b: b, though a comes first.
        let (site, e, _) = place(&mut d, 1, &reading, 0);
        assert_eq!(site, Some(1));
        let t: Vec<(Option<i64>, u64)> = (e.candidates.iter())
            .map(|c| (c.transfer_s, c.transfer_bytes))
            .collect();
        assert_eq!(t, vec![(Some(50), 50_000_000), (Some(1), 50_000_000)]);
        // b holds it now: its candidate shows no transfer, a's comes from b at 1 GB/s.
        let (site, e, _) = place(&mut d, 2, &reading, 10);
        assert_eq!(site, Some(1));
        let t: Vec<Option<i64>> = e.candidates.iter().map(|c| c.transfer_s).collect();
        assert_eq!(t, vec![Some(1), Some(0)]);
        // Blind: a, by the lower id, with the transfer still explained.
        let blind = text.replace("[network]\n", "[network]\ndata_blind = true\n");
        let mut d = Decider::new(&MetaConfig::from_toml(&blind).unwrap(), 0).unwrap();
        let (site, e, _) = place(&mut d, 1, &reading, 0);
        assert_eq!((site, e.candidates[0].transfer_s), (Some(0), Some(50)));
        // A link to a site the grid does not have is refused, naming the key.
        let wrong = text.replace("to = \"a\"", "to = \"z\"");
        let e = MetaConfig::from_toml(&wrong).unwrap_err().to_string();
        assert!(
            e.contains("network.links[0].to") && e.contains("`z`"),
            "{e}"
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
        let restore = |job: Job| Input::Restore {
            job,
            priority: 1,
            at: gridsched_core::grid::Restored::Waiting,
        };
        let job = d.job(&long, 1, 0).unwrap();
        let input = restore(job);
        assert!(d.on(0, input).is_empty());
        assert_eq!(d.held(), 1);
        let placed: Vec<(JobId, usize)> = d
            .on(0, Input::Release)
            .into_iter()
            .filter_map(|e| match e {
                Effect::Place { job, site, .. } => Some((job, site)),
                _ => None,
            })
            .collect();
        assert_eq!(placed, [(JobId(1), 1)]);
        // A strategy without a queue holds nothing: the job waits to be dispatched again.
        let mut lo = Decider::new(&cfg("load-ordering"), 0).unwrap();
        let job = lo.job(&spec(1, &[]), 1, 0).unwrap();
        let input = restore(job);
        lo.on(0, input);
        assert_eq!(lo.held(), 0);
        assert_eq!(lo.arrays()[0].count[1], 0);
        // The next tick dispatches it.
        let effects = lo.on(1, Input::Tick { at_ms: 1 });
        assert!(
            matches!(effects[..], [Effect::Place { site: 0, .. }]),
            "{effects:?}"
        );
    }

    #[test]
    fn restore_gives_back_the_arrays() {
        let mut live = Decider::new(&cfg("load-ordering"), 0).unwrap();
        let mut restarted = Decider::new(&cfg("load-ordering"), 0).unwrap();
        for id in 1..=5 {
            let s = spec(id as u32, &[]);
            let (site, _, p) = place(&mut live, id, &s, 0);
            let job = restarted.job(&s, id, 0).unwrap();
            let at = gridsched_core::grid::Restored::Site {
                site: site.unwrap(),
                claimed: false,
                since: 0,
            };
            let input = Input::Restore {
                job,
                priority: p,
                at,
            };
            restarted.on(0, input);
        }
        assert_eq!(live.arrays(), restarted.arrays());
    }

    #[test]
    fn brokers_read_the_polled_load() {
        let mut d = Decider::new(&cfg("least-loaded"), 0).unwrap();
        assert!(d.reads_site_state());
        let load = |d: &mut Decider, site: usize, waiting_jobs: u64| {
            let load = ClusterLoad {
                waiting_jobs,
                ..Default::default()
            };
            d.on(0, Input::Load { site, load });
        };
        load(&mut d, 0, 5);
        assert_eq!(place(&mut d, 1, &spec(1, &[]), 0).0, Some(1));
        load(&mut d, 1, 9);
        assert_eq!(place(&mut d, 2, &spec(1, &[]), 0).0, Some(0));
    }

    /// The input log leaves out the ticks that change nothing (after the first, while no job
    /// waits at the meta level) and keeps the others; it re-decides identically.
    #[test]
    fn the_input_log_keeps_the_ticks_that_matter_and_re_decides() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("grid.jsonl");
        let mut d = Decider::new(&cfg("load-ordering"), 0).unwrap();
        d.record(crate::gridlog::GridLog::open(&path).unwrap());
        let ticks = |path: &std::path::Path| {
            let text = std::fs::read_to_string(path).unwrap();
            text.lines().filter(|l| l.contains("\"tick\"")).count()
        };
        for at_ms in [0, 200, 400] {
            assert!(d.on(0, Input::Tick { at_ms }).is_empty());
        }
        assert_eq!(ticks(&path), 1, "the first tick only");
        // No link was ever open: both sites go down, logged.
        let down = d.on(3, Input::Tick { at_ms: 3_000 });
        assert_eq!(down.len(), 2, "{down:?}");
        assert_eq!(ticks(&path), 2);
        // A job waits for a site: every tick counts while it does.
        assert_eq!(place(&mut d, 1, &spec(1, &[]), 4).0, None);
        for at_ms in [3_200, 3_400] {
            assert!(d.on(4, Input::Tick { at_ms }).is_empty());
        }
        assert_eq!(ticks(&path), 4);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines = text.lines().map(|l| serde_json::from_str(l).unwrap());
        let checked = gridsched_core::grid::replay::check(lines).unwrap();
        assert_eq!(
            (checked.runs, checked.inputs),
            (1, 5),
            "4 ticks and the submission"
        );
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
        assert!(d.job(&urgent, 10, 100).unwrap().is_urgent());
        let set = |d: &mut Decider, urgent: bool| {
            let load = load_of(&urgent_status(urgent));
            d.on(100, Input::Load { site: 0, load });
        };
        // Site a, the preferred one, is busy with typical jobs only: they are preemptible, so
        // the urgent job goes there, however many jobs wait at a.
        set(&mut d, false);
        let (site, e, _) = place(&mut d, 10, &urgent, 100);
        assert_eq!(site, Some(0));
        assert!(
            e.decided_by.contains("preferred site can run it now (8 "),
            "{}",
            e.decided_by
        );
        // The same jobs, two of them urgent: 7 of a's 8 processors are held by urgent jobs, too
        // few for 4, so the job goes by load balancing, to b (no job waits there, 2 at a).
        set(&mut d, true);
        let (site, e, _) = place(&mut d, 11, &urgent, 100);
        assert_eq!(site, Some(1), "{}", e.decided_by);
        assert!(
            e.decided_by
                .ends_with("(waiting jobs 0, least of 2; next: a 2)"),
            "{}",
            e.decided_by
        );
        // A typical job goes by load balancing whatever the urgent load.
        assert_eq!(place(&mut d, 12, &spec(4, &[]), 100).0, Some(1));
    }
}
