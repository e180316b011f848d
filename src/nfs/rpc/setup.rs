//! What both NFS versions do once, before the first call: resolve the server's name,
//! make the AUTH_SYS credentials, start the runtime, and word a failure to connect so
//! that it says what to change.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use nfs3_types::rpc::{auth_unix, opaque_auth};
use nfs3_types::xdr_codec::Opaque;

use super::RpcError;
use super::url::NfsUrl;
use crate::exit::{Error, Why};

/// Default TCP connections per server (like `nconnect`).
pub const DEFAULT_CONNS: usize = 4;
/// AUTH_SYS credentials: the caller's uid, gid and groups unless the URL overrides them.
pub fn credentials(url: &NfsUrl) -> opaque_auth<'static> {
    let uid = url.uid.unwrap_or(rustix::process::getuid().as_raw());
    let gid = url.gid.unwrap_or(rustix::process::getgid().as_raw());
    let mut gids = Vec::new();
    if url.gid.is_none() && url.uid.is_none() {
        let groups = rustix::process::getgroups().unwrap_or_default();
        gids.extend(groups.iter().map(|g| g.as_raw()).filter(|&g| g != gid));
    }
    gids.truncate(16); // AUTH_SYS carries at most 16 groups
    let name = rustix::system::uname().nodename().to_bytes().to_vec();
    let name = if name.is_empty() {
        b"nfsync".to_vec()
    } else {
        name
    };
    opaque_auth::auth_unix(&auth_unix {
        stamp: std::process::id(),
        machinename: Opaque::owned(name),
        uid,
        gid,
        gids,
    })
}

/// Resolves the server name (IP literals pass through), preferring IPv4.
pub async fn resolve(host: &str, timeout: Duration) -> Result<IpAddr, Error> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(ip);
    }
    let found = tokio::time::timeout(timeout, tokio::net::lookup_host((host, 0)))
        .await
        .map_err(|_| Error::Timeout(format!("resolving {host}: timed out").into()))?
        .map_err(|e| {
            Error::Connect(Why::new(format!("cannot resolve NFS server {host}")).because(e))
        })?
        .map(|a| a.ip())
        .collect::<Vec<_>>();
    found
        .iter()
        .find(|ip| ip.is_ipv4())
        .or(found.first())
        .copied()
        .ok_or_else(|| Error::Connect(format!("{host} has no address").into()))
}

/// Threads driving the connections' reader and writer tasks.
pub(crate) const RUNTIME_THREADS: usize = 2;

/// The runtime for the NFS tasks, on as many of `want` threads as the OS allows now.
///
/// tokio panics when it cannot start a worker thread (a container's pids limit), so
/// the threads are tried first; with none to spare the tasks run on a current-thread
/// runtime, driven by whichever engine worker is waiting in `block_on`.
pub(crate) fn runtime(want: usize) -> std::io::Result<tokio::runtime::Runtime> {
    let n = startable_threads(want);
    if n == 0 {
        return tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build();
    }
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(n)
        .thread_name("nfsync-nfs")
        .enable_all()
        .build()
}

/// How many of `want` threads can be started right now (each is started, then ended).
fn startable_threads(want: usize) -> usize {
    let (hold, wait) = std::sync::mpsc::channel::<()>();
    let wait = Arc::new(std::sync::Mutex::new(wait));
    let mut started = Vec::new();
    for _ in 0..want {
        let wait = wait.clone();
        // Each probe stays alive until all are started, so they count together.
        match std::thread::Builder::new().spawn(move || drop(wait.lock().map(|w| w.recv()))) {
            Ok(h) => started.push(h),
            Err(_) => break,
        }
    }
    drop(hold);
    let n = started.len();
    for h in started {
        let _ = h.join();
    }
    n
}

/// Advice for a server that refuses our unprivileged source port.
pub(crate) const PORT_HINT: &str = ": the server refuses unprivileged source ports; run \
     nfsync as root (it then binds a port below 1024), or allow other ports on the server \
     (`insecure` in /etc/exports for knfsd, `PrivilegedPort = false;` in the EXPORT block \
     for nfs-ganesha)";

/// A failure while connecting, kept as the cause, with advice where there is some to
/// give.
pub(crate) fn setup_error(e: RpcError, resvport: bool, version: &str) -> Error {
    setup_error_tls(e, resvport, version, false)
}

/// [`setup_error`] for a connection that may be TLS.
pub(crate) fn setup_error_tls(e: RpcError, resvport: bool, version: &str, tls: bool) -> Error {
    let other = if version == "3" { "4.1" } else { "3" };
    let hint = match &e {
        RpcError::Auth { .. } if !resvport => PORT_HINT.to_string(),
        RpcError::Garbage { .. } | RpcError::Unavailable { .. } if version == "4.1" && tls => {
            ": does the server speak TLS there? (?tls)".to_string()
        }
        RpcError::Garbage { .. } | RpcError::Unavailable { .. } => format!(
            ": is that port really an NFSv{version} server? (?version={other} for NFSv{other})"
        ),
        _ => String::new(),
    };
    let timed_out = e.is_timeout();
    let why = Why::new("NFS service").because(e);
    let err = if timed_out {
        Error::Timeout(why)
    } else {
        Error::Connect(why)
    };
    err.with_hint(&hint)
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[test]
    fn a_setup_error_keeps_the_rpc_error_and_puts_the_advice_last() {
        let addr = "127.0.0.1:2049".parse().unwrap();
        let e = setup_error(
            RpcError::Garbage {
                addr,
                what: "bad record mark".into(),
            },
            true,
            "3",
        );
        assert_eq!(e.exit_code(), crate::exit::ExitCode::Connect);
        let rpc = e.source().and_then(|s| s.downcast_ref::<RpcError>());
        assert!(matches!(rpc, Some(RpcError::Garbage { .. })), "{e:?}");
        assert_eq!(
            format!("{e:#}"),
            "NFS service: 127.0.0.1:2049 sent an invalid RPC reply: bad record mark: is that \
             port really an NFSv3 server? (?version=4.1 for NFSv4.1)"
        );
        let e = setup_error(RpcError::Timeout { addr, secs: 5 }, true, "4.1");
        assert_eq!(e.exit_code(), crate::exit::ExitCode::Timeout);
        assert_eq!(
            format!("{e:#}"),
            "NFS service: no reply from 127.0.0.1:2049 within 5 s"
        );
    }
}
