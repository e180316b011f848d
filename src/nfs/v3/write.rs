//! File data: CREATE → WRITEs all in flight → COMMIT → SETATTR(mtime), and READ for
//! `--checksum`.
//!
//! Only the waits the protocol requires: the WRITEs need CREATE's handle; the mtime
//! must be set after the last WRITE/COMMIT reply (a later WRITE would bump it) and
//! only after `verify_unchanged`, so an interrupted or raced copy never looks
//! complete. A file that fits one WRITE goes as a single FILE_SYNC write (one round
//! trip instead of WRITE + COMMIT). Bigger files go as UNSTABLE writes, then COMMIT;
//! if the write verifier changed the server rebooted and lost them, so they are sent
//! again. The chunks in flight and their memory budget are `pipeline`'s.

use std::io;
use std::sync::Arc;

use nfs3_types::nfs3::{
    self as v3, NFS_PROGRAM as P, fattr3, ftype3, nfs_fh3, nfsstat3, stable_how, writeverf3,
};
use nfs3_types::xdr_codec::Opaque;
use tokio::sync::Semaphore;

use super::client::{Nfs, dirop, nfs_time, post_fh, post_op};
use super::dest::{NfsDest, NfsDir, cache_key, ok};
use super::error;
use super::objects::remove_call;
use crate::dest;
use crate::dest::{CopyError, SourceFile, read_full};
use crate::meta::Meta;
use crate::nfs::rpc::ops::FileOps;
use crate::nfs::rpc::pipeline;

/// A chunk's write verifier (`None`: all FILE_SYNC) and whether its replies agreed.
type ChunkResult = dest::Result<(Option<writeverf3>, bool)>;

/// Writes `data` at `off`, sending the rest again after a short write. Returns the
/// verifier(s) seen: `None` when everything was FILE_SYNC, and whether they agreed.
async fn write_chunk(
    nfs: Arc<Nfs>,
    fh: nfs_fh3,
    off: u64,
    data: Vec<u8>,
    stable: stable_how,
) -> ChunkResult {
    let mut pos = 0usize;
    let mut verf: Option<writeverf3> = None;
    let mut agree = true;
    while pos < data.len() {
        let rest = &data[pos..];
        let args = v3::WRITE3args {
            file: fh.clone(),
            offset: off + pos as u64,
            count: rest.len() as u32,
            stable,
            data: Opaque::borrowed(rest),
        };
        let r = ok(nfs
            .call::<_, v3::WRITE3resok, v3::WRITE3resfail>(P::NFSPROC3_WRITE, &args)
            .await?)?;
        let n = r.count as usize;
        if n == 0 || n > rest.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("server acknowledged {n} of {} bytes written", rest.len()),
            )
            .into());
        }
        pos += n;
        if r.committed != stable_how::FILE_SYNC {
            if verf.is_some_and(|v| v != r.verf) {
                agree = false;
            }
            verf = Some(r.verf);
        }
    }
    Ok((verf, agree))
}

impl NfsDest {
    /// CREATE (GUARDED, with mode and owners). EXIST is EEXIST — another writer (a
    /// concurrent run) got there first, and its file is not ours to truncate — except
    /// in answer to a CREATE sent again after a lost connection: then the file is
    /// likely our own first attempt and is reused after truncation, or replaced when
    /// it is not a plain single-link file.
    async fn create_file(
        &self,
        dir: &NfsDir,
        name: &[u8],
        m: &Meta,
    ) -> dest::Result<(nfs_fh3, Option<fattr3>)> {
        // We must be able to write what we create even when the source is read-only
        // (and root may be squashed to nobody); the final SETATTR, which is sent
        // anyway, then restores the exact mode.
        let mode = m.mode | 0o600;
        let mut attrs = self.create_attrs(m, Some(mode));
        let presize = m.size > u64::from(self.info.wsize);
        if presize {
            attrs.size = v3::Nfs3Option::Some(m.size);
        }
        let mut removed = false;
        for _ in 0..3 {
            let a = self
                .in_dir(dir, |fh| {
                    let args = v3::CREATE3args {
                        where_: dirop(&fh, name),
                        how: v3::createhow3::GUARDED(attrs.clone()),
                    };
                    async move {
                        self.nfs
                            .call::<_, v3::CREATE3resok, v3::CREATE3resfail>(
                                P::NFSPROC3_CREATE,
                                &args,
                            )
                            .await
                    }
                })
                .await?;
            match a.res {
                Ok(r) => {
                    let have = post_op(r.obj_attributes);
                    return match post_fh(r.obj) {
                        Some(fh) => Ok((fh, have)),
                        None => match self.lookup(dir, name).await? {
                            Some((fh, at)) => Ok((fh, Some(at))),
                            None => Err(io::Error::from_raw_os_error(libc::ENOENT).into()),
                        },
                    };
                }
                Err(nfsstat3::NFS3ERR_EXIST) if !a.ambiguous => {
                    return Err(io::Error::from_raw_os_error(libc::EEXIST).into());
                }
                Err(nfsstat3::NFS3ERR_EXIST) => {
                    let Some((fh, at)) = self.lookup(dir, name).await? else {
                        continue;
                    };
                    if at.type_ == ftype3::NF3REG && at.nlink <= 1 {
                        // Reused: truncated, and its old mtime replaced so that an
                        // interrupted rewrite can never pass the quick check.
                        let mut s = attrs.clone();
                        s.size = v3::Nfs3Option::Some(if presize { m.size } else { 0 });
                        s.mtime = v3::set_mtime::SET_TO_SERVER_TIME;
                        ok(self.apply(&fh, s).await?)?;
                        return Ok((fh, None));
                    }
                    if !removed {
                        removed = true;
                        let is_dir = at.type_ == ftype3::NF3DIR;
                        let args = v3::REMOVE3args {
                            object: dirop(&dir.fh, name),
                        };
                        if is_dir {
                            return Err(io::Error::from_raw_os_error(libc::EISDIR).into());
                        }
                        let r = self
                            .nfs
                            .call::<_, v3::REMOVE3resok, v3::REMOVE3resfail>(
                                P::NFSPROC3_REMOVE,
                                &args,
                            )
                            .await?;
                        match r.res {
                            Ok(_) | Err(nfsstat3::NFS3ERR_NOENT) => {}
                            Err(s) => return Err(error::status(s)),
                        }
                    }
                }
                Err(stat) if self.owners_refused_by(&attrs, stat) => {
                    attrs.uid = v3::Nfs3Option::None;
                    attrs.gid = v3::Nfs3Option::None;
                }
                Err(s) => return Err(error::status(s)),
            }
        }
        Err(io::Error::from_raw_os_error(libc::EEXIST).into())
    }

    /// A call whose connection broke was sent again; the server may still run the first
    /// copy later. A late WRITE only bumps the mtime (same data): set it again. A late
    /// truncation would lose data: then the file is reported and left without the
    /// source's mtime, so the next run copies it. Looked at a few times over a second.
    async fn settle_mtime(&self, fh: &nfs_fh3, s: v3::sattr3, m: &Meta) -> dest::Result<()> {
        for wait_ms in [50, 200, 1000] {
            tokio::time::sleep(std::time::Duration::from_millis(wait_ms)).await;
            let now = ok(self.nfs.getattr(fh).await?)?;
            if now.size != m.size {
                // A delayed truncation (the reuse SETATTR) ran after our data: the file
                // is wrong, so it must not keep the source's mtime.
                let stale = v3::sattr3 {
                    mtime: v3::set_mtime::SET_TO_SERVER_TIME,
                    ..Default::default()
                };
                ok(self.nfs.setattr(fh, stale).await?)?;
                return Err(io::Error::other(
                    "the file changed on the server after it was written (a request \
                     delayed by a lost connection); it will be copied again",
                )
                .into());
            }
            if now.mtime != nfs_time(m.mtime) {
                ok(self.apply(fh, s.clone()).await?)?;
            }
        }
        Ok(())
    }

    /// Removes the partial file a failed copy left, but only while `name` still holds
    /// the file we created: another run may have renamed its finished copy over ours
    /// (our WRITE then answers STALE), and that copy must stay. Best effort.
    async fn remove_if_ours(&self, dir: &NfsDir, name: &[u8], fh: &nfs_fh3) {
        if let Ok(Some((now, _))) = self.lookup(dir, name).await
            && now.data == fh.data
        {
            let _ = remove_call(&self.nfs, &dir.fh, name, false).await;
        }
    }

    /// The SETATTR that gives a written file its attributes, mtime last; after a lost
    /// connection (`lost_before` counts them) the mtime is checked to have stuck.
    fn finish(
        &self,
        fh: &nfs_fh3,
        s: v3::sattr3,
        m: &Meta,
        lost_before: u64,
    ) -> Result<(), CopyError> {
        self.rt
            .block_on(self.apply(fh, s.clone()))
            .and_then(ok)
            .map_err(CopyError::dest)?;
        if self.nfs.rpc().lost() != lost_before {
            self.rt
                .block_on(self.settle_mtime(fh, s, m))
                .map_err(CopyError::dest)?;
        }
        Ok(())
    }

    /// The `ranges` of the source: one FILE_SYNC WRITE when they are one piece that
    /// fits, else UNSTABLE WRITEs and COMMIT.
    fn send_data(
        &self,
        fh: &nfs_fh3,
        src: &SourceFile<'_>,
        ranges: &[(u64, u64)],
    ) -> Result<(), CopyError> {
        let wsize = u64::from(self.info.wsize);
        if ranges.is_empty() {
            return Ok(());
        }
        if let [(off, size)] = *ranges
            && size <= wsize
        {
            src.throttle(size)?;
            // The budget first: it is what bounds the bytes held in memory.
            let permit = self
                .rt
                .block_on(
                    self.budget
                        .clone()
                        .acquire_many_owned(pipeline::held(size as u32)),
                )
                .map_err(|e| CopyError::Dest(io::Error::other(e).into()))?;
            let mut buf = vec![0u8; size as usize];
            read_full(&src.data, &mut buf, off)?;
            let r = self.rt.block_on(write_chunk(
                self.nfs.clone(),
                fh.clone(),
                off,
                buf,
                stable_how::FILE_SYNC,
            ));
            drop(permit);
            return r.map(|_| ()).map_err(CopyError::dest);
        }
        // The server may lose UNSTABLE data when it reboots; the changed verifier says so.
        for _ in 0..3 {
            let verfs = self.send_unstable(fh, src, ranges)?;
            let args = v3::COMMIT3args {
                file: fh.clone(),
                offset: 0,
                count: 0,
            };
            let c = self
                .rt
                .block_on(
                    self.nfs
                        .call::<_, v3::COMMIT3resok, v3::COMMIT3resfail>(P::NFSPROC3_COMMIT, &args),
                )
                .and_then(ok)
                .map_err(CopyError::dest)?;
            if verfs.iter().all(|v| v.is_none_or(|v| v == c.verf)) {
                return Ok(());
            }
        }
        Err(CopyError::Dest(
            io::Error::other("the server's write verifier kept changing (rebooting?)").into(),
        ))
    }

    /// All chunks as UNSTABLE writes, many at once.
    fn send_unstable(
        &self,
        fh: &nfs_fh3,
        src: &SourceFile<'_>,
        ranges: &[(u64, u64)],
    ) -> Result<Vec<Option<writeverf3>>, CopyError> {
        let wsize = u64::from(self.info.wsize);
        let chunks = pipeline::send_all(&self.rt, &self.budget, src, ranges, wsize, |off, buf| {
            write_chunk(self.nfs.clone(), fh.clone(), off, buf, stable_how::UNSTABLE)
        })?;
        // Verifiers that disagree within a chunk force a resend, like a change.
        Ok(chunks
            .into_iter()
            .map(|(v, agree)| {
                if agree {
                    v
                } else {
                    Some(writeverf3([0xff; 8]))
                }
            })
            .collect())
    }
}

impl FileOps for NfsDest {
    fn write_file(
        &self,
        dir: &NfsDir,
        name: &[u8],
        src: &SourceFile<'_>,
    ) -> Result<u64, CopyError> {
        let m = src.meta;
        let lost_before = self.nfs.rpc().lost();
        let (fh, have) = self
            .rt
            .block_on(self.create_file(dir, name, m))
            .map_err(CopyError::dest)?;
        let size = m.size;
        let filled = (|| {
            self.send_data(&fh, src, &src.new_file_ranges()?)?;
            src.verify_unchanged()?;
            let mut s = self.finish_attrs(m, have.as_ref(), true);
            if src.sparse {
                // Only the data went over the wire: the size makes the trailing hole.
                s.size = v3::Nfs3Option::Some(size);
            }
            self.finish(&fh, s, m, lost_before)
        })();
        if let Err(e) = filled {
            // A server that stopped answering would only make the cleanup wait too.
            let gone = matches!(&e, CopyError::Dest(d) if d.is_fatal());
            if !gone && !matches!(e, CopyError::SourceChanged) {
                self.rt.block_on(self.remove_if_ours(dir, name, &fh));
            }
            return Err(e);
        }
        if m.nlink > 1
            && let Ok(mut c) = self.link_cache.lock()
        {
            c.insert(cache_key(&dir.fh, name), fh);
        }
        Ok(size)
    }

    /// `--inplace` / `--append`: the existing file's handle, the source's bytes from
    /// `from` on, COMMIT, then one SETATTR with the size (when it differs), mode,
    /// owners and the mtime.
    fn write_into(
        &self,
        dir: &NfsDir,
        name: &[u8],
        src: &SourceFile<'_>,
        from: u64,
    ) -> Result<u64, CopyError> {
        let m = src.meta;
        let lost_before = self.nfs.rpc().lost();
        let (fh, mut have) = self
            .rt
            .block_on(self.lookup(dir, name))
            .map_err(CopyError::dest)?
            .ok_or_else(|| CopyError::Dest(io::Error::from_raw_os_error(libc::ENOENT).into()))?;
        if have.type_ != ftype3::NF3REG {
            return Err(CopyError::Dest(
                io::Error::from_raw_os_error(libc::EISDIR).into(),
            ));
        }
        if have.mode & 0o200 == 0 {
            // Writable for the update (as rsync makes it); the final SETATTR then
            // sees a mode that differs and gives the file its own.
            have.mode |= 0o200;
            let s = v3::sattr3 {
                mode: v3::Nfs3Option::Some(have.mode & 0o7777),
                ..Default::default()
            };
            self.rt
                .block_on(self.apply(&fh, s))
                .and_then(ok)
                .map_err(CopyError::dest)?;
        }
        let ranges = crate::dest::sparse::whole(from, m.size);
        self.send_data(&fh, src, &ranges)?;
        src.verify_unchanged()?;
        let mut s = self.finish_attrs(m, Some(&have), true);
        if have.size != m.size {
            s.size = v3::Nfs3Option::Some(m.size);
        }
        self.finish(&fh, s, m, lost_before)?;
        Ok(ranges.iter().map(|r| r.1).sum())
    }

    fn budget(&self) -> &Arc<Semaphore> {
        &self.budget
    }

    fn read_size(&self) -> u64 {
        u64::from(self.info.rsize)
    }

    fn read(
        &self,
        fh: &nfs_fh3,
        off: u64,
        len: u32,
    ) -> impl Future<Output = dest::Result<Vec<u8>>> + Send + 'static {
        let (nfs, fh) = (self.nfs.clone(), fh.clone());
        async move { super::read::read_exact(&nfs, &fh, off, len).await }
    }

    fn read_with_attrs(
        &self,
        fh: &nfs_fh3,
        off: u64,
        len: u32,
    ) -> dest::Result<(Vec<u8>, Option<Meta>)> {
        self.rt
            .block_on(super::read::read_with_attrs(&self.nfs, fh, off, len))
    }
}
