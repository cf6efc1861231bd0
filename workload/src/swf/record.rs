//! One SWF v2.2 job line, typed, and its allocation-free parser (Standard Workload Format, the
//! 18 job fields; `reference-semantics.md` "Input rules").
//!
//! Numbers are parsed as integers on the fast path and fall back to `f64` for decimals and
//! exponents (`123.5`, `1e3`). Fields the reference reads as floats (run time) or that are
//! often fractional (average CPU time, requested time) are kept as `f64`; the others are `i64`,
//! and a decimal written in one of them is rounded down (towards −∞, so that `-0.5` stays
//! negative). `-1` means "missing" throughout, as in the format.

use super::scan::{Tok, scan};
use crate::error::WorkloadError;

/// One job line of an SWF file.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SwfRecord {
    /// The 1-based line number in the file.
    pub line: u64,
    /// Field 1: job number (must not be negative).
    pub job_number: u64,
    /// Field 2: submit time, seconds.
    pub submit_time: i64,
    /// Field 3: wait time, seconds.
    pub wait_time: i64,
    /// Field 4: run time, seconds (a float, as the reference reads it).
    pub run_time: f64,
    /// Field 5: allocated processors.
    pub allocated_procs: i64,
    /// Field 6: average CPU time used, seconds.
    pub average_cpu_time: f64,
    /// Field 7: used memory, KB per processor.
    pub used_memory_kb: i64,
    /// Field 8: requested processors.
    pub requested_procs: i64,
    /// Field 9: requested time, seconds (the user's estimate).
    pub requested_time: f64,
    /// Field 10: requested memory, KB per processor.
    pub requested_memory_kb: i64,
    /// Field 11: status (1 completed, 0 failed, 5 cancelled, ...).
    pub status: i64,
    /// Field 12: user id.
    pub user_id: i64,
    /// Field 13: group id.
    pub group_id: i64,
    /// Field 14: executable (application) number.
    pub executable: i64,
    /// Field 15: queue number.
    pub queue: i64,
    /// Field 16: partition number.
    pub partition: i64,
    /// Field 17: preceding job number.
    pub preceding_job: i64,
    /// Field 18: think time from the preceding job, seconds.
    pub think_time: i64,
}

impl SwfRecord {
    /// The processors the job held: the allocated ones (field 5), or the requested ones (field
    /// 8) where the allocation is not recorded.
    pub fn procs(&self) -> i64 {
        if self.allocated_procs > 0 {
            self.allocated_procs
        } else {
            self.requested_procs
        }
    }
}

/// Why one token is not a number.
enum NumError {
    NotANumber,
    OutOfRange,
}

/// Parses a token as a finite `f64` (the slow path).
#[cold]
fn parse_float(tok: &[u8]) -> Result<f64, NumError> {
    // Only digits, sign, '.', and exponent letters; this also refuses "inf" and "nan".
    let plausible = tok
        .iter()
        .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E'))
        && tok.iter().any(u8::is_ascii_digit);
    if !plausible {
        return Err(NumError::NotANumber);
    }
    let s = std::str::from_utf8(tok).map_err(|_| NumError::NotANumber)?;
    let f: f64 = s.parse().map_err(|_| NumError::NotANumber)?;
    if f.is_finite() {
        Ok(f)
    } else {
        Err(NumError::OutOfRange)
    }
}

/// The largest magnitude an `f64` can have and still convert exactly to `i64`'s range.
const I64_LIMIT: f64 = 9.2e18;

/// Builds the error for field `field` (1-based) holding `tok`.
#[cold]
fn field_error(file: &str, line: u64, field: usize, tok: &[u8], what: &str) -> WorkloadError {
    let shown: String = String::from_utf8_lossy(tok).chars().take(40).collect();
    WorkloadError::Field {
        file: file.to_owned(),
        line,
        field,
        message: format!("{what}, found \"{shown}\""),
    }
}

/// The slow path of a float field.
#[cold]
fn slow_float(tok: &[u8], file: &str, line: u64, field: usize) -> Result<f64, WorkloadError> {
    parse_float(tok).map_err(|e| match e {
        NumError::NotANumber => field_error(file, line, field, tok, "expected a number"),
        NumError::OutOfRange => field_error(file, line, field, tok, "number out of range"),
    })
}

/// The slow path of an integer field: decimals are rounded down.
#[cold]
fn slow_int(tok: &[u8], file: &str, line: u64, field: usize) -> Result<i64, WorkloadError> {
    match parse_float(tok) {
        Ok(f) if f.abs() < I64_LIMIT => Ok(f.floor() as i64),
        Ok(_) | Err(NumError::OutOfRange) => {
            Err(field_error(file, line, field, tok, "number out of range"))
        }
        Err(NumError::NotANumber) => Err(field_error(file, line, field, tok, "expected a number")),
    }
}

/// Parses the 18 fields of `text` (one line, without its comment/blank check) into a record.
///
/// `file` and `line` are used only for errors.
pub fn parse_record(text: &[u8], file: &str, line: u64) -> Result<SwfRecord, WorkloadError> {
    let mut toks = [Tok::Int(0); 18];
    let n = scan(text, &mut toks);
    if n != 18 {
        return Err(WorkloadError::FieldCount {
            file: file.to_owned(),
            line,
            found: n,
        });
    }
    let int = |i: usize| match toks[i] {
        Tok::Int(v) => Ok(v),
        Tok::Float(f) => Ok(f.floor() as i64),
        Tok::Slow(s, e) => slow_int(&text[s..e], file, line, i + 1),
    };
    let float = |i: usize| match toks[i] {
        Tok::Int(v) => Ok(v as f64),
        Tok::Float(f) => Ok(f),
        Tok::Slow(s, e) => slow_float(&text[s..e], file, line, i + 1),
    };
    let job_number = u64::try_from(int(0)?).map_err(|_| job_number_error(text, file, line))?;
    Ok(SwfRecord {
        line,
        job_number,
        submit_time: int(1)?,
        wait_time: int(2)?,
        run_time: float(3)?,
        allocated_procs: int(4)?,
        average_cpu_time: float(5)?,
        used_memory_kb: int(6)?,
        requested_procs: int(7)?,
        requested_time: float(8)?,
        requested_memory_kb: int(9)?,
        status: int(10)?,
        user_id: int(11)?,
        group_id: int(12)?,
        executable: int(13)?,
        queue: int(14)?,
        partition: int(15)?,
        preceding_job: int(16)?,
        think_time: int(17)?,
    })
}

#[cold]
fn job_number_error(text: &[u8], file: &str, line: u64) -> WorkloadError {
    let tok = text
        .split(u8::is_ascii_whitespace)
        .find(|t| !t.is_empty())
        .unwrap_or_default();
    field_error(file, line, 1, tok, "expected a non-negative job number")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<SwfRecord, WorkloadError> {
        parse_record(s.as_bytes(), "t.swf", 7)
    }

    #[test]
    fn parses_all_fields() {
        let r = parse("   15   599850 192180   3477.9    4  12.5  -1    4  53940   -1  1  12  13  14 15 16 17 18\r")
            .unwrap();
        assert_eq!(r.line, 7);
        assert_eq!(r.job_number, 15);
        assert_eq!(r.submit_time, 599850);
        assert_eq!(r.wait_time, 192180);
        assert_eq!(r.run_time, 3477.9);
        assert_eq!(r.allocated_procs, 4);
        assert_eq!(r.average_cpu_time, 12.5);
        assert_eq!(r.used_memory_kb, -1);
        assert_eq!(r.requested_procs, 4);
        assert_eq!(r.requested_time, 53940.0);
        assert_eq!(r.requested_memory_kb, -1);
        assert_eq!(r.status, 1);
        assert_eq!(
            (r.user_id, r.group_id, r.executable, r.queue, r.partition),
            (12, 13, 14, 15, 16)
        );
        assert_eq!((r.preceding_job, r.think_time), (17, 18));
    }

    #[test]
    fn decimals_in_integer_fields_round_down() {
        let r = parse("1 -0.5 0 10 4.7 -1 -1 4 +20 -1 1 1 1 -1 -1 -1 -1 1e2").unwrap();
        assert_eq!(r.submit_time, -1);
        assert_eq!(r.allocated_procs, 4);
        assert_eq!(r.requested_time, 20.0);
        assert_eq!(r.think_time, 100);
    }

    #[test]
    fn errors_name_line_and_field() {
        let e = parse("1 0 0 10 abc -1 -1 4 20 -1 1 1 1 -1 -1 -1 -1 -1").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.swf:7: field 5 (allocated processors): expected a number, found \"abc\""
        );
        let e = parse("1 0 0 10 4 -1 -1 4 20 -1 1 1 1 -1 -1 -1 -1").unwrap_err();
        assert_eq!(e.to_string(), "t.swf:7: expected 18 fields, found 17");
        let e = parse("1 0 0 10 4 -1 -1 4 20 -1 1 1 1 -1 -1 -1 -1 -1 9").unwrap_err();
        assert_eq!(e.to_string(), "t.swf:7: expected 18 fields, found 19");
        let e = parse("1 0 0 - 4 -1 -1 4 20 -1 1 1 1 -1 -1 -1 -1 -1").unwrap_err();
        assert!(e.to_string().contains("field 4 (run time)"), "{e}");
        let e = parse("1 0 0 inf 4 -1 -1 4 20 -1 1 1 1 -1 -1 -1 -1 -1").unwrap_err();
        assert!(e.to_string().contains("field 4 (run time)"), "{e}");
        let e = parse("1 0 0 1e999 4 -1 -1 4 20 -1 1 1 1 -1 -1 -1 -1 -1").unwrap_err();
        assert!(e.to_string().contains("out of range"), "{e}");
        let e = parse("-3 0 0 10 4 -1 -1 4 20 -1 1 1 1 -1 -1 -1 -1 -1").unwrap_err();
        assert!(e.to_string().contains("field 1 (job number)"), "{e}");
        let e = parse("1 99999999999999999999999 0 10 4 -1 -1 4 20 -1 1 1 1 -1 -1 -1 -1 -1")
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("field 2 (submit time): number out of range")
        );
        assert!(e.is_line_error());
    }

    #[test]
    fn fast_decimals_equal_std_parsing() {
        for tok in [
            "552.21",
            "0.03",
            "978.00",
            "-0.5",
            "123.",
            "99999999999999.9",
            "1.000000000000001",
            "0.1",
            "3477.9",
            "12345678901234567.5",
            "7.0e1",
            ".5",
        ] {
            let line = format!("1 0 0 {tok} 4 {tok} -1 4 20 -1 1 1 1 -1 -1 -1 -1 -1");
            let r = parse(&line).unwrap();
            let want: f64 = tok.parse().unwrap();
            assert_eq!(r.run_time, want, "{tok}");
            assert_eq!(r.average_cpu_time, want, "{tok}");
        }
        let r = parse("1 0 0 1.5.5 4 -1 -1 4 20 -1 1 1 1 -1 -1 -1 -1 -1");
        assert!(r.unwrap_err().to_string().contains("field 4"));
        let r = parse("1 0 0 1.5x 4 -1 -1 4 20 -1 1 1 1 -1 -1 -1 -1 -1");
        assert!(r.unwrap_err().to_string().contains("\"1.5x\""));
    }

    #[test]
    fn an_empty_field_is_a_missing_field() {
        // Fields are separated by runs of whitespace, so two tabs with nothing between them
        // are one separator: the line has 17 fields and the error names the line.
        let e = parse("1\t0\t\t10\t4\t-1\t-1\t4\t20\t-1\t1\t1\t1\t-1\t-1\t-1\t-1\t-1").unwrap_err();
        assert_eq!(e.to_string(), "t.swf:7: expected 18 fields, found 17");
        assert_eq!(e.line(), Some(7));
    }

    #[test]
    fn long_integers_fall_back_exactly() {
        let r = parse("1 1234567890123456789 0 10 4 -1 -1 4 20 -1 1 1 1 -1 -1 -1 -1 -1");
        // 19 digits take the float path: still in range.
        assert!(r.is_ok());
    }
}
