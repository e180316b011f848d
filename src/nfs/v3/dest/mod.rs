//! [`NfsDest`]: the engine's [`Destination`](crate::dest::Destination) spoken as NFSv3
//! (through [`NfsOps`] and the other ops traits).
//!
//! The trait is blocking and called from many worker threads; each call runs its
//! RPCs with `Runtime::block_on` on the calling thread, and the transport is shared
//! without a global lock, so N workers keep N files in flight. Handles and
//! attributes that CREATE/MKDIR/READDIRPLUS return are used directly: nothing we just
//! made or listed is looked up again (directory handles from a listing are kept for
//! `open_dir`, and hard-link targets' handles for `hard_link`).

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex};

use nfs3_types::nfs3::{self as v3, NFS_PROGRAM as P, ftype3, nfs_fh3, nfsstat3, sattr3};
use tokio::runtime::Runtime;
use tokio::sync::Semaphore;

use super::client::{Answer, NFS3_TIMES, Nfs, meta, mtime_only, post_fh, post_op};
use super::error;
use super::mount::Mounted;
use crate::dest::{self, AttrSet, OwnerPolicy, RootState};
use crate::exit::{Error, Why};
use crate::meta::{Meta, Time};
use crate::nfs::rpc::ops::{DirCache, EntryKey, Listed, ListedDir, NfsOps};
use crate::nfs::rpc::policy::{AttrPolicy, Notices};

mod dirs;

/// A directory on the server: its handle, and its path from the export root so a
/// handle that went stale can be found again.
#[derive(Clone, Debug)]
pub struct NfsDir {
    /// The file handle.
    pub fh: nfs_fh3,
    /// Path components from the export root.
    path: Arc<Vec<Vec<u8>>>,
}

impl NfsDir {
    pub(super) fn child(&self, fh: nfs_fh3, name: &[u8]) -> NfsDir {
        let mut path = (*self.path).clone();
        path.push(name.to_vec());
        NfsDir {
            fh,
            path: Arc::new(path),
        }
    }
}

/// Sizes the server told us in FSINFO.
#[derive(Clone, Copy, Debug)]
pub struct FsInfo {
    /// Bytes per WRITE.
    pub wsize: u32,
    /// Bytes per READ.
    pub rsize: u32,
}

/// Largest READ/WRITE we send, whatever the server allows: bounds memory per call.
const MAX_IO: u32 = 1 << 20;

/// FSINFO on the export root.
pub async fn fsinfo(nfs: &Nfs, root: &nfs_fh3) -> Result<FsInfo, Error> {
    let args = v3::FSINFO3args::from(root.clone());
    let a = nfs
        .call::<_, v3::FSINFO3resok, v3::FSINFO3resfail>(P::NFSPROC3_FSINFO, &args)
        .await
        .map_err(|e| Error::Connect(Why::new("FSINFO").because(e)))?;
    let ok = a
        .res
        .map_err(|s| Error::Connect(format!("FSINFO on the export root: {s}").into()))?;
    // As large as the server allows (fewer calls per file), within our own cap; a
    // server that says 0 gets a conservative 64 KiB.
    let size = |max: u32| {
        if max == 0 { 64 << 10 } else { max.min(MAX_IO) }
    };
    Ok(FsInfo {
        wsize: size(ok.wtmax),
        rsize: size(ok.rtmax),
    })
}

/// An NFSv3 export as the engine's destination.
pub struct NfsDest {
    pub(super) rt: Runtime,
    pub(super) nfs: Arc<Nfs>,
    root: nfs_fh3,
    /// DEST's path below the export root.
    pub(super) subpath: Vec<Vec<u8>>,
    label: String,
    pub(super) info: FsInfo,
    /// The owners to keep, until the server shows it does not (see `attrs`).
    pub(super) attrs: AttrPolicy,
    /// Bytes of file data read but not yet acknowledged by the server, for all files.
    pub(super) budget: Arc<Semaphore>,
    dir_cache: DirCache<nfs_fh3>,
    /// Handles of written files that have other links, for `hard_link`.
    pub(super) link_cache: Mutex<HashMap<EntryKey, nfs_fh3>>,
    /// The export's path on the server, for `--backup-dir` and the like given as
    /// absolute paths.
    pub(super) export: String,
}

/// Memory for file data in flight, all files together (see `write::held`): with
/// 1 MiB writes, 32 calls.
const BUDGET: usize = 64 << 20;

impl Drop for NfsDest {
    /// `NFSYNC_RPC_STATS=1` prints how many calls of each procedure the run sent, to
    /// check that nothing is looked up twice (benchmarks, debugging).
    fn drop(&mut self) {
        if std::env::var_os("NFSYNC_RPC_STATS").is_some() {
            let counts: Vec<String> = self
                .nfs
                .rpc()
                .sent_counts()
                .into_iter()
                .map(|(p, n)| {
                    let name = P::try_from(p).map_or(format!("proc{p}"), |p| {
                        p.to_string().trim_start_matches("NFSPROC3_").to_string()
                    });
                    format!("{name}={n}")
                })
                .collect();
            self.attrs.calls(&counts.join(" "));
        }
    }
}

/// The `io::Result` of an answer, with the status as errno.
pub(super) fn ok<T>(a: Answer<T>) -> dest::Result<T> {
    a.res.map_err(error::status)
}

impl NfsDest {
    pub(crate) fn new(
        rt: Runtime,
        nfs: Arc<Nfs>,
        m: Mounted,
        info: FsInfo,
        label: String,
        owners: OwnerPolicy,
        notices: Arc<dyn Notices>,
    ) -> NfsDest {
        NfsDest {
            rt,
            nfs,
            root: m.root,
            subpath: m.subpath.into_iter().map(String::into_bytes).collect(),
            attrs: AttrPolicy::new(owners, notices, label.clone()),
            label,
            info,
            budget: Arc::new(Semaphore::new(BUDGET)),
            dir_cache: DirCache::default(),
            link_cache: Mutex::new(HashMap::new()),
            export: m.export,
        }
    }

    pub(super) fn root_nfs_dir(&self) -> NfsDir {
        NfsDir {
            fh: self.root.clone(),
            path: Arc::new(Vec::new()),
        }
    }
}

pub(super) fn cache_key(dir: &nfs_fh3, name: &[u8]) -> EntryKey {
    (dir.data.to_vec(), name.to_vec())
}

impl NfsOps for NfsDest {
    type Dir = NfsDir;
    type Fh = nfs_fh3;
    const TOP: &'static str = "the export root";

    /// `nfs://server/export`.
    fn label(&self) -> &str {
        &self.label
    }

    fn runtime(&self) -> &Runtime {
        &self.rt
    }

    fn dir_cache(&self) -> &DirCache<nfs_fh3> {
        &self.dir_cache
    }

    fn handle(dir: &NfsDir) -> &[u8] {
        &dir.fh.data
    }

    fn child(dir: &NfsDir, fh: nfs_fh3, name: &[u8]) -> NfsDir {
        dir.child(fh, name)
    }

    /// Bounded by the RPC window (connections × calls per connection, `?conns=` and
    /// `?window=` in the URL): see [`crate::tune::Bounds::nfs`].
    fn bounds(&self) -> crate::tune::Bounds {
        crate::tune::Bounds::nfs(self.nfs.rpc().capacity())
    }

    fn wire(&self) -> dest::Wire {
        let rpcs = self.nfs.rpc().sent_counts().iter().map(|(_, n)| n).sum();
        dest::Wire { version: "3", rpcs }
    }

    fn connection(&self) -> String {
        format!("NFSv3, {}", self.nfs.rpc().describe())
    }

    fn storable_time(&self, t: Time) -> Time {
        t.clamp_to(NFS3_TIMES.0, NFS3_TIMES.1)
    }

    fn root_state(&self) -> dest::Result<RootState> {
        self.rt.block_on(async {
            let mut fh = self.root.clone();
            let mut attrs = None;
            for (i, c) in self.subpath.iter().enumerate() {
                match self.nfs.lookup(&fh, c).await?.res {
                    // A link at the end is DEST itself, not a directory on the way to
                    // it: the engine sees a non-directory there, as it would a file.
                    Ok((_, a)) if a.type_ == ftype3::NF3LNK && i + 1 < self.subpath.len() => {
                        return Err(self.link_refused(&self.subpath[..=i]));
                    }
                    Ok((f, a)) => {
                        fh = f;
                        attrs = Some(a);
                    }
                    Err(nfsstat3::NFS3ERR_NOENT) => return Ok(RootState::Missing),
                    Err(s) => return Err(error::status(s)),
                }
            }
            let attrs = match attrs {
                Some(a) => a,
                None => ok(self.nfs.getattr(&fh).await?)?,
            };
            Ok(RootState::Exists(meta(&attrs)))
        })
    }

    fn dest_path(&self) -> &[Vec<u8>] {
        &self.subpath
    }

    fn dir_at(&self, upto: usize) -> dest::Result<NfsDir> {
        let mut dir = self.root_nfs_dir();
        for (i, name) in self.subpath[..upto].iter().enumerate() {
            let fh = self.rt.block_on(async {
                match self.lookup(&dir, name).await? {
                    Some((fh, a)) if a.type_ == ftype3::NF3DIR => Ok(fh),
                    Some((_, a)) if a.type_ == ftype3::NF3LNK => {
                        Err(self.link_refused(&self.subpath[..=i]))
                    }
                    Some(_) => Err(io::Error::from_raw_os_error(libc::ENOTDIR).into()),
                    None => {
                        let attrs = sattr3 {
                            mode: v3::Nfs3Option::Some(0o755),
                            ..Default::default()
                        };
                        self.mkdir_fh(&dir, name, attrs, false).await
                    }
                }
            })?;
            dir = dir.child(fh, name);
        }
        Ok(dir)
    }

    fn find(&self, dir: &NfsDir, name: &[u8]) -> dest::Result<Option<(nfs_fh3, Meta)>> {
        let found = self.rt.block_on(self.lookup(dir, name))?;
        Ok(found.map(|(fh, a)| (fh, meta(&a))))
    }

    fn read_dir(&self, dir: &NfsDir) -> dest::Result<ListedDir<nfs_fh3>> {
        let (entries, refused) = ok(self
            .rt
            .block_on(self.in_dir(dir, |fh| async move { self.readdir(&fh).await }))?)?;
        let entries = entries
            .into_iter()
            .map(|e| Listed {
                name: e.name.0.into_owned(),
                meta: post_op(e.name_attributes).map(|a| meta(&a)),
                fh: post_fh(e.name_handle),
            })
            .collect();
        Ok(ListedDir { entries, refused })
    }

    /// Writable by us until `set_dir_attrs` gives the final mode, owners and mtime in
    /// the one SETATTR that every new directory needs for its mtime anyway.
    fn make_dir(&self, dir: &NfsDir, name: &[u8], m: &Meta) -> dest::Result<nfs_fh3> {
        let attrs = self.create_attrs(m, Some(m.mode | 0o700));
        self.rt.block_on(self.mkdir_fh(dir, name, attrs, true))
    }

    fn read_link(&self, dir: &NfsDir, name: &[u8]) -> dest::Result<Vec<u8>> {
        self.rt.block_on(async {
            let Some((fh, _)) = self.lookup(dir, name).await? else {
                return Err(io::Error::from_raw_os_error(libc::ENOENT).into());
            };
            let args = v3::READLINK3args { symlink: fh };
            let r = ok(self
                .nfs
                .call::<_, v3::READLINK3resok<'static>, v3::READLINK3resfail>(
                    P::NFSPROC3_READLINK,
                    &args,
                )
                .await?)?;
            Ok(r.data.0.into_owned())
        })
    }

    fn set_attrs(&self, dir: &NfsDir, name: &[u8], m: &Meta, what: AttrSet) -> dest::Result<()> {
        self.rt.block_on(async {
            let Some((fh, have)) = self.lookup(dir, name).await? else {
                return Err(io::Error::from_raw_os_error(libc::ENOENT).into());
            };
            let mut s = sattr3::default();
            if what.mode && have.type_ != ftype3::NF3LNK {
                s.mode = v3::Nfs3Option::Some(m.mode);
            }
            if what.owner {
                self.set_owners(&mut s, m, None);
            }
            if what.mtime {
                s.mtime = mtime_only(m.mtime).mtime;
            }
            if s.mode.is_none() && s.uid.is_none() && s.gid.is_none() && !what.mtime {
                return Ok(()); // only owners were asked for, and the server keeps none
            }
            let after = ok(self.apply(&fh, s).await?)?;
            if what.mtime && have.type_ == ftype3::NF3LNK {
                self.check_symlink_time(after.as_ref(), m);
            }
            Ok(())
        })
    }

    /// One SETATTR with everything (ganesha drops setgid at MKDIR, so the mode always
    /// goes along; setting part costs the same call); none when nothing differs, which
    /// keeps a re-run's directories free.
    fn set_dir_attrs(&self, dir: &NfsDir, m: &Meta, _what: AttrSet) -> dest::Result<()> {
        let s = self.finish_attrs(m, None, true);
        self.rt.block_on(async {
            let a = self.in_dir(dir, |fh| {
                let s = s.clone();
                async move { self.apply(&fh, s).await }
            });
            ok(a.await?).map(|_| ())
        })
    }
}
