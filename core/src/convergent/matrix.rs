//! The job–machine preference matrix of Convergent Scheduling and its seven heuristics (spec
//! `two-level-grid-scheduler.md` D7.1–D7.2, D7.5; ambiguities D12 #15, #17–#20, #24).
//!
//! Every entry `p[i][m]` is the sum of the heuristics' contributions for job `i` on machine `m`;
//! entries outside the job's eligible machines (`M_Aff_i`: processors and licence suitability,
//! machine up) stay 0, eligible ones get at least a tiny positive value so that they remain arcs
//! of the matching.

use super::matching::Matrix;
use crate::cluster::ClusterState;
use crate::model::{Job, Time};
use serde::{Deserialize, Serialize};

/// How the Deadline heuristic treats machines on which the job would be late (D12 #17).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum LateMachines {
    /// The formula as printed (default): `f1 = Min` past the deadline, so `fbar1 = Max − Min` and
    /// the largest share goes to the machines where the job would be late.
    #[default]
    Faithful,
    /// Ours: `fbar1 = 0` on late machines; when every machine is late, shares ∝ 1 / Extime.
    Fixed,
}

/// Scope of `sup_Nxtime` in Wait Minimization (D12 #18).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum WaitScope {
    /// Per job, over its eligible machines (literal).
    #[default]
    PerJob,
    /// Over every (job, machine) pair.
    Global,
}

/// The constants of Convergent Scheduling (D7.5 defaults).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CsParams {
    /// Deadline MAX.
    pub max: f64,
    /// Deadline MIN.
    pub min: f64,
    /// Deadline k.
    pub k: f64,
    /// Input IN.
    pub input: f64,
    /// Overhead-minimization bonus of a running job on its machine (8 preemptive, 800 not).
    pub overhead: Option<f64>,
    /// Anti-aging factor.
    pub age_factor: f64,
    /// Licences LI.
    pub licence: f64,
    /// Wait minimization W.
    pub wait: f64,
    /// Late machines in the Deadline heuristic.
    pub late: LateMachines,
    /// Wait-minimization normalisation.
    pub wait_scope: WaitScope,
    /// Ours: in the non-preemptive variants, pin running jobs to their machines as a hard
    /// constraint (never discarded by the pre-matching, never moved). Off by default: the thesis
    /// simulates non-preemption by the Δ = 800 bonus alone (D7.2 #6), so a running job can still
    /// lose its machine when the matching prefers another job there.
    pub pin: bool,
    /// Bandwidth from the cluster's storage node (data units per second).
    pub bandwidth: f64,
}

impl Default for CsParams {
    fn default() -> Self {
        CsParams {
            max: 10.0,
            min: 0.1,
            k: 1.3,
            input: 3.0,
            overhead: None,
            age_factor: 0.02,
            licence: 2.5,
            wait: 4.0,
            late: LateMachines::Faithful,
            wait_scope: WaitScope::PerJob,
            pin: false,
            bandwidth: 1.0,
        }
    }
}

/// A row of the matrix: a queued or running job.
#[derive(Clone, Debug)]
pub struct RowJob<'a> {
    /// The job.
    pub job: &'a Job,
    /// Its arrival at the local scheduler.
    pub arrived: Time,
    /// Fraction already executed.
    pub progress: f64,
    /// The slot it runs on, if running.
    pub running_on: Option<usize>,
    /// Where its partial results are (after a suspension).
    pub results_on: Option<usize>,
    /// The slots where it can ever run, ascending, if known (else computed from the state).
    pub eligible: Option<&'a [usize]>,
}

/// `Nxtime_{i,m}`: the remaining run time of a row on slot `m` (Eq. 3.9).
pub fn nxtime(state: &ClusterState, r: &RowJob<'_>, m: usize) -> f64 {
    let left = r.job.estimate as f64 * (1.0 - r.progress).max(0.0);
    match r.job.benchmark {
        None => left,
        Some(bm) => left * f64::from(bm) / f64::from(state.slots()[m].machine.benchmark.max(1)),
    }
}

/// The licence criticality `rho` of every licence index over the rows (D12 #15: queued and running).
pub fn rho(state: &ClusterState, rows: &[RowJob<'_>], nlic: usize) -> Vec<f64> {
    let mut demand = vec![0u32; nlic];
    for r in rows {
        for l in &r.job.licences {
            if let Some(d) = demand.get_mut(l.index()) {
                *d += 1;
            }
        }
    }
    crate::heuristics::criticality(&demand, |l| state.offer(l))
}

/// `M_Aff_i` of a row into `out`: the machines up where the job can ever run (its cached
/// eligible slots, or computed), plus the one it runs on.
fn affinity(state: &ClusterState, r: &RowJob<'_>, out: &mut Vec<usize>) {
    let slots = state.slots();
    match r.eligible {
        Some(e) => {
            out.clear();
            out.extend(e.iter().copied().filter(|&m| slots[m].up));
        }
        None => {
            state.eligible_slots(r.job, out);
            out.retain(|&m| slots[m].up);
        }
    }
    if let Some(m) = r.running_on
        && let Err(at) = out.binary_search(&m)
    {
        out.insert(at, m);
    }
}

/// Scratch vectors of one row, kept across rows so that a matrix costs no allocation per row.
#[derive(Default)]
struct Scratch {
    aff: Vec<usize>,
    nx: Vec<f64>,
    ext: Vec<f64>,
    f1: Vec<f64>,
    fbar: Vec<f64>,
    deadline: Vec<f64>,
    transf: Vec<f64>,
}

/// Builds the matrix for `rows` on the cluster's slots at `now`.
pub fn build(
    state: &ClusterState,
    rows: &[RowJob<'_>],
    now: Time,
    p: &CsParams,
    rho: &[f64],
) -> Matrix {
    let ncols = state.slots().len();
    let mut mat = Matrix::zeros(rows.len(), ncols);
    let nlic_types = rho.len().max(1) as f64;
    let w: Vec<f64> = rows
        .iter()
        .map(|r| {
            r.job
                .licences
                .iter()
                .map(|l| rho.get(l.index()).copied().unwrap_or(0.0))
                .filter(|x| x.is_finite())
                .map(|x| if x > 1.0 { x * nlic_types } else { x })
                .sum()
        })
        .collect();
    let wmax = w.iter().copied().fold(0.0f64, f64::max);
    let mut t = Scratch::default();
    let global_sup = match p.wait_scope {
        WaitScope::PerJob => 0.0,
        WaitScope::Global => rows
            .iter()
            .flat_map(|r| {
                affinity(state, r, &mut t.aff);
                t.aff
                    .iter()
                    .map(|&m| nxtime(state, r, m))
                    .collect::<Vec<f64>>()
            })
            .fold(0.0f64, f64::max),
    };
    for (i, r) in rows.iter().enumerate() {
        affinity(state, r, &mut t.aff);
        let a = &t.aff;
        if a.is_empty() {
            continue;
        }
        t.nx.clear();
        t.nx.extend(a.iter().map(|&m| nxtime(state, r, m)));
        let nx = &t.nx;
        // 2. Deadline.
        t.deadline.clear();
        match r.job.deadline {
            None => t.deadline.resize(a.len(), 0.0),
            Some(d) => {
                t.ext.clear();
                t.ext.extend(nx.iter().map(|x| now as f64 + x));
                let ext = &t.ext;
                t.f1.clear();
                t.f1.extend(nx.iter().zip(ext).map(|(x, e)| {
                    let urgent_from = d as f64 - p.k * x;
                    if *e > d as f64 || *e <= urgent_from || *x <= 0.0 {
                        p.min
                    } else {
                        (p.max - p.min) / (p.k * x) * (e - urgent_from) + p.min
                    }
                }));
                let f1 = &t.f1;
                t.fbar.clear();
                t.fbar.extend(f1.iter().map(|f| p.max - f));
                let fbar = &mut t.fbar;
                if p.late == LateMachines::Fixed {
                    for (k, e) in ext.iter().enumerate() {
                        if *e > d as f64 {
                            fbar[k] = 0.0;
                        }
                    }
                    if fbar.iter().all(|f| *f == 0.0) {
                        fbar.clear();
                        fbar.extend(ext.iter().map(|e| 1.0 / e.max(1.0)));
                    }
                }
                let urgency: f64 = f1.iter().sum();
                let di: f64 = fbar.iter().sum();
                if di > 0.0 {
                    t.deadline.extend(fbar.iter().map(|f| urgency * f / di));
                } else {
                    t.deadline.resize(a.len(), urgency / a.len() as f64);
                }
            }
        }
        let deadline = &t.deadline;
        // 3. Licences.
        let lic = if wmax > 0.0 {
            p.licence * w[i] / wmax
        } else {
            0.0
        };
        // 4. Input.
        let transfer = |m: usize| -> f64 {
            r.job
                .inputs
                .iter()
                .map(|inp| {
                    let local =
                        match inp.machine {
                            Some(mid) => state.slot_of(mid) == Some(m),
                            None => false,
                        } || r.results_on == Some(m) && inp.machine.is_none() && r.progress > 0.0;
                    if local {
                        0.0
                    } else {
                        inp.size as f64 / p.bandwidth.max(1e-9)
                    }
                })
                .sum::<f64>()
        };
        t.transf.clear();
        let partial = r.results_on.is_some() && r.progress > 0.0;
        if partial || r.job.inputs.iter().any(|inp| inp.machine.is_some()) {
            t.transf.extend(a.iter().map(|&m| transfer(m)));
        } else {
            // Every input on the storage node: the same time from every machine.
            t.transf.resize(a.len(), transfer(usize::MAX));
        }
        let transf = &t.transf;
        let tsum: f64 = transf.iter().sum();
        // 5. Wait minimization.
        let sup = match p.wait_scope {
            WaitScope::PerJob => nx.iter().copied().fold(0.0f64, f64::max),
            WaitScope::Global => global_sup,
        };
        // 7. Anti-aging.
        let age = (now - r.arrived) as f64 * p.age_factor;
        let row = &mut mat.p[i * ncols..(i + 1) * ncols];
        for (k, &m) in a.iter().enumerate() {
            let input = if a.len() == 1 || tsum <= 0.0 {
                p.input
            } else {
                p.input * (1.0 - transf[k] / tsum)
            };
            let wait = if sup > 0.0 {
                p.wait * (1.0 - nx[k] / sup)
            } else {
                0.0
            };
            let overhead = match (r.running_on, p.overhead) {
                (Some(s), Some(b)) if s == m => b,
                _ => 0.0,
            };
            let v = deadline[k] + lic + input + wait + overhead + age;
            row[m] = v.max(1e-9);
        }
    }
    mat
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{LicenceId, LicencePool, Machine, MachineId};

    fn state() -> ClusterState {
        let ms = vec![
            Machine::new(MachineId(0), "fast", 4, 400),
            Machine::new(MachineId(1), "slow", 4, 100),
        ];
        let pools = [LicencePool {
            licence: LicenceId(0),
            copies: 1,
            machines: vec![MachineId(0), MachineId(1)],
        }];
        ClusterState::from_parts(ms, &pools, false).unwrap()
    }

    fn row(job: &Job) -> RowJob<'_> {
        RowJob {
            job,
            arrived: 0,
            progress: 0.0,
            running_on: None,
            results_on: None,
            eligible: None,
        }
    }

    #[test]
    fn nxtime_and_wait_minimization_by_hand() {
        let s = state();
        let mut j = Job::new(1, 0, 2, 1_000, 1_000);
        j.benchmark = Some(200);
        let r = row(&j);
        assert_eq!(nxtime(&s, &r, 0), 500.0);
        assert_eq!(nxtime(&s, &r, 1), 2_000.0);
        let p = CsParams {
            input: 0.0,
            ..Default::default()
        };
        let m = build(&s, &[r], 0, &p, &[0.0]);
        // No deadline, no licence, no input, no waiting: only W (1 - nx / sup).
        assert!((m.at(0, 0) - 4.0 * (1.0 - 500.0 / 2_000.0)).abs() < 1e-12);
        assert!(
            m.at(0, 1) <= 1e-9 + 1e-12,
            "the slowest machine gets 0 (kept as an arc)"
        );
    }

    #[test]
    fn deadline_spreads_urgency_towards_the_fast_machine() {
        let s = state();
        let mut j = Job::new(1, 0, 2, 1_000, 1_000);
        j.benchmark = Some(200);
        // Deadline 1,600: on fast (nx 500) Extime 500 <= T = 1600 - 650 = 950 -> f1 = MIN 0.1;
        // on slow (nx 2000) Extime 2000 > 1600 -> late: f1 = MIN (faithful).
        j.deadline = Some(1_600);
        let p = CsParams {
            input: 0.0,
            wait: 0.0,
            late: LateMachines::Faithful,
            ..Default::default()
        };
        let m = build(&s, &[row(&j)], 0, &p, &[0.0]);
        // Urgency 0.2, shares fbar = 9.9 each: 0.1 per machine.
        assert!((m.at(0, 0) - 0.1).abs() < 1e-12 && (m.at(0, 1) - 0.1).abs() < 1e-12);
        let fixed = CsParams {
            late: LateMachines::Fixed,
            ..p
        };
        let m = build(&s, &[row(&j)], 0, &fixed, &[0.0]);
        assert!(
            (m.at(0, 0) - 0.2).abs() < 1e-12,
            "fixed: the late machine gets nothing"
        );
        // At now = 600 the fast machine is in the urgent zone: Extime 1100 > T 950:
        // f1 = 0.1 + 9.9 * 150 / 650.
        let m = build(&s, &[row(&j)], 600, &p, &[0.0]);
        let f1 = 0.1 + 9.9 * 150.0 / 650.0;
        let urgency = f1 + 0.1;
        let (b0, b1) = (10.0 - f1, 9.9);
        assert!((m.at(0, 0) - urgency * b0 / (b0 + b1) - 600.0 * 0.02).abs() < 1e-9);
    }

    #[test]
    fn licences_overhead_input_and_age() {
        let s = state();
        let mut a = Job::new(1, 0, 2, 100, 100);
        a.licences = vec![LicenceId(0)];
        let b = Job::new(2, 0, 2, 100, 100);
        let rows = [
            RowJob {
                running_on: Some(1),
                ..row(&a)
            },
            RowJob {
                arrived: -50,
                ..row(&b)
            },
        ];
        let rh = rho(&s, &rows, 1);
        assert_eq!(rh, vec![1.0]);
        let p = CsParams {
            wait: 0.0,
            overhead: Some(8.0),
            ..Default::default()
        };
        let m = build(&s, &rows, 0, &p, &rh);
        // Job a: LI * 1 / 1 = 2.5 everywhere, + IN 3 (no inputs: neutral), + 8 on its machine.
        assert!((m.at(0, 0) - 5.5).abs() < 1e-12);
        assert!((m.at(0, 1) - 13.5).abs() < 1e-12);
        // Job b: no licence, IN 3, age 50 * 0.02 = 1.
        assert!((m.at(1, 0) - 4.0).abs() < 1e-12);
    }
}
