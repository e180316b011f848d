//! `--partial-dir` with `--delay-updates`: where the held-back files wait, as rsync
//! stages them: in the partial dir of the file's own directory (a relative DIR), or in
//! one directory for the whole run (an absolute DIR). nfsync keeps no partial file of an
//! interrupted copy (a re-run copies the file again), so without `--delay-updates` the
//! option changes nothing.
//!
//! The partial dir is an operator path: it is opened (and made, when missing) through
//! the destination's [`Destination::open_path`], which follows only symlinks that root
//! or we own (on `nfs://`, none). One it cannot open is warned about once; the files
//! that would have waited there then wait beside their final names, as without it.
//! A killed run's temporaries found in a partial dir when it is first opened are
//! removed, as those found beside their final names are; a relative one emptied by
//! the renames at the end is removed, as rsync removes it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::{DirNode, Engine};
use crate::dest::Destination;
use crate::meta::Kind;
use crate::options::temp;

/// The partial dirs opened so far, by path (DEST-relative or absolute); `None` for one
/// that could not be opened (warned about once).
pub(super) struct Staging<D: Destination> {
    opened: Mutex<HashMap<PathBuf, Option<D::Dir>>>,
}

impl<D: Destination> Staging<D> {
    pub(super) fn new() -> Self {
        Staging {
            opened: Mutex::new(HashMap::new()),
        }
    }
}

impl<D: Destination> Engine<'_, D> {
    /// The directory a held-back file of `parent` waits in: `None` to wait beside its
    /// final name (no `--partial-dir`, or one that cannot be used).
    pub(super) fn staging_dir(&self, parent: &DirNode<D>) -> Option<D::Dir> {
        let p = self.cfg.data.partial_dir.as_ref()?;
        let path = if p.is_absolute() {
            p.clone()
        } else {
            parent.rel.join(p)
        };
        if let Some(d) = self.staging.opened.lock().unwrap().get(&path) {
            return d.clone();
        }
        // Opened without the lock (a round trip on nfs://): two workers may both open
        // it, which costs an open and keeps the first.
        let dir = match self.dest.open_path(&path, true) {
            Ok(Some(d)) => {
                self.clear_abandoned(&d);
                Some(d)
            }
            Ok(None) => None,
            Err(e) => {
                let shown = if p.is_absolute() {
                    path.clone()
                } else {
                    self.dest_path(&path)
                };
                self.out.warn(format_args!(
                    "--partial-dir {}: {e}; files wait beside their final names instead",
                    shown.display()
                ));
                None
            }
        };
        let mut opened = self.staging.opened.lock().unwrap();
        opened.entry(path).or_insert(dir).clone()
    }

    /// Removes the temporaries of runs that are gone from a partial dir.
    fn clear_abandoned(&self, dir: &D::Dir) {
        let Ok(list) = self.dest.list(dir) else {
            return;
        };
        for e in list {
            if temp::is_temp(&e.name) && temp::is_abandoned(&e.name) {
                let _ = self.dest.remove(dir, &e.name, Kind::File);
            }
        }
    }

    /// At the end of the run: the relative partial dirs the renames emptied are
    /// removed (one still holding something stays).
    pub(super) fn remove_staging_dirs(&self) {
        let Some(p) = self.cfg.data.partial_dir.as_ref() else {
            return;
        };
        if p.is_absolute() || self.cfg.dry_run {
            return;
        }
        let opened = std::mem::take(&mut *self.staging.opened.lock().unwrap());
        for (path, dir) in opened {
            if dir.is_none() {
                continue;
            }
            let (Some(up), Some(name)) = (path.parent(), path.file_name()) else {
                continue;
            };
            if let Ok(Some(up)) = self.dest.open_path(up_or_dot(up), false) {
                let _ = self.dest.remove(&up, name, Kind::Dir);
            }
        }
    }
}

/// `up`, or `.` for the empty path (DEST itself).
fn up_or_dot(up: &Path) -> &Path {
    if up.as_os_str().is_empty() {
        Path::new(".")
    } else {
        up
    }
}
