//! The NFSv3 path: `nfs://server[:port]/export/path` destinations, spoken directly.
//!
//! The kernel client makes each small file wait for LOOKUP, CREATE, WRITE, COMMIT and
//! SETATTR one after another. Here every engine worker drives its own file with only
//! the waits the protocol requires, and all workers share a few multiplexed TCP
//! connections, so hundreds of calls are in flight at once.
//!
//! Layers, bottom up: [`url`] parses DEST; [`wire`] frames and decodes records, after
//! [`shape`] has checked every length in them against the record; [`rpc`] is the
//! multiplexed RPC transport; [`mount`] does portmapper + MOUNT one call at a time over
//! the same record layer; [`client`] adds NFS retry rules;
//! [`dest`] implements the engine's [`crate::dest::Destination`], with file data in
//! `write`, links, nodes and removal in `objects`, and attribute policy in `attrs`.
//!
//! `NFSYNC_RPC_STATS=1` prints the calls sent per procedure at the end of a run: a new
//! file costs CREATE + WRITE + SETATTR, a new directory MKDIR + SETATTR, and a re-run
//! one READDIRPLUS per directory page.

pub mod rpc;
pub mod v3;
pub mod v4;

use std::sync::Arc;
use std::time::Duration;

use rpc::url;
pub use rpc::url::is_nfs_url;
pub use v3::{NfsDest, NfsDir};
use v3::{client, dest, mount};

use crate::config::Config;
use crate::exit::Error;
use crate::report::Output;

/// Default TCP connections per server (like `nconnect`).
pub const DEFAULT_CONNS: usize = 4;
/// Default calls in flight per connection.
pub const DEFAULT_WINDOW: usize = 64;

/// Parses an `nfs://` URL, mounts the export and checks the NFS service answers.
///
/// `nfs://server[:nfsport]/export/dir[?opts]`: the export is the longest leading part
/// of the path the server exports; `dir` below it is created if missing. Options:
/// `nfsport=N`, `mountport=N` (skip the portmapper), `uid=N`, `gid=N` (AUTH_SYS
/// identity; default: the caller's uid, gid and groups), `conns=N` TCP connections
/// (default 4), `window=N` calls in flight per connection (default 64), `resvport` /
/// `noresvport` (source port below 1024; default: when running as root), `version=3`.
///
/// Every step is bounded by `config.timeout`; failures are [`Error::Connect`]
/// (unreachable, refused, wrong port, garbage) or [`Error::Timeout`].
pub fn connect(url: &str, config: &Config, out: Arc<Output>) -> Result<Dest, Error> {
    let parsed = url::parse(url).map_err(Error::Usage)?;
    let new_runtime = || {
        runtime(RUNTIME_THREADS)
            .map_err(|e| Error::Connect(format!("cannot start the NFS runtime: {e}")))
    };
    let timeout = if config.timeout.is_zero() {
        Duration::from_secs(30)
    } else {
        config.timeout
    };
    // NFSv4.1 unless the URL says otherwise: one round trip per new small file instead
    // of three (benches/README.md, "NFSv4.1 or NFSv3"). A server that does not speak
    // it gets NFSv3 instead; one whose NFSv4.1 fails otherwise gets the error.
    let v41 = match parsed.version {
        Some(v) => v == url::Version::V41,
        None => parsed.mount_port.is_none() || parsed.tls,
    };
    if v41 {
        match v4::connect(&parsed, config, out.clone(), new_runtime()?, timeout) {
            Ok(d) => return Ok(Dest::V41(d)),
            // Never without TLS when TLS was asked for: NFSv3 cannot have it.
            Err(v4::ConnectError::NotSpoken(e)) if parsed.version.is_none() && !parsed.tls => {
                out.verbose(1, format_args!("NFSv4.1 not available ({e}); using NFSv3"));
            }
            Err(e) => return Err(e.into_error()),
        }
    }
    let rt = new_runtime()?;
    // Root binds a privileged source port as the kernel and libnfs do; others cannot.
    let is_root = rustix::process::geteuid().is_root();
    let resvport = parsed.resvport.unwrap_or(is_root);
    let cred = mount::credentials(&parsed);
    let setup = rt.block_on(async {
        let m = mount::mount(&parsed, &cred, resvport, timeout).await?;
        let ep = rpc::Endpoint {
            addr: m.nfs_addr,
            prog: nfs3_types::nfs3::PROGRAM,
            vers: 3,
            resvport,
            conns: parsed.conns.unwrap_or(DEFAULT_CONNS),
            window: parsed.window.unwrap_or(DEFAULT_WINDOW),
            timeout,
            tls: None,
        };
        let nfs = client::Nfs::new(rpc::RpcClient::new(ep, cred.clone()), timeout);
        nfs.rpc()
            .connect_all()
            .await
            .map_err(|e| setup_error(&e, resvport, "3"))?;
        nfs.null()
            .await
            .map_err(|e| setup_error(&e, resvport, "3"))?;
        let info = dest::fsinfo(&nfs, &m.root).await.map_err(|f| {
            // ganesha lets an unprivileged port MOUNT, then refuses NFS calls.
            if f.to_string().contains("AUTH_TOOWEAK") && !resvport {
                return crate::exit::with_hint(f, PORT_HINT);
            }
            f
        })?;
        Ok::<_, Error>((m, nfs, info))
    });
    let (m, nfs, info) = setup?;
    let label = format!("nfs://{}{}", parsed.host, m.export);
    Ok(Dest::V3(NfsDest::new(
        rt,
        Arc::new(nfs),
        m,
        info,
        label,
        config,
        out,
    )))
}

/// An NFS destination of either version.
pub enum Dest {
    V3(NfsDest),
    V41(v4::Nfs4Dest),
}

/// Threads driving the connections' reader and writer tasks.
const RUNTIME_THREADS: usize = 2;

/// The runtime for the NFS tasks, on as many of `want` threads as the OS allows now.
///
/// tokio panics when it cannot start a worker thread (a container's pids limit), so
/// the threads are tried first; with none to spare the tasks run on a current-thread
/// runtime, driven by whichever engine worker is waiting in `block_on`.
fn runtime(want: usize) -> std::io::Result<tokio::runtime::Runtime> {
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

const PORT_HINT: &str = ": the server refuses unprivileged source ports; run nfsync as root (it \
     then binds a port below 1024), or allow other ports on the server (`insecure` in \
     /etc/exports for knfsd, `PrivilegedPort = false;` in the EXPORT block for nfs-ganesha)";

/// A failure while connecting, with advice where there is some to give.
pub(crate) fn setup_error(e: &rpc::RpcError, resvport: bool, version: &str) -> Error {
    setup_error_tls(e, resvport, version, false)
}

/// [`setup_error`] for a connection that may be TLS.
pub(crate) fn setup_error_tls(
    e: &rpc::RpcError,
    resvport: bool,
    version: &str,
    tls: bool,
) -> Error {
    let other = if version == "3" { "4.1" } else { "3" };
    let hint = match e {
        rpc::RpcError::Auth { .. } if !resvport => PORT_HINT.to_string(),
        rpc::RpcError::Garbage { .. } | rpc::RpcError::Unavailable { .. }
            if version == "4.1" && tls =>
        {
            ": does the server speak TLS there? (?tls)".to_string()
        }
        rpc::RpcError::Garbage { .. } | rpc::RpcError::Unavailable { .. } => format!(
            ": is that port really an NFSv{version} server? (?version={other} for NFSv{other})"
        ),
        _ => String::new(),
    };
    let msg = format!("NFS service: {e}{hint}");
    if matches!(e, rpc::RpcError::Timeout { .. }) {
        Error::Timeout(msg)
    } else {
        Error::Connect(msg)
    }
}
