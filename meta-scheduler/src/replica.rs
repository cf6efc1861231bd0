//! Replicas of the meta-scheduler over one shared store (PostgreSQL): one leads, the others
//! follow, ready to take over. Leadership is a lease (Gray and Cheriton, "Leases: an efficient
//! fault-tolerant mechanism for distributed file cache consistency", SOSP 1989) with an epoch
//! that fences the store's writes: the thesis' single meta-scheduler (D3) made a failover unit.
//!
//! A follower serves the API as UNAVAILABLE ([`crate::gate`]) and asks for the lease every
//! `poll_ms`; it gets it once the leader's has run out (by the database's clock: `lease_ms` after
//! the leader's last renewal) or was let go. It then fences the store with its epoch, loads the
//! open jobs and starts leading: the API, the links to the local schedulers (which follow it:
//! the links are its calls), the HTTP endpoint. A leader renews every `renew_ms`, on a thread of
//! its own. It stops leading, and the process ends ([`Deposed`]), when a renewal finds another
//! epoch, or when it has not renewed for `lease_ms` less a margin — before its lease can have run
//! out in the database, so a follower that takes over never overlaps with a leader that still
//! acts; and were it to act, its writes fail (the fence). A replica restarted under the same name takes
//! its lease back at once; a stopping leader lets its lease go.
//!
//! The same code path serves a single meta-scheduler: with the embedded store (nothing to share)
//! there is no lease and it leads at once.

use crate::config::MetaConfig;
use crate::gate::Front;
use crate::service::MetaService;
use crate::store::{Leadership, Store};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use crate::config::ReplicaConfig;

/// Why a leader stopped leading: the process should end (its memory may be ahead of the store)
/// and its supervisor start it again, as a follower.
#[derive(Debug, thiserror::Error)]
#[error("deposed: {0}")]
pub struct Deposed(pub String);

/// This host's name (for the default address of a replica listening on every interface).
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// The address clients reach a replica bound to `bound` at.
fn advertised(cfg: &MetaConfig, bound: std::net::SocketAddr) -> String {
    if let Some(a) = &cfg.replica.advertise {
        return a.clone();
    }
    let scheme = if cfg.tls.serves_tls() {
        "https"
    } else {
        "http"
    };
    let host = if bound.ip().is_unspecified() {
        host_name()
    } else {
        bound.ip().to_string()
    };
    format!("{scheme}://{host}:{}", bound.port())
}

/// Runs one blocking call of the lease off the runtime's workers.
async fn blocking<R: Send + 'static>(
    f: impl FnOnce() -> Result<R, crate::store::StoreError> + Send + 'static,
) -> Result<R, String> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    }
}

/// Runs the meta-scheduler of `cfg` on `listener` until `shutdown` resolves: at once as the
/// leader for a store with no lease, else as a replica that follows until it leads. When it
/// loses the lead it calls `on_deposed` at once, from the lease's thread (the binary ends the
/// process there: its runtime may be stuck on a store cut off), and ends with [`Deposed`].
pub async fn run(
    cfg: &MetaConfig,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send,
    on_deposed: impl Fn(&Deposed) + Send + Sync + 'static,
) -> anyhow::Result<()> {
    let mut cfg = cfg.clone();
    cfg.complete();
    let store = {
        let c = cfg.clone();
        tokio::task::spawn_blocking(move || Store::open(&c.state_dir, &c.store)).await??
    };
    let Some(lease) = store.leadership()? else {
        let c = cfg.clone();
        let service =
            tokio::task::spawn_blocking(move || MetaService::with_store(&c, store)).await??;
        return crate::serve(service, listener, shutdown).await;
    };
    let address = advertised(&cfg, listener.local_addr()?);
    let name = cfg.replica.name.clone().unwrap_or_else(|| address.clone());
    let front = Arc::new(Front::new(&cfg).await?);
    let (stop_tx, stop) = tokio::sync::oneshot::channel::<()>();
    let server = {
        let front = front.clone();
        tokio::spawn(async move {
            front
                .serve(listener, async move {
                    let _ = stop.await;
                })
                .await
        })
    };
    let role = Role {
        cfg,
        lease,
        name,
        address,
        front,
        on_deposed: Arc::new(on_deposed),
        keeper: Default::default(),
    };
    let mut server = server;
    tokio::select! {
        // Deposed: calls in flight may wait on a store cut off; do not wait for them.
        r = role.lead(store) => r?,
        () = shutdown => {}
        // The server stopped by itself.
        r = &mut server => return r?,
    }
    if let Some(epoch) = role.epoch() {
        if let Some(k) = role.keeper.get() {
            k.stop();
        }
        let lease = role.lease.clone();
        let _ = blocking(move || lease.release(epoch)).await;
        tracing::info!(epoch, "lease let go");
    }
    let _ = stop_tx.send(());
    server.await?
}

/// One replica's part: following, then leading.
struct Role {
    cfg: MetaConfig,
    lease: Arc<dyn Leadership>,
    name: String,
    address: String,
    front: Arc<Front>,
    on_deposed: Arc<dyn Fn(&Deposed) + Send + Sync>,
    keeper: std::sync::OnceLock<Keeper>,
}

impl Role {
    /// The epoch it leads with, if it leads.
    fn epoch(&self) -> Option<u64> {
        self.front.gate().leading().map(MetaService::epoch)
    }

    /// Follows until it gets the lease, then leads until deposed (never returns otherwise).
    async fn lead(&self, store: Store) -> anyhow::Result<()> {
        let r = &self.cfg.replica;
        let ttl = r.lease_ms;
        tracing::info!(name = %self.name, address = %self.address, "following: waiting for the lease");
        let (epoch, asked) = loop {
            let (lease, name, address) =
                (self.lease.clone(), self.name.clone(), self.address.clone());
            let asked = Instant::now();
            match blocking(move || lease.try_lead(&name, &address, ttl)).await {
                Ok(Some(epoch)) => break (epoch, asked),
                Ok(None) => {
                    let lease = self.lease.clone();
                    if let Ok(seen) = blocking(move || lease.leader()).await {
                        self.front.gate().saw(seen);
                    }
                }
                Err(e) => tracing::warn!(error = %e, "cannot ask for the lease"),
            }
            tokio::time::sleep(Duration::from_millis(r.poll_ms)).await;
        };
        store.fence(epoch);
        let c = self.cfg.clone();
        let service =
            tokio::task::spawn_blocking(move || MetaService::with_store(&c, store)).await??;
        let jobs = service.in_memory().map(|(j, _)| j).unwrap_or(0);
        let (lost_tx, lost_rx) = tokio::sync::oneshot::channel();
        let on_deposed = self.on_deposed.clone();
        let keeper = keep(self.lease.clone(), epoch, r, asked, move |d| {
            on_deposed(&d);
            let _ = lost_tx.send(d);
        })?;
        let _ = self.keeper.set(keeper);
        self.front.lead(service).await?;
        tracing::info!(
            epoch,
            jobs,
            load_ms = asked.elapsed().as_millis() as u64,
            "leading"
        );
        match lost_rx.await {
            Ok(d) => Err(d.into()),
            Err(_) => Err(Deposed(format!("epoch {epoch}: the lease's keeper stopped")).into()),
        }
    }
}

/// Keeps the lease of `epoch`, taken at `taken`, on a thread of its own (the runtime's workers
/// may all be waiting on a store cut off: they must not delay this): renews it every `renew_ms`
/// and, when a renewal finds another epoch or none has succeeded for `lease_ms` less a margin,
/// calls `lost` and ends. The lease in the database runs out `lease_ms` after the last renewal
/// the database applied, which is after the moment this thread sent it: it stops first.
fn keep(
    lease: Arc<dyn Leadership>,
    epoch: u64,
    r: &ReplicaConfig,
    taken: Instant,
    lost: impl FnOnce(Deposed) + Send + 'static,
) -> std::io::Result<Keeper> {
    let (ttl, every, ms) = (
        Duration::from_millis(r.lease_ms),
        Duration::from_millis(r.renew_ms),
        r.lease_ms,
    );
    // Stop acting this long before the lease can run out in the database.
    let margin = ttl / 10;
    let keeper = Keeper::default();
    let stopped = keeper.stopped.clone();
    std::thread::Builder::new()
        .name("lease".into())
        .spawn(move || {
            let (mut renewed, mut next) = (taken, taken + every);
            let why = loop {
                let deadline = renewed + ttl - margin;
                // A renewal that failed late must not be followed by a whole period's sleep.
                std::thread::sleep(next.min(deadline).saturating_duration_since(Instant::now()));
                let Ok(stopped) = stopped.lock() else { return };
                if *stopped {
                    return;
                }
                let sent = Instant::now();
                if sent >= deadline {
                    break format!("epoch {epoch} could not renew its lease for {ms} ms");
                }
                next = sent + every;
                match lease.renew(epoch, ms, deadline - sent) {
                    Ok(true) => renewed = sent,
                    Ok(false) => break format!("epoch {epoch}: another replica holds the lease"),
                    Err(e) => tracing::warn!(epoch, error = %e, "cannot renew the lease"),
                }
            };
            lost(Deposed(why));
        })?;
    Ok(keeper)
}

/// The handle of the lease's keeper.
#[derive(Debug, Default)]
struct Keeper {
    /// Set once the replica stops; held while a renewal is under way.
    stopped: Arc<std::sync::Mutex<bool>>,
}

impl Keeper {
    /// Stops renewing, waiting for a renewal under way: no renewal follows this.
    fn stop(&self) {
        if let Ok(mut s) = self.stopped.lock() {
            *s = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::MetaConfig;

    /// The lease's times are checked at the door, naming the key; the defaults pass.
    #[test]
    fn lease_times_are_checked_naming_the_key() {
        let cfg = MetaConfig::from_toml("").unwrap();
        assert_eq!(
            (
                cfg.replica.lease_ms,
                cfg.replica.renew_ms,
                cfg.replica.poll_ms
            ),
            (3000, 1000, 500)
        );
        let e = MetaConfig::from_toml("[replica]\nlease_ms = 3000\nrenew_ms = 2000\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("replica.renew_ms") && e.contains("more than half"),
            "{e}"
        );
        let e = MetaConfig::from_toml("[replica]\npoll_ms = 0\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("replica") && e.contains("positive"), "{e}");
        let e = MetaConfig::from_toml("[replica]\nlease = 3\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("lease"), "{e}");
    }
}
