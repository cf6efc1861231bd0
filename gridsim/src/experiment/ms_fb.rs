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

fn fmt4(v: &[f64; CLUSTERS]) -> String {
    let c: Vec<String> = v.iter().map(|x| format!("{x:.1}")).collect();
    c.join("/")
}

/// The Fig. 25 claims shared by both experiments: equal shares at Ta = 0 and the Ta whose shares
/// best approximate the optimal ones.
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

/// Checks the D9.3 claims.
pub fn claims(s: &Summary, setup: &TwoLevelSetup) -> Vec<Claim> {
    let mut out = share_claims(s, setup, CASES[0], 5.0);
    let tas = s.tas();
    let miss = |a: &str, t: f64| s.get(a, "", t, "missed_pct").unwrap_or(f64::NAN);
    let cut = tas
        .iter()
        .filter(|&&t| miss(CASES[0], t) < miss(CASES[2], t))
        .count();
    let ev: Vec<String> = tas
        .iter()
        .map(|&t| {
            format!(
                "Ta={t}: MS {:.2} % vs NO {:.2} %",
                miss(CASES[0], t),
                miss(CASES[2], t)
            )
        })
        .collect();
    out.push(two_level::claim(
        "MS classification cuts deadline misses compared with no heuristics (MS Heuristics below NO Heuristics at every Ta)",
        !tas.is_empty() && cut == tas.len(),
        format!("{} ({cut} of {} Ta)", ev.join("; "), tas.len()),
    ));
    if tas.contains(&5.0) && tas.contains(&15.0) {
        let a = shares::shares(s, CASES[0], 5.0);
        let b = shares::shares(s, CASES[0], 15.0);
        out.push(Claim {
            claim: "Ta 5 → 15 shifts load toward the clusters that keep their queues empty (cluster 1 gains)".into(),
            holds: b[0] > a[0],
            evidence: format!("shares at Ta=5 {}, at Ta=15 {}", fmt4(&a), fmt4(&b)),
        });
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
    out.push(Claim {
        claim: "Fig. 26: the slowdown of no-deadline jobs grows as cluster power decreases".into(),
        holds: ok,
        evidence: ev.join("; "),
    });
    let g = |a: &str, m: &str| s.get(a, "", ta, m).unwrap_or(f64::NAN);
    let (ms, ls, no) = (
        g(CASES[0], "missed_pct"),
        g(CASES[1], "missed_pct"),
        g(CASES[2], "missed_pct"),
    );
    out.push(two_level::claim(
        "Fig. 27: MS Heuristics and LS Heuristics both miss fewer deadlines than NO Heuristics",
        ms < no && ls < no,
        format!("% missed MS {ms:.2}, LS {ls:.2}, NO {no:.2}"),
    ));
    out.push(Claim {
        claim: "Fig. 27: MS-only classification is comparable to LS classification (≤ 5 points)"
            .into(),
        holds: (ms - ls).abs() <= 5.0,
        evidence: format!("|Δ| = {:.2} points", (ms - ls).abs()),
    });
    let n = pc(CASES[0], MISSED_N);
    out.push(Claim {
        claim:
            "Fig. 27: cluster 1 misses hundreds of deadlines, cluster 4 only a few (MS Heuristics)"
                .into(),
        holds: n[0] >= 100.0 && n[3] * 5.0 <= n[0],
        evidence: format!("missed jobs per cluster {}", fmt4(&n)),
    });
    for (k, fig, what) in [(PROC, 28, "processor"), (LIC, 29, "licence")] {
        let per: Vec<[f64; CLUSTERS]> = CASES.iter().map(|a| pc(a, k)).collect();
        let spread = (0..CLUSTERS)
            .map(|c| {
                let v = per.iter().map(|p| p[c]);
                v.clone().fold(f64::MIN, f64::max) - v.fold(f64::MAX, f64::min)
            })
            .fold(0.0, f64::max);
        out.push(Claim {
            claim: format!(
                "Fig. {fig}: the three cases give similar {what} usage (≤ 10 points per cluster)"
            ),
            holds: spread <= 10.0,
            evidence: format!("largest spread {spread:.2} points"),
        });
        out.push(Claim {
            claim: format!(
                "Fig. {fig}: the smallest cluster has a lower {what} usage than the largest"
            ),
            holds: per.iter().all(|p| p[3] < p[0]),
            evidence: CASES
                .iter()
                .zip(&per)
                .map(|(a, p)| format!("{a} {}", fmt4(p)))
                .collect::<Vec<_>>()
                .join("; "),
        });
    }
    out
}
