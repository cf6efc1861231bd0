//! Advance reservations on a live grid (Streit, thesis §3.2: fixed-time requests of a planning
//! system): the meta-scheduler and two local schedulers as real processes, one site planning
//! (planning-fcfs), one heterogeneous-cluster site (fb-mod). A reservation is refused with the
//! reason when it is malformed, in the past, too wide, names an unknown machine or is in
//! conflict with the plan (the
//! conflicting interval named), and nothing of it remains; an admitted one keeps the running
//! queue off its processors (a job that would overlap it is planned after it, and the planned
//! start shows in `get`), runs the job submitted into it inside it, survives a kill -9 of the
//! local scheduler and of the meta-scheduler, and once cancelled lets the held-back job start.

use gridsched_proto::v1::{self, AdvanceReservationState as St, JobState};
use gridsched_tests::live::{LiveGrid, SiteSpec, submit_all, wait_ended};
use gridsched_tests::test_bins;
use std::time::{Duration, Instant};
use tonic::Code;

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn job(procs: u32, estimate: i64, script: &str) -> v1::JobSpec {
    v1::JobSpec {
        user: "alice".into(),
        processors: procs,
        estimate_s: estimate,
        command: Some(v1::Command {
            program: "sh".into(),
            args: vec!["-c".into(), script.into()],
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn ask(site: &str, procs: u32, start: i64, end: i64) -> v1::ReserveRequest {
    v1::ReserveRequest {
        reservation: Some(v1::AdvanceReservation {
            site: site.into(),
            processors: procs,
            start_time: start,
            end_time: end,
            user: "alice".into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

async fn get(c: &mut gridsched_tests::live::Client, id: u64) -> v1::Job {
    c.get_job(v1::GetJobRequest { job_id: id })
        .await
        .expect("get")
        .into_inner()
        .job
        .expect("a job")
}

/// Polls job `id` until `ok` holds of it (failing after `secs`).
async fn until(
    c: &mut gridsched_tests::live::Client,
    id: u64,
    secs: u64,
    what: &str,
    ok: impl Fn(&v1::Job) -> bool,
) -> v1::Job {
    let t = Instant::now();
    loop {
        let j = get(c, id).await;
        if ok(&j) {
            return j;
        }
        assert!(
            t.elapsed() < Duration::from_secs(secs),
            "job {id}: not {what} after {secs} s: {j:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn reservations(c: &mut gridsched_tests::live::Client) -> Vec<v1::AdvanceReservation> {
    c.list_reservations(v1::ListReservationsRequest::default())
        .await
        .expect("list reservations")
        .into_inner()
        .reservations
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reservation_is_refused_admitted_honoured_run_in_and_kept_across_kill_9() {
    let sites = vec![
        SiteSpec::new("plan", "planning-fcfs", 1, 4),
        // One processor: every job of two or more goes to `plan`.
        SiteSpec::new("queue", "fb-mod", 1, 1),
    ];
    let mut g = LiveGrid::start(test_bins!(), sites, "");
    g.ready().await;
    let mut c = g.client().await;
    let t0 = now();

    // Bad requests: the field or the reason named, nothing created.
    let refuse = async |c: &mut gridsched_tests::live::Client, r: v1::ReserveRequest| {
        c.reserve(r).await.expect_err("refused")
    };
    let e = refuse(&mut c, ask("plan", 2, t0 + 50, t0 + 50)).await;
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert!(e.message().contains("reservation.end_time"), "{e:?}");
    let e = refuse(&mut c, ask("plan", 2, t0 - 100, t0 + 50)).await;
    assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
    assert!(e.message().contains("in the past"), "{e:?}");
    let e = refuse(&mut c, ask("nowhere", 2, t0 + 50, t0 + 60)).await;
    assert_eq!(e.code(), Code::NotFound, "{e:?}");
    // Wider than the site's machine: the grid refuses it, its site never asked.
    let e = refuse(&mut c, ask("plan", 5, t0 + 50, t0 + 60)).await;
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert_eq!(
        e.message(),
        "field `reservation.processors`: 5 processors exceed what plan runs as one job (4)"
    );
    let mut elsewhere = ask("plan", 1, t0 + 50, t0 + 60);
    elsewhere.reservation.as_mut().unwrap().machine = "nope".into();
    let e = refuse(&mut c, elsewhere).await;
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert!(
        e.message()
            .contains("reservation.machine: no machine `nope` at this site"),
        "{e:?}"
    );

    // A runs on 2 of the 4 processors, by its estimate until t0 + 2000 (the agents' time scale
    // of 1/20 makes that a wall-time limit of 100 s).
    let a = submit_all(&mut c, vec![job(2, 2000, "sleep 100")]).await[0];
    let a_job = until(&mut c, a, 20, "running", |j| j.state() == JobState::Running).await;
    let a_start = a_job.start_time.unwrap();

    // 3 processors over [s, s + 30) conflict with A's planned end: refused, the stretch named.
    let s = now() + 15;
    let e = refuse(&mut c, ask("plan", 3, s, s + 30)).await;
    assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
    assert!(
        e.message()
            .contains(&format!("conflicts with the plan on [{s}, {})", s + 30)),
        "{e:?}"
    );
    assert!(
        e.message().contains("2 processors free there, 3 asked"),
        "{e:?}"
    );
    assert!(
        reservations(&mut c).await.is_empty(),
        "nothing half-created"
    );

    // 2 processors over [s, s + 45): admitted.
    let r = c
        .reserve(ask("plan", 2, s, s + 45))
        .await
        .expect("admitted")
        .into_inner()
        .reservation
        .unwrap();
    assert_eq!(r.state(), St::Held);
    assert_eq!((r.site.as_str(), r.processors), ("plan", 2));
    let (start, end) = (r.start_time, r.end_time);

    // B (2 processors for 30 s) would overlap the reservation if it started now: planned after
    // its end, when A still holds the other two.
    let b = submit_all(&mut c, vec![job(2, 30, "echo b")]).await[0];
    let bj = until(&mut c, b, 20, "planned", |j| j.planned_start.is_some()).await;
    assert_eq!(bj.state(), JobState::Queued);
    assert_eq!(bj.site.as_deref(), Some("plan"));
    assert_eq!(
        bj.planned_start,
        Some(end),
        "B is planned at the reservation's end"
    );

    // Jobs for the reservation: refused at the door when they cannot fit it.
    let mut inside = job(2, 20, "date +%s");
    inside.reservation = Some(r.id);
    let mut too_long = inside.clone();
    too_long.estimate_s = 100;
    let mut unknown = inside.clone();
    unknown.reservation = Some(r.id + 100);
    let mut too_wide = inside.clone();
    too_wide.processors = 3;
    for (spec, code, text) in [
        (too_long, Code::FailedPrecondition, "cannot end by"),
        (unknown, Code::NotFound, "is not known"),
        (too_wide, Code::FailedPrecondition, "holds 2"),
    ] {
        let e = c
            .submit(v1::SubmitRequest { spec: Some(spec) })
            .await
            .expect_err("refused");
        assert_eq!(e.code(), code, "{e:?}");
        assert!(e.message().contains(text), "{e:?}");
    }
    let in_r = submit_all(&mut c, vec![inside]).await[0];
    let cj = until(&mut c, in_r, 20, "queued", |j| {
        j.state() == JobState::Queued
    })
    .await;
    assert_eq!(cj.site.as_deref(), Some("plan"));
    let listed = reservations(&mut c).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].jobs, vec![in_r]);

    // kill -9 of the local scheduler, then of the meta-scheduler, before the reservation starts.
    assert!(
        now() < start - 5,
        "the set-up took too long to test a restart"
    );
    g.kill_local(0);
    g.restart_local(0);
    let addr = g.meta_addr.clone();
    g.kill_meta();
    g.start_meta(Some(&addr));
    g.ready().await;
    let mut c = g.client().await;
    let listed = reservations(&mut c).await;
    assert_eq!(listed.len(), 1, "the reservation survives: {listed:?}");
    assert_eq!(
        (listed[0].id, listed[0].start_time, listed[0].end_time),
        (r.id, start, end)
    );
    // A still runs where it ran; B still waits for the reservation's end.
    let aj = get(&mut c, a).await;
    assert_eq!(
        (aj.state(), aj.start_time),
        (JobState::Running, Some(a_start))
    );
    let bj = until(&mut c, b, 20, "planned again", |j| {
        j.planned_start.is_some()
    })
    .await;
    assert_eq!(
        bj.planned_start,
        Some(end),
        "still planned after the reservation"
    );

    // The job inside starts when the reservation does, and ends inside it.
    let done = wait_ended(&mut c, &[in_r], Duration::from_secs(60)).await;
    let cj = done.into_iter().find(|j| j.id == in_r).unwrap();
    assert_eq!(cj.state(), JobState::Completed, "{cj:?}");
    let started = cj.start_time.unwrap();
    assert!(
        (start..start + 3).contains(&started),
        "started at {started}, the reservation at {start}"
    );
    // Meanwhile B has not started: the reservation holds its processors until `end`.
    let bj = get(&mut c, b).await;
    assert_eq!(bj.state(), JobState::Queued, "{bj:?}");

    // Cancelled: B starts at once on the processors it held.
    let gone = c
        .cancel_reservation(v1::CancelReservationRequest {
            id: r.id,
            reason: "done".into(),
        })
        .await
        .expect("cancelled")
        .into_inner()
        .reservation
        .unwrap();
    assert_eq!(gone.id, r.id);
    let cancelled_at = now();
    let bj = until(&mut c, b, 20, "running", |j| j.state() >= JobState::Running).await;
    assert!(
        bj.start_time.unwrap() < end && bj.start_time.unwrap() <= cancelled_at + 3,
        "B started at {:?}, cancelled at {cancelled_at}, reservation end {end}",
        bj.start_time
    );
    assert!(reservations(&mut c).await.is_empty());
    let e = c
        .cancel_reservation(v1::CancelReservationRequest {
            id: r.id,
            reason: String::new(),
        })
        .await
        .expect_err("gone");
    assert_eq!(e.code(), Code::NotFound);
    c.cancel_job(v1::CancelJobRequest {
        job_id: a,
        reason: "test over".into(),
    })
    .await
    .expect("cancel A");
    wait_ended(&mut c, &[a, b], Duration::from_secs(30)).await;
}

/// A heterogeneous-cluster site (Flexible Backfilling over two machines and one floating licence
/// copy): a reservation of a machine's processors and the licence copy is admitted on the
/// machine the site picks (shown in the answer), a second one wanting the copy at the same time
/// is refused with the licence named, a job needing the licence outside the reservation waits
/// while the reservation holds the copy, the job submitted into the reservation runs inside it on
/// its machine, the reservation (machine and licence) survives a kill -9 of the local
/// scheduler, and once it is cancelled the held-back job starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heterogeneous_site_reserves_a_machine_and_a_licence_copy() {
    let mut site = SiteSpec::new("het", "fb-mod", 2, 2);
    site.licences = vec![("matlab".into(), 1)];
    let mut g = LiveGrid::start(test_bins!(), vec![site], "");
    g.ready().await;
    let mut c = g.client().await;
    let s = now() + 12;
    let mut want = ask("het", 2, s, s + 60);
    want.reservation.as_mut().unwrap().licences = vec!["matlab".into()];
    let r = c
        .reserve(want.clone())
        .await
        .expect("admitted")
        .into_inner()
        .reservation
        .unwrap();
    assert_eq!(
        r.machine, "het-m1",
        "the site picks the first machine: {r:?}"
    );
    assert_eq!(r.licences, ["matlab"]);
    assert_eq!(
        r.machine_benchmark, 1,
        "the site says how fast the machine is"
    );
    // A job measured on a machine twice as fast takes 80 s there for its 40 s estimate: refused
    // at the meta-scheduler's door, not accepted and then refused by the site.
    let mut slow = job(1, 40, "echo z");
    slow.benchmark = Some(2);
    slow.reservation = Some(r.id);
    let e = c
        .submit(v1::SubmitRequest { spec: Some(slow) })
        .await
        .expect_err("80 s on het-m1 exceed the 60 s reserved");
    assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
    assert!(
        e.message().contains("(80 s on the reserved machine)"),
        "{e:?}"
    );
    // The one copy is held over [s, s + 60): a second request for it is refused, by name.
    let mut again = want.clone();
    let a = again.reservation.as_mut().unwrap();
    a.start_time = s + 30;
    a.end_time = s + 40;
    a.processors = 1;
    let e = c.reserve(again).await.expect_err("no copy left");
    assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
    assert!(
        e.message().contains("licence matlab: 0 of its copies free"),
        "{e:?}"
    );
    let mut unknown = want.clone();
    unknown.reservation.as_mut().unwrap().licences = vec!["maple".into()];
    let e = c.reserve(unknown).await.expect_err("unknown licence");
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert!(e.message().contains("reservation.licences[0]"), "{e:?}");

    // X needs the licence for 100 s: it would hold the copy into the reservation, so it waits.
    let mut x = job(1, 100, "echo x");
    x.licences = vec!["matlab".into()];
    let x = submit_all(&mut c, vec![x]).await[0];
    // Y runs inside the reservation with the reserved copy.
    let mut y = job(2, 20, "echo y");
    y.licences = vec!["matlab".into()];
    y.reservation = Some(r.id);
    let y = submit_all(&mut c, vec![y]).await[0];
    until(&mut c, y, 20, "queued at het", |j| {
        j.state() == JobState::Queued && j.site.as_deref() == Some("het")
    })
    .await;

    assert!(now() < s - 3, "the set-up took too long to test a restart");
    g.kill_local(0);
    g.restart_local(0);
    g.ready().await;
    let mut c = g.client().await;
    let listed = reservations(&mut c).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(
        (listed[0].machine.as_str(), listed[0].licences.clone()),
        ("het-m1", vec!["matlab".to_string()])
    );

    let done = wait_ended(&mut c, &[y], Duration::from_secs(60)).await;
    let yj = done.iter().find(|j| j.id == y).expect("Y");
    assert_eq!(yj.state(), JobState::Completed, "{yj:?}");
    let started = yj.start_time.unwrap();
    assert!(
        (s..s + 3).contains(&started),
        "Y started at {started}, the reservation at {s}"
    );
    assert_eq!(yj.machine.as_deref(), Some("het-m1"), "{yj:?}");
    let xj = get(&mut c, x).await;
    assert_eq!(xj.state(), JobState::Queued, "X waits for the copy: {xj:?}");

    c.cancel_reservation(v1::CancelReservationRequest {
        id: r.id,
        reason: "done".into(),
    })
    .await
    .expect("cancelled");
    let cancelled_at = now();
    let xj = until(&mut c, x, 20, "running", |j| j.state() >= JobState::Running).await;
    assert!(
        xj.start_time.unwrap() <= cancelled_at + 3,
        "X started at {:?}, the reservation was cancelled at {cancelled_at}",
        xj.start_time
    );
    wait_ended(&mut c, &[x], Duration::from_secs(30)).await;
}

/// Owners and lost answers, on a secured grid (TLS, tokens): alice's reservation is hers — bob
/// does not see it, cannot cancel it or submit into it (PERMISSION_DENIED), the administrator
/// sees it. A request the site never answers (its local scheduler is down) is UNAVAILABLE and
/// listed PENDING; it stays PENDING across a kill -9 of the meta-scheduler, and once the site is
/// back the meta-scheduler takes it back there and forgets it, leaving alice's held one alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reservation_is_its_owners_and_an_unanswered_one_is_taken_back() {
    let sites = vec![SiteSpec::new("plan", "planning-fcfs", 1, 4)];
    let mut g = LiveGrid::start_with(test_bins!(), sites, "", true);
    g.ready().await;
    let mut alice = g.client_as(Some("alice-token")).await;
    let mut bob = g.client_as(Some("bob-token")).await;
    let mut root = g.client_as(Some("root-token")).await;
    let s = now() + 600;
    let mut mine = ask("plan", 2, s, s + 60);
    mine.reservation.as_mut().unwrap().user = String::new(); // the token's user
    let r = alice
        .reserve(mine)
        .await
        .expect("admitted")
        .into_inner()
        .reservation
        .unwrap();
    assert_eq!(r.user, "alice");
    assert!(reservations(&mut bob).await.is_empty(), "bob sees none");
    assert_eq!(
        reservations(&mut root).await.len(),
        1,
        "the administrator sees it"
    );
    let e = bob
        .cancel_reservation(v1::CancelReservationRequest {
            id: r.id,
            reason: String::new(),
        })
        .await
        .expect_err("not bob's");
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
    let mut into = job(1, 30, "true");
    into.user = "bob".into();
    into.reservation = Some(r.id);
    let e = bob
        .submit(v1::SubmitRequest { spec: Some(into) })
        .await
        .expect_err("not bob's");
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");

    // The site's local scheduler is down: the request is never answered.
    g.kill_local(0);
    let mut lost = ask("plan", 1, s + 100, s + 200);
    lost.reservation.as_mut().unwrap().user = String::new();
    let e = alice.reserve(lost).await.expect_err("unanswered");
    assert_eq!(e.code(), Code::Unavailable, "{e:?}");
    let listed = reservations(&mut alice).await;
    let pending: Vec<_> = listed.iter().filter(|x| x.state() == St::Pending).collect();
    assert_eq!(pending.len(), 1, "{listed:?}");
    let lost_id = pending[0].id;
    let addr = g.meta_addr.clone();
    g.kill_meta();
    g.start_meta(Some(&addr));
    let mut alice = g.client_as(Some("alice-token")).await;
    let listed = reservations(&mut alice).await;
    assert!(
        listed
            .iter()
            .any(|x| x.id == lost_id && x.state() == St::Pending),
        "still pending after the restart: {listed:?}"
    );
    g.restart_local(0);
    g.ready().await;
    let t = Instant::now();
    loop {
        let listed = reservations(&mut alice).await;
        if !listed.iter().any(|x| x.id == lost_id) {
            assert_eq!(listed.len(), 1, "{listed:?}");
            assert_eq!((listed[0].id, listed[0].state()), (r.id, St::Held));
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "the unanswered reservation was not taken back: {listed:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
