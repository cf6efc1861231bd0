//! Who may submit urgent jobs, and up to which level (Kurowski, Oleksiak, Piątek & Węglarz §2 and
//! §4: SPRUCE's urgency tokens carry the highest level a user may trigger). The `[urgent]` section
//! gives each user's allowance; without one, a user may submit no urgent job at all. A
//! submission above the allowance is refused with PERMISSION_DENIED naming the user, the level
//! asked and the level allowed.

use gridsched_core::model::Urgency;
use gridsched_proto::{urgency_from, v1};
use serde::Deserialize;
use std::collections::BTreeMap;

/// The `[urgent]` section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UrgentConfig {
    /// The highest urgency each user may submit, by user name (`alice = "critical"`).
    pub allowance: BTreeMap<String, Urgency>,
    /// The highest urgency of every other user; absent = none.
    pub default: Option<Urgency>,
}

impl UrgentConfig {
    /// The highest urgency `user` may submit.
    pub fn allowance_of(&self, user: &str) -> Option<Urgency> {
        self.allowance.get(user).copied().or(self.default)
    }

    /// Why `spec` may not be submitted, if its urgency is above its user's allowance (a spec
    /// whose urgency is not a known value is left to the spec's validation).
    pub fn refusal(&self, spec: &v1::JobSpec) -> Option<String> {
        let asked = urgency_from(spec.urgency).ok().flatten()?;
        match self.allowance_of(&spec.user) {
            Some(max) if asked <= max => None,
            Some(max) => Some(format!(
                "field `urgency`: user `{}` may submit urgent jobs up to `{max}`, not `{asked}`",
                spec.user
            )),
            None => Some(format!(
                "field `urgency`: user `{}` has no allowance for urgent jobs ([urgent] allowance)",
                spec.user
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(user: &str, u: v1::Urgency) -> v1::JobSpec {
        v1::JobSpec {
            user: user.into(),
            urgency: u as i32,
            ..Default::default()
        }
    }

    #[test]
    fn allowances_cap_the_level_and_typical_jobs_need_none() {
        let c: UrgentConfig = toml::from_str(
            "default = \"important\"\n[allowance]\nalice = \"critical\"\nbob = \"high\"\n",
        )
        .unwrap();
        assert_eq!(c.refusal(&spec("alice", v1::Urgency::Critical)), None);
        assert_eq!(c.refusal(&spec("bob", v1::Urgency::High)), None);
        let e = c.refusal(&spec("bob", v1::Urgency::Critical)).unwrap();
        assert!(
            e.contains("`bob`") && e.contains("`high`") && e.contains("`critical`"),
            "{e}"
        );
        assert_eq!(c.refusal(&spec("carol", v1::Urgency::Important)), None);
        assert!(c.refusal(&spec("carol", v1::Urgency::High)).is_some());
        assert_eq!(c.refusal(&spec("carol", v1::Urgency::Unspecified)), None);
        let none = UrgentConfig::default();
        let e = none
            .refusal(&spec("alice", v1::Urgency::Important))
            .unwrap();
        assert!(e.contains("no allowance"), "{e}");
        let bad = toml::from_str::<UrgentConfig>("[allowance]\nalice = \"red\"\n").unwrap_err();
        assert!(bad.to_string().contains("red"), "{bad}");
        let bad = toml::from_str::<UrgentConfig>("defualt = \"high\"\n").unwrap_err();
        assert!(bad.to_string().contains("defualt"), "{bad}");
    }
}
