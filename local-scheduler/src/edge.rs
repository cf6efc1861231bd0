//! The local scheduler's clock edge, in the service shell beside the gRPC handlers: the one place
//! that reads the clocks. Its loop takes the messages of the gRPC handlers (and, at a Slurm-backed
//! site, Slurm's answers) and the 100 ms tick, reads the wall clock (the runner's Unix seconds)
//! and a monotonic clock (agent liveness) once per message, and hands both to the [`Shell`] as a
//! [`Now`]; the native driver and the Slurm-backed site decide from that argument only (their
//! tests run them on a virtual clock).

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

/// What the edge drives: the native [`Driver`] or a Slurm-backed site.
pub trait Shell: Send + 'static {
    /// A group of Enqueue requests that arrived together (one durable commit).
    fn enqueue_group(&mut self, group: Vec<EnqueueMsg>, now: Now);
    /// Any other message.
    fn handle(&mut self, m: Msg, now: Now);
    /// The 100 ms tick.
    fn tick(&mut self, now: Now);
    /// After each message and tick: sends on what the shell decided to send.
    fn after(&mut self) {}
}

pub use crate::journal::Enqueue as EnqueueMsg;

impl Shell for Driver {
    fn enqueue_group(&mut self, group: Vec<EnqueueMsg>, now: Now) {
        Driver::enqueue_group(self, group, now);
    }
    fn handle(&mut self, m: Msg, now: Now) {
        Driver::handle(self, m, now);
    }
    fn tick(&mut self, now: Now) {
        Driver::tick(self, now);
    }
}

/// Runs `driver` until every sender is dropped.
pub async fn run(mut driver: impl Shell, mut rx: mpsc::Receiver<Msg>) {
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            m = rx.recv() => match m {
                Some(Msg::Enqueue(r, tx)) => {
                    let now = now();
                    // Group commit: every Enqueue already waiting joins this one.
                    let mut group = vec![(*r, tx)];
                    let mut other = None;
                    while group.len() < 1024 {
                        match rx.try_recv() {
                            Ok(Msg::Enqueue(r, tx)) => group.push((*r, tx)),
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
        driver.after();
    }
}
