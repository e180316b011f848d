//! Directories: planning the roots, scanning a directory, finalizing it.

use std::collections::{HashMap, VecDeque};
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::delete::Budget;
use super::temp;
use super::{DestKnown, DirNode, Engine, EntryJob, ScanJob, root_is_dir};
use crate::dest::{AttrSet, DestEntry, Destination, RootState, local};
use crate::exit::{self, Fatal};
use crate::meta::{Kind, Meta};
use crate::plan;
use crate::report::Stats;
use crate::walk::{self, ListError, SrcEntry};

/// What a listing of the destination directory told us, by name.
type DestMap = HashMap<OsString, DestEntry>;

/// A source operand after applying rsync's trailing-slash rule.
struct Operand {
    path: PathBuf,
    meta: Meta,
    /// `SRC/`: copy the contents, not the directory itself.
    contents: bool,
}

fn has_trailing_slash(p: &Path) -> bool {
    p.as_os_str().as_encoded_bytes().ends_with(b"/")
}

/// rsync's rule: `SRC/`, `SRC/.` and `.` name the contents of SRC.
fn names_contents(p: &Path) -> bool {
    let b = p.as_os_str().as_encoded_bytes();
    b.ends_with(b"/") || b.ends_with(b"/.") || b == b"."
}

impl<D: Destination> Engine<'_, D> {
    /// Resolves sources and DEST, then queues the first work.
    pub(super) fn plan_roots(&self) -> Result<(), Fatal> {
        let mut operands = Vec::new();
        for src in &self.cfg.sources {
            let contents = names_contents(src);
            // `SRC/` names the directory a symlink points to; `SRC` the link itself.
            let m = if contents {
                fs::metadata(src)
            } else {
                fs::symlink_metadata(src)
            };
            let meta =
                m.map_err(|e| Fatal::new(exit::SELECT, format!("{}: {e}", src.display())))?;
            let meta = Meta::from_std(&meta);
            operands.push(Operand {
                path: src.clone(),
                contents: contents && meta.kind == Kind::Dir,
                meta,
            });
        }
        let state = self
            .dest
            .root_state()
            .map_err(|e| Fatal::new(exit::SELECT, format!("{}: {e}", self.cfg.dest.display())))?;
        let dest_slash = has_trailing_slash(&self.cfg.dest);

        // One non-directory source onto a DEST that is not a directory: DEST is the
        // new name of that file, as with cp and rsync.
        if operands.len() == 1
            && operands[0].meta.kind != Kind::Dir
            && !root_is_dir(&state)
            && !dest_slash
        {
            let op = operands.pop().unwrap();
            let (dir, name) = self.dest.root_parent().map_err(|e| {
                Fatal::new(exit::SELECT, format!("{}: {e}", self.cfg.dest.display()))
            })?;
            let node = self.new_node(PathBuf::new(), Some(dir), None, None, None);
            let known = match state {
                RootState::Missing => DestKnown::Missing,
                RootState::Exists(m) => DestKnown::Present(m),
            };
            let entry = SrcEntry {
                name,
                path: op.path,
                meta: op.meta,
            };
            self.stats.files_scanned.fetch_add(1, Ordering::Relaxed);
            self.sched.push(
                vec![],
                VecDeque::from([EntryJob {
                    parent: node.clone(),
                    entry,
                    known,
                }]),
            );
            self.complete(&node);
            return Ok(());
        }

        if let RootState::Exists(m) = &state
            && m.kind != Kind::Dir
        {
            return Err(Fatal::new(
                exit::SELECT,
                format!(
                    "{}: destination exists and is not a directory",
                    self.cfg.dest.display()
                ),
            ));
        }
        let fresh = matches!(state, RootState::Missing);
        let dir = if self.cfg.dry_run && fresh {
            None
        } else {
            Some(self.dest.root_dir().map_err(|e| {
                Fatal::new(exit::SELECT, format!("{}: {e}", self.cfg.dest.display()))
            })?)
        };
        if fresh {
            Stats::bump(&self.stats.dirs_created);
            self.out.change("cd+++++++++", Path::new("./"));
        }
        // DEST takes the attributes of a lone `SRC/`; with several sources it keeps its own.
        let only_contents = operands.iter().all(|o| o.contents);
        let only_names = operands.iter().all(|o| !o.contents);
        let root_meta = (operands.len() == 1 && only_contents).then(|| operands[0].meta);
        let found = match state {
            RootState::Exists(m) => Some(m),
            RootState::Missing => None,
        };
        if !only_names && let Ok(RootState::Exists(m)) = self.dest.root_state() {
            self.note_written_root(&m);
        }
        let node = self.new_node(PathBuf::new(), dir, root_meta, found, None);

        let mut entries = Vec::new();
        let mut listing_ok = true;
        for op in operands {
            if op.contents {
                Stats::bump(&self.stats.dirs_scanned);
                match self.list_source(&op.path) {
                    Some(list) => entries.extend(list),
                    None => listing_ok = false,
                }
            } else {
                let name = op.path.file_name().map(|n| n.to_owned()).ok_or_else(|| {
                    Fatal::new(
                        exit::SELECT,
                        format!("{}: cannot copy a path with no name", op.path.display()),
                    )
                })?;
                entries.push(SrcEntry {
                    name,
                    path: op.path,
                    meta: op.meta,
                });
            }
        }
        // Deleting at DEST's top level only makes sense when DEST mirrors `SRC/`.
        self.plan_children(&node, entries, fresh, listing_ok && only_contents);
        self.complete(&node);
        Ok(())
    }

    pub(super) fn new_node(
        &self,
        rel: PathBuf,
        dir: Option<D::Dir>,
        meta: Option<Meta>,
        found: Option<Meta>,
        parent: Option<Arc<DirNode<D>>>,
    ) -> Arc<DirNode<D>> {
        Arc::new(DirNode {
            rel,
            dir,
            meta,
            found,
            pending: AtomicUsize::new(1),
            parent,
            changed: AtomicBool::new(false),
            deletions: Mutex::new(Vec::new()),
        })
    }

    /// Lists a source directory, reporting problems; `None` when it could not be read.
    fn list_source(&self, path: &Path) -> Option<Vec<SrcEntry>> {
        match walk::list_dir(path) {
            Ok((entries, problems)) => {
                for p in problems {
                    match p {
                        ListError::Vanished(p) => {
                            Stats::bump(&self.stats.vanished);
                            self.out
                                .warn(format_args!("file has vanished: {}", p.display()));
                        }
                        ListError::Entry(p, e) => self.source_error(&p, &e),
                        ListError::Dir(e) => self.source_error(path, &e),
                    }
                }
                Some(entries)
            }
            Err(ListError::Dir(e)) => {
                self.source_error(path, &e);
                None
            }
            Err(_) => None,
        }
    }

    /// Compares a directory's source entries with its destination listing and queues
    /// one job per entry. `fresh`: the destination directory was just created, so it
    /// is empty and needs no listing.
    fn plan_children(
        &self,
        node: &Arc<DirNode<D>>,
        entries: Vec<SrcEntry>,
        fresh: bool,
        may_delete: bool,
    ) {
        let mut dest_map: Option<DestMap> = None;
        // `may_delete` is false when the source directory could not be listed whole.
        let listed_ok = may_delete;
        let mut may_delete = may_delete && self.cfg.delete;
        if !fresh && let Some(dir) = &node.dir {
            match self.dest.list(dir) {
                Ok(list) => {
                    dest_map = Some(list.into_iter().map(|e| (e.name.clone(), e)).collect())
                }
                Err(e) => {
                    self.dest_error(&node.rel, &e);
                    may_delete = false;
                }
            }
        }
        let mut scans = Vec::new();
        let mut jobs = VecDeque::new();
        for entry in entries {
            let is_dir = entry.meta.kind == Kind::Dir;
            let rel = node.rel.join(&entry.name);
            // Excluded entries are neither copied nor deleted on the other side.
            let listed = dest_map.as_mut().and_then(|m| m.remove(&entry.name));
            if !self.cfg.filter.is_empty() && self.cfg.filter.is_excluded(&rel, is_dir) {
                continue;
            }
            let known = if fresh {
                DestKnown::Missing
            } else if dest_map.is_some() {
                match listed {
                    None => DestKnown::Missing,
                    Some(DestEntry { meta: Some(m), .. }) => DestKnown::Present(m),
                    Some(DestEntry { kind, .. }) => DestKnown::Unknown(kind),
                }
            } else {
                DestKnown::Unknown(None)
            };
            if is_dir && self.is_written_root(&entry.meta) {
                self.out.warn(format_args!(
                    "skipping directory {}: it is the destination being written",
                    entry.path.display()
                ));
                continue;
            }
            if is_dir {
                Stats::bump(&self.stats.dirs_scanned);
                scans.push(ScanJob {
                    parent: node.clone(),
                    entry,
                    known,
                });
            } else {
                self.stats.files_scanned.fetch_add(1, Ordering::Relaxed);
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
        // --delete removes what the source lacks; temporaries a killed run left behind
        // (its process provably gone, see `temp`) go either way (but not where the source could not be listed).
        if let Some(rest) = dest_map {
            let mut dels: Vec<_> = rest
                .into_values()
                .filter(|e| {
                    let kind = e.kind.or(e.meta.map(|m| m.kind));
                    // Excluded entries are never touched, temporaries or not.
                    if !self.cfg.filter.is_empty()
                        && self
                            .cfg
                            .filter
                            .is_excluded(&node.rel.join(&e.name), kind == Some(Kind::Dir))
                    {
                        return false;
                    }
                    // Another run's temporary in progress is never ours to remove.
                    if kind == Some(Kind::File) && temp::is_temp(&e.name) {
                        return listed_ok && temp::is_abandoned(&e.name);
                    }
                    may_delete
                })
                .map(|e| (e.name, e.kind.or(e.meta.map(|m| m.kind))))
                .collect();
            dels.sort();
            *node.deletions.lock().unwrap() = dels;
        }
        node.pending
            .fetch_add(scans.len() + jobs.len(), Ordering::AcqRel);
        self.sched.push(scans, jobs);
    }

    /// A scan job: make or open the destination directory, list both sides, queue children.
    pub(super) fn scan(&self, job: ScanJob<D>) {
        let ScanJob {
            parent,
            entry,
            known,
        } = job;
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
                    self.dest_error(&rel, &e);
                    self.complete(&parent);
                    return;
                }
            },
        };
        let mut found = None;
        let dir = match existing {
            Some(Kind::Dir) => {
                let Some((d, m)) = self.open_existing(pdir.unwrap(), &entry.name, &rel, &parent)
                else {
                    return;
                };
                found = Some(m);
                Some(d)
            }
            other => {
                if let Some(kind) = other {
                    // Something else is in the way of the directory.
                    match self.delete(pdir, &entry.name, &parent.rel, kind, Budget::Counted) {
                        Ok(true) => {}
                        Ok(false) => {
                            self.complete(&parent);
                            return;
                        }
                        Err(e) => {
                            self.dest_error(&rel, &e);
                            self.complete(&parent);
                            return;
                        }
                    }
                }
                parent.changed.store(true, Ordering::Relaxed);
                let made = if dry {
                    None
                } else {
                    match self.dest.mkdir(pdir.unwrap(), &entry.name, &entry.meta) {
                        Ok(d) => Some(d),
                        // Another run made it meanwhile: use it, as one we found.
                        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                            let Some((d, m)) =
                                self.open_existing(pdir.unwrap(), &entry.name, &rel, &parent)
                            else {
                                return;
                            };
                            found = Some(m);
                            Some(d)
                        }
                        Err(e) => {
                            self.dest_error(&rel, &e);
                            self.complete(&parent);
                            return;
                        }
                    }
                };
                if found.is_none() {
                    Stats::bump(&self.stats.dirs_created);
                    self.out.change("cd+++++++++", &rel);
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
        let fresh = found.is_none();
        let node = self.new_node(rel, dir, Some(entry.meta), found, Some(parent));
        // An unreadable source directory is still created, but nothing is deleted in it.
        if let Some(children) = self.list_source(&entry.path) {
            self.plan_children(&node, children, fresh, true);
        }
        self.complete(&node);
    }

    /// Opens a destination directory that exists; on failure reports it and completes
    /// the parent's count (the caller then gives up on this directory).
    fn open_existing(
        &self,
        pdir: &D::Dir,
        name: &std::ffi::OsStr,
        rel: &Path,
        parent: &Arc<DirNode<D>>,
    ) -> Option<(D::Dir, Meta)> {
        match self.dest.open_dir(pdir, name) {
            Ok(opened) => Some(opened),
            Err(e) => {
                self.dest_error(rel, &e);
                self.complete(parent);
                None
            }
        }
    }

    /// Remembers a directory this run writes a source into.
    fn note_written_root(&self, m: &Meta) {
        if self.dest.ids_are_local() {
            self.written_roots.lock().unwrap().push((m.dev, m.ino));
        }
    }

    /// Whether a source directory is one this run writes into (DEST inside SRC).
    fn is_written_root(&self, m: &Meta) -> bool {
        self.written_roots.lock().unwrap().contains(&(m.dev, m.ino))
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
                        self.dest_error(&rel, &e);
                        continue;
                    }
                },
            };
            // A killed run's temporary is ours to clear, not the user's data.
            let budget = if kind == Kind::File && temp::is_temp(&name) {
                Budget::Free
            } else {
                Budget::Counted
            };
            match self.delete(node.dir.as_ref(), &name, &node.rel, kind, budget) {
                Ok(_) => node.changed.store(true, Ordering::Relaxed),
                Err(e) => self.dest_error(&rel, &e),
            }
        }
        let (Some(meta), Some(dir)) = (&node.meta, &node.dir) else {
            return;
        };
        if self.cfg.dry_run || self.stop.load(Ordering::Relaxed) {
            return;
        }
        let what = match &node.found {
            // Created by us: the mode unless mkdir could give it, the owner unless it is
            // already ours, and always the mtime (creating children moved it).
            None => {
                let parent_setgid = node
                    .parent
                    .as_ref()
                    .and_then(|p| p.found)
                    .is_some_and(|f| f.mode & 0o2000 != 0);
                AttrSet {
                    mode: local::mkdir_mode(meta) != meta.mode,
                    owner: (self.cfg.owners.owner && meta.uid != self.euid)
                        || (self.cfg.owners.group && (meta.gid != self.egid || parent_setgid)),
                    mtime: true,
                }
            }
            Some(found) => {
                let mut d = plan::attr_diff(&self.as_stored(meta), found, self.cfg, true);
                d.mtime |= node.changed.load(Ordering::Relaxed);
                d
            }
        };
        if what.is_empty() {
            return;
        }
        match self.dest.set_dir_attrs(dir, meta, what) {
            Ok(()) if what.mtime => self.note_time(&node.rel, meta),
            Ok(()) => {}
            Err(e) => self.dest_error(&node.rel, &e),
        }
    }
}
