//! How big a submitted `JobSpec` may be: [`SpecLimits`] and [`SpecLimits::check`], the
//! meta-scheduler's door check (its `[limits]` configuration section), which refuses with the
//! field to blame a job that could only fail later: text too long to be a name, a command line
//! larger than a process may be given, an estimate no site would ever run.
//!
//! Text with a NUL byte can never be passed to a program; that rule is not a limit and
//! [`crate::job_from_spec`] applies it everywhere (see [`check_text`]).

use crate::ConvertError;
use crate::v1;

/// One day in seconds.
const DAY: i64 = 86_400;

/// The sizes a `JobSpec` may reach. Sizes are in bytes of UTF-8.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SpecLimits {
    /// Longest `user`, `client_token` and `name` (default 256).
    pub max_name_bytes: usize,
    /// Longest `command.program`, `command.working_directory` (default 4096, a Linux path) and
    /// `after`.
    pub max_path_bytes: usize,
    /// Most `command.args` (default 4096).
    pub max_args: usize,
    /// Most `command.env` entries (default 1024).
    pub max_env: usize,
    /// Largest command line: program, arguments, environment keys and values and working
    /// directory together (default 131072, 128 KiB).
    pub max_command_bytes: usize,
    /// Most `inputs` (default 1024).
    pub max_inputs: usize,
    /// Longest `estimate_s` (default 31536000, 365 days); each site may have a lower limit.
    pub max_estimate_s: i64,
    /// Most tasks of one job array (default 100000; each takes a job id).
    pub max_array_tasks: usize,
}

impl Default for SpecLimits {
    fn default() -> Self {
        SpecLimits {
            max_name_bytes: 256,
            max_path_bytes: 4096,
            max_args: 4096,
            max_env: 1024,
            max_command_bytes: 128 * 1024,
            max_inputs: 1024,
            max_estimate_s: 365 * DAY,
            max_array_tasks: 100_000,
        }
    }
}

/// Refuses text that a process cannot be given: one with a NUL byte.
pub fn check_text(field: impl FnOnce() -> String, text: &str) -> Result<(), ConvertError> {
    match text.find('\0') {
        Some(at) => Err(ConvertError::new(
            field(),
            format!("contains a NUL byte (at byte {at})"),
        )),
        None => Ok(()),
    }
}

impl SpecLimits {
    /// Checks `spec` against the limits; the first one broken is reported, naming its field.
    pub fn check(&self, spec: &v1::JobSpec) -> Result<(), ConvertError> {
        let long = |field: &str, text: &str, max: usize| {
            if text.len() > max {
                Err(ConvertError::new(
                    field,
                    format!("{} bytes long, more than the limit of {max}", text.len()),
                ))
            } else {
                Ok(())
            }
        };
        long("user", &spec.user, self.max_name_bytes)?;
        if let Some(t) = &spec.client_token {
            long("client_token", t, self.max_name_bytes)?;
        }
        if let Some(n) = &spec.name {
            long("name", n, self.max_name_bytes)?;
        }
        if let Some(a) = &spec.after {
            long("after", a, self.max_path_bytes)?;
        }
        if spec.estimate_s > self.max_estimate_s {
            return Err(ConvertError::new(
                "estimate_s",
                format!(
                    "{} s is more than the grid's limit of {} s",
                    spec.estimate_s, self.max_estimate_s
                ),
            ));
        }
        let many = |field: &str, n: usize, max: usize| {
            if n > max {
                Err(ConvertError::new(
                    field,
                    format!("{n} entries, more than the limit of {max}"),
                ))
            } else {
                Ok(())
            }
        };
        many("inputs", spec.inputs.len(), self.max_inputs)?;
        if let Some(a) = &spec.array {
            long("array", a, self.max_path_bytes)?;
            gridsched_core::model::ArraySpec::parse(a, self.max_array_tasks)
                .map_err(|e| ConvertError::new("array", e.why))?;
        }
        let Some(c) = &spec.command else {
            return Ok(());
        };
        long("command.program", &c.program, self.max_path_bytes)?;
        if let Some(d) = &c.working_directory {
            long("command.working_directory", d, self.max_path_bytes)?;
        }
        many("command.args", c.args.len(), self.max_args)?;
        many("command.env", c.env.len(), self.max_env)?;
        let total = c.program.len()
            + c.args.iter().map(String::len).sum::<usize>()
            + c.env.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>()
            + c.working_directory.as_ref().map_or(0, String::len);
        if total > self.max_command_bytes {
            return Err(ConvertError::new(
                "command",
                format!(
                    "program, arguments, environment and working directory take {total} bytes, \
                     more than the limit of {}",
                    self.max_command_bytes
                ),
            ));
        }
        Ok(())
    }

    /// Checks the limits themselves: each must be positive. Returns the name of the first key
    /// that is not.
    pub fn validate(&self) -> Result<(), &'static str> {
        let zero = [
            (self.max_name_bytes, "max_name_bytes"),
            (self.max_path_bytes, "max_path_bytes"),
            (self.max_command_bytes, "max_command_bytes"),
            (self.max_array_tasks, "max_array_tasks"),
        ];
        if let Some((_, key)) = zero.iter().find(|(v, _)| *v == 0) {
            return Err(key);
        }
        if self.max_estimate_s < 1 {
            return Err("max_estimate_s");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> v1::JobSpec {
        v1::JobSpec {
            user: "alice".into(),
            processors: 1,
            estimate_s: 60,
            command: Some(v1::Command {
                program: "/bin/echo".into(),
                args: vec!["hi".into()],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn field(s: &v1::JobSpec) -> String {
        SpecLimits::default()
            .check(s)
            .unwrap_err()
            .field()
            .to_owned()
    }

    #[test]
    fn names_the_field_over_each_limit() {
        let l = SpecLimits::default();
        assert!(l.check(&spec()).is_ok());
        let mut s = spec();
        s.user = "u".repeat(257);
        assert_eq!(field(&s), "user");
        s.user = "u".repeat(256);
        assert!(l.check(&s).is_ok(), "the limit itself is allowed");
        let mut s = spec();
        s.estimate_s = 1 << 62;
        assert_eq!(field(&s), "estimate_s");
        let e = l.check(&s).unwrap_err();
        assert!(e.reason().contains("31536000"), "{e}");
        let mut s = spec();
        s.command.as_mut().unwrap().args = vec![String::new(); 4097];
        assert_eq!(field(&s), "command.args");
        let mut s = spec();
        s.command.as_mut().unwrap().args = vec!["x".repeat(1000); 200];
        assert_eq!(field(&s), "command");
        let mut s = spec();
        s.command.as_mut().unwrap().program = "p".repeat(5000);
        assert_eq!(field(&s), "command.program");
        let mut s = spec();
        s.array = Some("0-100000".into());
        assert_eq!(field(&s), "array");
        let e = l.check(&s).unwrap_err();
        assert_eq!(e.reason(), "more than 100000 tasks");
        s.array = Some("0-99999%50".into());
        assert!(l.check(&s).is_ok());
        let mut s = spec();
        s.client_token = Some("t".repeat(300));
        assert_eq!(field(&s), "client_token");
    }

    #[test]
    fn nul_is_refused_with_its_position() {
        let e = check_text(|| "command.args[1]".into(), "a\0b").unwrap_err();
        assert_eq!(e.field(), "command.args[1]");
        assert!(e.reason().contains("byte 1"), "{e}");
        assert!(check_text(|| unreachable!(), "plain").is_ok());
    }

    #[test]
    fn zero_limits_are_named() {
        let l = SpecLimits {
            max_command_bytes: 0,
            ..Default::default()
        };
        assert_eq!(l.validate(), Err("max_command_bytes"));
        let l = SpecLimits {
            max_estimate_s: 0,
            ..Default::default()
        };
        assert_eq!(l.validate(), Err("max_estimate_s"));
        assert_eq!(SpecLimits::default().validate(), Ok(()));
    }
}
