//! Carrying out rsync's safety options (the decisions are in [`crate::options::keep`]):
//! `--backup` moves what an update replaces or `--delete` removes to its backup
//! instead of losing it; the basis directories of `--link-dest`, `--compare-dest` and
//! `--copy-dest` stand in for the source where they hold an entry unchanged; and
//! `--remove-source-files` removes a source entry once the destination holds it.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use super::race::{Attempt, is_race};
use super::{DirNode, Engine, EntryJob};
use crate::dest::{self, CopyError, Destination, Removal, SourceFile};
use crate::meta::{Kind, Meta};
use crate::options::keep::{self, BasisUse, Match};
use crate::options::{follow, temp};
use crate::report::Stats;
use crate::report::itemize::{Changes, Itemize, Update};
use crate::walk;

/// What a basis directory offers for one entry (`Dir` a directory of the destination).
pub(super) enum FromBasis<Dir> {
    /// Nothing: copy from the source as usual.
    Nothing,
    /// Done by the basis copy (linked, or left out with `--compare-dest`).
    Done(Attempt),
    /// Copy from the source, itemized with this code (`None`: not itemized, as rsync
    /// says nothing of an entry `--copy-dest` had whole).
    Copy(Option<Itemize>),
    /// Copy the basis copy (in this directory, with these attributes), which the quick
    /// check found to be the source's content, as rsync copies it locally; itemized
    /// as [`FromBasis::Copy`]. Where it cannot be read, copy from the source.
    CopyBasis(Option<Itemize>, Dir, Meta),
}

/// A basis copy that matches: its directory, how well, its attributes.
type BasisCopy<Dir> = (Dir, Match, Meta);

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
        let Some(file) = self.dest.open_file(dir, name).map_err(CopyError::Dest)? else {
            return Err(CopyError::Dest(dest::unsupported(
                "the old copy cannot be read to keep it as a backup",
            )));
        };
        let path = self.dest_path(&rel);
        let copy = SourceFile {
            file,
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
                rel.display(),
                Path::new(&t).display()
            ),
            Err(e) if e.is_fatal() || e.kind() == io::ErrorKind::NotFound => return Err(e),
            Err(_) => format!(
                "not backing up symlink with unreadable target \"{}\"",
                rel.display()
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
    /// children are done).
    fn backup_dir(&self, root: &Path, node: &DirNode<D>, parent: &Path) -> dest::Result<D::Dir> {
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
                parent.join(name).display()
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
            .info(format_args!("{new}backup_dir is {}", shown.display()));
    }

    /// `--info=backup`: the line rsync prints for a backup made of DEST's `rel`.
    fn backed_up(&self, rel: &Path) {
        if let Some(b) = self.cfg.backup.as_ref().filter(|b| b.announce) {
            self.out.info(format_args!(
                "backed up {} to {}",
                rel.display(),
                b.shown(rel).display()
            ));
        }
    }

    /// Warns, as rsync does, about a basis directory that is not there (the run goes
    /// on: entries are then copied from the source).
    pub(super) fn check_basis_dirs(&self) {
        let Some(b) = &self.cfg.basis else {
            return;
        };
        let option = match b.used {
            BasisUse::Link => "--link-dest",
            BasisUse::Compare => "--compare-dest",
            BasisUse::Copy => "--copy-dest",
        };
        for d in &b.dirs {
            match self.dest.open_path(d, false) {
                Ok(Some(_)) => {}
                // A link another user owns on the way: say so, rather than "missing".
                Err(dest::Error::Entry(e)) if crate::options::trust::is_refusal(&e) => {
                    self.out.warn(format_args!("{option} arg not used: {e}"))
                }
                _ => self.out.warn(format_args!(
                    "{option} arg does not exist: {}",
                    self.dest_path(d).display()
                )),
            }
        }
    }

    /// The best basis copy of an entry DEST lacks, with the directory holding it, and
    /// the first basis copy of the entry's kind whatever its content (rsync itemizes
    /// an entry sent whole against it). `same` tells whether a basis copy's content
    /// is the source's (`--checksum` bytes, a symlink's target). A basis directory
    /// that is missing or unreadable is passed over, as rsync does.
    fn basis_match(
        &self,
        job: &EntryJob<D>,
        src: &Meta,
        same: impl Fn(&D::Dir) -> bool,
    ) -> (Option<BasisCopy<D::Dir>>, Option<Meta>) {
        let Some(basis) = self.cfg.basis.as_ref() else {
            return (None, None);
        };
        let dirs = job.parent.basis.get_or_init(|| {
            basis
                .dirs
                .iter()
                .map(|d| {
                    let path = d.join(&job.parent.rel);
                    self.dest.open_path(&path, false).ok().flatten()
                })
                .collect()
        });
        let mut found = Vec::with_capacity(dirs.len());
        let mut first = None;
        for dir in dirs {
            let Some(dir) = dir else {
                found.push(None);
                continue;
            };
            let m = match self.dest.stat(dir, &job.entry.name) {
                Ok(Some(m)) => {
                    if m.kind == src.kind {
                        first.get_or_insert(m);
                    }
                    keep::compare(src, &m, &self.rules, || same(dir)).map(|c| {
                        // Other extended attributes or ACLs: the bytes serve, the
                        // entry itself does not (rsync copies it, `cf........x`).
                        match c {
                            Match::Exact if self.basis_xattrs(job, dir).any() => {
                                (Match::Content, m)
                            }
                            c => (c, m),
                        }
                    })
                }
                _ => None,
            };
            let exact = matches!(m, Some((Match::Exact, _)));
            found.push(m.map(|(c, m)| (dir.clone(), c, m)));
            if exact {
                break;
            }
        }
        match keep::best(found.iter().map(|f| f.as_ref().map(|x| x.1))) {
            Some((i, _)) => (found.swap_remove(i), first),
            None => (None, first),
        }
    }

    /// How the kept extended attributes and ACLs of the basis copy in `dir` differ
    /// from the source's.
    fn basis_xattrs(&self, job: &EntryJob<D>, dir: &D::Dir) -> super::xattrs::XattrChange {
        let src = (
            job.entry.path.as_path(),
            Some(&job.entry),
            job.entry.path.as_path(),
        );
        self.sync_xattrs(dir, Some(&job.entry.name), src, false)
    }

    /// What the basis directories do for a regular file DEST lacks (`src` as the
    /// destination would store it).
    pub(super) fn file_from_basis(
        &self,
        job: &EntryJob<D>,
        rel: &Path,
        src: &Meta,
        last: bool,
    ) -> FromBasis<D::Dir> {
        let Some(basis) = &self.cfg.basis else {
            return FromBasis::Nothing;
        };
        let name = &job.entry.name;
        let (found, first) = self.basis_match(job, src, |dir| {
            self.same_content(dir, name, &job.entry).unwrap_or(false)
        });
        let Some((bdir, m, bmeta)) = found else {
            return match first {
                Some(b) => FromBasis::Copy(Some(self.file_code(src, Some(&b), job, rel))),
                None => FromBasis::Nothing,
            };
        };
        match (m, basis.used) {
            (Match::Exact, BasisUse::Compare) => {
                Stats::bump(&self.stats.files_skipped);
                self.source_done(job);
                FromBasis::Done(Attempt::Done(true))
            }
            (Match::Exact, BasisUse::Link) => match self.link_to_basis(job, rel, &bdir, last) {
                Some(a) => FromBasis::Done(a),
                None => FromBasis::Copy(None),
            },
            (Match::Exact, BasisUse::Copy) => FromBasis::CopyBasis(None, bdir, bmeta),
            (Match::Content, _) => {
                let mut code = local_change_code(src, &bmeta, self);
                if let Itemize::Changed(_, _, c) = &mut code {
                    let x = self.basis_xattrs(job, &bdir);
                    (c.acl, c.xattr) = (x.acl, x.xattr);
                }
                FromBasis::CopyBasis(Some(code), bdir, bmeta)
            }
        }
    }

    /// What the basis directories do for a regular file DEST has out of date (`dst`):
    /// as rsync, a basis that matches exactly replaces it: `--link-dest` links it in
    /// its place, `--compare-dest` removes it (the basis stands for it). `None`: copy
    /// as usual.
    pub(super) fn stale_from_basis(
        &self,
        job: &EntryJob<D>,
        rel: &Path,
        (src, dst): (&Meta, &Meta),
        last: bool,
    ) -> Option<Attempt> {
        let basis = self.cfg.basis.as_ref()?;
        if basis.used == BasisUse::Copy {
            return None;
        }
        let name = &job.entry.name;
        let (found, _) = self.basis_match(job, src, |dir| {
            self.same_content(dir, name, &job.entry).unwrap_or(false)
        });
        let (bdir, Match::Exact, bmeta) = found? else {
            return None;
        };
        // Already that very file: nothing to do that a copy would not undo.
        if basis.used == BasisUse::Link && (bmeta.dev, bmeta.ino) == (dst.dev, dst.ino) {
            return None;
        }
        job.parent.changed.store(true, Ordering::Relaxed);
        if !self.cfg.dry_run {
            let dir = job.parent.dir.as_ref()?;
            let done = match basis.used {
                BasisUse::Link => self.link_over(dir, name, &bdir, name),
                _ => self.dest.remove(dir, name, Kind::File),
            };
            if let Err(instead) = self.basis_done(done, rel, last) {
                return instead;
            }
        }
        match basis.used {
            BasisUse::Link => Stats::bump(&self.stats.links_created),
            _ => Stats::bump(&self.stats.files_skipped),
        }
        self.source_done(job);
        Some(Attempt::Done(true))
    }

    /// What the basis directories do for a symlink (`target` its target) or special
    /// file DEST lacks: `Some` when it is done (linked or left out), `None` to create
    /// it as usual.
    pub(super) fn link_like_from_basis(
        &self,
        job: &EntryJob<D>,
        rel: &Path,
        src: &Meta,
        target: Option<&OsStr>,
        last: bool,
    ) -> Option<Attempt> {
        let basis = self.cfg.basis.as_ref()?;
        let (found, _) = self.basis_match(job, src, |dir| match target {
            Some(target) => self
                .dest
                .read_link(dir, &job.entry.name)
                .is_ok_and(|t| t == target),
            None => true,
        });
        let (bdir, m, _) = found?;
        match (m, basis.used) {
            (Match::Exact, BasisUse::Compare) => {
                Stats::bump(&self.stats.files_skipped);
                self.source_done(job);
                Some(Attempt::Done(true))
            }
            (Match::Exact, BasisUse::Link) => self.link_to_basis(job, rel, &bdir, last),
            _ => None,
        }
    }

    /// rsync's code for a directory this run creates at `rel` (`src` its source
    /// attributes): with basis directories it is itemized against their directory
    /// there: not at all when that has the same attributes, `cd..t......` and the like
    /// when some differ, `cd+++++++++` when none has one.
    pub(super) fn new_dir_code(&self, rel: &Path, src: &Meta) -> Option<Itemize> {
        let new = Some(Itemize::New(Update::Local, Kind::Dir));
        let Some(basis) = &self.cfg.basis else {
            return new;
        };
        let mut first = None;
        for d in &basis.dirs {
            let p = d.join(rel);
            let (Some(parent), Some(name)) = (p.parent(), p.file_name()) else {
                continue;
            };
            let Ok(Some(dir)) = self.dest.open_path(parent, false) else {
                continue;
            };
            let Ok(Some(b)) = self.dest.stat(&dir, name) else {
                continue;
            };
            if b.kind != Kind::Dir {
                continue;
            }
            let diff = crate::plan::attr_diff(src, &b, &self.rules, !self.cfg.omit_dir_times);
            if diff.is_empty() {
                return None;
            }
            first.get_or_insert_with(|| {
                Itemize::Changed(Update::Local, Kind::Dir, basis_changes(src, &b, diff, self))
            });
        }
        first.or(new)
    }

    /// What a change made from a basis directory came to: `Ok` when made; else what
    /// the entry's attempt is instead (`Raced`; `Done(false)` with a run-ending error
    /// reported; `None`, copy it as usual).
    fn basis_done(
        &self,
        r: dest::Result<()>,
        rel: &Path,
        last: bool,
    ) -> Result<(), Option<Attempt>> {
        match r {
            Ok(()) => Ok(()),
            Err(e) if !last && is_race(&e) => Err(Some(Attempt::Raced)),
            Err(e) if e.is_fatal() => {
                self.dest_error(rel, e);
                Err(Some(Attempt::Done(false)))
            }
            Err(_) => Err(None),
        }
    }

    /// `--link-dest`: `job`'s name becomes a hard link to the basis copy. `None` when
    /// the link cannot be made (another filesystem, too many links): then it is
    /// copied, as rsync does.
    fn link_to_basis(
        &self,
        job: &EntryJob<D>,
        rel: &Path,
        bdir: &D::Dir,
        last: bool,
    ) -> Option<Attempt> {
        job.parent.changed.store(true, Ordering::Relaxed);
        if !self.cfg.dry_run {
            let dir = job.parent.dir.as_ref()?;
            let linked = self
                .dest
                .hard_link(dir, &job.entry.name, bdir, &job.entry.name);
            if let Err(instead) = self.basis_done(linked, rel, last) {
                return instead;
            }
        }
        Stats::bump(&self.stats.links_created);
        self.source_done(job);
        Some(Attempt::Done(true))
    }

    /// `--remove-source-files`: the destination now holds `job`'s entry complete, so
    /// the source entry goes, unless it changed since it was listed (rsync: "Skipping
    /// sender remove for changed file"). Directories are never removed.
    pub(super) fn source_done(&self, job: &EntryJob<D>) {
        if !self.cfg.remove_source_files || self.cfg.dry_run {
            return;
        }
        let path = &job.entry.path;
        let listed = &job.entry.meta;
        match walk::lstat(&job.entry) {
            Ok(now) => {
                if now.kind != listed.kind
                    || now.size != listed.size
                    || now.mtime != listed.mtime
                    || now.ino != listed.ino
                {
                    Stats::bump(&self.stats.errors);
                    self.out.error(
                        path,
                        "changed since it was copied; not removed from the source",
                    );
                    return;
                }
            }
            Err(e) => return self.source_error(path, &e),
        }
        if let Err(e) = walk::remove(&job.entry) {
            Stats::bump(&self.stats.errors);
            self.out
                .error(path, format_args!("cannot remove the source file: {e}"));
        }
    }
}

/// The source attributes of the directory this run brings to DEST's `rel`, if `node`
/// or one above it is that directory.
fn source_meta<D: Destination>(node: &DirNode<D>, rel: &Path) -> Option<Meta> {
    let mut n = Some(node);
    while let Some(d) = n {
        if d.rel == rel {
            return d.meta;
        }
        n = d.parent.as_deref();
    }
    None
}

/// rsync's code for a file copied from a basis copy whose attributes differ
/// (`cf...p.....`): the columns say what differs from the basis copy.
fn local_change_code<D: Destination>(src: &Meta, basis: &Meta, e: &Engine<'_, D>) -> Itemize {
    let diff = crate::plan::attr_diff(src, basis, &e.rules, true);
    Itemize::Changed(
        Update::Local,
        Kind::File,
        basis_changes(src, basis, diff, e),
    )
}

/// The columns of an entry beside a basis directory's copy of it, `diff` what differs
/// by the run's rules (owner and group apart, as rsync shows them).
fn basis_changes<D: Destination>(
    src: &Meta,
    basis: &Meta,
    diff: crate::dest::AttrSet,
    e: &Engine<'_, D>,
) -> Changes {
    Changes {
        time: diff.mtime.into(),
        perms: diff.mode,
        owner: diff.owner && e.cfg.owners.owner && src.uid != basis.uid,
        group: diff.owner && e.cfg.owners.group && src.gid != basis.gid,
        ..Changes::default()
    }
}
