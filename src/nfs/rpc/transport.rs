//! A multiplexed ONC RPC (RFC 5531) client transport over TCP.
//!
//! `nfs3_client`'s `RpcClient::call` takes `&mut self` and waits for each reply before
//! the next call can be written, so one connection carries one call at a time. The
//! whole point of nfsync's NFS path is to keep many calls in flight, so this module
//! keeps, per TCP connection, a writer task fed by a channel and a reader task that
//! matches each reply to its waiting caller by xid (servers answer out of order).
//! Several connections per server (like the kernel's `nconnect`) spread the load, and a
//! semaphore per connection bounds the calls in flight (and with them the memory).
//!
//! `--timeout` is one clock per client (see `liveness`): a server silent, or
//! refusing us, for that long fails every call at once, waiting or new.
//!
//! Every byte from the server is untrusted: record marks are checked against
//! [`MAX_RECORD`](super::MAX_RECORD) before anything is allocated, lengths inside a
//! record against the record ([`super::shape`]), and decoding failures become errors,
//! never panics.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use nfs3_types::rpc::{RPC_VERSION_2, call_body, msg_body, opaque_auth, rpc_msg};
use nfs3_types::xdr_codec::{Pack, Unpack};

use super::error::{Gone, RpcError};
use super::liveness::{Liveness, Waited};
use super::partition::Binder;
use super::shape::Shape;
use super::tls::{HandshakeError, Tls};
use super::wire::decode_reply;
use tokio::sync::OwnedSemaphorePermit;

mod bound;
mod conn;

pub use conn::connect_tcp;
use conn::{Conn, live_conn, remove_waiter, spawn_conn, start};

/// How to reach one RPC program on one server.
#[derive(Clone, Debug)]
pub struct Endpoint {
    /// Server address and port.
    pub addr: SocketAddr,
    /// RPC program number.
    pub prog: u32,
    /// Program version.
    pub vers: u32,
    /// Bind a source port below 1024 (servers with `secure` insist on it).
    pub resvport: bool,
    /// TCP connections to open.
    pub conns: usize,
    /// Calls in flight per connection.
    pub window: usize,
    /// How long to wait for one reply or one connect.
    pub timeout: Duration,
    /// Wrap each connection in TLS (`?tls`).
    pub tls: Option<Tls>,
}

/// Transaction ids are unique per process, never reused for a new call.
static NEXT_XID: AtomicU32 = AtomicU32::new(0);
static XID_SEEDED: AtomicBool = AtomicBool::new(false);

pub(crate) fn next_xid() -> u32 {
    if !XID_SEEDED.swap(true, Ordering::Relaxed) {
        // Seed from time and pid so a restarted client does not repeat a previous
        // run's xids against the server's duplicate request cache.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos() ^ (d.as_secs() as u32).rotate_left(16))
            .unwrap_or(0);
        NEXT_XID.fetch_add(now ^ std::process::id().rotate_left(8), Ordering::Relaxed);
    }
    NEXT_XID.fetch_add(1, Ordering::Relaxed)
}

/// The start of an EFS partition id in hex, enough to tell two apart in a report.
fn hex(bytes: &[u8]) -> String {
    let start: String = bytes.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("{start}…")
}

/// A client for one RPC program on one server, over several multiplexed connections.
pub struct RpcClient {
    ep: Endpoint,
    cred: opaque_auth<'static>,
    slots: Vec<tokio::sync::Mutex<Option<Arc<Conn>>>>,
    next_slot: AtomicUsize,
    live: Arc<Liveness>,
    /// Calls sent, by procedure number (for `NFSYNC_RPC_STATS`).
    sent: [AtomicU64; 32],
    /// Calls whose connection broke after they were sent (see [`RpcClient::lost`]).
    lost: AtomicU64,
    /// EFS: binds every new connection to one partition before its first call.
    binder: Option<Binder>,
}

impl RpcClient {
    /// Creates a client; connections are opened lazily by the first calls.
    pub fn new(ep: Endpoint, cred: opaque_auth<'static>) -> RpcClient {
        let n = ep.conns.max(1);
        RpcClient {
            slots: (0..n).map(|_| tokio::sync::Mutex::new(None)).collect(),
            next_slot: AtomicUsize::new(0),
            live: Arc::new(Liveness::new(ep.timeout)),
            sent: std::array::from_fn(|_| AtomicU64::new(0)),
            lost: AtomicU64::new(0),
            binder: None,
            ep,
            cred,
        }
    }

    /// How many calls can be in flight at once over all connections.
    pub fn capacity(&self) -> usize {
        self.ep.conns.max(1) * self.ep.window.max(1)
    }

    /// The connections, where to and how, in words.
    pub fn describe(&self) -> String {
        let slots = self.ep.conns.max(1);
        let (n, bound) = match &self.binder {
            Some(b) if b.not_efs() => (1, ", not EFS (it does not know EFS's bind call)".into()),
            Some(b) => {
                let n = b.active(slots);
                let on = match b.partition() {
                    Some(p) => format!(", bound to EFS partition {}", hex(&p)),
                    None => ", EFS bound no partition (one connection)".into(),
                };
                (n, on)
            }
            None => (slots, String::new()),
        };
        format!(
            "{n} connection{} to {}{}{bound}",
            if n == 1 { "" } else { "s" },
            self.ep.addr,
            match self.ep.tls.as_ref().map(|t| t.client_cert()) {
                Some(Some(cert)) => format!(" over TLS with {}", cert.describe()),
                Some(None) => " over TLS".into(),
                None => String::new(),
            }
        )
    }

    /// The server address.
    pub fn addr(&self) -> SocketAddr {
        self.ep.addr
    }

    /// Opens every connection now, so a wrong port or refused source port is reported
    /// at connect time rather than by the first file.
    pub async fn connect_all(&self) -> Result<(), RpcError> {
        if let Some(b) = &self.binder {
            return self.connect_bound(b).await;
        }
        for slot in &self.slots {
            self.conn_in(slot).await?;
        }
        Ok(())
    }

    /// How many calls so far were sent on a connection that then broke. Such a call may
    /// still be executed by the server later, after its retry: a caller that must be
    /// last (the mtime SETATTR) checks this to know whether to look again.
    pub fn lost(&self) -> u64 {
        self.lost.load(Ordering::SeqCst)
    }

    /// Sleeps `d` before a call is tried again, but not past the moment the server has
    /// been away for `--timeout` (the next try then fails for good) or was given up.
    pub async fn back_off(&self, d: Duration) {
        self.live.back_off(d).await
    }

    /// The error every call fails with once the server is given up on for `why`.
    fn gone(&self, why: Gone) -> RpcError {
        RpcError::Gone {
            addr: self.ep.addr,
            secs: self.ep.timeout.as_secs(),
            why,
        }
    }

    /// A failed attempt to reach the server: `e`, or [`RpcError::Gone`] once they have
    /// failed for `--timeout`.
    fn failed(&self, why: Gone, e: RpcError) -> RpcError {
        match self.live.failed(why) {
            Some(v) => self.gone(v),
            None => e,
        }
    }

    /// Calls sent so far, by procedure number.
    pub fn sent_counts(&self) -> Vec<(u32, u64)> {
        (0u32..)
            .zip(&self.sent)
            .map(|(p, n)| (p, n.load(Ordering::Relaxed)))
            .filter(|&(_, n)| n > 0)
            .collect()
    }

    /// Calls procedure `proc` with `args` and decodes the result as `R`.
    pub async fn call<A: Pack, R: Unpack + Shape>(
        &self,
        proc: u32,
        args: &A,
    ) -> Result<R, RpcError> {
        if let Some(n) = self.sent.get(proc as usize) {
            n.fetch_add(1, Ordering::Relaxed);
        }
        let xid = next_xid();
        let record = self.encode(xid, proc, args)?;
        let bytes = self.call_record(xid, record, None).await?;
        decode_reply(self.ep.addr, xid, &bytes)
    }

    fn encode<A: Pack>(&self, xid: u32, proc: u32, args: &A) -> Result<Vec<u8>, RpcError> {
        encode_call(xid, (self.ep.prog, self.ep.vers, proc), &self.cred, args).ok_or(
            RpcError::Garbage {
                addr: self.ep.addr,
                what: "could not encode the call".into(),
            },
        )
    }

    /// Sends one encoded record and waits for the reply with the same xid. Failures
    /// say whether the record may have reached the server (`Disconnected::sent`); the
    /// caller retries with a new xid and treats the answer accordingly.
    async fn call_record(
        &self,
        xid: u32,
        record: Vec<u8>,
        generation: Option<u64>,
    ) -> Result<Vec<u8>, RpcError> {
        let addr = self.ep.addr;
        if let Some(why) = self.live.verdict() {
            return Err(self.gone(why));
        }
        let n = self.in_use();
        let first = self.next_slot.fetch_add(1, Ordering::Relaxed) % n;
        // A lost bound connection is replaced, by the call whose turn it is, with one
        // EFS binds to the same partition, unless EFS asked for no more for now.
        if let Some(b) = &self.binder
            && b.may_add()
        {
            self.keep_bound(b, first).await;
        }
        // Strict round-robin would queue a call behind one connection's full window
        // while another has room; take the first live connection with room, and wait
        // on the round-robin one only when every window is full.
        let free = (0..n).find_map(|k| {
            let conn = live_conn(&self.slots[(first + k) % n])?;
            let permit = conn.window.clone().try_acquire_owned().ok()?;
            Some((conn, permit))
        });
        let (conn, permit): (Arc<Conn>, OwnedSemaphorePermit) = match free {
            Some(found) => found,
            None => {
                // A bound client waits on a live connection rather than open one EFS
                // may refuse.
                let first = match &self.binder {
                    Some(_) => (0..n)
                        .map(|k| (first + k) % n)
                        .find(|&i| live_conn(&self.slots[i]).is_some())
                        .unwrap_or(first),
                    None => first,
                };
                let waited = async {
                    let conn = self.conn_in(&self.slots[first]).await?;
                    // No timeout of its own: every call holding a permit ends within
                    // its own bound (or fails with the connection) and releases it.
                    let permit = conn
                        .window
                        .clone()
                        .acquire_owned()
                        .await
                        .map_err(|_| RpcError::Disconnected { addr, sent: false })?;
                    Ok::<_, RpcError>((conn, permit))
                };
                tokio::select! {
                    r = waited => r?,
                    _ = self.live.decided() => {
                        return Err(self.gone(self.live.verdict().unwrap_or(Gone::Silent)));
                    }
                }
            }
        };
        if generation.is_some_and(|g| g != conn.generation) {
            return Err(RpcError::Disconnected { addr, sent: false });
        }
        let record = Arc::new(record);
        let wrx = start(&conn, addr, xid, record.clone())?;
        let shared = &conn.shared;
        let probe = || {
            if let Ok(null) = self.encode(next_xid(), 0, &nfs3_types::xdr_codec::Void) {
                let _ = conn.tx.send(Arc::new(null));
            }
        };
        // A server may drop a request and count on the client sending it again (ganesha
        // does when it runs short of memory for a file handle, as RFC 1813 servers
        // may): after each timeout without its reply, while the server answers, the
        // same record goes again, same xid, as the kernel client retransmits (the
        // server's duplicate request cache answers one it is still working on).
        // NFSv4.1 must not: its sessions' slots replace retransmission on a live
        // connection (RFC 8881 2.9.2).
        let resend = || {
            if self.ep.vers != 4 {
                let _ = conn.tx.send(record.clone());
            }
        };
        let outcome = (self.live)
            .wait_reply(wrx, &shared.heard, &shared.probed, probe, resend)
            .await;
        drop(permit);
        // A connection that stopped answering is not used again: the calls still
        // waiting on it are retried elsewhere or fail the same way.
        let broken = || {
            remove_waiter(&conn.shared, xid);
            conn.shared.kill();
            self.lost.fetch_add(1, Ordering::SeqCst);
        };
        match outcome {
            Waited::Reply(Ok(Ok(bytes))) => Ok(bytes),
            Waited::Reply(_) => {
                self.lost.fetch_add(1, Ordering::SeqCst);
                Err(self.failed(Gone::Refused, RpcError::Disconnected { addr, sent: true }))
            }
            Waited::Gone(why) => {
                remove_waiter(&conn.shared, xid);
                self.lost.fetch_add(1, Ordering::SeqCst);
                Err(self.gone(why))
            }
            Waited::ConnSilent => {
                // The server answers on other connections but not on this one.
                broken();
                Err(RpcError::Disconnected { addr, sent: true })
            }
            Waited::TooSlow => {
                broken();
                Err(RpcError::Timeout {
                    addr,
                    secs: self.ep.timeout.as_secs(),
                })
            }
        }
    }

    /// The live connection of a slot, opening a new one when there is none or it died.
    async fn conn_in(
        &self,
        slot: &tokio::sync::Mutex<Option<Arc<Conn>>>,
    ) -> Result<Arc<Conn>, RpcError> {
        let mut guard = slot.lock().await;
        if let Some(c) = guard.as_ref()
            && !c.shared.dead.load(Ordering::SeqCst)
        {
            return Ok(c.clone());
        }
        *guard = None;
        let mut probes = 0;
        let first = std::ptr::eq(slot, &self.slots[0]);
        if self.binder.is_some() && !first && self.none_live() {
            // The whole set was lost: the first slot alone searches EFS for a partition.
            return Err(RpcError::Disconnected {
                addr: self.ep.addr,
                sent: false,
            });
        }
        let conn = loop {
            probes += 1;
            if let Some(conn) = self.open(probes, first).await? {
                break conn;
            }
        };
        let conn = Arc::new(conn);
        *guard = Some(conn.clone());
        Ok(conn)
    }

    /// Opens a connection (TLS if asked) and binds it when EFS's rules say so; `None`
    /// when EFS wants another connection tried instead (this was try `probes`, for the
    /// `first` slot or another).
    async fn open(&self, probes: u32, first: bool) -> Result<Option<Conn>, RpcError> {
        // While every attempt fails, the next may only take what is left of the
        // timeout they started (with a moment to be refused in).
        let wait = match self.live.failing_until() {
            Some(end) => end
                .saturating_duration_since(std::time::Instant::now())
                .max(Duration::from_millis(100))
                .min(self.ep.timeout),
            None => self.ep.timeout,
        };
        let stream = tokio::time::timeout(wait, connect_tcp(self.ep.addr, self.ep.resvport))
            .await
            .map_err(|_| {
                let source = io::Error::new(io::ErrorKind::TimedOut, "connect timed out");
                let e = RpcError::Connect {
                    addr: self.ep.addr,
                    source,
                };
                self.failed(Gone::Silent, e)
            })?
            .map_err(|source| {
                let e = RpcError::Connect {
                    addr: self.ep.addr,
                    source,
                };
                self.failed(Gone::Refused, e)
            })?;
        Ok(match &self.ep.tls {
            None => {
                let mut stream = stream;
                if !self.bind(&mut stream, probes, first).await? {
                    return Ok(None);
                }
                let (rd, wr) = stream.into_split();
                Some(self.stamped(spawn_conn(rd, wr, self.ep.window, &self.live)))
            }
            Some(tls) => {
                let addr = self.ep.addr;
                let mut s = tls
                    .connect(stream, self.ep.timeout)
                    .await
                    .map_err(|e| match e {
                        HandshakeError::Refused(r) => RpcError::Tls {
                            addr,
                            source: Box::new(r),
                        },
                        HandshakeError::Connection(source) => RpcError::Connect { addr, source },
                    })?;
                if !self.bind(&mut s, probes, first).await? {
                    return Ok(None);
                }
                let (rd, wr) = tokio::io::split(s);
                Some(self.stamped(spawn_conn(rd, wr, self.ep.window, &self.live)))
            }
        })
    }
}

/// One call record, record mark included: `(prog, vers, proc)` with `cred` and `args`.
/// `None` when the arguments do not encode (or exceed a record).
pub fn encode_call<A: Pack>(
    xid: u32,
    (prog, vers, proc): (u32, u32, u32),
    cred: &opaque_auth<'static>,
    args: &A,
) -> Option<Vec<u8>> {
    let msg = rpc_msg {
        xid,
        body: msg_body::CALL(call_body {
            rpcvers: RPC_VERSION_2,
            prog,
            vers,
            proc,
            cred: cred.borrow(),
            verf: opaque_auth::default(),
        }),
    };
    let len = msg.packed_size() + args.packed_size();
    let mark = 0x8000_0000u32 | u32::try_from(len).ok().filter(|&l| l <= 0x7fff_ffff)?;
    let mut buf = Vec::with_capacity(len + 4);
    buf.extend_from_slice(&mark.to_be_bytes());
    let packed = msg.pack(&mut buf).and_then(|_| args.pack(&mut buf));
    (packed.is_ok() && buf.len() == len + 4).then_some(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xids_are_unique() {
        let a = next_xid();
        let b = next_xid();
        assert_ne!(a, b);
    }
}
