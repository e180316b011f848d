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
//! - this module: the version choice ([`connect`]), [`Dest`] and [`NfsSources`] (trees
//!   read from a server with no mount, through the same client: the walk's seam is
//!   [`Source`], the directories [`rpc::source::SourceDir`]), the one place that names
//!   both versions, and where the run's configuration and output meet the client.
//!
//! `NFSYNC_RPC_STATS=1` prints the calls sent at the end of a run (per procedure on
//! NFSv3: a new file costs CREATE + WRITE + SETATTR, a re-run one READDIRPLUS per
//! directory page).

pub mod rpc;
pub mod v3;
pub mod v4;

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rpc::ops::{FileOps, ObjectOps, PathOps, to_io};
use rpc::policy::{Notice, Notices};
use rpc::source::{Operand, SourceDir};
pub use rpc::url::is_nfs_url;
use rpc::{setup, url};

use crate::config::Config;
use crate::dest::{Destination, RootState};
use crate::exit::{Error, Why};
use crate::meta::Kind;
use crate::report::Escaped;
use crate::report::Output;
use crate::source::{Held, RemoteDir, Source, SrcEntry};

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

/// The run's `nfs://` sources, each connected once before the run starts.
pub struct NfsSources {
    /// By the operand as given: where on the server the client stands (the URL
    /// without its query; with `-R`, the part before `/./`), and the client.
    clients: HashMap<PathBuf, (PathBuf, Connected)>,
}

enum Connected {
    V3(Arc<v3::NfsDest>),
    V41(Arc<v4::Nfs4Dest>),
}

/// Whether the command line reads an `nfs://` source.
pub fn any_source(cfg: &Config) -> bool {
    cfg.sources
        .iter()
        .any(|s| s.to_str().is_some_and(is_nfs_url))
}

/// Connects every `nfs://` source of the command line; an error when the sources mix
/// local paths and URLs, or the run asks for what a source read over NFS cannot give.
pub fn connect_sources(cfg: &Config, out: Arc<Output>) -> Result<NfsSources, Error> {
    if let Some(local) = cfg
        .sources
        .iter()
        .find(|s| !s.to_str().is_some_and(is_nfs_url))
    {
        return Err(refused(format!(
            "{} is a local path beside nfs:// sources: give local and NFS sources in separate runs",
            Escaped(local)
        )));
    }
    if let Some(what) = unread_attributes(cfg) {
        out.warn(format_args!(
            "{what} are not read from an nfs:// source (NFSv3 has none on the wire; \
             nfsync's NFSv4.1 client does not read them yet): copying without them, \
             the destination's left as they are"
        ));
    }
    // -R: the client stands where the path to recreate starts; what is named below it
    // (the directories on the way, then the path) is looked up from there.
    let relative = cfg.paths.relative && cfg.paths.files_from.is_none();
    let urls = cfg
        .sources
        .iter()
        .map(|src| {
            let given = src.to_str().unwrap_or_default();
            match relative {
                true => anchor(given)
                    .filter(|_| !encoded_below_anchor(given))
                    .ok_or_else(|| unanchored(src)),
                false => Ok(given.to_owned()),
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut clients = HashMap::new();
    for (src, url) in cfg.sources.iter().zip(urls) {
        let connected = match connect(&url, cfg, out.clone())? {
            Dest::V3(d) => Connected::V3(Arc::new(d)),
            Dest::V41(d) => Connected::V41(Arc::new(d)),
        };
        let root = without_query(Path::new(&url));
        clients.insert(src.clone(), (root, connected));
    }
    Ok(NfsSources { clients })
}

fn refused(why: String) -> Error {
    Error::Usage(Why::new(why))
}

/// `nfs://host/base/./rel?query` as `nfs://host/base/?query`: the URL of the directory a
/// `-R` operand's path is recreated from; `None` without a `/./`.
fn anchor(url: &str) -> Option<String> {
    let (path, query) = match url.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (url, None),
    };
    let at = path.find("/./")?;
    let base = &path[..at + 1];
    Some(match query {
        Some(q) => format!("{base}?{q}"),
        None => base.to_owned(),
    })
}

/// Whether the part of a `-R` URL after its `/./` holds a percent escape: that part is
/// recreated under DEST as written, so a name spelled `a%20b` there would be looked up
/// and named encoded. Refused with the reason rather than copied under the wrong name.
fn encoded_below_anchor(url: &str) -> bool {
    let path = url.split_once('?').map_or(url, |(p, _)| p);
    path.split_once("/./")
        .is_some_and(|(_, rel)| rel.contains('%'))
}

/// A `-R` URL without `/./` (or with a percent escape after it): rsync would recreate
/// its whole path, which names the export and the directories above it in the server's
/// namespace, not a tree to copy.
fn unanchored(src: &Path) -> Error {
    refused(format!(
        "-R/--relative with an nfs:// source needs a /./ in the URL's path, with no percent \
         escape after it (the part after it is recreated under DEST as written): {}",
        Escaped(src)
    ))
}

/// `-X`/`-A` as the one warning of the run names them: what an `nfs://` source does
/// not give (`None` when neither is asked for, or for `--list-only`, which shows none).
fn unread_attributes(cfg: &Config) -> Option<&'static str> {
    if cfg.paths.list_only {
        return None;
    }
    match (cfg.xattrs.xattrs, cfg.xattrs.acls) {
        (true, true) => Some("-X/-A: extended attributes and ACLs"),
        (true, false) => Some("-X: extended attributes"),
        (false, true) => Some("-A: ACLs"),
        (false, false) => None,
    }
}

impl Source for NfsSources {
    fn path_of(&self, given: &Path) -> PathBuf {
        without_query(given)
    }

    fn operand(&self, given: &Path, contents: bool) -> io::Result<SrcEntry> {
        let path = without_query(given);
        // An operand, or a path below one (a `--files-from` name, a `-R` path and the
        // directories on the way to it): below the client that stands nearest.
        let (root, client) = match self.clients.get(given) {
            Some(c) => c,
            None => self
                .clients
                .values()
                .filter(|(root, _)| path.starts_with(root))
                .max_by_key(|(root, _)| root.components().count())
                .ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "not below an nfs:// source of this run",
                    )
                })?,
        };
        let below = path
            .strip_prefix(root)
            .unwrap_or(Path::new(""))
            .to_path_buf();
        match client {
            Connected::V3(d) => operand(d, path, &below, contents),
            Connected::V41(d) => operand(d, path, &below, contents),
        }
    }

    /// Neither version's client reads them: NFSv3 has none on the wire (the NFSACL
    /// side protocol aside), and the NFSv4.1 client does not ask for the `acl`
    /// attribute. [`connect_sources`] says so once.
    fn reads_xattrs(&self) -> bool {
        false
    }
}

/// `nfs://host/path/` as `/path`, the path on the server, as the other refusals of a
/// symlink there name it.
fn on_server(url: &Path) -> PathBuf {
    let s = url.to_string_lossy();
    let after_host = s
        .strip_prefix("nfs://")
        .and_then(|r| r.find('/').map(|i| &r[i..]))
        .unwrap_or(&s);
    PathBuf::from(after_host.trim_end_matches('/'))
}

/// `nfs://host/path/?opts` as `nfs://host/path/`: the name messages give, and the
/// operand rsync's trailing-slash rule reads.
fn without_query(given: &Path) -> PathBuf {
    let s = given.to_string_lossy();
    PathBuf::from(s.split_once('?').map_or(&*s, |(p, _)| p))
}

/// The entry the walk starts from for the URL's path on `ops`'s server, or for
/// `below` it. Its directory answers for it under any name (DEST's name for a lone
/// file, `.` in a listing); with `contents` (`SRC/`) the walk lists it.
fn operand<T>(ops: &Arc<T>, path: PathBuf, below: &Path, contents: bool) -> io::Result<SrcEntry>
where
    T: FileOps + ObjectOps + PathOps + 'static,
{
    let open = |at: &Path| -> io::Result<T::Dir> {
        match PathOps::open_path(&**ops, at, false).map_err(to_io)? {
            Some(dir) => Ok(dir),
            None => Err(io::Error::from_raw_os_error(libc::ENOENT)),
        }
    };
    let comps: Vec<Vec<u8>> = below
        .components()
        .map(|c| c.as_os_str().as_bytes().to_vec())
        .collect();
    let holder = match comps.split_last() {
        // The URL's own path: the export root has no parent to be named in.
        None => {
            let meta = match Destination::root_state(&**ops).map_err(to_io)? {
                RootState::Exists(m) => m,
                RootState::Missing => return Err(io::Error::from_raw_os_error(libc::ENOENT)),
            };
            let name = ops.dest_path().last().cloned();
            match name {
                Some(name) => Operand {
                    parent: Some(Box::new(SourceDir::new(
                        ops.clone(),
                        open(Path::new(".."))?,
                    ))),
                    name: OsString::from_vec(name),
                    root: None,
                    meta,
                },
                None => Operand {
                    parent: None,
                    name: OsString::new(),
                    root: Some(Box::new(SourceDir::new(ops.clone(), open(Path::new(""))?))),
                    meta,
                },
            }
        }
        Some((last, up)) => {
            let parent = SourceDir::below(
                ops.clone(),
                open(Path::new(""))?,
                open(below.parent().unwrap_or(Path::new("")))?,
                up.to_vec(),
            );
            let meta = RemoteDir::lstat(&parent, OsStr::from_bytes(last))?;
            Operand {
                parent: Some(Box::new(parent)),
                name: OsString::from_vec(last.clone()),
                root: None,
                meta,
            }
        }
    };
    let name = match holder.name.is_empty() {
        true => OsString::from("."),
        false => holder.name.clone(),
    };
    // `link/` asks for what the link leads to, which a path gets from the kernel; on
    // the server it is refused as every other symlink on the way, not copied as a link.
    if contents && holder.meta.kind == Kind::Symlink {
        return Err(crate::options::trust::server_link(on_server(&path)));
    }
    Ok(SrcEntry {
        name,
        path,
        meta: holder.meta,
        parent: Some(Arc::new(Held::Remote(Box::new(holder)))),
    })
}
