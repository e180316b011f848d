//! NFS destinations, `nfs://server[:port]/path`, spoken directly: NFSv4.1 or NFSv3.
//!
//! The kernel client makes each small file wait for one call after another (LOOKUP,
//! CREATE, WRITE, COMMIT, SETATTR). Here every engine worker drives its own file with
//! only the waits the protocol requires, and all workers share a few multiplexed TCP
//! connections, so hundreds of calls are in flight at once.
//!
//! Layers, bottom up, each naming only those below it:
//! - [`rpc`]: what both versions stand on and do alike: the URL, records and their
//!   shape checks, TLS, the multiplexed transport, connection set-up and its advice,
//!   and, above the calls, the engine's `Destination` written once over small ops
//!   traits, the data pipeline, tree removal and the owner policy;
//! - [`v3`]: NFSv3 with MOUNT and the portmapper; [`v4`]: NFSv4.1 with sessions and
//!   COMPOUND. Neither names the other;
//! - this module: the version choice ([`connect`]) and [`Dest`], the one place that
//!   names both, and where the run's configuration and output meet the client.
//!
//! `NFSYNC_RPC_STATS=1` prints the calls sent at the end of a run (per procedure on
//! NFSv3: a new file costs CREATE + WRITE + SETATTR, a re-run one READDIRPLUS per
//! directory page).

pub mod rpc;
pub mod source;
pub mod v3;
pub mod v4;

use std::sync::Arc;
use std::time::Duration;

use rpc::policy::{Notice, Notices};
pub use rpc::url::is_nfs_url;
use rpc::{setup, url};

use crate::config::Config;
use crate::exit::{Error, Why};
use crate::report::Output;

/// Parses an `nfs://` URL, connects with the version it asks for (NFSv4.1 unless it
/// says `?version=3` or gives a `mountport`, then NFSv3 when the server does not speak
/// NFSv4.1) and checks the service answers. The query's options are
/// [`rpc::url::NfsUrl`]'s.
///
/// Every step is bounded by `config.timeout`; failures are [`Error::Connect`]
/// (unreachable, refused, wrong port, garbage) or [`Error::Timeout`].
pub fn connect(url: &str, config: &Config, out: Arc<Output>) -> Result<Dest, Error> {
    let parsed = url::parse(&url::without_dots(url)).map_err(|e| Error::Usage(e.into()))?;
    let new_runtime = || {
        setup::runtime(setup::RUNTIME_THREADS)
            .map_err(|e| Error::Connect(Why::new("cannot start the NFS runtime").because(e)))
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
    /// NFSv3.
    V3(v3::NfsDest),
    /// NFSv4.1.
    V41(v4::Nfs4Dest),
}
