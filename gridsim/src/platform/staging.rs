//! Inputs staged in over the modelled links (the grid's [`Network`]): a job placed at a site
//! reaches the site's local scheduler only once every input it reads is there, as a live site
//! holds a job outside its policy's queue while it fetches. What a site holds stays there (its
//! cache): a thousand tasks reading one input move it once per site, and a job whose input is on
//! its way waits for that move rather than starting another.
//!
//! The simulator's readings (labelled so in the docs):
//!
//! * one move per input and site, from the source its link brings it from soonest, the other
//!   moves aside: the submitters' side, or a site holding it (there since the job's submission,
//!   or moved there before); ties to the submitters, then the lower site id;
//! * the moves on one link share its bandwidth equally (processor sharing), in whole bytes per
//!   whole second: `k` moves on a link of `B` bytes per second each move `⌊Δt·B/k⌋` bytes in
//!   `Δt` seconds; a move whose last byte is sent at `t` is at the site at `t + ⌈latency⌉`;
//! * the links are independent of each other (no shared backbone) and of the sites' disks.

use gridsched_core::dispatch::{Network, Priority};
use gridsched_core::model::{ClusterId, Job, JobId, Time};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeMap;

/// One move in progress: input `key` to the link's destination, `remaining` bytes still to send.
#[derive(Clone, Debug)]
struct Flow {
    key: u32,
    remaining: u64,
}

/// A job waiting at its site for its inputs.
#[derive(Clone, Copy, Debug)]
pub(super) struct Parked {
    /// Its site.
    pub site: ClusterId,
    /// Its priority, for its submission to the site.
    pub priority: Priority,
    /// When it was placed there.
    pub since: Time,
    missing: u32,
}

/// The moves of a run and what each site holds.
#[derive(Debug)]
pub(super) struct Staging {
    net: Network,
    /// Input keys, interned.
    keys: FxHashMap<String, u32>,
    /// The inputs each site holds.
    present: FxHashSet<(ClusterId, u32)>,
    /// Inputs on their way to a site, with the jobs waiting for them there.
    coming: FxHashMap<(ClusterId, u32), Vec<JobId>>,
    /// The jobs waiting for inputs.
    parked: FxHashMap<JobId, Parked>,
    /// The moves on each link, `(from, to)` (`from` `None`: the submitters' side).
    flows: BTreeMap<(Option<ClusterId>, ClusterId), Vec<Flow>>,
    /// The moves have progressed up to here.
    updated: Time,
    /// The drain event in force (earlier ones are stale).
    generation: u64,
    /// Bytes moved, moves made, and seconds jobs waited for their inputs (all jobs together).
    pub bytes: u64,
    /// Moves made.
    pub moves: u64,
    /// Seconds jobs spent waiting for their inputs, summed.
    pub waited: u64,
}

impl Staging {
    /// Moves over `net`.
    pub fn new(net: Network) -> Staging {
        Staging {
            net,
            keys: FxHashMap::default(),
            present: FxHashSet::default(),
            coming: FxHashMap::default(),
            parked: FxHashMap::default(),
            flows: BTreeMap::new(),
            updated: 0,
            generation: 0,
            bytes: 0,
            moves: 0,
            waited: 0,
        }
    }

    fn key(&mut self, k: &str) -> u32 {
        let n = self.keys.len() as u32;
        *self.keys.entry(k.to_owned()).or_insert(n)
    }

    /// `job` (of `priority`) is placed at `site` at `t`: whether its inputs are all there (it
    /// goes to the site's scheduler now); otherwise it waits for the moves this starts or joins.
    pub fn park(&mut self, t: Time, job: &Job, priority: Priority, site: ClusterId) -> bool {
        self.advance(t);
        let mut missing = 0;
        for input in &job.stage_in {
            let k = self.key(&input.key);
            for &s in &input.at {
                self.present.insert((s, k));
            }
            if self.present.contains(&(site, k)) {
                continue;
            }
            missing += 1;
            if let Some(w) = self.coming.get_mut(&(site, k)) {
                w.push(job.id);
                continue;
            }
            let holders = (0..self.net.sites())
                .map(|s| ClusterId(s as u32))
                .filter(|&s| s != site && self.present.contains(&(s, k)));
            let from = std::iter::once(None)
                .chain(holders.map(Some))
                .min_by_key(|&f| {
                    let secs = self.net.link(f, site).seconds(input.bytes);
                    (secs, f.map_or(0, |s| u64::from(s.0) + 1))
                })
                .expect("the submitters' side");
            self.flows.entry((from, site)).or_default().push(Flow {
                key: k,
                remaining: input.bytes,
            });
            self.coming.insert((site, k), vec![job.id]);
            self.moves += 1;
            self.bytes += input.bytes;
        }
        if missing > 0 {
            let p = Parked {
                site,
                priority,
                since: t,
                missing,
            };
            self.parked.insert(job.id, p);
        }
        missing == 0
    }

    /// `job` no longer waits (cancelled, or withdrawn from its site): its moves go on (the
    /// site's cache keeps what comes).
    pub fn forget(&mut self, job: JobId) -> Option<Parked> {
        self.parked.remove(&job)
    }

    /// The moves progress to `t`, each link's bandwidth shared by its moves.
    fn advance(&mut self, t: Time) {
        let dt = u128::try_from(t - self.updated).unwrap_or(0);
        self.updated = self.updated.max(t);
        if dt == 0 {
            return;
        }
        for (&(from, to), flows) in self.flows.iter_mut() {
            let b = u128::from(self.net.link(from, to).bytes_per_s);
            let each = dt * b / flows.len().max(1) as u128;
            let each = u64::try_from(each).unwrap_or(u64::MAX);
            for f in flows.iter_mut() {
                f.remaining = f.remaining.saturating_sub(each);
            }
        }
    }

    /// A new drain to schedule, replacing the one in force: its generation (a drain event
    /// carries it; [`Staging::current`] tells whether it is still in force), and when the next
    /// move sends its last byte, if any moves.
    pub fn schedule_drain(&mut self) -> (u64, Option<Time>) {
        self.generation += 1;
        (self.generation, self.next_drain())
    }

    /// Whether a drain event of `generation` is the one in force.
    pub fn current(&self, generation: u64) -> bool {
        self.generation == generation
    }

    /// When the next move sends its last byte, if any moves.
    pub fn next_drain(&self) -> Option<Time> {
        let t = self
            .flows
            .iter()
            .filter(|(_, f)| !f.is_empty())
            .map(|(&(from, to), flows)| {
                let b = u128::from(self.net.link(from, to).bytes_per_s.max(1));
                let least = flows.iter().map(|f| f.remaining).min().unwrap_or(0);
                let secs = (u128::from(least) * flows.len() as u128).div_ceil(b);
                self.updated + Time::try_from(secs).unwrap_or(Time::MAX / 2)
            });
        t.min()
    }

    /// The moves that sent their last byte by `t`: `(site, input, when it is there)`.
    pub fn drained(&mut self, t: Time) -> Vec<(ClusterId, u32, Time)> {
        self.advance(t);
        let mut out = Vec::new();
        for (&(from, to), flows) in self.flows.iter_mut() {
            let latency = Time::try_from(self.net.link(from, to).latency_ms.div_ceil(1000));
            flows.retain(|f| {
                let done = f.remaining == 0;
                if done {
                    out.push((to, f.key, t + latency.unwrap_or(0)));
                }
                !done
            });
        }
        self.flows.retain(|_, f| !f.is_empty());
        out
    }

    /// Input `key` is at `site` at `t`: the jobs there it was the last missing input of, in
    /// the order they were placed.
    pub fn arrived(&mut self, t: Time, site: ClusterId, key: u32) -> Vec<(JobId, Parked)> {
        self.present.insert((site, key));
        let mut ready = Vec::new();
        for job in self.coming.remove(&(site, key)).unwrap_or_default() {
            let Some(p) = self.parked.get_mut(&job) else {
                continue;
            };
            if p.site != site {
                continue;
            }
            p.missing -= 1;
            if p.missing == 0 {
                let p = self.parked.remove(&job).expect("parked");
                self.waited += u64::try_from(t - p.since).unwrap_or(0);
                ready.push((job, p));
            }
        }
        ready
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gridsched_core::dispatch::Link;
    use gridsched_core::model::DataIn;

    const MB: u64 = 1_000_000;

    fn staging() -> Staging {
        // The submitters reach each site at 10 MB/s, 1.5 s latency; sites reach each other at
        // 100 MB/s without latency.
        Staging::new(Network::uniform(
            2,
            Link {
                bytes_per_s: 10 * MB,
                latency_ms: 1500,
            },
            Link {
                bytes_per_s: 100 * MB,
                latency_ms: 0,
            },
        ))
    }

    fn job(id: u64, inputs: &[(&str, u64)]) -> Job {
        let mut j = Job::new(id, 0, 1, 10, 10);
        j.stage_in = inputs.iter().map(|&(k, b)| DataIn::new(k, b)).collect();
        j
    }

    /// Runs the moves until none is left: each job's arrival at its site's scheduler.
    fn run(s: &mut Staging) -> Vec<(u64, Time)> {
        let mut out = Vec::new();
        let mut arrivals: Vec<(Time, ClusterId, u32)> = Vec::new();
        loop {
            let next_arrival = arrivals.iter().map(|a| a.0).min();
            let t = match (s.next_drain(), next_arrival) {
                (None, None) => break,
                (a, b) => a.into_iter().chain(b).min().unwrap(),
            };
            for (site, key, at) in s.drained(t) {
                arrivals.push((at, site, key));
            }
            arrivals.sort_unstable();
            while let Some(&(at, site, key)) = arrivals.first()
                && at <= t
            {
                arrivals.remove(0);
                out.extend(s.arrived(at, site, key).into_iter().map(|(j, _)| (j.0, at)));
            }
        }
        out
    }

    #[test]
    fn two_moves_on_one_link_share_it_and_one_alone_takes_its_bytes_over_the_bandwidth() {
        let mut s = staging();
        // 100 MB alone: 10 s, then 2 s of latency (1.5 s rounded up).
        assert!(!s.park(0, &job(1, &[("a", 100 * MB)]), 1, ClusterId(0)));
        assert_eq!(s.next_drain(), Some(10));
        // At 5, another 100 MB on the same link: both at 5 MB/s from then; "a" has 50 MB left
        // (drained at 15), "b" then alone sends its last 50 MB at 10 MB/s (at 20).
        assert!(!s.park(5, &job(2, &[("b", 100 * MB)]), 1, ClusterId(0)));
        assert_eq!(run(&mut s), vec![(1, 17), (2, 22)]);
        assert_eq!((s.moves, s.bytes, s.waited), (2, 200 * MB, 17 + 17));
    }

    #[test]
    fn an_input_moves_once_per_site_and_a_job_waits_for_the_move_under_way() {
        let mut s = staging();
        for id in 1..=100 {
            assert!(!s.park(0, &job(id, &[("big", 100 * MB)]), 1, ClusterId(1)));
        }
        let ready = run(&mut s);
        assert_eq!(ready.len(), 100);
        assert!(ready.iter().all(|&(_, at)| at == 12));
        assert_eq!((s.moves, s.bytes), (1, 100 * MB));
        // Held now: the next job goes to the scheduler at once; site 0 gets it from site 1.
        assert!(s.park(20, &job(101, &[("big", 100 * MB)]), 1, ClusterId(1)));
        assert!(!s.park(20, &job(102, &[("big", 100 * MB)]), 1, ClusterId(0)));
        assert_eq!(
            run(&mut s),
            vec![(102, 21)],
            "100 MB at 100 MB/s from site 1"
        );
    }

    #[test]
    fn a_job_waits_for_its_last_input_and_a_forgotten_one_not_at_all() {
        let mut s = staging();
        let j = job(1, &[("a", 10 * MB), ("b", 50 * MB)]);
        assert!(!s.park(0, &j, 1, ClusterId(0)));
        assert!(!s.park(0, &job(2, &[("a", 10 * MB)]), 1, ClusterId(0)));
        assert!(s.forget(JobId(2)).is_some());
        // Sharing the link: "a" drains at 2 (10 MB at 5 MB/s), "b" at 6 (40 MB more at 10).
        assert_eq!(run(&mut s), vec![(1, 8)]);
        let mut there = job(3, &[("c", 10 * MB)]);
        there.stage_in[0].at = vec![ClusterId(0)];
        assert!(
            s.park(9, &there, 1, ClusterId(0)),
            "held there at submission"
        );
    }
}
