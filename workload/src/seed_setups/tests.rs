//! Generator tests: determinism, the ranges and shares of the tables, pools and runnability.

use super::*;

#[test]
fn same_seed_same_platform_and_jobs() {
    let s = SetupParams::table1();
    let p = s.platform(3);
    assert_eq!(p, s.platform(3));
    assert_ne!(p, s.platform(4));
    assert_eq!(s.jobs(&p, 12.0, 3), s.jobs(&p, 12.0, 3));
    assert_ne!(s.jobs(&p, 12.0, 3), s.jobs(&p, 12.0, 4));
    p.validate().unwrap();
}

#[test]
fn table1_ranges_and_shares() {
    let s = SetupParams::table1();
    let p = s.platform(1);
    assert_eq!(p.machines.len(), 100);
    assert_eq!(p.clusters[0].pools.len(), 20);
    assert!(!p.clusters[0].space_sharing);
    for m in &p.machines {
        assert!((1..=8).contains(&m.procs) && (100..=500).contains(&m.benchmark));
    }
    let mut suitable = 0usize;
    for pool in &p.clusters[0].pools {
        let n = pool.machines.len();
        suitable += n;
        let lo = ((0.5 * n as f64).round() as u32).max(1);
        let hi = ((0.7 * n as f64).round() as u32).max(1);
        assert!((lo..=hi).contains(&pool.copies), "{} of {n}", pool.copies);
    }
    let share = suitable as f64 / 2_000.0;
    assert!((share - 0.9).abs() < 0.03, "suitability {share}");

    let jobs = s.jobs(&p, 12.0, 1);
    assert_eq!(jobs.len(), 1_000);
    let no_deadline = jobs.iter().filter(|j| j.deadline.is_none()).count() as f64 / 1_000.0;
    assert!((no_deadline - 0.3).abs() < 0.05, "{no_deadline}");
    let lic_per_job =
        jobs.iter().map(|j| j.licences.len()).sum::<usize>() as f64 / jobs.len() as f64;
    assert!(
        (lic_per_job - 6.0).abs() < 0.6,
        "≈ 30 % of 20: {lic_per_job}"
    );
    let span = jobs.last().unwrap().submit as f64;
    assert!(
        (span / 999.0 - 12.0).abs() < 1.5,
        "mean inter-arrival {}",
        span / 999.0
    );
    for j in &jobs {
        assert!((500..=3_000).contains(&j.estimate));
        assert_eq!(j.runtime, Some(j.estimate), "estimates are exact");
        assert!((1..=8).contains(&j.procs));
        assert!((100..=500).contains(&j.benchmark.unwrap()));
        if let Some(d) = j.deadline {
            assert!((30..=250).contains(&(d - j.submit - j.estimate)));
        }
        assert!(runnable(&p, j));
        j.validate().unwrap();
    }
    assert!(jobs.windows(2).all(|w| w[0].submit <= w[1].submit));
}

#[test]
fn other_tables() {
    let s = SetupParams::table6();
    let p = s.platform(9);
    let sizes: Vec<usize> = p.clusters.iter().map(|c| c.machines.len()).collect();
    assert_eq!(sizes, vec![120, 60, 30, 15]);
    assert!(p.clusters.iter().all(|c| c.space_sharing));
    assert!(
        p.clusters[3].pools.iter().all(|pl| pl.machines.len() == 15),
        "suitability 100 %"
    );
    let jobs = s.jobs(&p, 0.0, 9);
    assert!(jobs.iter().all(|j| j.submit == 0), "Ta = 0: all at once");
    assert_eq!(jobs.len(), 5_000);

    let c = SetupParams::table4();
    let p = c.platform(2);
    assert_eq!(p.machines.len(), 150);
    let jobs = c.jobs(&p, 4.0, 2);
    assert!(
        jobs.iter()
            .all(|j| j.inputs.len() == 1 && (100..=800).contains(&j.inputs[0].size))
    );

    let m = SetupParams::mkp((0.55, 0.60));
    assert_eq!(m.platform(1).clusters[0].pools.len(), 40);
    assert!(SetupParams::preset("table9").is_none());
    let per_job = SetupParams {
        licence_needs: LicenceNeeds::PerJob,
        ..SetupParams::table1()
    };
    let p = per_job.platform(1);
    assert!(
        per_job
            .jobs(&p, 4.0, 1)
            .iter()
            .all(|j| j.licences.len() <= 1)
    );
}
