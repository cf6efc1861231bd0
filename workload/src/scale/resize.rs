//! Proportional width resizing of a trace for another total machine size (the grid study of
//! `self-tuning-and-multisite.md` §6.6 on traces other than CTC; the "widths" method of
//! `gang-urgent-scaling.md` Part C without copies and with exact integer rounding).
//!
//! The grid study runs 10,000-job extracts on 512 nodes in total. Its CTC trace (430 nodes) is used
//! as it is; the traces we have come from machines of 100 (KTH), 240 (HPC2N) or 1,152 (SDSC-BLUE)
//! processors, so their widths are resized to keep each job's share of the machine:
//! `w' = ⌈w · to / from⌉`, clamped to `1..=to`. Unlike Part C's enlargement ([`super::Stage`],
//! rounding half up, scaling up only) this also shrinks (SDSC-BLUE to 512) and rounds up, so that no
//! job asks for less than its share and a one-node job stays one node when shrinking. Run times and
//! estimates are unchanged, so the total work scales by about `to / from`.

use crate::error::WorkloadError;
use gridsched_core::model::{Job, JobId};

/// Resizes every job's width from a `from`-node machine to a `to`-node one (`⌈w · to / from⌉`,
/// clamped to `1..=to`).
pub fn resize_widths(jobs: &mut [Job], from: u32, to: u32) -> Result<(), WorkloadError> {
    if from == 0 || to == 0 {
        return Err(WorkloadError::Options(format!(
            "resizing widths: machine sizes must be positive (from {from} to {to})"
        )));
    }
    for j in jobs {
        j.procs = resized(j.procs, from, to);
    }
    Ok(())
}

/// One width resized from `from` to `to` nodes (both positive).
pub fn resized(width: u32, from: u32, to: u32) -> u32 {
    (u64::from(width) * u64::from(to))
        .div_ceil(u64::from(from.max(1)))
        .clamp(1, u64::from(to.max(1))) as u32
}

/// Shifts submissions so that the first job is submitted at 0 and renumbers the ids from 1, in
/// order: an extract of a trace as a workload of its own.
pub fn rebase(jobs: &mut [Job]) {
    let t0 = jobs.first().map_or(0, |j| j.submit);
    for (k, j) in jobs.iter_mut().enumerate() {
        j.id = JobId(k as u64 + 1);
        j.submit -= t0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_keep_their_share_rounding_up() {
        // KTH (100 nodes) to 512: ×5.12.
        assert_eq!(resized(1, 100, 512), 6, "5.12 rounds up");
        assert_eq!(resized(75, 100, 512), 384);
        assert_eq!(
            resized(76, 100, 512),
            390,
            "wider than m384's largest machine"
        );
        assert_eq!(resized(100, 100, 512), 512);
        // SDSC-BLUE (1,152) to 512: shrinking, never below one node, the whole machine stays whole.
        assert_eq!(resized(1, 1152, 512), 1);
        assert_eq!(resized(8, 1152, 512), 4, "3.56 rounds up");
        assert_eq!(resized(1152, 1152, 512), 512);
        assert_eq!(resized(2000, 1152, 512), 512, "clamped to the target");
        assert_eq!(resized(64, 512, 512), 64, "same size: unchanged");
    }

    #[test]
    fn resize_and_rebase_a_list() {
        let mut jobs = vec![
            Job::new(17, 1000, 10, 100, 50),
            Job::new(18, 1500, 100, 100, 60),
        ];
        resize_widths(&mut jobs, 240, 512).unwrap();
        assert_eq!(jobs.iter().map(|j| j.procs).collect::<Vec<_>>(), [22, 214]);
        assert!(jobs.iter().all(|j| j.estimate == 100));
        assert_eq!(jobs[1].runtime, Some(60));
        rebase(&mut jobs);
        assert_eq!(
            jobs.iter().map(|j| (j.id, j.submit)).collect::<Vec<_>>(),
            [(JobId(1), 0), (JobId(2), 500)]
        );
        assert!(resize_widths(&mut jobs, 0, 512).is_err());
        assert!(resize_widths(&mut jobs, 100, 0).is_err());
    }
}
