//! `gridsim experiment ms-cs`: the two-level grid, meta-scheduler above several local algorithms
//! (spec `two-level-grid-scheduler.md` D9.4, Figs. 30–32; set-up Table 7 = Table 6, see
//! [`super::two_level`]).
//!
//! The MS classifies every job (D4.1) and uses the priority only in its dispatch (Load then
//! Ordering, D4.2.3, ε = 0); the local algorithms never see it. Local algorithms, for Ta ∈ {0, 5,
//! 10, 15} and 20 repetitions: the Convergent Scheduler (D7, constants D7.5, non-preemptive so
//! Δ = 800, incremental matching: `cs-i-np`, with the space sharing of the matching rounds, D12
//! #23), FCFS, EASY backfilling (BF_FCFS) and Flexible Backfilling BF_UNMOD with the constants of
//! D6.4 row 3 (`fb-4.3.2`, age factor 1.1). The seed does not say which CS matching the §4.3.2
//! runs used; we take the incremental one (D9.2 finds the variants close, and it is the cheaper).
//!
//! Readings adopted: as in [`super::ms_fb`] (optimal shares = shares of the machines, "equal
//! shares" at Ta = 0 = 25 % each); "almost 70 %" for the largest cluster at Ta = 15 is checked as
//! ≥ 60 % and "close to 0" for the smallest as ≤ 2 %.

use super::Summary;
use super::fb::Claim;
use super::ms_fb::share_claims;
use super::shares;
use super::two_level::{self, Config, Spec, TwoLevelSetup};
use gridsched_core::dispatch::DispatchKind;
use gridsched_core::heuristics::HeuristicParams;
use gridsched_core::policy::{PolicyConfig, PolicyKind};

/// The local algorithms compared, as (report name, policy kind, FB constants).
pub const ALGORITHMS: [(&str, PolicyKind, HeuristicParams); 4] = [
    ("CS", PolicyKind::CsINp, HeuristicParams::FB_4_3_2),
    ("FCFS", PolicyKind::Fcfs, HeuristicParams::FB_4_3_2),
    ("EASY", PolicyKind::Easy, HeuristicParams::FB_4_3_2),
    ("FB", PolicyKind::FbUnmod, HeuristicParams::FB_4_3_2),
];

/// The configuration of an algorithm.
pub fn config(name: &str) -> Option<Config> {
    let (_, kind, heuristics) = ALGORITHMS.iter().find(|(n, ..)| *n == name)?;
    Some(Config {
        classify: true,
        dispatch: DispatchKind::LoadOrdering,
        policy: PolicyConfig {
            heuristics: *heuristics,
            ..PolicyConfig::new(*kind)
        },
    })
}

/// The configuration names, in run and legend order.
pub const NAMES: [&str; 4] = ["CS", "FCFS", "EASY", "FB"];

/// The `ms-cs` experiment.
pub static SPEC: Spec = Spec {
    name: "ms-cs",
    configs: &NAMES,
    config,
    figures: [
        "fig30-share",
        "fig32-slowdown",
        "fig31-deadline-misses",
        "processor-usage",
        "licence-usage",
    ],
    header,
    share_fig: "30",
    claims,
    not_evaluated: &[],
};

fn header(setup: &TwoLevelSetup) -> String {
    format!(
        "# Experiment `ms-cs`: meta-scheduler + local algorithms (D9.4)\n\nSet-up (Table 7 = Table 6): \
         {}. MS: classification + Load/Ordering; LS: {}.\n\n",
        setup.describe(),
        NAMES.join(", ")
    )
}

/// Checks the D9.4 claims (the shares on the CS line).
pub fn claims(s: &Summary, setup: &TwoLevelSetup) -> Vec<Claim> {
    let cs = "CS";
    let mut out = share_claims(s, setup, cs, 10.0);
    let tas = s.tas();
    if tas.contains(&5.0) {
        let sh = shares::shares(s, cs, 5.0);
        let o = two_level::optimal_shares(&setup.params);
        out.push(Claim {
            claim:
                "Ta = 5: the most powerful cluster gets less than optimal, the least powerful more"
                    .into(),
            holds: sh[0] < o[0] && sh[3] > o[3],
            evidence: format!("shares {:.1}/{:.1}/{:.1}/{:.1}", sh[0], sh[1], sh[2], sh[3]),
        });
        let g = |a: &str| s.get(a, "", 5.0, "missed_pct").unwrap_or(f64::NAN);
        let (c, f, e, b) = (g("CS"), g("FCFS"), g("EASY"), g("FB"));
        let ev = format!("% missed CS {c:.2}, FCFS {f:.2}, EASY {e:.2}, FB {b:.2}");
        out.push(two_level::claim(
            "Fig. 31 (Ta = 5): CS misses the fewest deadlines",
            c < f && c < e && c < b,
            ev.clone(),
        ));
        out.push(two_level::claim(
            "Fig. 31 (Ta = 5): with CS almost 97 % of the jobs end within their deadline (≥ 95 %)",
            c <= 5.0,
            ev.clone(),
        ));
        out.push(two_level::claim(
            "Fig. 31 (Ta = 5): then Flexible Backfilling; EASY and FCFS are the worst",
            b < e && b < f,
            ev,
        ));
        let sd = |a: &str| s.get(a, "", 5.0, "slowdown_nd").unwrap_or(f64::NAN);
        let others = ["FCFS", "EASY", "FB"].map(sd);
        out.push(two_level::claim(
            "Fig. 32 (Ta = 5): CS has the worst slowdown of the jobs without deadline",
            others.iter().all(|o| sd("CS") > *o),
            format!(
                "slowdown CS {:.2}, FCFS {:.2}, EASY {:.2}, FB {:.2}",
                sd("CS"),
                others[0],
                others[1],
                others[2]
            ),
        ));
    }
    if tas.contains(&15.0) {
        let sh = shares::shares(s, cs, 15.0);
        out.push(Claim {
            claim: "Ta = 15: the most powerful cluster executes almost 70 % of the work (≥ 60 %), the smallest close to 0 (≤ 2 %)".into(),
            holds: sh[0] >= 60.0 && sh[3] <= 2.0,
            evidence: format!("shares {:.1}/{:.1}/{:.1}/{:.1}", sh[0], sh[1], sh[2], sh[3]),
        });
    }
    out
}
