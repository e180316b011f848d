//! The NFSv3 client.

mod attrs;
pub mod client;
pub mod dest;
pub mod error;
pub mod mount;
mod objects;
mod paths;
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

/// Mounts the export and checks the NFS service answers. Every step is bounded by
/// `timeout`; failures are [`Error::Connect`] (unreachable, refused, wrong port,
/// garbage) or [`Error::Timeout`].
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
            .map_err(|e| setup::setup_error(&e, resvport, "3"))?;
        nfs.null()
            .await
            .map_err(|e| setup::setup_error(&e, resvport, "3"))?;
        let info = dest::fsinfo(&nfs, &m.root).await.map_err(|f| {
            // ganesha lets an unprivileged port MOUNT, then refuses NFS calls.
            if f.to_string().contains("AUTH_TOOWEAK") && !resvport {
                return crate::exit::with_hint(f, setup::PORT_HINT);
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
