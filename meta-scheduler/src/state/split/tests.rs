//! A split job's life at the meta level, without sites: co-allocation begun by the release pass
//! (the runner's holds and commits answered here as the sites would), a cancellation during it
//! giving the processors back and its holds let go, fragments sent, run and ended.

use super::super::*;
use crate::config::MetaConfig;

/// Sites `a` and `b` of 4 processors under `multi-site` with p = 10 %.
fn grid() -> State {
    let cfg = MetaConfig::from_toml(
        "[dispatch]\nstrategy = \"multi-site\"\n[dispatch.multi_site]\noverhead_pct = 10\n\
         [[sites]]\nname = \"a\"\nmachines = [{ name = \"a1\", processors = 4 }]\n\
         [[sites]]\nname = \"b\"\nmachines = [{ name = \"b1\", processors = 4 }]\n",
    )
    .unwrap();
    let decider = Decider::new(&cfg, 0).unwrap();
    let mut st = State::new(cfg.sites.clone(), cfg.max_priority(), decider);
    super::super::tests::link(&mut st, 0, true, 0);
    super::super::tests::link(&mut st, 1, true, 0);
    st
}

/// The holds a batch asks for: (job, site, reservation).
fn holds(b: &Batch) -> Vec<(u64, usize, u64)> {
    b.calls
        .iter()
        .filter_map(|c| match c {
            SiteCall::Hold {
                job,
                site,
                reservation,
                ..
            } => Some((*job, *site, *reservation)),
            _ => None,
        })
        .collect()
}

/// The reservations a batch lets go: (site, reservation).
fn let_go(b: &Batch) -> Vec<(usize, u64)> {
    b.calls
        .iter()
        .filter_map(|c| match c {
            SiteCall::LetGo { site, reservation } => Some((*site, *reservation)),
            _ => None,
        })
        .collect()
}

/// Answers the holds of `b` as every site would (each holds from 3), then the commits that
/// follow: the batch that sends the fragments.
fn agree(st: &mut State, mut b: Batch) -> Batch {
    loop {
        let mut next = Batch::default();
        let calls = std::mem::take(&mut b.calls);
        if calls.is_empty() {
            return b;
        }
        for c in calls {
            let input = match c {
                SiteCall::Hold {
                    job,
                    fragment,
                    site,
                    reservation,
                    ..
                } => Input::Held {
                    job: JobId(job),
                    fragment,
                    site,
                    reservation: ReservationId(reservation),
                    answer: Ok(3),
                },
                SiteCall::Commit { job, fragment, .. } => Input::Committed {
                    job: JobId(job),
                    fragment,
                    answer: Ok(()),
                },
                SiteCall::LetGo { .. } => continue,
            };
            st.drive(&mut next, 3, input);
        }
        b = next;
    }
}

/// Accepts job `id` of `procs` processors and runs the release pass: the batch.
fn submit(st: &mut State, id: u64, procs: u32) -> Batch {
    let spec = v1::JobSpec {
        user: "u".into(),
        processors: procs,
        estimate_s: 100,
        emulate_runtime_s: Some(10),
        ..Default::default()
    };
    let (job, model) = super::super::tests::accepted(st, id, spec);
    let mut b = Batch::default();
    st.add(&mut b, job, &model, 0).unwrap();
    st.settle(&mut b, 0);
    b
}

fn event(st: &mut State, site: usize, id: u64, state: JobState, exit: Option<i32>) -> Batch {
    let ev = v1::JobEvent {
        sequence: st.site_seq[site] + 1,
        job_id: id,
        state: state.into(),
        time: 5,
        machine: Some(format!("{}1", ["a", "b"][site])),
        exit_code: exit,
        detail: format!("{state:?}"),
        ..Default::default()
    };
    let mut b = Batch::default();
    st.apply_local(&mut b, site, &ev);
    b
}

#[test]
fn a_cancelled_co_allocation_gives_its_processors_back() {
    let mut st = grid();
    let b = submit(&mut st, 1, 6);
    assert_eq!(holds(&b), [(1, 0, 1), (1, 1, 2)]);
    assert_eq!(st.jobs[&1].state(), JobState::Accepted);
    assert_eq!(
        b.events.last().unwrap().detail,
        "co-allocating over a (4) + b (2), each fragment 110 s with p = 10 %: multi-site \
         (p = 10 %) (split over 2 sites, planned end 110 with the overhead; no site could run \
         it alone)"
    );
    // Cancelled while the sites are asked: its holds are let go, and all 8 processors are free
    // for the next job.
    let mut cancel = Batch::default();
    st.update(&mut cancel, 1, 1, |j| {
        j.state = JobState::Cancelled.into();
        Some("cancelled".into())
    });
    assert_eq!(let_go(&cancel), [(0, 1), (1, 2)]);
    let b = submit(&mut st, 2, 8);
    assert_eq!(
        holds(&b),
        [(2, 0, 3), (2, 1, 4)],
        "the cancelled split still holds processors"
    );
    // A late answer to the cancelled job's hold: the hold is let go.
    let mut late = Batch::default();
    let input = Input::Held {
        job: JobId(1),
        fragment: 0,
        site: 0,
        reservation: ReservationId(1),
        answer: Ok(3),
    };
    st.drive(&mut late, 3, input);
    assert_eq!(let_go(&late), [(0, 1)]);
    assert!(late.send_fragments.is_empty());
}

#[test]
fn fragments_run_together_and_the_first_failure_ends_the_job() {
    let mut st = grid();
    let b = submit(&mut st, 1, 6);
    let b = agree(&mut st, b);
    assert_eq!(b.send_fragments, [1]);
    assert_eq!(b.held, [1, 2]);
    let j = &st.jobs[&1];
    assert_eq!(j.state(), JobState::Dispatched);
    let f: Vec<(&str, u32, u64, i64)> = j
        .fragments
        .iter()
        .map(|f| (f.site.as_str(), f.processors, f.reservation, f.estimate_s))
        .collect();
    assert_eq!(f, [("a", 4, 1, 110), ("b", 2, 2, 110)]);
    assert!(
        b.events
            .last()
            .unwrap()
            .detail
            .starts_with("co-allocated over a (4) + b (2) from 3 (1 round of holds)"),
        "{:?}",
        b.events.last()
    );
    st.fragment_sent(&mut Batch::default(), 0, 1, 0, 3);
    assert_eq!(
        st.jobs[&1].state(),
        JobState::Dispatched,
        "b has not got its own"
    );
    event(&mut st, 1, 1, JobState::Queued, None);
    assert_eq!(st.jobs[&1].state(), JobState::Queued);
    event(&mut st, 0, 1, JobState::Running, None);
    assert_eq!(
        st.jobs[&1].state(),
        JobState::Queued,
        "running once both run"
    );
    let b = event(&mut st, 1, 1, JobState::Running, None);
    assert_eq!(st.jobs[&1].state(), JobState::Running);
    assert_eq!(
        b.events.last().unwrap().detail,
        "every fragment runs (2 sites, start skew 0 s)"
    );
    // b fails: a is to be killed, and its cancellation does not explain the job's end.
    let b = event(&mut st, 1, 1, JobState::Failed, Some(3));
    assert_eq!(b.kill_fragments.len(), 1);
    assert_eq!((b.kill_fragments[0].site, b.kill_fragments[0].run), (0, 0));
    assert_eq!(let_go(&b), [(1, 2)]);
    assert_eq!(st.jobs[&1].state(), JobState::Running);
    let b = event(&mut st, 0, 1, JobState::Cancelled, None);
    assert_eq!(let_go(&b), [(0, 1)]);
    let j = &st.jobs[&1];
    assert_eq!(j.state(), JobState::Failed);
    assert_eq!(j.exit_code, Some(3));
    assert_eq!(j.reason, "fragment 1 of 2 at b: Failed");
    assert!(!st.in_runner(1));
    // Its processors are free: an 8-processor job is split at once.
    assert_eq!(holds(&submit(&mut st, 2, 8)).len(), 2);
}

#[test]
fn a_failed_fragment_requeues_the_job_once_then_fails_it() {
    let mut st = grid();
    st.fragment_requeues = 1;
    let first = submit(&mut st, 1, 6);
    let run = |st: &mut State, b: Batch| {
        assert_eq!(agree(st, b).send_fragments, [1]);
        event(st, 0, 1, JobState::Running, None);
        event(st, 1, 1, JobState::Running, None);
        event(st, 1, 1, JobState::Failed, Some(3));
        // The other fragment is killed: its end completes the run.
        event(st, 0, 1, JobState::Cancelled, None)
    };
    run(&mut st, first);
    let j = &st.jobs[&1];
    assert_eq!(j.state(), JobState::Accepted);
    assert_eq!((j.requeues, j.fragments.len()), (1, 0));
    assert_eq!(j.reason, "requeued after fragment 1 of 2 at b: Failed");
    assert!(st.in_runner(1), "back with the runner");
    // Planned again: the next pass splits it anew (its processors free again), as run 1.
    let mut b = Batch::default();
    st.settle(&mut b, 5);
    assert_eq!(holds(&b).len(), 2, "not split again");
    run(&mut st, b);
    let mut b = Batch::default();
    st.settle(&mut b, 6);
    assert!(holds(&b).is_empty());
    let j = &st.jobs[&1];
    assert_eq!((j.state(), j.requeues), (JobState::Failed, 1));
    assert_eq!(j.reason, "fragment 1 of 2 at b: Failed");
    assert!(!st.in_runner(1));
}

/// A fragment whose Enqueue is answered only after another fragment of its run failed (the kill
/// sent then found nothing at its site) is killed then, naming its run; one still wanted is not.
#[test]
fn a_fragment_that_reaches_its_site_after_its_run_went_bad_is_killed_then() {
    let mut st = grid();
    let b = submit(&mut st, 1, 6);
    assert_eq!(agree(&mut st, b).send_fragments, [1]);
    let mut b = Batch::default();
    st.fragment_sent(&mut b, 1, 1, 0, 3);
    assert!(b.kill_fragments.is_empty(), "b's fragment is wanted");
    event(&mut st, 1, 1, JobState::Running, None);
    let b = event(&mut st, 1, 1, JobState::Failed, Some(3));
    assert_eq!(
        b.kill_fragments.len(),
        1,
        "a's kill, which finds nothing yet"
    );
    let mut b = Batch::default();
    st.fragment_sent(&mut b, 0, 1, 0, 4);
    assert_eq!(
        b.kill_fragments,
        [FragmentKill {
            site: 0,
            job: 1,
            run: 0,
            why: "run 0 of job 1 is no longer wanted here".into(),
        }]
    );
    assert_eq!(st.jobs[&1].fragments[0].state(), JobState::Dispatched);
}
