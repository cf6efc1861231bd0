//! The `site-agent` binary: see the library.

/// The allocator: jemalloc's background threads give the memory of a burst of jobs back to the
/// system once the jobs have gone, where glibc's keeps it (docs/performance.md).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> std::process::ExitCode {
    match site_agent::main_with_args(std::env::args()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("site-agent: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}
