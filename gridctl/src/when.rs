//! Times as gridctl's users read and type them: local ISO times with how long ago or ahead
//! they are, elapsed times as `[D-]HH:MM:SS` (as `sacct` shows them), and the forms a time may
//! be given in (dates, local times, RFC 3339, Unix seconds, ages, `+N` seconds ahead). `--json`
//! keeps the raw Unix seconds.

use jiff::{Timestamp, tz::TimeZone};

/// Unix seconds now.
pub fn now() -> i64 {
    Timestamp::now().as_second()
}

/// A time as the user types it: Unix seconds, `now`, an age (`2h`, `3 days`, `90s`: that long
/// ago), an RFC 3339 time, or a local date or date and time.
pub fn parse_when(s: &str) -> Result<i64, String> {
    let s = s.trim();
    if s == "now" {
        return Ok(now());
    }
    if let Ok(t) = s.parse::<i64>() {
        return Ok(t);
    }
    let age = s.trim_end_matches(" ago").trim_start_matches('-');
    if let Ok(span) = age.parse::<jiff::Span>()
        && let Ok(t) = Timestamp::now()
            .to_zoned(TimeZone::system())
            .checked_sub(span)
    {
        return Ok(t.timestamp().as_second());
    }
    if let Ok(t) = s.parse::<Timestamp>() {
        return Ok(t.as_second());
    }
    if let Ok(dt) = s.parse::<jiff::civil::DateTime>()
        && let Ok(z) = dt.to_zoned(TimeZone::system())
    {
        return Ok(z.timestamp().as_second());
    }
    Err(format!(
        "`{s}` is not a time: give a date (2026-11-29), a local time (2026-11-29T08:00), an \
         RFC 3339 time, Unix seconds, or an age (2h, 7d)"
    ))
}

/// Unix seconds in local time, as `format` (strftime) writes it; the seconds themselves when
/// out of range.
fn formatted(t: i64, format: &str) -> String {
    Timestamp::from_second(t).map_or_else(
        |_| t.to_string(),
        |ts| ts.to_zoned(TimeZone::system()).strftime(format).to_string(),
    )
}

/// Unix seconds as local time: `2026-11-29 08:00:00`.
pub fn local(t: i64) -> String {
    formatted(t, "%Y-%m-%d %H:%M:%S")
}

/// Unix seconds as RFC 3339 with the local offset (for CSV).
pub fn rfc3339(t: i64) -> String {
    formatted(t, "%Y-%m-%dT%H:%M:%S%:z")
}

/// Seconds as sacct shows elapsed times: `[D-]HH:MM:SS`.
pub fn elapsed(s: i64) -> String {
    let (d, h, m, sec) = (s / 86_400, s % 86_400 / 3_600, s % 3_600 / 60, s % 60);
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{sec:02}")
    } else {
        format!("{h:02}:{m:02}:{sec:02}")
    }
}

/// A time as a table shows it: local, with how far it is from now (`2026-11-29 08:00:00 (3 min
/// ago)`, `… (in 12 s)`).
pub fn when(t: i64) -> String {
    format!("{} ({})", local(t), from_now(t, now()))
}

/// How far `t` is from `now`, in the largest unit that fits: `now`, `12 s ago`, `in 3 min`,
/// `2 h ago`, `in 4 d`.
pub fn from_now(t: i64, now: i64) -> String {
    let d = (t - now).abs();
    let amount = match d {
        0 => return "now".into(),
        1..120 => format!("{d} s"),
        120..7_200 => format!("{} min", d / 60),
        7_200..172_800 => format!("{} h", d / 3_600),
        _ => format!("{} d", d / 86_400),
    };
    if t > now {
        format!("in {amount}")
    } else {
        format!("{amount} ago")
    }
}

/// A time of a flag: `+N` seconds from now, or any form of [`parse_when`].
pub fn time_arg(s: &str, flag: &str) -> anyhow::Result<i64> {
    match s.strip_prefix('+') {
        Some(rel) => {
            let ahead = rel
                .parse::<i64>()
                .map_err(|e| anyhow::anyhow!("{flag}: `{s}`: {e}"))?;
            now()
                .checked_add(ahead)
                .ok_or_else(|| anyhow::anyhow!("{flag}: `{s}` is too far from now"))
        }
        None => parse_when(s).map_err(|e| anyhow::anyhow!("{flag}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_read_in_every_form_and_shown_as_elapsed() {
        assert_eq!(parse_when("1795785480"), Ok(1_795_785_480));
        assert_eq!(parse_when("2026-11-29T08:00:00Z"), Ok(1_795_939_200));
        let n = now();
        let two_hours = parse_when("2h").unwrap();
        assert!(
            (n - 7_200 - two_hours).abs() <= 2,
            "{two_hours} against {n}"
        );
        assert!((n - 86_400 * 7 - parse_when("7d ago").unwrap()).abs() <= 3_700);
        assert!(parse_when("2026-11-29").is_ok());
        let e = parse_when("yesterday-ish").unwrap_err();
        assert!(e.contains("`yesterday-ish` is not a time"), "{e}");
        assert_eq!(elapsed(3_725), "01:02:05");
        assert_eq!(elapsed(90_061), "1-01:01:01");
    }

    #[test]
    fn distances_from_now_read_in_the_largest_unit() {
        let n = 1_000_000;
        assert_eq!(from_now(n, n), "now");
        assert_eq!(from_now(n - 12, n), "12 s ago");
        assert_eq!(from_now(n + 180, n), "in 3 min");
        assert_eq!(from_now(n - 3 * 3_600, n), "3 h ago");
        assert_eq!(from_now(n + 5 * 86_400, n), "in 5 d");
        assert!(time_arg("+60", "--start").unwrap() - now() <= 60);
        assert!(
            time_arg("x", "--start")
                .unwrap_err()
                .to_string()
                .starts_with("--start: `x`")
        );
    }
}
