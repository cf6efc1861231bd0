//! Multi-node jobs live: a site of three alike 2-processor machines under EASY runs a job wider
//! than any one of them as one part per node, each part a real process that knows the node list,
//! its rank, the node count and the head node; the job ends when every part has; a failing part
//! ends the others; cancel reaches every part. Real processes on loopback ports.

use gridsched_proto::v1::{self, JobState};
use gridsched_tests::live::{
    LiveGrid, SiteSpec, cancel_once_running, sh_job, stdout_of, submit_all, wait_ended,
};
use std::time::{Duration, Instant};

fn script(procs: u32, script: &str) -> v1::JobSpec {
    sh_job(procs, 120, script)
}

/// Job `id` once it has ended (in a one-element vector).
async fn ended(c: &mut gridsched_tests::live::Client, id: u64) -> Vec<v1::Job> {
    let all = wait_ended(c, &[id], Duration::from_secs(30)).await;
    all.into_iter().filter(|j| j.id == id).collect()
}

const NODES: [&str; 3] = ["alpha-m1", "alpha-m2", "alpha-m3"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_wider_than_a_machine_runs_one_part_per_node() {
    let mut site = SiteSpec::new("alpha", "easy", 3, 2);
    site.multi_node = true;
    let g = LiveGrid::start(gridsched_tests::test_bins!(), vec![site], "");
    g.ready().await;
    let mut c = g.client().await;

    // 5 processors over three 2-processor nodes: 2 + 2 + 1.
    let env = "echo $GRIDSCHED_NODE_RANK $GRIDSCHED_NODE_COUNT $GRIDSCHED_HEAD_NODE \
               $GRIDSCHED_NODES $GRIDSCHED_PROCESSORS";
    let ok = submit_all(&mut c, vec![script(5, env)]).await[0];
    let done = ended(&mut c, ok).await;
    assert_eq!(done[0].state(), JobState::Completed, "{:?}", done[0]);
    assert_eq!(done[0].exit_code, Some(0));
    assert_eq!(done[0].reason, "all 3 parts exited with code 0");
    let all = NODES.join(",");
    for (rank, (node, procs)) in NODES.iter().zip([2, 2, 1]).enumerate() {
        assert_eq!(
            stdout_of(&g, node, ok).trim(),
            format!("{rank} 3 alpha-m1 {all} {procs}"),
            "the part on {node}"
        );
    }

    // A part that fails ends the others (which would sleep a minute): the job fails with its code.
    let t0 = Instant::now();
    let fail = "if [ $GRIDSCHED_NODE_RANK = 1 ]; then sleep 0.5; exit 7; fi; exec sleep 60";
    let bad = submit_all(&mut c, vec![script(6, fail)]).await[0];
    let done = ended(&mut c, bad).await;
    assert_eq!(done[0].state(), JobState::Failed, "{:?}", done[0]);
    assert_eq!(done[0].exit_code, Some(7));
    assert_eq!(
        done[0].reason,
        "part 1 of 3 on alpha-m2: exited with code 7"
    );
    assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());

    // Cancel reaches every part.
    let long = submit_all(&mut c, vec![script(6, "exec sleep 60")]).await[0];
    let t0 = Instant::now();
    cancel_once_running(&mut c, long, Duration::from_secs(20)).await;
    let done = ended(&mut c, long).await;
    assert_eq!(done[0].state(), JobState::Cancelled, "{:?}", done[0]);
    assert!(t0.elapsed() < Duration::from_secs(20));
    // Every node is free again: a 6-processor job runs at once.
    let after = submit_all(&mut c, vec![script(6, "true")]).await[0];
    let done = ended(&mut c, after).await;
    assert_eq!(done[0].state(), JobState::Completed, "{:?}", done[0]);
    drop(g);
}
