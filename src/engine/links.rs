//! `-H`: source names sharing one inode. The first name seen is copied; the others
//! wait for it and then become hard links to its destination.
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

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::dir::ChildDone;
use super::race::{Attempt, is_race_or_gone};
use super::{DirNode, Engine, EntryJob};
use crate::dest::{self, AttrSet, Destination};
use crate::meta::{Kind, Meta};
use crate::options::temp;
use crate::report::Stats;
use crate::report::itemize::{Changes, Itemize, Update};

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
}

/// A set of source names sharing one inode (`-H`). The first one seen is copied; the
/// others become hard links to its destination once it is done.
enum LinkGroup<D: Destination> {
    /// The first name is being copied; these wait for it.
    Copying(Vec<EntryJob<D>>),
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
            return;
        }
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
                        Some(LinkGroup::Copying(w)) => w,
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

    /// At the end of the walk: every group that met another writer is checked whole
    /// and made one object again (see the module's doc), and the directories this
    /// changed get their mtimes back.
    pub(super) fn settle_hard_links(&self) {
        if self.cfg.dry_run || self.sched.stopped() {
            return;
        }
        let groups: Vec<Settled<D>> = {
            let mut links = self.links.0.lock().unwrap();
            links
                .drain()
                .filter_map(|(_, g)| match g {
                    LinkGroup::Done(g) if g.ok && g.check && g.names.len() > 1 => Some(g),
                    _ => None,
                })
                .collect()
        };
        // Groups are independent: settled by several threads, as the walk was, so
        // a large DEST over NFS is not checked one round trip at a time.
        let next = AtomicUsize::new(0);
        let changed = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for _ in 0..SETTLE_THREADS.min(groups.len()) {
                s.spawn(|| {
                    while let Some(g) = groups.get(next.fetch_add(1, Ordering::Relaxed)) {
                        if self.sched.stopped() {
                            return;
                        }
                        let names = self.settle_group(g);
                        changed.lock().unwrap().extend(names);
                    }
                });
            }
        });
        let mut touched: Vec<Arc<DirNode<D>>> = Vec::new();
        let mut seen = HashSet::new();
        for n in changed.into_inner().unwrap() {
            if seen.insert(Arc::as_ptr(&n.parent)) {
                touched.push(n.parent);
            }
        }
        let times = self.cfg.times && !self.cfg.omit_dir_times && self.cfg.shard.is_none();
        if !times {
            return;
        }
        let mtime = AttrSet {
            mtime: true,
            ..AttrSet::default()
        };
        for node in touched {
            if let (Some(dir), Some(given)) = (&node.dir, self.dir_given(&node))
                && let Err(e) = self.dest.set_dir_attrs(dir, &given, mtime)
            {
                self.dest_error(&node.rel, e);
            }
        }
    }

    /// Makes every name of `g` hold one object: the complete copy with the lowest
    /// (dev, inode). Returns the names it changed.
    fn settle_group(&self, g: &Settled<D>) -> Vec<Name<D>> {
        let mut changed = Vec::new();
        for round in 0..SETTLE_ROUNDS {
            if round > 0 {
                // Another run is still at this group: give it a moment.
                std::thread::sleep(Duration::from_millis(5 << round.min(6)));
            }
            let mut held = Vec::with_capacity(g.names.len());
            for n in &g.names {
                let Some(dir) = &n.parent.dir else {
                    return changed;
                };
                match self.dest.stat(dir, &n.name) {
                    Ok(m) => held.push(m),
                    Err(e) => {
                        self.dest_error(&n.rel(), e);
                        return changed;
                    }
                }
            }
            let complete = |m: &Meta| {
                m.kind == Kind::File
                    && m.size == g.src.size
                    && (!self.cfg.times || g.src.mtime.matches(m.mtime, self.rules.modify_window))
            };
            let target = held
                .iter()
                .enumerate()
                .filter_map(|(i, m)| m.filter(complete).map(|m| ((m.dev, m.ino), i)))
                .min();
            let Some((id, at)) = target else {
                continue;
            };
            if held.iter().all(|m| m.is_some_and(|m| (m.dev, m.ino) == id)) {
                return changed;
            }
            let to = &g.names[at];
            let Some(tdir) = &to.parent.dir else {
                return changed;
            };
            for (n, m) in g.names.iter().zip(&held) {
                if m.is_some_and(|m| (m.dev, m.ino) == id) {
                    continue;
                }
                let Some(dir) = &n.parent.dir else { continue };
                let r = match m {
                    // A directory or a non-file: another writer's, not ours to replace.
                    Some(m) if m.kind == Kind::Dir => continue,
                    Some(_) => self.link_over(dir, &n.name, tdir, &to.name),
                    None => self.dest.hard_link_current(dir, &n.name, tdir, &to.name),
                };
                // Its directory changed even when the link did not take.
                changed.push(n.clone());
                match r {
                    Ok(()) => {}
                    // Another writer at the name or at the target: the next round sees.
                    Err(e) if is_race_or_gone(&e) => {}
                    Err(e) => {
                        self.dest_error(&n.rel(), e);
                        return changed;
                    }
                }
            }
        }
        Stats::bump(&self.stats.errors);
        self.out.error(
            &self.dest_path(&g.leader.rel()),
            "hard links not settled: other writers kept changing its names",
        );
        changed
    }
}
