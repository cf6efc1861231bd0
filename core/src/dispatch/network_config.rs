//! The grid's links as a configuration writes them — the live meta-scheduler's `[network]`
//! section, `gridsim cluster --network FILE` — resolved over the sites' names into the
//! [`Network`] the strategies that estimate completion count the inputs' transfers over
//! ([`super::Transfers`]).
//!
//! ```toml
//! [network]
//! submitters = { bandwidth = "100 MB/s", latency_ms = 20 }  # to every site, unless a link says
//! between = { bandwidth = "1 GB/s", latency_ms = 5 }        # between any two sites, likewise
//! data_blind = false                                        # true: count nothing, explain all
//! [[network.links]]
//! from = "submitters"   # or a site's name
//! to = "beta"
//! bandwidth = "10 MB/s"
//! latency_ms = 40
//! ```

use super::{Link, Network};
use serde::Deserialize;

/// One link as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    /// Bytes per second: a number, or a text with a unit (`"100 MB/s"`, `"1 GiB/s"`,
    /// `"10 Gbit/s"`).
    pub bandwidth: Rate,
    /// Latency in milliseconds.
    #[serde(default)]
    pub latency_ms: u64,
}

/// A link between two named ends.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamedLink {
    /// `"submitters"` or a site's name.
    pub from: String,
    /// A site's name.
    pub to: String,
    /// Bytes per second, as [`LinkConfig::bandwidth`].
    pub bandwidth: Rate,
    /// Latency in milliseconds.
    #[serde(default)]
    pub latency_ms: u64,
}

/// The `[network]` section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkConfig {
    /// The link from the submitters' side to every site.
    pub submitters: LinkConfig,
    /// The link between any two sites.
    pub between: LinkConfig,
    /// Links that differ from those two.
    #[serde(default)]
    pub links: Vec<NamedLink>,
    /// The strategies ignore the transfers (the data-blind baseline); `explain` still shows them.
    #[serde(default)]
    pub data_blind: bool,
}

/// A rate in bytes per second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate(pub u64);

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Rate, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Number(n) => Ok(Rate(n)),
            Raw::Text(t) => parse_rate(&t).map(Rate).map_err(serde::de::Error::custom),
        }
    }
}

/// Bytes per second from `"100 MB/s"`, `"1.5 GiB/s"`, `"10 Gbit/s"` or `"125000"`.
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let t = t.strip_suffix("/s").unwrap_or(t).trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = (t[..split].trim(), t[split..].trim());
    let value: f64 = num
        .parse()
        .map_err(|_| format!("`{text}` is not a rate such as \"100 MB/s\""))?;
    let factor: f64 = match unit {
        "" | "B" => 1.0,
        "kB" | "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        "kbit" | "Kbit" => 1e3 / 8.0,
        "Mbit" => 1e6 / 8.0,
        "Gbit" => 1e9 / 8.0,
        _ => {
            return Err(format!(
                "`{text}`: unknown unit `{unit}` (B, kB, MB, GB, KiB, MiB, GiB, kbit, Mbit, Gbit, each per second)"
            ));
        }
    };
    let bytes = (value * factor).round();
    if !(1.0..=u64::MAX as f64).contains(&bytes) {
        return Err(format!(
            "`{text}`: a rate must be at least 1 byte per second"
        ));
    }
    Ok(bytes as u64)
}

impl NetworkConfig {
    /// The network over `sites` (names in cluster order), or the key that is wrong and why.
    pub fn resolve(&self, sites: &[&str]) -> Result<Network, (String, String)> {
        let link = |c: &LinkConfig| Link {
            bytes_per_s: c.bandwidth.0,
            latency_ms: c.latency_ms,
        };
        let mut net = Network::uniform(sites.len(), link(&self.submitters), link(&self.between));
        for (i, l) in self.links.iter().enumerate() {
            let find = |name: &str, key: &str| {
                sites.iter().position(|s| *s == name).ok_or_else(|| {
                    (
                        format!("network.links[{i}].{key}"),
                        format!("no site named `{name}`"),
                    )
                })
            };
            let to = find(&l.to, "to")?;
            let value = Link {
                bytes_per_s: l.bandwidth.0,
                latency_ms: l.latency_ms,
            };
            if l.from == "submitters" {
                net.submitters[to] = value;
            } else {
                let from = find(&l.from, "from")?;
                if from == to {
                    let why = "a link joins two different sites".to_owned();
                    return Err((format!("network.links[{i}]"), why));
                }
                net.between[from][to] = value;
            }
        }
        Ok(net)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_read_with_their_units() {
        assert_eq!(parse_rate("100 MB/s"), Ok(100_000_000));
        assert_eq!(parse_rate("1 GiB/s"), Ok(1 << 30));
        assert_eq!(parse_rate("10 Gbit/s"), Ok(1_250_000_000));
        assert_eq!(parse_rate("1.5kB"), Ok(1500));
        assert_eq!(parse_rate("125000"), Ok(125_000));
        assert!(parse_rate("fast").unwrap_err().contains("not a rate"));
        assert!(
            parse_rate("3 furlongs/s")
                .unwrap_err()
                .contains("unknown unit")
        );
        assert!(
            parse_rate("0 MB/s")
                .unwrap_err()
                .contains("at least 1 byte")
        );
    }

    #[test]
    fn a_network_resolves_over_the_sites_and_names_a_wrong_link() {
        let cfg: NetworkConfig = toml::from_str(
            r#"
            submitters = { bandwidth = "100 MB/s", latency_ms = 20 }
            between = { bandwidth = 1000000000 }
            [[links]]
            from = "submitters"
            to = "beta"
            bandwidth = "10 MB/s"
            [[links]]
            from = "alpha"
            to = "beta"
            bandwidth = "1 MB/s"
            latency_ms = 40
            "#,
        )
        .unwrap();
        let net = cfg.resolve(&["alpha", "beta"]).unwrap();
        assert_eq!(net.submitters[0].bytes_per_s, 100_000_000);
        assert_eq!(net.submitters[1].bytes_per_s, 10_000_000);
        assert_eq!(net.between[0][1].bytes_per_s, 1_000_000);
        assert_eq!(net.between[1][0].bytes_per_s, 1_000_000_000);
        let (key, why) = cfg.resolve(&["alpha", "gamma"]).unwrap_err();
        assert_eq!(key, "network.links[0].to");
        assert!(why.contains("beta"), "{why}");
        let bad: Result<NetworkConfig, _> = toml::from_str(
            r#"submitters = { bandwidth = "fast" }
               between = { bandwidth = 1 }"#,
        );
        assert!(bad.unwrap_err().to_string().contains("not a rate"));
    }
}
