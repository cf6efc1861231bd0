//! Slurm's Fair Tree (its "Fair Tree Fairshare Algorithm" page): among siblings, the level fair
//! share `LF = S / U` (shares and usage each over the siblings'; no usage: infinite); the tree
//! sorted by it, highest first, and walked depth first; users ranked as they are found, each
//! factor its rank over the number of users, the first user 1.0. Ties: sibling users of one
//! `LF` share a rank; a user tied with a sibling account takes the rank of that account's
//! highest user; sibling accounts of one `LF` have their children merged before descending.

use super::tree::{Kind, Tree};
use std::cmp::Ordering;

/// Each user's Fair Tree factor, by association index (accounts: `None`), from each user's raw
/// usage (`usage(user)`).
pub fn fair_tree(tree: &Tree, usage: impl Fn(&str) -> f64) -> Vec<Option<f64>> {
    let raw = tree.rolled_up(usage);
    let users = tree.users();
    let mut factor = vec![None; tree.nodes.len()];
    let mut rank = users;
    visit(tree, &raw, tree.root.clone(), &mut rank, users, &mut factor);
    factor
}

/// `LF` of each of `level` among them.
fn level_fs(tree: &Tree, raw: &[f64], level: &[usize]) -> Vec<f64> {
    let shares: u64 = level.iter().map(|&i| u64::from(tree.nodes[i].shares)).sum();
    let used: f64 = level.iter().map(|&i| raw[i]).sum();
    level
        .iter()
        .map(|&i| {
            let s = f64::from(tree.nodes[i].shares) / shares.max(1) as f64;
            let u = if used > 0.0 { raw[i] / used } else { 0.0 };
            if u > 0.0 { s / u } else { f64::INFINITY }
        })
        .collect()
}

fn visit(
    tree: &Tree,
    raw: &[f64],
    level: Vec<usize>,
    rank: &mut usize,
    users: usize,
    factor: &mut [Option<f64>],
) {
    let lf = level_fs(tree, raw, &level);
    let mut order: Vec<usize> = (0..level.len()).collect();
    // Highest first; equal values keep the given order.
    order.sort_by(|&a, &b| lf[b].partial_cmp(&lf[a]).unwrap_or(Ordering::Equal));
    let mut k = 0;
    while k < order.len() {
        // The run of siblings tied on LF.
        let mut end = k + 1;
        while end < order.len() && lf[order[end]] == lf[order[k]] {
            end += 1;
        }
        let tied: Vec<usize> = order[k..end].iter().map(|&o| level[o]).collect();
        let (accounts, tied_users): (Vec<usize>, Vec<usize>) = tied
            .iter()
            .partition(|&&i| tree.nodes[i].kind == Kind::Account);
        // Tied users share the rank they reach first (that of a tied account's highest user,
        // when there is one); tied accounts descend as one, their children merged.
        let shared = *rank;
        if !accounts.is_empty() {
            let merged: Vec<usize> = accounts
                .iter()
                .flat_map(|&a| tree.children[a].iter().copied())
                .collect();
            visit(tree, raw, merged, rank, users, factor);
        }
        for &u in &tied_users {
            factor[u] = Some(shared as f64 / users as f64);
        }
        *rank = rank.saturating_sub(tied_users.len());
        k = end;
    }
}
