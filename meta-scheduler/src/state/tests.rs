//! The start-claim protocol at the meta level: what a site that goes down gives up, what it keeps,
//! and how its claims are answered.

use super::*;
use crate::config::MetaConfig;

/// Sites `a` (with the only `matlab` licence) and `b`, both reachable, every job sent to `a`.
fn grid(start_claims: bool) -> State {
    let cfg = MetaConfig::from_toml(
        "[dispatch]\nstrategy = \"round-robin\"\n\
         [[sites]]\nname = \"a\"\nlicences = [\"matlab\"]\nmachines = [{ name = \"a1\", processors = 8 }]\n\
         [[sites]]\nname = \"b\"\nmachines = [{ name = \"b1\", processors = 8 }]\n",
    )
    .unwrap();
    let decider = Decider::new(&cfg, 0).unwrap();
    let mut st = State::new(cfg.sites.clone(), cfg.max_priority(), decider);
    st.start_claims = start_claims;
    link(&mut st, 0, true, 0);
    link(&mut st, 1, true, 0);
    st
}

/// Monotonic milliseconds for the runner's links, increasing across every test.
fn ms(step: u64) -> u64 {
    static MS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    MS.fetch_add(step, std::sync::atomic::Ordering::SeqCst) + step
}

/// Site `i`'s link opens or closes at `t`.
pub(super) fn link(st: &mut State, i: usize, up: bool, t: i64) -> Batch {
    let mut b = Batch::default();
    st.link(&mut b, i, up, ms(1), t);
    b
}

/// Site `i`'s link closes at `t` and stays closed past the timeout: the runner marks it down.
pub(super) fn down(st: &mut State, i: usize, t: i64) -> Batch {
    let mut b = link(st, i, false, t);
    st.tick(&mut b, ms(3_000), t);
    assert!(!st.decider.is_up(i));
    b
}

/// Job `id` as the door accepts it: its record and its model, classified.
pub(super) fn accepted(
    st: &mut State,
    id: u64,
    spec: v1::JobSpec,
) -> (v1::Job, gridsched_core::model::Job) {
    let model = st.decider.job(&spec, id, 0).unwrap();
    let job = v1::Job {
        id,
        state: JobState::Accepted.into(),
        submit_time: Some(0),
        spec: Some(spec),
        ..Default::default()
    };
    (job, model)
}

/// Accepts job `id` while only site `a` is up, and has it sent there.
fn at_a(st: &mut State, id: u64, licences: &[&str]) {
    let spec = v1::JobSpec {
        user: "u".into(),
        processors: 1,
        estimate_s: 100,
        emulate_runtime_s: Some(1),
        licences: licences.iter().map(|l| l.to_string()).collect(),
        ..Default::default()
    };
    let (job, model) = accepted(st, id, spec);
    // Not reachable while it is accepted: it waits in a's outbox as ACCEPTED.
    down(st, 1, 0);
    st.reachable[0] = false;
    st.add(&mut Batch::default(), job, &model, 0).unwrap();
    link(st, 1, true, 0);
    st.reachable[0] = true;
    assert_eq!(st.jobs[&id].site.as_deref(), Some("a"));
}

/// Sends job `id` (alone) from site `i`'s outbox and has it queued there.
fn send(st: &mut State, i: usize, id: u64) {
    let others = std::mem::take(&mut st.outbox[i]);
    assert!(others.contains(&id));
    st.outbox[i].insert(id);
    let b = &mut Batch::default();
    assert_eq!(st.take_for_sending(b, i, 100, 1), [id]);
    st.outbox[i] = others;
    st.outbox[i].remove(&id);
    st.sent(b, i, id, 1);
    assert_eq!(st.jobs[&id].state(), JobState::Queued);
}

fn event(st: &mut State, site: usize, seq: u64, id: u64, state: JobState, withdrawn: bool) {
    let ev = v1::JobEvent {
        sequence: seq,
        job_id: id,
        state: state.into(),
        time: 2,
        machine: Some("a1".into()),
        withdrawn,
        ..Default::default()
    };
    st.apply_local(&mut Batch::default(), site, &ev);
}

fn claim(st: &mut State, site: usize, start: &[u64], waiting: &[u64]) -> (Vec<u64>, Vec<u64>) {
    let req = v1::ClaimRequest {
        start: start.to_vec(),
        waiting: waiting.to_vec(),
    };
    let mut b = Batch::default();
    let a = st.claims(&mut b, site, &req, 2);
    for id in &a.granted {
        assert!(b.jobs.contains(id) || st.jobs[id].claimed_by.is_some());
    }
    (a.granted, a.withdrawn)
}

fn site(st: &State, id: u64) -> (&str, JobState) {
    (st.jobs[&id].site.as_deref().unwrap(), st.jobs[&id].state())
}

#[test]
fn a_down_site_gives_up_exactly_its_jobs_that_have_not_started() {
    let mut st = grid(true);
    for id in 1..=6 {
        at_a(&mut st, id, if id == 5 { &["matlab"] } else { &[] });
    }
    // 1: queued at a, unclaimed. 2: queued, claimed. 3: started. 4: its Enqueue in flight.
    // 5: queued, unclaimed, but only a has its licence. 6: queued, then cancelled.
    for id in [1, 2, 3, 5, 6] {
        send(&mut st, 0, id);
    }
    assert_eq!(st.take_for_sending(&mut Batch::default(), 0, 100, 1), [4]);
    assert_eq!(st.jobs[&4].state(), JobState::Dispatched);
    assert_eq!(claim(&mut st, 0, &[2], &[]), (vec![2], vec![]));
    assert_eq!(st.jobs[&2].claimed_by.as_deref(), Some("a"));
    event(&mut st, 0, 1, 3, JobState::Running, false);
    assert_eq!(
        st.jobs[&3].claimed_by.as_deref(),
        Some("a"),
        "started there"
    );
    st.update(&mut Batch::default(), 6, 2, |j| {
        j.state = JobState::Cancelled.into();
        Some("cancelled".into())
    });

    down(&mut st, 0, 3);
    assert_eq!(site(&st, 1), ("b", JobState::Accepted), "withdrawn");
    assert_eq!(
        site(&st, 4),
        ("b", JobState::Accepted),
        "in flight, unclaimed"
    );
    assert_eq!(site(&st, 2), ("a", JobState::Queued), "claimed: stays");
    assert_eq!(site(&st, 3), ("a", JobState::Running), "started: stays");
    assert_eq!(site(&st, 5), ("a", JobState::Queued), "nowhere else to go");
    assert!(st.outbox[1].contains(&1) && st.outbox[1].contains(&4));
    assert!(st.outbox[0].is_empty() && st.in_flight[0].is_empty());
    let site_a = crate::metrics::SiteLabel { site: "a".into() };
    assert_eq!(
        st.metrics.withdrawn.get_or_create(&site_a).get(),
        2,
        "1 (queued) and 4 (in flight)"
    );
    let reason = st.events.iter().rev().find(|e| e.job_id == 1).unwrap();
    assert!(
        reason.detail.contains("withdrawn before it started"),
        "{reason:?}"
    );

    // a comes back: its claims for withdrawn or ended jobs are refused, the others granted; it
    // is told to drop the withdrawn and ended ones it lists as waiting.
    assert_eq!(
        claim(&mut st, 0, &[1, 2, 5], &[4, 6]),
        (vec![2, 5], vec![1, 4, 6])
    );
    assert_eq!(st.jobs[&5].claimed_by.as_deref(), Some("a"));
    let count = |outcome: &str| {
        let label = crate::metrics::ClaimLabel {
            site: "a".into(),
            outcome: outcome.into(),
        };
        st.metrics.claims.get_or_create(&label).get()
    };
    assert_eq!((count("granted"), count("withdrawn")), (3, 3));
    // b is sent both; a's late answers change nothing: the Enqueue of 4 that lands now, its drop
    // of 1.
    assert_eq!(
        st.take_for_sending(&mut Batch::default(), 1, 100, 4),
        [1, 4]
    );
    st.sent(&mut Batch::default(), 0, 4, 4);
    assert_eq!(site(&st, 4), ("b", JobState::Dispatched));
    event(&mut st, 0, 2, 1, JobState::Cancelled, true);
    assert_eq!(site(&st, 1), ("b", JobState::Dispatched));
    st.sent(&mut Batch::default(), 1, 1, 5);
    assert_eq!(claim(&mut st, 1, &[1], &[]), (vec![1], vec![]));
    assert_eq!(
        claim(&mut st, 0, &[1], &[]),
        (vec![], vec![1]),
        "b has it now"
    );
}

/// Found by the deterministic simulation of the grid: a site's claim answer computed while the
/// job was elsewhere reaches the site after the job's new Enqueue there, and the site drops it;
/// its drop, reported in the event stream, has the job sent again.
#[test]
fn a_job_dropped_where_it_was_placed_again_is_sent_again() {
    let mut st = grid(true);
    at_a(&mut st, 1, &[]);
    send(&mut st, 0, 1);
    // Dropped at a while it is a's (the answer overtaken): back in a's outbox.
    event(&mut st, 0, 1, 1, JobState::Cancelled, true);
    assert_eq!(site(&st, 1), ("a", JobState::Queued));
    assert!(st.outbox[0].contains(&1));
    send(&mut st, 0, 1);
    // Claimed there: a late drop no longer sends it (the site cannot have dropped it since).
    assert_eq!(claim(&mut st, 0, &[1], &[]), (vec![1], vec![]));
    event(&mut st, 0, 2, 1, JobState::Cancelled, true);
    assert!(!st.outbox[0].contains(&1));
    // Withdrawn to b: a's drop changes nothing.
    at_a(&mut st, 2, &[]);
    send(&mut st, 0, 2);
    down(&mut st, 0, 3);
    assert_eq!(site(&st, 2), ("b", JobState::Accepted));
    event(&mut st, 0, 3, 2, JobState::Cancelled, true);
    assert!(!st.outbox[0].contains(&2) && st.outbox[1].contains(&2));
}

#[test]
fn without_start_claims_a_sent_job_stays_with_its_down_site() {
    let mut st = grid(false);
    at_a(&mut st, 1, &[]);
    at_a(&mut st, 2, &[]);
    send(&mut st, 0, 1);
    down(&mut st, 0, 3);
    assert_eq!(site(&st, 1), ("a", JobState::Queued));
    assert_eq!(site(&st, 2), ("b", JobState::Accepted), "never sent: moves");
    assert!(!st.jobs[&2].start_claims);
}

#[test]
fn a_job_kept_by_a_down_site_moves_when_another_site_comes_back() {
    let mut st = grid(true);
    at_a(&mut st, 1, &[]);
    at_a(&mut st, 2, &[]);
    send(&mut st, 0, 1); // 1: queued at a, unclaimed; 2: waits in a's outbox
    // b is down first, then a: nowhere to go, both stay with a.
    down(&mut st, 1, 3);
    down(&mut st, 0, 4);
    assert_eq!(site(&st, 1), ("a", JobState::Queued));
    assert_eq!(site(&st, 2), ("a", JobState::Accepted));

    // b comes back while a is still down: both move to b, the queued one withdrawn from a.
    link(&mut st, 1, true, 5);
    assert!(st.decider.is_up(1));
    assert_eq!(site(&st, 1), ("b", JobState::Accepted), "withdrawn from a");
    assert_eq!(site(&st, 2), ("b", JobState::Accepted));
    assert!(st.outbox[0].is_empty());
    assert_eq!(
        st.take_for_sending(&mut Batch::default(), 1, 100, 6),
        [1, 2]
    );
    // a returns and claims job 1: refused, b has it.
    assert_eq!(claim(&mut st, 0, &[1], &[]), (vec![], vec![1]));
}

/// Accepts a job of `procs` processors (estimate 100 s) at `t`, then runs the release pass as
/// the service does after every change.
fn accept(st: &mut State, id: u64, procs: u32, t: i64) {
    let spec = v1::JobSpec {
        user: "u".into(),
        processors: procs,
        estimate_s: 100,
        emulate_runtime_s: Some(1),
        ..Default::default()
    };
    let model = st.decider.job(&spec, id, t).unwrap();
    let job = v1::Job {
        id,
        state: JobState::Accepted.into(),
        submit_time: Some(t),
        spec: Some(spec),
        ..Default::default()
    };
    let b = &mut Batch::default();
    st.add(b, job, &model, t).unwrap();
    st.settle(b, t);
}

/// Job sharing over sites `a` and `b` of one 4-processor machine each.
fn job_sharing() -> State {
    let cfg = MetaConfig::from_toml(
        "[dispatch]\nstrategy = \"job-sharing\"\n\
         [[sites]]\nname = \"a\"\nmachines = [{ name = \"a1\", processors = 4 }]\n\
         [[sites]]\nname = \"b\"\nmachines = [{ name = \"b1\", processors = 4 }]\n",
    )
    .unwrap();
    let decider = Decider::new(&cfg, 0).unwrap();
    let mut st = State::new(cfg.sites.clone(), cfg.max_priority(), decider);
    link(&mut st, 0, true, 0);
    link(&mut st, 1, true, 0);
    st
}

#[test]
fn job_sharing_holds_jobs_at_the_meta_level_and_releases_them_as_sites_free() {
    let mut st = job_sharing();
    st.reachable = vec![true, true];
    let site = |st: &State, id: u64| st.jobs[&id].site.clone();
    accept(&mut st, 1, 4, 0);
    accept(&mut st, 2, 2, 0);
    assert_eq!(
        (site(&st, 1), site(&st, 2)),
        (Some("a".into()), Some("b".into()))
    );
    assert_eq!(
        st.decisions[&2].dispatch.as_ref().unwrap().decided_by,
        "job-sharing (best fit: 2 processors left free, the fewest of the sites with room)"
    );
    // Four processors free nowhere: held, and reserved on a at 100 (job 1's estimated end).
    accept(&mut st, 3, 4, 0);
    assert_eq!(site(&st, 3), None);
    assert!(st.waits(3));
    let held = &st.decisions[&3].dispatch.as_ref().unwrap().decided_by;
    assert!(held.contains("held in the meta-level queue"), "{held}");
    // Job 4 ends by 100 on b: backfilled. Job 5 (one processor): both sites are full, held.
    accept(&mut st, 4, 2, 0);
    assert_eq!(site(&st, 4), Some("b".into()));
    accept(&mut st, 5, 1, 0);
    assert_eq!((site(&st, 5), st.decider.held()), (None, 2));
    // Job 1 ends at a: job 3 (the head) is released there, then job 5 fits nowhere.
    let ev = v1::JobEvent {
        sequence: 1,
        job_id: 1,
        state: JobState::Completed.into(),
        time: 40,
        machine: Some("a1".into()),
        ..Default::default()
    };
    let b = &mut Batch::default();
    st.apply_local(b, 0, &ev);
    st.settle(b, 40);
    assert_eq!((site(&st, 3), site(&st, 5)), (Some("a".into()), None));
    assert!(st.outbox[0].contains(&3) && !st.waits(3));
    assert!(b.jobs.contains(&3) && b.decisions.contains(&3) && b.wake.contains(&0));
    // A held job cancelled leaves the queue.
    st.update(&mut Batch::default(), 5, 41, |j| {
        j.state = JobState::Cancelled.into();
        Some("cancelled".into())
    });
    assert_eq!(st.decider.held(), 0);
}

#[test]
fn a_job_sharing_job_at_a_site_that_goes_down_goes_back_to_the_meta_level_queue() {
    let mut st = job_sharing();
    st.reachable = vec![false, true];
    let site = |st: &State, id: u64| st.jobs[&id].site.clone();
    accept(&mut st, 1, 4, 0);
    accept(&mut st, 2, 4, 0);
    assert_eq!(
        (site(&st, 1), site(&st, 2)),
        (Some("a".into()), Some("b".into()))
    );
    assert!(st.outbox[0].contains(&1), "not sent: a is unreachable");
    // a goes down; b is full: job 1 is held at the meta level, with no site.
    let b = &mut down(&mut st, 0, 5);
    st.settle(b, 5);
    assert_eq!(
        (site(&st, 1), st.jobs[&1].state()),
        (None, JobState::Accepted)
    );
    assert!(st.waits(1) && !st.outbox[0].contains(&1));
    assert_eq!(st.decider.held(), 1);
    // a comes back: job 1 is released there; the grid scheduler counted it once only (a 4-wide
    // job 3 waits, as both sites are full).
    let b = &mut link(&mut st, 0, true, 6);
    st.settle(b, 6);
    assert_eq!(site(&st, 1), Some("a".into()));
    accept(&mut st, 3, 4, 7);
    assert_eq!((site(&st, 3), st.decider.held()), (None, 1));
}

/// A finished job leaves memory once its retention has passed, not before; events older than
/// the retention leave too, and the count cap drops the oldest events.
#[test]
fn finished_jobs_and_events_leave_memory_after_their_retention() {
    let mut st = grid(false);
    st.retention.finished_s = 100;
    st.retention.events = 3;
    at_a(&mut st, 1, &[]);
    at_a(&mut st, 2, &[]);
    let mut b = Batch::default();
    st.update(&mut b, 1, 10, |j| {
        j.state = JobState::Completed.into();
        Some("done".into())
    });
    assert_eq!(b.finished, vec![1]);
    st.retire(&b.finished, 10);
    st.retire(&[], 109);
    assert!(st.jobs.contains_key(&1), "within its retention");
    assert!(st.events.len() <= 3, "the count cap");
    st.retire(&[], 110);
    assert!(!st.jobs.contains_key(&1), "past its retention");
    assert!(st.jobs.contains_key(&2), "a live job stays");
    assert!(
        st.events.iter().all(|e| e.time + 100 > 110),
        "old events left"
    );
}

/// A sweep gives back the room a burst left in the maps once its jobs have gone.
#[test]
fn a_sweep_after_a_burst_gives_the_maps_room_back() {
    let mut st = grid(false);
    st.tokens = (0..5_000).map(|i| (format!("u\0t{i}"), i)).collect();
    let grown = st.tokens.capacity();
    st.tokens.retain(|_, &mut id| id < 10);
    st.retire(&[], 10);
    assert!(
        st.tokens.capacity() * 4 < grown,
        "{} of {grown}",
        st.tokens.capacity()
    );
    assert_eq!(st.tokens.len(), 10);
}

#[test]
fn a_suspended_job_keeps_its_first_start_and_its_machine_until_it_resumes() {
    let mut st = grid(false);
    at_a(&mut st, 1, &[]);
    send(&mut st, 0, 1);
    let ev = |sequence, state: JobState, time, detail: &str| v1::JobEvent {
        sequence,
        job_id: 1,
        state: state.into(),
        time,
        machine: Some("a1".into()),
        detail: detail.into(),
        ..Default::default()
    };
    let mut apply = |e: v1::JobEvent| {
        st.apply_local(&mut Batch::default(), 0, &e);
        let j = &st.jobs[&1];
        (
            j.state(),
            j.start_time,
            j.suspended_since,
            j.machine.clone(),
            j.reason.clone(),
        )
    };
    // A suspension of a job that has not started is stale: ignored.
    let s = apply(ev(1, JobState::Suspended, 5, "early"));
    assert_eq!(s.0, JobState::Queued);
    apply(ev(2, JobState::Running, 10, "started on a1"));
    let s = apply(ev(3, JobState::Suspended, 20, "suspended on a1"));
    assert_eq!(
        s,
        (
            JobState::Suspended,
            Some(10),
            Some(20),
            Some("a1".into()),
            "suspended on a1".into()
        )
    );
    let s = apply(ev(
        4,
        JobState::Running,
        30,
        "resumed on a1 with its progress",
    ));
    assert_eq!(
        s,
        (
            JobState::Running,
            Some(10),
            None,
            Some("a1".into()),
            String::new()
        ),
        "resumed: its first start stays"
    );
    // Suspended again, then restarted from scratch elsewhere: back in the queue.
    apply(ev(5, JobState::Suspended, 40, "suspended on a1"));
    let s = apply(ev(6, JobState::Queued, 50, "requeued"));
    assert_eq!((s.0, s.1, s.2, s.3), (JobState::Queued, None, None, None));
    // Started again, then preempted by a kill: two restarts (its resumption was none).
    apply(ev(7, JobState::Running, 60, "restarted from scratch on a1"));
    apply(ev(
        8,
        JobState::Queued,
        70,
        "preempted: killed and requeued",
    ));
    assert_eq!(st.jobs[&1].restarts, 2, "each next run is from scratch");
}

/// A job whose cancellation was asked of its site, unanswered (seed 17194 of the grid's
/// deterministic simulation): withdrawn from that site when it goes down, it is sent to no site
/// again but ends CANCELLED with the user's reason; a job without the request moves on.
#[test]
fn a_job_whose_cancellation_was_asked_is_never_sent_again() {
    let mut st = grid(true);
    for id in [1, 2] {
        at_a(&mut st, id, &[]);
        send(&mut st, 0, id);
    }
    st.update(&mut Batch::default(), 1, 2, |j| {
        j.cancel_requested = Some("not needed".into());
        Some("cancellation asked of a".into())
    });
    let b = down(&mut st, 0, 3);
    assert_eq!(st.jobs[&1].state(), JobState::Cancelled);
    assert_eq!(st.jobs[&1].reason, "not needed");
    assert!(b.jobs.contains(&1), "its end is committed");
    assert!(
        !st.decider.runner().contains(JobId(1)),
        "the runner forgot it"
    );
    assert!(!st.outbox.iter().any(|o| o.contains(&1)), "sent nowhere");
    assert_eq!(
        site(&st, 2),
        ("b", JobState::Accepted),
        "the other moves on"
    );
}
