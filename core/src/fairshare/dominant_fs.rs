//! A dominant-resource fair-share factor over processors and licences, in the family of
//! Dominant Resource Fairness as Armada and Kueue apply it between queues. Spec reading (Slurm
//! documents no such factor): each user's dominant share is the largest of its fractions of the
//! grid's decayed usage of each resource (processor-seconds, and the seconds of each licence
//! type), and its factor is `2^(−DS / S)` with `S` its normalized share, the shape of Slurm's
//! classic factor; with processors alone and one user per account it equals the classic one.

use super::tree::{Kind, Tree};

/// Each user's dominant-resource factor, by association index (accounts: `None`), from its
/// fraction of the grid's usage of each resource (`fractions(user)`, each in `0..=1`).
pub fn dominant(tree: &Tree, fractions: impl Fn(&str) -> Vec<f64>) -> Vec<Option<f64>> {
    tree.assocs()
        .iter()
        .enumerate()
        .map(|(i, a)| {
            (a.kind == Kind::User).then(|| {
                let ds = fractions(&a.name).into_iter().fold(0.0, f64::max);
                match tree.normalized_share(i) {
                    s if s > 0.0 => (-ds / s).exp2(),
                    _ => 0.0,
                }
            })
        })
        .collect()
}
