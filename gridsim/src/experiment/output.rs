//! Writing an experiment's results: `runs.csv`, `summary.json`, the SVG figures and `report.md`.

use super::{Experiment, RunResult, Summary, plot};
use anyhow::{Context, Result};
use std::path::Path;

/// Writes every output file into `dir` (created if needed); returns the summary.
pub fn write_all(exp: &dyn Experiment, results: &[RunResult], dir: &Path) -> Result<Summary> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    write_csv(results, &dir.join("runs.csv"))?;
    let summary = Summary::of(exp.name(), results);
    let json = serde_json::to_string_pretty(&summary)?;
    std::fs::write(dir.join("summary.json"), json + "\n")
        .with_context(|| format!("writing {}", dir.join("summary.json").display()))?;
    for f in exp.figures() {
        let svg = plot::line_chart(&summary, &f)?;
        let path = dir.join(format!("{}.svg", f.file));
        std::fs::write(&path, svg).with_context(|| format!("writing {}", path.display()))?;
    }
    let report = exp.report(&summary);
    std::fs::write(dir.join("report.md"), report)
        .with_context(|| format!("writing {}", dir.join("report.md").display()))?;
    Ok(summary)
}

/// One row per run: the key, then every metric.
pub fn write_csv(results: &[RunResult], path: &Path) -> Result<()> {
    let mut w =
        csv::Writer::from_path(path).with_context(|| format!("writing {}", path.display()))?;
    let mut header = vec!["algorithm", "variant", "ta", "rep", "seed"];
    if let Some(first) = results.first() {
        header.extend(first.metrics.iter().map(|(n, _)| *n));
    }
    w.write_record(&header)?;
    for r in results {
        let mut row = vec![
            r.key.algorithm.clone(),
            r.key.variant.clone(),
            r.key.ta.to_string(),
            r.key.rep.to_string(),
            r.key.seed.to_string(),
        ];
        row.extend(r.metrics.iter().map(|(_, v)| format!("{v:.6}")));
        w.write_record(&row)?;
    }
    w.flush()?;
    Ok(())
}
