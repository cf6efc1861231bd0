//! Writing an experiment's results: `runs.csv`, `summary.json`, the SVG figures and `report.md`;
//! and reading `runs.csv` files back, so that the summary, figures and report can be rewritten
//! from stored runs (several files are merged, e.g. repetitions run in chunks).

use super::{Experiment, RunKey, RunResult, Summary, plot};
use anyhow::{Context, Result, anyhow, bail};
use std::path::Path;

/// One stored run: its key and its metrics by name.
pub type Row = (RunKey, Vec<(String, f64)>);

/// Writes every output file into `dir` (created if needed); returns the summary.
pub fn write_all(exp: &dyn Experiment, results: &[RunResult], dir: &Path) -> Result<Summary> {
    let rows: Vec<Row> = results
        .iter()
        .map(|r| {
            let m = r.metrics.iter().map(|(n, v)| ((*n).to_string(), *v));
            (r.key.clone(), m.collect())
        })
        .collect();
    write_rows(exp, &rows, dir)
}

/// [`write_all`] from stored rows.
pub fn write_rows(exp: &dyn Experiment, rows: &[Row], dir: &Path) -> Result<Summary> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    write_csv(rows, &dir.join("runs.csv"))?;
    let mut summary = Summary::of_rows(
        exp.name(),
        rows.iter()
            .map(|(k, m)| (k, m.iter().map(|(n, v)| (n.as_str(), *v)))),
    );
    exp.finish_summary(rows, &mut summary);
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
pub fn write_csv(rows: &[Row], path: &Path) -> Result<()> {
    let mut w =
        csv::Writer::from_path(path).with_context(|| format!("writing {}", path.display()))?;
    let mut header = vec!["algorithm", "variant", "ta", "rep", "seed"];
    if let Some((_, first)) = rows.first() {
        header.extend(first.iter().map(|(n, _)| n.as_str()));
    }
    w.write_record(&header)?;
    for (key, metrics) in rows {
        if !metrics
            .iter()
            .map(|(n, _)| n.as_str())
            .eq(header[5..].iter().copied())
        {
            bail!(
                "{}: run {} / {} / Ta {} / rep {} has other metrics than the first run",
                path.display(),
                key.algorithm,
                key.variant,
                key.ta,
                key.rep
            );
        }
        let mut row = vec![
            key.algorithm.clone(),
            key.variant.clone(),
            key.ta.to_string(),
            key.rep.to_string(),
            key.seed.to_string(),
        ];
        row.extend(metrics.iter().map(|(_, v)| format!("{v:.6}")));
        w.write_record(&row)?;
    }
    w.flush()?;
    Ok(())
}

/// Reads a `runs.csv` written by [`write_csv`]; errors name the file and line.
pub fn read_csv(path: &Path) -> Result<Vec<Row>> {
    let mut r =
        csv::Reader::from_path(path).with_context(|| format!("reading {}", path.display()))?;
    let header: Vec<String> = r.headers()?.iter().map(str::to_string).collect();
    if header.len() < 5 || header[..5] != ["algorithm", "variant", "ta", "rep", "seed"] {
        bail!("{}: not a runs.csv (header {header:?})", path.display());
    }
    let mut rows = Vec::new();
    for (i, rec) in r.records().enumerate() {
        let at = || format!("{}:{}", path.display(), i + 2);
        let rec = rec.with_context(at)?;
        let num = |k: usize| -> Result<f64> {
            let f = rec
                .get(k)
                .ok_or_else(|| anyhow!("{}: missing column {}", at(), header[k]))?;
            f.parse().map_err(|_| {
                anyhow!(
                    "{}: column {}: expected a number, found {f:?}",
                    at(),
                    header[k]
                )
            })
        };
        let key = RunKey {
            algorithm: rec.get(0).unwrap_or_default().to_string(),
            variant: rec.get(1).unwrap_or_default().to_string(),
            ta: num(2)?,
            rep: num(3)? as u32,
            seed: num(4)? as u64,
        };
        let metrics = (5..header.len())
            .map(|k| Ok((header[k].clone(), num(k)?)))
            .collect::<Result<Vec<_>>>()?;
        rows.push((key, metrics));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_csv_reads_back_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.csv");
        let rows: Vec<Row> = (0..3)
            .map(|i| {
                let key = RunKey {
                    algorithm: "A, quoted".into(),
                    variant: if i == 0 { String::new() } else { "v".into() },
                    ta: 2.5 * f64::from(i),
                    rep: i,
                    seed: 10 + u64::from(i),
                };
                (key, vec![("x".into(), 1.0 / 3.0), ("y".into(), -2.0)])
            })
            .collect();
        write_csv(&rows, &path).unwrap();
        let back = read_csv(&path).unwrap();
        assert_eq!(back.len(), 3);
        assert_eq!(back[1].0, rows[1].0);
        assert_eq!(back[2].1[0], ("x".to_string(), 0.333333));
        let again = dir.path().join("again.csv");
        write_csv(&back, &again).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            std::fs::read_to_string(&again).unwrap()
        );
        let mut odd = rows.clone();
        odd[2].1.pop();
        let e = write_csv(&odd, &again).unwrap_err().to_string();
        assert!(e.contains("rep 2 has other metrics"), "{e}");
        std::fs::write(&again, "a,b\n1,2\n").unwrap();
        assert!(
            read_csv(&again)
                .unwrap_err()
                .to_string()
                .contains("not a runs.csv")
        );
        std::fs::write(&again, "algorithm,variant,ta,rep,seed,x\nA,,0,0,1,eight\n").unwrap();
        let e = read_csv(&again).unwrap_err().to_string();
        assert!(e.contains("again.csv:2") && e.contains("eight"), "{e}");
    }
}
