//! Configuration of the meta-scheduler (issue 5 part 1): listen address, state directory, the
//! highest priority and the sites with their local-scheduler endpoints and static capabilities.
//!
//! Read from a TOML file; unknown keys are refused and every error names the offending key.

use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The whole configuration file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetaConfig {
    /// Address the gRPC server listens on.
    #[serde(default = "default_listen")]
    pub listen: String,
    /// Directory of the durable store.
    #[serde(default = "default_state_dir")]
    pub state_dir: PathBuf,
    /// Highest priority assigned by classification (the length of the Load / Count arrays).
    #[serde(default = "default_max_priority")]
    pub max_priority: u32,
    /// The sites of the grid, one cluster (local scheduler) each.
    #[serde(default)]
    pub sites: Vec<SiteConfig>,
}

/// One site and its cluster's static capabilities.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SiteConfig {
    /// Site (and cluster) name.
    pub name: String,
    /// Address of its local scheduler, e.g. `http://127.0.0.1:50061`.
    #[serde(default)]
    pub endpoint: String,
    /// Its machines.
    pub machines: Vec<MachineConfig>,
    /// Names of the licences available at the site.
    #[serde(default)]
    pub licences: Vec<String>,
}

/// One machine of a site.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineConfig {
    /// Machine name.
    pub name: String,
    /// Its processors.
    pub processors: u32,
}

fn default_listen() -> String {
    "127.0.0.1:50051".into()
}
fn default_state_dir() -> PathBuf {
    PathBuf::from("meta-state")
}
fn default_max_priority() -> u32 {
    10
}

impl Default for MetaConfig {
    fn default() -> Self {
        MetaConfig {
            listen: default_listen(),
            state_dir: default_state_dir(),
            max_priority: default_max_priority(),
            sites: Vec::new(),
        }
    }
}

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The TOML is malformed or has a wrong key (the message names it).
    #[error("invalid configuration: {0}")]
    Parse(String),
    /// A value is inconsistent; names the key.
    #[error("invalid configuration: `{key}`: {reason}")]
    Invalid {
        /// The offending key.
        key: String,
        /// Why.
        reason: String,
    },
}

impl MetaConfig {
    /// Parses and checks a TOML text.
    pub fn from_toml(text: &str) -> Result<MetaConfig, ConfigError> {
        let cfg: MetaConfig =
            toml::from_str(text).map_err(|e| ConfigError::Parse(e.to_string()))?;
        cfg.check()?;
        Ok(cfg)
    }

    /// Reads, parses and checks a TOML file.
    pub fn from_file(path: &Path) -> Result<MetaConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: path.to_owned(),
            source,
        })?;
        MetaConfig::from_toml(&text)
    }

    /// Checks the values that serde cannot.
    pub fn check(&self) -> Result<(), ConfigError> {
        let bad = |key: String, reason: &str| ConfigError::Invalid {
            key,
            reason: reason.into(),
        };
        if self.max_priority == 0 {
            return Err(bad("max_priority".into(), "must be at least 1"));
        }
        let mut names = std::collections::HashSet::new();
        for (i, s) in self.sites.iter().enumerate() {
            if s.name.is_empty() {
                return Err(bad(format!("sites[{i}].name"), "must not be empty"));
            }
            if !names.insert(&s.name) {
                return Err(bad(format!("sites[{i}].name"), "duplicate site name"));
            }
            if s.machines.is_empty() {
                return Err(bad(
                    format!("sites[{i}].machines"),
                    "a site needs a machine",
                ));
            }
            for (j, m) in s.machines.iter().enumerate() {
                if m.processors == 0 {
                    return Err(bad(
                        format!("sites[{i}].machines[{j}].processors"),
                        "must be at least 1",
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sites_and_defaults() {
        let cfg = MetaConfig::from_toml(
            "[[sites]]\nname = \"a\"\nendpoint = \"http://x\"\nlicences = [\"matlab\"]\n\
             machines = [{ name = \"m1\", processors = 8 }]\n",
        )
        .unwrap();
        assert_eq!(cfg.sites[0].machines[0].processors, 8);
        assert_eq!(cfg.max_priority, 10);
        assert_eq!(cfg.listen, "127.0.0.1:50051");
    }

    #[test]
    fn wrong_key_is_named() {
        let e = MetaConfig::from_toml("[[sites]]\nname = \"a\"\nmachins = []\n").unwrap_err();
        assert!(e.to_string().contains("machins"), "{e}");
        let e = MetaConfig::from_toml(
            "[[sites]]\nname = \"a\"\nmachines = [{ name = \"m\", processors = 0 }]\n",
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("sites[0].machines[0].processors"),
            "{e}"
        );
    }
}
