//! Which source paths a run sends beyond "the operands and everything below them":
//! the `-R`/`--files-from` tree of named paths (see [`crate::options::relative`]) and `-m`'s
//! pruning of directories that would hold no file.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::dir::ChildDone;
use super::{DestKnown, DirNode, Engine, Origin};
use crate::dest::{self, Destination};
use crate::meta::Kind;
use crate::options::relative::Named;
use crate::report::{Escaped, Stats};
use crate::source::{self, SrcEntry};

impl<D: Destination> Engine<'_, D> {
    /// The tree of `-R` operands and `--files-from` names (`None` when there are
    /// none), and the listed names that amount to `SRC/` operands.
    pub(super) fn named_paths(&self) -> (Option<Arc<Named>>, Vec<PathBuf>) {
        let mut tree = Named::default();
        let mut operands = Vec::new();
        if let Some(names) = &self.cfg.paths.files_from {
            if let Some(source) = self.cfg.sources.first() {
                let source = self.source.path_of(source);
                for name in names {
                    operands.extend(tree.add_listed(
                        &source,
                        Path::new(name),
                        self.cfg.paths.relative,
                    ));
                }
            }
        } else if self.cfg.paths.relative {
            for given in &self.cfg.sources {
                // (A URL's query is no part of the path to recreate.)
                let src = &self.source.path_of(given);
                if crate::options::relative::is_anchor_only(src) {
                    continue;
                }
                // A directory not to be entered is skipped whole, with the directories
                // above it: they are only sent for something below them (rsync).
                if !self.cfg.recursive
                    && !self.cfg.paths.dirs
                    && self
                        .source
                        .operand(given, true)
                        .is_ok_and(|e| e.meta.kind == Kind::Dir)
                {
                    let rel = crate::options::relative::split_anchor(src).1;
                    let shown = rel.as_os_str().as_encoded_bytes();
                    let shown = shown.strip_suffix(b"/").unwrap_or(shown);
                    self.out.info(format_args!(
                        "skipping directory {}",
                        Escaped(std::ffi::OsStr::from_bytes(shown))
                    ));
                    continue;
                }
                tree.add_operand(src);
            }
        }
        (
            (!tree.children.is_empty()).then(|| Arc::new(tree)),
            operands,
        )
    }

    /// Lists the children of a directory just made or opened and queues them. Without
    /// -r (-d, or a -R path) a directory is entered only for what is named below it,
    /// or for its top level when named `DIR/`. An unreadable source directory is
    /// still created, but nothing is deleted in it (unless --ignore-errors says to
    /// delete anyway, as rsync does).
    pub(super) fn scan_children(&self, node: &Arc<DirNode<D>>, src: &SrcEntry, fresh: bool) {
        let list = match &node.implied {
            None => self.cfg.recursive,
            Some(t) => t.named && (self.cfg.recursive || t.contents),
        };
        let (mut children, mut whole) = if list {
            match self.list_source(src) {
                Some(listed) => listed,
                None if self.cfg.ignore_errors => (vec![], true),
                None => return,
            }
        } else {
            (vec![], false)
        };
        // The same directory from later sources: listed beside it (rsync merges them).
        let also = match (&node.parent, list && self.cfg.sources.len() > 1) {
            (Some(p), true) => p.merged.lock().unwrap().remove(&src.name),
            _ => None,
        };
        for other in also.into_iter().flatten() {
            match self.list_source(&other) {
                Some((more, more_whole)) => {
                    whole &= more_whole;
                    let mut merged = node.merged.lock().unwrap();
                    super::dir::merge_listing(&mut children, more, &mut merged);
                }
                None => whole &= self.cfg.ignore_errors,
            }
        }
        if let Some(t) = &node.implied {
            let implied = self.implied_entries(t);
            let have: std::collections::HashSet<_> =
                children.iter().map(|c| c.name.clone()).collect();
            children.extend(implied.into_iter().filter(|e| !have.contains(&e.name)));
            children.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        }
        if list || node.implied.is_some() {
            self.plan_children(node, children, fresh, whole);
        }
    }

    /// Whether `t` is a directory --no-implied-dirs does not send: only on the path
    /// to a named one.
    pub(super) fn bare_implied(&self, t: &Named) -> bool {
        self.cfg.paths.no_implied_dirs && !t.named
    }

    /// A scan for a directory --no-implied-dirs does not send: one DEST has is used as
    /// it is (nothing set on it; a symlink to a directory inside DEST is followed), a
    /// missing one is made with default permissions
    /// (`0777` less the umask) and no itemized line, and anything else in the way is
    /// left and reported (rsync's "mkdir failed: Not a directory", exit 23).
    pub(super) fn scan_bare(
        &self,
        parent: ChildDone<'_, '_, D>,
        entry: SrcEntry,
        known: DestKnown,
        implied: Arc<Named>,
    ) {
        let rel = parent.rel.join(&entry.name);
        let pdir = parent.dir.as_ref();
        let existing = match (known, pdir) {
            (DestKnown::Missing, _) | (_, None) => None,
            (DestKnown::Present(m), _) => Some(m),
            (DestKnown::Unknown(_), Some(pd)) => match self.dest.stat(pd, &entry.name) {
                Ok(m) => m,
                Err(e) => {
                    self.dest_error(&rel, e);
                    return;
                }
            },
        };
        let (dir, origin) = match (existing, pdir) {
            (Some(m), Some(pd)) if m.kind == Kind::Dir => {
                let Some((d, m)) = self.open_existing(pd, &entry.name, &rel) else {
                    return;
                };
                (Some(d), Origin::Found(m))
            }
            // A symlink to a directory stands for it, as rsync uses the path's
            // elements as they are (the link is followed when it stays in DEST).
            (Some(m), Some(pd)) if m.kind == Kind::Symlink => {
                match self.open_dest_link(pd, &entry.name, &rel) {
                    Ok(Some((d, m))) => (Some(d), Origin::Found(m)),
                    Ok(None) => {
                        let e = std::io::Error::from_raw_os_error(libc::ENOTDIR);
                        self.dest_error(&rel, dest::Error::Entry(e));
                        return;
                    }
                    Err(e) => {
                        self.dest_error(&rel, e);
                        return;
                    }
                }
            }
            (Some(_), _) => {
                let e = std::io::Error::from_raw_os_error(libc::ENOTDIR);
                self.dest_error(&rel, dest::Error::Entry(e));
                return;
            }
            (None, Some(pd)) if !self.cfg.dry_run => {
                let mut m = self.give(&entry.meta);
                m.mode = 0o777 & !self.cfg.umask;
                match self.dest.mkdir(pd, &entry.name, &m) {
                    Ok((d, todo)) => {
                        Stats::bump(&self.stats.dirs_created);
                        parent
                            .changed
                            .store(true, std::sync::atomic::Ordering::Relaxed);
                        (Some(d), Origin::Created(todo))
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                        let Some((d, m)) = self.open_existing(pd, &entry.name, &rel) else {
                            return;
                        };
                        (Some(d), Origin::Found(m))
                    }
                    Err(e) => {
                        self.dest_error(&rel, e);
                        return;
                    }
                }
            }
            (None, _) => (None, Origin::Imagined),
        };
        let fresh = !matches!(origin, Origin::Found(_));
        // No source attributes: finalizing sets nothing on it.
        // Merge files (-F) are read only in directories that are listed.
        let filters = parent.filters.clone();
        let node = self.new_node(
            rel,
            dir,
            (None, None),
            origin,
            Some(parent),
            (filters, Some(implied)),
        );
        self.scan_children(&node, &entry, fresh);
    }

    /// The entries named at or implied below `t`, read from the source; one that
    /// cannot be read is reported (rsync's "link_stat failed", exit 23) and left out.
    pub(super) fn implied_entries(&self, t: &Named) -> Vec<SrcEntry> {
        let mut out = Vec::with_capacity(t.children.len());
        for (name, child) in &t.children {
            // `DIR/` names what a symlink points to, as a plain `SRC/` does; so does a
            // directory on the way to named paths (rsync sends implied directories
            // as real directories, so what is named below a symlink is sent).
            let follow = child.contents || !child.children.is_empty();
            match self.source.operand(&child.src, follow) {
                Ok(e) => out.push(SrcEntry {
                    name: name.clone(),
                    ..e
                }),
                // Named, so not vanished: rsync's "link_stat failed", exit 23.
                Err(e) => {
                    crate::report::Stats::bump(&self.stats.errors);
                    self.out.error(&child.src, e);
                }
            }
        }
        out
    }

    /// `-m`: whether a source directory is left out because nothing but directories
    /// (after the filter) would be sent below it. rsync decides this on its complete
    /// file list; a streaming walk looks ahead instead, down to the first file, so a
    /// pruned directory is one the source lacks (kept if DEST has it, deleted there
    /// by --delete, as rsync does). A directory that is not entered (-d without -r)
    /// sends nothing below it, so it is pruned too.
    pub(super) fn prunes(&self, node: &DirNode<D>, e: &SrcEntry) -> bool {
        if e.meta.kind != Kind::Dir {
            return false;
        }
        let rel = node.rel.join(&e.name);
        match node.implied.as_ref().and_then(|t| t.children.get(&e.name)) {
            None if !self.cfg.recursive => true,
            None => !self.holds_files(&rel, source::list_entry(e), e.meta.dev, true),
            Some(t) => !self.named_hold_files(t, &rel, e.meta.dev),
        }
    }

    /// [`Self::holds_files`] for a directory on a -R path: what is named below it,
    /// and what is below those.
    fn named_hold_files(&self, t: &Named, rel: &Path, dev: u64) -> bool {
        if t.named
            && (self.cfg.recursive || t.contents)
            && self.holds_files(rel, self.list_named(t), dev, self.cfg.recursive)
        {
            return true;
        }
        t.children.iter().any(|(name, child)| {
            let crel = rel.join(name);
            match self.source.operand(&child.src, false) {
                // Unreadable: kept, so the error is reported where it is copied.
                Err(_) => true,
                Ok(e) if e.meta.kind == Kind::Dir => self.named_hold_files(child, &crel, dev),
                Ok(_) => {
                    let f = &self.cfg.filter;
                    f.is_empty() || !f.is_excluded(&crel, false)
                }
            }
        })
    }

    /// The listing of the directory `t` names.
    fn list_named(&self, t: &Named) -> source::Listing {
        match self.source.operand(&t.src, true) {
            Ok(dir) => source::list_entry(&dir),
            Err(e) => Err(source::ListError::Dir(e)),
        }
    }

    /// Whether a file (any entry but a directory) not excluded lies in `listing` or below; a
    /// directory that cannot be read counts as holding one, so its error is reported
    /// where it is copied.
    /// `deep`: look below its subdirectories too (-r).
    fn holds_files(&self, rel: &Path, listing: source::Listing, dev: u64, deep: bool) -> bool {
        let Ok((entries, _)) = listing else {
            return true;
        };
        let filter = &self.cfg.filter;
        let mut dirs = Vec::new();
        for c in entries {
            let is_dir = c.meta.kind == Kind::Dir;
            let crel = rel.join(&c.name);
            if !filter.is_empty() && filter.is_excluded(&crel, is_dir) {
                continue;
            }
            if !is_dir {
                return true;
            }
            // -x: what is on another filesystem is not sent.
            if deep && (self.cfg.one_file_system == 0 || c.meta.dev == dev) {
                dirs.push((crel, c));
            }
        }
        dirs.iter()
            .any(|(crel, c)| self.holds_files(crel, source::list_entry(c), dev, true))
    }
}
