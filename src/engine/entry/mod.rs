//! Entry jobs: regular files, symlinks and special files ([`link_like`]; hard links:
//! [`super::links`]).

use std::io;
use std::path::Path;
use std::sync::atomic::Ordering;

use super::delete::Budget;
use super::keep::FromBasis;
use super::race::{Attempt, RACE_RETRIES, is_race, is_race_or_gone};
use super::xattrs::XattrChange;
use super::{Engine, EntryJob};
use crate::dest::{AttrSet, CopyError, Destination, SourceFile};
use crate::meta::{Kind, Meta};
use crate::plan::{self, Decision, DestKnown};
use crate::report::itemize::{Changes, Itemize, TimeChange, Update};
use crate::report::{Escaped, Stats};
use crate::source;

mod link_like;

/// How a regular file gets to the destination.
#[derive(Clone, Copy, Debug)]
pub(super) enum Put {
    /// Nothing there: write it under its name.
    New,
    /// An older copy there (these its attributes): write beside it and rename over it.
    Replace(Meta),
    /// Something else in the way (a directory, a symlink): remove it first.
    MakeWay(Meta),
}

impl<D: Destination> Engine<'_, D> {
    /// Runs one entry job.
    pub(super) fn entry(&self, job: EntryJob<D>) {
        let _working = self.out.working(&job.parent.rel, &job.entry.name);
        let done = self.child_done(job.parent.clone());
        let kind = job.entry.meta.kind;
        if kind == Kind::File && self.cfg.hard_links && job.entry.meta.nlink > 1 {
            return self.hard_linked_file(job, done);
        }
        let rel = job.parent.rel.join(&job.entry.name);
        match kind {
            Kind::File => {
                self.file(&job, &rel);
            }
            Kind::Symlink => self.symlink(&job, &rel),
            _ => self.special(&job, &rel),
        }
    }

    /// The destination's current attributes for a job, stat'ing only if the listing
    /// did not carry them. `Err(())` means an error was already reported.
    pub(super) fn dest_meta(
        &self,
        job: &EntryJob<D>,
        known: DestKnown,
        rel: &Path,
    ) -> Result<Option<Meta>, ()> {
        match (known, &job.parent.dir) {
            (DestKnown::Missing, _) | (_, None) => Ok(None),
            (DestKnown::Present(m), _) => Ok(Some(m)),
            (DestKnown::Unknown(_), Some(dir)) => self
                .dest
                .stat(dir, &job.entry.name)
                .map_err(|e| self.dest_error(rel, e)),
        }
    }

    /// Removes what is in the way (another type, itemized and counted as a deletion);
    /// `false` if that failed (already reported) or `--max-delete` kept it.
    pub(super) fn make_way(&self, job: &EntryJob<D>, rel: &Path, existing: &Meta) -> bool {
        let dir = job.parent.dir.as_ref();
        let r = match dir {
            // The same kind (a symlink with another target): replaced, not deleted.
            Some(dir) if existing.kind == job.entry.meta.kind => {
                if self.cfg.dry_run {
                    return true;
                }
                let gone = match self.cfg.backup {
                    Some(_) => self.back_up(dir, (&job.parent, &job.parent.rel), &job.entry.name),
                    None => self.dest.remove(dir, &job.entry.name, existing.kind),
                };
                // NotFound: another run removed it a moment ago, which is as good.
                match gone {
                    Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(true),
                    r => r.map(|()| true),
                }
            }
            Some(d)
                if existing.kind == Kind::Dir
                    && !(self.cfg.delete || self.cfg.force)
                    && !self.is_empty_dir(d, &job.entry.name) =>
            {
                // rsync removes a directory in the way only when it is empty, or
                // with --force or --delete.
                self.out.info(format_args!(
                    "cannot delete non-empty directory: {}",
                    Escaped(rel)
                ));
                Stats::bump(&self.stats.errors);
                self.out.note(format_args!(
                    "could not make way for new {}: {}",
                    kind_words(job.entry.meta.kind),
                    Escaped(rel)
                ));
                return false;
            }
            _ => self.delete(
                dir,
                &job.entry.name,
                &job.parent,
                existing.kind,
                Budget::Counted,
            ),
        };
        match r {
            // A directory kept because backups stay beside their files in it (rsync:
            // "could not make way"); one --max-delete kept is counted there.
            Ok(false) if self.cfg.backup.is_some() && self.may_delete_more() => {
                Stats::bump(&self.stats.errors);
                self.out.error(
                    &self.dest_path(rel),
                    "could not make way: a directory in the way keeps the backups made in it",
                );
                false
            }
            Ok(gone) => gone,
            Err(e) => {
                self.dest_error(rel, e);
                false
            }
        }
    }

    /// Whether the directory `name` of `dir` holds nothing (or is gone).
    fn is_empty_dir(&self, dir: &D::Dir, name: &std::ffi::OsStr) -> bool {
        match self.dest.open_dir(dir, name) {
            Ok((sub, _)) => self.dest.list(&sub).is_ok_and(|l| l.is_empty()),
            Err(e) => e.kind() == io::ErrorKind::NotFound,
        }
    }

    /// rsync's line for an entry already up to date (`update`: `.` as it was, `h` a
    /// hard link, `c` made locally like a basis copy; `link` a symlink's target), which
    /// only `-ii` and `-vv` show.
    pub(super) fn up_to_date(
        &self,
        job: &EntryJob<D>,
        rel: &Path,
        update: Update,
        link: Option<&Path>,
    ) {
        let code = Itemize::Changed(update, job.entry.meta.kind, Changes::default());
        self.out.change_to(code, rel, link, (&job.entry).into());
    }

    /// Brings an entry's attributes in line (its content is already right). `last`: a
    /// race is an error, not a reason for another look.
    fn fix_attrs(
        &self,
        job: &EntryJob<D>,
        rel: &Path,
        (what, mode): (AttrSet, Option<u32>),
        (code, link): (char, Option<&Path>),
        xattrs_done: Option<XattrChange>,
        last: bool,
    ) -> Attempt {
        let mut given = self.give(&job.entry.meta);
        if let Some(mode) = mode {
            given.mode = mode;
        }
        if !self.cfg.dry_run {
            let dir = job
                .parent
                .dir
                .as_ref()
                .expect("existing entries have a directory");
            // Without -p the owner is fixed and the mode left as DEST has it (rsync);
            // the backend restores it after the chown, which clears setuid bits.
            if mode.is_none() && !self.cfg.perms && !what.mode && what.owner {
                let now = match job.known {
                    DestKnown::Present(m) => Some(m),
                    _ => self.dest.stat(dir, &job.entry.name).ok().flatten(),
                };
                if let Some(m) = now {
                    given.mode = m.mode;
                }
            }
            match self.dest.set_attrs(dir, &job.entry.name, &given, what) {
                Ok(()) => {}
                // Another run removed the name, or renamed its own copy over it, between
                // our look and the change: look again.
                Err(e) if !last && is_race_or_gone(&e) => {
                    return Attempt::Raced;
                }
                // The entry itself is in place (counted as an error, as before).
                Err(e) => {
                    self.dest_error(rel, e);
                    return Attempt::Done(true);
                }
            }
        }
        Stats::bump(&self.stats.attrs_updated);
        self.source_done(job);
        if what.mtime {
            self.note_time(rel, &job.entry.meta);
        }
        // A regular file's extended attributes: after its mode (a chmod rewrites the
        // ACL's mask), unless the caller has just seen to them.
        let x = match (code, xattrs_done) {
            (_, Some(x)) => x,
            ('f', None) => self.entry_xattrs(job, rel),
            _ => XattrChange::default(),
        };
        let flags = Changes {
            time: what.mtime.into(),
            perms: what.mode,
            owner: what.owner && self.cfg.owners.owner,
            group: what.owner && self.cfg.owners.group,
            acl: x.acl,
            xattr: x.xattr,
            ..Changes::default()
        };
        let code = Itemize::Changed(Update::Attributes, job.entry.meta.kind, flags);
        // rsync shows a symlink's target on every line about it.
        self.out.change_to(code, rel, link, (&job.entry).into());
        Attempt::Done(true)
    }

    /// A regular file. Returns whether the destination now holds the file.
    pub(super) fn file(&self, job: &EntryJob<D>, rel: &Path) -> bool {
        let mut known = job.known;
        for attempt in 0..=RACE_RETRIES {
            match self.file_once(job, rel, known, attempt == RACE_RETRIES) {
                Attempt::Done(ok) => return ok,
                Attempt::Raced => known = DestKnown::Unknown(None),
            }
        }
        unreachable!("the last attempt reports its error")
    }

    /// One look at a regular file and what it takes. `last`: report a race as an error
    /// instead of asking for another look.
    fn file_once(&self, job: &EntryJob<D>, rel: &Path, known: DestKnown, last: bool) -> Attempt {
        // Compared as the destination can store it, so an out-of-range time matches.
        let src = &self.as_stored(&job.entry.meta);
        let Ok(dst) = self.dest_meta(job, known, rel) else {
            return Attempt::Done(false);
        };
        let mut decision = plan::decide_file(src, dst.as_ref(), &self.rules);
        if decision == Decision::CompareContent {
            let dir = job
                .parent
                .dir
                .as_ref()
                .expect("existing entries have a directory");
            decision = match self.same_content(dir, &job.entry.name, &job.entry) {
                Ok(true) => plan::after_content_matches(src, dst.as_ref().unwrap(), &self.rules),
                Ok(false) => Decision::Replace,
                Err(e) if !last && is_race_or_gone(&e) => {
                    return Attempt::Raced;
                }
                Err(e) => {
                    self.dest_error(rel, e);
                    return Attempt::Done(false);
                }
            };
        }
        if matches!(decision, Decision::Create | Decision::Replace)
            && let Some(d) = dst.as_ref().filter(|d| d.kind == Kind::File)
            && let Some(a) = self.stale_from_basis(job, rel, (src, d), last)
        {
            return a;
        }
        if decision == Decision::Create && dst.is_none() {
            match self.file_from_basis(job, rel, src, last) {
                FromBasis::Nothing => {}
                FromBasis::Done(a) => return a,
                FromBasis::Copy(code) => {
                    let done = self.copy_content(job, rel, (code, None), Put::New, last);
                    return self.copied_xattrs(job, rel, done);
                }
                FromBasis::CopyBasis(code, bdir, bmeta) => {
                    // The basis gave the bytes; the attributes are still the source's.
                    let from = Some((&bdir, &bmeta));
                    let done = self.copy_content(job, rel, (code, from), Put::New, last);
                    return self.copied_xattrs(job, rel, done);
                }
            }
        }
        // -E without -p: a file that stays keeps its mode, but its execute bits
        // follow the source's.
        let mut exec_mode = None;
        if let (false, true, Some(d)) = (self.cfg.perms, self.cfg.executability, dst.as_ref())
            && d.kind == Kind::File
            && matches!(decision, Decision::UpToDate | Decision::FixAttrs(_))
        {
            let want = crate::options::chmod::executability(src.mode, d.mode & 0o7777);
            if want != d.mode & 0o7777 {
                exec_mode = Some(want);
                let mut what = match decision {
                    Decision::FixAttrs(what) => what,
                    _ => AttrSet::default(),
                };
                what.mode = true;
                decision = Decision::FixAttrs(what);
            }
        }
        match decision {
            Decision::UpToDate => {
                // The quick check also brings extended attributes and ACLs in line.
                let x = self.entry_xattrs(job, rel);
                if x.any() {
                    return self.fix_attrs(
                        job,
                        rel,
                        (AttrSet::default(), None),
                        ('f', None),
                        Some(x),
                        last,
                    );
                }
                Stats::bump(&self.stats.files_skipped);
                self.up_to_date(job, rel, Update::Attributes, None);
                self.source_done(job);
                Attempt::Done(true)
            }
            Decision::Skip => {
                Stats::bump(&self.stats.files_skipped);
                Attempt::Done(true)
            }
            Decision::FixAttrs(what) => {
                self.fix_attrs(job, rel, (what, exec_mode), ('f', None), None, last)
            }
            Decision::Create | Decision::Replace | Decision::CompareContent
                if self.append_leaves(dst.as_ref(), src) =>
            {
                Stats::bump(&self.stats.files_skipped);
                Attempt::Done(true)
            }
            Decision::Create | Decision::Replace | Decision::CompareContent => {
                let code = self.file_code(src, dst.as_ref(), job, rel);
                let put = match dst {
                    None => Put::New,
                    Some(d) if d.kind == Kind::File => Put::Replace(d),
                    Some(d) => Put::MakeWay(d),
                };
                let done = self.copy_content(job, rel, (Some(code), None), put, last);
                self.copied_xattrs(job, rel, done)
            }
        }
    }

    /// After a copy that put the file in place (`done`), its extended attributes and
    /// ACLs are brought in line with the source's.
    fn copied_xattrs(&self, job: &EntryJob<D>, rel: &Path, done: Attempt) -> Attempt {
        if let Attempt::Done(true) = done
            && !self.cfg.dry_run
        {
            self.entry_xattrs(job, rel);
        }
        done
    }

    /// Whether `dir`'s `name` holds the bytes of the source file `src` (opened as a copy
    /// opens it; one no longer a regular file is not the same).
    pub(super) fn same_content(
        &self,
        dir: &D::Dir,
        name: &std::ffi::OsStr,
        src: &source::SrcEntry,
    ) -> crate::dest::Result<bool> {
        match source::open_file(src, false)? {
            Some(file) => self.dest.same_content(dir, name, file),
            None => Ok(false),
        }
    }

    /// [`Engine::sync_xattrs`] for a job's entry.
    fn entry_xattrs(&self, job: &EntryJob<D>, rel: &Path) -> XattrChange {
        self.entry_xattrs_diff(job, rel, true)
    }

    /// What [`Engine::entry_xattrs`] would change, fixing it only if `apply`.
    fn entry_xattrs_diff(&self, job: &EntryJob<D>, rel: &Path, apply: bool) -> XattrChange {
        match &job.parent.dir {
            Some(dir) => {
                let src = (job.entry.path.as_path(), Some(&job.entry), rel);
                self.sync_xattrs(dir, Some(&job.entry.name), src, apply)
            }
            None => XattrChange::default(),
        }
    }

    /// Copies a regular file's content: from the source, or from a basis copy (`from`:
    /// its directory and attributes) that holds the same content by the quick check,
    /// as rsync copies a `--copy-dest` match locally. A basis copy that can no longer
    /// be opened as a regular file is passed over for the source.
    fn copy_content(
        &self,
        job: &EntryJob<D>,
        rel: &Path,
        (code, from): (Option<Itemize>, Option<(&D::Dir, &Meta)>),
        put: Put,
        last: bool,
    ) -> Attempt {
        job.parent.changed.store(true, Ordering::Relaxed);
        if self.cfg.dry_run {
            // What would be removed for it is itemized (and refused) as in a real run.
            if let Put::MakeWay(d) = &put
                && !self.make_way(job, rel, d)
            {
                return Attempt::Done(false);
            }
            Stats::bump(&self.stats.files_copied);
            self.stats
                .bytes_copied
                .fetch_add(job.entry.meta.size, Ordering::Relaxed);
            if let Some(code) = code {
                self.out.change(code, rel, (&job.entry).into());
            }
            return Attempt::Done(true);
        }
        let basis = from.and_then(|(bdir, bmeta)| {
            let f = self.dest.open_file(bdir, &job.entry.name).ok().flatten()?;
            Some((f, bmeta))
        });
        // What is read, as listed, and the name its read errors are reported under.
        let based = basis.is_some();
        let (listed, read_path) = match &basis {
            Some((_, bmeta)) => (*bmeta, self.dest_path(rel)),
            None => (&job.entry.meta, job.entry.path.clone()),
        };
        // The source first: a source we cannot read must not cost the old copy.
        let file = match basis
            .map(|(f, _)| Ok(Some(f)))
            .unwrap_or_else(|| source::open_file(&job.entry, self.writing.limit().is_some()))
        {
            Ok(Some(f)) => f,
            // Replaced since the listing by something that is not a file (a FIFO
            // would have held the worker forever): the file listed is gone.
            Ok(None) => {
                self.source_error(&job.entry.path, &io::Error::from(io::ErrorKind::NotFound));
                return Attempt::Done(false);
            }
            Err(e) => {
                self.source_error(&job.entry.path, &e);
                return Attempt::Done(false);
            }
        };
        if let Put::MakeWay(d) = put
            && !self.make_way(job, rel, &d)
        {
            return Attempt::Done(false);
        }
        // A file that changed between the listing and this open is sent as it is now,
        // as rsync sends what it reads: its size and time are taken from the open file
        // (so a re-run finds the copy up to date), and it must hold still from here on.
        let opened = match (based || !source::is_local(&job.entry), file.now()) {
            (false, Ok(m)) => Some(Meta {
                size: m.size,
                mtime: m.mtime,
                ..job.entry.meta
            }),
            _ => None,
        };
        let listed = opened.as_ref().unwrap_or(listed);
        let mut given = self.give_in(
            opened.as_ref().unwrap_or(&job.entry.meta),
            Some(&job.parent),
        );
        // Without -p a file that was there keeps its mode through the update (rsync).
        if let (false, Put::Replace(d)) = (self.cfg.perms, put) {
            given.mode = d.mode & 0o7777;
            if self.cfg.executability {
                given.mode = crate::options::chmod::executability(job.entry.meta.mode, given.mode);
            }
        }
        // -U: the source's atime, from the file being read (opened with O_NOATIME,
        // so reading it does not move it).
        if self.cfg.atimes && !based {
            given.atime = file.atime();
        }
        let source = SourceFile {
            data: file,
            meta: &given,
            listed,
            path: &read_path,
            sparse: self.cfg.data.sparse,
            limit: self.writing.limit(),
            stop: Some(&self.interrupted),
            // One no larger than a piece is written at once: an interrupt cannot stop
            // it part-way, so it needs no temporary to keep.
            keep_partial: self.keeps_partial() && given.size > crate::options::bwlimit::CHUNK,
            moving: Some(crate::dest::Moving::new(&self.stats.bytes_in_flight)),
        };
        let started = std::time::Instant::now();
        let written = match self.put_file(job, &source, put, last) {
            Ok(w) => w,
            Err(raced) => return raced,
        };
        // rsync's words for a file that came up short when read.
        let shrank = matches!(written, Err(CopyError::SourceChanged))
            && source.data.now().is_ok_and(|m| m.size < source.listed.size);
        // Its pieces leave the bytes in flight before the file counts as copied:
        // progress may lag a moment, never count a byte twice.
        drop(source);
        let ok = match written {
            Ok(bytes) => {
                self.note_time(rel, &job.entry.meta);
                Stats::bump(&self.stats.files_copied);
                self.stats.bytes_copied.fetch_add(bytes, Ordering::Relaxed);
                if let Some(code) = code {
                    let sent = (started.elapsed(), &*self.stats);
                    self.out.received(code, rel, (&job.entry).into(), sent);
                }
                self.source_done(job);
                true
            }
            Err(CopyError::Dest(e)) if !last && is_race(&e) => return Attempt::Raced,
            Err(CopyError::SourceChanged) => {
                Stats::bump(&self.stats.errors);
                let what = match (based, shrank) {
                    (true, _) => "its basis copy changed while being copied",
                    (false, true) => "read errors mapping: changed while being copied (it shrank)",
                    (false, false) => "changed while being copied",
                };
                self.out.error(
                    &read_path,
                    format_args!("{what}; left incomplete, a re-run copies it again"),
                );
                false
            }
            Err(CopyError::Vanished) => {
                self.source_error(&read_path, &io::Error::from(io::ErrorKind::NotFound));
                false
            }
            Err(CopyError::Source(e)) => {
                self.source_error(&read_path, &e);
                false
            }
            Err(CopyError::Dest(e)) => {
                self.dest_error(rel, e);
                false
            }
            // Given up for the stop, its partial copy removed: the run's own note says
            // to run it again.
            Err(CopyError::Interrupted) => false,
        };
        Attempt::Done(ok)
    }

    /// Runs `once` until it does not race with another writer (see [`RACE_RETRIES`]).
    pub(super) fn settle(
        &self,
        job: &EntryJob<D>,
        mut once: impl FnMut(DestKnown, bool) -> Attempt,
    ) {
        let mut known = job.known;
        for attempt in 0..=RACE_RETRIES {
            if let Attempt::Done(_) = once(known, attempt == RACE_RETRIES) {
                return;
            }
            known = DestKnown::Unknown(None);
        }
    }

    /// rsync's code for a file sent whole: new (`>f+++++++++`), or an update of `dst`
    /// (columns YXcstpoguax: with -c the checksum, size, time, permissions, owner,
    /// group).
    pub(super) fn file_code(
        &self,
        src: &Meta,
        dst: Option<&Meta>,
        job: &EntryJob<D>,
        rel: &Path,
    ) -> Itemize {
        match dst {
            Some(d) if d.kind == Kind::File => {
                let x = self.entry_xattrs_diff(job, rel, false);
                let changes = Changes {
                    // -c: rsync marks every file it sends over an old copy.
                    value: self.rules.compare == crate::plan::Compare::Checksum,
                    size: d.size != src.size,
                    time: self.time_flag(src, d),
                    perms: self.cfg.perms && d.mode != src.mode,
                    owner: self.cfg.owners.owner && d.uid != src.uid,
                    group: self.cfg.owners.group && d.gid != src.gid,
                    acl: x.acl,
                    xattr: x.xattr,
                };
                Itemize::Changed(Update::Received, Kind::File, changes)
            }
            _ => Itemize::New(Update::Received, Kind::File),
        }
    }

    /// rsync's `t` column: the times differ by the quick check's rule (`T`: without
    /// `-t` the time becomes the time of the copy).
    fn time_flag(&self, src: &Meta, dst: &Meta) -> TimeChange {
        if !self.cfg.times {
            TimeChange::ToNow
        } else {
            (!src.mtime.matches(dst.mtime, self.rules.modify_window)).into()
        }
    }
}

/// rsync's words for the kind of entry a removal made way for.
fn kind_words(kind: Kind) -> &'static str {
    match kind {
        Kind::File => "regular file",
        Kind::Dir => "directory",
        Kind::Symlink => "symlink",
        Kind::CharDev | Kind::BlockDev => "device file",
        Kind::Fifo | Kind::Socket => "special file",
    }
}
