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

use rpc::policy::{Notice, Notices};
pub use rpc::url::is_nfs_url;
use rpc::{setup, url};

use crate::config::Config;
use crate::exit::Error;
use crate::report::Output;

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
        setup::runtime(setup::RUNTIME_THREADS)
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
    let notices = printed(config.quiet, out.clone());
    if v41 {
        match v4::connect(
            &parsed,
            config.owners,
            notices.clone(),
            new_runtime()?,
            timeout,
        ) {
            Ok(d) => return Ok(Dest::V41(d)),
            // Never without TLS when TLS was asked for: NFSv3 cannot have it.
            Err(v4::ConnectError::NotSpoken(e)) if parsed.version.is_none() && !parsed.tls => {
                out.verbose(1, format_args!("NFSv4.1 not available ({e}); using NFSv3"));
            }
            Err(e) => return Err(e.into_error()),
        }
    }
    v3::connect(&parsed, config.owners, notices, new_runtime()?, timeout).map(Dest::V3)
}

/// The clients' notices on the run's output: warnings above the progress bar unless
/// `-q`, diagnostics always.
fn printed(quiet: bool, out: Arc<Output>) -> Arc<dyn Notices> {
    Arc::new(move |n: Notice<'_>| {
        if !n.is_warning() {
            out.note(n);
        } else if !quiet {
            out.warn(n);
        }
    })
}

/// An NFS destination of either version.
pub enum Dest {
    V3(v3::NfsDest),
    V41(v4::Nfs4Dest),
}
