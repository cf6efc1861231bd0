//! Sites going down and up at the grid level (Pasquali, thesis D3: the Meta-Scheduler dispatches
//! only to the clusters it can reach): the driver reports each site's link as it sees it, with
//! monotonic milliseconds, and the runner decides. A site whose link has stayed down for
//! [`GridSettings::site_down_after_ms`](super::GridSettings) (counted from the first tick that
//! found it unreachable) is marked down: it receives no new job, and the jobs it has not started
//! ([`Input::Claimed`](super::Input) not received) are dispatched again elsewhere, or stay with it
//! when no other site can take them. A site whose link comes back is up again at once, and the
//! jobs waiting at the meta level (for a site, or in the strategy's queue, where they were held
//! while the site could not be seen), or kept by a down site, are dispatched again. Every tick also
//! dispatches again the jobs waiting for a site.

use super::{Effect, GridRunner};
use crate::model::Time;

/// The links to the sites and the site-down timeout: which site has been unreachable since when
/// (monotonic milliseconds, as the driver reads them at its edge), and which are overdue. The
/// grid runner keeps one; the live meta-scheduler's monitor applies the same rule with it.
#[derive(Clone, Debug)]
pub struct SiteLinks {
    /// Per site: reachable, and since when (ms) it has been unreachable as far as seen.
    links: Vec<(bool, Option<u64>)>,
    down_after_ms: Option<u64>,
}

impl SiteLinks {
    /// `n` links, none reachable yet; sites go down after `down_after_ms` unreachable (`None`:
    /// never).
    pub fn new(n: usize, down_after_ms: Option<u64>) -> SiteLinks {
        SiteLinks {
            links: vec![(false, None); n],
            down_after_ms,
        }
    }

    /// The link to `site` is (or is not) reachable at `at_ms`.
    pub fn report(&mut self, site: usize, reachable: bool, at_ms: u64) {
        let l = &mut self.links[site];
        l.0 = reachable;
        if reachable {
            l.1 = None;
        } else {
            l.1.get_or_insert(at_ms);
        }
    }

    /// Whether the link to `site` is known to be down: reported unreachable (or found so by a
    /// tick) and not reported back since.
    pub fn cut(&self, site: usize) -> bool {
        let (reachable, since) = self.links[site];
        !reachable && since.is_some()
    }

    /// Whether the link to `site` is reachable.
    pub fn reachable(&self, site: usize) -> bool {
        self.links[site].0
    }

    /// The sites among those `up` whose link has been unreachable for the timeout at `at_ms`
    /// (counted from the first report or check that found it unreachable), in site order.
    pub fn overdue(&mut self, at_ms: u64, up: impl Fn(usize) -> bool) -> Vec<usize> {
        let Some(after) = self.down_after_ms else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, l) in self.links.iter_mut().enumerate() {
            if l.0 {
                continue;
            }
            let since = *l.1.get_or_insert(at_ms);
            if at_ms.saturating_sub(since) >= after && up(i) {
                out.push(i);
            }
        }
        out
    }
}

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
        self.links.report(site, reachable, at_ms);
        if reachable && self.placer.set_up(site, true) {
            out.push(Effect::SiteUp { site });
            self.redispatch_also(now, None, true, out);
            for d in 0..self.placer.sites.len() {
                if d != site && !self.placer.is_up(d) {
                    self.redispatch(now, Some(d), out);
                }
            }
        }
    }

    /// The time passes: sites down long enough go down; the jobs waiting for a site are
    /// dispatched again (a pass over the open jobs: the live driver ticks a few times a second,
    /// the simulator not at all).
    pub(super) fn tick(&mut self, now: Time, at_ms: u64, out: &mut Vec<Effect>) {
        let placer = &self.placer;
        for i in self.links.overdue(at_ms, |i| placer.is_up(i)) {
            self.placer.set_up(i, false);
            out.push(Effect::SiteDown { site: i });
            self.redispatch(now, Some(i), out);
        }
        self.redispatch(now, None, out);
    }
}
