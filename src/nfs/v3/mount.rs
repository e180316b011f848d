//! Getting from a URL to a root file handle: name lookup, portmapper, MOUNT v3.
//!
//! These are a handful of calls done once per run, one at a time on their own
//! connection, through the same record layer and reply checks as the NFS calls
//! ([`read_record`], [`decode_reply`]): `nfs3_client`'s `MountClient` allocates the
//! record by its mark and every array by its declared length, so a hostile MOUNT
//! reply could abort us. Every step is bounded by `--timeout`.
//!
//! Failures here end the run with a message that says what to fix, so they are
//! [`Error::Connect`] (or [`Error::Timeout`]).

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use nfs3_types::mount::{MOUNT_PROGRAM, dirpath, exports, mountres3, mountstat3};
use nfs3_types::nfs3::nfs_fh3;
use nfs3_types::portmap::{PMAP_PROG, mapping};
use nfs3_types::rpc::opaque_auth;
use nfs3_types::xdr_codec::{Opaque, Pack, Unpack, Void};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::exit::{Cause, Error, Why};
use crate::nfs::rpc::setup;
use crate::nfs::rpc::shape::Shape;
use crate::nfs::rpc::transport::{connect_tcp, encode_call, next_xid};
use crate::nfs::rpc::url::NfsUrl;
use crate::nfs::rpc::{RpcError, decode_reply, read_record};

/// One call on a connection that carries nothing else, so the next record is its reply.
async fn call_once<A: Pack, R: Unpack + Shape>(
    sock: &mut TcpStream,
    (prog, vers, proc): (u32, u32, u32),
    cred: &opaque_auth<'static>,
    args: &A,
) -> Result<R, RpcError> {
    let addr = sock.peer_addr().map_err(|source| RpcError::Connect {
        addr: SocketAddr::from(([0, 0, 0, 0], 0)),
        source,
    })?;
    let xid = next_xid();
    let record = encode_call(xid, (prog, vers, proc), cred, args).ok_or(RpcError::Garbage {
        addr,
        what: "could not encode the call".into(),
    })?;
    if sock.write_all(&record).await.is_err() {
        return Err(RpcError::Disconnected { addr, sent: false });
    }
    let reply = match read_record(sock).await {
        Ok(r) => r,
        Err(e) if e.kind() == io::ErrorKind::InvalidData => {
            return Err(RpcError::Garbage {
                addr,
                what: e.to_string(),
            });
        }
        Err(_) => return Err(RpcError::Disconnected { addr, sent: true }),
    };
    decode_reply(addr, xid, &reply)
}

/// What MOUNT gave us.
pub struct Mounted {
    /// Where the NFS program listens.
    pub nfs_addr: SocketAddr,
    /// The export that was mounted.
    pub export: String,
    /// Its root file handle.
    pub root: nfs_fh3,
    /// Path components of DEST below the export root.
    pub subpath: Vec<String>,
}

/// The hint for servers that speak only NFSv4.
fn efs_hint(host: &str) -> &'static str {
    if host.contains("efs.") && host.contains("amazonaws.com") {
        " (EFS speaks only NFSv4: mount it and use the mount path)"
    } else {
        ""
    }
}

async fn bounded<T, E: Into<Cause>>(
    what: &str,
    timeout: Duration,
    fut: impl Future<Output = Result<T, E>>,
) -> Result<T, Error> {
    match tokio::time::timeout(timeout, fut).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(Error::Connect(Why::new(what).because(e))),
        Err(_) => Err(Error::Timeout(
            format!("{what}: no answer within {} s", timeout.as_secs()).into(),
        )),
    }
}

/// Asks the portmapper for the TCP port of `prog` version `vers`.
async fn getport(
    ip: IpAddr,
    prog: u32,
    vers: u32,
    name: &str,
    host: &str,
    t: Duration,
) -> Result<u16, Error> {
    let pm = SocketAddr::new(ip, nfs3_types::portmap::PMAP_PORT);
    let what = format!("portmapper at {pm} (to find {name})");
    let sock = bounded(&what, t, connect_tcp(pm, false))
        .await
        .map_err(|f| {
            let hint = format!(
                "; give the ports in the URL (?nfsport=N&mountport=N) to skip the portmapper{}",
                efs_hint(host)
            );
            f.with_hint(&hint)
        })?;
    let mut sock = sock;
    let args = mapping {
        prog,
        vers,
        prot: nfs3_types::portmap::IPPROTO_TCP,
        port: 0,
    };
    let call = (
        nfs3_types::portmap::PROGRAM,
        nfs3_types::portmap::VERSION,
        PMAP_PROG::PMAPPROC_GETPORT as u32,
    );
    let r = tokio::time::timeout(
        t,
        call_once::<_, u32>(&mut sock, call, &opaque_auth::default(), &args),
    )
    .await;
    match r {
        Ok(Ok(0)) => {
            let hint = match efs_hint(host) {
                "" => {
                    " (NFSv4-only servers, such as AWS EFS, have no NFSv3 MOUNT service: \
                       mount the export and use the mount path)"
                }
                h => h,
            };
            Err(Error::Connect(
                format!("{host} does not serve {name} over TCP{hint}").into(),
            ))
        }
        Ok(Ok(port)) => u16::try_from(port)
            .map_err(|_| Error::Connect(format!("{what}: answered port {port}").into())),
        Ok(Err(e)) => Err(Error::Connect(Why::new(what).because(e))),
        Err(_) => Err(Error::Timeout(
            format!("{what}: no answer within {} s", t.as_secs()).into(),
        )),
    }
}

/// Connects, retrying a refused connection for a moment: a server that is just
/// (re)starting may refuse before it listens. A closed port still fails within 2 s,
/// and within half of `timeout`, so that it is reported as refused, not as silent.
async fn connect_retrying(
    addr: SocketAddr,
    resvport: bool,
    timeout: Duration,
) -> io::Result<TcpStream> {
    let start = std::time::Instant::now();
    let window = (timeout / 2).min(Duration::from_secs(2));
    loop {
        match connect_tcp(addr, resvport).await {
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused && start.elapsed() < window => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            r => return r,
        }
    }
}

/// Resolves ports, lists exports and mounts the longest export that leads to DEST.
pub async fn mount(
    url: &NfsUrl,
    cred: &opaque_auth<'static>,
    resvport: bool,
    timeout: Duration,
) -> Result<Mounted, Error> {
    let host = &url.host;
    let ip = setup::resolve(host, timeout).await?;
    let mount_port = match url.mount_port {
        Some(p) => p,
        None => getport(ip, nfs3_types::mount::PROGRAM, 3, "MOUNT v3", host, timeout).await?,
    };
    let nfs_port = match url.nfs_port {
        Some(p) => p,
        None => getport(ip, nfs3_types::nfs3::PROGRAM, 3, "NFS v3", host, timeout).await?,
    };
    let maddr = SocketAddr::new(ip, mount_port);
    let what = format!("MOUNT service at {maddr}");
    let mut sock = bounded(&what, timeout, connect_retrying(maddr, resvport, timeout))
        .await
        .map_err(|f| f.with_hint(efs_hint(host)))?;
    let proc = |p: MOUNT_PROGRAM| {
        (
            nfs3_types::mount::PROGRAM,
            nfs3_types::mount::VERSION,
            p as u32,
        )
    };

    // The export list tells us where the export ends and DEST's subdirectory begins.
    let want = normalize(&url.path);
    // A server may refuse to list (or not answer); then MNT is tried blind. One that
    // answers garbage ends the run here: its MNT reply would be no better.
    let listed = call_once::<_, exports>(
        &mut sock,
        proc(MOUNT_PROGRAM::MOUNTPROC3_EXPORT),
        cred,
        &Void,
    );
    let exports: Vec<String> = match tokio::time::timeout(timeout, listed).await {
        Ok(Ok(list)) => list
            .into_inner()
            .into_iter()
            .map(|e| String::from_utf8_lossy(&e.ex_dir.0).into_owned())
            .collect(),
        Ok(Err(e @ RpcError::Garbage { .. })) => {
            return Err(Error::Connect(Why::new("MOUNT EXPORT").because(e)));
        }
        _ => Vec::new(),
    };
    let mut candidates: Vec<String> = exports
        .iter()
        .map(|e| normalize(e))
        .filter(|e| is_prefix(e, &want))
        .collect();
    candidates.sort_by_key(|e| std::cmp::Reverse(e.len()));
    if candidates.is_empty() && !exports.is_empty() {
        // Servers answer MNT of a non-export inconsistently (ganesha: ACCES), so say
        // what is exported instead of passing that on.
        return Err(Error::Connect(
            format!(
                "{host} has no export leading to {want}; it exports: {}",
                exports.join(", ")
            )
            .into(),
        ));
    }
    if candidates.is_empty() {
        // No export list: try DEST itself, then ever shorter prefixes.
        let mut p = want.clone();
        loop {
            candidates.push(p.clone());
            if p == "/" {
                break;
            }
            p = match p.rfind('/') {
                Some(0) | None => "/".into(),
                Some(i) => p[..i].to_string(),
            };
        }
    }
    let mut first_err = None;
    for export in &candidates {
        let dir = dirpath(Opaque::owned(export.as_bytes().to_vec()));
        let mnt =
            call_once::<_, mountres3>(&mut sock, proc(MOUNT_PROGRAM::MOUNTPROC3_MNT), cred, &dir);
        match tokio::time::timeout(timeout, mnt).await {
            Ok(Ok(mountres3::Ok(ok))) => {
                let rest = want[export.len()..].trim_start_matches('/');
                return Ok(Mounted {
                    nfs_addr: SocketAddr::new(ip, nfs_port),
                    export: export.clone(),
                    root: nfs_fh3 { data: ok.fhandle.0 },
                    subpath: rest
                        .split('/')
                        .filter(|s| !s.is_empty())
                        .map(str::to_string)
                        .collect(),
                });
            }
            Ok(Ok(mountres3::Err(stat))) => {
                first_err.get_or_insert(mnt_message(host, export, stat, resvport, &exports));
                if matches!(stat, mountstat3::MNT3ERR_ACCES) {
                    break;
                }
            }
            Ok(Err(e)) => {
                let hint = format!(" (is {maddr} the MOUNT v3 service?){}", efs_hint(host));
                return Err(
                    Error::Connect(Why::new(format!("{what}: MNT {export}")).because(e))
                        .with_hint(&hint),
                );
            }
            Err(_) => {
                return Err(Error::Timeout(
                    format!(
                        "{what}: MNT {export}: no answer within {} s",
                        timeout.as_secs()
                    )
                    .into(),
                ));
            }
        }
    }
    Err(Error::Connect(
        first_err
            .unwrap_or_else(|| format!("{host}: no export leads to {want}"))
            .into(),
    ))
}

fn mnt_message(
    host: &str,
    export: &str,
    stat: mountstat3,
    resvport: bool,
    exports: &[String],
) -> String {
    match stat {
        mountstat3::MNT3ERR_ACCES if !resvport => format!(
            "{host} refused to mount {export} (MNT3ERR_ACCES): we used an unprivileged source \
             port, which servers refuse by default. Run nfsync as root (it then binds a port \
             below 1024), or allow other ports on the server: `insecure` in /etc/exports \
             (knfsd) or `PrivilegedPort = false;` in the EXPORT block (nfs-ganesha)"
        ),
        mountstat3::MNT3ERR_ACCES => format!(
            "{host} refused to mount {export} (MNT3ERR_ACCES): this client is not allowed by \
             the export's access list"
        ),
        mountstat3::MNT3ERR_NOENT | mountstat3::MNT3ERR_NOTDIR if !exports.is_empty() => format!(
            "{host} has no export {export} ({stat:?}); it exports: {}",
            exports.join(", ")
        ),
        _ => format!("{host} refused to mount {export}: {stat:?}"),
    }
}

/// `/a//b/` → `/a/b`.
fn normalize(p: &str) -> String {
    let parts: Vec<&str> = p
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    format!("/{}", parts.join("/"))
}

/// Whether `export` is `path` or a leading directory of it.
fn is_prefix(export: &str, path: &str) -> bool {
    export == "/"
        || path == export
        || (path.starts_with(export) && path.as_bytes().get(export.len()) == Some(&b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes() {
        assert!(is_prefix("/exp", "/exp/a"));
        assert!(is_prefix("/exp", "/exp"));
        assert!(!is_prefix("/exp", "/export"));
        assert!(is_prefix("/", "/x"));
        assert_eq!(normalize("//a/./b/"), "/a/b");
        assert_eq!(normalize(""), "/");
    }

    #[test]
    fn efs_is_recognised() {
        assert!(efs_hint("fs-1.efs.us-east-1.amazonaws.com").contains("NFSv4"));
        assert!(efs_hint("filer.example").is_empty());
    }
}
