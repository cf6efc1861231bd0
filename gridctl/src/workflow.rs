//! `gridctl workflow`: submit a workflow file, show its nodes, cancel it, resume it from its
//! rescue. The file (TOML, or JSON when it ends in `.json`) names the workflow, gives variables
//! (`[vars]`, overridden by `--var NAME=VALUE`), defaults for every node's job (`[defaults]`,
//! the keys of a job file) and the nodes (`[[nodes]]`: `name`, `parents`, `retries`,
//! `retry_unless_exit`, `abort_on_exit`, `vars`, and the keys of a job file). `${NAME}` in any
//! string of a node is its variable (the node's own `vars` first; `${node}` is its name);
//! `$${` writes `${`. See docs/live-grid.md, "Workflows".

use crate::job_file::SubmitArgs;
use crate::out::outln;
use gridsched_proto::v1::{self, WorkflowNodeState as NodeState};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::Value;

/// The workflow subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum WorkflowCmd {
    /// Submits a workflow file; prints its id and its nodes' job ids.
    Submit {
        /// The workflow file (TOML, or JSON when it ends in `.json`).
        file: PathBuf,
        /// A variable, overriding the file's (repeatable).
        #[arg(long = "var", value_name = "NAME=VALUE")]
        vars: Vec<String>,
        /// Wait for the workflow to end; exit 0 only if every node completed.
        #[arg(long)]
        wait: bool,
    },
    /// Shows a workflow's nodes: each one's state, run, job, site and why.
    Status {
        /// The workflow's id.
        id: u64,
    },
    /// Cancels a workflow: nothing more starts, its running nodes are cancelled.
    Cancel {
        /// The workflow's id.
        id: u64,
        /// Why.
        #[arg(long, default_value = "")]
        reason: String,
    },
    /// Runs again what a workflow that failed (or was cancelled) left: its completed nodes are
    /// not run again. The workflow as submitted, or as FILE now says (fixed).
    Resume {
        /// The workflow to resume.
        id: u64,
        /// The workflow file to run instead of the one submitted (its node names must keep
        /// those of the nodes completed).
        file: Option<PathBuf>,
        /// A variable, overriding the file's (repeatable).
        #[arg(long = "var", value_name = "NAME=VALUE")]
        vars: Vec<String>,
        /// Wait for the workflow to end; exit 0 only if every node completed.
        #[arg(long)]
        wait: bool,
    },
}

/// Reads workflow file `path` into a spec, with `vars` over the file's variables.
pub fn read(path: &Path, vars: &[String], authenticated: bool) -> anyhow::Result<v1::JobSpec> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    let value: Value = if path.extension().is_some_and(|e| e == "json") {
        serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?
    } else {
        toml::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?
    };
    parse(value, vars, authenticated).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// A workflow file's contents as a spec.
pub(crate) fn parse(
    value: Value,
    vars: &[String],
    authenticated: bool,
) -> anyhow::Result<v1::JobSpec> {
    let Value::Table(mut top) = value else {
        anyhow::bail!("a workflow file is a table");
    };
    let take_str = |t: &mut toml::Table, k: &str| -> anyhow::Result<Option<String>> {
        match t.remove(k) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => anyhow::bail!("`{k}` must be a string"),
        }
    };
    let name = take_str(&mut top, "name")?;
    let user = take_str(&mut top, "user")?;
    let token = take_str(&mut top, "token")?;
    let mut globals = strings(top.remove("vars"), "vars")?;
    for v in vars {
        let (k, val) = v
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("--var `{v}`: expected NAME=VALUE"))?;
        globals.insert(k.trim().to_string(), val.to_string());
    }
    let defaults = match top.remove("defaults") {
        None => toml::Table::new(),
        Some(Value::Table(t)) => t,
        Some(_) => anyhow::bail!("`defaults` must be a table of job keys"),
    };
    let nodes = match top.remove("nodes") {
        Some(Value::Array(a)) => a,
        None => anyhow::bail!("no `[[nodes]]`: a workflow needs at least one node"),
        Some(_) => anyhow::bail!("`nodes` must be an array of tables (`[[nodes]]`)"),
    };
    if let Some(k) = top.keys().next() {
        anyhow::bail!(
            "unknown key `{k}` (a workflow file has name, user, token, vars, defaults, nodes)"
        );
    }
    let mut out = Vec::with_capacity(nodes.len());
    for (i, n) in nodes.into_iter().enumerate() {
        let Value::Table(mut n) = n else {
            anyhow::bail!("nodes[{i}] must be a table");
        };
        let name = take_str(&mut n, "name")?
            .ok_or_else(|| anyhow::anyhow!("nodes[{i}]: `name` is required"))?;
        let at = |e: anyhow::Error| anyhow::anyhow!("node `{name}`: {e}");
        let mut vars = globals.clone();
        vars.extend(strings(n.remove("vars"), "vars").map_err(at)?);
        vars.insert("node".into(), name.clone());
        let parents = match n.remove("parents") {
            None => Vec::new(),
            Some(Value::Array(a)) => a
                .into_iter()
                .map(|p| match p {
                    Value::String(s) => Ok(s),
                    _ => Err(anyhow::anyhow!("node `{name}`: `parents` are node names")),
                })
                .collect::<anyhow::Result<_>>()?,
            Some(_) => anyhow::bail!("node `{name}`: `parents` must be a list of node names"),
        };
        let int = |n: &mut toml::Table, k: &str| -> anyhow::Result<Option<i64>> {
            match n.remove(k) {
                None => Ok(None),
                Some(Value::Integer(v)) => Ok(Some(v)),
                Some(_) => anyhow::bail!("node `{name}`: `{k}` must be a whole number"),
            }
        };
        let retries = u32::try_from(int(&mut n, "retries")?.unwrap_or(0))
            .map_err(|_| anyhow::anyhow!("node `{name}`: `retries` must be 0 or more"))?;
        let code = |v: Option<i64>, k: &str| -> anyhow::Result<Option<i32>> {
            v.map(|c| {
                i32::try_from(c).map_err(|_| anyhow::anyhow!("node `{name}`: `{k}` out of range"))
            })
            .transpose()
        };
        let retry_unless_exit = code(int(&mut n, "retry_unless_exit")?, "retry_unless_exit")?;
        let abort_on_exit = code(int(&mut n, "abort_on_exit")?, "abort_on_exit")?;
        for (k, v) in &defaults {
            n.entry(k.clone()).or_insert_with(|| v.clone());
        }
        let mut job = Value::Table(n);
        substitute(&mut job, &vars).map_err(at)?;
        let args: SubmitArgs = job.try_into().map_err(|e| at(e.into()))?;
        if args.file.is_some() || args.wait {
            anyhow::bail!("node `{name}`: `file` and `wait` are not node keys");
        }
        let mut spec = args.spec(authenticated).map_err(at)?;
        spec.user.clear();
        out.push(v1::WorkflowNode {
            name,
            parents,
            retries,
            retry_unless_exit,
            abort_on_exit,
            job: Some(spec),
            done: false,
        });
    }
    let user = user
        .or_else(|| {
            (!authenticated)
                .then(|| std::env::var("USER").ok())
                .flatten()
        })
        .unwrap_or_else(|| if authenticated { "" } else { "anonymous" }.into());
    Ok(v1::JobSpec {
        user,
        name,
        client_token: token,
        workflow: Some(v1::Workflow {
            nodes: out,
            resume: None,
        }),
        ..Default::default()
    })
}

/// A table of strings (`vars`).
fn strings(v: Option<Value>, key: &str) -> anyhow::Result<BTreeMap<String, String>> {
    match v {
        None => Ok(BTreeMap::new()),
        Some(Value::Table(t)) => t
            .into_iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k, s)),
                Value::Integer(i) => Ok((k, i.to_string())),
                Value::Float(f) => Ok((k, f.to_string())),
                Value::Boolean(b) => Ok((k, b.to_string())),
                _ => Err(anyhow::anyhow!("`{key}.{k}` must be a string or a number")),
            })
            .collect(),
        Some(_) => anyhow::bail!("`{key}` must be a table"),
    }
}

/// Replaces `${NAME}` by its variable in every string of `v` (`$${` stays `${`).
fn substitute(v: &mut Value, vars: &BTreeMap<String, String>) -> anyhow::Result<()> {
    match v {
        Value::String(s) => *s = expand(s, vars)?,
        Value::Array(a) => {
            for x in a {
                substitute(x, vars)?;
            }
        }
        Value::Table(t) => {
            for (_, x) in t.iter_mut() {
                substitute(x, vars)?;
            }
        }
        _ => {}
    }
    Ok(())
}

fn expand(s: &str, vars: &BTreeMap<String, String>) -> anyhow::Result<String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(escaped) = after.strip_prefix("${") {
            out.push_str("${");
            rest = escaped;
        } else if let Some(body) = after.strip_prefix('{') {
            let end = body
                .find('}')
                .ok_or_else(|| anyhow::anyhow!("`{s}`: `${{` without its `}}`"))?;
            let name = &body[..end];
            let value = vars.get(name).ok_or_else(|| {
                let known: Vec<&str> = vars.keys().map(String::as_str).collect();
                anyhow::anyhow!(
                    "`${{{name}}}` is not a variable (variables: {}; write `$${{` for a literal \
                     `${{`)",
                    known.join(", ")
                )
            })?;
            out.push_str(value);
            rest = &body[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

fn node_state(s: i32) -> &'static str {
    match NodeState::try_from(s).unwrap_or(NodeState::Waiting) {
        NodeState::Waiting => "waiting",
        NodeState::Queued => "queued",
        NodeState::Running => "running",
        NodeState::Completed => "completed",
        NodeState::Failed => "failed",
        NodeState::Cancelled => "cancelled",
        NodeState::Never => "never ran",
        NodeState::DoneBefore => "done before",
    }
}

/// Prints a workflow's record and its nodes (one row each, in the order given, parents named).
pub fn status(j: &v1::Job, json: bool) -> anyhow::Result<()> {
    let p = j.workflow.clone().unwrap_or_default();
    let spec = j.spec.clone().unwrap_or_default();
    let state = crate::show::state_name(j.state);
    if json {
        let nodes: Vec<serde_json::Value> = p
            .nodes
            .iter()
            .map(|n| {
                serde_json::json!({
                    "name": n.name, "parents": n.parents, "state": node_state(n.state),
                    "job_id": (n.job_id > 0).then_some(n.job_id), "run": n.run,
                    "exit_code": n.exit_code, "site": n.site, "reason": n.reason,
                })
            })
            .collect();
        let v = serde_json::json!({
            "id": j.id, "name": spec.name, "user": spec.user, "state": state,
            "submit_time": j.submit_time, "start_time": j.start_time, "end_time": j.end_time,
            "reason": j.reason, "resumes": spec.workflow.and_then(|w| w.resume), "nodes": nodes,
        });
        outln!("{v}");
        return Ok(());
    }
    let done = p
        .nodes
        .iter()
        .filter(|n| matches!(n.state(), NodeState::Completed | NodeState::DoneBefore))
        .count();
    let name = spec.name.map(|n| format!(" `{n}`")).unwrap_or_default();
    outln!(
        "workflow {}{name} of {}: {state}, {done} of {} nodes completed",
        j.id,
        spec.user,
        p.nodes.len()
    );
    if let Some(w0) = spec.workflow.and_then(|w| w.resume) {
        outln!("resumes workflow {w0}");
    }
    if !j.reason.is_empty() {
        outln!("{}", j.reason);
    }
    let mut t = comfy_table::Table::new();
    t.set_header(vec![
        "node", "after", "state", "run", "job", "site", "exit", "reason",
    ]);
    for n in &p.nodes {
        t.add_row(vec![
            n.name.clone(),
            n.parents.join(", "),
            node_state(n.state).to_string(),
            if n.run > 0 {
                n.run.to_string()
            } else {
                String::new()
            },
            if n.job_id > 0 {
                n.job_id.to_string()
            } else {
                String::new()
            },
            n.site.clone().unwrap_or_default(),
            n.exit_code.map(|c| c.to_string()).unwrap_or_default(),
            n.reason.clone(),
        ]);
    }
    outln!("{t}");
    Ok(())
}

/// Runs a workflow subcommand.
pub async fn run(
    c: &mut crate::Client,
    cmd: WorkflowCmd,
    authenticated: bool,
    json: bool,
) -> anyhow::Result<std::process::ExitCode> {
    let get = |c: &mut crate::Client, id: u64| {
        let mut c = c.clone();
        async move {
            let j = c.get_job(v1::GetJobRequest { job_id: id }).await?;
            let j = j.into_inner().job.unwrap_or_default();
            if j.spec.as_ref().is_none_or(|s| s.workflow.is_none()) {
                anyhow::bail!("job {id} is not a workflow");
            }
            Ok(j)
        }
    };
    let (spec, wait) = match cmd {
        WorkflowCmd::Status { id } => {
            status(&get(c, id).await?, json)?;
            return Ok(std::process::ExitCode::SUCCESS);
        }
        WorkflowCmd::Cancel { id, reason } => {
            get(c, id).await?;
            c.cancel_job(v1::CancelJobRequest { job_id: id, reason })
                .await?;
            status(&get(c, id).await?, json)?;
            return Ok(std::process::ExitCode::SUCCESS);
        }
        WorkflowCmd::Submit { file, vars, wait } => (read(&file, &vars, authenticated)?, wait),
        WorkflowCmd::Resume {
            id,
            file,
            vars,
            wait,
        } => {
            let mut spec = match file {
                Some(f) => read(&f, &vars, authenticated)?,
                None => {
                    let mut spec = get(c, id).await?.spec.unwrap_or_default();
                    spec.client_token = None;
                    spec
                }
            };
            if let Some(w) = spec.workflow.as_mut() {
                w.resume = Some(id);
            }
            (spec, wait)
        }
    };
    let mut spec = spec;
    crate::inputs::upload_all(c, &mut spec).await?;
    let r = c
        .submit(v1::SubmitRequest { spec: Some(spec) })
        .await?
        .into_inner();
    let id = r.job_id;
    let j = get(c, id).await?;
    if !wait {
        if json {
            return status(&j, json).map(|()| std::process::ExitCode::SUCCESS);
        }
        let p = j.workflow.unwrap_or_default();
        let done = p
            .nodes
            .iter()
            .filter(|n| n.state() == NodeState::DoneBefore)
            .count();
        let before = match done {
            0 => String::new(),
            n => format!(", {n} done before"),
        };
        outln!(
            "workflow {id} accepted: {} nodes{before}; `gridctl workflow status {id}` shows them",
            p.nodes.len()
        );
        return Ok(std::process::ExitCode::SUCCESS);
    }
    loop {
        let j = get(c, id).await?;
        if j.state().is_terminal() {
            status(&j, json)?;
            let ok = j.state() == v1::JobState::Completed;
            return Ok(if ok { 0.into() } else { 1.into() });
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> anyhow::Result<v1::JobSpec> {
        parse(toml::from_str(text).unwrap(), &["n=3".into()], false)
    }

    #[test]
    fn a_file_with_variables_and_defaults() {
        let spec = file(
            r#"
name = "demo"
user = "ann"
[vars]
n = "1"
msg = "hi"
[defaults]
emulate = 2
processors = 2
[[nodes]]
name = "a"
command = ["sh", "-c", "echo ${msg} ${n} ${node} $${HOME} $1"]
emulate = 0
[[nodes]]
name = "b"
parents = ["a"]
retries = 2
retry_unless_exit = 3
abort_on_exit = 9
vars = { msg = "bye" }
array = "0-${n}"
"#,
        )
        .unwrap();
        assert_eq!(
            (spec.user.as_str(), spec.name.as_deref()),
            ("ann", Some("demo"))
        );
        let w = spec.workflow.unwrap();
        let a = w.nodes[0].job.clone().unwrap();
        let c = a.command.unwrap();
        assert_eq!(c.args[1], "echo hi 3 a ${HOME} $1");
        assert_eq!(a.processors, 2, "from the defaults");
        let b = &w.nodes[1];
        assert_eq!(b.parents, ["a"]);
        assert_eq!(
            (b.retries, b.retry_unless_exit, b.abort_on_exit),
            (2, Some(3), Some(9))
        );
        let job = b.job.clone().unwrap();
        assert_eq!(job.array.as_deref(), Some("0-3"), "--var n=3 wins");
        assert_eq!(job.emulate_runtime_s, Some(2));
    }

    /// The example of docs/live-grid.md reads as it says.
    #[test]
    fn the_documented_example() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/examples/workflow.toml");
        let spec = read(&path, &[], false).unwrap();
        let w = spec.workflow.unwrap();
        let names: Vec<&str> = w.nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["split", "work", "merge", "report"]);
        let work = w.nodes[1].job.clone().unwrap();
        assert_eq!(work.array.as_deref(), Some("0-3%2"));
        let report = w.nodes[3].job.clone().unwrap().command.unwrap();
        assert!(report.args[1].starts_with("echo \"${GRIDSCHED_WORKFLOW_NODE} of report: "));
    }

    /// A JSON file reads as the TOML one does.
    #[test]
    fn a_json_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.json");
        let text = r#"{"name": "j", "vars": {"n": 2},
            "nodes": [{"name": "a", "command": ["echo", "${n}"]},
                      {"name": "b", "parents": ["a"], "retries": 1, "emulate": 5}]}"#;
        std::fs::write(&path, text).unwrap();
        let spec = read(&path, &[], false).unwrap();
        let w = spec.workflow.unwrap();
        assert_eq!(spec.name.as_deref(), Some("j"));
        let a = w.nodes[0].job.clone().unwrap().command.unwrap();
        assert_eq!(
            (a.program.as_str(), a.args.as_slice()),
            ("echo", &["2".to_string()][..])
        );
        assert_eq!(
            (w.nodes[1].parents.as_slice(), w.nodes[1].retries),
            (&["a".to_string()][..], 1)
        );
    }

    #[test]
    fn errors_name_the_node_and_key() {
        let e = file("[[nodes]]\nname = \"a\"\ncommand = [\"echo ${x}\"]\n").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("node `a`: `${x}` is not a variable"),
            "{e}"
        );
        let e = file("[[nodes]]\nname = \"a\"\nprocesors = 2\n").unwrap_err();
        assert!(e.to_string().contains("unknown field `procesors`"), "{e}");
        let e = file("nodes = []\nextra = 1\n").unwrap_err();
        assert!(e.to_string().starts_with("unknown key `extra`"), "{e}");
    }
}
