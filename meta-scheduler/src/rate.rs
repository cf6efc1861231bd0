//! The submission rate of each user at the door (`[submit_rate]`): a token bucket per user, so
//! that one user flooding the meta-scheduler with submissions cannot hold back the others'
//! (their submissions wait behind the flood's in the group commit). A job over its owner's rate is
//! refused with RESOURCE_EXHAUSTED saying when to retry; a job array or a workflow counts as one
//! submission.
//!
//! This is the transport's admission, like a connection limit, not a scheduling decision: the
//! grid runner never sees a refused submission, and the simulator has no door to flood. The
//! buckets are given the time (monotonic milliseconds) by the caller, so they are tested without
//! a clock. Spec reading: the two-level design admits every job; the rate and the burst follow
//! the token buckets of HTTP API gateways (and Slurm's `max_rpc_cnt`-style throttling per user).

use serde::Deserialize;
use std::collections::HashMap;
use std::sync::Mutex;

/// The `[submit_rate]` section.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RateConfig {
    /// Jobs a user may submit per second, sustained (0: no limit, the default).
    pub per_user: f64,
    /// Jobs a user may submit at once beyond the rate (a full bucket); at least 1 with a rate.
    pub burst: u32,
}

impl RateConfig {
    /// A rate that cannot be used: its key and why.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if !self.per_user.is_finite() || self.per_user < 0.0 {
            return Err((
                "submit_rate.per_user",
                format!(
                    "{} is not a rate (jobs per second, 0 for none)",
                    self.per_user
                ),
            ));
        }
        if self.per_user > 0.0 && self.burst == 0 {
            return Err(("submit_rate.burst", "at least 1 with a rate".into()));
        }
        Ok(())
    }
}

/// A user's bucket: tokens left when last looked at.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at_ms: u64,
}

/// The buckets of every user who submitted.
#[derive(Debug, Default)]
pub struct Buckets {
    cfg: RateConfig,
    users: Mutex<HashMap<String, Bucket>>,
}

/// A submission over its owner's rate: how long until it would be taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Throttled {
    /// Milliseconds until the bucket holds a token again.
    pub retry_ms: u64,
}

/// Buckets this full are forgotten once there are more users than this.
const FORGET_ABOVE: usize = 10_000;

impl Buckets {
    /// The buckets of a (checked) configuration.
    pub fn new(cfg: RateConfig) -> Buckets {
        Buckets {
            cfg,
            users: Mutex::default(),
        }
    }

    /// Whether the door limits rates at all.
    pub fn on(&self) -> bool {
        self.cfg.per_user > 0.0
    }

    /// Takes one job of `user` at `now_ms`, or says when to retry.
    pub fn take(&self, user: &str, now_ms: u64) -> Result<(), Throttled> {
        if !self.on() {
            return Ok(());
        }
        let (rate, burst) = (self.cfg.per_user, f64::from(self.cfg.burst));
        let mut users = self.users.lock().unwrap_or_else(|p| p.into_inner());
        if users.len() > FORGET_ABOVE {
            // A bucket refilled to its burst is as good as a new one.
            users.retain(|_, b| {
                b.tokens + rate * now_ms.saturating_sub(b.at_ms) as f64 / 1e3 < burst
            });
        }
        let b = users.entry(user.to_owned()).or_insert(Bucket {
            tokens: burst,
            at_ms: now_ms,
        });
        let refilled = rate * now_ms.saturating_sub(b.at_ms) as f64 / 1e3;
        b.tokens = (b.tokens + refilled).min(burst);
        b.at_ms = b.at_ms.max(now_ms);
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            Ok(())
        } else {
            Err(Throttled {
                retry_ms: ((1.0 - b.tokens) / rate * 1e3).ceil() as u64,
            })
        }
    }

    /// The message of a refusal of `user`'s job.
    pub fn refusal(&self, user: &str, t: Throttled) -> String {
        format!(
            "user `{user}` submits faster than the grid's limit of {} jobs per second (burst {}): \
             retry in {:.1} s",
            self.cfg.per_user,
            self.cfg.burst,
            t.retry_ms as f64 / 1e3
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buckets(per_user: f64, burst: u32) -> Buckets {
        Buckets::new(RateConfig { per_user, burst })
    }

    /// At 10 jobs/s with a burst of 3: three at once, the fourth told to wait 100 ms, one more
    /// after each 100 ms; another user is not held by the first.
    #[test]
    fn a_user_gets_the_burst_then_the_rate_and_others_are_not_held() {
        let b = buckets(10.0, 3);
        for _ in 0..3 {
            assert_eq!(b.take("flood", 1_000), Ok(()));
        }
        assert_eq!(b.take("flood", 1_000), Err(Throttled { retry_ms: 100 }));
        assert_eq!(b.take("calm", 1_000), Ok(()));
        assert_eq!(b.take("flood", 1_050), Err(Throttled { retry_ms: 50 }));
        assert_eq!(b.take("flood", 1_100), Ok(()));
        assert_eq!(b.take("flood", 1_100), Err(Throttled { retry_ms: 100 }));
        // A long pause refills to the burst, no further.
        for _ in 0..3 {
            assert_eq!(b.take("flood", 60_000), Ok(()));
        }
        assert!(b.take("flood", 60_000).is_err());
        assert!(
            b.refusal("flood", Throttled { retry_ms: 100 })
                .contains("limit of 10 jobs per second (burst 3): retry in 0.1 s")
        );
    }

    #[test]
    fn no_rate_takes_everything_and_a_bad_rate_is_refused_naming_its_key() {
        let b = buckets(0.0, 0);
        assert!((0..10_000).all(|_| b.take("u", 0).is_ok()));
        assert!(
            RateConfig {
                per_user: -1.0,
                burst: 1
            }
            .check()
            .unwrap_err()
            .0 == "submit_rate.per_user"
        );
        assert!(
            RateConfig {
                per_user: 5.0,
                burst: 0
            }
            .check()
            .unwrap_err()
            .0 == "submit_rate.burst"
        );
        assert!(
            RateConfig {
                per_user: 5.0,
                burst: 10
            }
            .check()
            .is_ok()
        );
    }

    /// Many users: the full buckets are forgotten, the others kept.
    #[test]
    fn full_buckets_are_forgotten_past_many_users() {
        let b = buckets(1.0, 2);
        b.take("busy", 0).unwrap();
        b.take("busy", 0).unwrap();
        for k in 0..=FORGET_ABOVE {
            b.take(&format!("u{k}"), 0).unwrap();
        }
        // At 1 s every other bucket is full again (2 tokens), busy's holds 1.
        b.take("x", 1_000).unwrap();
        assert_eq!(b.users.lock().unwrap().len(), 2);
        assert_eq!(b.take("busy", 1_000), Ok(()));
        assert_eq!(b.take("busy", 1_000), Err(Throttled { retry_ms: 1_000 }));
    }
}
