//! The first admission checks of the meta-scheduler, at the door: a `JobSpec` that is malformed
//! or breaks the configured size limits (`[limits]`, [`SpecLimits`]) is refused with
//! INVALID_ARGUMENT naming the field to blame. What needs the grid's state (the static
//! feasibility filtering of spec `two-level-grid-scheduler.md` D3: a job no site can ever run)
//! follows in the grid runner ([`crate::decide::Decider::admit`]).

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

/// Checks a submitted job's own fields against the `limits`: what needs no knowledge of the
/// grid. What the grid's state decides (a job no site can ever run, a deadline already past, its
/// advance reservation) is the grid runner's admission ([`crate::decide::Decider::admit`]).
pub fn check(spec: Option<&v1::JobSpec>, limits: &SpecLimits) -> Result<(), Refusal> {
    let spec = spec.ok_or_else(|| Refusal::new("spec", "required"))?;
    if spec.user.trim().is_empty() {
        return Err(Refusal::new("user", "required"));
    }
    limits
        .check(spec)
        .map_err(|e| Refusal::new(e.field(), e.reason()))?;
    gridsched_core::model::check_name(&spec.user).map_err(|why| {
        Refusal::new(
            "user",
            format!(
                "`{}` is not a valid name: {why}",
                spec.user.escape_default()
            ),
        )
    })?;
    if let Some(d) = spec.deadline
        && !(0..=LATEST).contains(&d)
    {
        return Err(Refusal::new(
            "deadline",
            format!("{d} is not a time between 1970 and the end of 9999 (Unix seconds)"),
        ));
    }
    if spec.owner_priority > 3 {
        return Err(Refusal::new("owner_priority", "must be 0 to 3"));
    }
    if spec.processors == 0 {
        return Err(Refusal::new("processors", "must be at least 1"));
    }
    if spec.estimate_s < 1 {
        return Err(Refusal::new("estimate_s", "must be at least 1"));
    }
    for (i, l) in spec.licences.iter().enumerate() {
        if spec.licences[..i].contains(l) {
            return Err(Refusal::new(
                format!("licences[{i}]"),
                format!("`{l}` repeated"),
            ));
        }
    }
    if spec.benchmark == Some(0) {
        return Err(Refusal::new("benchmark", "must be positive"));
    }
    check_outputs(&spec.outputs)?;
    check_stage_in(&spec.stage_in)?;
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
    Ok(())
}

/// The latest time a submission may name: 9999-12-31 23:59:59 UTC.
const LATEST: i64 = 253_402_300_799;

/// Most staged inputs of one job.
pub const MAX_STAGE_IN: usize = 256;

/// Checks a job's staged inputs: at most [`MAX_STAGE_IN`], each named by a plain relative path
/// (unique), either an upload's digest or an `http://`, `https://` or `file://` URL (with an
/// optional digest). Whether an upload is held is the service's check
/// ([`crate::inputs::Uploads::resolve`]).
fn check_stage_in(inputs: &[v1::StagedInput]) -> Result<(), Refusal> {
    if inputs.len() > MAX_STAGE_IN {
        return Err(Refusal::new(
            "stage_in",
            format!("{} inputs, at most {MAX_STAGE_IN}", inputs.len()),
        ));
    }
    for (i, s) in inputs.iter().enumerate() {
        let field = |f: &str| format!("stage_in[{i}].{f}");
        if s.name.is_empty() || s.name.len() > 1024 {
            return Err(Refusal::new(field("name"), "1 to 1,024 bytes"));
        }
        if !gridsched_proto::output::is_plain_relative(&s.name) {
            return Err(Refusal::new(
                field("name"),
                format!(
                    "`{}`: a path relative to the job's working directory, without `.` or `..`",
                    s.name
                ),
            ));
        }
        if inputs[..i].iter().any(|o| o.name == s.name) {
            return Err(Refusal::new(
                field("name"),
                format!("`{}` repeated", s.name),
            ));
        }
        if !s.site.is_empty() {
            return Err(Refusal::new(
                field("site"),
                "set by the meta-scheduler only (a workflow node's input from a parent)",
            ));
        }
        if !s.sha256.is_empty() && !gridsched_proto::blobs::is_sha256(&s.sha256) {
            return Err(Refusal::new(
                field("sha256"),
                format!("`{}`: 64 lowercase hex digits", s.sha256),
            ));
        }
        if s.url.is_empty() {
            if s.sha256.is_empty() {
                return Err(Refusal::new(
                    field("sha256"),
                    "an upload's digest (MetaScheduler.Upload), or give a url",
                ));
            }
            continue;
        }
        check_url(&s.url)
            .map_err(|why| Refusal::new(field("url"), format!("`{}`: {why}", s.url)))?;
    }
    Ok(())
}

/// Refuses a URL a site could not fetch: a scheme other than `http`, `https` and `file`, no host
/// for the first two, a relative path for the last.
pub fn check_url(url: &str) -> Result<(), String> {
    if url.len() > 4096 {
        return Err("longer than 4,096 bytes".into());
    }
    if let Some(path) = url.strip_prefix("file://") {
        return match path.starts_with('/') {
            true => Ok(()),
            false => Err("a file URL names an absolute path: file:///data/x".into()),
        };
    }
    let uri: http::Uri = url.parse().map_err(|e| format!("not a URL ({e})"))?;
    match uri.scheme_str() {
        Some("http" | "https") if uri.host().is_some_and(|h| !h.is_empty()) => Ok(()),
        Some("http" | "https") => Err("no host".into()),
        _ => Err("only http://, https:// and file:// sources are fetched".into()),
    }
}

/// Most declared output files of one job.
pub const MAX_OUTPUTS: usize = 64;

/// Checks a job's declared output files: at most [`MAX_OUTPUTS`], each a relative path (globs
/// allowed) of at most 1,024 bytes without `..`, not repeated.
fn check_outputs(outputs: &[String]) -> Result<(), Refusal> {
    if outputs.len() > MAX_OUTPUTS {
        return Err(Refusal::new(
            "outputs",
            format!("{} files declared, at most {MAX_OUTPUTS}", outputs.len()),
        ));
    }
    for (i, o) in outputs.iter().enumerate() {
        let field = format!("outputs[{i}]");
        let plain = std::path::Path::new(o).components().all(|c| {
            matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        });
        if o.trim().is_empty() {
            return Err(Refusal::new(field, "must not be empty"));
        }
        if o.len() > 1024 {
            return Err(Refusal::new(field, "longer than 1,024 bytes"));
        }
        if !plain {
            return Err(Refusal::new(
                field,
                format!("`{o}`: a path relative to the job's working directory, without `..`"),
            ));
        }
        if let Err(e) = glob::Pattern::new(o) {
            return Err(Refusal::new(field, format!("`{o}`: {e}")));
        }
        if outputs[..i].contains(o) {
            return Err(Refusal::new(field, format!("`{o}` repeated")));
        }
    }
    Ok(())
}

/// Checks a submitted workflow's own fields (`spec.workflow` set): its user; at least one node,
/// at most [`gridsched_core::model::MAX_NODES`]; each node's job a full spec of the same user
/// (checked as [`check`] does, the field named `workflow.nodes[i].job.<field>`), without
/// `after`. The workflow's shape (names, parents, cycles) is the core's check.
pub fn check_workflow(spec: &v1::JobSpec, limits: &SpecLimits) -> Result<(), Refusal> {
    if spec.user.trim().is_empty() {
        return Err(Refusal::new("user", "required"));
    }
    let w = spec.workflow.as_ref().expect("a workflow");
    if w.nodes.is_empty() {
        return Err(Refusal::new("workflow.nodes", "at least one node"));
    }
    if w.nodes.len() > gridsched_core::model::MAX_NODES {
        return Err(Refusal::new(
            "workflow.nodes",
            format!(
                "{} nodes is more than the most a workflow may have ({})",
                w.nodes.len(),
                gridsched_core::model::MAX_NODES
            ),
        ));
    }
    for (i, n) in w.nodes.iter().enumerate() {
        let at = |f: &str| format!("workflow.nodes[{i}].job{f}");
        let job = n
            .job
            .as_ref()
            .ok_or_else(|| Refusal::new(at(""), "required"))?;
        if !job.user.is_empty() && job.user != spec.user {
            return Err(Refusal::new(
                at(".user"),
                format!("must be empty or the workflow's user, `{}`", spec.user),
            ));
        }
        if job.after.is_some() {
            return Err(Refusal::new(
                at(".after"),
                "a node waits for its parents (`parents`), not for other jobs",
            ));
        }
        let mut job = job.clone();
        job.user.clone_from(&spec.user);
        check(Some(&job), limits)
            .map_err(|r| Refusal::new(at(&format!(".{}", r.field)), r.message))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MetaConfig;
    use crate::decide::Decider;

    /// One site `a` of one 8-processor machine `m`, with licence `matlab` and a 3600 s limit.
    const GRID: &str = r#"
[[sites]]
name = "a"
licences = ["matlab"]
max_estimate_s = 3600
machines = [{ name = "m", processors = 8 }]
"#;

    fn ok_spec() -> v1::JobSpec {
        v1::JobSpec {
            user: "u".into(),
            processors: 4,
            estimate_s: 10,
            emulate_runtime_s: Some(1),
            ..Default::default()
        }
    }

    /// The whole admission of `spec` at `now` on `grid`: the door's checks, then the runner's.
    fn admit(grid: &str, spec: Option<&v1::JobSpec>, now: i64) -> Result<(), v1::SubmitError> {
        let cfg = MetaConfig::from_toml(grid).unwrap();
        let invalid = |field: String, message: String| v1::SubmitError {
            code: tonic::Code::InvalidArgument as i32,
            field: Some(field),
            message,
        };
        check(spec, &cfg.limits).map_err(|r| invalid(r.field, r.message))?;
        let mut d = Decider::new(&cfg, 0).unwrap();
        d.admit(spec.expect("checked"), 1, now).map(|_| ())
    }

    fn field(spec: v1::JobSpec) -> String {
        admit(GRID, Some(&spec), 1000)
            .unwrap_err()
            .field
            .expect("a field")
    }

    /// The three jobs a random-input run got accepted: a benchmark score that stretches the job
    /// past every limit, more memory than any machine has, a user named like a path; and the
    /// bounds beside them.
    #[test]
    fn edge_values_are_refused_at_the_door_naming_the_field() {
        let with_memory = GRID.replace(
            "processors = 8 }",
            "processors = 8, benchmark = 2, memory_kb = 1048576 }",
        );
        let refused = |grid: &str, spec: v1::JobSpec| {
            let e = admit(grid, Some(&spec), 1000).unwrap_err();
            (e.field.unwrap_or_default(), e.message)
        };
        let (f, m) = refused(
            GRID,
            v1::JobSpec {
                benchmark: Some(u32::MAX),
                ..ok_spec()
            },
        );
        assert_eq!(f, "benchmark");
        assert!(
            m.contains("takes 42949672950 s on the fastest machine") && m.contains("3600 s"),
            "{m}"
        );
        // At score 720 on a machine of score 2 its 10 s take 3,600 s: within the limit.
        let scaled = |bm| v1::JobSpec {
            benchmark: Some(bm),
            ..ok_spec()
        };
        assert!(admit(&with_memory, Some(&scaled(720)), 1000).is_ok());
        assert_eq!(refused(&with_memory, scaled(721)).0, "benchmark");
        let memory = |kb| v1::JobSpec {
            memory_kb: Some(kb),
            ..ok_spec()
        };
        let (f, m) = refused(&with_memory, memory(u64::MAX));
        assert_eq!(f, "memory_kb");
        assert!(m.contains("largest: 1048576 KiB"), "{m}");
        assert!(admit(&with_memory, Some(&memory(1 << 20)), 1000).is_ok());
        assert!(
            admit(GRID, Some(&memory(u64::MAX)), 1000).is_ok(),
            "no machine declares its memory: not checked"
        );
        let (f, m) = refused(
            GRID,
            v1::JobSpec {
                user: "../../etc/passwd".into(),
                ..ok_spec()
            },
        );
        assert_eq!(f, "user");
        assert!(m.contains("begins with `.`"), "{m}");
        let (f, _) = refused(
            GRID,
            v1::JobSpec {
                deadline: Some(i64::MAX),
                ..ok_spec()
            },
        );
        assert_eq!(f, "deadline");
    }

    #[test]
    fn declared_outputs_are_relative_paths_or_globs_inside_the_working_directory() {
        let with = |outputs: &[&str]| v1::JobSpec {
            outputs: outputs.iter().map(|s| s.to_string()).collect(),
            ..ok_spec()
        };
        assert!(admit(GRID, Some(&with(&["out.csv", "res/**/*.h5", "./a"])), 1000).is_ok());
        for (bad, at) in [
            (&["ok", "../up"][..], "outputs[1]"),
            (&["/etc/passwd"], "outputs[0]"),
            (&["a/../../b"], "outputs[0]"),
            (&["[z-a"], "outputs[0]"),
            (&[""], "outputs[0]"),
            (&["x", "x"], "outputs[1]"),
        ] {
            assert_eq!(field(with(bad)), at, "{bad:?}");
        }
        let many: Vec<String> = (0..65).map(|i| format!("f{i}")).collect();
        let refused = check(
            Some(&v1::JobSpec {
                outputs: many,
                ..ok_spec()
            }),
            &SpecLimits::default(),
        )
        .unwrap_err();
        assert_eq!(
            (refused.field.as_str(), refused.message.as_str()),
            ("outputs", "65 files declared, at most 64")
        );
    }

    #[test]
    fn staged_inputs_name_a_file_in_the_working_directory_and_an_upload_or_a_url() {
        let input = |name: &str, sha: &str, url: &str| v1::StagedInput {
            name: name.into(),
            sha256: sha.into(),
            url: url.into(),
            size: 0,
            site: String::new(),
        };
        let sha = "ab".repeat(32);
        let with = |inputs: Vec<v1::StagedInput>| v1::JobSpec {
            stage_in: inputs,
            ..ok_spec()
        };
        let good = vec![
            input("in/data.bin", &sha, ""),
            input("genome.fa", "", "https://data.example.org/genome.fa"),
            input("local", &sha, "file:///srv/data/x"),
            input("plain", "", "http://10.0.0.1:8080/x?y=1"),
        ];
        assert!(admit(GRID, Some(&with(good)), 1000).is_ok());
        for (bad, at) in [
            (vec![input("../x", &sha, "")], "stage_in[0].name"),
            (vec![input("/etc/x", &sha, "")], "stage_in[0].name"),
            (vec![input("", &sha, "")], "stage_in[0].name"),
            (
                vec![input("a", &sha, ""), input("a", &sha, "")],
                "stage_in[1].name",
            ),
            (vec![input("a", "", "")], "stage_in[0].sha256"),
            (vec![input("a", "ABCD", "")], "stage_in[0].sha256"),
            (vec![input("a", "", "ftp://host/x")], "stage_in[0].url"),
            (vec![input("a", "", "http:///x")], "stage_in[0].url"),
            (vec![input("a", "", "file://relative/x")], "stage_in[0].url"),
            (vec![input("a", "", "not a url")], "stage_in[0].url"),
            (
                vec![v1::StagedInput {
                    site: "alpha".into(),
                    ..input("a", &sha, "")
                }],
                "stage_in[0].site",
            ),
        ] {
            assert_eq!(field(with(bad.clone())), at, "{bad:?}");
        }
        let many = (0..257)
            .map(|i| input(&format!("f{i}"), &sha, ""))
            .collect();
        let refused = check(Some(&with(many)), &SpecLimits::default()).unwrap_err();
        assert_eq!(refused.field, "stage_in");
    }

    #[test]
    fn names_the_field() {
        assert!(admit(GRID, Some(&ok_spec()), 1000).is_ok());
        assert_eq!(
            check(None, &SpecLimits::default()).unwrap_err().field,
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
        let refused = admit(
            GRID,
            Some(&v1::JobSpec {
                licences: lic,
                ..ok_spec()
            }),
            1000,
        )
        .unwrap_err();
        assert_eq!(refused.field.as_deref(), Some("licences[1]"));
        assert_eq!(refused.code, tonic::Code::InvalidArgument as i32);
        assert!(
            refused
                .message
                .starts_with("field `licences[1]`: unknown licence `ansys`"),
            "{}",
            refused.message
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
        // An input on a machine the grid does not know; one on a machine of a site too small
        // for the job.
        let nowhere = vec![v1::InputRef {
            machine: Some("not-in-the-grid".into()),
            size: 1,
        }];
        assert_eq!(
            field(v1::JobSpec {
                inputs: nowhere,
                ..ok_spec()
            }),
            "inputs[0].machine"
        );
        let two = GRID.replace(
            "machines = [{ name = \"m\", processors = 8 }]",
            "machines = [{ name = \"m\", processors = 8 }]\n[[sites]]\nname = \"b\"\n\
             machines = [{ name = \"small\", processors = 2 }]",
        );
        let small = vec![v1::InputRef {
            machine: Some("small".into()),
            size: 1,
        }];
        let spec = v1::JobSpec {
            inputs: small,
            ..ok_spec()
        };
        let r = admit(&two, Some(&spec), 1000).unwrap_err();
        assert_eq!(r.field.as_deref(), Some("inputs"), "{}", r.message);
    }

    /// A multi-node site runs jobs as wide as all its alike machines together.
    #[test]
    fn a_multi_node_site_takes_jobs_wider_than_a_machine() {
        let two = GRID.replace(
            "machines = [{ name = \"m\", processors = 8 }]",
            "machines = [{ name = \"m\", processors = 8 }, { name = \"m2\", processors = 8 }]",
        );
        let spec = |processors| v1::JobSpec {
            processors,
            ..ok_spec()
        };
        let r = admit(&two, Some(&spec(16)), 0).unwrap_err();
        assert_eq!(r.field.as_deref(), Some("processors"));
        assert!(
            r.message.contains("as one job (largest: 8)"),
            "{}",
            r.message
        );
        let multi = two.replace(
            "max_estimate_s = 3600",
            "max_estimate_s = 3600\nmulti_node = true",
        );
        admit(&multi, Some(&spec(16)), 0).unwrap();
        let r = admit(&multi, Some(&spec(17)), 0).unwrap_err();
        assert!(
            r.message.contains("as one job (largest: 16)"),
            "{}",
            r.message
        );
    }

    #[test]
    fn estimate_within_the_largest_site_limit() {
        let spec = |estimate_s| v1::JobSpec {
            estimate_s,
            ..ok_spec()
        };
        assert!(admit(GRID, Some(&spec(3600)), 0).is_ok());
        let r = admit(GRID, Some(&spec(3601)), 0).unwrap_err();
        assert_eq!(r.field.as_deref(), Some("estimate_s"));
        assert!(r.message.contains("largest: 3600 s"), "{}", r.message);
        let r = admit(GRID, Some(&spec(1 << 62)), 0).unwrap_err();
        assert_eq!(r.field.as_deref(), Some("estimate_s"));
        // The grid-wide cap also caps a site's own limit.
        let tight = format!("[limits]\nmax_estimate_s = 60\n{GRID}");
        let r = admit(&tight, Some(&spec(61)), 0).unwrap_err();
        assert!(r.message.contains("60 s"), "{}", r.message);
        // A site without a limit of its own takes the grid's.
        let open = GRID.replace("max_estimate_s = 3600\n", "");
        assert!(admit(&open, Some(&spec(86_400)), 0).is_ok());
    }
}
