//! Co-allocation over real gRPC: two local schedulers (served in this process over loopback TCP,
//! each with its agent registered by hand and never running anything), and a job wider than
//! either submitted to the meta-scheduler under `multi-site`: the grid runner splits it, and the
//! shell carries out its holds at both sites, climbing to their common earliest start, and its
//! commits, then sends the fragments into the committed reservations.

use gridsched_proto::v1;
use gridsched_proto::v1::local_scheduler_client::LocalSchedulerClient;
use gridsched_proto::v1::meta_scheduler_server::MetaScheduler;
use meta_scheduler::service::MetaService;
use tonic::transport::Channel;

/// Starts a local scheduler of one 4-processor machine `<name>-m`, its agent registered.
async fn site(name: &str) -> (String, LocalSchedulerClient<Channel>) {
    let cfg = local_scheduler::Config::from_toml(&format!(
        "cluster = \"{name}\"\nsite = \"{name}\"\nlost_after_ms = 600000\n\
         [policy]\npolicy = \"easy\"\n[[machines]]\nname = \"{name}-m\"\nprocessors = 4\n"
    ))
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(local_scheduler::serve(cfg, listener));
    let mut c = loop {
        match LocalSchedulerClient::connect(addr.clone()).await {
            Ok(c) => break c,
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
        }
    };
    c.register_agent(v1::RegisterAgentRequest {
        machine: format!("{name}-m"),
        processors: 4,
        ..Default::default()
    })
    .await
    .unwrap();
    (addr, c)
}

fn meta(dir: &std::path::Path, sites: &[(&str, &str)]) -> MetaService {
    let mut toml = format!(
        "state_dir = {:?}\n[dispatch]\nstrategy = \"multi-site\"\n",
        dir.join("meta")
    );
    for (name, addr) in sites {
        toml += &format!(
            "[[sites]]\nname = \"{name}\"\nendpoint = \"{addr}\"\n\
             machines = [{{ name = \"{name}-m\", processors = 4 }}]\n"
        );
    }
    MetaService::open(&meta_scheduler::config::MetaConfig::from_toml(&toml).unwrap()).unwrap()
}

/// (start, end, tentative) of every reservation a site holds.
async fn held(c: &mut LocalSchedulerClient<Channel>) -> Vec<(i64, i64, bool)> {
    let st = c.status(v1::StatusRequest {}).await.unwrap().into_inner();
    st.advance_reservations
        .iter()
        .map(|r| (r.start_time, r.end_time, r.tentative))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fragments_are_held_at_the_common_earliest_start_and_committed() {
    let (a, mut ca) = site("a").await;
    let (b, mut cb) = site("b").await;
    // Site a runs a 4-processor job for its estimate of 100 s: its earliest start is its end.
    ca.enqueue(v1::EnqueueRequest {
        job_id: 900,
        spec: Some(v1::JobSpec {
            user: "u".into(),
            processors: 4,
            estimate_s: 100,
            emulate_runtime_s: Some(1_000),
            ..Default::default()
        }),
        priority: 1,
        ..Default::default()
    })
    .await
    .unwrap();
    let running = ca.status(v1::StatusRequest {}).await.unwrap().into_inner();
    let busy_until = running.running[0].predicted_end;
    let dir = tempfile::tempdir().unwrap();
    let m = meta(dir.path(), &[("a", &a), ("b", &b)]);
    let spec = v1::JobSpec {
        user: "alice".into(),
        processors: 6,
        estimate_s: 50,
        emulate_runtime_s: Some(10),
        ..Default::default()
    };
    let accepted = m.accept(vec![Some(spec)]).unwrap();
    let Some(v1::submit_result::Outcome::Accepted(r)) = &accepted[0].outcome else {
        panic!("{accepted:?}");
    };
    let id = r.job_id;
    let get = |m: &MetaService| {
        let m = m.clone();
        async move {
            m.get_job(tonic::Request::new(v1::GetJobRequest { job_id: id }))
                .await
                .unwrap()
                .into_inner()
                .job
                .unwrap()
        }
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let job = loop {
        let job = get(&m).await;
        if !job.fragments.is_empty() {
            break job;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not co-allocated: {job:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let fragments: Vec<(&str, u32, u64)> = job
        .fragments
        .iter()
        .map(|f| (f.site.as_str(), f.processors, f.reservation))
        .collect();
    // Reservations 1 and 2 were the first round's holds; b's moved in a second round (3).
    assert_eq!(fragments, [("a", 4, 1), ("b", 2, 3)]);
    // b was free at once, a only at the job's end: b climbed to a's start in a second round.
    // Held 2 s beyond the 50 s: the grace for sending the fragments.
    let at = (busy_until, busy_until + 52, false);
    assert_eq!(held(&mut ca).await, [at]);
    assert_eq!(held(&mut cb).await, [at], "b's first hold was let go");
    // The committed reservations are the user's, shown by the meta-scheduler.
    let listed = m
        .list_reservations(tonic::Request::new(v1::ListReservationsRequest::default()))
        .await
        .unwrap()
        .into_inner()
        .reservations;
    let mine: Vec<(&str, u32, i64, &str, i32)> = listed
        .iter()
        .map(|r| {
            let who = (r.site.as_str(), r.processors, r.start_time);
            (who.0, who.1, who.2, r.user.as_str(), r.state)
        })
        .collect();
    let held_state = v1::AdvanceReservationState::Held as i32;
    assert_eq!(
        mine,
        [
            ("a", 4, busy_until, "alice", held_state),
            ("b", 2, busy_until, "alice", held_state)
        ]
    );
}
