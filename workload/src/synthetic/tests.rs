use super::*;

fn generate(params: SyntheticParams) -> Vec<Job> {
    SyntheticGenerator::new(params).unwrap().collect()
}

fn offered_load(jobs: &[Job], procs: u32) -> f64 {
    let area: f64 = jobs
        .iter()
        .map(|j| f64::from(j.procs) * j.runtime.unwrap() as f64)
        .sum();
    let span = (jobs.last().unwrap().submit - jobs[0].submit) as f64;
    area / (f64::from(procs) * span)
}

#[test]
fn gamma_is_accurate() {
    assert!((ln_gamma(5.0).exp() - 24.0).abs() < 1e-10);
    assert!((ln_gamma(0.5).exp() - std::f64::consts::PI.sqrt()).abs() < 1e-12);
    assert!((ln_gamma(0.1).exp() - 9.513_507_698_668_732).abs() < 1e-9);
    // §5.4's check: KTH β = 200 gives a mean of ≈ 1006 s.
    let mean = 200.0 * ln_gamma(1.0 + 1.0 / 0.35).exp();
    assert!((mean - 1006.0).abs() < 1.0, "{mean}");
}

#[test]
fn same_seed_same_jobs_different_seed_different_jobs() {
    let p = SyntheticParams {
        jobs: 2_000,
        ..SyntheticParams::default()
    };
    let a = generate(p);
    let b = generate(p);
    assert_eq!(a, b);
    let c = generate(SyntheticParams { seed: 2, ..p });
    assert_eq!(c.len(), a.len());
    assert_ne!(a, c);
    let differing = a.iter().zip(&c).filter(|(x, y)| x != y).count();
    assert!(differing > 1_900, "{differing}");
}

#[test]
fn jobs_follow_the_model() {
    let p = SyntheticParams::default();
    let jobs = generate(p);
    assert_eq!(jobs.len(), 10_000);
    assert_eq!(jobs[0].submit, 0);
    let mut serial = 0;
    let mut pow2 = 0;
    for (i, j) in jobs.iter().enumerate() {
        assert_eq!(j.id.0, i as u64 + 1);
        assert!(j.validate().is_ok());
        assert!((1..=128).contains(&j.procs));
        let run = j.runtime.unwrap();
        assert!((10..=MAX_RUNTIME).contains(&run));
        assert!(j.estimate >= run && j.estimate <= MAX_RUNTIME);
        if i > 0 {
            assert!(j.submit >= jobs[i - 1].submit);
        }
        serial += usize::from(j.procs == 1);
        pow2 += usize::from(j.procs > 1 && j.procs.is_power_of_two());
    }
    // 25% serial; 75% × 75% powers of two plus the other parallel ones that happen to be (small
    // widths such as 2, 4 and 8 are common).
    assert!((2_300..=2_700).contains(&serial), "{serial}");
    assert!((5_900..=6_800).contains(&pow2), "{pow2}");
    // Small jobs dominate: the median parallel width is at most 8, yet full-machine jobs exist.
    let mut widths: Vec<u32> = jobs.iter().map(|j| j.procs).filter(|&w| w > 1).collect();
    widths.sort_unstable();
    assert!(
        widths[widths.len() / 2] <= 8,
        "median {}",
        widths[widths.len() / 2]
    );
    assert_eq!(widths.last(), Some(&128));
    let exact = jobs
        .iter()
        .filter(|j| j.estimate == j.runtime.unwrap())
        .count();
    // Φ = 0.2 exact, plus a few capped at 36 h.
    assert!((1_800..=2_400).contains(&exact), "{exact}");
}

#[test]
fn realised_load_is_near_the_target() {
    for (load, procs, seed) in [(0.75, 128, 1), (0.5, 100, 7), (0.95, 1024, 3)] {
        let p = SyntheticParams {
            load,
            procs,
            seed,
            ..SyntheticParams::default()
        };
        let jobs = generate(p);
        let realised = offered_load(&jobs, procs);
        println!("target {load}, P = {procs}, seed {seed}: realised {realised:.4}");
        assert!(
            (realised / load - 1.0).abs() < 0.10,
            "target {load}, realised {realised}"
        );
    }
}

#[test]
fn streams_lazily_and_reports_parameters() {
    let g = SyntheticGenerator::new(SyntheticParams {
        jobs: 5,
        procs: 1,
        ..SyntheticParams::default()
    })
    .unwrap();
    assert_eq!(g.procs(), 1);
    assert!(g.beta() > 0.0 && g.mean_area() >= 10.0);
    assert!((g.mean_interarrival() - g.mean_area() / 0.75).abs() < 1e-6 * g.mean_area());
    assert_eq!(g.size_hint(), (5, Some(5)));
    let jobs: Vec<Job> = g.collect();
    assert!(jobs.iter().all(|j| j.procs == 1));
    assert!(
        SyntheticGenerator::new(SyntheticParams {
            procs: 0,
            ..SyntheticParams::default()
        })
        .is_err()
    );
    assert!(
        SyntheticGenerator::new(SyntheticParams {
            load: f64::NAN,
            ..SyntheticParams::default()
        })
        .is_err()
    );
    let empty = SyntheticGenerator::new(SyntheticParams {
        jobs: 0,
        ..SyntheticParams::default()
    })
    .unwrap();
    assert_eq!(empty.count(), 0);
    let p: SyntheticParams = serde_json::from_str(r#"{"jobs": 3, "seed": 9}"#).unwrap();
    assert_eq!((p.jobs, p.procs, p.seed), (3, 128, 9));
    assert!(serde_json::from_str::<SyntheticParams>(r#"{"job": 3}"#).is_err());
}
