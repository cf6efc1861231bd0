//! The dashboard's pages: the overview (sites, queues, running jobs, recent events, Gantt per
//! cluster) gathered from the meta-scheduler's state and the sites' status, and the job page
//! (its fields, its explain text, its retained events).

use super::Viewer;
use super::gantt::{self, Band, Bar};
use super::html::{badge, clock, esc, job_link, page, state_name, table};
use crate::MetaService;
use gridsched_proto::v1::{self, JobState, meta_scheduler_server::MetaScheduler};
use serde_json::json;
use std::collections::BTreeMap;
use tonic::Status;

/// Rows shown at most in the waiting and running tables, and events in the event list.
const MAX_ROWS: usize = 50;
const MAX_EVENTS: usize = 30;
/// Bounds of the Gantt window chosen by default (seconds).
const MIN_WINDOW: i64 = 60;
const MAX_WINDOW: i64 = 3600;

/// Everything the overview shows.
#[derive(Debug)]
pub struct Overview {
    now: i64,
    window: i64,
    user: Option<String>,
    sites: v1::ListSitesResponse,
    by_state: BTreeMap<i32, usize>,
    waiting: Vec<v1::Job>,
    waiting_total: usize,
    running: Vec<v1::Job>,
    running_total: usize,
    events: Vec<v1::JobEvent>,
    bars: BTreeMap<String, Vec<Bar>>,
    /// Per cluster: its advance reservations.
    bands: BTreeMap<String, Vec<Band>>,
    /// How far ahead the plan is drawn (seconds).
    ahead: i64,
}

fn waiting(s: i32) -> bool {
    matches!(
        JobState::try_from(s),
        Ok(JobState::Accepted | JobState::Dispatched | JobState::Queued)
    )
}

impl Overview {
    /// Gathers the overview as `v` may see it, with a Gantt window of `window` seconds (by
    /// default: since the earliest start still shown, between one minute and one hour).
    pub async fn gather(
        svc: &MetaService,
        v: &Viewer,
        window: Option<i64>,
    ) -> Result<Overview, Status> {
        let widest = window.unwrap_or(MAX_WINDOW);
        let sites = MetaScheduler::list_sites(
            svc,
            v.request(v1::ListSitesRequest {
                site: None,
                include_resources: true,
            }),
        )
        .await?
        .into_inner();
        let now = crate::service::now();
        let st = svc.lock()?;
        let mut o = Overview {
            now,
            window: widest,
            user: v.caller.as_ref().map(|c| c.user.clone()),
            sites,
            by_state: BTreeMap::new(),
            waiting: Vec::new(),
            waiting_total: 0,
            running: Vec::new(),
            running_total: 0,
            events: Vec::new(),
            bars: BTreeMap::new(),
            bands: BTreeMap::new(),
            ahead: 0,
        };
        for job in st.jobs.values().filter(|j| v.sees(j)) {
            *o.by_state.entry(job.state).or_default() += 1;
            if waiting(job.state) {
                o.waiting_total += 1;
                o.waiting.push(job.clone());
            } else if job.state == JobState::Running as i32 {
                o.running_total += 1;
                if o.running.len() < MAX_ROWS {
                    o.running.push(job.clone());
                }
            }
            if let (Some(c), Some(m), Some(start)) = (&job.cluster, &job.machine, job.start_time)
                && job.end_time.is_none_or(|e| e >= now - widest)
            {
                o.bars.entry(c.clone()).or_default().push(Bar {
                    job: job.id,
                    machine: m.clone(),
                    start,
                    end: job.end_time,
                    state: job.state,
                    planned: false,
                    fragment: None,
                });
            }
            // A split job: one bar per fragment that ran, on its site's chart.
            let n = job.fragments.len();
            let among = job
                .fragments
                .iter()
                .map(|f| format!("{} {}", f.site, f.processors))
                .collect::<Vec<_>>()
                .join(" + ");
            for (rank, f) in job.fragments.iter().enumerate() {
                if let (Some(m), Some(start)) = (&f.machine, f.start_time)
                    && f.end_time.is_none_or(|e| e >= now - widest)
                {
                    o.bars.entry(f.site.clone()).or_default().push(Bar {
                        job: job.id,
                        machine: m.clone(),
                        start,
                        end: f.end_time,
                        state: f.state,
                        planned: false,
                        fragment: Some(format!("fragment {rank} of {n}: {among}")),
                    });
                }
            }
            // A waiting job's planned slot at a planning site.
            if job.state == JobState::Queued as i32
                && let Some(i) = st.site_of(job)
                && let Some(r) = st.planned[i].get(&job.id)
                && let Some(c) = &job.cluster
            {
                let machine = r
                    .machine
                    .clone()
                    .or_else(|| st.sites[i].machines.first().map(|m| m.name.clone()));
                if let Some(m) = machine {
                    o.ahead = o.ahead.max(r.end_time - now);
                    o.bars.entry(c.clone()).or_default().push(Bar {
                        job: job.id,
                        machine: m,
                        start: r.start_time,
                        end: Some(r.end_time),
                        state: job.state,
                        planned: true,
                        fragment: None,
                    });
                }
            }
        }
        for (i, rs) in st.advance.iter().enumerate() {
            for r in rs.iter().filter(|r| r.end_time > now) {
                o.ahead = o.ahead.max(r.end_time - now);
                o.bands
                    .entry(st.sites[i].name.clone())
                    .or_default()
                    .push(Band {
                        id: r.id,
                        start: r.start_time,
                        end: r.end_time,
                        procs: r.processors,
                    });
            }
        }
        o.ahead = o.ahead.min(MAX_WINDOW);
        if window.is_none() {
            let earliest = o
                .bars
                .values()
                .flatten()
                .filter(|b| !b.planned)
                .map(|b| b.start)
                .min();
            let span = earliest.map_or(MIN_WINDOW, |e| now - e);
            o.window = (span + span / 10 + 5).clamp(MIN_WINDOW, MAX_WINDOW);
        }
        // Highest priority first, then oldest: the order the grid serves them in.
        o.waiting
            .sort_by_key(|j| (std::cmp::Reverse(j.priority), j.id));
        o.waiting.truncate(MAX_ROWS);
        o.events = st
            .events
            .iter()
            .rev()
            .filter(|e| st.jobs.get(&e.job_id).is_some_and(|j| v.sees(j)))
            .take(MAX_EVENTS)
            .cloned()
            .collect();
        Ok(o)
    }

    fn site_rows(&self) -> Vec<Vec<String>> {
        self.sites
            .sites
            .iter()
            .flat_map(|s| &s.clusters)
            .map(|c| {
                let online = c.machines.iter().filter(|m| m.online).count();
                let procs: u32 = c.machines.iter().map(|m| m.processors).sum();
                let busy: u32 = c.machines.iter().map(|m| m.busy_processors).sum();
                let pools = c
                    .licence_pools
                    .iter()
                    .map(|p| format!("{} {}/{}", esc(&p.licence), p.in_use, p.copies))
                    .collect::<Vec<_>>()
                    .join(", ");
                let up = if c.reachable {
                    "<span class=\"up\">up</span>"
                } else {
                    "<span class=\"down\">down</span>"
                };
                vec![
                    esc(&c.name),
                    up.to_owned(),
                    esc(&c.local_policy),
                    format!("{online}/{}", c.machines.len()),
                    format!("{busy}/{procs}"),
                    pools,
                    c.count.first().copied().unwrap_or(0).to_string(),
                    c.load.first().copied().unwrap_or(0).to_string(),
                    esc(&c.endpoint),
                ]
            })
            .collect()
    }

    fn job_rows(jobs: &[v1::Job]) -> Vec<Vec<String>> {
        jobs.iter()
            .map(|j| {
                let spec = j.spec.clone().unwrap_or_default();
                vec![
                    job_link(j.id),
                    badge(j.state),
                    j.priority.to_string(),
                    esc(&spec.user),
                    spec.processors.to_string(),
                    esc(j.cluster.as_deref().unwrap_or("")),
                    esc(j.machine.as_deref().unwrap_or("")),
                    j.start_time.or(j.submit_time).map_or(String::new(), clock),
                ]
            })
            .collect()
    }

    /// The overview page.
    pub fn render(&self) -> String {
        let mut b = String::from("<h1>gridsched grid</h1>");
        b += &format!(
            "<p class=\"muted\">{} UTC · dispatch <b>{}</b> · priorities 1..{}{}</p>",
            clock(self.now),
            esc(&self.sites.dispatch_policy),
            self.sites.max_priority,
            self.user.as_ref().map_or(String::new(), |u| format!(
                " · signed in as <b>{}</b>",
                esc(u)
            ))
        );
        b += "<div class=\"cards\" id=\"counts\">";
        for (s, n) in &self.by_state {
            b += &format!(
                "<div class=\"card\"><b>{n}</b>{}</div>",
                state_name(*s).to_lowercase()
            );
        }
        b += "</div><h2>Sites</h2>";
        b += &table(
            "sites",
            &[
                "cluster",
                "link",
                "policy",
                "agents",
                "busy procs",
                "licences in use",
                "jobs",
                "load",
                "endpoint",
            ],
            &self.site_rows(),
        );
        let head = [
            "job", "state", "priority", "user", "procs", "cluster", "machine", "since",
        ];
        b += &format!("<h2>Waiting ({})</h2>", self.waiting_total);
        b += &table("waiting", &head, &Self::job_rows(&self.waiting));
        b += &format!("<h2>Running ({})</h2>", self.running_total);
        b += &table("running", &head, &Self::job_rows(&self.running));
        if self.ahead > 0 {
            b += &format!(
                "<h2>Gantt (last {} s, plan and reservations {} s ahead)</h2>",
                self.window, self.ahead
            );
        } else {
            b += &format!("<h2>Gantt (last {} s)</h2>", self.window);
        }
        for c in self.sites.sites.iter().flat_map(|s| &s.clusters) {
            let machines: Vec<String> = c.machines.iter().map(|m| m.name.clone()).collect();
            let bars = self.bars.get(&c.name).map_or(&[][..], Vec::as_slice);
            let bands = self.bands.get(&c.name).map_or(&[][..], Vec::as_slice);
            b += &gantt::svg(
                &c.name,
                &machines,
                bars,
                bands,
                self.now,
                (self.window, self.ahead),
            );
        }
        b += "<h2>Recent events</h2>";
        let rows: Vec<Vec<String>> = self
            .events
            .iter()
            .map(|e| {
                vec![
                    e.sequence.to_string(),
                    clock(e.time),
                    job_link(e.job_id),
                    badge(e.state),
                    esc(e.cluster.as_deref().unwrap_or("")),
                    esc(&e.detail),
                ]
            })
            .collect();
        b += &table(
            "events",
            &["seq", "time", "job", "state", "cluster", "detail"],
            &rows,
        );
        page("gridsched dashboard", Some(5), &b)
    }

    /// The overview as JSON.
    pub fn json(&self) -> String {
        let jobs = |js: &[v1::Job]| {
            js.iter()
                .map(|j| {
                    json!({"id": j.id, "state": state_name(j.state), "priority": j.priority,
                        "cluster": j.cluster, "machine": j.machine})
                })
                .collect::<Vec<_>>()
        };
        let sites: Vec<_> = self
            .sites
            .sites
            .iter()
            .flat_map(|s| &s.clusters)
            .map(|c| {
                json!({"name": c.name, "reachable": c.reachable, "policy": c.local_policy,
                    "machines_online": c.machines.iter().filter(|m| m.online).count(),
                    "busy_processors": c.machines.iter().map(|m| m.busy_processors).sum::<u32>(),
                    "load": c.load, "count": c.count})
            })
            .collect();
        let counts: BTreeMap<&str, usize> = self
            .by_state
            .iter()
            .map(|(s, n)| (state_name(*s), *n))
            .collect();
        json!({"time": self.now, "sites": sites, "jobs_by_state": counts,
            "waiting": jobs(&self.waiting), "running": jobs(&self.running),
            "events": self.events.iter().map(|e| json!({"sequence": e.sequence,
                "job": e.job_id, "state": state_name(e.state), "detail": e.detail}))
                .collect::<Vec<_>>()})
        .to_string()
    }
}

/// The page of job `id`.
/// Most bytes of a job's output the dashboard reads at once.
pub const OUTPUT_CAP: usize = 16 << 20;
/// The end of each stream shown on a job's page.
const TAIL: usize = 4096;

/// A job's output read through the grid (`MetaScheduler.Output`, as the viewer): standard
/// output or error, or the declared file `file`; at most [`OUTPUT_CAP`] bytes.
pub async fn read_output(
    svc: &MetaService,
    v: &Viewer,
    id: u64,
    stream: v1::OutputStream,
    file: &str,
) -> Result<Vec<u8>, Status> {
    use tokio_stream::StreamExt;
    let req = v1::OutputRequest {
        job_id: id,
        stream: stream as i32,
        file: file.to_owned(),
        ..Default::default()
    };
    let mut s = MetaScheduler::output(svc, v.request(req))
        .await?
        .into_inner();
    let mut out = Vec::new();
    while let Some(c) = s.next().await {
        out.extend(c?.data);
        if out.len() >= OUTPUT_CAP {
            out.truncate(OUTPUT_CAP);
            break;
        }
    }
    Ok(out)
}

/// The "Output" section of a job's page: the end of its standard output and error, linked to
/// the whole, and its declared files; nothing for an array or a workflow, or a job not yet at a
/// site.
async fn output_section(svc: &MetaService, v: &Viewer, job: &v1::Job) -> String {
    if job.array.is_some() || job.workflow.is_some() || job.start_time.is_none() {
        return String::new();
    }
    let id = job.id;
    let mut b = String::from("<h2 id=\"output\">Output</h2>");
    for (stream, name) in [
        (v1::OutputStream::Stdout, "stdout"),
        (v1::OutputStream::Stderr, "stderr"),
    ] {
        match read_output(svc, v, id, stream, "").await {
            Ok(data) => {
                let from = data.len().saturating_sub(TAIL);
                let cut = if from > 0 { "… " } else { "" };
                b += &format!(
                    "<h3><a href=\"/job/{id}/{name}\">{name}</a> ({} bytes{})</h3><pre class=\"output\">{cut}{}</pre>",
                    data.len(),
                    if from > 0 { ", the end shown" } else { "" },
                    esc(&String::from_utf8_lossy(&data[from..]))
                );
            }
            Err(e) => b += &format!("<p>{name}: {}</p>", esc(e.message())),
        }
    }
    let files = MetaScheduler::list_output_files(
        svc,
        v.request(v1::ListOutputFilesRequest {
            job_id: id,
            fragment: None,
        }),
    )
    .await;
    if let Ok(r) = files {
        let files = r.into_inner().files;
        if !files.is_empty() {
            let rows: Vec<Vec<String>> = files
                .iter()
                .map(|f| {
                    vec![
                        format!(
                            "<a href=\"/job/{id}/files/{}\">{}</a>",
                            esc(&f.name),
                            esc(&f.name)
                        ),
                        f.size.to_string(),
                    ]
                })
                .collect();
            b += &table("output-files", &["declared file", "bytes"], &rows);
        }
    }
    b
}

pub async fn job_page(svc: &MetaService, v: &Viewer, id: u64) -> Result<String, Status> {
    let job = MetaScheduler::get_job(svc, v.request(v1::GetJobRequest { job_id: id }))
        .await?
        .into_inner()
        .job
        .unwrap_or_default();
    let explain = MetaScheduler::explain(svc, v.request(v1::ExplainRequest { job_id: id }))
        .await
        .map_or_else(
            |s| format!("(no explanation: {})", s.message()),
            |r| r.into_inner().text,
        );
    let events: Vec<v1::JobEvent> = svc
        .lock()?
        .events
        .iter()
        .filter(|e| e.job_id == id)
        .cloned()
        .collect();
    let spec = job.spec.clone().unwrap_or_default();
    let what = match spec.workflow {
        Some(_) => "Workflow",
        None => "Job",
    };
    let opt = |t: Option<i64>| t.map_or("—".to_owned(), clock);
    let mut fields = vec![
        vec!["state".into(), badge(job.state)],
        vec!["user".into(), esc(&spec.user)],
        vec!["priority".into(), job.priority.to_string()],
        vec!["processors".into(), spec.processors.to_string()],
        vec!["estimate".into(), format!("{} s", spec.estimate_s)],
        vec!["deadline".into(), opt(spec.deadline)],
        vec!["licences".into(), esc(&spec.licences.join(", "))],
        vec!["cluster".into(), esc(job.cluster.as_deref().unwrap_or("—"))],
        vec!["machine".into(), esc(job.machine.as_deref().unwrap_or("—"))],
        vec!["submitted".into(), opt(job.submit_time)],
        vec!["started".into(), opt(job.start_time)],
        vec!["ended".into(), opt(job.end_time)],
        vec![
            "exit code".into(),
            job.exit_code.map_or("—".into(), |c| c.to_string()),
        ],
        vec!["reason".into(), esc(&job.reason)],
    ];
    if let Some(p) = job.array {
        // An array: its tasks by state (each task has its own page).
        let said = format!(
            "{} ({}): {} pending, {} queued, {} running, {} completed, {} failed, {} cancelled; tasks {} to {}",
            p.tasks,
            esc(spec.array.as_deref().unwrap_or("")),
            p.pending,
            p.queued,
            p.running,
            p.completed,
            p.failed,
            p.cancelled,
            job_link(job.id + 1),
            job_link(job.id + u64::from(p.tasks)),
        );
        fields.push(vec!["tasks".into(), said]);
    }
    if let (Some(a), Some(i)) = (job.array_id, job.array_index) {
        fields.push(vec!["array".into(), format!("{} (index {i})", job_link(a))]);
    }
    if let (Some(w), Some(node)) = (job.workflow_id, &job.workflow_node) {
        let said = format!(
            "{} (node `{}`, its run {})",
            job_link(w),
            esc(node),
            job.workflow_run
        );
        fields.push(vec!["workflow".into(), said]);
    }
    // A workflow: its DAG and its nodes (each run has its own page); the job's own fields
    // (processors, estimate, site) are its nodes'.
    let dag = match &job.workflow {
        None => String::new(),
        Some(p) => {
            let keep = ["state", "user", "submitted", "started", "ended", "reason"];
            fields.retain(|f| keep.contains(&f[0].as_str()));
            fields.insert(
                1,
                vec!["name".into(), esc(spec.name.as_deref().unwrap_or("—"))],
            );
            if let Some(w0) = spec.workflow.as_ref().and_then(|w| w.resume) {
                fields.push(vec!["resumes".into(), job_link(w0)]);
            }
            let rows: Vec<Vec<String>> = (p.nodes.iter())
                .map(|n| {
                    vec![
                        esc(&n.name),
                        esc(&n.parents.join(", ")),
                        esc(n
                            .state()
                            .as_str_name()
                            .trim_start_matches("WORKFLOW_NODE_STATE_")),
                        match n.run {
                            0 => "—".into(),
                            r => r.to_string(),
                        },
                        match n.job_id {
                            0 => "—".into(),
                            j => job_link(j),
                        },
                        esc(n.site.as_deref().unwrap_or("—")),
                        n.exit_code.map_or("—".into(), |c| c.to_string()),
                        esc(&n.reason),
                    ]
                })
                .collect();
            let head = [
                "node", "after", "state", "run", "job", "site", "exit", "reason",
            ];
            format!(
                "<h2>Nodes</h2>{}{}",
                super::dag::svg(p),
                table("nodes", &head, &rows)
            )
        }
    };
    if job.requeues > 0 {
        // A split job run again after a fragment failed.
        fields.push(vec!["requeues".into(), job.requeues.to_string()]);
    }
    let rows: Vec<Vec<String>> = events
        .iter()
        .map(|e| {
            vec![
                e.sequence.to_string(),
                clock(e.time),
                badge(e.state),
                esc(&e.detail),
            ]
        })
        .collect();
    // A split job's fragments, each linked to its site's Gantt chart.
    let fragments = match job.fragments.is_empty() {
        true => String::new(),
        false => {
            let rows: Vec<Vec<String>> = job
                .fragments
                .iter()
                .enumerate()
                .map(|(rank, f)| {
                    vec![
                        rank.to_string(),
                        format!("<a href=\"/#gantt-{s}\">{s}</a>", s = esc(&f.site)),
                        f.processors.to_string(),
                        format!("r{}", f.reservation),
                        format!("{} s (+{} %)", f.estimate_s, f.overhead_pct),
                        badge(f.state),
                        esc(f.machine.as_deref().unwrap_or("—")),
                        opt(f.start_time),
                        opt(f.end_time),
                        f.exit_code.map_or("—".into(), |c| c.to_string()),
                        esc(&f.reason),
                    ]
                })
                .collect();
            let head = [
                "fragment",
                "site",
                "processors",
                "reservation",
                "estimate",
                "state",
                "machine",
                "started",
                "ended",
                "exit",
                "reason",
            ];
            format!("<h2>Fragments</h2>{}", table("fragments", &head, &rows))
        }
    };
    let output = output_section(svc, v, &job).await;
    let body = format!(
        "<h1>{what} {id}</h1>{}{dag}{fragments}<h2>Why (explain)</h2><pre id=\"explain\">{}</pre>\
         {output}<h2>Events</h2>{}",
        table("job", &["field", "value"], &fields),
        esc(&explain),
        table("job-events", &["seq", "time", "state", "detail"], &rows)
    );
    let refresh = (!matches!(
        JobState::try_from(job.state),
        Ok(JobState::Completed
            | JobState::Failed
            | JobState::Cancelled
            | JobState::Killed
            | JobState::Lost)
    ))
    .then_some(5);
    Ok(page(&format!("job {id}"), refresh, &body))
}

/// The form asking for a token.
pub fn login(message: &str, path: &str) -> String {
    page(
        "gridsched: sign in",
        None,
        &format!(
            "<h1>Sign in</h1><p>{}</p><form method=\"get\" action=\"{}\">\
             <label>Token <input type=\"password\" name=\"token\" autofocus></label> \
             <button>Open</button></form>",
            esc(message),
            esc(path)
        ),
    )
}

/// An error page.
pub fn error_page(code: u16, message: &str) -> String {
    page(
        "gridsched: error",
        None,
        &format!("<h1>{code}</h1><p>{}</p>", esc(message)),
    )
}
