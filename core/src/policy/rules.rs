//! Time-dependent planning constraints (Streit, thesis §3.1.2; spec `self-tuning-and-multisite.md`
//! §1.4 "usage control without queues"): rules on *when a job may start*, which a planning
//! policy applies as it places each job at its earliest start. The thesis' examples: "during prime
//! time no request with more than 75 % of the machine is placed" (`width-cap`), "jobs requesting
//! more than two thirds of the machine start only at night and on weekends" (`wide-only`), "jobs
//! estimated longer than two days start only on weekends" (`long-only`). A running job is never
//! stopped when it crosses into such a period; it runs to its end. The thesis' "per-project/
//! per-user limits that virtually shrink the machine" are `user-cap`: inside its window the jobs
//! of any one user together hold at most the threshold's processors at every instant, so a job
//! is placed where its whole estimate keeps its user under the cap (see [`super::user_caps`]).
//!
//! A rule is written `KIND THRESHOLD DAYS HOURS`, e.g. `width-cap 75% mon-fri 06-20`,
//! `wide-only 67% mon-fri 20-06`, `wide-only 67% sat-sun 00-24`, `long-only 172800 sat-sun 00-24`,
//! `user-cap 50% mon-fri 06-20`. Thresholds are processors (or a percentage of the machine) for
//! `width-cap`, `wide-only` ("more than") and `user-cap` ("at most"), seconds of estimate for `long-only` ("longer than"); the windows of several
//! `-only` rules of one kind are alternatives (night *or* weekend). Days are `mon`..`sun`,
//! ranges and lists (`mon-fri`, `sat,sun`, `all`); hours are whole hours `FROM-TO` of the
//! day, `TO` up to 24, and a window with `FROM > TO` runs over midnight into the next day. Times
//! are UTC shifted by `utc_offset_h`. At most [`MAX_RULES`] rules (the options stay `Copy`).

use crate::model::{Duration, Time};
use serde::{Deserialize, Serialize};

/// How many rules a policy takes.
pub const MAX_RULES: usize = 6;

const DAY: i64 = 86_400;
const NAMES: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

/// What a rule restricts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleKind {
    /// Jobs wider than the threshold do not start inside the window.
    WidthCap,
    /// Jobs wider than the threshold start only inside the window.
    WideOnly,
    /// Jobs estimated longer than the threshold start only inside the window.
    LongOnly,
    /// Inside the window one user's jobs together hold at most the threshold.
    UserCap,
}

/// A threshold: processors, a share of the machine, or seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Threshold {
    /// An absolute count (processors or seconds).
    Abs(i64),
    /// Percent of the machine's processors.
    Pct(u32),
}

/// One rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    /// What it restricts.
    pub kind: RuleKind,
    /// Above what.
    pub threshold: Threshold,
    /// Days of the week of the window, bit 0 = Monday.
    pub days: u8,
    /// First hour of the window.
    pub from_h: u8,
    /// Hour the window ends (24 = midnight); before `from_h`: over midnight.
    pub to_h: u8,
}

/// The rules of a planning policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(try_from = "RulesText", into = "RulesText")]
pub struct PlanningRules {
    rules: [Option<Rule>; MAX_RULES],
    /// Hours added to UTC to get the site's time.
    pub utc_offset_h: i8,
}

/// The written form of [`PlanningRules`].
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RulesText {
    #[serde(default)]
    list: Vec<String>,
    #[serde(default)]
    utc_offset_h: i8,
}

impl TryFrom<RulesText> for PlanningRules {
    type Error = String;
    fn try_from(t: RulesText) -> Result<Self, String> {
        let mut r = PlanningRules::from_texts(&t.list)?;
        r.utc_offset_h = t.utc_offset_h;
        Ok(r)
    }
}

impl From<PlanningRules> for RulesText {
    fn from(r: PlanningRules) -> RulesText {
        RulesText {
            list: r.iter().map(|x| x.to_string()).collect(),
            utc_offset_h: r.utc_offset_h,
        }
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.kind {
            RuleKind::WidthCap => "width-cap",
            RuleKind::WideOnly => "wide-only",
            RuleKind::LongOnly => "long-only",
            RuleKind::UserCap => "user-cap",
        };
        let threshold = match self.threshold {
            Threshold::Abs(n) => n.to_string(),
            Threshold::Pct(p) => format!("{p}%"),
        };
        let days: Vec<&str> = (0..7)
            .filter(|d| self.days & (1 << d) != 0)
            .map(|d| NAMES[d])
            .collect();
        write!(
            f,
            "{kind} {threshold} {} {:02}-{:02}",
            days.join(","),
            self.from_h,
            self.to_h
        )
    }
}

fn parse_days(s: &str) -> Result<u8, String> {
    if s == "all" {
        return Ok(0x7f);
    }
    let day = |n: &str| {
        NAMES
            .iter()
            .position(|d| *d == n)
            .ok_or_else(|| format!("unknown day `{n}` (mon, tue, wed, thu, fri, sat, sun)"))
    };
    let mut bits = 0u8;
    for part in s.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (day(a)?, day(b)?);
                let mut d = a;
                loop {
                    bits |= 1 << d;
                    if d == b {
                        break;
                    }
                    d = (d + 1) % 7;
                }
            }
            None => bits |= 1 << day(part)?,
        }
    }
    Ok(bits)
}

impl std::str::FromStr for Rule {
    type Err = String;
    fn from_str(s: &str) -> Result<Rule, String> {
        let words: Vec<&str> = s.split_whitespace().collect();
        let [kind, threshold, days, hours] = words[..] else {
            return Err(format!(
                "`{s}`: a rule is `KIND THRESHOLD DAYS HOURS`, e.g. `width-cap 75% mon-fri 06-20`"
            ));
        };
        let kind = match kind {
            "width-cap" => RuleKind::WidthCap,
            "wide-only" => RuleKind::WideOnly,
            "long-only" => RuleKind::LongOnly,
            "user-cap" => RuleKind::UserCap,
            k => {
                return Err(format!(
                    "`{s}`: unknown kind `{k}` (width-cap, wide-only, long-only, user-cap)"
                ));
            }
        };
        let threshold = match threshold.strip_suffix('%') {
            Some(p) if kind != RuleKind::LongOnly => match p.parse::<u32>() {
                Ok(p) if p <= 100 => Threshold::Pct(p),
                _ => return Err(format!("`{s}`: `{threshold}` is not a percentage")),
            },
            _ => match threshold.parse::<i64>() {
                Ok(n) if n >= 0 => Threshold::Abs(n),
                _ => return Err(format!("`{s}`: `{threshold}` is not a count")),
            },
        };
        let days = parse_days(days).map_err(|e| format!("`{s}`: {e}"))?;
        let (from_h, to_h) = hours
            .split_once('-')
            .and_then(|(a, b)| Some((a.parse::<u8>().ok()?, b.parse::<u8>().ok()?)))
            .filter(|&(a, b)| a < 24 && b <= 24 && a != b)
            .ok_or_else(|| format!("`{s}`: `{hours}` is not a window of hours like 06-20"))?;
        Ok(Rule {
            kind,
            threshold,
            days,
            from_h,
            to_h,
        })
    }
}

impl Rule {
    /// Whether the rule concerns a job of `procs` processors for `estimate` on a machine of
    /// `capacity`.
    fn concerns(&self, procs: u32, estimate: Duration, capacity: u32) -> bool {
        let above = |n: i64| match self.threshold {
            Threshold::Abs(t) => n > t,
            Threshold::Pct(p) => n * 100 > i64::from(p) * i64::from(capacity),
        };
        match self.kind {
            RuleKind::WidthCap | RuleKind::WideOnly => above(i64::from(procs)),
            RuleKind::LongOnly => above(estimate),
            // Not a rule on start instants: see `PlanningRules::user_cap_at`.
            RuleKind::UserCap => false,
        }
    }

    /// The threshold in processors on a machine of `capacity`.
    fn procs(&self, capacity: u32) -> i64 {
        match self.threshold {
            Threshold::Abs(n) => n,
            Threshold::Pct(p) => i64::from(p) * i64::from(capacity) / 100,
        }
    }

    /// The window that holds local instant `t`, as `[start, end)`, if any.
    fn window_at(&self, t: Time) -> Option<(Time, Time)> {
        let day = t.div_euclid(DAY);
        // 1970-01-01 was a Thursday (Monday = 0).
        let on = |d: i64| self.days & (1 << (d + 3).rem_euclid(7)) != 0;
        let (from, to) = (i64::from(self.from_h) * 3600, i64::from(self.to_h) * 3600);
        let sec = t - day * DAY;
        if from < to {
            (on(day) && (from..to).contains(&sec)).then(|| (day * DAY + from, day * DAY + to))
        } else if on(day) && sec >= from {
            Some((day * DAY + from, (day + 1) * DAY + to))
        } else if on(day - 1) && sec < to {
            Some(((day - 1) * DAY + from, day * DAY + to))
        } else {
            None
        }
    }

    /// The first opening of a window after local instant `t`.
    fn next_opening(&self, t: Time) -> Time {
        let day = t.div_euclid(DAY);
        let from = i64::from(self.from_h) * 3600;
        (day..day + 8)
            .filter(|&d| self.days & (1 << (d + 3).rem_euclid(7)) != 0)
            .map(|d| d * DAY + from)
            .find(|&o| o > t)
            .unwrap_or(t + 7 * DAY)
    }
}

impl PlanningRules {
    /// Rules from their written forms.
    pub fn from_texts(texts: &[String]) -> Result<PlanningRules, String> {
        if texts.len() > MAX_RULES {
            return Err(format!("at most {MAX_RULES} rules, {} given", texts.len()));
        }
        let mut r = PlanningRules::default();
        for (i, t) in texts.iter().enumerate() {
            r.rules[i] = Some(t.parse()?);
        }
        Ok(r)
    }

    /// The rules.
    pub fn iter(&self) -> impl Iterator<Item = &Rule> {
        self.rules.iter().flatten()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }

    /// Whether there is a `user-cap` rule.
    pub fn has_user_caps(&self) -> bool {
        self.iter().any(|r| r.kind == RuleKind::UserCap)
    }

    /// The processors one user may hold at instant `t` (UTC) on a machine of `capacity`: the
    /// lowest threshold of the `user-cap` rules whose window holds `t`, if any.
    pub fn user_cap_at(&self, t: Time, capacity: u32) -> Option<i64> {
        let local = t + i64::from(self.utc_offset_h) * 3600;
        self.iter()
            .filter(|r| r.kind == RuleKind::UserCap && r.window_at(local).is_some())
            .map(|r| r.procs(capacity))
            .min()
    }

    /// The first instant after `t` (UTC) at which a `user-cap` window opens or closes.
    pub fn next_user_cap_edge(&self, t: Time) -> Option<Time> {
        let offset = i64::from(self.utc_offset_h) * 3600;
        let local = t + offset;
        self.iter()
            .filter(|r| r.kind == RuleKind::UserCap)
            .flat_map(|r| {
                [
                    r.window_at(local).map(|(_, end)| end),
                    Some(r.next_opening(local)),
                ]
            })
            .flatten()
            .filter(|&e| e > local)
            .min()
            .map(|e| e - offset)
    }

    /// The earliest instant at or after `t` at which a job of `procs` processors for `estimate`
    /// may start on a machine of `capacity` under every rule. Windows recur weekly, so the answer
    /// lies within a few weeks unless the rules exclude every instant (then `None`).
    pub fn next_start(
        &self,
        t: Time,
        procs: u32,
        estimate: Duration,
        capacity: u32,
    ) -> Option<Time> {
        let offset = i64::from(self.utc_offset_h) * 3600;
        let mut local = t + offset;
        let concerned: Vec<&Rule> = self
            .iter()
            .filter(|r| r.concerns(procs, estimate, capacity))
            .collect();
        // Every round either accepts `local` or moves it to a window's edge; the edges of the
        // concerned rules within three weeks bound the rounds.
        for _ in 0..(concerned.len() * 2 * 7 * 3 + 2) {
            let capped = concerned
                .iter()
                .filter(|r| r.kind == RuleKind::WidthCap)
                .find_map(|r| r.window_at(local).map(|(_, end)| end));
            // The windows of the `-only` rules of one kind are alternatives: inside any of them.
            let outside = [RuleKind::WideOnly, RuleKind::LongOnly]
                .into_iter()
                .find_map(|kind| {
                    let rs: Vec<&&Rule> = concerned.iter().filter(|r| r.kind == kind).collect();
                    let out = !rs.is_empty() && rs.iter().all(|r| r.window_at(local).is_none());
                    out.then(|| rs.iter().map(|r| r.next_opening(local)).min())
                        .flatten()
                });
            let moved = capped.or(outside);
            match moved {
                None => return Some(local - offset),
                Some(m) => local = m,
            }
        }
        None
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Rules parsed from their texts.
    pub(crate) fn rules(texts: &[&str]) -> PlanningRules {
        PlanningRules::from_texts(&texts.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    /// Monday 2026-11-23 00:00 UTC.
    pub(crate) const MON: Time = 1_795_392_000;

    #[test]
    fn the_week_starts_on_monday() {
        // 2026-11-23 is a Monday.
        let r: Rule = "long-only 0 mon 00-24".parse().unwrap();
        assert!(r.window_at(MON).is_some());
        assert!(r.window_at(MON - 1).is_none());
        assert!(r.window_at(MON + DAY).is_none());
    }

    /// The thesis' three examples on a 100-processor machine, from Monday 10:00.
    #[test]
    fn the_thesis_examples() {
        let r = rules(&[
            "width-cap 75% mon-fri 06-20",
            "wide-only 67% mon-fri 20-06",
            "wide-only 67% sat-sun 00-24",
            "long-only 172800 sat-sun 00-24",
        ]);
        let ten = MON + 10 * 3600;
        // Narrow and short: at once.
        assert_eq!(r.next_start(ten, 50, 3600, 100), Some(ten));
        // 70 processors (not above 75 %, above 67 %): at night, 20:00.
        assert_eq!(r.next_start(ten, 70, 3600, 100), Some(MON + 20 * 3600));
        // 80 processors: outside prime time and at night: 20:00 too.
        assert_eq!(r.next_start(ten, 80, 3600, 100), Some(MON + 20 * 3600));
        // Three days long: Saturday 00:00.
        assert_eq!(r.next_start(ten, 10, 3 * DAY, 100), Some(MON + 5 * DAY));
        // At Saturday noon a wide long job may start at once.
        let sat = MON + 5 * DAY + 12 * 3600;
        assert_eq!(r.next_start(sat, 90, 3 * DAY, 100), Some(sat));
        // Friday 23:00 lies in the night window that began at 20:00.
        let fri = MON + 4 * DAY + 23 * 3600;
        assert_eq!(r.next_start(fri, 70, 60, 100), Some(fri));
        // Early Tuesday (03:00) is still Monday's night.
        assert_eq!(
            r.next_start(MON + DAY + 3 * 3600, 70, 60, 100),
            Some(MON + DAY + 3 * 3600)
        );
    }

    #[test]
    fn an_offset_moves_the_windows() {
        let mut r = rules(&["width-cap 10 mon-fri 08-18"]);
        r.utc_offset_h = 2;
        // 07:00 UTC is 09:00 local: prime time, until 18:00 local = 16:00 UTC.
        assert_eq!(
            r.next_start(MON + 7 * 3600, 20, 60, 100),
            Some(MON + 16 * 3600)
        );
    }

    #[test]
    fn rules_that_exclude_every_instant_give_none() {
        let r = rules(&["width-cap 1 all 00-24", "wide-only 1 all 00-24"]);
        assert_eq!(r.next_start(MON, 2, 60, 10), None);
    }

    #[test]
    fn written_forms_round_trip_and_bad_ones_are_named() {
        let r: Rule = "wide-only 67% sat,sun 22-06".parse().unwrap();
        assert_eq!(r.to_string(), "wide-only 67% sat,sun 22-06");
        for (bad, why) in [
            ("width-cap 75%", "KIND THRESHOLD DAYS HOURS"),
            ("narrow 3 mon 01-02", "unknown kind `narrow`"),
            ("width-cap 175% mon 01-02", "not a percentage"),
            ("long-only 5% mon 01-02", "not a count"),
            ("width-cap 3 moon 01-02", "unknown day `moon`"),
            ("width-cap 3 mon 01-25", "not a window of hours"),
        ] {
            let e = bad.parse::<Rule>().unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
        let seven: Vec<String> = (0..7).map(|_| "width-cap 3 mon 01-02".into()).collect();
        assert!(PlanningRules::from_texts(&seven).is_err());
    }

    #[test]
    fn user_caps_parse_and_give_their_cap_inside_their_windows() {
        let r: Rule = "user-cap 50% mon-fri 06-20".parse().unwrap();
        assert_eq!(r.kind, RuleKind::UserCap);
        assert_eq!(r.threshold, Threshold::Pct(50));
        assert_eq!(r.to_string(), "user-cap 50% mon,tue,wed,thu,fri 06-20");
        let r: Rule = "user-cap 32 all 00-24".parse().unwrap();
        assert_eq!((r.threshold, r.days), (Threshold::Abs(32), 0x7f));
        for (bad, why) in [
            ("user-cap 150% mon 06-20", "`150%` is not a percentage"),
            ("user-cap -3 mon 06-20", "`-3` is not a count"),
            ("user-cap 50% mon", "KIND THRESHOLD DAYS HOURS"),
            ("user-cap 50% mon 20-20", "not a window of hours"),
            (
                "usercap 50% mon 06-20",
                "(width-cap, wide-only, long-only, user-cap)",
            ),
        ] {
            let e = bad.parse::<Rule>().unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
        let mut r = rules(&["user-cap 50% mon-fri 06-20", "user-cap 10 mon 12-14"]);
        // A cap is no rule on start instants.
        assert_eq!(
            r.next_start(MON + 7 * 3600, 90, 60, 100),
            Some(MON + 7 * 3600)
        );
        assert!(r.has_user_caps());
        assert_eq!(r.user_cap_at(MON + 5 * 3600, 100), None);
        assert_eq!(r.user_cap_at(MON + 6 * 3600, 101), Some(50));
        // The lower of two caps whose windows overlap.
        assert_eq!(r.user_cap_at(MON + 13 * 3600, 100), Some(10));
        assert_eq!(r.user_cap_at(MON + 5 * DAY + 10 * 3600, 100), None);
        assert_eq!(r.next_user_cap_edge(MON), Some(MON + 6 * 3600));
        assert_eq!(r.next_user_cap_edge(MON + 6 * 3600), Some(MON + 12 * 3600));
        assert_eq!(r.next_user_cap_edge(MON + 14 * 3600), Some(MON + 20 * 3600));
        // Friday 20:00: next Monday 06:00.
        assert_eq!(
            r.next_user_cap_edge(MON + 4 * DAY + 20 * 3600),
            Some(MON + 7 * DAY + 6 * 3600)
        );
        r.utc_offset_h = 1;
        assert_eq!(r.user_cap_at(MON + 5 * 3600, 100), Some(50));
        assert_eq!(r.next_user_cap_edge(MON), Some(MON + 5 * 3600));
        assert!(!rules(&["width-cap 3 mon 01-02"]).has_user_caps());
    }
}
