//! Slurm's classic fair-share factor (its "Classic Fairshare Algorithm" page): normalized shares
//! multiplied down the tree, effective usage from the top tier down, `F = 2^(−U_E / S / d)`.

use super::tree::{Kind, Tree};

/// Each user's classic fair-share factor, by association index (accounts: `None`), from each
/// user's normalized usage (`usage(user)`, a fraction of the grid's) and the dampening factor
/// `d` (Slurm's `FairShareDampeningFactor`, 1 by default). A user with no share gets 0.
pub fn classic(tree: &Tree, usage: impl Fn(&str) -> f64, d: f64) -> Vec<Option<f64>> {
    let actual = tree.rolled_up(usage);
    let n = tree.nodes.len();
    let mut norm = vec![0.0; n];
    let mut effective = vec![0.0; n];
    // From the top tier down: a parent before its children.
    let mut todo: Vec<usize> = tree.root.iter().rev().copied().collect();
    while let Some(i) = todo.pop() {
        let s = tree.share_of_level(i);
        match tree.parent[i] {
            None => {
                norm[i] = s;
                effective[i] = actual[i];
            }
            Some(p) => {
                norm[i] = norm[p] * s;
                effective[i] = actual[i] + (effective[p] - actual[i]) * s;
            }
        }
        todo.extend(tree.children[i].iter().rev());
    }
    (0..n)
        .map(|i| {
            (tree.nodes[i].kind == Kind::User).then(|| match norm[i] {
                s if s > 0.0 => (-effective[i] / s / d).exp2(),
                _ => 0.0,
            })
        })
        .collect()
}
