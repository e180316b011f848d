//! Everything that is not file data, each in one compound: symlinks (CREATE NF4LNK +
//! SETATTR mtime), hard links (LOOKUP, SAVEFH, PUTFH, LINK), device nodes and fifos
//! (CREATE + SETATTR), REMOVE, and recursive removal for `--delete` (RENAME is in
//! `paths`).
//!
//! A reply to a call that may have run before (`Answer::ambiguous`, after a lost
//! connection and a new session) is read as on NFSv3: EXIST from a create is checked
//! to be what we made, NOENT from REMOVE means removed, from RENAME renamed.

use nfs3_types::xdr_codec::Opaque;

use super::dest::{Nfs4Dest, Nfs4Dir, nth, ok, put};
use super::error::{self, errno_err};
use super::proto::{
    AttrsBuilder, Bitmap, CreateArgs, CreateType, Op, SpecData, attr, name, status,
};
use super::reply::Res;
use crate::dest;
use crate::meta::{Kind, Meta};
use crate::nfs::rpc::ops::ObjectOps;

impl Nfs4Dest {
    /// CREATE of a non-file object followed by SETATTR (`finish`) in one compound;
    /// `check` asks for its attributes after (to see whether the time stuck).
    async fn create_object(
        &self,
        dir: &Nfs4Dir,
        n: &[u8],
        m: &Meta,
        new: NewObject,
    ) -> dest::Result<Option<Meta>> {
        let NewObject {
            objtype,
            mode,
            finish,
            check,
        } = new;
        let finish = finish.build();
        // The SETATTR that finishes the object, and the read-back when asked.
        let finishing = || {
            let mut ops = vec![Op::SetAttr(super::proto::SetAttrArgs {
                stateid: super::proto::StateId::ANONYMOUS,
                attrs: finish.clone(),
            })];
            if check {
                ops.push(Op::GetAttr(checked()));
            }
            ops
        };
        let a = self
            .with_owner_retry(dir, |fh, owners| {
                let mut b = AttrsBuilder::default();
                if let Some(mode) = mode {
                    b = b.mode(mode);
                }
                if owners {
                    b = self.with_owners(b, m);
                }
                let mut ops = vec![
                    put(fh),
                    Op::Create(CreateArgs {
                        objtype: objtype.clone(),
                        name: name(n),
                        attrs: b.build(),
                    }),
                ];
                ops.extend(finishing());
                ops
            })
            .await?;
        let r = match a.reply.status {
            status::OK => a.reply,
            status::EXIST if a.ambiguous && nth(&a.reply, 6, 0).is_none() => {
                // Likely our own first attempt: it must be there, and be finished.
                let again = self
                    .in_dir(dir, |fh| {
                        let mut ops = vec![put(fh), Op::Lookup(name(n))];
                        ops.extend(finishing());
                        ops
                    })
                    .await?;
                ok(again)?
            }
            st => return Err(error::status(st)),
        };
        if check {
            return Ok(self.attrs_in(&r, 0)?.meta);
        }
        Ok(None)
    }

    /// REMOVE of a file or an empty directory; NOENT after our own retry is done.
    pub(super) async fn remove_entry(&self, dir: &Nfs4Dir, n: &[u8]) -> dest::Result<()> {
        let a = self
            .in_dir(dir, |fh| vec![put(fh), Op::Remove(name(n))])
            .await?;
        match a.reply.status {
            status::OK => Ok(()),
            status::NOENT if a.ambiguous => Ok(()),
            st => Err(error::status(st)),
        }
    }
}

impl ObjectOps for Nfs4Dest {
    fn symlink(&self, dir: &Nfs4Dir, n: &[u8], target: &[u8], m: &Meta) -> dest::Result<()> {
        let link = CreateType::Link(Opaque::owned(target.to_vec()));
        let finish = AttrsBuilder::default().mtime(m.mtime.sec, m.mtime.nsec);
        let new = NewObject {
            objtype: link,
            mode: None,
            finish,
            check: true,
        };
        let after = self.rt.block_on(self.create_object(dir, n, m, new))?;
        self.check_symlink_time(after, m);
        Ok(())
    }

    fn mknod(&self, dir: &Nfs4Dir, n: &[u8], m: &Meta) -> dest::Result<()> {
        let spec = SpecData {
            major: libc::major(m.rdev),
            minor: libc::minor(m.rdev),
        };
        let t = match m.kind {
            Kind::Fifo => CreateType::Fifo,
            Kind::Socket => CreateType::Socket,
            Kind::CharDev => CreateType::Char(spec),
            Kind::BlockDev => CreateType::Block(spec),
            _ => return Err(errno_err(libc::EINVAL)),
        };
        let finish = AttrsBuilder::default()
            .mode(m.mode)
            .mtime(m.mtime.sec, m.mtime.nsec);
        let new = NewObject {
            objtype: t,
            mode: Some(m.mode),
            finish,
            check: false,
        };
        self.rt
            .block_on(self.create_object(dir, n, m, new))
            .map(|_| ())
    }

    fn hard_link(
        &self,
        dir: &Nfs4Dir,
        n: &[u8],
        target_dir: &Nfs4Dir,
        target: &[u8],
    ) -> dest::Result<()> {
        self.rt.block_on(async {
            let tdir = target_dir.fh.clone();
            let a = self
                .in_dir(dir, |fh| {
                    vec![
                        put(&tdir),
                        Op::Lookup(name(target)),
                        Op::SaveFh,
                        put(fh),
                        Op::Link(name(n)),
                    ]
                })
                .await?;
            match a.reply.status {
                status::OK => Ok(()),
                status::EXIST if a.ambiguous => {
                    // Ours if both names are the same file now.
                    let ids = Bitmap::of(&[attr::FILEID]);
                    let r = ok(self
                        .in_dir(dir, |fh| {
                            vec![
                                put(fh),
                                Op::Lookup(name(n)),
                                Op::GetAttr(ids.clone()),
                                put(&tdir),
                                Op::Lookup(name(target)),
                                Op::GetAttr(ids.clone()),
                            ]
                        })
                        .await?)?;
                    match (nth(&r, 9, 0), nth(&r, 9, 1)) {
                        (Some(Res::GetAttr(x)), Some(Res::GetAttr(y))) if x == y => Ok(()),
                        _ => Err(errno_err(libc::EEXIST)),
                    }
                }
                st => Err(error::status(st)),
            }
        })
    }

    fn remove(&self, dir: &Nfs4Dir, n: &[u8], _is_dir: bool) -> dest::Result<()> {
        // NFSv4 REMOVE takes directories too.
        self.rt.block_on(self.remove_entry(dir, n))
    }

    fn remove_many(&self, dir: &Nfs4Dir, names: &[&[u8]]) -> Vec<dest::Result<()>> {
        let mut results = Vec::with_capacity(names.len());
        for batch in names.chunks(REMOVALS_AT_ONCE) {
            results.extend(self.rt.block_on(futures_join_all(batch.iter().map(|n| {
                let dir = dir.clone();
                async move { self.remove_entry(&dir, n).await }
            }))));
        }
        results
    }
}

/// What [`Nfs4Dest::create_object`] makes: the type, the mode to create with, the
/// SETATTR that finishes it, and whether to read its attributes back.
struct NewObject {
    objtype: CreateType,
    mode: Option<u32>,
    finish: AttrsBuilder,
    check: bool,
}

/// REMOVEs of one directory's files in flight together.
const REMOVALS_AT_ONCE: usize = 64;

/// The attributes read back after setting a symlink's time.
fn checked() -> Bitmap {
    Bitmap::of(&[attr::TYPE, attr::SIZE, attr::MODE, attr::TIME_MODIFY])
}

/// Runs the futures concurrently on the calling task, results in order.
async fn futures_join_all<F: Future>(fs: impl Iterator<Item = F>) -> Vec<F::Output> {
    let mut set: Vec<_> = fs.map(Box::pin).collect();
    let mut out: Vec<Option<F::Output>> = (0..set.len()).map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (i, f) in set.iter_mut().enumerate() {
            if out[i].is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => out[i] = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter()
        .map(|o| o.expect("every future finished"))
        .collect()
}
