//! How a file's new content is put in place: beside the old copy and renamed over it
//! (the default, as rsync), into the old copy (`--inplace`, `--append[-verify]`), via
//! a temporary in `--temp-dir`, or held back until the end of the run
//! (`--delay-updates`).
//!
//! Every way keeps the crash rule: the mtime is set last, on the file at its final
//! name or on a temporary that is renamed whole, so a file with the source's size and
//! mtime is complete. `--delay-updates` keeps rsync's promise that no file is replaced
//! before all are transferred: the renames run once the workers are done, and then
//! the directories they changed get their mtimes again.

use std::collections::HashSet;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::entry::Put;
use super::race::Attempt;
use super::{DirNode, Engine, EntryJob, Origin};
use crate::config::{Append, Config};
use crate::dest::{self, AttrSet, CopyError, Destination, SourceFile};
use crate::exit::Error;
use crate::meta::{Kind, Meta};
use crate::options::bwlimit::RateLimit;
use crate::options::temp;
use crate::report::Escaped;

/// How file data is written, for the whole run.
pub(super) struct Writing<D: Destination> {
    /// `--bwlimit`, shared by all workers.
    limit: Option<RateLimit>,
    /// `--temp-dir`, opened.
    temp_dir: Option<D::Dir>,
    /// `--delay-updates`: files waiting for the end of the run.
    delayed: Mutex<Vec<Delayed<D>>>,
}

impl<D: Destination> Writing<D> {
    pub(super) fn new(cfg: &Config, dest: &D) -> Result<Self, Error> {
        Ok(Writing {
            limit: RateLimit::new(cfg.data.bwlimit),
            temp_dir: open_temp_dir(cfg, dest)?,
            delayed: Mutex::new(Vec::new()),
        })
    }

    /// `--bwlimit`'s shared limit.
    pub(super) fn limit(&self) -> Option<&RateLimit> {
        self.limit.as_ref()
    }
}

/// A transferred file waiting under its temporary name for the end of the run.
struct Delayed<D: Destination> {
    parent: Arc<DirNode<D>>,
    /// The directory of the temporary (`--partial-dir`, `--temp-dir`), when it is
    /// not beside its final name.
    at: Option<D::Dir>,
    /// Whether `at` is a partial dir (which may hold rsync's partial file of `name`).
    staged: bool,
    temp: OsString,
    name: OsString,
    /// Whether it replaces an old copy (which `--backup` then keeps).
    replaces: bool,
}

impl<D: Destination> Engine<'_, D> {
    /// `--partial` where it applies: not to a file held back (`--delay-updates`, whose
    /// temporaries a stop removes) nor one written into its old copy (`--inplace`,
    /// `--append`), and only on a backend that can keep one.
    pub(super) fn keeps_partial(&self) -> bool {
        let d = &self.cfg.data;
        d.partial && !d.delay_updates && !d.inplace && self.dest.keeps_partial()
    }

    /// `--append`: a file as long or longer at the destination is left alone (rsync
    /// skips it, attributes included).
    pub(super) fn append_leaves(&self, dst: Option<&Meta>, src: &Meta) -> bool {
        self.cfg.data.append != Append::Off
            && dst.is_some_and(|d| d.kind == Kind::File && d.size >= src.size)
    }

    /// A copy left behind because its source changed while it was read gets mtime 0,
    /// as rsync leaves a partial file: the time the kernel stamped on its last write
    /// can be the very tick of the source's change (timestamps are coarse), and then
    /// the quick check of the next run would take it for complete. A source whose own
    /// mtime is 0 makes it 1 s. Best effort: the run reports the file either way.
    fn mark_if_changed(
        &self,
        written: &Result<u64, CopyError>,
        (dir, name): (&D::Dir, &std::ffi::OsStr),
        meta: &Meta,
    ) {
        if !matches!(written, Err(CopyError::SourceChanged)) {
            return;
        }
        let _ = self.mark_left(dir, name, meta, i64::from(meta.mtime.sec == 0));
    }

    /// Writes the content and puts it in place. `Err` asks for another look (another
    /// writer changed the name meanwhile).
    pub(super) fn put_file(
        &self,
        job: &EntryJob<D>,
        src: &SourceFile<'_>,
        put: Put,
        last: bool,
    ) -> Result<Result<u64, CopyError>, Attempt> {
        let dir = job
            .parent
            .dir
            .as_ref()
            .expect("non-dry runs have directories");
        let name = &job.entry.name;
        let data = &self.cfg.data;
        if let (true, Put::Replace(d)) = (data.inplace, put) {
            return Ok(self.write_in_place(job, src, d));
        }
        let linked = self.cfg.hard_links && job.entry.meta.nlink > 1;
        // A hard-linked file is linked to by name as soon as it is written (-H).
        let delay = data.delay_updates && !linked;
        // An update is written under a temporary name and renamed over the old copy
        // (as rsync does), so a failure part-way leaves the old copy whole; the rename
        // costs what removing the old file first would. With --temp-dir a new file
        // goes the same way, as in rsync: the operator asked for temporaries there.
        // So does a new -H file: a name of a group then only ever holds a complete
        // file, and another run that links over it never leaves us writing into a
        // file no name holds (NFSv3 servers answer that late or not at all).
        // With --partial too, as rsync: an interrupted copy is then never at the final
        // name but where --partial puts it.
        if !matches!(put, Put::Replace(_))
            && !delay
            && !linked
            && self.writing.temp_dir.is_none()
            && !src.keep_partial
        {
            let written = self.dest.write_file(dir, name, src);
            self.mark_if_changed(&written, (dir, name), src.meta);
            return Ok(written);
        }
        let temp = temp::name(name);
        // A held-back file waits in the partial dir when there is one (rsync).
        let staged = if delay {
            self.staging_dir(&job.parent)
        } else {
            None
        };
        let at = staged.as_ref().or(self.writing.temp_dir.as_ref());
        let tdir = at.unwrap_or(dir);
        // A failed write removes its own partial file (see `Destination::write_file`).
        let written = self.dest.write_file(tdir, &temp, src);
        self.mark_if_changed(&written, (tdir, &temp), src.meta);
        if src.keep_partial && matches!(written, Err(CopyError::Interrupted)) {
            self.keep_partial(&job.parent, (tdir, &temp), name, src.meta);
            return Ok(written);
        }
        // A copy that changed under us is put in place too, without the source's
        // mtime, so the next run copies it again (a new file is left the same way).
        if !matches!(written, Ok(_) | Err(CopyError::SourceChanged)) {
            return Ok(written);
        }
        if delay {
            self.writing.delayed.lock().unwrap().push(Delayed {
                parent: job.parent.clone(),
                at: at.cloned(),
                staged: staged.is_some(),
                temp,
                name: name.clone(),
                replaces: matches!(put, Put::Replace(_)),
            });
            return Ok(written);
        }
        // --backup: the old copy goes to its backup just before the new one takes its
        // name.
        let kept = match (&self.cfg.backup, put) {
            (Some(_), Put::Replace(_)) => self.back_up(dir, (&job.parent, &job.parent.rel), name),
            _ => Ok(()),
        };
        match kept.and_then(|()| self.move_into_place(dir, &temp, name, at)) {
            Ok(()) => {
                if written.is_ok() {
                    self.partial_used(&job.parent, name);
                }
                Ok(written)
            }
            Err(e) => {
                // The temporary's name is ours alone: removing it by name is safe.
                if !e.is_fatal() && !self.sched.stopped() {
                    let _ = self.dest.remove(tdir, &temp, Kind::File);
                }
                if !last && e.kind() == io::ErrorKind::NotFound {
                    return Err(Attempt::Raced);
                }
                Ok(Err(CopyError::Dest(e)))
            }
        }
    }

    /// `--inplace` / `--append[-verify]` onto the existing file `d`.
    fn write_in_place(
        &self,
        job: &EntryJob<D>,
        src: &SourceFile<'_>,
        d: Meta,
    ) -> Result<u64, CopyError> {
        let dir = job.parent.dir.as_ref().expect("existing entries have one");
        let name = &job.entry.name;
        if self.cfg.backup.is_some() {
            self.back_up_copy(dir, (&job.parent, &job.parent.rel), name, &d)?;
        }
        let append = self.cfg.data.append;
        // `append_leaves` let through only files shorter here than at the source.
        let from = if append == Append::Off { 0 } else { d.size };
        let written = self.dest.write_into(dir, name, src, from)?;
        if append != Append::Verify {
            return Ok(written);
        }
        match self.same_content(dir, name, &job.entry) {
            Ok(true) => Ok(written),
            Ok(false) => {
                let rel = job.parent.rel.join(name);
                self.out.warn(format_args!(
                    "{} failed verification -- update retained (will try again).",
                    Escaped(rel)
                ));
                self.dest.write_into(dir, name, src, 0)
            }
            Err(e) => Err(CopyError::Dest(e)),
        }
    }

    /// Renames a temporary (beside `name`, or in the directory `at`) over `name`.
    fn move_into_place(
        &self,
        dir: &D::Dir,
        temp: &OsString,
        name: &OsString,
        at: Option<&D::Dir>,
    ) -> dest::Result<()> {
        match at {
            Some(tdir) => self.dest.rename_into(tdir, temp, dir, name),
            None => self.dest.rename(dir, temp, name),
        }
    }

    /// `--delay-updates`, at the end of the run: every held-back file renamed into
    /// place, then the mtimes of the directories that changed set again. After a stop
    /// (interrupt, fatal error) the temporaries are removed instead.
    pub(super) fn finish_delayed(&self) {
        let delayed = std::mem::take(&mut *self.writing.delayed.lock().unwrap());
        // The directories renamed into, and whether one had to be made writable.
        let mut touched: Vec<(Arc<DirNode<D>>, bool)> = Vec::new();
        let mut seen = HashSet::new();
        for d in delayed {
            let Some(dir) = d.parent.dir.as_ref() else {
                continue;
            };
            let rel: PathBuf = d.parent.rel.join(&d.name);
            if self.sched.stopped() {
                if self.fatal.lock().unwrap().is_none() {
                    let tdir = d.at.as_ref().unwrap_or(dir);
                    let _ = self.dest.remove(tdir, &d.temp, Kind::File);
                }
                continue;
            }
            if seen.insert(Arc::as_ptr(&d.parent)) {
                touched.push((d.parent.clone(), false));
            }
            let kept = match (&self.cfg.backup, d.replaces) {
                (Some(_), true) => self.back_up(dir, (&d.parent, &d.parent.rel), &d.name),
                _ => Ok(()),
            };
            let mut r =
                kept.and_then(|()| self.move_into_place(dir, &d.temp, &d.name, d.at.as_ref()));
            // The directory got its final mode when its transfers were done; a
            // read-only one is opened up for the renames (and closed again below).
            if let Err(e) = &r
                && e.kind() == io::ErrorKind::PermissionDenied
                && let Some(given) = self.dir_given(&d.parent)
            {
                let open = Meta {
                    mode: given.mode | 0o700,
                    ..given
                };
                let mode = AttrSet {
                    mode: true,
                    ..AttrSet::default()
                };
                if self.dest.set_dir_attrs(dir, &open, mode).is_ok() {
                    if let Some(t) = touched.iter_mut().find(|t| Arc::ptr_eq(&t.0, &d.parent)) {
                        t.1 = true;
                    }
                    r = self.move_into_place(dir, &d.temp, &d.name, d.at.as_ref());
                }
            }
            match (r, &d.at) {
                (Err(e), _) => self.dest_error(&rel, e),
                // The partial file rsync would have resumed from is done with, as
                // rsync removes it.
                (Ok(()), Some(at)) if d.staged => {
                    let _ = self.dest.remove(at, &d.name, Kind::File);
                }
                _ => {}
            }
        }
        // Before the directories get their times again: removing one changes them.
        self.remove_staging_dirs();
        let times = self.cfg.times && !self.cfg.omit_dir_times;
        for (node, opened) in touched {
            let what = AttrSet {
                mode: opened,
                mtime: times,
                ..AttrSet::default()
            };
            if let (false, Some(dir), Some(given)) =
                (what.is_empty(), &node.dir, self.dir_given(&node))
                && let Err(e) = self.dest.set_dir_attrs(dir, &given, what)
            {
                self.dest_error(Path::new(&node.rel), e);
            }
        }
    }

    /// What a directory was given when it was finalized (see `Engine::finalize`):
    /// `None` when it was not.
    pub(super) fn dir_given(&self, node: &DirNode<D>) -> Option<Meta> {
        let meta = node.meta.as_ref()?;
        let mut given = self.give(meta);
        match node.origin {
            Origin::Found(found) if !self.cfg.perms => given.mode = found.mode,
            Origin::Imagined => return None,
            _ => {}
        }
        Some(given)
    }
}

/// `--temp-dir`, opened once; it must exist (rsync: "The temp-dir does not exist").
fn open_temp_dir<D: Destination>(cfg: &Config, dest: &D) -> Result<Option<D::Dir>, Error> {
    match &cfg.data.temp_dir {
        Some(p) if !cfg.dry_run => match dest.open_path(p, false) {
            Ok(Some(d)) => Ok(Some(d)),
            Ok(None) => Err(Error::Usage(
                format!("--temp-dir {}: the temp-dir does not exist", Escaped(p)).into(),
            )),
            Err(e) => Err(Error::Usage(
                crate::exit::Why::new(format!("--temp-dir {}", Escaped(p))).because(e),
            )),
        },
        _ => Ok(None),
    }
}
