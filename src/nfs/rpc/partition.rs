//! Which connections to an EFS mount target nfsync keeps, by the rules efs-proxy
//! (aws/efs-utils) follows.
//!
//! EFS keeps a client's NFS state in one partition; one NFSv4.1 session spread over
//! connections that landed on different partitions is something efs-proxy never does,
//! so nfsync does not either. Every connection to an EFS host starts with
//! [`efs_bind`]'s call, before any NFS record:
//!
//! * The first answer decides. READY fixes the partition, and the server's
//!   `max_multiplexed_connections` caps the connections. Any other EFS answer leaves
//!   the client on that one connection, with no partition to add others to. An answer
//!   at the RPC level (PROG_UNAVAIL, …) means the server is not EFS: that connection is
//!   closed and one plain connection used instead, with no bind call again.
//! * Every later connection must answer READY with the same partition id. RETRY,
//!   PREFERRED or another partition: it is closed and another one tried. RETRY_LATER or
//!   ERROR: no more connections for a while ([`BACK_OFF`]), the run goes on with those
//!   it has.
//!
//! All connections of a run bind with one identifier ([`ProxyIdentifier`]).

use std::io;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

use super::RpcError;
use super::efs_bind::{
    self, BindReply, BindReplyError, BindResponse, PartitionId, ProxyIdentifier,
};
use super::tls::Refused;
use super::wire::read_record;

/// How long no connection is added after EFS answered RETRY_LATER or ERROR (efs-proxy
/// waits as long before it searches again).
pub const BACK_OFF: Duration = Duration::from_secs(300);
/// Connections tried in a row for one slot before giving up on it (efs-proxy tries at
/// most 120 for a whole search of up to 4 connections).
pub const MAX_PROBES: u32 = 30;

/// What a connection is, once bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// No connection bound yet.
    Unknown,
    /// Every connection is on this partition.
    Partition(PartitionId),
    /// The first answer was not READY: one connection, on no known partition.
    Unpartitioned,
    /// The server does not speak the bind call: plain connections, no bind call.
    NotEfs,
}

/// What to do with a connection after its bind.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Use it.
    Use,
    /// Close it and try a new one.
    Again,
    /// Close it and open a plain one (the server is not EFS).
    Reopen,
    /// Close it: no more connections now (the reason).
    Stop(String),
}

struct State {
    mode: Mode,
    /// The current set of connections: 1, then one more for each set started afresh.
    incarnation: i64,
    /// The most connections the server lets a client bind to one partition.
    max: usize,
    /// No connection is added before then (EFS said RETRY_LATER or ERROR).
    quiet_until: Option<Instant>,
}

/// Binds the connections of one client to one EFS partition.
pub struct Binder {
    /// The run's identifier (the incarnation is kept in the state).
    id: ProxyIdentifier,
    state: Mutex<State>,
    /// Connections in use (set once the first ones are bound).
    active: AtomicUsize,
    /// Bind calls sent.
    calls: AtomicU64,
}

impl Default for Binder {
    fn default() -> Self {
        Binder::new()
    }
}

impl Binder {
    /// A binder with a new random identifier, incarnation 1.
    pub fn new() -> Binder {
        Binder::with_id(ProxyIdentifier {
            identifier: uuid_v4(),
            incarnation: 1,
        })
    }

    fn with_id(id: ProxyIdentifier) -> Binder {
        Binder {
            id,
            state: Mutex::new(State {
                mode: Mode::Unknown,
                incarnation: id.incarnation,
                max: 1,
                quiet_until: None,
            }),
            active: AtomicUsize::new(1),
            calls: AtomicU64::new(0),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Bind calls sent so far.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// The partition the connections are bound to, if any.
    pub fn partition(&self) -> Option<PartitionId> {
        match self.state().mode {
            Mode::Partition(id) => Some(id),
            _ => None,
        }
    }

    /// Whether the server turned out not to be EFS.
    pub fn not_efs(&self) -> bool {
        self.state().mode == Mode::NotEfs
    }

    /// How many of `slots` connections to open now: one until a partition is known,
    /// then as many as the server allows.
    pub(crate) fn target(&self, slots: usize) -> usize {
        let s = self.state();
        match s.mode {
            Mode::Partition(_) if s.quiet_until.is_none_or(|t| Instant::now() >= t) => {
                s.max.min(slots).max(1)
            }
            _ => 1,
        }
    }

    /// The current set of connections: 1, then one more each time the client was
    /// moved to a new set after losing every connection on its partition.
    pub fn incarnation(&self) -> u64 {
        self.state().incarnation as u64
    }

    /// Starts a new set of connections, as efs-proxy does after losing its own: the
    /// next connection is bound as the first one, wherever EFS puts it. Only once for
    /// those that saw set `seen` end.
    pub(crate) fn restart(&self, seen: u64) {
        let mut s = self.state();
        if s.incarnation as u64 != seen {
            return;
        }
        s.incarnation = s.incarnation.wrapping_add(1);
        if s.mode != Mode::NotEfs {
            s.mode = Mode::Unknown;
        }
        s.quiet_until = None;
        self.active.store(1, Ordering::Relaxed);
    }

    /// Whether a connection may be opened now (EFS did not ask for a pause).
    pub(crate) fn may_add(&self) -> bool {
        self.state().quiet_until.is_none_or(|t| Instant::now() >= t)
    }

    /// No connection is added for a while ([`BACK_OFF`]).
    pub(crate) fn back_off(&self) {
        self.state().quiet_until = Some(Instant::now() + BACK_OFF);
    }

    /// Connections in use, of `slots`.
    pub(crate) fn active(&self, slots: usize) -> usize {
        self.active.load(Ordering::Relaxed).clamp(1, slots.max(1))
    }

    /// Records how many connections are in use.
    pub(crate) fn set_active(&self, n: usize) {
        self.active.store(n.max(1), Ordering::Relaxed);
    }

    /// Binds a fresh connection `s` (before anything else is sent on it) with a call of
    /// transaction id `xid`, and says what to do with it. Transport failures are the
    /// connection's: the caller drops it.
    pub(crate) async fn bind<S: AsyncRead + AsyncWrite + Unpin>(
        &self,
        s: &mut S,
        xid: u32,
        addr: SocketAddr,
        timeout: Duration,
    ) -> Result<Verdict, RpcError> {
        if self.not_efs() {
            return Ok(Verdict::Use);
        }
        self.calls.fetch_add(1, Ordering::Relaxed);
        let id = ProxyIdentifier {
            incarnation: self.state().incarnation,
            ..self.id
        };
        let exchange = async {
            s.write_all(&efs_bind::encode_call(xid, &id)).await?;
            s.flush().await?;
            read_record(s).await
        };
        let record = tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| RpcError::Timeout {
                addr,
                secs: timeout.as_secs(),
            })?
            .map_err(|e| {
                if let Some(r) = Refused::alert_after_handshake(&e) {
                    return RpcError::Tls {
                        addr,
                        source: Box::new(r),
                    };
                }
                match e.kind() {
                    io::ErrorKind::InvalidData => RpcError::Garbage {
                        addr,
                        what: e.to_string(),
                    },
                    _ => RpcError::Disconnected { addr, sent: true },
                }
            })?;
        Ok(self.judge(efs_bind::decode_reply(xid, &record)))
    }

    /// The rules of the module doc, for one answer.
    fn judge(&self, answer: Result<BindReply, BindReplyError>) -> Verdict {
        let mut s = self.state();
        let reply = match (s.mode, answer) {
            (Mode::NotEfs, _) => return Verdict::Use,
            (Mode::Partition(_), Err(e)) => {
                s.quiet_until = Some(Instant::now() + BACK_OFF);
                return Verdict::Stop(e.to_string());
            }
            (_, Err(_)) => {
                s.mode = Mode::NotEfs;
                return Verdict::Reopen;
            }
            (_, Ok(r)) => r,
        };
        match (s.mode, reply.response) {
            (Mode::Unknown, BindResponse::Ready(id)) => {
                s.mode = Mode::Partition(id);
                s.max = usize::try_from(reply.config.max_multiplexed_connections)
                    .unwrap_or(1)
                    .clamp(1, 64);
                Verdict::Use
            }
            (Mode::Unknown | Mode::Unpartitioned, _) => {
                s.mode = Mode::Unpartitioned;
                Verdict::Use
            }
            (Mode::Partition(ours), BindResponse::Ready(id)) if id == ours => Verdict::Use,
            (
                Mode::Partition(_),
                BindResponse::Ready(_)
                | BindResponse::Preferred(_)
                | BindResponse::Retry(_)
                | BindResponse::Unknown(_),
            ) => Verdict::Again,
            (Mode::Partition(_), BindResponse::RetryLater(m) | BindResponse::Error(m)) => {
                s.quiet_until = Some(Instant::now() + BACK_OFF);
                Verdict::Stop(format!("EFS takes no more connections now ({m})"))
            }
            (Mode::NotEfs, _) => Verdict::Use,
        }
    }
}

/// Whether `host` is an EFS mount target's DNS name: `fs-HEX.efs.REGION.SUFFIX`, SUFFIX
/// one of AWS's partitions (efs-utils.conf's `dns_name_suffix` values), with an
/// optional availability-zone label in front. Stricter than efs-utils' pattern for
/// the certificate's fields (which takes any label where `efs` stands): program
/// 400123 goes only where the name says EFS (or the URL does, `?efs`, `?fsid=`), never
/// to a filer that happens to be called `fs-01.nyc.corp.com`.
pub fn is_efs_host(host: &str) -> bool {
    const SUFFIXES: [&str; 7] = [
        "amazonaws.com",
        "amazonaws.com.cn",
        "c2s.ic.gov",
        "sc2s.sgov.gov",
        "csp.hci.ic.gov",
        "cloud.adc-e.uk",
        "amazonaws.eu",
    ];
    let host = host.to_ascii_lowercase();
    let labels: Vec<&str> = host.split('.').collect();
    let fs_id = |l: &str| {
        l.strip_prefix("fs-")
            .is_some_and(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()))
    };
    (0..2).any(|i| {
        labels.len() >= i + 4
            && fs_id(labels[i])
            && labels[i + 1] == "efs"
            && !labels[i + 2].is_empty()
            && SUFFIXES.contains(&labels[i + 3..].join(".").as_str())
    })
}

/// A random UUIDv4 (RFC 9562) from the system's random source.
fn uuid_v4() -> [u8; 16] {
    use std::io::Read;
    let mut b = [0u8; 16];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b));
    if read.is_err() {
        // No random source: time and pid still make it unique enough per run.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        b = (now ^ (u128::from(std::process::id()) << 64)).to_be_bytes();
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use efs_bind::ScaleUpConfig;

    const A: PartitionId = [0xa; 64];
    const B: PartitionId = [0xb; 64];

    fn answer(response: BindResponse, max: i32) -> Result<BindReply, BindReplyError> {
        Ok(BindReply {
            response,
            config: ScaleUpConfig {
                max_multiplexed_connections: max,
                scale_up_bytes_per_sec_threshold: 0,
                scale_up_threshold_breached_duration_sec: 1,
                scale_up_lookback_window_size_sec: 1,
            },
        })
    }

    fn binder() -> Binder {
        Binder::with_id(ProxyIdentifier {
            identifier: [1; 16],
            incarnation: 1,
        })
    }

    #[test]
    fn ready_fixes_the_partition_and_only_it_is_added() {
        let b = binder();
        assert_eq!(b.target(4), 1);
        assert_eq!(b.judge(answer(BindResponse::Ready(A), 5)), Verdict::Use);
        assert_eq!(b.partition(), Some(A));
        assert_eq!(b.target(4), 4);
        assert_eq!(b.target(8), 5);
        assert!(b.may_add());
        assert_eq!(b.judge(answer(BindResponse::Ready(A), 5)), Verdict::Use);
        for other in [
            BindResponse::Ready(B),
            BindResponse::Retry("x".into()),
            BindResponse::Preferred(A),
        ] {
            assert_eq!(b.judge(answer(other, 5)), Verdict::Again);
        }
        assert_eq!(b.partition(), Some(A));
    }

    #[test]
    fn retry_later_and_error_stop_adding_for_a_while() {
        for stop in [
            BindResponse::RetryLater("busy".into()),
            BindResponse::Error("no".into()),
        ] {
            let b = binder();
            b.judge(answer(BindResponse::Ready(A), 5));
            assert!(matches!(b.judge(answer(stop, 5)), Verdict::Stop(_)));
            assert_eq!(b.target(4), 1, "no connection added while backing off");
            assert!(!b.may_add());
            assert_eq!(b.partition(), Some(A));
        }
    }

    #[test]
    fn a_first_answer_other_than_ready_means_one_connection() {
        for first in [
            BindResponse::Retry(String::new()),
            BindResponse::Preferred(B),
            BindResponse::RetryLater(String::new()),
            BindResponse::Error(String::new()),
            // A type it does not know: efs-proxy uses the stream without a partition.
            BindResponse::Unknown(9),
        ] {
            let b = binder();
            assert_eq!(b.judge(answer(first, 5)), Verdict::Use);
            assert_eq!((b.partition(), b.target(4)), (None, 1));
            // Its replacement after a loss is used whatever it lands on.
            assert_eq!(b.judge(answer(BindResponse::Ready(A), 5)), Verdict::Use);
            assert_eq!(b.target(4), 1);
        }
    }

    #[test]
    fn an_rpc_level_answer_means_not_efs() {
        let b = binder();
        let not = Err(BindReplyError::NotServed("program not available".into()));
        assert_eq!(b.judge(not), Verdict::Reopen);
        assert!(b.not_efs());
        assert_eq!(b.target(4), 1);
        // Once bound, the same answer only stops adding.
        let b = binder();
        b.judge(answer(BindResponse::Ready(A), 5));
        let not = Err(BindReplyError::NotServed("program not available".into()));
        assert!(matches!(b.judge(not), Verdict::Stop(_)));
        assert!(!b.not_efs());
    }

    #[test]
    fn a_restart_binds_the_next_connection_as_the_first_once() {
        let b = binder();
        b.judge(answer(BindResponse::Ready(A), 5));
        b.set_active(4);
        assert!(matches!(
            b.judge(answer(BindResponse::RetryLater("busy".into()), 5)),
            Verdict::Stop(_)
        ));
        b.restart(1);
        b.restart(1); // a second slot that saw the same set end
        assert_eq!(b.incarnation(), 2);
        assert_eq!((b.partition(), b.active(4)), (None, 1));
        assert!(b.may_add());
        assert_eq!(b.judge(answer(BindResponse::Ready(B), 5)), Verdict::Use);
        assert_eq!(b.partition(), Some(B));
    }

    #[test]
    fn a_server_max_below_one_still_allows_one() {
        let b = binder();
        b.judge(answer(BindResponse::Ready(A), 0));
        assert_eq!(b.target(4), 1);
    }

    #[test]
    fn efs_host_names() {
        for h in [
            "fs-0123456789abcdef0.efs.eu-west-1.amazonaws.com",
            "FS-DEADBEEF.EFS.us-east-1.amazonaws.com",
            "us-east-1a.fs-deadbeef.efs.us-east-1.amazonaws.com",
            "fs-deadbeef.efs.cn-north-1.amazonaws.com.cn",
            "fs-deadbeef.efs.us-iso-east-1.c2s.ic.gov",
        ] {
            assert!(is_efs_host(h), "{h}");
        }
        for h in [
            "127.0.0.1",
            "nfs.example.com",
            "fs-xyz.efs.us-east-1.amazonaws.com",
            "fs-deadbeef.nfs.us-east-1.amazonaws.com",
            "efs.example.com",
            "fs-1.efs",
            "fs-01.nyc.corp.com",
            "fs-deadbeef.efs.us-east-1.corp.example.com",
            "fs-deadbeef.efs.us-east-1.amazonaws.com.evil.example",
        ] {
            assert!(!is_efs_host(h), "{h}");
        }
    }

    #[test]
    fn identifiers_are_uuid_v4_and_differ() {
        let (a, b) = (uuid_v4(), uuid_v4());
        assert_ne!(a, b);
        assert_eq!(a[6] >> 4, 4);
        assert_eq!(a[8] >> 6, 2);
    }
}
