//! Carrying out rsync's safety options (the decisions are in [`crate::options::keep`]):
//! the basis directories of `--link-dest`, `--compare-dest` and `--copy-dest` stand in
//! for the source where they hold an entry unchanged, and `--remove-source-files`
//! removes a source entry once the destination holds it. (`--backup` is in
//! [`super::backup`].)

use std::ffi::OsStr;
use std::path::Path;
use std::sync::atomic::Ordering;

use super::race::{Attempt, is_race};
use super::{DirNode, Engine, EntryJob};
use crate::dest::{self, Destination};
use crate::meta::{Kind, Meta};
use crate::options::keep::{self, BasisUse, Match};
use crate::report::itemize::{Changes, Itemize, Update};
use crate::report::{Escaped, Stats};
use crate::source;

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
                    Escaped(self.dest_path(d))
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
            // The user's basis path may climb (`../prev`); what is joined to it is made
            // of source names, and one that is not a plain name has no basis copy.
            let rel = dest::name::relative(&job.parent.rel).ok();
            basis
                .dirs
                .iter()
                .map(|d| {
                    let path = d.join(rel?);
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
                self.up_to_date(job, rel, Update::Attributes, None);
                self.source_done(job);
                FromBasis::Done(Attempt::Done(true))
            }
            (Match::Exact, BasisUse::Link) => match self.link_to_basis(job, rel, &bdir, None, last)
            {
                Some(a) => FromBasis::Done(a),
                None => FromBasis::Copy(None),
            },
            (Match::Exact, BasisUse::Copy) => {
                let same = Itemize::Changed(Update::Local, Kind::File, Changes::default());
                FromBasis::CopyBasis(Some(same), bdir, bmeta)
            }
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

    /// rsync's code for `job`'s entry, made new by `update`, when a basis directory
    /// holds an exact copy of it (`same`: its content or target is the source's): it is
    /// itemized against that copy, with blank columns (`hf          NAME => TO`).
    pub(super) fn like_basis(
        &self,
        job: &EntryJob<D>,
        update: Update,
        same: impl Fn(&D::Dir) -> bool,
    ) -> Option<Itemize> {
        self.exact_basis(job, same)
            .map(|m| Itemize::Changed(update, m.kind, Changes::default()))
    }

    /// The attributes of a basis directory's exact copy of `job`'s entry, if one has it.
    pub(super) fn exact_basis(
        &self,
        job: &EntryJob<D>,
        same: impl Fn(&D::Dir) -> bool,
    ) -> Option<Meta> {
        self.cfg.basis.as_ref()?;
        let src = self.as_stored(&job.entry.meta);
        match self.basis_match(job, &src, same).0? {
            (_, Match::Exact, m) => Some(m),
            _ => None,
        }
    }

    /// Whether `--link-dest`'s copy `basis` of `job`'s entry is the very file its name,
    /// linked to `leader` (the first name of its group, in `leader_dir`), holds: that
    /// name is then up to date, as rsync says of a hard link that ends on the basis
    /// copy. A dry run linked nothing: then whether the leader's basis copy is it.
    pub(super) fn holds_link_basis(
        &self,
        job: &EntryJob<D>,
        (leader_dir, leader): (&DirNode<D>, &OsStr),
        basis: &Meta,
    ) -> bool {
        if self
            .cfg
            .basis
            .as_ref()
            .is_none_or(|b| b.used != BasisUse::Link)
        {
            return false;
        }
        let is_it = |dir: &D::Dir, name: &OsStr| matches!(self.dest.stat(dir, name), Ok(Some(m)) if (m.dev, m.ino) == (basis.dev, basis.ino));
        if !self.cfg.dry_run {
            return job
                .parent
                .dir
                .as_ref()
                .is_some_and(|d| is_it(d, &job.entry.name));
        }
        let dirs = leader_dir.basis.get().into_iter().flatten().flatten();
        dirs.into_iter().any(|d| is_it(d, leader))
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
                self.up_to_date(job, rel, Update::Attributes, target.map(Path::new));
                self.source_done(job);
                Some(Attempt::Done(true))
            }
            (Match::Exact, BasisUse::Link) => {
                self.link_to_basis(job, rel, &bdir, target.map(Path::new), last)
            }
            _ => None,
        }
    }

    /// rsync's code for a directory this run creates at `rel` (`src` its source
    /// attributes): with basis directories it is itemized against their directory
    /// there: blank columns (shown only with `-ii`) when that has the same attributes,
    /// `cd..t......` and the like when some differ, `cd+++++++++` when none has one.
    pub(super) fn new_dir_code(&self, rel: &Path, src: &Meta) -> Itemize {
        let new = Itemize::New(Update::Local, Kind::Dir);
        let Some(basis) = &self.cfg.basis else {
            return new;
        };
        let Ok(rel) = dest::name::relative(rel) else {
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
                return Itemize::Changed(Update::Local, Kind::Dir, Changes::default());
            }
            first.get_or_insert_with(|| {
                Itemize::Changed(Update::Local, Kind::Dir, basis_changes(src, &b, diff, self))
            });
        }
        first.unwrap_or(new)
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
    /// copied, as rsync does. (`link`: a symlink's target, for its line.)
    fn link_to_basis(
        &self,
        job: &EntryJob<D>,
        rel: &Path,
        bdir: &D::Dir,
        link: Option<&Path>,
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
        self.up_to_date(job, rel, Update::HardLink, link);
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
        match source::lstat(&job.entry) {
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
        if let Err(e) = source::remove(&job.entry) {
            Stats::bump(&self.stats.errors);
            self.out
                .error(path, format_args!("cannot remove the source file: {e}"));
        }
    }
}

/// The source attributes of the directory this run brings to DEST's `rel`, if `node`
/// or one above it is that directory.
pub(super) fn source_meta<D: Destination>(node: &DirNode<D>, rel: &Path) -> Option<Meta> {
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
