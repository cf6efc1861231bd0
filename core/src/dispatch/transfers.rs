//! What moving a job's inputs to a site costs, as the dispatch strategies that estimate
//! completion count it: the grid's links (bytes per second and latency, between sites and from
//! the submitters' side) and where every input lies. The two-level design's Convergent
//! Scheduling charges each job the transfer of its inputs from the storage nodes inside a cluster
//! (Pasquali, thesis D7.2); this is the same charge between sites.
//!
//! Readings (labelled so in the docs, the seeds give no grid-level data model):
//!
//! * an input moves over one link, from the source that brings it soonest: a site that holds it,
//!   or the submitters' side (an upload, a URL's server); its time is the link's latency plus
//!   its bytes over the link's bandwidth, rounded up to whole seconds; a job's inputs move one
//!   after the other (a site stages a job's inputs in turn), so their times add up;
//! * a site holds an input once a job reading it was placed there (its cache keeps it: the grid
//!   counts it moved once), from when its move there ends as estimated then; a job there waits
//!   only for what is still on its way, and another site may fetch it from there once it is in;
//! * the estimate ignores the other transfers on the link (the simulator shares the bandwidth);
//! * where a strategy keeps a timeline of the site's processors (HEFT), the job's data is ready
//!   `transfer` seconds after its dispatch and its start is searched from then (HEFT's data-ready
//!   time); where it spreads the site's backlog over its processors (MCT, the batch mappers), the
//!   transfer is added to the backlog: that backlog measures load, not the job's wait (a job that
//!   fits the free processors starts at once under backfilling), so the transfer cannot be
//!   taken to overlap it. (`gridsim experiment data` measured the overlapping reading,
//!   `max(backlog, transfer)`: MCT then moved as much data as blind, within 1 %.)

use crate::model::{ClusterId, DataIn, Duration, Job, Time};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};

/// One direction of a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    /// Bytes per second (at least 1).
    pub bytes_per_s: u64,
    /// Latency in milliseconds.
    #[serde(default)]
    pub latency_ms: u64,
}

impl Link {
    /// Seconds to move `bytes` over the link: latency plus bytes over bandwidth, rounded up.
    pub fn seconds(&self, bytes: u64) -> Duration {
        let ms = u128::from(self.latency_ms)
            + (u128::from(bytes) * 1000).div_ceil(u128::from(self.bytes_per_s.max(1)));
        Duration::try_from(ms.div_ceil(1000)).unwrap_or(Duration::MAX)
    }
}

/// The grid's links: from the submitters' side to each site, and between sites.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Network {
    /// Per site, the link from the submitters' side to it.
    pub submitters: Vec<Link>,
    /// `between[a][b]`: the link from site `a` to site `b` (the diagonal is unused).
    pub between: Vec<Vec<Link>>,
}

impl Network {
    /// `n` sites, each reached from the submitters over `submitters` and from each other over
    /// `between`.
    pub fn uniform(n: usize, submitters: Link, between: Link) -> Network {
        Network {
            submitters: vec![submitters; n],
            between: vec![vec![between; n]; n],
        }
    }

    /// How many sites it links.
    pub fn sites(&self) -> usize {
        self.submitters.len()
    }

    /// Where the network does not fit `n` sites, why.
    pub fn check(&self, n: usize) -> Result<(), String> {
        if self.submitters.len() != n || self.between.len() != n {
            return Err(format!(
                "the network links {} sites, the grid has {n}",
                self.submitters.len()
            ));
        }
        if let Some(r) = self.between.iter().position(|r| r.len() != n) {
            return Err(format!("the network's row of site {r} has not {n} links"));
        }
        let links = self.submitters.iter().chain(self.between.iter().flatten());
        if links.into_iter().any(|l| l.bytes_per_s == 0) {
            return Err("a link of the network has a bandwidth of 0 bytes per second".into());
        }
        Ok(())
    }

    /// The link from `from` (`None`: the submitters' side) to `to`.
    pub fn link(&self, from: Option<ClusterId>, to: ClusterId) -> Link {
        match from {
            None => self.submitters[to.index()],
            Some(f) => self.between[f.index()][to.index()],
        }
    }
}

/// Where one input comes from to a site, and what that costs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Move {
    /// The source: a site that holds it, or `None`, the submitters' side.
    pub from: Option<ClusterId>,
    /// Its bytes.
    pub bytes: u64,
    /// Seconds over that link.
    pub seconds: Duration,
}

/// What it takes to bring a job's inputs to one site.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Estimate {
    /// Seconds, the inputs one after the other.
    pub seconds: Duration,
    /// Bytes to move (the inputs the site does not hold).
    pub bytes: u64,
    /// Inputs to move.
    pub inputs: u32,
}

/// Where inputs lie: per input, the sites that hold it or will, and from when (estimated).
type Holdings = BTreeMap<String, BTreeMap<ClusterId, Time>>;

/// The grid's links and where each input lies, as the strategies see them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Transfers {
    network: Option<Network>,
    /// Whether the strategies count the transfers (`false`: the data-blind baseline, which still
    /// explains them).
    counted: bool,
    /// The sites that hold each input (a job reading it was placed there), from when.
    held: Holdings,
    /// The inputs of `held` in the order the grid first learnt of them (the oldest forgotten
    /// first beyond [`MAX_KNOWN`]).
    order: VecDeque<String>,
}

/// The most inputs the grid remembers the places of: beyond, it forgets the one it learnt of
/// first (a forgotten input counts as held nowhere: its estimate is too high, never too low), so
/// a long-running meta-scheduler's memory stays bounded.
pub const MAX_KNOWN: usize = 100_000;

impl Transfers {
    /// Transfers over `network`, counted by the strategies unless `blind`.
    pub fn new(network: Option<Network>, blind: bool) -> Transfers {
        Transfers {
            counted: network.is_some() && !blind,
            network,
            held: BTreeMap::new(),
            order: VecDeque::new(),
        }
    }

    /// The links, when the grid describes them.
    pub fn network(&self) -> Option<&Network> {
        self.network.as_ref()
    }

    /// From when `site` holds input `key` (estimated), if it does or will.
    pub fn held_at(&self, site: ClusterId, key: &str) -> Option<Time> {
        self.held.get(key)?.get(&site).copied()
    }

    /// How many inputs the grid knows the place of.
    #[cfg(test)]
    fn known(&self) -> usize {
        self.held.len()
    }

    /// The cheapest way to bring `input` to `to` from `now`; `None` when `to` holds it or the
    /// grid has no network. Ties: the submitters' side, then the lower site id.
    pub fn best_move(&self, input: &DataIn, to: ClusterId, now: Time) -> Option<Move> {
        self.moves(input, to, now, &Pass::default()).ok()?
    }

    /// `Ok(the cheapest move)`, or `Err(when it is there)` for an input `to` holds or will.
    fn moves(
        &self,
        input: &DataIn,
        to: ClusterId,
        now: Time,
        pass: &Pass,
    ) -> Result<Option<Move>, Time> {
        let Some(net) = self.network.as_ref() else {
            return Ok(None);
        };
        if input.at.contains(&to) {
            return Err(now);
        }
        let lookup = |h: &Holdings| h.get(&input.key).and_then(|s| s.get(&to)).copied();
        if let Some(at) = [lookup(&self.held), lookup(&pass.0)]
            .into_iter()
            .flatten()
            .min()
        {
            return Err(at.max(now));
        }
        let holders = (self.held.get(&input.key).into_iter().flatten())
            .map(|(&s, &at)| (s, at))
            .chain(input.at.iter().map(|&s| (s, now)));
        let from_submitters = (None, now);
        let sources = std::iter::once(from_submitters).chain(holders.map(|(s, at)| (Some(s), at)));
        Ok(sources
            .filter(|(s, _)| s.is_none_or(|s| s.index() < net.sites()))
            .map(|(from, at)| Move {
                from,
                bytes: input.bytes,
                // A site forwards what it holds once it is there.
                seconds: (at - now).max(0) + net.link(from, to).seconds(input.bytes),
            })
            .min_by_key(|m| (m.seconds, m.from.map_or(0, |s| u64::from(s.0) + 1))))
    }

    /// What bringing `job`'s inputs to `to` from `now` takes, counted or not.
    pub fn estimate(&self, job: &Job, to: ClusterId, now: Time) -> Estimate {
        self.estimate_besides(job, to, now, &Pass::default())
    }

    fn estimate_besides(&self, job: &Job, to: ClusterId, now: Time, pass: &Pass) -> Estimate {
        let mut e = Estimate::default();
        // Inputs on their way there already: the job waits for the last of them.
        let mut coming = now;
        for i in &job.stage_in {
            match self.moves(i, to, now, pass) {
                Ok(Some(m)) => {
                    e.seconds = e.seconds.saturating_add(m.seconds);
                    e.bytes = e.bytes.saturating_add(m.bytes);
                    e.inputs += 1;
                }
                Ok(None) => {}
                Err(at) => coming = coming.max(at),
            }
        }
        e.seconds = e.seconds.max(coming - now);
        e
    }

    /// The seconds the strategies count for `job`'s inputs at `to` from `now`: 0 for a
    /// data-blind grid.
    pub fn counted(&self, job: &Job, to: ClusterId, now: Time) -> Duration {
        self.counted_besides(job, to, now, &Pass::default())
    }

    /// [`Transfers::counted`], the inputs of the jobs a pass placed on their way where they go.
    pub fn counted_besides(&self, job: &Job, to: ClusterId, now: Time, pass: &Pass) -> Duration {
        match self.counted && !job.stage_in.is_empty() {
            true => self.estimate_besides(job, to, now, pass).seconds,
            false => 0,
        }
    }

    /// `job`'s inputs are at `site` since `at` (a driver restoring a job placed there before).
    pub fn arrived(&mut self, job: &Job, site: ClusterId, at: Time) {
        if self.network.is_some() {
            self.remember(job, site, at);
        }
    }

    /// `job` was placed at `site` at `now`: the site holds its inputs once they are moved.
    pub fn placed(&mut self, job: &Job, site: ClusterId, now: Time) {
        if self.network.is_none() || job.stage_in.is_empty() {
            return;
        }
        let ready = now + self.estimate(job, site, now).seconds;
        self.remember(job, site, ready);
    }

    fn remember(&mut self, job: &Job, site: ClusterId, ready: Time) {
        for i in &job.stage_in {
            if !self.held.contains_key(&i.key) {
                self.order.push_back(i.key.clone());
            }
        }
        record(&mut self.held, job, site, ready);
        while self.order.len() > MAX_KNOWN {
            if let Some(k) = self.order.pop_front() {
                self.held.remove(&k);
            }
        }
    }
}

fn record(h: &mut Holdings, job: &Job, site: ClusterId, ready: Time) {
    for i in &job.stage_in {
        let at = h
            .entry(i.key.clone())
            .or_default()
            .entry(site)
            .or_insert(ready);
        *at = (*at).min(ready);
    }
}

/// The inputs of the jobs a release pass placed (the grid records them once the pass is carried
/// out): a batch of tasks reading one input moves it once per site in the strategy's estimates
/// too.
#[derive(Clone, Debug, Default)]
pub struct Pass(Holdings);

impl Pass {
    /// `job` goes to `site` at `now` in this pass, as `transfers` estimates its inputs' moves.
    pub fn placed(&mut self, transfers: &Transfers, job: &Job, site: ClusterId, now: Time) {
        if transfers.network.is_none() || job.stage_in.is_empty() {
            return;
        }
        let ready = now + transfers.estimate_besides(job, site, now, self).seconds;
        record(&mut self.0, job, site, ready);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1_000_000;

    fn net() -> Network {
        // Submitters reach each site at 10 MB/s; sites reach each other at 100 MB/s.
        let mut n = Network::uniform(
            3,
            Link {
                bytes_per_s: 10 * MB,
                latency_ms: 50,
            },
            Link {
                bytes_per_s: 100 * MB,
                latency_ms: 5,
            },
        );
        n.between[0][2].bytes_per_s = MB;
        n
    }

    fn job(inputs: &[(&str, u64)]) -> Job {
        let mut j = Job::new(1, 0, 1, 100, 100);
        j.stage_in = inputs.iter().map(|&(k, b)| DataIn::new(k, b)).collect();
        j
    }

    #[test]
    fn a_link_takes_its_latency_and_its_bytes_over_its_bandwidth_rounded_up() {
        let l = Link {
            bytes_per_s: 10 * MB,
            latency_ms: 50,
        };
        assert_eq!(l.seconds(0), 1, "50 ms of latency is a whole second");
        assert_eq!(l.seconds(100 * MB), 11, "10 s + 50 ms");
        assert_eq!(l.seconds(99 * MB), 10, "9.9 s + 50 ms = 9.95 s");
    }

    #[test]
    fn inputs_come_from_the_cheapest_holder_and_a_site_that_holds_one_moves_nothing() {
        let mut t = Transfers::new(Some(net()), false);
        let j = job(&[("a", 500 * MB), ("b", 100 * MB)]);
        // Nothing held: both from the submitters, 50.05 s and 10.05 s.
        let e = t.estimate(&j, ClusterId(2), 0);
        assert_eq!((e.seconds, e.bytes, e.inputs), (51 + 11, 600 * MB, 2));
        // Placed at site 0 at 0: both there at 51 + 11 = 62 (the submitters reach site 0 at
        // 10 MB/s too). At 100, site 1 gets them from site 0 at 100 MB/s (5.005 s + 1.005 s).
        t.placed(&j, ClusterId(0), 0);
        assert_eq!(t.held_at(ClusterId(0), "a"), Some(62));
        assert_eq!(t.estimate(&j, ClusterId(1), 100).seconds, 6 + 2);
        // At 20, site 0 is still receiving them: from there, "a" reaches site 1 at 62 + 6 = 68,
        // 48 s from now, better than 51 s from the submitters.
        let m = t.best_move(&j.stage_in[0], ClusterId(1), 20).unwrap();
        assert_eq!((m.from, m.seconds), (Some(ClusterId(0)), 48));
        // A job at site 0 at 20 waits for them until 62, moving nothing more.
        let e = t.estimate(&j, ClusterId(0), 20);
        assert_eq!((e.seconds, e.bytes, e.inputs), (42, 0, 0));
        // Site 2's link from site 0 is slow (1 MB/s): the submitters' side is still cheaper.
        let m = t.best_move(&j.stage_in[0], ClusterId(2), 100).unwrap();
        assert_eq!((m.from, m.seconds), (None, 51));
        assert_eq!(t.estimate(&j, ClusterId(0), 100), Estimate::default());
        assert_eq!(t.counted(&j, ClusterId(2), 100), 62);
    }

    #[test]
    fn a_pass_counts_an_input_once_per_site_before_the_grid_records_it() {
        let t = Transfers::new(Some(net()), false);
        let (first, second) = (job(&[("a", 100 * MB)]), job(&[("a", 100 * MB), ("b", 0)]));
        let mut pass = Pass::default();
        // The first task of a pass is placed at site 1: `a` arrives there at 11.
        assert_eq!(t.counted_besides(&first, ClusterId(1), 0, &pass), 11);
        pass.placed(&t, &first, ClusterId(1), 0);
        // Within the pass, a second reader at site 1 waits for that copy (until 11 at 0, 6 at
        // 5) and moves only `b` (one second of latency); at site 2 it is still a move.
        assert_eq!(t.counted_besides(&second, ClusterId(1), 0, &pass), 11);
        assert_eq!(t.counted_besides(&second, ClusterId(1), 5, &pass), 6);
        assert_eq!(t.counted_besides(&second, ClusterId(1), 20, &pass), 1);
        assert_eq!(t.counted_besides(&second, ClusterId(2), 20, &pass), 12);
        // Without the pass (as the grid stands: nothing recorded yet), `a` moves again.
        assert_eq!(t.counted(&second, ClusterId(1), 20), 12);
        assert_eq!(t.known(), 0, "the pass records nothing in the grid");
    }

    #[test]
    fn a_data_blind_grid_counts_nothing_but_still_estimates() {
        let t = Transfers::new(Some(net()), true);
        let j = job(&[("a", 500 * MB)]);
        assert_eq!(t.counted(&j, ClusterId(1), 0), 0);
        assert_eq!(t.estimate(&j, ClusterId(1), 0).seconds, 51);
        let none = Transfers::new(None, false);
        assert_eq!(none.estimate(&j, ClusterId(1), 0), Estimate::default());
    }

    #[test]
    fn an_input_there_at_submission_is_held_and_a_source_for_the_others() {
        let t = Transfers::new(Some(net()), false);
        let mut j = job(&[("a", 500 * MB)]);
        j.stage_in[0].at = vec![ClusterId(1)];
        assert_eq!(t.estimate(&j, ClusterId(1), 0).seconds, 0);
        let m = t.best_move(&j.stage_in[0], ClusterId(0), 0).unwrap();
        assert_eq!((m.from, m.seconds), (Some(ClusterId(1)), 6));
    }

    #[test]
    fn the_grid_forgets_the_oldest_inputs_beyond_its_bound() {
        let mut t = Transfers::new(Some(net()), false);
        for k in 0..=MAX_KNOWN {
            t.arrived(&job(&[(&format!("k{k}"), 1)]), ClusterId(0), 0);
        }
        assert_eq!(t.known(), MAX_KNOWN);
        assert_eq!(t.held_at(ClusterId(0), "k0"), None, "the first forgotten");
        assert_eq!(t.held_at(ClusterId(0), "k1"), Some(0));
        // Known again: it is the newest now.
        t.arrived(&job(&[("k0", 1)]), ClusterId(1), 5);
        assert_eq!(t.held_at(ClusterId(1), "k0"), Some(5));
        assert_eq!(t.held_at(ClusterId(0), "k1"), None);
    }

    #[test]
    fn a_network_of_the_wrong_size_or_a_zero_bandwidth_is_refused() {
        assert!(net().check(3).is_ok());
        assert!(net().check(2).unwrap_err().contains("links 3 sites"));
        let mut n = net();
        n.submitters[1].bytes_per_s = 0;
        assert!(n.check(3).unwrap_err().contains("0 bytes per second"));
    }
}
