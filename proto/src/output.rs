//! What every side of a job's output transfer agrees on: the chunk size, the file name of each
//! standard stream, and which paths name a file inside a job's directory.

use crate::v1::OutputStream;

/// Largest piece of output in one `OutputChunk` (1 MiB: a large declared file is handed over in
/// a thousand pushes per GiB, not sixteen thousand).
pub const CHUNK: usize = 1024 * 1024;

/// The file name of a stream in a job's directory; standard output when unspecified.
pub fn stream_file(stream: OutputStream) -> &'static str {
    match stream {
        OutputStream::Stderr => "stderr",
        _ => "stdout",
    }
}

/// Whether `path` is a plain relative path (only names: no root, no `.`, no `..`), so that
/// joined to a directory it stays inside it.
pub fn is_plain_relative(path: &str) -> bool {
    std::path::Path::new(path)
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_make_a_plain_relative_path() {
        for ok in ["a", "res/b.csv", ""] {
            assert!(is_plain_relative(ok), "{ok}");
        }
        for bad in ["/etc/passwd", "../x", "a/../../b", "./a"] {
            assert!(!is_plain_relative(bad), "{bad}");
        }
        assert_eq!(stream_file(OutputStream::Unspecified), "stdout");
    }
}
