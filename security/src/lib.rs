//! Security of the gridsched services (`docs/security.md`): TLS on every gRPC link and on the HTTP
//! endpoints, with certificates read from PEM files ([`tls`]); a development certificate set
//! generated without any external tool ([`devcerts`]); bearer tokens, sent by clients
//! ([`token::Bearer`]) and checked by servers ([`token::Tokens`], [`token::SharedSecret`]);
//! the leading meta-scheduler's epoch on its calls to the sites, so that a deposed leader is
//! refused there ([`fence`]).
//!
//! Readings adopted where the issue leaves room: a user's token maps to a user name and an admin
//! flag; the meta-scheduler authenticates its clients with those tokens; a local scheduler
//! accepts the meta-scheduler and its agents by two separate shared secrets (an agent's secret
//! cannot enqueue work, the meta-scheduler's cannot register a machine), so that a stranger can
//! neither register a machine nor impersonate the meta-scheduler; with TLS the peers' certificates
//! are checked against the grid's CA, so a stranger cannot impersonate a local scheduler either.

pub mod devcerts;
pub mod fence;
pub mod tls;
pub mod token;

pub use fence::{Fence, Fenced};
pub use tls::{TlsConfig, TlsError};
pub use token::{Bearer, Caller, SharedSecret, Tokens};
