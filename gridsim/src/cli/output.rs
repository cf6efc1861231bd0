//! A replay's result, and its rendering: a readable table by default, one JSON object with
//! `--json`.

use comfy_table::{Cell, CellAlignment, Table, presets::UTF8_FULL_CONDENSED};
use gridsched_core::metrics::Summary;
use gridsched_workload::NormalizeStats;
use gridsim::RunReport;
use serde::Serialize;

/// What was replayed.
#[derive(Clone, Debug, Serialize)]
pub struct WorkloadInfo {
    /// The file, or `synthetic`.
    pub source: String,
    /// `swf`, `jsonl` or `synthetic`.
    pub format: &'static str,
    /// Processors of the simulated machine.
    pub procs: u32,
    /// Jobs read from the workload.
    pub jobs_read: u64,
    /// Lines skipped as unreadable (with --skip-bad-lines).
    pub skipped_lines: u64,
    /// What the SWF normalisation did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub normalizer: Option<NormalizeStats>,
    /// Selected SWF header fields.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header: Option<HeaderInfo>,
}

/// The SWF header fields a report shows.
#[derive(Clone, Debug, Serialize)]
pub struct HeaderInfo {
    pub computer: Option<String>,
    pub installation: Option<String>,
    pub max_procs: Option<u64>,
    pub max_nodes: Option<u64>,
    pub unix_start_time: Option<i64>,
    pub acknowledge: Option<String>,
}

/// The result of one replay.
#[derive(Debug)]
pub struct RunOutcome {
    pub workload: WorkloadInfo,
    pub policy: String,
    pub options: Vec<String>,
    pub report: RunReport,
    pub wall_s: f64,
    pub skipped_errors: Vec<String>,
    /// The policy's own counters (dynP: decisions by case, switches, starts by policy).
    pub counters: Vec<(String, u64)>,
}

/// The JSON object of `gridsim run --json`: the summary's keys at the top level, then the run's
/// counters and timing.
#[derive(Serialize)]
pub struct RunJson<'a> {
    workload: &'a WorkloadInfo,
    policy: &'a str,
    options: &'a [String],
    #[serde(flatten)]
    summary: &'a Summary,
    rejected: u64,
    passes: u64,
    events: u64,
    max_queue: usize,
    mean_queue: f64,
    mean_queue_at_submit: f64,
    overruns: u64,
    sim_wall_s: f64,
    jobs_per_s: f64,
    /// Advance reservations admitted and refused (`--reservations`).
    reservations_admitted: u64,
    reservations_refused: u64,
    /// The policy's counters, by name (empty for policies that keep none).
    counters: std::collections::BTreeMap<&'a str, u64>,
}

impl<'a> RunJson<'a> {
    pub fn new(o: &'a RunOutcome) -> RunJson<'a> {
        let s = &o.report.stats;
        RunJson {
            workload: &o.workload,
            policy: &o.policy,
            options: &o.options,
            summary: &o.report.summary,
            rejected: s.rejected,
            passes: s.passes,
            events: s.events,
            max_queue: s.max_waiting,
            mean_queue: s.mean_waiting,
            mean_queue_at_submit: s.mean_waiting_at_submit,
            overruns: s.overruns,
            sim_wall_s: o.wall_s,
            jobs_per_s: jobs_per_s(o),
            reservations_admitted: s.reservations_admitted,
            reservations_refused: s.reservations_refused,
            counters: o.counters.iter().map(|(n, v)| (n.as_str(), *v)).collect(),
        }
    }
}

fn jobs_per_s(o: &RunOutcome) -> f64 {
    if o.wall_s > 0.0 {
        o.report.stats.submitted as f64 / o.wall_s
    } else {
        0.0
    }
}

/// Thousands separators for integers.
pub fn group(n: i64) -> String {
    let s = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 { format!("-{out}") } else { out }
}

/// A float with two decimals and thousands separators.
pub fn fixed2(x: f64) -> String {
    let whole = x.trunc() as i64;
    let frac = ((x - x.trunc()).abs() * 100.0).round() as i64;
    if frac == 100 {
        return format!("{}.00", group(whole + x.signum() as i64));
    }
    format!("{}.{frac:02}", group(whole))
}

/// The readable report.
pub fn table(o: &RunOutcome) -> String {
    let s = &o.report.summary;
    let st = &o.report.stats;
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_header(vec!["", "value"]);
    let mut row = |k: &str, v: String| {
        t.add_row(vec![
            Cell::new(k),
            Cell::new(v).set_alignment(CellAlignment::Right),
        ]);
    };
    row("workload", o.workload.source.clone());
    row(
        "machine",
        format!("{} processors", group(i64::from(o.workload.procs))),
    );
    let opts = if o.options.is_empty() {
        "reference (pyss) mode".to_string()
    } else {
        o.options.join(", ")
    };
    row("policy", format!("{} [{opts}]", o.policy));
    row("jobs", group(s.jobs as i64));
    if st.rejected > 0 {
        row("rejected by the policy", group(st.rejected as i64));
    }
    if st.reservations_admitted + st.reservations_refused > 0 {
        row(
            "advance reservations admitted / refused",
            format!(
                "{} / {}",
                group(st.reservations_admitted as i64),
                group(st.reservations_refused as i64)
            ),
        );
    }
    if o.workload.skipped_lines > 0 {
        row(
            "unreadable lines skipped",
            group(o.workload.skipped_lines as i64),
        );
    }
    if let Some(n) = &o.workload.normalizer {
        if n.problematic > 0 {
            row("problematic jobs kept as 1 s", group(n.problematic as i64));
        }
        if n.dropped() > 0 {
            row("jobs dropped by normalisation", group(n.dropped() as i64));
        }
    }
    row("mean wait (s)", fixed2(s.mean_wait_s));
    row("max wait (s)", group(s.max_wait_s));
    row("mean response (s)", fixed2(s.mean_response_s));
    row("mean bounded slowdown (10 s)", fixed2(s.mean_bsld10));
    row("max bounded slowdown (10 s)", fixed2(s.max_bsld10));
    row("mean slowdown", fixed2(s.mean_slowdown));
    row("utilization", format!("{:.2} %", 100.0 * s.utilization));
    row(
        "loss of capacity",
        format!("{:.2} %", 100.0 * s.loss_of_capacity),
    );
    row("makespan (s)", group(s.makespan_s));
    row("AWRT, area-weighted (s)", fixed2(s.awrt));
    row("AWWT, area-weighted (s)", fixed2(s.awwt));
    row("ARTwW, width-weighted (s)", fixed2(s.artww));
    row("SLDwA", format!("{:.4}", s.sldwa));
    row(
        "queue length mean / max",
        format!("{:.1} / {}", st.mean_waiting, group(st.max_waiting as i64)),
    );
    row("scheduling passes", group(st.passes as i64));
    if !o.counters.is_empty() {
        let list: Vec<String> = o
            .counters
            .iter()
            .map(|(n, v)| format!("{n} {}", group(*v as i64)))
            .collect();
        row("policy counters", list.join(", "));
    }
    row(
        "wall time",
        format!("{:.3} s ({} jobs/s)", o.wall_s, group(jobs_per_s(o) as i64)),
    );
    t.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_formatting() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(-1234567), "-1,234,567");
        assert_eq!(fixed2(218980.5789), "218,980.58");
        assert_eq!(fixed2(86.2849), "86.28");
        assert_eq!(fixed2(1.999), "2.00");
        assert_eq!(fixed2(0.5), "0.50");
    }
}
