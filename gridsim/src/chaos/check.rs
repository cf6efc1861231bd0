//! The invariants of the grid's deterministic simulation, checked after every step (and, once the
//! faults have stopped and the grid has settled, the agreement of the grid and its sites).

use super::meta::MState;
use super::site::{LEASE_MS, SState};
use super::world::World;
use gridsched_core::dispatch::SEND_GRACE_S;
use gridsched_core::model::{JobId, Outcome, Time};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// A rule of the grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Invariant {
    /// A job the client was told was accepted is not in the meta-scheduler's store.
    AcknowledgedLost,
    /// A job's process started twice (a fragment twice at its site).
    StartedTwice,
    /// A split job's fragment started outside its common start (and the send grace), or a split
    /// job completed without every fragment having started together.
    FragmentsApart,
    /// A tentative hold outlived its lease, or a reservation outlived its end.
    ReservationLeaked,
    /// A job's state at the meta-scheduler changed in a way its state machine forbids.
    StateMachine,
    /// Once the faults stopped, the grid did not settle, or the meta-scheduler and the sites
    /// disagree about how a job ended.
    Disagree,
    /// A runner refused an input the shells gave it.
    RunnerRefused,
}

impl fmt::Display for Invariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Invariant::AcknowledgedLost => "an acknowledged job was lost",
            Invariant::StartedTwice => "a job started twice",
            Invariant::FragmentsApart => "a split job's fragments did not start together",
            Invariant::ReservationLeaked => "a reservation outlived its lease",
            Invariant::StateMachine => "a job's state changed against its state machine",
            Invariant::Disagree => "the grid and its sites disagree once the faults stopped",
            Invariant::RunnerRefused => "a runner refused an input",
        })
    }
}

/// The state machine of a job at the meta-scheduler: waiting, at a site (claimed or not), split
/// over sites, ended or refused. A job that is claimed stays at its site; an ended or refused one
/// never changes; a split job only ends.
pub(super) fn allowed(from: &MState, to: &MState) -> bool {
    use MState::*;
    match (from, to) {
        (a, b) if a == b => true,
        (Ended(_) | Refused, _) => false,
        (Waiting, Ended(o)) => *o == Outcome::Cancelled { started: false },
        (Waiting, _) => true,
        (
            Site {
                site,
                claimed: true,
                ..
            },
            next,
        ) => {
            matches!(next, Ended(_) | Refused)
                || matches!(next, Site { site: s, claimed: true, .. } if s == site)
        }
        (Site { .. }, Split { .. }) => false,
        (Site { .. }, _) => true,
        (Split { .. }, next) => matches!(next, Ended(_) | Refused | Split { .. }),
    }
}

/// What the checker has seen so far.
#[derive(Debug, Default)]
pub(super) struct Check {
    acked: BTreeSet<JobId>,
    /// Process starts: site, second, a fragment.
    starts: BTreeMap<JobId, Vec<(usize, Time, bool)>>,
    fresh: Vec<JobId>,
    last: BTreeMap<JobId, MState>,
    /// The site a whole job last stood at.
    site_of: BTreeMap<JobId, usize>,
    split_start: BTreeMap<JobId, Time>,
    /// The sites of a split job's fragments.
    split_sites: BTreeMap<JobId, Vec<usize>>,
    broken: Option<(Invariant, String)>,
}

impl Check {
    pub(super) fn acked(&mut self, id: JobId) {
        self.acked.insert(id);
    }

    pub(super) fn is_acked(&self, id: JobId) -> bool {
        self.acked.contains(&id)
    }

    pub(super) fn acked_count(&self) -> u32 {
        self.acked.len() as u32
    }

    /// A process started.
    pub(super) fn start(&mut self, job: JobId, site: usize, at: Time, fragment: bool) {
        let seen = self.starts.entry(job).or_default();
        let twice = seen.iter().any(|&(s, _, _)| !fragment || s == site);
        if twice && self.broken.is_none() {
            self.broken = Some((
                Invariant::StartedTwice,
                format!("j{} started at site {site} at {at} s after {seen:?}", job.0),
            ));
        }
        seen.push((site, at, fragment));
        self.fresh.push(job);
    }

    /// The checks after a step; `settled` once the grid has settled after the faults.
    pub(super) fn after_step(
        &mut self,
        w: &World,
        settled: bool,
    ) -> Result<(), (Invariant, String)> {
        if let Some(b) = self.broken.take() {
            return Err(b);
        }
        let store = &w.meta.store;
        if let Some(id) = self.acked.iter().find(|id| !store.jobs.contains_key(id)) {
            return Err((
                Invariant::AcknowledgedLost,
                format!(
                    "j{} was acknowledged, and the meta-scheduler's store has no such job",
                    id.0
                ),
            ));
        }
        for (id, j) in &store.jobs {
            let before = self.last.get(id).unwrap_or(&MState::Waiting);
            if !allowed(before, &j.state) {
                return Err((
                    Invariant::StateMachine,
                    format!("j{} went from {before:?} to {:?}", id.0, j.state),
                ));
            }
            if before != &j.state {
                if let (MState::Split { frags, start, .. }, MState::Ended(Outcome::Completed)) =
                    (before, &j.state)
                {
                    for f in frags {
                        let together = self.starts.get(id).is_some_and(|s| {
                            s.iter().any(|&(site, t, _)| {
                                site == f.site && (*start..=start + SEND_GRACE_S).contains(&t)
                            })
                        });
                        if !together {
                            return Err((
                                Invariant::FragmentsApart,
                                format!(
                                    "j{} completed, and its fragment at site {} did not start at {start} s: {:?}",
                                    id.0,
                                    f.site,
                                    self.starts.get(id)
                                ),
                            ));
                        }
                    }
                }
                match &j.state {
                    MState::Site { site, .. } => {
                        self.site_of.insert(*id, *site);
                    }
                    MState::Split { start, frags, .. } => {
                        self.split_start.insert(*id, *start);
                        self.split_sites
                            .insert(*id, frags.iter().map(|f| f.site).collect());
                    }
                    _ => {}
                }
                self.last.insert(*id, j.state.clone());
            }
        }
        for id in std::mem::take(&mut self.fresh) {
            let Some(&(site, t, true)) = self.starts.get(&id).and_then(|s| s.last()) else {
                continue;
            };
            let Some(&start) = self.split_start.get(&id) else {
                return Err((
                    Invariant::FragmentsApart,
                    format!(
                        "j{}'s fragment started at site {site} before the job was sent",
                        id.0
                    ),
                ));
            };
            if !(start..=start + SEND_GRACE_S).contains(&t) {
                return Err((
                    Invariant::FragmentsApart,
                    format!(
                        "j{}'s fragment started at site {site} at {t} s, its common start {start} s",
                        id.0
                    ),
                ));
            }
        }
        let now = w.now();
        for s in &w.sites {
            let Some(live) = s.live.as_ref() else {
                continue;
            };
            for (id, (asked, _)) in &live.tentative {
                if now.saturating_sub(*asked) > LEASE_MS + 1_000 {
                    return Err((
                        Invariant::ReservationLeaked,
                        format!(
                            "site {}: hold r{} asked at {asked} ms is still tentative",
                            s.index, id.0
                        ),
                    ));
                }
            }
            for (id, r) in &s.store.committed {
                if r.end + 2 < (now / 1000) as Time {
                    return Err((
                        Invariant::ReservationLeaked,
                        format!(
                            "site {}: reservation r{} ended at {} s and is still held",
                            s.index, id.0, r.end
                        ),
                    ));
                }
            }
        }
        if settled {
            self.agree(w)?;
        }
        Ok(())
    }

    /// Once settled: every acknowledged job ended at the meta-scheduler as it ended at its sites.
    fn agree(&self, w: &World) -> Result<(), (Invariant, String)> {
        for id in &self.acked {
            let j = &w.meta.store.jobs[id];
            let at = |site: usize| w.sites[site].store.jobs.get(id).map(|s| &s.state);
            // The sites where it ran (a copy withdrawn, or cancelled before it started, did not).
            let ended_at: Vec<(usize, &SState)> = (0..w.sites.len())
                .filter_map(|s| at(s).map(|st| (s, st)))
                .filter(|(_, st)| {
                    matches!(st, SState::Ended(o) if *o != Outcome::Cancelled { started: false })
                })
                .collect();
            let bad = match &j.state {
                MState::Ended(o) => match self.split_sites.get(id) {
                    Some(sites) => {
                        let all = sites
                            .iter()
                            .all(|&s| at(s) == Some(&SState::Ended(Outcome::Completed)));
                        all != (*o == Outcome::Completed)
                    }
                    // Cancelled before it started: no site ran it.
                    None if *o == (Outcome::Cancelled { started: false }) => !ended_at.is_empty(),
                    None => {
                        let site = self.site_of.get(id).copied();
                        !(ended_at.len() == 1
                            && Some(ended_at[0].0) == site
                            && *ended_at[0].1 == SState::Ended(*o))
                    }
                },
                MState::Refused => ended_at
                    .iter()
                    .any(|(_, st)| **st == SState::Ended(Outcome::Completed)),
                _ => true,
            };
            if bad {
                let sites: Vec<(usize, Option<&SState>)> =
                    (0..w.sites.len()).map(|s| (s, at(s))).collect();
                return Err((
                    Invariant::Disagree,
                    format!(
                        "j{}: the meta-scheduler says {:?}, the sites {sites:?}",
                        id.0, j.state
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Why the grid has not settled: the jobs still open, where the meta-scheduler and the sites
/// have them.
pub(super) fn unsettled(w: &World) -> String {
    let open: Vec<String> = (w.meta.store.jobs.iter())
        .filter(|(id, j)| {
            !j.state.terminal()
                || w.sites.iter().any(|s| {
                    s.store.jobs.get(id).is_some_and(|sj| {
                        matches!(sj.state, SState::Queued | SState::Running { .. })
                    })
                })
        })
        .take(3)
        .map(|(id, j)| {
            let sites: Vec<(usize, Option<&SState>)> = (0..w.sites.len())
                .map(|s| (s, w.sites[s].store.jobs.get(id).map(|x| &x.state)))
                .collect();
            format!("j{}: meta {:?}, sites {sites:?}", id.0, j.state)
        })
        .collect();
    format!(
        "not settled {} s after the faults stopped: {}",
        900,
        open.join("; ")
    )
}
