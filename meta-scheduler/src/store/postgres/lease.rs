//! The replicas' lease in PostgreSQL: one row (`gridsched_lease`, name `meta`) naming the
//! replica that leads, the address its clients reach it at, its epoch and when its lease runs
//! out, by the database's clock. Taking it is one statement that succeeds only when the lease is
//! free, run out or the taker's own, and gives the next epoch; renewing succeeds only for the
//! epoch that holds it. The epoch is the fencing token the writes check ([`super::fenced`]).

use super::Link;
use crate::store::{Leader, Leadership, StoreError};
use std::time::Duration;

/// The lease, over a connection of its own.
#[derive(Debug)]
pub(super) struct Lease {
    link: Link,
}

impl Lease {
    pub(super) fn new(link: Link) -> Lease {
        Lease { link }
    }
}

impl Leadership for Lease {
    fn try_lead(
        &self,
        holder: &str,
        address: &str,
        ttl_ms: u64,
    ) -> Result<Option<u64>, StoreError> {
        let (holder, address, ttl) = (holder.to_owned(), address.to_owned(), ttl_ms as f64);
        self.link.call(move |c| {
            Ok(c.query_opt(
                "INSERT INTO gridsched_lease AS l (name, holder, address, epoch, expires) \
                 VALUES ('meta', $1, $2, 1, now() + $3 * interval '1 millisecond') \
                 ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, \
                 address = EXCLUDED.address, epoch = l.epoch + 1, expires = EXCLUDED.expires \
                 WHERE l.expires < now() OR l.holder = EXCLUDED.holder \
                 RETURNING epoch",
                &[&holder, &address, &ttl],
            )?
            .map(|r| r.get::<_, i64>(0) as u64))
        })
    }

    fn renew(&self, epoch: u64, ttl_ms: u64, within: Duration) -> Result<bool, StoreError> {
        let ttl = ttl_ms as f64;
        self.link.call_within(
            move |c| {
                Ok(c.execute(
                    "UPDATE gridsched_lease SET expires = now() + $2 * interval '1 millisecond' \
                     WHERE name = 'meta' AND epoch = $1",
                    &[&(epoch as i64), &ttl],
                )? == 1)
            },
            Some(within),
        )
    }

    fn release(&self, epoch: u64) -> Result<(), StoreError> {
        self.link.call(move |c| {
            c.execute(
                "UPDATE gridsched_lease SET expires = now() - interval '1 millisecond' \
                 WHERE name = 'meta' AND epoch = $1",
                &[&(epoch as i64)],
            )?;
            Ok(())
        })
    }

    fn leader(&self) -> Result<Option<Leader>, StoreError> {
        self.link.call(|c| {
            Ok(c.query_opt(
                "SELECT holder, address, epoch, expires < now() FROM gridsched_lease \
                 WHERE name = 'meta'",
                &[],
            )?
            .map(|r| Leader {
                holder: r.get(0),
                address: r.get(1),
                epoch: r.get::<_, i64>(2) as u64,
                expired: r.get(3),
            }))
        })
    }
}
