//! Multi-node jobs on a virtual clock, without processes: three alike nodes of 4 processors under
//! EASY, a 10-processor job over all three (4 + 4 + 2), its agents' reports fed by hand.

use super::super::tests::{at, enqueue_true, report};
use super::super::*;
use crate::config::Config;
use gridsched_proto::v1::AgentJobState as A;

const NODES: [&str; 3] = ["n1", "n2", "n3"];

fn driver(dir: &std::path::Path, extra: &str) -> Driver {
    let mut text = format!(
        "cluster = \"c1\"\nstate_dir = {:?}\nlost_after_ms = 5000\n{extra}\
         [policy]\npolicy = \"easy\"\n",
        dir.join("state")
    );
    for n in NODES {
        text += &format!("[[machines]]\nname = \"{n}\"\nprocessors = 4\n");
    }
    Driver::new(Config::from_toml(&text).unwrap(), at(0)).unwrap()
}

/// Registers the three agents (reporting `jobs` each); returns their session ids.
fn register(d: &mut Driver, jobs: [Vec<v1::JobReport>; 3], now: Now) -> Vec<String> {
    NODES
        .iter()
        .zip(jobs)
        .map(|(n, jobs)| {
            let r = v1::RegisterAgentRequest {
                machine: n.to_string(),
                processors: 4,
                jobs,
                ..Default::default()
            };
            d.register(r, now).unwrap().agent_id
        })
        .collect()
}

fn enqueue(d: &mut Driver, id: u64, procs: u32, now: Now) {
    enqueue_true(d, id, procs, 100, now);
}

/// The orders waiting for each node, as text.
fn orders(d: &mut Driver) -> [Vec<String>; 3] {
    std::array::from_fn(|i| {
        std::mem::take(&mut d.pending[i])
            .into_iter()
            .map(|c| match c.kind {
                Some(Kind::Start(s)) => format!(
                    "start {} {}p rank {} of {}",
                    s.job_id,
                    s.processors,
                    s.node_rank,
                    s.nodes.join(",")
                ),
                Some(Kind::Kill(k)) => format!("kill {}", k.job_id),
                other => format!("{other:?}"),
            })
            .collect()
    })
}

/// Node `i`'s agent reports `rep`.
fn beat(d: &mut Driver, agents: &[String], i: usize, rep: v1::JobReport, now: Now) {
    let r = v1::HeartbeatRequest {
        agent_id: agents[i].clone(),
        jobs: vec![rep],
        time: now.secs,
    };
    d.heartbeat(r, now).unwrap();
}

/// (state, detail, exit code) of job `id`'s events.
fn events(d: &Driver, id: u64) -> Vec<(JobState, String, Option<i32>)> {
    d.journal
        .events()
        .filter(|e| e.job_id == id)
        .map(|e| (e.state(), e.detail.clone(), e.exit_code))
        .collect()
}

fn last(d: &Driver, id: u64) -> (JobState, String, Option<i32>) {
    events(d, id).pop().unwrap()
}

/// A 10-processor job started on three nodes, every part running.
fn started(d: &mut Driver) -> Vec<String> {
    let agents = register(d, Default::default(), at(0));
    enqueue(d, 1, 10, at(1));
    let all = "n1,n2,n3";
    assert_eq!(
        orders(d),
        [
            [format!("start 1 4p rank 0 of {all}")],
            [format!("start 1 4p rank 1 of {all}")],
            [format!("start 1 2p rank 2 of {all}")],
        ]
    );
    beat(d, &agents, 0, report(1, A::Running, None), at(2));
    beat(d, &agents, 2, report(1, A::Running, None), at(2));
    assert_eq!(
        last(d, 1).0,
        JobState::Queued,
        "running once every part runs"
    );
    beat(d, &agents, 1, report(1, A::Running, None), at(3));
    assert_eq!(
        last(d, 1),
        (JobState::Running, "started on n1, n2, n3".into(), None)
    );
    let st = d.status(at(3).secs);
    let shares: Vec<(String, u32)> = st.running[0]
        .nodes
        .iter()
        .map(|n| (n.machine.clone(), n.processors))
        .collect();
    assert_eq!(
        shares,
        [("n1".into(), 4), ("n2".into(), 4), ("n3".into(), 2)]
    );
    let busy: Vec<u32> = st.machines.iter().map(|m| m.busy_processors).collect();
    assert_eq!(busy, [4, 4, 2]);
    agents
}

#[test]
fn a_failed_part_kills_the_others_and_the_job_fails_with_its_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = driver(dir.path(), "");
    let agents = started(&mut d);
    beat(&mut d, &agents, 1, report(1, A::Exited, Some(3)), at(10));
    assert_eq!(orders(&mut d), [vec!["kill 1"], vec![], vec!["kill 1"]]);
    assert_eq!(last(&d, 1).0, JobState::Running, "ends when every part has");
    beat(
        &mut d,
        &agents,
        0,
        report(1, A::KilledByOrder, None),
        at(11),
    );
    beat(
        &mut d,
        &agents,
        2,
        report(1, A::KilledByOrder, None),
        at(11),
    );
    assert_eq!(
        last(&d, 1),
        (
            JobState::Failed,
            "part 1 of 3 on n2: exited with code 3".into(),
            Some(3)
        )
    );
    // Its nodes are free again: a 12-processor job starts on all three.
    enqueue(&mut d, 2, 12, at(12));
    assert_eq!(orders(&mut d).map(|o| o.len()), [1, 1, 1]);
}

#[test]
fn with_let_run_the_other_parts_run_to_their_end() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = driver(dir.path(), "part_failure = \"let-run\"\n");
    let agents = started(&mut d);
    beat(&mut d, &agents, 2, report(1, A::Exited, Some(1)), at(10));
    assert_eq!(orders(&mut d), [vec![], vec![], Vec::<String>::new()]);
    beat(&mut d, &agents, 0, report(1, A::Exited, Some(0)), at(20));
    assert_eq!(last(&d, 1).0, JobState::Running);
    beat(&mut d, &agents, 1, report(1, A::Exited, Some(0)), at(30));
    assert_eq!(
        last(&d, 1),
        (
            JobState::Failed,
            "part 2 of 3 on n3: exited with code 1".into(),
            Some(1)
        )
    );
}

#[test]
fn cancel_reaches_every_part() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = driver(dir.path(), "");
    let agents = started(&mut d);
    let r = v1::CancelRequest {
        job_id: 1,
        reason: String::new(),
        run: None,
    };
    d.cancel(r, at(5).secs).unwrap();
    assert_eq!(orders(&mut d), [["kill 1"], ["kill 1"], ["kill 1"]]);
    for i in 0..3 {
        beat(&mut d, &agents, i, report(1, A::KilledByOrder, None), at(6));
    }
    assert_eq!(last(&d, 1), (JobState::Cancelled, "cancelled".into(), None));
}

#[test]
fn a_part_that_ended_before_a_restart_stays_ended() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = driver(dir.path(), "");
    let agents = started(&mut d);
    beat(&mut d, &agents, 0, report(1, A::Exited, Some(0)), at(10));
    drop(d);
    // The agent of n1 acknowledged its part's end and no longer reports it.
    let mut d = driver(dir.path(), "");
    let running = || vec![report(1, A::Running, None)];
    let agents = register(&mut d, [vec![], running(), running()], at(20));
    assert_eq!(last(&d, 1).0, JobState::Running, "not lost");
    let st = d.status(at(20).secs);
    let ended: Vec<bool> = st.running[0].nodes.iter().map(|n| n.ended).collect();
    assert_eq!(ended, [true, false, false]);
    beat(&mut d, &agents, 1, report(1, A::Exited, Some(0)), at(30));
    beat(&mut d, &agents, 2, report(1, A::Exited, Some(0)), at(30));
    assert_eq!(
        last(&d, 1),
        (
            JobState::Completed,
            "all 3 parts exited with code 0".into(),
            Some(0)
        )
    );
}

#[test]
fn a_lost_node_ends_the_other_parts_and_the_job_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = driver(dir.path(), "");
    let agents = started(&mut d);
    // n1 and n2 keep beating, n3 falls silent.
    for i in 0..2 {
        beat(&mut d, &agents, i, report(1, A::Running, None), at(8));
    }
    d.tick(at(9));
    assert_eq!(orders(&mut d), [vec!["kill 1"], vec!["kill 1"], vec![]]);
    assert_eq!(
        last(&d, 1).0,
        JobState::Running,
        "its other parts still end"
    );
    for i in 0..2 {
        beat(
            &mut d,
            &agents,
            i,
            report(1, A::KilledByOrder, None),
            at(10),
        );
    }
    assert_eq!(
        last(&d, 1),
        (
            JobState::Lost,
            "part 2 of 3 on n3: its agent stopped sending heartbeats".into(),
            None
        )
    );
}

/// Memory is per processor over a job's nodes: a 10-processor job asking 2,000 KiB on nodes of
/// 1,000 KiB gets 800, 800 and 400 KiB on its 4 + 4 + 2 processors, each part's agent held to
/// its share; one asking 6,000 KiB amounts to 24 processors' worth and is refused at the door.
#[test]
fn each_part_of_a_job_holds_its_processors_share_of_its_memory() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = format!(
        "cluster = \"c1\"\nstate_dir = {:?}\n[policy]\npolicy = \"easy\"\n",
        dir.path().join("state")
    );
    for n in NODES {
        text += &format!("[[machines]]\nname = \"{n}\"\nprocessors = 4\nmemory_kb = 1000\n");
    }
    let mut d = Driver::new(Config::from_toml(&text).unwrap(), at(0)).unwrap();
    register(&mut d, Default::default(), at(0));
    let ask = |id, kb| {
        let mut r = super::super::tests::true_request(id, 10, 100);
        r.spec.as_mut().unwrap().memory_kb = Some(kb);
        r
    };
    let (tx, mut rx) = oneshot::channel();
    d.enqueue_group(vec![(ask(1, 2000), tx)], at(1));
    rx.try_recv().unwrap().unwrap();
    let limits: Vec<Option<u64>> = std::mem::take(&mut d.pending)
        .into_iter()
        .flatten()
        .filter_map(|c| match c.kind {
            Some(Kind::Start(s)) => Some(s.memory_kb),
            _ => None,
        })
        .collect();
    assert_eq!(limits, [Some(800), Some(800), Some(400)]);
    let (tx, mut rx) = oneshot::channel();
    d.enqueue_group(vec![(ask(2, 6000), tx)], at(1));
    let e = rx.try_recv().unwrap().unwrap_err();
    assert!(
        e.message()
            .contains("memory_kb: 6000 KiB on 10 processors amounts to 24 processors' worth"),
        "{e:?}"
    );
}
