//! File data over NFSv4.1, and READ for `--checksum`.
//!
//! A file that fits one WRITE goes in ONE compound: PUTFH(dir), OPEN(create GUARDED,
//! mode, owners), GETFH, WRITE(current stateid, FILE_SYNC), SETATTR(mtime, after the
//! write so that it sticks), CLOSE. The source is read and checked unchanged first, so
//! the mtime that marks the copy complete can travel with the data.
//!
//! Bigger files: OPEN, UNSTABLE WRITEs in flight within the byte budget, COMMIT (sent
//! again when the write verifier changed: the server restarted and lost them), then
//! SETATTR mtime and CLOSE. An update in place (`--inplace`, `--append`) needs no OPEN.

use std::io;
use std::sync::Arc;

use nfs3_types::xdr_codec::Opaque;
use tokio::sync::Semaphore;

use super::client::Client;
use super::dest::{Nfs4Dest, Nfs4Dir, got_fh, nth, ok, put};
use super::error::{self, errno_err};
use super::proto::{
    AttrsBuilder, CloseArgs, CommitArgs, CreateHow, Op, OpenArgs, OpenClaim, OpenHow, OpenOwner,
    SHARE_WRITE_NO_DELEG, SetAttrArgs, StateId, Verifier, WriteArgs, name, status,
};
use super::reply::Res;
use crate::dest::{self, CopyError, SourceFile, read_full, sparse};
use crate::meta::{Kind, Meta};
use crate::nfs::rpc::ops::FileOps;
use crate::nfs::rpc::pipeline;

/// `stable_how4`.
const UNSTABLE: u32 = 0;
const FILE_SYNC: u32 = 2;

fn budget_err(e: impl std::error::Error + Send + Sync + 'static) -> CopyError {
    CopyError::Dest(io::Error::other(e).into())
}

/// The mode OPEN creates with: writable by us even when the source is read-only
/// (WRITE and the final SETATTR follow); the SETATTR then gives the exact mode.
fn create_mode(m: &Meta) -> u32 {
    m.mode | 0o600
}

/// Whether the final SETATTR must carry the mode (the create's differs, or setuid /
/// setgid bits a write or chown may have cleared).
fn mode_after(m: &Meta) -> bool {
    create_mode(m) != m.mode || m.mode & 0o6000 != 0
}

impl Nfs4Dest {
    fn open_create(&self, n: &[u8], m: &Meta, owners: bool) -> Op {
        let mut b = AttrsBuilder::default().mode(create_mode(m));
        if owners {
            b = self.with_owners(b, m);
        }
        Op::Open(OpenArgs {
            seqid: 0,
            share_access: SHARE_WRITE_NO_DELEG,
            share_deny: 0,
            owner: OpenOwner {
                client_id: 0, // NFSv4.1 takes the client from the session
                owner: Opaque::borrowed(b"nfsync"),
            },
            how: OpenHow::Create(CreateHow::Guarded(b.build())),
            claim: OpenClaim::Null(name(n)),
        })
    }

    fn finish(&self, m: &Meta) -> AttrsBuilder {
        self.finish_onto(AttrsBuilder::default(), m)
    }

    /// [`Self::finish`] after attributes numbered below `mode` (the size).
    pub(super) fn finish_onto(&self, mut b: AttrsBuilder, m: &Meta) -> AttrsBuilder {
        if mode_after(m) {
            b = b.mode(m.mode);
        }
        b.mtime(m.mtime.sec, m.mtime.nsec)
    }

    /// The one-compound copy.
    fn write_small(&self, dir: &Nfs4Dir, n: &[u8], src: &SourceFile<'_>) -> Result<u64, CopyError> {
        let m = src.meta;
        let size = m.size as usize;
        let _permit = self
            .rt
            .block_on(
                self.budget
                    .clone()
                    .acquire_many_owned(pipeline::held(size as u32)),
            )
            .map_err(budget_err)?;
        src.throttle(size as u64)?;
        let mut data = vec![0u8; size];
        read_full(&src.data, &mut data, 0)?;
        src.verify_unchanged()?;
        let data = Opaque::owned(data);
        for _ in 0..3 {
            let a = self
                .rt
                .block_on(self.with_owner_retry_via(
                    dir,
                    |fh, owners| {
                        let mut ops = vec![put(fh), self.open_create(n, m, owners), Op::GetFh];
                        if size > 0 {
                            ops.push(Op::Write(WriteArgs {
                                stateid: StateId::CURRENT,
                                offset: 0,
                                stable: FILE_SYNC,
                                data: data.clone(),
                            }));
                        }
                        ops.push(Op::SetAttr(SetAttrArgs {
                            stateid: StateId::CURRENT,
                            attrs: self.finish(m).build(),
                        }));
                        ops.push(Op::Close(CloseArgs {
                            seqid: 0,
                            stateid: StateId::CURRENT,
                        }));
                        ops
                    },
                    self.batched(),
                ))
                .map_err(CopyError::dest)?;
            let st = a.reply.status;
            if st == status::OK {
                if let Some(Res::Write { count, .. }) = nth(&a.reply, 38, 0)
                    && *count as usize != size
                {
                    // A server that takes part of a FILE_SYNC write: the rest, in
                    // the general way.
                    let fh = got_fh(&a.reply).map_err(CopyError::dest)?;
                    self.rt.block_on(self.remove_if_ours(dir, n, &fh));
                    return self.write_large(dir, n, src);
                }
                return Ok(m.size);
            }
            match self
                .after_failed_create(dir, n, &a)
                .map_err(CopyError::dest)?
            {
                Retry::Again => continue,
                Retry::No => {}
            }
            return Err(CopyError::Dest(error::status(st)));
        }
        Err(CopyError::Dest(errno_err(libc::EEXIST)))
    }

    /// After a create compound failed: EXIST answering a retry of our own may be our
    /// first attempt's file (removed, and the caller tries again); a failure after
    /// OPEN left a partial file (removed while it is still ours).
    fn after_failed_create(
        &self,
        dir: &Nfs4Dir,
        n: &[u8],
        a: &super::client::Answer,
    ) -> dest::Result<Retry> {
        let st = a.reply.status;
        let opened = nth(&a.reply, 18, 0).is_some();
        if st == status::EXIST && !opened {
            if !a.ambiguous {
                // Another writer (a concurrent run) got there first: not ours.
                return Err(errno_err(libc::EEXIST));
            }
            return self.rt.block_on(async {
                match self.lookup(dir, n).await? {
                    Some((_, have)) if have.kind == Kind::File && have.nlink <= 1 => {
                        self.remove_entry(dir, n).await?;
                        Ok(Retry::Again)
                    }
                    Some(_) => Err(errno_err(libc::EEXIST)),
                    None => Ok(Retry::Again),
                }
            });
        }
        if opened && let Ok(fh) = got_fh(&a.reply) {
            self.rt.block_on(self.remove_if_ours(dir, n, &fh));
        }
        Ok(Retry::No)
    }

    /// OPEN (create), UNSTABLE WRITEs, COMMIT, SETATTR, CLOSE.
    fn write_large(&self, dir: &Nfs4Dir, n: &[u8], src: &SourceFile<'_>) -> Result<u64, CopyError> {
        let m = src.meta;
        let (fh, stateid) = loop {
            let a = self
                .rt
                .block_on(self.with_owner_retry(dir, |fh, owners| {
                    vec![put(fh), self.open_create(n, m, owners), Op::GetFh]
                }))
                .map_err(CopyError::dest)?;
            if a.reply.status == status::OK {
                let fh = got_fh(&a.reply).map_err(CopyError::dest)?;
                let Some(Res::Open { stateid }) = nth(&a.reply, 18, 0) else {
                    return Err(CopyError::Dest(error::garbage(
                        "OPEN reply without a stateid",
                    )));
                };
                break (fh, *stateid);
            }
            match self
                .after_failed_create(dir, n, &a)
                .map_err(CopyError::dest)?
            {
                Retry::Again => continue,
                Retry::No => return Err(CopyError::Dest(error::status(a.reply.status))),
            }
        };
        let filled = (|| {
            self.send_data(&fh, stateid, src, &src.new_file_ranges()?)?;
            src.verify_unchanged()?;
            let mut attrs = AttrsBuilder::default();
            if src.sparse {
                // Only the data went over the wire: the size makes the trailing hole.
                attrs = attrs.size(m.size);
            }
            attrs = self.finish_onto(attrs, m);
            let r = self.rt.block_on(self.client.compound(vec![
                put(&fh),
                Op::SetAttr(SetAttrArgs {
                    stateid,
                    attrs: attrs.build(),
                }),
                Op::Close(CloseArgs { seqid: 0, stateid }),
            ]));
            r.and_then(ok).map(|_| ()).map_err(CopyError::dest)
        })();
        if let Err(e) = filled {
            let gone = matches!(&e, CopyError::Dest(d) if d.is_fatal());
            if !gone {
                let close = vec![put(&fh), Op::Close(CloseArgs { seqid: 0, stateid })];
                let _ = self.rt.block_on(self.client.compound(close));
                if !matches!(e, CopyError::SourceChanged) {
                    self.rt.block_on(self.remove_if_ours(dir, n, &fh));
                }
            }
            return Err(e);
        }
        Ok(m.size)
    }

    /// The `ranges` of the source as UNSTABLE writes, then COMMIT; all again when the
    /// verifier changed.
    pub(super) fn send_data(
        &self,
        fh: &[u8],
        stateid: StateId,
        src: &SourceFile<'_>,
        ranges: &[(u64, u64)],
    ) -> Result<(), CopyError> {
        if ranges.is_empty() {
            return Ok(());
        }
        for _ in 0..3 {
            let verfs = self.send_unstable(fh, stateid, src, ranges)?;
            let r = self
                .rt
                .block_on(self.client.compound(vec![
                    put(fh),
                    Op::Commit(CommitArgs {
                        offset: 0,
                        count: 0,
                    }),
                ]))
                .and_then(ok)
                .map_err(CopyError::dest)?;
            let Some(Res::Commit(v)) = nth(&r, 5, 0) else {
                return Err(CopyError::Dest(error::garbage(
                    "COMMIT reply without a verifier",
                )));
            };
            if verfs.iter().all(|w| w.is_none_or(|w| w == *v)) {
                return Ok(());
            }
        }
        Err(CopyError::Dest(
            io::Error::other("the server's write verifier kept changing (restarting?)").into(),
        ))
    }

    fn send_unstable(
        &self,
        fh: &[u8],
        stateid: StateId,
        src: &SourceFile<'_>,
        ranges: &[(u64, u64)],
    ) -> Result<Vec<Option<Verifier>>, CopyError> {
        let chunk = u64::from(self.io_size);
        pipeline::send_all(&self.rt, &self.budget, src, ranges, chunk, |off, buf| {
            let (client, fh) = (self.client.clone(), fh.to_vec());
            async move { write_chunk(&client, &fh, stateid, off, buf).await }
        })
    }

    /// Removes the partial file a failed copy left, but only while `n` still holds
    /// the file we created: another run may have renamed its finished copy over ours.
    pub(super) async fn remove_if_ours(&self, dir: &Nfs4Dir, n: &[u8], fh: &[u8]) {
        if let Ok(Some((now, _))) = self.lookup(dir, n).await
            && now == fh
        {
            let _ = self.remove_entry(dir, n).await;
        }
    }
}

impl FileOps for Nfs4Dest {
    fn write_file(&self, dir: &Nfs4Dir, n: &[u8], src: &SourceFile<'_>) -> Result<u64, CopyError> {
        let sessions = self.client.sessions();
        // With -S a file with holes sends only its data extents, which the one
        // compound does not do.
        let holes = src.sparse && src.new_file_ranges()? != dest::sparse::whole(0, src.meta.size);
        let write = || {
            if src.meta.size <= u64::from(self.io_size) && !holes {
                self.write_small(dir, n, src)
            } else {
                self.write_large(dir, n, src)
            }
        };
        match write() {
            // The server restarted under a big file and lost its open state: once
            // more from the start (our partial file is gone by now).
            Err(CopyError::Dest(e)) if self.client.sessions() != sessions && !e.is_fatal() => {
                write()
            }
            r => r,
        }
    }

    /// `--inplace` / `--append`: the existing file's data rewritten from an offset
    /// with the anonymous stateid (no OPEN: nothing is created, and a share
    /// reservation would only keep other clients out), COMMIT, then one SETATTR with
    /// the size when it differs, the mode, owners that differ, and the mtime last.
    fn write_into(
        &self,
        dir: &Nfs4Dir,
        n: &[u8],
        src: &SourceFile<'_>,
        from: u64,
    ) -> Result<u64, CopyError> {
        let m = src.meta;
        let (fh, mut have) = self
            .rt
            .block_on(self.lookup(dir, n))
            .map_err(CopyError::dest)?
            .ok_or_else(|| CopyError::Dest(errno_err(libc::ENOENT)))?;
        if have.kind != Kind::File {
            return Err(CopyError::Dest(errno_err(libc::EISDIR)));
        }
        if have.mode & 0o200 == 0 {
            // Writable for the update (as rsync makes it); the final SETATTR then
            // sees a mode that differs and gives the file its own.
            have.mode |= 0o200;
            self.rt
                .block_on(self.client.compound(vec![
                    put(&fh),
                    Op::SetAttr(SetAttrArgs {
                        stateid: StateId::ANONYMOUS,
                        attrs: AttrsBuilder::default().mode(have.mode).build(),
                    }),
                ]))
                .and_then(ok)
                .map_err(CopyError::dest)?;
        }
        let ranges = sparse::whole(from, m.size);
        self.send_data(&fh, StateId::ANONYMOUS, src, &ranges)?;
        src.verify_unchanged()?;
        let mut b = AttrsBuilder::default();
        if have.size != m.size {
            b = b.size(m.size);
        }
        if have.mode & 0o7777 != m.mode || m.mode & 0o6000 != 0 {
            b = b.mode(m.mode);
        }
        let owners = self.attrs.owners();
        if (owners.owner && have.uid != m.uid) || (owners.group && have.gid != m.gid) {
            b = self.with_owners(b, m);
        }
        let b = b.mtime(m.mtime.sec, m.mtime.nsec);
        self.rt
            .block_on(self.client.compound(vec![
                put(&fh),
                Op::SetAttr(SetAttrArgs {
                    stateid: StateId::ANONYMOUS,
                    attrs: b.build(),
                }),
            ]))
            .and_then(ok)
            .map_err(CopyError::dest)?;
        Ok(ranges.iter().map(|r| r.1).sum())
    }

    fn budget(&self) -> &Arc<Semaphore> {
        &self.budget
    }

    fn read_size(&self) -> u64 {
        u64::from(self.io_size)
    }

    fn read(
        &self,
        fh: &Vec<u8>,
        off: u64,
        len: u32,
    ) -> impl Future<Output = dest::Result<Vec<u8>>> + Send + 'static {
        let (client, fh) = (self.client.clone(), fh.clone());
        async move { super::read::read_exact(&client, &fh, off, len).await }
    }

    fn read_with_attrs(
        &self,
        fh: &Vec<u8>,
        off: u64,
        len: u32,
    ) -> dest::Result<(Vec<u8>, Option<Meta>)> {
        self.read_attrs(fh, off, len)
    }
}

/// What to do after a failed create.
enum Retry {
    Again,
    No,
}

/// One chunk as UNSTABLE WRITEs (the rest again after a short write); the verifier
/// when the server did not commit them at once.
async fn write_chunk(
    client: &Client,
    fh: &[u8],
    stateid: StateId,
    off: u64,
    data: Vec<u8>,
) -> dest::Result<Option<Verifier>> {
    let mut pos = 0usize;
    let mut verf: Option<Verifier> = None;
    while pos < data.len() {
        let rest = data[pos..].to_vec();
        let len = rest.len();
        let r = ok(client
            .compound(vec![
                put(fh),
                Op::Write(WriteArgs {
                    stateid,
                    offset: off + pos as u64,
                    stable: UNSTABLE,
                    data: Opaque::owned(rest),
                }),
            ])
            .await?)?;
        let Some(Res::Write {
            count,
            committed,
            verifier,
        }) = nth(&r, 38, 0)
        else {
            return Err(error::garbage("WRITE reply without a count"));
        };
        let n = *count as usize;
        if n == 0 || n > len {
            return Err(error::garbage(format!(
                "server acknowledged {n} of {len} bytes written"
            )));
        }
        pos += n;
        if *committed != FILE_SYNC {
            if verf.is_some_and(|v| v != *verifier) {
                // Verifiers that disagree within a chunk force a resend.
                verf = Some([0xff; 8]);
            } else {
                verf = Some(*verifier);
            }
        }
    }
    Ok(verf)
}
