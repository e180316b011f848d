//! `-H`: source names sharing one inode. The first name seen is copied; the others
//! wait for it and then become hard links to its destination.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::Ordering;

use super::dir::ChildDone;
use super::race::{Attempt, is_race_or_gone};
use super::{Engine, EntryJob};
use crate::dest::Destination;
use crate::meta::Kind;
use crate::report::Stats;
use crate::report::itemize::{Itemize, Update};

/// The source inodes seen so far with more than one name, by (dev, ino).
pub(super) struct HardLinks<D: Destination>(Mutex<HashMap<(u64, u64), LinkGroup<D>>>);

impl<D: Destination> Default for HardLinks<D> {
    fn default() -> Self {
        HardLinks(Mutex::new(HashMap::new()))
    }
}

/// A set of source names sharing one inode (`-H`). The first one seen is copied; the
/// others become hard links to its destination once it is done.
enum LinkGroup<D: Destination> {
    /// The first name is being copied; these wait for it.
    Copying(Vec<EntryJob<D>>),
    /// The first name is done: link to it (or copy on our own if it failed).
    Done {
        dir: Option<D::Dir>,
        name: OsString,
        rel: PathBuf,
        ok: bool,
    },
}

impl<D: Destination> Engine<'_, D> {
    /// `-H`: the first name of an inode is copied, the others linked to it.
    pub(super) fn hard_linked_file(&self, job: EntryJob<D>, done: ChildDone<'_, '_, D>) {
        let key = (job.entry.meta.dev, job.entry.meta.ino);
        let rel = job.parent.rel.join(&job.entry.name);
        let leader = {
            let mut links = self.links.0.lock().unwrap();
            match links.get_mut(&key) {
                None => {
                    links.insert(key, LinkGroup::Copying(Vec::new()));
                    None
                }
                Some(LinkGroup::Copying(waiting)) => {
                    // The first name's job finishes this one when it is done.
                    waiting.push(job);
                    done.pass_on();
                    return;
                }
                Some(LinkGroup::Done { dir, name, rel, ok }) => {
                    Some((dir.clone(), name.clone(), rel.clone(), *ok))
                }
            }
        };
        match leader {
            Some((dir, name, lrel, true)) => self.link_to(&job, &rel, dir.as_ref(), &name, &lrel),
            Some((_, _, _, false)) => {
                self.file(&job, &rel);
            }
            None => {
                let ok = self.file(&job, &rel);
                let waiting = {
                    let mut links = self.links.0.lock().unwrap();
                    let done = LinkGroup::Done {
                        dir: job.parent.dir.clone(),
                        name: job.entry.name.clone(),
                        rel: rel.clone(),
                        ok,
                    };
                    match links.insert(key, done) {
                        Some(LinkGroup::Copying(w)) => w,
                        _ => Vec::new(),
                    }
                };
                for w in waiting {
                    let _done = self.child_done(w.parent.clone());
                    let wrel = w.parent.rel.join(&w.entry.name);
                    if ok {
                        self.link_to(&w, &wrel, job.parent.dir.as_ref(), &job.entry.name, &rel);
                    } else {
                        self.file(&w, &wrel);
                    }
                }
            }
        }
    }

    /// Makes `job`'s name a hard link to the leader's destination file, unless it
    /// already is one.
    fn link_to(
        &self,
        job: &EntryJob<D>,
        rel: &Path,
        ldir: Option<&D::Dir>,
        lname: &OsString,
        lrel: &Path,
    ) {
        self.settle(job, |known, last| {
            let Ok(dst) = self.dest_meta(job, known, rel) else {
                return Attempt::Done(false);
            };
            if let (Some(d), Some(ldir)) = (&dst, ldir) {
                if d.kind == Kind::File && d.nlink > 1 {
                    match self.dest.stat(ldir, lname) {
                        Ok(Some(l)) if l.ino == d.ino && l.dev == d.dev => {
                            Stats::bump(&self.stats.files_skipped);
                            self.source_done(job);
                            return Attempt::Done(true);
                        }
                        Ok(_) => {}
                        Err(e) => {
                            self.dest_error(lrel, e);
                            return Attempt::Done(false);
                        }
                    }
                }
                if !self.make_way(job, rel, d) {
                    return Attempt::Done(false);
                }
            }
            job.parent.changed.store(true, Ordering::Relaxed);
            if !self.cfg.dry_run {
                let (Some(dir), Some(ldir)) = (&job.parent.dir, ldir) else {
                    return Attempt::Done(false);
                };
                match self.dest.hard_link(dir, &job.entry.name, ldir, lname) {
                    Ok(()) => {}
                    // NotFound: another run is replacing the leader's name (linking it to
                    // its own first name) this very moment; look again.
                    Err(e) if !last && is_race_or_gone(&e) => {
                        return Attempt::Raced;
                    }
                    Err(e) => {
                        self.dest_error(rel, e);
                        return Attempt::Done(false);
                    }
                }
            }
            Stats::bump(&self.stats.links_created);
            let code = Itemize::New(Update::HardLink, Kind::File);
            self.out.hard_link(code, rel, lrel, (&job.entry).into());
            self.source_done(job);
            Attempt::Done(true)
        })
    }
}
