//! The NFSv3 client (RFC 1813): the export found by MOUNT, one call per step.
//!
//! Layers, bottom up, over the RPC toolkit ([`crate::nfs::rpc`]): [`mount`] does
//! portmapper + MOUNT one call at a time over the toolkit's record layer; [`client`]
//! adds NFS retry rules; [`error`] turns statuses into errnos; [`dest`] is the
//! engine's destination (directories), with file data in `write`, links, nodes and
//! removal in `objects`, paths beside DEST and RENAME in `paths`, and attribute policy
//! in `attrs`: each implements one of the toolkit's ops traits.

mod attrs;
pub mod client;
pub mod dest;
pub mod error;
pub mod mount;
mod named_dirs;
mod objects;
mod read;
mod write;

pub use dest::{NfsDest, NfsDir};

use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Runtime;

use crate::dest::OwnerPolicy;
use crate::exit::Error;
use crate::nfs::rpc::policy::Notices;
use crate::nfs::rpc::url::NfsUrl;
use crate::nfs::rpc::{self, setup};

/// Default calls in flight per connection.
pub const DEFAULT_WINDOW: usize = 64;

/// Mounts the export and checks the NFS service answers.
///
/// `nfs://server[:nfsport]/export/dir[?opts]`: the export is the longest leading part
/// of the path the server exports; `dir` below it is created if missing. Options:
/// `nfsport=N`, `mountport=N` (skip the portmapper), `uid=N`, `gid=N` (AUTH_SYS
/// identity; default: the caller's uid, gid and groups), `conns=N` TCP connections
/// (default 4), `window=N` calls in flight per connection (default 64), `resvport` /
/// `noresvport` (source port below 1024; default: when running as root), `version=3`.
///
/// Every step is bounded by `timeout`; failures are [`Error::Connect`] (unreachable,
/// refused, wrong port, garbage) or [`Error::Timeout`].
pub fn connect(
    parsed: &NfsUrl,
    owners: OwnerPolicy,
    notices: Arc<dyn Notices>,
    rt: Runtime,
    timeout: Duration,
) -> Result<NfsDest, Error> {
    // Root binds a privileged source port as the kernel and libnfs do; others cannot.
    let is_root = rustix::process::geteuid().is_root();
    let resvport = parsed.resvport.unwrap_or(is_root);
    let cred = setup::credentials(parsed);
    let setup = rt.block_on(async {
        let m = mount::mount(parsed, &cred, resvport, timeout).await?;
        let ep = rpc::Endpoint {
            addr: m.nfs_addr,
            prog: nfs3_types::nfs3::PROGRAM,
            vers: 3,
            resvport,
            conns: parsed.conns.unwrap_or(setup::DEFAULT_CONNS),
            window: parsed.window.unwrap_or(DEFAULT_WINDOW),
            timeout,
            tls: None,
        };
        let nfs = client::Nfs::new(rpc::RpcClient::new(ep, cred.clone()), timeout);
        nfs.rpc()
            .connect_all()
            .await
            .map_err(|e| setup::setup_error(e, resvport, "3"))?;
        nfs.null()
            .await
            .map_err(|e| setup::setup_error(e, resvport, "3"))?;
        let info = dest::fsinfo(&nfs, &m.root).await.map_err(|f| {
            // ganesha lets an unprivileged port MOUNT, then refuses NFS calls.
            if format!("{f:#}").contains("AUTH_TOOWEAK") && !resvport {
                return f.with_hint(setup::PORT_HINT);
            }
            f
        })?;
        Ok::<_, Error>((m, nfs, info))
    });
    let (m, nfs, info) = setup?;
    let label = format!("nfs://{}{}", parsed.host, m.export);
    Ok(NfsDest::new(
        rt,
        Arc::new(nfs),
        m,
        info,
        label,
        owners,
        notices,
    ))
}
