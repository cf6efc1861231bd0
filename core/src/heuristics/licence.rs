//! Licence criticality and the Flexible Backfilling Licence heuristic (spec
//! `two-level-grid-scheduler.md` D2.4 Eq. 3.6–3.8, D5, D6.1; ambiguities D12 #14 and #15).
//!
//! `rho_l = demand_l / offer_l`: how many jobs want licence `l` over how many copies can be active
//! at once. A licence is critical when `rho_l > 1`. The FB term is
//! `Δ_L = W · (Σ_{l ∈ L_cbar(i)} rho_l + d · Σ_{l ∈ L_c(i)} rho_l)` over the licences job `i` asks for.

use crate::model::LicenceId;
use serde::{Deserialize, Serialize};

/// Which `d` multiplies the critical part of the FB licence term (D12 #14).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum LicenceD {
    /// `max(|L_c(i)|, 1)`: the number of critical licences the job needs (recommended, default).
    #[default]
    PerJobCritical,
    /// `max(|L_c|, 1)`: the number of critical licences of the cluster.
    GlobalCritical,
    /// The formula as printed: the number of distinct non-critical licences requested by the
    /// queued jobs, at least 1.
    Literal,
}

/// Which jobs count as demand in `rho` (D12 #15).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum RhoJobs {
    /// Queued and running jobs (recommended, default): running jobs hold copies.
    #[default]
    QueuedAndRunning,
    /// Queued jobs only.
    Queued,
}

/// `rho` per licence index from the demand counts and the offer; a licence with no offer and some
/// demand is infinitely critical (`f64::INFINITY`), one with neither has `rho = 0`.
pub fn criticality(demand: &[u32], offer: impl Fn(LicenceId) -> u32) -> Vec<f64> {
    demand
        .iter()
        .enumerate()
        .map(|(i, &d)| {
            let a = offer(LicenceId(i as u16));
            match (d, a) {
                (0, _) => 0.0,
                (_, 0) => f64::INFINITY,
                _ => f64::from(d) / f64::from(a),
            }
        })
        .collect()
}

/// The FB licence term of a job asking for `licences`, given `rho` per licence index; `d_other` is
/// the `d` to use for [`LicenceD::GlobalCritical`] and [`LicenceD::Literal`] (ignored for the per-job
/// reading). Licences with an infinite `rho` (no copy anywhere) are left out: the job cannot run.
pub fn licence_fb(
    licences: &[LicenceId],
    rho: &[f64],
    weight: f64,
    mode: LicenceD,
    d_other: u32,
) -> f64 {
    let mut critical = 0.0;
    let mut ncrit = 0u32;
    let mut plain = 0.0;
    for l in licences {
        let r = rho.get(l.index()).copied().unwrap_or(0.0);
        if !r.is_finite() {
            continue;
        }
        if r > 1.0 {
            critical += r;
            ncrit += 1;
        } else {
            plain += r;
        }
    }
    let d = match mode {
        LicenceD::PerJobCritical => ncrit.max(1),
        LicenceD::GlobalCritical | LicenceD::Literal => d_other.max(1),
    };
    weight * (plain + f64::from(d) * critical)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn criticality_is_demand_over_offer() {
        let rho = criticality(&[6, 2, 0, 3], |l| [4, 4, 4, 0][l.index()]);
        assert_eq!(rho[0], 1.5);
        assert_eq!(rho[1], 0.5);
        assert_eq!(rho[2], 0.0);
        assert!(rho[3].is_infinite());
    }

    #[test]
    fn worked_fb_licence_terms() {
        // rho: l0 = 1.5 (critical), l1 = 0.5, l2 = 3.0 (critical).
        let rho = [1.5, 0.5, 3.0];
        let lic = |v: &[u16]| v.iter().map(|&l| LicenceId(l)).collect::<Vec<_>>();
        // Only non-critical: W * 0.5.
        assert_eq!(
            licence_fb(&lic(&[1]), &rho, 1.0, LicenceD::PerJobCritical, 0),
            0.5
        );
        // One critical: d = 1 -> 1.5 + 0.5.
        assert_eq!(
            licence_fb(&lic(&[0, 1]), &rho, 1.0, LicenceD::PerJobCritical, 0),
            2.0
        );
        // Two critical: d = 2 -> 0.5 + 2 * 4.5 = 9.5; with W = 2.5 -> 23.75.
        assert_eq!(
            licence_fb(&lic(&[0, 1, 2]), &rho, 1.0, LicenceD::PerJobCritical, 0),
            9.5
        );
        assert_eq!(
            licence_fb(&lic(&[0, 1, 2]), &rho, 2.5, LicenceD::PerJobCritical, 0),
            23.75
        );
        // Global reading with 5 critical licences in the cluster: 0.5 + 5 * 1.5.
        assert_eq!(
            licence_fb(&lic(&[0, 1]), &rho, 1.0, LicenceD::GlobalCritical, 5),
            8.0
        );
        assert_eq!(licence_fb(&[], &rho, 1.0, LicenceD::PerJobCritical, 0), 0.0);
    }
}
