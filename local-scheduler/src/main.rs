//! The `local-scheduler` binary: see the library.

fn main() -> std::process::ExitCode {
    match local_scheduler::main_with_args(std::env::args()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("local-scheduler: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}
