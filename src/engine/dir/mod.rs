//! Directories: scanning a directory, finalizing it (the roots: [`roots`]).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::delete::Budget;
use super::{DestKnown, DirNode, Engine, EntryJob, Origin, ScanJob};
use crate::dest::Destination;
use crate::meta::{Kind, Meta};
use crate::options::temp;
use crate::plan::{self, Listing};
use crate::report::itemize::{Changes, Itemize, Update};
use crate::report::{Escaped, Stats};
use crate::source::{self, ListError, SrcEntry};

mod roots;

impl<D: Destination> Engine<'_, D> {
    /// rsync's line for a directory that was there when its attributes differ from the
    /// source's (`.d..t...... sub/`), decided before its contents change it, as rsync's
    /// generator does.
    fn itemize_dir(&self, rel: &Path, src: crate::report::Source<'_>, found: &Meta) {
        let m = self.as_stored(src.meta);
        let changes = Changes {
            time: (self.cfg.times
                && !self.cfg.omit_dir_times
                && !m.mtime.matches(found.mtime, self.rules.modify_window))
            .into(),
            perms: self.cfg.perms && m.mode != found.mode,
            owner: self.cfg.owners.owner && m.uid != found.uid,
            group: self.cfg.owners.group && m.gid != found.gid,
            ..Changes::default()
        };
        // Unchanged, it is itemized too, for -ii.
        let code = Itemize::Changed(Update::Attributes, Kind::Dir, changes);
        self.out.change(code, rel, src);
    }

    pub(super) fn new_node(
        &self,
        rel: PathBuf,
        dir: Option<D::Dir>,
        (meta, src): (Option<Meta>, Option<PathBuf>),
        origin: Origin,
        parent: Option<ChildDone<'_, '_, D>>,
        (filters, implied): (
            Arc<crate::options::filter::Scope>,
            Option<Arc<crate::options::relative::Named>>,
        ),
    ) -> ChildDone<'_, '_, D> {
        let node = Arc::new(DirNode {
            src,
            rel,
            dir,
            meta,
            origin,
            pending: AtomicUsize::new(1),
            // The parent's hold on this child is the node's now: it is let go when the
            // node is done.
            parent: parent.map(ChildDone::pass_on),
            changed: AtomicBool::new(false),
            deletions: Mutex::new(Vec::new()),
            filters,
            basis: std::sync::OnceLock::new(),
            new_perms: std::sync::OnceLock::new(),
            implied,
            merged: Default::default(),
        });
        self.child_done(node)
    }

    /// Holds one unfinished child of `dir` (counted in its `pending` already) until
    /// the returned guard is dropped.
    pub(super) fn child_done(&self, dir: Arc<DirNode<D>>) -> ChildDone<'_, '_, D> {
        ChildDone {
            engine: self,
            node: Some(dir),
        }
    }

    /// Reports merge files that could not be read or used (the run goes on, unless
    /// they include each other too deep).
    fn filter_errors(&self, dir: &Path, errors: Vec<crate::options::filter::Error>) {
        for e in errors {
            if e.ends_run() {
                self.end_run(crate::exit::Error::Local {
                    what: "filter rules".into(),
                    source: std::io::Error::other(e),
                });
                continue;
            }
            Stats::bump(&self.stats.errors);
            self.out.error(dir, e);
        }
    }

    /// rsync's `--debug=FILTER` trace (`-vv`): each source entry a rule decides, and
    /// the rule (its place, when it is a file's text: see `options::filter`).
    fn trace_filters(&self, node: &DirNode<D>, entries: &[SrcEntry]) {
        let f = &self.cfg.filter;
        if f.debug() == 0 || f.is_empty() {
            return;
        }
        for e in entries {
            let is_dir = e.meta.kind == Kind::Dir;
            let rel = node.rel.join(&e.name);
            let side = crate::options::filter::Side::Sender;
            if let Some((excluded, why)) = f.decided_by(&node.filters, &rel, is_dir, side) {
                self.out.info(format_args!(
                    "[sender] {} {} {} because of pattern {why}",
                    if excluded { "hiding" } else { "showing" },
                    if is_dir { "directory" } else { "file" },
                    Escaped(rel)
                ));
            }
        }
    }

    /// Lists a source directory, reporting problems; `None` when it could not be read.
    /// With it whether the listing is whole: an entry that could not be looked at (or
    /// whose name was refused) says nothing of its namesake in DEST, which must then
    /// not be deleted (rsync skips deletion on any I/O error; `--ignore-errors`
    /// deletes anyway).
    pub(super) fn list_source(&self, dir: &SrcEntry) -> Option<(Vec<SrcEntry>, bool)> {
        let path = &dir.path;
        match source::list_entry(dir) {
            Ok((mut entries, problems)) => {
                let whole = self.cfg.ignore_errors
                    || problems.iter().all(|p| matches!(p, ListError::Vanished(_)));
                if self.cfg.fake_super.source {
                    entries.retain_mut(|e| match source::read_faked(e) {
                        Ok(()) => true,
                        Err(err) => {
                            self.source_error(&e.path, &err);
                            false
                        }
                    });
                }
                for p in problems {
                    match p {
                        ListError::Vanished(p) => {
                            Stats::bump(&self.stats.vanished);
                            self.out
                                .warn(format_args!("file has vanished: {}", Escaped(p)));
                        }
                        ListError::Entry(p, e) => self.source_error(&p, &e),
                        ListError::Dir(e) => self.source_error(path, &e),
                    }
                }
                Some((entries, whole))
            }
            Err(ListError::Dir(e)) => {
                self.source_error(path, &e);
                None
            }
            Err(_) => None,
        }
    }

    /// Lists the destination directory (unless `fresh`: just created, so empty), has
    /// [`plan::plan_dir`] match it with the source's `entries`, then queues the children
    /// and keeps the deletions for [`Engine::finalize`]. `source_whole` is false when
    /// the source listing failed part-way (then nothing is deleted).
    pub(super) fn plan_children(
        &self,
        node: &Arc<DirNode<D>>,
        mut entries: Vec<SrcEntry>,
        fresh: bool,
        source_whole: bool,
    ) {
        let (whole, spared) = self.shape_entries(Some(node), &node.rel, &mut entries);
        let source_whole = whole && source_whole;
        if self.cfg.paths.prune_empty_dirs {
            entries.retain(|e| !self.prunes(node, e));
        }
        self.trace_filters(node, &entries);
        let share = self.share_of(&node.rel, &entries);
        // A shard skips the destination listing of a directory where nothing is its
        // own: no entry of its share, no deletion, no subdirectory (whose LOOKUP the
        // listing would save: a READDIRPLUS gives every subdirectory's handle).
        let needs_listing = share.as_ref().is_none_or(|s| {
            self.cfg.delete
                || !s.is_empty()
                || entries
                    .iter()
                    .any(|e| e.meta.kind == Kind::Dir && self.walks(&node.rel, &e.name))
        });
        let listing = match &node.dir {
            _ if fresh => Listing::Fresh,
            None => Listing::Unknown,
            _ if !needs_listing => Listing::Unknown,
            Some(dir) => match self.dest.list(dir) {
                Ok(list) => Listing::Listed(list),
                Err(e) => {
                    self.dest_error(&node.rel, e);
                    Listing::Unknown
                }
            },
        };
        let mut plan = plan::plan_dir(
            &node.rel,
            entries,
            listing,
            source_whole,
            &self.rules,
            &node.filters,
        );
        plan.deletions.retain(|(name, _)| !spared.contains(name));
        if let Some(share) = share {
            self.keep_share(&node.rel, &mut plan, &share);
        }
        let mut scans = Vec::new();
        let mut jobs = VecDeque::new();
        for (entry, known) in plan.children {
            let implied = node
                .implied
                .as_ref()
                .and_then(|t| t.children.get(&entry.name).cloned());
            if entry.meta.kind == Kind::Dir && self.leaves_out(node, &entry, implied.as_deref()) {
                continue;
            }
            if entry.meta.kind == Kind::Dir {
                if self.is_written_root(&entry.meta) {
                    self.out.warn(format_args!(
                        "skipping directory {}: it is the destination being written",
                        Escaped(&entry.path)
                    ));
                    continue;
                }
                Stats::bump(&self.stats.dirs_scanned);
                scans.push(ScanJob {
                    parent: node.clone(),
                    entry,
                    known,
                    implied,
                });
            } else {
                self.stats.files_scanned.fetch_add(1, Ordering::Relaxed);
                self.stats.found(&entry.meta);
                if entry.meta.kind == Kind::File {
                    self.stats
                        .bytes_scanned
                        .fetch_add(entry.meta.size, Ordering::Relaxed);
                }
                jobs.push_back(EntryJob {
                    parent: node.clone(),
                    entry,
                    known,
                });
            }
        }
        *node.deletions.lock().unwrap() = plan.deletions;
        self.choose_leaders(&jobs);
        node.pending
            .fetch_add(scans.len() + jobs.len(), Ordering::AcqRel);
        if self.out.ordered() {
            let subdirs = scans.iter().map(|s| s.entry.name.clone()).collect();
            let names = jobs.iter().map(|j| j.entry.name.clone()).collect();
            self.out.listed(&node.rel, subdirs, names);
        }
        self.sched.push(scans, jobs);
    }

    /// A scan job: make or open the destination directory, list both sides, queue children.
    pub(super) fn scan(&self, job: ScanJob<D>) {
        // Counted on every way out, after the children it found were counted as found.
        let _listed = Listed(&self.stats);
        let ScanJob {
            parent,
            entry,
            known,
            implied,
        } = job;
        // Its lines wait for the walk, then for those before them.
        let _walking = self.out.walking(&parent.rel.join(&entry.name));
        let parent = self.child_done(parent);
        // --mpi: another process has walked the whole tree, so everything below is
        // someone's already (see crate::shard::claim).
        if self.cfg.claims.as_ref().is_some_and(|c| c.all_taken()) {
            Stats::bump(&self.stats.dirs_not_walked);
            return;
        }
        if let Some(t) = implied.as_ref().filter(|t| self.bare_implied(t)) {
            return self.scan_bare(parent, entry, known, t.clone());
        }
        let rel = parent.rel.join(&entry.name);
        let dry = self.cfg.dry_run;
        let pdir = parent.dir.as_ref();
        // What is there now?
        let existing = match (&known, pdir) {
            (DestKnown::Missing, _) | (_, None) => None,
            (DestKnown::Present(m), _) => Some(m.kind),
            (DestKnown::Unknown(Some(k)), _) => Some(*k),
            (DestKnown::Unknown(None), Some(pd)) => match self.dest.stat(pd, &entry.name) {
                Ok(m) => m.map(|m| m.kind),
                Err(e) => {
                    self.dest_error(&rel, e);
                    return;
                }
            },
        };
        // --existing: no new directory, so nothing below it either.
        if self.cfg.skip.existing_only && existing != Some(Kind::Dir) {
            return;
        }
        // -K: a symlink to a directory stands for that directory.
        let Ok(linked) = self.keep_dirlink(pdir, existing, &entry.name, &rel) else {
            return;
        };
        let existing = linked.as_ref().map_or(existing, |_| Some(Kind::Dir));
        // -x: a mount point is created, its contents left out.
        let mount_point = self.cfg.one_file_system > 0 && crosses_device(&parent, &entry);
        let mut origin = Origin::Imagined;
        let dir = match existing {
            Some(Kind::Dir) => {
                let opened = match linked {
                    Some(l) => Some(l),
                    None => self.open_existing(pdir.unwrap(), &entry.name, &rel),
                };
                let Some((d, m)) = opened else {
                    return;
                };
                self.itemize_dir(&rel, (&entry).into(), &m);
                origin = Origin::Found(m);
                Some(d)
            }
            other => {
                if other.is_some() && self.cfg.skip.ignore_existing {
                    // --ignore-existing leaves it, and nothing can go inside (rsync).
                    let e = std::io::Error::from_raw_os_error(libc::ENOTDIR);
                    self.dest_error(&rel, crate::dest::Error::Entry(e));
                    return;
                }
                if let Some(kind) = other {
                    // Something else is in the way of the directory.
                    match self.delete(pdir, &entry.name, &parent, kind, Budget::Counted) {
                        Ok(true) => {}
                        Ok(false) => return,
                        // Another shard replaced it with the directory first: the
                        // mkdir below finds it.
                        Err(_) if self.replaced_by_another_shard(pdir, &entry.name) => {}
                        Err(e) => {
                            self.dest_error(&rel, e);
                            return;
                        }
                    }
                }
                parent.changed.store(true, Ordering::Relaxed);
                let made = if dry {
                    None
                } else {
                    match self.dest.mkdir(
                        pdir.unwrap(),
                        &entry.name,
                        &self.give_new_dir(&entry.meta, &parent),
                    ) {
                        Ok((d, todo)) => {
                            origin = Origin::Created(todo);
                            Some(d)
                        }
                        // Another run made it meanwhile: use it, as one we found.
                        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                            let Some((d, m)) = self.open_existing(pdir.unwrap(), &entry.name, &rel)
                            else {
                                return;
                            };
                            origin = Origin::Found(m);
                            Some(d)
                        }
                        Err(e) => {
                            self.dest_error(&rel, e);
                            return;
                        }
                    }
                };
                if !matches!(origin, Origin::Found(_)) {
                    Stats::bump(&self.stats.dirs_created);
                    let code = self.new_dir_code(&rel, &entry.meta);
                    self.out.change(code, &rel, (&entry).into());
                }
                made
            }
        };
        // A source named without its slash is written into DEST/NAME: that directory
        // must not be copied again if the source's walk comes across it.
        if parent.parent.is_none()
            && self.dest.ids_are_local()
            && self.cfg.sources.contains(&entry.path)
            && let Some(pd) = pdir
            && let Ok(Some(m)) = self.dest.stat(pd, &entry.name)
        {
            self.note_written_root(&m);
        }
        let fresh = !matches!(origin, Origin::Found(_));
        // Its per-directory merge files (-F, dir-merge), read only where it is listed.
        let filters = if mount_point {
            parent.filters.clone()
        } else {
            let (scope, errors) = self.cfg.filter.enter(&parent.filters, &entry, &rel);
            self.filter_errors(&entry.path, errors);
            scope
        };
        let node = self.new_node(
            rel,
            dir,
            (Some(entry.meta), Some(entry.path.clone())),
            origin,
            Some(parent),
            (filters, implied),
        );
        // An unreadable source directory is still created, but nothing is deleted in it
        // (unless --ignore-errors says to delete anyway, as rsync does).
        if !mount_point {
            self.scan_children(&node, &entry, fresh);
        }
    }

    /// Whether a source directory is left out of its parent: without -r (said as
    /// rsync says it) unless -d or a -R path below it keeps it, or as a mount point
    /// under -xx.
    fn leaves_out(
        &self,
        parent: &DirNode<D>,
        entry: &SrcEntry,
        implied: Option<&crate::options::relative::Named>,
    ) -> bool {
        let kept = implied.map_or(self.cfg.paths.dirs, |t| !t.named || self.cfg.paths.dirs);
        if !self.cfg.recursive && !kept {
            let rel = parent.rel.join(&entry.name);
            self.out
                .info(format_args!("skipping directory {}", Escaped(rel)));
            return true;
        }
        self.cfg.one_file_system > 1 && crosses_device(parent, entry)
    }

    /// Opens a destination directory that exists; on failure reports it (the caller
    /// then gives up on this directory).
    pub(super) fn open_existing(
        &self,
        pdir: &D::Dir,
        name: &std::ffi::OsStr,
        rel: &Path,
    ) -> Option<(D::Dir, Meta)> {
        self.dest
            .open_dir(pdir, name)
            .map_err(|e| self.dest_error(rel, e))
            .ok()
    }

    /// Remembers a directory this run writes a source into.
    fn note_written_root(&self, m: &Meta) {
        if self.dest.ids_are_local() {
            self.written_roots.0.lock().unwrap().push((m.dev, m.ino));
        }
    }

    /// Whether a source directory is one this run writes into (DEST inside SRC).
    fn is_written_root(&self, m: &Meta) -> bool {
        self.written_roots
            .0
            .lock()
            .unwrap()
            .contains(&(m.dev, m.ino))
    }

    /// Runs a directory's deletions, then gives it its final attributes.
    pub(super) fn finalize(&self, node: &DirNode<D>) {
        let dels = std::mem::take(&mut *node.deletions.lock().unwrap());
        for (name, kind) in dels {
            let rel = node.rel.join(&name);
            let kind = match (kind, &node.dir) {
                (Some(k), _) => k,
                (None, None) => continue,
                (None, Some(dir)) => match self.dest.stat(dir, &name) {
                    Ok(Some(m)) => m.kind,
                    Ok(None) => continue,
                    Err(e) => {
                        self.dest_error(&rel, e);
                        continue;
                    }
                },
            };
            if kind == Kind::Dir && self.is_linked_dir(node.dir.as_ref(), &name, &rel) {
                continue;
            }
            // A killed run's temporary is ours to clear, not the user's data.
            let budget = if kind == Kind::File && temp::is_temp(&name) {
                Budget::Free
            } else {
                Budget::Counted
            };
            match self.delete_in(node, &name, kind, budget) {
                Ok(_) => node.changed.store(true, Ordering::Relaxed),
                Err(e) => self.dest_error(&rel, e),
            }
        }
        let (Some(meta), Some(dir)) = (&node.meta, &node.dir) else {
            return;
        };
        // Shards leave directory attributes to the finalize run (see crate::shard).
        if self.cfg.dry_run || self.sched.stopped() || self.shared() {
            return;
        }
        // Last, like its mode: a default ACL set earlier would be inherited by the
        // children created meanwhile.
        if let Some(src) = &node.src
            && !matches!(node.origin, Origin::Imagined)
        {
            self.sync_xattrs(dir, None, (src, None, &node.rel), true);
        }
        let mut given = self.give_in(meta, node.parent.as_deref());
        let mut what = match node.origin {
            // Created by us: what mkdir could not give it, and always the mtime
            // (creating children moved it).
            Origin::Created(todo) => todo,
            Origin::Found(found) => {
                let mut d = plan::attr_diff(&self.as_stored(meta), &found, &self.rules, true);
                d.mtime |= node.changed.load(Ordering::Relaxed);
                // Without -p an existing directory keeps its mode (a backend that
                // sets every attribute at once must send that one).
                if !self.cfg.perms {
                    given.mode = found.mode;
                }
                d
            }
            Origin::Imagined => return,
        };
        // Without -t, or with -O, a directory's mtime is whatever its changes made it.
        what.mtime &= self.cfg.times && !self.cfg.omit_dir_times;
        if what.is_empty() {
            return;
        }
        let meta = &given;
        match self.dest.set_dir_attrs(dir, meta, what) {
            Ok(()) if what.mtime => self.note_time(&node.rel, meta),
            Ok(()) => {}
            Err(e) => self.dest_error(&node.rel, e),
        }
    }
}

/// (dev, ino) of the directories this run writes the sources into — DEST for `SRC/`,
/// DEST/NAME for `SRC` — so a DEST inside a source is not copied into itself.
#[derive(Default)]
pub(super) struct WrittenRoots(Mutex<Vec<(u64, u64)>>);

/// Counts a source directory as listed when dropped, for the progress bar's "counting".
struct Listed<'a>(&'a Stats);

impl Drop for Listed<'_> {
    fn drop(&mut self) {
        self.0.dirs_listed.fetch_add(1, Ordering::SeqCst);
    }
}

/// One unfinished child of a directory (or a scan's own hold on the directory it
/// lists), held while it is worked on. Dropping it marks the child done; when it was
/// the last, the directory is finalized and its own parent's hold let go, and so on
/// up. Every way out of a job drops it, so no early return can leave a directory
/// waiting forever. A job that panicked keeps it: the run is ending, and a directory
/// with a child left unfinished is not finalized, as after any stop.
pub(super) struct ChildDone<'e, 'a, D: Destination> {
    engine: &'e Engine<'a, D>,
    /// `None` once passed on.
    node: Option<Arc<DirNode<D>>>,
}

impl<D: Destination> ChildDone<'_, '_, D> {
    /// Lets the hold go without marking the child done: whoever takes the child over
    /// holds it now (the node made for a directory, or the first name of a
    /// hard-linked file that the job waits for).
    pub(super) fn pass_on(mut self) -> Arc<DirNode<D>> {
        self.node.take().expect("held until passed on")
    }
}

impl<D: Destination> std::ops::Deref for ChildDone<'_, '_, D> {
    type Target = Arc<DirNode<D>>;

    fn deref(&self) -> &Arc<DirNode<D>> {
        self.node.as_ref().expect("held until passed on")
    }
}

impl<D: Destination> Drop for ChildDone<'_, '_, D> {
    fn drop(&mut self) {
        let Some(mut node) = self.node.take() else {
            return;
        };
        if std::thread::panicking() {
            return;
        }
        loop {
            if node.pending.fetch_sub(1, Ordering::AcqRel) != 1 {
                return;
            }
            self.engine.finalize(&node);
            match node.parent.clone() {
                Some(p) => node = p,
                None => return,
            }
        }
    }
}

/// Adds to `children` (one source's listing, sorted by name) the entries of another
/// source's directory of the same name, as rsync merges several sources: a name
/// already there stays the first source's, and when both are directories the later one
/// is kept in `merged` to be listed beside it.
pub(super) fn merge_listing(
    children: &mut Vec<SrcEntry>,
    more: Vec<SrcEntry>,
    merged: &mut std::collections::HashMap<std::ffi::OsString, Vec<SrcEntry>>,
) {
    let at: std::collections::HashMap<_, _> = children
        .iter()
        .enumerate()
        .map(|(i, c)| (c.name.clone(), i))
        .collect();
    let mut added = false;
    for e in more {
        match at.get(&e.name) {
            Some(&i) => {
                if children[i].meta.kind == Kind::Dir && e.meta.kind == Kind::Dir {
                    merged.entry(e.name.clone()).or_default().push(e);
                }
            }
            None => {
                children.push(e);
                added = true;
            }
        }
    }
    if added {
        children.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    }
}

/// Whether a source directory is on another filesystem than its parent (a mount point).
/// A directory named on the command line has no parent to compare with.
fn crosses_device<D: Destination>(parent: &DirNode<D>, entry: &SrcEntry) -> bool {
    parent.meta.is_some_and(|m| m.dev != entry.meta.dev)
}
