//! Parallel execution of an experiment's runs: a fixed pool of threads takes run indices from an
//! atomic counter and stores each result at its index, so the output does not depend on the
//! thread count or on scheduling.

use super::{Experiment, RunKey, RunResult};
use anyhow::{Result, anyhow};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Runs every run of `exp` on `threads` threads (0 = all cores), with a progress bar when `progress`.
pub fn run_all(exp: &dyn Experiment, threads: usize, progress: bool) -> Result<Vec<RunResult>> {
    run_keys(exp, exp.runs(), threads, progress)
}

/// Runs the runs `keys` of `exp`, as [`run_all`].
pub fn run_keys(
    exp: &dyn Experiment,
    keys: Vec<RunKey>,
    threads: usize,
    progress: bool,
) -> Result<Vec<RunResult>> {
    let threads = if threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        threads
    }
    .min(keys.len().max(1));
    let bar = if progress {
        ProgressBar::new(keys.len() as u64)
    } else {
        ProgressBar::with_draw_target(Some(keys.len() as u64), ProgressDrawTarget::hidden())
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{prefix} [{elapsed_precise}] {wide_bar} {pos}/{len} runs, eta {eta}",
        )
        .expect("valid template"),
    );
    bar.set_prefix(format!("experiment {}", exp.name()));
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<Result<RunResult>>>> =
        keys.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(key) = keys.get(i) else { break };
                    let r = exp.run(key).map(|metrics| RunResult {
                        key: key.clone(),
                        metrics,
                    });
                    *slots[i].lock().expect("no poisoning") = Some(r);
                    bar.inc(1);
                }
            });
        }
    });
    bar.finish_and_clear();
    slots
        .into_iter()
        .zip(&keys)
        .map(|(m, k)| {
            m.into_inner()
                .expect("no poisoning")
                .ok_or_else(|| anyhow!("run {k:?} did not execute"))?
                .map_err(|e| {
                    e.context(format!(
                        "run {} {} ta={} rep={}",
                        k.algorithm, k.variant, k.ta, k.rep
                    ))
                })
        })
        .collect()
}
