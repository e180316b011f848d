//! The directory calls the rest of the NFSv4.1 path is built on: a compound run in a
//! directory, LOOKUP, READDIR and CREATE of a directory.
//!
//! Apart from the ops traits' methods because they are the async layer those
//! methods (and `objects`, `paths`, `write`) call, and share one rule: a directory
//! handle that went stale is found again from the root by its path (see `root`) and
//! the compound sent once more.

use std::sync::Arc;

use super::{Nfs4Dest, Nfs4Dir, got_fh, nth, ok, put};
use crate::dest;
use crate::meta::{Kind, Meta};
use crate::nfs::rpc::names::{Intake, Refused};
use crate::nfs::v4::attrs;
use crate::nfs::v4::client::Answer;
use crate::nfs::v4::error::{self, errno_err};
use crate::nfs::v4::proto::{AttrsBuilder, CreateArgs, CreateType, Op, ReadDirArgs, name, status};
use crate::nfs::v4::reply::Res;

impl Nfs4Dest {
    /// Runs the compound `build(dir handle)`; when the handle went stale, finds the
    /// directory again from the root by its path and runs it once more.
    pub(in crate::nfs::v4) async fn in_dir(
        &self,
        dir: &Nfs4Dir,
        build: impl Fn(&[u8]) -> Vec<Op>,
    ) -> dest::Result<Answer> {
        self.in_dir_via(dir, build, false).await
    }

    /// [`Nfs4Dest::in_dir`], through the [`Batcher`](crate::nfs::v4::batch::Batcher)
    /// when `batched`.
    pub(in crate::nfs::v4) async fn in_dir_via(
        &self,
        dir: &Nfs4Dir,
        build: impl Fn(&[u8]) -> Vec<Op>,
        batched: bool,
    ) -> dest::Result<Answer> {
        let send = |ops| async move {
            if batched {
                self.batcher.compound(&self.client, ops).await
            } else {
                self.client.compound(ops).await
            }
        };
        let mut fh: Arc<[u8]> = dir.fh.clone();
        let mut a = send(build(&fh)).await?;
        let mut tries = 0;
        while matches!(a.reply.status, status::STALE | status::FHEXPIRED) && tries < 3 {
            tries += 1;
            if a.reply.results.len() == 2 {
                // The directory's own handle went stale: find it again by its path.
                fh = self.resolve(&dir.path).await?.into();
            } else if !a.reply.results.iter().any(|r| r.0 == 15) {
                break;
            }
            // Otherwise an object this compound looked up was renamed over by another
            // writer before a later operation used it: look up what the name holds now.
            let ambiguous = a.ambiguous;
            a = send(build(&fh)).await?;
            a.ambiguous |= ambiguous;
        }
        Ok(a)
    }

    /// LOOKUP + GETATTR of one name; `None` for NOENT.
    pub(in crate::nfs::v4) async fn lookup(
        &self,
        dir: &Nfs4Dir,
        n: &[u8],
    ) -> dest::Result<Option<(Vec<u8>, Meta)>> {
        let a = self
            .in_dir(dir, |fh| {
                vec![
                    put(fh),
                    Op::Lookup(name(n)),
                    Op::GetFh,
                    Op::GetAttr(attrs::wanted()),
                ]
            })
            .await?;
        if a.reply.status == status::NOENT {
            return Ok(None);
        }
        let r = ok(a)?;
        Ok(Some((got_fh(&r)?, self.meta_in(&r, 0)?)))
    }

    /// All entries of a directory, READDIR page by page, with their attributes; the
    /// names refused on the way (see `rpc::names`) beside them.
    pub(in crate::nfs::v4) async fn readdir(
        &self,
        dir: &Nfs4Dir,
    ) -> dest::Result<(Vec<(Vec<u8>, attrs::Decoded)>, Vec<Refused>)> {
        let mut restarts = 0;
        'restart: loop {
            let mut out = Vec::new();
            let mut intake = Intake::new("READDIR", false);
            let mut cookie = 0;
            let mut verifier = [0u8; 8];
            loop {
                intake.next_page(cookie)?;
                let args = ReadDirArgs {
                    cookie,
                    verifier,
                    dircount: 64 << 10,
                    maxcount: self.readdir_max,
                    attrs: attrs::wanted(),
                };
                let a = self
                    .in_dir(dir, |fh| vec![put(fh), Op::ReadDir(args.clone())])
                    .await?;
                if a.reply.status == status::BAD_COOKIE && restarts < 3 {
                    restarts += 1;
                    continue 'restart;
                }
                let r = ok(a)?;
                let Some(Res::ReadDir {
                    verifier: v,
                    entries,
                    eof,
                }) = nth(&r, 26, 0)
                else {
                    return Err(error::garbage("READDIR reply without entries"));
                };
                let empty = entries.is_empty();
                verifier = *v;
                for e in entries {
                    cookie = e.cookie;
                    if !intake.admit(&e.name)? {
                        continue;
                    }
                    let d = attrs::decode(&e.attrs, &self.ids).map_err(error::garbage)?;
                    out.push((e.name.clone(), d));
                }
                if *eof {
                    return Ok(intake.finish(out, |(n, _)| n));
                }
                if empty {
                    return Err(error::garbage(
                        "the server's READDIR pages make no progress",
                    ));
                }
            }
        }
    }

    /// MKDIR as CREATE: `strict` makes an existing directory EEXIST unless the reply
    /// answers a retry of our own call.
    pub(super) async fn create_dir(
        &self,
        dir: &Nfs4Dir,
        n: &[u8],
        m: &Meta,
    ) -> dest::Result<Vec<u8>> {
        let a = self
            .with_owner_retry(dir, |fh, owners| {
                let mut b = AttrsBuilder::default().mode(m.mode | 0o700);
                if owners {
                    b = self.with_owners(b, m);
                }
                vec![
                    put(fh),
                    Op::Create(CreateArgs {
                        objtype: CreateType::Dir,
                        name: name(n),
                        attrs: b.build(),
                    }),
                    Op::GetFh,
                ]
            })
            .await?;
        match a.reply.status {
            status::OK => got_fh(&a.reply),
            status::EXIST if a.ambiguous => match self.lookup(dir, n).await? {
                Some((fh, have)) if have.kind == Kind::Dir => Ok(fh),
                Some(_) => Err(errno_err(libc::ENOTDIR)),
                None => Err(errno_err(libc::ENOENT)),
            },
            st => Err(error::status(st)),
        }
    }
}
