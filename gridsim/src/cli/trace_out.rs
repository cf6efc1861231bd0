//! Writing `gridsim trace`'s outputs: jobs as SWF (18 fields, a `MaxProcs` header) or JSON
//! Lines, and a command's summary as a line or JSON.

use anyhow::{Context, Result, bail};
use gridsched_core::model::Job;
use gridsched_workload::JsonlWriter;
use std::io::{BufWriter, Write};

/// One SWF line (18 fields; unknown ones −1, status 1 = completed).
fn swf_line(j: &Job) -> String {
    format!(
        "{} {} -1 {} {} -1 {} {} {} -1 1 {} -1 -1 -1 {} -1 -1",
        j.id.0,
        j.submit,
        j.runtime.unwrap_or(j.estimate),
        j.procs,
        j.memory_kb.map_or(-1, |m| m as i64),
        j.procs,
        j.estimate,
        j.user.0,
        j.partition.map_or(-1, i64::from),
    )
}

/// Prints a command's summary on stdout: `json` (pretty) with `--json`, else the `text` line.
pub fn print_summary(as_json: bool, json: &serde_json::Value, text: &str) -> Result<()> {
    if as_json {
        println!("{}", serde_json::to_string_pretty(json)?);
    } else {
        println!("{text}");
    }
    Ok(())
}

/// Whether `out` names an SWF file (else JSON Lines); an error for any other extension.
pub fn out_is_swf(out: &std::path::Path) -> Result<bool> {
    let ext = |e: &str| out.extension().is_some_and(|x| x.eq_ignore_ascii_case(e));
    if !ext("swf") && !ext("jsonl") {
        bail!("--out {}: expected a .jsonl or .swf file", out.display());
    }
    Ok(ext("swf"))
}

/// Writes `jobs` to `out` (`.swf` with a MaxProcs header, or `.jsonl`), calling `seen` on each.
pub fn write_jobs(
    out: &std::path::Path,
    header: &str,
    max_procs: u32,
    licence_names: &[String],
    jobs: impl Iterator<Item = Job>,
    mut seen: impl FnMut(&Job),
) -> Result<()> {
    let swf = out_is_swf(out)?;
    let file = std::fs::File::create(out)
        .with_context(|| format!("--out {}: cannot create", out.display()))?;
    if swf {
        let mut w = BufWriter::new(file);
        writeln!(w, "; {header}")?;
        writeln!(w, "; MaxProcs: {max_procs}")?;
        for j in jobs {
            seen(&j);
            writeln!(w, "{}", swf_line(&j))?;
        }
        w.flush()?;
    } else {
        let mut w = JsonlWriter::new(BufWriter::new(file), licence_names.to_vec());
        w.write_comment(header)?;
        for j in jobs {
            seen(&j);
            w.write_job(&j)?;
        }
        w.flush()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swf_line_has_18_fields() {
        let j = Job::new(3, 10, 64, 600, 300);
        let l = swf_line(&j);
        let f: Vec<&str> = l.split(' ').collect();
        assert_eq!(f.len(), 18);
        assert_eq!(
            (f[0], f[1], f[3], f[4], f[7], f[8]),
            ("3", "10", "300", "64", "64", "600")
        );
    }
}
