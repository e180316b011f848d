//! Directories the user names by path beside DEST (`--backup-dir`, `--link-dest`, ...),
//! and the RENAME between two directories that moves an entry into a backup tree.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nfs3_types::nfs3::{self as v3, NFS_PROGRAM as P, ftype3, nfsstat3};

use super::client::dirop;
use super::dest::{NfsDest, NfsDir, cache_key};
use super::error;
use crate::dest;
use crate::nfs::rpc::ops::PathOps;
use crate::options::keep::normalize;
use crate::options::trust;
use crate::report::Escaped;

impl NfsDest {
    /// `path` as components below the export root: relative to DEST, or absolute as
    /// the `nfs://` URL writes it (export included).
    fn below_export(&self, path: &Path) -> dest::Result<Vec<Vec<u8>>> {
        let outside = || {
            dest::Error::from(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: not within the export {}", Escaped(path), self.export),
            ))
        };
        let rel = if path.is_absolute() {
            path.strip_prefix(&self.export)
                .map_err(|_| outside())?
                .to_path_buf()
        } else {
            let dest: PathBuf = self.subpath.iter().map(|c| OsStr::from_bytes(c)).collect();
            dest.join(path)
        };
        let norm = normalize(&rel).ok_or_else(outside)?;
        Ok(norm
            .components()
            .map(|c| c.as_os_str().as_bytes().to_vec())
            .collect())
    }

    /// The refusal of the symlink at `comps` below the export, named by its path on
    /// the server.
    pub(super) fn link_refused(&self, comps: &[Vec<u8>]) -> dest::Error {
        let mut at = PathBuf::from(&self.export);
        at.extend(comps.iter().map(|c| OsStr::from_bytes(c)));
        trust::server_link(at).into()
    }
}

impl PathOps for NfsDest {
    fn open_path(&self, path: &Path, create: bool) -> dest::Result<Option<NfsDir>> {
        let comps = self.below_export(path)?;
        let mut dir = self.root_nfs_dir();
        for (i, name) in comps.iter().enumerate() {
            let fh = self.rt.block_on(async {
                match self.lookup(&dir, name).await? {
                    Some((fh, a)) if a.type_ == ftype3::NF3DIR => Ok(Some(fh)),
                    Some((_, a)) if a.type_ == ftype3::NF3LNK => {
                        Err(self.link_refused(&comps[..=i]))
                    }
                    Some(_) => Err(io::Error::from_raw_os_error(libc::ENOTDIR).into()),
                    None if !create => Ok(None),
                    None => {
                        let attrs = v3::sattr3 {
                            mode: v3::Nfs3Option::Some(0o755),
                            ..Default::default()
                        };
                        self.mkdir_fh(&dir, name, attrs, false).await.map(Some)
                    }
                }
            })?;
            match fh {
                Some(fh) => dir = dir.child(fh, name),
                None => return Ok(None),
            }
        }
        Ok(Some(dir))
    }

    /// RENAME, within one directory (an update put in place) or between two. After a
    /// retry, NOENT for `from` means our first attempt did it when `to` is there now.
    fn rename(
        &self,
        from_dir: &NfsDir,
        from: &[u8],
        to_dir: &NfsDir,
        to: &[u8],
    ) -> dest::Result<()> {
        self.rt.block_on(async {
            // Within one directory both sides take the handle `in_dir` may have renewed.
            let same = from_dir.fh == to_dir.fh;
            let to_fh = &to_dir.fh;
            let a = self
                .in_dir(from_dir, |fh| async move {
                    let args = v3::RENAME3args {
                        from: dirop(&fh, from),
                        to: dirop(if same { &fh } else { to_fh }, to),
                    };
                    self.nfs
                        .call::<_, v3::RENAME3resok, v3::RENAME3resfail>(P::NFSPROC3_RENAME, &args)
                        .await
                })
                .await?;
            match a.res {
                Ok(_) => {}
                Err(nfsstat3::NFS3ERR_NOENT)
                    if a.ambiguous && self.lookup(to_dir, to).await?.is_some() => {}
                Err(s) => return Err(error::status(s)),
            }
            // A file written for -H is remembered by name for the links to it.
            if let Ok(mut c) = self.link_cache.lock()
                && let Some(fh) = c.remove(&cache_key(&from_dir.fh, from))
            {
                c.insert(cache_key(&to_dir.fh, to), fh);
            }
            Ok(())
        })
    }
}
