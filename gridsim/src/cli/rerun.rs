//! `gridsim rerun LOG`: runs a live input log through the same runner again and checks that every
//! decision comes out the same. A local scheduler's log (its `input_log`) goes through the cluster
//! runner: which job starts, when, on which machine, which is suspended, every overrun. A
//! meta-scheduler's log (its `input_log`) goes through the grid runner: every classification,
//! placement, wait, refusal, hold, commit and fragment sent. The kind of log is read from its
//! first header. A malformed line is an error naming its line number.

use super::say;
use anyhow::{Context, Result, anyhow};
use gridsched_core::grid::replay::{self as grid_replay, Line as GridLine};
use gridsched_core::runner::replay::{self, Line};
use std::io::BufRead;
use std::path::PathBuf;

/// Arguments of `gridsim rerun`.
#[derive(Debug, clap::Args)]
pub struct RerunArgs {
    /// The input log (JSON Lines, as a local scheduler or the meta-scheduler writes it).
    pub log: PathBuf,
    /// Print the result as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Reads a log's lines, naming the first malformed one.
pub fn read_log(path: &std::path::Path) -> Result<Vec<Line>> {
    read_lines(path)
}

/// Reads the JSON lines of `path` as `T`s, naming the first malformed line.
fn read_lines<T: serde::de::DeserializeOwned>(path: &std::path::Path) -> Result<Vec<T>> {
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut lines = Vec::new();
    for (i, l) in std::io::BufReader::new(file).lines().enumerate() {
        let l = l.with_context(|| format!("{}:{}", path.display(), i + 1))?;
        if l.trim().is_empty() {
            continue;
        }
        let line: T =
            serde_json::from_str(&l).map_err(|e| anyhow!("{}:{}: {e}", path.display(), i + 1))?;
        lines.push(line);
    }
    Ok(lines)
}

/// Whether the log at `path` is a meta-scheduler's (its first line a grid runner's header).
fn is_grid_log(path: &std::path::Path) -> Result<bool> {
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    for l in std::io::BufReader::new(file).lines() {
        let l = l.with_context(|| path.display().to_string())?;
        if l.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value =
            serde_json::from_str(&l).map_err(|e| anyhow!("{}:1: {e}", path.display()))?;
        return Ok(v.pointer("/header/sites").is_some());
    }
    Ok(false)
}

/// Re-runs a meta-scheduler's log.
fn rerun_grid(args: &RerunArgs) -> Result<()> {
    let lines: Vec<GridLine> = read_lines(&args.log)?;
    let checked = grid_replay::check(lines).map_err(|e| anyhow!("{}: {e}", args.log.display()))?;
    let json = serde_json::json!({
        "identical": true,
        "runs": checked.runs,
        "inputs": checked.inputs,
        "effects": checked.effects,
        "placements": checked.placements,
    });
    let text = format!(
        "identical: {} grid decisions ({} placements) from {} inputs over {} runner start(s)",
        checked.effects, checked.placements, checked.inputs, checked.runs
    );
    report(args.json, json, text);
    Ok(())
}

/// Says a re-run's result: as one JSON object, or as a sentence.
fn report(json: bool, value: serde_json::Value, text: String) {
    if json {
        say!("{value}");
    } else {
        say!("{text}");
    }
}

/// Runs the command.
pub fn rerun(args: &RerunArgs) -> Result<()> {
    if is_grid_log(&args.log)? {
        return rerun_grid(args);
    }
    let lines = read_log(&args.log)?;
    let checked = replay::check(lines).map_err(|e| anyhow!("{}: {e}", args.log.display()))?;
    let json = serde_json::json!({
        "identical": true,
        "runs": checked.runs,
        "inputs": checked.inputs,
        "decisions": checked.decisions,
        "starts": checked.starts,
        "suspensions": checked.suspensions,
    });
    let text = format!(
        "identical: {} decisions ({} starts, {} suspensions) from {} inputs over {} runner start(s)",
        checked.decisions, checked.starts, checked.suspensions, checked.inputs, checked.runs
    );
    report(args.json, json, text);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use gridsched_core::dispatch::{ClusterCaps, DispatchConfig, DispatchKind};
    use gridsched_core::grid::replay::Recorder;
    use gridsched_core::grid::{GridConfig, Input, SiteSpec};
    use gridsched_core::model::{ClusterId, Job};

    /// A meta-scheduler's log is told from a site's by its header and re-decided by the grid
    /// runner; a tampered effect is an error naming its line.
    #[test]
    fn a_meta_schedulers_log_is_re_decided_by_the_grid_runner() {
        let site = |i: u32| SiteSpec {
            name: format!("s{i}"),
            caps: ClusterCaps {
                cluster: ClusterId(i),
                up: true,
                total_procs: 4,
                max_machine_procs: 4,
                licences: Vec::new(),
                benchmark: None,
                max_memory_kb: None,
            },
            max_estimate: None,
            machines: None,
            stages: true,
            users: None,
            reserves: true,
        };
        let cfg = GridConfig {
            sites: vec![site(0), site(1)],
            dispatch: DispatchConfig::new(DispatchKind::LoadOrdering),
            classifier: None,
            settings: Default::default(),
            classifier_state: None,
            usage_state: None,
        };
        let mut r = Recorder::new(cfg).unwrap();
        for id in 1..=3 {
            let submit = Input::Submit {
                job: Job::new(id, 0, 2, 100, 100),
                priority: None,
            };
            r.on(0, submit, &mut Vec::new()).unwrap();
        }
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, lines: &[GridLine]| {
            let path = dir.path().join(name);
            let text: Vec<String> = lines
                .iter()
                .map(|l| serde_json::to_string(l).unwrap())
                .collect();
            std::fs::write(&path, text.join("\n")).unwrap();
            path
        };
        let good = write("grid.jsonl", &r.lines);
        assert!(is_grid_log(&good).unwrap());
        let args = |log: PathBuf| RerunArgs { log, json: true };
        rerun(&args(good)).unwrap();
        // The second placement said to go elsewhere.
        let mut lines = r.lines.clone();
        let n = lines
            .iter()
            .position(|l| matches!(l, GridLine::Out(_)))
            .unwrap();
        if let GridLine::Out(gridsched_core::grid::Effect::Place { site, .. }) = &mut lines[n] {
            *site = 1 - *site;
        }
        let bad = write("bad.jsonl", &lines);
        let e = rerun(&args(bad)).unwrap_err().to_string();
        assert!(e.contains(&format!("line {}:", n + 1)), "{e}");
        // A site's log is not a meta-scheduler's.
        let site_log = dir.path().join("site.jsonl");
        std::fs::write(&site_log, "{\"header\":{\"platform\":{}}}\n").unwrap();
        assert!(!is_grid_log(&site_log).unwrap());
    }
}
