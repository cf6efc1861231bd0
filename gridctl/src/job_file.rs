//! The job of `gridctl submit`: from flags or from a job file (TOML or JSON, by extension; flags
//! given on the command line override the file's values).

use gridsched_proto::v1;
use serde::Deserialize;
use std::path::PathBuf;

/// A job as written in a job file or given by flags.
#[derive(Debug, Default, Clone, Deserialize, clap::Args)]
#[serde(deny_unknown_fields)]
pub struct SubmitArgs {
    /// Job file (TOML, or JSON when it ends in `.json`).
    #[arg(long, short)]
    #[serde(skip)]
    pub file: Option<PathBuf>,
    /// Wait for the job to end; exit 0 only if it completed.
    #[arg(long)]
    #[serde(skip)]
    pub wait: bool,
    /// Owner (default: $USER).
    #[arg(long)]
    pub user: Option<String>,
    /// Service class: gold, silver or regular.
    #[arg(long)]
    pub class: Option<String>,
    /// Owner priority 0..3.
    #[arg(long)]
    pub owner_priority: Option<u32>,
    /// Processors.
    #[arg(long, short = 'n')]
    pub processors: Option<u32>,
    /// Estimated run time in seconds.
    #[arg(long)]
    pub estimate: Option<i64>,
    /// Deadline: `+N` seconds from now, a local time (`2026-11-29T18:00`), an RFC 3339 time, or
    /// Unix seconds.
    #[arg(long)]
    pub deadline: Option<String>,
    /// Memory the job needs on its machine, as Slurm's `--mem`: a number of MiB, or with a
    /// unit `K`, `M`, `G` or `T` (`512M`, `4G`). A job asking for more than any machine of the
    /// grid has is refused at submission.
    #[arg(long)]
    pub mem: Option<String>,
    /// Licences needed (repeatable).
    #[arg(long = "licence")]
    #[serde(default)]
    pub licences: Vec<String>,
    /// Emulation mode: hold the processors this many seconds instead of running a command.
    #[arg(long)]
    pub emulate: Option<i64>,
    /// Idempotency token.
    #[arg(long)]
    pub token: Option<String>,
    /// Advance reservation to run in (`r7` or `7`, from `gridctl reserve`).
    #[arg(long)]
    pub reservation: Option<String>,
    /// An urgent job: `critical` (the default level), `high` or `important`; it outranks typical
    /// jobs and may preempt them where the site allows. Needs an allowance of the meta-scheduler.
    #[arg(long, num_args = 0..=1, default_missing_value = "critical", value_name = "LEVEL")]
    pub urgent: Option<String>,
    /// The jobs to wait for, in Slurm's `--dependency` syntax: `afterok:12`, `after:12+60`
    /// (seconds), `afternotok:12:13`, `afterany:12`, `aftercorr:12` (an array's tasks, each after
    /// the task of array 12 of the same index), `singleton`; joined by `,` (all) or `?`
    /// (any).
    #[arg(long, alias = "dependency", short = 'd', value_name = "DEPENDENCY")]
    pub after: Option<String>,
    /// The job's name (`singleton` in `--after` refers to it).
    #[arg(long, short = 'J')]
    pub name: Option<String>,
    /// Makes the job an array of tasks, in Slurm's `--array` syntax: `0-999`, `1,3,5-9`,
    /// `0-15:4`, then `%N` for the most tasks out at once (`0-999%50`). Each task has
    /// GRIDSCHED_ARRAY_ID and GRIDSCHED_ARRAY_INDEX in its environment and is shown as
    /// `ID_INDEX`.
    #[arg(long, short = 'a', value_name = "INDICES")]
    pub array: Option<String>,
    /// A file the job writes that is kept at its site and fetched with `gridctl fetch`: a path
    /// relative to the job's working directory, globs allowed (`--output 'res/*.csv'`;
    /// repeatable; `outputs = [...]` in a job file).
    #[arg(long = "output", value_name = "PATH")]
    #[serde(default)]
    pub outputs: Vec<String>,
    /// A file the job reads, placed in its working directory before it starts (repeatable;
    /// `inputs = [...]` in a job file): `PATH[:NAME]` uploads a local file or directory (under
    /// NAME, default its base name), `http://…`, `https://…` or `file:///…` is fetched by the
    /// job's site (under the URL's last segment), `URL#sha256=HEX` only if its content has that
    /// digest.
    #[arg(long = "input", value_name = "SOURCE")]
    #[serde(default)]
    pub inputs: Vec<String>,
    /// The command and its arguments (after `--`).
    #[arg(last = true)]
    #[serde(default)]
    pub command: Vec<String>,
}

impl SubmitArgs {
    /// The values of a job file's text, TOML or (`json`) JSON.
    pub fn from_file_text(text: &str, json: bool) -> anyhow::Result<SubmitArgs> {
        Ok(match json {
            true => serde_json::from_str(text)?,
            false => toml::from_str(text)?,
        })
    }

    /// The job spec: the file's values overridden by the flags given.
    /// The job to submit. Without `user` (flag or file) the owner is `$USER`, or, when
    /// `authenticated`, left empty for the meta-scheduler to fill in from the token.
    pub fn spec(&self, authenticated: bool) -> anyhow::Result<v1::JobSpec> {
        let mut a = self.clone();
        if let Some(path) = &self.file {
            let text = std::fs::read_to_string(path)
                .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
            let json = path.extension().is_some_and(|e| e == "json");
            let f = SubmitArgs::from_file_text(&text, json)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            a.user = a.user.or(f.user);
            a.class = a.class.or(f.class);
            a.owner_priority = a.owner_priority.or(f.owner_priority);
            a.processors = a.processors.or(f.processors);
            a.estimate = a.estimate.or(f.estimate);
            a.deadline = a.deadline.or(f.deadline);
            a.emulate = a.emulate.or(f.emulate);
            a.mem = a.mem.or(f.mem);
            a.token = a.token.or(f.token);
            a.reservation = a.reservation.or(f.reservation);
            a.urgent = a.urgent.or(f.urgent);
            a.after = a.after.or(f.after);
            a.name = a.name.or(f.name);
            a.array = a.array.or(f.array);
            if a.licences.is_empty() {
                a.licences = f.licences;
            }
            if a.command.is_empty() {
                a.command = f.command;
            }
            if a.outputs.is_empty() {
                a.outputs = f.outputs;
            }
            if a.inputs.is_empty() {
                a.inputs = f.inputs;
            }
        }
        let user_class = match a.class.as_deref() {
            None | Some("regular") => v1::UserClass::Regular,
            Some("gold") => v1::UserClass::Gold,
            Some("silver") => v1::UserClass::Silver,
            Some(c) => anyhow::bail!("--class: unknown class `{c}` (gold, silver or regular)"),
        };
        let deadline = (a.deadline.as_deref())
            .map(|d| crate::when::time_arg(d, "--deadline"))
            .transpose()?;
        let urgency = match a.urgent.as_deref() {
            None => v1::Urgency::Unspecified,
            Some(u) => match u.parse::<gridsched_core::model::Urgency>() {
                Ok(u) => u.into(),
                Err(e) => anyhow::bail!("--urgent: {e}"),
            },
        };
        let command = a.command.split_first().map(|(p, args)| v1::Command {
            program: p.clone(),
            args: args.to_vec(),
            ..Default::default()
        });
        Ok(v1::JobSpec {
            user: a
                .user
                .or_else(|| {
                    (!authenticated)
                        .then(|| std::env::var("USER").ok())
                        .flatten()
                })
                .unwrap_or_else(|| if authenticated { "" } else { "anonymous" }.into()),
            user_class: user_class.into(),
            owner_priority: a.owner_priority.unwrap_or(0),
            processors: a.processors.unwrap_or(1),
            memory_kb: a.mem.as_deref().map(memory_kb).transpose()?,
            estimate_s: a.estimate.unwrap_or(60),
            deadline,
            licences: a.licences,
            command,
            emulate_runtime_s: a.emulate,
            client_token: a.token,
            reservation: a
                .reservation
                .as_deref()
                .map(|r| {
                    crate::reservation_id(r).map_err(|e| anyhow::anyhow!("--reservation: {e}"))
                })
                .transpose()?,
            urgency: urgency.into(),
            after: a.after,
            name: a.name,
            array: a.array,
            outputs: a.outputs,
            stage_in: a
                .inputs
                .iter()
                .map(|i| crate::inputs::parse(i))
                .collect::<anyhow::Result<_>>()?,
            ..Default::default()
        })
    }
}

/// A `--mem` value in KiB: MiB without a unit, or `K`, `M`, `G`, `T` (powers of 1024).
fn memory_kb(text: &str) -> anyhow::Result<u64> {
    let t = text.trim();
    let (digits, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let shift = match unit.to_ascii_uppercase().as_str() {
        "K" | "KB" | "KIB" => 0,
        "" | "M" | "MB" | "MIB" => 10,
        "G" | "GB" | "GIB" => 20,
        "T" | "TB" | "TIB" => 30,
        _ => anyhow::bail!("--mem: `{text}`: a number of MiB, or with K, M, G or T (`4G`)"),
    };
    let n: u64 = digits.parse().map_err(|_| {
        anyhow::anyhow!("--mem: `{text}`: a number of MiB, or with K, M, G or T (`4G`)")
    })?;
    if n == 0 {
        anyhow::bail!("--mem: must be more than 0");
    }
    n.checked_mul(1 << shift)
        .ok_or_else(|| anyhow::anyhow!("--mem: `{text}` is too large"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn mem_reads_like_slurms() {
        use super::memory_kb;
        assert_eq!(memory_kb("512").unwrap(), 512 * 1024);
        assert_eq!(memory_kb("512M").unwrap(), 512 * 1024);
        assert_eq!(memory_kb("4G").unwrap(), 4 << 20);
        assert_eq!(memory_kb("64k").unwrap(), 64);
        assert_eq!(memory_kb("1T").unwrap(), 1 << 30);
        for bad in ["", "G", "4X", "-1", "0"] {
            assert!(memory_kb(bad).is_err(), "{bad}");
        }
        assert!(memory_kb("99999999999999999999T").is_err());
    }

    /// Found by fuzzing the job file: `deadline = "+9223372036854775807"` overflowed `now + N`
    /// (a panic in a debug build, a deadline in the past in a release one). It is refused naming
    /// the flag; a deadline far ahead but in range is kept.
    #[test]
    fn a_deadline_too_far_ahead_is_refused() {
        let spec = |text: &str| super::SubmitArgs::from_file_text(text, false)?.spec(false);
        let e = spec("deadline = \"+9223372036854775807\"\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "--deadline: `+9223372036854775807` is too far from now"
        );
        assert!(!crate::fuzz::job_file(
            b"deadline = \"+9223372036854775807\"\n"
        ));
        let far = spec("deadline = \"+9000000000000000000\"\n").unwrap();
        assert!(far.deadline.unwrap() > 9_000_000_000_000_000_000);
    }
}
