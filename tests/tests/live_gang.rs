//! A gang-scheduled site on real processes (Zhang et al. §5–§6.1): two jobs that each need the
//! whole machine share it at multiprogramming level 2, taking turns of one time slice — the agent
//! stops one job's process group (SIGSTOP) and continues the other's (SIGCONT) at every slice
//! boundary. Each job ticks every tenth of a second by its own clock; the ticks show the turns:
//! the jobs never run at once, they alternate, each turn lasts about a slice, and each job does
//! all its work once, with its progress kept across its turns.

use gridsched_proto::v1::{self, JobState};
use gridsched_tests::live::{
    LiveGrid, SiteSpec, get_job, scrape, stdout_of, submit_all, wait_ended,
};
use std::time::Duration;

/// The time slice of the site, seconds.
const SLICE_S: f64 = 2.0;
/// Ticks each job makes (a tenth of a second each, plus the cost of `date`).
const TICKS: usize = 40;

/// A job of `user` on both processors ticking `TICKS` times.
fn ticker(user: &str) -> v1::JobSpec {
    let script = format!(
        "i=0; while [ $i -lt {TICKS} ]; do i=$((i+1)); echo \"$i $(date +%s%N)\"; sleep 0.1; done"
    );
    v1::JobSpec {
        user: user.into(),
        processors: 2,
        estimate_s: 120,
        command: Some(v1::Command {
            program: "sh".into(),
            args: vec!["-c".into(), script],
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// `(tick, unix seconds)` of each line a job printed.
fn ticks(out: &str) -> Vec<(usize, f64)> {
    out.lines()
        .filter_map(|l| {
            let (a, b) = l.split_once(' ')?;
            Some((a.parse().ok()?, b.parse::<f64>().ok()? / 1e9))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_whole_machine_jobs_take_turns_of_one_slice() {
    let site = SiteSpec {
        time_scale: 1.0,
        policy_extra: format!("gang = {{ mpl = 2, slice = {} }}", SLICE_S as i64),
        ..SiteSpec::new("g", "gs", 1, 2)
    };
    let g = LiveGrid::start(gridsched_tests::test_bins!(), vec![site], "");
    g.ready().await;
    let mut c = g.client().await;
    let ids = submit_all(&mut c, vec![ticker("a"), ticker("b")]).await;
    wait_ended(&mut c, &ids, Duration::from_secs(120)).await;
    let mut all: Vec<(f64, usize, usize)> = Vec::new();
    for (k, &id) in ids.iter().enumerate() {
        let job = get_job(&mut c, id).await;
        assert_eq!(job.state(), JobState::Completed, "{job:?}");
        let t = ticks(&stdout_of(&g, "g-m1", id));
        let numbers: Vec<usize> = t.iter().map(|x| x.0).collect();
        assert_eq!(
            numbers,
            (1..=TICKS).collect::<Vec<_>>(),
            "job {id}: each tick once"
        );
        all.extend(t.into_iter().map(|(n, at)| (at, k, n)));
    }
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    // Turns: maximal runs of consecutive ticks of one job.
    let mut turns: Vec<(usize, f64, f64)> = Vec::new();
    for &(at, k, _) in &all {
        match turns.last_mut() {
            Some(t) if t.0 == k => t.2 = at,
            _ => turns.push((k, at, at)),
        }
    }
    let shown: Vec<String> = turns
        .iter()
        .map(|(k, a, b)| format!("{k}: {:.2} s", b - a))
        .collect();
    eprintln!("turns (job: length): {shown:?}");
    assert!(turns.len() >= 4, "the jobs take turns: {shown:?}");
    // Each full turn (not the first, cut by the second job's arrival, nor the last two, when one
    // job has finished) lasts about one slice: a slice less the time between two ticks, up to a
    // slice and the lag of a pass.
    for t in &turns[1..turns.len() - 2] {
        let d = t.2 - t.1;
        assert!(
            (SLICE_S - 0.6..=SLICE_S + 0.6).contains(&d),
            "a turn of {d:.2} s, the slice is {SLICE_S} s: {shown:?}"
        );
    }
    // While one job runs, the other is stopped: between its turns a job's clock shows a gap of
    // about a slice.
    for k in 0..2 {
        let mine: Vec<f64> = all.iter().filter(|x| x.1 == k).map(|x| x.0).collect();
        let longest = mine.windows(2).map(|w| w[1] - w[0]).fold(0.0, f64::max);
        assert!(
            longest >= SLICE_S - 0.6,
            "job {k}: longest gap {longest:.2} s"
        );
    }
    let metrics = scrape(&g.metrics[1]);
    let suspensions = metrics
        .lines()
        .find(|l| l.starts_with("gridsched_local_preemptions_total{kind=\"suspend\"}"))
        .and_then(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .unwrap_or(0);
    assert!(suspensions + 1 >= turns.len() as u64 - 1, "{metrics}");
    assert!(
        metrics.contains("gridsched_local_policy_events{counter=\"slices\"}"),
        "{metrics}"
    );
}
