//! Admission checks of the meta-scheduler (the static feasibility filtering of spec
//! `two-level-grid-scheduler.md` D3): a job that no site can ever run, or
//! that breaks the configured size limits (`[limits]`, [`SpecLimits`]), is refused with
//! INVALID_ARGUMENT naming the `JobSpec` field to blame.

use crate::config::SiteConfig;
use gridsched_proto::{SpecLimits, v1};

/// A refused job: the field to blame and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The offending field, e.g. `processors` or `licences[1]`.
    pub field: String,
    /// Why.
    pub message: String,
}

impl Refusal {
    fn new(field: impl Into<String>, message: impl Into<String>) -> Refusal {
        Refusal {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl From<Refusal> for tonic::Status {
    fn from(r: Refusal) -> tonic::Status {
        tonic::Status::invalid_argument(format!("field `{}`: {}", r.field, r.message))
    }
}

/// Whether a site can ever run a job: a machine with enough processors, every licence and an
/// estimate within the site's limit (capped by the grid's `max_estimate_s`).
pub fn site_can_run(site: &SiteConfig, spec: &v1::JobSpec, max_estimate_s: i64) -> bool {
    site.widest_job() >= spec.processors
        && spec.licences.iter().all(|l| site.licences.contains(l))
        && spec.estimate_s <= site.max_estimate(max_estimate_s)
}

/// Whether a site holds every machine the job's inputs name (its local scheduler knows no
/// other machine, and refuses the job).
pub fn site_holds_inputs(site: &SiteConfig, spec: &v1::JobSpec) -> bool {
    spec.inputs.iter().all(|i| {
        i.machine
            .as_ref()
            .is_none_or(|m| site.machines.iter().any(|x| &x.name == m))
    })
}

/// Checks a submitted job against the grid and the `limits` at time `now`; with `split` the
/// dispatch strategy splits jobs over sites, so a job may be as wide as all sites together.
pub fn check(
    spec: Option<&v1::JobSpec>,
    sites: &[SiteConfig],
    limits: &SpecLimits,
    now: i64,
    split: bool,
) -> Result<(), Refusal> {
    let spec = spec.ok_or_else(|| Refusal::new("spec", "required"))?;
    if spec.user.trim().is_empty() {
        return Err(Refusal::new("user", "required"));
    }
    limits
        .check(spec)
        .map_err(|e| Refusal::new(e.field(), e.reason()))?;
    if spec.owner_priority > 3 {
        return Err(Refusal::new("owner_priority", "must be 0 to 3"));
    }
    if spec.processors == 0 {
        return Err(Refusal::new("processors", "must be at least 1"));
    }
    let one_site = sites.iter().map(SiteConfig::widest_job).max().unwrap_or(0);
    let widest = match split {
        true => sites.iter().map(SiteConfig::widest_job).sum(),
        false => one_site,
    };
    if spec.processors > widest {
        let what = match (split, sites.iter().any(|s| s.multi_node)) {
            (true, _) => "all sites of the grid together",
            (false, true) => "what any site runs as one job",
            (false, false) => "every machine of the grid",
        };
        return Err(Refusal::new(
            "processors",
            format!(
                "{} processors exceed {what} (largest: {widest})",
                spec.processors
            ),
        ));
    }
    if spec.estimate_s < 1 {
        return Err(Refusal::new("estimate_s", "must be at least 1"));
    }
    let longest = sites
        .iter()
        .map(|s| s.max_estimate(limits.max_estimate_s))
        .max()
        .unwrap_or(0);
    if spec.estimate_s > longest {
        return Err(Refusal::new(
            "estimate_s",
            format!(
                "{} s is more than every site's limit (largest: {longest} s)",
                spec.estimate_s
            ),
        ));
    }
    if let Some(d) = spec.deadline
        && d < now
    {
        return Err(Refusal::new(
            "deadline",
            format!("{d} is already past (now {now})"),
        ));
    }
    for (i, l) in spec.licences.iter().enumerate() {
        if spec.licences[..i].contains(l) {
            return Err(Refusal::new(
                format!("licences[{i}]"),
                format!("`{l}` repeated"),
            ));
        }
        if !sites.iter().any(|s| s.licences.contains(l)) {
            return Err(Refusal::new(
                format!("licences[{i}]"),
                format!("unknown licence `{l}`: no site has it"),
            ));
        }
    }
    if spec.benchmark == Some(0) {
        return Err(Refusal::new("benchmark", "must be positive"));
    }
    match (&spec.command, spec.emulate_runtime_s) {
        (Some(_), Some(_)) => {
            return Err(Refusal::new(
                "command",
                "give either a command or emulate_runtime_s, not both",
            ));
        }
        (None, None) => return Err(Refusal::new("command", "required")),
        (Some(c), None) if c.program.trim().is_empty() => {
            return Err(Refusal::new("command.program", "must not be empty"));
        }
        (None, Some(r)) if r < 0 => {
            return Err(Refusal::new("emulate_runtime_s", "must be at least 0"));
        }
        _ => {}
    }
    // A job wider than any site is split: every fragment's site needs the licences and the
    // estimate, which the grid scheduler checks as it splits.
    let wide = split && spec.processors > one_site;
    if !wide
        && !sites
            .iter()
            .any(|s| site_can_run(s, spec, limits.max_estimate_s))
    {
        return Err(Refusal::new(
            "licences",
            "no single site has a machine wide enough together with every licence and an \
             estimate limit at least `estimate_s`",
        ));
    }
    if !wide
        && !sites
            .iter()
            .any(|s| site_can_run(s, spec, limits.max_estimate_s) && site_holds_inputs(s, spec))
    {
        return Err(Refusal::new(
            "inputs",
            "no site that can run the job holds every machine its inputs name",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MachineConfig;

    fn sites() -> Vec<SiteConfig> {
        vec![SiteConfig {
            name: "a".into(),
            endpoint: String::new(),
            machines: vec![MachineConfig {
                name: "m".into(),
                processors: 8,
            }],
            multi_node: false,
            licences: vec!["matlab".into()],
            max_estimate_s: Some(3600),
            token: None,
            token_file: None,
        }]
    }

    fn ok_spec() -> v1::JobSpec {
        v1::JobSpec {
            user: "u".into(),
            processors: 4,
            estimate_s: 10,
            emulate_runtime_s: Some(1),
            ..Default::default()
        }
    }

    fn field(spec: v1::JobSpec) -> String {
        check(Some(&spec), &sites(), &SpecLimits::default(), 1000, false)
            .unwrap_err()
            .field
    }

    #[test]
    fn names_the_field() {
        let limits = SpecLimits::default();
        assert!(check(Some(&ok_spec()), &sites(), &limits, 1000, false).is_ok());
        assert_eq!(
            check(None, &sites(), &limits, 0, false).unwrap_err().field,
            "spec"
        );
        assert_eq!(
            field(v1::JobSpec {
                processors: 9,
                ..ok_spec()
            }),
            "processors"
        );
        assert_eq!(
            field(v1::JobSpec {
                deadline: Some(999),
                ..ok_spec()
            }),
            "deadline"
        );
        let lic = vec!["matlab".into(), "ansys".into()];
        assert_eq!(
            field(v1::JobSpec {
                licences: lic,
                ..ok_spec()
            }),
            "licences[1]"
        );
        let cmd = Some(v1::Command::default());
        let spec = v1::JobSpec {
            command: cmd,
            emulate_runtime_s: None,
            ..ok_spec()
        };
        assert_eq!(field(spec), "command.program");
        assert_eq!(
            field(v1::JobSpec {
                user: String::new(),
                ..ok_spec()
            }),
            "user"
        );
        assert_eq!(
            field(v1::JobSpec {
                estimate_s: 0,
                ..ok_spec()
            }),
            "estimate_s"
        );
        assert_eq!(
            field(v1::JobSpec {
                user: "u".repeat(10_000),
                ..ok_spec()
            }),
            "user"
        );
        let elsewhere = vec![v1::InputRef {
            machine: Some("not-at-a".into()),
            size: 1,
        }];
        assert_eq!(
            field(v1::JobSpec {
                inputs: elsewhere,
                ..ok_spec()
            }),
            "inputs"
        );
    }

    /// A multi-node site runs jobs as wide as all its alike machines together.
    #[test]
    fn a_multi_node_site_takes_jobs_wider_than_a_machine() {
        let limits = SpecLimits::default();
        let mut grid = sites();
        grid[0].machines.push(MachineConfig {
            name: "m2".into(),
            processors: 8,
        });
        let spec = |processors| v1::JobSpec {
            processors,
            ..ok_spec()
        };
        let r = check(Some(&spec(16)), &grid, &limits, 0, false).unwrap_err();
        assert_eq!(r.field, "processors");
        assert!(r.message.contains("every machine of the grid (largest: 8)"));
        grid[0].multi_node = true;
        check(Some(&spec(16)), &grid, &limits, 0, false).unwrap();
        let r = check(Some(&spec(17)), &grid, &limits, 0, false).unwrap_err();
        assert!(
            r.message.contains("as one job (largest: 16)"),
            "{}",
            r.message
        );
    }

    #[test]
    fn estimate_within_the_largest_site_limit() {
        let limits = SpecLimits::default();
        let spec = |estimate_s| v1::JobSpec {
            estimate_s,
            ..ok_spec()
        };
        assert!(check(Some(&spec(3600)), &sites(), &limits, 0, false).is_ok());
        let r = check(Some(&spec(3601)), &sites(), &limits, 0, false).unwrap_err();
        assert_eq!(r.field, "estimate_s");
        assert!(r.message.contains("largest: 3600 s"), "{}", r.message);
        let r = check(Some(&spec(1 << 62)), &sites(), &limits, 0, false).unwrap_err();
        assert_eq!(r.field, "estimate_s");
        // The grid-wide cap also caps a site's own limit.
        let tight = SpecLimits {
            max_estimate_s: 60,
            ..limits
        };
        let r = check(Some(&spec(61)), &sites(), &tight, 0, false).unwrap_err();
        assert!(r.message.contains("60 s"), "{}", r.message);
        // A site without a limit of its own takes the grid's.
        let mut open = sites();
        open[0].max_estimate_s = None;
        assert!(check(Some(&spec(86_400)), &open, &limits, 0, false).is_ok());
    }
}
