//! Standard output that may be a pipe closed early (`gridctl watch | head`): every line is
//! written through [`line`] (the [`outln!`] macro), whose error a command passes up with `?`;
//! `main` ends quietly with exit code 0 when that error is a broken pipe ([`is_closed_pipe`]).
//! Rust ignores SIGPIPE, so the write fails with `BrokenPipe` instead of killing the process,
//! and `println!` would panic on it.

use std::io::{self, Write};

/// Writes `args` and a newline to stdout, flushed, so a closed reader is noticed at once.
pub fn line(args: std::fmt::Arguments<'_>) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_fmt(args)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Like `println!`, returning early with the write error (for `?`-returning functions).
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::out::line(format_args!($($arg)*))?
    };
}
pub(crate) use outln;

/// Whether `e` (or an error it wraps) is a write to a closed pipe.
pub fn is_closed_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_a_wrapped_broken_pipe() {
        let pipe = io::Error::new(io::ErrorKind::BrokenPipe, "closed");
        assert!(is_closed_pipe(
            &anyhow::Error::from(pipe).context("printing")
        ));
        let other = io::Error::new(io::ErrorKind::PermissionDenied, "no");
        assert!(!is_closed_pipe(&anyhow::Error::from(other)));
        assert!(!is_closed_pipe(&anyhow::anyhow!("broken pipe")));
    }
}
