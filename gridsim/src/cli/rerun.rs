//! `gridsim rerun LOG`: runs a live local scheduler's input log (see the local scheduler's
//! `input_log`) through the same cluster runner again and checks that every decision comes out
//! the same: which job starts, when, on which machine, which is suspended, every overrun. A
//! malformed line is an error naming its line number.

use super::say;
use anyhow::{Context, Result, anyhow};
use gridsched_core::runner::replay::{self, Line};
use std::io::BufRead;
use std::path::PathBuf;

/// Arguments of `gridsim rerun`.
#[derive(Debug, clap::Args)]
pub struct RerunArgs {
    /// The input log (JSON Lines, as the local scheduler writes it).
    pub log: PathBuf,
    /// Print the result as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Reads a log's lines, naming the first malformed one.
pub fn read_log(path: &std::path::Path) -> Result<Vec<Line>> {
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut lines = Vec::new();
    for (i, l) in std::io::BufReader::new(file).lines().enumerate() {
        let l = l.with_context(|| format!("{}:{}", path.display(), i + 1))?;
        if l.trim().is_empty() {
            continue;
        }
        let line: Line =
            serde_json::from_str(&l).map_err(|e| anyhow!("{}:{}: {e}", path.display(), i + 1))?;
        lines.push(line);
    }
    Ok(lines)
}

/// Runs the command.
pub fn rerun(args: &RerunArgs) -> Result<()> {
    let lines = read_log(&args.log)?;
    let checked = replay::check(lines).map_err(|e| anyhow!("{}: {e}", args.log.display()))?;
    if args.json {
        say!(
            "{}",
            serde_json::json!({
                "identical": true,
                "runs": checked.runs,
                "inputs": checked.inputs,
                "decisions": checked.decisions,
                "starts": checked.starts,
                "suspensions": checked.suspensions,
            })
        );
    } else {
        say!(
            "identical: {} decisions ({} starts, {} suspensions) from {} inputs over {} runner start(s)",
            checked.decisions,
            checked.starts,
            checked.suspensions,
            checked.inputs,
            checked.runs
        );
    }
    Ok(())
}
