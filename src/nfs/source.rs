//! `nfs://` sources: trees read from an NFS server with no mount, through the same
//! client as a destination (the walk's seam is [`Source`], the directories
//! [`rpc::source::SourceDir`]).

use std::collections::HashMap;
use std::ffi::OsStr;
use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::rpc::ops::{FileOps, ObjectOps, PathOps};
use super::rpc::source::{Operand, SourceDir, to_io};
use super::{Dest, connect, is_nfs_url};
use crate::config::Config;
use crate::dest::{Destination, RootState};
use crate::exit::{Error, Why};
use crate::meta::Kind;
use crate::report::Output;
use crate::walk::{Held, RemoteDir, Source, SrcEntry};

/// The run's `nfs://` sources, each connected once before the run starts.
pub struct NfsSources {
    /// By the operand as given.
    clients: HashMap<PathBuf, Connected>,
}

enum Connected {
    V3(Arc<super::v3::NfsDest>),
    V41(Arc<super::v4::Nfs4Dest>),
}

/// Whether the command line reads an `nfs://` source.
pub fn any(cfg: &Config) -> bool {
    cfg.sources
        .iter()
        .any(|s| s.to_str().is_some_and(is_nfs_url))
}

/// Connects every `nfs://` source of the command line; an error when the sources mix
/// local paths and URLs, or the run asks for what a source read over NFS cannot give.
pub fn connect_all(cfg: &Config, out: Arc<Output>) -> Result<NfsSources, Error> {
    if let Some(local) = cfg
        .sources
        .iter()
        .find(|s| !s.to_str().is_some_and(is_nfs_url))
    {
        return Err(refused(format!(
            "{} is a local path beside nfs:// sources: give local and NFS sources in separate runs",
            local.display()
        )));
    }
    refuse_options(cfg)?;
    let mut clients = HashMap::new();
    for src in &cfg.sources {
        let url = src.to_str().unwrap_or_default();
        let connected = match connect(url, cfg, out.clone())? {
            Dest::V3(d) => Connected::V3(Arc::new(d)),
            Dest::V41(d) => Connected::V41(Arc::new(d)),
        };
        clients.insert(src.clone(), connected);
    }
    Ok(NfsSources { clients })
}

fn refused(why: String) -> Error {
    Error::Usage(Why::new(why))
}

/// What reads the source by local path, and so cannot read one on a server yet.
fn refuse_options(cfg: &Config) -> Result<(), Error> {
    let by_path = [
        (cfg.xattrs.xattrs, "-X/--xattrs"),
        (cfg.xattrs.acls, "-A/--acls"),
        (
            cfg.paths.relative && cfg.paths.files_from.is_none(),
            "-R/--relative",
        ),
        (
            cfg.filter.reads_dirs(),
            "per-directory filter files (dir-merge, -F, -C)",
        ),
        (cfg.shard.is_some() || cfg.mpi, "--shard/--mpi"),
    ];
    match by_path.iter().find(|(on, _)| *on) {
        Some((_, what)) => Err(refused(format!(
            "{what} is not available with an nfs:// source yet: copy from a mounted path for it"
        ))),
        None => Ok(()),
    }
}

impl Source for NfsSources {
    fn path_of(&self, given: &Path) -> PathBuf {
        without_query(given)
    }

    fn operand(&self, given: &Path, contents: bool) -> io::Result<SrcEntry> {
        let path = without_query(given);
        // An operand, or a path below one (a `--files-from` name).
        let (client, below) = match self.clients.get(given) {
            Some(c) => (c, PathBuf::new()),
            None => self
                .clients
                .iter()
                .find_map(|(k, c)| {
                    let rest = path.strip_prefix(without_query(k)).ok()?;
                    Some((c, rest.to_path_buf()))
                })
                .ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "not below an nfs:// source of this run",
                    )
                })?,
        };
        match client {
            Connected::V3(d) => operand(d, path, &below, contents),
            Connected::V41(d) => operand(d, path, &below, contents),
        }
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
