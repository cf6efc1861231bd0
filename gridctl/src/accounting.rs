//! `gridctl usage` (sreport-like: the grid's use over a period, by user, account, site, machine
//! or class) and `gridctl history` (sacct-like: the jobs that ended in a period, with the fields
//! asked for), as tables, CSV or JSON; periods given as dates, times, Unix seconds or ages.

use crate::out::outln;
use crate::when::{elapsed, local, now, parse_when, rfc3339};
use clap::{Args, ValueEnum};
use comfy_table::Table;
use gridsched_proto::v1;
use serde_json::{Value, json};

/// The period of a report.
#[derive(Debug, Args)]
pub struct Period {
    /// Start: a date (`2026-11-29`), a local time (`2026-11-29T08:00`), an RFC 3339 time, Unix
    /// seconds, or an age (`2h`, `7d`, `30m` ago); default: a day before `--until`.
    #[arg(long, value_parser = parse_when)]
    since: Option<i64>,
    /// End (excluded), in the same forms; default: now.
    #[arg(long, value_parser = parse_when)]
    until: Option<i64>,
}

/// What `gridctl usage` sums by.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum By {
    /// The job's owner.
    User,
    /// The owner's account in the fair-share tree.
    Account,
    /// The site that ran it.
    Site,
    /// The machine that ran it (`site/machine`).
    Machine,
    /// The owner's class (gold, silver, regular).
    Class,
}

/// `gridctl usage`.
#[derive(Debug, Args)]
pub struct UsageArgs {
    /// What to sum by.
    #[arg(long, value_enum, default_value = "user")]
    by: By,
    #[command(flatten)]
    period: Period,
    /// CSV (seconds, RFC 3339 times) instead of a table.
    #[arg(long, conflicts_with = "json")]
    csv: bool,
}

/// `gridctl history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    #[command(flatten)]
    period: Period,
    /// Only this user's jobs.
    #[arg(long)]
    user: Option<String>,
    /// Only this account's jobs.
    #[arg(long)]
    account: Option<String>,
    /// Only jobs that ran (a fragment) at this site.
    #[arg(long)]
    site: Option<String>,
    /// Only jobs that ended in this state (completed, failed, cancelled, killed, lost);
    /// repeatable.
    #[arg(long)]
    state: Vec<String>,
    /// The fields, comma-separated, in order (see `--help` of `--format`): job, name, user,
    /// account, class, priority, state, procs, licences, sites, machines, submit, start, end,
    /// wait, wall, proc_s, licence_s, exit.
    #[arg(
        long,
        short = 'o',
        value_delimiter = ',',
        default_value = "job,user,account,state,sites,procs,submit,start,end,wait,wall,proc_s,exit"
    )]
    format: Vec<String>,
    /// At most this many jobs (fetched in pages of up to 10,000).
    #[arg(long, default_value_t = 100, conflicts_with = "all")]
    limit: usize,
    /// Every matching job, however many.
    #[arg(long)]
    all: bool,
    /// CSV instead of a table.
    #[arg(long)]
    csv: bool,
}

/// Hours with two decimals (`<0.01` for a use too small to show so).
fn hours(s: u64) -> String {
    match s {
        0 => "0".to_owned(),
        1..36 => "<0.01".to_owned(),
        _ => format!("{:.2}", s as f64 / 3_600.0),
    }
}

/// `gridctl usage`.
pub async fn usage(c: &mut crate::Client, a: UsageArgs, json: bool) -> anyhow::Result<()> {
    let by = match a.by {
        By::User => v1::UsageBy::User,
        By::Account => v1::UsageBy::Account,
        By::Site => v1::UsageBy::Site,
        By::Machine => v1::UsageBy::Machine,
        By::Class => v1::UsageBy::Class,
    };
    let r = c
        .usage(v1::UsageRequest {
            by: by.into(),
            since: a.period.since,
            until: a.period.until,
        })
        .await?
        .into_inner();
    let what = format!("{:?}", a.by).to_lowercase();
    Ok(print_usage(&r, &what, json, a.csv)?)
}

/// Prints a usage report.
pub fn print_usage(
    r: &v1::UsageResponse,
    what: &str,
    json: bool,
    csv: bool,
) -> std::io::Result<()> {
    if json {
        let rows: Vec<Value> = r
            .rows
            .iter()
            .map(|x| {
                json!({
                    what: x.key, "jobs": x.jobs, "processor_seconds": x.processor_seconds,
                    "licence_seconds": x.licence_seconds, "wall_seconds": x.wall_seconds,
                    "wait_seconds": x.wait_seconds,
                })
            })
            .collect();
        outln!(
            "{}",
            json!({"since": r.since, "until": r.until, "by": what, "rows": rows})
        );
        return Ok(());
    }
    if csv {
        let header = [
            what,
            "since",
            "until",
            "jobs",
            "processor_seconds",
            "licence_seconds",
        ];
        let header = header.into_iter().chain(["wall_seconds", "wait_seconds"]);
        let rows = r.rows.iter().map(|x| {
            [x.key.clone(), rfc3339(r.since), rfc3339(r.until)]
                .into_iter()
                .chain(
                    [x.jobs, x.processor_seconds, x.licence_seconds]
                        .into_iter()
                        .chain([x.wall_seconds, x.wait_seconds])
                        .map(|n| n.to_string()),
                )
                .collect::<Vec<_>>()
        });
        return print_csv(header.map(str::to_owned).collect(), rows);
    }
    outln!(
        "Usage by {what}, {} to {} (local time; processor-hours used in the period, jobs that ended in it)",
        local(r.since),
        local(r.until)
    );
    if r.rows.is_empty() {
        outln!("no use recorded in the period");
        return Ok(());
    }
    let total: u64 = r.rows.iter().map(|x| x.processor_seconds).sum();
    let mut t = Table::new();
    t.set_header(vec![
        what,
        "jobs",
        "proc-hours",
        "share",
        "licence-hours",
        "mean wall",
        "mean wait",
    ]);
    let mean = |s: u64, n: u64| {
        s.checked_div(n)
            .map_or_else(String::new, |m| elapsed(m as i64))
    };
    for x in &r.rows {
        let key = match (what, x.key.as_str()) {
            ("account", "") => "(no account)",
            (_, k) => k,
        };
        t.add_row(vec![
            key.to_owned(),
            x.jobs.to_string(),
            hours(x.processor_seconds),
            if total == 0 {
                String::new()
            } else {
                format!("{:.1} %", 100.0 * x.processor_seconds as f64 / total as f64)
            },
            hours(x.licence_seconds),
            mean(x.wall_seconds, x.jobs),
            mean(x.wait_seconds, x.jobs),
        ]);
    }
    let jobs: u64 = r.rows.iter().map(|x| x.jobs).sum();
    let sum = |f: fn(&v1::UsageRow) -> u64| r.rows.iter().map(f).sum::<u64>();
    t.add_row(vec![
        "total".to_owned(),
        jobs.to_string(),
        hours(total),
        String::new(),
        hours(sum(|x| x.licence_seconds)),
        mean(sum(|x| x.wall_seconds), jobs),
        mean(sum(|x| x.wait_seconds), jobs),
    ]);
    outln!("{t}");
    Ok(())
}

/// The fields `gridctl history` knows, with what each shows.
const FIELDS: [&str; 19] = [
    "job",
    "name",
    "user",
    "account",
    "class",
    "priority",
    "state",
    "procs",
    "licences",
    "sites",
    "machines",
    "submit",
    "start",
    "end",
    "wait",
    "wall",
    "proc_s",
    "licence_s",
    "exit",
];

/// Field `f` of record `r`; times as local time (RFC 3339 in CSV), durations as `HH:MM:SS`
/// (seconds in CSV).
fn field(r: &v1::UsageRecord, f: &str, csv: bool) -> String {
    let time = |t: i64| if csv { rfc3339(t) } else { local(t) };
    let dur = |s: i64| if csv { s.to_string() } else { elapsed(s) };
    let mut sites: Vec<&str> = r.parts.iter().map(|p| p.site.as_str()).collect();
    sites.dedup();
    match f {
        "job" => match r.array_id {
            Some(a) => format!("{}({a})", r.job),
            None => r.job.to_string(),
        },
        "name" => r.name.clone(),
        "user" => r.user.clone(),
        "account" => r.account.clone(),
        "class" => meta_scheduler::accounting::class_name(r.user_class()).to_owned(),
        "priority" => r.priority.to_string(),
        "state" => crate::show::state_name(r.state),
        "procs" => r.processors.to_string(),
        "licences" => r.licences.join(" "),
        "sites" => sites.join(" "),
        "machines" => r
            .parts
            .iter()
            .map(|p| format!("{}/{}", p.site, p.machine))
            .collect::<Vec<_>>()
            .join(" "),
        "submit" => time(r.submit_time),
        "start" => r.start_time.map(time).unwrap_or_default(),
        "end" => time(r.end_time),
        "wait" => dur(r.wait_s),
        "wall" => dur(r.wall_s),
        "proc_s" => r.processor_seconds.to_string(),
        "licence_s" => r.licence_seconds.to_string(),
        "exit" => r.exit_code.map(|c| c.to_string()).unwrap_or_default(),
        _ => String::new(),
    }
}

/// Prints `header` and `rows` as CSV (the csv crate quotes what needs it).
fn print_csv(header: Vec<String>, rows: impl Iterator<Item = Vec<String>>) -> std::io::Result<()> {
    let mut w = csv::Writer::from_writer(Vec::new());
    for row in std::iter::once(header).chain(rows) {
        w.write_record(&row)?;
    }
    let bytes = w.into_inner().map_err(|e| e.into_error())?;
    let text = String::from_utf8_lossy(&bytes);
    outln!("{}", text.trim_end_matches('\n'));
    Ok(())
}

/// `gridctl history`.
pub async fn history(c: &mut crate::Client, a: HistoryArgs, json: bool) -> anyhow::Result<()> {
    if let Some(bad) = a.format.iter().find(|f| !FIELDS.contains(&f.as_str())) {
        anyhow::bail!(
            "--format: `{bad}` is not a field; the fields are {}",
            FIELDS.join(", ")
        );
    }
    anyhow::ensure!(!(json && a.csv), "--json and --csv: choose one");
    let states = a
        .state
        .iter()
        .map(|s| crate::parse_state(s))
        .collect::<anyhow::Result<Vec<i32>>>()?;
    // One period for every page: "now" once.
    let until = a.period.until.unwrap_or_else(|| now() + 1);
    let want = (!a.all).then_some(a.limit);
    let mut records = Vec::new();
    let mut page_token = String::new();
    loop {
        let limit = want.map_or(10_000, |w| (w - records.len()).clamp(1, 10_000));
        let r = c
            .history(v1::HistoryRequest {
                since: a.period.since,
                until: Some(until),
                user: a.user.clone(),
                account: a.account.clone(),
                site: a.site.clone(),
                states: states.clone(),
                limit: limit as u32,
                page_token,
            })
            .await?
            .into_inner();
        records.extend(r.records);
        if r.next_page_token.is_empty() || want.is_some_and(|w| records.len() >= w) {
            break;
        }
        page_token = r.next_page_token;
    }
    if let Some(w) = want {
        records.truncate(w);
    }
    if records.is_empty() && !json && !a.csv {
        let since = a.period.since.unwrap_or(until - 86_400);
        outln!(
            "no job ended between {} and {} (local time){}",
            local(since),
            local(until),
            if a.period.since.is_none() {
                "; --since reaches further back"
            } else {
                ""
            }
        );
        return Ok(());
    }
    Ok(print_history(&records, &a.format, json, a.csv)?)
}

/// Prints history records with `fields`.
pub fn print_history(
    records: &[v1::UsageRecord],
    fields: &[String],
    json: bool,
    csv: bool,
) -> std::io::Result<()> {
    if json {
        let v: Vec<Value> = records
            .iter()
            .map(|r| {
                json!({
                    "job": r.job, "name": r.name, "user": r.user, "account": r.account,
                    "class": field(r, "class", true), "priority": r.priority,
                    "state": crate::show::state_name(r.state), "processors": r.processors,
                    "licences": r.licences,
                    "parts": r.parts.iter().map(|p| json!({
                        "site": p.site, "machine": p.machine, "processors": p.processors,
                        "start_time": p.start_time, "end_time": p.end_time,
                    })).collect::<Vec<_>>(),
                    "submit_time": r.submit_time, "start_time": r.start_time,
                    "end_time": r.end_time, "wait_s": r.wait_s, "wall_s": r.wall_s,
                    "processor_seconds": r.processor_seconds,
                    "licence_seconds": r.licence_seconds, "exit_code": r.exit_code,
                    "array_id": r.array_id, "workflow_id": r.workflow_id,
                })
            })
            .collect();
        outln!("{}", Value::Array(v));
        return Ok(());
    }
    if csv {
        let rows = records
            .iter()
            .map(|r| fields.iter().map(|f| field(r, f, true)).collect());
        return print_csv(fields.to_vec(), rows);
    }
    let mut t = Table::new();
    t.set_header(fields.to_vec());
    for r in records {
        t.add_row(
            fields
                .iter()
                .map(|f| field(r, f, false))
                .collect::<Vec<_>>(),
        );
    }
    outln!("{t}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_shows_the_fields_asked_for() {
        let r = v1::UsageRecord {
            job: 12,
            user: "ann".into(),
            state: v1::JobState::Completed.into(),
            parts: vec![
                v1::UsagePart {
                    site: "alpha".into(),
                    machine: "m1".into(),
                    ..Default::default()
                },
                v1::UsagePart {
                    site: "beta".into(),
                    machine: "b2".into(),
                    ..Default::default()
                },
            ],
            wait_s: 61,
            processor_seconds: 400,
            ..Default::default()
        };
        let got: Vec<String> = [
            "job", "state", "sites", "machines", "wait", "proc_s", "start",
        ]
        .iter()
        .map(|f| field(&r, f, false))
        .collect();
        assert_eq!(
            got,
            [
                "12",
                "completed",
                "alpha beta",
                "alpha/m1 beta/b2",
                "00:01:01",
                "400",
                ""
            ]
        );
        assert_eq!(field(&r, "wait", true), "61");
    }
}
