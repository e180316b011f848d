//! `-K`: a destination symlink to a directory stands for that directory.
//!
//! rsync deletes before it writes (`--delete-during`), so with `--delete` the
//! directory such a link points to may be gone before the link is followed; nfsync
//! deletes after a directory's children, so a directory written through a kept link
//! in this run is kept, never removed with what was just copied into it.

use std::ffi::OsStr;
use std::path::Path;
use std::sync::Mutex;

use super::Engine;
use crate::dest::{self, Destination};
use crate::meta::{Kind, Meta};
use crate::report::Escaped;

/// (dev, ino) of the directories written through destination symlinks this run.
#[derive(Default)]
pub(super) struct LinkedDirs(Mutex<Vec<(u64, u64)>>);

impl<D: Destination> Engine<'_, D> {
    /// With `-K`, when what `pdir` holds as `name` is a symlink (`existing`): the
    /// directory it points to, opened. `Err(())`: an error, already reported.
    pub(super) fn keep_dirlink(
        &self,
        pdir: Option<&D::Dir>,
        existing: Option<Kind>,
        name: &OsStr,
        rel: &Path,
    ) -> Result<Option<(D::Dir, Meta)>, ()> {
        match pdir {
            Some(pd) if self.cfg.keep_dirlinks && existing == Some(Kind::Symlink) => self
                .open_dest_link(pd, name, rel)
                .map_err(|e| self.dest_error(rel, e)),
            _ => Ok(None),
        }
    }

    /// Opens the directory the symlink `name` in `pdir` points to (`None`: it points
    /// to no directory) and remembers it for [`Engine::is_linked_dir`].
    pub(super) fn open_dest_link(
        &self,
        pdir: &D::Dir,
        name: &OsStr,
        rel: &Path,
    ) -> dest::Result<Option<(D::Dir, Meta)>> {
        let found = self.dest.open_dir_link(pdir, name, rel)?;
        if let Some((_, m)) = &found {
            self.linked_dirs.0.lock().unwrap().push((m.dev, m.ino));
        }
        Ok(found)
    }

    /// Whether the directory `name` in `dir` was written through a `-K` link this run
    /// (then `--delete` keeps it).
    pub(super) fn is_linked_dir(&self, dir: Option<&D::Dir>, name: &OsStr, rel: &Path) -> bool {
        let Some(dir) = dir else {
            return false;
        };
        if self.linked_dirs.0.lock().unwrap().is_empty() {
            return false;
        }
        let Ok(Some(m)) = self.dest.stat(dir, name) else {
            return false;
        };
        let kept = self.linked_dirs.0.lock().unwrap().contains(&(m.dev, m.ino));
        if kept {
            self.out.verbose(
                1,
                format_args!(
                    "not deleting {}: a -K symlink's directory, written this run",
                    Escaped(rel)
                ),
            );
        }
        kept
    }
}
