//! COMPOUNDs with the retry rules NFSv4.1 needs, on top of a [`Session`].
//!
//! * A call whose connection broke (or went silent) is sent again on the same slot
//!   and sequence id: the session's reply cache makes that exactly-once.
//! * A session the server no longer knows (it restarted; BADSESSION, DEADSESSION) is
//!   replaced by a new one and the call sent again on it. A call that may have run
//!   before is then *ambiguous*, as after an NFSv3 reconnect: a GUARDED create answered
//!   EXIST may be our own, a REMOVE answered NOENT did remove.
//! * On EFS, a session whose connections were all lost, none of which EFS binds to its
//!   partition again, is replaced the same way once the transport has moved to a new
//!   set of connections: it is never sent on the new partition.
//! * DELAY and GRACE (the server is busy, or recovering) are waited out with back-off.
//!
//! All of it is bounded: a server that stays away longer than `--timeout` ends the
//! run with a fatal error, as on NFSv3 (the transport's one clock decides that, for
//! every call at once).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use super::proto::{Op, status};
use super::reply::Reply;
use super::session::{Session, SessionError};
use crate::dest;
use crate::nfs::rpc::error::{transport, transport_msg};
use crate::nfs::rpc::{RpcClient, RpcError};

/// The outcome of one COMPOUND.
#[derive(Debug)]
pub struct Answer {
    /// The reply (its `status` is that of the last operation the server ran).
    pub reply: Reply,
    /// An earlier attempt may have been run by the server (see the module doc).
    pub ambiguous: bool,
}

impl Answer {
    /// The status of the reply.
    pub fn status(&self) -> u32 {
        self.reply.status
    }
}

/// An NFSv4.1 client: many compounds may run at once through `&self`.
pub struct Client {
    rpc: Arc<RpcClient>,
    session: RwLock<Arc<Session>>,
    /// Held while a session is replaced, so that only one caller replaces it.
    renewing: tokio::sync::Mutex<()>,
    want_slots: u32,
    timeout: Duration,
    /// Compounds sent, and sessions made (for `--json` and `NFSYNC_RPC_STATS`).
    sent: AtomicU64,
    sessions: AtomicU64,
    /// When the last compound went out (milliseconds since `epoch`): the lease renewer
    /// only sends when the run has been quiet.
    last_sent: AtomicU64,
    epoch: Instant,
}

impl Client {
    /// Establishes a session over `rpc`.
    pub async fn new(
        rpc: Arc<RpcClient>,
        want_slots: u32,
        timeout: Duration,
    ) -> Result<Client, SessionError> {
        let s = Session::establish(rpc.clone(), want_slots).await?;
        Ok(Client {
            rpc,
            session: RwLock::new(Arc::new(s)),
            renewing: tokio::sync::Mutex::new(()),
            want_slots,
            timeout,
            sent: AtomicU64::new(0),
            sessions: AtomicU64::new(1),
            last_sent: AtomicU64::new(0),
            epoch: Instant::now(),
        })
    }

    /// The transport.
    pub fn rpc(&self) -> &RpcClient {
        &self.rpc
    }

    /// Compounds sent so far (retries included).
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// Sessions made so far (more than one: the server restarted or dropped ours).
    pub fn sessions(&self) -> u64 {
        self.sessions.load(Ordering::Relaxed)
    }

    /// Slots of the current session: how many compounds can be in flight.
    pub fn slots(&self) -> usize {
        self.current().slots()
    }

    /// The largest request the session takes, in bytes.
    pub fn max_request(&self) -> u32 {
        self.current().fore.max_request_size
    }

    /// The largest reply the session takes, in bytes.
    pub fn max_response(&self) -> u32 {
        self.current().fore.max_response_size
    }

    /// The most operations a compound may hold (SEQUENCE included).
    pub fn max_ops(&self) -> u32 {
        self.current().fore.max_operations
    }

    fn current(&self) -> Arc<Session> {
        self.session.read().expect("session lock").clone()
    }

    /// Milliseconds since the last compound was sent.
    pub fn idle_ms(&self) -> u64 {
        let now = self.epoch.elapsed().as_millis() as u64;
        now.saturating_sub(self.last_sent.load(Ordering::Relaxed))
    }

    /// Sends `ops` (after a SEQUENCE) and returns the reply, whatever its status,
    /// once the transport, the session and the server's DELAY/GRACE are dealt with.
    pub async fn compound(&self, ops: Vec<Op>) -> dest::Result<Answer> {
        self.compound_of(&ops).await
    }

    /// [`Client::compound`] of borrowed operations (the batcher hands them back to
    /// their callers when the server did not get to them).
    pub async fn compound_of(&self, ops: &[Op]) -> dest::Result<Answer> {
        let cache = ops.iter().any(Op::changes_state);
        let mut ambiguous = false;
        let started = Instant::now();
        let mut first_failure = None;
        let mut backoff = Duration::from_millis(20);
        loop {
            let session = self.current();
            let mut slot = session.slot().await;
            // Sent on this slot and sequence id, possibly run by the server.
            let mut sent_here = false;
            let reply = loop {
                self.sent.fetch_add(1, Ordering::Relaxed);
                self.last_sent
                    .store(self.epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
                match session.send_on(&mut slot, ops, cache).await {
                    Ok(r) => break Some(r),
                    Err(SessionError::Rpc(e)) if retryable(&e) => {
                        sent_here |= !matches!(
                            e,
                            RpcError::Connect { .. } | RpcError::Disconnected { sent: false, .. }
                        );
                        self.give_up_after(&mut first_failure, &e)?;
                        if session.moved() {
                            break None;
                        }
                        self.rpc.back_off(backoff).await;
                        backoff = (backoff * 2).min(Duration::from_secs(1));
                    }
                    Err(SessionError::Rpc(e)) => {
                        return Err(transport(e));
                    }
                    Err(e) => return Err(protocol(e)),
                }
            };
            let Some(reply) = reply else {
                // EFS moved us to a new set of connections (all of ours were lost):
                // as after a server restart, a new session and the call again.
                ambiguous |= sent_here;
                drop(slot);
                self.renew(&session).await?;
                continue;
            };
            let seq_status = reply.results.first().map_or(status::OK, |r| r.1);
            match seq_status {
                status::OK => {}
                status::BADSESSION
                | status::DEADSESSION
                | status::CONN_NOT_BOUND_TO_SESSION
                | status::BADSLOT
                | status::SEQ_MISORDERED => {
                    // Our session is gone (the server restarted, or lost our state):
                    // a new one, and the call again, which may have run already.
                    ambiguous |= sent_here;
                    drop(slot);
                    self.renew(&session).await?;
                    continue;
                }
                status::DELAY => {
                    // The server has not taken the call: same sequence id next time.
                    slot.not_taken();
                    drop(slot);
                    self.wait(started, &mut backoff, "NFS4ERR_DELAY").await?;
                    continue;
                }
                st => {
                    return Err(dest::Error::Entry(std::io::Error::other(format!(
                        "the server refused our session: {}",
                        super::error::name(st)
                    ))));
                }
            }
            drop(slot);
            match reply.status {
                status::DELAY | status::GRACE => {
                    // Operations before the one that answered so may have run.
                    ambiguous |= reply.results.len() > 2;
                    let what = if reply.status == status::GRACE {
                        "NFS4ERR_GRACE"
                    } else {
                        "NFS4ERR_DELAY"
                    };
                    self.wait(started, &mut backoff, what).await?;
                }
                status::EXPIRED | status::STALE_CLIENTID => {
                    // Our client's lease ran out (a long stall): a new client and
                    // session, and the call again.
                    ambiguous |= reply.results.len() > 2;
                    self.renew(&session).await?;
                }
                status::RETRY_UNCACHED_REP => {
                    // Our call ran, and its reply is lost: send it as a new call.
                    ambiguous = true;
                }
                _ => return Ok(Answer { reply, ambiguous }),
            }
        }
    }

    /// A SEQUENCE alone, which renews the lease (the renewer sends it when idle).
    pub async fn ping(&self) -> dest::Result<()> {
        self.compound(Vec::new()).await.map(|_| ())
    }

    /// Replaces `stale` with a new session, unless another caller already did.
    async fn renew(&self, stale: &Arc<Session>) -> dest::Result<()> {
        let _one = self.renewing.lock().await;
        if !Arc::ptr_eq(&self.current(), stale) {
            return Ok(());
        }
        let started = Instant::now();
        let mut first_failure = None;
        let mut backoff = Duration::from_millis(50);
        loop {
            match Session::establish(self.rpc.clone(), self.want_slots).await {
                Ok(s) => {
                    *self.session.write().expect("session lock") = Arc::new(s);
                    self.sessions.fetch_add(1, Ordering::Relaxed);
                    return Ok(());
                }
                Err(SessionError::Rpc(e)) if retryable(&e) => {
                    self.give_up_after(&mut first_failure, &e)?;
                }
                Err(SessionError::Status { status: st, .. })
                    if matches!(st, status::DELAY | status::GRACE) =>
                {
                    if started.elapsed() > self.timeout * 4 {
                        return Err(timed_out(format!(
                            "{} kept answering {} to a new session",
                            self.rpc.addr(),
                            super::error::name(st)
                        )));
                    }
                }
                Err(SessionError::Rpc(e)) => return Err(transport(e)),
                Err(e) => return Err(protocol(e)),
            }
            self.rpc.back_off(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(1));
        }
    }

    async fn wait(&self, started: Instant, backoff: &mut Duration, what: &str) -> dest::Result<()> {
        // A server in grace or recalling may take a while, longer than one call.
        if started.elapsed() > self.timeout * 4 {
            return Err(timed_out(format!(
                "{} kept answering {what}",
                self.rpc.addr()
            )));
        }
        tokio::time::sleep(*backoff).await;
        *backoff = (*backoff * 2).min(Duration::from_secs(1));
        Ok(())
    }

    /// Ends a call whose transport failures began at `first_failure` long ago. The
    /// transport gives the server up after `--timeout` away; this only ends a call that
    /// keeps failing while the server answers others.
    fn give_up_after(&self, first_failure: &mut Option<Instant>, e: &RpcError) -> dest::Result<()> {
        let limit = self.timeout;
        if first_failure.get_or_insert_with(Instant::now).elapsed() > limit * 2 {
            let msg = format!("NFS server gone for {} s ({e})", limit.as_secs());
            return Err(transport_msg(e, msg));
        }
        Ok(())
    }

    /// DESTROY_SESSION and DESTROY_CLIENTID (best effort, at exit).
    pub async fn close(&self) {
        let s = self.current();
        let _ = tokio::time::timeout(Duration::from_secs(2), s.destroy()).await;
    }
}

/// Failures after which the same call is worth sending again.
fn retryable(e: &RpcError) -> bool {
    e.is_transient() || matches!(e, RpcError::Timeout { .. })
}

fn timed_out(msg: String) -> dest::Error {
    dest::Error::TimedOut(std::io::Error::new(std::io::ErrorKind::TimedOut, msg))
}

fn protocol(e: SessionError) -> dest::Error {
    super::error::garbage(e.to_string())
}
