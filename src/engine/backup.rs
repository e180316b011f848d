//! Carrying out `--backup` (the decisions are in [`crate::options::backup`]): what an
//! update replaces or `--delete` removes is moved to its backup, beside it with the
//! suffix or below `--backup-dir`, instead of being lost.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::keep::source_meta;
use super::{DirNode, Engine};
use crate::dest::{self, CopyError, Destination, Removal, SourceFile};
use crate::meta::{Kind, Meta};
use crate::options::{follow, temp};
use crate::report::Escaped;

impl<D: Destination> Engine<'_, D> {
    /// `--backup`: moves `name` (in `dir`, at `parent` below DEST, `node` the nearest
    /// directory this run brings over) to its backup: beside it with the suffix, or to
    /// the same path below `--backup-dir` (made as needed). A backup already there is
    /// replaced, as rsync does.
    pub(super) fn back_up(
        &self,
        dir: &D::Dir,
        (node, parent): (&DirNode<D>, &Path),
        name: &OsStr,
    ) -> dest::Result<()> {
        let b = self.cfg.backup.as_ref().expect("--backup is on");
        if self.drops_unsafe_link(dir, &parent.join(name))? {
            return self.dest.remove(dir, name, Kind::Symlink);
        }
        let backup = b.name(name);
        match &b.dir {
            None => self.dest.rename(dir, name, &backup)?,
            Some(root) => {
                let to = self.backup_dir(root, node, parent)?;
                let moved = self.dest.rename_into(dir, name, &to, &backup);
                if self.cleared_for_backup(&to, &backup, moved)? {
                    self.dest.rename_into(dir, name, &to, &backup)?;
                }
            }
        }
        self.backed_up(&parent.join(name));
        Ok(())
    }

    /// After a move to a backup named `backup` in `to`: whether it failed only for an
    /// empty directory of that name, now removed so the move can be tried again (rsync
    /// replaces what is in the way of a backup). A directory that is not empty stays,
    /// and the backup fails, naming it: its content may be older backups.
    fn cleared_for_backup(
        &self,
        to: &D::Dir,
        backup: &OsStr,
        moved: dest::Result<()>,
    ) -> dest::Result<bool> {
        let Err(e) = moved else {
            return Ok(false);
        };
        let in_the_way = matches!(
            e.raw_os_error(),
            Some(libc::EISDIR | libc::EEXIST | libc::ENOTEMPTY)
        );
        if !in_the_way || self.dest.stat(to, backup)?.map(|m| m.kind) != Some(Kind::Dir) {
            return Err(e);
        }
        match self.dest.remove(to, backup, Kind::Dir) {
            Ok(()) => Ok(true),
            Err(r) if matches!(r.raw_os_error(), Some(libc::ENOTEMPTY | libc::EEXIST)) => Err(
                io::Error::other("a non-empty directory of its name is in the way of its backup")
                    .into(),
            ),
            Err(r) => Err(r),
        }
    }

    /// `--backup` with `--inplace`/`--append`: the old copy `name` (attributes `old`)
    /// is about to be written over where it is, so it cannot be moved away: it is
    /// copied to its backup (beside it, or below `--backup-dir`), as rsync copies it,
    /// under a temporary name renamed over any older backup once whole.
    pub(super) fn back_up_copy(
        &self,
        dir: &D::Dir,
        (node, parent): (&DirNode<D>, &Path),
        name: &OsStr,
        old: &Meta,
    ) -> Result<(), CopyError> {
        let b = self.cfg.backup.as_ref().expect("--backup is on");
        let backup = b.name(name);
        let to = match &b.dir {
            None => dir.clone(),
            Some(root) => self
                .backup_dir(root, node, parent)
                .map_err(CopyError::Dest)?,
        };
        let rel = parent.join(name);
        let Some(data) = self.dest.open_file(dir, name).map_err(CopyError::Dest)? else {
            return Err(CopyError::Dest(dest::unsupported(
                "the old copy cannot be read to keep it as a backup",
            )));
        };
        let path = self.dest_path(&rel);
        let copy = SourceFile {
            data,
            meta: old,
            listed: old,
            path: &path,
            sparse: self.cfg.data.sparse,
            limit: None,
            stop: Some(&self.interrupted),
            keep_partial: false,
            moving: None,
        };
        let temp = temp::name(&backup);
        match self.dest.write_file(&to, &temp, &copy) {
            Ok(_) => {}
            Err(CopyError::Source(e)) => return Err(CopyError::Dest(e.into())),
            Err(CopyError::SourceChanged | CopyError::Vanished) => {
                let _ = self.dest.remove(&to, &temp, Kind::File);
                return Err(CopyError::Dest(
                    io::Error::other("changed while its backup was made").into(),
                ));
            }
            Err(e) => return Err(e),
        }
        let moved = self.dest.rename(&to, &temp, &backup);
        self.cleared_for_backup(&to, &backup, moved)
            .and_then(|again| match again {
                true => self.dest.rename(&to, &temp, &backup),
                false => Ok(()),
            })
            .map_err(|e| {
                let _ = self.dest.remove(&to, &temp, Kind::File);
                CopyError::Dest(e)
            })?;
        self.backed_up(&rel);
        Ok(())
    }

    /// With `--safe-links`, whether DEST's `rel` is a symlink that must not be kept
    /// as a backup: an unsafe one (a backup is a link DEST goes on holding), or one
    /// whose target cannot be read (rsync fails closed). It is removed instead.
    fn drops_unsafe_link(&self, dir: &D::Dir, rel: &Path) -> dest::Result<bool> {
        if !self.cfg.follow.skip_unsafe || !self.cfg.links {
            return Ok(false);
        }
        let name = rel.file_name().unwrap_or_default();
        if self.dest.stat(dir, name)?.map(|m| m.kind) != Some(Kind::Symlink) {
            return Ok(false);
        }
        let says = match self.dest.read_link(dir, name) {
            Ok(t) if !follow::is_unsafe(t.as_bytes(), rel) => return Ok(false),
            Ok(t) => format!(
                "not backing up unsafe symlink \"{}\" -> \"{}\"",
                Escaped(rel),
                Escaped(Path::new(&t))
            ),
            Err(e) if e.is_fatal() || e.kind() == io::ErrorKind::NotFound => return Err(e),
            Err(_) => format!(
                "not backing up symlink with unreadable target \"{}\"",
                Escaped(rel)
            ),
        };
        if self.cfg.verbose > 0 {
            self.out.info(format_args!("{says}"));
        }
        Ok(true)
    }

    /// The directory below `--backup-dir` for DEST's `parent`. Missing levels are made
    /// as rsync makes them: with the attributes of DEST's directory at that path, as
    /// rsync's receiver has them by then (the source's mode and owners where the
    /// command line keeps them; nfsync gives a directory its own only once its
    /// children are done). `parent` is made of source names, checked before it is
    /// joined to the user's `root`: an absolute one would replace it, a `..` climb out.
    fn backup_dir(&self, root: &Path, node: &DirNode<D>, parent: &Path) -> dest::Result<D::Dir> {
        let parent = dest::name::relative(parent)?;
        if let Some(d) = self.dest.open_path(&root.join(parent), false)? {
            return Ok(d);
        }
        let missing = || dest::Error::from(io::Error::from(io::ErrorKind::NotFound));
        let mut bdir = self.dest.open_path(root, true)?.ok_or_else(missing)?;
        let mut ddir = self.dest.root_dir()?;
        let mut below = PathBuf::new();
        for c in parent.components() {
            let c = c.as_os_str();
            below.push(c);
            let (d, mut meta) = self.dest.open_dir(&ddir, c)?;
            ddir = d;
            if let Some(src) = source_meta(node, &below) {
                if self.cfg.perms {
                    meta.mode = src.mode;
                }
                if self.cfg.owners.owner {
                    meta.uid = src.uid;
                }
                if self.cfg.owners.group {
                    meta.gid = src.gid;
                }
            }
            bdir = match self.dest.open_dir(&bdir, c) {
                Ok((b, _)) => b,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    match self.dest.mkdir(&bdir, c, &meta) {
                        Ok((b, todo)) => {
                            self.dest.set_dir_attrs(&b, &meta, todo)?;
                            b
                        }
                        // Another worker made it first.
                        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                            self.dest.open_dir(&bdir, c)?.0
                        }
                        Err(e) => return Err(e),
                    }
                }
                Err(e) => return Err(e),
            };
        }
        Ok(bdir)
    }

    /// `--delete` (or an entry of another type in the way) with `--backup`: every
    /// non-directory goes to its backup and then the emptied directories are removed,
    /// deepest first. Backups kept beside their files keep their directory too (rsync:
    /// "cannot delete non-empty directory"). Returns whether `name` is gone.
    pub(super) fn back_up_deleted(
        &self,
        dir: &D::Dir,
        (node, parent): (&DirNode<D>, &Path),
        (name, rel, kind): (&OsStr, &Path, Kind),
        each: &dyn Removal,
    ) -> dest::Result<bool> {
        if kind != Kind::Dir {
            if !each.may_remove(rel, kind) {
                return Ok(false);
            }
            let gone = match self.cfg.backup.as_ref() {
                Some(b) if b.is_backup_name(name) => self.dest.remove(dir, name, kind),
                _ => self.back_up(dir, (node, parent), name),
            };
            match gone {
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(true),
                r => r?,
            }
            each.removed(rel, kind);
            return Ok(true);
        }
        let (sub, children) = self.listing_by_name(dir, name)?;
        let below = parent.join(name);
        let mut all = true;
        for c in children {
            let Some(ckind) = self.kind_of(&sub, &c)? else {
                continue;
            };
            let crel = rel.join(&c.name);
            all &= self.back_up_deleted(&sub, (node, &below), (&c.name, &crel, ckind), each)?;
        }
        let non_empty = || {
            self.out.info(format_args!(
                "cannot delete non-empty directory: {}",
                Escaped(parent.join(name))
            ));
            Ok(false)
        };
        // What stays below it keeps it, and each level says so, as rsync does.
        if !all {
            return non_empty();
        }
        if !each.may_remove(rel, kind) {
            return Ok(false);
        }
        match self.dest.remove(dir, name, Kind::Dir) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOTEMPTY) => return non_empty(),
            Err(e) => return Err(e),
        }
        each.removed(rel, kind);
        Ok(true)
    }

    /// `--info=backup`: names `--backup-dir` before the transfer, as rsync does
    /// (`(new)` when it is still to be made).
    pub(super) fn announce_backup_dir(&self) {
        let Some(b) = self.cfg.backup.as_ref().filter(|b| b.announce) else {
            return;
        };
        let (Some(dir), Some(shown)) = (&b.dir, b.shown_dir()) else {
            return;
        };
        let new = match self.dest.open_path(dir, false) {
            Ok(Some(_)) => "",
            _ => "(new) ",
        };
        self.out
            .info(format_args!("{new}backup_dir is {}", Escaped(shown)));
    }

    /// `--info=backup`: the line rsync prints for a backup made of DEST's `rel`.
    fn backed_up(&self, rel: &Path) {
        if let Some(b) = self.cfg.backup.as_ref().filter(|b| b.announce) {
            self.out.info(format_args!(
                "backed up {} to {}",
                Escaped(rel),
                Escaped(b.shown(rel))
            ));
        }
    }
}
