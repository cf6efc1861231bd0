//! `gridsim experiment ms-fb`: the two-level grid, meta-scheduler above Flexible Backfilling (spec
//! `two-level-grid-scheduler.md` D9.3, Figs. 25–29; set-up Table 6, see [`super::two_level`]).
//!
//! The three cases of D9.3, for Ta ∈ {0, 5, 10, 15} and 20 repetitions:
//! * **MS Heuristics** — the MS classifies every job (D4.1, `max` 10, 20 licence types) and
//!   dispatches it with Load then Ordering (D4.2.3, ε = 0); every LS is Flexible Backfilling ordered
//!   by the MS priority (`fb-meta`: no local classification, BF_UNMOD reservation).
//! * **LS Heuristics** — the MS does not classify (every job priority 1, so Load then Ordering
//!   balances the total load); every LS is Flexible Backfilling BF_UNMOD with its own priorities
//!   recomputed at every pass, constants of D6.4 row 2 (`fb-4.3.1`).
//! * **NO Heuristics** — the MS does not classify (jobs dispatched in arrival order, "FCFS at MS")
//!   with the same Load balancing; every LS is EASY backfilling (BF_FCFS).
//!
//! Readings adopted: the seed does not say how the MS dispatches in the two cases without MS
//! priorities; we keep the same Load function with a constant priority so that only the
//! priorities differ between cases (D4.2.3's recommendation for Load/Ordering, D12 #11 ε = 0).
//! The optimal shares are the clusters' shares of the machines (D9.3 table), and Fig. 25's
//! "equal share at Ta = 0" is read as 25 % each. The per-cluster figures are drawn against Ta with
//! one line per case; the paper shows Figs. 26–29 at Ta = 5, which the report tabulates.
//!
//! The report quotes every D9.3 figure statement word for word from the spec and tests it by the
//! rule stated with it ([`claims`]: "equal", "similar" and "comparable" within 2 points, D12 #38;
//! Figs. 26–29 at Ta = 5 as published).

use super::Summary;
use super::fb::Claim;
use super::shares;
use super::two_level::{
    self, CLUSTERS, Config, LIC, MISSED_N, PROC, SLOWDOWN, Spec, TwoLevelSetup,
};
use gridsched_core::dispatch::DispatchKind;
use gridsched_core::heuristics::HeuristicParams;
use gridsched_core::policy::{PolicyConfig, PolicyKind};

/// The cases of D9.3.
pub const CASES: [&str; 3] = ["MS Heuristics", "LS Heuristics", "NO Heuristics"];

/// The configuration of a case.
pub fn case(name: &str) -> Option<Config> {
    let (classify, kind, heuristics) = match name {
        "MS Heuristics" => (true, PolicyKind::FbMeta, HeuristicParams::default()),
        "LS Heuristics" => (false, PolicyKind::FbUnmod, HeuristicParams::FB_4_3_1),
        "NO Heuristics" => (false, PolicyKind::Easy, HeuristicParams::default()),
        _ => return None,
    };
    Some(Config {
        classify,
        dispatch: DispatchKind::LoadOrdering,
        policy: PolicyConfig {
            heuristics,
            ..PolicyConfig::new(kind)
        },
    })
}

/// The `ms-fb` experiment.
pub static SPEC: Spec = Spec {
    name: "ms-fb",
    configs: &CASES,
    config: case,
    figures: [
        "fig25-share",
        "fig26-slowdown",
        "fig27-deadline-misses",
        "fig28-processor-usage",
        "fig29-licence-usage",
    ],
    header,
    share_fig: "25",
    claims,
    not_evaluated: &[],
};

fn header(setup: &TwoLevelSetup) -> String {
    format!(
        "# Experiment `ms-fb`: meta-scheduler + Flexible Backfilling (D9.3)\n\nSet-up (Table 6): {}. Cases: MS \
         Heuristics = MS classification + Load/Ordering, LS `fb-meta`; LS Heuristics = LS FB \
         BF_UNMOD with D6.4 row 2; NO Heuristics = no MS priority, LS EASY.\n\n",
        setup.describe()
    )
}

/// Four per-cluster values as `a/b/c/d`, one decimal.
pub fn fmt4(v: &[f64; CLUSTERS]) -> String {
    let c: Vec<String> = v.iter().map(|x| format!("{x:.1}")).collect();
    c.join("/")
}

/// The Fig. 30 claims of `ms-cs`: equal shares at Ta = 0 and the Ta whose shares best
/// approximate the optimal ones (`ms-fb` quotes and tests Fig. 25's in [`claims`]).
pub fn share_claims(s: &Summary, setup: &TwoLevelSetup, alg: &str, best: f64) -> Vec<Claim> {
    let o = two_level::optimal_shares(&setup.params);
    let mut out = Vec::new();
    if s.tas().contains(&0.0) {
        let sh = shares::shares(s, alg, 0.0);
        out.push(Claim {
            claim: format!("{alg}, Ta = 0: every cluster gets the same share (25 % ± 3 points)"),
            holds: sh.iter().all(|v| (v - 25.0).abs() <= 3.0),
            evidence: format!("shares {}", fmt4(&sh)),
        });
    }
    if let Some(b) = shares::best_ta(s, alg, &o) {
        let ev: Vec<String> = s
            .tas()
            .iter()
            .map(|&t| {
                format!(
                    "Ta={t}: {:.1}",
                    shares::distance(&shares::shares(s, alg, t), &o)
                )
            })
            .collect();
        out.push(Claim {
            claim: format!("{alg}: Ta = {best} best approximates the optimal shares"),
            holds: b == best,
            evidence: format!("Σ abs(share − optimal) {}", ev.join(", ")),
        });
    }
    out
}

/// A difference in percentage points up to this reads as "similar", "comparable" or "equal"
/// (the spec's D12 #38 treats differences under 1–2 points as noise).
pub const NOISE: f64 = 2.0;

/// "Only a few" missed deadlines: at most this many jobs (of 5,000).
pub const A_FEW: f64 = 10.0;

/// The D9.3 claims, each quoted word for word from the spec (the figure bullets of D9.3; Figs.
/// 26–29 are at Ta = 5, "other metrics shown for Ta = 5") and tested by the rule stated with it.
pub fn claims(s: &Summary, setup: &TwoLevelSetup) -> Vec<Claim> {
    let o = two_level::optimal_shares(&setup.params);
    let tas = s.tas();
    let ms = CASES[0];
    let mut out = Vec::new();
    let src25 = "D9.3, Fig. 25";
    if tas.contains(&0.0) {
        let sh = shares::shares(s, ms, 0.0);
        out.push(Claim::quoted(
            src25,
            "Ta = 0 → equal share to every cluster (the seed says \"the same amount of workload\", \
             i.e. 25% each)",
            &format!("{ms} at Ta = 0: every cluster's load share within {NOISE} points of 25 %"),
            sh.iter().all(|v| (v - 25.0).abs() <= NOISE),
            &[format!("shares {}", fmt4(&sh))],
        ));
    }
    if let Some(b) = shares::best_ta(s, ms, &o) {
        let ev: Vec<String> = tas
            .iter()
            .map(|&t| {
                format!(
                    "Ta={t}: {:.1}",
                    shares::distance(&shares::shares(s, ms, t), &o)
                )
            })
            .collect();
        out.push(Claim::quoted(
            src25,
            "Ta = 5 best approximates Optimal",
            &format!(
                "{ms}: of the Ta run, Ta = 5 has the smallest Σ |share − optimal share| \
                 (optimal = the clusters' shares of the machines, {})",
                fmt4(&o)
            ),
            b == 5.0,
            &[format!("Σ |share − optimal| {}", ev.join(", "))],
        ));
    }
    if tas.contains(&5.0) && tas.contains(&15.0) {
        let a = shares::shares(s, ms, 5.0);
        let b = shares::shares(s, ms, 15.0);
        out.push(Claim::quoted(
            src25,
            "increasing Ta to 15 shifts load toward the clusters that keep their queues empty.",
            &format!(
                "{ms}: the most powerful cluster (cluster 1, the one that empties its queue \
                 first) has a share more than {NOISE} points larger at Ta = 15 than at Ta = 5"
            ),
            b[0] - a[0] > NOISE,
            &[format!(
                "shares at Ta=5 {}, at Ta=15 {}",
                fmt4(&a),
                fmt4(&b)
            )],
        ));
    }
    let ta = 5.0;
    if !tas.contains(&ta) {
        return out;
    }
    let pc = |a: &str, k| two_level::per_cluster(s, a, ta, k);
    let mut ok = true;
    let mut ev = Vec::new();
    for a in CASES {
        let v = pc(a, SLOWDOWN);
        ok &= v.windows(2).all(|w| w[0] <= w[1]);
        ev.push(format!("{a} {}", fmt4(&v)));
    }
    out.push(Claim::quoted(
        "D9.3, Fig. 26",
        "average slowdown of no-deadline jobs per cluster: grows as cluster power decreases \
         (cluster 1 lowest).",
        "at Ta = 5, for every case, the slowdown of no-deadline jobs does not fall from cluster 1 \
         to cluster 4 (so cluster 1's is the lowest)",
        ok,
        &ev,
    ));
    let g = |a: &str, t: f64, m: &str| s.get(a, "", t, m).unwrap_or(f64::NAN);
    let miss = |a: &str| g(a, ta, "missed_pct");
    let (m, l, n) = (miss(CASES[0]), miss(CASES[1]), miss(CASES[2]));
    let others: Vec<String> = tas
        .iter()
        .filter(|&&t| t != ta)
        .map(|&t| {
            format!(
                "Ta={t}: MS {:.2}, LS {:.2}, NO {:.2}",
                g(CASES[0], t, "missed_pct"),
                g(CASES[1], t, "missed_pct"),
                g(CASES[2], t, "missed_pct")
            )
        })
        .collect();
    out.push(Claim::quoted(
        "D9.3, Fig. 27",
        "MS Heuristics and LS Heuristics both beat NO Heuristics (EASY)",
        "at Ta = 5, MS Heuristics and LS Heuristics each miss fewer deadlines (%) than NO \
         Heuristics (the other Ta in the evidence)",
        m < n && l < n,
        &[format!("Ta=5: MS {m:.2}, LS {l:.2}, NO {n:.2}")]
            .into_iter()
            .chain(others)
            .collect::<Vec<_>>(),
    ));
    let (pm, pl) = (
        g(CASES[0], ta, "mean_pass_us"),
        g(CASES[1], ta, "mean_pass_us"),
    );
    out.push(Claim::quoted(
        "D9.3, Fig. 27",
        "MS-only classification comparable to LS classification at lower cost",
        &format!(
            "at Ta = 5, MS Heuristics' % missed within {NOISE} points of LS Heuristics' \
             (comparable), and its mean scheduling pass shorter (lower cost; wall clock, not \
             deterministic)"
        ),
        (m - l).abs() <= NOISE && pm < pl,
        &[format!(
            "% missed MS {m:.2}, LS {l:.2} (|Δ| {:.2} points); mean pass MS {pm:.0} µs, LS \
             {pl:.0} µs",
            (m - l).abs()
        )],
    ));
    let per: Vec<[f64; CLUSTERS]> = CASES.iter().map(|a| pc(a, MISSED_N)).collect();
    out.push(Claim::quoted(
        "D9.3, Fig. 27",
        "Cluster 1 misses mean hundreds of jobs, cluster 4 only a few.",
        &format!(
            "at Ta = 5, for every case, cluster 1 misses at least 100 deadlines on average and \
             cluster 4 at most {A_FEW} (\"a few\")"
        ),
        per.iter().all(|n| n[0] >= 100.0 && n[3] <= A_FEW),
        &CASES
            .iter()
            .zip(&per)
            .map(|(a, n)| format!("{a} missed jobs per cluster {}", fmt4(n)))
            .collect::<Vec<_>>(),
    ));
    for (k, fig, what) in [(PROC, "28", "processor"), (LIC, "29", "licence")] {
        let per: Vec<[f64; CLUSTERS]> = CASES.iter().map(|a| pc(a, k)).collect();
        let spread = (0..CLUSTERS)
            .map(|c| {
                let v = per.iter().map(|p| p[c]);
                v.clone().fold(f64::MIN, f64::max) - v.fold(f64::MAX, f64::min)
            })
            .fold(0.0, f64::max);
        let ev: Vec<String> = CASES
            .iter()
            .zip(&per)
            .map(|(a, p)| format!("{a} {}", fmt4(p)))
            .collect();
        out.push(Claim::quoted(
            &format!("D9.3, Fig. {fig} (Figs. 28, 29)"),
            "processor and licence usage per cluster: all three solutions similar; smaller \
             clusters have lower usage (fragmentation, licence contention).",
            &format!(
                "{what} usage at Ta = 5: on every cluster the three cases within {NOISE} points \
                 of each other (similar), and for every case the usage does not rise from \
                 cluster 1 to cluster 4"
            ),
            spread <= NOISE && per.iter().all(|p| p.windows(2).all(|w| w[1] <= w[0])),
            &[format!("largest spread {spread:.2} points")]
                .into_iter()
                .chain(ev)
                .collect::<Vec<_>>(),
        ));
    }
    out
}
