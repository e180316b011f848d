//! Directories the user names by path beside DEST (`--backup-dir`, `--link-dest`, ...).

use std::io;
use std::path::Path;

use super::{LocalDest, LocalDir};
use crate::dest;
use crate::options::trust;

impl LocalDest {
    /// The directory at `path` (relative to DEST, or absolute), followed through
    /// symlinks that root or we own and no others (see `options::trust`): a link
    /// another user planted on the way would send backups, or hard links to a basis,
    /// anywhere. Missing levels are made with `create`.
    /// Where a path relative to DEST starts when DEST is not there (a dry run into a
    /// new DEST, rsync's `-n --link-dest=../prev` preview): each leading `..` is taken
    /// by name, from the nearest directory above that exists, as rsync reads it.
    fn missing_root_base<'p>(&self, path: &'p Path) -> (std::path::PathBuf, &'p Path) {
        let mut base = self.root.clone();
        let mut rest = path;
        while std::fs::symlink_metadata(&base).is_err()
            && let Ok(up) = rest.strip_prefix("..")
            && let Some(parent) = base.parent()
        {
            base = match parent.as_os_str().is_empty() {
                true => ".".into(),
                false => parent.to_owned(),
            };
            rest = up;
        }
        (base, rest)
    }

    pub(super) fn open_path_at(&self, path: &Path, create: bool) -> dest::Result<Option<LocalDir>> {
        let opened = if path.is_absolute() {
            trust::open_dir(self.trust, rustix::fs::CWD, path, create)
        } else {
            match LocalDir::open_path(self.trust, &self.root) {
                Ok(root) => trust::open_dir(self.trust, root.fd(), path, create),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    let (base, rest) = self.missing_root_base(path);
                    LocalDir::open_path(self.trust, &base)
                        .and_then(|b| trust::open_dir(self.trust, b.fd(), rest, create))
                }
                Err(e) => Err(e),
            }
        };
        match opened {
            Ok(fd) => {
                let setgid = rustix::fs::fstat(&fd)?.st_mode & 0o2000 != 0;
                Ok(Some(LocalDir {
                    setgid,
                    ..LocalDir::new(fd)
                }))
            }
            Err(e) if !create && e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}
