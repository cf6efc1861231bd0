//! The local end of the StartClaims link (the start-claim protocol of `docs/live-grid.md`, an
//! extension of the MS–LS protocol of spec `two-level-grid-scheduler.md` D3): the requests a
//! site sends the meta-scheduler, while the meta-scheduler keeps the link open.

use gridsched_proto::v1;
use tokio::sync::mpsc;

/// The link, open or not.
#[derive(Debug, Default)]
pub struct ClaimLink {
    tx: Option<mpsc::UnboundedSender<v1::ClaimRequest>>,
}

impl ClaimLink {
    /// The meta-scheduler opened the link (replacing any previous one): its first request asks
    /// again for the claims in `start` and lists the unclaimed `waiting` jobs.
    pub fn open(
        &mut self,
        mut start: Vec<u64>,
        mut waiting: Vec<u64>,
    ) -> mpsc::UnboundedReceiver<v1::ClaimRequest> {
        let (tx, rx) = mpsc::unbounded_channel();
        start.sort_unstable();
        waiting.sort_unstable();
        if !start.is_empty() || !waiting.is_empty() {
            let _ = tx.send(v1::ClaimRequest { start, waiting });
        }
        self.tx = Some(tx);
        rx
    }

    /// Whether the link is open.
    pub fn is_open(&self) -> bool {
        self.tx.is_some()
    }

    /// Asks for the start claims of `start`; false (and the link closed) when it is not open.
    pub fn ask(&mut self, start: Vec<u64>) -> bool {
        if start.is_empty() {
            return self.is_open();
        }
        let sent = self.tx.as_ref().is_some_and(|tx| {
            tx.send(v1::ClaimRequest {
                start,
                waiting: Vec::new(),
            })
            .is_ok()
        });
        if !sent {
            self.tx = None;
        }
        sent
    }

    /// Closes the link (the meta-scheduler opens it again).
    pub fn close(&mut self) {
        self.tx = None;
    }
}
