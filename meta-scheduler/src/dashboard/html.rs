//! HTML building blocks of the dashboard: escaping, the page frame with its style sheet, tables,
//! and the names and colours of job states.

use gridsched_proto::v1::JobState;
use std::fmt::Write;

/// Escapes text for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A job state's short name ("RUNNING").
pub fn state_name(s: i32) -> &'static str {
    JobState::try_from(s)
        .unwrap_or(JobState::Unspecified)
        .as_str_name()
        .trim_start_matches("JOB_STATE_")
}

/// The colour of a job state in tables and the Gantt view.
pub fn state_colour(s: i32) -> &'static str {
    match JobState::try_from(s).unwrap_or(JobState::Unspecified) {
        JobState::Running => "#2f6fdf",
        JobState::Suspended => "#8e5fc9",
        JobState::Completed => "#2e9d4f",
        JobState::Failed | JobState::Killed | JobState::Lost => "#d2413a",
        JobState::Cancelled => "#8a8a8a",
        _ => "#d59b1f",
    }
}

/// A state badge.
pub fn badge(s: i32) -> String {
    format!(
        "<span class=\"badge\" style=\"background:{}\">{}</span>",
        state_colour(s),
        state_name(s)
    )
}

/// A Unix time as `HH:MM:SS` UTC (the dashboard shows recent things).
pub fn clock(t: i64) -> String {
    let s = t.rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}", s / 3600, s % 3600 / 60, s % 60)
}

/// A link to a job's page.
pub fn job_link(id: u64) -> String {
    format!("<a href=\"/job/{id}\">{id}</a>")
}

/// A table: `head` cells, then rows of already-escaped HTML cells.
pub fn table(id: &str, head: &[&str], rows: &[Vec<String>]) -> String {
    let mut t = format!("<table id=\"{id}\"><thead><tr>");
    for h in head {
        let _ = write!(t, "<th>{}</th>", esc(h));
    }
    t.push_str("</tr></thead><tbody>");
    if rows.is_empty() {
        let _ = write!(
            t,
            "<tr><td colspan=\"{}\" class=\"none\">none</td></tr>",
            head.len()
        );
    }
    for r in rows {
        t.push_str("<tr>");
        for c in r {
            let _ = write!(t, "<td>{c}</td>");
        }
        t.push_str("</tr>");
    }
    t.push_str("</tbody></table>");
    t
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;background:#fafafa}\
h1{margin:0 0 .2em;font-size:1.5em}h2{font-size:1.15em;margin:1.4em 0 .4em}\
table{border-collapse:collapse;background:#fff;margin-bottom:.5em}\
th,td{border:1px solid #ddd;padding:.25em .6em;text-align:left;font-size:.9em}\
th{background:#eef1f5}.none{color:#888;font-style:italic}\
.badge{color:#fff;border-radius:3px;padding:0 .4em;font-size:.8em}\
.up{color:#2e9d4f;font-weight:bold}.down{color:#d2413a;font-weight:bold}\
.muted{color:#777;font-size:.85em}pre{background:#fff;border:1px solid #ddd;padding:.8em;\
white-space:pre-wrap}.cards{display:flex;gap:1em;flex-wrap:wrap}\
.card{background:#fff;border:1px solid #ddd;padding:.5em 1em}.card b{font-size:1.4em;display:block}\
svg text{font-size:11px;font-family:system-ui,sans-serif}";

/// A whole page: `title`, then `body`; refreshed every `refresh` seconds when given.
pub fn page(title: &str, refresh: Option<u32>, body: &str) -> String {
    let meta = refresh.map_or(String::new(), |r| {
        format!("<meta http-equiv=\"refresh\" content=\"{r}\">")
    });
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">{meta}\
         <title>{}</title><style>{STYLE}</style></head><body>{body}\
         <p class=\"muted\">gridsched meta-scheduler · <a href=\"/\">overview</a> · \
         <a href=\"/metrics\">metrics</a> · <a href=\"/api/overview\">JSON</a></p></body></html>",
        esc(title)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_states_named() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(state_name(JobState::Running as i32), "RUNNING");
        assert_eq!(state_name(JobState::Suspended as i32), "SUSPENDED");
        let badge = badge(JobState::Suspended as i32);
        assert!(
            badge.contains("SUSPENDED") && badge.contains("#8e5fc9"),
            "{badge}"
        );
        assert_ne!(
            state_colour(JobState::Suspended as i32),
            state_colour(JobState::Queued as i32),
            "a suspended job stands apart from the waiting ones"
        );
        assert_eq!(state_name(99), "UNSPECIFIED");
        assert_eq!(clock(86_400 + 3_661), "01:01:01");
        let t = table("t", &["a"], &[]);
        assert!(t.contains("none"));
    }
}
