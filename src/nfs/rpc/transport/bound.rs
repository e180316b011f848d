//! The transport's side of EFS's partitions ([`crate::nfs::rpc::partition`] holds the
//! rules): a bound client opens one connection, binds each new one before its first
//! call, replaces lost ones on the same partition, and starts a new set (a new
//! generation, which the NFSv4.1 session checks) when none is left there.

use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use nfs3_types::xdr_codec::{Pack, Unpack};
use tokio::io::{AsyncRead, AsyncWrite};

use super::{Conn, RpcClient, RpcError, live_conn, next_xid};
use crate::nfs::rpc::partition::{Binder, MAX_PROBES, Verdict};
use crate::nfs::rpc::shape::Shape;
use crate::nfs::rpc::wire::decode_reply;

impl RpcClient {
    /// The same client, binding its connections to one EFS partition (see
    /// [`partition`](crate::nfs::rpc::partition)): it opens one connection, then only
    /// as many as EFS binds to the same partition.
    pub fn bound(mut self, binder: Binder) -> RpcClient {
        self.binder = Some(binder);
        self
    }

    /// The EFS binder, if this client binds its connections.
    pub fn binder(&self) -> Option<&Binder> {
        self.binder.as_ref()
    }

    /// Connections in use: all slots, or those bound to the EFS partition.
    pub(super) fn in_use(&self) -> usize {
        let n = self.slots.len();
        self.binder.as_ref().map_or(n, |b| b.active(n))
    }

    /// [`RpcClient::connect_all`] for EFS: the first connection decides how many more
    /// EFS allows; those it refuses leave the run with fewer, not failed.
    pub(super) async fn connect_bound(&self, b: &Binder) -> Result<(), RpcError> {
        self.conn_in(&self.slots[0]).await?;
        let want = b.target(self.slots.len());
        for (i, slot) in self.slots.iter().enumerate().take(want).skip(1) {
            if self.conn_in(slot).await.is_err() {
                break;
            }
            b.set_active(i + 1);
        }
        Ok(())
    }

    /// [`RpcClient::call`] on a connection of set `generation` only: once EFS moved the
    /// client to a new set, the call fails unsent (`Disconnected`, `sent: false`), so
    /// that state of the old partition (an NFSv4.1 session) never reaches the new one.
    pub async fn call_within<A: Pack, R: Unpack + Shape>(
        &self,
        generation: u64,
        proc: u32,
        args: &A,
    ) -> Result<R, RpcError> {
        if let Some(n) = self.sent.get(proc as usize) {
            n.fetch_add(1, Ordering::Relaxed);
        }
        let xid = next_xid();
        let record = self.encode(xid, proc, args)?;
        let bytes = self.call_record(xid, record, Some(generation)).await?;
        decode_reply(self.ep.addr, xid, &bytes)
    }

    /// Which set of connections is current: 0, or for EFS the binder's incarnation,
    /// one more each time every connection was lost and none could be bound to the
    /// partition again.
    pub fn generation(&self) -> u64 {
        self.binder.as_ref().map_or(0, Binder::incarnation)
    }

    /// Whether no connection is open (one being opened counts as none).
    pub(super) fn none_live(&self) -> bool {
        !self.slots.iter().any(|slot| live_conn(slot).is_some())
    }

    /// Reopens slot `first` if its connection was lost, else opens one more when the
    /// set has fewer than EFS allows (after a restart it starts again from one).
    pub(super) async fn keep_bound(&self, b: &Binder, first: usize) {
        if lost_conn(&self.slots[first]) {
            let _ = self.conn_in(&self.slots[first]).await;
            return;
        }
        let next = self.in_use();
        if next < b.target(self.slots.len())
            && lost_conn(&self.slots[next])
            && self.conn_in(&self.slots[next]).await.is_ok()
        {
            b.set_active(next + 1);
        }
    }

    /// `conn`, marked as one of the current set.
    pub(super) fn stamped(&self, mut conn: Conn) -> Conn {
        conn.generation = self.generation();
        conn
    }

    /// Binds a fresh connection to EFS's partition (a client without a binder keeps
    /// every connection): `false` when it is to be closed and another one opened.
    pub(super) async fn bind<S: AsyncRead + AsyncWrite + Unpin>(
        &self,
        s: &mut S,
        probes: u32,
        first: bool,
    ) -> Result<bool, RpcError> {
        let Some(b) = &self.binder else {
            return Ok(true);
        };
        let addr = self.ep.addr;
        let refused = |why: String| RpcError::Connect {
            addr,
            source: io::Error::new(io::ErrorKind::ConnectionRefused, why),
        };
        let generation = b.incarnation();
        let verdict = b.bind(s, next_xid(), addr, self.ep.timeout).await?;
        let any_live = !self.none_live();
        let why = match verdict {
            Verdict::Use => return Ok(true),
            Verdict::Reopen => return Ok(false),
            // With none left, only the first slot searches (see below).
            Verdict::Again if probes < MAX_PROBES && (first || any_live) => return Ok(false),
            Verdict::Again => {
                format!("EFS bound none of {probes} connections to this client's partition")
            }
            Verdict::Stop(why) => why,
        };
        if any_live {
            b.back_off();
            return Err(refused(why));
        }
        // No connection left on the partition: start again as after a server restart,
        // with a new set whose first slot is bound wherever EFS puts it, and (the
        // caller sees the new generation) a new session.
        if first {
            b.restart(generation);
            return Ok(false);
        }
        Err(refused(why))
    }
}

/// Whether the slot's connection was lost (or never opened), and nobody is opening it.
fn lost_conn(slot: &tokio::sync::Mutex<Option<Arc<Conn>>>) -> bool {
    slot.try_lock().is_ok_and(|g| {
        g.as_ref()
            .is_none_or(|c| c.shared.dead.load(Ordering::SeqCst))
    })
}
