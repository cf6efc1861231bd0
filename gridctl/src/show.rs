//! Output of `gridctl`: comfy-table tables, or JSON with `--json`.

use crate::out::outln;
use comfy_table::Table;
use gridsched_proto::v1;
use serde_json::{Value, json};

pub(crate) fn state_name(s: i32) -> String {
    v1::JobState::try_from(s)
        .map(|s| {
            s.as_str_name()
                .trim_start_matches("JOB_STATE_")
                .to_ascii_lowercase()
        })
        .unwrap_or_else(|_| s.to_string())
}

fn job_json(j: &v1::Job) -> Value {
    let s = j.spec.clone().unwrap_or_default();
    json!({
        "id": j.id, "state": state_name(j.state), "priority": j.priority, "user": s.user,
        "processors": s.processors, "estimate_s": s.estimate_s, "deadline": s.deadline,
        "licences": s.licences, "site": j.site, "cluster": j.cluster, "machine": j.machine,
        "submit_time": j.submit_time, "start_time": j.start_time, "end_time": j.end_time,
        "exit_code": j.exit_code, "reason": j.reason, "planned_start": j.planned_start,
        "reservation": s.reservation.map(|r| format!("r{r}")), "requeues": j.requeues,
        "restarts": j.restarts,
        "array_id": j.array_id, "array_index": j.array_index,
        "array": j.array.map(|p| json!({
            "tasks": p.tasks, "pending": p.pending, "queued": p.queued, "running": p.running,
            "completed": p.completed, "failed": p.failed, "cancelled": p.cancelled,
            "limit": p.limit, "indices": s.array,
        })),
        "stage_in": s.stage_in.iter().map(|i| json!({
            "name": i.name, "size": i.size, "sha256": i.sha256, "url": i.url, "site": i.site,
        })).collect::<Vec<_>>(),
        "outputs": j.outputs.iter().map(|o| json!({
            "name": o.name, "size": o.size, "sha256": o.sha256,
        })).collect::<Vec<_>>(),
        "fragments": j.fragments.iter().map(|f| json!({
            "site": f.site, "processors": f.processors, "reservation": format!("r{}", f.reservation),
            "state": state_name(f.state), "machine": f.machine, "start_time": f.start_time,
            "end_time": f.end_time, "exit_code": f.exit_code, "reason": f.reason,
            "estimate_s": f.estimate_s, "overhead_pct": f.overhead_pct,
        })).collect::<Vec<_>>(),
    })
}

/// Where a job is: its site, or a split job's sites with their processors (`alpha:4+beta:2`).
fn site_of(j: &v1::Job) -> String {
    if j.fragments.is_empty() {
        return j.site.clone().unwrap_or_default();
    }
    let parts: Vec<String> = j
        .fragments
        .iter()
        .map(|f| format!("{}:{}", f.site, f.processors))
        .collect();
    parts.join("+")
}

/// Prints a submission's result.
pub fn submitted(r: &v1::SubmitResponse, json: bool) -> std::io::Result<()> {
    if json {
        let v = json!({"job_id": r.job_id, "state": state_name(r.state), "priority": r.priority,
            "duplicate": r.duplicate});
        outln!("{v}");
    } else {
        let dup = if r.duplicate {
            " (duplicate of an earlier submission)"
        } else {
            ""
        };
        outln!(
            "job {} {} with priority {}{dup}",
            r.job_id,
            state_name(r.state),
            r.priority
        );
    }
    Ok(())
}

/// The columns `gridctl list --format` knows, in the order `--help` lists them.
pub const JOB_FIELDS: [&str; 19] = [
    "id", "state", "prio", "user", "procs", "site", "machine", "planned", "exit", "reason", "name",
    "cluster", "estimate", "licences", "submit", "start", "end", "wait", "requeues",
];

/// The columns of a job table by default (`planned` only when a job has a planned start).
const DEFAULT_JOB_FIELDS: [&str; 10] = [
    "id", "state", "prio", "user", "procs", "site", "machine", "planned", "exit", "reason",
];

/// Column `f` of job `j` as a table shows it (times in local time).
fn job_field(j: &v1::Job, f: &str) -> String {
    let s = j.spec.as_ref();
    // A workflow has neither a priority nor processors (its nodes have).
    let workflow = s.is_some_and(|s| s.workflow.is_some());
    let local = |t: Option<i64>| t.map(crate::when::local).unwrap_or_default();
    match f {
        "id" => shown_id(j),
        "state" => state_name(j.state),
        "prio" if !workflow => j.priority.to_string(),
        "user" => s.map(|s| s.user.clone()).unwrap_or_default(),
        "procs" if !workflow => s.map(|s| s.processors.to_string()).unwrap_or_default(),
        "site" => site_of(j),
        "machine" => j.machine.clone().unwrap_or_default(),
        "planned" => j.planned_start.map(crate::when::when).unwrap_or_default(),
        "exit" => j.exit_code.map(|c| c.to_string()).unwrap_or_default(),
        "reason" => reason_of(j),
        "name" => s.and_then(|s| s.name.clone()).unwrap_or_default(),
        "cluster" => j.cluster.clone().unwrap_or_default(),
        "estimate" if !workflow => s
            .map(|s| crate::when::elapsed(s.estimate_s))
            .unwrap_or_default(),
        "licences" => s.map(|s| s.licences.join(" ")).unwrap_or_default(),
        "submit" => local(j.submit_time),
        "start" => local(j.start_time),
        "end" => local(j.end_time),
        "wait" => match (j.submit_time, j.start_time) {
            (Some(a), Some(b)) => crate::when::elapsed((b - a).max(0)),
            _ => String::new(),
        },
        "requeues" => j.requeues.to_string(),
        _ => String::new(),
    }
}

/// Prints jobs with the default columns.
pub fn jobs(jobs: &[v1::Job], json: bool) -> std::io::Result<()> {
    jobs_as(jobs, None, json)
}

/// Prints jobs with the columns `fields` (the default ones when `None`).
pub fn jobs_as(jobs: &[v1::Job], fields: Option<&[String]>, json: bool) -> std::io::Result<()> {
    if json {
        let v: Vec<Value> = jobs.iter().map(job_json).collect();
        outln!("{}", Value::Array(v));
        return Ok(());
    }
    let planned = jobs.iter().any(|j| j.planned_start.is_some());
    let default: Vec<String> = DEFAULT_JOB_FIELDS
        .iter()
        .filter(|f| planned || **f != "planned")
        .map(|f| (*f).to_owned())
        .collect();
    let fields = fields.unwrap_or(&default);
    let mut t = Table::new();
    t.set_header(fields.iter().map(|f| match f.as_str() {
        // Waiting jobs at planning sites: when they are planned to start.
        "planned" => "planned start",
        f => f,
    }));
    for j in jobs {
        t.add_row(fields.iter().map(|f| job_field(j, f)).collect::<Vec<_>>());
    }
    outln!("{t}");
    Ok(())
}

/// Says what the tasks of array `id` (indices `text`) are called.
pub fn array_submitted(id: u64, text: &str) -> std::io::Result<()> {
    let Ok(a) = text.parse::<gridsched_core::model::ArraySpec>() else {
        return Ok(());
    };
    let (first, last) = (a.index(0).unwrap_or(0), a.index(a.len() - 1).unwrap_or(0));
    let limit = a
        .limit
        .map_or(String::new(), |n| format!(", at most {n} at once"));
    outln!(
        "{} tasks, {id}_{first} to {id}_{last} (job ids {} to {}){limit}; see them with `gridctl list --array {id}`",
        a.len(),
        id + 1,
        id + a.len() as u64
    );
    Ok(())
}

/// A job's id as shown: a task of an array as `ARRAY_INDEX`, an array as `ID_[INDICES]`.
fn shown_id(j: &v1::Job) -> String {
    let id = shown_task(j);
    match (j.workflow_id, &j.workflow_node) {
        (Some(w), Some(node)) => format!("{id} ({w}/{node})"),
        _ => id,
    }
}

/// A task as `array_index`, an array as `id_[indices]`, else the id.
fn shown_task(j: &v1::Job) -> String {
    match (
        j.array_id,
        j.array_index,
        j.spec.as_ref().and_then(|s| s.array.as_ref()),
    ) {
        (Some(a), Some(i), _) => format!("{a}_{i}"),
        (_, _, Some(indices)) => format!("{}_[{indices}]", j.id),
        _ => j.id.to_string(),
    }
}

/// A job's reason as shown: an array's, after its tasks counted by state.
fn reason_of(j: &v1::Job) -> String {
    if let Some(w) = &j.workflow {
        let count = |s: v1::WorkflowNodeState| w.nodes.iter().filter(|n| n.state() == s).count();
        let done =
            count(v1::WorkflowNodeState::Completed) + count(v1::WorkflowNodeState::DoneBefore);
        let running = count(v1::WorkflowNodeState::Running);
        let name = j
            .spec
            .as_ref()
            .and_then(|s| s.name.clone())
            .unwrap_or_default();
        let mut out = format!("workflow `{name}`: ");
        if j.state().is_terminal() && !j.reason.is_empty() {
            out.push_str(&j.reason);
        } else {
            out.push_str(&format!("{done} of {} nodes completed", w.nodes.len()));
            if running > 0 {
                out.push_str(&format!(", {running} running"));
            }
        }
        return out;
    }
    let Some(p) = j.array else {
        return j.reason.clone();
    };
    let counts = [
        (p.pending, "pending"),
        (p.queued, "queued"),
        (p.running, "running"),
        (p.completed, "completed"),
        (p.failed, "failed"),
        (p.cancelled, "cancelled"),
    ];
    let said: Vec<String> = counts
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
    let mut out = format!("{} tasks: {}", p.tasks, said.join(", "));
    if !j.reason.is_empty() && !j.state().is_terminal() {
        out.push_str(&format!("; {}", j.reason));
    }
    out
}

/// The lines under a job's table: its runs from scratch at its site, its staged inputs (where
/// each comes from) and the declared outputs its site kept.
fn data_lines(j: &v1::Job) -> Vec<String> {
    use meta_scheduler::inputs::human_bytes;
    let mut out = Vec::new();
    if j.restarts > 0 {
        out.push(format!(
            "started again from scratch at its site {} time(s) (preempted by a kill, or its \
             process lost)",
            j.restarts
        ));
    }
    let inputs = j.spec.as_ref().map_or(&[][..], |s| &s.stage_in[..]);
    if !inputs.is_empty() {
        out.push(format!("inputs ({}):", inputs.len()));
    }
    for i in inputs {
        let from = match (i.site.as_str(), i.url.as_str()) {
            ("", "") => format!("upload {}", &i.sha256[..12.min(i.sha256.len())]),
            ("", url) => url.to_owned(),
            (site, _) => format!("a parent's output, moved from {site}"),
        };
        let size = match i.size {
            0 if !i.url.is_empty() => String::new(),
            n => format!("  {}", human_bytes(n)),
        };
        out.push(format!("  {}{size}  ({from})", i.name));
    }
    if !j.outputs.is_empty() {
        let site = j.site.as_deref().unwrap_or("its site");
        out.push(format!(
            "declared outputs kept at {site} ({}; `gridctl fetch {}`):",
            j.outputs.len(),
            j.id
        ));
    }
    for o in &j.outputs {
        out.push(format!("  {}  {}", o.name, human_bytes(o.size)));
    }
    out
}

/// Prints one job (its inputs and kept outputs below); a split job's fragments below it.
pub fn job(j: Option<v1::Job>, json: bool) -> std::io::Result<()> {
    let jobs: Vec<v1::Job> = j.into_iter().collect();
    self::jobs(&jobs, json)?;
    if let Some(j) = jobs.first().filter(|_| !json) {
        let times: Vec<String> = [
            ("submitted", j.submit_time),
            ("started", j.start_time),
            ("ended", j.end_time),
        ]
        .into_iter()
        .filter_map(|(what, t)| Some(format!("{what} {}", crate::when::when(t?))))
        .collect();
        if !times.is_empty() {
            outln!("{}", times.join(", "));
        }
        for line in data_lines(j) {
            outln!("{line}");
        }
    }
    let Some(j) = jobs.first().filter(|j| !json && !j.fragments.is_empty()) else {
        return Ok(());
    };
    let mut t = Table::new();
    t.set_header(vec![
        "fragment",
        "site",
        "procs",
        "reservation",
        "estimate",
        "state",
        "machine",
        "start",
        "exit",
        "reason",
    ]);
    for (k, f) in j.fragments.iter().enumerate() {
        t.add_row(vec![
            k.to_string(),
            f.site.clone(),
            f.processors.to_string(),
            format!("r{}", f.reservation),
            format!("{} s (+{} %)", f.estimate_s, f.overhead_pct),
            state_name(f.state),
            f.machine.clone().unwrap_or_default(),
            f.start_time.map(crate::when::when).unwrap_or_default(),
            f.exit_code.map(|c| c.to_string()).unwrap_or_default(),
            f.reason.clone(),
        ]);
    }
    outln!("{t}");
    if j.requeues > 0 {
        outln!(
            "run {} of the job: requeued {} time(s) after a fragment failed",
            j.requeues,
            j.requeues
        );
    }
    Ok(())
}

fn reservation_state(s: i32) -> String {
    v1::AdvanceReservationState::try_from(s)
        .map(|s| {
            s.as_str_name()
                .trim_start_matches("ADVANCE_RESERVATION_STATE_")
                .to_ascii_lowercase()
        })
        .unwrap_or_else(|_| s.to_string())
}

/// Prints advance reservations.
pub fn reservations(rs: &[v1::AdvanceReservation], json: bool) -> std::io::Result<()> {
    if json {
        let v: Vec<Value> = rs
            .iter()
            .map(|r| {
                json!({"id": format!("r{}", r.id), "site": r.site, "machine": r.machine,
                    "licences": r.licences, "user": r.user,
                    "state": reservation_state(r.state), "processors": r.processors,
                    "start_time": r.start_time, "end_time": r.end_time, "jobs": r.jobs,
                    "created": r.created})
            })
            .collect();
        outln!("{}", Value::Array(v));
        return Ok(());
    }
    let mut t = Table::new();
    t.set_header([
        "id", "site", "machine", "user", "state", "procs", "licences", "start", "end", "jobs",
    ]);
    for r in rs {
        t.add_row([
            format!("r{}", r.id),
            r.site.clone(),
            r.machine.clone(),
            r.user.clone(),
            reservation_state(r.state),
            r.processors.to_string(),
            r.licences.join(","),
            crate::when::when(r.start_time),
            crate::when::when(r.end_time),
            r.jobs
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(","),
        ]);
    }
    outln!("{t}");
    Ok(())
}

/// Prints one event.
pub fn event(e: &v1::JobEvent, json: bool) -> std::io::Result<()> {
    if json {
        let v = json!({"sequence": e.sequence, "job_id": e.job_id, "state": state_name(e.state),
            "time": e.time, "detail": e.detail, "cluster": e.cluster, "exit_code": e.exit_code,
            "array_id": e.array_id, "array_index": e.array_index});
        outln!("{v}");
    } else {
        let task = match (e.array_id, e.array_index) {
            (Some(a), Some(i)) => format!(" ({a}_{i})"),
            _ => String::new(),
        };
        outln!(
            "#{} job {}{task} {} {}",
            e.sequence,
            e.job_id,
            state_name(e.state),
            e.detail
        );
    }
    Ok(())
}

/// Prints the sites.
pub fn sites(r: &v1::ListSitesResponse, json: bool) -> std::io::Result<()> {
    if json {
        let v: Vec<Value> = r
            .sites
            .iter()
            .flat_map(|s| s.clusters.iter())
            .map(|c| {
                json!({"site": c.site, "cluster": c.name, "endpoint": c.endpoint,
                "reachable": c.reachable, "load": c.load, "count": c.count,
                "policy": c.local_policy, "users": c.users,
                "machines_online": c.machines.iter().filter(|m| m.online).count(),
                "machines": c.machines.len(),
                "busy_processors": c.machines.iter().map(|m| m.busy_processors).sum::<u32>(),
                "processors": c.machines.iter().map(|m| m.processors).sum::<u32>()})
            })
            .collect();
        let out = json!({"dispatch_policy": r.dispatch_policy, "max_priority": r.max_priority,
            "clusters": v});
        outln!("{out}");
        return Ok(());
    }
    let mut t = Table::new();
    t.set_header([
        "site",
        "policy",
        "reachable",
        "machines up",
        "busy procs",
        "load (p=1..)",
        "count (p=1..)",
        "users",
    ]);
    for c in r.sites.iter().flat_map(|s| s.clusters.iter()) {
        let online = c.machines.iter().filter(|m| m.online).count();
        let busy: u32 = c.machines.iter().map(|m| m.busy_processors).sum();
        let procs: u32 = c.machines.iter().map(|m| m.processors).sum();
        t.add_row([
            c.site.clone(),
            c.local_policy.clone(),
            c.reachable.to_string(),
            format!("{online}/{}", c.machines.len()),
            format!("{busy}/{procs}"),
            format!("{:?}", c.load),
            format!("{:?}", c.count),
            c.users.clone(),
        ]);
    }
    outln!("dispatch policy: {}\n{t}", r.dispatch_policy);
    Ok(())
}

/// Prints an explanation.
pub fn explain(r: &v1::ExplainResponse, json: bool) -> std::io::Result<()> {
    if json {
        let d = r.dispatch.clone().unwrap_or_default();
        let v = json!({"job_id": r.job_id, "state": state_name(r.state),
            "priority": r.priority.as_ref().map(|p| p.priority), "cluster": d.cluster,
            "decided_by": d.decided_by, "queue_position": r.queue_position, "text": r.text});
        outln!("{v}");
    } else {
        outln!("{}", local_times(&r.text, crate::when::now()));
    }
    Ok(())
}

/// `text` with the Unix times the meta-scheduler writes (`at 1796627137`, `[1796627137,
/// 1796630737)`) as local times with how far they are from `now`; `--json` keeps the raw text.
/// A number counts as a time after `at `, `[` or `, ` and within ten years of `now`.
fn local_times(text: &str, now: i64) -> String {
    const TEN_YEARS: i64 = 10 * 365 * 86_400;
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(|c: char| c.is_ascii_digit()) {
        let (before, from) = rest.split_at(i);
        out.push_str(before);
        let n = from
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(from.len());
        let (digits, after) = from.split_at(n);
        let led = [
            out.ends_with("at "),
            out.ends_with('['),
            out.ends_with(", "),
        ];
        let time = digits
            .parse::<i64>()
            .ok()
            .filter(|t| (t - now).abs() < TEN_YEARS);
        match time {
            Some(t) if led.contains(&true) && !out.ends_with(|c: char| c.is_ascii_digit()) => {
                out.push_str(&format!(
                    "{} ({})",
                    crate::when::local(t),
                    crate::when::from_now(t, now)
                ));
            }
            _ => out.push_str(digits),
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Explain's Unix times read as local times; ids, counts and far numbers stay.
    #[test]
    fn explain_shows_its_times_as_local_times() {
        let now = 1_796_627_081;
        let text = "job 1796627 is QUEUED; planned to start at 1796627137 on delta-1; inside \
                    reservation r3 (8 processors on [1796627137, 1796630737)); 1796627137 bytes";
        let shown = local_times(text, now);
        let t = crate::when::local(1_796_627_137);
        assert!(shown.starts_with("job 1796627 is QUEUED"), "{shown}");
        assert!(
            shown.contains(&format!("at {t} (in 56 s) on delta-1")),
            "{shown}"
        );
        assert!(shown.contains(&format!("on [{t} (in 56 s), ")), "{shown}");
        assert!(shown.contains("(in 60 min))"), "{shown}");
        assert!(shown.ends_with("; 1796627137 bytes"), "{shown}");
        assert_eq!(local_times("at 12 s", now), "at 12 s");
    }

    #[test]
    fn a_job_lists_where_its_inputs_come_from_and_what_its_site_kept() {
        let input = |name: &str, sha: &str, url: &str, site: &str, size| v1::StagedInput {
            name: name.into(),
            sha256: sha.into(),
            url: url.into(),
            size,
            site: site.into(),
        };
        let j = v1::Job {
            id: 3,
            site: Some("beta".into()),
            spec: Some(v1::JobSpec {
                stage_in: vec![
                    input("data.bin", &"ab".repeat(32), "", "", 30_000_000),
                    input("genome.fa", "", "https://example.org/g.fa", "", 0),
                    input("prep/out.txt", &"cd".repeat(32), "", "alpha", 1_288_895),
                ],
                ..Default::default()
            }),
            outputs: vec![v1::OutputFile {
                name: "sum.txt".into(),
                size: 12,
                sha256: "ef".repeat(32),
            }],
            ..Default::default()
        };
        assert_eq!(
            data_lines(&j),
            [
                "inputs (3):",
                "  data.bin  30.0 MB  (upload abababababab)",
                "  genome.fa  (https://example.org/g.fa)",
                "  prep/out.txt  1.3 MB  (a parent's output, moved from alpha)",
                "declared outputs kept at beta (1; `gridctl fetch 3`):",
                "  sum.txt  12 B",
            ]
        );
        assert!(data_lines(&v1::Job::default()).is_empty());
        let again = v1::Job {
            restarts: 2,
            ..v1::Job::default()
        };
        assert_eq!(
            data_lines(&again),
            [
                "started again from scratch at its site 2 time(s) (preempted by a kill, or its \
              process lost)"
            ]
        );
        assert_eq!(job_json(&again)["restarts"], 2);
        let v = job_json(&j);
        assert_eq!(v["stage_in"][2]["site"], "alpha");
        assert_eq!(v["outputs"][0]["size"], 12);
    }

    #[test]
    fn a_split_job_shows_its_sites_and_runs() {
        let fragment = |site: &str, processors| v1::Fragment {
            site: site.into(),
            processors,
            reservation: 3,
            ..Default::default()
        };
        let j = v1::Job {
            id: 7,
            requeues: 1,
            fragments: vec![fragment("alpha", 4), fragment("beta", 2)],
            ..Default::default()
        };
        assert_eq!(site_of(&j), "alpha:4+beta:2");
        let v = job_json(&j);
        assert_eq!(v["requeues"], 1);
        assert_eq!(v["fragments"][1]["site"], "beta");
        assert_eq!(v["fragments"][0]["reservation"], "r3");
    }

    /// The columns asked for, in order: a job's name, estimate, wait and licences; a workflow
    /// has no priority nor processors; an unknown column is empty (gridctl refuses it first).
    #[test]
    fn a_job_shows_the_columns_asked_for() {
        let j = v1::Job {
            id: 7,
            state: v1::JobState::Running.into(),
            priority: 9,
            spec: Some(v1::JobSpec {
                user: "ann".into(),
                name: Some("sweep".into()),
                processors: 4,
                estimate_s: 3_725,
                licences: vec!["matlab".into(), "abaqus".into()],
                ..Default::default()
            }),
            site: Some("beta".into()),
            submit_time: Some(1_000),
            start_time: Some(1_061),
            ..Default::default()
        };
        let got: Vec<String> = [
            "id", "name", "prio", "procs", "site", "estimate", "wait", "licences", "end",
        ]
        .iter()
        .map(|f| job_field(&j, f))
        .collect();
        assert_eq!(
            got,
            [
                "7",
                "sweep",
                "9",
                "4",
                "beta",
                "01:02:05",
                "00:01:01",
                "matlab abaqus",
                ""
            ]
        );
        let mut w = j.clone();
        w.spec.as_mut().unwrap().workflow = Some(v1::Workflow::default());
        assert_eq!(
            (job_field(&w, "prio"), job_field(&w, "procs")),
            (String::new(), String::new())
        );
        assert!(JOB_FIELDS.iter().all(|f| !f.is_empty()));
        assert!(DEFAULT_JOB_FIELDS.iter().all(|f| JOB_FIELDS.contains(f)));
    }
}
