//! Aggregate metrics over a whole schedule (`self-tuning-and-multisite.md` §3.3–3.4,
//! `gang-urgent-scaling.md` A.4, C.4), accumulated job by job in constant memory.
//!
//! Two weightings exist in the literature and both are reported: `awrt`/`awwt` are weighted by
//! resource consumption (area = width × run, Ernemann's definition, C.4 and §7.3.3), while
//! `artww` (= AWRT of Eq. 7.1) and `awwt_width` are weighted by width.

use super::{CapacityTracker, JobRecord};
use crate::model::Time;
use serde::{Deserialize, Serialize};

/// The aggregate metrics of a schedule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Jobs that ran.
    pub jobs: u64,
    /// Mean waiting time (AWT, Eq. 3.1).
    pub mean_wait_s: f64,
    /// Largest waiting time.
    pub max_wait_s: i64,
    /// Mean response time (ART, Eq. 3.2).
    pub mean_response_s: f64,
    /// Largest response time.
    pub max_response_s: i64,
    /// Mean slowdown (response / run).
    pub mean_slowdown: f64,
    /// Mean bounded slowdown, 10 s threshold.
    pub mean_bsld10: f64,
    /// Largest bounded slowdown, 10 s threshold.
    pub max_bsld10: f64,
    /// Σ width × run / (capacity × (last end − first submit)) (Eq. 3.6).
    pub utilization: f64,
    /// Idle processor time while jobs waited / (capacity × span) (Eq. 3.7).
    pub loss_of_capacity: f64,
    /// End of the last job, in seconds since the workload's origin (Eq. 3.5).
    pub makespan_s: i64,
    /// Last end − first submission.
    pub span_s: i64,
    /// Average response time weighted by area (resource consumption).
    pub awrt: f64,
    /// Average waiting time weighted by area.
    pub awwt: f64,
    /// Average response time weighted by width (ARTwW, Eq. 3.3 = AWRT of Eq. 7.1).
    pub artww: f64,
    /// Average waiting time weighted by width (AWWT of Eq. 7.2).
    pub awwt_width: f64,
    /// Slowdown weighted by area (SLDwA, Eq. 3.4).
    pub sldwa: f64,
    /// Σ width × run, processor-seconds.
    pub squashed_area: f64,
}

/// Accumulates [`JobRecord`]s into a [`Summary`].
#[derive(Clone, Debug, Default)]
pub struct SummaryBuilder {
    jobs: u64,
    sum_wait: i128,
    max_wait: i64,
    sum_response: i128,
    max_response: i64,
    sum_slowdown: f64,
    sum_bsld: f64,
    max_bsld: f64,
    sum_width: i128,
    sum_width_response: i128,
    sum_width_wait: i128,
    sum_area: i128,
    sum_area_response: f64,
    sum_area_wait: f64,
    first_submit: Option<Time>,
    last_end: Option<Time>,
}

fn ratio(num: f64, den: f64) -> f64 {
    if den == 0.0 { 0.0 } else { num / den }
}

impl SummaryBuilder {
    /// Nothing accumulated yet.
    pub fn new() -> SummaryBuilder {
        SummaryBuilder::default()
    }

    /// Adds one finished job.
    pub fn add(&mut self, r: &JobRecord) {
        let (wait, response) = (r.wait(), r.response());
        let width = i128::from(r.procs);
        let area = r.area();
        self.jobs += 1;
        self.sum_wait += i128::from(wait);
        self.max_wait = self.max_wait.max(wait);
        self.sum_response += i128::from(response);
        self.max_response = self.max_response.max(response);
        self.sum_slowdown += r.slowdown();
        let b = r.bsld10();
        self.sum_bsld += b;
        self.max_bsld = self.max_bsld.max(b);
        self.sum_width += width;
        self.sum_width_response += width * i128::from(response);
        self.sum_width_wait += width * i128::from(wait);
        self.sum_area += area;
        self.sum_area_response += area as f64 * response as f64;
        self.sum_area_wait += area as f64 * wait as f64;
        self.first_submit = Some(self.first_submit.map_or(r.submit, |t| t.min(r.submit)));
        self.last_end = Some(self.last_end.map_or(r.end, |t| t.max(r.end)));
    }

    /// Jobs added so far.
    pub fn jobs(&self) -> u64 {
        self.jobs
    }

    /// The summary for a machine (or grid) of `capacity` processors; `capacity_tracker` gives the
    /// loss of capacity when the driver observed the machine state.
    pub fn finish(&self, capacity: u64, capacity_tracker: Option<&CapacityTracker>) -> Summary {
        let n = self.jobs as f64;
        let span = match (self.first_submit, self.last_end) {
            (Some(a), Some(b)) => (b - a).max(0),
            _ => 0,
        };
        let cap_time = capacity as f64 * span as f64;
        Summary {
            jobs: self.jobs,
            mean_wait_s: ratio(self.sum_wait as f64, n),
            max_wait_s: self.max_wait,
            mean_response_s: ratio(self.sum_response as f64, n),
            max_response_s: self.max_response,
            mean_slowdown: ratio(self.sum_slowdown, n),
            mean_bsld10: ratio(self.sum_bsld, n),
            max_bsld10: self.max_bsld,
            utilization: ratio(self.sum_area as f64, cap_time),
            loss_of_capacity: capacity_tracker
                .map_or(0.0, |c| ratio(c.idle_while_waiting() as f64, cap_time)),
            makespan_s: self.last_end.unwrap_or(0),
            span_s: span,
            awrt: ratio(self.sum_area_response, self.sum_area as f64),
            awwt: ratio(self.sum_area_wait, self.sum_area as f64),
            artww: ratio(self.sum_width_response as f64, self.sum_width as f64),
            awwt_width: ratio(self.sum_width_wait as f64, self.sum_width as f64),
            sldwa: ratio(self.sum_width_response as f64, self.sum_area as f64),
            squashed_area: self.sum_area as f64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{JobId, UserId};

    fn rec(id: u64, submit: Time, start: Time, end: Time, procs: u32) -> JobRecord {
        JobRecord {
            id: JobId(id),
            user: UserId(0),
            submit,
            start,
            end,
            procs,
            estimate: end - start,
        }
    }

    #[test]
    fn worked_example() {
        // Machine of 4 processors.
        // job 1: width 2, submit 0, start 0, end 100  -> wait 0,   resp 100, area 200
        // job 2: width 4, submit 10, start 100, end 150 -> wait 90, resp 140, area 200
        // job 3: width 1, submit 20, start 150, end 155 -> wait 130, resp 135, area 5
        let mut b = SummaryBuilder::new();
        for r in [
            rec(1, 0, 0, 100, 2),
            rec(2, 10, 100, 150, 4),
            rec(3, 20, 150, 155, 1),
        ] {
            b.add(&r);
        }
        let s = b.finish(4, None);
        assert_eq!(s.jobs, 3);
        assert!((s.mean_wait_s - 220.0 / 3.0).abs() < 1e-12);
        assert_eq!(s.max_wait_s, 130);
        assert!((s.mean_response_s - 375.0 / 3.0).abs() < 1e-12);
        assert_eq!(s.makespan_s, 155);
        assert_eq!(s.span_s, 155);
        assert!((s.utilization - 405.0 / (4.0 * 155.0)).abs() < 1e-12);
        // width-weighted: (2*100 + 4*140 + 1*135) / 7
        assert!((s.artww - 895.0 / 7.0).abs() < 1e-12);
        assert!((s.awwt_width - (4.0 * 90.0 + 130.0) / 7.0).abs() < 1e-12);
        // area-weighted: (200*100 + 200*140 + 5*135) / 405
        assert!((s.awrt - 48675.0 / 405.0).abs() < 1e-12);
        assert!((s.awwt - (200.0 * 90.0 + 5.0 * 130.0) / 405.0).abs() < 1e-12);
        // Eq. 3.8: SLDwA / ARTwW = Σw / Σa
        assert!((s.sldwa / s.artww - 7.0 / 405.0).abs() < 1e-12);
        // bounded slowdowns: 1, 140/50 = 2.8, 135/10 = 13.5
        assert!((s.mean_bsld10 - (1.0 + 2.8 + 13.5) / 3.0).abs() < 1e-12);
        assert_eq!(s.max_bsld10, 13.5);
        // C.4 invariant: AWRT − AWWT depends only on the workload (Σ a·run / Σ a).
        assert!(
            (s.awrt - s.awwt - (200.0 * 100.0 + 200.0 * 50.0 + 5.0 * 5.0) / 405.0).abs() < 1e-9
        );
    }

    #[test]
    fn empty_schedule_is_all_zero() {
        let s = SummaryBuilder::new().finish(10, None);
        assert_eq!(s.jobs, 0);
        assert_eq!(s.mean_wait_s, 0.0);
        assert_eq!(s.utilization, 0.0);
    }
}
