//! The `meta-scheduler` binary: see the library.

fn main() -> std::process::ExitCode {
    match meta_scheduler::main_with_args(std::env::args()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("meta-scheduler: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
