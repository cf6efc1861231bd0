//! The `gridsim` command: replay a workload trace or a synthetic stream through a local policy
//! (`gridsim run`) and measure the simulator's speed (`gridsim bench`).

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
