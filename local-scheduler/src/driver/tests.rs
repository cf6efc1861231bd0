//! The driver's durability rule for start orders: an agent is told to start a job only once the
//! job's start is committed.

use super::*;

fn driver(dir: &std::path::Path) -> Driver {
    let cfg = Config::from_toml(&format!(
        "cluster = \"c1\"\nstate_dir = {:?}\n[policy]\npolicy = \"fcfs\"\n\
         [[machines]]\nname = \"m1\"\nprocessors = 2\n",
        dir.join("state")
    ))
    .unwrap();
    Driver::new(cfg).unwrap()
}

fn fail_commits(d: &Driver, fail: bool) {
    d.store
        .as_ref()
        .unwrap()
        .fail_commits
        .store(fail, std::sync::atomic::Ordering::Relaxed);
}

fn start_orders(d: &Driver) -> Vec<u64> {
    d.pending[0]
        .iter()
        .filter_map(|c| match &c.kind {
            Some(Kind::Start(s)) => Some(s.job_id),
            _ => None,
        })
        .collect()
}

#[test]
fn a_start_order_waits_for_the_commit_of_its_start() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = driver(dir.path());
    let req = v1::EnqueueRequest {
        job_id: 1,
        spec: Some(v1::JobSpec {
            user: "u".into(),
            processors: 1,
            estimate_s: 100,
            emulate_runtime_s: Some(10),
            ..Default::default()
        }),
        priority: 1,
        submit_time: 0,
        claim_before_start: false,
    };
    d.admit(req, now_s()).unwrap();
    d.flush().unwrap();
    assert_eq!(d.jobs[&1].state, JobState::Queued, "no agent yet: waits");

    // The agent registers, the policy starts the job, but its start cannot be committed.
    fail_commits(&d, true);
    d.register(v1::RegisterAgentRequest {
        machine: "m1".into(),
        processors: 2,
        ..Default::default()
    })
    .unwrap();
    assert_eq!(d.jobs[&1].state, JobState::Running, "decided");
    assert!(start_orders(&d).is_empty(), "ordered before it was durable");

    // The store recovers: the next tick commits the start, then the order leaves.
    fail_commits(&d, false);
    d.tick();
    assert_eq!(start_orders(&d), [1]);
    let (jobs, _) = d.store.as_ref().unwrap().load().unwrap();
    let stored = jobs
        .iter()
        .find(|j| j.request.as_ref().unwrap().job_id == 1);
    assert_eq!(
        stored.map(|j| j.state),
        Some(JobState::Running as i32),
        "stored as running"
    );
}
