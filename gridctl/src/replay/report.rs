//! The comparison of a live replay with its pure simulation: per side the jobs that completed,
//! mean wait, mean bounded slowdown (threshold 10 s, `gang-urgent-scaling.md` A.4), the longest
//! wait and the makespan, in trace seconds (replay seconds divided by the time scale); and, job by
//! job, how often both sides chose the same site and started within one replay second of each
//! other. What separates the two sides is real time alone: the same jobs, grid and decision code.

use super::Outcome;
use super::slice::TimeScale;
use gridsched_core::metrics::BSLD_THRESHOLD_S;
use serde::Serialize;

/// The figures of one side.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Side {
    /// Jobs that ran to completion.
    pub completed: usize,
    /// Jobs refused at submission (no site can ever run them).
    pub refused: usize,
    /// Jobs lost with their site (`gridctl replay --lose`).
    pub lost: usize,
    /// Mean wait (start − submit), trace seconds.
    pub mean_wait_s: f64,
    /// Mean bounded slowdown: max(1, response / max(run, 10 s)).
    pub mean_bsld: f64,
    /// Longest wait, trace seconds.
    pub max_wait_s: f64,
    /// First submission to last end, trace seconds.
    pub makespan_s: f64,
}

impl Side {
    /// The figures of `outcomes` (times in replay seconds).
    pub fn of(outcomes: &[Outcome], scale: TimeScale) -> Side {
        let done: Vec<_> = outcomes.iter().filter(|o| o.completed).collect();
        let mut s = Side {
            completed: done.len(),
            refused: outcomes.iter().filter(|o| o.was_refused()).count(),
            lost: outcomes.iter().filter(|o| o.lost).count(),
            ..Side::default()
        };
        if done.is_empty() {
            return s;
        }
        let t = |v: i64| scale.to_trace(v as f64);
        let tau = BSLD_THRESHOLD_S as f64;
        let (mut first, mut last) = (i64::MAX, i64::MIN);
        for o in &done {
            let (submit, start, end) = o.times().expect("a completed job has its times");
            let (wait, run) = (t(start - submit), t(end - start));
            s.mean_wait_s += wait;
            s.mean_bsld += ((wait + run) / run.max(tau)).max(1.0);
            s.max_wait_s = s.max_wait_s.max(wait);
            first = first.min(submit);
            last = last.max(end);
        }
        s.mean_wait_s /= done.len() as f64;
        s.mean_bsld /= done.len() as f64;
        s.makespan_s = t(last - first);
        s
    }
}

/// The whole comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// The trace file.
    pub trace: String,
    /// Jobs of the trace skipped before the slice.
    pub skip: usize,
    /// Jobs in the slice.
    pub jobs: usize,
    /// The time scale, as a fraction.
    pub time_scale: String,
    /// The live replay.
    pub live: Side,
    /// The pure simulation of the same scaled jobs on the same grid.
    pub simulated: Side,
    /// Jobs both sides ran at the same site.
    pub same_site: usize,
    /// Jobs both sides started within one replay second of each other (same site too).
    pub same_start: usize,
    /// Mean lateness of the live submissions against their scaled times, replay seconds.
    pub mean_submit_lag_s: f64,
}

impl Report {
    /// Compares `live` with `simulated` (the same jobs, in the same order).
    pub fn new(
        trace: String,
        skip: usize,
        scale: TimeScale,
        live: &[Outcome],
        simulated: &[Outcome],
        lag_s: f64,
    ) -> Report {
        let pairs = || live.iter().zip(simulated).filter(|(a, b)| a.site == b.site);
        Report {
            trace,
            skip,
            jobs: live.len(),
            time_scale: scale.to_string(),
            live: Side::of(live, scale),
            simulated: Side::of(simulated, scale),
            same_site: pairs().filter(|(a, _)| a.site.is_some()).count(),
            same_start: pairs()
                .filter(|(a, b)| match (a.start, b.start) {
                    (Some(x), Some(y)) => (x - y).abs() <= 1,
                    _ => false,
                })
                .count(),
            mean_submit_lag_s: lag_s,
        }
    }

    /// The comparison as a table.
    pub fn table(&self) -> comfy_table::Table {
        let mut t = comfy_table::Table::new();
        t.set_header(["", "live", "simulated", "live − simulated"]);
        let mut row = |name: &str, a: f64, b: f64, digits: usize| {
            t.add_row([
                name.to_owned(),
                format!("{a:.digits$}"),
                format!("{b:.digits$}"),
                format!("{:+.digits$}", a - b),
            ]);
        };
        let (l, s) = (&self.live, &self.simulated);
        row("completed", l.completed as f64, s.completed as f64, 0);
        row("refused", l.refused as f64, s.refused as f64, 0);
        if l.lost + s.lost > 0 {
            row("lost with a site", l.lost as f64, s.lost as f64, 0);
        }
        row("mean wait (s)", l.mean_wait_s, s.mean_wait_s, 1);
        row("mean bounded slowdown", l.mean_bsld, s.mean_bsld, 3);
        row("max wait (s)", l.max_wait_s, s.max_wait_s, 1);
        row("makespan (s)", l.makespan_s, s.makespan_s, 1);
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(job: u64, site: usize, submit: i64, start: i64, end: i64) -> Outcome {
        Outcome {
            job,
            site: Some(site),
            submit: Some(submit),
            start: Some(start),
            end: Some(end),
            completed: true,
            lost: false,
            note: String::new(),
        }
    }

    #[test]
    fn figures_are_in_trace_seconds_with_the_bounded_slowdown_of_a_4() {
        let scale: TimeScale = "1/10".parse().unwrap();
        // Replay seconds ×10: waits 0 and 30 s, runs 50 and 5 s (bounded at 10 s).
        let live = [done(1, 0, 0, 0, 5), done(2, 1, 1, 4, 4)];
        let s = Side::of(&live, scale);
        assert_eq!((s.completed, s.refused), (2, 0));
        assert_eq!(s.mean_wait_s, 15.0);
        // Job 1: max(1, 50/50) = 1; job 2 (run 0): (30 + 0) / 10 = 3.
        assert_eq!(s.mean_bsld, 2.0);
        assert_eq!((s.max_wait_s, s.makespan_s), (30.0, 50.0));
        let sim = [done(1, 0, 0, 0, 5), done(2, 0, 1, 2, 2)];
        let r = Report::new("t".into(), 0, scale, &live, &sim, 0.25);
        assert_eq!((r.same_site, r.same_start), (1, 1));
        assert_eq!(r.simulated.mean_wait_s, 5.0);
        let text = r.table().to_string();
        assert!(
            text.contains("mean wait (s)") && text.contains("+10.0"),
            "{text}"
        );
        let refused = Outcome::refused(3);
        assert_eq!(Side::of(&[refused], scale).refused, 1);
    }
}
