//! The local scheduler's clock edge, in the service shell beside the gRPC handlers: the one place
//! that reads the clocks. Its loop takes the messages of the gRPC handlers and the 100 ms tick,
//! reads the wall clock (the runner's Unix seconds) and a monotonic clock (agent liveness) once
//! per message, and hands both to the driver's handlers as a [`Now`]; the driver decides from
//! that argument only (its tests run it on a virtual clock).

use crate::driver::{Driver, Msg, Now};
use gridsched_core::Time;
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// The wall clock and the monotonic clock, now.
pub fn now() -> Now {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    let origin = *ORIGIN.get_or_init(Instant::now);
    Now {
        secs: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as Time),
        mono_ms: origin.elapsed().as_millis() as u64,
    }
}

/// The driver for `cfg`, built at the clock's current reading (its stored state recovered).
pub fn driver(cfg: crate::config::Config) -> anyhow::Result<Driver> {
    Driver::new(cfg, now())
}

/// The monotonic stopwatch the metrics time scheduling passes with.
pub fn stopwatch() -> Instant {
    Instant::now()
}

/// Runs `driver` until every sender is dropped.
pub async fn run(mut driver: Driver, mut rx: mpsc::Receiver<Msg>) {
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            m = rx.recv() => match m {
                Some(Msg::Enqueue(r, tx)) => {
                    let now = now();
                    // Group commit: every Enqueue already waiting joins this one.
                    let mut group = vec![(r, tx)];
                    let mut other = None;
                    while group.len() < 1024 {
                        match rx.try_recv() {
                            Ok(Msg::Enqueue(r, tx)) => group.push((r, tx)),
                            Ok(m) => {
                                other = Some(m);
                                break;
                            }
                            Err(_) => break,
                        }
                    }
                    driver.enqueue_group(group, now);
                    if let Some(m) = other {
                        driver.handle(m, now);
                    }
                }
                Some(m) => driver.handle(m, now()),
                None => return,
            },
            _ = tick.tick() => driver.tick(now()),
        }
    }
}
