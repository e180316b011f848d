//! Directories the user names by path beside DEST (`--backup-dir`, `--link-dest`, ...).

use std::fs;
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

use super::{LocalDest, LocalDir};
use crate::dest;

impl LocalDest {
    /// The directory at `path` (relative to DEST, or absolute), followed through
    /// symlinks as the user's own DEST is: the user named it.
    pub(super) fn open_path_at(&self, path: &Path, create: bool) -> dest::Result<Option<LocalDir>> {
        let full = self.root.join(path);
        if create {
            match fs::DirBuilder::new()
                .recursive(true)
                .mode(0o755)
                .create(&full)
            {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e.into()),
            }
        }
        match LocalDir::open_path(&full) {
            Ok(d) => Ok(Some(d)),
            Err(e) if !create && e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}
