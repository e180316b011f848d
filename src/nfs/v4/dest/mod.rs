//! [`Nfs4Dest`]: the engine's [`Destination`](crate::dest::Destination) spoken as
//! NFSv4.1 COMPOUNDs (through [`NfsOps`] and the other ops traits).
//!
//! What NFSv3 needs several round trips for goes in one compound here: a directory
//! path is resolved in one (PUTROOTFH, LOOKUP…), a new directory is made and entered
//! in one (CREATE, GETFH), a symlink made and dated in one, a hard link (LOOKUP,
//! SAVEFH, PUTFH, LINK) in one, and a small file created, written, dated and closed in
//! one (see `write`). Listings ask READDIR for the attributes the quick check needs
//! and for each entry's handle, so nothing listed is looked up again.

use std::sync::Arc;

use nfs3_types::xdr_codec::Opaque;
use tokio::runtime::Runtime;
use tokio::sync::Semaphore;
use tokio::task::AbortHandle;

use super::attrs::{self, IdMap};
use super::batch::Batcher;
use super::client::{Answer, Client};
use super::error::{self, symlink_on_the_way};
use super::proto::{AttrsBuilder, Bitmap, Op, attr, name, status};
use super::reply::Res;
use crate::dest::{self, AttrSet, OwnerPolicy, RootState};
use crate::meta::{Kind, Meta};
use crate::nfs::rpc::ops::{DirCache, Listed, ListedDir, NfsOps};
use crate::nfs::rpc::policy::{AttrPolicy, Notices};

mod dirs;

/// A directory on the server: its handle, and its path from the server's root so a
/// handle that went stale can be found again.
#[derive(Clone, Debug)]
pub struct Nfs4Dir {
    pub fh: Arc<[u8]>,
    pub(super) path: Arc<Vec<Vec<u8>>>,
}

impl Nfs4Dir {
    pub(super) fn child(&self, fh: Vec<u8>, name: &[u8]) -> Nfs4Dir {
        let mut path = (*self.path).clone();
        path.push(name.to_vec());
        Nfs4Dir {
            fh: fh.into(),
            path: Arc::new(path),
        }
    }
}

/// Operations of one small file's copy (PUTFH, OPEN, GETFH, WRITE, SETATTR, CLOSE).
const SMALL_FILE_OPS: usize = 6;

/// Memory for file data in flight, all files together.
const BUDGET: usize = 64 << 20;

/// An NFSv4.1 export as the engine's destination.
pub struct Nfs4Dest {
    pub(super) rt: Runtime,
    pub(super) client: Arc<Client>,
    /// DEST's path from the server's root (the pseudo-filesystem's root).
    pub(super) path: Vec<Vec<u8>>,
    label: String,
    /// The owners to keep, until the server shows it does not (see `owners`).
    pub(super) attrs: AttrPolicy,
    /// Bytes of file data read but not yet acknowledged by the server.
    pub(super) budget: Arc<Semaphore>,
    pub(super) ids: IdMap,
    /// Bytes per WRITE and READ: the server's limits, within the session's.
    pub(super) io_size: u32,
    /// Bytes a READDIR reply may hold.
    readdir_max: u32,
    dir_cache: DirCache<Vec<u8>>,
    renewer: AbortHandle,
    /// Small files' compounds, combined when the slots are busy (`?batch=0`: never).
    batcher: Batcher,
    batched: bool,
    /// The server is an EFS mount target: its limits per client explain some errors.
    pub(super) efs: bool,
    /// Whether whole small files read as a source go through the batcher.
    batch_reads: bool,
}

/// What `connect` learned and hands over.
pub(super) struct Setup {
    pub rt: Runtime,
    pub client: Arc<Client>,
    pub path: Vec<Vec<u8>>,
    pub label: String,
    pub io_size: u32,
    pub readdir_max: u32,
    pub renewer: AbortHandle,
    pub batcher: Batcher,
    pub batched: bool,
    pub batch_reads: bool,
    /// The server is an EFS mount target (its connections are bound).
    pub efs: bool,
}

impl Drop for Nfs4Dest {
    fn drop(&mut self) {
        self.renewer.abort();
        if std::env::var_os("NFSYNC_RPC_STATS").is_some() {
            self.attrs.calls(&format!(
                "COMPOUND={} sessions={}",
                self.client.sent(),
                self.client.sessions()
            ));
        }
        let client = self.client.clone();
        self.rt.block_on(client.close());
    }
}

/// The `dest::Result` of a compound: its reply when every operation went through,
/// else the failing status as a per-entry error.
pub(super) fn ok(a: Answer) -> dest::Result<super::reply::Reply> {
    if a.reply.status == status::OK {
        Ok(a.reply)
    } else {
        Err(error::status(a.reply.status))
    }
}

/// The `n`th result of operation `op` in a reply.
pub(super) fn nth(reply: &super::reply::Reply, op: u32, n: usize) -> Option<&Res> {
    reply
        .results
        .iter()
        .filter(|(o, st, _)| *o == op && *st == status::OK)
        .map(|(_, _, r)| r)
        .nth(n)
}

pub(super) fn put(fh: &[u8]) -> Op {
    Op::PutFh(Opaque::owned(fh.to_vec()))
}

/// The handle a GETFH in the reply returned.
pub(super) fn got_fh(reply: &super::reply::Reply) -> dest::Result<Vec<u8>> {
    match nth(reply, 10, 0) {
        Some(Res::GetFh(fh)) => Ok(fh.clone()),
        _ => Err(error::garbage("the reply carries no file handle")),
    }
}

impl Nfs4Dest {
    pub(super) fn new(s: Setup, owners: OwnerPolicy, notices: Arc<dyn Notices>) -> Nfs4Dest {
        Nfs4Dest {
            rt: s.rt,
            client: s.client,
            path: s.path,
            attrs: AttrPolicy::new(owners, notices, s.label.clone()),
            label: s.label,
            budget: Arc::new(Semaphore::new(BUDGET)),
            ids: IdMap::default(),
            io_size: s.io_size,
            readdir_max: s.readdir_max,
            dir_cache: DirCache::default(),
            renewer: s.renewer,
            batcher: s.batcher,
            batched: s.batched,
            efs: s.efs,
            batch_reads: s.batch_reads,
        }
    }

    /// Whether small files' compounds go through the batcher.
    pub(super) fn batched(&self) -> bool {
        self.batched
    }

    /// The batcher for whole small files read as a source, unless `?batch=0`.
    pub(super) fn read_batcher(&self) -> Option<&Batcher> {
        self.batch_reads.then_some(&self.batcher)
    }

    /// The decoded attributes of the `n`th GETATTR in a reply.
    pub(super) fn attrs_in(
        &self,
        reply: &super::reply::Reply,
        n: usize,
    ) -> dest::Result<attrs::Decoded> {
        match nth(reply, 9, n) {
            Some(Res::GetAttr(f)) => attrs::decode(f, &self.ids).map_err(error::garbage),
            _ => Err(error::garbage("the reply carries no attributes")),
        }
    }

    /// The metadata in the `n`th GETATTR of a reply, which must be complete.
    pub(super) fn meta_in(&self, reply: &super::reply::Reply, n: usize) -> dest::Result<Meta> {
        self.attrs_in(reply, n)?
            .meta
            .ok_or_else(|| error::garbage("the server left out type, size, mode or mtime"))
    }
}

/// See [`NfsOps::explain`]: `efs` whether the server is an EFS mount target.
fn explain(efs: bool, e: &dest::Error) -> Option<&'static str> {
    match e {
        dest::Error::Entry(io) if efs && io.raw_os_error() == Some(libc::EDQUOT) => {
            Some(EFS_LIMITS)
        }
        _ => None,
    }
}

/// What EFS's "Disk quota exceeded" means.
pub(crate) const EFS_LIMITS: &str = "on EFS this is not a quota: EFS refuses a client past its \
     limits of 128 users with files open at once, 32,768 open files or 8,192 locks; run with \
     fewer --jobs, or as one user";

impl NfsOps for Nfs4Dest {
    type Dir = Nfs4Dir;
    type Fh = Vec<u8>;
    const TOP: &'static str = "the server's root";

    /// EFS answers NFS4ERR_DQUOT when a client passes its limits (the EFS quotas
    /// page, "Quotas for NFS clients"); it has no user quotas to exceed.
    fn explain(&self, e: &dest::Error) -> Option<&'static str> {
        explain(self.efs, e)
    }

    /// `nfs://server/path`.
    fn label(&self) -> &str {
        &self.label
    }

    fn runtime(&self) -> &Runtime {
        &self.rt
    }

    fn dir_cache(&self) -> &DirCache<Vec<u8>> {
        &self.dir_cache
    }

    fn handle(dir: &Nfs4Dir) -> &[u8] {
        &dir.fh
    }

    fn child(dir: &Nfs4Dir, fh: Vec<u8>, name: &[u8]) -> Nfs4Dir {
        dir.child(fh, name)
    }

    /// Bounded by the session's slots (`?slots=`, and what the server grants), times
    /// the small files one compound can carry when they are batched.
    fn bounds(&self) -> crate::tune::Bounds {
        let per_call = if self.batched {
            (self.client.max_ops() as usize).saturating_sub(1) / SMALL_FILE_OPS
        } else {
            1
        };
        crate::tune::Bounds::nfs(self.client.slots() * per_call.max(1))
    }

    fn wire(&self) -> dest::Wire {
        dest::Wire {
            version: "4.1",
            rpcs: self.client.sent(),
        }
    }

    fn connection(&self) -> String {
        format!(
            "NFSv4.1, {}, a session of {} slots",
            self.client.rpc().describe(),
            self.client.slots()
        )
    }

    fn root_state(&self) -> dest::Result<RootState> {
        self.rt.block_on(async {
            let mut ops = vec![Op::PutRootFh];
            ops.extend(self.path.iter().map(|c| Op::Lookup(name(c))));
            ops.push(Op::GetAttr(attrs::wanted()));
            let a = self.client.compound(ops).await?;
            if a.reply.status == status::NOENT {
                return Ok(RootState::Missing);
            }
            if let Some(e) = symlink_on_the_way(&a.reply, &self.path) {
                return Err(e);
            }
            let r = ok(a)?;
            // A link at the end is DEST itself, not a directory on the way to it: the
            // engine sees a non-directory there, as it would a file.
            Ok(RootState::Exists(self.meta_in(&r, 0)?))
        })
    }

    fn dest_path(&self) -> &[Vec<u8>] {
        &self.path
    }

    fn dir_at(&self, upto: usize) -> dest::Result<Nfs4Dir> {
        self.dir_of(&self.path[..upto])
    }

    fn find(&self, dir: &Nfs4Dir, n: &[u8]) -> dest::Result<Option<(Vec<u8>, Meta)>> {
        self.rt.block_on(self.lookup(dir, n))
    }

    fn read_dir(&self, dir: &Nfs4Dir) -> dest::Result<ListedDir<Vec<u8>>> {
        let (entries, refused) = self.rt.block_on(self.readdir(dir))?;
        let entries = entries
            .into_iter()
            .map(|(name, d)| Listed {
                name,
                meta: d.meta,
                fh: d.fh,
            })
            .collect();
        Ok(ListedDir { entries, refused })
    }

    fn make_dir(&self, dir: &Nfs4Dir, n: &[u8], m: &Meta) -> dest::Result<Vec<u8>> {
        self.rt.block_on(self.create_dir(dir, n, m))
    }

    fn read_link(&self, dir: &Nfs4Dir, n: &[u8]) -> dest::Result<Vec<u8>> {
        let r = self.rt.block_on(async {
            ok(self
                .in_dir(dir, |fh| vec![put(fh), Op::Lookup(name(n)), Op::ReadLink])
                .await?)
        })?;
        match nth(&r, 27, 0) {
            Some(Res::ReadLink(t)) => Ok(t.clone()),
            _ => Err(error::garbage("READLINK reply without a target")),
        }
    }

    fn set_attrs(&self, dir: &Nfs4Dir, n: &[u8], m: &Meta, what: AttrSet) -> dest::Result<()> {
        let link = m.kind == Kind::Symlink;
        if !what.mtime && !what.mode && !self.asks_owners() {
            return Ok(()); // only owners were asked for, and the server keeps none
        }
        self.rt.block_on(async {
            let a = self
                .with_owner_retry(dir, |fh, owners| {
                    let mut b = AttrsBuilder::default();
                    if what.mode && !link {
                        b = b.mode(m.mode);
                    }
                    if what.owner && owners {
                        b = self.with_owners(b, m);
                    }
                    if what.mtime {
                        b = b.mtime(m.mtime.sec, m.mtime.nsec);
                    }
                    let mut ops = vec![put(fh), Op::Lookup(name(n))];
                    if !b.is_empty() {
                        ops.push(Self::setattr(b));
                    }
                    if link && what.mtime {
                        ops.push(Op::GetAttr(Bitmap::of(&[
                            attr::TYPE,
                            attr::SIZE,
                            attr::MODE,
                            attr::TIME_MODIFY,
                        ])));
                    }
                    ops
                })
                .await?;
            let r = ok(a)?;
            if link && what.mtime {
                self.check_symlink_time(self.attrs_in(&r, 0)?.meta, m);
            }
            Ok(())
        })
    }

    /// One SETATTR with everything (ganesha drops setgid at CREATE, so the mode
    /// always goes along); none when nothing differs, which keeps a re-run free.
    fn set_dir_attrs(&self, dir: &Nfs4Dir, m: &Meta, _what: AttrSet) -> dest::Result<()> {
        self.rt.block_on(async {
            let a = self
                .with_owner_retry(dir, |fh, owners| {
                    let mut b = AttrsBuilder::default().mode(m.mode);
                    if owners {
                        b = self.with_owners(b, m);
                    }
                    vec![put(fh), Self::setattr(b.mtime(m.mtime.sec, m.mtime.nsec))]
                })
                .await?;
            ok(a).map(|_| ())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disk_quota_exceeded_from_efs_is_explained_as_its_client_limits() {
        let dquot = || dest::Error::Entry(std::io::Error::from_raw_os_error(libc::EDQUOT));
        assert_eq!(explain(true, &dquot()), Some(EFS_LIMITS));
        assert!(EFS_LIMITS.contains("32,768 open files"));
        assert_eq!(explain(false, &dquot()), None);
        let nospc = dest::Error::Entry(std::io::Error::from_raw_os_error(libc::ENOSPC));
        assert_eq!(explain(true, &nospc), None);
    }
}
