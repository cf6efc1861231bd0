//! Deterministic simulation of the whole grid under faults (in the manner of FoundationDB's and
//! TigerBeetle's simulators): the grid runner and one cluster runner per site, each behind a model
//! of its service's shell and store — what is durable when — joined by a simulated network, all in
//! one process on a virtual clock, with a seeded scheduler of messages and faults. Messages are
//! delayed (so reordered), duplicated and lost; the meta-scheduler and the local schedulers crash
//! and restart from what they had made durable, mid-protocol or not; sites are partitioned; agents
//! are lost with their jobs running. After every step the invariants of [`check`] are checked, and
//! once the faults stop the grid must settle with every job accounted for.
//!
//! The shells are models of the services' protocol (spec `two-level-grid-scheduler.md` D3 with
//! the start claims, the event stream from a stored sequence, the two-phase co-allocation of
//! Streit, thesis §6.3, with leased holds), not the async services themselves; the decisions are
//! the real runners'. A failing seed is shrunk (faults removed while it still fails the same way)
//! and prints the trace of the jobs it names; it reproduces exactly from its seed.
//!
//! Each invariant has a [`Mutation`] that breaks the rule it guards, so a test can show that the
//! check catches it.

mod check;
mod meta;
mod net;
mod site;
#[cfg(test)]
mod tests;
mod world;

pub use check::Invariant;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::fmt;

/// A rule deliberately broken, to show that its invariant catches it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mutation {
    /// The meta-scheduler acknowledges a submission before it is stored (written at its next
    /// tick): caught as an acknowledged job lost.
    AckBeforeStore,
    /// A site starts a job without the meta-scheduler's start claim: caught as a job started
    /// twice.
    StartWithoutClaim,
    /// A site queues a fragment outside its reservation: caught as fragments apart.
    FragmentsAnyTime,
    /// A site keeps a tentative hold past its lease: caught as a reservation leaked.
    HoldsWithoutLease,
    /// A restarted meta-scheduler forgets which jobs were claimed: caught as a state the job's
    /// state machine forbids.
    ForgetClaims,
    /// A site writes its job events only every five seconds: caught as the grid and the sites
    /// disagreeing once the faults stop.
    EventsNotDurable,
}

impl Mutation {
    /// Every mutation.
    pub const ALL: [Mutation; 6] = [
        Mutation::AckBeforeStore,
        Mutation::StartWithoutClaim,
        Mutation::FragmentsAnyTime,
        Mutation::HoldsWithoutLease,
        Mutation::ForgetClaims,
        Mutation::EventsNotDurable,
    ];

    /// The invariant that catches it.
    pub fn caught_by(self) -> Invariant {
        match self {
            Mutation::AckBeforeStore => Invariant::AcknowledgedLost,
            Mutation::StartWithoutClaim => Invariant::StartedTwice,
            Mutation::FragmentsAnyTime => Invariant::FragmentsApart,
            Mutation::HoldsWithoutLease => Invariant::ReservationLeaked,
            Mutation::ForgetClaims => Invariant::StateMachine,
            Mutation::EventsNotDurable => Invariant::Disagree,
        }
    }
}

/// A fault injected at a time of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The meta-scheduler crashes and restarts from its store `down_ms` later (a leader deposed
    /// and another taking over from the same store).
    MetaCrash {
        /// Milliseconds down.
        down_ms: u64,
    },
    /// A site's local scheduler crashes and restarts from its store (its agents keep running).
    SiteCrash {
        /// The site.
        site: usize,
        /// Milliseconds down.
        down_ms: u64,
    },
    /// A site's link to the meta-scheduler is cut both ways for `ms`.
    Partition {
        /// The site.
        site: usize,
        /// Milliseconds cut.
        ms: u64,
    },
    /// A site's agent is lost with every job running on it.
    AgentLost {
        /// The site.
        site: usize,
    },
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::MetaCrash { down_ms } => write!(f, "meta-scheduler crashes for {down_ms} ms"),
            Fault::SiteCrash { site, down_ms } => {
                write!(f, "site {site}'s local scheduler crashes for {down_ms} ms")
            }
            Fault::Partition { site, ms } => write!(f, "site {site} is cut off for {ms} ms"),
            Fault::AgentLost { site } => write!(f, "site {site}'s agent is lost with its jobs"),
        }
    }
}

/// What one seed runs: the workload, the network's behaviour and the faults, all drawn from the
/// seed ([`Plan::of`]); shrinking edits it.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Jobs the client submits.
    pub jobs: u32,
    /// Sites (one machine each).
    pub sites: usize,
    /// Processors per site.
    pub procs: u32,
    /// Chance that a message is lost, per mille (while the faults last).
    pub loss_permille: u32,
    /// Chance that a message is delivered twice, per mille (while the faults last).
    pub dup_permille: u32,
    /// Longest delay of a message, ms (while the faults last; 50 ms after).
    pub max_delay_ms: u64,
    /// The faults, by time (ms), all before [`Plan::faults_end_ms`].
    pub faults: Vec<(u64, Fault)>,
    /// When the faults stop (and the network behaves).
    pub faults_end_ms: u64,
}

impl Plan {
    /// The plan of `seed`.
    pub fn of(seed: u64) -> Plan {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x6368_616f_735f_706c);
        let sites = rng.random_range(2..=3);
        let faults_end_ms = 90_000;
        let n = rng.random_range(0..=10);
        let mut faults: Vec<(u64, Fault)> = (0..n)
            .map(|_| {
                let at = rng.random_range(1_000..faults_end_ms - 5_000);
                let site = rng.random_range(0..sites);
                let fault = match rng.random_range(0..10) {
                    0..=1 => Fault::MetaCrash {
                        down_ms: rng.random_range(200..6_000),
                    },
                    2..=4 => Fault::SiteCrash {
                        site,
                        down_ms: rng.random_range(200..6_000),
                    },
                    5..=8 => Fault::Partition {
                        site,
                        ms: rng.random_range(500..12_000),
                    },
                    _ => Fault::AgentLost { site },
                };
                (at, fault)
            })
            .collect();
        faults.sort_by_key(|f| f.0);
        Plan {
            jobs: rng.random_range(8..=24),
            sites,
            procs: 8,
            loss_permille: [0, 20, 100][rng.random_range(0..3)],
            dup_permille: [0, 50][rng.random_range(0..2)],
            max_delay_ms: [50, 500, 2_000][rng.random_range(0..3)],
            faults,
            faults_end_ms,
        }
    }
}

/// A seed that broke an invariant.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The seed.
    pub seed: u64,
    /// The plan that failed (shrunk, when [`shrink`] ran).
    pub plan: Plan,
    /// The invariant broken.
    pub invariant: Invariant,
    /// When (virtual ms).
    pub at_ms: u64,
    /// What was seen.
    pub detail: String,
    /// The events of the jobs it names, and the faults (filled by [`explain`]).
    pub trace: Vec<String>,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "seed {}: {} at {} ms: {}",
            self.seed, self.invariant, self.at_ms, self.detail
        )?;
        let p = &self.plan;
        writeln!(
            f,
            "  plan: {} jobs, {} sites, loss {}‰, duplicates {}‰, delays up to {} ms, {} faults",
            p.jobs,
            p.sites,
            p.loss_permille,
            p.dup_permille,
            p.max_delay_ms,
            p.faults.len()
        )?;
        for (at, fault) in &p.faults {
            writeln!(f, "  fault at {at} ms: {fault}")?;
        }
        for line in &self.trace {
            writeln!(f, "  {line}")?;
        }
        Ok(())
    }
}

/// What a seed that passed did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Steps taken.
    pub steps: u64,
    /// Jobs acknowledged.
    pub jobs: u32,
    /// Jobs that completed.
    pub completed: u32,
    /// Of them, split over sites.
    pub split: u32,
    /// Jobs that failed (an agent lost, a fragment that could not start with the others).
    pub failed: u32,
    /// Jobs refused after acknowledgement.
    pub refused: u32,
    /// Jobs their user cancelled (before or while they ran).
    pub cancelled: u32,
    /// Faults injected.
    pub faults: u32,
    /// Messages lost, and delivered twice.
    pub lost: u64,
    /// Messages delivered twice.
    pub duplicated: u64,
    /// Virtual ms until the grid settled.
    pub settled_ms: u64,
}

/// Runs the plan of `seed`, optionally with a rule broken.
pub fn run(seed: u64, mutation: Option<Mutation>) -> Result<Outcome, Box<Failure>> {
    run_plan(seed, &Plan::of(seed), mutation)
}

/// Runs `plan` with the message randomness of `seed`.
pub fn run_plan(
    seed: u64,
    plan: &Plan,
    mutation: Option<Mutation>,
) -> Result<Outcome, Box<Failure>> {
    world::World::new(seed, plan.clone(), mutation, false).run()
}

/// Shrinks a failure: removes faults, then the network's misbehaviour, one at a time, keeping
/// each removal under which the seed still breaks the same invariant.
pub fn shrink(failure: &Failure, mutation: Option<Mutation>) -> Failure {
    let mut best = failure.clone();
    let seed = failure.seed;
    let fails = |plan: &Plan| match run_plan(seed, plan, mutation) {
        Err(f) if f.invariant == failure.invariant => Some(*f),
        _ => None,
    };
    let mut i = 0;
    while i < best.plan.faults.len() {
        let mut plan = best.plan.clone();
        plan.faults.remove(i);
        match fails(&plan) {
            Some(f) => best = Failure { plan, ..f },
            None => i += 1,
        }
    }
    type Edit = fn(&mut Plan);
    let edits: [Edit; 4] = [
        |p| p.loss_permille = 0,
        |p| p.dup_permille = 0,
        |p| p.max_delay_ms = 50,
        |p| p.jobs = p.jobs.min(4),
    ];
    for edit in edits {
        let mut plan = best.plan.clone();
        edit(&mut plan);
        if plan != best.plan
            && let Some(f) = fails(&plan)
        {
            best = Failure { plan, ..f };
        }
    }
    best
}

/// Runs the failure's plan again with its trace recorded, keeping the lines of the jobs its
/// detail names (and the faults).
pub fn explain(failure: &Failure, mutation: Option<Mutation>) -> Failure {
    let mut w = world::World::new(failure.seed, failure.plan.clone(), mutation, true);
    let again = w.run().err();
    // "j12" and "job 12" name job 12, "r3" reservation 3; the trace's lines name them so,
    // followed by a non-digit. The reservations of the jobs named, and the calls about either
    // (whose answers name only the call), are followed too.
    let all = w.take_trace();
    let mut names: Vec<String> = ids_in(&failure.detail.replace("job ", "j"));
    for l in &all {
        if mentions(l, &names) && !l.contains("FAULT") {
            for r in ids_in(l).into_iter().filter(|n| n.starts_with('r')) {
                if !names.contains(&r) {
                    names.push(r);
                }
            }
        }
    }
    let calls: Vec<String> = (all.iter())
        .filter(|l| mentions(l, &names))
        .filter_map(|l| {
            let at = l.find("call: ")?;
            let digits: String = l[at + 6..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            Some(format!("call: {digits},"))
        })
        .collect();
    let trace = (all.into_iter())
        .filter(|l| {
            l.contains("FAULT")
                || mentions(l, &names)
                || calls.iter().any(|c| l.contains(c.as_str()))
        })
        .collect();
    let f = again.map_or_else(|| failure.clone(), |f| *f);
    Failure { trace, ..f }
}

/// The job and reservation names ("j12", "r3") in `text`.
fn ids_in(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| {
            w.len() > 1
                && (w.starts_with('j') || w.starts_with('r'))
                && w[1..].bytes().all(|b| b.is_ascii_digit())
        })
        .map(str::to_owned)
        .collect()
}

/// Whether `line` names one of `names` (not followed by a digit: "j1" is not "j12").
fn mentions(line: &str, names: &[String]) -> bool {
    names.iter().any(|n| {
        line.match_indices(n.as_str()).any(|(i, _)| {
            let before = line[..i].chars().next_back();
            !line[i + n.len()..].starts_with(|c: char| c.is_ascii_digit())
                && !before.is_some_and(|c| c.is_ascii_alphanumeric())
        })
    })
}

/// Totals over many seeds.
#[derive(Clone, Debug, Default)]
pub struct Sweep {
    /// Seeds run.
    pub seeds: u64,
    /// Summed over the seeds that passed.
    pub total: Outcome,
    /// The failures, shrunk.
    pub failures: Vec<Failure>,
}

/// Runs seeds `from..from + count`, shrinking and explaining each failure.
pub fn sweep(from: u64, count: u64, mutation: Option<Mutation>) -> Sweep {
    let mut s = Sweep::default();
    for seed in from..from + count {
        s.seeds += 1;
        match run(seed, mutation) {
            Ok(o) => {
                let t = &mut s.total;
                t.steps += o.steps;
                t.jobs += o.jobs;
                t.completed += o.completed;
                t.split += o.split;
                t.failed += o.failed;
                t.refused += o.refused;
                t.cancelled += o.cancelled;
                t.faults += o.faults;
                t.lost += o.lost;
                t.duplicated += o.duplicated;
                t.settled_ms = t.settled_ms.max(o.settled_ms);
            }
            Err(f) => s.failures.push(explain(&shrink(&f, mutation), mutation)),
        }
    }
    s
}
