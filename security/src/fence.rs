//! Fencing tokens on the links from the meta-scheduler to the local schedulers: the leading
//! replica sends the epoch of its lease with every call (`gridsched-epoch` metadata, added by
//! [`Fenced`]), and a local scheduler refuses a call whose epoch is older than the newest it has
//! seen ([`Fence`]). It is the second guard behind the store's fence: a leader frozen past its
//! lease, thawed, can neither write its store nor, once its successor has called the site, send
//! work, cancel, reserve or grant a start there. Leases with epochs after Gray and Cheriton,
//! "Leases: an efficient fault-tolerant mechanism for distributed file cache consistency" (SOSP
//! 1989); the epoch carried by each request is the fencing token of Burrows, "The Chubby lock
//! service" (OSDI 2006, "sequencers").
//!
//! A call without an epoch (a meta-scheduler whose store has no lease) passes: there is only one.

use crate::token::{Bearer, TokenError};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tonic::Status;
use tonic::metadata::{AsciiMetadataValue, MetadataMap};

/// The metadata key carrying the caller's epoch.
pub const EPOCH_KEY: &str = "gridsched-epoch";

/// A client interceptor: the meta-scheduler's credentials ([`Bearer`]) and, when it leads with a
/// lease, its epoch.
#[derive(Clone, Debug, Default)]
pub struct Fenced {
    bearer: Bearer,
    epoch: Option<AsciiMetadataValue>,
}

impl Fenced {
    /// The interceptor sending `token` and `epoch` (0: no lease, nothing sent).
    pub fn new(token: Option<&str>, epoch: u64) -> Result<Fenced, TokenError> {
        Ok(Fenced {
            bearer: Bearer::new(token)?,
            epoch: (epoch > 0).then(|| AsciiMetadataValue::from(epoch)),
        })
    }
}

impl tonic::service::Interceptor for Fenced {
    fn call(&mut self, req: tonic::Request<()>) -> Result<tonic::Request<()>, Status> {
        let mut req = self.bearer.call(req)?;
        if let Some(e) = &self.epoch {
            req.metadata_mut().insert(EPOCH_KEY, e.clone());
        }
        Ok(req)
    }
}

/// A local scheduler's side: the newest epoch a meta-scheduler has called with (shared by the
/// clones of one service).
#[derive(Clone, Debug, Default)]
pub struct Fence(Arc<AtomicU64>);

impl Fence {
    /// A fence that has already seen `epoch` (0: none), as a restarted site stored it.
    pub fn starting_at(epoch: u64) -> Fence {
        Fence(Arc::new(AtomicU64::new(epoch)))
    }

    /// Admits a call: its epoch (`None`: it sent none), or UNAVAILABLE when a newer epoch has
    /// called (the caller was deposed), or INVALID_ARGUMENT for an epoch that is not a number.
    pub fn admit(&self, md: &MetadataMap) -> Result<Option<u64>, Status> {
        let Some(v) = md.get(EPOCH_KEY) else {
            return Ok(None);
        };
        let epoch: u64 = v
            .to_str()
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| {
                Status::invalid_argument(format!("`{EPOCH_KEY}` is not a whole number"))
            })?;
        let newest = self.0.fetch_max(epoch, Ordering::SeqCst);
        if epoch < newest {
            return Err(deposed(epoch, newest));
        }
        Ok(Some(epoch))
    }

    /// Whether a caller admitted with `epoch` still leads: no newer epoch has called since.
    pub fn holds(&self, epoch: Option<u64>) -> bool {
        epoch.is_none_or(|e| e >= self.0.load(Ordering::SeqCst))
    }

    /// The newest epoch seen (0: none).
    pub fn newest(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// The refusal of a call from a deposed leader.
fn deposed(epoch: u64, newest: u64) -> Status {
    Status::unavailable(format!(
        "epoch {epoch} is deposed: the meta-scheduler of epoch {newest} leads this grid now"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::service::Interceptor;

    fn sent(token: Option<&str>, epoch: u64) -> MetadataMap {
        let mut f = Fenced::new(token, epoch).unwrap();
        f.call(tonic::Request::new(())).unwrap().metadata().clone()
    }

    #[test]
    fn an_older_epoch_is_refused_once_a_newer_one_has_called() {
        let fence = Fence::default();
        assert_eq!(fence.admit(&sent(None, 0)).unwrap(), None);
        assert_eq!(fence.admit(&sent(None, 3)).unwrap(), Some(3));
        assert_eq!(fence.admit(&sent(None, 3)).unwrap(), Some(3));
        assert!(fence.holds(Some(3)));
        assert_eq!(fence.admit(&sent(None, 4)).unwrap(), Some(4));
        // Epoch 3 was admitted before; it no longer holds, and its next call is refused.
        assert!(!fence.holds(Some(3)) && fence.holds(Some(4)) && fence.holds(None));
        let e = fence.admit(&sent(None, 3)).unwrap_err();
        assert_eq!(e.code(), tonic::Code::Unavailable);
        assert!(
            e.message().contains("epoch 3 is deposed") && e.message().contains("epoch 4"),
            "{e:?}"
        );
        assert_eq!(fence.newest(), 4);
        // A caller without an epoch has no lease to lose.
        assert_eq!(fence.admit(&sent(None, 0)).unwrap(), None);
    }

    #[test]
    fn the_token_and_the_epoch_travel_together_and_a_bad_epoch_is_named() {
        let md = sent(Some("s3cret"), 7);
        assert_eq!(md.get("authorization").unwrap(), "Bearer s3cret");
        assert_eq!(md.get(EPOCH_KEY).unwrap(), "7");
        assert!(sent(Some("s3cret"), 0).get(EPOCH_KEY).is_none());
        let mut md = MetadataMap::new();
        md.insert(EPOCH_KEY, "seven".parse().unwrap());
        let e = Fence::default().admit(&md).unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument);
        assert!(e.message().contains(EPOCH_KEY), "{e:?}");
    }
}
