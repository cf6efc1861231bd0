//! The meta-scheduler binary, built in the tests crate for its live tests.

fn main() -> std::process::ExitCode {
    match meta_scheduler::main_with_args(std::env::args()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("meta-scheduler: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}
