//! The `site-agent` binary: see the library.

fn main() -> std::process::ExitCode {
    match site_agent::main_with_args(std::env::args()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("site-agent: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}
