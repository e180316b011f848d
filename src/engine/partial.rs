//! `--partial` and `--partial-dir`: where an interrupted copy is kept and where the
//! files `--delay-updates` holds back wait, as rsync puts them: in the partial dir of
//! the file's own directory (a relative DIR), or in one directory for the whole run (an
//! absolute DIR). Without a partial dir an interrupted new file is kept at its name
//! with mtime 0, as rsync leaves it, so neither the quick check nor `-u` takes it for
//! complete; an old copy there is never replaced by a partial one. A file's partial is
//! removed once the file is copied (nfsync copies whole, so it is not read).
//!
//! The partial dir is an operator path: it is opened (and made, when missing) through
//! the destination's [`Destination::open_path`], which follows only symlinks that root
//! or we own (on `nfs://`, none). One it cannot open is warned about once; the files
//! that would have waited there then wait beside their final names, as without it.
//! A killed run's temporaries found in a partial dir when it is first opened are
//! removed, as those found beside their final names are; a relative one emptied by
//! the renames at the end is removed, as rsync removes it.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::{DirNode, Engine};
use crate::dest::AttrSet;
use crate::dest::Destination;
use crate::meta::{Kind, Meta, Time};
use crate::options::temp;
use crate::report::Escaped;

/// The partial dirs opened so far, by path (DEST-relative or absolute); `None` for one
/// that could not be opened (warned about once).
pub(super) struct Staging<D: Destination> {
    opened: Mutex<HashMap<PathBuf, Option<D::Dir>>>,
    /// Partial dirs looked for (to remove a used partial) and not there.
    missing: Mutex<HashSet<PathBuf>>,
}

impl<D: Destination> Staging<D> {
    pub(super) fn new() -> Self {
        Staging {
            opened: Mutex::new(HashMap::new()),
            missing: Mutex::new(HashSet::new()),
        }
    }
}

impl<D: Destination> Engine<'_, D> {
    /// The directory a held-back file of `parent` waits in: `None` to wait beside its
    /// final name (no `--partial-dir`, or one that cannot be used).
    pub(super) fn staging_dir(&self, parent: &DirNode<D>) -> Option<D::Dir> {
        let p = self.cfg.data.partial_dir.as_ref()?;
        let path = match self.partial_path(parent)? {
            Ok(path) => path,
            Err(e) => {
                self.out.warn(format_args!(
                    "--partial-dir {}: {e}; files wait beside their final names instead",
                    p.display()
                ));
                return None;
            }
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
                    Escaped(shown)
                ));
                None
            }
        };
        let mut opened = self.staging.opened.lock().unwrap();
        opened.entry(path).or_insert(dir).clone()
    }

    /// The partial dir of `parent` (its path, relative or absolute). A relative one
    /// sits below `parent`'s path, which is made of source names: one that is not
    /// would put it anywhere (an absolute `rel` replaces the path it is joined to).
    fn partial_path(&self, parent: &DirNode<D>) -> Option<crate::dest::Result<PathBuf>> {
        let p = self.cfg.data.partial_dir.as_ref()?;
        Some(match p.is_absolute() {
            true => Ok(p.clone()),
            false => crate::dest::name::relative(&parent.rel).map(|rel| rel.join(p)),
        })
    }

    /// `--partial`, when a copy stopped for an interrupt: its temporary `temp` (in
    /// `tdir`) becomes the partial file of `name`, in the partial dir, or at `name`
    /// itself when nothing is there (an old copy is never replaced by a partial one).
    /// An empty one, or one that cannot be kept, is removed, as without `--partial`.
    pub(super) fn keep_partial(
        &self,
        parent: &DirNode<D>,
        (tdir, temp): (&D::Dir, &OsStr),
        name: &OsStr,
        meta: &Meta,
    ) {
        // As rsync, only a partial holding data is kept.
        let has_data = matches!(self.dest.stat(tdir, temp), Ok(Some(m)) if m.size > 0);
        let kept = if !has_data {
            false
        } else if self.cfg.data.partial_dir.is_some() {
            self.staging_dir(parent)
                .is_some_and(|pdir| self.dest.rename_into(tdir, temp, &pdir, name).is_ok())
        } else if let Some(dir) = parent.dir.as_ref() {
            // mtime 0, as rsync leaves it: a partial file at the final name must not
            // look newer than the source to -u.
            self.mark_left(tdir, temp, meta, 0).is_ok()
                && self.dest.hard_link(dir, name, tdir, temp).is_ok()
                && self.dest.remove(tdir, temp, Kind::File).is_ok()
        } else {
            false
        };
        if !kept {
            let _ = self.dest.remove(tdir, temp, Kind::File);
        }
    }

    /// Gives a file left incomplete the mtime `sec` (and its other attributes as they
    /// are), so no quick check takes it for the source's copy.
    pub(super) fn mark_left(
        &self,
        dir: &D::Dir,
        name: &OsStr,
        meta: &Meta,
        sec: i64,
    ) -> crate::dest::Result<()> {
        let marked = Meta {
            mtime: Time { sec, nsec: 0 },
            ..*meta
        };
        self.dest.set_attrs(dir, name, &marked, AttrSet::MTIME)
    }

    /// After `name` is copied (not held back): its partial file in the partial dir, if
    /// any, is done with, as rsync removes it, and the relative partial dir with it
    /// when that emptied it.
    pub(super) fn partial_used(&self, parent: &DirNode<D>, name: &OsStr) {
        if !self.keeps_partial() {
            return;
        }
        let Some(Ok(path)) = self.partial_path(parent) else {
            return;
        };
        let known = self.staging.opened.lock().unwrap().get(&path).cloned();
        let dir = match known {
            Some(d) => d,
            None if self.staging.missing.lock().unwrap().contains(&path) => None,
            None => match self.dest.open_path(&path, false) {
                Ok(Some(d)) => {
                    let mut opened = self.staging.opened.lock().unwrap();
                    opened.entry(path.clone()).or_insert(Some(d)).clone()
                }
                _ => {
                    self.staging.missing.lock().unwrap().insert(path.clone());
                    None
                }
            },
        };
        let Some(d) = dir else {
            return;
        };
        if self.dest.remove(&d, name, Kind::File).is_err() {
            return;
        }
        // A relative partial dir of one name is removed as soon as it is empty, while
        // its directory still gets its mtime afterwards (at the end it would not).
        let p = self
            .cfg
            .data
            .partial_dir
            .as_deref()
            .unwrap_or(Path::new(""));
        if let (true, Some(up), Some(pname)) = (
            p.is_relative() && p.components().count() == 1,
            parent.dir.as_ref(),
            p.file_name(),
        ) && self.dest.remove(up, pname, Kind::Dir).is_ok()
        {
            self.staging.opened.lock().unwrap().remove(&path);
        }
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
