//! A grid with a Slurm-backed site: real jobs through the meta-scheduler, a local scheduler with
//! `backend = "slurm"` and the single-host Slurm of `scripts/slurm.sh` (controller, node daemon,
//! REST daemon). Completion with its output, a failure's exit code, cancellation, the wall-time
//! kill, Slurm's licence limit and its pending reason in `explain`; restarts of the local
//! scheduler, of each Slurm daemon and of the meta-scheduler with jobs in flight (nothing lost,
//! nothing submitted twice);
//! and a Slurm that goes down (the site is marked down, its unclaimed job runs at the native site,
//! and is cancelled in Slurm unstarted once Slurm is back).
//!
//! The tests share one Slurm cluster of 16 CPUs, so they take turns.

use gridsched_proto::v1::{self, BlockerKind, JobState};
use gridsched_tests::live::{
    Client, LiveGrid, SiteSpec, all_jobs, cancel_once_running, get_job, sh_job, submit_all,
    wait_ended,
};
use gridsched_tests::slurm::{Cleanup, Slurm, cluster};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A Slurm-backed site `hpc` (the host's node, 16 CPUs, two `matlab` copies) with `extra` in its
/// `[slurm]` section.
fn slurm_site(slurm: &Slurm, dir: &std::path::Path, extra: &str) -> SiteSpec {
    let token = slurm.token_file(&dir.join("hpc.jwt"));
    let work = std::path::PathBuf::from(&slurm.dir).join("work/tests");
    SiteSpec {
        machines: vec![("localhost".into(), 16)],
        licences: vec![("matlab".into(), 2)],
        slurm: Some(slurm.section(&token, &work, extra)),
        ..SiteSpec::new("hpc", "fcfs", 1, 16)
    }
}

fn grid(sites: Vec<SiteSpec>) -> (LiveGrid, tempfile::TempDir) {
    let scratch = tempfile::tempdir().unwrap();
    let g = LiveGrid::start(
        gridsched_tests::test_bins!(),
        sites,
        "[dispatch]\nstrategy = \"round-robin\"\n",
    );
    (g, scratch)
}

fn state_of(jobs: &[v1::Job], id: u64) -> &v1::Job {
    jobs.iter().find(|j| j.id == id).expect("the job")
}

async fn wait_state(c: &mut Client, id: u64, st: JobState, secs: u64) -> v1::Job {
    let until = Instant::now() + Duration::from_secs(secs);
    loop {
        let j = get_job(c, id).await;
        if j.state() == st {
            return j;
        }
        assert!(Instant::now() < until, "job {id} never {st:?}: {j:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The Slurm jobs of grid `g`'s site `hpc`.
fn slurm_jobs(slurm: &Slurm, g: &LiveGrid) -> BTreeMap<u64, Vec<(u32, String)>> {
    slurm.jobs_of(&Slurm::tag("hpc", &g.path("hpc/state")))
}

/// Each grid job of `ids` has exactly one Slurm job.
fn one_slurm_job_each(
    slurm: &Slurm,
    g: &LiveGrid,
    ids: &[u64],
) -> BTreeMap<u64, Vec<(u32, String)>> {
    let jobs = slurm_jobs(slurm, g);
    for id in ids {
        let n = jobs.get(id).map_or(0, Vec::len);
        assert_eq!(n, 1, "grid job {id} has {n} Slurm jobs: {:?}", jobs.get(id));
    }
    jobs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_complete_fail_are_cancelled_time_out_and_share_licences_on_a_slurm_site() {
    let Some(slurm) = cluster() else { return };
    let _turn = TURN.lock().await;
    slurm.cancel_all("hpc");
    let _cleanup = Cleanup(slurm.clone(), "hpc");
    let scratch = tempfile::tempdir().unwrap();
    let (g, _s) = grid(vec![slurm_site(&slurm, scratch.path(), "")]);
    g.ready().await;
    let mut c = g.client().await;

    // The first asks for 64 MiB: Slurm gets it as the job's memory (`--mem`).
    let hello = v1::JobSpec {
        memory_kb: Some(64 * 1024),
        ..sh_job(2, 60, "echo hello from $GRIDSCHED_JOB_ID; echo oops >&2")
    };
    let ids = submit_all(
        &mut c,
        vec![
            hello,
            sh_job(1, 60, "exit 3"),
            sh_job(1, 60, "sleep 60"),
            sh_job(1, 2, "sleep 60"),
        ],
    )
    .await;
    let (ok, failed, cancelled, overrun) = (ids[0], ids[1], ids[2], ids[3]);
    cancel_once_running(&mut c, cancelled, Duration::from_secs(20)).await;
    let jobs = wait_ended(&mut c, &ids, Duration::from_secs(30)).await;

    let j = state_of(&jobs, ok);
    assert_eq!(j.state(), JobState::Completed, "{j:?}");
    assert_eq!(j.site.as_deref(), Some("hpc"));
    assert_eq!(j.machine.as_deref(), Some("localhost"));
    let (start, end) = (j.start_time.unwrap(), j.end_time.unwrap());
    assert!(start <= end && start >= j.submit_time.unwrap(), "{j:?}");
    let out = slurm.dir.join("work/tests").join(ok.to_string());
    assert_eq!(
        std::fs::read_to_string(out.join("stdout")).unwrap(),
        format!("hello from {ok}\n")
    );
    assert_eq!(
        std::fs::read_to_string(out.join("stderr")).unwrap(),
        "oops\n"
    );
    // The same, through the grid (`gridctl output`): Slurm wrote it where the site serves it.
    for (stream, want) in [
        (v1::OutputStream::Stdout, format!("hello from {ok}\n")),
        (v1::OutputStream::Stderr, "oops\n".to_string()),
    ] {
        let req = v1::OutputRequest {
            job_id: ok,
            stream: stream as i32,
            ..Default::default()
        };
        let got = gridsched_tests::live::read_output(&mut c, req)
            .await
            .unwrap();
        assert_eq!(String::from_utf8(got).unwrap(), want, "{stream:?}");
    }

    let (sid, _) = slurm_jobs(&slurm, &g)[&ok][0].clone();
    let record = std::process::Command::new("scontrol")
        .args(["-o", "show", "job", &sid.to_string()])
        .env("SLURM_CONF", slurm.dir.join("slurm.conf"))
        .output()
        .expect("scontrol");
    let record = String::from_utf8_lossy(&record.stdout);
    assert!(record.contains(" MinMemoryNode=64M "), "{record}");

    let j = state_of(&jobs, failed);
    assert_eq!(
        (j.state(), j.exit_code),
        (JobState::Failed, Some(3)),
        "{j:?}"
    );
    let j = state_of(&jobs, cancelled);
    assert_eq!(j.state(), JobState::Cancelled, "{j:?}");
    let j = state_of(&jobs, overrun);
    assert_eq!(j.state(), JobState::Killed, "{j:?}");
    assert_eq!(j.reason, "killed at its wall-time limit of 2 s");
    // Start and end are whole seconds, read at different moments (the start when the site
    // sees the job running, the end from Slurm's record): up to a second may be lost between
    // them.
    let ran = j.end_time.unwrap() - j.start_time.unwrap();
    assert!((1..=5).contains(&ran), "killed {ran} s after its start");

    // Two copies of `matlab`: four jobs needing it run two at a time, and the waiting ones say
    // why in Slurm's words.
    let mut lic = sh_job(1, 60, "sleep 5");
    lic.licences = vec!["matlab".into()];
    let ids = submit_all(&mut c, vec![lic.clone(), lic.clone(), lic.clone(), lic]).await;
    let until = Instant::now() + Duration::from_secs(15);
    let mut seen = String::new();
    'look: while Instant::now() < until {
        for &id in &ids {
            let e = c
                .explain(v1::ExplainRequest { job_id: id })
                .await
                .unwrap()
                .into_inner();
            if let Some(b) = e
                .blockers
                .iter()
                .find(|b| b.kind() == BlockerKind::BatchSystem && b.detail.contains("Licenses"))
            {
                seen = format!("{}: {}", e.text, b.detail);
                break 'look;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        seen.contains("Slurm: Licenses"),
        "no job waited on licences: {seen}"
    );
    let jobs = wait_ended(&mut c, &ids, Duration::from_secs(30)).await;
    let spans: Vec<(i64, i64)> = ids
        .iter()
        .map(|&id| {
            let j = state_of(&jobs, id);
            assert_eq!(j.state(), JobState::Completed, "{j:?}");
            (j.start_time.unwrap(), j.end_time.unwrap())
        })
        .collect();
    for &(s, _) in &spans {
        let at_once = spans.iter().filter(|&&(a, b)| a <= s && s < b).count();
        assert!(at_once <= 2, "{at_once} licence holders at {s}: {spans:?}");
    }
    let mut all: Vec<u64> = all_jobs(&mut c).await.iter().map(|j| j.id).collect();
    all.sort_unstable();
    one_slurm_job_each(&slurm, &g, &all);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slurm_site_loses_and_repeats_nothing_across_restarts() {
    let Some(slurm) = cluster() else { return };
    let _turn = TURN.lock().await;
    slurm.cancel_all("hpc");
    let _cleanup = Cleanup(slurm.clone(), "hpc");
    let scratch = tempfile::tempdir().unwrap();
    let (mut g, _s) = grid(vec![slurm_site(&slurm, scratch.path(), "")]);
    g.ready().await;
    let mut c = g.client().await;
    let mut every = Vec::new();

    // The local scheduler killed (-9) while it hands jobs to Slurm.
    let ids = submit_all(&mut c, (0..8).map(|_| sh_job(4, 60, "sleep 2")).collect()).await;
    g.kill_local(0);
    tokio::time::sleep(Duration::from_millis(500)).await;
    g.restart_local(0);
    every.extend(&ids);
    // Each Slurm daemon killed with jobs running and waiting, then started again.
    for daemon in ["slurmctld", "slurmrestd", "slurmd"] {
        let ids = submit_all(&mut c, (0..8).map(|_| sh_job(4, 60, "sleep 3")).collect()).await;
        wait_state(&mut c, ids[0], JobState::Running, 20).await;
        slurm.kill(daemon, "TERM");
        tokio::time::sleep(Duration::from_secs(1)).await;
        slurm.start();
        every.extend(&ids);
    }
    // The meta-scheduler killed (-9) with jobs waiting and running at the Slurm site.
    let ids = submit_all(&mut c, (0..8).map(|_| sh_job(4, 60, "sleep 3")).collect()).await;
    wait_state(&mut c, ids[0], JobState::Running, 20).await;
    let addr = g.meta_addr.clone();
    g.kill_meta();
    tokio::time::sleep(Duration::from_millis(500)).await;
    g.start_meta(Some(&addr));
    let mut c = g.client().await;
    every.extend(&ids);
    let jobs = wait_ended(&mut c, &every, Duration::from_secs(90)).await;
    for id in &every {
        let j = state_of(&jobs, *id);
        assert_eq!(j.state(), JobState::Completed, "{j:?}");
    }
    one_slurm_job_each(&slurm, &g, &every);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_down_slurm_sends_its_unclaimed_job_elsewhere() {
    let Some(slurm) = cluster() else { return };
    let _turn = TURN.lock().await;
    slurm.cancel_all("hpc");
    let _cleanup = Cleanup(slurm.clone(), "hpc");
    let scratch = tempfile::tempdir().unwrap();
    let native = SiteSpec {
        time_scale: 1.0,
        ..SiteSpec::new("alpha", "easy", 1, 2)
    };
    let hpc = slurm_site(
        &slurm,
        scratch.path(),
        "release_ahead_cpus = 0\ndown_after_ms = 1500\n",
    );
    let (g, _s) = grid(vec![hpc, native]);
    g.ready().await;
    let mut c = g.client().await;

    // Round robin: the hog to hpc, a short job to alpha, then (once the hog runs) the waiting
    // job to hpc, where the hog leaves it no room: it stays held in Slurm, unclaimed.
    let ids = submit_all(
        &mut c,
        vec![sh_job(16, 300, "sleep 300"), sh_job(1, 60, "true")],
    )
    .await;
    let hog = ids[0];
    wait_state(&mut c, hog, JobState::Running, 20).await;
    let waiting = submit_all(&mut c, vec![sh_job(2, 60, "echo where am I")]).await[0];
    let w = wait_state(&mut c, waiting, JobState::Queued, 20).await;
    assert_eq!(w.site.as_deref(), Some("hpc"));
    // The site hands it to Slurm (held) a moment after it is queued there; explain shows the
    // site's status as last polled.
    let limit = Instant::now() + Duration::from_secs(10);
    loop {
        let e = c
            .explain(v1::ExplainRequest { job_id: waiting })
            .await
            .unwrap()
            .into_inner();
        if e.text.contains("until the cluster has room") {
            break;
        }
        assert!(Instant::now() < limit, "{}", e.text);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    slurm.kill("slurmctld", "TERM");
    let down = Instant::now();
    let j = wait_state(&mut c, waiting, JobState::Completed, 30).await;
    assert_eq!(j.site.as_deref(), Some("alpha"), "{j:?}");
    let moved = down.elapsed();
    let later = submit_all(&mut c, vec![sh_job(1, 60, "true")]).await;
    let j = wait_state(&mut c, later[0], JobState::Completed, 20).await;
    assert_eq!(j.site.as_deref(), Some("alpha"), "{j:?}");

    slurm.start();
    let sites = || async {
        let mut c = g.client().await;
        c.list_sites(v1::ListSitesRequest {
            site: Some("hpc".into()),
            include_resources: false,
        })
        .await
        .unwrap()
        .into_inner()
    };
    let until = Instant::now() + Duration::from_secs(30);
    while !sites().await.sites[0].clusters[0].reachable {
        assert!(Instant::now() < until, "hpc never reachable again");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The withdrawn job's held Slurm job is cancelled unstarted; the hog ran on.
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let jobs = slurm_jobs(&slurm, &g);
        let w = jobs.get(&waiting).cloned().unwrap_or_default();
        if w.len() == 1 && w[0].1 == "CANCELLED" {
            assert_eq!(jobs[&hog][0].1, "RUNNING", "{jobs:?}");
            break;
        }
        assert!(Instant::now() < until, "the withdrawn job in Slurm: {w:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    c.cancel_job(v1::CancelJobRequest {
        job_id: hog,
        reason: "done".into(),
    })
    .await
    .unwrap();
    let j = wait_state(&mut c, hog, JobState::Cancelled, 20).await;
    assert_eq!(j.site.as_deref(), Some("hpc"));
    eprintln!("the unclaimed job ran at alpha {moved:?} after slurmctld was killed");
}
