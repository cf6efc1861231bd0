//! Sites lost during a platform run, a what-if of operators: a site's services die at a given time
//! and never come back. The grid runner sees the site's link close at that time and, by the rule
//! the live meta-scheduler applies, marks the site down once the link has stayed closed for
//! `down_after_ms` (Pasquali, thesis D3: the meta-scheduler dispatches only to the clusters it can
//! reach). The jobs the site had not started are then dispatched again elsewhere (or stay with it
//! when no other site can take them); the jobs it was running are lost with it, as a live grid
//! loses the jobs of a site whose scheduler and agents were killed. A lost site does nothing more:
//! no pass, no end, every hold asked of it refused as unreachable.

use super::{Ev, Sim};
use gridsched_core::grid::Input as GridInput;
use gridsched_core::model::{ClusterId, JobId, Time};
use gridsched_core::runner::Input;

/// The sites a run loses, and when.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SiteLosses {
    /// How long the grid runner waits, after a site's link closed, before it marks the site down
    /// (the live meta-scheduler's `links.site_down_after_ms`).
    pub down_after_ms: u64,
    /// Each lost site (cluster) and the second it is lost at.
    pub lost: Vec<(Time, ClusterId)>,
}

impl SiteLosses {
    /// Whether the run loses any site.
    pub fn any(&self) -> bool {
        !self.lost.is_empty()
    }
}

impl Sim<'_, '_> {
    /// Whether `cluster` has been lost.
    pub(super) fn is_lost(&self, cluster: ClusterId) -> bool {
        self.lost.get(cluster.index()).copied().unwrap_or(false)
    }

    /// `cluster` is lost at `t`: its link closes now, and the grid runner is given the time again
    /// when the site-down timeout has run out.
    pub(super) fn lose(&mut self, t: Time, cluster: ClusterId, down_after_ms: u64) -> GridInput {
        self.lost[cluster.index()] = true;
        let seconds = i64::try_from(down_after_ms.div_ceil(1000)).unwrap_or(i64::MAX / 2);
        self.push(t.saturating_add(seconds), Ev::Tick);
        GridInput::Link {
            site: cluster.index(),
            reachable: false,
            at_ms: at_ms(t),
        }
    }

    /// Job `job`, queued at lost site `from`, was taken from it by the grid runner: it leaves
    /// that cluster's runner.
    pub(super) fn withdraw(&mut self, t: Time, job: JobId, from: usize) {
        if self
            .flights
            .remove(&(job, ClusterId(from as u32)))
            .is_none()
        {
            return;
        }
        let runner = &mut self.runners[from];
        let (procs, licences) = runner
            .job(job)
            .map_or((0, 0), |j| (u64::from(j.procs), j.licences.len() as u64));
        let mut none = Vec::new();
        if runner.on(t, Input::Cancel { job }, &mut none).is_ok() {
            let l = &mut self.levels[from];
            l.jobs -= 1;
            l.req_procs -= procs;
            l.req_licences -= licences;
        }
    }

    /// The jobs lost with their sites: those still at a lost cluster when the run ends.
    pub(super) fn lost_jobs(&self) -> u64 {
        self.runners
            .iter()
            .enumerate()
            .filter(|(c, _)| self.lost[*c])
            .map(|(_, r)| r.len() as u64)
            .sum()
    }
}

/// The monotonic milliseconds the grid runner is given at second `t` of a run.
pub(super) fn at_ms(t: Time) -> u64 {
    u64::try_from(t).unwrap_or(0).saturating_mul(1000)
}
