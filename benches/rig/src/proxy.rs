//! Delay proxy: TCP forwarder on 127.0.0.1 that adds a one-way delay in each
//! direction (RTT = 2 × delay) without limiting bandwidth.
//!
//! Each chunk read from one side is stamped `now + delay` and queued; a
//! separate writer task releases chunks in order once their time has come.
//! Reading never waits for the delay, so a window's worth of data is in
//! flight, like on a long fat pipe; byte order is kept because there is one
//! FIFO per direction. `--reset-after-bytes N` closes a connection with RST
//! (SO_LINGER 0) after N bytes have been forwarded in total on it, to test
//! client reconnect/retry paths. `--cap-mibs R` paces each direction of
//! each connection to R MiB/s (a token bucket, see [`Bucket`]), as a server
//! with a per-connection limit would; `rig efs-front` serves through the same
//! code.

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;

#[derive(Clone)]
pub struct ProxyOpts {
    /// (local listen port, 0 = pick a free one; remote port on 127.0.0.1)
    pub forwards: Vec<(u16, u16)>,
    pub delay: Duration,
    pub reset_after_bytes: Option<u64>,
    /// Bytes per second per direction of one connection (`None`: no cap).
    pub cap: Option<f64>,
}

/// Parse `LOCAL=REMOTE` (LOCAL may be 0) or just `REMOTE`.
pub fn parse_forward(s: &str) -> Result<(u16, u16), String> {
    let bad = || format!("bad --forward {s:?}: use LOCAL=REMOTE or REMOTE");
    match s.split_once('=') {
        Some((l, r)) => Ok((l.parse().map_err(|_| bad())?, r.parse().map_err(|_| bad())?)),
        None => Ok((0, s.parse().map_err(|_| bad())?)),
    }
}

pub fn run(o: ProxyOpts) -> std::io::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let mut tasks = Vec::new();
        for &(local, remote) in &o.forwards {
            let l = TcpListener::bind(("127.0.0.1", local)).await?;
            let port = l.local_addr()?.port();
            // Scripts parse these lines: LISTEN <remote>=<local>.
            println!("LISTEN {remote}={port}");
            let target: SocketAddr = ([127, 0, 0, 1], remote).into();
            tasks.push(tokio::spawn(accept_loop(l, target, o.clone())));
        }
        println!("READY");
        use std::io::Write;
        std::io::stdout().flush()?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = sigterm() => {}
        }
        for t in tasks {
            t.abort();
        }
        Ok(())
    })
}

pub async fn sigterm() {
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut s) => {
            s.recv().await;
        }
        Err(_) => std::future::pending().await,
    }
}

async fn accept_loop(l: TcpListener, target: SocketAddr, o: ProxyOpts) {
    loop {
        let Ok((client, _)) = l.accept().await else {
            continue;
        };
        let o = o.clone();
        tokio::spawn(async move {
            if let Ok(server) = TcpStream::connect(target).await {
                serve(client, server, &o).await;
            }
        });
    }
}

/// Shared per-connection state: total bytes and the reset trigger.
struct Conn {
    bytes: AtomicU64,
    limit: Option<u64>,
    reset: Notify,
    /// Both sockets, to arm SO_LINGER 0 (close = RST) when resetting.
    fds: [RawFd; 2],
}

impl Conn {
    fn abort(&self) {
        let lg = libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        for fd in self.fds {
            // SAFETY: the fds stay open until `serve` returns, which happens
            // only after this notification.
            unsafe {
                libc::setsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    libc::SO_LINGER,
                    (&lg as *const libc::linger).cast(),
                    std::mem::size_of::<libc::linger>() as libc::socklen_t,
                );
            }
        }
        self.reset.notify_one();
    }
}

/// Forwards between `client` and `server` until both ends close (or the reset
/// fires); returns the bytes carried up (client to server) and down.
pub async fn serve(client: TcpStream, server: TcpStream, o: &ProxyOpts) -> (u64, u64) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let conn = Arc::new(Conn {
        bytes: AtomicU64::new(0),
        limit: o.reset_after_bytes,
        reset: Notify::new(),
        fds: [client.as_raw_fd(), server.as_raw_fd()],
    });
    let (Ok((cr, cw)), Ok((sr, sw))) = (dup_split(client), dup_split(server)) else {
        return (0, 0);
    };
    let (up_n, down_n) = (AtomicU64::new(0), AtomicU64::new(0));
    let up = pipe(
        cr,
        sw,
        o.delay,
        o.cap.map(Bucket::new),
        &up_n,
        Arc::clone(&conn),
    );
    let down = pipe(
        sr,
        cw,
        o.delay,
        o.cap.map(Bucket::new),
        &down_n,
        Arc::clone(&conn),
    );
    tokio::select! {
        _ = async { tokio::join!(up, down) } => {}
        _ = conn.reset.notified() => {}
    }
    (up_n.into_inner(), down_n.into_inner())
}

/// A token bucket: `rate` bytes per second, bursts of up to [`Bucket::BURST`]
/// bytes. A chunk larger than what is in the bucket goes out at once and
/// leaves a debt that the next chunk waits off, so the long-run rate is
/// `rate` whatever the chunk sizes.
pub struct Bucket {
    rate: f64,
    tokens: f64,
    last: Instant,
}

impl Bucket {
    /// What an idle connection may send at once.
    const BURST: f64 = 256.0 * 1024.0;

    pub fn new(rate: f64) -> Bucket {
        Bucket {
            rate,
            tokens: Self::BURST,
            last: Instant::now(),
        }
    }

    /// How long to wait before sending `n` bytes at `now` (after which they
    /// are taken from the bucket).
    pub fn take(&mut self, n: usize, now: Instant) -> Duration {
        let refill = now.saturating_duration_since(self.last).as_secs_f64() * self.rate;
        self.tokens = (self.tokens + refill).min(Self::BURST);
        self.last = now;
        let wait = if self.tokens < 0.0 {
            Duration::from_secs_f64(-self.tokens / self.rate)
        } else {
            Duration::ZERO
        };
        self.tokens -= n as f64;
        wait
    }
}

/// Two handles on one socket (dup'ed fds). Unlike tokio's `into_split`,
/// dropping the write handle does not send a FIN, so an aborted connection
/// ends with a bare RST; a normal end is forwarded by an explicit shutdown.
fn dup_split(s: TcpStream) -> std::io::Result<(TcpStream, TcpStream)> {
    let std = s.into_std()?;
    let w = std.try_clone()?;
    Ok((TcpStream::from_std(std)?, TcpStream::from_std(w)?))
}

/// One direction: read → timestamp → queue → release at t + delay → write.
/// With a bucket, a chunk also waits for its tokens after its delay.
async fn pipe(
    mut r: TcpStream,
    mut w: TcpStream,
    delay: Duration,
    mut bucket: Option<Bucket>,
    carried: &AtomicU64,
    conn: Arc<Conn>,
) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let reader = async {
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            let n = match r.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let mut n = n;
            if let Some(limit) = conn.limit {
                let before = conn.bytes.fetch_add(n as u64, Ordering::Relaxed);
                if before + n as u64 >= limit {
                    n = limit.saturating_sub(before) as usize;
                    let _ = tx.send((Instant::now() + delay, buf[..n].to_vec()));
                    let _ = tx.send((Instant::now() + delay, Vec::new()));
                    break;
                }
            }
            if tx
                .send((Instant::now() + delay, buf[..n].to_vec()))
                .is_err()
            {
                break;
            }
        }
        drop(tx);
    };
    let writer = async {
        while let Some((due, chunk)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            if let Some(b) = bucket.as_mut() {
                let wait = b.take(chunk.len(), Instant::now());
                if !wait.is_zero() {
                    tokio::time::sleep(wait).await;
                }
            }
            carried.fetch_add(chunk.len() as u64, Ordering::Relaxed);
            if chunk.is_empty() {
                // Reset marker: abort both directions with RST.
                conn.abort();
                return;
            }
            if w.write_all(&chunk).await.is_err() {
                return;
            }
        }
        let _ = w.shutdown().await;
    };
    tokio::join!(reader, writer);
}

#[cfg(test)]
mod tests {
    #[test]
    fn forwards_parse() {
        assert_eq!(super::parse_forward("2049"), Ok((0, 2049)));
        assert_eq!(super::parse_forward("12049=2049"), Ok((12049, 2049)));
        assert!(super::parse_forward("x=1").is_err());
    }

    #[test]
    fn bucket_paces_to_its_rate() {
        use super::Bucket;
        use std::time::Duration;
        let t0 = tokio::time::Instant::now();
        let mut b = Bucket::new(1_000_000.0);
        // The burst goes at once; then 1 MB more costs about a second, in
        // whatever chunks.
        assert_eq!(b.take(Bucket::BURST as usize, t0), Duration::ZERO);
        let mut t = t0;
        for _ in 0..10 {
            t += b.take(100_000, t);
        }
        let waited = (t - t0).as_secs_f64();
        assert!((0.85..=0.95).contains(&waited), "waited {waited}");
        // Idle time refills the bucket up to the burst, no more.
        let later = t + Duration::from_secs(10);
        assert_eq!(b.take(1, later), Duration::ZERO);
        assert_eq!(b.take(Bucket::BURST as usize, later), Duration::ZERO);
        assert!(b.take(1, later) > Duration::ZERO);
    }
}
