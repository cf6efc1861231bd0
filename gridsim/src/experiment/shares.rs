//! Workload shares of the two-level experiments against the optimal shares (spec
//! `two-level-grid-scheduler.md` D8.1 "per-cluster workload share", D9.3 Fig. 25, D9.4 Fig. 30).
//!
//! **Definitions used.** A cluster's *share* is the workload dispatched to it, Σ processors ×
//! estimate of its jobs (what the meta-scheduler knows when it dispatches), over the workload of
//! all jobs. Its *optimal* share is the paper's (D8.1): its machines over all machines, 53.33 /
//! 26.67 / 13.33 / 6.67 % for 120/60/30/15 machines; the verdicts use it, so that our shares are
//! read against the published figures. Beside it the reports give the *capacity* share, Σ
//! processors × benchmark of the cluster's machines over the platform's: what a cluster can
//! process per second, since a job's run time is its estimate scaled by the benchmark ratio (D2).
//! Machines draw processors (4–32) and benchmark (100–500) uniformly, so both definitions agree in
//! expectation; the reports show how far one platform draw moves them apart.
//!
//! **Offered load.** How much the stream asks of the platform at each Ta: Σ processors × estimate
//! of the jobs over Σ processors of the platform × the stream's arrival span, averaged over the
//! repetitions' draws. Above 1 the queues grow for the whole run whatever the schedule, which
//! bounds the deadline misses any policy can reach.

use super::Summary;
use super::per_cluster::{CAPACITY, CLUSTERS, SHARE, per_cluster};
use gridsched_core::model::Platform;
use std::fmt::Write as _;

/// Each cluster's share of the platform's processors × benchmark, percent.
pub fn capacity_shares(platform: &Platform) -> [f64; CLUSTERS] {
    let mut cap = [0.0; CLUSTERS];
    for (c, cluster) in platform.clusters.iter().enumerate().take(CLUSTERS) {
        cap[c] = cluster
            .machines
            .iter()
            .filter_map(|m| platform.machines.get(m.index()))
            .map(|m| f64::from(m.procs) * f64::from(m.benchmark))
            .sum();
    }
    let total: f64 = cap.iter().sum();
    if total > 0.0 {
        for x in &mut cap {
            *x *= 100.0 / total;
        }
    }
    cap
}

/// The mean workload shares of a configuration at Ta.
pub fn shares(s: &Summary, alg: &str, ta: f64) -> [f64; CLUSTERS] {
    per_cluster(s, alg, ta, SHARE)
}

/// The mean capacity shares of a configuration's platforms (the same at every Ta: a repetition
/// draws one platform), or NaN when absent.
pub fn capacity(s: &Summary, alg: &str) -> [f64; CLUSTERS] {
    let tas = s.tas();
    let n = tas.len().max(1) as f64;
    let mut out = [0.0; CLUSTERS];
    for ta in &tas {
        for (o, v) in out.iter_mut().zip(per_cluster(s, alg, *ta, CAPACITY)) {
            *o += v / n;
        }
    }
    if tas.is_empty() {
        [f64::NAN; CLUSTERS]
    } else {
        out
    }
}

/// `Σ |share − optimal|` in points.
pub fn distance(share: &[f64; CLUSTERS], optimal: &[f64; CLUSTERS]) -> f64 {
    share.iter().zip(optimal).map(|(a, b)| (a - b).abs()).sum()
}

/// The Ta whose shares are closest to optimal for a configuration.
pub fn best_ta(s: &Summary, alg: &str, optimal: &[f64; CLUSTERS]) -> Option<f64> {
    s.tas().into_iter().min_by(|a, b| {
        distance(&shares(s, alg, *a), optimal).total_cmp(&distance(&shares(s, alg, *b), optimal))
    })
}

fn cells(v: &[f64; CLUSTERS]) -> String {
    v.iter()
        .map(|x| format!("{x:.2}"))
        .collect::<Vec<_>>()
        .join(" | ")
}

/// A Markdown table of the workload shares per Ta for one configuration, with the optimal and
/// capacity rows and the distances `Σ |share − optimal|` and `Σ |share − capacity|`.
pub fn share_table(r: &mut String, s: &Summary, alg: &str, optimal: &[f64; CLUSTERS]) {
    let cap = capacity(s, alg);
    let _ = writeln!(
        r,
        "| Ta | c1 | c2 | c3 | c4 | Σ abs(share − optimal) | Σ abs(share − capacity) |"
    );
    let _ = writeln!(r, "|---|---|---|---|---|---|---|");
    let _ = writeln!(
        r,
        "| optimal (machines) | {} | 0 | {:.2} |",
        cells(optimal),
        distance(optimal, &cap)
    );
    let _ = writeln!(
        r,
        "| capacity (processors × benchmark) | {} | {:.2} | 0 |",
        cells(&cap),
        distance(&cap, optimal)
    );
    for ta in s.tas() {
        let sh = shares(s, alg, ta);
        let _ = writeln!(
            r,
            "| {ta} | {} | {:.2} | {:.2} |",
            cells(&sh),
            distance(&sh, optimal),
            distance(&sh, &cap)
        );
    }
    r.push('\n');
}

/// The definitions paragraph of the share section.
pub fn definitions(r: &mut String) {
    let _ = writeln!(
        r,
        "Share = Σ processors × estimate of the jobs dispatched to a cluster over all jobs'. \
         Optimal = the cluster's share of the machines (D8.1, the paper's definition; the verdicts \
         use it). Capacity = its share of Σ processors × benchmark, what it can process per second \
         (a job runs for its estimate × benchmark ratio), averaged over the repetitions' platforms: \
         machines draw processors and benchmark uniformly, so it equals the optimal share in \
         expectation, and the `capacity_c1` … `capacity_c4` columns of `runs.csv` give it per \
         run.\n"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use gridsched_workload::seed_setups::SetupParams;

    #[test]
    fn capacity_shares_sum_to_100_and_follow_the_machines() {
        let p = SetupParams::table6();
        let mut mean = [0.0; CLUSTERS];
        for seed in 1..=20 {
            let cap = capacity_shares(&p.platform(seed));
            assert!((cap.iter().sum::<f64>() - 100.0).abs() < 1e-9);
            assert!(cap.windows(2).all(|w| w[0] > w[1]), "{cap:?}");
            for (m, c) in mean.iter_mut().zip(cap) {
                *m += c / 20.0;
            }
        }
        // In expectation the machine shares 53.33 / 26.67 / 13.33 / 6.67.
        for (m, o) in mean.iter().zip([53.33, 26.67, 13.33, 6.67]) {
            assert!((m - o).abs() < 2.0, "{mean:?}");
        }
        assert_eq!(
            distance(&[50.0, 30.0, 10.0, 10.0], &mean.map(|_| 25.0)),
            60.0
        );
    }
}
