//! Directories the user names by path beside DEST (`--backup-dir`, `--link-dest`, ...),
//! and the RENAME between two directories that moves an entry into a backup tree.

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::dest::{Nfs4Dest, Nfs4Dir, got_fh, nth, put};
use super::error::{self, errno_err, is_symlink_type, link_refused, symlink_on_the_way};
use super::proto::{Bitmap, Op, RenameArgs, attr, name, status};
use super::reply::Res;
use crate::dest;
use crate::nfs::rpc::ops::PathOps;
use crate::options::keep::normalize;
use crate::report::Escaped;

impl Nfs4Dest {
    /// `path` as components below the server's root: relative to DEST, or absolute
    /// as the `nfs://` URL writes it.
    fn below_root(&self, path: &Path) -> dest::Result<Vec<Vec<u8>>> {
        let rel = match path.strip_prefix("/") {
            Ok(p) => p.to_path_buf(),
            Err(_) => self
                .path
                .iter()
                .map(|c| std::ffi::OsStr::from_bytes(c))
                .collect::<PathBuf>()
                .join(path),
        };
        let norm = normalize(&rel).ok_or_else(|| {
            dest::Error::from(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: above the server's root", Escaped(path)),
            ))
        })?;
        Ok(norm
            .components()
            .map(|c| c.as_os_str().as_bytes().to_vec())
            .collect())
    }
}

impl PathOps for Nfs4Dest {
    fn open_path(&self, path: &Path, create: bool) -> dest::Result<Option<Nfs4Dir>> {
        let comps = self.below_root(path)?;
        if create {
            return self.dir_of(&comps).map(Some);
        }
        self.rt.block_on(async {
            let mut ops = vec![Op::PutRootFh];
            ops.extend(comps.iter().map(|c| Op::Lookup(name(c))));
            ops.push(Op::GetFh);
            ops.push(Op::GetAttr(Bitmap::of(&[attr::TYPE])));
            let a = self.client.compound(ops).await?;
            let r = &a.reply;
            match r.status {
                status::OK => {}
                status::NOENT => return Ok(None),
                st => return Err(symlink_on_the_way(r, &comps).unwrap_or(error::status(st))),
            }
            if matches!(nth(r, 9, 0), Some(Res::GetAttr(f)) if is_symlink_type(&f.vals)) {
                return Err(link_refused(&comps));
            }
            if !matches!(nth(r, 9, 0), Some(Res::GetAttr(f)) if f.vals.get(..4) == Some(&[0, 0, 0, 2]))
            {
                return Err(errno_err(libc::ENOTDIR));
            }
            Ok(Some(Nfs4Dir {
                fh: got_fh(r)?.into(),
                path: Arc::new(comps),
            }))
        })
    }

    /// RENAME, within one directory (an update put in place) or between two (SAVEFH
    /// holds the source directory); NOENT after our own retry is done.
    fn rename(
        &self,
        from_dir: &Nfs4Dir,
        from: &[u8],
        to_dir: &Nfs4Dir,
        to: &[u8],
    ) -> dest::Result<()> {
        self.rt.block_on(async {
            // Within one directory the saved handle is the current one too.
            let tdir = (from_dir.fh != to_dir.fh).then(|| to_dir.fh.clone());
            let a = self
                .in_dir(from_dir, |fh| {
                    let mut ops = vec![put(fh), Op::SaveFh];
                    ops.extend(tdir.as_ref().map(|t| put(t)));
                    ops.push(Op::Rename(RenameArgs {
                        from: name(from),
                        to: name(to),
                    }));
                    ops
                })
                .await?;
            match a.reply.status {
                status::OK => Ok(()),
                status::NOENT if a.ambiguous => Ok(()),
                st => Err(error::status(st)),
            }
        })
    }
}
