//! The LCG experiment's platform reading and home-site baseline on hand-made jobs.

use super::*;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn job(id: u64, submit: Time, run: i64, site: u32) -> Job {
    let mut j = Job::new(id, submit, 1, run + 5, run);
    j.partition = Some(site);
    j
}

/// `n` one-processor jobs over `sites` partitions (numbered 10, 20, ...), skewed towards the
/// first sites, with bursts so that sites queue when they are smaller than their peak.
fn random_jobs(n: u64, sites: u32, seed: u64) -> Vec<Job> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut t = 100;
    (1..=n)
        .map(|id| {
            t += rng.random_range(0..8);
            let s = rng.random_range(0..sites).min(rng.random_range(0..sites));
            job(id, t, rng.random_range(0..200), 10 * (s + 1))
        })
        .collect()
}

#[test]
fn peaks_and_platform_by_hand() {
    let jobs = vec![
        job(1, 50, 10, 5),
        job(2, 55, 10, 5),
        job(3, 60, 10, 5), // starts when job 1 ends: the peak stays 2
        job(4, 61, 0, 9),  // zero length still needs a processor
        job(5, 61, 3, 9),
    ];
    let w = LcgWorkload::from_jobs(jobs).unwrap();
    assert_eq!(w.sites, vec![5, 9]);
    assert_eq!(w.peaks, vec![2, 2]);
    assert_eq!(w.jobs[0].submit, 0, "submissions start at 0");
    assert_eq!(w.jobs[4].submit, 11);
    let p = w.platform(1.0);
    p.validate().unwrap();
    assert_eq!(p.clusters.len(), 2);
    assert_eq!(p.machines[0].procs, 2);
    assert_eq!(p.clusters[1].name, "site9");
    let half = w.platform(0.5);
    assert_eq!(
        half.machines.iter().map(|m| m.procs).collect::<Vec<_>>(),
        vec![1, 1]
    );
    let low = w.platform(0.01);
    assert!(low.machines.iter().all(|m| m.procs == 1), "never empty");
}

#[test]
fn a_job_without_site_is_an_error() {
    let mut j = job(1, 0, 5, 1);
    j.partition = None;
    let e = LcgWorkload::from_jobs(vec![j]).unwrap_err();
    assert!(e.to_string().contains("no partition"), "{e}");
}

#[test]
fn home_site_sends_every_job_to_its_partition() {
    let w = LcgWorkload::from_jobs(random_jobs(2_000, 6, 3)).unwrap();
    let mut per_site = vec![0u64; w.sites.len()];
    for j in &w.jobs {
        let c = w.home_map()[&j.partition.unwrap()];
        per_site[c.index()] += 1;
    }
    for f in [0.5, 1.0] {
        let o = run_strategy(&w, f, HOME_SITE, 1).unwrap();
        assert_eq!(o.dispatched, per_site, "f = {f}");
        let m: HashMap<_, _> = o.metrics.iter().copied().collect();
        assert_eq!(m["moved_pct"], 0.0);
        assert_eq!(m["finished"], 2_000.0);
        if f == 1.0 {
            // Every site is as large as its peak: nobody waits at home.
            assert_eq!(m["mean_wait"], 0.0);
        } else {
            assert!(m["mean_wait"] > 0.0, "half-size sites queue");
        }
    }
    let mut d = HomeSite::new(w.home_map());
    let mut stray = job(99, 0, 5, 12345);
    assert!(matches!(
        d.dispatch(0, &stray, 1, &GridState::default()),
        Placement::Refuse(_)
    ));
    stray.partition = Some(30);
    assert_eq!(
        d.dispatch(0, &stray, 1, &GridState::default()),
        Placement::Cluster(ClusterId(2))
    );
}

#[test]
fn every_strategy_ends_every_job_and_reports_its_spread() {
    let w = LcgWorkload::from_jobs(random_jobs(1_500, 5, 8)).unwrap();
    for s in strategies() {
        let o = run_strategy(&w, 0.5, &s, 1).unwrap();
        let m: HashMap<_, _> = o.metrics.iter().copied().collect();
        assert_eq!(m["finished"], 1_500.0, "{s}");
        assert_eq!(m["rejected"], 0.0, "{s}");
        assert_eq!(o.dispatched.iter().sum::<u64>(), 1_500, "{s}");
        assert!(
            m["max_share_ratio"] >= 1.0 - 1e-9,
            "{s}: some site is at or above its share"
        );
        assert!((0.0..=100.0).contains(&m["imbalance_pct"]), "{s}");
        assert!(m["awrt"] >= m["mean_wait"], "{s}");
    }
    // Round robin spreads jobs evenly whatever the site sizes.
    let rr = run_strategy(&w, 0.5, "round-robin", 1).unwrap();
    assert_eq!(rr.dispatched, vec![300; 5]);
    assert!(run_strategy(&w, 0.5, "no-such", 1).is_err());
}
