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
    pub(super) fn open_path_at(&self, path: &Path, create: bool) -> dest::Result<Option<LocalDir>> {
        let opened = if path.is_absolute() {
            trust::open_dir(self.trust, rustix::fs::CWD, path, create)
        } else {
            LocalDir::open_path(self.trust, &self.root)
                .and_then(|root| trust::open_dir(self.trust, root.fd(), path, create))
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
