//! The meta-scheduler's shell around the core's co-allocation protocol
//! ([`CoAllocation`]; Streit, thesis §6.3: the fragments of a multi-site job start together): it
//! carries out each step over the sites' links — tentative holds at each site's earliest start
//! (`Reserve` with `earliest` and a lease of `links.hold_lease_ms`), the release of holds that
//! must move (`CancelReservation`), the commits (`CommitReservation`) — and feeds the answers back.
//! The holds of one round are asked of all their sites at once. Reservation ids come from the
//! grid-wide counter of advance reservations, stored before any site hears of them; a committed
//! co-allocation's reservations are recorded as the job user's advance reservations, so that
//! `gridctl reservations` shows them and a restart keeps them. An abort lets every hold go; a hold
//! a lost answer left behind lapses with its lease.

use crate::service::{MetaService, internal};
use futures_util::future::join_all;
use gridsched_core::dispatch::{CoAllocation, CoAllocationStep as Step, Part};
use gridsched_proto::v1::{self, AdvanceReservationState as St};

/// A co-allocation that every site committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agreed {
    /// The common start.
    pub start: i64,
    /// Per fragment (in the order of the parts): its site and its committed reservation.
    pub reservations: Vec<(usize, u64)>,
    /// Rounds of holds it took.
    pub rounds: u32,
}

impl MetaService {
    /// Reserves `n` new grid-wide reservation ids, the counter stored first.
    fn reservation_ids(&self, n: usize) -> Result<Vec<u64>, String> {
        let (first, last) = {
            let mut st = self.lock().map_err(|e| e.to_string())?;
            let first = st.last_reservation + 1;
            st.last_reservation += n as u64;
            (first, st.last_reservation)
        };
        self.inner
            .store()
            .save_reservation(first, None, last)
            .map_err(|e| internal(e).to_string())?;
        Ok((first..=last).collect())
    }

    /// Co-allocates `parts` (cluster = site index) of job `job` of `user` for `length` seconds
    /// each from `now` on: the common start and the committed reservations, or why not (every
    /// hold let go). `single_end`: the best single-site planned end, for the adaptive rule.
    pub async fn co_allocate(
        &self,
        job: u64,
        user: &str,
        parts: Vec<Part>,
        length: i64,
        single_end: Option<i64>,
        now: i64,
    ) -> Result<Agreed, String> {
        let links = &self.inner.cfg.links;
        let mut c = CoAllocation::new(parts, length, links.coallocation_rounds, single_end);
        let mut ids: Vec<Option<u64>> = vec![None; c.parts().len()];
        let mut step = c.start(now);
        loop {
            step = match step {
                Step::Hold { fragments, from } => {
                    let old: Vec<(usize, u64)> = fragments
                        .iter()
                        .filter_map(|&i| ids[i].take().map(|id| (i, id)))
                        .collect();
                    self.let_go(&c, &old, "its fragment's start moves").await;
                    let new = match self.reservation_ids(fragments.len()) {
                        Ok(new) => new,
                        Err(e) => {
                            let held: Vec<(usize, u64)> = holds(&ids);
                            self.let_go(&c, &held, "co-allocation failed").await;
                            return Err(e);
                        }
                    };
                    let asks = fragments.iter().zip(new).map(|(&i, id)| {
                        let p = c.parts()[i];
                        let r = v1::ReserveRequest {
                            reservation: Some(v1::AdvanceReservation {
                                id,
                                start_time: from,
                                end_time: from + length,
                                processors: p.procs,
                                user: user.to_string(),
                                ..Default::default()
                            }),
                            earliest: true,
                            lease_ms: links.hold_lease_ms,
                        };
                        async move { (i, id, self.ask_hold(p.cluster.index(), r).await) }
                    });
                    let mut next = Step::Wait;
                    for (i, id, answer) in join_all(asks).await {
                        let s = match answer {
                            Ok(start) => {
                                ids[i] = Some(id);
                                c.held(i, start)
                            }
                            Err(why) => c.refused(i, &why),
                        };
                        if !matches!(next, Step::Abort { .. }) && s != Step::Wait {
                            next = s;
                        }
                    }
                    next
                }
                Step::Commit { .. } => {
                    let commits = holds(&ids).into_iter().map(|(i, id)| {
                        let site = c.parts()[i].cluster.index();
                        async move { (i, self.commit_hold(site, id).await) }
                    });
                    let mut next = Step::Wait;
                    for (i, answer) in join_all(commits).await {
                        let s = match answer {
                            Ok(()) => c.committed(i),
                            Err(why) => c.refused(i, &format!("commit: {why}")),
                        };
                        if !matches!(next, Step::Abort { .. }) && s != Step::Wait {
                            next = s;
                        }
                    }
                    next
                }
                Step::Send { start } => {
                    let reservations: Vec<(usize, u64)> = holds(&ids)
                        .into_iter()
                        .map(|(i, id)| (c.parts()[i].cluster.index(), id))
                        .collect();
                    self.record_holds(job, user, &c, start, &reservations)?;
                    return Ok(Agreed {
                        start,
                        reservations,
                        rounds: c.rounds(),
                    });
                }
                Step::Abort { why } => {
                    self.let_go(&c, &holds(&ids), "co-allocation given up")
                        .await;
                    return Err(why);
                }
                Step::Wait => return Err("co-allocation: no answer to wait for".into()),
            }
        }
    }

    /// Asks site `i` for a tentative hold: the start it gives.
    async fn ask_hold(&self, i: usize, r: v1::ReserveRequest) -> Result<i64, String> {
        let mut client = self.client(i).map_err(|e| e.message().to_string())?;
        let answer = self.call(client.reserve(r)).await;
        match answer.map(|a| a.reservation) {
            Ok(Some(r)) => Ok(r.start_time),
            Ok(None) => Err("no reservation in the answer".into()),
            Err(e) => Err(e.message().to_string()),
        }
    }

    /// Commits hold `id` at site `i`.
    async fn commit_hold(&self, i: usize, id: u64) -> Result<(), String> {
        let mut client = self.client(i).map_err(|e| e.message().to_string())?;
        let r = v1::CommitReservationRequest { id };
        self.call(client.commit_reservation(r))
            .await
            .map(|_| ())
            .map_err(|e| e.message().to_string())
    }

    /// Lets the holds `held` (fragment, reservation) go at their sites; one that cannot be
    /// reached keeps it until its lease lapses.
    async fn let_go(&self, c: &CoAllocation, held: &[(usize, u64)], reason: &str) {
        let cancels = held.iter().map(|&(i, id)| {
            let site = c.parts()[i].cluster.index();
            async move {
                let Ok(mut client) = self.client(site) else {
                    return;
                };
                let r = v1::CancelReservationRequest {
                    id,
                    reason: reason.to_string(),
                };
                if let Err(e) = self.call(client.cancel_reservation(r)).await {
                    tracing::debug!(reservation = id, "hold not let go: {}", e.message());
                }
            }
        });
        join_all(cancels).await;
    }

    /// Records a committed co-allocation's reservations as `user`'s advance reservations.
    fn record_holds(
        &self,
        job: u64,
        user: &str,
        c: &CoAllocation,
        start: i64,
        reservations: &[(usize, u64)],
    ) -> Result<(), String> {
        let mut st = self.lock().map_err(|e| e.to_string())?;
        let last = st.last_reservation;
        for (k, &(site, id)) in reservations.iter().enumerate() {
            let r = v1::AdvanceReservation {
                id,
                start_time: start,
                end_time: start + c.length(),
                processors: c.parts()[k].procs,
                site: st.sites[site].name.clone(),
                user: user.to_string(),
                state: St::Held as i32,
                jobs: vec![job],
                ..Default::default()
            };
            self.inner
                .store()
                .save_reservation(id, Some(&r), last)
                .map_err(|e| internal(e).to_string())?;
            st.reservations.insert(id, r);
        }
        Ok(())
    }
}

/// The holds taken: (fragment, reservation).
fn holds(ids: &[Option<u64>]) -> Vec<(usize, u64)> {
    ids.iter()
        .enumerate()
        .filter_map(|(i, id)| id.map(|id| (i, id)))
        .collect()
}
