//! Delay proxy: TCP forwarder on 127.0.0.1 that adds a one-way delay in each
//! direction (RTT = 2 × delay) without limiting bandwidth.
//!
//! Each chunk read from one side is stamped `now + delay` and queued; a
//! separate writer task releases chunks in order once their time has come.
//! Reading never waits for the delay, so a window's worth of data is in
//! flight, like on a long fat pipe; byte order is kept because there is one
//! FIFO per direction. `--reset-after-bytes N` closes a connection with RST
//! (SO_LINGER 0) after N bytes have been forwarded in total on it, to test
//! client reconnect/retry paths.

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

async fn sigterm() {
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

async fn serve(client: TcpStream, server: TcpStream, o: &ProxyOpts) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let conn = Arc::new(Conn {
        bytes: AtomicU64::new(0),
        limit: o.reset_after_bytes,
        reset: Notify::new(),
        fds: [client.as_raw_fd(), server.as_raw_fd()],
    });
    let (Ok((cr, cw)), Ok((sr, sw))) = (dup_split(client), dup_split(server)) else {
        return;
    };
    let up = pipe(cr, sw, o.delay, Arc::clone(&conn));
    let down = pipe(sr, cw, o.delay, Arc::clone(&conn));
    tokio::select! {
        _ = async { tokio::join!(up, down) } => {}
        _ = conn.reset.notified() => {}
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
async fn pipe(mut r: TcpStream, mut w: TcpStream, delay: Duration, conn: Arc<Conn>) {
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
}
