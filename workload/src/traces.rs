//! Finding the shared workload traces. Traces are data, never part of the repository: they live
//! in the directory named by the environment variable `GRIDSCHED_TRACES`, by default
//! `../shared/traces` (relative to the current directory for the CLI, to the workspace root for
//! tests). A trace can be named by path, by file name in that directory, or by a unique prefix of
//! a file name there (`KTH` for `KTH-SP2-1996-2.1-cln.swf.gz`).

use std::path::{Path, PathBuf};

/// The environment variable naming the traces directory.
pub const TRACES_ENV: &str = "GRIDSCHED_TRACES";

/// The traces directory: `$GRIDSCHED_TRACES`, else `default`.
pub fn traces_dir(default: &Path) -> PathBuf {
    match std::env::var_os(TRACES_ENV) {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => default.to_path_buf(),
    }
}

/// The default traces directory of the CLI: `$GRIDSCHED_TRACES`, else `../shared/traces`.
pub fn cli_traces_dir() -> PathBuf {
    traces_dir(Path::new("../shared/traces"))
}

/// The SWF and JSON Lines files of a directory, sorted by name.
pub fn list(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            [".swf", ".swf.gz", ".jsonl", ".jsonl.gz"]
                .iter()
                .any(|s| n.ends_with(s))
        })
        .collect();
    v.sort();
    v
}

/// Resolves `name`: an existing path as is, else a file of `dir` with that name, else the one file
/// of `dir` whose name starts with it. The error says what was tried.
pub fn resolve(name: &str, dir: &Path) -> Result<PathBuf, String> {
    let direct = Path::new(name);
    if direct.is_file() {
        return Ok(direct.to_path_buf());
    }
    let in_dir = dir.join(name);
    if in_dir.is_file() {
        return Ok(in_dir);
    }
    let matches: Vec<PathBuf> = list(dir)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(name))
        })
        .collect();
    match matches.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(format!(
            "no trace `{name}`: not a file, and no file in {} (set {TRACES_ENV}) starts with it",
            dir.display()
        )),
        many => Err(format!(
            "trace name `{name}` is ambiguous in {}: {}",
            dir.display(),
            many.iter()
                .filter_map(|p| p.file_name())
                .map(|n| n.to_string_lossy())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// For tests: the path of trace `file` in `traces_dir(default)`, or `None` after printing
/// `SKIPPED` when it is absent — except under `CI=true`, where absence is a failure (panic).
pub fn for_test(file: &str, default: &Path) -> Option<PathBuf> {
    let dir = traces_dir(default);
    let path = dir.join(file);
    if path.is_file() {
        return Some(path);
    }
    let msg = format!(
        "trace {file} not found in {} (set {TRACES_ENV})",
        dir.display()
    );
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{msg}; under CI=true the shared traces are required");
    }
    eprintln!("SKIPPED: {msg}");
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_paths_names_and_prefixes() {
        let dir = tempfile::tempdir().unwrap();
        for n in [
            "KTH-SP2.swf.gz",
            "HPC2N-2002.swf.gz",
            "HPC2N-2003.swf",
            "notes.txt",
        ] {
            std::fs::write(dir.path().join(n), b"").unwrap();
        }
        let d = dir.path();
        assert_eq!(list(d).len(), 3, "only workload files are listed");
        assert_eq!(resolve("KTH", d).unwrap(), d.join("KTH-SP2.swf.gz"));
        assert_eq!(
            resolve("HPC2N-2003.swf", d).unwrap(),
            d.join("HPC2N-2003.swf")
        );
        let full = d.join("KTH-SP2.swf.gz");
        assert_eq!(
            resolve(full.to_str().unwrap(), Path::new("/nonexistent")).unwrap(),
            full
        );
        let e = resolve("HPC2N", d).unwrap_err();
        assert!(
            e.contains("ambiguous") && e.contains("HPC2N-2002.swf.gz"),
            "{e}"
        );
        let e = resolve("CTC", d).unwrap_err();
        assert!(e.contains("no trace `CTC`"), "{e}");
    }
}
