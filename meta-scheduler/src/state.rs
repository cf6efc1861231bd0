//! The meta-scheduler's in-memory view of the grid (issue 5 part 1): every job by id, the
//! idempotency tokens, the per-cluster Load / Count arrays and the retained job events, kept in
//! step with the durable [`Store`](crate::store::Store).
//!
//! Until the classifier and the dispatch strategies of the core are wired in, classification is
//! a documented placeholder ([`classify`]) and placement is round robin over the sites able to run
//! the job ([`State::place`]); ties cannot occur (the rotation decides).

use crate::config::SiteConfig;
use crate::validate::site_can_run;
use gridsched_proto::v1;
use std::collections::{BTreeMap, HashMap, VecDeque};

/// How many job events are retained for `Watch { from_sequence }`.
pub const RETAINED_EVENTS: usize = 100_000;

/// Placeholder classification: `1 + owner_priority + class bonus (gold 2, silver 1) + 3 when the
/// job has a deadline`, clamped to `1 ..= max`. Returns the priority and its contributions.
pub fn classify(spec: &v1::JobSpec, max: u32) -> (u32, Vec<(&'static str, f64)>) {
    let class = match spec.user_class() {
        v1::UserClass::Gold => 2,
        v1::UserClass::Silver => 1,
        _ => 0,
    };
    let deadline = if spec.deadline.is_some() { 3 } else { 0 };
    let p = (1 + spec.owner_priority + class + deadline).clamp(1, max);
    let parts = vec![
        ("owner", f64::from(spec.owner_priority)),
        ("user", f64::from(class)),
        ("deadline", f64::from(deadline)),
    ];
    (p, parts)
}

/// The in-memory state.
#[derive(Debug)]
pub struct State {
    /// Every job by id.
    pub jobs: BTreeMap<u64, v1::Job>,
    /// `user \0 token` → job id.
    pub tokens: HashMap<String, u64>,
    /// Last job id given.
    pub last_id: u64,
    /// Last event sequence given.
    pub last_sequence: u64,
    /// Retained events, oldest first.
    pub events: VecDeque<v1::JobEvent>,
    /// Per site, per priority (index p - 1): jobs and workload not yet terminated.
    pub counts: Vec<Vec<(u32, u64)>>,
    /// Round-robin cursor.
    rr: usize,
    /// The sites.
    pub sites: Vec<SiteConfig>,
    /// Highest priority.
    pub max_priority: u32,
}

impl State {
    /// An empty state for these sites.
    pub fn new(sites: Vec<SiteConfig>, max_priority: u32) -> State {
        State {
            jobs: BTreeMap::new(),
            tokens: HashMap::new(),
            last_id: 0,
            last_sequence: 0,
            events: VecDeque::new(),
            counts: vec![vec![(0, 0); max_priority as usize]; sites.len()],
            rr: 0,
            sites,
            max_priority,
        }
    }

    /// Index of a site by name.
    pub fn site_index(&self, name: &str) -> Option<usize> {
        self.sites.iter().position(|s| s.name == name)
    }

    /// Adds (`sign` = 1) or removes (-1) a live job from its site's arrays.
    pub fn account(&mut self, job: &v1::Job, add: bool) {
        let Some(site) = job.site.as_deref().and_then(|s| self.site_index(s)) else {
            return;
        };
        let Some(p) = (job.priority as usize).checked_sub(1) else {
            return;
        };
        let Some(slot) = self.counts[site].get_mut(p) else {
            return;
        };
        let spec = job.spec.as_ref();
        let work = spec.map_or(0, |s| u64::from(s.processors) * s.estimate_s.max(0) as u64);
        if add {
            slot.0 += 1;
            slot.1 += work;
        } else {
            slot.0 = slot.0.saturating_sub(1);
            slot.1 = slot.1.saturating_sub(work);
        }
    }

    /// Cumulative arrays of a site: `(load[p-1], count[p-1])` over priorities ≥ p.
    pub fn arrays(&self, site: usize) -> (Vec<u64>, Vec<u32>) {
        let n = self.max_priority as usize;
        let (mut load, mut count) = (vec![0; n], vec![0; n]);
        let (mut l, mut c) = (0, 0);
        for p in (0..n).rev() {
            c += self.counts[site][p].0;
            l += self.counts[site][p].1;
            load[p] = l;
            count[p] = c;
        }
        (load, count)
    }

    /// Chooses the site of a job: the next able site in round-robin order.
    pub fn place(&mut self, spec: &v1::JobSpec) -> Option<usize> {
        let n = self.sites.len();
        for k in 0..n {
            let i = (self.rr + k) % n;
            if site_can_run(&self.sites[i], spec) {
                self.rr = (i + 1) % n;
                return Some(i);
            }
        }
        None
    }

    /// Records an event of `job` (already updated), returns it.
    pub fn event(&mut self, job: &v1::Job, time: i64, detail: String) -> v1::JobEvent {
        self.last_sequence += 1;
        let ev = v1::JobEvent {
            sequence: self.last_sequence,
            job_id: job.id,
            state: job.state,
            time,
            detail,
            machine: job.machine.clone(),
            exit_code: job.exit_code,
            signal: job.signal,
            cluster: job.cluster.clone(),
        };
        if self.events.len() == RETAINED_EVENTS {
            self.events.pop_front();
        }
        self.events.push_back(ev.clone());
        ev
    }

    /// Rebuilds the state from the store's content.
    pub fn restore(&mut self, loaded: crate::store::Loaded) {
        self.last_id = loaded.last_id;
        self.last_sequence = loaded.last_sequence;
        self.tokens = loaded.tokens.into_iter().collect();
        for job in loaded.jobs {
            if !job.state().is_terminal() {
                self.account(&job, true);
            }
            self.jobs.insert(job.id, job);
        }
    }
}
