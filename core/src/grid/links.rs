//! Sites going down and up at the grid level (Pasquali, thesis D3: the Meta-Scheduler dispatches
//! only to the clusters it can reach): the driver reports each site's link as it sees it, with
//! monotonic milliseconds, and the runner decides. A site whose link has stayed down for
//! [`GridSettings::site_down_after_ms`](super::GridSettings) (counted from the first tick that
//! found it unreachable) is marked down: it receives no new job, and the jobs it has not started
//! ([`Input::Claimed`](super::Input) not received) are dispatched again elsewhere, or stay with it
//! when no other site can take them. A site whose link comes back is up again at once, and the
//! jobs waiting for a site, or kept by a down site, are dispatched again. Every tick also
//! dispatches again the jobs waiting for a site.

use super::{Effect, GridRunner};
use crate::model::Time;

impl GridRunner {
    /// The link to `site` is up or down at `at_ms`.
    pub(super) fn link(
        &mut self,
        now: Time,
        site: usize,
        reachable: bool,
        at_ms: u64,
        out: &mut Vec<Effect>,
    ) {
        let l = &mut self.links[site];
        l.reachable = reachable;
        if reachable {
            l.since = None;
        } else {
            l.since.get_or_insert(at_ms);
        }
        if reachable && !std::mem::replace(&mut self.placer.grid.caps[site].up, true) {
            out.push(Effect::SiteUp { site });
            self.redispatch(now, None, out);
            for d in 0..self.placer.sites.len() {
                if d != site && !self.placer.grid.caps[d].up {
                    self.redispatch(now, Some(d), out);
                }
            }
        }
    }

    /// The time passes: sites down long enough go down; the jobs waiting for a site are
    /// dispatched again.
    pub(super) fn tick(&mut self, now: Time, at_ms: u64, out: &mut Vec<Effect>) {
        if let Some(after) = self.settings.site_down_after_ms {
            for i in 0..self.placer.sites.len() {
                let l = &mut self.links[i];
                if l.reachable {
                    continue;
                }
                let since = *l.since.get_or_insert(at_ms);
                if at_ms.saturating_sub(since) >= after
                    && std::mem::replace(&mut self.placer.grid.caps[i].up, false)
                {
                    out.push(Effect::SiteDown { site: i });
                    self.redispatch(now, Some(i), out);
                }
            }
        }
        if self.unplaced > 0 {
            self.redispatch(now, None, out);
        }
    }
}
