//! Workload modifications 1–4 of `self-tuning-and-multisite.md` §6.6 (grid workloads): wide
//! jobs split into independent parts. Reading adopted (§6.6 interpretation, §8 #22, #23): a job
//! of width w > M becomes ⌈w/M⌉ jobs of widths M, …, M, remainder with the same submit time,
//! estimate and actual run time; jobs are assigned to sites round-robin (job k → site k mod S,
//! in machine order) before splitting, and modification 1 splits to the size of the home
//! site's machine (m64: 64, 32 or 8 depending on the site). No modification changes the total
//! work (Σ width × run time).

use crate::error::WorkloadError;
use gridsched_core::model::{Job, JobId};

/// The four modifications of §6.6.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Modification {
    /// 1: split to the home site's machine size (local processing).
    LocalMachine,
    /// 2: split to the largest machine of the configuration (job sharing, multi-site).
    LargestMachine,
    /// 3: split to at most this many nodes (64 for the `_max64` sets; multi-site only).
    MaxWidth(u32),
    /// 4: wide jobs unchanged (multi-site only).
    Unchanged,
}

/// One job after a modification, with its home site and provenance.
#[derive(Clone, Debug, PartialEq)]
pub struct SplitJob {
    /// The (part) job; ids are renumbered sequentially from 1.
    pub job: Job,
    /// Home site (index into the machine sizes).
    pub site: usize,
    /// Id of the original job.
    pub original: JobId,
    /// Part index (0 for an unsplit job).
    pub part: u32,
}

/// The parts of `job` when split to at most `max` (≥ 1) nodes: widths max, …, remainder; ids
/// unchanged.
pub fn split_job(job: &Job, max: u32) -> impl Iterator<Item = Job> + '_ {
    let max = max.max(1);
    let n = job.procs.div_ceil(max).max(1);
    (0..n).map(move |i| {
        let mut part = job.clone();
        part.procs = if i + 1 < n {
            max
        } else {
            job.procs - max * (n - 1)
        };
        part
    })
}

impl Modification {
    /// The widest part this modification leaves for a job whose home machine is `home` nodes in a
    /// configuration whose largest machine is `largest` nodes.
    pub fn max_width(self, home: u32, largest: u32) -> u32 {
        match self {
            Modification::LocalMachine => home,
            Modification::LargestMachine => largest,
            Modification::MaxWidth(m) => m,
            Modification::Unchanged => u32::MAX,
        }
    }
}

/// Assigns `jobs` (in order) round-robin to the sites of `sizes` and applies `modification`.
pub fn split_workload(
    jobs: &[Job],
    sizes: &[u32],
    modification: Modification,
) -> Result<Vec<SplitJob>, WorkloadError> {
    let n = sizes.len().max(1);
    split_homed(
        jobs.iter().enumerate().map(|(k, j)| (j.clone(), k % n)),
        sizes,
        modification,
    )
}

/// Applies `modification` to jobs whose home sites are already chosen (an index into `sizes`,
/// e.g. from the SWF partition field); every part keeps its job's home site.
pub fn split_homed(
    jobs: impl IntoIterator<Item = (Job, usize)>,
    sizes: &[u32],
    modification: Modification,
) -> Result<Vec<SplitJob>, WorkloadError> {
    if sizes.is_empty() || sizes.contains(&0) {
        return Err(WorkloadError::Options(format!(
            "workload modification: machine sizes must be a non-empty list of positive sizes, got {sizes:?}"
        )));
    }
    if modification == Modification::MaxWidth(0) {
        return Err(WorkloadError::Options(
            "workload modification: the maximum width must be positive".into(),
        ));
    }
    let largest = sizes.iter().copied().max().unwrap_or(1);
    let jobs = jobs.into_iter();
    let mut out = Vec::with_capacity(jobs.size_hint().0);
    for (job, site) in jobs {
        let Some(&home) = sizes.get(site) else {
            return Err(WorkloadError::Options(format!(
                "workload modification: job {} has home site {site}, but there are only {} sites",
                job.id,
                sizes.len()
            )));
        };
        let max = modification.max_width(home, largest);
        for (part, mut p) in split_job(&job, max).enumerate() {
            p.id = JobId(out.len() as u64 + 1);
            out.push(SplitJob {
                job: p,
                site,
                original: job.id,
                part: part as u32,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scale::Summary;

    fn jobs() -> Vec<Job> {
        vec![
            Job::new(1, 0, 336, 100, 50),
            Job::new(2, 5, 64, 100, 60),
            Job::new(3, 9, 100, 100, 70),
            Job::new(4, 9, 1, 10, 10),
        ]
    }

    #[test]
    fn split_job_widths() {
        let j = Job::new(7, 3, 336, 100, 50);
        let w: Vec<u32> = split_job(&j, 64).map(|p| p.procs).collect();
        assert_eq!(w, vec![64, 64, 64, 64, 64, 16]);
        assert!(
            split_job(&j, 64).all(|p| p.submit == 3 && p.runtime == Some(50) && p.estimate == 100)
        );
        let w: Vec<u32> = split_job(&j, 336).map(|p| p.procs).collect();
        assert_eq!(w, vec![336]);
        let w: Vec<u32> = split_job(&j, 112).map(|p| p.procs).collect();
        assert_eq!(w, vec![112, 112, 112]);
    }

    #[test]
    fn modifications_on_m64() {
        // m64 = 4·64 + 6·32 + 8·8 (Tab. 7.1): jobs go to sites 0, 1, 2, 3 (all 64-node).
        let mut m64 = vec![64; 4];
        m64.extend([32; 6]);
        m64.extend([8; 8]);
        let js = jobs();
        let before = Summary::of(&js);
        let widths = |m| {
            split_workload(&js, &m64, m)
                .unwrap()
                .iter()
                .map(|s| s.job.procs)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            widths(Modification::LocalMachine),
            vec![64, 64, 64, 64, 64, 16, 64, 64, 36, 1]
        );
        assert_eq!(
            widths(Modification::LargestMachine),
            widths(Modification::LocalMachine)
        );
        assert_eq!(
            widths(Modification::MaxWidth(64)),
            widths(Modification::LocalMachine)
        );
        assert_eq!(widths(Modification::Unchanged), vec![336, 64, 100, 1]);
        for m in [
            Modification::LocalMachine,
            Modification::LargestMachine,
            Modification::MaxWidth(64),
            Modification::Unchanged,
        ] {
            let out = split_workload(&js, &m64, m).unwrap();
            let after = Summary::of(out.iter().map(|s| &s.job));
            assert_eq!(after.area, before.area, "{m:?} keeps the total work");
            assert!(
                out.iter()
                    .enumerate()
                    .all(|(i, s)| s.job.id == JobId(i as u64 + 1))
            );
        }
        // Mod 1 on sites of different sizes: job 5 lands on site 4 (32 nodes), job 11 on an 8.
        let mut many: Vec<Job> = (0..11)
            .map(|i| Job::new(i + 1, i as i64, 40, 10, 10))
            .collect();
        many[10].procs = 20;
        let out = split_workload(&many, &m64, Modification::LocalMachine).unwrap();
        let site4: Vec<u32> = out
            .iter()
            .filter(|s| s.site == 4)
            .map(|s| s.job.procs)
            .collect();
        assert_eq!(site4, vec![32, 8]);
        let site10: Vec<u32> = out
            .iter()
            .filter(|s| s.site == 10)
            .map(|s| s.job.procs)
            .collect();
        assert_eq!(site10, vec![8, 8, 4]);
        assert!(out.iter().all(|s| s.job.procs <= m64[s.site]));
    }

    #[test]
    fn largest_machine_and_errors() {
        let js = jobs();
        let m384 = [384, 64, 16, 16, 16, 16];
        let out = split_workload(&js, &m384, Modification::LargestMachine).unwrap();
        assert_eq!(out.len(), 4, "nothing is wider than 384");
        let out = split_workload(&js, &[128, 128, 128, 128], Modification::LargestMachine).unwrap();
        let w: Vec<u32> = out.iter().map(|s| s.job.procs).collect();
        assert_eq!(w, vec![128, 128, 80, 64, 100, 1]);
        assert_eq!(out[2].original, JobId(1));
        assert_eq!(out[2].part, 2);
        assert!(split_workload(&js, &[], Modification::Unchanged).is_err());
        assert!(split_workload(&js, &[64, 0], Modification::Unchanged).is_err());
        assert!(split_workload(&js, &[64], Modification::MaxWidth(0)).is_err());
    }

    #[test]
    fn homed_split_keeps_the_home_site() {
        // Homes chosen by the caller (e.g. the SWF partition), not round robin.
        let js = jobs();
        let homes = [2, 2, 0, 1];
        let sizes = [128, 64, 32];
        let out = split_homed(
            js.iter().cloned().zip(homes),
            &sizes,
            Modification::LocalMachine,
        )
        .unwrap();
        let got: Vec<(u32, usize)> = out.iter().map(|s| (s.job.procs, s.site)).collect();
        // 336 at a 32-node site: ten parts of 32 and one of 16; 64 at the same site: two of 32.
        let mut want = vec![(32, 2); 10];
        want.extend([(16, 2), (32, 2), (32, 2), (100, 0), (1, 1)]);
        assert_eq!(got, want);
        assert!(out.iter().all(|s| s.job.procs <= sizes[s.site]));
        let before = Summary::of(&js);
        assert_eq!(Summary::of(out.iter().map(|s| &s.job)).area, before.area);
        // Round robin is the special case of homes k mod S.
        let rr = split_homed(
            js.iter().cloned().enumerate().map(|(k, j)| (j, k % 3)),
            &sizes,
            Modification::LargestMachine,
        )
        .unwrap();
        assert_eq!(
            rr,
            split_workload(&js, &sizes, Modification::LargestMachine).unwrap()
        );
        let e = split_homed([(js[0].clone(), 3)], &sizes, Modification::Unchanged).unwrap_err();
        assert!(e.to_string().contains("home site 3"), "{e}");
    }
}
