//! `-H`: source names sharing one inode. The first name listed is copied; the others
//! wait for it and then become hard links to its destination.
//!
//! Within a directory the first name is chosen when the directory is listed, before
//! any job of the group runs ([`Engine::choose_leaders`]): the first in rsync's order,
//! so which name is copied, and so what `-i` prints, does not depend on which of two
//! workers taking neighbouring jobs happens to start first. A name in another
//! directory whose job comes first leads instead of waiting (the chosen one's
//! directory may be queued far behind).
//!
//! # Runs that overlap
//!
//! Several runs of one command may write into one DEST at once, and each walks in
//! parallel, so each may take a different name of a group as the one it copies (its
//! leader). Three rules keep every name and make the runs agree:
//!
//! - **A name is never removed to be linked.** The link is made under a temporary
//!   name beside it (the temporaries of updates, [`temp`]) and renamed over it: the
//!   name holds its old object until the same RENAME gives it the new one. (Removing
//!   it first let run A remove the name run B had just copied as its leader, while B
//!   removed A's: both names gone, and the links to them failed.) A missing name is
//!   linked exclusively; one another run made meanwhile is looked at again. Only a
//!   directory in the way, or an old copy `--backup` keeps, is moved aside first.
//! - **A complete copy is not copied again.** A leader is copied through the quick
//!   check like any file, so a name another run already made complete (whatever its
//!   inode) is kept as it is; only a missing or partial one is written, under a
//!   temporary even when new, and renamed into place. So a name of a group only ever
//!   holds a complete file, and a link renamed over it never leaves its writer
//!   writing into a file no name holds. So the copies made of a group are at most one per run, and only
//!   while its leader was not yet complete.
//! - **Linking follows names, then the group is settled.** A link takes whatever
//!   object its leader's name holds at that moment. Two runs that link across (A:
//!   Y to X, B: X to Y, both at once) can leave X and Y holding each other's old
//!   object, and a name linked to X before another run moved X holds the old one: no
//!   name is lost, but the group is split. A check of one link just after it is made
//!   cannot see the second case, so a run that changed a name of a group (linked
//!   one, or met another writer there) checks the whole group once its walk is done
//!   ([`Engine::settle_hard_links`]): every name is made to hold the
//!   complete copy with the lowest (dev, inode), a choice every run makes alike
//!   from what DEST holds, so runs settling at once move names the same way and
//!   never undo each other. Settling only links names to names; only a leader copy
//!   makes a new object, and the run that made it then replaces names that held
//!   another (so it settles the group itself). Every change to a group is thus
//!   followed by a check from the run that made it, and the last check sees the last
//!   change: it leaves the group whole, or (no complete copy, or the group still
//!   changing after [`SETTLE_ROUNDS`] looks) reports it: never exit 0 on a split group.
//!   A run that only links missing names must check too: it links a new name to the
//!   object it remembers for its leader, and another run may have moved the leader's
//!   name to another object and finished settling before that link was made.
//!   Settling and replacing link to what a name holds now
//!   ([`Destination::hard_link_current`]), not to what a backend remembers having
//!   written there (a remembered object with no names left is stale, which sends us
//!   to look again).
//!
//! Settling changes directories after they got their mtimes, so those directories get
//! them again, as `--delay-updates` does.

use std::collections::{HashMap, VecDeque};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use super::dir::ChildDone;
use super::race::{Attempt, is_race_or_gone};
use super::{DirNode, Engine, EntryJob};
use crate::dest::{self, Destination};
use crate::meta::{Kind, Meta};
use crate::options::temp;
use crate::report::Stats;
use crate::report::itemize::{Changes, Itemize, Update};

mod settle;

/// How often a group is looked at while settling before the run gives up on it.
const SETTLE_ROUNDS: u32 = 8;

/// Threads that settle groups at once.
const SETTLE_THREADS: usize = 16;

/// The source inodes seen so far with more than one name, by (dev, ino).
pub(super) struct HardLinks<D: Destination>(Mutex<HashMap<(u64, u64), LinkGroup<D>>>);

impl<D: Destination> Default for HardLinks<D> {
    fn default() -> Self {
        HardLinks(Mutex::new(HashMap::new()))
    }
}

/// One destination name of a group: its directory and its name there.
struct Name<D: Destination> {
    parent: Arc<DirNode<D>>,
    name: OsString,
}

impl<D: Destination> Clone for Name<D> {
    fn clone(&self) -> Self {
        Name {
            parent: self.parent.clone(),
            name: self.name.clone(),
        }
    }
}

impl<D: Destination> Name<D> {
    fn of(job: &EntryJob<D>) -> Self {
        Name {
            parent: job.parent.clone(),
            name: job.entry.name.clone(),
        }
    }

    fn rel(&self) -> PathBuf {
        self.parent.rel.join(&self.name)
    }

    fn is(&self, job: &EntryJob<D>) -> bool {
        Arc::ptr_eq(&self.parent, &job.parent) && self.name == job.entry.name
    }
}

/// A set of source names sharing one inode (`-H`). The first one listed is copied;
/// the others become hard links to its destination once it is done.
enum LinkGroup<D: Destination> {
    /// The first name (`leader`) is queued (`started` false) or being copied; these
    /// wait for it.
    Copying {
        leader: Name<D>,
        started: bool,
        waiting: Vec<EntryJob<D>>,
    },
    /// The first name is done: link to it (or copy on our own if it failed).
    Done(Settled<D>),
}

/// A group whose first name is done.
struct Settled<D: Destination> {
    leader: Name<D>,
    ok: bool,
    /// The source's attributes, as the destination stores them: what a complete copy
    /// of the group has.
    src: Meta,
    /// The names linked so far (the leader first).
    names: Vec<Name<D>>,
    /// Whether this run changed a name of the group, or met another writer there:
    /// then the group is checked whole at the end.
    check: bool,
}

/// What linking one name found.
struct Linked {
    ok: bool,
    /// It made a link (a new name, or one replacing another object), or raced another
    /// writer.
    changed: bool,
}

impl<D: Destination> Engine<'_, D> {
    /// `-H`: makes the first listed name of each new group among a directory's jobs
    /// (queued in rsync's order) the one to copy, before any of them runs.
    pub(super) fn choose_leaders(&self, jobs: &VecDeque<EntryJob<D>>) {
        if !self.cfg.hard_links {
            return;
        }
        let mut links = None;
        for job in jobs {
            let m = &job.entry.meta;
            if m.kind != Kind::File || m.nlink < 2 {
                continue;
            }
            let links = links.get_or_insert_with(|| self.links.0.lock().unwrap());
            links
                .entry((m.dev, m.ino))
                .or_insert_with(|| LinkGroup::Copying {
                    leader: Name::of(job),
                    started: false,
                    waiting: Vec::new(),
                });
        }
    }

    /// `-H`: the first name of an inode is copied, the others linked to it.
    pub(super) fn hard_linked_file(&self, job: EntryJob<D>, done: ChildDone<'_, '_, D>) {
        let key = (job.entry.meta.dev, job.entry.meta.ino);
        let rel = job.parent.rel.join(&job.entry.name);
        // --ignore-existing: a name DEST has stays as it is, neither a copy for the
        // others to link to (its old bytes are not the source's) nor linked (rsync).
        if self.cfg.skip.ignore_existing
            && matches!(self.dest_meta(&job, job.known, &rel), Ok(Some(_)))
        {
            self.file(&job, &rel);
            // Chosen to lead, it leads nothing: the next name leads instead.
            self.hand_over(key, &job);
            return;
        }
        let leader = {
            let mut links = self.links.0.lock().unwrap();
            match links.get_mut(&key) {
                None => {
                    let (leader, waiting) = (Name::of(&job), Vec::new());
                    let started = true;
                    links.insert(
                        key,
                        LinkGroup::Copying {
                            leader,
                            started,
                            waiting,
                        },
                    );
                    None
                }
                // The chosen name leads when its job comes; a name of another
                // directory that comes first leads instead of waiting for it (its
                // directory's jobs may be queued far behind).
                Some(LinkGroup::Copying {
                    leader, started, ..
                }) if !*started
                    && (leader.is(&job) || !Arc::ptr_eq(&leader.parent, &job.parent)) =>
                {
                    *leader = Name::of(&job);
                    *started = true;
                    None
                }
                Some(LinkGroup::Copying { waiting, .. }) => {
                    // The first name's job finishes this one when it is done.
                    waiting.push(job);
                    done.pass_on();
                    return;
                }
                Some(LinkGroup::Done(g)) => Some((g.leader.clone(), g.ok)),
            }
        };
        match leader {
            Some((leader, true)) => {
                let linked = self.link_to(&job, &rel, &leader);
                self.note_linked(key, &job, linked);
            }
            Some((_, false)) => {
                self.file(&job, &rel);
            }
            None => {
                let copied = self.file(&job, &rel);
                // `--compare-dest` may leave the first name out (a basis holds it):
                // then there is nothing to link to, and each other name is decided
                // against the basis on its own, as rsync does.
                let ok =
                    copied && (self.cfg.dry_run || self.cfg.basis.is_none() || self.in_dest(&job));
                let leader = Name::of(&job);
                let waiting = {
                    let mut links = self.links.0.lock().unwrap();
                    let done = LinkGroup::Done(Settled {
                        leader: leader.clone(),
                        ok,
                        src: self.as_stored(&job.entry.meta),
                        names: vec![leader.clone()],
                        check: false,
                    });
                    match links.insert(key, done) {
                        Some(LinkGroup::Copying { waiting, .. }) => waiting,
                        _ => Vec::new(),
                    }
                };
                for w in waiting {
                    let _done = self.child_done(w.parent.clone());
                    let wrel = w.parent.rel.join(&w.entry.name);
                    if ok {
                        let linked = self.link_to(&w, &wrel, &leader);
                        self.note_linked(key, &w, linked);
                    } else {
                        self.file(&w, &wrel);
                    }
                }
            }
        }
    }

    /// A name chosen to lead that copies nothing for the others: the group starts
    /// over, and the names that waited for it run again (the first leads).
    fn hand_over(&self, key: (u64, u64), job: &EntryJob<D>) {
        let waiting = {
            let mut links = self.links.0.lock().unwrap();
            match links.get(&key) {
                Some(LinkGroup::Copying { leader, .. }) if leader.is(job) => {
                    match links.remove(&key) {
                        Some(LinkGroup::Copying { waiting, .. }) => waiting,
                        _ => Vec::new(),
                    }
                }
                _ => return,
            }
        };
        self.run_waiting(waiting);
    }

    /// Runs names that waited for a leader that is no longer coming.
    fn run_waiting(&self, waiting: Vec<EntryJob<D>>) {
        for w in waiting {
            let done = self.child_done(w.parent.clone());
            self.hard_linked_file(w, done);
        }
    }

    /// After the workers: names still waiting for a leader whose job never ran (it
    /// should not happen; a run that stops leaves them as it leaves its queue) are
    /// copied and linked now rather than left out of DEST.
    pub(super) fn run_stranded_links(&self) {
        if self.sched.stopped() {
            return;
        }
        let mut stranded = Vec::new();
        self.links.0.lock().unwrap().retain(|_, g| match g {
            LinkGroup::Copying {
                started: false,
                waiting,
                ..
            } => {
                stranded.append(waiting);
                false
            }
            _ => true,
        });
        self.run_waiting(stranded);
    }

    /// Whether DEST holds `job`'s name now.
    fn in_dest(&self, job: &EntryJob<D>) -> bool {
        let Some(dir) = &job.parent.dir else {
            return false;
        };
        matches!(self.dest.stat(dir, &job.entry.name), Ok(Some(_)))
    }

    /// Adds a linked name to its group.
    fn note_linked(&self, key: (u64, u64), job: &EntryJob<D>, linked: Linked) {
        let mut links = self.links.0.lock().unwrap();
        if let Some(LinkGroup::Done(g)) = links.get_mut(&key) {
            g.check |= linked.changed;
            if linked.ok {
                g.names.push(Name::of(job));
            }
        }
    }

    /// Makes `job`'s name a hard link to the leader's destination file, unless it
    /// already is one.
    fn link_to(&self, job: &EntryJob<D>, rel: &Path, leader: &Name<D>) -> Linked {
        let mut changed = false;
        let mut ok = false;
        self.settle(job, |known, last| {
            let Ok(dst) = self.dest_meta(job, known, rel) else {
                return Attempt::Done(false);
            };
            let ldir = leader.parent.dir.as_ref();
            if let (Some(d), Some(ldir)) = (&dst, ldir)
                && d.kind == Kind::File
                && d.nlink > 1
            {
                match self.dest.stat(ldir, &leader.name) {
                    Ok(Some(l)) if l.ino == d.ino && l.dev == d.dev => {
                        Stats::bump(&self.stats.files_skipped);
                        self.up_to_date(job, rel, Update::HardLink, None);
                        self.source_done(job);
                        ok = true;
                        return Attempt::Done(true);
                    }
                    Ok(_) => {}
                    Err(e) => {
                        self.dest_error(&leader.rel(), e);
                        return Attempt::Done(false);
                    }
                }
            }
            // Another file at the name (an old copy, another run's) is renamed over;
            // only another type (deleted, as rsync itemizes it) or an old copy
            // `--backup` keeps is moved aside first.
            let replace = match &dst {
                Some(d) if d.kind == Kind::File && self.cfg.backup.is_none() => true,
                Some(d) => {
                    if !self.make_way(job, rel, d) {
                        return Attempt::Done(false);
                    }
                    false
                }
                None => false,
            };
            changed |= replace;
            job.parent.changed.store(true, Ordering::Relaxed);
            if !self.cfg.dry_run {
                let (Some(dir), Some(ldir)) = (&job.parent.dir, ldir) else {
                    return Attempt::Done(false);
                };
                let linked = if replace {
                    self.link_over(dir, &job.entry.name, ldir, &leader.name)
                } else if changed {
                    // After a race the object remembered for the leader may be one
                    // another run renamed over (linking to it fails NotFound once it has
                    // no names left): look the name up.
                    self.dest
                        .hard_link_current(dir, &job.entry.name, ldir, &leader.name)
                } else {
                    self.dest
                        .hard_link(dir, &job.entry.name, ldir, &leader.name)
                };
                match linked {
                    Ok(()) => {}
                    // AlreadyExists: another run made the name meanwhile; NotFound: the
                    // name we replace went away. Look again.
                    Err(e) if !last && is_race_or_gone(&e) => {
                        changed = true;
                        return Attempt::Raced;
                    }
                    Err(e) => {
                        self.dest_error(rel, e);
                        return Attempt::Done(false);
                    }
                }
            }
            changed = true;
            Stats::bump(&self.stats.links_created);
            // A file the link replaced is itemized against the source as rsync does
            // (`hf..T......`), one of another type (deleted first) as new.
            let code = match &dst {
                Some(d) if replace => {
                    match self.file_code(&self.as_stored(&job.entry.meta), Some(d), job, rel) {
                        Itemize::Changed(_, kind, c) => {
                            Itemize::Changed(Update::HardLink, kind, Changes { value: false, ..c })
                        }
                        _ => Itemize::New(Update::HardLink, Kind::File),
                    }
                }
                _ => {
                    let basis = self.exact_basis(job, |d| {
                        self.same_content(d, &job.entry.name, &job.entry)
                            .unwrap_or(false)
                    });
                    let blank = Itemize::Changed(Update::HardLink, Kind::File, Changes::default());
                    let leader_at = (&*leader.parent, leader.name.as_os_str());
                    match basis {
                        Some(b) if self.holds_link_basis(job, leader_at, &b) => {
                            self.out.linked_up_to_date(
                                blank,
                                rel,
                                &leader.rel(),
                                (&job.entry).into(),
                            );
                            self.source_done(job);
                            ok = true;
                            return Attempt::Done(true);
                        }
                        Some(_) => blank,
                        None => Itemize::New(Update::HardLink, Kind::File),
                    }
                }
            };
            self.out
                .hard_link(code, rel, &leader.rel(), (&job.entry).into());
            self.source_done(job);
            ok = true;
            Attempt::Done(true)
        });
        Linked { ok, changed }
    }

    /// Makes the existing `name` in `dir` a hard link to what `ldir/lname` holds now,
    /// without `name`'s ever being absent: linked under a temporary name, renamed over.
    /// Where the name already is a link to the same object (another run got there
    /// first), RENAME does nothing (rename(2), RFC 1813 and RFC 8881 alike) and leaves
    /// the temporary, so it is removed by name after (it is ours alone; gone in the
    /// usual case). Only a name that held another object comes here, so the link looks
    /// `lname` up afresh ([`Destination::hard_link_current`]): another run may have
    /// renamed its copy over our leader.
    pub(super) fn link_over(
        &self,
        dir: &D::Dir,
        name: &OsString,
        ldir: &D::Dir,
        lname: &OsString,
    ) -> dest::Result<()> {
        let tmp = temp::name(name);
        self.dest.hard_link_current(dir, &tmp, ldir, lname)?;
        let renamed = self.dest.rename(dir, &tmp, name);
        match self.dest.remove(dir, &tmp, Kind::File) {
            Err(e) if e.is_fatal() && renamed.is_ok() => return Err(e),
            _ => {}
        }
        renamed
    }
}
