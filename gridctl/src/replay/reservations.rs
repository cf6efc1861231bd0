//! `gridctl replay --reservations FILE`: advance reservations asked for at the grid's entry point
//! during a replay (Streit, thesis §3.2: fixed-time requests to a planning system), one JSON
//! object per line in the trace's seconds, `#` comments and blank lines skipped:
//!
//! `{"at": 0, "id": 7, "site": "delta", "start": 100, "end": 700, "procs": 4, "user": 3}`
//!
//! asks at trace time `at` for `procs` processors of site `site` over `[start, end)`, for user 3
//! of the trace (optional: any user's jobs may run in it otherwise); jobs of the slice name it
//! with `"reservation": 7`. Times are scaled as the jobs' are: `at` and `start` from the slice's
//! first submission, rounded down, the length rounded up.

use super::slice::TimeScale;
use anyhow::Context;
use gridsched_core::model::{Time, UserId};
use serde::Deserialize;
use std::path::Path;

/// One line of the file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    at: Time,
    id: u64,
    site: String,
    start: Time,
    end: Time,
    procs: u32,
    #[serde(default)]
    user: Option<u32>,
}

/// A reservation asked for during the replay, times in replay seconds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Asked {
    /// When it is asked for (before the submissions of that second).
    pub at: Time,
    /// The number jobs name it by.
    pub name: u64,
    /// The site's index in the grid description.
    pub site: usize,
    /// The site's name.
    pub site_name: String,
    /// Its start.
    pub start: Time,
    /// Its end.
    pub end: Time,
    /// Processors.
    pub procs: u32,
    /// Its owner, a user of the trace.
    pub user: Option<UserId>,
}

/// Reads `path`, scaled by `scale` from trace time `origin`, with `sites` the grid's site names;
/// sorted by the time they are asked for (stable).
pub fn read(
    path: &Path,
    origin: Time,
    scale: TimeScale,
    sites: &[&str],
) -> anyhow::Result<Vec<Asked>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--reservations {}", path.display()))?;
    let mut out: Vec<Asked> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = || format!("{}:{}", path.display(), i + 1);
        let l: Line = serde_json::from_str(line).with_context(at)?;
        let Some(site) = sites.iter().position(|s| *s == l.site) else {
            anyhow::bail!(
                "{}: no site `{}` (sites: {})",
                at(),
                l.site,
                sites.join(", ")
            );
        };
        if l.end <= l.start || l.start < l.at || l.procs == 0 {
            anyhow::bail!(
                "{}: a reservation needs at <= start < end and procs > 0 (at {}, start {}, end \
                 {}, procs {})",
                at(),
                l.at,
                l.start,
                l.end,
                l.procs
            );
        }
        if out.iter().any(|a| a.name == l.id) {
            anyhow::bail!("{}: reservation {} is asked for twice", at(), l.id);
        }
        let start = scale.floor(l.start - origin);
        out.push(Asked {
            at: scale.floor(l.at - origin),
            name: l.id,
            site,
            site_name: l.site,
            start,
            end: start + scale.ceil(l.end - l.start),
            procs: l.procs,
            user: l.user.map(UserId),
        });
    }
    out.sort_by_key(|a| a.at);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.jsonl");
        std::fs::write(&p, text).unwrap();
        (dir, p)
    }

    #[test]
    fn reservations_are_scaled_as_the_jobs_and_named_by_line_when_wrong() {
        let (_d, p) = file(
            "# two\n{\"at\": 1050, \"id\": 8, \"site\": \"b\", \"start\": 1200, \"end\": 1301, \
             \"procs\": 2, \"user\": 4}\n\n{\"at\": 1000, \"id\": 7, \"site\": \"a\", \"start\": \
             1000, \"end\": 1010, \"procs\": 1}\n",
        );
        let half: TimeScale = "1/2".parse().unwrap();
        let r = read(&p, 1000, half, &["a", "b"]).unwrap();
        let got: Vec<_> = r
            .iter()
            .map(|a| (a.at, a.name, a.site, a.start, a.end, a.procs, a.user))
            .collect();
        assert_eq!(
            got,
            [
                (0, 7, 0, 0, 5, 1, None),
                (25, 8, 1, 100, 151, 2, Some(UserId(4)))
            ]
        );
        let (_d, p) = file(
            "{\"at\": 0, \"id\": 1, \"site\": \"z\", \"start\": 0, \"end\": 5, \"procs\": 1}\n",
        );
        let e = read(&p, 0, half, &["a", "b"]).unwrap_err().to_string();
        assert!(e.ends_with("r.jsonl:1: no site `z` (sites: a, b)"), "{e}");
        let (_d, p) = file(
            "\n{\"at\": 9, \"id\": 1, \"site\": \"a\", \"start\": 5, \"end\": 9, \"procs\": 1}\n",
        );
        let e = read(&p, 0, half, &["a"]).unwrap_err().to_string();
        assert!(
            e.contains("r.jsonl:2: a reservation needs at <= start < end"),
            "{e}"
        );
        let (_d, p) = file("{\"at\": 0, \"id\": 1, \"site\": \"a\", \"start\": 0}\n");
        let e = format!("{:#}", read(&p, 0, half, &["a"]).unwrap_err());
        assert!(e.contains("r.jsonl:1: missing field `end`"), "{e}");
    }
}
