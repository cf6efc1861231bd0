//! Finding the shared workload traces. Traces are data, never part of the repository: they live
//! in the directory named by the environment variable `GRIDSCHED_TRACES`, by default
//! `../shared/traces` beside the workspace root (the directory whose `Cargo.toml` has a
//! `[workspace]` table, found by walking up from the current directory, else from this crate's
//! source directory). [`dir`] is the one place that rule lives: the CLI, the experiments and every
//! test use it, so a test run from a crate directory and a command run from the workspace root see
//! the same traces. A trace can be named by path, by file name in that directory, or by a unique
//! prefix of a file name there (`KTH` for `KTH-SP2-1996-2.1-cln.swf.gz`).
//!
//! Tests ask for a trace with [`for_test`]: a missing trace skips the test with a loud `SKIPPED`
//! line, except under `CI=true`, where it fails.

use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The environment variable naming the traces directory.
pub const TRACES_ENV: &str = "GRIDSCHED_TRACES";

/// The traces directory: `$GRIDSCHED_TRACES` when set and not empty, else `../shared/traces`
/// beside the workspace root found from the current directory (see [`dir_from`]).
pub fn dir() -> PathBuf {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    dir_from(std::env::var_os(TRACES_ENV), &cwd)
}

/// The traces directory given the value of `$GRIDSCHED_TRACES` and a starting directory: the
/// variable when set and not empty; else `../shared/traces` beside the workspace root above
/// `start`; else beside the workspace root above this crate's source directory (a binary run
/// outside any checkout); else `../shared/traces` relative to `start`.
pub fn dir_from(env: Option<OsString>, start: &Path) -> PathBuf {
    if let Some(d) = env.filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    workspace_root(start)
        .or_else(|| workspace_root(Path::new(env!("CARGO_MANIFEST_DIR"))))
        .map(|root| root.join("../shared/traces"))
        .unwrap_or_else(|| start.join("../shared/traces"))
}

/// The nearest directory at or above `start` holding a `Cargo.toml` with a `[workspace]` table.
pub fn workspace_root(start: &Path) -> Option<PathBuf> {
    start.ancestors().find_map(|d| {
        let manifest = std::fs::read_to_string(d.join("Cargo.toml")).ok()?;
        manifest
            .lines()
            .any(|l| l.trim() == "[workspace]")
            .then(|| d.to_path_buf())
    })
}

/// Whether the tests run under continuous integration (`CI=true`), where nothing may be skipped.
pub fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
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

/// For tests: the path of trace `file` in [`dir`], or `None` after printing `SKIPPED` when it is
/// absent — except under `CI=true`, where absence is a failure (panic).
pub fn for_test(file: &str) -> Option<PathBuf> {
    for_test_in(file, &dir(), ci())
}

/// [`for_test`] with the directory and the CI flag given: the path of `file` in `dir`; when it is
/// absent, a panic if `ci`, else `None` after a `SKIPPED` line on stderr.
pub fn for_test_in(file: &str, dir: &Path, ci: bool) -> Option<PathBuf> {
    let path = dir.join(file);
    if path.is_file() {
        return Some(path);
    }
    let msg = format!(
        "trace {file} not found in {} (set {TRACES_ENV})",
        dir.display()
    );
    if ci {
        panic!("{msg}; under CI=true the shared traces are required");
    }
    // Straight to stderr, not `eprintln!`, which the test harness captures and hides on success.
    let _ = writeln!(std::io::stderr(), "\n*** SKIPPED: {msg} ***\n");
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

    const KTH: &str = "KTH-SP2-1996-2.1-cln.swf.gz";

    /// From this crate's directory (the current directory of its tests) and from the workspace
    /// root, the default is the same directory, and it holds the shared traces.
    #[test]
    fn the_default_dir_is_the_same_from_a_crate_and_from_the_workspace_root() {
        let krate = Path::new(env!("CARGO_MANIFEST_DIR"));
        assert_eq!(
            std::env::current_dir().unwrap(),
            krate,
            "cargo runs tests in the crate dir"
        );
        let root = workspace_root(krate).expect("the crate is in a workspace");
        assert_ne!(
            root, krate,
            "the crate's own Cargo.toml is not the workspace's"
        );
        assert!(
            root.join("workload/Cargo.toml").is_file(),
            "{}",
            root.display()
        );
        let from_crate = dir_from(None, krate);
        let from_root = dir_from(None, &root);
        assert_eq!(from_crate, from_root);
        assert_eq!(from_root, root.join("../shared/traces"));
        assert_eq!(
            dir_from(Some(OsString::new()), krate),
            from_crate,
            "empty is unset"
        );
        assert_eq!(
            dir_from(Some("/elsewhere".into()), krate),
            PathBuf::from("/elsewhere")
        );
        // The shared traces themselves, where `for_test` looks by default.
        let dir = std::env::var_os(TRACES_ENV)
            .filter(|d| !d.is_empty())
            .map_or(from_crate, PathBuf::from);
        assert_eq!(dir, super::dir());
        if let Some(p) = for_test_in(KTH, &dir, ci()) {
            let src = crate::JobSource::open(&p, None, crate::NormalizeOptions::default()).unwrap();
            assert_eq!(
                src.normalized_procs(),
                Some(100),
                "the KTH SP2 has 100 nodes"
            );
        }
    }

    /// The workspace root is found by walking up, whatever lies below it.
    #[test]
    fn the_workspace_root_is_found_from_any_directory_below_it() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        let deep = ws.join("member/src/inner");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(
            ws.join("Cargo.toml"),
            "[workspace]\nmembers = [\"member\"]\n",
        )
        .unwrap();
        std::fs::write(ws.join("member/Cargo.toml"), "[package]\nname = \"m\"\n").unwrap();
        for start in [&ws, &ws.join("member"), &deep] {
            assert_eq!(workspace_root(start).as_deref(), Some(ws.as_path()));
            assert_eq!(dir_from(None, start), ws.join("../shared/traces"));
        }
        std::fs::create_dir_all(tmp.path().join("shared/traces")).unwrap();
        std::fs::write(tmp.path().join("shared/traces/T.swf"), "; x\n").unwrap();
        let found = for_test_in("T.swf", &dir_from(None, &deep), true).unwrap();
        assert_eq!(
            found.canonicalize().unwrap(),
            tmp.path()
                .join("shared/traces/T.swf")
                .canonicalize()
                .unwrap()
        );
    }

    #[test]
    fn a_missing_trace_outside_ci_is_skipped() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(for_test_in(KTH, tmp.path(), false), None);
    }

    #[test]
    #[should_panic(expected = "under CI=true the shared traces are required")]
    fn a_missing_trace_under_ci_fails() {
        let tmp = tempfile::tempdir().unwrap();
        for_test_in(KTH, tmp.path(), true);
    }
}
