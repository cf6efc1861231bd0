//! Grid users mapped to the site's local Unix accounts (the `[users]` table of the
//! configuration), the way ARC's grid-mapfile and HTCondor's UID domains keep a grid's users
//! apart on a site's machines: each job runs as its owner's account, in a work directory closed
//! to the others. A site with a map refuses, at Enqueue, a job whose owner it does not map; a
//! site without one runs every job as its agents' own account (`docs/security.md`).

use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;

/// The entry that maps every grid user the table does not name.
pub const ANY_USER: &str = "*";

/// A local account a grid user's jobs run as: `"account"` or `"account:group"` in the
/// configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Account {
    /// The account's name on the site's machines.
    pub user: String,
    /// The group, when not the account's primary group.
    pub group: Option<String>,
}

impl fmt::Display for Account {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.group {
            Some(g) => write!(f, "{}:{g}", self.user),
            None => f.write_str(&self.user),
        }
    }
}

impl<'de> Deserialize<'de> for Account {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Account, D::Error> {
        let text = String::deserialize(d)?;
        Account::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl Account {
    /// Reads `"account"` or `"account:group"`; each name follows the character set of the grid's
    /// names (Unix account names fit).
    pub fn parse(text: &str) -> Result<Account, String> {
        let (user, group) = match text.split_once(':') {
            Some((u, g)) => (u, Some(g)),
            None => (text, None),
        };
        let check = |what: &str, name: &str| {
            gridsched_core::model::check_name(name)
                .map_err(|e| format!("`{text}`: the {what} `{name}` is not a valid name: {e}"))
        };
        check("account", user)?;
        if let Some(g) = group {
            check("group", g)?;
        }
        Ok(Account {
            user: user.to_owned(),
            group: group.map(str::to_owned),
        })
    }
}

/// The site's map of grid users to local accounts; empty = the site maps nobody (every job runs
/// as its agent's account).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct UserMap(BTreeMap<String, Account>);

impl UserMap {
    /// Whether the site maps users (has a `[users]` table).
    pub fn maps(&self) -> bool {
        !self.0.is_empty()
    }

    /// The grid users' names are valid (or `*`).
    pub fn check(&self) -> Result<(), String> {
        for user in self.0.keys().filter(|u| *u != ANY_USER) {
            gridsched_core::model::check_name(user)
                .map_err(|e| format!("users: `{user}` is not a valid name: {e}"))?;
        }
        Ok(())
    }

    /// The account `user`'s jobs run as: its own entry, else the `*` entry.
    pub fn account_of(&self, user: &str) -> Option<&Account> {
        self.0.get(user).or_else(|| self.0.get(ANY_USER))
    }

    /// Whether a job of `user` may come in: always on a site without a map; else only when the
    /// map gives it an account (FAILED_PRECONDITION naming `spec.user` otherwise).
    pub fn admit(&self, user: &str, site: &str) -> Result<(), tonic::Status> {
        if !self.maps() || self.account_of(user).is_some() {
            return Ok(());
        }
        Err(tonic::Status::failed_precondition(format!(
            "spec.user: site `{site}` maps no local account to user `{user}` (its [users] table)"
        )))
    }

    /// What a start order of `user`'s job carries: nothing without a map; the mapped account
    /// and group; an empty account for a user the map no longer names (the agent does not start
    /// the job).
    pub fn order(&self, user: &str) -> (Option<String>, Option<String>) {
        if !self.maps() {
            return (None, None);
        }
        match self.account_of(user) {
            Some(a) => (Some(a.user.clone()), a.group.clone()),
            None => (Some(String::new()), None),
        }
    }

    /// The grid users named (without `*`), and whether `*` maps the others.
    pub fn named(&self) -> (Vec<&str>, bool) {
        let names = self.0.keys().map(String::as_str);
        (
            names.filter(|u| *u != ANY_USER).collect(),
            self.0.contains_key(ANY_USER),
        )
    }

    /// As whom the jobs run, from the map and the agents online (`machine`, its agent's account,
    /// whether it separates users), for the status: "separated: …" only when every online agent
    /// can start jobs as other accounts.
    pub fn describe<'a>(
        &self,
        agents: impl IntoIterator<Item = (&'a str, &'a str, bool)>,
    ) -> String {
        let agents: Vec<(&str, &str, bool)> = agents.into_iter().collect();
        if agents.is_empty() {
            return "unknown: no agent online".into();
        }
        if !self.maps() {
            let mut accounts: Vec<&str> = agents.iter().map(|a| a.1).collect();
            accounts.sort_unstable();
            accounts.dedup();
            let root = if accounts == ["root"] {
                " (no [users] map)"
            } else {
                ""
            };
            return format!("not separated: jobs run as {}{root}", accounts.join(", "));
        }
        if let Some((m, account, _)) = agents.iter().find(|a| !a.2) {
            return format!(
                "not separated: the agent of {m} runs as {account}, not root (jobs of other \
                 accounts fail to start)"
            );
        }
        let (named, any) = self.named();
        let others = match any {
            true => format!(", others as {}", self.0[ANY_USER]),
            false => String::new(),
        };
        let n = named.len();
        let s = if n == 1 { "" } else { "s" };
        format!("separated: {n} user{s} mapped{others}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(text: &str) -> UserMap {
        #[derive(Deserialize)]
        struct T {
            users: UserMap,
        }
        toml::from_str::<T>(text).map(|t| t.users).unwrap()
    }

    #[test]
    fn users_map_to_their_accounts_and_the_others_to_the_catch_all() {
        let m = map("[users]\nalice = \"gs-alice\"\nbob = \"gs-bob:proj\"\n");
        assert!(m.maps());
        assert_eq!(m.order("alice"), (Some("gs-alice".into()), None));
        assert_eq!(m.order("bob"), (Some("gs-bob".into()), Some("proj".into())));
        assert_eq!(m.order("carol"), (Some(String::new()), None));
        let e = m.admit("carol", "alpha").unwrap_err();
        assert_eq!(e.code(), tonic::Code::FailedPrecondition);
        assert_eq!(
            e.message(),
            "spec.user: site `alpha` maps no local account to user `carol` (its [users] table)"
        );
        m.admit("bob", "alpha").unwrap();
        let m = map("[users]\nalice = \"gs-alice\"\n\"*\" = \"pool\"\n");
        assert_eq!(m.order("carol"), (Some("pool".into()), None));
        m.admit("carol", "alpha").unwrap();
        assert_eq!(m.named(), (vec!["alice"], true));
        let none = UserMap::default();
        assert_eq!(none.order("carol"), (None, None));
        none.admit("carol", "alpha").unwrap();
    }

    #[test]
    fn bad_names_are_refused_naming_them() {
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct T {
            users: UserMap,
        }
        let e = toml::from_str::<T>("[users]\nalice = \"../root\"\n").unwrap_err();
        assert!(e.to_string().contains("the account `../root`"), "{e}");
        let e = toml::from_str::<T>("[users]\nalice = \"a:\"\n").unwrap_err();
        assert!(e.to_string().contains("the group ``"), "{e}");
        let m = map("[users]\n\"a b\" = \"x\"\n");
        assert!(m.check().unwrap_err().contains("users: `a b`"));
    }

    #[test]
    fn the_status_says_whether_users_are_kept_apart() {
        let m = map("[users]\nalice = \"gs-alice\"\nbob = \"gs-bob\"\n");
        assert_eq!(
            m.describe([("m0", "root", true), ("m1", "root", true)]),
            "separated: 2 users mapped"
        );
        assert_eq!(
            m.describe([("m0", "root", true), ("m1", "grid", false)]),
            "not separated: the agent of m1 runs as grid, not root (jobs of other accounts fail \
             to start)"
        );
        assert_eq!(m.describe([]), "unknown: no agent online");
        let none = UserMap::default();
        assert_eq!(
            none.describe([("m0", "root", true)]),
            "not separated: jobs run as root (no [users] map)"
        );
        assert_eq!(
            none.describe([("m0", "grid", false), ("m1", "grid", false)]),
            "not separated: jobs run as grid"
        );
        let any = map("[users]\nalice = \"gs-alice\"\n\"*\" = \"pool:grid\"\n");
        assert_eq!(
            any.describe([("m0", "root", true)]),
            "separated: 1 user mapped, others as pool:grid"
        );
    }
}
