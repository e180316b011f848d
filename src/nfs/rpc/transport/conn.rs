//! One TCP connection of the multiplexed client: its writer and reader tasks, the
//! callers waiting on it by xid, and how it is opened (a privileged source port when
//! the server insists).

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio::task::AbortHandle;

use super::super::error::RpcError;
use super::super::liveness::Liveness;
use super::super::wire::read_record;

type Waiter = oneshot::Sender<Result<Vec<u8>, ()>>;

/// State shared by a connection's tasks and its callers.
pub(super) struct Shared {
    pub(super) pending: Mutex<HashMap<u32, Waiter>>,
    pub(super) dead: AtomicBool,
    /// The client's clock, told of every record that arrives.
    pub(super) live: Arc<Liveness>,
    /// When a record last arrived on this connection, and when a NULL last went out
    /// to ask for one (ms on `live`'s clock).
    pub(super) heard: AtomicU64,
    pub(super) probed: AtomicU64,
}

impl Shared {
    /// Marks the connection dead and fails every waiting call.
    pub(super) fn kill(&self) {
        self.dead.store(true, Ordering::SeqCst);
        let waiters: Vec<Waiter> = match self.pending.lock() {
            Ok(mut p) => p.drain().map(|(_, w)| w).collect(),
            Err(_) => Vec::new(),
        };
        for w in waiters {
            let _ = w.send(Err(()));
        }
    }
}

/// One TCP connection with its reader and writer tasks.
pub(super) struct Conn {
    pub(super) shared: Arc<Shared>,
    pub(super) tx: mpsc::UnboundedSender<Arc<Vec<u8>>>,
    pub(super) window: Arc<Semaphore>,
    pub(super) tasks: [AbortHandle; 2],
    /// The EFS connection set it belongs to ([`RpcClient::generation`]).
    pub(super) generation: u64,
}

impl Drop for Conn {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
        self.shared.kill();
    }
}

/// The slot's connection if it is open and alive (never connects, never waits).
pub(super) fn live_conn(slot: &tokio::sync::Mutex<Option<Arc<Conn>>>) -> Option<Arc<Conn>> {
    let guard = slot.try_lock().ok()?;
    guard
        .as_ref()
        .filter(|c| !c.shared.dead.load(Ordering::SeqCst))
        .cloned()
}

/// Registers a waiter for `xid` and queues the record on `conn`.
pub(super) fn start(
    conn: &Conn,
    addr: SocketAddr,
    xid: u32,
    record: Arc<Vec<u8>>,
) -> Result<oneshot::Receiver<Result<Vec<u8>, ()>>, RpcError> {
    let (wtx, wrx) = oneshot::channel();
    {
        let mut p = conn
            .shared
            .pending
            .lock()
            .map_err(|_| RpcError::Disconnected { addr, sent: false })?;
        if conn.shared.dead.load(Ordering::SeqCst) {
            return Err(RpcError::Disconnected { addr, sent: false });
        }
        p.insert(xid, wtx);
    }
    if conn.tx.send(record).is_err() {
        remove_waiter(&conn.shared, xid);
        return Err(RpcError::Disconnected { addr, sent: false });
    }
    Ok(wrx)
}

pub(super) fn remove_waiter(shared: &Shared, xid: u32) {
    if let Ok(mut p) = shared.pending.lock() {
        p.remove(&xid);
    }
}

/// Opens a TCP connection with TCP_NODELAY, from a privileged source port if asked.
pub async fn connect_tcp(addr: SocketAddr, resvport: bool) -> io::Result<TcpStream> {
    let stream = if resvport {
        connect_privileged(addr).await?
    } else {
        TcpStream::connect(addr).await?
    };
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// Source ports tried for `resvport`; the kernel client and libnfs use the same range.
const RESV_LOW: u16 = 512;
const RESV_HIGH: u16 = 1023;
static RESV_NEXT: AtomicUsize = AtomicUsize::new(0);

async fn connect_privileged(addr: SocketAddr) -> io::Result<TcpStream> {
    let span = usize::from(RESV_HIGH - RESV_LOW + 1);
    let start = RESV_NEXT.fetch_add(1, Ordering::Relaxed) + std::process::id() as usize;
    let mut last = None;
    for i in 0..span {
        let port = RESV_HIGH - ((start + i) % span) as u16;
        let socket = if addr.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        socket.set_reuseaddr(true)?;
        let local_ip = if addr.is_ipv4() {
            IpAddr::V4(Ipv4Addr::UNSPECIFIED)
        } else {
            IpAddr::V6(Ipv6Addr::UNSPECIFIED)
        };
        match socket.bind(SocketAddr::new(local_ip, port)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => continue,
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    "binding a privileged source port (< 1024) needs root; \
                     add ?noresvport to the URL if the server allows other ports",
                ));
            }
            Err(e) => return Err(e),
        }
        match socket.connect(addr).await {
            Ok(s) => return Ok(s),
            // The same 4-tuple is still in TIME_WAIT from an earlier connection.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::AddrInUse | io::ErrorKind::AddrNotAvailable
                ) =>
            {
                last = Some(e);
            }
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        io::Error::new(io::ErrorKind::AddrInUse, "no free privileged source port")
    }))
}

pub(super) fn spawn_conn<R, W>(rd: R, wr: W, window: usize, live: &Arc<Liveness>) -> Conn
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let shared = Arc::new(Shared {
        pending: Mutex::new(HashMap::new()),
        dead: AtomicBool::new(false),
        live: live.clone(),
        heard: AtomicU64::new(live.now()),
        probed: AtomicU64::new(0),
    });
    let (tx, rx) = mpsc::unbounded_channel();
    let w = tokio::spawn(writer(wr, rx, shared.clone()));
    let r = tokio::spawn(reader(rd, shared.clone()));
    Conn {
        shared,
        tx,
        window: Arc::new(Semaphore::new(window.max(1))),
        tasks: [w.abort_handle(), r.abort_handle()],
        generation: 0,
    }
}

/// Writes queued records, coalescing whatever is queued into one flush.
async fn writer<W: AsyncWrite + Unpin>(
    wr: W,
    mut rx: mpsc::UnboundedReceiver<Arc<Vec<u8>>>,
    shared: Arc<Shared>,
) {
    let mut out = BufWriter::with_capacity(64 << 10, wr);
    while let Some(rec) = rx.recv().await {
        let mut ok = out.write_all(&rec).await.is_ok();
        while ok {
            match rx.try_recv() {
                Ok(more) => ok = out.write_all(&more).await.is_ok(),
                Err(_) => break,
            }
        }
        if !ok || out.flush().await.is_err() {
            break;
        }
    }
    shared.kill();
}

/// Reads reply records and hands each to the caller waiting on its xid.
async fn reader<R: AsyncRead + Unpin>(mut rd: R, shared: Arc<Shared>) {
    while let Ok(rec) = read_record(&mut rd).await {
        if rec.len() < 4 {
            break;
        }
        shared.heard.store(shared.live.now(), Ordering::Relaxed);
        shared.live.heard();
        let xid = u32::from_be_bytes([rec[0], rec[1], rec[2], rec[3]]);
        let waiter = match shared.pending.lock() {
            Ok(mut p) => p.remove(&xid),
            Err(_) => break,
        };
        // A reply nobody waits for (the caller timed out) is dropped.
        if let Some(w) = waiter {
            let _ = w.send(Ok(rec));
        }
    }
    shared.kill();
}
