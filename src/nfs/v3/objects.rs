//! Making and removing everything that is not file data: symlinks, hard links, device
//! nodes and fifos, and recursive removal for `--delete` (RENAME is in `paths`).
//!
//! Each creating call is followed by the SETATTR that sets the mtime last (and whatever
//! the creating call's attributes show is still missing). A reply that comes after a
//! reconnect may be the answer to our own earlier attempt (`Answer::ambiguous`): then
//! EXIST means done — checked by LOOKUP, and for LINK by comparing file ids — and NOENT
//! from REMOVE/RMDIR means removed, and NOENT from RENAME means renamed.

use std::io;

use nfs3_types::nfs3::{self as v3, NFS_PROGRAM as P, nfs_fh3, nfsstat3};
use nfs3_types::xdr_codec::Opaque;

use super::client::{Answer, Nfs, dirop, post_fh, post_op};
use super::dest::{NfsDest, NfsDir, cache_key, ok};
use super::error;
use crate::dest;
use crate::meta::{Kind, Meta};
use crate::nfs::rpc::ops::ObjectOps;

impl NfsDest {
    /// Finds an object this run just created when the reply did not carry its handle
    /// (or was lost and the retry answered EXIST): it must be there.
    async fn made_by_us(
        &self,
        dir: &NfsDir,
        name: &[u8],
    ) -> dest::Result<(nfs_fh3, Option<v3::fattr3>)> {
        self.lookup(dir, name)
            .await?
            .map(|(f, a)| (f, Some(a)))
            .ok_or_else(|| dest::Error::from(io::Error::from_raw_os_error(libc::ENOENT)))
    }

    /// The handle and attributes of an object a creating call (SYMLINK, MKNOD) made,
    /// looked up when the reply left them out or was an EXIST that answered our own
    /// earlier attempt.
    async fn created(
        &self,
        dir: &NfsDir,
        name: &[u8],
        res: Result<(v3::post_op_fh3, v3::post_op_attr), nfsstat3>,
        ambiguous: bool,
    ) -> dest::Result<(nfs_fh3, Option<v3::fattr3>)> {
        match res {
            Ok((obj, attrs)) => match post_fh(obj) {
                Some(fh) => Ok((fh, post_op(attrs))),
                None => self.made_by_us(dir, name).await,
            },
            Err(nfsstat3::NFS3ERR_EXIST) if ambiguous => self.made_by_us(dir, name).await,
            Err(s) => Err(error::status(s)),
        }
    }
}

impl ObjectOps for NfsDest {
    fn symlink(&self, dir: &NfsDir, name: &[u8], target: &[u8], m: &Meta) -> dest::Result<()> {
        let attrs = self.create_attrs(m, None);
        self.rt.block_on(async {
            let a = self
                .in_dir(dir, |fh| {
                    let args = v3::SYMLINK3args {
                        where_: dirop(&fh, name),
                        symlink: v3::symlinkdata3 {
                            symlink_attributes: attrs.clone(),
                            symlink_data: v3::nfspath3(Opaque::borrowed(target)),
                        },
                    };
                    async move {
                        self.nfs
                            .call::<_, v3::SYMLINK3resok, v3::SYMLINK3resfail>(
                                P::NFSPROC3_SYMLINK,
                                &args,
                            )
                            .await
                    }
                })
                .await?;
            let made = a.res.map(|r| (r.obj, r.obj_attributes));
            let (fh, have) = self.created(dir, name, made, a.ambiguous).await?;
            let after = ok(self
                .apply(&fh, self.finish_attrs(m, have.as_ref(), false))
                .await?)?;
            self.check_symlink_time(after.as_ref(), m);
            Ok(())
        })
    }

    fn hard_link(
        &self,
        dir: &NfsDir,
        name: &[u8],
        target_dir: &NfsDir,
        tname: &[u8],
    ) -> dest::Result<()> {
        let cached = self
            .link_cache
            .lock()
            .ok()
            .and_then(|c| c.get(&cache_key(&target_dir.fh, tname)).cloned());
        let from_cache = cached.is_some();
        self.rt.block_on(async {
            let (file, want_id) = match cached {
                Some(fh) => (fh, None),
                None => match self.lookup(target_dir, tname).await? {
                    Some((fh, a)) => (fh, Some(a.fileid)),
                    None => return Err(io::Error::from_raw_os_error(libc::ENOENT).into()),
                },
            };
            let a = self
                .in_dir(dir, |fh| {
                    let args = v3::LINK3args {
                        file: file.clone(),
                        link: dirop(&fh, name),
                    };
                    async move {
                        self.nfs
                            .call::<_, v3::LINK3resok, v3::LINK3resfail>(P::NFSPROC3_LINK, &args)
                            .await
                    }
                })
                .await?;
            match a.res {
                Ok(_) => Ok(()),
                Err(nfsstat3::NFS3ERR_EXIST) if a.ambiguous => {
                    // Done already if the name now is the same file.
                    let here = self.lookup(dir, name).await?;
                    let target = match want_id {
                        Some(id) => Some(id),
                        None => Some(ok(self.nfs.getattr(&file).await?)?.fileid),
                    };
                    if here.map(|(_, a)| a.fileid) == target {
                        Ok(())
                    } else {
                        Err(io::Error::from_raw_os_error(libc::EEXIST).into())
                    }
                }
                // The file we wrote was replaced (another run renamed its copy over
                // it): forget its handle, so the engine's next try looks the name up.
                Err(nfsstat3::NFS3ERR_STALE) if from_cache => {
                    if let Ok(mut c) = self.link_cache.lock() {
                        c.remove(&cache_key(&target_dir.fh, tname));
                    }
                    Err(error::status(nfsstat3::NFS3ERR_STALE))
                }
                Err(s) => Err(error::status(s)),
            }
        })
    }

    /// Another run may have renamed its own copy over a file we wrote, while ours lives
    /// on under the names already linked to it: a link to the name must look it up.
    fn forget_written(&self, dir: &NfsDir, name: &[u8]) {
        if let Ok(mut c) = self.link_cache.lock() {
            c.remove(&cache_key(&dir.fh, name));
        }
    }

    fn mknod(&self, dir: &NfsDir, name: &[u8], m: &Meta) -> dest::Result<()> {
        let attrs = self.create_attrs(m, Some(m.mode));
        let spec = v3::specdata3 {
            specdata1: libc::major(m.rdev),
            specdata2: libc::minor(m.rdev),
        };
        self.rt.block_on(async {
            let a = self
                .in_dir(dir, |fh| {
                    let what = match m.kind {
                        Kind::CharDev => v3::mknoddata3::NF3CHR(v3::devicedata3 {
                            dev_attributes: attrs.clone(),
                            spec: spec.clone(),
                        }),
                        Kind::BlockDev => v3::mknoddata3::NF3BLK(v3::devicedata3 {
                            dev_attributes: attrs.clone(),
                            spec: spec.clone(),
                        }),
                        Kind::Socket => v3::mknoddata3::NF3SOCK(attrs.clone()),
                        _ => v3::mknoddata3::NF3FIFO(attrs.clone()),
                    };
                    let args = v3::MKNOD3args {
                        where_: dirop(&fh, name),
                        what,
                    };
                    async move {
                        self.nfs
                            .call::<_, v3::MKNOD3resok, v3::MKNOD3resfail>(P::NFSPROC3_MKNOD, &args)
                            .await
                    }
                })
                .await?;
            let made = a.res.map(|r| (r.obj, r.obj_attributes));
            let (fh, have) = self.created(dir, name, made, a.ambiguous).await?;
            ok(self
                .apply(&fh, self.finish_attrs(m, have.as_ref(), true))
                .await?)
            .map(|_| ())
        })
    }

    fn remove(&self, dir: &NfsDir, name: &[u8], is_dir: bool) -> dest::Result<()> {
        self.rt.block_on(async {
            let a = self
                .in_dir(dir, |fh| async move {
                    remove_call(&self.nfs, &fh, name, is_dir)
                        .await
                        .map(|()| Answer {
                            res: Ok(()),
                            ambiguous: false,
                        })
                })
                .await;
            a.map(|_| ())
        })
    }

    fn remove_many(&self, dir: &NfsDir, names: &[&[u8]]) -> Vec<dest::Result<()>> {
        // All at once: the connections' windows bound what is really in flight.
        let handles: Vec<_> = names
            .iter()
            .map(|n| {
                let nfs = self.nfs.clone();
                let fh = dir.fh.clone();
                let n = n.to_vec();
                self.rt
                    .spawn(async move { remove_call(&nfs, &fh, &n, false).await })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                self.rt
                    .block_on(h)
                    .map_err(|e| dest::Error::from(io::Error::other(e)))
                    .and_then(|r| r)
            })
            .collect()
    }
}

/// REMOVE or RMDIR; NOENT counts as done (a retried call of ours, or already gone).
pub(super) async fn remove_call(
    nfs: &Nfs,
    dir: &nfs_fh3,
    name: &[u8],
    is_dir: bool,
) -> dest::Result<()> {
    let res = if is_dir {
        let args = v3::RMDIR3args {
            object: dirop(dir, name),
        };
        nfs.call::<_, v3::RMDIR3resok, v3::RMDIR3resfail>(P::NFSPROC3_RMDIR, &args)
            .await?
            .res
            .map(|_| ())
    } else {
        let args = v3::REMOVE3args {
            object: dirop(dir, name),
        };
        nfs.call::<_, v3::REMOVE3resok, v3::REMOVE3resfail>(P::NFSPROC3_REMOVE, &args)
            .await?
            .res
            .map(|_| ())
    };
    match res {
        Ok(()) | Err(nfsstat3::NFS3ERR_NOENT) => Ok(()),
        Err(s) => Err(error::status(s)),
    }
}
