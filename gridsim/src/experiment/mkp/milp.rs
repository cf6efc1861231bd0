//! The exact optimum of an `mkp` knapsack instance, by a general MILP solver (the pure-Rust
//! `microlp` crate's branch and bound over LP relaxations), the reference against which the greedy
//! pre-matching and our own branch and bound are judged (spec `two-level-grid-scheduler.md` D7.3,
//! D9.2 Table 5, D12 #36).
//!
//! The model is the multidimensional 0-1 knapsack of [`knapsack`](gridsched_core::convergent::knapsack):
//! one binary `x_i` per item, `Σ_{i uses l} x_i ≤ cap_l` for every licence `l` that more items
//! ask for than it has copies (the others' rows cannot bind and are left out), `x_i = 1` for a
//! pinned item, and `max Σ value_i · x_i`. The search is bounded by a number of branch-and-bound
//! nodes, which makes the outcome (proved or not, and the plan) independent of the machine's speed.

use anyhow::{Result, anyhow, bail};
use gridsched_core::convergent::knapsack::{Item, feasible, value};
use microlp::{ComparisonOp, Error, OptimizationDirection, Problem, SolveOptions, SolveOutcome};
use std::time::Instant;

/// What the MILP solver returned for one instance.
#[derive(Clone, Debug, PartialEq)]
pub struct MilpOutcome {
    /// The best plan found (which items are kept), if the node budget let it find one.
    pub keep: Option<Vec<bool>>,
    /// Its total value (Σ value of the kept items).
    pub value: Option<f64>,
    /// Whether the plan is proved optimal (the search finished within the node budget).
    pub proved: bool,
    /// Branch-and-bound nodes solved (the root relaxation not counted).
    pub nodes: u64,
    /// Wall-clock seconds of the solve, model construction included.
    pub seconds: f64,
}

/// Solves the instance with at most `node_limit` branch-and-bound nodes (`None`: to the end).
/// `Ok(None)` when the pinned items alone do not fit. The returned plan is checked here: it meets
/// every capacity, keeps every pinned item, and its value is the solver's objective.
pub fn solve(items: &[Item], caps: &[u32], node_limit: Option<u64>) -> Result<Option<MilpOutcome>> {
    let start = Instant::now();
    let mut p = Problem::new(OptimizationDirection::Maximize);
    let vars: Vec<_> = items
        .iter()
        .map(|it| {
            if it.pinned {
                p.add_integer_var(it.value, (1, 1))
            } else {
                p.add_binary_var(it.value)
            }
        })
        .collect();
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); caps.len()];
    for (i, it) in items.iter().enumerate() {
        for &l in &it.licences {
            users[l].push(i);
        }
    }
    for (l, us) in users.iter().enumerate() {
        if us.len() > caps[l] as usize {
            let row: Vec<_> = us.iter().map(|&i| (vars[i], 1.0)).collect();
            p.add_constraint(row, ComparisonOp::Le, f64::from(caps[l]));
        }
    }
    let mut opts = SolveOptions::default();
    opts.node_limit = node_limit;
    let outcome = match p.solve_with(opts) {
        Ok(o) => o,
        Err(Error::Infeasible) => return Ok(None),
        Err(e) => bail!("MILP solver failed: {e}"),
    };
    let nodes = outcome.stats().nodes_solved;
    let proved = outcome.is_optimal();
    let (keep, val) = match &outcome {
        SolveOutcome::Solution(s) => {
            let keep: Vec<bool> = vars.iter().map(|&v| s.var_value(v) > 0.5).collect();
            let val = value(items, &keep);
            if !feasible(items, &keep, caps)
                || items.iter().zip(&keep).any(|(it, k)| it.pinned && !k)
                || (val - s.objective()).abs() > 1e-6 * val.abs().max(1.0)
            {
                return Err(anyhow!(
                    "the MILP plan does not check: value {val}, objective {}",
                    s.objective()
                ));
            }
            (Some(keep), Some(val))
        }
        SolveOutcome::Interrupted(_) => (None, None),
    };
    Ok(Some(MilpOutcome {
        keep,
        value: val,
        proved,
        nodes,
        seconds: start.elapsed().as_secs_f64(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn item(value: f64, lic: &[usize]) -> Item {
        Item {
            value,
            licences: lic.to_vec(),
            pinned: false,
            order: 0,
        }
    }

    /// Licences 0 and 1 have one copy each, licence 2 two. Items (value = licences used):
    /// a {0,1} = 2, b {0} = 1, c {1,2} = 2, d {2} = 1, e {2} = 1, f {} = 0.
    /// Licence 0 takes a or b, licence 1 a or c, licence 2 two of c, d, e. With a: b and c out,
    /// d and e in: 2 + 1 + 1 = 4. Without a: b, c and one of d, e: 1 + 2 + 1 = 4. So 4 is the
    /// optimum, and taking a then c is impossible.
    #[test]
    fn a_hand_solved_instance_reaches_its_optimum_of_four() {
        let items = vec![
            item(2.0, &[0, 1]),
            item(1.0, &[0]),
            item(2.0, &[1, 2]),
            item(1.0, &[2]),
            item(1.0, &[2]),
            item(0.0, &[]),
        ];
        let caps = [1, 1, 2];
        let o = solve(&items, &caps, None).unwrap().unwrap();
        assert!(o.proved);
        assert_eq!(o.value, Some(4.0));
        let keep = o.keep.unwrap();
        assert!(feasible(&items, &keep, &caps));
        assert!(!(keep[0] && keep[2]));
        // Pinning c (and so excluding a) keeps the optimum at 4: b, c and one of d, e.
        let mut pinned = items.clone();
        pinned[2].pinned = true;
        let o = solve(&pinned, &caps, None).unwrap().unwrap();
        assert_eq!((o.proved, o.value), (true, Some(4.0)));
        assert!(o.keep.as_ref().unwrap()[2] && !o.keep.as_ref().unwrap()[0]);
        // Pinning a and c together cannot fit licence 1's single copy.
        pinned[0].pinned = true;
        assert_eq!(solve(&pinned, &caps, None).unwrap(), None);
    }

    /// Random small instances (some items pinned) against the enumeration of every plan: the
    /// solver proves the best value, or answers `None` exactly when the pinned items do not fit.
    #[test]
    fn random_small_instances_match_the_enumeration_of_every_plan() {
        let mut rng = ChaCha8Rng::seed_from_u64(36);
        let mut proved_infeasible = 0;
        for _ in 0..200 {
            let nlic = rng.random_range(1..=5);
            let caps: Vec<u32> = (0..nlic).map(|_| rng.random_range(0..=3)).collect();
            let n = rng.random_range(1..=11);
            let items: Vec<Item> = (0..n)
                .map(|k| Item {
                    value: f64::from(rng.random_range(0..=6u32)),
                    licences: (0..nlic).filter(|_| rng.random_bool(0.4)).collect(),
                    pinned: rng.random_bool(0.1),
                    order: k,
                })
                .collect();
            let mut best: Option<f64> = None;
            for mask in 0u32..(1 << n) {
                let keep: Vec<bool> = (0..n).map(|i| mask & (1 << i) != 0).collect();
                let pins_kept = items.iter().zip(&keep).all(|(it, k)| !it.pinned || *k);
                if pins_kept && feasible(&items, &keep, &caps) {
                    let v = value(&items, &keep);
                    best = Some(best.map_or(v, |b: f64| b.max(v)));
                }
            }
            let got = solve(&items, &caps, None).unwrap();
            match (best, got) {
                (None, None) => proved_infeasible += 1,
                (Some(b), Some(o)) => {
                    assert!(o.proved, "{items:?} {caps:?}");
                    assert_eq!(o.value, Some(b), "{items:?} {caps:?}");
                }
                (b, o) => panic!("enumeration {b:?}, MILP {o:?}: {items:?} {caps:?}"),
            }
        }
        assert!(
            proved_infeasible > 0,
            "some instances have pinned items that do not fit"
        );
    }
}
