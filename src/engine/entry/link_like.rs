//! Symlinks and special files: made whole or not at all, with no data to copy.
//!
//! Kept apart from regular files because they share none of that writing path
//! (temporaries, renames, data, sparse and in-place writes), only the plan-and-retry
//! loop (`settle`) and the attribute fixing.

use std::io;
use std::path::Path;
use std::sync::atomic::Ordering;

use crate::dest::{self, Destination};
use crate::engine::race::{Attempt, is_race};
use crate::engine::{Engine, EntryJob};
use crate::meta::{Kind, Meta};
use crate::plan::{self, Decision};
use crate::report::itemize::{Changes, Itemize, Update};
use crate::report::{Escaped, Stats};
use crate::source;

impl<D: Destination> Engine<'_, D> {
    pub(super) fn symlink(&self, job: &EntryJob<D>, rel: &Path) {
        if !self.cfg.links {
            Stats::bump(&self.stats.specials_skipped);
            self.out.info(format_args!(
                "skipping non-regular file \"{}\"",
                Escaped(rel)
            ));
            return;
        }
        let target = match source::read_link(&job.entry) {
            Ok(t) => t,
            Err(e) => return self.source_error(&job.entry.path, &e),
        };
        self.settle(job, |known, last| {
            let Ok(dst) = self.dest_meta(job, known, rel) else {
                return Attempt::Done(false);
            };
            let same_target = match (&dst, &job.parent.dir) {
                (Some(d), Some(dir)) if d.kind == Kind::Symlink => {
                    match self.dest.read_link(dir, &job.entry.name) {
                        Ok(t) => Some(t == target),
                        Err(e) if !last && e.kind() == io::ErrorKind::NotFound => {
                            return Attempt::Raced;
                        }
                        Err(e) => {
                            self.dest_error(rel, e);
                            return Attempt::Done(false);
                        }
                    }
                }
                _ => None,
            };
            let src = self.as_stored(&job.entry.meta);
            // -J: a symlink's time is neither set nor compared.
            let rules = plan::Rules {
                times: self.rules.times && !self.cfg.omit_link_times,
                ..self.rules
            };
            let decision = plan::decide_symlink(&src, dst.as_ref(), same_target, &rules);
            self.act_link_like(
                job,
                rel,
                (&src, decision),
                ('L', Some(&target)),
                last,
                || {
                    self.create_link_like(
                        job,
                        rel,
                        dst.as_ref(),
                        (
                            or_basis(symlink_code(&src, dst.as_ref(), self), || {
                                self.like_basis(job, Update::Local, |d| {
                                    self.dest
                                        .read_link(d, &job.entry.name)
                                        .is_ok_and(|t| t == target)
                                })
                            }),
                            Some(Path::new(&target)),
                        ),
                        last,
                        |dir| {
                            self.dest.symlink(
                                dir,
                                &job.entry.name,
                                &target,
                                &self.give(&job.entry.meta),
                            )
                        },
                    )
                },
            )
        })
    }

    /// Carries out `decision` for a symlink (`letter` 'L', with its `target`) or a
    /// special file ('S'): a basis directory's copy first where one is to be made,
    /// then `create`.
    fn act_link_like(
        &self,
        job: &EntryJob<D>,
        rel: &Path,
        (src, decision): (&Meta, Decision),
        (letter, target): (char, Option<&std::ffi::OsStr>),
        last: bool,
        create: impl FnOnce() -> Attempt,
    ) -> Attempt {
        if decision == Decision::Create
            && let Some(a) = self.link_like_from_basis(job, rel, src, target, last)
        {
            return a;
        }
        match decision {
            Decision::UpToDate | Decision::Skip => {
                Stats::bump(&self.stats.files_skipped);
                if decision == Decision::UpToDate {
                    self.up_to_date(job, rel, Update::Attributes, target.map(Path::new));
                    self.source_done(job);
                }
                Attempt::Done(true)
            }
            Decision::FixAttrs(what) => self.fix_attrs(
                job,
                rel,
                (what, None),
                (letter, target.map(Path::new)),
                None,
                last,
            ),
            _ => create(),
        }
    }

    /// Creates a symlink or special file in place of whatever `dst` is, counting it and
    /// itemizing it with `code` (and a symlink's target, as rsync shows it).
    fn create_link_like(
        &self,
        job: &EntryJob<D>,
        rel: &Path,
        dst: Option<&Meta>,
        (code, link): (Itemize, Option<&Path>),
        last: bool,
        create: impl FnOnce(&D::Dir) -> dest::Result<()>,
    ) -> Attempt {
        if let Some(d) = dst
            && !self.make_way(job, rel, d)
        {
            return Attempt::Done(false);
        }
        job.parent.changed.store(true, Ordering::Relaxed);
        if !self.cfg.dry_run {
            let dir = job
                .parent
                .dir
                .as_ref()
                .expect("non-dry runs have directories");
            match create(dir) {
                Ok(()) => {}
                Err(e) if !last && is_race(&e) => return Attempt::Raced,
                Err(e) => {
                    self.dest_error(rel, e);
                    return Attempt::Done(false);
                }
            }
        }
        Stats::bump(&self.stats.links_created);
        self.note_time(rel, &job.entry.meta);
        self.out.change_to(code, rel, link, (&job.entry).into());
        self.source_done(job);
        Attempt::Done(true)
    }

    pub(super) fn special(&self, job: &EntryJob<D>, rel: &Path) {
        let kind = job.entry.meta.kind;
        if (kind.is_special() && !self.cfg.specials) || (kind.is_device() && !self.cfg.devices) {
            Stats::bump(&self.stats.specials_skipped);
            // rsync's own line, on stdout and silenced by -q as rsync's is.
            self.out.info(format_args!(
                "skipping non-regular file \"{}\"",
                Escaped(rel)
            ));
            return;
        }
        self.settle(job, |known, last| {
            let Ok(dst) = self.dest_meta(job, known, rel) else {
                return Attempt::Done(false);
            };
            let src = self.as_stored(&job.entry.meta);
            let decision = plan::decide_special(&src, dst.as_ref(), &self.rules);
            self.act_link_like(job, rel, (&src, decision), ('S', None), last, || {
                let code = or_basis(special_code(&src, dst.as_ref(), self), || {
                    self.like_basis(job, Update::Local, |_| true)
                });
                self.create_link_like(job, rel, dst.as_ref(), (code, None), last, |dir| {
                    self.dest.mknod(
                        dir,
                        &job.entry.name,
                        &self.give_in(&job.entry.meta, Some(&job.parent)),
                    )
                })
            })
        })
    }
}

/// A symlink's itemized code as rsync prints it: new (`cL+++++++++`), or an existing
/// symlink pointing elsewhere (`cLc........`, with `t` when its time differs too).
fn symlink_code<D: Destination>(src: &Meta, dst: Option<&Meta>, e: &Engine<'_, D>) -> Itemize {
    match dst {
        Some(d) if d.kind == Kind::Symlink => {
            let changes = Changes {
                value: true,
                time: e.time_flag(src, d),
                ..Changes::default()
            };
            Itemize::Changed(Update::Local, Kind::Symlink, changes)
        }
        _ => Itemize::New(Update::Local, Kind::Symlink),
    }
}

/// `code` for an entry DEST lacks, unless a basis directory holds it exactly (`basis`
/// then gives the code against that copy, as rsync itemizes it).
fn or_basis(code: Itemize, basis: impl FnOnce() -> Option<Itemize>) -> Itemize {
    match code.is_new() {
        true => basis().unwrap_or(code),
        false => code,
    }
}

/// A device's or special file's itemized code as rsync prints it: new
/// (`cD+++++++++`), or one of the same kind made again with other device numbers
/// (`cDc.t......`, `T` without `-t`).
fn special_code<D: Destination>(src: &Meta, dst: Option<&Meta>, e: &Engine<'_, D>) -> Itemize {
    match dst {
        Some(d) if d.kind == src.kind => {
            let changes = Changes {
                value: d.rdev != src.rdev,
                time: e.time_flag(src, d),
                ..Changes::default()
            };
            Itemize::Changed(Update::Local, src.kind, changes)
        }
        _ => Itemize::New(Update::Local, src.kind),
    }
}
