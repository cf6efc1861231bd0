//! `gridsim experiment ms-cs`: the two-level grid, meta-scheduler above several local algorithms
//! (spec `two-level-grid-scheduler.md` D9.4, Figs. 30–32; set-up Table 7 = Table 6, see
//! [`super::two_level`]).
//!
//! The MS classifies every job (D4.1) and uses the priority only in its dispatch (Load then
//! Ordering, D4.2.3, ε = 0); the local algorithms never see it. Local algorithms, for Ta ∈ {0, 5,
//! 10, 15} and 20 repetitions: FCFS, EASY backfilling (BF_FCFS) and Flexible Backfilling BF_UNMOD
//! with the constants of D6.4 row 3 (`fb-4.3.2`, age factor 1.1). The Convergent Scheduler (D7,
//! constants D7.5 with Δ = 800) is not on `main` yet: its claims are reported as not evaluated
//! and it is added to [`ALGORITHMS`] as soon as a `PolicyKind` for it exists.
//!
//! Readings adopted: as in [`super::ms_fb`] (optimal shares = shares of the machines, "equal
//! shares" at Ta = 0 = 25 % each); "almost 70 %" for the largest cluster at Ta = 15 is checked as
//! ≥ 60 % and "close to 0" for the smallest as ≤ 2 %.

use super::Summary;
use super::fb::Claim;
use super::ms_fb::share_claims;
use super::two_level::{self, Config, Spec, TwoLevelSetup};
use gridsched_core::dispatch::DispatchKind;
use gridsched_core::heuristics::HeuristicParams;
use gridsched_core::policy::{PolicyConfig, PolicyKind};

/// The local algorithms compared, as (report name, policy kind, FB constants).
pub const ALGORITHMS: [(&str, PolicyKind, HeuristicParams); 3] = [
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
pub const NAMES: [&str; 3] = ["FCFS", "EASY", "FB"];

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
    not_evaluated: &[
        "Fig. 31: CS misses the fewest deadlines, almost 97 % of jobs within deadline (CS not implemented yet)",
        "Fig. 32: CS has the worst slowdown of no-deadline jobs (CS not implemented yet)",
    ],
};

fn header(setup: &TwoLevelSetup) -> String {
    format!(
        "# Experiment `ms-cs`: meta-scheduler + local algorithms (D9.4)\n\nSet-up (Table 7 = Table 6): \
         {}. MS: classification + Load/Ordering; LS: {}. The Convergent Scheduler is not \
         available yet.\n\n",
        setup.describe(),
        NAMES.join(", ")
    )
}

/// Checks the D9.4 claims that do not need CS, on the FB line for the shares.
pub fn claims(s: &Summary, setup: &TwoLevelSetup) -> Vec<Claim> {
    let fb = "FB";
    let mut out = share_claims(s, setup, fb, 10.0);
    let tas = s.tas();
    if tas.contains(&5.0) {
        let sh = two_level::shares(s, fb, 5.0);
        let o = two_level::optimal_shares(&setup.params);
        out.push(Claim {
            claim:
                "Ta = 5: the most powerful cluster gets less than optimal, the least powerful more"
                    .into(),
            holds: sh[0] < o[0] && sh[3] > o[3],
            evidence: format!("shares {:.1}/{:.1}/{:.1}/{:.1}", sh[0], sh[1], sh[2], sh[3]),
        });
        let g = |a: &str| s.get(a, "", 5.0, "missed_pct").unwrap_or(f64::NAN);
        let (f, e, b) = (g("FCFS"), g("EASY"), g("FB"));
        out.push(two_level::claim(
            "Fig. 31 (Ta = 5): Flexible Backfilling misses fewer deadlines than EASY and FCFS",
            b < e && b < f,
            format!("% missed FCFS {f:.2}, EASY {e:.2}, FB {b:.2}"),
        ));
    }
    if tas.contains(&15.0) {
        let sh = two_level::shares(s, fb, 15.0);
        out.push(Claim {
            claim: "Ta = 15: the most powerful cluster executes almost 70 % of the work (≥ 60 %), the smallest close to 0 (≤ 2 %)".into(),
            holds: sh[0] >= 60.0 && sh[3] <= 2.0,
            evidence: format!("shares {:.1}/{:.1}/{:.1}/{:.1}", sh[0], sh[1], sh[2], sh[3]),
        });
    }
    out
}
