//! The directory calls the rest of the NFSv3 client is built on: LOOKUP, MKDIR and
//! READDIRPLUS on a directory's handle.
//!
//! Apart from the ops traits' methods because they are the async layer those
//! methods (and `objects`, `paths`, `write`) call, and share one rule: a directory
//! handle that went stale is found again from the export root by its path and the
//! call made once more.

use std::io;

use nfs3_types::nfs3::{self as v3, NFS_PROGRAM as P, fattr3, ftype3, nfs_fh3, nfsstat3, sattr3};

use super::{NfsDest, NfsDir, ok};
use crate::dest;
use crate::nfs::rpc::names::{Intake, Refused};
use crate::nfs::v3::client::{Answer, dirop, post_fh};
use crate::nfs::v3::error;

impl NfsDest {
    /// Finds a directory again from the export root (after NFS3ERR_STALE).
    async fn walk(&self, path: &[Vec<u8>]) -> dest::Result<nfs_fh3> {
        let mut fh = self.root.clone();
        for c in path {
            fh = ok(self.nfs.lookup(&fh, c).await?)?.0;
        }
        Ok(fh)
    }

    /// Runs `f` on the directory's handle, re-resolving it once if it went stale.
    pub(in crate::nfs::v3) async fn in_dir<T, F, Fut>(
        &self,
        dir: &NfsDir,
        f: F,
    ) -> dest::Result<Answer<T>>
    where
        F: Fn(nfs_fh3) -> Fut,
        Fut: Future<Output = dest::Result<Answer<T>>>,
    {
        let a = f(dir.fh.clone()).await?;
        if matches!(a.res, Err(nfsstat3::NFS3ERR_STALE)) && !dir.path.is_empty() {
            let fh = self.walk(&dir.path).await?;
            return f(fh).await;
        }
        Ok(a)
    }

    /// LOOKUP in a directory; `None` for NOENT.
    pub(in crate::nfs::v3) async fn lookup(
        &self,
        dir: &NfsDir,
        name: &[u8],
    ) -> dest::Result<Option<(nfs_fh3, fattr3)>> {
        let a = self
            .in_dir(dir, |fh| async move { self.nfs.lookup(&fh, name).await })
            .await?;
        match a.res {
            Err(nfsstat3::NFS3ERR_NOENT) => Ok(None),
            r => r.map(Some).map_err(error::status),
        }
    }

    /// MKDIR, where EXIST with a directory counts as made when it answers a retried
    /// MKDIR of ours, or always when `strict` is false (DEST's own parents). With
    /// `strict`, another creator's directory is EEXIST: the engine then lists it
    /// instead of taking it for an empty one of its own.
    pub(in crate::nfs::v3) async fn mkdir_fh(
        &self,
        dir: &NfsDir,
        name: &[u8],
        mut attrs: sattr3,
        strict: bool,
    ) -> dest::Result<nfs_fh3> {
        loop {
            let a = self
                .in_dir(dir, |fh| {
                    let args = v3::MKDIR3args {
                        where_: dirop(&fh, name),
                        attributes: attrs.clone(),
                    };
                    async move {
                        self.nfs
                            .call::<_, v3::MKDIR3resok, v3::MKDIR3resfail>(P::NFSPROC3_MKDIR, &args)
                            .await
                    }
                })
                .await?;
            return match a.res {
                Ok(r) => match post_fh(r.obj) {
                    Some(fh) => Ok(fh),
                    None => self.lookup_dir(dir, name).await,
                },
                Err(nfsstat3::NFS3ERR_EXIST) if strict && !a.ambiguous => {
                    Err(io::Error::from_raw_os_error(libc::EEXIST).into())
                }
                Err(nfsstat3::NFS3ERR_EXIST) => self.lookup_dir(dir, name).await,
                // Owners refused (root squashed): again without them, once.
                Err(stat) if self.owners_refused_by(&attrs, stat) => {
                    attrs.uid = v3::Nfs3Option::None;
                    attrs.gid = v3::Nfs3Option::None;
                    continue;
                }
                Err(s) => Err(error::status(s)),
            };
        }
    }

    async fn lookup_dir(&self, dir: &NfsDir, name: &[u8]) -> dest::Result<nfs_fh3> {
        match self.lookup(dir, name).await? {
            Some((fh, a)) if a.type_ == ftype3::NF3DIR => Ok(fh),
            Some(_) => Err(io::Error::from_raw_os_error(libc::ENOTDIR).into()),
            None => Err(io::Error::from_raw_os_error(libc::ENOENT).into()),
        }
    }

    /// All entries of a directory by READDIRPLUS pages (restarting on a changed cookie
    /// verifier), without `.` and `..`; the names refused on the way (see
    /// `rpc::names`) beside them.
    pub(in crate::nfs::v3) async fn readdir(
        &self,
        fh: &nfs_fh3,
    ) -> dest::Result<Answer<(Vec<v3::entryplus3<'static>>, Vec<Refused>)>> {
        let mut restarts = 0;
        'restart: loop {
            let mut out = Vec::new();
            let mut intake = Intake::new("READDIRPLUS", true);
            let mut cookie = 0;
            let mut verf = v3::cookieverf3::default();
            loop {
                intake.next_page(cookie)?;
                let args = v3::READDIRPLUS3args {
                    dir: fh.clone(),
                    cookie,
                    cookieverf: verf,
                    dircount: 64 << 10,
                    maxcount: 1 << 20,
                };
                let a = self
                    .nfs
                    .call::<_, v3::READDIRPLUS3resok<'static>, v3::READDIRPLUS3resfail>(
                        P::NFSPROC3_READDIRPLUS,
                        &args,
                    )
                    .await?;
                let page = match a.res {
                    Ok(p) => p,
                    Err(nfsstat3::NFS3ERR_BAD_COOKIE) if restarts < 3 => {
                        restarts += 1;
                        continue 'restart;
                    }
                    Err(s) => {
                        return Ok(Answer {
                            res: Err(s),
                            ambiguous: false,
                        });
                    }
                };
                let entries = page.reply.entries.into_inner();
                let empty = entries.is_empty();
                if let Some(last) = entries.last() {
                    cookie = last.cookie;
                }
                verf = page.cookieverf;
                for e in entries {
                    if intake.admit(e.name.0.as_ref())? {
                        out.push(e);
                    }
                }
                if page.reply.eof {
                    return Ok(Answer {
                        res: Ok(intake.finish(out, |e| e.name.0.as_ref())),
                        ambiguous: false,
                    });
                }
                // A server that never gets anywhere must not keep us listing forever.
                if empty {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "server's READDIRPLUS pages make no progress",
                    )
                    .into());
                }
            }
        }
    }
}
