//! A job's memory on its machine: the resident memory of its process group, read from `/proc`
//! every [`SAMPLE`] and compared with the job's `memory_kb`, the way Slurm's `OverMemoryKill`
//! samples a job's use (Linux; a process that leaves the job's group is not counted). Also the
//! machine's memory, which the agent reports when it registers.

use std::time::Duration;

/// How often a job with a memory limit is measured.
pub const SAMPLE: Duration = Duration::from_millis(200);

/// The resident memory (KiB) of the processes of group `pgrp`; `None` where `/proc` cannot be
/// read.
pub fn group_rss_kb(pgrp: i32) -> Option<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        // A process may end between the listing and the reads: it then counts nothing.
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if stat_pgrp(&stat) != Some(pgrp) {
            continue;
        }
        total += process_rss_kb(pid).unwrap_or(0);
    }
    Some(total)
}

/// The resident memory (KiB) of process `pid` (`VmRSS` of `/proc/<pid>/status`).
pub fn process_rss_kb(pid: u32) -> Option<u64> {
    field_kb(
        &std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?,
        "VmRSS:",
    )
}

/// This machine's memory in KiB (`MemTotal` of `/proc/meminfo`).
pub fn total_kb() -> Option<u64> {
    field_kb(&std::fs::read_to_string("/proc/meminfo").ok()?, "MemTotal:")
}

/// The process group of a `/proc/<pid>/stat` line: the third field after the command, which is
/// in parentheses and may hold spaces and parentheses itself.
fn stat_pgrp(stat: &str) -> Option<i32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(2)?.parse().ok()
}

/// A `Key:   1234 kB` line's number.
fn field_kb(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(key))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_group_is_read_past_a_command_with_parentheses() {
        assert_eq!(stat_pgrp("4242 (a) b (c)) S 1 4240 4240 0 -1"), Some(4240));
        assert_eq!(stat_pgrp("garbage"), None);
        assert_eq!(
            field_kb("Name:\tx\nVmRSS:\t  1234 kB\n", "VmRSS:"),
            Some(1234)
        );
    }

    #[test]
    fn this_process_group_has_resident_memory() {
        let me = nix::unistd::getpgrp().as_raw();
        let rss = group_rss_kb(me).expect("/proc is readable");
        assert!(rss > 100, "{rss} KiB");
        assert!(total_kb().expect("MemTotal") > rss);
    }
}
