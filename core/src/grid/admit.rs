//! Admission at the grid's door (Pasquali, thesis D3: the Meta-Scheduler filters out the clusters
//! that can never run a job from their static capabilities): what the grid's state decides about
//! a submitted job before it is classified. A job no site can ever run (wider than every site, or
//! than all of them together where jobs are split; longer than every site's limit, on its own or
//! scaled by its benchmark score; asking more memory than any machine has; needing a
//! licence no site has; reading inputs held by no site that could run it), a deadline already
//! past, a job waiting for a job the grid does not know, or a job into an advance reservation it
//! may not use, is refused with a [`Refusal`]
//! naming the job's field to blame, so a driver can answer the submission at once.

use super::GridRunner;
use crate::model::{Job, JobError, Time};
use serde::{Deserialize, Serialize};

/// The field of a submission (or of a reservation request) a refusal blames.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Field {
    /// Its processors.
    Procs,
    /// Its estimate.
    Estimate,
    /// Its run time (replays).
    Runtime,
    /// Its submission time.
    Submit,
    /// Its owner's priority.
    OwnerPriority,
    /// Its deadline.
    Deadline,
    /// Its licences, as a whole.
    Licences,
    /// Its licence at this index.
    Licence(usize),
    /// Its inputs.
    Inputs,
    /// The data it stages in.
    StageIn,
    /// Its benchmark score.
    Benchmark,
    /// The memory it asks for.
    Memory,
    /// The advance reservation it runs in.
    Reservation,
    /// Its dependencies.
    After,
    /// Its array.
    Array,
    /// Its owner.
    User,
    /// A reservation request's site.
    ReservationSite,
    /// A reservation request's processors.
    ReservationProcs,
    /// A reservation request's start.
    ReservationStart,
    /// A reservation request's end.
    ReservationEnd,
}

/// What kind of refusal: how a driver answers it (an RPC status, say).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// The request can never be met as given.
    Invalid,
    /// It names something the grid does not know.
    NotFound,
    /// It cannot be met in the grid's present state.
    Precondition,
    /// It names something that belongs to another user.
    Forbidden,
    /// It is over a limit of its owner's (RESOURCE_EXHAUSTED).
    Exhausted,
}

/// Why the grid refuses a job or a reservation at its door.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{why}")]
pub struct Refusal {
    /// The field to blame.
    pub field: Field,
    /// What kind of refusal.
    pub kind: Kind,
    /// Why, in words.
    pub why: String,
}

impl Refusal {
    /// A refusal of `kind` blaming `field`.
    pub fn new(field: Field, kind: Kind, why: impl Into<String>) -> Refusal {
        Refusal {
            field,
            kind,
            why: why.into(),
        }
    }
}

impl From<JobError> for Refusal {
    fn from(e: JobError) -> Refusal {
        let field = match &e {
            JobError::NoProcessors => Field::Procs,
            JobError::NonPositiveEstimate(_) => Field::Estimate,
            JobError::NegativeRuntime(_) => Field::Runtime,
            JobError::NegativeSubmit(_) => Field::Submit,
            JobError::OwnerPriority(_) => Field::OwnerPriority,
            JobError::DeadlineBeforeSubmit { .. } => Field::Deadline,
            JobError::DuplicateLicence(_) => Field::Licences,
            JobError::ZeroBenchmark => Field::Benchmark,
            JobError::DependsOnItself(_) => Field::After,
            JobError::NestedArray => Field::Array,
            JobError::StageIn(_) => Field::StageIn,
        };
        Refusal::new(field, Kind::Invalid, e.to_string())
    }
}

impl GridRunner {
    /// Whether the grid admits `job` at `now`, and if not why: the job's own invariants, then
    /// what the sites can ever run, then its advance reservation. The site it must go to (its
    /// reservation's) when admitted.
    pub fn admit(&self, now: Time, job: &Job) -> Result<Option<usize>, Refusal> {
        job.validate()?;
        if let Some(shares) = &self.shares
            && shares.user(job.user).is_none()
        {
            return Err(Refusal::new(
                Field::User,
                Kind::Forbidden,
                format!(
                    "its owner ({}) has no account in the grid's fair-share tree",
                    job.user
                ),
            ));
        }
        if let Some(shares) = &self.shares
            && let Err(hit) = shares.may_submit(job.user)
        {
            return Err(Refusal::new(Field::User, Kind::Exhausted, hit.to_string()));
        }
        if let Some(shares) = &self.shares
            && let Err(hit) = shares.may_ever_run(job.user, job.procs, job.estimate)
        {
            let field = match hit.limit.as_str() {
                "max_procs" => Field::Procs,
                _ => Field::Estimate,
            };
            return Err(Refusal::new(field, Kind::Exhausted, hit.to_string()));
        }
        if let Some(d) = job.deadline
            && d < now
        {
            return Err(Refusal::new(
                Field::Deadline,
                Kind::Invalid,
                format!("{d} is already past (now {now})"),
            ));
        }
        let sites = &self.placer.sites;
        let one_site = sites
            .iter()
            .map(|s| s.caps.max_machine_procs)
            .max()
            .unwrap_or(0);
        let splits = self.splits();
        let widest = match splits {
            // Fragments go only to sites that hold reservations.
            true => (sites.iter())
                .filter(|s| s.reserves)
                .map(|s| u64::from(s.caps.max_machine_procs))
                .sum::<u64>()
                .max(u64::from(one_site)),
            false => u64::from(one_site),
        };
        if u64::from(job.procs) > widest {
            let what = match (splits, self.placer.splits()) {
                (true, _) => "all sites of the grid together",
                (false, false) => "what any site runs as one job",
                // The strategy would split it, over sites that take no co-allocation.
                (false, true) => {
                    "what any site runs as one job, and this grid does not co-allocate"
                }
            };
            return Err(Refusal::new(
                Field::Procs,
                Kind::Invalid,
                format!("{} processors exceed {what} (largest: {widest})", job.procs),
            ));
        }
        if !sites.iter().any(|s| s.runs_user_of(job)) {
            return Err(Refusal::new(
                Field::User,
                Kind::Invalid,
                "no site of the grid maps the owner to a local account (each site's `users`)",
            ));
        }
        let longest = sites
            .iter()
            .map(|s| s.max_estimate.unwrap_or(i64::MAX))
            .max()
            .unwrap_or(0);
        if job.estimate > longest {
            return Err(Refusal::new(
                Field::Estimate,
                Kind::Invalid,
                format!(
                    "{} s is more than every site's limit (largest: {longest} s)",
                    job.estimate
                ),
            ));
        }
        if let Some(bm) = job.benchmark {
            // Its time on a site's fastest machine: the estimate scaled by its reference score
            // over the machine's (a site of unknown speed counts as score 1, the default).
            if !sites.iter().any(|s| s.within_limit(job)) {
                let best = sites.iter().map(|s| s.time_on(job)).min().unwrap_or(0);
                return Err(Refusal::new(
                    Field::Benchmark,
                    Kind::Invalid,
                    format!(
                        "at a reference score of {bm} its estimate of {} s takes {best} s on the \
                         fastest machine, more than every site's limit (largest: {longest} s)",
                        job.estimate
                    ),
                ));
            }
        }
        if let Some(need) = job.memory_kb
            && !sites.iter().any(|s| s.caps.has_memory_for(job))
        {
            let most = sites
                .iter()
                .filter_map(|s| s.caps.max_memory_kb)
                .max()
                .unwrap_or(0);
            let gib = |kb: u64| kb as f64 / f64::from(1u32 << 20);
            return Err(Refusal::new(
                Field::Memory,
                Kind::Invalid,
                format!(
                    "{need} KiB ({:.1} GiB) is more than any machine of the grid has (largest: \
                     {most} KiB, {:.1} GiB)",
                    gib(need),
                    gib(most)
                ),
            ));
        }
        for (i, l) in job.licences.iter().enumerate() {
            if !sites.iter().any(|s| s.caps.licences.contains(l)) {
                return Err(Refusal::new(
                    Field::Licence(i),
                    Kind::Invalid,
                    "unknown licence: no site has it",
                ));
            }
        }
        // A job wider than any site is split: every fragment's site needs the licences and the
        // estimate, which the strategy checks as it splits.
        let wide = splits && job.procs > one_site;
        let fits = |i: usize| self.placer.fits(i, job);
        let limit = |i: usize| sites[i].within_limit(job);
        if !wide && !(0..sites.len()).any(|i| fits(i) && limit(i)) {
            return Err(Refusal::new(
                Field::Licences,
                Kind::Invalid,
                "no single site has a machine wide enough together with every licence and an \
                 estimate limit at least the job's estimate",
            ));
        }
        let staging = |i: usize| sites[i].stages || job.stage_in.is_empty();
        if !wide && !(0..sites.len()).any(|i| fits(i) && limit(i) && staging(i)) {
            return Err(Refusal::new(
                Field::StageIn,
                Kind::Invalid,
                "no site that can run the job stages inputs in (a Slurm-backed site does not yet)",
            ));
        }
        if !wide && !(0..sites.len()).any(|i| self.placer.can_ever_run(i, job)) {
            return Err(Refusal::new(
                Field::Inputs,
                Kind::Invalid,
                "no site that can run the job holds every machine its inputs name",
            ));
        }
        if let Some(dep) = &job.after
            && let Err(j) = self.known_predecessors(dep)
        {
            return Err(Refusal::new(
                Field::After,
                Kind::NotFound,
                format!("job {j} is not known to the grid"),
            ));
        }
        if let Some(dep) = &job.after {
            self.admit_corr(job, dep)?;
        }
        if let Some(a) = &job.array
            && let Some(t) = (job.id.0 + 1..=a.last_id(job.id).0)
                .find(|t| self.jobs.contains_key(&crate::model::JobId(*t)))
        {
            return Err(Refusal::new(
                Field::Array,
                Kind::Invalid,
                format!(
                    "its tasks take the ids {} to {}, and job {t} has one",
                    job.id.0 + 1,
                    a.last_id(job.id)
                ),
            ));
        }
        match job.reservation {
            Some(r) => self.reservations.admit(now, job, r).map(Some),
            None => Ok(None),
        }
    }

    /// Whether jobs may be split over sites (the strategy splits, and splits are carried out).
    fn splits(&self) -> bool {
        self.placer.splits()
            && (self.settings.coallocation.is_some() || self.settings.splits_at_once)
    }
}
