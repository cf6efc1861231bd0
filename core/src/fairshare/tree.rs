//! The account tree (Slurm's associations): accounts under a root, each with raw shares of its
//! parent's, and users under accounts with raw shares of their account's. A user named under two
//! accounts is two associations; here a user belongs to one account.

use std::collections::HashMap;

/// Whether an association is an account or a user.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// An account: it has children (accounts or users).
    #[default]
    Account,
    /// A user: a leaf, charged for its jobs.
    User,
}

/// One association as given: its name, its parent (`None`: under the root), its raw shares.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Assoc {
    /// Its name (unique among accounts, and among users).
    pub name: String,
    /// An account (default) or a user.
    #[serde(default)]
    pub kind: Kind,
    /// Its parent account; `None` for an account directly under the root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Its raw shares of its parent's (Slurm's `Fairshare=` number).
    pub shares: u32,
    /// Jobs of the association (an account: of all its users) out at the sites or past the
    /// meta level's queue at once, at most (Slurm's `MaxJobs` / `GrpJobs`); more wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_jobs: Option<u32>,
    /// Processors of those jobs together, at most (`GrpTRES=cpu`); more wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_procs: Option<u32>,
    /// Jobs in the grid (waiting or running) at once, at most (`MaxSubmitJobs`); a submission
    /// beyond is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_submit: Option<u32>,
    /// Processor-seconds of the association, at most: its decayed usage (so a quota refilled
    /// at the half-life's pace; with `half_life = 0`, a hard budget) plus what its running jobs
    /// may still use (processors × estimate) plus the job's own (Slurm's `GrpTRESMins=cpu`, in
    /// seconds); a job beyond waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_proc_seconds: Option<u64>,
    /// A user's id, as its jobs carry it ([`crate::model::UserId`]): the driver gives it (the
    /// live grid interns the user's name, a trace replay takes the trace's user number).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u32>,
}

/// Why a tree is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TreeError {
    /// A name outside the character set of [`crate::model::check_name`].
    #[error("`{0}` is not a valid name: {1}")]
    Name(String, String),
    /// Two accounts, or two users, of one name.
    #[error("`{0}` is named twice")]
    Twice(String),
    /// A parent that is not an account of the tree.
    #[error("`{0}`: its parent `{1}` is not an account")]
    UnknownParent(String, String),
    /// A user directly under the root: users belong to accounts.
    #[error("user `{0}`: a user belongs to an account (give its parent)")]
    UserAtRoot(String),
    /// Siblings whose shares are all zero: none of them has a share.
    #[error("`{0}` and its siblings have no shares at all")]
    NoShares(String),
    /// An account that is its own ancestor.
    #[error("`{0}` is its own ancestor")]
    Cycle(String),
}

/// The checked tree: associations by index, each with its parent and children.
#[derive(Clone, Debug)]
pub struct Tree {
    pub(super) nodes: Vec<Assoc>,
    /// Per association, its parent (`None`: the root).
    pub(super) parent: Vec<Option<usize>>,
    /// The root's children, then each association's, in the order given.
    pub(super) root: Vec<usize>,
    pub(super) children: Vec<Vec<usize>>,
    users: HashMap<String, usize>,
}

impl Tree {
    /// Checks `assocs` and builds the tree.
    pub fn new(assocs: Vec<Assoc>) -> Result<Tree, TreeError> {
        let mut accounts: HashMap<&str, usize> = HashMap::new();
        let mut users = HashMap::new();
        for (i, a) in assocs.iter().enumerate() {
            crate::model::check_name(&a.name)
                .map_err(|why| TreeError::Name(a.name.clone(), why))?;
            let fresh = match a.kind {
                Kind::Account => accounts.insert(a.name.as_str(), i).is_none(),
                Kind::User => users.insert(a.name.clone(), i).is_none(),
            };
            if !fresh {
                return Err(TreeError::Twice(a.name.clone()));
            }
        }
        let mut parent = vec![None; assocs.len()];
        let mut children = vec![Vec::new(); assocs.len()];
        let mut root = Vec::new();
        for (i, a) in assocs.iter().enumerate() {
            match &a.parent {
                None if a.kind == Kind::User => return Err(TreeError::UserAtRoot(a.name.clone())),
                None => root.push(i),
                Some(p) => {
                    let &pi = accounts
                        .get(p.as_str())
                        .ok_or_else(|| TreeError::UnknownParent(a.name.clone(), p.clone()))?;
                    parent[i] = Some(pi);
                    children[pi].push(i);
                }
            }
        }
        // Every association reaches the root.
        for (i, a) in assocs.iter().enumerate() {
            let mut at = i;
            for _ in 0..=assocs.len() {
                match parent[at] {
                    Some(p) => at = p,
                    None => break,
                }
            }
            if parent[at].is_some() {
                return Err(TreeError::Cycle(a.name.clone()));
            }
        }
        for level in std::iter::once(&root).chain(children.iter()) {
            if !level.is_empty() && level.iter().all(|&i| assocs[i].shares == 0) {
                return Err(TreeError::NoShares(assocs[level[0]].name.clone()));
            }
        }
        Ok(Tree {
            nodes: assocs,
            parent,
            root,
            children,
            users,
        })
    }

    /// The association of user `name`.
    pub fn user(&self, name: &str) -> Option<usize> {
        self.users.get(name).copied()
    }

    /// The associations' names, by index.
    pub fn name(&self, i: usize) -> &str {
        &self.nodes[i].name
    }

    /// How many users the tree has.
    pub fn users(&self) -> usize {
        self.users.len()
    }

    /// The siblings of `i` (itself included), in the order given.
    /// The associations, as given.
    pub fn assocs(&self) -> &[Assoc] {
        &self.nodes
    }

    /// The normalized share of association `i`: its share of its level, times its parent's
    /// normalized share (Slurm's `S`).
    pub fn normalized_share(&self, i: usize) -> f64 {
        let mut s = 1.0;
        let mut at = Some(i);
        while let Some(j) = at {
            s *= self.share_of_level(j);
            at = self.parent[j];
        }
        s
    }

    pub(super) fn level(&self, i: usize) -> &[usize] {
        match self.parent[i] {
            Some(p) => &self.children[p],
            None => &self.root,
        }
    }

    /// `i`'s shares over those of its level.
    pub(super) fn share_of_level(&self, i: usize) -> f64 {
        let all: u64 = self
            .level(i)
            .iter()
            .map(|&j| u64::from(self.nodes[j].shares))
            .sum();
        f64::from(self.nodes[i].shares) / all as f64
    }

    /// Per association, the usage of its users summed up the tree.
    pub(super) fn rolled_up(&self, per_user: impl Fn(&str) -> f64) -> Vec<f64> {
        let mut u = vec![0.0; self.nodes.len()];
        for (i, a) in self.nodes.iter().enumerate() {
            if a.kind == Kind::User {
                let v = per_user(&a.name);
                let mut at = Some(i);
                while let Some(j) = at {
                    u[j] += v;
                    at = self.parent[j];
                }
            }
        }
        u
    }
}
