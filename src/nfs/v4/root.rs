//! DEST's own directory: found from the server's root (its NFSv4 pseudo-filesystem)
//! with one compound of LOOKUPs, the missing part made with one compound of CREATEs,
//! and found again the same way when a directory handle goes stale.

use std::sync::Arc;

use super::dest::{Nfs4Dest, Nfs4Dir, got_fh, nth, ok};
use super::error::{self, errno_err, is_symlink_type, link_refused, symlink_on_the_way};
use super::proto::{AttrsBuilder, Bitmap, CreateArgs, CreateType, Op, attr, name, status};
use super::reply::Res;
use crate::dest;

impl Nfs4Dest {
    /// A directory's handle from its path below the server's root.
    pub(super) async fn resolve(&self, path: &[Vec<u8>]) -> dest::Result<Vec<u8>> {
        let mut ops = vec![Op::PutRootFh];
        ops.extend(path.iter().map(|c| Op::Lookup(name(c))));
        ops.push(Op::GetFh);
        got_fh(&ok(self.client.compound(ops).await?)?)
    }

    /// The directory at `path` below the server's root, made (0755) where missing, as
    /// `mkdir -p` would: one compound to look, one to make the rest.
    pub(super) fn dir_of(&self, path: &[Vec<u8>]) -> dest::Result<Nfs4Dir> {
        self.rt.block_on(async {
            for _ in 0..3 {
                let mut ops = vec![Op::PutRootFh];
                ops.extend(path.iter().map(|c| Op::Lookup(name(c))));
                ops.push(Op::GetFh);
                ops.push(Op::GetAttr(Bitmap::of(&[attr::TYPE])));
                let a = self.client.compound(ops).await?;
                let r = &a.reply;
                if r.status == status::OK {
                    let fh = got_fh(r)?;
                    if matches!(nth(r, 9, 0), Some(Res::GetAttr(f)) if is_symlink_type(&f.vals)) {
                        return Err(link_refused(path));
                    }
                    if !matches!(nth(r, 9, 0), Some(Res::GetAttr(f)) if f.vals.get(..4) == Some(&[0, 0, 0, 2])) {
                        return Err(errno_err(libc::ENOTDIR));
                    }
                    return Ok(Nfs4Dir {
                        fh: fh.into(),
                        path: Arc::new(path.to_vec()),
                    });
                }
                if r.status != status::NOENT {
                    return Err(symlink_on_the_way(r, path).unwrap_or(error::status(r.status)));
                }
                // results: SEQUENCE, PUTROOTFH, then one LOOKUP per component found.
                let found = r.results.len().saturating_sub(3);
                let mut ops = vec![Op::PutRootFh];
                ops.extend(path[..found].iter().map(|c| Op::Lookup(name(c))));
                for c in &path[found..] {
                    ops.push(Op::Create(CreateArgs {
                        objtype: CreateType::Dir,
                        name: name(c),
                        attrs: AttrsBuilder::default().mode(0o755).build(),
                    }));
                }
                ops.push(Op::GetFh);
                let a = self.client.compound(ops).await?;
                match a.reply.status {
                    status::OK => {
                        return Ok(Nfs4Dir {
                            fh: got_fh(&a.reply)?.into(),
                            path: Arc::new(path.to_vec()),
                        });
                    }
                    // Made meanwhile by someone else (or by our own lost attempt).
                    status::EXIST | status::NOENT => continue,
                    status::SYMLINK => {
                        let r = &a.reply;
                        let e = symlink_on_the_way(r, &path[..found]);
                        return Err(e.unwrap_or(error::status(r.status)));
                    }
                    st => return Err(error::status(st)),
                }
            }
            Err(errno_err(libc::EEXIST))
        })
    }
}
