//! A site that hands its jobs to an existing Slurm cluster instead of running a policy over its
//! own agents: the cooperation with local batch systems that the two-level design names as its
//! next step (Streit, thesis §4.3). The meta-scheduler sees an ordinary site: the same gRPC
//! service, job events, status and start claims.
//!
//! [`SlurmSite`] decides, without I/O or clock: it takes the gRPC messages, the results of its
//! calls to Slurm and the time as arguments, and answers with events and [`Call`]s for the edge
//! ([`edge`]) to make through slurmrestd ([`rest`]). Its rules:
//!
//! * **Durable first.** An enqueued job is stored before it is acknowledged, then submitted; its
//!   Slurm id is stored once known. A job is named after the site, the site's incarnation (an id
//!   made at its first start and kept in its state directory), its grid id and run
//!   ([`mapping::job_name`]), so that a site restarted between Slurm's answer and the record finds
//!   it again instead of submitting it twice: no job is submitted while a submission's outcome is
//!   unknown, until a full read of Slurm's jobs has settled it. A new grid (whose job ids start
//!   again) or a new site with the same name never takes another's jobs for its own.
//! * **Start claims.** A job dispatched under the start-claim protocol is submitted *held*. Its
//!   claim is asked when the cluster has room for it (the processors of Slurm's usable nodes, plus
//!   `release_ahead_cpus`, minus those of the jobs it runs or has been given), and it is released
//!   to Slurm only once granted; a withdrawn job is cancelled in Slurm unstarted.
//! * **Slurm decides the rest**: order, placement, start; its record becomes the job's events,
//!   with Slurm's start and end times, exit code or signal. The site ends a job at its estimate to
//!   the second (KILLED), since Slurm's limits are whole minutes.
//! * **Slurm down = site down.** Slurm unreachable for `down_after_ms`: the meta-scheduler's calls
//!   are refused with UNAVAILABLE and the event streams end, so the meta-scheduler marks the site
//!   down and sends its unclaimed jobs elsewhere; they are cancelled here when it answers
//!   `withdrawn` once Slurm is back.
//! * **Orphans.** A waiting Slurm job named as one of this site's that the site no longer wants (a
//!   cancelled or withdrawn job whose cancellation did not reach Slurm) is cancelled.

pub mod call;
pub mod edge;
pub mod mapping;
pub mod rest;
#[cfg(test)]
mod tests;

use crate::config::{Config, SlurmConfig};
use crate::driver::{EventFeed, Msg, Now};
use crate::journal::{self, Journal};
use crate::store::StoredJob;
pub use call::{Call, Done, Snapshot};
use gridsched_core::Time;
use gridsched_core::model::{JobId, Platform};
use gridsched_proto::v1::{self, JobState};
use gridsched_proto::{NameTable, job_from_spec};
use mapping::{Seen, SlurmJob, SlurmLicence, SlurmNode};
use rest::CallError;
use std::collections::{BTreeMap, HashMap, HashSet};
use tokio::sync::mpsc;
use tonic::Status;

use crate::driver::WITHDRAWN;

/// A job of the site, not ended.
#[derive(Debug)]
struct SJob {
    req: v1::EnqueueRequest,
    procs: u32,
    /// QUEUED or RUNNING.
    state: JobState,
    /// Its Slurm id once submitted.
    slurm: Option<u32>,
    /// A submission is out.
    submitting: bool,
    /// The meta-scheduler granted its start.
    claimed: bool,
    /// Its claim was asked on the open link.
    asked: bool,
    /// Given to Slurm to run: submitted unheld, or released.
    released: bool,
    /// A release is out.
    releasing: bool,
    host: Option<String>,
    start: Option<Time>,
    /// Slurm's pending reason.
    reason: String,
    /// Slurm's expected start.
    expected: Option<Time>,
    /// Cancellation asked while it runs: why, and when the cancel was sent.
    cancel: Option<(String, Time)>,
    /// Ended by this site at its estimate.
    overran: bool,
    /// Enqueue order.
    order: u64,
    /// The number of reads of Slurm sent when its Slurm id was recorded: a later read must list it.
    known_at: u64,
}

impl SJob {
    /// A job waiting here, not handed to Slurm yet (or, recovered, as stored).
    fn new(req: v1::EnqueueRequest, state: JobState, order: u64) -> SJob {
        let procs = req.spec.as_ref().map_or(1, |s| s.processors);
        SJob {
            released: !req.claim_before_start,
            req,
            procs,
            state,
            slurm: None,
            submitting: false,
            claimed: false,
            asked: false,
            releasing: false,
            host: None,
            start: None,
            reason: String::new(),
            expected: None,
            cancel: None,
            overran: false,
            order,
            known_at: 0,
        }
    }

    fn needs_claim(&self) -> bool {
        self.req.claim_before_start && !self.claimed
    }

    fn stored(&self) -> StoredJob {
        StoredJob {
            request: Some(self.req.clone()),
            state: self.state as i32,
            machine: None,
            start_time: self.start,
            claimed: self.claimed,
            parts: Vec::new(),
            slurm_id: self.slurm,
            staging: false,
        }
    }
}

/// The state of a Slurm-backed site.
#[derive(Debug)]
pub struct SlurmSite {
    cfg: Config,
    /// `<cluster>.<incarnation>`: what its jobs' Slurm names start with.
    tag: String,
    slurm: SlurmConfig,
    platform: Platform,
    names: NameTable,
    jobs: BTreeMap<u64, SJob>,
    /// The event log, the ended jobs and the changes to commit.
    journal: Journal,
    claim_link: crate::claim_link::ClaimLink,
    nodes: Vec<SlurmNode>,
    licences: Vec<SlurmLicence>,
    /// Not in sync with Slurm until a full read sent after this many reads (the reads sent when
    /// the last submission of unknown outcome failed) has come back; `None`: in sync.
    unsynced_since: Option<u64>,
    /// Slurm answers (or has not been failing for `down_after_ms` yet).
    up: bool,
    /// Since when (monotonic ms) Slurm has been failing, and how.
    failing: Option<(u64, String)>,
    /// Reads of Slurm sent so far (the number of the last one).
    polls: u64,
    /// A read is out: sent at this monotonic ms and this Unix second, its number.
    polling: Option<(u64, Time, u64)>,
    /// When (monotonic ms) the last read came back, answered or not.
    poll_done: Option<u64>,
    /// The Unix second at which the last answered read was sent.
    last_read: Option<Time>,
    /// Slurm jobs cancelled as orphans (not to cancel again).
    orphans: HashSet<u32>,
    calls: Vec<Call>,
    next_order: u64,
    metrics: Option<crate::metrics::LocalMetrics>,
}

fn internal(e: impl std::fmt::Display) -> Status {
    Status::internal(format!("state store: {e}"))
}

impl SlurmSite {
    /// The site of `cfg` (its `[slurm]` section required), its stored jobs recovered, started
    /// at `now` (Unix seconds).
    pub fn new(cfg: Config, now: Time) -> anyhow::Result<SlurmSite> {
        let platform = cfg.platform()?;
        let slurm = cfg
            .slurm
            .clone()
            .ok_or_else(|| anyhow::anyhow!("slurm: the section is required"))?;
        let (journal, stored) = Journal::open(
            &cfg.cluster,
            cfg.state_dir.as_deref(),
            cfg.events_in_memory,
            crate::journal::log_base(now),
        )?;
        let tag = format!("{}.{}", cfg.cluster, incarnation(cfg.state_dir.as_deref())?);
        let mut s = SlurmSite {
            tag,
            names: NameTable::from_platform(&platform),
            platform,
            slurm,
            jobs: BTreeMap::new(),
            journal,
            claim_link: Default::default(),
            nodes: Vec::new(),
            licences: Vec::new(),
            unsynced_since: Some(0),
            up: false,
            failing: None,
            polls: 0,
            polling: None,
            poll_done: None,
            last_read: None,
            orphans: HashSet::new(),
            calls: Vec::new(),
            next_order: 0,
            metrics: None,
            cfg,
        };
        s.recover(stored);
        Ok(s)
    }

    /// What its jobs' Slurm names start with after `gridsched.`: `<cluster>.<incarnation>`.
    pub fn tag(&self) -> &str {
        &self.tag
    }

    /// Reports to `m` from now on.
    pub fn set_metrics(&mut self, m: crate::metrics::LocalMetrics) {
        self.metrics = Some(m);
    }

    /// The calls decided since the last call of this.
    pub fn take_calls(&mut self) -> Vec<Call> {
        std::mem::take(&mut self.calls)
    }

    fn recover(&mut self, jobs: Vec<StoredJob>) {
        for sj in jobs {
            let Some(req) = sj.request else { continue };
            let state = JobState::try_from(sj.state).unwrap_or(JobState::Queued);
            let mut j = SJob::new(req, state, self.next_order);
            j.slurm = sj.slurm_id;
            j.claimed = sj.claimed;
            // What Slurm holds is read at the first poll; a held one is released then.
            j.released = !j.needs_claim();
            j.start = sj.start_time;
            self.jobs.insert(j.req.job_id, j);
            self.next_order += 1;
        }
    }

    /// Handles a message of the gRPC service.
    pub fn handle(&mut self, m: Msg, now: Now) {
        match m {
            Msg::Enqueue(r, tx) => self.enqueue_group(vec![(*r, tx)], now),
            Msg::Cancel(r, tx) => {
                let res = self.cancel(r, now.secs);
                let _ = tx.send(res);
            }
            Msg::Status(tx) => {
                let _ = tx.send(self.ready().map(|()| self.status(now.secs)));
            }
            Msg::Events(from, tx) => {
                let _ = tx.send(self.ready().and_then(|()| self.feed(from)));
            }
            Msg::Epoch(e, tx) => {
                let _ = tx.send(self.journal.save_epoch(e).map_err(internal));
            }
            Msg::Register(_, tx) => {
                let _ = tx.send(Err(no_agents()));
            }
            Msg::Heartbeat(_, tx) => {
                let _ = tx.send(Err(no_agents()));
            }
            Msg::Orders(_, tx) => {
                let _ = tx.send(Err(no_agents()));
            }
            Msg::Claims(tx) => {
                let _ = tx.send(self.ready().map(|()| self.open_claims()));
                self.schedule(now.secs);
            }
            Msg::ClaimAnswer(a) => self.claim_answer(a, now.secs),
            Msg::Reserve(_, tx) => {
                let _ = tx.send(Err(no_reservations()));
            }
            Msg::CancelReservation(_, tx) => {
                let _ = tx.send(Err(no_reservations()));
            }
            Msg::CommitReservation(_, tx) => {
                let _ = tx.send(Err(no_reservations()));
            }
            // Slurm orders its queue by its own priority: the meta-scheduler's is not passed on.
            Msg::Reprioritize(_, tx) => {
                let _ = tx.send(Ok(v1::ReprioritizeResponse { applied: 0 }));
            }
            Msg::Slurm(d) => self.done(d, now),
            Msg::Staged(id, _) => {
                tracing::warn!(job = id, "a Slurm-backed site got a staging outcome")
            }
            Msg::Active(id, tx) => {
                let _ = tx.send(Ok(self.jobs.get(&id).map(|r| crate::driver::owner(&r.req))));
            }
        }
    }

    /// UNAVAILABLE while Slurm is down.
    fn ready(&self) -> Result<(), Status> {
        if self.up {
            return Ok(());
        }
        let why = self
            .failing
            .as_ref()
            .map_or("not read yet".to_string(), |(_, e)| e.clone());
        Err(Status::unavailable(format!(
            "the Slurm cluster of site {} cannot be reached: {why}",
            self.cfg.cluster
        )))
    }

    /// The newest lease epoch of the meta-scheduler that had called before a restart (0: none).
    pub fn stored_epoch(&self) -> u64 {
        self.journal.epoch()
    }

    fn feed(&self, from: Option<u64>) -> Result<EventFeed, Status> {
        self.journal.feed(from)
    }

    /// Records an event of job `id` (removing the job when it is terminal).
    fn emit(
        &mut self,
        id: u64,
        state: JobState,
        time: Time,
        detail: &str,
        exit: (Option<i32>, Option<i32>),
        withdrawn: bool,
    ) {
        let (host, run) = self
            .jobs
            .get(&id)
            .map_or((None, 0), |j| (j.host.clone(), j.req.run));
        let ev = v1::JobEvent {
            job_id: id,
            state: state as i32,
            time,
            detail: detail.to_string(),
            machine: host,
            exit_code: exit.0,
            signal: exit.1,
            withdrawn,
            run,
            ..Default::default()
        };
        let saved = if state.is_terminal() {
            self.jobs.remove(&id);
            None
        } else {
            self.jobs.get_mut(&id).map(|j| {
                j.state = state;
                j.stored()
            })
        };
        self.journal.append(ev, saved);
    }

    fn touch(&mut self, id: u64) {
        if let Some(j) = self.jobs.get(&id) {
            self.journal.save(id, Some(j.stored()));
        }
    }

    /// Commits the events and job changes recorded since the last call.
    fn flush(&mut self) -> Result<(), Status> {
        self.journal.commit().map_err(internal)
    }

    fn admit(&mut self, r: v1::EnqueueRequest, now: Time) -> Result<(u64, u64), Status> {
        self.ready()?;
        let open = self.jobs.contains_key(&r.job_id);
        self.journal
            .check_enqueue(&r, open, self.cfg.max_estimate_s)?;
        let spec = r.spec.as_ref().expect("checked");
        if spec.reservation.is_some() {
            return Err(no_reservations());
        }
        if !spec.stage_in.is_empty() {
            return Err(Status::failed_precondition(
                "stage_in: a Slurm-backed site stages no inputs yet",
            ));
        }
        let job = job_from_spec(spec, JobId(r.job_id), now, &mut self.names)
            .map_err(|e| Status::invalid_argument(format!("spec.{}: {}", e.field(), e.reason())))?;
        let widest = self
            .platform
            .machines
            .iter()
            .map(|m| m.procs)
            .max()
            .unwrap_or(0);
        if job.procs > widest {
            return Err(Status::failed_precondition(format!(
                "spec.processors: {} processors, and the widest node of this Slurm site has {widest}",
                job.procs
            )));
        }
        let id = r.job_id;
        self.journal.forget_end(id);
        let mut j = SJob::new(r, JobState::Queued, self.next_order);
        j.procs = job.procs;
        self.jobs.insert(id, j);
        self.next_order += 1;
        self.emit(
            id,
            JobState::Queued,
            now,
            "queued (to be handed to Slurm)",
            (None, None),
            false,
        );
        Ok((id, self.journal.last_sequence()))
    }

    /// Enqueues a group of jobs with one durable commit, then hands them to Slurm.
    pub fn enqueue_group(&mut self, group: Vec<journal::Enqueue>, now: Now) {
        let now = now.secs;
        let admitted =
            journal::group_commit(self, group, now, Self::admit, Self::flush, |s, id, _| {
                s.jobs.remove(&id);
            });
        if admitted.is_empty() {
            return;
        }
        journal::answer(admitted, |_| JobState::Queued);
        self.schedule(now);
    }

    fn cancel(&mut self, r: v1::CancelRequest, now: Time) -> Result<v1::CancelResponse, Status> {
        self.ready()?;
        let Some(j) = self.jobs.get_mut(&r.job_id) else {
            return self.journal.cancel_ended(&r);
        };
        if r.run.is_some_and(|asked| asked != j.req.run) {
            return Err(Journal::other_run(&r, j.req.run));
        }
        let reason = if r.reason.is_empty() {
            "cancelled".to_string()
        } else {
            r.reason.clone()
        };
        if j.state == JobState::Running {
            j.cancel = Some((reason, now));
            if let Some(s) = j.slurm {
                self.calls.push(Call::Cancel { slurm: s });
            }
            return Ok(v1::CancelResponse {
                state: JobState::Running as i32,
            });
        }
        // Waiting: it leaves now; Slurm is told (a submission still out is cancelled when its id
        // comes back, see `submitted`).
        if let Some(s) = j.slurm {
            self.calls.push(Call::Cancel { slurm: s });
        }
        self.emit(
            r.job_id,
            JobState::Cancelled,
            now,
            &reason,
            (None, None),
            false,
        );
        self.flush()?;
        self.schedule(now);
        Ok(v1::CancelResponse {
            state: JobState::Cancelled as i32,
        })
    }

    /// The meta-scheduler opened the StartClaims link: asks again for the claims asked, and lists
    /// the unclaimed waiting jobs (those withdrawn meanwhile are dropped on its answer).
    fn open_claims(&mut self) -> mpsc::UnboundedReceiver<v1::ClaimRequest> {
        let mut start = Vec::new();
        let mut waiting = Vec::new();
        for (id, j) in &self.jobs {
            if j.state != JobState::Queued || !j.needs_claim() {
                continue;
            }
            if j.asked {
                start.push(*id);
            } else {
                waiting.push(*id);
            }
        }
        self.claim_link.open(start, waiting)
    }

    fn claim_answer(&mut self, a: v1::ClaimAnswer, now: Time) {
        for id in a.granted {
            let Some(j) = self.jobs.get_mut(&id) else {
                continue;
            };
            j.claimed = true;
            j.asked = false;
            self.touch(id);
        }
        for id in a.withdrawn {
            let Some(j) = self.jobs.get(&id) else {
                continue;
            };
            if j.claimed || j.state != JobState::Queued {
                tracing::warn!(job = id, "withdrawal of a claimed job ignored");
                continue;
            }
            if let Some(s) = j.slurm {
                self.calls.push(Call::Cancel { slurm: s });
            }
            self.emit(id, JobState::Cancelled, now, WITHDRAWN, (None, None), true);
        }
        if let Err(e) = self.flush() {
            tracing::error!("{e}");
        }
        self.schedule(now);
    }

    /// Applies what Slurm answered.
    pub fn done(&mut self, d: Done, now: Now) {
        match d {
            Done::Submitted { job, run, result } => self.submitted(job, run, result, now.secs),
            Done::Released { job, result } => {
                if let Some(j) = self.jobs.get_mut(&job) {
                    j.releasing = false;
                    match result {
                        Ok(()) => j.released = true,
                        Err(e) => tracing::warn!(job, "release: {e} (tried again)"),
                    }
                }
            }
            Done::Cancelled { slurm, result } => {
                if let Err(e) = result {
                    tracing::warn!(slurm, "cancel: {e}");
                    self.orphans.remove(&slurm);
                }
            }
            Done::Polled(r) => self.polled(r, now),
        }
        if let Err(e) = self.flush() {
            tracing::error!("{e}");
        }
        self.schedule(now.secs);
    }

    fn submitted(&mut self, id: u64, run: u32, result: Result<u32, CallError>, now: Time) {
        let wanted = self
            .jobs
            .get(&id)
            .is_some_and(|j| j.req.run == run && j.submitting && j.slurm.is_none());
        match result {
            Ok(s) if wanted => {
                let j = self.jobs.get_mut(&id).expect("checked");
                j.slurm = Some(s);
                j.known_at = self.polls;
                j.submitting = false;
                self.touch(id);
            }
            // Cancelled or withdrawn while its submission was out.
            Ok(s) => self.calls.push(Call::Cancel { slurm: s }),
            Err(CallError::Refused(e)) if wanted => {
                self.emit(
                    id,
                    JobState::Failed,
                    now,
                    &format!("Slurm refused it: {e}"),
                    (None, None),
                    false,
                );
            }
            Err(e) => {
                if let Some(j) = self.jobs.get_mut(&id) {
                    j.submitting = false;
                }
                // It may have reached Slurm: nothing is submitted until a full read sent from
                // now on tells.
                self.unsynced_since = Some(self.polls);
                tracing::warn!(job = id, "submission: {e}");
            }
        }
    }

    fn polled(&mut self, r: Result<Snapshot, CallError>, now: Now) {
        let Some((sent_mono, sent_secs, seq)) = self.polling.take() else {
            return;
        };
        self.poll_done = Some(now.mono_ms);
        let snap = match r {
            Ok(s) => s,
            Err(e) => {
                let since = self.failing.as_ref().map_or(sent_mono, |f| f.0);
                self.failing = Some((since, e.to_string()));
                if self.up && now.mono_ms.saturating_sub(since) >= self.slurm.down_after_ms {
                    self.go_down();
                }
                return;
            }
        };
        self.failing = None;
        if !self.up {
            tracing::info!(cluster = %self.cfg.cluster, "Slurm answers: the site is up");
            self.up = true;
        }
        self.last_read = Some(sent_secs);
        if self.nodes.is_empty() {
            // The first read of the nodes: the configured machines must be Slurm's nodes, or the
            // site shows them offline.
            for m in &self.platform.machines {
                if !snap.nodes.iter().any(|n| n.name == m.name) {
                    let known: Vec<&str> = snap.nodes.iter().map(|n| n.name.as_str()).collect();
                    tracing::warn!(
                        "machines: `{}` is not a node of this Slurm cluster (its nodes: {}); it is shown offline",
                        m.name,
                        known.join(", ")
                    );
                }
            }
        }
        self.nodes = snap.nodes;
        self.licences = snap.licences;
        if let Some(jobs) = snap.jobs {
            self.apply_jobs(&jobs, seq, now.secs);
        }
    }

    /// Slurm has been unreachable too long: the meta-scheduler's streams end and its calls are
    /// refused until Slurm answers again.
    fn go_down(&mut self) {
        tracing::warn!(
            cluster = %self.cfg.cluster,
            "Slurm unreachable for {} ms: the site is down",
            self.slurm.down_after_ms
        );
        self.up = false;
        self.journal.close_feeds();
        self.claim_link.close();
        for j in self.jobs.values_mut() {
            j.asked = false;
        }
    }

    /// A full read of Slurm's jobs, read number `seq`: adopts the submissions not recorded, turns
    /// state changes into events, cancels orphans. Reads go on beside the other calls, so a job
    /// whose Slurm id was recorded after the read was sent may be missing from it.
    fn apply_jobs(&mut self, all: &[SlurmJob], seq: u64, now: Time) {
        let cluster = self.tag.clone();
        let mut ours: BTreeMap<u32, (&SlurmJob, u64, u32)> = BTreeMap::new();
        let mut by_name: HashMap<(u64, u32), u32> = HashMap::new();
        for sj in all {
            if let Some((job, run)) = mapping::parse_name(&cluster, &sj.name) {
                ours.insert(sj.job_id, (sj, job, run));
                let e = by_name.entry((job, run)).or_insert(sj.job_id);
                *e = (*e).max(sj.job_id);
            }
        }
        // Submissions whose answer was lost.
        let ids: Vec<u64> = self.jobs.keys().copied().collect();
        for id in &ids {
            let j = self.jobs.get_mut(id).expect("listed");
            if j.slurm.is_none()
                && !j.submitting
                && let Some(&s) = by_name.get(&(*id, j.req.run))
            {
                tracing::info!(job = id, slurm = s, "found in Slurm: adopted");
                j.slurm = Some(s);
                // This read lists it: it follows from this read on.
                j.known_at = seq - 1;
                self.touch(*id);
            }
        }
        if self.unsynced_since.is_some_and(|since| seq > since) {
            self.unsynced_since = None;
        }
        for id in ids {
            let Some(s) = self
                .jobs
                .get(&id)
                .filter(|j| j.known_at < seq)
                .and_then(|j| j.slurm)
            else {
                // Not submitted, or recorded after this read was sent.
                continue;
            };
            let never_released = self
                .jobs
                .get(&id)
                .is_some_and(|j| j.state == JobState::Queued && !j.released && !j.releasing);
            match ours.get(&s) {
                Some((sj, _, _)) => self.follow(id, sj, now),
                // Held and never released, so never run: Slurm lost it (a controller that
                // crashed before saving it); it is submitted again.
                None if never_released => {
                    tracing::warn!(
                        job = id,
                        slurm = s,
                        "Slurm lost a held job: submitted again"
                    );
                    if let Some(j) = self.jobs.get_mut(&id) {
                        j.slurm = None;
                        j.asked = false;
                    }
                    self.touch(id);
                }
                None => self.emit(
                    id,
                    JobState::Lost,
                    now,
                    &format!("Slurm no longer knows its job {s} (purged before its end was read)"),
                    (None, None),
                    false,
                ),
            }
        }
        for (s, (sj, job, run)) in ours {
            // A job whose submission's answer has not come back yet may be listed already.
            let wanted = self
                .jobs
                .get(&job)
                .is_some_and(|j| j.req.run == run && (j.slurm == Some(s) || j.submitting));
            if !wanted && sj.job_state == "PENDING" && self.orphans.insert(s) {
                tracing::info!(slurm = s, job, run, "orphan Slurm job cancelled");
                self.calls.push(Call::Cancel { slurm: s });
            }
        }
    }

    /// Follows job `id` to what Slurm says of it.
    fn follow(&mut self, id: u64, sj: &SlurmJob, now: Time) {
        let j = self.jobs.get_mut(&id).expect("a job of the site");
        match mapping::seen(sj) {
            Seen::Waiting { reason, expected } => {
                j.reason = reason.clone();
                j.expected = expected;
                let wants_release = !j.needs_claim();
                if sj.held() && wants_release && !j.releasing {
                    j.releasing = true;
                    j.released = false;
                    self.calls.push(Call::Release {
                        job: id,
                        slurm: sj.job_id,
                    });
                }
                if j.state == JobState::Running {
                    j.start = None;
                    j.host = None;
                    self.emit(
                        id,
                        JobState::Queued,
                        now,
                        &format!("back in Slurm's queue: {reason}"),
                        (None, None),
                        false,
                    );
                }
            }
            Seen::Running { start, host } => {
                self.run(id, start, &host);
                self.recancel(id, sj.job_id, now);
            }
            Seen::Ended(e) => {
                if let Some(start) = e.start {
                    self.run(id, start, &sj.batch_host);
                }
                let j = self.jobs.get(&id).expect("a job of the site");
                let (state, detail) = match (e.state, j.overran, &j.cancel) {
                    (JobState::Cancelled, true, _) => (
                        JobState::Killed,
                        format!(
                            "killed at its wall-time limit of {} s",
                            j.req.spec.as_ref().map_or(0, |s| s.estimate_s)
                        ),
                    ),
                    (JobState::Cancelled, _, Some((why, _))) => (JobState::Cancelled, why.clone()),
                    _ => (e.state, e.detail.clone()),
                };
                self.emit(id, state, e.time, &detail, (e.exit_code, e.signal), false);
            }
        }
    }

    /// Job `id` runs since `start` on `host` (an event when that is news).
    fn run(&mut self, id: u64, start: Time, host: &str) {
        let Some(j) = self.jobs.get_mut(&id) else {
            return;
        };
        if j.state == JobState::Running {
            return;
        }
        j.start = Some(start);
        j.host = (!host.is_empty()).then(|| host.to_string());
        j.released = true;
        let detail = format!(
            "started by Slurm on {host} (job {})",
            j.slurm.unwrap_or_default()
        );
        self.emit(id, JobState::Running, start, &detail, (None, None), false);
    }

    /// A cancellation that Slurm has not carried out 5 s after it was sent is sent again.
    fn recancel(&mut self, id: u64, slurm: u32, now: Time) {
        let Some(j) = self.jobs.get_mut(&id) else {
            return;
        };
        if let Some((_, at)) = &mut j.cancel
            && now - *at >= 5
        {
            *at = now;
            self.calls.push(Call::Cancel { slurm });
        }
    }

    /// The decisions that follow from the current state: submissions, claims, releases.
    fn schedule(&mut self, now: Time) {
        if !self.up {
            return;
        }
        if self.unsynced_since.is_none() {
            let cluster = self.tag.clone();
            for (id, j) in self.jobs.iter_mut() {
                if j.slurm.is_some() || j.submitting || j.state != JobState::Queued {
                    continue;
                }
                let held = j.needs_claim();
                let submission = mapping::submission(&self.slurm, &cluster, &j.req, held, now);
                j.submitting = true;
                j.released = !held;
                self.calls.push(Call::Submit {
                    job: *id,
                    run: j.req.run,
                    submission,
                });
            }
        }
        // Granted jobs still held in Slurm are released.
        for (id, j) in self.jobs.iter_mut() {
            if let Some(s) = j.slurm
                && !j.needs_claim()
                && !j.released
                && !j.releasing
                && j.state == JobState::Queued
            {
                j.releasing = true;
                self.calls.push(Call::Release { job: *id, slurm: s });
            }
        }
        // Claims, while the cluster has room.
        let total: u32 = if self.nodes.is_empty() {
            self.platform.machines.iter().map(|m| m.procs).sum()
        } else {
            self.nodes
                .iter()
                .filter(|n| n.usable())
                .map(|n| n.cpus)
                .sum()
        };
        let ahead = self.slurm.release_ahead_cpus.unwrap_or(total);
        let committed: u32 = self
            .jobs
            .values()
            .filter(|j| j.state == JobState::Running || !j.needs_claim() || j.asked)
            .map(|j| j.procs)
            .sum();
        let mut budget = (total + ahead).saturating_sub(committed);
        let mut order: Vec<(&u64, &SJob)> = self
            .jobs
            .iter()
            .filter(|(_, j)| {
                j.state == JobState::Queued && j.needs_claim() && !j.asked && j.slurm.is_some()
            })
            .collect();
        order.sort_by_key(|(_, j)| (std::cmp::Reverse(j.req.priority), j.order));
        let mut ask = Vec::new();
        for (id, j) in order {
            if j.procs <= budget {
                budget -= j.procs;
                ask.push(*id);
            }
        }
        if self.claim_link.is_open() {
            for id in &ask {
                if let Some(j) = self.jobs.get_mut(id) {
                    j.asked = true;
                }
            }
            if !self.claim_link.ask(ask) {
                for j in self.jobs.values_mut() {
                    j.asked = false;
                }
            }
        }
    }

    /// The periodic work: a poll when one is due, the wall-time limits, the gauges.
    pub fn tick(&mut self, now: Now) {
        if let Some((sent, _, _)) = self.polling
            && self.up
            && now.mono_ms.saturating_sub(sent) >= self.slurm.down_after_ms
        {
            // A poll that does not come back counts as failing.
            let since = self.failing.as_ref().map_or(sent, |f| f.0);
            self.failing = Some((since, "no answer to a read".into()));
            self.go_down();
        }
        // The next read `poll_ms` after the last came back: however long a read of many jobs
        // takes, Slurm is never read back to back.
        let due = self
            .poll_done
            .is_none_or(|at| now.mono_ms.saturating_sub(at) >= self.slurm.poll_ms);
        if self.polling.is_none() && due {
            let since = match (self.unsynced_since, self.last_read) {
                (None, Some(secs)) => Some(secs - 1),
                _ => None,
            };
            self.polls += 1;
            self.polling = Some((now.mono_ms, now.secs, self.polls));
            self.calls.push(Call::Poll { since });
        }
        let mut over = Vec::new();
        for (id, j) in &mut self.jobs {
            let limit = j.req.spec.as_ref().map_or(i64::MAX, |s| s.estimate_s);
            if j.state == JobState::Running
                && !j.overran
                && j.cancel.is_none()
                && j.start.is_some_and(|s| now.secs >= s.saturating_add(limit))
                && let Some(s) = j.slurm
            {
                j.overran = true;
                j.cancel = Some(("wall-time limit".into(), now.secs));
                over.push((*id, s));
            }
        }
        for (id, s) in over {
            tracing::info!(
                job = id,
                slurm = s,
                "wall-time limit reached: cancelled in Slurm"
            );
            self.calls.push(Call::Cancel { slurm: s });
        }
        self.refresh_metrics();
    }

    fn refresh_metrics(&self) {
        let Some(m) = &self.metrics else { return };
        let mut queued: BTreeMap<u32, i64> = BTreeMap::new();
        let (mut running, mut awaiting) = (0, 0);
        for j in self.jobs.values() {
            match j.state {
                JobState::Queued => *queued.entry(j.req.priority).or_default() += 1,
                JobState::Running => running += 1,
                _ => {}
            }
            awaiting += i64::from(j.asked);
        }
        m.show(crate::metrics::Gauges {
            queued,
            running,
            awaiting_claim: awaiting,
            licences: self
                .licences
                .iter()
                .map(|l| (l.name.clone(), i64::from(l.used)))
                .collect(),
            online: self.nodes.iter().filter(|n| self.up && n.usable()).count() as i64,
            // A Slurm-backed site suspends nothing and runs no policy of ours.
            suspended: 0,
            policy: Vec::new(),
        });
    }

    /// The Status answer: the configured machines with what Slurm says of their nodes, the jobs
    /// waiting with Slurm's pending reason, the running ones, Slurm's licence pools.
    fn status(&self, now: Time) -> v1::StatusResponse {
        let empty = v1::JobSpec::default();
        let spec_of = |j| spec_or(j, &empty);
        let mut waiting: Vec<&SJob> = self
            .jobs
            .values()
            .filter(|j| j.state == JobState::Queued)
            .collect();
        waiting.sort_by_key(|j| (std::cmp::Reverse(j.req.priority), j.order));
        let queue = waiting
            .into_iter()
            .map(|j| {
                let spec = spec_of(j);
                let reason = if j.needs_claim() {
                    if j.asked {
                        "held in Slurm: waiting for the meta-scheduler to grant its start claim"
                            .to_string()
                    } else if j.slurm.is_none() {
                        "not handed to Slurm yet".to_string()
                    } else {
                        "held in Slurm until the cluster has room for it".to_string()
                    }
                } else if j.slurm.is_none() {
                    "not handed to Slurm yet".to_string()
                } else {
                    format!("Slurm: {}", j.reason)
                };
                v1::QueuedJob {
                    job_id: j.req.job_id,
                    user: spec.user.clone(),
                    processors: j.procs,
                    estimate_s: spec.estimate_s,
                    priority: j.req.priority,
                    enqueue_time: j.req.submit_time,
                    licences: spec.licences.clone(),
                    deadline: spec.deadline,
                    pending_reason: Some(reason),
                    expected_start: j.expected,
                    urgency: spec.urgency,
                    staging: None,
                }
            })
            .collect();
        let running: Vec<v1::RunningJob> = self
            .jobs
            .values()
            .filter(|j| j.state == JobState::Running)
            .map(|j| {
                let spec = spec_of(j);
                let start = j.start.unwrap_or(now);
                v1::RunningJob {
                    job_id: j.req.job_id,
                    machine: j.host.clone().unwrap_or_default(),
                    processors: j.procs,
                    start_time: start,
                    predicted_end: start.saturating_add(spec.estimate_s),
                    kill_time: Some(start.saturating_add(spec.estimate_s)),
                    licences: spec.licences.clone(),
                    awaiting_claim: false,
                    nodes: Vec::new(),
                    urgency: spec.urgency,
                    estimate_s: Some(spec.estimate_s),
                }
            })
            .collect();
        let machines = self
            .platform
            .machines
            .iter()
            .map(|m| {
                let node = self.nodes.iter().find(|n| n.name == m.name);
                v1::MachineInfo {
                    name: m.name.clone(),
                    processors: m.procs,
                    benchmark: m.benchmark,
                    memory_kb: None,
                    node_locked_licences: Vec::new(),
                    online: self.up && node.is_some_and(SlurmNode::usable),
                    busy_processors: node.map_or(0, |n| n.alloc_cpus),
                    // Slurm keeps its own account of memory (its pending reason says so).
                    busy_memory_kb: 0,
                    agent_account: String::new(),
                    separates_users: false,
                    running_jobs: running
                        .iter()
                        .filter(|r| r.machine == m.name)
                        .map(|r| r.job_id)
                        .collect(),
                }
            })
            .collect();
        let all: Vec<String> = self
            .platform
            .machines
            .iter()
            .map(|m| m.name.clone())
            .collect();
        let licence_pools = self
            .licences
            .iter()
            .map(|l| v1::LicencePoolState {
                licence: l.name.clone(),
                copies: l.total,
                in_use: l.used,
                machines: all.clone(),
                requested_by_waiting: self
                    .jobs
                    .values()
                    .filter(|j| {
                        j.state == JobState::Queued
                            && j.req
                                .spec
                                .as_ref()
                                .is_some_and(|s| s.licences.contains(&l.name))
                    })
                    .count() as u32,
            })
            .collect();
        let partition = self
            .slurm
            .partition
            .as_deref()
            .map_or(String::new(), |p| format!(", partition {p}"));
        v1::StatusResponse {
            cluster: self.cfg.cluster.clone(),
            site: self.cfg.site.clone(),
            policy: format!("slurm at {}{partition}", self.slurm.rest_url),
            time: now,
            queue,
            running,
            reservations: Vec::new(),
            licence_pools,
            machines,
            next_wakeup: None,
            advance_reservations: Vec::new(),
            users: format!("not separated: jobs run as Slurm user {}", self.slurm.user),
        }
    }
}

/// The site's incarnation: made at its first start and kept in `<state_dir>/slurm-site-id`;
/// without a state directory, new at every start.
fn incarnation(dir: Option<&std::path::Path>) -> anyhow::Result<String> {
    let fresh = || uuid::Uuid::new_v4().simple().to_string()[..12].to_string();
    let Some(dir) = dir else {
        return Ok(fresh());
    };
    let file = dir.join("slurm-site-id");
    match std::fs::read_to_string(&file) {
        Ok(id) if !id.trim().is_empty() => Ok(id.trim().to_string()),
        _ => {
            std::fs::create_dir_all(dir)?;
            let id = fresh();
            std::fs::write(&file, &id)
                .map_err(|e| anyhow::anyhow!("state_dir: {}: {e}", file.display()))?;
            Ok(id)
        }
    }
}

/// Job `j`'s spec, or `empty` (a request without one is refused at the door).
fn spec_or<'a>(j: &'a SJob, empty: &'a v1::JobSpec) -> &'a v1::JobSpec {
    j.req.spec.as_ref().unwrap_or(empty)
}

fn no_agents() -> Status {
    Status::failed_precondition("this site hands its jobs to Slurm: it takes no site agents")
}

fn no_reservations() -> Status {
    Status::failed_precondition("reservation: a Slurm-backed site holds no advance reservations")
}
