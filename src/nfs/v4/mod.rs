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
    let resvport = parsed.resvport.unwrap_or(is_root);
    let cred = setup::credentials(parsed);
    let want_slots = parsed.slots.unwrap_or(DEFAULT_SLOTS);
    let setup = rt.block_on(async {
        let ip = setup::resolve(&parsed.host, timeout).await?;
        let addr = SocketAddr::new(ip, parsed.nfs_port.unwrap_or(PORT));
        let tls = match parsed.tls {
            true => Some(crate::nfs::rpc::tls::Tls::for_url(parsed).map_err(ConnectError::Failed)?),
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
        // One NFSv4.1 session must not span EFS partitions: bind its connections.
        let efs = parsed
            .efs_server
            .unwrap_or_else(|| parsed.efs.is_some() || rpc::partition::is_efs_host(&parsed.host));
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
    // Room in a request for the compound around the data (names, attributes).
    let room = u64::from(client.max_request().saturating_sub(4096));
    let io = maxread.min(maxwrite).min(room).min(u64::from(MAX_IO));
    let io = if io == 0 { 64 << 10 } else { io as u32 };
    Ok((io, Duration::from_secs(u64::from(lease.clamp(10, 3600)))))
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
