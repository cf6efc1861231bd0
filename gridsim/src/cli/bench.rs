//! `gridsim bench` (placeholder, written next).

use anyhow::Result;
use clap::Args;

/// Arguments of `gridsim bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {}

/// `gridsim bench`.
pub fn bench(_args: &BenchArgs) -> Result<()> {
    Ok(())
}
