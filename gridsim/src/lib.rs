//! gridsim: the discrete-event simulator of gridsched. It replays workload traces and synthetic
//! streams through the same scheduling code ([`gridsched_core::policy`]) the live services run.
//!
//! * [`events`]: the event queue and the reference event order.
//! * [`engine`]: the simulation loop, validating every start and accumulating metrics.
//! * [`experiment`]: the published experiments (parallel runs, CSV, SVG plots, reports).
//! * [`grid`]: the multi-site grid study (local / job sharing / multi-site, machine configurations).
//! * [`platform`]: the platform engine for heterogeneous clusters with licences, one local policy
//!   per cluster and a meta-scheduler (the seed's experiments).

pub mod chaos;
pub mod engine;
pub mod events;
pub mod experiment;
pub mod grid;
pub mod platform;

pub use engine::{
    Batching, EngineOptions, Hooks, ReservationRequest, RunReport, RunStats, SimError, simulate,
};
