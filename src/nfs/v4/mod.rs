//! The NFSv4.1 client (RFC 8881): `nfs://server[:port]/path?version=4.1`, the protocol
//! EFS speaks, with sessions and COMPOUND.
//!
//! NFSv3 needs a round trip per step of a small file (CREATE, WRITE, SETATTR); NFSv4.1
//! sends them as one COMPOUND, so a new small file costs one round trip, and the
//! session's slots make a call re-sent after a lost connection run once.
//!
//! Layers, bottom up, over the RPC toolkit ([`crate::nfs::rpc`]): [`proto`] encodes
//! the operations (by `nfs3_types`' XDR derive) and [`reply`] decodes replies within
//! the record's bounds; [`session`] holds the slots; [`client`] adds the retry rules
//! (same slot after a lost connection, a new session after a server restart, DELAY
//! and GRACE waited out); [`dest`] is the engine's destination (directories), with
//! file data in `write`, other objects in `objects`, paths beside DEST and RENAME in
//! `paths`, DEST's own directory in `root`, and attributes in [`attrs`] and
//! `owners`: each implements one of the toolkit's ops traits.
//!
//! There is no MOUNT protocol and no portmapper: port 2049 unless the URL says, and
//! the path is looked up from the server's root (its pseudo-filesystem).

pub mod attrs;
mod batch;
pub mod client;
pub mod dest;
pub mod error;
mod named_dirs;
mod objects;
mod owners;
pub mod proto;
mod read;
pub mod reply;
mod root;
pub mod session;
mod write;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

pub use dest::{Nfs4Dest, Nfs4Dir};

use crate::dest::OwnerPolicy;
use crate::exit::{Error, Why};
use crate::nfs::rpc;
use crate::nfs::rpc::policy::Notices;
use crate::nfs::rpc::setup;
use crate::nfs::rpc::url::NfsUrl;

/// The NFS port when the URL names none (NFSv4 has no portmapper).
pub const PORT: u16 = 2049;
/// Slots asked for unless `?slots=`: the server grants what it can (ganesha 64 by
/// default).
pub const DEFAULT_SLOTS: u32 = 64;
/// Small files are batched into shared compounds only when the server grants fewer
/// slots than this: with a small slot table the slots are what limits a copy, and
/// batching raised files/s; with 64 slots the server's CPU is, and one compound per
/// file was faster (benches/README.md, "NFSv4.1: batching small files"). Reading a
/// tree as a source batches whatever the slots (`?batch=0`: never): a READ costs the
/// server less than a call's own overhead, so there batching saved its CPU at 64
/// slots too (benches/README.md, "Batched READs").
const BATCH_BELOW_SLOTS: usize = 32;
/// Largest READ/WRITE we send, whatever the server allows: bounds memory per call.
const MAX_IO: u32 = 1 << 20;

/// Why [`connect`] failed.
#[derive(Debug)]
pub enum ConnectError {
    /// The server does not speak NFSv4.1 there (no NFSv4 program, a 4.0-only server,
    /// nothing listening on the default port): NFSv3 may still work.
    NotSpoken(Error),
    /// Anything else.
    Failed(Error),
}

impl From<Error> for ConnectError {
    fn from(e: Error) -> ConnectError {
        ConnectError::Failed(e)
    }
}

impl ConnectError {
    /// The error to report.
    pub fn into_error(self) -> Error {
        match self {
            ConnectError::NotSpoken(e) | ConnectError::Failed(e) => e,
        }
    }
}

/// Connects to the server, establishes a session and checks DEST's path can be
/// looked up. Every step is bounded by `timeout`.
pub fn connect(
    parsed: &NfsUrl,
    owners: OwnerPolicy,
    notices: Arc<dyn Notices>,
    rt: tokio::runtime::Runtime,
    timeout: Duration,
) -> Result<Nfs4Dest, ConnectError> {
    let is_root = rustix::process::geteuid().is_root();
    // One NFSv4.1 session must not span EFS partitions: its connections are bound.
    let efs = is_efs(parsed);
    let resvport = resvport(parsed.resvport, is_root, efs);
    let cred = setup::credentials(parsed);
    let want_slots = parsed.slots.unwrap_or(DEFAULT_SLOTS);
    let setup = rt.block_on(async {
        let ip = match parsed.connect_ip {
            Some(ip) => ip,
            None => setup::resolve(&parsed.host, timeout).await?,
        };
        let addr = SocketAddr::new(ip, parsed.nfs_port.unwrap_or(PORT));
        let tls = match parsed.tls {
            true => {
                let mut kept = None;
                let tls = crate::nfs::rpc::tls::Tls::for_url(parsed, &mut kept)
                    .map_err(ConnectError::Failed)?;
                if let Some(why) = &kept {
                    notices.notice(rpc::policy::Notice::EfsKeyNotKept { why });
                }
                Some(tls)
            }
            false => None,
        };
        let ep = rpc::Endpoint {
            addr,
            prog: proto::PROGRAM,
            vers: proto::VERSION,
            resvport,
            conns: parsed.conns.unwrap_or(setup::DEFAULT_CONNS),
            // The session's slots bound the calls in flight; the connections need
            // not bound them again.
            window: want_slots as usize,
            timeout,
            tls,
        };
        let rpc = rpc::RpcClient::new(ep, cred);
        let rpc = Arc::new(match efs {
            true => rpc.bound(rpc::partition::Binder::new()),
            false => rpc,
        });
        let unspoken = |e: &rpc::RpcError| match e {
            rpc::RpcError::Unavailable { .. } => true,
            // Nothing on 2049: the server's NFSv3 may be elsewhere (portmapper).
            rpc::RpcError::Connect { source, .. } => {
                parsed.nfs_port.is_none() && source.kind() == std::io::ErrorKind::ConnectionRefused
            }
            _ => false,
        };
        rpc.connect_all().await.map_err(|e| {
            let not_spoken = unspoken(&e);
            let err = setup::setup_error_tls(e, resvport, "4.1", parsed.tls);
            if not_spoken {
                ConnectError::NotSpoken(err)
            } else {
                ConnectError::Failed(err)
            }
        })?;
        let client = match client::Client::new(rpc, want_slots, timeout).await {
            Ok(c) => c,
            Err(session::SessionError::Rpc(e)) if unspoken(&e) => {
                return Err(ConnectError::NotSpoken(setup::setup_error(
                    e, resvport, "4.1",
                )));
            }
            Err(session::SessionError::Status {
                status: proto::status::MINOR_VERS_MISMATCH,
                op,
            }) => {
                return Err(ConnectError::NotSpoken(session_error(
                    session::SessionError::Status {
                        status: proto::status::MINOR_VERS_MISMATCH,
                        op,
                    },
                    resvport,
                    parsed.tls,
                )));
            }
            Err(e) => return Err(ConnectError::Failed(session_error(e, resvport, parsed.tls))),
        };
        let client = Arc::new(client);
        let (io_size, lease) = limits(&client).await?;
        let readdir_max = client.max_request().clamp(8 << 10, MAX_IO);
        Ok::<_, ConnectError>((client, io_size, lease, readdir_max))
    });
    let (client, io_size, lease, readdir_max) = setup?;
    let renewer = rt.spawn(renew_lease(client.clone(), lease)).abort_handle();
    let slots = client.slots();
    let batcher = batch::Batcher::new(
        slots,
        client.max_ops(),
        client.max_request(),
        client.max_response(),
    );
    let path = parsed
        .path
        .split('/')
        .filter(|c| !c.is_empty())
        .map(|c| c.as_bytes().to_vec())
        .collect();
    let label = format!("nfs://{}{}", parsed.host, parsed.path);
    Ok(Nfs4Dest::new(
        dest::Setup {
            rt,
            client,
            path,
            label,
            io_size,
            readdir_max,
            renewer,
            batcher,
            batched: parsed.batch.unwrap_or(slots < BATCH_BELOW_SLOTS),
            batch_reads: parsed.batch.unwrap_or(true),
            efs,
        },
        owners,
        notices,
    ))
}

fn session_error(e: session::SessionError, resvport: bool, tls: bool) -> Error {
    match e {
        session::SessionError::Rpc(e) => setup::setup_error_tls(e, resvport, "4.1", tls),
        session::SessionError::Status { op, status } => {
            Error::Connect(format!("NFSv4.1 session: {op} failed: {}", error::name(status)).into())
        }
        e => Error::Connect(Why::new("NFSv4.1 session").because(e)),
    }
}

/// The server's largest READ/WRITE (within the session's request size and our cap),
/// and its lease time.
async fn limits(client: &client::Client) -> Result<(u32, Duration), Error> {
    use proto::{Bitmap, Op, attr};
    let a = client
        .compound(vec![
            Op::PutRootFh,
            Op::GetAttr(Bitmap::of(&[
                attr::LEASE_TIME,
                attr::MAXREAD,
                attr::MAXWRITE,
            ])),
        ])
        .await
        .map_err(|e| Error::Connect(Why::new("GETATTR of the server's root").because(e)))?;
    if a.reply.status != proto::status::OK {
        return Err(Error::Connect(
            format!(
                "GETATTR of the server's root: {}",
                error::name(a.reply.status)
            )
            .into(),
        ));
    }
    let mut lease = 90;
    let mut maxread = u64::from(MAX_IO);
    let mut maxwrite = u64::from(MAX_IO);
    if let Some(reply::Res::GetAttr(f)) = dest::nth(&a.reply, 9, 0) {
        let mut d = reply::Dec::new(&f.vals);
        let bad = |e: nfs3_types::xdr_codec::Error| {
            Error::Connect(Why::new("root attributes").because(e))
        };
        if f.mask.has(attr::LEASE_TIME) {
            lease = d.u32().map_err(bad)?;
        }
        if f.mask.has(attr::MAXREAD) {
            maxread = d.u64().map_err(bad)?;
        }
        if f.mask.has(attr::MAXWRITE) {
            maxwrite = d.u64().map_err(bad)?;
        }
    }
    let io = io_size(maxread, maxwrite, client.max_request());
    Ok((io, Duration::from_secs(u64::from(lease.clamp(10, 3600)))))
}

/// Whether the server is an EFS mount target, to be sent EFS's bind call: as `?efs`
/// says, else when the host is an EFS name ([`rpc::partition::is_efs_host`]) or the URL
/// names EFS itself (`?fsid=` with an address, `?iam`, `?accesspoint=`). A host that
/// only matches efs-utils' loose pattern (`fs-01.nyc.corp.com`) is not enough: its
/// certificate rules apply, but a filer named so gets no call of EFS's.
fn is_efs(parsed: &NfsUrl) -> bool {
    let said = |t: &rpc::efsauth::target::EfsTarget| {
        t.iam
            || t.access_point.is_some()
            || rpc::efsauth::target::parse_efs_host(&parsed.host).is_none()
    };
    parsed.efs_server.unwrap_or_else(|| {
        rpc::partition::is_efs_host(&parsed.host) || parsed.efs.as_ref().is_some_and(said)
    })
}

/// Whether to connect from a privileged source port: as the URL says, else when root
/// (servers refuse others by default), but never by default to EFS: AWS advises
/// `noresvport` for its mounts, and efs-proxy connects from ephemeral ports.
fn resvport(given: Option<bool>, is_root: bool, efs: bool) -> bool {
    given.unwrap_or(is_root && !efs)
}

/// The bytes per READ and WRITE: the server's MAXREAD and MAXWRITE, within the
/// session's request size less room for the compound around the data (names,
/// attributes). When the session's size is what limits it, it is rounded down to a
/// multiple of 64 KiB, as a server's own sizes are: an odd size would cut every large
/// file into pieces that straddle the server's blocks.
fn io_size(maxread: u64, maxwrite: u64, max_request: u32) -> u32 {
    const UNIT: u64 = 64 << 10;
    let room = u64::from(max_request.saturating_sub(4096));
    let server = maxread.min(maxwrite).min(u64::from(MAX_IO));
    let io = match room < server && room >= UNIT {
        true => room - room % UNIT,
        false => server.min(room),
    };
    if io == 0 { UNIT as u32 } else { io as u32 }
}

/// Keeps the lease while the run is busy elsewhere (a long local scan): a SEQUENCE
/// when no compound went out for a third of the lease.
async fn renew_lease(client: Arc<client::Client>, lease: Duration) {
    let third = lease / 3;
    loop {
        tokio::time::sleep(third / 2).await;
        if client.idle_ms() >= third.as_millis() as u64 {
            let _ = client.ping().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::nfs::v4::{io_size, resvport};

    #[test]
    fn a_tight_session_gives_a_multiple_of_64_kib() {
        // ganesha: 1 MiB everywhere, a session of 1 MiB and room.
        assert_eq!(io_size(1 << 20, 1 << 20, (1 << 20) + 8192), 1 << 20);
        // A session of just 1 MiB: the room left, rounded down.
        assert_eq!(io_size(1 << 20, 1 << 20, 1 << 20), 960 << 10);
        assert_eq!(io_size(1 << 20, 1 << 20, 200_000), 128 << 10);
        // The server's own size is kept as it is.
        assert_eq!(io_size(100_000, 1 << 20, 4 << 20), 100_000);
        // A session too small for 64 KiB: what fits.
        assert_eq!(io_size(1 << 20, 1 << 20, 40_960), 36_864);
        assert_eq!(io_size(0, 0, 4 << 20), 64 << 10);
    }

    #[test]
    fn efs_gets_no_privileged_port_unless_asked() {
        assert!(resvport(None, true, false));
        assert!(!resvport(None, true, true));
        assert!(!resvport(None, false, false));
        assert!(resvport(Some(true), true, true));
        assert!(!resvport(Some(false), true, false));
    }
}
