//! The Gantt view of one cluster: one row per machine, one bar per job that ran
//! there during the window, in the colour of its state, linked to its page. Jobs sharing an SMP
//! machine at the same time are drawn in lanes of the machine's row (first lane free, in start
//! order), so no bar hides another. Right of "now" the plan: the planned starts of waiting jobs
//! at planning sites as outlined bars, and the advance reservations as shaded bands over their
//! machine's row (Streit, thesis §3.2). A job split over sites has one bar per fragment, on its
//! site's chart, naming the others and linked to the job's fragments (Streit, thesis §6.3).

use super::html::{clock, esc, state_colour, state_name};
use std::fmt::Write;

/// A job's stay on a machine.
#[derive(Debug, Clone)]
pub struct Bar {
    /// The job.
    pub job: u64,
    /// Its machine.
    pub machine: String,
    /// Start (Unix seconds).
    pub start: i64,
    /// End; `None` while it runs.
    pub end: Option<i64>,
    /// Its state.
    pub state: i32,
    /// A planned slot of a waiting job (drawn outlined), not a run.
    pub planned: bool,
    /// For a fragment of a job split over sites: which, among which (e.g. `fragment 1 of 2:
    /// alpha 4 + beta 2`).
    pub fragment: Option<String>,
}

/// An advance reservation over the machines of a cluster.
#[derive(Debug, Clone)]
pub struct Band {
    /// Its id.
    pub id: u64,
    /// First second held.
    pub start: i64,
    /// First second no longer held.
    pub end: i64,
    /// Processors held.
    pub procs: u32,
}

const LABEL: f64 = 110.0;
const WIDTH: f64 = 860.0;
const LANE: f64 = 12.0;
const GAP: f64 = 6.0;

/// Lanes of one machine's bars: for each bar (sorted by start), its lane.
fn lanes(bars: &[&Bar], now: i64) -> (Vec<usize>, usize) {
    let mut ends: Vec<i64> = Vec::new();
    let mut lane_of = Vec::with_capacity(bars.len());
    for b in bars {
        let end = b.end.unwrap_or(now).max(b.start + 1);
        match ends.iter().position(|&e| e <= b.start) {
            Some(l) => {
                ends[l] = end;
                lane_of.push(l);
            }
            None => {
                ends.push(end);
                lane_of.push(ends.len() - 1);
            }
        }
    }
    (lane_of, ends.len().max(1))
}

/// The SVG of a cluster's machines over `[now - window, now + ahead]`.
pub fn svg(
    cluster: &str,
    machines: &[String],
    bars: &[Bar],
    bands: &[Band],
    now: i64,
    (window, ahead): (i64, i64),
) -> String {
    let from = now - window;
    let to = now + ahead.max(0);
    let span = (to - from).max(1) as f64;
    let x = |t: i64| LABEL + (t.clamp(from, to) - from) as f64 * WIDTH / span;
    let mut body = String::new();
    let mut y = 18.0;
    for m in machines {
        let mut mine: Vec<&Bar> = bars
            .iter()
            .filter(|b| &b.machine == m && b.end.is_none_or(|e| e >= from))
            .collect();
        mine.sort_by_key(|b| (b.start, b.job));
        let (lane_of, n) = lanes(&mine, now);
        let h = n as f64 * LANE;
        let _ = write!(
            body,
            "<text x=\"4\" y=\"{:.1}\">{}</text><rect x=\"{LABEL}\" y=\"{y:.1}\" width=\"{WIDTH}\" \
             height=\"{h:.1}\" fill=\"#f3f4f6\"/>",
            y + h / 2.0 + 4.0,
            esc(m)
        );
        for r in bands.iter().filter(|r| r.end > from && r.start < to) {
            let (x0, x1) = (x(r.start), x(r.end));
            let _ = write!(
                body,
                "<rect class=\"reservation\" data-reservation=\"r{id}\" x=\"{x0:.1}\" \
                 y=\"{y:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"#fde68a\" \
                 fill-opacity=\"0.6\" stroke=\"#b45309\"><title>advance reservation r{id}: \
                 {} processors {}–{}</title></rect>",
                (x1 - x0).max(1.5),
                r.procs,
                clock(r.start),
                clock(r.end),
                id = r.id,
            );
        }
        for (b, lane) in mine.iter().zip(lane_of) {
            let (x0, x1) = (x(b.start), x(b.end.unwrap_or(now)));
            let (class, paint, what) = if b.planned {
                (
                    "planned",
                    format!(
                        "fill=\"none\" stroke=\"{}\" stroke-dasharray=\"3 2\"",
                        state_colour(b.state)
                    ),
                    "planned",
                )
            } else {
                (
                    "bar",
                    format!("fill=\"{}\"", state_colour(b.state)),
                    state_name(b.state),
                )
            };
            let (class, link, what) = match &b.fragment {
                Some(f) => ("fragment", "#fragments", format!("{what}, {}", esc(f))),
                None => (class, "", what.to_owned()),
            };
            let _ = write!(
                body,
                "<a href=\"/job/{id}{link}\"><rect class=\"{class}\" data-job=\"{id}\" \
                 x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" {paint}><title>job \
                 {id} on {} {}–{} {what}</title></rect></a>",
                y + lane as f64 * LANE + 1.0,
                (x1 - x0).max(1.5),
                LANE - 2.0,
                esc(m),
                clock(b.start),
                b.end.map_or("now".to_owned(), clock),
                id = b.job,
            );
        }
        y += h + GAP;
    }
    let height = y + 16.0;
    format!(
        "<svg class=\"gantt\" id=\"gantt-{c}\" data-cluster=\"{c}\" xmlns=\"http://www.w3.org/2000/svg\" \
         width=\"{w}\" height=\"{height:.0}\" role=\"img\" aria-label=\"Gantt chart of {c}\">\
         <text x=\"4\" y=\"12\" font-weight=\"bold\">{c}</text>\
         <text x=\"{LABEL}\" y=\"12\">{}</text><text x=\"{:.0}\" y=\"12\" text-anchor=\"end\">{}\
         </text><line x1=\"{nx:.1}\" x2=\"{nx:.1}\" y1=\"14\" y2=\"{:.0}\" stroke=\"#111827\"/>\
         {body}</svg>",
        clock(from),
        LABEL + WIDTH,
        if ahead > 0 {
            clock(to)
        } else {
            format!("{} (now)", clock(now))
        },
        y,
        nx = x(now),
        c = esc(cluster),
        w = LABEL + WIDTH + 10.0,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(job: u64, start: i64, end: Option<i64>) -> Bar {
        Bar {
            job,
            machine: "m1".into(),
            start,
            end,
            state: 4,
            planned: false,
            fragment: None,
        }
    }

    #[test]
    fn overlapping_jobs_get_separate_lanes_and_others_reuse_them() {
        let bars = [bar(1, 0, Some(10)), bar(2, 5, Some(8)), bar(3, 10, None)];
        let refs: Vec<&Bar> = bars.iter().collect();
        let (lanes, n) = lanes(&refs, 20);
        assert_eq!(lanes, vec![0, 1, 0]);
        assert_eq!(n, 2);
    }

    #[test]
    fn every_bar_is_drawn_inside_the_plot_and_linked() {
        let bars = [bar(1, 50, Some(80)), bar(2, -500, None)];
        let s = svg(
            "alpha",
            &["m1".into(), "m2".into()],
            &bars,
            &[],
            100,
            (100, 0),
        );
        assert_eq!(s.matches("class=\"bar\"").count(), 2);
        assert!(s.contains("href=\"/job/2\""));
        assert!(s.contains(">m2</text>"));
        // Job 2 started before the window: clamped to its left edge.
        assert!(s.contains(&format!("data-job=\"2\" x=\"{LABEL:.1}\"")));
    }

    #[test]
    fn the_plan_and_the_reservations_are_drawn_right_of_now() {
        let mut planned = bar(3, 150, Some(180));
        planned.planned = true;
        let bars = [bar(1, 50, None), planned];
        let bands = [Band {
            id: 7,
            start: 120,
            end: 160,
            procs: 2,
        }];
        // From 0 to 200, now at 100: the middle of the plot.
        let s = svg("alpha", &["m1".into()], &bars, &bands, 100, (100, 100));
        let at = |t: f64| LABEL + t / 200.0 * WIDTH;
        assert!(s.contains(&format!(
            "class=\"planned\" data-job=\"3\" x=\"{:.1}\"",
            at(150.0)
        )));
        assert!(s.contains(&format!(
            "data-reservation=\"r7\" x=\"{:.1}\" y=\"18.0\" width=\"{:.1}\"",
            at(120.0),
            at(160.0) - at(120.0)
        )));
        assert!(s.contains(&format!("x1=\"{:.1}\"", at(100.0))));
        // The running job ends at now.
        assert!(s.contains(&format!(
            "class=\"bar\" data-job=\"1\" x=\"{:.1}\" y=\"19.0\" width=\"{:.1}\"",
            at(50.0),
            at(100.0) - at(50.0)
        )));
    }

    #[test]
    fn a_fragment_names_the_others_and_links_to_its_job_s_fragments() {
        let mut f = bar(9, 20, Some(60));
        f.fragment = Some("fragment 1 of 2: alpha 4 + beta 2".into());
        let s = svg("beta", &["m1".into()], &[f], &[], 100, (100, 0));
        assert!(s.contains("id=\"gantt-beta\""));
        assert!(s.contains("<a href=\"/job/9#fragments\"><rect class=\"fragment\" data-job=\"9\""));
        assert!(
            s.contains("RUNNING, fragment 1 of 2: alpha 4 + beta 2</title>"),
            "{s}"
        );
        assert_eq!(s.matches("class=\"bar\"").count(), 0);
    }
}
